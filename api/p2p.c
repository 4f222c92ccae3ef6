/*
 * Bindings of point-to-point communication: argument checks, handle to
 * object, then progress/p2p.c.  Every int-count function and its _c
 * large-count twin share one body that takes an MPI_Count.
 */
#include <stdbool.h>

#include "api/enqueue.h"
#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/engine.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/handle.h"
#include "runtime/session.h"

enum dir { SEND, RECV };

struct p2p_args {
    struct cdn_comm *comm;
    struct cdn_datatype *dt;
};

int cdn_api_buf(const char *fn, const char *name, bool name_count, const void *buf,
                MPI_Count count, MPI_Datatype type, struct cdn_datatype **dt)
{
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: %s%scount %lld is negative", fn,
                       name_count ? name : "", name_count ? " " : "", (long long)count);
    int rc = cdn_datatype_check(type, fn, dt);
    if (rc != MPI_SUCCESS)
        return rc;
    /* A NULL address is MPI_BOTTOM, legal with a derived type of absolute
     * addresses; with a predefined type it is a bug. */
    if (buf == NULL && count > 0 && CDN_HANDLE_KIND(type) == CDN_HK_BUILTIN &&
        cdn_datatype_size(*dt) > 0)
        return cdn_err(MPI_ERR_BUFFER, "%s: %s is NULL with count %lld", fn, name,
                       (long long)count);
    return MPI_SUCCESS;
}

static int check_buf(const char *fn, const char *name, const void *buf, MPI_Count count,
                     MPI_Datatype type, struct cdn_datatype **dt)
{
    return cdn_api_buf(fn, name, false, buf, count, type, dt);
}

/* The rank and tag rules (MPI-4.1 3.2.3, 3.2.4), shared by the fast test
 * in check and the messages in check_peer. */
static inline bool rank_ok(const struct cdn_comm *c, int rank, enum dir d)
{
    return (unsigned)rank < (unsigned)cdn_comm_peer_size(c) || rank == MPI_PROC_NULL ||
           (d == RECV && rank == MPI_ANY_SOURCE);
}

static inline bool tag_ok(int tag, enum dir d)
{
    return (unsigned)tag <= (unsigned)CDN_TAG_UB || (d == RECV && tag == MPI_ANY_TAG);
}

static int check_peer(const char *fn, struct cdn_comm *c, int rank, int tag, enum dir d)
{
    const char *what = d == SEND ? "dest" : "source";
    if (!rank_ok(c, rank, d))
        return cdn_err(MPI_ERR_RANK, "%s: %s %d is not a rank of the %s (size %d)%s", fn, what,
                       rank, c->inter ? "remote group" : "communicator", cdn_comm_peer_size(c),
                       d == SEND ? "" : " nor MPI_ANY_SOURCE");
    if (!tag_ok(tag, d))
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is not in 0..MPI_TAG_UB (%d)%s", fn, tag,
                       CDN_TAG_UB, d == SEND ? "" : " nor MPI_ANY_TAG");
    return MPI_SUCCESS;
}

/* Every argument check, one by one, with the message of the first that
 * fails (and *a filled when none does). */
static __attribute__((noinline, cold)) int check_each(const char *fn, const void *buf,
                                                      MPI_Count count, MPI_Datatype type,
                                                      int rank, int tag, MPI_Comm comm,
                                                      enum dir d, struct p2p_args *a)
{
    int rc = MPI_SUCCESS;
    a->comm = cdn_api_comm(comm, fn, &rc);
    if (a->comm == NULL)
        return rc;
    rc = check_buf(fn, "buf", buf, count, type, &a->dt);
    if (rc == MPI_SUCCESS)
        rc = check_peer(fn, a->comm, rank, tag, d);
    return rc;
}

/* The arguments of a send or receive.  The valid case is one test of the
 * same rules check_each applies in turn (the lookups inline; a NULL buffer
 * with data is left to check_each, which knows when it is MPI_BOTTOM), so
 * a call with good arguments costs a few dozen instructions; any failure
 * goes to check_each, which finds the first problem and says it. */
static inline __attribute__((always_inline)) int check(const char *fn, const void *buf,
                                                       MPI_Count count, MPI_Datatype type,
                                                       int rank, int tag, MPI_Comm comm,
                                                       enum dir d, struct p2p_args *a)
{
    struct cdn_comm *c = cdn_comm_lookup(comm);  /* the entry point checked readiness */
    struct cdn_datatype *dt = cdn_datatype_usable(type);
    if (CDN_LIKELY(c != NULL && dt != NULL && count >= 0 && (buf != NULL || count == 0) &&
                   rank_ok(c, rank, d) && tag_ok(tag, d))) {
        a->comm = c;
        a->dt = dt;
        return MPI_SUCCESS;
    }
    return check_each(fn, buf, count, type, rank, tag, comm, d, a);
}

static int check_req(const char *fn, MPI_Request *request)
{
    return request == NULL ? cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn) : MPI_SUCCESS;
}

/* A blocking call's start failed: settle what it left to the wait. */
static int blocking_failed(int rc)
{
    cdn_progress_blocking_end();
    return rc;
}

/* Wait for an internal request, report it, drop it.  late: a blocking
 * receive, which polls a moment before it counts as a poller
 * (cdn_progress_wait_until_late). */
static int finish_blocking(struct cdn_request *r, MPI_Status *status, bool late)
{
    if (late)
        cdn_request_wait_late(r);
    else
        cdn_request_wait(r);
    int err = r->status.MPI_ERROR;
    cdn_status_copy(status, &r->status, false);
    cdn_request_release(r);
    return err;
}

/* ---- sends ---- */

/* send_body and recv_body inline into the hot bindings (MPI_Send, MPI_Isend,
 * MPI_Recv, MPI_Irecv and their _c forms), where the mode and persistence
 * are constants: no frame of their own, no arguments on the stack.  The
 * other bindings call them through do_send and do_recv. */
#define CDN_ALWAYS_INLINE static inline __attribute__((always_inline))

CDN_ALWAYS_INLINE int send_body(const char *fn, const void *buf, MPI_Count count,
                                MPI_Datatype type, int dest, int tag, MPI_Comm comm, int mode,
                                MPI_Request *request, bool persistent)
{
    struct p2p_args a;
    int rc = check(fn, buf, count, type, dest, tag, comm, SEND, &a);
    if (rc == MPI_SUCCESS && (request != NULL || persistent))
        rc = check_req(fn, request);
    if (rc != MPI_SUCCESS)
        return rc;
    /* MPI_Send on an offload stream's communicator is enqueued (docs/streams.md) */
    if (CDN_UNLIKELY(a.comm->stream != NULL) && request == NULL && !persistent &&
        mode == CDN_SEND_STANDARD && cdn_enqueue_comm(a.comm))
        return cdn_enqueue_send(buf, count, type, dest, tag, comm);
    struct cdn_request *r;
    /* A blocking send is not a poller while it starts (unlike a receive,
     * cdn_progress_blocking_begin): nothing it starts asks for a wake-up,
     * and an eager one is complete before it would wait -- entering and
     * leaving cost four read-modify-writes, one on the doorbell the peer
     * reads, and a look at every ring. */
    cdn_p2p_inside(true);
    if (!persistent && mode == CDN_SEND_STANDARD &&
        cdn_p2p_send_now(buf, count, a.dt, dest, tag, a.comm)) {
        cdn_p2p_inside(false);
        if (request == NULL)
            return MPI_SUCCESS;
        /* MPI_Isend whose message went at once (eager, nothing queued
         * before it): the send is complete, and its request is a completed
         * one the engine never sees (cdn_p2p_sent_request) -- no transfer
         * state, no completion event, no reference on the communicator.
         * A window of small MPI_Isend took 521 instructions per message
         * through the request path, of which 250 were that path's. */
        struct cdn_request *done = cdn_p2p_sent_request();
        if (done == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
        *request = cdn_request_publish(done);
        return MPI_SUCCESS;
    }
    rc = cdn_p2p_send(buf, count, a.dt, dest, tag, a.comm, mode, persistent, &r);
    cdn_p2p_inside(false);
    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return finish_blocking(r, MPI_STATUS_IGNORE, false);
    if (!persistent)
        cdn_p2p_started(r);
    *request = cdn_request_publish(r);
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int do_send(const char *fn, const void *buf, MPI_Count count,
                                             MPI_Datatype type, int dest, int tag,
                                             MPI_Comm comm, int mode, MPI_Request *request,
                                             bool persistent)
{
    return send_body(fn, buf, count, type, dest, tag, comm, mode, request, persistent);
}

/* body: send_body (inlined) for the standard mode's blocking and immediate
 * forms, do_send for the others. */
#define SEND_FAMILY(Name, IName, mode, body)                                                   \
    int cdn_MPI_##Name(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,   \
                       MPI_Comm comm)                                                          \
    {                                                                                          \
        return body("MPI_" #Name, buf, count, datatype, dest, tag, comm, mode, NULL, false);   \
    }                                                                                          \
    int cdn_MPI_##Name##_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,  \
                           int tag, MPI_Comm comm)                                             \
    {                                                                                          \
        return body("MPI_" #Name "_c", buf, count, datatype, dest, tag, comm, mode, NULL,      \
                    false);                                                                    \
    }                                                                                          \
    int cdn_MPI_##IName(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,  \
                        MPI_Comm comm, MPI_Request *request)                                   \
    {                                                                                          \
        if (request == NULL) /* tested here, body then knows it is not NULL */                 \
            return check_req("MPI_" #IName, request);                                          \
        return body("MPI_" #IName, buf, count, datatype, dest, tag, comm, mode, request,       \
                    false);                                                                    \
    }                                                                                          \
    int cdn_MPI_##IName##_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, \
                            int tag, MPI_Comm comm, MPI_Request *request)                      \
    {                                                                                          \
        if (request == NULL)                                                                   \
            return check_req("MPI_" #IName "_c", request);                                     \
        return body("MPI_" #IName "_c", buf, count, datatype, dest, tag, comm, mode, request,  \
                    false);                                                                    \
    }                                                                                          \
    int cdn_MPI_##Name##_init(const void *buf, int count, MPI_Datatype datatype, int dest,     \
                              int tag, MPI_Comm comm, MPI_Request *request)                    \
    {                                                                                          \
        return do_send("MPI_" #Name "_init", buf, count, datatype, dest, tag, comm, mode,      \
                       request, true);                                                         \
    }                                                                                          \
    int cdn_MPI_##Name##_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype,       \
                                int dest, int tag, MPI_Comm comm, MPI_Request *request)        \
    {                                                                                          \
        return do_send("MPI_" #Name "_init_c", buf, count, datatype, dest, tag, comm, mode,    \
                       request, true);                                                         \
    }

SEND_FAMILY(Send, Isend, CDN_SEND_STANDARD, send_body)
SEND_FAMILY(Ssend, Issend, CDN_SEND_SYNC, do_send)
SEND_FAMILY(Rsend, Irsend, CDN_SEND_READY, do_send)
SEND_FAMILY(Bsend, Ibsend, CDN_SEND_BUFFERED, do_send)

/* ---- receives ---- */

CDN_ALWAYS_INLINE int recv_body(const char *fn, void *buf, MPI_Count count, MPI_Datatype type,
                                int source, int tag, MPI_Comm comm, MPI_Status *status,
                                MPI_Request *request, bool persistent)
{
    struct p2p_args a;
    int rc = check(fn, buf, count, type, source, tag, comm, RECV, &a);
    if (rc != MPI_SUCCESS)
        return rc;
    /* MPI_Recv on an offload stream's communicator is enqueued */
    if (CDN_UNLIKELY(a.comm->stream != NULL) && request == NULL && cdn_enqueue_comm(a.comm))
        return cdn_enqueue_recv(buf, count, type, source, tag, comm, status);
    struct cdn_request *r;
    /* A blocking receive small enough to come eagerly from anyone is not a
     * poller while it posts: it raises no want (request.h, waited), so
     * nothing it starts rings or wakes anyone, and it waits through
     * cdn_progress_wait_until_late.  A larger one counts as a poller at
     * once: a rendezvous pulled by a poller splits its copy with the
     * sender (transport/shm). */
    bool late = request == NULL && cdn_progress_comes_eagerly(count * cdn_datatype_size(a.dt));
    if (request == NULL && !late)
        cdn_progress_blocking_begin();
    cdn_p2p_inside(true);
    rc = request == NULL ? cdn_p2p_recv_waited(buf, count, a.dt, source, tag, a.comm, &r)
                         : cdn_p2p_recv(buf, count, a.dt, source, tag, a.comm, persistent, &r);
    cdn_p2p_inside(false);
    if (rc != MPI_SUCCESS)
        return blocking_failed(rc);
    if (request == NULL)
        return finish_blocking(r, status, late);
    if (!persistent)
        cdn_p2p_started(r);
    *request = cdn_request_publish(r);
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int do_recv(const char *fn, void *buf, MPI_Count count,
                                             MPI_Datatype type, int source, int tag,
                                             MPI_Comm comm, MPI_Status *status,
                                             MPI_Request *request, bool persistent)
{
    return recv_body(fn, buf, count, type, source, tag, comm, status, request, persistent);
}

int cdn_MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                 MPI_Status *status)
{
    return recv_body("MPI_Recv", buf, count, datatype, source, tag, comm, status, NULL, false);
}

int cdn_MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                   MPI_Comm comm, MPI_Status *status)
{
    return recv_body("MPI_Recv_c", buf, count, datatype, source, tag, comm, status, NULL, false);
}

/* body: recv_body (inlined) for MPI_Irecv, do_recv for the persistent form. */
#define IRECV(Name, ctype, persistent, body)                                                   \
    int cdn_MPI_##Name(void *buf, ctype count, MPI_Datatype datatype, int source, int tag,     \
                       MPI_Comm comm, MPI_Request *request)                                    \
    {                                                                                          \
        if (request == NULL)                                                                   \
            return check_req("MPI_" #Name, request);                                           \
        return body("MPI_" #Name, buf, count, datatype, source, tag, comm, NULL, request,      \
                    persistent);                                                               \
    }
IRECV(Irecv, int, false, recv_body)
IRECV(Irecv_c, MPI_Count, false, recv_body)
IRECV(Recv_init, int, true, do_recv)
IRECV(Recv_init_c, MPI_Count, true, do_recv)

/* ---- sendrecv ---- */

static int do_sendrecv(const char *fn, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                       MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                       MPI_Comm comm, bool replace, MPI_Status *status, MPI_Request *request)
{
    struct p2p_args s, r;
    int rc = check(fn, sendbuf, sendcount, sendtype, dest, sendtag, comm, SEND, &s);
    if (rc != MPI_SUCCESS)
        return rc;
    if (replace) {
        r = s;
        rc = check_peer(fn, s.comm, source, recvtag, RECV);
    } else {
        rc = check(fn, recvbuf, recvcount, recvtype, source, recvtag, comm, RECV, &r);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *req;
    if (request == NULL)
        cdn_progress_blocking_begin();
    rc = cdn_p2p_sendrecv(sendbuf, sendcount, s.dt, dest, sendtag, recvbuf, recvcount, r.dt,
                          source, recvtag, s.comm, replace, &req);
    if (rc != MPI_SUCCESS)
        return blocking_failed(rc);
    if (request == NULL)
        return finish_blocking(req, status, false);
    *request = cdn_request_publish(req);
    return MPI_SUCCESS;
}

#define SENDRECV(Name, ctype, blocking)                                                        \
    int cdn_MPI_##Name(const void *sendbuf, ctype sendcount, MPI_Datatype sendtype, int dest,  \
                       int sendtag, void *recvbuf, ctype recvcount, MPI_Datatype recvtype,     \
                       int source, int recvtag, MPI_Comm comm,                                 \
                       blocking)
#define SENDRECV_B(Name, ctype)                                                                \
    SENDRECV(Name, ctype, MPI_Status *status)                                                  \
    {                                                                                          \
        return do_sendrecv("MPI_" #Name, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, \
                           recvcount, recvtype, source, recvtag, comm, false, status, NULL);   \
    }
#define SENDRECV_I(Name, ctype)                                                                \
    SENDRECV(Name, ctype, MPI_Request *request)                                                \
    {                                                                                          \
        int rc = check_req("MPI_" #Name, request);                                             \
        return rc ? rc : do_sendrecv("MPI_" #Name, sendbuf, sendcount, sendtype, dest,         \
                                     sendtag, recvbuf, recvcount, recvtype, source, recvtag,   \
                                     comm, false, MPI_STATUS_IGNORE, request);                 \
    }
SENDRECV_B(Sendrecv, int)
SENDRECV_B(Sendrecv_c, MPI_Count)
SENDRECV_I(Isendrecv, int)
SENDRECV_I(Isendrecv_c, MPI_Count)

#define REPLACE(Name, ctype, last, statusarg, reqarg, checkreq)                                \
    int cdn_MPI_##Name(void *buf, ctype count, MPI_Datatype datatype, int dest, int sendtag,   \
                       int source, int recvtag, MPI_Comm comm, last)                           \
    {                                                                                          \
        int rc = checkreq;                                                                     \
        return rc ? rc : do_sendrecv("MPI_" #Name, buf, count, datatype, dest, sendtag, NULL,  \
                                     0, datatype, source, recvtag, comm, true, statusarg,      \
                                     reqarg);                                                  \
    }
REPLACE(Sendrecv_replace, int, MPI_Status *status, status, NULL, MPI_SUCCESS)
REPLACE(Sendrecv_replace_c, MPI_Count, MPI_Status *status, status, NULL, MPI_SUCCESS)
REPLACE(Isendrecv_replace, int, MPI_Request *request, MPI_STATUS_IGNORE, request,
        check_req("MPI_Isendrecv_replace", request))
REPLACE(Isendrecv_replace_c, MPI_Count, MPI_Request *request, MPI_STATUS_IGNORE, request,
        check_req("MPI_Isendrecv_replace_c", request))

/* ---- probe ---- */

struct probe {
    struct cdn_comm *comm;
    int source, tag;
    bool take;
    MPI_Status *status;
    int found, rc;
    struct cdn_request *msg;
};

/* Messages arrive by transports' polls (done in iprobe) or by other
 * threads' self sends, which wake waiters too. */
static bool probe_found(void *arg)
{
    struct probe *p = arg;
    p->rc = cdn_p2p_iprobe(p->comm, p->source, p->tag, p->take, &p->found, p->status, &p->msg);
    return p->rc != MPI_SUCCESS || p->found;
}

static int do_probe(const char *fn, int source, int tag, MPI_Comm comm, bool take, bool wait,
                    int *flag, MPI_Message *message, MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, fn, &rc);
    if (c == NULL)
        return rc;
    if ((rc = check_peer(fn, c, source, tag, RECV)) != MPI_SUCCESS)
        return rc;
    if ((!wait && flag == NULL) || (take && message == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, flag == NULL && !wait ? "flag" : "message");
    /* the probe fills a status of its own: what the caller sees is copied
     * without MPI_ERROR, which calls reporting one status leave alone */
    MPI_Status st;
    struct probe p = {.comm = c, .source = source, .tag = tag, .take = take, .status = &st};
    if (wait)
        cdn_progress_wait_until(probe_found, &p);
    else
        probe_found(&p);
    rc = p.rc;
    int found = p.found;
    if (rc == MPI_SUCCESS && found)
        cdn_status_copy(status, &st, false);
    struct cdn_request *msg = p.msg;
    if (flag != NULL)
        *flag = found;
    if (take && found)
        *message = msg != NULL ? cdn_request_publish(msg) : MPI_MESSAGE_NO_PROC;
    else if (take)
        *message = MPI_MESSAGE_NULL;
    return rc;
}

int cdn_MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    return do_probe("MPI_Probe", source, tag, comm, false, true, NULL, NULL, status);
}

int cdn_MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return do_probe("MPI_Iprobe", source, tag, comm, false, false, flag, NULL, status);
}

int cdn_MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    return do_probe("MPI_Mprobe", source, tag, comm, true, true, NULL, message, status);
}

int cdn_MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                    MPI_Status *status)
{
    return do_probe("MPI_Improbe", source, tag, comm, true, false, flag, message, status);
}

static int do_mrecv(const char *fn, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Message *message, MPI_Status *status, MPI_Request *request)
{
    if (message == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: message is NULL", fn);
    struct cdn_datatype *dt;
    int rc = check_buf(fn, "buf", buf, count, type, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *r;
    if (*message == MPI_MESSAGE_NO_PROC) {
        r = cdn_p2p_done_request(NULL, MPI_PROC_NULL);
        if (r == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    } else {
        struct cdn_request *m = cdn_request_get(*message);
        if (m == NULL || m->kind != CDN_REQ_MESSAGE)
            return cdn_err(MPI_ERR_REQUEST, "%s: 0x%x is not a valid message%s", fn,
                           (unsigned)*message,
                           *message == MPI_MESSAGE_NULL ? " (MPI_MESSAGE_NULL)" : "");
        rc = cdn_p2p_mrecv(buf, count, dt, m, &r);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    *message = MPI_MESSAGE_NULL;
    if (request != NULL) {
        *request = cdn_request_publish(r);
        return MPI_SUCCESS;
    }
    rc = finish_blocking(r, status, false);
    if (rc != MPI_SUCCESS)
        cdn_api_request_error(r);
    return rc;
}

int cdn_MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                  MPI_Status *status)
{
    return do_mrecv("MPI_Mrecv", buf, count, datatype, message, status, NULL);
}

int cdn_MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                    MPI_Status *status)
{
    return do_mrecv("MPI_Mrecv_c", buf, count, datatype, message, status, NULL);
}

int cdn_MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                   MPI_Request *request)
{
    int rc = check_req("MPI_Imrecv", request);
    return rc ? rc : do_mrecv("MPI_Imrecv", buf, count, datatype, message, MPI_STATUS_IGNORE, request);
}

int cdn_MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                     MPI_Request *request)
{
    int rc = check_req("MPI_Imrecv_c", request);
    return rc ? rc : do_mrecv("MPI_Imrecv_c", buf, count, datatype, message, MPI_STATUS_IGNORE,
                              request);
}

/* ---- buffered-send buffers: the process's, a communicator's, a session's ---- */

static int detach_int(struct cdn_bsend_pool **slot, void *buffer_addr, int *size, const char *fn)
{
    MPI_Count s = 0;
    int rc = cdn_bsend_detach(slot, buffer_addr, size == NULL ? NULL : &s, fn);
    if (rc == MPI_SUCCESS)
        *size = (int)s;
    return rc;
}

static int iflush(struct cdn_bsend_pool **slot, MPI_Request *request, const char *fn)
{
    int rc = check_req(fn, request);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *r = cdn_bsend_iflush(slot);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    *request = cdn_request_publish(r);
    return MPI_SUCCESS;
}

int cdn_MPI_Buffer_attach(void *buffer, int size)
{
    return cdn_bsend_attach(NULL, buffer, size, "MPI_Buffer_attach");
}

int cdn_MPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    return cdn_bsend_attach(NULL, buffer, size, "MPI_Buffer_attach_c");
}

int cdn_MPI_Buffer_detach(void *buffer_addr, int *size)
{
    return detach_int(NULL, buffer_addr, size, "MPI_Buffer_detach");
}

int cdn_MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    return cdn_bsend_detach(NULL, buffer_addr, size, "MPI_Buffer_detach_c");
}

int cdn_MPI_Buffer_flush(void)
{
    return cdn_bsend_flush(NULL);
}

int cdn_MPI_Buffer_iflush(MPI_Request *request)
{
    return iflush(NULL, request, "MPI_Buffer_iflush");
}

/* The buffer slot of a communicator or session argument, or NULL with *rc set. */
static struct cdn_bsend_pool **comm_slot(MPI_Comm comm, const char *fn, int *rc)
{
    struct cdn_comm *c = cdn_api_comm(comm, fn, rc);
    return c != NULL ? &c->bsend : NULL;
}

static struct cdn_bsend_pool **session_slot(MPI_Session session, const char *fn, int *rc)
{
    struct cdn_session *s = cdn_api_session(session, fn, rc);
    return s != NULL ? &s->bsend : NULL;
}

/* MPI_<Obj>_attach_buffer and the rest for an object of type Type whose
 * buffer slot slot_of finds: the same six bindings for communicators and
 * sessions. */
#define SLOT_ARG(slot_of, fn)                                                                      \
    int rc = MPI_SUCCESS;                                                                          \
    struct cdn_bsend_pool **slot = slot_of(h, fn, &rc);                                            \
    if (slot == NULL)                                                                              \
        return rc

#define BUFFER_BINDINGS(Obj, Type, slot_of)                                                        \
    int cdn_MPI_##Obj##_attach_buffer(Type h, void *buffer, int size)                              \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_attach_buffer");                                           \
        return cdn_bsend_attach(slot, buffer, size, "MPI_" #Obj "_attach_buffer");                 \
    }                                                                                              \
    int cdn_MPI_##Obj##_attach_buffer_c(Type h, void *buffer, MPI_Count size)                      \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_attach_buffer_c");                                         \
        return cdn_bsend_attach(slot, buffer, size, "MPI_" #Obj "_attach_buffer_c");               \
    }                                                                                              \
    int cdn_MPI_##Obj##_detach_buffer(Type h, void *buffer_addr, int *size)                        \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_detach_buffer");                                           \
        return detach_int(slot, buffer_addr, size, "MPI_" #Obj "_detach_buffer");                  \
    }                                                                                              \
    int cdn_MPI_##Obj##_detach_buffer_c(Type h, void *buffer_addr, MPI_Count *size)                \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_detach_buffer_c");                                         \
        return cdn_bsend_detach(slot, buffer_addr, size, "MPI_" #Obj "_detach_buffer_c");          \
    }                                                                                              \
    int cdn_MPI_##Obj##_flush_buffer(Type h)                                                       \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_flush_buffer");                                            \
        return cdn_bsend_flush(slot);                                                              \
    }                                                                                              \
    int cdn_MPI_##Obj##_iflush_buffer(Type h, MPI_Request *request)                                \
    {                                                                                              \
        SLOT_ARG(slot_of, "MPI_" #Obj "_iflush_buffer");                                           \
        return iflush(slot, request, "MPI_" #Obj "_iflush_buffer");                                \
    }

BUFFER_BINDINGS(Comm, MPI_Comm, comm_slot)
BUFFER_BINDINGS(Session, MPI_Session, session_slot)
