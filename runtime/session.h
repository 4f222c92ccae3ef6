/*
 * MPI-4 sessions: handles on the shared runtime (MPI_Session_init brings it
 * up if nothing else has), each with its own error handler and info, and
 * the process sets they name ("mpi://WORLD", "mpi://SELF").
 */
#ifndef CDN_SESSION_H
#define CDN_SESSION_H

#include <mpi.h>
#include <stdatomic.h>

struct cdn_errhandler;
struct cdn_info;

struct cdn_bsend_pool;

/* A session lives while its handle or a group or communicator derived from
 * it holds a reference (they find its buffered-send buffer through it). */
struct cdn_session {
    MPI_Session handle;
    atomic_int refs;
    struct cdn_bsend_pool *bsend;  /* MPI_Session_attach_buffer's (progress/bsend.c) */
    _Atomic(struct cdn_errhandler *) errh;
    struct cdn_info *info;   /* what the session was started with (may be NULL) */
};

/* The session behind a handle, or NULL. */
struct cdn_session *cdn_session_get(MPI_Session handle);
int cdn_session_publish(struct cdn_session *s, MPI_Session *handle, const char *caller);
/* MPI_Session_finalize: forget the handle, drop its reference. */
void cdn_session_unpublish(struct cdn_session *s);
void cdn_session_retain(struct cdn_session *s);
void cdn_session_release(struct cdn_session *s);  /* NULL is ignored */
struct cdn_errhandler *cdn_session_errh(struct cdn_session *s);
void cdn_session_set_errh(struct cdn_session *s, struct cdn_errhandler *eh);

#endif
