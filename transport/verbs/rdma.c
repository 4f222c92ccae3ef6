/*
 * The verbs transport's RDMA operations (see verbs.c for the protocols):
 * the pull of a matched rendezvous message (RDMA reads into the receive
 * buffer, or a bounce buffer a piece at a time, then FIN to the sender),
 * get and put (reads and writes of a peer's registered memory), and the
 * registrations mem_reg hands out.
 *
 * An op registers its local memory when it starts and posts work
 * requests while its peer's QP has send slots, else waits in the peer's
 * queue like a message; it completes upward when its last work request
 * does.  When its peer fails first it is completed with the error at
 * once and kept (a zombie) until the flushed work requests come back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"
#include "transport/verbs/verbs.h"

static struct vb_state *state_of(struct cdn_transport *tp)
{
    return (struct vb_state *)tp->priv;
}

/* Post the op's next reads or writes while there are slots (lock held):
 * 1 when nothing more can go now (all posted, or a bounce read waits for
 * the one in flight), 0 when it waits for a slot, else minus the error of
 * ibv_post_send. */
int cdn_vb_op_post(struct vb_state *st, struct vb_peer *p, struct vb_op *op)
{
    while (op->posted < op->total && (op->bounce == NULL || op->inflight == 0)) {
        if (!cdn_vb_slot_take(st, p))
            return 0;
        uint64_t left = op->total - op->posted;
        uint32_t n = left < op->chunk ? (uint32_t)left : (uint32_t)op->chunk;
        unsigned char *local = op->bounce != NULL ? op->bounce : op->local + op->posted;
        struct ibv_sge sge = {.addr = (uintptr_t)local, .length = n, .lkey = op->mr->lkey};
        struct ibv_send_wr wr = {
            .wr_id = (uintptr_t)op,
            .sg_list = &sge,
            .num_sge = 1,
            .opcode = op->role == OP_PUT ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
            .send_flags = IBV_SEND_SIGNALED,
        }, *bad;
        wr.wr.rdma.remote_addr = op->raddr + op->posted;
        wr.wr.rdma.rkey = op->rkey;
        int rc = ibv_post_send(p->qp, &wr, &bad);
        if (rc != 0) {
            cdn_vb_slot_give(st, p);
            return -rc;
        }
        op->posted += n;
        op->inflight++;
    }
    return 1;
}

/* Move the op on: post now if nothing waits before it, else (or when
 * there is no slot) put it in the peer's queue.  0, or minus a post's
 * error (lock held). */
static int op_kick(struct vb_state *st, struct vb_peer *p, struct vb_op *op)
{
    if (op->queued)
        return 0;
    int rc = p->outq == NULL ? cdn_vb_op_post(st, p, op) : 0;
    if (rc == 0) {
        op->queued = true;
        op->out.kind = OUT_OP;
        op->out.op = op;
        cdn_vb_enqueue(st, p, &op->out);
    }
    return rc < 0 ? rc : 0;
}

void cdn_vb_op_free(struct vb_op *op)
{
    if (op->mr != NULL)
        ibv_dereg_mr(op->mr);
    free(op->bounce);
    free(op);
}

static void ops_remove(struct vb_op **head, struct vb_op *op)
{
    while (*head != NULL && *head != op)
        head = &(*head)->next;
    if (*head != NULL)
        *head = op->next;
    op->next = NULL;
}

/* The op is over (err: how): tell the engine, and for a pull the sender
 * (no lock held, op off its peer's list). */
static void op_finish(struct vb_state *st, struct vb_op *op, int err)
{
    struct vb_peer *p = op->peer;
    struct cdn_xfer *x = op->x;
    int role = op->role;
    uint64_t done = op->done;
    if (op->inflight == 0) {
        cdn_vb_op_free(op);
    } else {
        op->next = st->zombies;
        st->zombies = op;
    }
    if (role == OP_PULL) {
        cdn_vb_send_ctrl(st, p, VB_FIN, x->cookie, err == MPI_SUCCESS ? 0 : 1, done, "receive");
        cdn_p2p_recv_done(x, err);
    } else {
        cdn_xfer_done(x, err);
    }
}

static struct vb_op *op_new(struct vb_peer *p, int role, struct cdn_xfer *x)
{
    struct vb_op *op = calloc(1, sizeof *op);
    if (op != NULL) {
        op->kind = WR_OP;
        op->role = role;
        op->peer = p;
        op->x = x;
        op->raddr = x->rkey.addr;
        op->rkey = (uint32_t)x->rkey.key;
        op->total = x->bytes;
    }
    return op;
}

/* Start an op whose memory is registered (it is freed on failure). */
static int op_start(struct vb_state *st, struct vb_op *op, const char *what)
{
    struct vb_peer *p = op->peer;
    pthread_mutex_lock(&p->lock);
    if (p->state != PEER_UP) {
        int rc = cdn_vb_peer_err(p, what);
        pthread_mutex_unlock(&p->lock);
        cdn_vb_op_free(op);
        return rc;
    }
    op->next = p->ops;
    p->ops = op;
    int rc = op_kick(st, p, op);
    if (rc < 0 && op->inflight == 0) {
        ops_remove(&p->ops, op);
        pthread_mutex_unlock(&p->lock);
        cdn_vb_op_free(op);
        return cdn_vb_post_err(p, -rc);
    }
    if (rc < 0)  /* some went: the op ends with an error once they complete */
        op->err = cdn_vb_post_err(p, -rc);
    pthread_mutex_unlock(&p->lock);
    return MPI_SUCCESS;
}

/* A work request of an op completed (poller). */
void cdn_vb_op_completed(struct vb_state *st, struct vb_op *op, const struct ibv_wc *wc)
{
    struct vb_peer *p = op->peer;
    pthread_mutex_lock(&p->lock);
    cdn_vb_slot_give(st, p);
    op->inflight--;
    if (op->over) {  /* failed upward already */
        pthread_mutex_unlock(&p->lock);
        if (op->inflight == 0) {
            ops_remove(&st->zombies, op);
            cdn_vb_op_free(op);
        }
        return;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        pthread_mutex_unlock(&p->lock);
        cdn_vb_peer_failed(st, p, ibv_wc_status_str(wc->status));
        return;
    }
    /* a QP completes its work requests in the order they were posted */
    uint64_t left = op->total - op->done, off = op->done;
    size_t n = left < op->chunk ? (size_t)left : op->chunk;
    op->done += n;
    bool finished = op->done == op->total || (op->err != MPI_SUCCESS && op->inflight == 0);
    if (finished)
        ops_remove(&p->ops, op);
    pthread_mutex_unlock(&p->lock);
    if (op->bounce != NULL)
        cdn_p2p_recv_data(op->x, off, op->bounce, n);
    if (finished) {
        op->over = true;
        op_finish(st, op, op->err);
        return;
    }
    if (op->bounce == NULL)
        return;
    pthread_mutex_lock(&p->lock);  /* the next piece */
    int rc = op_kick(st, p, op);
    if (rc < 0)
        ops_remove(&p->ops, op);
    pthread_mutex_unlock(&p->lock);
    if (rc < 0) {
        op->over = true;
        op_finish(st, op, cdn_vb_post_err(p, -rc));
    }
}

int cdn_vb_pull(struct cdn_transport *tp, struct cdn_xfer *rx)
{
    struct vb_state *st = state_of(tp);
    struct vb_peer *p = &st->peers[rx->peer];
    if (rx->bytes == 0) {  /* nothing of it fits: only the sender is told */
        int rc = cdn_vb_send_ctrl(st, p, VB_FIN, rx->cookie, 0, 0, "receive");
        if (rc == MPI_SUCCESS)
            cdn_p2p_recv_done(rx, MPI_SUCCESS);
        return rc;
    }
    struct vb_op *op = op_new(p, OP_PULL, rx);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "receive: out of memory pulling from rank %d", p->world);
    if (rx->dst != NULL &&
        (op->mr = ibv_reg_mr(st->pd, rx->dst, rx->bytes, IBV_ACCESS_LOCAL_WRITE)) != NULL) {
        op->local = rx->dst;
        op->chunk = st->max_msg;
    } else {  /* a non-contiguous receive, or memory that would not register */
        size_t size = rx->bytes < VB_BOUNCE ? (size_t)rx->bytes : VB_BOUNCE;
        if (size > st->max_msg)
            size = st->max_msg;
        op->chunk = size;
        op->bounce = malloc(size);
        if (op->bounce != NULL)
            op->mr = ibv_reg_mr(st->pd, op->bounce, size, IBV_ACCESS_LOCAL_WRITE);
    }
    if (op->mr == NULL) {
        int e = errno;
        cdn_vb_op_free(op);
        /* the sender still waits: tell it the data will not be read */
        cdn_vb_send_ctrl(st, p, VB_FIN, rx->cookie, 1, 0, "receive");
        return cdn_err(MPI_ERR_OTHER, "receive: verbs: cannot register %llu bytes for an RDMA "
                       "read from rank %d: %s", (unsigned long long)rx->bytes, p->world,
                       strerror(e));
    }
    return op_start(st, op, "receive");
}

static int vb_rma(struct vb_state *st, struct cdn_xfer *x, int role)
{
    struct vb_peer *p = &st->peers[x->peer];
    const char *what = role == OP_GET ? "get" : "put";
    if (x->bytes == 0) {
        cdn_xfer_done(x, MPI_SUCCESS);
        return MPI_SUCCESS;
    }
    struct vb_op *op = op_new(p, role, x);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for an RDMA operation with rank %d",
                       what, p->world);
    op->local = role == OP_GET ? x->dst : (unsigned char *)(uintptr_t)x->src;
    op->chunk = st->max_msg;
    op->mr = ibv_reg_mr(st->pd, op->local, x->bytes,
                        role == OP_GET ? IBV_ACCESS_LOCAL_WRITE : 0);
    if (op->mr == NULL) {
        int e = errno;
        cdn_vb_op_free(op);
        return cdn_err(MPI_ERR_OTHER, "%s: verbs: cannot register %llu local bytes: %s", what,
                       (unsigned long long)x->bytes, strerror(e));
    }
    return op_start(st, op, what);
}

int cdn_vb_get(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return vb_rma(state_of(tp), x, OP_GET);
}

int cdn_vb_put(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return vb_rma(state_of(tp), x, OP_PUT);
}

int cdn_vb_mem_reg(struct cdn_transport *tp, void *addr, size_t len,
                   struct cdn_mem_key *key)
{
    struct vb_state *st = state_of(tp);
    key->addr = (uintptr_t)addr;
    key->key = 0;
    if (len == 0)
        return MPI_SUCCESS;
    struct vb_reg *r = malloc(sizeof *r);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "verbs: out of memory registering %zu bytes", len);
    r->mr = ibv_reg_mr(st->pd, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                              IBV_ACCESS_REMOTE_WRITE);
    if (r->mr == NULL) {
        int e = errno;
        free(r);
        return cdn_err(MPI_ERR_OTHER, "verbs: cannot register %zu bytes at %p for RDMA: %s",
                       len, addr, strerror(e));
    }
    pthread_mutex_lock(&st->reg_lock);
    r->next = st->regs;
    st->regs = r;
    pthread_mutex_unlock(&st->reg_lock);
    key->key = r->mr->rkey;
    return MPI_SUCCESS;
}

void cdn_vb_mem_dereg(struct cdn_transport *tp, const struct cdn_mem_key *key)
{
    struct vb_state *st = state_of(tp);
    pthread_mutex_lock(&st->reg_lock);
    struct vb_reg **link = &st->regs;
    while (*link != NULL && ((uintptr_t)(*link)->mr->addr != key->addr ||
                             (*link)->mr->rkey != key->key))
        link = &(*link)->next;
    struct vb_reg *r = *link;
    if (r != NULL)
        *link = r->next;
    pthread_mutex_unlock(&st->reg_lock);
    if (r != NULL) {
        ibv_dereg_mr(r->mr);
        free(r);
    }
}
