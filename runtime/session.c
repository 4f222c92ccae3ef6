/*
 * Session objects and their handle table (see session.h).  The table is
 * static and lives across runtime bring-ups, since sessions are made before
 * the runtime exists.
 */
#include "runtime/session.h"

#include <stdlib.h>

#include "runtime/comm.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/info.h"

static struct cdn_handle_table sessions = CDN_HANDLE_TABLE_INIT(CDN_OBJ_SESSION);

struct cdn_session *cdn_session_get(MPI_Session handle)
{
    return cdn_handle_get(&sessions, handle);
}

int cdn_session_publish(struct cdn_session *s, MPI_Session *handle, const char *caller)
{
    atomic_init(&s->refs, 1);
    s->handle = cdn_handle_alloc(&sessions, s);
    if (s->handle == 0)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of session handles", caller);
    *handle = s->handle;
    return MPI_SUCCESS;
}

void cdn_session_unpublish(struct cdn_session *s)
{
    cdn_handle_free(&sessions, s->handle);
    cdn_session_release(s);
}

void cdn_session_retain(struct cdn_session *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void cdn_session_release(struct cdn_session *s)
{
    if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    struct cdn_errhandler *eh = atomic_exchange(&s->errh, NULL);
    if (eh != NULL)
        cdn_errh_release(eh);
    cdn_info_destroy(s->info);
    cdn_bsend_owner_free(&s->bsend);
    free(s);
}

struct cdn_errhandler *cdn_session_errh(struct cdn_session *s)
{
    return atomic_load_explicit(&s->errh, memory_order_acquire);
}

void cdn_session_set_errh(struct cdn_session *s, struct cdn_errhandler *eh)
{
    cdn_errh_store(&s->errh, eh);
}
