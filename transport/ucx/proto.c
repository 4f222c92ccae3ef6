/*
 * The UCX transport's message protocols (ucx.c's header comment says
 * which, ucx.h how threads share them).
 *
 * A send whose answer comes later waits where a message from the wire
 * can only find it by looking it up: a synchronous eager send in its
 * peer's `waiting` list by cookie (the ACK names it), a rendezvous
 * message at the receiver in the peer's `rts` list by the token the
 * engine was given.  A cookie from the wire is never used as a pointer
 * before it is found there.  Rendezvous sends need no such lookup: UCX
 * completes their request itself once the receiver fetched the data.
 */
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "runtime/checkers.h"
#include "transport/ucx/ucx.h"
#include "transport/xfer_list.h"

/* What a send in `waiting` waits for (its transfer's state). */
enum { WAIT_ACK = 1 };

/* Take a rendezvous send off its peer's list. */
static void rndv_unlink(struct ucx_op **head, struct ucx_op *op)
{
    for (; *head != NULL; head = &(*head)->rnext)
        if (*head == op) {
            *head = op->rnext;
            return;
        }
}

void ucx_op_discard(struct ucx_state *st, struct ucx_op *op)
{
    if (op->kind == OP_RNDV)
        rndv_unlink(&st->peers[op->peer].rndv, op);
    ucx_op_free(st, op);
}

static int status_err(ucs_status_t s, int peer, const char *what)
{
    if (s == UCS_OK)
        return MPI_SUCCESS;
    int cls = s == UCS_ERR_CANCELED ? MPI_ERR_OTHER : MPIX_ERR_PROC_FAILED;
    return cdn_err(cls, "%s with rank %d: ucx: %s", what, peer, ucs_status_string(s));
}

/* ---- sending ---- */

static int send_eager(struct ucx_state *st, struct ucx_peer *p, struct cdn_xfer *sx,
                      const struct cdn_wire_hdr *h)
{
    bool packed = sx->src == NULL && sx->bytes > 0;
    struct ucx_op *op = ucx_op_new(st, OP_SEND, p->world, sx, packed ? sx->bytes : 0);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: ucx: no memory for a message to rank %d", p->world);
    if (packed)
        cdn_p2p_send_pack(sx, 0, op->data, sx->bytes);
    op->hdr.type = M_EAGER;
    op->hdr.h = *h;
    bool sync = (h->flags & CDN_WIRE_SYNC) != 0, pending = false;
    pthread_mutex_lock(&st->lock);
    if (sync) {  /* before sending: the answer may come at once */
        sx->state = WAIT_ACK;
        cdn_xfer_push(&p->waiting, sx);
    }
    sx->wire_id = p->seq_out;
    int rc = ucx_am_post(st, p, op, packed ? op->data : sx->src, sx->bytes,
                         UCP_AM_SEND_FLAG_EAGER, &pending, "send");
    if (rc != MPI_SUCCESS && sync)
        cdn_xfer_take(&p->waiting, (uint64_t)(uintptr_t)sx, 0);
    pthread_mutex_unlock(&st->lock);
    if (rc != MPI_SUCCESS || !pending)
        ucx_op_free(st, op);
    if (rc == MPI_SUCCESS && !pending)
        cdn_p2p_send_done(sx, false, MPI_SUCCESS);
    return rc;
}

static int send_rndv(struct ucx_state *st, struct ucx_peer *p, struct cdn_xfer *sx,
                     const struct cdn_wire_hdr *h)
{
    const void *src = cdn_p2p_send_contig(sx);
    if (src == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: ucx: no memory to stage %llu bytes for rank %d",
                       (unsigned long long)sx->bytes, p->world);
    struct ucx_op *op = ucx_op_new(st, OP_RNDV, p->world, sx, 0);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: ucx: no memory for a message to rank %d", p->world);
    op->hdr.type = M_RTS;
    op->hdr.h = *h;
    op->hdr.h.flags |= CDN_WIRE_RNDV;
    sx->rndv = true;
    bool pending = false;
    pthread_mutex_lock(&st->lock);
    sx->wire_id = p->seq_out;
    int rc = ucx_am_post(st, p, op, src, sx->bytes, UCP_AM_SEND_FLAG_RNDV, &pending, "send");
    if (rc == MPI_SUCCESS && pending) {
        op->rnext = p->rndv;
        p->rndv = op;
    }
    pthread_mutex_unlock(&st->lock);
    if (rc != MPI_SUCCESS || !pending)
        ucx_op_free(st, op);
    if (rc == MPI_SUCCESS && !pending)
        cdn_p2p_send_done(sx, true, MPI_SUCCESS);
    return rc;
}

int ucx_send(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct ucx_state *st = ucx_state_of(tp);
    struct cdn_wire_hdr h;
    cdn_p2p_wire_hdr(sx, &h);
    struct ucx_peer *p = &st->peers[sx->peer];
    if (sx->bytes <= tp->eager_limit)
        return send_eager(st, p, sx, &h);
    return send_rndv(st, p, sx, &h);
}

int ucx_ctrl(struct ucx_state *st, int peer, int type, uint64_t a, const void *data, size_t len,
             const char *what)
{
    struct ucx_op *op = ucx_op_new(st, OP_CTRL, peer, NULL, len);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: ucx: no memory for a message to rank %d", what, peer);
    op->hdr.type = (uint8_t)type;
    op->hdr.a = a;
    if (len > 0)
        memcpy(op->data, data, len);
    bool pending = false;
    pthread_mutex_lock(&st->lock);
    int rc = ucx_am_post(st, &st->peers[peer], op, op->data, len, UCP_AM_SEND_FLAG_EAGER,
                         &pending, what);
    pthread_mutex_unlock(&st->lock);
    if (rc != MPI_SUCCESS || !pending)
        ucx_op_free(st, op);
    return rc;
}

int ucx_ack(struct cdn_transport *tp, int peer, uint64_t cookie)
{
    return ucx_ctrl(ucx_state_of(tp), peer, M_ACK, cookie, NULL, 0,
                    "synchronous send acknowledgement");
}

int ucx_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len)
{
    return ucx_ctrl(ucx_state_of(tp), peer, M_AM, id, data, len, "active message");
}

/* The receiver dropped a message of ours (a cancel): forget the send,
 * whatever UCX still does with it. */
void ucx_dropped(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct ucx_state *st = ucx_state_of(tp);
    struct ucx_peer *p = &st->peers[sx->peer];
    pthread_mutex_lock(&st->lock);
    cdn_xfer_take(&p->waiting, (uint64_t)(uintptr_t)sx, 0);
    for (struct ucx_op *op = p->rndv; op != NULL; op = op->rnext)
        if (op->x == sx)
            op->x = NULL;
    pthread_mutex_unlock(&st->lock);
}

/* ---- rendezvous receive ---- */

static void pulled_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    struct ucx_op *op = user_data;
    (void)length;
    ucx_op_done(op->st, op, status);
    ucp_request_free(request);
}

int ucx_pull(struct cdn_transport *tp, struct cdn_xfer *rx)
{
    struct ucx_state *st = ucx_state_of(tp);
    struct ucx_peer *p = &st->peers[rx->peer];
    pthread_mutex_lock(&st->lock);
    struct ucx_rts **link = &p->rts;
    while (*link != NULL && (*link)->token != rx->rkey.key)
        link = &(*link)->next;
    struct ucx_rts *r = *link;
    if (r == NULL) {
        pthread_mutex_unlock(&st->lock);
        return cdn_err(MPI_ERR_INTERN, "receive: ucx: no rendezvous message %llu from rank %d",
                       (unsigned long long)rx->rkey.key, rx->peer);
    }
    *link = r->next;
    struct ucx_op *op = ucx_op_new(st, OP_PULL, rx->peer, rx, 0);
    /* straight into the receive buffer when it is contiguous and takes it all */
    bool direct = rx->dst != NULL && rx->bytes == r->len;
    if (op != NULL && !direct && (op->tmp = malloc(r->len > 0 ? r->len : 1)) == NULL) {
        ucx_op_free(st, op);
        op = NULL;
    }
    if (op == NULL) {
        size_t len = r->len;
        ucp_am_data_release(st->worker, r->desc);
        pthread_mutex_unlock(&st->lock);
        free(r);
        return cdn_err(MPI_ERR_NO_MEM, "receive: ucx: no memory for %zu bytes from rank %d",
                       len, rx->peer);
    }
    op->len = r->len;
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE,
        .cb.recv_am = pulled_cb,
        .user_data = op,
        .datatype = ucp_dt_make_contig(1),
    };
    ucs_status_ptr_t q = ucp_am_recv_data_nbx(st->worker, r->desc, direct ? rx->dst : op->tmp,
                                              r->len, &prm);
    if (UCS_PTR_IS_PTR(q))
        ucx_op_pending(op);
    pthread_mutex_unlock(&st->lock);
    free(r);
    if (q == NULL || UCS_PTR_IS_ERR(q)) {  /* done (or failed) at once */
        op->status = UCS_PTR_STATUS(q);
        ucx_report(st, op);
    }
    return MPI_SUCCESS;
}

/* ---- completions ---- */

void ucx_report(struct ucx_state *st, struct ucx_op *op)
{
    struct cdn_xfer *x = op->x;
    switch (op->kind) {
    case OP_SEND:
        if (op->status != UCS_OK && (x->state == WAIT_ACK)) {
            pthread_mutex_lock(&st->lock);
            struct cdn_xfer *w =
                cdn_xfer_take(&st->peers[op->peer].waiting, (uint64_t)(uintptr_t)x, 0);
            pthread_mutex_unlock(&st->lock);
            int err = status_err(op->status, op->peer, "send");
            cdn_p2p_send_done(x, false, err);
            if (w != NULL)
                cdn_p2p_acked((uint64_t)(uintptr_t)x, err);
        } else {
            cdn_p2p_send_done(x, false, status_err(op->status, op->peer, "send"));
        }
        break;
    case OP_RNDV:
        pthread_mutex_lock(&st->lock);
        rndv_unlink(&st->peers[op->peer].rndv, op);
        x = op->x;  /* NULL once dropped */
        pthread_mutex_unlock(&st->lock);
        if (x != NULL)
            cdn_p2p_send_done(x, true, status_err(op->status, op->peer, "send"));
        break;
    case OP_PULL:
        /* (UCX may have written it from the sender's process, by CMA:
         * valgrind saw no write) */
        if (op->status == UCS_OK)
            CDN_MEM_DEFINED(op->tmp != NULL ? op->tmp : x->dst, op->len);
        if (op->status == UCS_OK && op->tmp != NULL && x->bytes > 0)
            cdn_p2p_recv_data(x, 0, op->tmp, x->bytes < op->len ? x->bytes : op->len);
        cdn_p2p_recv_done(x, status_err(op->status, op->peer, "receive"));
        break;
    case OP_GET:
    case OP_PUT:
        cdn_xfer_done(x, status_err(op->status, op->peer, op->kind == OP_GET ? "get" : "put"));
        break;
    default:
        break;
    }
    ucx_op_free(st, op);
}

/* ---- arrivals ---- */

static _Noreturn void bad_peer(struct ucx_state *st, int peer, const char *why)
{
    cdn_rt_abort(1, "cadence: rank %d: ucx: rank %d sent a malformed message (%s); ending the job",
                 st->me, peer, why);
}

static void deliver_rts(struct ucx_state *st, struct ucx_peer *p, struct ucx_in *in)
{
    if (in->desc == NULL || in->len != in->hdr.h.bytes)
        bad_peer(st, p->world, "a rendezvous message whose data does not match its header");
    struct ucx_rts *r = malloc(sizeof *r);
    if (r == NULL)
        cdn_rt_abort(1, "cadence: rank %d: ucx: out of memory receiving", st->me);
    r->desc = in->desc;
    r->len = in->len;
    in->desc = NULL;
    pthread_mutex_lock(&st->lock);
    r->token = st->next_token++;
    r->next = p->rts;
    p->rts = r;
    pthread_mutex_unlock(&st->lock);
    struct cdn_mem_key key = {0, r->token};
    cdn_p2p_arrived(&st->tp, p->world, &in->hdr.h, NULL, &key, in->hdr.seq);
}

void ucx_deliver(struct ucx_state *st, struct ucx_in *in)
{
    struct ucx_peer *p = &st->peers[in->hdr.src];
    switch (in->hdr.type) {
    case M_EAGER:
        if (in->len != in->hdr.h.bytes)
            bad_peer(st, p->world, "an eager message whose payload does not match its header");
        cdn_p2p_arrived(&st->tp, p->world, &in->hdr.h, in->data, NULL, in->hdr.seq);
        break;
    case M_RTS:
        deliver_rts(st, p, in);
        break;
    case M_ACK: {
        pthread_mutex_lock(&st->lock);
        struct cdn_xfer *x = cdn_xfer_take(&p->waiting, in->hdr.a, 0);
        pthread_mutex_unlock(&st->lock);
        if (x == NULL)
            bad_peer(st, p->world, "an acknowledgement for no waiting synchronous send");
        cdn_p2p_acked(in->hdr.a, MPI_SUCCESS);
        break;
    }
    case M_AM:
        if (in->len > UCX_AM_MAX)
            bad_peer(st, p->world, "an active message past the largest");
        cdn_am_arrived(&st->tp, p->world, (unsigned)in->hdr.a, in->data, in->len);
        break;
    case M_RKEY_REQ:
        ucx_rkey_request(st, p, in->hdr.a);
        break;
    case M_RKEY:
        ucx_rkey_arrived(st, p, in->hdr.a, in->data, in->len);
        break;
    case M_BYE:
        pthread_mutex_lock(&st->lock);
        if (p->state != PEER_FAILED)
            p->state = PEER_GONE;
        pthread_mutex_unlock(&st->lock);
        break;
    default:
        bad_peer(st, p->world, "an unknown message type");
    }
}

/* ---- peer loss ---- */

void ucx_fail_peer(struct ucx_state *st, struct ucx_peer *p, int err)
{
    pthread_mutex_lock(&st->lock);
    struct cdn_xfer *waiting = p->waiting, *rma = p->rma_wait;
    struct ucx_rts *rts = p->rts;
    p->waiting = p->rma_wait = NULL;
    p->rts = NULL;
    /* Rendezvous sends UCX still holds: failed here, since over UCX's
     * shared-memory transports nothing cancels them (the op stays listed
     * until UCX lets it go, as a dropped one does). */
    struct cdn_xfer *sends = NULL;
    for (struct ucx_op *op = p->rndv; op != NULL; op = op->rnext)
        if (op->x != NULL) {
            op->x->next = sends;
            sends = op->x;
            op->x = NULL;
        }
    for (struct ucx_rts *r = rts; r != NULL; r = r->next)
        ucp_am_data_release(st->worker, r->desc);
    if (p->ep != NULL) {
        ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                   .flags = UCP_EP_CLOSE_FLAG_FORCE};
        void *r = ucp_ep_close_nbx(p->ep, &prm);
        if (UCS_PTR_IS_PTR(r))
            ucp_request_free(r);
        p->ep = NULL;
    }
    pthread_mutex_unlock(&st->lock);
    while (rts != NULL) {
        struct ucx_rts *r = rts;
        rts = r->next;
        free(r);
    }
    while (waiting != NULL) {
        struct cdn_xfer *x = waiting;
        waiting = x->next;
        x->next = NULL;
        cdn_p2p_acked((uint64_t)(uintptr_t)x, err);
    }
    while (rma != NULL) {
        struct cdn_xfer *x = rma;
        rma = x->next;
        x->next = NULL;
        cdn_xfer_done(x, err);
    }
    while (sends != NULL) {
        struct cdn_xfer *x = sends;
        sends = x->next;
        x->next = NULL;
        cdn_p2p_send_done(x, true, err);
    }
}
