/*
 * The background progress thread: strong progress without the application
 * calling MPI.  It polls like any waiter, spins CADENCE_PROGRESS_SPIN empty
 * polls (only when the process may use more than one processing unit),
 * then sleeps in epoll on the transports' doorbells, so an idle process
 * burns no CPU.  It pins itself to one processing unit of the process's
 * allowed set, counted from the end by local rank so that the threads of
 * ranks on one node spread out (CADENCE_PROGRESS_BIND=0 leaves it
 * unbound).  While an application thread polls inside a blocking
 * call the thread parks (engine.h, cdn_progress_app_enter): the waiter gets
 * the lowest latency alone, and the two never fight over one core.  Sharing
 * the application's processing unit, it also naps before polling while an
 * application thread is inside a point-to-point call (posting: it polls
 * itself within microseconds), and after a wake-up that found work while
 * one was.
 *
 * Sharing a core with a computing application thread.  When the thread is
 * bound to the application's only processing unit (the usual mpirun
 * binding), it must take the processor the moment work arrives, or a
 * collective's chain of steps waits out the application's time slice at
 * each step.  So it asks for a short slice (EEVDF) and a higher priority
 * (a lower nice value, CADENCE_PROGRESS_NICE, where the process may raise
 * it: root, CAP_SYS_NICE or RLIMIT_NICE).  It only runs when there is
 * work and sleeps in epoll otherwise, so the priority buys promptness, not
 * CPU.  Work started by a nonblocking call wakes it through a timer
 * CADENCE_PROGRESS_START_DELAY_US later (cdn_progress_defer), so the
 * preemption falls into the application's computation rather than inside
 * the call that started the work.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progress/engine.h"
#include "progress/job.h"
#include "progress/p2p.h"
#include "progress/threadq.h"
#include "runtime/config.h"
#include "runtime/error.h"

/* Pin the thread; returns how many processing units the process may use.
 * No topology is needed -- only the process's allowed set and one member of
 * it -- so this asks the kernel directly (what hwloc's Linux binding calls
 * do underneath) instead of loading an hwloc topology: that load costs
 * 2-4 ms of plugin loading (pci, opencl, gl, xml) in every process, and
 * MPI_Finalize of a short job waited for it when joining the thread. */
static int pin_self(void)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    int npu = CPU_COUNT(&allowed);
    if (npu == 0)
        return 0;
    /* counted from the end by local rank: the threads of a node spread out */
    int pick = npu - 1 - cdn_job_local_rank() % npu, pu = -1;
    for (int i = 0; i < CPU_SETSIZE && pick >= 0; i++)
        if (CPU_ISSET(i, &allowed) && pick-- == 0)
            pu = i;
    if (pu >= 0 && cdn_param_long("CADENCE_PROGRESS_BIND", 1, 0, 1) != 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(pu, &one);
        (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
    return npu;
}

/* Ask the scheduler for a short time slice (SCHED_OTHER's sched_runtime,
 * honoured by Linux >= 6.12's EEVDF; older kernels ignore it).  A thread
 * with a shorter slice gets an earlier virtual deadline, so when a doorbell
 * wakes it on a core where the application computes it preempts at once
 * instead of waiting out the computing thread's slice (milliseconds).
 * CADENCE_PROGRESS_SLICE_US (default 100, the kernel's minimum; 0 leaves
 * the default).  No privilege is needed. */
static void shorten_slice(void)
{
#ifdef SYS_sched_setattr
    long us = cdn_param_long("CADENCE_PROGRESS_SLICE_US", 100, 0, 100000);
    if (us <= 0)
        return;
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr = {.size = sizeof attr, .policy = 0 /* SCHED_OTHER */,
              .runtime = (uint64_t)us * 1000};
    (void)syscall(SYS_sched_setattr, 0, &attr, 0);
#endif
}

/* Raise the thread's priority to CADENCE_PROGRESS_NICE, or as far towards
 * it as RLIMIT_NICE allows; unprivileged processes without such a limit
 * keep nice 0. */
static void raise_priority(void)
{
    long want = cdn_param_long("CADENCE_PROGRESS_NICE", -20, -20, 0);
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (want == 0 || setpriority(PRIO_PROCESS, (id_t)tid, (int)want) == 0)
        return;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 20) {
        int floor = 20 - (int)rl.rlim_cur;  /* the lowest nice the limit allows */
        if (floor < 0)
            (void)setpriority(PRIO_PROCESS, (id_t)tid, floor > want ? floor : (int)want);
    }
}

/* How long the thread stands back when an application thread holds the
 * transports (progress_main). */
enum { CONTENDED_SLEEP_NS = 20000 };
/* Naps in a row at most for an application thread inside a point-to-point
 * call (progress_main): a thread streaming sends is inside nearly all the
 * time, and it must not keep this one napping (a wake-up on its core per
 * nap) instead of asleep in epoll or polling. */
enum { INSIDE_NAPS = 4 };
/* Lingering (engine.h; docs/progress.md, "Lingering").  The longest
 * interval between the thread's looks at a linger: while the application
 * keeps making blocking calls it doubles from CADENCE_PROGRESS_LINGER_US
 * up to this, a wake-up per millisecond.  Short blocking calls linger only
 * for LINGER_MODE_NS after LINGER_RINGS doorbells within LINGER_RINGS_NS
 * caught the application just out of a blocking call (rung while this
 * thread stood aside), or after a held start (cdn_progress_start_end):
 * where peers seldom ring in the gaps (a ping-pong, even on a loaded
 * machine), the looks would cost wake-ups for nothing. */
enum { LINGER_MAX_NS = 1000000, LINGER_RINGS = 4, LINGER_RINGS_NS = 5000000,
       LINGER_MODE_NS = 100000000, LINGER_WAITS_NS = 10000000 };
/* LINGER_WAITS_NS: standing aside, the look while the application waits at
 * once after its starts (progress_main). */

struct linger_look {
    long next_ns;          /* the interval of the next look */
    unsigned seen;         /* cdn_engine.exits at the last look */
    uint64_t rings_from;   /* when the doorbells counted in rings began */
    int rings;             /* doorbells that caught the application between calls */
    uint64_t until;        /* the end of linger_on */
    uint64_t held_until;   /* the end of the mode held starts began */
};

/* After an armed sleep: doorbells that ended its standing aside turn
 * lingering on when LINGER_RINGS come within LINGER_RINGS_NS; it turns
 * off LINGER_MODE_NS after the last that did. */
static void linger_slept(struct linger_look *l, bool aside)
{
    bool rang = cdn_progress_peer_rang();
    if (cdn_engine.linger_ns <= 0)
        return;
    uint64_t now = cdn_progress_now_ns();
    if (atomic_load_explicit(&cdn_engine.held_start, memory_order_relaxed)) {
        /* held starts (cdn_progress_start_end) linger from now on */
        atomic_store_explicit(&cdn_engine.held_start, false, memory_order_relaxed);
        atomic_store_explicit(&cdn_engine.linger_on, true, memory_order_relaxed);
        l->until = l->held_until = now + LINGER_MODE_NS;
    }
    if (rang && aside) {
        if (now - l->rings_from > LINGER_RINGS_NS) {
            l->rings_from = now;
            l->rings = 0;
        }
        if (++l->rings >= LINGER_RINGS) {
            atomic_store_explicit(&cdn_engine.linger_on, true, memory_order_relaxed);
            l->until = now + LINGER_MODE_NS;
        }
    }
    if (now > l->until && !cdn_engine.linger_always &&
        atomic_load_explicit(&cdn_engine.linger_on, memory_order_relaxed))
        atomic_store_explicit(&cdn_engine.linger_on, false, memory_order_relaxed);
}

/* About to sleep with no timeout: mark the thread deep, then look at
 * lingering (both seq_cst, pairing with a leaving poller's look at
 * thread_deep, cdn_progress_leave_short): either that poller sees us deep
 * and ends its linger itself, or we see the linger -- then it needs our
 * timed look, and we are not deep after all (true). */
static bool deep_unless_lingering(void)
{
    atomic_store_explicit(&cdn_engine.thread_deep, true, memory_order_seq_cst);
    if (!atomic_load_explicit(&cdn_engine.lingering, memory_order_seq_cst))
        return false;
    atomic_store_explicit(&cdn_engine.thread_deep, false, memory_order_relaxed);
    return true;
}

/* Stand aside for timeout_ns (-1: until the pollers are gone).  While
 * nonblocking collectives of thread ranks are in flight, in slices of
 * CADENCE_WORK_SHARING_US with a look for thread ranks away from MPI
 * after each (threadq.h, work sharing): a poller counted -- a held
 * start's, a linger's -- may be computing, not polling. */
static void stand_aside_sharing(long timeout_ns)
{
    long slice = cdn_progress_sharing();
    if (slice == 0) {
        cdn_progress_stand_aside(timeout_ns);
        return;
    }
    uint64_t end = timeout_ns < 0 ? UINT64_MAX : cdn_progress_now_ns() + (uint64_t)timeout_ns;
    while (atomic_load_explicit(&cdn_engine.app_pollers, memory_order_relaxed) > 0 &&
           (slice = cdn_progress_sharing()) > 0) {
        uint64_t t = cdn_progress_now_ns();
        if (t >= end)
            return;
        cdn_progress_stand_aside(end - t < (uint64_t)slice ? (long)(end - t) : slice);
        cdn_tq_share();
    }
}

/* Doubled, never past LINGER_MAX_NS (800 us used to become 1.6 ms once). */
static long linger_longer(long ns)
{
    return ns < LINGER_MAX_NS / 2 ? ns * 2 : LINGER_MAX_NS;
}

/* Held starts came lately (linger_slept) and the application waits at
 * once after its starts: asleep with nothing to do, the thread stays
 * timed (a look LINGER_MAX_NS away, the longest interval between looks
 * at a linger, so a held start whose application computes after all is
 * caught as late as any linger) instead of deep.  Deep, it cannot take a
 * held start's lingering count (leave in engine.c), so a held start woke
 * it -- an eventfd write and two context switches on the application's
 * processing unit, 15-20 us, for a wait that followed at once: 7 in the
 * 110 iterations of a 64 KiB MPI_Ialltoall, which made the thread-off
 * build 10-18% faster there (docs/progress.md). */
static bool held_waits(const struct linger_look *l)
{
    return cdn_progress_now_ns() < l->held_until &&
           atomic_load_explicit(&cdn_engine.linger_on, memory_order_relaxed) &&
           !cdn_progress_computes_next();
}

/* Asleep with no application thread polling and a linger on: a look
 * CADENCE_PROGRESS_LINGER_US or more later ends it unless a short
 * blocking call has left since the last look (while lingering is on). */
static void linger_sleep(struct linger_look *l)
{
    cdn_progress_epoll_sleep(l->next_ns, NULL, 0);
    linger_slept(l, false);
    unsigned e = atomic_load_explicit(&cdn_engine.exits, memory_order_relaxed);
    if ((e == l->seen || !atomic_load_explicit(&cdn_engine.linger_on, memory_order_relaxed)) &&
        atomic_load(&cdn_engine.app_pollers) == 0 && cdn_progress_linger_end(CDN_LINGER_LOOKED))
        l->next_ns = cdn_engine.linger_ns;
    else
        l->next_ns = linger_longer(l->next_ns);
    l->seen = e;
}

/* Did this process serve another's one-sided operation lately?  Then
 * the next is likely on its way, and the origin waits for its answer: a
 * target whose application computes or sleeps answers a stream of them
 * without a wake-up each (seed 003's passive-target loop over TCP: 50 us
 * a get when the thread slept between them).  Bounded: at most
 * CADENCE_RMA_SERVE_SPIN_US of polling after the last one, and never
 * on an oversubscribed node (the processor is another rank's). */
static bool serving_rma(void)
{
    long long at = atomic_load_explicit(&cdn_engine.rma_served_ns, memory_order_relaxed);
    return at != 0 && (long long)cdn_progress_now_ns() - at < cdn_engine.rma_spin_ns;
}

static void *progress_main(void *arg)
{
    (void)arg;
    cdn_progress_in_thread = true;
    /* Spinning pays only on a processing unit of our own; bound to one
     * (mpirun binds a rank to a core) it would steal the application's. */
    int npu = pin_self();
    int spin = npu > 1 && !cdn_engine.oversubscribed ? cdn_engine.spin_polls : 0;
    atomic_store(&cdn_engine.thread_shares_pu, npu == 1);
    /* Oversubscribed, every processing unit already has ranks waiting for
     * it: a thread that preempts them takes the processor from a rank
     * that must make progress. */
    if (!cdn_engine.oversubscribed) {
        shorten_slice();
        raise_priority();
    }
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    int idle = 0;
    /* Parks last from 50 us, doubling while application threads keep
     * polling, up to 1 ms: after a short blocking call the thread is back
     * in epoll within tens of microseconds even if nobody unparks it (small
     * nonblocking operations do not); a long wait costs a wake-up per ms. */
    long park_ns = 50000;
    bool worked = false;  /* a poll since the last sleep found something */
    /* After a wake-up that found work, nap unarmed before polling again
     * (CADENCE_PROGRESS_NAP_US): on the application's core each doorbell
     * is a pair of context switches, and a peer streaming rendezvous
     * messages while our application posts its own would ring once per
     * message it finds us asleep for (docs/progress.md). */
    long nap_ns = 0;
    int inside_naps = 0;  /* naps in a row for an application thread inside MPI */
    struct linger_look look = {.next_ns = cdn_engine.linger_ns};
    if (npu == 1)
        nap_ns = cdn_param_long("CADENCE_PROGRESS_NAP_US", 50, 0, 10000) * 1000;
    while (!atomic_load_explicit(&cdn_engine.thread_stop, memory_order_acquire)) {
        if (atomic_load_explicit(&cdn_engine.app_pollers, memory_order_relaxed) > 0) {
            if (cdn_engine.quiet_poll) {
                /* No timeout without lingering: the last poller wakes us if
                 * need be.  Lingering, a poller's leaving may begin a
                 * linger that only a look of ours ends.  While the
                 * application waits at once after its starts (the overlap
                 * score), that look comes LINGER_WAITS_NS later: each
                 * look is a timer interrupt and two context switches on
                 * the waiting application's core, 20-70 us of its time
                 * here, and a loop of 100 nonblocking collectives and
                 * waits took one at 100, 200, 400 and 800 us
                 * (docs/progress.md, "The looks while the application
                 * polls"). */
                bool timed = atomic_load_explicit(&cdn_engine.linger_on, memory_order_relaxed) ||
                             deep_unless_lingering();
                stand_aside_sharing(!timed ? -1
                                    : cdn_progress_computes_next() ? look.next_ns
                                                                   : LINGER_WAITS_NS);
                atomic_store_explicit(&cdn_engine.thread_deep, false, memory_order_relaxed);
                linger_slept(&look, true);
                look.next_ns = linger_longer(look.next_ns);
                look.seen = atomic_load_explicit(&cdn_engine.exits, memory_order_relaxed);
                idle = 0;
                continue;
            }
            long share = cdn_progress_sharing();
            cdn_progress_park(share > 0 && share < park_ns ? share : park_ns);
            if (share > 0)
                cdn_tq_share();  /* (the poller may be a held start, computing) */
            park_ns = park_ns < 1000000 ? park_ns * 2 : 1000000;
            idle = 0;
            continue;
        }
        park_ns = 50000;
        /* An application thread is inside a point-to-point call on our
         * processing unit: it polls when it waits, or its next call does.
         * Polling now would preempt it (this thread's priority is higher)
         * to do what it is about to do itself, and in a bidirectional
         * stream of rendezvous messages each doorbell caught it posting. */
        if (nap_ns > 0 && inside_naps < INSIDE_NAPS &&
            atomic_load_explicit(&cdn_p2p_app_inside.v, memory_order_relaxed) &&
            cdn_progress_nap(nap_ns)) {
            inside_naps++;
            continue;
        }
        inside_naps = 0;
        cdn_progress_let_app_out();
        atomic_store_explicit(&cdn_engine.thread_busy, true, memory_order_relaxed);
        int pn = cdn_progress_poll();
        bool missed = cdn_progress_poll_missed();  /* this poll's, not a stale one */
        atomic_store_explicit(&cdn_engine.thread_busy, false, memory_order_relaxed);
        if (pn > 0) {
            idle = 0;
            worked = true;
            continue;
        }
        /* Work is there but an application thread polls it (inside
         * MPI_Test, say, perhaps copying a rendezvous message under the
         * transports' lock): it is in that thread's hands.  Polling again
         * at once would spin -- the doorbell stays ready -- on the core
         * that thread needs, at this thread's higher priority: a transfer
         * polled with MPI_Test took milliseconds instead of microseconds.
         * Sleep a moment instead. */
        if (missed) {
            struct timespec ts = {0, CONTENDED_SLEEP_NS};
            clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
            idle = 0;
            continue;
        }
        if (++idle < spin || (!cdn_engine.oversubscribed && serving_rma())) {
            CDN_CPU_RELAX();
            continue;
        }
        idle = 0;
        atomic_store_explicit(&cdn_engine.thread_asleep, true, memory_order_seq_cst);
        if (!worked || nap_ns == 0 ||
            !atomic_load_explicit(&cdn_p2p_app_inside.v, memory_order_relaxed) ||
            !cdn_progress_nap(nap_ns)) {
            if (held_waits(&look)) {
                look.next_ns = LINGER_MAX_NS;
                linger_sleep(&look);
            } else if (deep_unless_lingering()) {
                linger_sleep(&look);
            } else {
                look.next_ns = cdn_engine.linger_ns;
                cdn_progress_epoll_sleep(-1, NULL, 0);
                atomic_store_explicit(&cdn_engine.thread_deep, false, memory_order_relaxed);
                linger_slept(&look, false);
            }
        }
        worked = false;
        atomic_store_explicit(&cdn_engine.thread_asleep, false, memory_order_relaxed);
    }
    return NULL;
}

/* Helper threads (engine.h): poll their contexts while they have traffic,
 * spin CADENCE_PROGRESS_SPIN empty rounds (none oversubscribed), then
 * sleep in epoll on their contexts' transports with the doorbells armed
 * (transport ops arm and disarm), so an idle helper costs nothing and a
 * message for its contexts wakes it.  The progress thread also sleeps on
 * every context's doorbells: when it wakes first and drains a doorbell,
 * the helper may sleep on until its look HELPER_LOOK_MS later -- the
 * message is the thread's to take then, so progress stays strong; the
 * helpers add hands while contexts are busy. */
#define HELPER_LOOK_MS 100

struct helper {
    pthread_t th;
    int id;
    int ntps;      /* its contexts' transports (arm and disarm act on them) */
    struct cdn_transport **tps;
    int epfd;      /* their fds and stop_fd */
    int stop_fd;   /* eventfd: cdn_progress_thread_stop */
};
static struct helper helpers[CDN_PROGRESS_THREADS_MAX];
static int nhelpers;

/* Arm the doorbells of h's contexts and sleep until one rings, the look
 * comes or the thread stops; unless input or queued work is there. */
static void helper_sleep(struct helper *h)
{
    int ready = 0;
    for (int i = 0; i < h->ntps; i++)
        if (h->tps[i]->ops->arm != NULL)
            ready |= h->tps[i]->ops->arm(h->tps[i]) != 0;
    if (!ready && !atomic_load_explicit(&cdn_engine.thread_stop, memory_order_acquire)) {
        struct epoll_event ev[8];
        epoll_wait(h->epfd, ev, 8, HELPER_LOOK_MS);
    }
    for (int i = 0; i < h->ntps; i++)
        if (h->tps[i]->ops->disarm != NULL)
            h->tps[i]->ops->disarm(h->tps[i]);
}

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    int n = cdn_engine.nthreads;
    int spin = cdn_engine.oversubscribed ? 0 : cdn_engine.spin_polls, idle = 0;
    while (!atomic_load_explicit(&cdn_engine.thread_stop, memory_order_acquire)) {
        int got = 0;
        for (int c = h->id; c < cdn_engine.nctx; c += n)
            got += cdn_progress_poll_ctx(c);
        if (got > 0) {
            idle = 0;
        } else if (++idle <= spin) {
            CDN_CPU_RELAX();
        } else {
            /* and back to sleep after one empty look: spinning again
             * would cost 2,000 polls (system calls over TCP) a look */
            helper_sleep(h);
        }
    }
    return NULL;
}

/* Start the helpers that have a context to serve. */
static int helpers_start(void)
{
    nhelpers = 0;
    for (int i = 1; i < cdn_engine.nthreads && i < cdn_engine.nctx; i++) {
        struct helper *h = &helpers[nhelpers];
        *h = (struct helper){.id = i, .epfd = epoll_create1(EPOLL_CLOEXEC),
                             .stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
        if (h->epfd < 0 || h->stop_fd < 0)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: progress helper thread %d: no epoll or "
                           "eventfd", i);
        int ntps = 0;
        for (int c = i; c < cdn_engine.nctx; c += cdn_engine.nthreads)
            ntps += cdn_engine.ctx[c].ntransports;
        h->tps = malloc(((size_t)ntps + 1) * sizeof *h->tps);
        if (h->tps == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: progress helper thread %d: out of memory",
                           i);
        struct epoll_event ev = {.events = EPOLLIN};
        epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->stop_fd, &ev);
        for (int c = i; c < cdn_engine.nctx; c += cdn_engine.nthreads)
            for (int t = 0; t < cdn_engine.ctx[c].ntransports; t++) {
                struct cdn_transport *tp = cdn_engine.ctx[c].transports[t];
                h->tps[h->ntps++] = tp;
                int fd = tp->ops->fd(tp);
                if (fd >= 0)
                    epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev);
            }
        int rc = pthread_create(&h->th, NULL, helper_main, h);
        if (rc != 0)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: cannot start progress helper thread %d "
                           "(error %d)", i, rc);
        char name[16];
        snprintf(name, sizeof name, "cdn-progress-%d", i % 100);
        pthread_setname_np(h->th, name);
        nhelpers++;
    }
    return MPI_SUCCESS;
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
    if (rc == 0)
        pthread_setname_np(cdn_engine.thread, "cdn-progress");  /* for ps, top and tests */
    if (rc != 0) {
        cdn_engine.thread_on = false;
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: cannot start the progress thread (error %d)", rc);
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = helpers_start();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void cdn_progress_thread_stop(void)
{
    if (!cdn_engine.thread_on)
        return;
    cdn_engine.linger_ns = 0;  /* nobody would end a linger now */
    atomic_store(&cdn_engine.linger_on, false);
    atomic_store_explicit(&cdn_engine.thread_stop, true, memory_order_release);
    cdn_progress_kick();
    pthread_join(cdn_engine.thread, NULL);
    for (int i = 0; i < nhelpers; i++) {
        uint64_t one = 1;
        if (write(helpers[i].stop_fd, &one, sizeof one) < 0) {
            /* an eventfd write fails only on overflow: it is readable anyway */
        }
        pthread_join(helpers[i].th, NULL);
        close(helpers[i].epfd);
        close(helpers[i].stop_fd);
        free(helpers[i].tps);
    }
    nhelpers = 0;
    cdn_progress_linger_end(CDN_LINGER_OTHER);
    cdn_engine.thread_on = false;
}
