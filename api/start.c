/*
 * Process start and end, through every layer: MPI_Init, MPI_Init_thread
 * and MPI_Session_init bring the process up as an MPI job for their first
 * caller (later ones only join), MPI_Finalize and the last session take it
 * down.  It sits above the layers it orders -- the runtime's objects, the
 * PMIx client, the progress engine and its transports, the schedules'
 * scratch cache -- so none of them calls up into another.
 *
 * Under a launcher the job's facts and the address exchange come from PMIx
 * (runtime/pmix.c); without one the process is a one-process job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/enqueue.h"
#include "api/entry.h"
#include "cdn_build_config.h"
#include "progress/engine.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/datatype.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/pmix.h"
#include "runtime/runtime.h"
#include "runtime/win.h"
#include "sched/scratch.h"

int cdn_rt_init(int required, int *provided, bool world, const char *caller)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&cdn_rt.init_lock);
    int state = atomic_load(&cdn_rt.state);
    if (world && (cdn_rt.world_inited || state == CDN_STATE_FINALIZED)) {
        rc = cdn_err(MPI_ERR_OTHER, "%s: MPI is %s; it can be initialised once per process",
                     caller, cdn_rt.world_finalized || state == CDN_STATE_FINALIZED
                                 ? "finalised" : "already initialised");
        goto out;
    }
    if (state == CDN_STATE_FINALIZED) {
        rc = cdn_err(MPI_ERR_OTHER, "%s: MPI was finalised; it cannot be started again", caller);
        goto out;
    }
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE) {
        rc = cdn_err(MPI_ERR_ARG, "%s: required thread level %d is not one of "
                     "MPI_THREAD_SINGLE..MPI_THREAD_MULTIPLE (0..3)", caller, required);
        goto out;
    }
    if (state == CDN_STATE_READY) {  /* up already: another session or the world model */
        if (required > cdn_rt.thread_level && cdn_rt.thread_level < MPI_THREAD_MULTIPLE)
            cdn_rt.thread_level = required;  /* every level is supported */
        goto joined;
    }
    cdn_errh_init_initial();
    cdn_rt.thread_level = required;  /* every level is supported, MULTIPLE included */
    cdn_rt.main_thread = pthread_self();
    clock_gettime(CLOCK_MONOTONIC, &cdn_rt.wtime_base);
    rc = cdn_pmix_init(caller);
    if (rc != MPI_SUCCESS)
        goto out;
    /* what every peer may need of us: the pid (single-copy transfers) */
    pid_t pid = getpid();
    rc = cdn_modex_put(CDN_MODEX_PID, &pid, sizeof pid);
    if (rc != MPI_SUCCESS)
        goto out;
    /* one thread at a time on a stream's communicators: checked in debug
     * builds (api/stream.c) */
    cdn_stream_checks = cdn_param_long("CADENCE_STREAM_CHECKS", CDN_DEBUG_BUILD, 0, 1) != 0;
    rc = cdn_datatype_init();
    if (rc != MPI_SUCCESS) {
        rc = cdn_err(rc, "%s: the predefined datatypes could not be set up", caller);
        goto out;
    }
    /* Transports open endpoints and publish their addresses before the
     * fence, and connect to their peers after it. */
    rc = cdn_progress_init();
    if (rc != MPI_SUCCESS)
        goto out;
    rc = cdn_pmix_fence(true, caller);
    if (rc != MPI_SUCCESS)
        goto out;
    rc = cdn_comm_init_builtin(cdn_rt.world_rank, cdn_rt.world_size);
    if (rc != MPI_SUCCESS) {
        rc = cdn_err(rc, "%s: out of memory setting up MPI_COMM_WORLD", caller);
        goto out;
    }
    rc = cdn_progress_wireup();
    if (rc != MPI_SUCCESS)
        goto out;
    atomic_store_explicit(&cdn_rt.state, CDN_STATE_READY, memory_order_release);
joined:
    if (provided != NULL)
        *provided = cdn_rt.thread_level;
    cdn_rt.users++;
    if (world)
        cdn_rt.world_inited = true;
out:
    pthread_mutex_unlock(&cdn_rt.init_lock);
    return rc;
}

/* Take everything down (init_lock held, no user left). */
static int teardown(void)
{
    cdn_stream_progress_threads_stop();  /* the application's progress threads poll */
    cdn_win_finalize();  /* windows hold communicators: before progress goes */
    cdn_comm_drop_coll_builtin();  /* kept schedules are requests */
    cdn_progress_finalize();
    cdn_scratch_trim();
    atomic_store_explicit(&cdn_rt.state, CDN_STATE_FINALIZED, memory_order_release);
    int rc = cdn_pmix_finalize();
    cdn_comm_finalize_builtin();
    cdn_group_finalize();
    free(cdn_rt.local_peers);
    cdn_rt.local_peers = NULL;
    cdn_datatype_finalize();
    cdn_attr_finalize();
    cdn_err_finalize();
    return rc;
}

/* At exit: a runtime kept up after the last session went (see below). */
static void teardown_at_exit(void)
{
    pthread_mutex_lock(&cdn_rt.init_lock);
    if (cdn_rt.users == 0 && atomic_load(&cdn_rt.state) == CDN_STATE_READY)
        teardown();
    pthread_mutex_unlock(&cdn_rt.init_lock);
}

int cdn_rt_finalize(bool world)
{
    pthread_mutex_lock(&cdn_rt.init_lock);
    if (world)
        cdn_rt.world_finalized = true;
    if (--cdn_rt.users > 0) {  /* sessions (or the world model) still use it */
        pthread_mutex_unlock(&cdn_rt.init_lock);
        return MPI_SUCCESS;
    }
    if (!world) {
        /* The last session went.  MPI-4.1 lets the process start sessions
         * (or MPI_Init, if it never ran) again later, with handles such as
         * datatypes made before still valid; a PMIx client cannot be
         * initialised a second time, so the runtime stays up, idle, until
         * the process exits. */
        static bool registered;
        if (!registered)
            registered = atexit(teardown_at_exit) == 0;
        pthread_mutex_unlock(&cdn_rt.init_lock);
        return MPI_SUCCESS;
    }
    int rc = teardown();
    pthread_mutex_unlock(&cdn_rt.init_lock);
    return rc;
}

