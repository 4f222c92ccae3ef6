/*
 * The UDP transport's reliability layer (see udp.h): the socket, numbered
 * segments in a per-peer window, cumulative and selective
 * acknowledgements, retransmission on an adaptive timeout (RFC 6298:
 * srtt, rttvar, rto clamped to [CADENCE_UDP_RTO_MIN_MS,
 * CADENCE_UDP_RTO_MAX_MS], doubled on each timeout) and early on
 * selective acknowledgements, duplicate suppression, delayed and
 * piggybacked acknowledgements, the fault injector (CADENCE_UDP_FAULTS,
 * applied to what the socket delivers, before any check), and peer loss.
 *
 * One timerfd per socket, in the epoll set the engine sleeps on, is armed
 * for the earliest retransmission, owed acknowledgement or probe; a
 * sender arms it only when it would fire later than the new segment's
 * timeout, so a steady stream costs no system call for it.
 *
 * Peer loss: while we wait for a peer (segments unacknowledged, a send
 * waiting for its CTS or ACK, a receive for its data) and hear nothing
 * from it, we probe it every CADENCE_UDP_PEER_TIMEOUT_MS / 16 (10 to 100
 * ms) and give it up after CADENCE_UDP_PEER_TIMEOUT_MS; an ICMP "port unreachable" for
 * its address (IP_RECVERR) gives it up at once: its socket is closed, so
 * its process has ended.  Either way what waits for it fails with
 * MPIX_ERR_PROC_FAILED, unless it said BYE.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "transport/udp/udp.h"

#define RECV_BATCH 64  /* datagrams read per poll at most */
#define RTO_BURST 8    /* segments past the last one known to have arrived, sent again per timeout */

uint64_t udp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void count(struct udp_state *st, int what)
{
    atomic_fetch_add_explicit(&st->count[what], 1, memory_order_relaxed);
}

int udp_open(struct udp_state *st)
{
    /* the socket's serial: GMAC nonces (rank, serial, count) never repeat in the job */
    static atomic_uint serials;
    unsigned serial = atomic_fetch_add(&serials, 1);
    if (serial >> (64 - UDP_CTR_BITS) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: udp: more than %u sockets opened in this process",
                       1u << (64 - UDP_CTR_BITS));
    st->ctr_base = (uint64_t)serial << UDP_CTR_BITS;
    struct in_addr ip;
    int rc = cdn_inet_pick_ip("CADENCE_UDP_IF", "udp", &ip);
    if (rc != MPI_SUCCESS)
        return rc;
    st->epfd = epoll_create1(EPOLL_CLOEXEC);
    st->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct sockaddr_in sa;
    st->fd = cdn_inet_bound_socket(SOCK_DGRAM, ip, &sa);
    if (st->epfd < 0 || st->timer_fd < 0 || st->fd < 0) {
        char ipstr[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ip, ipstr, sizeof ipstr);
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: udp: cannot bind a socket on %s: %s", ipstr,
                       strerror(errno));
    }
    /* room for a window from each of a few peers; the kernel caps it at rmem_max */
    int buf = 4 << 20, one = 1;
    setsockopt(st->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(st->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(st->fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(st->epfd, EPOLL_CTL_ADD, st->fd, &ev);
    epoll_ctl(st->epfd, EPOLL_CTL_ADD, st->timer_fd, &ev);
    st->addr.ip = sa.sin_addr.s_addr;
    st->addr.port = sa.sin_port;
    st->addr.mtu = htonl((uint32_t)st->mtu);
    st->addr.window = htonl(st->window);
    if (cdn_param_str("CADENCE_UDP_SHOW_PORT") != NULL &&
        cdn_param_long("CADENCE_UDP_SHOW_PORT", 0, 0, 1) == 1)
        fprintf(stderr, "cadence: rank %d: udp context %d listens on %s:%u\n", st->me, st->tp.ctx,
                inet_ntoa(sa.sin_addr), (unsigned)ntohs(sa.sin_port));
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_UDP_ADDR, key, sizeof key);
    return cdn_modex_put(key, &st->addr, sizeof st->addr);
}

static int fetch_addr(struct udp_state *st, struct udp_peer *p)
{
    struct udp_addr a;
    size_t len = sizeof a;
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_UDP_ADDR, key, sizeof key);
    int rc = cdn_modex_get(p->fp.world, key, &a, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    if (len != sizeof a)
        return cdn_err(MPI_ERR_OTHER, "udp: rank %d published a %zu-byte address", p->fp.world, len);
    /* A larger MTU's segments do not fit our frames (the job would end on
     * a "malformed frame" at the first large message); a different window
     * drops whatever lies beyond the smaller one, each time, until it is
     * sent again.  Either is a setting that differs between processes: say
     * so at the first contact. */
    if (ntohl(a.mtu) != st->mtu || ntohl(a.window) != st->window)
        return cdn_err(MPI_ERR_OTHER, "udp: rank %d runs with CADENCE_UDP_MTU=%u and "
                       "CADENCE_UDP_WINDOW=%u, rank %d with %zu and %u: every process of a job "
                       "needs the same values", p->fp.world, ntohl(a.mtu), ntohl(a.window),
                       st->me, st->mtu, st->window);
    memset(&p->sa, 0, sizeof p->sa);
    p->sa.sin_family = AF_INET;
    p->sa.sin_port = a.port;
    p->sa.sin_addr.s_addr = a.ip;
    p->addr_known = true;
    return MPI_SUCCESS;
}

/* A peer's window slots, made when it is first talked to, so that a
 * large job's peers cost only their struct until then (lock held). */
static bool touch(struct udp_state *st, struct udp_peer *p)
{
    if (p->win == NULL) {
        p->win = calloc(st->window, sizeof *p->win);
        p->early = calloc(st->window, sizeof *p->early);
        if (p->win == NULL || p->early == NULL) {
            free(p->win);
            free(p->early);
            p->win = NULL;
            p->early = NULL;
            return false;
        }
    }
    p->touched = true;
    return true;
}

int udp_usable(struct udp_state *st, struct udp_peer *p, const char *what)
{
    if (p->state == PEER_GONE)
        return cdn_err(MPI_ERR_OTHER, "%s: rank %d has finalized", what, p->fp.world);
    if (p->state == PEER_FAILED)
        return cdn_err(MPIX_ERR_PROC_FAILED, "%s: rank %d has failed", what, p->fp.world);
    /* the address (and the settings checked with it) first: a peer
     * refused is never touched, so finalizing does not wait for it */
    int rc = p->addr_known ? MPI_SUCCESS : fetch_addr(st, p);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!touch(st, p))
        return cdn_err(MPI_ERR_NO_MEM, "%s: udp: out of memory for the window to rank %d", what,
                       p->fp.world);
    if (p->seal.gcm == NULL && !cdn_udp_mac_open(&p->seal))
        return cdn_err(MPI_ERR_OTHER, "%s: udp: cannot make an AES-GCM context (OpenSSL) for "
                       "rank %d", what, p->fp.world);
    return MPI_SUCCESS;
}

/* Fire the timer at `at` (µs, CLOCK_MONOTONIC) unless it fires sooner. */
static void request_timer(struct udp_state *st, uint64_t at)
{
    uint64_t cur = atomic_load_explicit(&st->timer_at, memory_order_relaxed);
    if (at == UINT64_MAX || (cur != 0 && cur <= at))
        return;
    pthread_mutex_lock(&st->timer_lock);
    cur = atomic_load_explicit(&st->timer_at, memory_order_relaxed);
    if (cur == 0 || at < cur) {
        struct itimerspec it = {.it_value = {(time_t)(at / 1000000), (long)(at % 1000000) * 1000}};
        timerfd_settime(st->timer_fd, TFD_TIMER_ABSTIME, &it, NULL);
        atomic_store_explicit(&st->timer_at, at, memory_order_relaxed);
    }
    pthread_mutex_unlock(&st->timer_lock);
}

static void sack_bits(struct udp_state *st, struct udp_peer *p)
{
    memset(p->rcv_sack, 0, sizeof p->rcv_sack);
    for (unsigned i = 0; i < 64 * UDP_SACK_WORDS && i + 1 < st->window; i++)
        if (p->early[(p->rcv_nxt + 1 + i) % st->window].here)
            p->rcv_sack[i / 64] |= 1ull << (i % 64);
}

static uint32_t stamp(void)
{
    uint32_t t = (uint32_t)udp_now_us();
    return t != 0 ? t : 1;
}

/* Fill the acknowledgement fields, seal and send a datagram to p (lock held). */
static void emit(struct udp_state *st, struct udp_peer *p, struct udp_dgram *d)
{
    d->magic = UDP_MAGIC;
    d->version = UDP_VERSION;
    d->src = st->me;
    d->zero = 0;
    uint64_t n = atomic_fetch_add_explicit(&st->ctr, 1, memory_order_relaxed);
    if (n >> UDP_CTR_BITS != 0) {
        /* 2^48 datagrams from one socket: a GMAC nonce would repeat */
        fprintf(stderr, "cadence: rank %d: udp: datagram counter exhausted\n", st->me);
        abort();
    }
    d->ctr = st->ctr_base | n;
    d->ts = stamp();
    d->ts_echo = p->ts_recent;
    d->ack = p->rcv_nxt;
    memcpy(d->sack, p->rcv_sack, sizeof d->sack);
    p->ack_owed = 0;
    p->ack_due_us = 0;
    cdn_udp_dgram_seal(d, &p->seal);
    ssize_t r;
    do {
        r = sendto(st->fd, d, sizeof *d + d->len, MSG_DONTWAIT, (struct sockaddr *)&p->sa,
                   sizeof p->sa);
    } while (r < 0 && errno == EINTR);
    /* a full socket buffer loses the datagram like the network would */
    count(st, UC_SENT);
}

/* An acknowledgement (or probe) alone (lock held). */
static void send_ack(struct udp_state *st, struct udp_peer *p, int flags)
{
    struct udp_dgram d;
    memset(&d, 0, sizeof d);
    d.flags = (uint8_t)flags;
    emit(st, p, &d);
}

static struct udp_seg *slot(struct udp_state *st, struct udp_peer *p, uint64_t seq)
{
    return &p->win[seq % st->window];
}

static void transmit(struct udp_state *st, struct udp_peer *p, uint64_t seq, uint64_t now)
{
    struct udp_seg *s = slot(st, p, seq);
    if (s->tx > 0)
        count(st, UC_RETRANS);
    s->tx++;
    s->sent_us = now;
    emit(st, p, (struct udp_dgram *)s->buf);
}

unsigned udp_room(struct udp_state *st, struct udp_peer *p)
{
    return st->window - (unsigned)(p->snd_nxt - p->snd_una);
}

unsigned char *udp_seg_payload(struct udp_state *st, struct udp_peer *p)
{
    struct udp_seg *s = slot(st, p, p->snd_nxt);
    if (s->buf == NULL && (s->buf = malloc(st->mtu)) == NULL)
        cdn_rt_abort(1, "cadence: udp: out of memory for a segment to rank %d", p->fp.world);
    return s->buf + sizeof(struct udp_dgram);
}

void udp_seg_push(struct udp_state *st, struct udp_peer *p, size_t len)
{
    struct udp_seg *s = slot(st, p, p->snd_nxt);
    struct udp_dgram *d = (struct udp_dgram *)s->buf;
    memset(d, 0, sizeof *d);
    d->flags = DG_DATA;
    d->len = (uint16_t)len;
    d->seq = p->snd_nxt;
    s->tx = 0;
    s->sacked = false;
    uint64_t now = udp_now_us();
    if (p->snd_una == p->snd_nxt && p->heard_us < now)
        p->heard_us = now;  /* we begin waiting for it now: silence counts from here */
    p->snd_nxt++;
    transmit(st, p, d->seq, now);
    request_timer(st, now + p->rto_us);
}

static void rtt_sample(struct udp_state *st, struct udp_peer *p, uint64_t r)
{
    if (!p->rtt_valid) {
        p->srtt_us = r;
        p->rttvar_us = r / 2;
        p->rtt_valid = true;
    } else {
        uint64_t dev = p->srtt_us > r ? p->srtt_us - r : r - p->srtt_us;
        p->rttvar_us = (3 * p->rttvar_us + dev) / 4;
        p->srtt_us = (7 * p->srtt_us + r) / 8;
    }
    uint64_t rto = p->srtt_us + 4 * p->rttvar_us;
    p->rto_us = rto < st->rto_min_us ? st->rto_min_us : rto > st->rto_max_us ? st->rto_max_us : rto;
}

static bool sacked_bit(const struct udp_dgram *d, unsigned i)
{
    return (d->sack[i / 64] >> (i % 64)) & 1;
}

/* The peer's acknowledgement fields (lock held). */
static void on_ack(struct udp_state *st, struct udp_peer *p, const struct udp_dgram *d,
                   uint64_t now, struct cdn_xfer **done)
{
    if (d->ack > p->snd_nxt || d->ack < p->snd_una)
        return;  /* stale (an old datagram): ignore */
    bool news = d->ack > p->snd_una;
    p->snd_una = d->ack;
    uint64_t top = 0;  /* the highest segment acknowledged selectively */
    for (unsigned i = 0; i < 64 * UDP_SACK_WORDS; i++) {
        uint64_t seq = d->ack + 1 + i;
        if (seq >= p->snd_nxt)
            break;
        if (!sacked_bit(d, i))
            continue;
        struct udp_seg *s = slot(st, p, seq);
        news = news || !s->sacked;
        s->sacked = true;
        top = seq;
    }
    /* a round trip from the echo of our timestamp, on what acknowledges
     * something new (retransmissions carry their own timestamps: no
     * ambiguity); it also ends any backoff */
    if (news && d->ts_echo != 0)
        rtt_sample(st, p, (uint32_t)((uint32_t)now - d->ts_echo));
    /* early retransmission: a segment below one that arrived, sent more
     * than a round trip and a quarter ago (later than that, reordering is
     * unlikely: it is lost), and not sent again since */
    uint64_t wait = p->srtt_us + p->srtt_us / 4 + 200;
    for (uint64_t seq = p->snd_una; seq < top; seq++) {
        struct udp_seg *s = slot(st, p, seq);
        if (!s->sacked && now - s->sent_us >= wait)
            transmit(st, p, seq, now);
    }
    if (p->outq != NULL && udp_room(st, p) > 0)
        udp_flush(st, p, done);
}

/* Keep p on the list of peers owed an acknowledgement (poller, lock held). */
static void owe(struct udp_state *st, struct udp_peer *p)
{
    if (!p->owing) {
        p->owing = true;
        st->owing[st->nowing++] = p->fp.world;
    }
}

/* A datagram that passed the fault injector. */
static void handle(struct udp_state *st, const unsigned char *buf, size_t n,
                   const struct sockaddr_in *from)
{
    switch (cdn_udp_dgram_check(buf, n, &st->mac, st->size, st->me)) {
    case UDP_OK:
        break;
    case UDP_UNKNOWN_RANK:
        count(st, UC_UNKNOWN);
        return;
    default:
        count(st, UC_BAD_MAC);
        return;
    }
    struct udp_dgram d;
    memcpy(&d, buf, sizeof d);
    struct udp_peer *p = &st->peers[d.src];
    pthread_mutex_lock(&p->fp.lock);
    if (!p->addr_known && fetch_addr(st, p) != MPI_SUCCESS) {
        pthread_mutex_unlock(&p->fp.lock);
        count(st, UC_UNKNOWN);
        return;
    }
    if (from->sin_addr.s_addr != p->sa.sin_addr.s_addr || from->sin_port != p->sa.sin_port) {
        pthread_mutex_unlock(&p->fp.lock);
        count(st, UC_UNKNOWN);  /* a rank's MAC from another socket: a replay */
        return;
    }
    count(st, UC_RECV);
    if (p->state != PEER_OK || !touch(st, p)) {
        pthread_mutex_unlock(&p->fp.lock);
        return;
    }
    uint64_t now = udp_now_us();
    p->heard_us = now;
    if (d.flags & DG_DATA)
        p->ts_recent = d.ts;
    struct cdn_xfer *done = NULL;
    on_ack(st, p, &d, now, &done);
    bool ack_now = (d.flags & DG_PROBE) != 0, in_order = false;
    uint64_t more = 0;  /* early segments the new one lets through */
    if (d.flags & DG_DATA) {
        unsigned w = st->window;
        if (d.seq < p->rcv_nxt) {
            count(st, UC_DUP);
            ack_now = true;  /* our acknowledgement was lost, or this is a copy */
        } else if (d.seq - p->rcv_nxt >= w) {
            count(st, UC_WINDOW);
            ack_now = true;
        } else if (d.seq == p->rcv_nxt) {
            in_order = true;
            p->rcv_nxt++;
            /* the early ones it lets through leave the window now (their
             * buffers are read below, before anything can refill them) */
            while (p->early[p->rcv_nxt % w].here) {
                p->early[p->rcv_nxt % w].here = false;
                p->rcv_nxt++;
                more++;
            }
            p->ack_owed++;
            ack_now = ack_now || more > 0;
        } else {
            struct udp_early *e = &p->early[d.seq % w];
            if (e->here) {
                count(st, UC_DUP);
            } else {
                if (e->buf == NULL && (e->buf = malloc(st->mss)) == NULL)
                    cdn_rt_abort(1, "cadence: udp: out of memory for a segment from rank %d",
                                 p->fp.world);
                memcpy(e->buf, buf + sizeof d, d.len);
                e->len = d.len;
                e->here = true;
            }
            ack_now = true;  /* a gap: say so at once, for an early retransmission */
        }
        sack_bits(st, p);
    }
    if (ack_now)
        send_ack(st, p, 0);
    else if (p->ack_owed > 0)
        owe(st, p);
    pthread_mutex_unlock(&p->fp.lock);
    udp_report_done(done);
    if (!in_order)
        return;
    udp_stream_in(st, p, buf + sizeof d, d.len);
    for (uint64_t k = 1; k <= more; k++) {
        struct udp_early *e = &p->early[(d.seq + k) % st->window];
        if (p->state == PEER_OK)
            udp_stream_in(st, p, e->buf, e->len);
    }
}

/* ---- fault injection (CADENCE_UDP_FAULTS) ---- */

static double chance(struct udp_state *st)
{
    /* splitmix64 */
    uint64_t z = (st->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ull << 53);
}

struct held_from {
    struct sockaddr_in from;
};

static void release_held(struct udp_state *st)
{
    int n = st->nheld;
    st->nheld = 0;
    for (int i = 0; i < n; i++) {
        struct held_from hf;
        memcpy(&hf, st->held[i], sizeof hf);
        handle(st, st->held[i] + sizeof hf, st->held_len[i], &hf.from);
    }
}

/* What the socket delivered, through the injector: dropped, damaged,
 * handled twice, or held back until after the next one. */
static void inject(struct udp_state *st, unsigned char *buf, size_t n,
                   const struct sockaddr_in *from)
{
    const struct udp_faults *f = &st->faults;
    if (chance(st) < f->drop) {
        count(st, UC_F_DROP);
        return;
    }
    if (n > 0 && chance(st) < f->corrupt) {
        size_t at = (size_t)(chance(st) * (double)n);
        buf[at < n ? at : n - 1] ^= (unsigned char)(1u << (unsigned)(chance(st) * 8.0));
        count(st, UC_F_CORRUPT);
    }
    if (chance(st) < f->reorder && st->nheld < UDP_HELD_MAX) {
        struct held_from hf = {*from};
        unsigned char *h = st->held[st->nheld];
        if (h == NULL && (h = st->held[st->nheld] = malloc(sizeof hf + UDP_RBUF)) == NULL) {
            handle(st, buf, n, from);
            return;
        }
        memcpy(h, &hf, sizeof hf);
        memcpy(h + sizeof hf, buf, n);
        st->held_len[st->nheld++] = n;
        count(st, UC_F_REORDER);
        return;
    }
    bool twice = chance(st) < f->dup;
    handle(st, buf, n, from);
    if (twice) {
        count(st, UC_F_DUP);
        handle(st, buf, n, from);
    }
    if (st->nheld > 0)
        release_held(st);  /* after a later one: reordered */
}

/* ---- peer loss ---- */

void udp_peer_failed(struct udp_state *st, struct udp_peer *p, const char *why)
{
    struct udp_failed f;
    pthread_mutex_lock(&p->fp.lock);
    if (p->state != PEER_OK) {
        pthread_mutex_unlock(&p->fp.lock);
        return;
    }
    bool bye = p->bye || st->closing;
    p->state = bye ? PEER_GONE : PEER_FAILED;
    p->snd_una = p->snd_nxt;
    p->ack_owed = 0;
    udp_take_all(p, &f);
    pthread_mutex_unlock(&p->fp.lock);
    int err;
    if (bye) {
        err = cdn_err(MPI_ERR_OTHER, "rank %d has finalized", p->fp.world);
    } else {
        fprintf(stderr, "cadence: rank %d: udp: lost rank %d (%s); operations with it fail with "
                "MPIX_ERR_PROC_FAILED\n", st->me, p->fp.world, why);
        err = cdn_err(MPIX_ERR_PROC_FAILED, "rank %d failed: %s", p->fp.world, why);
    }
    udp_fail_all(&f, err);
    if (!bye)
        cdn_p2p_peer_failed(&st->tp, p->fp.world, err);
}

/* ICMP errors queued on the socket (IP_RECVERR): "port unreachable" for a
 * peer's address means its socket is closed. */
static void drain_errors(struct udp_state *st)
{
    for (int i = 0; i < 64; i++) {
        char ctrl[512], b[64];
        struct sockaddr_in to;
        struct iovec iov = {b, sizeof b};
        struct msghdr m = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov,
                           .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
        if (recvmsg(st->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR)
                continue;
            struct sock_extended_err ee;
            memcpy(&ee, CMSG_DATA(c), sizeof ee);
            if (ee.ee_errno != ECONNREFUSED || m.msg_namelen < sizeof to)
                continue;
            for (int w = 0; w < st->size; w++) {
                struct udp_peer *p = &st->peers[w];
                if (p->addr_known && p->sa.sin_addr.s_addr == to.sin_addr.s_addr &&
                    p->sa.sin_port == to.sin_port)
                    udp_peer_failed(st, p, "its socket is closed (ICMP port unreachable)");
            }
        }
    }
}

/* ---- timers ---- */

static void timers(struct udp_state *st, uint64_t now)
{
    uint64_t v;
    pthread_mutex_lock(&st->timer_lock);
    if (read(st->timer_fd, &v, sizeof v) < 0) {
        /* EAGAIN: the deadlines are checked anyway */
    }
    atomic_store_explicit(&st->timer_at, 0, memory_order_relaxed);
    pthread_mutex_unlock(&st->timer_lock);
    uint64_t next = UINT64_MAX;
#define SOONER(t) do { uint64_t t_ = (t); if (t_ < next) next = t_; } while (0)
    for (int w = 0; w < st->size; w++) {
        struct udp_peer *p = &st->peers[w];
        if (!p->touched)
            continue;
        pthread_mutex_lock(&p->fp.lock);
        if (p->state != PEER_OK) {
            pthread_mutex_unlock(&p->fp.lock);
            continue;
        }
        /* the holes below the highest segment acknowledged selectively
         * are lost; past it, a timeout may mean a lost acknowledgement as
         * well, so only a few go again at a time */
        uint64_t top = p->snd_una;
        for (uint64_t seq = p->snd_una; seq < p->snd_nxt; seq++)
            if (slot(st, p, seq)->sacked)
                top = seq;
        bool fired = false;
        int past = 0;
        for (uint64_t seq = p->snd_una; seq < p->snd_nxt; seq++) {
            struct udp_seg *s = slot(st, p, seq);
            if (s->sacked)
                continue;
            if (s->sent_us + p->rto_us > now) {
                SOONER(s->sent_us + p->rto_us);
                continue;
            }
            if (seq < top || past++ < RTO_BURST) {
                transmit(st, p, seq, now);
                fired = true;
            }
            SOONER(now + p->rto_us);
        }
        if (fired) {
            p->rto_us = p->rto_us * 2 > st->rto_max_us ? st->rto_max_us : p->rto_us * 2;
            SOONER(now + p->rto_us);
        }
        if (p->ack_owed > 0) {
            if (p->ack_due_us <= now)
                send_ack(st, p, 0);
            else
                SOONER(p->ack_due_us);
        }
        bool waits = p->snd_una < p->snd_nxt || p->outq != NULL || p->fp.waiting != NULL ||
                     p->fp.pulls != NULL;
        bool dead = false;
        if (waits) {
            uint64_t quiet = now > p->heard_us ? now - p->heard_us : 0;
            if (quiet >= st->peer_timeout_us) {
                dead = true;
            } else {
                uint64_t last = p->probe_us > p->heard_us ? p->probe_us : p->heard_us;
                if (now >= last + st->probe_us) {
                    send_ack(st, p, DG_PROBE);
                    p->probe_us = last = now;
                }
                SOONER(last + st->probe_us);
                SOONER(p->heard_us + st->peer_timeout_us);
            }
        }
        pthread_mutex_unlock(&p->fp.lock);
        if (dead) {
            char why[96];
            snprintf(why, sizeof why, "no answer for %llu ms (CADENCE_UDP_PEER_TIMEOUT_MS)",
                     (unsigned long long)(st->peer_timeout_us / 1000));
            udp_peer_failed(st, p, why);
        }
    }
#undef SOONER
    request_timer(st, next);
}

int udp_poll_socket(struct udp_state *st)
{
    int n = 0, errs = 0;
    for (int i = 0; i < RECV_BATCH; i++) {
        struct sockaddr_in from;
        socklen_t flen = sizeof from;
        ssize_t r = recvfrom(st->fd, st->rbuf, UDP_RBUF, MSG_DONTWAIT,
                             (struct sockaddr *)&from, &flen);
        if (r < 0) {
            if (errno == EAGAIN)
                break;
            if (errno != EINTR)
                errs++;
            continue;
        }
        n++;
        if (st->faults.on)
            inject(st, st->rbuf, (size_t)r, &from);
        else
            handle(st, st->rbuf, (size_t)r, &from);
    }
    if (errs > 0)
        drain_errors(st);
    if (st->nheld > 0)
        release_held(st);
    uint64_t now = udp_now_us();
    /* acknowledgements owed: two or more segments at once, one after the delay */
    for (int i = 0; i < st->nowing; i++) {
        struct udp_peer *p = &st->peers[st->owing[i]];
        pthread_mutex_lock(&p->fp.lock);
        p->owing = false;
        if (p->ack_owed >= 2 || (p->ack_owed > 0 && st->ack_delay_us == 0)) {
            send_ack(st, p, 0);
        } else if (p->ack_owed > 0) {
            if (p->ack_due_us == 0)
                p->ack_due_us = now + st->ack_delay_us;
            request_timer(st, p->ack_due_us);
        }
        pthread_mutex_unlock(&p->fp.lock);
    }
    st->nowing = 0;
    uint64_t at = atomic_load_explicit(&st->timer_at, memory_order_relaxed);
    if (at != 0 && now >= at) {
        timers(st, now);
        n++;
    }
    return n;
}

void udp_close(struct udp_state *st)
{
    if (st->fd >= 0)
        close(st->fd);
    if (st->timer_fd >= 0)
        close(st->timer_fd);
    if (st->epfd >= 0)
        close(st->epfd);
    for (int i = 0; i < UDP_HELD_MAX; i++)
        free(st->held[i]);
    free(st->rbuf);
    free(st->owing);
    cdn_udp_mac_close(&st->mac);
    if (st->peers != NULL)
        for (int w = 0; w < st->size; w++)
            cdn_udp_mac_close(&st->peers[w].seal);
}

void udp_report(struct udp_state *st)
{
    unsigned long c[UC_N];
    for (int i = 0; i < UC_N; i++)
        c[i] = atomic_load(&st->count[i]);
    fprintf(stderr, "cadence: rank %d: udp context %d: datagrams sent %lu, retransmitted %lu, "
            "received %lu, duplicates %lu; dropped: bad MAC %lu, unknown sender %lu, past the "
            "window %lu; injected: dropped %lu, duplicated %lu, reordered %lu, corrupted %lu\n",
            st->me, st->tp.ctx, c[UC_SENT], c[UC_RETRANS], c[UC_RECV], c[UC_DUP], c[UC_BAD_MAC],
            c[UC_UNKNOWN], c[UC_WINDOW], c[UC_F_DROP], c[UC_F_DUP], c[UC_F_REORDER],
            c[UC_F_CORRUPT]);
}
