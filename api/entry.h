/*
 * What the generated entry points (cdn_api_entry.c) need: the readiness
 * check and the error raising functions.
 */
#ifndef CDN_API_ENTRY_H
#define CDN_API_ENTRY_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>

#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

struct cdn_comm;

/* Bring up the process as an MPI job (a one-process job without a launcher)
 * for the world model (world: MPI_Init) or a session; the first user brings
 * it up (api/start.c). */
int cdn_rt_init(int required, int *provided, bool world, const char *caller);
/* The world model or a session is done; the last user takes it down (for
 * good: MPI cannot be started again). */
int cdn_rt_finalize(bool world);

/* The communicator behind a handle; on an invalid one, NULL with *rc set to
 * an MPI_ERR_COMM code whose message names the caller and the handle. */
struct cdn_comm *cdn_api_comm(MPI_Comm comm, const char *caller, int *rc);

/* MPI_*_get_name / set_name on an object's name (MPI_MAX_OBJECT_NAME
 * bytes) guarded by lock; argname is the user's argument in messages. */
int cdn_api_name_get(pthread_mutex_t *lock, const char *src, char *name, int *resultlen,
                     const char *argname, const char *caller);
int cdn_api_name_set(pthread_mutex_t *lock, char *dst, const char *name, const char *argname,
                     const char *caller);

struct cdn_group;
/* The group behind a handle; on an invalid one, NULL with *rc set to an
 * MPI_ERR_GROUP code naming the caller. */
struct cdn_group *cdn_api_group(MPI_Group group, const char *caller, int *rc);

struct cdn_session;
/* The session behind a handle; on an invalid one, NULL with *rc set to an
 * MPI_ERR_SESSION code naming the caller and the handle. */
struct cdn_session *cdn_api_session(MPI_Session session, const char *caller, int *rc);

struct cdn_datatype;
/* A (buffer, count, datatype) argument triple: a negative count (the
 * message names the buffer when name_count), an invalid or uncommitted
 * type, a NULL buffer with data of a predefined type.  *dt on success. */
int cdn_api_buf(const char *fn, const char *name, bool name_count, const void *buf,
                MPI_Count count, MPI_Datatype type, struct cdn_datatype **dt);

struct cdn_op;
/* The arguments of a local reduction (MPI_Reduce_local, a schedule's
 * MPIX_Schedule_add_mpi_operation): count, datatype, buffers (names: the
 * two buffer arguments' names), op on type. */
int cdn_api_reduce_args(const char *fn, const char *const names[2], const void *inbuf,
                        void *inoutbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                        struct cdn_datatype **dtp, struct cdn_op **opp);

/* CADENCE_STREAM_CHECKS: a call on a stream's communicator claims the
 * stream for the calling thread (cdn_api_stream_enter: 0 not a stream's
 * communicator, -1 claimed -- release with cdn_api_stream_leave -- or an
 * error code: another thread is inside a call on one of its
 * communicators).  api/stream.c. */
extern bool cdn_stream_checks;
int cdn_api_stream_enter(MPI_Comm comm, const char *fn);
void cdn_api_stream_leave(MPI_Comm comm);

struct cdn_request;
/* Errors of the wait/test family (flag reqerrh): the implementation names
 * the failing request, the entry point raises on its communicator's handler
 * (MPI_COMM_SELF's when none was named). */
void cdn_api_request_error(const struct cdn_request *r);
int cdn_err_raise_request(int code);

#endif
