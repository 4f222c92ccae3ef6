/*
 * The runtime object `cdn_rt`: the process's MPI state (init and finalize,
 * sessions, the world, configuration).  Other files own their objects;
 * some still keep process-wide state of their own in file-level variables
 * (the progress engine's `cdn_engine`, among others: docs/architecture.md
 * lists them).
 */
#ifndef CDN_RUNTIME_H
#define CDN_RUNTIME_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "runtime/handle.h"

#define CDN_LIKELY(x) __builtin_expect(!!(x), 1)
#define CDN_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum cdn_state {
    CDN_STATE_UNINIT = 0,     /* before MPI_Init */
    CDN_STATE_READY = 1,      /* between MPI_Init and MPI_Finalize */
    CDN_STATE_FINALIZED = 2,  /* after MPI_Finalize: MPI cannot be started again */
};

struct cdn_errhandler;

struct cdn_runtime {
    atomic_int state;                  /* enum cdn_state */
    pthread_mutex_t init_lock;         /* serialises init and finalize */
    int thread_level;                  /* the level MPI_Init_thread provided */
    pthread_t main_thread;             /* the thread that initialised MPI */
    struct timespec wtime_base;        /* MPI_Wtime counts from here */
    /* the job, from the launcher (runtime/pmix.c) or a one-process job's defaults */
    bool launched;                     /* started by a PMIx server */
    char nspace[256];                  /* the job's PMIx namespace */
    int world_rank, world_size;        /* this process in MPI_COMM_WORLD */
    int universe_size;
    int appnum;                        /* which application of an MPMD job */
    int local_rank, local_size;        /* among the job's processes on this node */
    int *local_peers;                  /* their world ranks, ascending (local_size) */
    int node_id, num_nodes;            /* node_id -1 when the launcher does not say */
    int pctx_count;                    /* progress contexts (CADENCE_PROGRESS_CONTEXTS,
                                        * set by the engine at init; 1 before) */
    struct cdn_errhandler *initial_errh;  /* raised on outside init..finalize */
    /* The runtime is shared by the world model (MPI_Init..MPI_Finalize) and
     * every session (MPI_Session_init..finalize): up at the first, down
     * after the last.  Guarded by init_lock. */
    int users;
    bool world_inited, world_finalized;
    struct cdn_handle_table errhandlers;  /* user-created error handlers */
};

extern struct cdn_runtime cdn_rt;

/* True between MPI_Init and MPI_Finalize: most of MPI may be called. */
static inline int cdn_api_ready(void)
{
    return atomic_load_explicit(&cdn_rt.state, memory_order_acquire) == CDN_STATE_READY;
}


/* End the job now with this exit code, after printing why (a printf format). */
_Noreturn void cdn_rt_abort(int exitcode, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
