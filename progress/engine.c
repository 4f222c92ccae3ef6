/*
 * The default progress context: bring-up and teardown of the transports,
 * one round of polling, and how a thread with nothing to do goes to sleep
 * (see engine.h).
 *
 * Sleeping.  Application threads that finished spinning sleep on the
 * completion generation (a futex), except that without a progress thread
 * one of them must watch the transports: it becomes the epoll sleeper (arms
 * the doorbells, sleeps in epoll_wait on every transport fd plus wake_fd).
 * Every completion bumps the generation and wakes futex sleepers; it also
 * writes wake_fd when an application thread sleeps in epoll, since that
 * thread may be waiting for a completion made by another thread.
 */
#include "progress/engine.h"

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progress/am.h"
#include "progress/request.h"
#include "progress/sent.h"
#include "progress/spin.h"
#include "progress/staging.h"
#include "progress/greq.h"
#include "progress/rma.h"
#include "progress/threadq.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "runtime/runtime.h"
#include "transport/transport.h"

/* Context 0 before MPI_Init makes the contexts (nothing reaches anybody). */
static struct cdn_pctx ctx_none = {.work_lock = PTHREAD_MUTEX_INITIALIZER};

struct cdn_engine cdn_engine = {
    .nctx = 1,
    .ctx = &ctx_none,
    .timer_lock = PTHREAD_MUTEX_INITIALIZER,
    .epfd = -1,
    .wake_fd = -1,
    .spin_polls = 2000,
    .background_min = 524288,
};

CDN_TLS bool cdn_progress_in_thread;
CDN_TLS int cdn_progress_home;
/* Inside cdn_progress_wait_on: the polls favour the home context. */
static CDN_TLS bool focus;
static CDN_TLS unsigned focus_round;
CDN_TLS bool cdn_progress_blocking;
/* A wake-up of the progress thread left out inside a blocking call's start
 * (wake_soon), to be settled by cdn_progress_wait_until. */
static CDN_TLS bool wake_owed;
/* This application thread polls in cdn_progress_wait_until. */
static CDN_TLS bool polling_here;
/* ... or starts work between cdn_progress_start_begin and _end. */
static CDN_TLS bool starting;
/* ... or polls in cdn_progress_wait_until_late before waiting in full. */
static CDN_TLS bool late_polling;

static atomic_bool epoll_app;  /* an application thread sleeps in epoll */
static atomic_bool napping;    /* the progress thread naps unarmed (cdn_progress_nap) */
static int timer_tag;          /* epoll data of the timer_fd */

/* Read an eventfd or timerfd empty (another reader may have: EAGAIN). */
static void drain_fd(int fd)
{
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0) {
        /* EAGAIN */
    }
}

static void futex_wait(atomic_uint *word, unsigned val, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout_ns >= 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void kick_fd(void)
{
    uint64_t one = 1;
    if (cdn_engine.wake_fd >= 0 && write(cdn_engine.wake_fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already non-zero, the sleeper will wake */
    }
}

/* Does some transport already reach every other process? */
static bool all_reached(int ctx)
{
    for (int w = 0; w < cdn_rt.world_size; w++)
        if (w != cdn_rt.world_rank && cdn_progress_transport_in(ctx, w) == NULL)
            return false;
    return true;
}

/* Append tp to *list of *n; false when out of memory. */
static bool transport_add(struct cdn_transport ***list, int *n, struct cdn_transport *tp)
{
    struct cdn_transport **more = realloc(*list, (size_t)(*n + 1) * sizeof *more);
    if (more == NULL)
        return false;
    more[(*n)++] = tp;
    *list = more;
    return true;
}

/* Open context ctx's instance of transport kind k (index ki) unless the
 * ones open already reach every other process (or it does not apply to
 * this job); MPI_SUCCESS, or MPI_ERR_NO_MEM, or the error of its init. */
static int transport_open(int ctx, const struct cdn_transport_kind *k, int ki)
{
    if (all_reached(ctx))
        return MPI_SUCCESS;
    struct cdn_transport *tp = k->create();
    const char *why = tp == NULL && k->why_not != NULL ? k->why_not() : NULL;
    if (why != NULL)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: CADENCE_TRANSPORTS names the %s transport, "
                       "which cannot start here: %s", k->name, why);
    if (tp == NULL)
        return MPI_SUCCESS;
    tp->ctx = ctx;  /* before init: what the instance publishes is named by it */
    tp->kind = ki;
    int rc = tp->ops->init(tp);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_pctx *c = &cdn_engine.ctx[ctx];
    if (!transport_add(&c->transports, &c->ntransports, tp) ||
        !transport_add(&cdn_engine.transports, &cdn_engine.ntransports, tp))
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: out of memory opening the %s transport",
                       k->name);
    return MPI_SUCCESS;
}

/* Does the comma-separated list name the n characters at s before s? */
static bool named_before(const char *list, const char *s, size_t n)
{
    for (const char *t = list; t < s;) {
        size_t m = strcspn(t, ",");
        if (m == n && strncmp(t, s, n) == 0)
            return true;
        t += m;
        t += *t == ',';
    }
    return false;
}

/* CADENCE_TRANSPORTS (default: every transport compiled in but those
 * opened only when named, the fabric ones, in the registry's order,
 * transport/registry.c): the transports to use, in order
 * of preference; each peer is reached by the first that reaches it.  A
 * transport is opened only if a peer is left that the earlier ones do not
 * reach, so a one-node job opens no socket unless told to. */
static int transports_open(int ctx)
{
    int nkinds;
    const struct cdn_transport_kind *kinds = cdn_transport_kinds(&nkinds);
    const char *list = cdn_param_str("CADENCE_TRANSPORTS");
    int rc = MPI_SUCCESS;
    if (list == NULL) {
        for (int k = 0; k < nkinds && rc == MPI_SUCCESS; k++)
            if (!kinds[k].named_only)
                rc = transport_open(ctx, &kinds[k], k);
    }
    for (const char *s = list; s != NULL && *s != '\0' && rc == MPI_SUCCESS;) {
        size_t n = strcspn(s, ",");
        int k = 0;
        while (k < nkinds && (strlen(kinds[k].name) != n || strncmp(s, kinds[k].name, n) != 0))
            k++;
        if (k < nkinds && named_before(list, s, n)) {
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: CADENCE_TRANSPORTS=%s names the %s "
                           "transport twice", list, kinds[k].name);
        } else if (k < nkinds) {
            rc = transport_open(ctx, &kinds[k], k);
        } else if (n > 0) {
            char known[256];
            size_t len = 0;
            known[0] = '\0';
            for (int j = 0; j < nkinds && len < sizeof known; j++)
                len += (size_t)snprintf(known + len, sizeof known - len, "%s%s (%s)",
                                        j > 0 ? ", " : "", kinds[j].name, kinds[j].reaches);
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: CADENCE_TRANSPORTS=%s: unknown transport "
                           "'%.*s' (known: %s)", list, (int)n, s, known);
        }
        s += n;
        s += *s == ',';
    }
    return rc;
}

/* CADENCE_PROGRESS_CONTEXTS (default 1): the contexts, each with its
 * transports. */
static int contexts_open(void)
{
    int n = (int)cdn_param_long("CADENCE_PROGRESS_CONTEXTS", 1, 1, CDN_PCTX_MAX);
    struct cdn_pctx *ctx = calloc((size_t)n, sizeof *ctx);
    if (ctx == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: out of memory for %d progress contexts", n);
    for (int i = 0; i < n; i++)
        pthread_mutex_init(&ctx[i].work_lock, NULL);
    cdn_engine.ctx = ctx;
    cdn_engine.nctx = n;
    cdn_rt.pctx_count = n;  /* what a communicator may ask for (runtime/comm_hints.c) */
    cdn_engine.ntransports = 0;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = transports_open(i);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t min = SIZE_MAX;
    for (int i = 0; i < cdn_engine.ntransports; i++)
        if (cdn_engine.transports[i]->eager_limit < min)
            min = cdn_engine.transports[i]->eager_limit;
    /* (a process alone: its messages are its own threads', eager up to the
     * thread queues' limit; the self path's is larger) */
    cdn_engine.eager_min = cdn_engine.ntransports > 0 ? min : CDN_TQ_EAGER;
    int nkinds;
    cdn_transport_kinds(&nkinds);
    return cdn_sent_open(nkinds);
}

/* -1: CADENCE_PROGRESS_OVERSUBSCRIBED is auto (or unset); else its value. */
static int oversubscribed_forced(void)
{
    const char *v = cdn_param_str("CADENCE_PROGRESS_OVERSUBSCRIBED");
    if (v == NULL || strcmp(v, "auto") == 0)
        return -1;
    return cdn_param_long("CADENCE_PROGRESS_OVERSUBSCRIBED", 0, 0, 1) != 0;
}

/* The node's online processing units and the ones this process may run on;
 * false when either is unknown. */
static bool cpu_counts(long *online, long *mine)
{
    cpu_set_t set;
    *online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || *online < 1)
        return false;
    *mine = CPU_COUNT(&set);
    return true;
}

bool cdn_progress_oversubscribed(int local_size)
{
    int forced = oversubscribed_forced();
    if (forced >= 0)
        return forced != 0;
    long online, mine;
    if (!cpu_counts(&online, &mine))
        return false;
    return local_size > (mine < online ? online : mine);
}

void cdn_progress_waiters(int threads)
{
    /* (once oversubscribed, for good: a thread communicator freed may be
     * made again) */
    if (cdn_engine.oversubscribed || threads < 2 || oversubscribed_forced() >= 0)
        return;
    long online, mine;
    if (!cpu_counts(&online, &mine))
        return;
    /* The threads share this process's units (a bound rank has one); the
     * node's units are shared by every process's threads. */
    if (threads > mine || (long)cdn_rt.local_size * threads > online) {
        cdn_engine.oversubscribed = true;
        cdn_engine.wait_spin_ns = 0;
    }
}

/* Nonblocking collectives of thread ranks in flight: the progress thread
 * sleeps at most share_ns at a time meanwhile (work sharing, threadq.h). */
static atomic_int share_work;
static long share_ns = 100000;

void cdn_progress_share_work(int delta)
{
    if (atomic_fetch_add(&share_work, delta) == 0 && delta > 0 &&
        atomic_load_explicit(&cdn_engine.thread_deep, memory_order_seq_cst))
        kick_fd();  /* asleep with no timeout: sleep timed from now */
}

long cdn_progress_sharing(void)
{
    return atomic_load_explicit(&share_work, memory_order_relaxed) > 0 ? share_ns : 0;
}

int cdn_progress_init(void)
{
    share_ns = cdn_param_long("CADENCE_WORK_SHARING_US", 100, 1, 1000000) * 1000;
    cdn_engine.spin_polls = (int)cdn_param_long("CADENCE_PROGRESS_SPIN", 2000, 0, 1 << 30);
    cdn_engine.rma_spin_ns = 1000 * cdn_param_long("CADENCE_RMA_SERVE_SPIN_US", 100, 0, 100000);
    cdn_engine.oversubscribed = cdn_progress_oversubscribed(cdn_rt.local_size);
    /* An application thread blocked in MPI spins longer than the progress
     * thread before it sleeps: while two ranks stream to each other, a
     * waiter that slept after 2,000 empty polls (100-200 µs over shared
     * memory) handed each window to a wake-up chain -- the peer's cells
     * ringing our progress thread, which completed our requests and woke
     * us -- and once one side slept the other waited long enough to sleep
     * too: bibw at 4 KiB ran at 3.5 GB/s against 16.6 with 20,000 polls
     * (docs/progress.md).  A time rather than a count, because a poll over
     * TCP is a system call.  Oversubscribed, a waiter yields at every
     * empty poll and keeps the shorter count. */
    cdn_engine.wait_spin_ns =
        cdn_engine.oversubscribed
            ? 0
            : cdn_param_long("CADENCE_PROGRESS_WAIT_SPIN_US", 1000, 0, 1000000) * 1000;
    cdn_engine.nthreads =
        (int)cdn_param_long("CADENCE_PROGRESS_THREADS", 1, 0, CDN_PROGRESS_THREADS_MAX);
    cdn_engine.thread_on = cdn_engine.nthreads > 0;
    cdn_engine.background_min =
        cdn_param_long("CADENCE_PROGRESS_BACKGROUND_MIN", 524288, 0, 1L << 40);
    cdn_engine.start_delay_ns =
        1000 * cdn_param_long("CADENCE_PROGRESS_START_DELAY_US", 20, 0, 1000000);
    cdn_sent_init();
    cdn_p2p_am_register();
    cdn_rma_am_register();
    cdn_engine.epfd = epoll_create1(EPOLL_CLOEXEC);
    cdn_engine.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cdn_engine.park_epfd = epoll_create1(EPOLL_CLOEXEC);
    cdn_engine.park_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cdn_engine.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (cdn_engine.epfd < 0 || cdn_engine.wake_fd < 0 || cdn_engine.park_epfd < 0 ||
        cdn_engine.park_fd < 0 || cdn_engine.timer_fd < 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: cannot create the progress engine's "
                       "epoll/eventfd/timerfd: %s", strerror(errno));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(cdn_engine.epfd, EPOLL_CTL_ADD, cdn_engine.wake_fd, &ev);
    epoll_ctl(cdn_engine.park_epfd, EPOLL_CTL_ADD, cdn_engine.park_fd, &ev);
    ev.data.ptr = &timer_tag;
    epoll_ctl(cdn_engine.epfd, EPOLL_CTL_ADD, cdn_engine.timer_fd, &ev);
    epoll_ctl(cdn_engine.park_epfd, EPOLL_CTL_ADD, cdn_engine.timer_fd, &ev);

    return contexts_open();
}

/* A process the launcher says ended (runtime/pmix.h, cdn_pmix_on_lost):
 * every transport instance that wants to hear it fails what it holds for
 * it, on the next poller (or here, without a progress thread). */
struct lost_work {
    struct cdn_work w;
    int rank;
};

static void lost_run(struct cdn_work *w)
{
    struct lost_work *l = (struct lost_work *)w;
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->peer_lost != NULL)
            tp->ops->peer_lost(tp, l->rank);
    }
    free(l);
}

static void peer_lost(int world_rank)
{
    struct lost_work *l = calloc(1, sizeof *l);
    if (l == NULL || cdn_engine.ntransports == 0) {
        free(l);
        return;
    }
    l->w.run = lost_run;
    l->rank = world_rank;
    cdn_progress_defer(&l->w);
}

/* tp's fd in the engine's epoll set: added, or its events changed. */
static void watch(struct cdn_transport *tp, int fd, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = tp};
    epoll_ctl(cdn_engine.epfd, op, fd, &ev);
}

/* The fds cdn_progress_mute mutes (transports with CDN_TP_CAP_MUTE and no
 * `polled`), found at wire-up; whether they are muted now. */
static struct mute_fd {
    struct cdn_transport *tp;
    int fd;
} *mute_set;
static int nmute;
static bool muted;
static pthread_mutex_t mute_lock = PTHREAD_MUTEX_INITIALIZER;

int cdn_progress_wireup(void)
{
    free(mute_set);
    mute_set = calloc((size_t)cdn_engine.ntransports + 1, sizeof *mute_set);
    nmute = 0;
    muted = false;
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        int rc = tp->ops->wireup(tp);
        if (rc != MPI_SUCCESS)
            return rc;
        int fd = tp->ops->fd(tp);
        if (fd < 0)
            continue;
        watch(tp, fd, EPOLL_CTL_ADD, EPOLLIN);
        if (mute_set != NULL && (tp->caps & CDN_TP_CAP_MUTE) && tp->ops->polled == NULL)
            mute_set[nmute++] = (struct mute_fd){tp, fd};
    }
    /* Which transport reaches whom is fixed from now on: a table per
     * context answers every send (cdn_progress_transport_in).  Without
     * memory, the transports are asked each time. */
    for (int i = 0; i < cdn_engine.nctx; i++) {
        struct cdn_pctx *c = &cdn_engine.ctx[i];
        c->transport_of = malloc((size_t)cdn_rt.world_size * sizeof *c->transport_of);
        if (c->transport_of != NULL) {
            for (int w = 0; w < cdn_rt.world_size; w++)
                c->transport_of[w] = cdn_progress_transport_find(i, w);
            c->ntransport_of = cdn_rt.world_size;
        }
    }
    /* Fixed before any application thread polls: enter and leave must
     * agree on it, or a transport's count of pollers would drift. */
    cdn_engine.quiet_poll = cdn_engine.thread_on;
    cdn_engine.linger_ns = 1000 * cdn_param_long("CADENCE_PROGRESS_LINGER_US", 100, 0, 100000);
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->fd(tp) >= 0 && tp->ops->polled == NULL)
            cdn_engine.quiet_poll = false;
    }
    if (!cdn_engine.quiet_poll || cdn_engine.oversubscribed)
        cdn_engine.linger_ns = 0;
    cdn_engine.mute_fds = nmute > 0 && cdn_engine.thread_on && !cdn_engine.quiet_poll &&
                          cdn_param_long("CADENCE_PROGRESS_MUTE", 1, 0, 1) != 0;
    cdn_engine.linger_always =
        cdn_engine.linger_ns > 0 &&
        cdn_param_long("CADENCE_PROGRESS_LINGER_ALWAYS", 0, 0, 1) != 0;
    atomic_store(&cdn_engine.linger_on, cdn_engine.linger_always);
    cdn_pmix_on_lost(peer_lost);
    if (cdn_engine.thread_on)
        return cdn_progress_thread_start();
    return MPI_SUCCESS;
}

void cdn_progress_finalize(void)
{
    cdn_pmix_on_lost(NULL);
    cdn_progress_thread_stop();
    /* Control messages still queued (acks, FIN) must reach the peers. */
    while (atomic_load(&cdn_engine.pending_work) > 0)
        cdn_progress_poll();
    cdn_sent_print();
    pthread_mutex_lock(&mute_lock);  /* (the transports go: nothing left to mute) */
    cdn_engine.mute_fds = false;
    nmute = 0;
    free(mute_set);
    mute_set = NULL;
    pthread_mutex_unlock(&mute_lock);
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        tp->ops->finalize(tp);
    }
    cdn_engine.ntransports = 0;
    free(cdn_engine.transports);
    cdn_engine.transports = NULL;
    for (int i = 0; i < cdn_engine.nctx; i++) {
        struct cdn_pctx *c = &cdn_engine.ctx[i];
        free(c->transports);
        free(c->transport_of);
        pthread_mutex_destroy(&c->work_lock);
    }
    if (cdn_engine.ctx != &ctx_none)
        free(cdn_engine.ctx);
    cdn_engine.ctx = &ctx_none;
    cdn_engine.nctx = 1;
    cdn_rt.pctx_count = 1;
    close(cdn_engine.epfd);
    close(cdn_engine.wake_fd);
    close(cdn_engine.park_epfd);
    close(cdn_engine.park_fd);
    close(cdn_engine.timer_fd);
    cdn_engine.epfd = cdn_engine.wake_fd = -1;
    cdn_engine.park_epfd = cdn_engine.park_fd = cdn_engine.timer_fd = -1;
    cdn_request_pool_finalize();
    cdn_staging_finalize();
}

/* epoll_wait with a nanosecond timeout where the kernel has epoll_pwait2
 * (Linux >= 5.11); elsewhere, and under valgrind, which does not know the
 * call, it fails with ENOSYS: then a millisecond timeout, rounded up, so
 * the caller still sleeps instead of spinning on the failure. */
static int epoll_wait_ns(int epfd, struct epoll_event *ev, int max, long timeout_ns)
{
    static atomic_bool no_pwait2;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
        int n = epoll_pwait2(epfd, ev, max, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
    }
    return epoll_wait(epfd, ev, max, (int)((timeout_ns + 999999) / 1000000));
}

/* The timer fired (the thread is awake now): a later wake_soon arms it
 * anew.  Read, then clear: an expiration this read did not take is still
 * in the timerfd and wakes the next epoll, so timer_set is never left true
 * for a timer that will not wake anyone (start_timer). */
static void drain_timer(void)
{
    drain_fd(cdn_engine.timer_fd);
    atomic_store_explicit(&cdn_engine.timer_set, false, memory_order_seq_cst);
}

/* How far away the start timer is armed: CADENCE_PROGRESS_START_DELAY_US,
 * or twice what arming it took lately (at most 1 ms) if that is more.  On
 * a virtual machine the arming call is a hypervisor exit, and on this one
 * it costs more the more memory was touched since the last: 7 us after
 * nothing, 30-38 us after 4 MiB or more, as after a 1 MiB collective's
 * copies (tools/bench/wakecost, timer-arm-cold).  A timer that fires inside
 * its own arming call wakes the thread there, which naps until the
 * application is out (cdn_progress_let_app_out) on another timer: the
 * start of a 1 MiB MPI_Ialltoall took 65 us instead of 30 (docs/progress.md,
 * "Background work"). */
static long start_delay(void)
{
    long twice = 2 * atomic_load_explicit(&cdn_engine.arm_ns, memory_order_relaxed);
    if (twice > 1000000)
        twice = 1000000;  /* an arming call preempted once is not the machine's cost */
    return twice > cdn_engine.start_delay_ns ? twice : cdn_engine.start_delay_ns;
}

/* Arm (on: start_delay() away) or disarm the start
 * timer unless it already is so.  timer_set is true only while the timer
 * is armed or its expiration is unread; it may be false while armed (the
 * thread's drain cleared it), which costs at most an extra arming.  So it
 * is set before arming: on this VM the timer can fire while
 * timerfd_settime is still returning, and a flag set after it, once the
 * thread had drained the expiration, stayed true with nothing armed --
 * every later wake_soon trusted it and woke nobody, and work started by a
 * nonblocking call waited for the application's next MPI call. */
static void start_timer(bool on)
{
    pthread_mutex_lock(&cdn_engine.timer_lock);
    if (atomic_load_explicit(&cdn_engine.timer_set, memory_order_relaxed) != on) {
        struct itimerspec its = {{0, 0}, {0, 0}};
        uint64_t t0 = 0;
        if (on) {
            long delay = start_delay();
            its.it_value = (struct timespec){delay / 1000000000L, delay % 1000000000L};
            atomic_store_explicit(&cdn_engine.timer_set, true, memory_order_seq_cst);
            t0 = cdn_progress_now_ns();
        }
        timerfd_settime(cdn_engine.timer_fd, 0, &its, NULL);
        if (on) {
            long was = atomic_load_explicit(&cdn_engine.arm_ns, memory_order_relaxed);
            long took = (long)(cdn_progress_now_ns() - t0);
            atomic_store_explicit(&cdn_engine.arm_ns, was + (took - was) / 4, memory_order_relaxed);
        } else {
            atomic_store_explicit(&cdn_engine.timer_set, false, memory_order_seq_cst);
        }
    }
    pthread_mutex_unlock(&cdn_engine.timer_lock);
}

/* Get the sleeping progress thread to work: at once, or, when it shares the
 * application's processing unit, by the start timer.  One armed timer
 * serves every caller until it fires or an application thread that goes
 * on to poll cancels it.  app_arming tells the thread, should the timer
 * fire before the system call that armed it has returned (this VM's timer
 * writes can take longer than the delay), that it would run inside the
 * application's call: it naps instead (cdn_progress_let_app_out). */
static void wake_soon(void)
{
    if (cdn_progress_blocking && !cdn_progress_in_thread) {
        /* the caller polls at once (cdn_progress_blocking); its leaving
         * re-checks (cdn_progress_quiet) */
        wake_owed = true;
        return;
    }
    if ((polling_here || starting) && cdn_engine.quiet_poll) {
        /* A waiter's own poll raised a want or queued work: it takes them
         * itself, and when it leaves, the last poller's look at the rings
         * and the work list (cdn_progress_quiet) wakes the thread for what
         * is still there.  Arming the start timer here woke the thread
         * 10 us into the wait, onto the waiter's core, at every 64 KiB
         * MPI_Ibcast + MPI_Wait. */
        return;
    }
    /* seq_cst: pairs with the sleeper's store of thread_asleep and its look
     * at nwork (a thread about to sleep sees the work instead) */
    bool asleep = atomic_load_explicit(&cdn_engine.thread_asleep, memory_order_seq_cst);
    bool parked = atomic_load_explicit(&cdn_engine.parked, memory_order_seq_cst);
    if (!asleep && !parked)
        return;
    if (cdn_engine.start_delay_ns > 0 &&
        atomic_load_explicit(&cdn_engine.thread_shares_pu, memory_order_relaxed)) {
        if (atomic_load_explicit(&cdn_engine.timer_set, memory_order_seq_cst))
            return;
        atomic_fetch_add_explicit(&cdn_engine.app_arming, 1, memory_order_seq_cst);
        start_timer(true);
        atomic_fetch_sub_explicit(&cdn_engine.app_arming, 1, memory_order_release);
        return;
    }
    if (asleep)
        kick_fd();
    cdn_progress_unpark();
}

/* An application thread is about to poll in a blocking call: it runs the
 * started work itself, and a start timer still to fire would only wake the
 * progress thread to find it polling and park again -- two context
 * switches and a timer interrupt on the shared processing unit, about
 * 10 us of the waiter's time here, against one system call to disarm. */
static void cancel_start_timer(void)
{
    if (atomic_load_explicit(&cdn_engine.timer_set, memory_order_relaxed))
        start_timer(false);
}

/* Sleep on park_fd and the timer up to timeout_ns; drain what woke us. */
static void park_wait(long timeout_ns)
{
    struct epoll_event ev[2];
    int n = epoll_wait_ns(cdn_engine.park_epfd, ev, 2, timeout_ns);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.ptr == &timer_tag)
            drain_timer();
        else
            drain_fd(cdn_engine.park_fd);
    }
}

void cdn_progress_let_app_out(void)
{
    while (atomic_load_explicit(&cdn_engine.app_arming, memory_order_acquire) > 0)
        park_wait(start_delay());
}

void cdn_progress_defer_in(int ctx, struct cdn_work *w)
{
    struct cdn_pctx *c = &cdn_engine.ctx[ctx];
    w->next = NULL;
    pthread_mutex_lock(&c->work_lock);
    if (c->work_tail != NULL)
        c->work_tail->next = w;
    else
        c->work_head = w;
    c->work_tail = w;
    atomic_fetch_add_explicit(&c->nwork, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cdn_engine.nwork, 1, memory_order_seq_cst);
    pthread_mutex_unlock(&c->work_lock);
    wake_soon();
}

void cdn_progress_defer(struct cdn_work *w)
{
    cdn_progress_defer_in(0, w);
}

/* Run the deferred work queued so far on c; returns how many items ran. */
static int run_work(struct cdn_pctx *c)
{
    pthread_mutex_lock(&c->work_lock);
    struct cdn_work *w = c->work_head;
    c->work_head = c->work_tail = NULL;
    int n = 0;
    for (struct cdn_work *x = w; x != NULL; x = x->next)
        n++;
    atomic_fetch_sub_explicit(&c->nwork, n, memory_order_relaxed);
    atomic_fetch_sub_explicit(&cdn_engine.nwork, n, memory_order_relaxed);
    pthread_mutex_unlock(&c->work_lock);
    while (w != NULL) {
        struct cdn_work *next = w->next;  /* run() may requeue w */
        w->run(w);
        w = next;
    }
    return n;
}

/* Does some transport of c have input (a lock-free look)?  Inline: every
 * empty poll of a waiting thread runs it. */
static inline __attribute__((always_inline)) bool any_busy(const struct cdn_pctx *c)
{
    for (int i = 0; i < c->ntransports; i++) {
        struct cdn_transport *tp = c->transports[i];
        if (tp->ops->busy == NULL || tp->ops->busy(tp))
            return true;
    }
    return false;
}

/* The last poll of this thread found work but another thread polling
 * (cdn_progress_poll_missed). */
static CDN_TLS bool poll_missed;

/* ... of any context. */
static bool any_ctx_busy(void)
{
    for (int i = 0; i < cdn_engine.nctx; i++)
        if (any_busy(&cdn_engine.ctx[i]))
            return true;
    return false;
}

/* Poll c's transports once (its deferred work left alone). */
static inline int poll_ctx_transports(struct cdn_pctx *c)
{
    if (!any_busy(c))
        return 0;
    if (atomic_load_explicit(&c->poll_lock, memory_order_relaxed) ||
        atomic_exchange_explicit(&c->poll_lock, true, memory_order_acquire)) {
        poll_missed = true;
        return 0;
    }
    int n = 0;
    for (int i = 0; i < c->ntransports; i++) {
        struct cdn_transport *tp = c->transports[i];
        n += tp->ops->poll(tp);
    }
    /* a plain store: a mutex's unlock is a locked instruction, which waits
     * for the store buffer (the release of the ring cells just read) */
    atomic_store_explicit(&c->poll_lock, false, memory_order_release);
    return n;
}

/* The k-th context to poll: the calling thread's home first, then the
 * others in order. */
static inline struct cdn_pctx *nth_from_home(int k)
{
    int home = cdn_progress_home;
    return &cdn_engine.ctx[k == 0 ? home : k <= home ? k - 1 : k];
}

/* Poll every context's transports once, the home context first. */
static int poll_transports(void)
{
    int n = 0;
    for (int k = 0; k < cdn_engine.nctx; k++)
        n += poll_ctx_transports(nth_from_home(k));
    return n;
}

bool cdn_progress_poll_missed(void)
{
    bool m = poll_missed;
    poll_missed = false;
    return m;
}

static inline int poll_ctx(struct cdn_pctx *c)
{
    int ran = 0;
    if (atomic_load_explicit(&c->nwork, memory_order_relaxed) > 0)
        ran = run_work(c);
    return ran + poll_ctx_transports(c);
}

int cdn_progress_poll_ctx(int ctx)
{
    return poll_ctx(&cdn_engine.ctx[ctx]);
}

static int poll_all(void)
{
    int n = cdn_tq_poll();  /* a thread communicator's rank: its queues */
    n += cdn_greq_poll();   /* generalized requests with a poll function */
    if (focus && cdn_engine.nctx > 1) {
        n += poll_ctx(&cdn_engine.ctx[cdn_progress_home]);
        if (n > 0 || ++focus_round % CDN_PROGRESS_FOCUS_ROUNDS != 0)
            return n;
        for (int k = 1; k < cdn_engine.nctx; k++)
            n += poll_ctx(nth_from_home(k));
        return n;
    }
    for (int k = 0; k < cdn_engine.nctx; k++)
        n += poll_ctx(nth_from_home(k));
    return n;
}

int cdn_progress_poll(void)
{
    int n = poll_all();
    /* nothing of its own: the rings of a thread rank that is away */
    return n > 0 ? n : cdn_tq_share();
}

void cdn_progress_signal(void)
{
    /* The caller completed with a seq_cst read-modify-write: the fence
     * before these looks, paired with a sleeper's registration and its
     * look at its condition (block, below). */
    bool futex = atomic_load_explicit(&cdn_engine.sleepers, memory_order_seq_cst) > 0;
    bool ep = atomic_load_explicit(&epoll_app, memory_order_seq_cst);
    if (!futex && !ep)
        return;
    atomic_fetch_add_explicit(&cdn_engine.gen, 1, memory_order_seq_cst);
    if (futex)
        futex_wake_all(&cdn_engine.gen);
    if (ep)
        kick_fd();
}

/* May a message that rang lazily be wanted now (transport.h, lazy_wanted)? */
static bool lazy_wanted(void)
{
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->lazy_wanted != NULL && tp->ops->lazy_wanted(tp))
            return true;
    }
    return false;
}

/* epoll_wait on the engine's set; drains the engine's own fds. */
static CDN_TLS bool peer_rang;  /* a transport's fd woke this thread's last sleep */

static int engine_wait(long timeout_ns)
{
    struct epoll_event ev[8];
    int n = timeout_ns < 0 ? epoll_wait(cdn_engine.epfd, ev, 8, -1)
                           : epoll_wait_ns(cdn_engine.epfd, ev, 8, timeout_ns);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.ptr == NULL)
            drain_fd(cdn_engine.wake_fd);
        else if (ev[i].data.ptr == &timer_tag)
            drain_timer();
        else
            peer_rang = true;
    }
    return n;
}

bool cdn_progress_peer_rang(void)
{
    bool r = peer_rang;
    peer_rang = false;
    return r;
}

/* Arm every transport, sleep in epoll up to timeout_ns unless work is there
 * or `still` says the reason to sleep has gone, disarm.  aside: the
 * progress thread standing aside -- what is in the rings or on the work
 * list is the pollers' to take, so only `still` and a nap matter. */
static void armed_sleep(long timeout_ns, bool (*still)(unsigned), unsigned arg, bool aside)
{
    int ready = 0, nap = 0;
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        int a = tp->ops->arm ? tp->ops->arm(tp) : 0;
        ready |= a == 1;
        nap |= a == 2;
    }
    atomic_thread_fence(memory_order_seq_cst);
    ready |= atomic_load_explicit(&cdn_engine.nwork, memory_order_seq_cst) > 0;
    if ((aside || !ready) && (still == NULL || still(arg))) {
        if ((nap || atomic_load(&cdn_engine.pending_work) > 0) &&
            (timeout_ns < 0 || timeout_ns > 1000000L))
            timeout_ns = 1000000L;
        if (!aside && cdn_progress_in_thread && atomic_load(&share_work) > 0 &&
            (timeout_ns < 0 || timeout_ns > share_ns))
            timeout_ns = share_ns;
        /* A message rung lazily while we armed may have been missed by the
         * re-check above (ring.h, "Lazy cells"); when one may be wanted,
         * look again once its store is surely visible, still armed. */
        bool settle = (timeout_ns < 0 || timeout_ns > CDN_PROGRESS_SETTLE_NS) && lazy_wanted();
        if (!settle)
            engine_wait(timeout_ns);
        else if (engine_wait(CDN_PROGRESS_SETTLE_NS) == 0 &&
                 (aside ? still == NULL || still(arg) : !any_ctx_busy()))
            engine_wait(timeout_ns < 0 ? -1 : timeout_ns - CDN_PROGRESS_SETTLE_NS);
    }
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->disarm)
            tp->ops->disarm(tp);
    }
}

bool cdn_progress_nap(long timeout_ns)
{
    /* seq_cst store, then the look at the wants: pairs with
     * cdn_progress_want's increment and look at napping -- a thread going
     * to sleep in MPI (it wants everything), an urgent receive or a
     * schedule waiting for a completion rely on the doorbells, so either
     * we see the want and arm, or its rise kicks us */
    atomic_store_explicit(&napping, true, memory_order_seq_cst);
    bool nap = atomic_load_explicit(&cdn_engine.wants[CDN_WANT_DATA], memory_order_seq_cst) <= 0 &&
               atomic_load_explicit(&cdn_engine.wants[CDN_WANT_DONE], memory_order_seq_cst) <= 0;
    if (nap)
        engine_wait(timeout_ns);
    atomic_store_explicit(&napping, false, memory_order_relaxed);
    return nap;
}

/* Shared with the progress thread. */
void cdn_progress_epoll_sleep(long timeout_ns, bool (*still)(unsigned), unsigned arg)
{
    armed_sleep(timeout_ns, still, arg, false);
}

static bool gen_unchanged(unsigned gen)
{
    return atomic_load_explicit(&cdn_engine.gen, memory_order_seq_cst) == gen;
}

/* A thread blocked in MPI waits for something it cannot name here: it
 * wants every arrival. */
static void want_all(int delta)
{
    cdn_progress_want(CDN_WANT_DATA, delta);
    cdn_progress_want(CDN_WANT_DONE, delta);
}

/* Completions bump the generation only while someone sleeps on it or in
 * epoll (cdn_progress_signal): a sleeper registers (sleepers, epoll_app:
 * seq_cst read-modify-writes), then reads the generation and looks at its
 * condition once more -- either the completer sees it registered, or it
 * sees the completion. */
static void block(bool (*cond)(void *arg), void *arg, bool first)
{
    cdn_progress_app_leave();  /* asleep: the progress thread takes over */
    cdn_progress_linger_end(CDN_LINGER_OTHER);
    want_all(1);
    cdn_progress_unpark();
    bool expected = false;
    if (!cdn_engine.thread_on && cdn_engine.ntransports > 0 &&
        atomic_compare_exchange_strong(&epoll_app, &expected, true)) {
        unsigned gen = atomic_load_explicit(&cdn_engine.gen, memory_order_seq_cst);
        if (!cond(arg) && !cdn_tq_pending())
            cdn_progress_epoll_sleep(100000000L, gen_unchanged, gen);
        atomic_store(&epoll_app, false);
        want_all(-1);
        cdn_progress_app_enter();
        return;
    }
    atomic_fetch_add_explicit(&cdn_engine.sleepers, 1, memory_order_seq_cst);
    unsigned gen = atomic_load_explicit(&cdn_engine.gen, memory_order_seq_cst);
    /* With a progress thread (or nothing to watch) only completions matter;
     * otherwise nap briefly in case the epoll sleeper leaves.  The first
     * sleep of a wait is short: a message rung lazily as we raised our
     * want may have been missed by the re-check (ring.h, "Lazy cells"),
     * and the poll after it takes the message. */
    long timeout = (cdn_engine.thread_on || cdn_engine.ntransports == 0) ? 50000000L : 1000000L;
    if (first && timeout > CDN_PROGRESS_SETTLE_NS)
        timeout = CDN_PROGRESS_SETTLE_NS;
    if (!cond(arg) && !cdn_tq_pending())
        futex_wait(&cdn_engine.gen, gen, timeout);
    atomic_fetch_sub_explicit(&cdn_engine.sleepers, 1, memory_order_seq_cst);
    want_all(-1);
    cdn_progress_app_enter();
}

void cdn_progress_park(long timeout_ns)
{
    atomic_store_explicit(&cdn_engine.parked, true, memory_order_seq_cst);
    /* an unpark after this look writes park_fd: epoll does not sleep */
    if (atomic_load_explicit(&cdn_engine.app_pollers, memory_order_seq_cst) > 0)
        park_wait(timeout_ns);
    atomic_store_explicit(&cdn_engine.parked, false, memory_order_relaxed);
}

void cdn_progress_unpark_slow(void)
{
    if (atomic_exchange_explicit(&cdn_engine.parked, false, memory_order_seq_cst)) {
        uint64_t one = 1;
        if (write(cdn_engine.park_fd, &one, sizeof one) < 0) {
            /* EAGAIN: already signalled */
        }
    }
}

static void blocking_entered(void);

/* The calling application thread stops polling: the transports ring what
 * it owes (cdn_progress_polls_on). */
static void settle(void)
{
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->settle != NULL)
            tp->ops->settle(tp);
    }
}

void cdn_progress_blocking_begin(void)
{
    if (!cdn_engine.quiet_poll || cdn_progress_blocking)
        return;
    cdn_progress_blocking = true;
    cdn_progress_app_enter();
}

void cdn_progress_blocking_end(void)
{
    if (!cdn_progress_blocking)
        return;
    cdn_progress_blocking = false;
    settle();
    cdn_progress_leave_short();
    if (wake_owed) {
        wake_owed = false;
        wake_soon();
    }
}

void cdn_progress_wait_done(void)
{
    if (cdn_progress_blocking)
        cdn_progress_blocking_end();  /* which settles */
    else
        settle();
}

/* Take the linger's count in the transports' pollers for the caller (it
 * gives the count back or keeps it as a poller's); false if there is
 * none or another thread took it first. */
static bool linger_take(enum cdn_linger_end why)
{
    int yes = 1;
    if (atomic_load_explicit(&cdn_engine.lingering, memory_order_relaxed) == 0 ||
        !atomic_compare_exchange_strong(&cdn_engine.lingering, &yes, 0))
        return false;
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&cdn_engine.linger_ends[why], 1, memory_order_relaxed);
    return true;
}

bool cdn_progress_start_begin(bool end_linger)
{
    if (!cdn_engine.quiet_poll || !cdn_engine.thread_on || cdn_progress_in_thread ||
        cdn_progress_blocking || polling_here || starting)
        return false;
    starting = true;
    if (end_linger && linger_take(CDN_LINGER_STARTED)) {
        /* the linger's count in the transports' pollers becomes ours:
         * leaving, we are the last poller and look at the rings as such */
        atomic_fetch_add_explicit(&cdn_engine.app_pollers, 1, memory_order_seq_cst);
        return true;
    }
    cdn_progress_app_enter();
    return true;
}

bool cdn_progress_polls_on(void)
{
    /* Oversubscribed, a waiter yields the processor between polls and may
     * not poll again for a scheduler slice: it rings at once. */
    return cdn_engine.quiet_poll && !cdn_progress_in_thread && !cdn_engine.oversubscribed &&
           (polling_here || starting || cdn_progress_blocking || late_polling);
}

static void leave(bool held);

void cdn_progress_start_end(bool entered, bool held)
{
    if (!entered)
        return;
    /* What arrived for the operation while it started (a peer's RTS for a
     * receive just posted) would wake the thread as we leave, to preempt
     * the application right after this call for a moment's work: take it
     * here. */
    poll_transports();
    starting = false;
    if (!held)
        settle();  /* the wait expected next will not pay it */
    if (held) {
        if (cdn_sent_report)
            atomic_fetch_add_explicit(&cdn_engine.held, 1, memory_order_relaxed);
        leave(true);  /* the count lingers for the wait expected next */
    } else {
        cdn_progress_app_leave();  /* wakes the thread for what is left (cdn_progress_quiet) */
    }
}

/* Mute or unmute, in the engine's epoll set, the fds of mute_set
 * (tcp's sockets, UCX's event fd), as application
 * threads start or stop polling in blocking calls (cdn_engine.mute_fds).
 * Asleep in epoll on a socket, the progress thread was woken by every
 * message the polling application was about to take itself: the wake-up
 * runs inside the sender's delivery, under the socket's and epoll's
 * locks the poller then waits for, and on this machine's paravirtualized
 * processors it delayed one message in twenty or so by 15-45 us (an 8-byte
 * TCP ping-pong: p99 40 us with the thread, 7 us without;
 * docs/progress.md, "Muted sockets").  A muted fd wakes nobody; unmuted
 * with input there, it wakes the thread at once (level-triggered), so
 * nothing that arrived while the last poller left waits.  The state
 * follows the count read under the lock, so two threads' edges applied
 * out of order still end on the count's side. */
void cdn_progress_mute(void)
{
    pthread_mutex_lock(&mute_lock);
    bool want = atomic_load_explicit(&cdn_engine.app_pollers, memory_order_seq_cst) > 0;
    if (want != muted) {
        muted = want;
        if (want && cdn_sent_report)
            atomic_fetch_add_explicit(&cdn_engine.mutes, 1, memory_order_relaxed);
        for (int i = 0; i < nmute; i++)
            watch(mute_set[i].tp, mute_set[i].fd, EPOLL_CTL_MOD, want ? 0u : EPOLLIN);
    }
    pthread_mutex_unlock(&mute_lock);
}

void cdn_progress_quiet(int delta)
{
    bool wake = false;
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->polled != NULL && tp->ops->polled(tp, delta))
            wake = true;
    }
    if (delta > 0 || atomic_load_explicit(&cdn_engine.app_pollers, memory_order_seq_cst) > 0)
        return;
    /* The last poller is out.  Work deferred while it polled (its own
     * blocking call's left-out wake-ups included) or sends waiting for ring
     * space need the thread now; nwork pairs with cdn_progress_defer's
     * seq_cst increment, whose wake_soon may have found the thread standing
     * aside and been taken by it for a poller's job. */
    if (wake || atomic_load_explicit(&cdn_engine.nwork, memory_order_seq_cst) > 0 ||
        atomic_load_explicit(&cdn_engine.pending_work, memory_order_relaxed) > 0) {
        if (atomic_load_explicit(&cdn_engine.thread_asleep, memory_order_seq_cst))
            kick_fd();
    }
}

static bool app_polling(unsigned unused)
{
    (void)unused;
    return atomic_load_explicit(&cdn_engine.app_pollers, memory_order_seq_cst) > 0;
}

void cdn_progress_stand_aside(long timeout_ns)
{
    atomic_store_explicit(&cdn_engine.thread_asleep, true, memory_order_seq_cst);
    /* app_polling is looked at after arming: pairs with the last poller's
     * leaving (cdn_progress_quiet), so either we see it gone or it sees
     * us armed */
    armed_sleep(timeout_ns, app_polling, 0, true);
    atomic_store_explicit(&cdn_engine.thread_asleep, false, memory_order_relaxed);
}

/* Does an application waiter with idle empty polls behind it spin on?
 * After the first spin_polls, until wait_spin_ns have passed since then
 * (the clock read every 256 polls); not after a sleep that found nothing. */
static bool spin_on(uint64_t *from, int idle, bool slept)
{
    if (slept || cdn_engine.wait_spin_ns <= 0)
        return false;
    if (idle != cdn_engine.spin_polls && (idle & 255) != 0)
        return true;
    uint64_t now = cdn_progress_now_ns();
    if (idle == cdn_engine.spin_polls)
        *from = now;
    return now - *from < (uint64_t)cdn_engine.wait_spin_ns;
}

void cdn_progress_wait_until(bool (*cond)(void *arg), void *arg)
{
    blocking_entered();
    if (cond(arg)) {
        cdn_progress_wait_done();
        return;
    }
    if (cdn_progress_blocking) {
        cdn_progress_blocking = false;  /* entered in cdn_progress_blocking_begin */
    } else {
        cdn_progress_app_enter();
    }
    wake_owed = false;  /* this thread polls now; cdn_progress_quiet settles the rest */
    polling_here = true;
    cancel_start_timer();
    int idle = 0;
    bool slept = false;  /* since the last event found */
    bool long_wait = false;
    uint64_t spin_from = 0;
    for (;;) {
        if (cond(arg))
            break;
        /* The progress thread is at work on the one processing unit we
         * share: spinning here would halve its speed.  Let it run. */
        if (atomic_load_explicit(&cdn_engine.thread_busy, memory_order_relaxed) &&
            atomic_load_explicit(&cdn_engine.thread_shares_pu, memory_order_relaxed)) {
            sched_yield();
            continue;
        }
        if (cdn_progress_poll() > 0) {
            idle = 0;
            slept = false;
            continue;
        }
        if (++idle >= cdn_engine.spin_polls)
            long_wait = true;
        if (idle < cdn_engine.spin_polls || spin_on(&spin_from, idle, slept)) {
            /* Oversubscribed: the peer we wait for may need this processor
             * (yield-when-idle); a yield with nobody else runnable costs
             * a system call and nothing more. */
            if (cdn_engine.oversubscribed)
                sched_yield();
            else
                CDN_CPU_RELAX();
            continue;
        }
        unsigned gen = atomic_load_explicit(&cdn_engine.gen, memory_order_relaxed);
        block(cond, arg, !slept);
        slept = true;
        /* Woken by a timeout with nothing completed: look once and sleep
         * again.  Spinning anew after every timeout cost an idle waiter
         * 2000 polls per 50 ms -- on TCP each is an epoll_wait system
         * call, 6-12% of a core.  An event found by the poll restarts the
         * spin. */
        idle = gen_unchanged(gen) ? cdn_engine.spin_polls - 1 : 0;
    }
    polling_here = false;
    settle();
    if (long_wait)
        cdn_progress_app_leave();
    else
        cdn_progress_leave_short();
}

void cdn_progress_leave_short(void)
{
    leave(false);
}

/* Leave as a poller, the count lingering if lingering is on and nothing
 * waits for the thread -- or, held (a start whose wait is expected next),
 * whatever waits: the waiter will take it. */
static void leave(bool held)
{
    if (held && !atomic_load_explicit(&cdn_engine.held_start, memory_order_relaxed))
        atomic_store_explicit(&cdn_engine.held_start, true, memory_order_relaxed);
    if ((held || atomic_load_explicit(&cdn_engine.linger_on, memory_order_relaxed)) &&
        !cdn_progress_in_thread &&
        (held || (atomic_load_explicit(&cdn_engine.nwork, memory_order_relaxed) == 0 &&
                  atomic_load_explicit(&cdn_engine.pending_work, memory_order_relaxed) == 0))) {
        /* a change is all the thread looks for: no locked instruction */
        atomic_store_explicit(&cdn_engine.exits,
                              atomic_load_explicit(&cdn_engine.exits, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        int no = 0;
        /* a thread asleep with no timeout would not end it (below) */
        if (!atomic_load_explicit(&cdn_engine.thread_deep, memory_order_relaxed) &&
            atomic_load_explicit(&cdn_engine.lingering, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&cdn_engine.lingering, &no, 1)) {
            /* our count in the transports' pollers becomes the linger's */
            atomic_fetch_sub_explicit(&cdn_engine.app_pollers, 1, memory_order_seq_cst);
            if (cdn_sent_report)
                atomic_fetch_add_explicit(&cdn_engine.lingers, 1, memory_order_relaxed);
            /* A thread asleep with no timeout would never end it: pairs
             * with its seq_cst store of thread_deep and look at lingering
             * (progress_main) -- either it sees the linger and sleeps
             * timed, or we see it deep and end the linger as any last
             * poller leaves. */
            if (atomic_load_explicit(&cdn_engine.thread_deep, memory_order_seq_cst))
                cdn_progress_linger_end(CDN_LINGER_OTHER);
            return;
        }
    }
    cdn_progress_app_leave();
}

enum { OVERLAP_SCORE_MAX = 4, OVERLAP_SCORE_ON = 2 };

bool cdn_progress_computes_next(void)
{
    return cdn_engine.linger_ns <= 0 ||
           atomic_load_explicit(&cdn_engine.overlap_score, memory_order_relaxed) >=
               OVERLAP_SCORE_ON;
}

void cdn_progress_rdv_started(void)
{
    if (cdn_engine.linger_ns > 0)
        atomic_store_explicit(&cdn_engine.p2p_start_ns, cdn_progress_now_ns(),
                              memory_order_relaxed);
}

void cdn_progress_p2p_started(void)
{
    cdn_progress_rdv_started();
    if (cdn_progress_computes_next())
        cdn_progress_linger_end(CDN_LINGER_STARTED);
}

/* A blocking call is entered: score the gap since the last point-to-point
 * start that none has followed yet (cdn_progress_p2p_started).  Plain
 * loads and stores: with several application threads it is a hint. */
static void blocking_entered(void)
{
    uint64_t start = atomic_load_explicit(&cdn_engine.p2p_start_ns, memory_order_relaxed);
    if (start == 0)
        return;
    atomic_store_explicit(&cdn_engine.p2p_start_ns, 0, memory_order_relaxed);
    int64_t gap = (int64_t)(cdn_progress_now_ns() - start);
    int score = atomic_load_explicit(&cdn_engine.overlap_score, memory_order_relaxed);
    if (gap > CDN_PROGRESS_OVERLAP_GAP_NS)
        score = score < OVERLAP_SCORE_MAX ? score + 1 : score;
    else
        score = score > 0 ? score - 1 : 0;
    atomic_store_explicit(&cdn_engine.overlap_score, score, memory_order_relaxed);
}

bool cdn_progress_linger_end(enum cdn_linger_end why)
{
    if (!linger_take(why))
        return false;
    if (cdn_engine.quiet_poll)
        cdn_progress_quiet(-1);
    return true;
}

static void wait_on(int k, bool late, bool (*cond)(void *arg), void *arg)
{
    int home = cdn_progress_home;
    bool was = focus;
    cdn_progress_home = k;
    focus = true;
    if (late)
        cdn_progress_wait_until_late(cond, arg);
    else
        cdn_progress_wait_until(cond, arg);
    focus = was;
    cdn_progress_home = home;
}

void cdn_progress_wait_on(int k, bool (*cond)(void *arg), void *arg)
{
    wait_on(k, false, cond, arg);
}

void cdn_progress_wait_on_late(int k, bool (*cond)(void *arg), void *arg)
{
    wait_on(k, true, cond, arg);
}

void cdn_progress_wait_until_late(bool (*cond)(void *arg), void *arg)
{
    /* Oversubscribed, the peer waited for may need this processor: the
     * full wait yields between polls at once. */
    if (cdn_engine.quiet_poll && !cdn_progress_blocking && !cdn_engine.oversubscribed) {
        late_polling = true;
        for (int i = 0; i < CDN_PROGRESS_LATE_POLLS; i++) {
            if (cond(arg)) {
                late_polling = false;
                settle();
                return;
            }
            /* the thread works on our processing unit: the full wait yields */
            if (atomic_load_explicit(&cdn_engine.thread_busy, memory_order_relaxed) &&
                atomic_load_explicit(&cdn_engine.thread_shares_pu, memory_order_relaxed))
                break;
            if (cdn_progress_poll() == 0)
                CDN_CPU_RELAX();
        }
        late_polling = false;  /* the full wait polls on: what is owed stays owed */
    }
    cdn_progress_wait_until(cond, arg);
}

struct cdn_transport *cdn_progress_transport_find(int ctx, int world_rank)
{
    const struct cdn_pctx *c = &cdn_engine.ctx[ctx];
    for (int i = 0; i < c->ntransports; i++) {
        struct cdn_transport *tp = c->transports[i];
        if (tp->ops->reaches(tp, world_rank))
            return tp;
    }
    return NULL;
}

size_t cdn_progress_eager_limit(int world_rank, bool always)
{
    struct cdn_transport *tp = cdn_progress_transport_for(world_rank);
    return tp == NULL ? 0 : always ? tp->eager_always : tp->eager_limit;
}

/* A want's count in this process left or reached zero (cdn_progress_want).
 * Each such edge makes exactly one change of one to the transports'
 * counts, so they always add up to the number of wants that are raised
 * here (0 or 1), whatever order two threads' edges reach them in.  They
 * may be out of step for a moment: thread A raises 0 -> 1, thread B lowers
 * 1 -> 0 and its -1 reaches the doorbell before A's +1 (a moment at -1,
 * read as none, while none is raised here), or a third thread raises
 * 0 -> 1 again and its +1 lands before A's (a moment at 0 after B's -1
 * while a want is raised here, until A's +1 lands).  No wake-up is lost
 * by it: a doorbell count reaches 1 only by a +1 that finds 0, and that
 * +1 is a seq_cst read-modify-write followed by the look at sleepers and
 * rings (shm_want) -- every cell a producer wrote without ringing while
 * the count read 0 or less is found by that look, just as for a want
 * rising the first time. */
void cdn_progress_want_edge(enum cdn_want w, int delta)
{
    int edge = delta > 0 ? 1 : -1;
    if (edge > 0 && w != CDN_WANT_POSTED &&
        atomic_load_explicit(&napping, memory_order_seq_cst))
        kick_fd();  /* cdn_progress_nap */
    for (int i = 0; i < cdn_engine.ntransports; i++) {
        struct cdn_transport *tp = cdn_engine.transports[i];
        if (tp->ops->want == NULL || !tp->ops->want(tp, (int)w, edge) || cdn_progress_in_thread)
            continue;
        if (cdn_engine.thread_on)
            wake_soon();  /* like started work: not inside the call that raised the want */
        else
            kick_fd();
    }
}

/* The lock is held (spin.h): spin on a plain load (no line bouncing
 * between spinners), then yield between tries -- the holder may need
 * this processor. */
void cdn_spin_lock_slow(struct cdn_spin *l)
{
    for (int tries = 0;; tries++) {
        for (int i = 0; i < 128 && atomic_load_explicit(&l->held, memory_order_relaxed); i++)
            CDN_CPU_RELAX();
        if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->held, true, memory_order_acquire))
            return;
        if (tries > 0)
            sched_yield();
    }
}

void cdn_progress_kick(void)
{
    kick_fd();
}

void cdn_progress_work_changed(int delta)
{
    atomic_fetch_add(&cdn_engine.pending_work, delta);
}

bool cdn_progress_thread_running(void)
{
    return cdn_engine.thread_on;
}

bool cdn_progress_driven(void)
{
    return cdn_progress_in_thread ||
           atomic_load_explicit(&cdn_engine.app_pollers, memory_order_relaxed) > 0;
}
