/*
 * Send and receive requests and what happens when a message meets its
 * receive (see p2p.h).
 *
 * The data path of a send: cdn_p2p_send -> send_start -> the self path
 * (this process) or the peer's transport (tp->ops->send: eager or
 * rendezvous) -> completion upcall -> cdn_request_event.  A receive:
 * cdn_p2p_recv -> recv_start -> cdn_match_post; a message arriving from a
 * transport goes cdn_p2p_arrived -> cdn_match_arrive; either way a match
 * ends in deliver(), which copies eager data, copies from the sending
 * request on the self path, or asks the transport to pull rendezvous data.
 *
 * A synchronous send waits for two events: its transport is done with the
 * buffer, and the receiver matched (an ack, or implied by rendezvous FIN).
 */
#include "progress/p2p.h"

#include <stdlib.h>
#include <string.h>

#include "progress/am.h"
#include "progress/engine.h"
#include "progress/match.h"
#include "progress/sent.h"
#include "progress/staging.h"
#include "progress/threadq.h"
#include "runtime/comm.h"
#include "runtime/copy.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "runtime/stream.h"
#include "transport/transport.h"

struct cdn_p2p_inside cdn_p2p_app_inside;

static int recv_start(struct cdn_request *r);
static int send_cancel(struct cdn_request *r);
static int recv_cancel(struct cdn_request *r);
static void p2p_free(struct cdn_request *r);

static const struct cdn_request_ops send_ops = {
    .name = "send", .start = cdn_p2p_send_start, .cancel = send_cancel, .free = p2p_free,
};
static const struct cdn_request_ops recv_ops = {
    .name = "recv", .start = recv_start, .cancel = recv_cancel, .free = p2p_free,
};
static const struct cdn_request_ops done_ops = {.name = "done"};

static void p2p_free(struct cdn_request *r)
{
    struct cdn_p2p *p = &r->u.p2p;
    cdn_dt_segment_fini(&p->seg);  /* its reference is the one keeping p->dt */
    if (p->tmp != NULL)
        cdn_staging_put(p->tmp, (size_t)p->bytes);
    if (p->msg != NULL)
        cdn_msg_free(p->msg);
}

struct cdn_request *cdn_p2p_sent_request(void)
{
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&cdn_sent_at_call, 1, memory_order_relaxed);
    return cdn_request_alloc_bare(CDN_REQ_DONE, &done_ops, NULL);  /* cc 0, status empty */
}

struct cdn_request *cdn_p2p_done_request(struct cdn_comm *comm, int source)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_DONE, &done_ops, comm);
    if (r == NULL)
        return NULL;
    r->status.MPI_SOURCE = source;
    if (source == MPI_PROC_NULL)
        r->status.MPI_TAG = MPI_ANY_TAG;
    return r;  /* cc == 0: complete */
}

/* Take every event a request still waits for: it completes now. */
static void complete_all(struct cdn_request *r)
{
    int left = atomic_load(&r->cc) - 1;
    for (int i = 0; i < left; i++)
        cdn_request_event(r);
}

static void complete_cancelled(struct cdn_request *r)
{
    atomic_store(&r->cancelled, true);
    cdn_status_set_cancelled(&r->status, 1);
    complete_all(r);
}

/* ---- sending ---- */

static void wire_hdr(const struct cdn_p2p *p, struct cdn_wire_hdr *h)
{
    h->ctx = p->ctx;
    h->src = p->comm->rank;
    h->tag = p->tag;
    h->flags = p->mode == CDN_SEND_SYNC ? CDN_WIRE_SYNC : 0;
    h->bytes = (uint64_t)p->bytes;
    h->cookie = (uint64_t)(uintptr_t)&p->x;
}

void cdn_p2p_wire_hdr(const struct cdn_xfer *sx, struct cdn_wire_hdr *h)
{
    wire_hdr(&cdn_request_of_xfer((struct cdn_xfer *)sx)->u.p2p, h);
}

/* Does only a thread blocked in MPI want this send's message at once?  A
 * standard-mode message on a user's context: receives there are never
 * urgent (progress/request.h), so nobody acts on it before the receiver's
 * next poll unless a thread of the receiver sleeps in MPI.  The same for
 * a send whose receive is known never to be urgent (lazy_ok). */
static bool send_lazy(const struct cdn_p2p *p)
{
    return p->mode != CDN_SEND_SYNC && (p->ctx == p->comm->context_id || p->lazy_ok);
}

static size_t send_pack(struct cdn_p2p *p, uint64_t offset, void *dst, size_t len)
{
    /* The data in one run (packed already, or a contiguous type): copied
     * here, as cdn_dt_pack would after its checks. */
    const char *run = p->tmp != NULL ? p->tmp : p->seg.contig;
    if (run != NULL) {
        size_t n = offset >= (uint64_t)p->bytes ? 0 : (size_t)((uint64_t)p->bytes - offset);
        n = n < len ? n : len;
        cdn_copy(dst, run + offset, n);
        return n;
    }
    return (size_t)cdn_dt_pack(&p->seg, (MPI_Count)offset, dst, (MPI_Count)len);
}

size_t cdn_p2p_send_pack(struct cdn_xfer *sx, uint64_t offset, void *dst, size_t len)
{
    return send_pack(&cdn_request_of_xfer(sx)->u.p2p, offset, dst, len);
}

static const void *send_contig(struct cdn_p2p *p)
{
    if (p->x.src != NULL)
        return p->x.src;
    p->tmp = cdn_staging_get((size_t)p->bytes);
    if (p->tmp != NULL)
        cdn_dt_pack(&p->seg, 0, p->tmp, p->bytes);
    p->x.src = p->tmp;
    return p->tmp;
}

const void *cdn_p2p_send_contig(struct cdn_xfer *sx)
{
    return send_contig(&cdn_request_of_xfer(sx)->u.p2p);
}

static void deliver(struct cdn_request *rreq, const struct cdn_msg *msg, const void *payload);

/* A message to this process: through the same matching as any other. */
static int self_send(struct cdn_request *sreq)
{
    struct cdn_p2p *p = &sreq->u.p2p;
    struct cdn_match_ctx *m = cdn_match_ctx_get(p->ctx);
    if (m == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory for matching context %u", p->ctx);
    struct cdn_msg msg = {.peer = cdn_rt.world_rank};
    wire_hdr(p, &msg.h);
    bool eager = p->mode != CDN_SEND_SYNC && p->bytes <= CDN_SELF_EAGER_LIMIT;
    const void *payload = NULL;
    if (eager) {
        payload = send_contig(p);
        if (payload == NULL && p->bytes > 0)
            return cdn_err(MPI_ERR_NO_MEM, "send: out of memory packing %lld bytes",
                           (long long)p->bytes);
        if (payload == NULL)
            payload = "";
    } else {
        msg.h.flags |= CDN_WIRE_RNDV;
        msg.sreq = sreq;
        msg.wire_id = (uint64_t)(uintptr_t)sreq;
    }
    bool failed;
    struct cdn_request *rreq = cdn_match_arrive(m, &msg, payload, &failed);
    if (failed)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory queueing a message of %lld bytes",
                       (long long)p->bytes);
    if (rreq != NULL)
        deliver(rreq, &msg, payload);  /* completes sreq too when it is the source */
    if (eager)
        cdn_request_event(sreq);
    return MPI_SUCCESS;
}

void cdn_p2p_self_arrive(const struct cdn_wire_hdr *h, const void *payload,
                         struct cdn_request *sreq)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(h->ctx);
    if (m == NULL)
        cdn_rt_abort(1, "cadence: out of memory for matching context %u", h->ctx);
    /* field by field, as cdn_p2p_arrived: inline_data stays untouched */
    struct cdn_msg msg;
    msg.next = msg.prev = NULL;
    msg.h = *h;
    msg.peer = cdn_rt.world_rank;
    msg.tp = NULL;
    msg.sreq = sreq;
    msg.wire_id = (uint64_t)(uintptr_t)sreq;
    msg.data = NULL;
    if (sreq != NULL)
        payload = NULL;
    else if (payload == NULL)
        payload = "";
    bool failed;
    struct cdn_request *rreq = cdn_match_arrive(m, &msg, payload, &failed);
    if (failed)
        cdn_rt_abort(1, "cadence: out of memory queueing a message of %llu bytes",
                     (unsigned long long)h->bytes);
    if (rreq != NULL)
        deliver(rreq, &msg, payload);
}

static void tq_pack(void *arg, void *dst, size_t len)
{
    send_pack(arg, 0, dst, len);
}

/* A message to another thread of this process on a thread communicator:
 * through the pair's queue (progress/threadq.h). */
static int tq_send(struct cdn_request *sreq)
{
    struct cdn_p2p *p = &sreq->u.p2p;
    struct cdn_comm *c = p->comm;
    struct cdn_wire_hdr h;
    wire_hdr(p, &h);
    bool eager = p->mode != CDN_SEND_SYNC && p->bytes <= CDN_TQ_EAGER;
    if (!eager)
        h.flags |= CDN_WIRE_RNDV;
    if (!cdn_tq_send(c->tq, c->tq_me, p->rank - c->tq_first, &h, tq_pack, p,
                     eager ? NULL : sreq))
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory queueing a message of %lld bytes "
                       "to another thread", (long long)p->bytes);
    if (eager)
        cdn_request_event(sreq);
    return MPI_SUCCESS;
}

/* The send request this thread is starting inside the call that made it
 * (send_make): nobody else can see it before that call returns, so a
 * transport that finishes with it there (an eager message written at once)
 * completes it with plain stores (cdn_p2p_send_done).  Thread-local: a
 * completion by another thread (a rendezvous's FIN) takes the usual path. */
static CDN_TLS struct cdn_request *starting_unseen;

/* fresh: r was just made by send_make (cdn_request_arm_fresh). */
static inline int send_start(struct cdn_request *r, bool fresh)
{
    struct cdn_p2p *p = &r->u.p2p;
    int nevents = p->mode == CDN_SEND_SYNC ? 2 : 1;
    if (fresh) {
        cdn_request_arm_fresh(r, nevents);
    } else {
        cdn_status_empty(&r->status);
        /* A persistent send's data may have changed since the last start: a
         * packed copy made then is stale. */
        if (p->tmp != NULL) {
            cdn_staging_put(p->tmp, (size_t)p->bytes);
            p->tmp = NULL;
        }
        /* and the transport's fields start afresh */
        p->x = (struct cdn_xfer){.bytes = (uint64_t)p->bytes, .src = p->seg.contig};
        cdn_request_arm(r, nevents);
    }
    if (p->rank == MPI_PROC_NULL) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        complete_all(r);
        return MPI_SUCCESS;
    }
    if (p->mode == CDN_SEND_BUFFERED)
        return cdn_bsend_start(r);
    int rc;
    p->x.peer = cdn_comm_world_rank(p->comm, p->rank);
    if (p->x.peer == cdn_rt.world_rank) {
        p->tp = NULL;
        cdn_sent_count_one(NULL);
        rc = p->comm->tq != NULL ? tq_send(r) : self_send(r);
    } else {
        p->tp = cdn_progress_transport_in(r->pctx, p->x.peer);  /* its communicator's, or a
                                                                  * stream's (MPIX_Stream_send) */
        if (p->tp == NULL) {
            rc = cdn_err(MPI_ERR_OTHER, "send: no transport reaches world rank %d", p->x.peer);
        } else {
            cdn_sent_count_one(p->tp);
            p->x.sync = p->mode == CDN_SEND_SYNC;
            p->x.lazy = send_lazy(p);
            if (fresh && r->parent == NULL)
                starting_unseen = r;
            rc = p->tp->ops->send(p->tp, &p->x);
            starting_unseen = NULL;
        }
    }
    if (rc != MPI_SUCCESS) {
        r->status.MPI_ERROR = rc;
        complete_all(r);
    }
    return MPI_SUCCESS;  /* errors are reported by the completion call */
}

int cdn_p2p_send_start(struct cdn_request *r)
{
    return send_start(r, false);
}

static void send_done(struct cdn_request *sreq, bool matched, int err)
{
    if (sreq == starting_unseen && err == MPI_SUCCESS && sreq->u.p2p.mode != CDN_SEND_SYNC) {
        /* What cdn_request_event does for the last event of a request
         * without a hook, parent or waiter, armed by cdn_request_arm_fresh:
         * cc 2 -> 0 and the engine's reference dropped (refs 2 -> 1), as
         * plain stores -- two read-modify-writes fewer, each of which waited
         * for the cell just written to reach the receiver's core when
         * messages stream (docs/progress.md, "Instructions per message"). */
        atomic_store_explicit(&sreq->refs, 1, memory_order_relaxed);
        atomic_store_explicit(&sreq->cc, 0, memory_order_release);
        return;
    }
    if (err != MPI_SUCCESS)
        sreq->status.MPI_ERROR = err;
    bool sync = sreq->u.p2p.mode == CDN_SEND_SYNC;
    cdn_request_event(sreq);
    if (matched && sync)
        cdn_request_event(sreq);
}

void cdn_p2p_send_done(struct cdn_xfer *sx, bool matched, int err)
{
    send_done(cdn_request_of_xfer(sx), matched, err);
}

void cdn_p2p_acked(uint64_t cookie, int err)
{
    struct cdn_request *r = cdn_request_of_xfer((struct cdn_xfer *)(uintptr_t)cookie);
    if (err != MPI_SUCCESS)
        r->status.MPI_ERROR = err;
    cdn_request_event(r);
}

/* What CDN_AM_CANCEL carries: the message, named by its context and the
 * number its transport gave it on the channel (a send's address is not
 * enough: an older message whose send is complete and freed can carry the
 * same one), and the send's transfer, which CDN_AM_CANCELLED echoes. */
struct cancel_msg {
    uint64_t cookie, wire_id, ctx;  /* no padding: every byte is sent */
};

/* A send can be cancelled while its message waits unmatched at the
 * receiver: on the self path here, through another process by an active
 * message behind the message itself, on the same channel (the answer
 * completes the request cancelled; a cancel that comes too late is not
 * answered, and the send goes on and completes normally, so nothing
 * refers to the request after that).  An eager send is complete already. */
static int send_cancel(struct cdn_request *r)
{
    struct cdn_p2p *p = &r->u.p2p;
    if (cdn_request_done(r) || p->rank == MPI_PROC_NULL || p->mode == CDN_SEND_BUFFERED)
        return MPI_SUCCESS;
    if (p->tp != NULL) {
        if (atomic_exchange(&p->cancel_state, 1) != 0)
            return MPI_SUCCESS;
        struct cancel_msg m = {.cookie = (uint64_t)(uintptr_t)&p->x, .wire_id = p->x.wire_id,
                               .ctx = p->ctx};
        return cdn_am_send(p->tp, p->x.peer, CDN_AM_CANCEL, &m, sizeof m);
    }
    struct cdn_match_ctx *m = cdn_match_ctx_get(p->ctx);
    if (m != NULL && cdn_match_unsend(m, NULL, cdn_rt.world_rank, (uint64_t)(uintptr_t)r))
        complete_cancelled(r);
    return MPI_SUCCESS;
}

static void on_cancel(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    struct cancel_msg m;
    if (len != sizeof m)
        cdn_rt_abort(1, "cadence: rank %d sent a cancel of %zu bytes", peer, len);
    memcpy(&m, data, sizeof m);
    struct cdn_match_ctx *mc = m.ctx <= UINT32_MAX ? cdn_match_ctx_get((uint32_t)m.ctx) : NULL;
    if (mc != NULL && cdn_match_unsend(mc, tp, peer, m.wire_id)) {
        int rc = cdn_am_send(tp, peer, CDN_AM_CANCELLED, &m.cookie, sizeof m.cookie);
        if (rc != MPI_SUCCESS)
            cdn_rt_abort(1, "cadence: answering a cancel from rank %d failed", peer);
    }
}

static void on_cancelled(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    uint64_t cookie;
    if (len != sizeof cookie)
        cdn_rt_abort(1, "cadence: rank %d sent a cancel answer of %zu bytes", peer, len);
    memcpy(&cookie, data, sizeof cookie);
    struct cdn_xfer *sx = (struct cdn_xfer *)(uintptr_t)cookie;
    if (tp->ops->dropped != NULL)
        tp->ops->dropped(tp, sx);
    complete_cancelled(cdn_request_of_xfer(sx));
}

void cdn_p2p_am_register(void)
{
    cdn_am_register(CDN_AM_CANCEL, on_cancel);
    cdn_am_register(CDN_AM_CANCELLED, on_cancelled);
}

/* Sets every field of the p2p state: its request comes from
 * cdn_request_alloc_bare, which leaves the state as the last user left it. */
static void p2p_init(struct cdn_request *r, const void *buf, MPI_Count count,
                     struct cdn_datatype *dt, int rank, int tag, struct cdn_comm *comm,
                     uint32_t ctx)
{
    struct cdn_p2p *p = &r->u.p2p;
    cdn_zero_words(p, sizeof *p);
    p->buf = (void *)buf;
    p->count = count;
    p->dt = dt;
    p->rank = rank;
    p->tag = tag;
    p->tag_mask = -1;
    p->ctx = ctx;
    p->mode = CDN_SEND_STANDARD;
    p->comm = comm;
    cdn_dt_segment_init(&p->seg, buf, count, dt);  /* holds the reference on dt */
    p->bytes = cdn_dt_segment_bytes(&p->seg);
    p->x.bytes = (uint64_t)p->bytes;
    p->x.src = p->seg.contig;
}

static int send_make(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest, int tag,
                     struct cdn_comm *comm, uint32_t ctx, int mode, bool persistent,
                     struct cdn_request **out)
{
    struct cdn_request *r = cdn_request_alloc_bare(CDN_REQ_SEND, &send_ops, comm);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory for a request");
    p2p_init(r, buf, count, dt, dest, tag, comm, ctx);
    r->u.p2p.mode = mode;
    r->persistent = persistent;
    *out = r;
    return persistent ? MPI_SUCCESS : send_start(r, true);
}

int cdn_p2p_send(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest, int tag,
                 struct cdn_comm *comm, int mode, bool persistent, struct cdn_request **out)
{
    return send_make(buf, count, dt, dest, tag, comm, cdn_comm_send_ctx(comm, dest), mode,
                     persistent, out);
}

/* lazy: ctx is the user's context (cdn_p2p_send_lazy holds for the message) */
static inline bool send_now(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                            int tag, struct cdn_comm *comm, uint32_t ctx, bool lazy)
{
    MPI_Count bytes;
    const char *data = cdn_dt_contig_run(buf, count, dt, &bytes);
    /* (an empty message may have no buffer: a barrier's) */
    if (dest == MPI_PROC_NULL || (data == NULL && bytes != 0))
        return false;
    int peer = cdn_comm_world_rank(comm, dest);
    if (peer == cdn_rt.world_rank) {
        /* another thread of this process on a thread communicator */
        if (comm->tq == NULL || (uint64_t)bytes > CDN_TQ_EAGER)
            return false;
        struct cdn_wire_hdr h = {.ctx = ctx, .src = comm->rank, .tag = tag,
                                 .flags = 0, .bytes = (uint64_t)bytes, .cookie = 0};
        if (!cdn_tq_send(comm->tq, comm->tq_me, dest - comm->tq_first, &h, NULL,
                         (void *)data, NULL))
            return false;
        cdn_sent_count_one(NULL);
        return true;
    }
    struct cdn_transport *tp = cdn_progress_transport_in(comm->pctx, peer);
    if (tp == NULL || tp->ops->send_now == NULL || (uint64_t)bytes > tp->eager_limit)
        return false;
    struct cdn_wire_hdr h = {.ctx = ctx, .src = comm->rank, .tag = tag,
                             .flags = 0, .bytes = (uint64_t)bytes, .cookie = 0};
    if (!tp->ops->send_now(tp, peer, &h, data, (size_t)bytes, lazy))
        return false;
    cdn_sent_count_one(tp);
    return true;
}

bool cdn_p2p_send_now(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                      int tag, struct cdn_comm *comm)
{
    return send_now(buf, count, dt, dest, tag, comm, cdn_comm_send_ctx(comm, dest),
                    comm->dest_ctx == NULL);
}

bool cdn_p2p_send_now_internal(const void *buf, MPI_Count count, struct cdn_datatype *dt,
                               int dest, int tag, struct cdn_comm *comm)
{
    return send_now(buf, count, dt, dest, tag, comm, cdn_comm_send_ctx(comm, dest) + 1, false);
}

bool cdn_p2p_send_now_of(const struct cdn_request *sreq)
{
    const struct cdn_p2p *p = &sreq->u.p2p;
    return p->mode == CDN_SEND_STANDARD &&
           send_now(p->buf, p->count, p->dt, p->rank, p->tag, p->comm, p->ctx, send_lazy(p));
}

int cdn_p2p_send_internal(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                          int tag, struct cdn_comm *comm, bool persistent,
                          struct cdn_request **out)
{
    return send_make(buf, count, dt, dest, tag, comm, cdn_comm_send_ctx(comm, dest) + 1,
                     CDN_SEND_STANDARD, persistent, out);
}

/* ---- receiving ---- */

/* fresh: r was just made by recv_make (cdn_request_arm_fresh). */
static inline int recv_arm_start(struct cdn_request *r, bool fresh)
{
    struct cdn_p2p *p = &r->u.p2p;
    if (fresh && p->waited) {
        cdn_request_arm_owned(r, 1);  /* its blocking call holds it until complete */
    } else if (fresh) {
        cdn_request_arm_fresh(r, 1);
    } else {
        cdn_status_empty(&r->status);
        cdn_request_arm(r, 1);
    }
    if (p->rank == MPI_PROC_NULL) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        cdn_request_event(r);
        return MPI_SUCCESS;
    }
    struct cdn_match_ctx *m = cdn_match_ctx_get(p->ctx);
    if (m == NULL) {
        cdn_request_complete(r, cdn_err(MPI_ERR_NO_MEM, "receive: out of memory for matching "
                                        "context %u", p->ctx));
        return MPI_SUCCESS;
    }
    struct cdn_msg *msg = cdn_match_post(m, r);
    if (msg != NULL) {
        deliver(r, msg, msg->data);
        cdn_msg_free(msg);
    }
    return MPI_SUCCESS;
}

static int recv_start(struct cdn_request *r)
{
    return recv_arm_start(r, false);
}

static int recv_cancel(struct cdn_request *r)
{
    struct cdn_p2p *p = &r->u.p2p;
    if (cdn_request_done(r) || p->rank == MPI_PROC_NULL || p->msg != NULL)
        return MPI_SUCCESS;
    struct cdn_match_ctx *m = cdn_match_ctx_get(p->ctx);
    if (m != NULL && cdn_match_unpost(m, r))
        complete_cancelled(r);
    return MPI_SUCCESS;
}

/* urgent is true only on a communicator's internal context: a send to a
 * user's context counts on it (cdn_p2p_send_lazy). */
static int recv_make(void *buf, MPI_Count count, struct cdn_datatype *dt, int source, int tag,
                     struct cdn_comm *comm, uint32_t ctx, bool urgent, bool persistent,
                     bool waited, struct cdn_request **out)
{
    struct cdn_request *r = cdn_request_alloc_bare(CDN_REQ_RECV, &recv_ops, comm);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "receive: out of memory for a request");
    p2p_init(r, buf, count, dt, source, tag, comm, ctx);
    /* The flag must not change while the receive is posted (the want would
     * not balance). */
    r->u.p2p.urgent = urgent;
    r->u.p2p.waited = waited;
    r->persistent = persistent;
    *out = r;
    return persistent ? MPI_SUCCESS : recv_arm_start(r, true);
}

int cdn_p2p_recv(void *buf, MPI_Count count, struct cdn_datatype *dt, int source, int tag,
                 struct cdn_comm *comm, bool persistent, struct cdn_request **out)
{
    /* A user's receive is not urgent: an eager message for it is taken
     * when the user next polls (MPI_Wait, MPI_Test), or by a thread asleep
     * in MPI, which wants every message (engine.c, block).  An RTS or a
     * synchronous message still rings (CDN_WANT_POSTED): its sender waits
     * for this process to act -- strong progress. */
    return recv_make(buf, count, dt, source, tag, comm, comm->context_id, false, persistent,
                     false, out);
}

int cdn_p2p_recv_waited(void *buf, MPI_Count count, struct cdn_datatype *dt, int source, int tag,
                        struct cdn_comm *comm, struct cdn_request **out)
{
    return recv_make(buf, count, dt, source, tag, comm, comm->context_id, false, false, true,
                     out);
}

int cdn_p2p_recv_internal(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                          int tag, struct cdn_comm *comm, bool persistent,
                          struct cdn_request **out)
{
    return recv_make(buf, count, dt, source, tag, comm, CDN_COMM_CTX_COLL(comm), true, persistent,
                     false, out);
}

int cdn_p2p_send_init_ctx(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                          int tag, struct cdn_comm *comm, uint32_t ctx,
                          struct cdn_request **out)
{
    return send_make(buf, count, dt, dest, tag, comm, ctx, CDN_SEND_STANDARD, true, out);
}

int cdn_p2p_recv_init_ctx(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                          int tag, struct cdn_comm *comm, uint32_t ctx,
                          struct cdn_request **out)
{
    return recv_make(buf, count, dt, source, tag, comm, ctx, true, true, false, out);
}

int cdn_p2p_stream_send(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                        int tag, int src_idx, uint32_t ctx, int pctx, struct cdn_comm *comm,
                        struct cdn_request **out)
{
    int rc = send_make(buf, count, dt, dest, tag << CDN_STREAM_TAG_BITS | src_idx, comm, ctx,
                       CDN_SEND_STANDARD, true, out);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *r = *out;
    r->pctx = pctx;
    r->persistent = false;
    r->u.p2p.lazy_ok = true;  /* its receive is never urgent, as a user's */
    return send_start(r, true);
}

int cdn_p2p_stream_recv(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                        int tag, int src_idx, uint32_t ctx, int pctx, struct cdn_comm *comm,
                        struct cdn_request **out)
{
    /* the wire tag's halves: either may be a wildcard */
    int want = tag == MPI_ANY_TAG && src_idx < 0 ? MPI_ANY_TAG
               : tag == MPI_ANY_TAG             ? src_idx
                                                : tag << CDN_STREAM_TAG_BITS | (src_idx < 0 ? 0 : src_idx);
    int mask = tag == MPI_ANY_TAG ? CDN_STREAM_MAX - 1
               : src_idx < 0      ? ~(CDN_STREAM_MAX - 1)
                                  : -1;
    int rc = recv_make(buf, count, dt, source, want, comm, ctx, false, true, false, out);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *r = *out;
    r->pctx = pctx;
    r->persistent = false;
    r->u.p2p.tag_mask = mask;
    r->u.p2p.stream_tag = true;
    return recv_arm_start(r, true);
}

int cdn_p2p_recv_exact(const struct cdn_request *rreq)
{
    const MPI_Status *st = &rreq->status;
    MPI_Count got = cdn_status_bytes(st), want = rreq->u.p2p.bytes;
    if (st->MPI_ERROR != MPI_SUCCESS || got >= want ||
        (st->count_hi_and_cancelled & CDN_STATUS_CANCELLED_BIT))
        return st->MPI_ERROR;
    return cdn_err(MPI_ERR_COUNT, "collective: %lld bytes arrived from rank %d where %lld were "
                   "expected; the ranks' counts or datatypes do not match",
                   (long long)got, st->MPI_SOURCE, (long long)want);
}

/* cdn_p2p_recv_data, inline in deliver (every eager message). */
static inline void recv_data(struct cdn_request *rreq, uint64_t offset, const void *data,
                             size_t len)
{
    struct cdn_p2p *p = &rreq->u.p2p;
    if (offset >= (uint64_t)p->bytes)
        return;
    if (len > (uint64_t)p->bytes - offset)
        len = (size_t)((uint64_t)p->bytes - offset);
    if (p->seg.contig != NULL)  /* one run: what cdn_dt_unpack does after its checks */
        cdn_copy(p->seg.contig + offset, data, len);
    else
        cdn_dt_unpack(&p->seg, (MPI_Count)offset, data, (MPI_Count)len);
}

void cdn_p2p_recv_data(struct cdn_xfer *rx, uint64_t offset, const void *data, size_t len)
{
    recv_data(cdn_request_of_xfer(rx), offset, data, len);
}

void cdn_p2p_recv_done(struct cdn_xfer *rx, int err)
{
    cdn_request_complete(cdn_request_of_xfer(rx), err);
}

static bool names_peer(const struct cdn_request *r, int world)
{
    const struct cdn_p2p *p = &r->u.p2p;
    return p->rank >= 0 && cdn_comm_world_rank(p->comm, p->rank) == world;
}

void cdn_p2p_peer_failed(struct cdn_transport *tp, int peer, int err)
{
    (void)tp;
    struct cdn_request *r = cdn_match_take_posted(names_peer, peer);
    while (r != NULL) {
        struct cdn_request *next = r->next;
        r->next = NULL;
        r->status.MPI_SOURCE = r->u.p2p.rank;
        cdn_request_complete(r, err);
        r = next;
    }
}

/* Copy len bytes of a local send into a receive, through the datatypes. */
static void copy_local(struct cdn_request *sreq, struct cdn_request *rreq, MPI_Count len)
{
    struct cdn_p2p *s = &sreq->u.p2p, *d = &rreq->u.p2p;
    if (len == 0)
        return;
    if (d->seg.contig != NULL && s->tmp == NULL && s->seg.contig != NULL && s->comm->tq != NULL) {
        /* between threads of a thread communicator: the sender may help */
        cdn_tq_copy(s->comm->tq, s->comm->tq_me, d->seg.contig, s->seg.contig, (size_t)len);
        return;
    }
    if (d->seg.contig != NULL) {
        send_pack(s, 0, d->seg.contig, (size_t)len);
        return;
    }
    if (s->tmp == NULL && s->seg.contig != NULL) {
        cdn_dt_unpack(&d->seg, 0, s->seg.contig, len);
        return;
    }
    char chunk[16384];
    for (MPI_Count off = 0; off < len;) {
        size_t n = send_pack(s, (uint64_t)off,
                                     chunk, (size_t)(len - off < (MPI_Count)sizeof chunk
                                                     ? len - off : (MPI_Count)sizeof chunk));
        cdn_dt_unpack(&d->seg, off, chunk, (MPI_Count)n);
        off += (MPI_Count)n;
    }
}

/* A message met its receive: move the data (or start moving it). */
static void deliver(struct cdn_request *rreq, const struct cdn_msg *msg, const void *payload)
{
    struct cdn_p2p *p = &rreq->u.p2p;
    MPI_Count bytes = (MPI_Count)msg->h.bytes;
    MPI_Count n = bytes < p->bytes ? bytes : p->bytes;
    rreq->status.MPI_SOURCE = msg->h.src;
    rreq->status.MPI_TAG = CDN_UNLIKELY(p->stream_tag) ? msg->h.tag >> CDN_STREAM_TAG_BITS
                                                       : msg->h.tag;
    cdn_status_set_bytes(&rreq->status, n);
    int err = MPI_SUCCESS;
    if (bytes > p->bytes)
        err = cdn_err(MPI_ERR_TRUNCATE, "receive: message of %lld bytes from rank %d (tag %d) is "
                      "longer than the receive buffer of %lld bytes; the first %lld were delivered",
                      (long long)bytes, msg->h.src, msg->h.tag, (long long)p->bytes, (long long)n);
    p->x.peer = msg->peer;
    if (msg->sreq != NULL) {  /* self path rendezvous: copy from the send itself */
        copy_local(msg->sreq, rreq, n);
        send_done(msg->sreq, true, MPI_SUCCESS);
        cdn_request_complete(rreq, err);
        return;
    }
    if (msg->h.flags & CDN_WIRE_RNDV) {
        p->tp = msg->tp;
        /* the transport's fields zero, as a transfer is handed over */
        p->x = (struct cdn_xfer){.peer = msg->peer, .bytes = (uint64_t)n,
                                 .cookie = msg->h.cookie, .rkey = msg->rkey,
                                 .dst = p->seg.contig, .alone = p->x.alone};
        rreq->status.MPI_ERROR = err;
        int rc = msg->tp->ops->pull(msg->tp, &p->x);
        if (rc != MPI_SUCCESS)
            cdn_request_complete(rreq, rc);
        return;
    }
    if (n > 0)
        recv_data(rreq, 0, payload, (size_t)n);
    if (msg->h.flags & CDN_WIRE_SYNC) {
        if (msg->tp != NULL)
            msg->tp->ops->ack(msg->tp, msg->peer, msg->h.cookie);
        else
            cdn_p2p_acked(msg->h.cookie, MPI_SUCCESS);
    }
    cdn_request_complete(rreq, err);
}

void cdn_p2p_arrived(struct cdn_transport *tp, int peer, const struct cdn_wire_hdr *h,
                     const void *payload, const struct cdn_mem_key *rkey, uint64_t wire_id)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(h->ctx);
    /* Field by field: an initializer would also zero inline_data (a
     * `rep stos` for every message); only a queued copy uses it. */
    struct cdn_msg msg;
    msg.next = msg.prev = NULL;
    msg.h = *h;
    msg.peer = peer;
    msg.tp = tp;
    if (rkey != NULL)
        msg.rkey = *rkey;
    msg.sreq = NULL;
    msg.wire_id = wire_id;
    msg.data = NULL;
    if (m == NULL)
        cdn_rt_abort(1, "cadence: out of memory for matching context %u", h->ctx);
    bool failed;
    struct cdn_request *rreq =
        cdn_match_arrive(m, &msg, (h->flags & CDN_WIRE_RNDV) ? NULL : payload, &failed);
    if (failed)
        cdn_rt_abort(1, "cadence: out of memory queueing an unexpected message of %llu bytes",
                     (unsigned long long)h->bytes);
    if (rreq != NULL)
        deliver(rreq, &msg, payload);
}

/* ---- probe and matched messages ---- */

static void msg_free(struct cdn_request *r)
{
    if (r->u.p2p.msg != NULL)
        cdn_msg_free(r->u.p2p.msg);
}
static const struct cdn_request_ops message_ops = {.name = "message", .free = msg_free};

int cdn_p2p_iprobe(struct cdn_comm *comm, int source, int tag, bool take, int *flag,
                   MPI_Status *status, struct cdn_request **msgreq)
{
    *flag = 0;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        if (status != MPI_STATUS_IGNORE) {
            cdn_status_empty(status);
            status->MPI_SOURCE = MPI_PROC_NULL;
        }
        if (take)
            *msgreq = NULL;  /* MPI_MESSAGE_NO_PROC */
        return MPI_SUCCESS;
    }
    cdn_progress_poll();
    struct cdn_match_ctx *m = cdn_match_ctx_get(comm->context_id);
    if (m == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "probe: out of memory for a matching context");
    struct cdn_request *r = NULL;
    if (take) {
        r = cdn_request_alloc(CDN_REQ_MESSAGE, &message_ops, comm);
        if (r == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "probe: out of memory for a message");
    }
    struct cdn_wire_hdr h;
    struct cdn_msg *msg = NULL;
    if (!cdn_match_probe(m, source, tag, take, &h, &msg)) {
        if (r != NULL)
            cdn_request_release(r);
        return MPI_SUCCESS;
    }
    *flag = 1;
    if (status != MPI_STATUS_IGNORE) {
        cdn_status_empty(status);
        status->MPI_SOURCE = h.src;
        status->MPI_TAG = h.tag;
        cdn_status_set_bytes(status, (MPI_Count)h.bytes);
    }
    if (take) {
        r->u.p2p.msg = msg;
        *msgreq = r;
    }
    return MPI_SUCCESS;
}

int cdn_p2p_mrecv(void *buf, MPI_Count count, struct cdn_datatype *dt, struct cdn_request *msgreq,
                  struct cdn_request **out)
{
    struct cdn_request *r = cdn_request_alloc_bare(CDN_REQ_RECV, &recv_ops, msgreq->comm);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Mrecv: out of memory for a request");
    p2p_init(r, buf, count, dt, msgreq->u.p2p.msg->h.src, msgreq->u.p2p.msg->h.tag, msgreq->comm,
             msgreq->u.p2p.msg->h.ctx);
    struct cdn_msg *msg = msgreq->u.p2p.msg;
    msgreq->u.p2p.msg = NULL;
    cdn_request_unpublish(msgreq);
    cdn_request_arm_fresh(r, 1);
    r->u.p2p.msg = msg;  /* freed with the request: deliver may still read it */
    deliver(r, msg, msg->data);
    *out = r;
    return MPI_SUCCESS;
}
