/*
 * Error handlers: the predefined three, user handlers for each object kind,
 * and raising an error on the handler of the object a call was made on.
 */
#ifndef CDN_ERRHANDLER_H
#define CDN_ERRHANDLER_H

#include <mpi.h>
#include <stdatomic.h>

enum cdn_errh_kind {
    CDN_ERRH_FATAL,   /* MPI_ERRORS_ARE_FATAL: print, end the whole job */
    CDN_ERRH_RETURN,  /* MPI_ERRORS_RETURN: hand the code back */
    CDN_ERRH_ABORT,   /* MPI_ERRORS_ABORT: print, abort the object's processes */
    CDN_ERRH_USER,    /* a function from MPI_*_create_errhandler */
};

struct cdn_errhandler {
    MPI_Errhandler handle;
    enum cdn_errh_kind kind;
    int objtype;             /* for user handlers: CDN_OBJ_COMM, _WIN, _FILE or _SESSION */
    void (*fn)(void);        /* the user function, called as (handle *, int *) */
    atomic_int refs;         /* the user's handle plus every object using it */
};

/* The handler behind a handle (predefined or user), or NULL if invalid. */
struct cdn_errhandler *cdn_errh_get(MPI_Errhandler handle);
int cdn_errh_create(int objtype, void (*fn)(void), MPI_Errhandler *handle, const char *caller);
/* An error handler argument usable on objects of type objtype (a
 * predefined one, or a user one created for that type). */
int cdn_errh_arg(MPI_Errhandler handle, int objtype, struct cdn_errhandler **eh,
                 const char *caller);
/* MPI_*_get_errhandler: *out gets eh's handle with a new reference. */
int cdn_errh_hand_out(struct cdn_errhandler *eh, MPI_Errhandler *out, const char *caller);
void cdn_errh_retain(struct cdn_errhandler *eh);
/* Put eh (taking a reference) in an object's handler slot and release the
 * handler it replaces (the slot may be empty). */
void cdn_errh_store(_Atomic(struct cdn_errhandler *) *slot, struct cdn_errhandler *eh);
void cdn_errh_release(struct cdn_errhandler *eh);
/* MPI_Errhandler_free: forget the user's handle, release its reference. */
int cdn_errh_free(MPI_Errhandler *handle);
/* The handler for errors attached to no live object (MPI-4.1 9.3). */
struct cdn_errhandler *cdn_errh_default(void);
/* Run a handler for an error on the object *obj of type objtype. */
int cdn_errh_invoke(struct cdn_errhandler *eh, int objtype, void *obj, int code);
/* Set the handler of MPI_Init-time errors from CADENCE_INITIAL_ERRHANDLER. */
void cdn_errh_init_initial(void);

/* MPI_FILE_NULL's handler (files do not exist yet). */
struct cdn_errhandler *cdn_file_null_errh(void);
void cdn_file_null_set_errh(struct cdn_errhandler *eh);

/* Raise `code` on the handler of an object, as the generated entry points do. */
int cdn_err_raise_comm(MPI_Comm comm, int code);
int cdn_err_raise_win(MPI_Win win, int code);
int cdn_err_raise_file(MPI_File file, int code);
int cdn_err_raise_session(MPI_Session session, int code);
int cdn_err_raise_self(int code);
/* A call made before MPI_Init or after MPI_Finalize: raise it and return the code. */
int cdn_err_not_ready(const char *fname);

#endif
