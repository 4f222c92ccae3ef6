/*
 * Progress threads the application starts (uthread.h).  Each polls as
 * MPIX_Stream_progress does, its stream's context first.
 *
 * While it finds work, or for CADENCE_PROGRESS_SPIN empty polls after the
 * last it found, the thread counts as an application thread polling in a
 * blocking call (cdn_progress_app_enter): Cadence's own progress thread
 * then stands aside, asleep with the transports' doorbells quiet, instead
 * of polling the same rings on the other core.  After that it leaves the
 * count and naps (CADENCE_USER_PROGRESS_NAP_US between polls), so an idle
 * application progress thread costs little and Cadence's thread takes the
 * doorbells again.  Oversubscribed, it yields between empty polls.
 */
#include "progress/uthread.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "progress/engine.h"
#include "runtime/config.h"
#include "runtime/error.h"

struct cdn_uthread {
    pthread_t th;
    int ctx;
    atomic_bool stop;
};

static void nap(long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
    nanosleep(&ts, NULL);
}


static void *uthread_main(void *arg)
{
    struct cdn_uthread *t = arg;
    if (t->ctx >= 0)
        cdn_progress_home = t->ctx;
    long nap_ns = cdn_param_long("CADENCE_USER_PROGRESS_NAP_US", 50, 1, 1000000) * 1000;
    int spin = cdn_engine.spin_polls, idle = 0;
    bool polling = false;  /* counted among the application's pollers */
    while (!atomic_load_explicit(&t->stop, memory_order_acquire)) {
        if (!polling) {
            cdn_progress_app_enter();
            polling = true;
        }
        /* as MPIX_Stream_progress: the stream's context first, then the
         * others (a message comes through its sender's context) */
        if (cdn_progress_poll() > 0) {
            idle = 0;
            continue;
        }
        if (++idle <= spin) {
            if (cdn_engine.oversubscribed)
                sched_yield();
            else
                CDN_CPU_RELAX();
            continue;
        }
        cdn_progress_app_leave();
        polling = false;
        nap(nap_ns);
        idle = spin;  /* one look after a nap, then nap again unless it found work */
    }
    if (polling)
        cdn_progress_app_leave();
    return NULL;
}

int cdn_uthread_start(int ctx, struct cdn_uthread **out, const char *caller)
{
    struct cdn_uthread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    t->ctx = ctx;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  /* the application's signals stay its own */
    int rc = pthread_create(&t->th, NULL, uthread_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        free(t);
        return cdn_err(MPI_ERR_OTHER, "%s: cannot start a thread (error %d)", caller, rc);
    }
    pthread_setname_np(t->th, "cdn-user-progr");
    *out = t;
    return MPI_SUCCESS;
}

void cdn_uthread_stop(struct cdn_uthread *t)
{
    atomic_store_explicit(&t->stop, true, memory_order_release);
    pthread_join(t->th, NULL);
    free(t);
}
