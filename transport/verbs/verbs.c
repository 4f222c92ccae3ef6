/*
 * The verbs transport: messages and RDMA over an InfiniBand or RoCE
 * adapter through libibverbs, one reliable-connected (RC) queue pair per
 * peer (device.c opens the device and connects them, rdma.c moves
 * rendezvous data and one-sided operations; verbs.h has the state and
 * the wire format).  Named only: CADENCE_TRANSPORTS=verbs (or
 * shm,verbs) opens it.
 *
 * Resources, made once: one completion queue (sends, RDMA and receives)
 * with a completion channel, whose fd is the one the engine sleeps on; a
 * shared receive queue (SRQ) every QP takes its receives from, with
 * CADENCE_VERBS_SRQ_DEPTH pre-registered buffers of a 64-byte header plus
 * the eager payload; a pool of CADENCE_VERBS_SEND_BUFS registered send
 * buffers.  Every message is one SEND into an SRQ buffer; the receiver
 * knows the sender by the world rank in the header, checked against the
 * QP the completion names.
 *
 * Protocols:
 *   eager (<= CADENCE_VERBS_EAGER_LIMIT, default 8 KiB): header and data
 *     copied into a pool buffer (or inline in the work request when they
 *     fit the QP's inline size) and sent; the send is complete once
 *     copied.  The receiver matches from the SRQ buffer, which is posted
 *     again after the upcall.
 *   rendezvous: the sender registers its contiguous buffer (ibv_reg_mr,
 *     remote read) and sends an RTS carrying (address, rkey); on a match
 *     the receiver RDMA-reads the data straight into a contiguous receive
 *     buffer it registers for the read, or through a registered bounce
 *     buffer of VB_BOUNCE bytes, one read at a time, unpacking each
 *     piece (a non-contiguous datatype, or memory that will not
 *     register); then it sends FIN and the sender deregisters and
 *     completes.  A synchronous eager send waits for an ACK.
 *   active messages: a message kind, on the same QP as everything else
 *     to the peer, so in order with it.
 *   get / put: RDMA reads / writes of x->rkey at the peer, the local side
 *     registered for the operation; mem_reg registers memory for peers to
 *     reach (the key is the rkey); MPI windows register their parts so
 *     (progress/rma.c, cdn_rma_register).
 * No registration cache: a cache needs to hear of memory being unmapped,
 * which we do not hook; every rendezvous and one-sided operation pays a
 * registration (tens of microseconds per MiB), which the bytes moved
 * usually dwarf.
 *
 * Flow control: a message goes out in order after whatever waits in the
 * peer's queue, and only with a send slot -- at most CADENCE_VERBS_SQ_DEPTH
 * work requests in flight per QP, and over all QPs no more than the
 * completion queue holds beside the SRQ's buffers -- and a pool buffer;
 * else a copy waits in the peer's queue (cdn_progress_work_changed) and
 * poll posts it as completions free room.  Receives need no credits: a
 * message that finds the SRQ empty is refused by the adapter and sent
 * again (RNR retry, unlimited) until poll has posted buffers back.
 *
 * Completions: only the poller takes them off the queue, except that a
 * thread going to sleep (arm) asks for the next event and then looks once
 * more, keeping what it finds for the next poll (answering "work is
 * there").  Every work request is signaled; its wr_id points at an object
 * whose first member says what it is (verbs.h), because the opcode of an
 * error completion is undefined.
 *
 * Peer loss: a completion with an error (retries exhausted: the peer's
 * adapter stopped answering) fails the peer as TCP's closed socket does:
 * its QP goes to the error state (flushing what was posted), the sends and
 * pulls waiting for it fail with MPIX_ERR_PROC_FAILED, and the engine is
 * told (cdn_p2p_peer_failed).  A peer that said BYE is gone quietly.  A
 * peer that dies while we send it nothing is not noticed here.
 * Finalize: BYE to every peer, then poll (arrivals reach the engine no
 * more; a FIN releases its registration) until our sends are complete and every peer's BYE came, for at most 10 seconds,
 * so no QP is destroyed while a peer still has a message on its way in.
 *
 * What has been run: on the development machine, which has no RDMA
 * device (no rxe or siw module either), only the path that finds none:
 * CADENCE_TRANSPORTS=verbs makes MPI_Init fail with "no RDMA device
 * (ibv_get_device_list found none)".  Everything else -- opening a device,
 * the QP state walk, eager, rendezvous by RDMA read, active messages,
 * get/put, flow control, peer loss, finalize -- is compiled (warning-free)
 * but has never been run, on InfiniBand, RoCE or Soft-RoCE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress/job.h"
#include "runtime/error.h"
#include "transport/verbs/verbs.h"
#include "transport/xfer_list.h"

struct cdn_transport *cdn_verbs_transport_create(void);
const char *cdn_verbs_transport_why_not(void);

/* What a send in `waiting` waits for (its transfer's state).  A
 * rendezvous send keeps its registration in its transfer's `moved` (the
 * transport's field: "whatever the transport counts"). */
enum { WAIT_FIN = 1, WAIT_ACK };

#define FINALIZE_WAIT_MS 10000

static struct vb_state *state_of(struct cdn_transport *tp)
{
    return (struct vb_state *)tp->priv;
}

/* ---- the peers' lists of waiting sends ---- */




/* Take the send a cookie names off the peer's waiting list (NULL if it is
 * not there, or waits for something else): a cookie from the wire is used
 * only once found. */
static struct cdn_xfer *take_waiting(struct vb_peer *p, uint64_t cookie, int want)
{
    pthread_mutex_lock(&p->lock);
    struct cdn_xfer *r = cdn_xfer_take(&p->waiting, cookie, want);
    pthread_mutex_unlock(&p->lock);
    return r;
}

static struct ibv_mr *send_mr(const struct cdn_xfer *sx)
{
    return (struct ibv_mr *)(uintptr_t)sx->moved;
}

/* ---- send slots, pool buffers, the peer's queue (lock held) ---- */

bool cdn_vb_slot_take(struct vb_state *st, struct vb_peer *p)
{
    if (p->sq_used >= st->sq_depth)
        return false;
    if (atomic_fetch_add(&st->sends_out, 1) >= st->send_limit) {
        atomic_fetch_sub(&st->sends_out, 1);
        return false;
    }
    p->sq_used++;
    return true;
}

void cdn_vb_slot_give(struct vb_state *st, struct vb_peer *p)
{
    p->sq_used--;
    atomic_fetch_sub(&st->sends_out, 1);
}

static struct vb_buf *buf_get(struct vb_state *st)
{
    pthread_mutex_lock(&st->buf_lock);
    struct vb_buf *b = st->sfree;
    if (b != NULL)
        st->sfree = b->next;
    pthread_mutex_unlock(&st->buf_lock);
    return b;
}

static void buf_put(struct vb_state *st, struct vb_buf *b)
{
    pthread_mutex_lock(&st->buf_lock);
    b->next = st->sfree;
    st->sfree = b;
    pthread_mutex_unlock(&st->buf_lock);
}

void cdn_vb_enqueue(struct vb_state *st, struct vb_peer *p, struct vb_out *o)
{
    o->next = NULL;
    if (p->outq_tail != NULL)
        p->outq_tail->next = o;
    else
        p->outq = o;
    p->outq_tail = o;
    atomic_fetch_add(&st->queued, 1);
    cdn_progress_work_changed(1);
}

static struct vb_out *dequeue(struct vb_state *st, struct vb_peer *p)
{
    struct vb_out *o = p->outq;
    p->outq = o->next;
    if (p->outq == NULL)
        p->outq_tail = NULL;
    o->next = NULL;
    atomic_fetch_sub(&st->queued, 1);
    cdn_progress_work_changed(-1);
    return o;
}

/* Post a message, header f and plen payload bytes, now: 1 when posted, 0
 * when there is no slot or buffer for it, or minus the error of
 * ibv_post_send. */
static int post_frame(struct vb_state *st, struct vb_peer *p, const struct vb_frame *f,
                      const void *payload, size_t plen)
{
    size_t len = sizeof *f + plen;
    if (!cdn_vb_slot_take(st, p))
        return 0;
    unsigned char small[sizeof *f + VB_INLINE_WANT];
    struct vb_buf *b = NULL;
    unsigned char *at = small;
    struct ibv_sge sge = {.length = (uint32_t)len};
    struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    if (len <= st->max_inline) {  /* copied by the post itself */
        wr.send_flags |= IBV_SEND_INLINE;
        wr.wr_id = (uintptr_t)p;
    } else {
        if ((b = buf_get(st)) == NULL) {
            cdn_vb_slot_give(st, p);
            return 0;
        }
        b->peer = p;
        at = b->data;
        sge.lkey = st->sbuf_mr->lkey;
        wr.wr_id = (uintptr_t)b;
    }
    memcpy(at, f, sizeof *f);
    if (plen > 0)
        memcpy(at + sizeof *f, payload, plen);
    sge.addr = (uintptr_t)at;
    int rc = ibv_post_send(p->qp, &wr, &bad);
    if (rc == 0)
        return 1;
    cdn_vb_slot_give(st, p);
    if (b != NULL)
        buf_put(st, b);
    return -rc;
}

int cdn_vb_post_err(struct vb_peer *p, int e)
{
    return cdn_err(MPI_ERR_OTHER, "verbs: ibv_post_send to rank %d failed: %s", p->world,
                   strerror(e));
}

int cdn_vb_peer_err(struct vb_peer *p, const char *what)
{
    if (p->state == PEER_GONE)
        return cdn_err(MPI_ERR_OTHER, "%s: rank %d has finalized", what, p->world);
    if (p->state == PEER_NONE)
        return cdn_err(MPI_ERR_OTHER, "%s: verbs: rank %d is not connected", what, p->world);
    return cdn_err(MPIX_ERR_PROC_FAILED, "%s: rank %d has failed", what, p->world);
}

/* Send a message in order after what waits for the peer: now if it can
 * go, else a copy joins the queue (lock held, peer up). */
static int put_frame(struct vb_state *st, struct vb_peer *p, const struct vb_frame *f,
                     const void *payload, size_t plen)
{
    if (p->outq == NULL) {
        int rc = post_frame(st, p, f, payload, plen);
        if (rc > 0)
            return MPI_SUCCESS;
        if (rc < 0)
            return cdn_vb_post_err(p, -rc);
    }
    size_t len = sizeof *f + plen;
    struct vb_out *o = malloc(sizeof *o + len);
    if (o == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "verbs: out of memory queueing %zu bytes for rank %d",
                       len, p->world);
    o->kind = OUT_FRAME;
    o->op = NULL;
    o->len = len;
    memcpy(o + 1, f, sizeof *f);
    if (plen > 0)
        memcpy((unsigned char *)(o + 1) + sizeof *f, payload, plen);
    cdn_vb_enqueue(st, p, o);
    return MPI_SUCCESS;
}

/* A control message (no payload) to the peer. */
int cdn_vb_send_ctrl(struct vb_state *st, struct vb_peer *p, int type, uint64_t a, uint64_t b,
                     uint64_t bytes, const char *what)
{
    struct vb_frame f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.src = st->me;
    f.a = a;
    f.b = b;
    f.h.bytes = bytes;
    pthread_mutex_lock(&p->lock);
    int rc = p->state == PEER_UP ? put_frame(st, p, &f, NULL, 0) : cdn_vb_peer_err(p, what);
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* ---- the ops ---- */

static int vb_send(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct vb_state *st = state_of(tp);
    struct vb_peer *p = &st->peers[sx->peer];
    struct vb_frame f;
    memset(&f, 0, sizeof f);
    cdn_p2p_wire_hdr(sx, &f.h);
    f.src = st->me;
    bool eager = f.h.bytes <= tp->eager_limit;
    const void *data = NULL;
    struct ibv_mr *mr = NULL;
    if (f.h.bytes > 0 && (data = cdn_p2p_send_contig(sx)) == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory packing %llu bytes for rank %d",
                       (unsigned long long)f.h.bytes, p->world);
    if (eager) {
        f.type = VB_EAGER;
        f.len = (uint32_t)f.h.bytes;
    } else {
        mr = ibv_reg_mr(st->pd, (void *)(uintptr_t)data, f.h.bytes, IBV_ACCESS_REMOTE_READ);
        if (mr == NULL)
            return cdn_err(MPI_ERR_OTHER, "send: verbs: cannot register the %llu-byte message "
                           "to rank %d for RDMA: %s (is the locked-memory limit, ulimit -l, "
                           "too low?)", (unsigned long long)f.h.bytes, p->world,
                           strerror(errno));
        f.type = VB_RTS;
        f.h.flags |= CDN_WIRE_RNDV;
        f.a = (uintptr_t)data;
        f.b = mr->rkey;
    }
    pthread_mutex_lock(&p->lock);
    if (p->state != PEER_UP) {
        int rc = cdn_vb_peer_err(p, "send");
        pthread_mutex_unlock(&p->lock);
        if (mr != NULL)
            ibv_dereg_mr(mr);
        return rc;
    }
    bool waits = !eager || (f.h.flags & CDN_WIRE_SYNC);
    sx->rndv = !eager;
    if (waits) {  /* before posting: the answer may come at once */
        sx->state = eager ? WAIT_ACK : WAIT_FIN;
        sx->moved = (uintptr_t)mr;
        cdn_xfer_push(&p->waiting, sx);
    }
    sx->wire_id = p->msgs_out;
    int rc = put_frame(st, p, &f, data, eager ? (size_t)f.h.bytes : 0);
    if (rc == MPI_SUCCESS)
        p->msgs_out++;
    else if (waits)
        cdn_xfer_remove(&p->waiting, sx);
    pthread_mutex_unlock(&p->lock);
    if (rc != MPI_SUCCESS && mr != NULL)
        ibv_dereg_mr(mr);
    if (rc == MPI_SUCCESS && eager)
        cdn_p2p_send_done(sx, false, MPI_SUCCESS);
    return rc;
}

static int vb_ack(struct cdn_transport *tp, int peer, uint64_t cookie)
{
    struct vb_state *st = state_of(tp);
    return cdn_vb_send_ctrl(st, &st->peers[peer], VB_ACK, cookie, 0, 0,
                     "synchronous send acknowledgement");
}

static int vb_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data,
                      size_t len)
{
    struct vb_state *st = state_of(tp);
    struct vb_peer *p = &st->peers[peer];
    struct vb_frame f;
    memset(&f, 0, sizeof f);
    f.type = VB_AM;
    f.src = st->me;
    f.a = id;
    f.len = (uint32_t)len;
    pthread_mutex_lock(&p->lock);
    int rc = p->state == PEER_UP ? put_frame(st, p, &f, data, len)
                                 : cdn_vb_peer_err(p, "active message");
    pthread_mutex_unlock(&p->lock);
    return rc;
}

static void vb_dropped(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct vb_peer *p = &state_of(tp)->peers[sx->peer];
    pthread_mutex_lock(&p->lock);
    bool was = *cdn_xfer_link(&p->waiting, (uint64_t)(uintptr_t)sx) != NULL;
    cdn_xfer_remove(&p->waiting, sx);
    pthread_mutex_unlock(&p->lock);
    if (was && sx->state == WAIT_FIN && send_mr(sx) != NULL)
        ibv_dereg_mr(send_mr(sx));  /* the receiver dropped the RTS: nobody reads it */
    sx->moved = 0;
}

/* ---- peer loss ---- */

/* The peer cannot be reached (poller only): fail what waits for it.
 * Quietly after its BYE or in our finalize. */
void cdn_vb_peer_failed(struct vb_state *st, struct vb_peer *p, const char *why)
{
    pthread_mutex_lock(&p->lock);
    if (p->state != PEER_UP) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    bool quiet = p->bye || st->closing;
    p->state = quiet ? PEER_GONE : PEER_FAILED;
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
    ibv_modify_qp(p->qp, &at, IBV_QP_STATE);  /* flushes what is posted */
    struct vb_out *outq = NULL;
    while (p->outq != NULL) {
        struct vb_out *o = dequeue(st, p);
        if (o->kind == OUT_FRAME) {
            o->next = outq;
            outq = o;
        } else {
            o->op->queued = false;
        }
    }
    struct cdn_xfer *waiting = p->waiting;
    struct vb_op *ops = p->ops;
    p->waiting = NULL;
    p->ops = NULL;
    pthread_mutex_unlock(&p->lock);
    while (outq != NULL) {
        struct vb_out *o = outq;
        outq = o->next;
        free(o);
    }
    if (!quiet)
        fprintf(stderr, "cadence: rank %d: verbs: lost rank %d (%s); operations with it fail "
                "with MPIX_ERR_PROC_FAILED\n", st->me, p->world, why);
    int err = quiet ? cdn_err(MPI_ERR_OTHER, "rank %d has finalized", p->world)
                    : cdn_err(MPIX_ERR_PROC_FAILED, "rank %d failed: %s", p->world, why);
    while (waiting != NULL) {
        struct cdn_xfer *r = waiting;
        waiting = r->next;
        r->next = NULL;
        if (r->state == WAIT_FIN && send_mr(r) != NULL)
            ibv_dereg_mr(send_mr(r));
        r->moved = 0;
        if (st->closing)  /* finalizing: the engine hears nothing more */
            continue;
        if (r->state == WAIT_ACK)
            cdn_p2p_acked((uint64_t)(uintptr_t)r, err);
        else
            cdn_p2p_send_done(r, true, err);
    }
    while (ops != NULL) {
        struct vb_op *op = ops;
        ops = op->next;
        op->next = NULL;
        op->over = true;
        struct cdn_xfer *x = op->x;
        int role = op->role;
        if (op->inflight == 0) {
            cdn_vb_op_free(op);
        } else {
            op->next = st->zombies;
            st->zombies = op;
        }
        if (st->closing)
            continue;
        if (role == OP_PULL)
            cdn_p2p_recv_done(x, err);
        else
            cdn_xfer_done(x, err);
    }
    if (!quiet)
        cdn_p2p_peer_failed(&st->tp, p->world, err);
}

static struct vb_peer *peer_of_qp(struct vb_state *st, uint32_t qpn)
{
    for (int w = 0; w < st->size; w++)
        if (st->peers[w].qp != NULL && st->peers[w].qp->qp_num == qpn)
            return &st->peers[w];
    return NULL;
}

/* ---- arrivals ---- */

static _Noreturn void bad_peer(struct vb_state *st, int peer, const char *why)
{
    cdn_rt_abort(1, "cadence: rank %d: verbs: rank %d sent a malformed message (%s); ending "
                 "the job", st->me, peer, why);
}

/* Check a message's header against the completion; returns its peer. */
static struct vb_peer *check_frame(struct vb_state *st, const struct ibv_wc *wc,
                                   const struct vb_frame *f)
{
    int s = f->src;
    if (s < 0 || s >= st->size || s == st->me || st->peers[s].qp == NULL ||
        st->peers[s].qp->qp_num != wc->qp_num)
        cdn_rt_abort(1, "cadence: rank %d: verbs: a message on QP %u claims to come from rank "
                     "%d; ending the job", st->me, wc->qp_num, s);
    const char *why = NULL;
    if (f->type == 0 || f->type >= VB_TYPE_END)
        why = "unknown type";
    else if (f->len != wc->byte_len - sizeof *f || f->len > st->payload)
        why = "payload length";
    else if (f->type == VB_EAGER && f->len != f->h.bytes)
        why = "eager payload shorter than its message";
    else if (f->type != VB_EAGER && f->type != VB_AM && f->len != 0)
        why = "payload on a control message";
    if (why != NULL)
        bad_peer(st, s, why);
    return &st->peers[s];
}

static void on_fin(struct vb_state *st, struct vb_peer *p, const struct vb_frame *f)
{
    struct cdn_xfer *s = take_waiting(p, f->a, WAIT_FIN);
    if (st->closing) {  /* a send the application freed: release its memory, tell nobody */
        if (s != NULL && send_mr(s) != NULL)
            ibv_dereg_mr(send_mr(s));
        return;
    }
    if (s == NULL)
        bad_peer(st, p->world, "FIN for no waiting send");
    if (f->h.bytes > s->bytes)
        bad_peer(st, p->world, "FIN for more bytes than the message has");
    if (send_mr(s) != NULL)
        ibv_dereg_mr(send_mr(s));
    s->moved = 0;
    int err = f->b == 0 ? MPI_SUCCESS
                        : cdn_err(MPI_ERR_OTHER, "send: rank %d could not read the message by "
                                  "RDMA", p->world);
    cdn_p2p_send_done(s, true, err);
}

static void on_recv(struct vb_state *st, const struct ibv_wc *wc, struct vb_buf *b)
{
    if (wc->byte_len < sizeof(struct vb_frame))
        cdn_rt_abort(1, "cadence: rank %d: verbs: a %u-byte message on QP %u; ending the job",
                     st->me, wc->byte_len, wc->qp_num);
    struct vb_frame f;
    memcpy(&f, b->data, sizeof f);
    struct vb_peer *p = check_frame(st, wc, &f);
    const unsigned char *payload = b->data + sizeof f;
    /* finalizing, the engine hears nothing more: only BYE, and FIN to
     * release a registration, matter */
    if (st->closing && f.type != VB_BYE && f.type != VB_FIN)
        return;
    switch (f.type) {
    case VB_EAGER:
        cdn_p2p_arrived(&st->tp, p->world, &f.h, payload, NULL, p->msgs_in++);
        break;
    case VB_RTS: {
        struct cdn_mem_key key = {.addr = f.a, .key = f.b};
        cdn_p2p_arrived(&st->tp, p->world, &f.h, NULL, &key, p->msgs_in++);
        break;
    }
    case VB_FIN:
        on_fin(st, p, &f);
        break;
    case VB_ACK:
        if (take_waiting(p, f.a, WAIT_ACK) != NULL)
            cdn_p2p_acked(f.a, MPI_SUCCESS);
        else if (!st->closing)
            bad_peer(st, p->world, "acknowledgement for no waiting synchronous send");
        break;
    case VB_AM:
        cdn_am_arrived(&st->tp, p->world, (unsigned)f.a, payload, f.len);
        break;
    case VB_BYE:
        p->bye = true;
        break;
    }
}

/* A send-side work request completed (a message, or an op's piece). */
static void on_send_done(struct vb_state *st, const struct ibv_wc *wc)
{
    int kind = *(const int *)(uintptr_t)wc->wr_id;
    if (kind == WR_OP) {
        cdn_vb_op_completed(st, (struct vb_op *)(uintptr_t)wc->wr_id, wc);
        return;
    }
    struct vb_buf *b = NULL;
    struct vb_peer *p;
    if (kind == WR_SEND) {
        b = (struct vb_buf *)(uintptr_t)wc->wr_id;
        p = b->peer;
    } else {
        p = (struct vb_peer *)(uintptr_t)wc->wr_id;
    }
    pthread_mutex_lock(&p->lock);
    cdn_vb_slot_give(st, p);
    pthread_mutex_unlock(&p->lock);
    if (b != NULL)
        buf_put(st, b);
    if (wc->status != IBV_WC_SUCCESS)
        cdn_vb_peer_failed(st, p, ibv_wc_status_str(wc->status));
}

static void on_completion(struct vb_state *st, const struct ibv_wc *wc)
{
    if (*(const int *)(uintptr_t)wc->wr_id != WR_RECV) {
        on_send_done(st, wc);
        return;
    }
    struct vb_buf *b = (struct vb_buf *)(uintptr_t)wc->wr_id;
    if (wc->status == IBV_WC_SUCCESS) {
        on_recv(st, wc, b);
    } else {
        struct vb_peer *p = peer_of_qp(st, wc->qp_num);
        if (p != NULL)
            cdn_vb_peer_failed(st, p, ibv_wc_status_str(wc->status));
    }
    b->next = st->repost;
    st->repost = b;
}

/* ---- polling and sleeping ---- */

/* Take up to max completions: what a sleeper kept, then the queue's. */
static int reap(struct vb_state *st, struct ibv_wc *wc, int max)
{
    pthread_mutex_lock(&st->cq_lock);
    int n = st->nstash < max ? st->nstash : max;
    if (n > 0) {
        memcpy(wc, st->stash, (size_t)n * sizeof *wc);
        memmove(st->stash, st->stash + n, (size_t)(st->nstash - n) * sizeof *wc);
        st->nstash -= n;
    }
    int k = n < max ? ibv_poll_cq(st->cq, max - n, wc + n) : 0;
    pthread_mutex_unlock(&st->cq_lock);
    if (k < 0)
        cdn_rt_abort(1, "cadence: rank %d: verbs: ibv_poll_cq failed on %s", st->me,
                     st->devname);
    return n + k;
}

/* Post what waits in the peers' queues while there is room. */
static void flush_all(struct vb_state *st)
{
    for (int w = 0; w < st->size && atomic_load(&st->queued) > 0; w++) {
        struct vb_peer *p = &st->peers[w];
        int err = 0;
        pthread_mutex_lock(&p->lock);
        while (p->outq != NULL && p->state == PEER_UP && err == 0) {
            struct vb_out *o = p->outq;
            int rc;
            if (o->kind == OUT_FRAME) {
                const struct vb_frame *f = (const struct vb_frame *)(o + 1);
                rc = post_frame(st, p, f, f + 1, o->len - sizeof *f);
            } else {
                rc = cdn_vb_op_post(st, p, o->op);
            }
            if (rc == 0)
                break;
            if (rc < 0) {
                err = -rc;
                break;
            }
            dequeue(st, p);
            if (o->kind == OUT_FRAME)
                free(o);
            else
                o->op->queued = false;
        }
        pthread_mutex_unlock(&p->lock);
        if (err != 0) {
            char why[96];
            snprintf(why, sizeof why, "ibv_post_send failed: %s", strerror(err));
            cdn_vb_peer_failed(st, p, why);
        }
    }
}

static int vb_poll(struct cdn_transport *tp)
{
    enum { BATCH = 32, ROUNDS = 4 };
    struct vb_state *st = state_of(tp);
    struct ibv_wc wc[BATCH];
    int total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int n = reap(st, wc, BATCH);
        for (int i = 0; i < n; i++)
            on_completion(st, &wc[i]);
        total += n;
        if (n < BATCH)
            break;
    }
    if (st->repost != NULL) {
        int rc = cdn_vb_srq_post(st, st->repost);
        if (rc != 0)
            cdn_rt_abort(1, "cadence: rank %d: verbs: ibv_post_srq_recv failed on %s: %s",
                         st->me, st->devname, strerror(rc));
        st->repost = NULL;
    }
    if (atomic_load(&st->queued) > 0)
        flush_all(st);
    return total;
}

static int vb_fd(struct cdn_transport *tp)
{
    return state_of(tp)->chan->fd;
}

/* Consume the channel's events (its fd is nonblocking), so it reads as
 * quiet until the next one (cq_lock held). */
static void drain_events(struct vb_state *st)
{
    struct ibv_cq *cq;
    void *ctx;
    while (ibv_get_cq_event(st->chan, &cq, &ctx) == 0)
        ibv_ack_cq_events(cq, 1);
}

/* About to sleep: ask for an event at the next completion, then look once
 * more (one that came before the request rings nothing), keeping what is
 * found for the next poll. */
static int vb_arm(struct cdn_transport *tp)
{
    struct vb_state *st = state_of(tp);
    pthread_mutex_lock(&st->cq_lock);
    drain_events(st);
    ibv_req_notify_cq(st->cq, 0);
    if (st->nstash < VB_STASH) {
        int k = ibv_poll_cq(st->cq, VB_STASH - st->nstash, st->stash + st->nstash);
        if (k > 0)
            st->nstash += k;
    }
    bool ready = st->nstash > 0;
    pthread_mutex_unlock(&st->cq_lock);
    if (ready)
        return 1;
    return atomic_load(&st->queued) > 0 ? 2 : 0;
}

static void vb_disarm(struct cdn_transport *tp)
{
    struct vb_state *st = state_of(tp);
    pthread_mutex_lock(&st->cq_lock);
    drain_events(st);  /* else the fd stays readable and every later wait returns at once */
    pthread_mutex_unlock(&st->cq_lock);
}

static bool vb_reaches(struct cdn_transport *tp, int world_rank)
{
    struct vb_state *st = state_of(tp);
    return world_rank >= 0 && world_rank < st->size && world_rank != st->me &&
           st->peers[world_rank].qp != NULL;
}

static int vb_init(struct cdn_transport *tp)
{
    return cdn_vb_qps_create(state_of(tp));
}

static int vb_wireup(struct cdn_transport *tp)
{
    return cdn_vb_qps_connect(state_of(tp));
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Everything we sent has completed and every connected peer said BYE. */
static bool all_quiet(struct vb_state *st)
{
    if (atomic_load(&st->sends_out) > 0 || atomic_load(&st->queued) > 0)
        return false;
    for (int w = 0; w < st->size; w++)
        if (st->peers[w].state == PEER_UP && w != st->me && !st->peers[w].bye)
            return false;
    return true;
}

static void vb_finalize(struct cdn_transport *tp)
{
    struct vb_state *st = state_of(tp);
    st->closing = true;
    for (int w = 0; w < st->size; w++)
        if (w != st->me && st->peers[w].state == PEER_UP)
            cdn_vb_send_ctrl(st, &st->peers[w], VB_BYE, 0, 0, 0, "finalize");
    uint64_t end = now_ms() + FINALIZE_WAIT_MS;
    while (!all_quiet(st) && now_ms() < end) {
        if (vb_poll(tp) == 0) {
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
        }
    }
    for (int w = 0; w < st->size; w++) {
        struct vb_peer *p = &st->peers[w];
        while (p->outq != NULL) {
            struct vb_out *o = dequeue(st, p);
            if (o->kind == OUT_FRAME)
                free(o);
        }
        for (struct cdn_xfer *r = p->waiting; r != NULL; r = r->next)
            if (r->state == WAIT_FIN && send_mr(r) != NULL)
                ibv_dereg_mr(send_mr(r));
        for (struct vb_op *op = p->ops, *next; op != NULL; op = next) {
            next = op->next;
            cdn_vb_op_free(op);
        }
    }
    while (st->zombies != NULL) {
        struct vb_op *op = st->zombies;
        st->zombies = op->next;
        cdn_vb_op_free(op);
    }
    pthread_mutex_lock(&st->cq_lock);
    drain_events(st);
    pthread_mutex_unlock(&st->cq_lock);
    cdn_vb_close(st);
}

static const struct cdn_transport_ops vb_ops = {
    .name = "verbs",
    .init = vb_init,
    .wireup = vb_wireup,
    .reaches = vb_reaches,
    .send = vb_send,
    .pull = cdn_vb_pull,
    .ack = vb_ack,
    .am_send = vb_am_send,
    .dropped = vb_dropped,
    .get = cdn_vb_get,
    .put = cdn_vb_put,
    .mem_reg = cdn_vb_mem_reg,
    .mem_dereg = cdn_vb_mem_dereg,
    .poll = vb_poll,
    .fd = vb_fd,
    .arm = vb_arm,
    .disarm = vb_disarm,
    .finalize = vb_finalize,
};

/* Why the last create() returned NULL, when it was a failure to start. */
static char why_not[320];

struct cdn_transport *cdn_verbs_transport_create(void)
{
    why_not[0] = '\0';
    if (cdn_job_size() <= 1)
        return NULL;
    struct vb_state *st = cdn_vb_open(why_not, sizeof why_not);
    if (st == NULL)
        return NULL;
    st->tp.ops = &vb_ops;
    st->tp.caps = CDN_TP_CAP_GET | CDN_TP_CAP_PUT;
    st->tp.priv = st;
    return &st->tp;
}

const char *cdn_verbs_transport_why_not(void)
{
    return why_not[0] != '\0' ? why_not : NULL;
}
