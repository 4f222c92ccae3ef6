/*
 * The ofi transport: Cadence's messages over libfabric (see ofi.h for the
 * objects and threads, fabric.c for how a provider is chosen and opened).
 *
 * Every message is one fi_send of a 64-byte header (struct ofi_msg) and
 * at most OFI_EAGER_MAX payload bytes, copied into a send buffer of ours
 * (so a send's user buffer is free as soon as it is posted), into one of
 * OFI_RX_COUNT receive buffers kept posted.  The header names the sender's
 * world rank (no FI_SOURCE is needed) and the message's number on the
 * channel.  The provider delivers in order per peer (FI_ORDER_SAS, checked
 * when opening) but may complete out of order, so cq.c hands messages to
 * the engine by number; sends refused with -FI_EAGAIN wait in one backlog
 * that later sends join behind.  So each peer sees our messages, active
 * messages included, in the order they were made.
 *
 * Protocols, per message size:
 *   eager (<= OFI_EAGER_MAX): EAGER with the payload, packed into the send
 *     buffer; the send completes when posted.
 *   rendezvous with FI_RMA: the sender registers the message's contiguous
 *     bytes (a staging copy for a non-contiguous datatype) and sends an RTS
 *     with their address and key; a receive that matches it fi_reads them
 *     in chunks of at most OFI_RMA_CHUNK straight into a contiguous
 *     receive buffer (else into a bounce buffer, then unpacked), and
 *     answers FIN; the FIN completes the send and ends the registration.
 *   rendezvous without FI_RMA: RTS; the receiver answers CTS and the sender
 *     sends the data as DATA messages of eager size (all of them
 *     copied into send buffers at once: a fallback, not a pipeline).
 *   synchronous eager sends wait for an ACK; active messages are AM.
 * One-sided get and put (with FI_RMA) are fi_read and fi_write by the keys
 * mem_reg hands out; a key's address is the registration's byte 0 as the
 * provider names it (its virtual address under FI_MR_VIRT_ADDR, else 0:
 * offsets).  MPI windows register their parts here and put and get
 * through these (progress/rma.c, cdn_rma_register); a write completes
 * on delivery (fabric.c, write_flags), as a flush needs.
 *
 * A send waiting for the peer (FIN, ACK, CTS) sits in the peer's `waiting`
 * list and a receive waiting for DATA in `pulls`: a cookie or token from
 * the wire is used only after it is found there.
 *
 * Waking: the engine sleeps on an epoll set of the completion queue's
 * wait fd (FI_WAIT_FD) and a timer (cq.c, "sleeping"); arm asks
 * fi_trywait whether sleeping is safe.  A provider without a wait fd gets
 * timed naps growing to CADENCE_OFI_NAP_MAX_US.  Every op posted or
 * waiting in the backlog counts as engine work (cdn_progress_work_changed)
 * until its completion is read, so the engine polls rather than sleeps
 * while the provider, whose progress is manual, still has our data.
 *
 * Peer loss: an error completion of an op aimed at a peer fails the peer:
 * what waits for it fails with MPIX_ERR_PROC_FAILED and the engine hears
 * of it (cdn_p2p_peer_failed).  A process that only waits for a peer
 * pings it every CADENCE_OFI_KEEPALIVE_MS (cq.c, keepalive()), in case a
 * send to a dead peer fails.  Best effort: libfabric 1.17's tcp;ofi_rxm,
 * sockets and shm were not seen to fail such a send within a second, so
 * what tests/mpi/t_peer_loss.c checks comes from the launcher: mpirun's
 * PMIx event for a dead rank reaches peer_lost (cdn_ofi_peer_lost).
 *
 * Tested (libfabric 1.17, no RDMA hardware; tests/mpi with 2-4 ranks):
 * tcp;ofi_rxm (FI_RMA, mr_mode 0: offsets, a wait fd), shm (FI_RMA,
 * FI_MR_VIRT_ADDR, no wait fd), sockets, net, udp;ofi_rxd (no wait fd),
 * and tcp;ofi_rxm with CADENCE_OFI_RMA=0 (the CTS and DATA rendezvous).
 * Limits: udp;ofi_rxd hangs in threaded tests (t_threads_mp, t_rma on 4
 * ranks), sockets' passive-target RMA is slow (its own progress thread
 * naps); FI_MR_LOCAL and FI_MR_ENDPOINT are handled but no provider here
 * asks for them, so those paths are untested.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "progress/job.h"
#include "runtime/error.h"
#include "transport/ofi/ofi.h"
#include "transport/xfer_list.h"

struct cdn_transport *cdn_ofi_transport_create(void);
const char *cdn_ofi_transport_why_not(void);
void cdn_ofi_transport_probe(char *out, size_t len);

static const char *why_not_reason;

/* ---- lists of transfers waiting for a peer (lock held) ---- */




/* Take the transfer a cookie names off a list when its state is want (0:
 * any); NULL if none. */
struct cdn_xfer *cdn_ofi_take(struct ofi_state *st, struct cdn_xfer **head, uint64_t cookie,
                             int want)
{
    pthread_mutex_lock(&st->lock);
    struct cdn_xfer *r = cdn_xfer_take(head, cookie, want);
    pthread_mutex_unlock(&st->lock);
    return r;
}

/* A rendezvous send keeps its registration in `moved` (free for the transport). */
void cdn_ofi_send_unreg(struct cdn_xfer *sx)
{
    struct fid_mr *mr = (struct fid_mr *)(uintptr_t)sx->moved;
    if (mr != NULL)
        fi_close(&mr->fid);
    sx->moved = 0;
}

/* ---- ops and their buffers ---- */

static size_t big_cap(void)
{
    return sizeof(struct ofi_msg) + OFI_EAGER_MAX;
}

/* A zeroed op with room bytes of buffer: a spare one or a new one (lock
 * held); NULL when out of memory. */
static struct ofi_op *op_get(struct ofi_state *st, size_t room)
{
    bool big = room > sizeof(struct ofi_msg);
    struct ofi_op **spare = big ? &st->spare_big : &st->spare_small;
    struct ofi_op *op = *spare;
    if (op != NULL) {
        *spare = op->next;
        big ? st->nbig-- : st->nsmall--;
        struct fid_mr *mr = op->mr;
        size_t cap = op->cap;
        memset(op, 0, sizeof *op);
        op->mr = mr;
        op->cap = cap;
        return op;
    }
    size_t cap = big ? big_cap() : sizeof(struct ofi_msg);
    op = calloc(1, sizeof *op + cap);
    if (op == NULL)
        return NULL;
    op->cap = cap;
    if (st->mr_local && cdn_ofi_reg(st, op->buf, cap, FI_SEND | FI_RECV, &op->mr) != MPI_SUCCESS) {
        free(op);
        return NULL;
    }
    return op;
}

static void op_free(struct ofi_op *op)
{
    if (op->mr != NULL)
        fi_close(&op->mr->fid);
    free(op);
}

/* An op is done with (lock held). */
void cdn_ofi_op_put(struct ofi_state *st, struct ofi_op *op)
{
    bool big = op->cap > sizeof(struct ofi_msg);
    int *n = big ? &st->nbig : &st->nsmall;
    if (*n >= OFI_SPARE_MAX) {
        op_free(op);
        return;
    }
    struct ofi_op **spare = big ? &st->spare_big : &st->spare_small;
    op->next = *spare;
    *spare = op;
    (*n)++;
}

static void *desc_of(struct fid_mr *mr)
{
    return mr != NULL ? fi_mr_desc(mr) : NULL;
}

/* Hand an op to the provider: 0, -FI_EAGAIN, or another error. */
static ssize_t issue(struct ofi_state *st, struct ofi_op *op)
{
    fi_addr_t to = st->peers[op->peer].addr;
    switch (op->kind) {
    case OP_SEND:
        return fi_send(st->ep, op->buf, op->len, desc_of(op->mr), to, &op->ctx);
    case OP_READ:
        return fi_read(st->ep, op->local, op->chunk, desc_of(op->bulk->mr), to, op->remote,
                       op->key, &op->ctx);
    case OP_WRITE: {
        /* complete only once the data is in the target's memory, so a
         * flush (the RMA layer waits for each put) means what MPI says
         * (st->write_flags) */
        struct iovec iov = {op->local, op->chunk};
        void *desc = desc_of(op->bulk->mr);
        struct fi_rma_iov rma = {op->remote, op->chunk, op->key};
        struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = to,
                                 .rma_iov = &rma, .rma_iov_count = 1, .context = &op->ctx};
        return fi_writemsg(st->ep, &msg, st->write_flags);
    }
    }
    return -FI_EINVAL;
}

/* Post an op, or queue it behind the backlog (lock held).  From here to
 * its completion it counts as engine work. */
static int post(struct ofi_state *st, struct ofi_op *op)
{
    ssize_t rc = st->backlog == NULL ? issue(st, op) : -FI_EAGAIN;
    if (rc != 0 && rc != -FI_EAGAIN)
        return cdn_err(MPI_ERR_OTHER, "ofi: posting to rank %d failed: %s", op->peer,
                       fi_strerror((int)-rc));
    if (rc == -FI_EAGAIN) {
        op->next = NULL;
        if (st->backlog_tail != NULL)
            st->backlog_tail->next = op;
        else
            st->backlog = op;
        st->backlog_tail = op;
    }
    cdn_ofi_work(st, 1);
    return MPI_SUCCESS;
}

/* Post what waits in the backlog, in order, until the provider refuses
 * (lock held). */
void cdn_ofi_backlog_flush(struct ofi_state *st)
{
    while (st->backlog != NULL) {
        struct ofi_op *op = st->backlog;
        ssize_t rc = issue(st, op);
        if (rc == -FI_EAGAIN)
            return;
        st->backlog = op->next;
        if (st->backlog == NULL)
            st->backlog_tail = NULL;
        if (rc != 0) {
            /* no completion will come: count it as a failed one */
            fprintf(stderr, "cadence: rank %d: ofi: posting to rank %d failed: %s\n", st->me,
                    op->peer, fi_strerror((int)-rc));
            st->peers[op->peer].state = PEER_FAILED;
            cdn_ofi_op_put(st, op);
            cdn_ofi_work(st, -1);
        }
    }
}

/* Error for an operation with a failed peer. */
int cdn_ofi_peer_err(int peer, const char *what)
{
    return cdn_err(MPIX_ERR_PROC_FAILED, "%s: rank %d has failed", what, peer);
}

/* Build and post one message to peer (lock held); payload may be NULL. */
int cdn_ofi_post_msg(struct ofi_state *st, int peer, const struct ofi_msg *m, const void *payload,
                    size_t plen)
{
    struct ofi_op *op = op_get(st, sizeof *m + plen);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory sending to rank %d", peer);
    op->kind = OP_SEND;
    op->peer = peer;
    op->len = sizeof *m + plen;
    memcpy(op->buf, m, sizeof *m);
    ((struct ofi_msg *)op->buf)->from = st->me;
    ((struct ofi_msg *)op->buf)->seq = st->peers[peer].seq_out++;
    if (plen > 0)
        memcpy(op->buf + sizeof *m, payload, plen);
    int rc = post(st, op);
    if (rc != MPI_SUCCESS)
        cdn_ofi_op_put(st, op);
    return rc;
}

int cdn_ofi_send_ctrl(struct ofi_state *st, int peer, int type, uint64_t a, uint64_t b,
                     uint64_t bytes, const char *what)
{
    struct ofi_msg m;
    memset(&m, 0, sizeof m);
    m.type = (uint8_t)type;
    m.a = a;
    m.b = b;
    m.h.bytes = bytes;
    pthread_mutex_lock(&st->lock);
    int rc = st->peers[peer].state == PEER_UP ? cdn_ofi_post_msg(st, peer, &m, NULL, 0)
                                              : cdn_ofi_peer_err(peer, what);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* ---- sending ---- */

/* The RTS of a rendezvous send: register its bytes (FI_RMA). */
static int rts_prepare(struct ofi_state *st, struct cdn_xfer *sx, struct ofi_msg *m)
{
    m->type = M_RTS;
    m->h.flags |= CDN_WIRE_RNDV;
    if (!st->rma)
        return MPI_SUCCESS;
    const void *src = cdn_p2p_send_contig(sx);
    if (src == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory staging %llu bytes for rank %d",
                       (unsigned long long)m->h.bytes, sx->peer);
    struct fid_mr *mr;
    int rc = cdn_ofi_reg(st, (void *)src, (size_t)m->h.bytes, FI_REMOTE_READ, &mr);
    if (rc != MPI_SUCCESS)
        return rc;
    sx->moved = (uint64_t)(uintptr_t)mr;
    m->a = cdn_ofi_remote_base(st, src);
    m->b = fi_mr_key(mr);
    return MPI_SUCCESS;
}

/* An eager message: header and packed payload in a send buffer (lock held). */
static int post_eager(struct ofi_state *st, struct cdn_xfer *sx, const struct ofi_msg *m)
{
    size_t n = (size_t)m->h.bytes;
    struct ofi_op *op = op_get(st, sizeof *m + n);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory sending to rank %d", sx->peer);
    op->kind = OP_SEND;
    op->peer = sx->peer;
    op->len = sizeof *m + n;
    memcpy(op->buf, m, sizeof *m);
    if (n > 0 && cdn_p2p_send_pack(sx, 0, op->buf + sizeof *m, n) != n) {
        cdn_ofi_op_put(st, op);
        return cdn_err(MPI_ERR_OTHER, "send: packing %zu bytes for rank %d failed", n, sx->peer);
    }
    ((struct ofi_msg *)op->buf)->seq = st->peers[sx->peer].seq_out++;
    int rc = post(st, op);
    if (rc != MPI_SUCCESS)
        cdn_ofi_op_put(st, op);
    return rc;
}

static int ofi_send(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct ofi_peer *p = &st->peers[sx->peer];
    struct ofi_msg m;
    memset(&m, 0, sizeof m);
    cdn_p2p_wire_hdr(sx, &m.h);
    m.from = st->me;
    bool eager = m.h.bytes <= tp->eager_limit;
    int rc = MPI_SUCCESS;
    if (eager) {
        m.type = M_EAGER;
        m.len = (uint32_t)m.h.bytes;
    } else if ((rc = rts_prepare(st, sx, &m)) != MPI_SUCCESS) {
        return rc;
    }
    bool waits = !eager || (m.h.flags & CDN_WIRE_SYNC);
    sx->rndv = !eager;
    pthread_mutex_lock(&st->lock);
    if (p->state != PEER_UP) {
        pthread_mutex_unlock(&st->lock);
        cdn_ofi_send_unreg(sx);
        return cdn_ofi_peer_err(sx->peer, "send");
    }
    if (waits) {  /* before posting: the answer may come at once */
        sx->state = eager ? (m.h.flags & CDN_WIRE_SYNC ? WAIT_ACK : 0)
                          : (st->rma ? WAIT_FIN : WAIT_CTS);
        cdn_xfer_push(&p->waiting, sx);
    }
    sx->wire_id = p->msgs_out;
    rc = eager ? post_eager(st, sx, &m) : cdn_ofi_post_msg(st, sx->peer, &m, NULL, 0);
    if (rc == MPI_SUCCESS)
        p->msgs_out++;
    else if (waits)
        cdn_xfer_remove(&p->waiting, sx);
    pthread_mutex_unlock(&st->lock);
    if (rc != MPI_SUCCESS)
        cdn_ofi_send_unreg(sx);
    else if (eager)
        cdn_p2p_send_done(sx, false, MPI_SUCCESS);
    return rc;
}

static int ofi_ack(struct cdn_transport *tp, int peer, uint64_t cookie)
{
    return cdn_ofi_send_ctrl(cdn_ofi_state(tp), peer, M_ACK, cookie, 0, 0, "synchronous send acknowledgement");
}

static int ofi_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data,
                       size_t len)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct ofi_msg m;
    memset(&m, 0, sizeof m);
    m.type = M_AM;
    m.a = id;
    m.len = (uint32_t)len;
    pthread_mutex_lock(&st->lock);
    int rc = st->peers[peer].state == PEER_UP ? cdn_ofi_post_msg(st, peer, &m, data, len)
                                              : cdn_ofi_peer_err(peer, "active message");
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* The receiver dropped a message of ours (a cancel): its send waits for
 * nothing more. */
static void ofi_dropped(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    pthread_mutex_lock(&st->lock);
    cdn_xfer_remove(&st->peers[sx->peer].waiting, sx);
    pthread_mutex_unlock(&st->lock);
    cdn_ofi_send_unreg(sx);
}

/* ---- bulk moves: rendezvous reads, get, put ---- */

/* Cut a bulk into chunk ops and post them (remote: the peer's address of
 * byte 0, in the provider's naming). */
static int bulk_start(struct ofi_state *st, struct ofi_bulk *b, char *local, uint64_t bytes,
                      uint64_t remote, uint64_t key)
{
    int kind = b->kind == BULK_PUT ? OP_WRITE : OP_READ;
    uint64_t access = kind == OP_WRITE ? FI_WRITE : FI_READ;
    if (st->mr_local) {
        int rc = cdn_ofi_reg(st, local, (size_t)bytes, access, &b->mr);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    pthread_mutex_lock(&st->lock);
    if (st->peers[b->peer].state != PEER_UP) {
        pthread_mutex_unlock(&st->lock);
        return cdn_ofi_peer_err(b->peer, "one-sided transfer");
    }
    b->parts = (int)((bytes + st->rma_chunk - 1) / st->rma_chunk);
    b->next = st->bulks;
    st->bulks = b;
    int rc = MPI_SUCCESS;
    for (uint64_t off = 0; off < bytes; off += st->rma_chunk) {
        struct ofi_op *op = op_get(st, 0);
        if (op == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory for a transfer");
        } else {
            op->kind = kind;
            op->peer = b->peer;
            op->bulk = b;
            op->local = local + off;
            op->remote = remote + off;
            op->key = key;
            op->chunk = (size_t)(bytes - off < st->rma_chunk ? bytes - off : st->rma_chunk);
            rc = post(st, op);
        }
        if (rc != MPI_SUCCESS) {
            /* chunks posted already complete; the rest count as failed */
            if (op != NULL)
                cdn_ofi_op_put(st, op);
            b->parts -= (int)((bytes - off + st->rma_chunk - 1) / st->rma_chunk);
            b->err = rc;
            break;
        }
    }
    bool idle = b->parts == 0;
    if (idle) {  /* nothing was posted: the caller fails it */
        for (struct ofi_bulk **l = &st->bulks; *l != NULL; l = &(*l)->next)
            if (*l == b) {
                *l = b->next;
                break;
            }
    }
    pthread_mutex_unlock(&st->lock);
    if (idle && b->mr != NULL) {
        fi_close(&b->mr->fid);
        b->mr = NULL;
    }
    return idle ? rc : MPI_SUCCESS;
}

/* The last chunk of a bulk completed (err: the first failure). */
void cdn_ofi_bulk_done(struct ofi_state *st, struct ofi_bulk *b)
{
    if (b->mr != NULL)
        fi_close(&b->mr->fid);
    struct cdn_xfer *x = b->x;
    int err = b->err;
    if (b->kind == BULK_PULL) {
        uint64_t cookie = x->cookie;  /* the receive is the engine's again after recv_done */
        if (err == MPI_SUCCESS && b->bounce != NULL)
            cdn_p2p_recv_data(x, 0, b->bounce, (size_t)x->bytes);
        cdn_p2p_recv_done(x, err);
        if (err == MPI_SUCCESS)
            cdn_ofi_send_ctrl(st, b->peer, M_FIN, cookie, 0, 0, "rendezvous completion");
    } else {
        cdn_xfer_done(x, err);
    }
    free(b->bounce);
    free(b);
}

static int ofi_pull(struct cdn_transport *tp, struct cdn_xfer *rx)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    if (!st->rma) {  /* ask for DATA messages */
        rx->moved = 0;
        pthread_mutex_lock(&st->lock);
        struct ofi_peer *p = &st->peers[rx->peer];
        if (rx->bytes > 0 && p->state == PEER_UP)
            cdn_xfer_push(&p->pulls, rx);
        pthread_mutex_unlock(&st->lock);
        int rc = cdn_ofi_send_ctrl(st, rx->peer, M_CTS, rx->cookie, (uint64_t)(uintptr_t)rx, rx->bytes,
                           "receive");
        if (rc != MPI_SUCCESS && rx->bytes > 0)
            cdn_ofi_take(st, &p->pulls, (uint64_t)(uintptr_t)rx, 0);
        else if (rc == MPI_SUCCESS && rx->bytes == 0)
            cdn_p2p_recv_done(rx, MPI_SUCCESS);
        return rc;
    }
    if (rx->bytes == 0) {
        uint64_t cookie = rx->cookie;
        int peer = rx->peer;
        cdn_p2p_recv_done(rx, MPI_SUCCESS);
        return cdn_ofi_send_ctrl(st, peer, M_FIN, cookie, 0, 0, "rendezvous completion");
    }
    struct ofi_bulk *b = calloc(1, sizeof *b);
    if (b == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory receiving from rank %d", rx->peer);
    b->kind = BULK_PULL;
    b->peer = rx->peer;
    b->x = rx;
    char *local = rx->dst;
    if (local == NULL && (local = b->bounce = malloc((size_t)rx->bytes)) == NULL) {
        free(b);
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory for %llu bytes from rank %d",
                       (unsigned long long)rx->bytes, rx->peer);
    }
    int rc = bulk_start(st, b, local, rx->bytes, rx->rkey.addr, rx->rkey.key);
    if (rc != MPI_SUCCESS) {
        free(b->bounce);
        free(b);
    }
    return rc;
}

static int one_sided(struct ofi_state *st, struct cdn_xfer *x, int kind)
{
    if (x->bytes == 0) {
        cdn_xfer_done(x, MPI_SUCCESS);
        return MPI_SUCCESS;
    }
    struct ofi_bulk *b = calloc(1, sizeof *b);
    if (b == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory for a one-sided transfer");
    b->kind = kind;
    b->peer = x->peer;
    b->x = x;
    char *local = kind == BULK_GET ? (char *)x->dst : (char *)(uintptr_t)x->src;
    int rc = bulk_start(st, b, local, x->bytes, x->rkey.addr, x->rkey.key);
    if (rc != MPI_SUCCESS)
        free(b);
    return rc;
}

static int ofi_get(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return one_sided(cdn_ofi_state(tp), x, BULK_GET);
}

static int ofi_put(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return one_sided(cdn_ofi_state(tp), x, BULK_PUT);
}

static int ofi_mem_reg(struct cdn_transport *tp, void *addr, size_t len, struct cdn_mem_key *key)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct ofi_reg *r = calloc(1, sizeof *r);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ofi: out of memory registering %zu bytes", len);
    int rc = cdn_ofi_reg(st, addr, len, FI_REMOTE_READ | FI_REMOTE_WRITE, &r->mr);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    r->key = fi_mr_key(r->mr);
    key->addr = cdn_ofi_remote_base(st, addr);
    key->key = r->key;
    pthread_mutex_lock(&st->lock);
    r->next = st->regs;
    st->regs = r;
    pthread_mutex_unlock(&st->lock);
    return MPI_SUCCESS;
}

static void ofi_mem_dereg(struct cdn_transport *tp, const struct cdn_mem_key *key)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    struct ofi_reg *r = NULL;
    pthread_mutex_lock(&st->lock);
    for (struct ofi_reg **l = &st->regs; *l != NULL; l = &(*l)->next)
        if ((*l)->key == key->key) {
            r = *l;
            *l = r->next;
            break;
        }
    pthread_mutex_unlock(&st->lock);
    if (r != NULL) {
        fi_close(&r->mr->fid);
        free(r);
    }
}


/* ---- the instance ---- */

static bool ofi_reaches(struct cdn_transport *tp, int world_rank)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    return world_rank >= 0 && world_rank < st->size && world_rank != st->me;
}

/* Receive buffers go up before the fence: a peer may send once it is past it. */
static int ofi_init(struct cdn_transport *tp)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    int rc = cdn_ofi_rx_open(st);
    return rc != MPI_SUCCESS ? rc : cdn_ofi_publish(st);
}

static int ofi_wireup(struct cdn_transport *tp)
{
    return cdn_ofi_insert_peers(cdn_ofi_state(tp));
}

/* Give the provider up to a second to deliver what we posted last (a FIN,
 * an ACK): its progress is ours to make. */
static void drain(struct ofi_state *st)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&st->work) > 0) {
        cdn_ofi_poll(&st->tp);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 1000000000L)
            break;
    }
}

static void free_ops(struct ofi_op *op)
{
    while (op != NULL) {
        struct ofi_op *next = op->next;
        if (op->mr != NULL)
            fi_close(&op->mr->fid);
        free(op);
        op = next;
    }
}

static void ofi_finalize(struct cdn_transport *tp)
{
    struct ofi_state *st = cdn_ofi_state(tp);
    drain(st);
    pthread_mutex_lock(&st->lock);
    st->closing = true;
    pthread_mutex_unlock(&st->lock);
    /* the endpoint first: nothing is posted after this, so buffers and
     * registrations can go */
    if (st->ep != NULL)
        fi_close(&st->ep->fid);
    st->ep = NULL;
    cdn_ofi_rx_close(st);
    free_ops(st->backlog);
    free_ops(st->spare_small);
    free_ops(st->spare_big);
    st->backlog = st->spare_small = st->spare_big = NULL;
    int left = atomic_load(&st->work);
    if (left != 0)
        cdn_ofi_work(st, -left);
    while (st->bulks != NULL) {
        struct ofi_bulk *b = st->bulks;
        st->bulks = b->next;
        if (b->mr != NULL)
            fi_close(&b->mr->fid);
        free(b->bounce);
        free(b);
    }
    while (st->regs != NULL) {
        struct ofi_reg *r = st->regs;
        st->regs = r->next;
        fi_close(&r->mr->fid);
        free(r);
    }
    for (int w = 0; w < st->size; w++)
        for (struct cdn_xfer *x = st->peers[w].waiting; x != NULL; x = x->next)
            cdn_ofi_send_unreg(x);
    cdn_ofi_close(st);
}

static const struct cdn_transport_ops ofi_ops = {
    .name = "ofi",
    .init = ofi_init,
    .wireup = ofi_wireup,
    .reaches = ofi_reaches,
    .send = ofi_send,
    .pull = ofi_pull,
    .ack = ofi_ack,
    .am_send = ofi_am_send,
    .dropped = ofi_dropped,
    .get = ofi_get,
    .put = ofi_put,
    .mem_reg = ofi_mem_reg,
    .mem_dereg = ofi_mem_dereg,
    .peer_lost = cdn_ofi_peer_lost,
    .poll = cdn_ofi_poll,
    .fd = cdn_ofi_fd,
    .arm = cdn_ofi_arm,
    .disarm = cdn_ofi_disarm,
    .finalize = ofi_finalize,
};

struct cdn_transport *cdn_ofi_transport_create(void)
{
    why_not_reason = NULL;
    if (cdn_job_size() <= 1)
        return NULL;
    struct ofi_state *st = cdn_ofi_open(&why_not_reason);
    if (st == NULL)
        return NULL;
    st->tp.ops = &ofi_ops;
    st->tp.caps = st->rma ? CDN_TP_CAP_GET | CDN_TP_CAP_PUT : 0;
    st->tp.am_max = st->payload_max;
    st->tp.eager_limit = st->tp.eager_always = st->payload_max;
    st->tp.priv = st;
    return &st->tp;
}

const char *cdn_ofi_transport_why_not(void)
{
    return why_not_reason;
}

void cdn_ofi_transport_probe(char *out, size_t len)
{
    cdn_ofi_probe(out, len);
}
