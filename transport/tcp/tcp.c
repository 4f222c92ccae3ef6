/*
 * The TCP transport's ops (see tcp.h for connections and threads, frame.h
 * for the wire format).
 *
 * Protocols, per message size:
 *   eager (<= CADENCE_TCP_EAGER_LIMIT): one writev of frame header and the
 *     user's data (packed first only for a non-contiguous datatype); the
 *     send is complete once the kernel has the bytes, or a copy of what it
 *     did not take is queued.  The receiver matches from its read buffer.
 *   rendezvous: RTS; on a match the receiver answers CTS and the sender
 *     streams DATA frames of at most TCP_DATA_CHUNK bytes straight from the
 *     user buffer (a non-contiguous one is packed one chunk at a time); the
 *     receiver reads each payload straight into a contiguous receive buffer
 *     (else through its read buffer, unpacking as it goes).  No message is
 *     ever staged whole: a pipelined stream.
 * A send waiting for the peer (CTS, a synchronous send's ACK, a cancel's
 * answer) sits in the peer's `waiting` list and a receive waiting for DATA
 * in `pulls`: a cookie or token from the wire is used only after it is
 * found there, so a bad peer cannot make us touch a stray pointer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "progress/engine.h"
#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "transport/inet.h"
#include "transport/tcp/tcp.h"
#include "transport/xfer_list.h"

#define RX_CAP (sizeof(struct tcp_frame) + TCP_EAGER_MAX + 64 * 1024)

enum { OUT_BYTES, OUT_STREAM };

struct tcp_out {
    struct tcp_out *next;
    int kind;
    unsigned char *buf;           /* BYTES: what to write; STREAM: a packing buffer (or NULL) */
    size_t len, off;              /* BYTES */
    struct cdn_xfer *x;           /* STREAM: the send */
    const char *src;              /* STREAM: contiguous data, or NULL: pack each chunk */
    uint64_t token, total, done;  /* STREAM: receiver's token, bytes to send, bytes sent */
    struct tcp_frame hdr;         /* STREAM: the current chunk's header */
    size_t chunk, hdr_off, chunk_off;
    size_t cap;                   /* bytes of room after the item (buf's, or a chunk's) */
};

static struct tcp_state *state_of(struct cdn_transport *tp)
{
    return (struct tcp_state *)tp;  /* its first member (tp->priv: the peers, for transport/frames.c) */
}

static struct tcp_peer *peer_of(struct cdn_fpeer *fp)
{
    return (struct tcp_peer *)((char *)fp - offsetof(struct tcp_peer, fp));
}





void tcp_watch_out(struct tcp_state *st, struct tcp_peer *p, bool on)
{
    if (p->pollout == on || p->fd < 0)
        return;
    p->pollout = on;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data.ptr = p};
    epoll_ctl(st->epfd, EPOLL_CTL_MOD, p->fd, &ev);
}

static void queue(struct tcp_state *st, struct tcp_peer *p, struct tcp_out *o)
{
    o->next = NULL;
    if (p->outq_tail)
        p->outq_tail->next = o;
    else
        p->outq = o;
    p->outq_tail = o;
    cdn_progress_work_changed(1);
    atomic_fetch_add(&st->queued, 1);
}

/* Spare queue items kept per peer (dequeue): a queue deeper than this
 * allocates for the excess each time it fills. */
enum { OUT_SPARE_MAX = 64 };

/* A zeroed queue item for p with at least room bytes after it: a spare
 * one, or a new one, its room rounded up to a power of two so that spares
 * fit later items of about the same size (lock held); NULL when out of
 * memory. */
static struct tcp_out *out_get(struct tcp_peer *p, size_t room)
{
    struct tcp_out **link = &p->out_spare;
    while (*link != NULL && (*link)->cap < room)
        link = &(*link)->next;
    struct tcp_out *o = *link;
    if (o == NULL) {
        size_t cap = room == 0 ? 0 : 64;
        while (cap < room)
            cap *= 2;
        o = calloc(1, sizeof *o + cap);
        if (o != NULL)
            o->cap = cap;
        return o;
    }
    *link = o->next;
    p->nspare--;
    size_t cap = o->cap;
    memset(o, 0, sizeof *o);
    o->cap = cap;
    return o;
}

static void dequeue(struct tcp_state *st, struct tcp_peer *p)
{
    struct tcp_out *o = p->outq;
    p->outq = o->next;
    if (p->outq == NULL)
        p->outq_tail = NULL;
    if (p->nspare < OUT_SPARE_MAX) {
        o->next = p->out_spare;
        p->out_spare = o;
        p->nspare++;
    } else {
        free(o);
    }
    atomic_fetch_sub(&st->queued, 1);
    cdn_progress_work_changed(-1);
}

/* Write as much as the socket takes; < 0 means it would block (or failed:
 * the reader finds out and fails the peer). */
static ssize_t write_iov(int fd, struct iovec *iov, int n)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    for (;;) {
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0 || errno != EINTR)
            return w;
    }
}

/* One step of a stream: false when the socket is full. */
static bool stream_step(struct tcp_peer *p, struct tcp_out *o)
{
    if (o->chunk == 0) {
        uint64_t left = o->total - o->done;
        o->chunk = left < TCP_DATA_CHUNK ? (size_t)left : TCP_DATA_CHUNK;
        memset(&o->hdr, 0, sizeof o->hdr);
        o->hdr.type = F_DATA;
        o->hdr.len = (uint32_t)o->chunk;
        o->hdr.a = o->token;
        o->hdr.b = o->done;
        o->hdr_off = o->chunk_off = 0;
        if (o->src == NULL)
            cdn_p2p_send_pack(o->x, o->done, o->buf, o->chunk);
    }
    const char *data = o->src != NULL ? o->src + o->done : (const char *)o->buf;
    struct iovec iov[2] = {
        {(char *)&o->hdr + o->hdr_off, sizeof o->hdr - o->hdr_off},
        {(char *)data + o->chunk_off, o->chunk - o->chunk_off},
    };
    int first = o->hdr_off == sizeof o->hdr;
    ssize_t w = write_iov(p->fd, iov + first, 2 - first);
    if (w <= 0)
        return false;
    size_t h = sizeof o->hdr - o->hdr_off;
    if ((size_t)w < h) {
        o->hdr_off += (size_t)w;
        return false;
    }
    o->hdr_off = sizeof o->hdr;
    o->chunk_off += (size_t)w - h;
    if (o->chunk_off < o->chunk)
        return false;
    o->done += o->chunk;
    o->chunk = 0;
    return true;
}

/* Write what waits for the peer, in order (its lock held, connection up).
 * Finished streams are chained on *done for the caller to report. */
static void flush(struct tcp_state *st, struct tcp_peer *p, struct cdn_xfer **done)
{
    bool blocked = false;
    while (p->outq != NULL && !blocked) {
        struct tcp_out *o = p->outq;
        if (o->kind == OUT_BYTES) {
            struct iovec iov = {o->buf + o->off, o->len - o->off};
            ssize_t w = write_iov(p->fd, &iov, 1);
            if (w > 0)
                o->off += (size_t)w;
            blocked = o->off < o->len;
        } else {
            while (o->done < o->total && !blocked)
                blocked = !stream_step(p, o);
            if (!blocked) {
                o->x->next = *done;
                *done = o->x;
            }
        }
        if (!blocked)
            dequeue(st, p);
    }
    tcp_watch_out(st, p, blocked);
}

static void report(struct cdn_xfer *done)
{
    while (done != NULL) {
        struct cdn_xfer *r = done;
        done = r->next;
        r->next = NULL;
        cdn_p2p_send_done(r, true, MPI_SUCCESS);
    }
}

void tcp_peer_up(struct tcp_state *st, struct tcp_peer *p, int fd)
{
    if (p->rx == NULL && (p->rx = malloc(RX_CAP)) == NULL)
        cdn_rt_abort(1, "cadence: tcp: out of memory for the connection to rank %d", p->fp.world);
    p->fd = fd;
    p->state = PEER_UP;
    p->pollout = true;
    tcp_watch_out(st, p, false);  /* re-registers the socket as the peer's */
    struct cdn_xfer *done = NULL;
    flush(st, p, &done);
    /* streams start only on a CTS, which needs the connection: none finished here */
    (void)done;
}

/* Error for an operation with a peer that cannot be reached (lock held). */
static int peer_err(struct tcp_peer *p, const char *what)
{
    if (p->state == PEER_GONE)
        return cdn_err(MPI_ERR_OTHER, "%s: rank %d has finalized", what, p->fp.world);
    return cdn_err(MPIX_ERR_PROC_FAILED, "%s: rank %d has failed", what, p->fp.world);
}

/* Write a frame (and payload) now if the connection is up and idle, and
 * queue a copy of whatever was not written (lock held, peer usable). */
static int put(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
               const void *payload, size_t plen)
{
    struct tcp_state *st = state_of(tp);
    struct tcp_peer *p = peer_of(fp);
    size_t total = sizeof *f + plen, w = 0;
    if (p->state == PEER_UP && p->outq == NULL) {
        struct iovec iov[2] = {{(void *)f, sizeof *f}, {(void *)payload, plen}};
        ssize_t n = write_iov(p->fd, iov, plen > 0 ? 2 : 1);
        w = n > 0 ? (size_t)n : 0;
        if (w == total)
            return MPI_SUCCESS;
    }
    struct tcp_out *o = out_get(p, total - w);
    if (o == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "tcp: out of memory queueing %zu bytes for rank %d",
                       total - w, p->fp.world);
    o->kind = OUT_BYTES;
    o->buf = (unsigned char *)(o + 1);
    o->len = total - w;
    if (w < sizeof *f) {
        memcpy(o->buf, (const char *)f + w, sizeof *f - w);
        if (plen > 0)
            memcpy(o->buf + sizeof *f - w, payload, plen);
    } else {
        memcpy(o->buf, (const char *)payload + (w - sizeof *f), total - w);
    }
    queue(st, p, o);
    if (p->state == PEER_UP)
        tcp_watch_out(st, p, true);
    return MPI_SUCCESS;
}

/* Make the peer usable for writing: connect on first use (lock held). */
static int usable(struct cdn_transport *tp, struct cdn_fpeer *fp, const char *what)
{
    struct tcp_state *st = state_of(tp);
    struct tcp_peer *p = peer_of(fp);
    if (p->state == PEER_FAILED || p->state == PEER_GONE)
        return peer_err(p, what);
    if (p->state == PEER_NONE)
        return tcp_connect(st, p);
    return MPI_SUCCESS;
}

static const struct cdn_fpeer_ops tcp_fpeer_ops = {usable, put};

void tcp_take_all(struct tcp_state *st, struct tcp_peer *p, struct tcp_failed *f)
{
    f->outq = p->outq;
    cdn_frames_take(&p->fp, &f->held);
    for (struct tcp_out *o = p->outq; o != NULL; o = o->next) {
        atomic_fetch_sub(&st->queued, 1);
        cdn_progress_work_changed(-1);
    }
    p->outq = p->outq_tail = NULL;
}

void tcp_fail_all(struct tcp_failed *f, int err)
{
    while (f->outq != NULL) {
        struct tcp_out *o = f->outq;
        f->outq = o->next;
        if (o->kind == OUT_STREAM)
            cdn_p2p_send_done(o->x, true, err);
        free(o);
    }
    cdn_frames_fail(&f->held, err);
}

/* ---- reading ---- */

static void on_cts(struct tcp_state *st, struct tcp_peer *p, const struct tcp_frame *f)
{
    struct cdn_xfer *s = cdn_frames_cts(&st->tp, &p->fp, f);
    if (s == NULL)
        return;
    const char *src = s->src;  /* NULL: pack each chunk */
    bool contig = src != NULL;
    struct cdn_xfer *done = NULL;
    pthread_mutex_lock(&p->fp.lock);
    if (p->state != PEER_UP) {
        pthread_mutex_unlock(&p->fp.lock);
        cdn_p2p_send_done(s, true, peer_err(p, "send"));
        return;
    }
    struct tcp_out *o = out_get(p, contig ? 0 : TCP_DATA_CHUNK);
    if (o == NULL)
        cdn_rt_abort(1, "cadence: tcp: out of memory starting a transfer to rank %d", p->fp.world);
    o->kind = OUT_STREAM;
    o->x = s;
    o->src = src;
    o->buf = contig ? NULL : (unsigned char *)(o + 1);
    o->token = f->b;
    o->total = f->h.bytes;
    queue(st, p, o);
    flush(st, p, &done);
    pthread_mutex_unlock(&p->fp.lock);
    report(done);
}

/* A DATA header: find the receive and where its payload goes. */
static void on_data(struct tcp_state *st, struct tcp_peer *p, const struct tcp_frame *f)
{
    struct cdn_xfer *r = cdn_frames_data(&st->tp, &p->fp, f);
    p->body = r;
    p->body_off = f->b;
    p->body_left = f->len;
}

/* n payload bytes of the current DATA frame were placed (at dst) or are at src. */
static void body_advance(struct tcp_peer *p, const void *src, size_t n)
{
    struct cdn_xfer *r = p->body;
    if (src != NULL)
        cdn_p2p_recv_data(r, p->body_off, src, n);
    p->body_off += n;
    p->body_left -= n;
    r->moved = p->body_off;
    if (p->body_left > 0)
        return;
    p->body = NULL;
    cdn_frames_data_moved(&p->fp, r);
}

static void on_frame(struct tcp_state *st, struct tcp_peer *p, const struct tcp_frame *f,
                     const unsigned char *payload)
{
    switch (f->type) {
    case F_CTS:
        on_cts(st, p, f);
        break;
    case F_DATA:
        on_data(st, p, f);
        break;
    case F_BYE:
        p->bye = true;
        break;
    default:  /* EAGER, RTS, ACK, AM */
        cdn_frames_arrived(&st->tp, &p->fp, f, payload);
        break;
    }
}

/* The connection ended: quietly after a BYE, as a failure otherwise. */
static void peer_closed(struct tcp_state *st, struct tcp_peer *p, const char *why)
{
    if (!p->bye) {
        tcp_peer_failed(st, p, why);
        return;
    }
    pthread_mutex_lock(&p->fp.lock);
    p->state = PEER_GONE;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    pthread_mutex_unlock(&p->fp.lock);
}

/* Read and handle everything the peer has sent; returns frames handled. */
static int peer_read(struct tcp_state *st, struct tcp_peer *p)
{
    int frames = 0;
    while (p->fd >= 0) {
        /* the payload of a DATA frame: what is buffered, then straight to the receive buffer */
        if (p->body != NULL) {
            size_t have = p->rx_len - p->rx_off;
            size_t n = have < p->body_left ? have : (size_t)p->body_left;
            if (n > 0) {
                p->rx_off += n;
                body_advance(p, p->rx + p->rx_off - n, n);
                continue;
            }
            if (p->body->dst != NULL) {
                ssize_t r = recv(p->fd, (char *)p->body->dst + p->body_off, (size_t)p->body_left,
                                 0);
                if (r > 0) {
                    body_advance(p, NULL, (size_t)r);
                    continue;
                }
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    return frames;
                peer_closed(st, p, r == 0 ? "connection closed" : strerror(errno));
                return frames;
            }
        }
        /* frames in the read buffer */
        while (p->body == NULL) {
            struct tcp_frame f;
            const char *why = NULL;
            size_t k = cdn_tcp_frame_parse(p->rx + p->rx_off, p->rx_len - p->rx_off,
                                           TCP_EAGER_MAX, &f, &why);
            if (k == CDN_TCP_BAD)
                cdn_frames_bad_peer(&st->tp, &p->fp, why);
            if (k == CDN_TCP_NEED_MORE)
                break;
            p->rx_off += k;
            frames++;
            on_frame(st, p, &f, p->rx + p->rx_off - k + sizeof f);
            if (p->fd < 0)
                return frames;
        }
        if (p->body != NULL && p->rx_off < p->rx_len)
            continue;
        /* refill */
        if (p->rx_off > 0) {
            memmove(p->rx, p->rx + p->rx_off, p->rx_len - p->rx_off);
            p->rx_len -= p->rx_off;
            p->rx_off = 0;
        }
        ssize_t r = recv(p->fd, p->rx + p->rx_len, RX_CAP - p->rx_len, 0);
        if (r > 0) {
            p->rx_len += (size_t)r;
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return frames;
        peer_closed(st, p, r == 0 ? "connection closed" : strerror(errno));
        return frames;
    }
    return frames;
}

static int tcp_poll(struct cdn_transport *tp)
{
    struct tcp_state *st = state_of(tp);
    struct epoll_event ev[32];
    int n = epoll_wait(st->epfd, ev, 32, 0), handled = 0;
    bool expire = false;
    for (int i = 0; i < n; i++) {
        int kind = *(int *)ev[i].data.ptr;
        if (kind == EP_LISTEN) {
            tcp_accept_all(st);
        } else if (kind == EP_TIMER) {
            expire = true;
        } else if (kind == EP_CONN) {
            tcp_conn_event(st, ev[i].data.ptr, ev[i].events);
        } else {
            struct tcp_peer *p = ev[i].data.ptr;
            if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                handled += peer_read(st, p);
            if (ev[i].events & EPOLLOUT) {
                struct cdn_xfer *done = NULL;
                pthread_mutex_lock(&p->fp.lock);
                if (p->state == PEER_UP)
                    flush(st, p, &done);
                pthread_mutex_unlock(&p->fp.lock);
                report(done);
            }
        }
        handled++;
    }
    if (expire)
        tcp_conns_expire(st);
    if (n > 0)
        tcp_conns_reap(st);
    return handled;
}

static int tcp_fd(struct cdn_transport *tp)
{
    return state_of(tp)->epfd;
}

static bool tcp_reaches(struct cdn_transport *tp, int world_rank)
{
    struct tcp_state *st = state_of(tp);
    return world_rank >= 0 && world_rank < st->size && world_rank != st->me;
}

static int tcp_init(struct cdn_transport *tp)
{
    struct tcp_state *st = state_of(tp);
    int rc = tcp_listen(st);
    return rc != MPI_SUCCESS ? rc : cdn_job_key_publish(st->me, st->key);
}

static int tcp_wireup(struct cdn_transport *tp)
{
    return cdn_job_key_fetch(state_of(tp)->me, state_of(tp)->key);
}

/* Say BYE on every connection, so the peers take the close that follows
 * as an ending and not a failure. */
static void tcp_finalize(struct cdn_transport *tp)
{
    struct tcp_state *st = state_of(tp);
    if (tp->ctx == 0)
        cdn_job_key_forget();
    for (int w = 0; w < st->size; w++) {
        struct tcp_peer *p = &st->peers[w];
        if (p->fd >= 0) {
            struct tcp_frame bye;
            memset(&bye, 0, sizeof bye);
            bye.type = F_BYE;
            struct iovec iov = {&bye, sizeof bye};
            write_iov(p->fd, &iov, 1);
            shutdown(p->fd, SHUT_WR);
            char sink[4096];
            while (recv(p->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
            }
            close(p->fd);
        }
        struct tcp_failed f;
        tcp_take_all(st, p, &f);
        while (f.outq != NULL) {
            struct tcp_out *o = f.outq;
            f.outq = o->next;
            free(o);
        }
        while (p->out_spare != NULL) {
            struct tcp_out *o = p->out_spare;
            p->out_spare = o->next;
            free(o);
        }
        free(p->rx);
        pthread_mutex_destroy(&p->fp.lock);
    }
    tcp_conns_close_all(st);
    if (st->listen_fd >= 0)
        close(st->listen_fd);
    if (st->timer_fd >= 0)
        close(st->timer_fd);
    if (st->epfd >= 0)
        close(st->epfd);
    pthread_mutex_destroy(&st->conns_lock);
    free(st->peers);
    free(st);
}

static const struct cdn_transport_ops tcp_ops = {
    .name = "tcp",
    .init = tcp_init,
    .wireup = tcp_wireup,
    .reaches = tcp_reaches,
    CDN_FRAMES_OPS,
    .poll = tcp_poll,
    .fd = tcp_fd,
    .finalize = tcp_finalize,
};

struct cdn_transport *cdn_tcp_transport_create(void)
{
    int size = cdn_job_size();
    if (size <= 1)
        return NULL;
    struct tcp_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    st->peers = calloc((size_t)size, sizeof *st->peers);
    if (st->peers == NULL) {
        free(st);
        return NULL;
    }
    st->me = cdn_job_rank();
    st->size = size;
    st->epfd = st->listen_fd = st->timer_fd = -1;
    pthread_mutex_init(&st->conns_lock, NULL);
    for (int w = 0; w < size; w++) {
        struct tcp_peer *p = &st->peers[w];
        p->ep = EP_PEER;
        cdn_fpeer_init(&p->fp, w, &tcp_fpeer_ops);
        p->fd = -1;
        p->state = PEER_NONE;
    }
    st->auth_ms = cdn_param_long("CADENCE_TCP_AUTH_TIMEOUT", 2000, 10, 600000);
    st->tp.ops = &tcp_ops;
    st->tp.caps = CDN_TP_CAP_MUTE;  /* progress/engine.c, cdn_progress_mute */
    st->tp.am_max = TCP_AM_MAX;
    st->tp.eager_always = st->tp.eager_limit =
        (size_t)cdn_param_long("CADENCE_TCP_EAGER_LIMIT", 65536, 0, TCP_EAGER_MAX);
    st->peer_table = (struct cdn_frames_peers){st->peers, sizeof *st->peers,
                                               offsetof(struct tcp_peer, fp)};
    st->tp.priv = &st->peer_table;
    return &st->tp;
}
