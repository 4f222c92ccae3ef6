/*
 * Error handlers and raising errors on them.
 *
 * Every error an MPI call returns passes through cdn_errh_invoke: the
 * generated entry points call one of the cdn_err_raise_* functions with the
 * object the call was made on.  A call attached to no object, or made while
 * MPI is not initialised, goes to MPI_COMM_SELF's handler or to the initial
 * handler (MPI_ERRORS_ARE_FATAL unless CADENCE_INITIAL_ERRHANDLER says
 * otherwise).  Files default to MPI_ERRORS_RETURN, as MPI specifies.
 */
#include "runtime/errhandler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"
#include "runtime/session.h"
#include "runtime/win.h"

/* Predefined handlers; their references are never counted down to zero. */
static struct cdn_errhandler predefined[4] = {
    {.handle = MPI_ERRORS_ARE_FATAL, .kind = CDN_ERRH_FATAL},
    {.handle = MPI_ERRORS_RETURN, .kind = CDN_ERRH_RETURN},
    {.handle = 0x54000002, .kind = CDN_ERRH_FATAL},  /* MPICH's C++ throw handler */
    {.handle = MPI_ERRORS_ABORT, .kind = CDN_ERRH_ABORT},
};

struct cdn_errhandler *cdn_errh_get(MPI_Errhandler handle)
{
    if (CDN_HANDLE_TYPE(handle) != CDN_OBJ_ERRHANDLER)
        return NULL;
    if (CDN_HANDLE_KIND(handle) == CDN_HK_BUILTIN) {
        uint32_t i = CDN_HANDLE_INDEX(handle);
        return (i < 4 && i != 2) ? &predefined[i] : NULL;
    }
    return cdn_handle_get(&cdn_rt.errhandlers, handle);
}

int cdn_errh_create(int objtype, void (*fn)(void), MPI_Errhandler *handle, const char *caller)
{
    if (fn == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: the error handler function is NULL", caller);
    if (handle == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: errhandler (the output argument) is NULL", caller);
    struct cdn_errhandler *eh = calloc(1, sizeof *eh);
    if (eh == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    eh->kind = CDN_ERRH_USER;
    eh->objtype = objtype;
    eh->fn = fn;
    atomic_init(&eh->refs, 1);
    eh->handle = cdn_handle_alloc(&cdn_rt.errhandlers, eh);
    if (eh->handle == 0) {
        free(eh);
        return cdn_err(MPI_ERR_NO_MEM, "%s: no error handler handles left", caller);
    }
    *handle = eh->handle;
    return MPI_SUCCESS;
}

int cdn_errh_arg(MPI_Errhandler handle, int objtype, struct cdn_errhandler **eh,
                 const char *caller)
{
    *eh = cdn_errh_get(handle);
    if (*eh == NULL)
        return cdn_err(MPI_ERR_ERRHANDLER, "%s: 0x%x is not a valid error handler", caller,
                       (unsigned)handle);
    if ((*eh)->kind == CDN_ERRH_USER && (*eh)->objtype != objtype)
        return cdn_err(MPI_ERR_ERRHANDLER, "%s: error handler 0x%x was created for another kind "
                       "of object", caller, (unsigned)handle);
    return MPI_SUCCESS;
}

int cdn_errh_hand_out(struct cdn_errhandler *eh, MPI_Errhandler *out, const char *caller)
{
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: errhandler is NULL", caller);
    cdn_errh_retain(eh);  /* the caller owns a new reference (frees it with Errhandler_free) */
    *out = eh->handle;
    return MPI_SUCCESS;
}

void cdn_errh_retain(struct cdn_errhandler *eh)
{
    if (eh->kind == CDN_ERRH_USER)
        atomic_fetch_add_explicit(&eh->refs, 1, memory_order_relaxed);
}

void cdn_errh_store(_Atomic(struct cdn_errhandler *) *slot, struct cdn_errhandler *eh)
{
    cdn_errh_retain(eh);
    struct cdn_errhandler *old = atomic_exchange(slot, eh);
    if (old != NULL)
        cdn_errh_release(old);
}

/* The handle stays valid while anything uses the handler, so
 * MPI_Comm_get_errhandler can hand it out again after MPI_Errhandler_free. */
void cdn_errh_release(struct cdn_errhandler *eh)
{
    if (eh->kind == CDN_ERRH_USER && atomic_fetch_sub(&eh->refs, 1) == 1) {
        cdn_handle_free(&cdn_rt.errhandlers, eh->handle);
        free(eh);
    }
}

int cdn_errh_free(MPI_Errhandler *handle)
{
    if (handle == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Errhandler_free: errhandler is NULL");
    struct cdn_errhandler *eh = cdn_errh_get(*handle);
    if (eh == NULL)
        return cdn_err(MPI_ERR_ERRHANDLER, "MPI_Errhandler_free: 0x%x is not a valid error "
                       "handler", (unsigned)*handle);
    if (eh->kind != CDN_ERRH_USER) {
        /* MPI-4.1 allows freeing predefined handlers; it has no effect. */
        *handle = MPI_ERRHANDLER_NULL;
        return MPI_SUCCESS;
    }
    *handle = MPI_ERRHANDLER_NULL;
    cdn_errh_release(eh);
    return MPI_SUCCESS;
}

void cdn_errh_init_initial(void)
{
    const char *v = cdn_param_str("CADENCE_INITIAL_ERRHANDLER");
    struct cdn_errhandler *eh = &predefined[0];
    if (v != NULL) {
        if (strcmp(v, "return") == 0 || strcmp(v, "mpi_errors_return") == 0)
            eh = &predefined[1];
        else if (strcmp(v, "abort") == 0 || strcmp(v, "mpi_errors_abort") == 0)
            eh = &predefined[3];
        else if (strcmp(v, "fatal") != 0 && strcmp(v, "mpi_errors_are_fatal") != 0)
            fprintf(stderr, "Cadence MPI: CADENCE_INITIAL_ERRHANDLER=%s is not one of fatal, "
                    "abort, return; using fatal\n", v);
    }
    cdn_rt.initial_errh = eh;
}

/* The initial handler, read from the environment on first use. */
static struct cdn_errhandler *initial_errh(void)
{
    if (cdn_rt.initial_errh == NULL)
        cdn_errh_init_initial();
    return cdn_rt.initial_errh;
}

struct cdn_errhandler *cdn_errh_default(void)
{
    struct cdn_comm *self = cdn_comm_get(MPI_COMM_SELF);
    return self != NULL ? cdn_comm_errh(self) : initial_errh();
}

int cdn_errh_invoke(struct cdn_errhandler *eh, int objtype, void *obj, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    switch (eh->kind) {
    case CDN_ERRH_RETURN:
        return code;
    case CDN_ERRH_USER:
        if (eh->objtype == objtype) {
            ((void (*)(void *, int *, ...))eh->fn)(obj, &code);
            return code;
        }
        break;  /* a handler for another object kind: treat as fatal */
    case CDN_ERRH_FATAL:
    case CDN_ERRH_ABORT:
        break;
    }
    if (cdn_err_string(code, msg) != 0)
        snprintf(msg, sizeof msg, "error code %d", code);
    int cls = cdn_err_class_of(code);
    cdn_rt_abort(cls > 0 && cls < 256 ? cls : 1, "Cadence MPI: fatal error on rank %d: %s",
                 cdn_rt.world_rank, msg);
}

static int raise_default(int objtype, void *obj, int code)
{
    return cdn_errh_invoke(cdn_errh_default(), objtype, obj, code);
}

/* An invalid communicator argument has no handler of its own; as in MPICH,
 * the error goes to MPI_COMM_WORLD's, where programs set MPI_ERRORS_RETURN. */
int cdn_err_raise_comm(MPI_Comm comm, int code)
{
    struct cdn_comm *c = cdn_comm_get(comm);
    if (c == NULL) {
        c = cdn_comm_get(MPI_COMM_WORLD);
        if (c == NULL)
            return cdn_err_raise_self(code);
        comm = MPI_COMM_WORLD;
    }
    return cdn_errh_invoke(cdn_comm_errh(c), CDN_OBJ_COMM, &comm, code);
}

int cdn_err_raise_self(int code)
{
    MPI_Comm self = MPI_COMM_SELF;
    return raise_default(CDN_OBJ_COMM, &self, code);
}

/* A window's own handler; an invalid window has none, so (as an invalid
 * communicator) its error goes to MPI_COMM_WORLD's, as in MPICH. */
int cdn_err_raise_win(MPI_Win win, int code)
{
    struct cdn_win *w = cdn_win_get(win);
    if (w == NULL)
        return cdn_err_raise_comm(MPI_COMM_NULL, code);
    return cdn_errh_invoke(cdn_win_errh(w), CDN_OBJ_WIN, &win, code);
}

/* A session's own handler; an invalid session (or none) raises on the
 * default handler, MPI_ERRORS_ARE_FATAL unless configured otherwise. */
int cdn_err_raise_session(MPI_Session session, int code)
{
    struct cdn_session *s = cdn_session_get(session);
    if (s == NULL)
        return cdn_errh_invoke(cdn_api_ready() ? cdn_errh_default() : initial_errh(),
                               CDN_OBJ_SESSION, &session, code);
    return cdn_errh_invoke(cdn_session_errh(s), CDN_OBJ_SESSION, &session, code);
}

/* No file can be opened yet, so every file error is on MPI_FILE_NULL, whose
 * handler is MPI_ERRORS_RETURN until MPI_File_set_errhandler changes it
 * (MPI-4.1 14.7). */
static _Atomic(struct cdn_errhandler *) file_null_errh = &predefined[1];

struct cdn_errhandler *cdn_file_null_errh(void)
{
    return atomic_load(&file_null_errh);
}

void cdn_file_null_set_errh(struct cdn_errhandler *eh)
{
    cdn_errh_store(&file_null_errh, eh);
}

int cdn_err_raise_file(MPI_File file, int code)
{
    return cdn_errh_invoke(cdn_file_null_errh(), CDN_OBJ_FILE, &file, code);
}

int cdn_err_not_ready(const char *fname)
{
    int state = atomic_load(&cdn_rt.state);
    int code = cdn_err(MPI_ERR_OTHER, "%s was called %s; only the functions MPI lists as callable "
                       "at any time may be", fname,
                       state == CDN_STATE_FINALIZED ? "after MPI_Finalize" : "before MPI_Init");
    MPI_Comm self = MPI_COMM_SELF;
    return cdn_errh_invoke(initial_errh(), CDN_OBJ_COMM, &self, code);
}
