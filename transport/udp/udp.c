/*
 * The UDP transport's ops (see udp.h for the reliability layer below, and
 * transport/tcp/frame.h for the frames carried over it, the same as TCP's).
 *
 * Protocols, per message size:
 *   eager (<= CADENCE_UDP_EAGER_LIMIT): the frame header and the data are
 *     copied into segments at once (as many as the window takes, the rest
 *     into a queued copy), so the send is complete when the call returns;
 *     the receiver matches from its reassembly buffer.
 *   rendezvous: RTS; on a match the receiver answers CTS and the sender
 *     streams DATA frames, one per segment, packed straight from the user
 *     buffer as window space opens (never staged whole); the receiver
 *     copies each into the receive buffer.  The send completes when its
 *     last byte is in a segment.
 * A send waiting for the peer (CTS, a synchronous send's ACK) sits in the
 * peer's `waiting` list and a receive waiting for DATA in `pulls`
 * (transport/xfer_list.h): a cookie or token from the wire is used only
 * after it is found there.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "progress/job.h"
#include "progress/sent.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "transport/udp/udp.h"
#include "transport/xfer_list.h"

#define FRAME sizeof(struct tcp_frame)
#define RX_CAP (FRAME + TCP_EAGER_MAX + UDP_DGRAM_MAX)

enum { OUT_BYTES, OUT_STREAM };

struct udp_out {
    struct udp_out *next;
    int kind;
    size_t len, off;              /* BYTES: the bytes after the item */
    struct cdn_xfer *x;           /* STREAM: the send */
    const char *src;              /* STREAM: contiguous data, or NULL: pack each chunk */
    uint64_t token, total, done;  /* STREAM: receiver's token, bytes to send, bytes sent */
};

static struct udp_state *state_of(struct cdn_transport *tp)
{
    return (struct udp_state *)tp;  /* its first member (tp->priv: the peers, for transport/frames.c) */
}

static struct udp_peer *peer_of(struct cdn_fpeer *fp)
{
    return (struct udp_peer *)((char *)fp - offsetof(struct udp_peer, fp));
}

/* ---- sending: frames into segments ---- */

/* Copy bytes [off, off + n) of a ++ b to dst. */
static void gather(unsigned char *dst, const void *a, size_t alen, const void *b, size_t off,
                   size_t n)
{
    if (off < alen) {
        size_t k = alen - off < n ? alen - off : n;
        memcpy(dst, (const char *)a + off, k);
        dst += k;
        off += k;
        n -= k;
    }
    if (n > 0)
        memcpy(dst, (const char *)b + (off - alen), n);
}

/* Put bytes [off, ...) of a ++ b into new segments while the window has
 * room (lock held); returns the new offset. */
static size_t carve(struct udp_state *st, struct udp_peer *p, const void *a, size_t alen,
                    const void *b, size_t blen, size_t off)
{
    size_t total = alen + blen;
    while (off < total && udp_room(st, p) > 0) {
        size_t n = total - off < st->mss ? total - off : st->mss;
        gather(udp_seg_payload(st, p), a, alen, b, off, n);
        udp_seg_push(st, p, n);
        off += n;
    }
    return off;
}

static void queue(struct udp_peer *p, struct udp_out *o)
{
    o->next = NULL;
    if (p->outq_tail)
        p->outq_tail->next = o;
    else
        p->outq = o;
    p->outq_tail = o;
}

static void dequeue(struct udp_peer *p)
{
    struct udp_out *o = p->outq;
    p->outq = o->next;
    if (p->outq == NULL)
        p->outq_tail = NULL;
    free(o);
}

/* Send a frame and its payload: into segments now as far as the window
 * allows, the rest copied into the queue (lock held, peer usable). */
static int put(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
               const void *payload, size_t plen)
{
    struct udp_state *st = state_of(tp);
    struct udp_peer *p = peer_of(fp);
    size_t total = FRAME + plen, off = 0;
    if (p->outq == NULL)
        off = carve(st, p, f, FRAME, payload, plen, 0);
    if (off == total)
        return MPI_SUCCESS;
    struct udp_out *o = calloc(1, sizeof *o + (total - off));
    if (o == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "udp: out of memory queueing %zu bytes for rank %d",
                       total - off, p->fp.world);
    o->kind = OUT_BYTES;
    o->len = total - off;
    gather((unsigned char *)(o + 1), f, FRAME, payload, off, o->len);
    queue(p, o);
    return MPI_SUCCESS;
}

static int usable(struct cdn_transport *tp, struct cdn_fpeer *fp, const char *what)
{
    return udp_usable(state_of(tp), peer_of(fp), what);
}

static const struct cdn_fpeer_ops udp_fpeer_ops = {usable, put};

/* One DATA frame of a stream into a segment (lock held, room > 0). */
static void stream_step(struct udp_state *st, struct udp_peer *p, struct udp_out *o)
{
    uint64_t left = o->total - o->done;
    size_t chunk = left < st->mss - FRAME ? (size_t)left : st->mss - FRAME;
    unsigned char *dst = udp_seg_payload(st, p);
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    f.type = F_DATA;
    f.len = (uint32_t)chunk;
    f.a = o->token;
    f.b = o->done;
    memcpy(dst, &f, FRAME);
    if (o->src != NULL)
        memcpy(dst + FRAME, o->src + o->done, chunk);
    else
        cdn_p2p_send_pack(o->x, o->done, dst + FRAME, chunk);
    udp_seg_push(st, p, FRAME + chunk);
    o->done += chunk;
}

void udp_flush(struct udp_state *st, struct udp_peer *p, struct cdn_xfer **done)
{
    while (p->outq != NULL && udp_room(st, p) > 0) {
        struct udp_out *o = p->outq;
        if (o->kind == OUT_BYTES) {
            o->off = carve(st, p, o + 1, o->len, NULL, 0, o->off);
            if (o->off < o->len)
                return;
        } else {
            while (o->done < o->total && udp_room(st, p) > 0)
                stream_step(st, p, o);
            if (o->done < o->total)
                return;
            o->x->next = *done;
            *done = o->x;
        }
        dequeue(p);
    }
}

void udp_report_done(struct cdn_xfer *done)
{
    while (done != NULL) {
        struct cdn_xfer *r = done;
        done = r->next;
        r->next = NULL;
        cdn_p2p_send_done(r, true, MPI_SUCCESS);
    }
}

void udp_take_all(struct udp_peer *p, struct udp_failed *f)
{
    f->outq = p->outq;
    cdn_frames_take(&p->fp, &f->held);
    p->outq = p->outq_tail = NULL;
}

void udp_fail_all(struct udp_failed *f, int err)
{
    for (struct udp_out *o = f->outq, *next; o != NULL; o = next) {
        next = o->next;
        if (o->kind == OUT_STREAM)  /* its send ends here; a copied frame is just dropped */
            cdn_p2p_send_done(o->x, true, err);
        free(o);
    }
    f->outq = NULL;
    cdn_frames_fail(&f->held, err);
}

/* ---- receiving: frames out of the stream ---- */

static void on_cts(struct udp_state *st, struct udp_peer *p, const struct tcp_frame *f)
{
    struct cdn_xfer *s = cdn_frames_cts(&st->tp, &p->fp, f);
    if (s == NULL)
        return;
    struct udp_out *o = calloc(1, sizeof *o);
    if (o == NULL)
        cdn_rt_abort(1, "cadence: udp: out of memory starting a transfer to rank %d", p->fp.world);
    o->kind = OUT_STREAM;
    o->x = s;
    o->src = s->src;
    o->token = f->b;
    o->total = f->h.bytes;
    struct cdn_xfer *done = NULL;
    pthread_mutex_lock(&p->fp.lock);
    if (p->state != PEER_OK) {
        pthread_mutex_unlock(&p->fp.lock);
        free(o);
        cdn_p2p_send_done(s, true, cdn_err(MPIX_ERR_PROC_FAILED, "send: rank %d has failed",
                                           p->fp.world));
        return;
    }
    queue(p, o);
    udp_flush(st, p, &done);
    pthread_mutex_unlock(&p->fp.lock);
    udp_report_done(done);
}

static void on_data(struct udp_state *st, struct udp_peer *p, const struct tcp_frame *f,
                    const unsigned char *payload)
{
    struct cdn_xfer *r = cdn_frames_data(&st->tp, &p->fp, f);
    if (r->dst != NULL)
        memcpy((char *)r->dst + f->b, payload, f->len);
    else
        cdn_p2p_recv_data(r, f->b, payload, f->len);
    r->moved += f->len;
    cdn_frames_data_moved(&p->fp, r);
}

static void on_frame(struct udp_state *st, struct udp_peer *p, const struct tcp_frame *f,
                     const unsigned char *payload)
{
    switch (f->type) {
    case F_CTS:
        on_cts(st, p, f);
        break;
    case F_DATA:
        on_data(st, p, f, payload);
        break;
    case F_BYE:
        pthread_mutex_lock(&p->fp.lock);
        p->bye = true;
        pthread_mutex_unlock(&p->fp.lock);
        break;
    default:  /* EAGER, RTS, ACK, AM */
        cdn_frames_arrived(&st->tp, &p->fp, f, payload);
        break;
    }
}

/* Handle the whole frames at buf; returns the bytes they took. */
static size_t frames(struct udp_state *st, struct udp_peer *p, const unsigned char *buf,
                     size_t avail)
{
    size_t off = 0;
    while (p->state == PEER_OK) {
        struct tcp_frame f;
        const char *why = NULL;
        size_t k = cdn_tcp_frame_parse(buf + off, avail - off, TCP_EAGER_MAX, &f, &why);
        if (k == CDN_TCP_BAD)
            cdn_frames_bad_peer(&st->tp, &p->fp, why);
        if (k == CDN_TCP_NEED_MORE)
            break;
        if (f.type == F_DATA) {
            if (f.len > st->mss - FRAME)
                cdn_frames_bad_peer(&st->tp, &p->fp, "data frame larger than a segment");
            k += f.len;
            if (avail - off < k)
                break;
        }
        on_frame(st, p, &f, buf + off + FRAME);
        off += k;
    }
    return off;
}

void udp_stream_in(struct udp_state *st, struct udp_peer *p, const unsigned char *data, size_t n)
{
    if (p->rx == NULL && (p->rx = malloc(RX_CAP)) == NULL)
        cdn_rt_abort(1, "cadence: udp: out of memory for the stream from rank %d", p->fp.world);
    if (p->rx_len == 0) {  /* frames straight from the segment; keep what is left */
        size_t used = frames(st, p, data, n);
        memcpy(p->rx, data + used, n - used);
        p->rx_len = n - used;
        return;
    }
    if (p->rx_len + n > RX_CAP)
        cdn_frames_bad_peer(&st->tp, &p->fp, "a frame larger than any this process accepts");
    memcpy(p->rx + p->rx_len, data, n);
    p->rx_len += n;
    size_t used = frames(st, p, p->rx, p->rx_len);
    memmove(p->rx, p->rx + used, p->rx_len - used);
    p->rx_len -= used;
}

/* ---- the ops ---- */

static int udp_poll(struct cdn_transport *tp)
{
    return udp_poll_socket(state_of(tp));
}

static int udp_fd(struct cdn_transport *tp)
{
    return state_of(tp)->epfd;
}

static bool udp_reaches(struct cdn_transport *tp, int world_rank)
{
    struct udp_state *st = state_of(tp);
    return world_rank >= 0 && world_rank < st->size && world_rank != st->me;
}

static int udp_init(struct cdn_transport *tp)
{
    struct udp_state *st = state_of(tp);
    const char *spec = cdn_param_str("CADENCE_UDP_FAULTS");
    char why[160];
    if (spec != NULL && !cdn_udp_faults_parse(spec, &st->faults, why, sizeof why))
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: CADENCE_UDP_FAULTS=%s: %s", spec, why);
    /* a stream of draws of its own for each process and context */
    st->rng = st->faults.seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)st->me << 20) ^
              (uint64_t)tp->ctx;
    int rc = udp_open(st);
    return rc != MPI_SUCCESS ? rc : cdn_job_key_publish(st->me, st->key);
}

static int udp_wireup(struct cdn_transport *tp)
{
    struct udp_state *st = state_of(tp);
    int rc = cdn_job_key_fetch(st->me, st->key);
    if (rc != MPI_SUCCESS)
        return rc;
    cdn_udp_mac_key(&st->mac, st->key);
    for (int w = 0; w < st->size; w++)
        cdn_udp_mac_copy_key(&st->peers[w].seal, &st->mac);
    if (!cdn_udp_mac_open(&st->mac))
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: udp: cannot make an AES-GCM context (OpenSSL)");
    return MPI_SUCCESS;
}

/* Anything of ours unacknowledged, or a peer that has not said BYE? */
static bool unsettled(struct udp_state *st)
{
    bool busy = false;
    for (int w = 0; w < st->size && !busy; w++) {
        struct udp_peer *p = &st->peers[w];
        if (!p->touched)
            continue;
        pthread_mutex_lock(&p->fp.lock);
        busy = p->state == PEER_OK &&
               (p->snd_una < p->snd_nxt || p->outq != NULL || !p->bye || p->ack_owed > 0);
        pthread_mutex_unlock(&p->fp.lock);
    }
    return busy;
}

/* Say BYE to every peer we exchanged anything with, and stay until every
 * one of them has said it too and acknowledged what we sent, then a
 * little longer to acknowledge their last segments again should our
 * acknowledgement be lost; at most CADENCE_UDP_PEER_TIMEOUT_MS. */
static void udp_finalize(struct cdn_transport *tp)
{
    struct udp_state *st = state_of(tp);
    if (tp->ctx == 0)
        cdn_job_key_forget();
    struct tcp_frame bye;
    memset(&bye, 0, sizeof bye);
    bye.type = F_BYE;
    for (int w = 0; w < st->size; w++) {
        struct udp_peer *p = &st->peers[w];
        pthread_mutex_lock(&p->fp.lock);
        if (p->touched && p->state == PEER_OK)
            put(&st->tp, &p->fp, &bye, NULL, 0);
        pthread_mutex_unlock(&p->fp.lock);
    }
    uint64_t start = udp_now_us(), settled = 0;
    uint64_t linger = st->rto_min_us * 4 > 20000 ? st->rto_min_us * 4 : 20000;
    st->closing = true;
    while (udp_now_us() - start < st->peer_timeout_us) {
        udp_poll_socket(st);
        uint64_t now = udp_now_us();
        if (unsettled(st))
            settled = 0;
        else if (settled == 0)
            settled = now;
        else if (now - settled >= linger)
            break;
        struct epoll_event ev;
        epoll_wait(st->epfd, &ev, 1, 1);
    }
    if (cdn_sent_report)
        udp_report(st);
    for (int w = 0; w < st->size; w++) {
        struct udp_peer *p = &st->peers[w];
        struct udp_failed f;
        udp_take_all(p, &f);
        while (f.outq != NULL) {
            struct udp_out *o = f.outq;
            f.outq = o->next;
            free(o);
        }
        for (unsigned i = 0; p->win != NULL && i < st->window; i++)
            free(p->win[i].buf);
        for (unsigned i = 0; p->early != NULL && i < st->window; i++)
            free(p->early[i].buf);
        free(p->win);
        free(p->early);
        free(p->rx);
        pthread_mutex_destroy(&p->fp.lock);
    }
    udp_close(st);
    pthread_mutex_destroy(&st->timer_lock);
    free(st->peers);
    free(st);
}

static const struct cdn_transport_ops udp_ops = {
    .name = "udp",
    .init = udp_init,
    .wireup = udp_wireup,
    .reaches = udp_reaches,
    CDN_FRAMES_OPS,
    .poll = udp_poll,
    .fd = udp_fd,
    .finalize = udp_finalize,
};

struct cdn_transport *cdn_udp_transport_create(void)
{
    int size = cdn_job_size();
    if (size <= 1)
        return NULL;
    struct udp_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    st->me = cdn_job_rank();
    st->size = size;
    st->fd = st->timer_fd = st->epfd = -1;
    st->mtu = (size_t)cdn_param_long("CADENCE_UDP_MTU", 16384, UDP_DGRAM_MIN, UDP_DGRAM_MAX);
    st->mss = st->mtu - sizeof(struct udp_dgram);
    st->window = (unsigned)cdn_param_long("CADENCE_UDP_WINDOW", 256, 8, 4096);
    st->rto_min_us = 1000 * (uint64_t)cdn_param_long("CADENCE_UDP_RTO_MIN_MS", 1, 1, 10000);
    st->rto_max_us = 1000 * (uint64_t)cdn_param_long("CADENCE_UDP_RTO_MAX_MS", 1000, 1, 60000);
    if (st->rto_max_us < st->rto_min_us)
        st->rto_max_us = st->rto_min_us;
    st->ack_delay_us = (uint64_t)cdn_param_long("CADENCE_UDP_ACK_DELAY_US", 200, 0, 100000);
    st->peer_timeout_us =
        1000 * (uint64_t)cdn_param_long("CADENCE_UDP_PEER_TIMEOUT_MS", 10000, 100, 3600000);
    /* a silent peer we wait for is probed often enough that its closed
     * socket (ICMP) is noticed well within mpirun's grace after a failure */
    st->probe_us = st->peer_timeout_us / 16;
    st->probe_us = st->probe_us < 10000 ? 10000 : st->probe_us > 100000 ? 100000 : st->probe_us;
    uint64_t rto0 = 4 * st->rto_min_us;
    st->rto_init_us = rto0 > st->rto_max_us ? st->rto_max_us : rto0;
    st->peers = calloc((size_t)size, sizeof *st->peers);
    st->owing = calloc((size_t)size, sizeof *st->owing);
    st->rbuf = malloc(UDP_RBUF);
    bool ok = st->peers != NULL && st->owing != NULL && st->rbuf != NULL;
    for (int w = 0; ok && w < size; w++) {
        struct udp_peer *p = &st->peers[w];
        cdn_fpeer_init(&p->fp, w, &udp_fpeer_ops);
        p->state = PEER_OK;
        p->snd_una = p->snd_nxt = p->rcv_nxt = 1;
        p->rto_us = st->rto_init_us;
    }
    if (!ok) {
        free(st->peers);
        free(st->owing);
        free(st->rbuf);
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->timer_lock, NULL);
    st->tp.ops = &udp_ops;
    st->tp.am_max = TCP_AM_MAX;
    st->tp.eager_always = st->tp.eager_limit =
        (size_t)cdn_param_long("CADENCE_UDP_EAGER_LIMIT", 65536, 0, TCP_EAGER_MAX);
    st->peer_table = (struct cdn_frames_peers){st->peers, sizeof *st->peers,
                                               offsetof(struct udp_peer, fp)};
    st->tp.priv = &st->peer_table;
    return &st->tp;
}
