/*
 * Bindings of MPIX streams (runtime/stream.h, docs/streams.md):
 * MPIX_Stream_create/free, MPIX_Stream_comm_create, MPIX_Comm_get_stream,
 * MPIX_Stream_progress, and MPIX_Info_set_hex, how a binary value (an
 * offload stream's handle) travels in an info object.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/enqueue.h"
#include "api/entry.h"
#include "cdn_api_impl.h"
#include "coll/comm_create.h"
#include "progress/engine.h"
#include "progress/p2p.h"
#include "progress/uthread.h"
#include "runtime/comm.h"
#include "runtime/info.h"
#include "runtime/stream.h"

static struct cdn_stream *stream_arg(MPIX_Stream h, const char *fn, int *rc)
{
    struct cdn_stream *s = cdn_stream_get(h);
    if (s == NULL)
        *rc = cdn_err(MPI_ERR_ARG, "%s: 0x%x is not a stream%s", fn, (unsigned)h,
                      h == MPIX_STREAM_NULL ? " (it is MPIX_STREAM_NULL)" : "");
    return s;
}

int cdn_MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream)
{
    const char *fn = "MPIX_Stream_create";
    if (stream == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: stream is NULL", fn);
    int rc = MPI_SUCCESS;
    struct cdn_info *in = cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_stream *s;
    rc = cdn_stream_create(&s, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    char type[MPI_MAX_INFO_VAL];
    if (in != NULL && cdn_info_lookup(in, "type", type, sizeof type, NULL) &&
        (rc = cdn_enqueue_attach(s, in, type, fn)) != MPI_SUCCESS) {
        cdn_stream_free(s, fn);
        return rc;
    }
    *stream = s->handle;
    return MPI_SUCCESS;
}

static bool has_progress_thread(MPIX_Stream stream);

int cdn_MPIX_Stream_free(MPIX_Stream *stream)
{
    const char *fn = "MPIX_Stream_free";
    if (stream == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: stream is NULL", fn);
    int rc = MPI_SUCCESS;
    struct cdn_stream *s = stream_arg(*stream, fn, &rc);
    if (s == NULL)
        return rc;
    if (!cdn_enqueue_idle(s))
        return cdn_err(MPI_ERR_OTHER, "%s: stream 0x%x still has enqueued operations; "
                       "MPIX_Stream_synchronize waits for them", fn, (unsigned)s->handle);
    if (has_progress_thread(*stream))
        return cdn_err(MPI_ERR_OTHER, "%s: stream 0x%x has a progress thread; "
                       "MPIX_Stop_progress_thread first", fn, (unsigned)s->handle);
    rc = cdn_stream_free(s, fn);
    if (rc == MPI_SUCCESS)
        *stream = MPIX_STREAM_NULL;
    return rc;
}

/* The communicator argument of a stream communicator's creation. */
static struct cdn_comm *parent_arg(MPI_Comm comm, MPI_Comm *newcomm, const char *fn, int *rc)
{
    *rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, fn, rc);
    if (c == NULL)
        return NULL;
    if (newcomm == NULL)
        *rc = cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", fn);
    else if (c->inter)
        *rc = cdn_err(MPI_ERR_COMM, "%s: the communicator is an intercommunicator; stream "
                      "communicators are made from intracommunicators", fn);
    return *rc == MPI_SUCCESS ? c : NULL;
}

int cdn_MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm)
{
    const char *fn = "MPIX_Stream_comm_create";
    int rc;
    struct cdn_comm *c = parent_arg(comm, newcomm, fn, &rc);
    if (c == NULL)
        return rc;
    struct cdn_stream *s = NULL;
    if (stream != MPIX_STREAM_NULL && (s = stream_arg(stream, fn, &rc)) == NULL) {
        /* every process takes part all the same: the others do not know
         * this one's argument is bad */
        struct cdn_comm *nc;
        if (cdn_comm_dup(c, NULL, false, &nc, fn) == MPI_SUCCESS)
            cdn_comm_release(nc);
        return rc;
    }
    *newcomm = MPI_COMM_NULL;
    struct cdn_comm *nc;
    rc = cdn_comm_dup(c, NULL, false, &nc, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    /* local: each process may attach its own stream, or none -- then it is
     * a plain duplicate, in context 0 if its parent used a stream's */
    if (nc->stream != NULL) {
        cdn_stream_release(nc->stream);
        nc->stream = NULL;
        nc->pctx = 0;
    }
    if (s != NULL) {
        cdn_stream_retain(s);
        nc->stream = s;
        nc->pctx = s->pctx;
    }
    return cdn_comm_publish(nc, newcomm, fn);
}

int cdn_MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream)
{
    const char *fn = "MPIX_Comm_get_stream";
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, fn, &rc);
    if (c == NULL)
        return rc;
    if (stream == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: stream is NULL", fn);
    if (c->rank_nstreams != NULL) {  /* multiplexed: one of its streams */
        if (idx < 0 || idx >= c->nstreams)
            return cdn_err(MPI_ERR_ARG, "%s: index %d is not one of this process's %d streams "
                           "on the communicator", fn, idx, c->nstreams);
        *stream = c->streams[idx] != NULL ? c->streams[idx]->handle : MPIX_STREAM_NULL;
        return MPI_SUCCESS;
    }
    if (idx != 0)
        return cdn_err(MPI_ERR_ARG, "%s: index %d: a communicator that is not multiplexed has "
                       "one local stream, index 0", fn, idx);
    *stream = c->stream != NULL ? c->stream->handle : MPIX_STREAM_NULL;
    return MPI_SUCCESS;
}

int cdn_MPIX_Stream_progress(MPIX_Stream stream)
{
    if (stream == MPIX_STREAM_NULL) {
        cdn_progress_poll();  /* every context (the implicit ones first) */
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    struct cdn_stream *s = stream_arg(stream, "MPIX_Stream_progress", &rc);
    if (s == NULL)
        return rc;
    /* The stream's context first.  Then the others: a message travels
     * through its sender's context (docs/streams.md), so one from a rank
     * that attached another stream, or none, comes in through that one. */
    int home = cdn_progress_home;
    cdn_progress_home = s->pctx;
    cdn_progress_poll();
    cdn_progress_home = home;
    return MPI_SUCCESS;
}

int cdn_MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size)
{
    const char *fn = "MPIX_Info_set_hex";
    if (key == NULL || (value == NULL && value_size > 0) || value_size < 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s", fn, key == NULL ? "key is NULL"
                       : value_size < 0 ? "value_size is negative" : "value is NULL");
    if (2 * (long)value_size >= MPI_MAX_INFO_VAL)
        return cdn_err(MPI_ERR_INFO_VALUE, "%s: %d bytes make %d hexadecimal digits, more than "
                       "an info value holds (MPI_MAX_INFO_VAL %d)", fn, value_size,
                       2 * value_size, MPI_MAX_INFO_VAL - 1);
    char hex[MPI_MAX_INFO_VAL];
    const unsigned char *b = value;
    for (int i = 0; i < value_size; i++)  /* the bytes in memory order, two digits each */
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    hex[2 * value_size] = '\0';
    return cdn_MPI_Info_set(info, key, hex);  /* (it checks info and key) */
}

/* ---- multiplexed stream communicators ---- */

int cdn_MPIX_Stream_comm_create_multiplex(MPI_Comm comm, int count, MPIX_Stream array_of_streams[],
                                          MPI_Comm *newcomm)
{
    const char *fn = "MPIX_Stream_comm_create_multiplex";
    int rc;
    struct cdn_comm *c = parent_arg(comm, newcomm, fn, &rc);
    if (c == NULL)
        return rc;
    /* A bad argument is this process's: it still takes part, attaching none. */
    int bad = MPI_SUCCESS;
    if (count < 0 || count > CDN_STREAM_MAX || (count > 0 && array_of_streams == NULL))
        bad = cdn_err(MPI_ERR_ARG, "%s: count %d is not in 0..%d%s", fn, count, CDN_STREAM_MAX,
                      count > 0 && array_of_streams == NULL ? " (array_of_streams is NULL)" : "");
    for (int i = 0; bad == MPI_SUCCESS && i < count; i++)
        if (array_of_streams[i] != MPIX_STREAM_NULL && cdn_stream_get(array_of_streams[i]) == NULL)
            bad = cdn_err(MPI_ERR_ARG, "%s: array_of_streams[%d] 0x%x is not a stream", fn, i,
                          (unsigned)array_of_streams[i]);
    int mine = bad == MPI_SUCCESS ? count : 0;
    int *counts = malloc(sizeof *counts * (size_t)c->size);
    struct cdn_stream **ss = calloc(mine > 0 ? (size_t)mine : 1, sizeof *ss);
    if (counts == NULL || ss == NULL) {
        free(counts);
        free(ss);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    /* every rank's count: a send checks its destination stream index */
    rc = cdn_MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, comm);
    struct cdn_comm *nc = NULL;
    if (rc == MPI_SUCCESS)
        rc = cdn_comm_dup(c, NULL, false, &nc, fn);
    if (rc != MPI_SUCCESS || bad != MPI_SUCCESS) {
        free(counts);
        free(ss);
        if (nc != NULL)
            cdn_comm_release(nc);
        return bad != MPI_SUCCESS ? bad : rc;
    }
    if (nc->stream != NULL) {  /* a stream communicator's dup: its stream is not one of these */
        cdn_stream_release(nc->stream);
        nc->stream = NULL;
    }
    for (int i = 0; i < mine; i++) {
        ss[i] = cdn_stream_get(array_of_streams[i]);  /* NULL for MPIX_STREAM_NULL */
        if (ss[i] != NULL)
            cdn_stream_retain(ss[i]);
    }
    nc->nstreams = mine;
    nc->streams = ss;
    nc->rank_nstreams = counts;
    nc->pctx = mine > 0 && ss[0] != NULL ? ss[0]->pctx : 0;  /* (its ordinary traffic) */
    *newcomm = MPI_COMM_NULL;
    return cdn_comm_publish(nc, newcomm, fn);
}

/* The arguments of a stream send or receive.  *pctx: the local stream's
 * progress context. */
static int stream_args(const char *fn, const void *buf, int count, MPI_Datatype datatype,
                       int peer, int tag, MPI_Comm comm, int src_idx, int dst_idx, bool send,
                       struct cdn_comm **c, struct cdn_datatype **dt, int *pctx)
{
    int rc = MPI_SUCCESS;
    *c = cdn_api_comm(comm, fn, &rc);
    if (*c == NULL)
        return rc;
    if ((*c)->rank_nstreams == NULL)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is not a multiplexed stream "
                       "communicator (MPIX_Stream_comm_create_multiplex)", fn);
    rc = cdn_api_buf(fn, "buf", false, buf, count, datatype, dt);
    if (rc != MPI_SUCCESS)
        return rc;
    int n = (*c)->size;
    if (!(peer == MPI_PROC_NULL || (peer >= 0 && peer < n) || (!send && peer == MPI_ANY_SOURCE)))
        return cdn_err(MPI_ERR_RANK, "%s: %s %d is not a rank of the communicator (size %d)",
                       fn, send ? "dest" : "source", peer, n);
    if (!((tag >= 0 && tag <= CDN_STREAM_TAG_UB) || (!send && tag == MPI_ANY_TAG)))
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is not in 0..%d (on a multiplexed stream "
                       "communicator the tag shares its bits with the stream index)", fn, tag,
                       CDN_STREAM_TAG_UB);
    int local = send ? src_idx : dst_idx, remote = send ? dst_idx : src_idx;
    const char *lname = send ? "source_stream_index" : "dest_stream_index";
    const char *rname = send ? "dest_stream_index" : "source_stream_index";
    if (local < 0 || local >= (*c)->nstreams)
        return cdn_err(MPI_ERR_ARG, "%s: %s %d is not one of this process's %d streams", fn,
                       lname, local, (*c)->nstreams);
    int rn = peer >= 0 && peer < n ? (*c)->rank_nstreams[peer] : CDN_STREAM_MAX;
    if (!(remote >= 0 && remote < rn) && !(!send && remote == -1) && peer != MPI_PROC_NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s %d is not one of rank %d's %d streams%s", fn, rname,
                       remote, peer, rn, send ? "" : " nor -1 (any)");
    struct cdn_stream *s = (*c)->streams[local];
    *pctx = s != NULL ? s->pctx : 0;
    return MPI_SUCCESS;
}

/* Make and start the send or receive (send: buf is read only). */
static int stream_start(const char *fn, bool send, void *buf, int count, MPI_Datatype datatype,
                        int peer, int tag, MPI_Comm comm, int src_idx, int dst_idx,
                        struct cdn_request **r)
{
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    int pctx = 0;
    int rc = stream_args(fn, buf, count, datatype, peer, tag, comm, src_idx, dst_idx, send, &c,
                         &dt, &pctx);
    if (rc != MPI_SUCCESS)
        return rc;
    uint32_t ctx = CDN_COMM_CTX_STREAM(c, dst_idx < 0 ? 0 : dst_idx);
    return send ? cdn_p2p_stream_send(buf, count, dt, peer, tag, src_idx, ctx, pctx, c, r)
                : cdn_p2p_stream_recv(buf, count, dt, peer, tag, src_idx, ctx, pctx, c, r);
}

/* A blocking form (request NULL: the request is waited for here, its
 * status reported) or an immediate one. */
static int stream_call(const char *fn, bool send, void *buf, int count, MPI_Datatype datatype,
                       int peer, int tag, MPI_Comm comm, int src_idx, int dst_idx,
                       MPI_Status *status, MPI_Request *request, bool immediate)
{
    if (immediate && request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    struct cdn_request *r;
    int rc = stream_start(fn, send, buf, count, datatype, peer, tag, comm, src_idx, dst_idx, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (immediate) {
        *request = cdn_request_publish(r);
        return MPI_SUCCESS;
    }
    cdn_request_wait(r);
    rc = r->status.MPI_ERROR;
    if (status != MPI_STATUS_IGNORE) {
        int err = status->MPI_ERROR;
        *status = r->status;
        status->MPI_ERROR = err;
    }
    cdn_request_release(r);
    return rc;
}

int cdn_MPIX_Stream_send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, int source_stream_index, int dest_stream_index)
{
    return stream_call("MPIX_Stream_send", true, (void *)buf, count, datatype, dest, tag, comm,
                       source_stream_index, dest_stream_index, MPI_STATUS_IGNORE, NULL, false);
}

int cdn_MPIX_Stream_isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, int source_stream_index, int dest_stream_index,
                          MPI_Request *request)
{
    return stream_call("MPIX_Stream_isend", true, (void *)buf, count, datatype, dest, tag, comm,
                       source_stream_index, dest_stream_index, MPI_STATUS_IGNORE, request, true);
}

int cdn_MPIX_Stream_recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, int source_stream_index, int dest_stream_index,
                         MPI_Status *status)
{
    return stream_call("MPIX_Stream_recv", false, buf, count, datatype, source, tag, comm,
                       source_stream_index, dest_stream_index, status, NULL, false);
}

int cdn_MPIX_Stream_irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, int source_stream_index, int dest_stream_index,
                          MPI_Request *request)
{
    return stream_call("MPIX_Stream_irecv", false, buf, count, datatype, source, tag, comm,
                       source_stream_index, dest_stream_index, MPI_STATUS_IGNORE, request, true);
}

/* ---- CADENCE_STREAM_CHECKS: one thread at a time on a stream ---- */

bool cdn_stream_checks;

int cdn_api_stream_enter(MPI_Comm comm, const char *fn)
{
    struct cdn_comm *c = cdn_comm_lookup(comm);
    if (c == NULL || c->stream == NULL)
        return 0;
    struct cdn_stream *s = c->stream;
    unsigned long me = (unsigned long)pthread_self(), none = 0;
    if (atomic_compare_exchange_strong(&s->user, &none, me) || none == me) {
        s->depth++;
        return -1;
    }
    return cdn_err(MPI_ERR_OTHER, "%s: the communicator's stream 0x%x is in use by another "
                   "thread at the same time; a stream is a serial execution context, so its "
                   "communicators take one thread at a time (CADENCE_STREAM_CHECKS found this)",
                   fn, (unsigned)s->handle);
}

void cdn_api_stream_leave(MPI_Comm comm)
{
    struct cdn_comm *c = cdn_comm_lookup(comm);
    if (c == NULL || c->stream == NULL)  /* (freed by the call: MPI_Comm_free) */
        return;
    if (--c->stream->depth == 0)
        atomic_store(&c->stream->user, 0);
}

int cdn_MPIX_Stream_synchronize(MPIX_Stream stream)
{
    int rc = MPI_SUCCESS;
    struct cdn_stream *s = stream_arg(stream, "MPIX_Stream_synchronize", &rc);
    return s == NULL ? rc : cdn_enqueue_synchronize(s);
}

/* ---- progress threads the application starts (docs/tasks.md) ---- */

enum { STARTED_MAX = 65 };  /* MPIX_STREAM_NULL and every stream */
static pthread_mutex_t started_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    MPIX_Stream stream;
    struct cdn_uthread *t;  /* NULL: Cadence's own progress thread does the job */
} started[STARTED_MAX];
static int nstarted;

static int started_find(MPIX_Stream stream)
{
    for (int i = 0; i < nstarted; i++)
        if (started[i].stream == stream)
            return i;
    return -1;
}

static bool has_progress_thread(MPIX_Stream stream)
{
    pthread_mutex_lock(&started_lock);
    bool has = started_find(stream) >= 0;
    pthread_mutex_unlock(&started_lock);
    return has;
}

int cdn_MPIX_Start_progress_thread(MPIX_Stream stream)
{
    const char *fn = "MPIX_Start_progress_thread";
    int rc = MPI_SUCCESS, ctx = -1;
    if (stream != MPIX_STREAM_NULL) {
        struct cdn_stream *s = stream_arg(stream, fn, &rc);
        if (s == NULL)
            return rc;
        ctx = s->pctx;
    }
    pthread_mutex_lock(&started_lock);
    if (started_find(stream) >= 0) {
        pthread_mutex_unlock(&started_lock);
        return cdn_err(MPI_ERR_OTHER, "%s: %s has a progress thread already", fn,
                       stream == MPIX_STREAM_NULL ? "MPIX_STREAM_NULL" : "the stream");
    }
    struct cdn_uthread *t = NULL;
    /* Cadence's own thread progresses every context already: for the
     * implicit ones a second thread would only compete with it */
    if (stream != MPIX_STREAM_NULL || !cdn_progress_thread_running())
        rc = cdn_uthread_start(ctx, &t, fn);
    if (rc == MPI_SUCCESS) {
        started[nstarted].stream = stream;
        started[nstarted].t = t;
        nstarted++;
    }
    pthread_mutex_unlock(&started_lock);
    return rc;
}

int cdn_MPIX_Stop_progress_thread(MPIX_Stream stream)
{
    const char *fn = "MPIX_Stop_progress_thread";
    pthread_mutex_lock(&started_lock);
    int i = started_find(stream);
    if (i < 0) {
        pthread_mutex_unlock(&started_lock);
        return cdn_err(MPI_ERR_OTHER, "%s: no progress thread was started for %s", fn,
                       stream == MPIX_STREAM_NULL ? "MPIX_STREAM_NULL" : "the stream");
    }
    struct cdn_uthread *t = started[i].t;
    started[i] = started[--nstarted];
    pthread_mutex_unlock(&started_lock);
    if (t != NULL)
        cdn_uthread_stop(t);
    return MPI_SUCCESS;
}

void cdn_stream_progress_threads_stop(void)
{
    pthread_mutex_lock(&started_lock);
    while (nstarted > 0) {
        struct cdn_uthread *t = started[--nstarted].t;
        if (t != NULL)
            cdn_uthread_stop(t);
    }
    pthread_mutex_unlock(&started_lock);
}
