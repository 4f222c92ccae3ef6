/*
 * Generalized requests (MPI_Grequest_start, MPIX_Grequest_start and
 * MPICH's class interface): a request the user completes, with the
 * standard's query, free and cancel callbacks, and MPICH's extension of a
 * poll function the engine calls from whichever thread progresses -- the
 * progress thread included, so a polled request completes while the user
 * computes -- and a wait function MPI_Wait/MPI_Waitall hand the requests
 * to when they all share it.  docs/tasks.md.
 */
#ifndef CDN_GREQ_H
#define CDN_GREQ_H

#include <mpi.h>
#include <stdbool.h>

#include "progress/request.h"

struct cdn_greq_fns {
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free;
    MPI_Grequest_cancel_function *cancel;
    MPIX_Grequest_poll_function *poll;   /* NULL: MPI_Grequest_start's */
    MPIX_Grequest_wait_function *wait;
};

/* A new active generalized request (one reference: the user's, once
 * published); its poll function is called from cdn_greq_begin on. */
int cdn_greq_start(const struct cdn_greq_fns *fns, void *extra_state, struct cdn_request **out);
/* Poll it from now on (if it has a poll function): called once the
 * user's handle is stored, since the progress thread may call the poll
 * function at once and the poll function completes the request through
 * that handle. */
void cdn_greq_begin(struct cdn_request *r);
/* An inactive persistent one (MPIX_Grequest_init): each MPI_Start -- or
 * the start of the schedule node that holds it -- begins an instance,
 * polled until MPI_Grequest_complete; as a schedule's node its query
 * function runs at each completion, in the completing thread. */
int cdn_greq_init(const struct cdn_greq_fns *fns, void *extra_state, struct cdn_request **out);
/* MPI_Grequest_complete. */
int cdn_greq_complete(struct cdn_request *r, const char *caller);
/* r is complete: run its query function once, its status and error
 * become the request's (the wait or test that reports it). */
void cdn_greq_settle(struct cdn_request *r);
/* The wait or test that reports r frees it: its free function's error,
 * run once (the request's last release runs it otherwise). */
int cdn_greq_free_fn(struct cdn_request *r);
/* The wait function r shares with the others, or NULL. */
MPIX_Grequest_wait_function *cdn_greq_wait_fn(const struct cdn_request *r);
void *cdn_greq_state(const struct cdn_request *r);

/* Poll the polled generalized requests (cdn_progress_poll, any thread;
 * one thread at a time per request); how many completed. */
int cdn_greq_poll_slow(void);
extern atomic_int cdn_greq_npolled;
static inline int cdn_greq_poll(void)
{
    return atomic_load_explicit(&cdn_greq_npolled, memory_order_relaxed) > 0 ? cdn_greq_poll_slow()
                                                                            : 0;
}

#endif
