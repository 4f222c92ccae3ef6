/*
 * The background progress thread: strong progress without the application
 * calling MPI.  It polls like any waiter, spins CADENCE_PROGRESS_SPIN empty
 * polls (only when the process may use more than one processing unit),
 * then sleeps in epoll on the transports' doorbells, so an idle process
 * burns no CPU.  It is pinned with hwloc to one processing unit of
 * the process's allowed set, counted from the end by local rank so that the
 * threads of ranks on one node spread out (CADENCE_PROGRESS_BIND=0 leaves it
 * unbound).  The topology is loaded by the thread itself so MPI_Init does
 * not wait for it.  While an application thread polls inside a blocking
 * call the thread parks (engine.h, cdn_progress_app_enter): the waiter gets
 * the lowest latency alone, and the two never fight over one core.
 */
#include <hwloc.h>
#include <pthread.h>
#include <signal.h>

#include "progress/engine.h"
#include "progress/job.h"
#include "progress/params.h"
#include "runtime/error.h"

/* Pin the thread; returns how many processing units the process may use. */
static int pin_self(void)
{
    int npu = 0;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return 0;
    if (hwloc_topology_load(topo) == 0) {
        hwloc_cpuset_t allowed = hwloc_bitmap_alloc();
        if (hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) == 0 &&
            !hwloc_bitmap_iszero(allowed)) {
            npu = hwloc_bitmap_weight(allowed);
            int pick = npu - 1 - cdn_job_local_rank() % npu;
            int pu = hwloc_bitmap_first(allowed);
            for (int i = 0; i < pick; i++)
                pu = hwloc_bitmap_next(allowed, pu);
            if (cdn_progress_param_long("CADENCE_PROGRESS_BIND", 1, 0, 1) != 0) {
                hwloc_cpuset_t one = hwloc_bitmap_alloc();
                hwloc_bitmap_only(one, (unsigned)pu);
                hwloc_set_cpubind(topo, one, HWLOC_CPUBIND_THREAD);
                hwloc_bitmap_free(one);
            }
        }
        hwloc_bitmap_free(allowed);
    }
    hwloc_topology_destroy(topo);
    return npu;
}

static void *progress_main(void *arg)
{
    (void)arg;
    /* Spinning pays only on a processing unit of our own; bound to one
     * (mpirun binds a rank to a core) it would steal the application's. */
    int spin = pin_self() > 1 ? cdn_engine.spin_polls : 0;
    int idle = 0;
    while (!atomic_load_explicit(&cdn_engine.thread_stop, memory_order_acquire)) {
        if (atomic_load_explicit(&cdn_engine.app_pollers, memory_order_relaxed) > 0) {
            cdn_progress_park();  /* an application thread drives progress now */
            idle = 0;
            continue;
        }
        if (cdn_progress_poll() > 0) {
            idle = 0;
            continue;
        }
        if (++idle < spin) {
            CDN_CPU_RELAX();
            continue;
        }
        idle = 0;
        cdn_progress_epoll_sleep(-1, NULL, 0);
    }
    return NULL;
}

int cdn_progress_thread_start(void)
{
    atomic_store(&cdn_engine.thread_stop, false);
    /* The thread must not take the application's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&cdn_engine.thread, NULL, progress_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        cdn_engine.thread_on = false;
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: cannot start the progress thread (error %d)", rc);
    }
    return MPI_SUCCESS;
}

void cdn_progress_thread_stop(void)
{
    if (!cdn_engine.thread_on)
        return;
    atomic_store_explicit(&cdn_engine.thread_stop, true, memory_order_release);
    cdn_progress_kick();
    pthread_join(cdn_engine.thread, NULL);
    cdn_engine.thread_on = false;
}
