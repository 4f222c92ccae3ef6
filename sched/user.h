/*
 * User-level schedules (MPIX_Schedule, docs/schedules.md): rounds of
 * persistent sub-requests and local reductions, with reset and completion
 * points, repeats, conditions and callbacks, built by the user and
 * compiled at commit onto the DAG engine of sched/sched.h.
 *
 * The api layer (api/schedule.c) turns handles into objects; everything
 * here takes objects and the caller's name for its error messages.  A
 * struct cdn_schedule is what an MPIX_Schedule handle points to.
 */
#ifndef CDN_SCHED_USER_H
#define CDN_SCHED_USER_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

struct cdn_datatype;
struct cdn_op;
struct cdn_request;
struct cdn_schedule;

int cdn_usched_create(struct cdn_schedule **out, const char *caller);
/* The schedule behind a handle still held by the user, or NULL with *rc an
 * MPI_ERR_ARG code naming the caller and the handle. */
struct cdn_schedule *cdn_usched_get(MPIX_Schedule handle, const char *caller, int *rc);
/* The user lets go of the handle (MPIX_Schedule_free). */
void cdn_usched_free(struct cdn_schedule *us);

int cdn_usched_add_request(struct cdn_schedule *us, struct cdn_request *r, MPI_Request handle,
                           const char *caller);
int cdn_usched_add_reduce(struct cdn_schedule *us, struct cdn_op *op, const void *in, void *inout,
                          int len, struct cdn_datatype *dt, const char *caller);
int cdn_usched_round(struct cdn_schedule *us, const char *caller);
int cdn_usched_mark_reset(struct cdn_schedule *us, const char *caller);
int cdn_usched_mark_completion(struct cdn_schedule *us, const char *caller);
int cdn_usched_repeat(struct cdn_schedule *us, int nrounds, int count,
                      MPIX_Schedule_predicate_function *pred, void *state, const char *caller);
int cdn_usched_condition(struct cdn_schedule *us, int scope,
                         MPIX_Schedule_predicate_function *pred, void *state, const char *caller);
int cdn_usched_callback(struct cdn_schedule *us, int scope, MPIX_Schedule_callback_function *fn,
                        void *state, const char *caller);
int cdn_usched_set_auto_free(struct cdn_schedule *us, bool on, const char *caller);
/* Compile onto the DAG engine; *out gets the schedule's persistent request
 * (the caller publishes it). */
int cdn_usched_commit(struct cdn_schedule *us, struct cdn_request **out, const char *caller);

/* Is r a committed schedule's request? */
bool cdn_usched_is_request(const struct cdn_request *r);
/* MPI_Request_free of a schedule's request: the user's handle goes; the
 * part after the completion point runs (once, now or when the running
 * instance completes), then the sub-requests are freed or given back. */
void cdn_usched_request_free(struct cdn_request *r);
/* Describe the schedule r is a sub-request of, for an error message
 * ("schedule 0x... (request 0x...)"), into buf; false if r is in none. */
bool cdn_usched_owner_name(const struct cdn_request *r, char *buf, size_t len);
/* MPI_Finalize: free every schedule request the user did not (running
 * its completion part), wait for those parts, free the schedules. */
void cdn_usched_finalize(void);

#endif
