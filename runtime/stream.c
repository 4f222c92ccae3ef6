/*
 * MPIX streams (stream.h): handles, and which progress context each owns.
 */
#include "runtime/stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

static struct cdn_handle_table stream_table = CDN_HANDLE_TABLE_INIT(CDN_OBJ_STREAM);
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct cdn_stream *) owner[64];  /* by context (CADENCE_PROGRESS_CONTEXTS <= 64) */

bool cdn_stream_owns(int k)
{
    return k > 0 && k < 64 && atomic_load_explicit(&owner[k], memory_order_relaxed) != NULL;
}

int cdn_stream_create(struct cdn_stream **out, const char *caller)
{
    struct cdn_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a stream", caller);
    int n = cdn_rt.pctx_count, k = -1;
    pthread_mutex_lock(&own_lock);
    for (int i = n - 1; i >= 1 && k < 0; i--)
        if (atomic_load_explicit(&owner[i], memory_order_relaxed) == NULL)
            k = i;
    if (k > 0)
        atomic_store_explicit(&owner[k], s, memory_order_relaxed);
    pthread_mutex_unlock(&own_lock);
    if (k < 0) {
        free(s);
        return cdn_err(MPI_ERR_OTHER, "%s: no progress context is free for a stream: the %d "
                       "stream%s of this process own all %d there are besides context 0 "
                       "(CADENCE_PROGRESS_CONTEXTS=%d); free a stream or raise the variable "
                       "(at most 64)", caller, n - 1, n - 1 == 1 ? "" : "s", n - 1, n);
    }
    s->pctx = k;
    atomic_init(&s->refs, 1);
    s->handle = cdn_handle_alloc(&stream_table, s);
    if (s->handle == 0) {
        atomic_store(&owner[k], NULL);
        free(s);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of stream handles", caller);
    }
    *out = s;
    return MPI_SUCCESS;
}

struct cdn_stream *cdn_stream_get(MPIX_Stream handle)
{
    return cdn_handle_get_typed(&stream_table, CDN_OBJ_STREAM, handle);
}

void cdn_stream_retain(struct cdn_stream *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void cdn_stream_release(struct cdn_stream *s)
{
    if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_lock(&own_lock);
    atomic_store_explicit(&owner[s->pctx], NULL, memory_order_relaxed);
    pthread_mutex_unlock(&own_lock);
    if (s->queue != NULL)
        s->queue_free(s->queue);
    free(s);
}

int cdn_stream_free(struct cdn_stream *s, const char *caller)
{
    int refs = atomic_load(&s->refs);
    if (refs > 1)
        return cdn_err(MPI_ERR_OTHER, "%s: stream 0x%x is attached to %d communicator%s still; "
                       "free %s first (MPI_Comm_free)", caller, (unsigned)s->handle, refs - 1,
                       refs - 1 == 1 ? "" : "s", refs - 1 == 1 ? "it" : "them");
    cdn_handle_free(&stream_table, s->handle);
    cdn_stream_release(s);
    return MPI_SUCCESS;
}
