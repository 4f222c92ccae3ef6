/*
 * The ofi transport's receiving side (see ofi.h): the receive buffers, the
 * completion queue, what each message does, error completions and the
 * loss of a peer, and arming the wait fd.
 *
 * Every byte of a received message is checked before it is used: the
 * header's type and sender, the payload's length against what arrived,
 * and a cookie or token against the lists of transfers waiting for that
 * sender.  A peer that fails a check ends the job (as tcp does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "progress/job.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "transport/ofi/ofi.h"

#define CQ_BATCH 16
#define CQ_ROUNDS 8   /* batches read per poll at most */

/* ---- receive buffers ---- */

static void rx_post(struct ofi_state *st, struct ofi_op *op)
{
    ssize_t rc = fi_recv(st->ep, op->buf, op->cap, op->mr ? fi_mr_desc(op->mr) : NULL,
                         FI_ADDR_UNSPEC, &op->ctx);
    if (rc == 0)
        return;
    /* -FI_EAGAIN: the next poll tries again */
    pthread_mutex_lock(&st->lock);
    op->next = st->rx_idle;
    st->rx_idle = op;
    pthread_mutex_unlock(&st->lock);
}

int cdn_ofi_rx_open(struct ofi_state *st)
{
    size_t cap = sizeof(struct ofi_msg) + OFI_EAGER_MAX;
    for (int i = 0; i < OFI_RX_COUNT; i++) {
        struct ofi_op *op = calloc(1, sizeof *op + cap);
        if (op == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: ofi: out of memory for receive buffers");
        op->kind = OP_RECV;
        op->cap = cap;
        st->rx[i] = op;
        if (st->mr_local) {
            int rc = cdn_ofi_reg(st, op->buf, cap, FI_RECV, &op->mr);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        rx_post(st, op);
    }
    return MPI_SUCCESS;
}

/* After the endpoint closed. */
void cdn_ofi_rx_close(struct ofi_state *st)
{
    for (int i = 0; i < OFI_RX_COUNT; i++) {
        struct ofi_op *op = st->rx[i];
        if (op == NULL)
            continue;
        if (op->mr != NULL)
            fi_close(&op->mr->fid);
        free(op);
        st->rx[i] = NULL;
    }
    st->rx_idle = NULL;
}

static void rx_repost_idle(struct ofi_state *st)
{
    pthread_mutex_lock(&st->lock);
    struct ofi_op *idle = st->rx_idle;
    st->rx_idle = NULL;
    pthread_mutex_unlock(&st->lock);
    while (idle != NULL) {
        struct ofi_op *op = idle;
        idle = op->next;
        rx_post(st, op);
    }
}

/* ---- messages ---- */

static _Noreturn void bad_peer(struct ofi_state *st, int peer, const char *why)
{
    cdn_rt_abort(1, "cadence: rank %d: ofi: rank %d sent a malformed message (%s); ending the "
                 "job", st->me, peer, why);
}

/* Check a received message: NULL, or what is wrong with it. */
static const char *msg_check(const struct ofi_state *st, const struct ofi_msg *m, size_t len)
{
    if (len < sizeof *m)
        return "shorter than a header";
    if (m->type == 0 || m->type >= M_TYPE_END)
        return "unknown type";
    if (m->from < 0 || m->from >= st->size || m->from == st->me)
        return "sender out of range";
    if (m->len > st->payload_max || len != sizeof *m + m->len)
        return "payload length does not match what arrived";
    if (m->type == M_EAGER && m->h.bytes != m->len)
        return "eager payload of the wrong size";
    if (m->type == M_RTS && !(m->h.flags & CDN_WIRE_RNDV))
        return "rendezvous header without its flag";
    return NULL;
}

/* CTS (no FI_RMA): send the data as DATA messages, copied now. */
static void on_cts(struct ofi_state *st, const struct ofi_msg *m)
{
    struct ofi_peer *p = &st->peers[m->from];
    struct cdn_xfer *s = cdn_ofi_take(st, &p->waiting, m->a, WAIT_CTS);
    if (s == NULL)
        bad_peer(st, m->from, "clear-to-send for no waiting send");
    if (m->h.bytes > s->bytes)
        bad_peer(st, m->from, "clear-to-send for more bytes than the message has");
    const char *src = m->h.bytes > 0 ? cdn_p2p_send_contig(s) : NULL;
    if (m->h.bytes > 0 && src == NULL) {
        cdn_p2p_send_done(s, true, cdn_err(MPI_ERR_NO_MEM, "send: out of memory staging "
                                           "%llu bytes", (unsigned long long)s->bytes));
        return;
    }
    struct ofi_msg d;
    memset(&d, 0, sizeof d);
    d.type = M_DATA;
    d.a = m->b;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&st->lock);
    if (p->state != PEER_UP)
        rc = cdn_ofi_peer_err(m->from, "send");
    for (uint64_t off = 0; off < m->h.bytes && rc == MPI_SUCCESS; off += st->payload_max) {
        uint64_t left = m->h.bytes - off;
        d.b = off;
        d.len = (uint32_t)(left < st->payload_max ? left : st->payload_max);
        rc = cdn_ofi_post_msg(st, m->from, &d, src + off, d.len);
    }
    pthread_mutex_unlock(&st->lock);
    cdn_p2p_send_done(s, true, rc);
}

/* DATA (no FI_RMA): a piece of a receive's message. */
static void on_data(struct ofi_state *st, const struct ofi_msg *m, const unsigned char *payload)
{
    struct ofi_peer *p = &st->peers[m->from];
    pthread_mutex_lock(&st->lock);
    struct cdn_xfer *r = p->pulls;
    while (r != NULL && (uint64_t)(uintptr_t)r != m->a)
        r = r->next;
    pthread_mutex_unlock(&st->lock);
    if (r == NULL)
        bad_peer(st, m->from, "data for no waiting receive");
    if (m->b != r->moved || m->len > r->bytes - m->b)
        bad_peer(st, m->from, "data out of order or past the end of the message");
    if (r->dst != NULL)
        memcpy((char *)r->dst + m->b, payload, m->len);
    else
        cdn_p2p_recv_data(r, m->b, payload, m->len);
    r->moved += m->len;
    if (r->moved < r->bytes)
        return;
    cdn_ofi_take(st, &p->pulls, m->a, 0);
    cdn_p2p_recv_done(r, MPI_SUCCESS);
}

/* A checked message, next in its sender's order. */
static void on_msg(struct ofi_state *st, struct ofi_op *op)
{
    const struct ofi_msg *m = (const struct ofi_msg *)op->buf;
    const unsigned char *payload = op->buf + sizeof *m;
    struct ofi_peer *p = &st->peers[m->from];
    struct cdn_xfer *s;
    switch (m->type) {
    case M_EAGER:
        cdn_p2p_arrived(&st->tp, m->from, &m->h, payload, NULL, p->msgs_in++);
        break;
    case M_RTS: {
        struct cdn_mem_key rkey = {.addr = m->a, .key = m->b};
        cdn_p2p_arrived(&st->tp, m->from, &m->h, NULL, st->rma ? &rkey : NULL, p->msgs_in++);
        break;
    }
    case M_FIN:
        if ((s = cdn_ofi_take(st, &p->waiting, m->a, WAIT_FIN)) == NULL)
            bad_peer(st, m->from, "rendezvous completion for no waiting send");
        cdn_ofi_send_unreg(s);
        cdn_p2p_send_done(s, true, MPI_SUCCESS);
        break;
    case M_ACK:
        if (cdn_ofi_take(st, &p->waiting, m->a, WAIT_ACK) == NULL)
            bad_peer(st, m->from, "acknowledgement for no waiting synchronous send");
        cdn_p2p_acked(m->a, MPI_SUCCESS);
        break;
    case M_AM:
        cdn_am_arrived(&st->tp, m->from, (unsigned)m->a, payload, m->len);
        break;
    case M_CTS:
        on_cts(st, m);
        break;
    case M_DATA:
        on_data(st, m, payload);
        break;
    case M_PING:
        break;
    }
}

/* A receive buffer completed.  Providers deliver a peer's messages into
 * our buffers in the order they were sent (FI_ORDER_SAS), but may report
 * them out of it: tcp;ofi_rxm completes a message it moves by its own
 * rendezvous after the small ones behind it.  So every message carries
 * its number on the channel, and one that completes early waits, buffer
 * and all, until those before it were handled (its own predecessors are
 * already in posted buffers: none is needed for them to complete). */
static void on_recv(struct ofi_state *st, struct ofi_op *op, size_t len)
{
    const struct ofi_msg *m = (const struct ofi_msg *)op->buf;
    const char *why = msg_check(st, m, len);
    if (why != NULL)
        bad_peer(st, len >= sizeof *m ? m->from : -1, why);
    struct ofi_peer *p = &st->peers[m->from];
    if (m->seq - p->seq_in > (1u << 30))
        bad_peer(st, m->from, "a message numbered before one already handled");
    if (m->seq != p->seq_in) {
        op->next = p->held;
        p->held = op;
        return;
    }
    for (;;) {
        on_msg(st, op);
        rx_post(st, op);
        p->seq_in++;
        struct ofi_op **link = &p->held;
        while (*link != NULL && ((struct ofi_msg *)(*link)->buf)->seq != p->seq_in)
            link = &(*link)->next;
        if ((op = *link) == NULL)
            return;
        *link = op->next;
    }
}

/* ---- peer loss ---- */

/* Take a failed peer's ops out of the backlog (lock held); bulks whose
 * last chunk that was go on *done. */
static void backlog_drop(struct ofi_state *st, int peer, struct ofi_bulk **done, int err)
{
    struct ofi_op **link = &st->backlog;
    st->backlog_tail = NULL;
    while (*link != NULL) {
        struct ofi_op *op = *link;
        if (op->peer != peer || op->kind == OP_RECV) {
            st->backlog_tail = op;
            link = &op->next;
            continue;
        }
        *link = op->next;
        struct ofi_bulk *b = op->bulk;
        if (b != NULL) {
            if (b->err == MPI_SUCCESS)
                b->err = err;
            if (--b->parts == 0) {
                for (struct ofi_bulk **l = &st->bulks; *l != NULL; l = &(*l)->next)
                    if (*l == b) {
                        *l = b->next;
                        break;
                    }
                b->next = *done;
                *done = b;
            }
        }
        cdn_ofi_op_put(st, op);
        cdn_ofi_work(st, -1);
    }
}

static void peer_failed(struct ofi_state *st, int peer, const char *why)
{
    struct ofi_peer *p = &st->peers[peer];
    struct ofi_bulk *done = NULL;
    pthread_mutex_lock(&st->lock);
    if (p->state == PEER_FAILED || st->closing) {
        pthread_mutex_unlock(&st->lock);
        return;
    }
    p->state = PEER_FAILED;
    struct cdn_xfer *waiting = p->waiting, *pulls = p->pulls;
    p->waiting = p->pulls = NULL;
    int err = cdn_err(MPIX_ERR_PROC_FAILED, "rank %d failed: %s", peer, why);
    backlog_drop(st, peer, &done, err);
    pthread_mutex_unlock(&st->lock);
    fprintf(stderr, "cadence: rank %d: ofi: lost rank %d (%s); operations with it fail with "
            "MPIX_ERR_PROC_FAILED\n", st->me, peer, why);
    while (waiting != NULL) {
        struct cdn_xfer *r = waiting;
        waiting = r->next;
        r->next = NULL;
        if (r->state == WAIT_ACK) {
            cdn_p2p_acked((uint64_t)(uintptr_t)r, err);
        } else {
            cdn_ofi_send_unreg(r);
            cdn_p2p_send_done(r, true, err);
        }
    }
    while (pulls != NULL) {
        struct cdn_xfer *r = pulls;
        pulls = r->next;
        r->next = NULL;
        cdn_p2p_recv_done(r, err);
    }
    while (done != NULL) {
        struct ofi_bulk *b = done;
        done = b->next;
        cdn_ofi_bulk_done(st, b);
    }
    cdn_p2p_peer_failed(&st->tp, peer, err);
}

void cdn_ofi_peer_lost(struct cdn_transport *tp, int peer)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    if (peer >= 0 && peer < st->size && peer != st->me)
        peer_failed(st, peer, "the launcher reports that it ended");
}

/* ---- completions ---- */

/* A chunk of a bulk move completed (err: MPI_SUCCESS or a code). */
static void chunk_done(struct ofi_state *st, struct ofi_op *op, int err)
{
    struct ofi_bulk *b = op->bulk;
    pthread_mutex_lock(&st->lock);
    if (err != MPI_SUCCESS && b->err == MPI_SUCCESS)
        b->err = err;
    bool last = --b->parts == 0;
    if (last)
        for (struct ofi_bulk **l = &st->bulks; *l != NULL; l = &(*l)->next)
            if (*l == b) {
                *l = b->next;
                break;
            }
    cdn_ofi_op_put(st, op);
    pthread_mutex_unlock(&st->lock);
    cdn_ofi_work(st, -1);
    if (last)
        cdn_ofi_bulk_done(st, b);
}

static void completed(struct ofi_state *st, struct ofi_op *op, size_t len)
{
    switch (op->kind) {
    case OP_RECV:
        on_recv(st, op, len);
        break;
    case OP_SEND:
        pthread_mutex_lock(&st->lock);
        cdn_ofi_op_put(st, op);
        pthread_mutex_unlock(&st->lock);
        cdn_ofi_work(st, -1);
        break;
    default:
        chunk_done(st, op, MPI_SUCCESS);
        break;
    }
}

static void failed(struct ofi_state *st)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    if (fi_cq_readerr(st->cq, &e, 0) < 0)
        return;
    struct ofi_op *op = e.op_context;
    if (op == NULL)
        return;
    char why[160];
    snprintf(why, sizeof why, "%s", fi_cq_strerror(st->cq, e.prov_errno, e.err_data, NULL, 0));
    if (op->kind == OP_RECV) {
        if (e.err == FI_ECANCELED || st->closing)
            return;  /* the endpoint is closing: keep the buffer off */
        fprintf(stderr, "cadence: rank %d: ofi: a receive failed: %s\n", st->me, why);
        rx_post(st, op);
        return;
    }
    int peer = op->peer;
    if (op->kind == OP_SEND)
        completed(st, op, 0);
    else
        chunk_done(st, op, cdn_err(MPIX_ERR_PROC_FAILED, "ofi: transfer with rank %d failed: "
                                   "%s", peer, why));
    if (e.err != FI_ECANCELED)
        peer_failed(st, peer, why);
}

/* Keepalives.  libfabric tells of a lost peer only when an operation
 * aimed at it fails, and a process that only waits for a peer (a
 * rendezvous send waiting for its FIN, a receive for its DATA) aims
 * nothing at it: so every CADENCE_OFI_KEEPALIVE_MS such a process pings
 * the peers it waits for, and a ping that fails fails the peer.  (A
 * receive the engine has posted and not matched is not ours to know of:
 * a peer lost while we only wait in such a receive is not noticed.) */
static void keepalive(struct ofi_state *st)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    if (now < st->keepalive_at)
        return;
    bool first = st->keepalive_at == 0;
    st->keepalive_at = now + (uint64_t)st->keepalive_ns;
    if (first)
        return;
    struct ofi_msg m;
    memset(&m, 0, sizeof m);
    m.type = M_PING;
    pthread_mutex_lock(&st->lock);
    for (int w = 0; w < st->size; w++) {
        struct ofi_peer *p = &st->peers[w];
        if (p->state == PEER_UP && (p->waiting != NULL || p->pulls != NULL))
            cdn_ofi_post_msg(st, w, &m, NULL, 0);
    }
    pthread_mutex_unlock(&st->lock);
}

int cdn_ofi_poll(struct cdn_transport *tp)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct fi_cq_data_entry ev[CQ_BATCH];
    int handled = 0;
    for (int round = 0; round < CQ_ROUNDS; round++) {
        ssize_t n = fi_cq_read(st->cq, ev, CQ_BATCH);
        if (n == -FI_EAVAIL) {
            failed(st);
            handled++;
            continue;
        }
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            completed(st, ev[i].op_context, ev[i].len);
        handled += (int)n;
        atomic_store_explicit(&st->nap_ns, 0, memory_order_relaxed);
        if (n < CQ_BATCH)
            break;
    }
    if (st->keepalive_ns > 0 &&
        ((++st->polls & 63) == 0 || atomic_load_explicit(&st->ping_due, memory_order_relaxed))) {
        atomic_store_explicit(&st->ping_due, false, memory_order_relaxed);
        keepalive(st);
    }
    if (st->rx_idle != NULL)
        rx_repost_idle(st);
    if (st->backlog != NULL) {
        pthread_mutex_lock(&st->lock);
        cdn_ofi_backlog_flush(st);
        pthread_mutex_unlock(&st->lock);
    }
    return handled;
}

/* ---- sleeping ----
 *
 * The engine sleeps on an epoll set of the completion queue's wait fd and
 * a timer of ours.  With a wait fd, arm asks fi_trywait whether sleeping
 * on it is safe (the provider may hold events the fd does not show) and
 * sets the timer for the next keepalive (keepalive()).  Without one,
 * nothing tells us a message came: the timer is set at each arm for a nap
 * of NAP_MIN_NS after anything arrived, doubling while nothing does, up to
 * CADENCE_OFI_NAP_MAX_US (10 ms).  An idle process wakes at most 100
 * times a second; a busy one answers within 0.1 ms; the first message to
 * a long-idle one waits up to the longest nap. */

#define NAP_MIN_NS 100000L

int cdn_ofi_fd(struct cdn_transport *tp)
{
    return cdn_ofi_state(tp)->sleep_fd;
}

static void timer_set(struct ofi_state *st, long ns)
{
    struct itimerspec t = {.it_value = {.tv_sec = ns / 1000000000L,
                                        .tv_nsec = ns % 1000000000L}};
    timerfd_settime(st->timer_fd, 0, &t, NULL);
}

int cdn_ofi_arm(struct cdn_transport *tp)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    if (st->wait_fd >= 0) {
        struct fid *f = &st->cq->fid;
        if (fi_trywait(st->fabric, &f, 1) != FI_SUCCESS)
            return 1;
        if (st->keepalive_ns > 0)
            timer_set(st, st->keepalive_ns);
        return 0;
    }
    long ns = atomic_load_explicit(&st->nap_ns, memory_order_relaxed);
    if (ns < NAP_MIN_NS)
        ns = NAP_MIN_NS;
    atomic_store_explicit(&st->nap_ns, ns * 2 > st->nap_max_ns ? st->nap_max_ns : ns * 2,
                          memory_order_relaxed);
    timer_set(st, ns);
    return 0;
}

/* Woken (or not sleeping after all): stop the timer and empty it, or the
 * engine's epoll would see it readable from now on. */
void cdn_ofi_disarm(struct cdn_transport *tp)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct itimerspec off = {{0, 0}, {0, 0}};
    timerfd_settime(st->timer_fd, 0, &off, NULL);
    uint64_t n;
    if (read(st->timer_fd, &n, sizeof n) == (ssize_t)sizeof n && st->wait_fd >= 0)
        atomic_store_explicit(&st->ping_due, true, memory_order_relaxed);
}
