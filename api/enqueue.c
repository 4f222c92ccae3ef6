/*
 * Offload streams of type "cadence_host_queue" and the enqueue calls
 * (MPIX_Send/Recv/Isend/Irecv/Wait/Waitall/Allreduce_enqueue, and
 * MPI_Send/MPI_Recv on such a stream's communicator); docs/streams.md.
 *
 * A host queue runs its operations in the order they were enqueued, with
 * no application thread: each operation is a persistent request made at
 * enqueue time (so the collectives' order and an immediate call's request
 * handle are fixed then) and started when the queue reaches it.  A
 * blocking operation (send, receive, allreduce) holds the queue until it
 * completes; an immediate one (isend, irecv) is started and the queue goes
 * on, and MPIX_Wait_enqueue holds it until that request completed.  The
 * requests' completions reach the queue through its carrier request, whose
 * child they are (child_done), in whichever thread completed them -- the
 * progress thread, or one polling -- and that thread starts what comes
 * next.  One thread at a time advances a queue (running).
 * MPIX_Stream_synchronize waits until everything enqueued so far is done.
 *
 * A GPU stream (api/offload.h: info type "cudaStream_t" where the build
 * has CUDA) keeps the same operations and bookkeeping, but the device
 * stream orders them: each is a host function launched on it (on_device),
 * which starts the request and, when the operation blocks, waits for it
 * there, on the runtime's callback thread -- the seed's semantics, where
 * kernels launched after a send enqueue run after the send.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "api/enqueue.h"
#include "api/offload.h"
#include "cdn_api_impl.h"
#include "coll/coll.h"
#include "progress/engine.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/info.h"
#include "runtime/op.h"
#include "runtime/stream.h"

enum { Q_START, Q_WAIT };

struct hq;

struct qop {
    struct qop *next;
    struct hq *q;
    int kind;
    struct cdn_request *r;   /* Q_START: the operation; Q_WAIT: the one waited for */
    bool block;              /* Q_START: hold the queue until r completes */
    bool started;
    MPI_Status *status;      /* where r's status goes (MPI_STATUS_IGNORE: nowhere) */
};

struct hq {
    pthread_mutex_t lock;
    struct qop *head, *tail;
    bool running;            /* a thread advances the queue */
    bool again;              /* a completion came while it did: look once more */
    struct cdn_request *carrier;
    atomic_long pushed, finished;
    atomic_int err;          /* the first error of an operation since the last synchronize */
    const struct cdn_offload *off;  /* a GPU stream's runtime (NULL: the host queue) */
    void *dev;                      /* ... and its stream handle */
};

static struct hq *hq_of_carrier(struct cdn_request *r)
{
    struct hq *q;
    memcpy(&q, r->u.room, sizeof q);
    return q;
}

static void advance(struct hq *q);
static void finish(struct hq *q, struct qop *op);

/* An operation's request completed: the queue looks at its head again. */
static void carrier_child_done(struct cdn_request *r, int slot)
{
    (void)slot;
    advance(hq_of_carrier(r));
    cdn_progress_signal();  /* MPIX_Stream_synchronize may be asleep */
}

static const struct cdn_request_ops carrier_ops = {
    .name = "host queue", .child_done = carrier_child_done,
};

static void report(struct hq *q, struct qop *op, struct cdn_request *r)
{
    int e = r->status.MPI_ERROR, none = MPI_SUCCESS;
    if (e != MPI_SUCCESS)
        atomic_compare_exchange_strong(&q->err, &none, e);
    if (op->status != MPI_STATUS_IGNORE)
        *op->status = r->status;
}

/* The request is done with: the queue's own, or the user's given back by
 * MPIX_Wait_enqueue. */
static void drop(struct cdn_request *r)
{
    r->active = false;
    r->parent = NULL;
    if (atomic_load(&r->live))
        cdn_request_unpublish(r);  /* the user's handle (MPIX_Wait_enqueue took it) */
    cdn_request_release(r);        /* the queue's */
}

/* Run the queue from its head as far as it goes (any thread). */
static void advance(struct hq *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->running) {
        q->again = true;
        pthread_mutex_unlock(&q->lock);
        return;
    }
    q->running = true;
    for (;;) {
        q->again = false;
        struct qop *op = q->head;
        if (op == NULL)
            break;
        if (op->kind == Q_START && !op->started) {
            op->started = true;
            struct cdn_request *r = op->r;
            pthread_mutex_unlock(&q->lock);
            r->parent = q->carrier;  /* its completion advances the queue */
            r->active = true;
            r->ops->start(r);
            pthread_mutex_lock(&q->lock);
            continue;
        }
        struct cdn_request *r = op->r;
        bool finished = op->kind == Q_START && !op->block ? true : cdn_request_done(r);
        if (!finished) {
            if (q->again)
                continue;
            break;  /* its completion comes back here */
        }
        q->head = op->next;
        if (q->head == NULL)
            q->tail = NULL;
        pthread_mutex_unlock(&q->lock);
        finish(q, op);
        pthread_mutex_lock(&q->lock);
    }
    q->running = false;
    pthread_mutex_unlock(&q->lock);
}

/* An operation's end: its status and error reported, the queue's hold on
 * its request given up. */
static void finish(struct hq *q, struct qop *op)
{
    if (op->kind == Q_WAIT || op->block) {
        report(q, op, op->r);
        drop(op->r);
    }
    free(op);
    atomic_fetch_add(&q->finished, 1);
}

/* A GPU stream reached the operation (its runtime's callback thread). */
static void on_device(void *arg)
{
    struct qop *op = arg;
    struct cdn_request *r = op->r;
    if (op->kind == Q_START) {
        r->active = true;
        r->ops->start(r);
    }
    if (op->kind == Q_WAIT || op->block)
        cdn_request_wait(r);
    finish(op->q, op);
}

static int push(struct hq *q, int kind, struct cdn_request *r, bool block, MPI_Status *status,
                const char *fn)
{
    struct qop *op = calloc(1, sizeof *op);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for an operation", fn);
    *op = (struct qop){.q = q, .kind = kind, .r = r, .block = block, .status = status};
    atomic_fetch_add(&q->pushed, 1);
    if (q->off != NULL) {
        int e = q->off->launch(q->dev, on_device, op);
        if (e != 0) {
            atomic_fetch_sub(&q->pushed, 1);
            free(op);
            return cdn_err(MPI_ERR_OTHER, "%s: the %s refused the operation: %s", fn,
                           q->off->type, q->off->error_text(e));
        }
        return MPI_SUCCESS;
    }
    pthread_mutex_lock(&q->lock);
    if (q->tail != NULL)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
    pthread_mutex_unlock(&q->lock);
    advance(q);
    return MPI_SUCCESS;
}

static void hq_free(void *p)
{
    struct hq *q = p;
    memset(q->carrier->u.room, 0, sizeof(void *));
    cdn_request_release(q->carrier);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* A GPU stream's handle from the info key "value" (MPIX_Info_set_hex's
 * hexadecimal digits, the handle's bytes in memory order). */
static int device_handle(struct cdn_info *info, const struct cdn_offload *off, void **dev,
                         const char *fn)
{
    char hex[MPI_MAX_INFO_VAL];
    unsigned char bytes[sizeof(void *)] = {0};
    size_t n = off->handle_size;
    if (!cdn_info_lookup(info, "value", hex, sizeof hex, NULL))
        return cdn_err(MPI_ERR_INFO_KEY, "%s: a stream of type \"%s\" needs the info key "
                       "\"value\": the %s, set with MPIX_Info_set_hex", fn, off->type, off->type);
    bool ok = strlen(hex) == 2 * n && n <= sizeof bytes;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned v;
        ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
        bytes[i] = (unsigned char)v;
    }
    if (!ok)
        return cdn_err(MPI_ERR_INFO_VALUE, "%s: info \"value\" \"%s\" is not the %zu bytes of "
                       "a %s in MPIX_Info_set_hex's hexadecimal form", fn, hex, n, off->type);
    memcpy(dev, bytes, sizeof *dev);
    return MPI_SUCCESS;
}

int cdn_enqueue_attach(struct cdn_stream *s, struct cdn_info *info, const char *type,
                       const char *fn)
{
    const struct cdn_offload *off = NULL;
    void *dev = NULL;
    if (strcmp(type, "cadence_host_queue") != 0) {
        off = cdn_offload_find(type);
        const char *have = cdn_offload_types();
        if (off == NULL)
            return cdn_err(MPI_ERR_UNSUPPORTED_OPERATION, "%s: streams of info type \"%s\" are "
                           "not supported by this build (offload types: \"cadence_host_queue\"%s%s%s; "
                           "GPU types need the GPU's runtime at build time, docs/streams.md)",
                           fn, type, *have ? ", \"" : "", have, *have ? "\"" : "");
        int rc = device_handle(info, off, &dev, fn);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    struct hq *q = calloc(1, sizeof *q);
    struct cdn_request *carrier = cdn_request_alloc(CDN_REQ_DONE, &carrier_ops, NULL);
    if (q == NULL || carrier == NULL) {
        free(q);
        if (carrier != NULL)
            cdn_request_release(carrier);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for an offload queue", fn);
    }
    pthread_mutex_init(&q->lock, NULL);
    memcpy(carrier->u.room, &q, sizeof q);
    carrier->pctx = s->pctx;
    q->carrier = carrier;
    q->off = off;
    q->dev = dev;
    s->queue = q;
    s->queue_free = hq_free;
    return MPI_SUCCESS;
}

bool cdn_enqueue_idle(const struct cdn_stream *s)
{
    const struct hq *q = s->queue;
    return q == NULL || atomic_load(&q->finished) == atomic_load(&q->pushed);
}

/* The host queue of comm's stream, or an error naming fn. */
static struct hq *queue_of(struct cdn_comm *c, const char *fn, int *rc)
{
    if (c->stream == NULL || c->stream->queue == NULL) {
        *rc = cdn_err(MPI_ERR_COMM, "%s: the communicator has no offload stream (make one with "
                      "MPIX_Stream_create of info type \"cadence_host_queue\" and "
                      "MPIX_Stream_comm_create)", fn);
        return NULL;
    }
    return c->stream->queue;
}

bool cdn_enqueue_comm(const struct cdn_comm *c)
{
    return c->stream != NULL && c->stream->queue != NULL;
}

/* ---- the calls ---- */

static struct cdn_comm *comm_arg(MPI_Comm comm, const char *fn, int *rc)
{
    *rc = MPI_SUCCESS;
    return cdn_api_comm(comm, fn, rc);
}

static int p2p_args(const char *fn, const void *buf, int count, MPI_Datatype datatype, int peer,
                    int tag, struct cdn_comm *c, bool send, struct cdn_datatype **dt)
{
    int rc = cdn_api_buf(fn, "buf", false, buf, count, datatype, dt);
    if (rc != MPI_SUCCESS)
        return rc;
    int n = cdn_comm_peer_size(c);
    if (!(peer == MPI_PROC_NULL || (peer >= 0 && peer < n) || (!send && peer == MPI_ANY_SOURCE)))
        return cdn_err(MPI_ERR_RANK, "%s: %s %d is not a rank of the communicator (size %d)", fn,
                       send ? "dest" : "source", peer, n);
    if (!((tag >= 0 && tag <= CDN_TAG_UB) || (!send && tag == MPI_ANY_TAG)))
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is not in 0..MPI_TAG_UB", fn, tag);
    return MPI_SUCCESS;
}

/* A send or receive enqueued on comm's queue: blocking (request NULL) or
 * immediate (its request handed out now, started by the queue). */
static int enqueue_p2p(const char *fn, bool send, void *buf, int count, MPI_Datatype datatype,
                       int peer, int tag, MPI_Comm comm, MPI_Status *status,
                       MPI_Request *request)
{
    int rc;
    struct cdn_comm *c = comm_arg(comm, fn, &rc);
    if (c == NULL)
        return rc;
    struct hq *q = queue_of(c, fn, &rc);
    struct cdn_datatype *dt;
    if (q == NULL || (rc = p2p_args(fn, buf, count, datatype, peer, tag, c, send, &dt)) != 0)
        return rc;
    struct cdn_request *r;
    rc = send ? cdn_p2p_send(buf, count, dt, peer, tag, c, CDN_SEND_STANDARD, true, &r)
              : cdn_p2p_recv(buf, count, dt, peer, tag, c, true, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (request != NULL) {
        cdn_request_retain(r);  /* the queue's, until MPIX_Wait_enqueue takes it back */
        *request = cdn_request_publish(r);
    }
    rc = push(q, Q_START, r, request == NULL, status, fn);
    if (rc != MPI_SUCCESS) {
        if (request != NULL) {
            cdn_request_unpublish(r);  /* (the handle's reference) */
            *request = MPI_REQUEST_NULL;
        }
        cdn_request_release(r);
    }
    return rc;
}

int cdn_MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm)
{
    return enqueue_p2p("MPIX_Send_enqueue", true, (void *)buf, count, datatype, dest, tag, comm,
                       MPI_STATUS_IGNORE, NULL);
}

int cdn_MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Status *status)
{
    return enqueue_p2p("MPIX_Recv_enqueue", false, buf, count, datatype, source, tag, comm,
                       status, NULL);
}

int cdn_MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_Isend_enqueue: request is NULL");
    return enqueue_p2p("MPIX_Isend_enqueue", true, (void *)buf, count, datatype, dest, tag, comm,
                       MPI_STATUS_IGNORE, request);
}

int cdn_MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_Irecv_enqueue: request is NULL");
    return enqueue_p2p("MPIX_Irecv_enqueue", false, buf, count, datatype, source, tag, comm,
                       MPI_STATUS_IGNORE, request);
}

int cdn_enqueue_send(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm)
{
    return enqueue_p2p("MPI_Send", true, (void *)buf, (int)count, datatype, dest, tag, comm,
                       MPI_STATUS_IGNORE, NULL);
}

int cdn_enqueue_recv(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                     MPI_Comm comm, MPI_Status *status)
{
    return enqueue_p2p("MPI_Recv", false, buf, (int)count, datatype, source, tag, comm, status,
                       NULL);
}

/* The queue an enqueued request belongs to (its handle's request was made
 * by an immediate enqueue call, so its communicator has one). */
static int wait_one(const char *fn, MPI_Request *request, MPI_Status *status)
{
    struct cdn_request *r = cdn_request_get(*request);
    if (r == NULL || r->comm == NULL || !cdn_enqueue_comm(r->comm) ||
        (r->kind != CDN_REQ_SEND && r->kind != CDN_REQ_RECV) || !r->persistent)
        return cdn_err(MPI_ERR_REQUEST, "%s: 0x%x is not a request of MPIX_Isend_enqueue or "
                       "MPIX_Irecv_enqueue", fn, (unsigned)*request);
    int rc = push(r->comm->stream->queue, Q_WAIT, r, true, status, fn);
    if (rc == MPI_SUCCESS)
        *request = MPI_REQUEST_NULL;
    return rc;
}

int cdn_MPIX_Wait_enqueue(MPI_Request *request, MPI_Status *status)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_Wait_enqueue: request is NULL");
    return wait_one("MPIX_Wait_enqueue", request, status);
}

int cdn_MPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[],
                             MPI_Status array_of_statuses[])
{
    if (count < 0 || (count > 0 && array_of_requests == NULL))
        return cdn_err(MPI_ERR_ARG, "MPIX_Waitall_enqueue: %s", count < 0
                       ? "count is negative" : "array_of_requests is NULL");
    for (int i = 0; i < count; i++) {
        MPI_Status *st = array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                                   : &array_of_statuses[i];
        int rc = wait_one("MPIX_Waitall_enqueue", &array_of_requests[i], st);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int cdn_MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    const char *fn = "MPIX_Allreduce_enqueue";
    int rc;
    struct cdn_comm *c = comm_arg(comm, fn, &rc);
    if (c == NULL)
        return rc;
    struct hq *q = queue_of(c, fn, &rc);
    if (q == NULL)
        return rc;
    /* made now as MPI_Allreduce_init would (the collectives' order is the
     * order of these calls), started by the queue */
    MPI_Request h;
    rc = cdn_MPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL, &h);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_request *r = cdn_request_get(h);
    cdn_request_retain(r);
    cdn_request_unpublish(r);  /* the queue's alone */
    rc = push(q, Q_START, r, true, MPI_STATUS_IGNORE, fn);
    if (rc != MPI_SUCCESS)
        cdn_request_release(r);
    return rc;
}

static bool queue_idle(void *arg)
{
    return cdn_enqueue_idle(arg);
}

int cdn_enqueue_synchronize(struct cdn_stream *s)
{
    struct hq *q = s->queue;
    if (q == NULL)
        return MPI_SUCCESS;
    if (q->off != NULL) {
        int e = q->off->synchronize(q->dev);
        if (e != 0)
            return cdn_err(MPI_ERR_OTHER, "MPIX_Stream_synchronize: synchronizing the %s "
                           "failed: %s", q->off->type, q->off->error_text(e));
    }
    cdn_progress_wait_until(queue_idle, s);
    return atomic_exchange(&q->err, MPI_SUCCESS);
}
