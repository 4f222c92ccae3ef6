/*
 * The progress engine: the default progress context, its transports, the
 * completion generation that blocked threads sleep on, and the background
 * progress thread.
 *
 * Like libuv's loop: poll = run every transport's poll once and process
 * what arrived; block = arm the transports' doorbells and sleep in epoll on
 * their fds until something arrives.  One thread at a time polls the
 * transports (poll_lock, taken with trylock so nobody queues behind it);
 * other waiters sleep on the completion generation, a futex word bumped by
 * every completion.
 */
#ifndef CDN_ENGINE_H
#define CDN_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* How long after arming (or raising its want for data) a sleeper looks
 * again for a message whose doorbell skipped the fence: far longer than a
 * store takes to leave a processor's store buffer (transport/shm/ring.h,
 * "Lazy cells"). */
#define CDN_PROGRESS_SETTLE_NS 100000L

/* Thread-local variables of the hot path: the initial-exec model reads
 * them at a fixed offset from the thread pointer; the default model of a
 * shared library calls __tls_get_addr for every access (1-2% of the
 * message-rate benchmark).  A few bytes of static TLS, which glibc keeps
 * a reserve of even for a library loaded by dlopen. */
#define CDN_TLS _Thread_local __attribute__((tls_model("initial-exec")))

#if defined(__x86_64__) || defined(__i386__)
#define CDN_CPU_RELAX() __builtin_ia32_pause()
#else
#define CDN_CPU_RELAX() atomic_signal_fence(memory_order_seq_cst)
#endif

struct cdn_transport;

/* What a sleeping thread must be woken for, besides requests to act: a
 * message (CDN_WANT_DATA: an urgent receive is posted, or a thread blocks
 * in MPI), a send's completion (CDN_WANT_DONE: a thread blocks in MPI, or
 * a schedule has steps after a send), a message whose sender waits for
 * this process to act (an RTS, a synchronous send: CDN_WANT_POSTED, some
 * receive is posted, or CDN_WANT_DATA).  Transports may let other
 * arrivals wait for the next poll (transport/shm/ring.h, "Wants"). */
enum cdn_want { CDN_WANT_DATA, CDN_WANT_DONE, CDN_WANT_POSTED };

/* Work handed to whichever thread polls next: the progress thread, or an
 * application thread waiting in MPI (cdn_progress_defer). */
struct cdn_work {
    struct cdn_work *next;
    void (*run)(struct cdn_work *w);
};

/* A progress context: an independent lane of the engine.  Its own
 * instance of every transport (own rings, own connections: a message of a
 * communicator mapped here travels only through them), its own poll lock,
 * so threads progressing different contexts never wait for each other,
 * and its own deferred-work list.  Matching is by communicator context id
 * (progress/match.c), one lock per communicator, whichever context a
 * message arrives through.  Context 0 carries MPI_COMM_WORLD and every
 * communicator not mapped elsewhere (runtime/comm.h, pctx). */
struct cdn_pctx {
    atomic_bool poll_lock;        /* one poller of its transports at a time: only ever
                                   * tried (an exchange), released by a plain store */
    int ntransports;
    struct cdn_transport **transports;  /* its instances, in CADENCE_TRANSPORTS order */
    /* The instance reaching each world rank (NULL: none), filled at
     * wire-up; ntransport_of is 0 until then. */
    struct cdn_transport **transport_of;
    int ntransport_of;
    pthread_mutex_t work_lock;    /* the deferred-work list */
    struct cdn_work *work_head, *work_tail;
    atomic_int nwork;             /* items on it */
};

/* The most contexts CADENCE_PROGRESS_CONTEXTS may ask for. */
#define CDN_PCTX_MAX 64

struct cdn_engine {
    atomic_uint gen;              /* completion generation: a futex word */
    atomic_int sleepers;          /* threads in futex wait on gen */
    int nctx;                     /* CADENCE_PROGRESS_CONTEXTS */
    struct cdn_pctx *ctx;         /* the contexts, by id */
    /* Every transport instance of every context: what sleeping, doorbells
     * and wants act on (a sleeper is woken by input for any context). */
    int ntransports;
    struct cdn_transport **transports;
    size_t eager_min;             /* the smallest eager_limit of the transports (opened once) */
    int epfd;                     /* every transport fd plus wake_fd */
    int wake_fd;                  /* eventfd: interrupts a thread blocked in epoll */
    atomic_int pending_work;      /* queued sends etc. that need polling, not sleeping */
    atomic_int nwork;             /* deferred work items, every context's */
    /* background progress thread */
    int nthreads;                 /* CADENCE_PROGRESS_THREADS: the thread, and helpers */
    bool thread_on;
    atomic_bool thread_stop;
    pthread_t thread;
    int spin_polls;               /* the progress thread's empty polls before sleeping */
    /* Passive target: when this process last served another's one-sided
     * operation by message (progress/rma.c), and how long after that the
     * progress thread keeps polling before it sleeps: the next one of a
     * stream is then taken without a wake-up (CADENCE_RMA_SERVE_SPIN_US). */
    atomic_llong rma_served_ns;
    long rma_spin_ns;
    _Atomic long wait_spin_ns;    /* an application waiter spins on this long after those
                                   * (cdn_progress_wait_until) */
    atomic_bool oversubscribed;   /* more ranks on the node than processing units
                                   * (cdn_progress_oversubscribed); atomic, as
                                   * wait_spin_ns: a thread communicator's
                                   * making may set both while threads run */
    long background_min;          /* bytes: schedules worth handing to the thread */
    atomic_uint app_pollers;      /* application threads polling in a blocking call */
    atomic_bool parked;           /* the progress thread sleeps in cdn_progress_park */
    int park_epfd;                /* ... in epoll on park_fd and timer_fd */
    int park_fd;                  /* eventfd: ends the park */
    int timer_fd;                 /* timerfd: wakes the thread a moment later */
    long start_delay_ns;          /* CADENCE_PROGRESS_START_DELAY_US */
    atomic_long arm_ns;           /* what arming timer_fd took lately (start_timer) */
    atomic_bool timer_set;        /* timer_fd is armed and has not woken the thread yet */
    pthread_mutex_t timer_lock;   /* arming or disarming timer_fd with timer_set */
    atomic_int app_arming;        /* application threads inside the call arming it */
    atomic_bool thread_asleep;    /* the progress thread is (about to be) in epoll */
    atomic_bool thread_busy;      /* ... is running transport or deferred work */
    atomic_bool thread_shares_pu; /* ... is bound to the application's only PU */
    /* Every transport with an fd quiets its doorbell while application
     * threads poll (transport op `polled`): the progress thread then stands
     * aside asleep in its ordinary epoll instead of parking. */
    bool quiet_poll;
    /* Otherwise, while application threads poll in a blocking call, the
     * fds of the transports with CDN_TP_CAP_MUTE (tcp, ucx) are muted in
     * the engine's epoll set (cdn_progress_mute; CADENCE_PROGRESS_MUTE). */
    bool mute_fds;
    /* Lingering (cdn_progress_leave_short): after a short blocking call the
     * transports' count of pollers keeps one more for a while, so peers
     * ring nobody while the application is between calls.  linger_ns is
     * the progress thread's look interval then (0: off); lingering is 1
     * while the count holds it; exits counts the short waits that began
     * or extended one.  Atomic (its loads are plain moves on x86): the
     * thread reads it while MPI_Finalize turns it off. */
    atomic_long linger_ns;
    atomic_int lingering;
    atomic_uint exits;
    atomic_bool thread_deep;      /* the progress thread sleeps with no timeout */
    atomic_bool held_start;       /* a held start since the thread's last look (linger_on) */
    atomic_bool linger_on;        /* short blocking calls linger now (progress_main) */
    bool linger_always;           /* ... whatever the doorbells (CADENCE_PROGRESS_LINGER_ALWAYS) */
    /* Point-to-point starts and lingers (cdn_progress_p2p_started): when
     * the last nonblocking rendezvous-size start was (0: a blocking call
     * has been entered since), and how often lately the application
     * computed after such a start (0..OVERLAP_SCORE_MAX). */
    _Atomic uint64_t p2p_start_ns;
    atomic_int overlap_score;
    /* CADENCE_TRANSPORT_REPORT's counts: lingers begun, and ended by the
     * progress thread's look, by a start, by a sleeper or shutdown; held
     * starts (cdn_progress_start_end). */
    atomic_ulong lingers, linger_ends[3], held;
    atomic_ulong mutes;           /* ... and times the fds were muted (cdn_progress_mute) */
    /* This process's wants (enum cdn_want), counted here; the transports
     * hear only of a count leaving or reaching zero (cdn_progress_want).
     * A line of its own: every posted receive moves it. */
    _Alignas(64) atomic_int wants[3];
};

extern struct cdn_engine cdn_engine;
/* True in the background progress thread. */
extern CDN_TLS bool cdn_progress_in_thread;
/* The context the calling thread progresses first (the context of the
 * request it waits for: cdn_request_wait); the others follow. */
extern CDN_TLS int cdn_progress_home;
/* Wait until cond(arg) as cdn_progress_wait_until, for requests that are
 * all on progress context k: with several contexts the polls look at k
 * every round and at the others every CDN_PROGRESS_FOCUS_ROUNDS-th empty
 * one -- a thread on a stream of its own then stays off the rings and
 * locks of the other streams' contexts (and of context 0), which the
 * progress thread and their own threads serve. */
#define CDN_PROGRESS_FOCUS_ROUNDS 16
void cdn_progress_wait_on(int k, bool (*cond)(void *arg), void *arg);
void cdn_progress_wait_on_late(int k, bool (*cond)(void *arg), void *arg);

/* Bring the engine and transports up (before the PMIx fence), connect them
 * (after it), take them down (before the last fence). */
int cdn_progress_init(void);
int cdn_progress_wireup(void);
void cdn_progress_finalize(void);

/* Are there more ranks on this node than processing units for them?  The
 * launcher spreads bound ranks over the node's units, so a process bound to
 * fewer units than are online compares the local rank count with the
 * online units, an unbound one with the units it may use.
 * CADENCE_PROGRESS_OVERSUBSCRIBED (auto, 0, 1) overrides.  Then nobody
 * spins: waiters yield the processor between polls (the ranks that must
 * make progress get it at once) and the progress thread sleeps without
 * spinning and without a raised priority. */
bool cdn_progress_oversubscribed(int local_size);
/* This process now runs `threads` application threads that each wait in
 * MPI as a rank would (a thread communicator): with more such waiters on
 * the node than processing units, waiting threads yield between polls
 * instead of spinning (cdn_engine.oversubscribed) -- two threads spinning
 * on one unit cost each other a scheduler slice per message, 1 ms. */
void cdn_progress_waiters(int threads);

/* Poll every context once, the calling thread's home first (its deferred
 * work, then its transports); returns how many events were processed. */
int cdn_progress_poll(void);
/* The same for one context only. */
int cdn_progress_poll_ctx(int ctx);
/* Did this thread's polls since the last call find work that another
 * thread was polling at that moment (the transports' lock held)?  Clears
 * the flag. */
bool cdn_progress_poll_missed(void);
/* Something completed: wake threads sleeping on the generation.  Called
 * right after the seq_cst read-modify-write that made the completion
 * visible (cdn_request_event): the generation moves only while a thread
 * sleeps. */
void cdn_progress_signal(void);
/* Arm the transports' doorbells and sleep in epoll (at most timeout_ns, -1:
 * no limit) unless work is there or still(arg) turns false; then disarm. */
void cdn_progress_epoll_sleep(long timeout_ns, bool (*still)(unsigned), unsigned arg);
/* Did a transport's fd (a peer's doorbell) end this thread's last sleep?
 * Clears the answer. */
bool cdn_progress_peer_rang(void);
/* The progress thread sleeps up to timeout_ns without arming the
 * doorbells: peers do not ring it meanwhile; kicks (deferred work, queued
 * sends, an application thread going to sleep in MPI, a want for data or
 * completions rising) and readable sockets end the nap early.  False,
 * without sleeping, when such a want is raised (a thread asleep in MPI,
 * urgent receives, schedules: they rely on the doorbells). */
bool cdn_progress_nap(long timeout_ns);
/* Add delta to a want (enum cdn_want); every rise must be matched by a
 * fall.  Counted in this process (one read-modify-write on a line no peer
 * reads); only a count rising from none or falling to none reaches the
 * transports (cdn_progress_want_edge), so a stream of posted receives
 * touches the peers' doorbell lines twice, not twice per receive.  A rise
 * from none re-checks the transports and wakes the sleeper if what it now
 * wants already arrived. */
void cdn_progress_want_edge(enum cdn_want w, int delta);
static inline void cdn_progress_want(enum cdn_want w, int delta)
{
    /* seq_cst: pairs with cdn_progress_nap's look at the wants */
    int old = atomic_fetch_add_explicit(&cdn_engine.wants[w], delta, memory_order_seq_cst);
    if (old == 0 || old + delta == 0)
        cdn_progress_want_edge(w, delta);
}
/* Progress thread, just woken: if an application thread is still inside
 * the call that armed the start timer, sleep until it is out (the thread
 * would otherwise run its work inside that call). */
void cdn_progress_let_app_out(void);
/* A nonblocking collective of a thread-communicator rank starts (+1) or
 * ends (-1): meanwhile the progress thread looks for thread ranks away
 * from MPI with messages waiting every CADENCE_WORK_SHARING_US
 * (progress/threadq.h, work sharing). */
void cdn_progress_share_work(int delta);
/* While any is in flight: CADENCE_WORK_SHARING_US in ns; else 0. */
long cdn_progress_sharing(void);
/* Interrupt whoever sleeps in epoll (new queued work, shutdown). */
void cdn_progress_kick(void);
/* Context ctx's transport instance that reaches a world rank, or NULL.
 * Every send asks: after wire-up a table by world rank answers
 * (transport_of), before it (and for ranks outside the table) the
 * instances are asked in order. */
struct cdn_transport *cdn_progress_transport_find(int ctx, int world_rank);
static inline struct cdn_transport *cdn_progress_transport_in(int ctx, int world_rank)
{
    const struct cdn_pctx *c = &cdn_engine.ctx[ctx];
    if ((unsigned)world_rank < (unsigned)c->ntransport_of)
        return c->transport_of[world_rank];
    return cdn_progress_transport_find(ctx, world_rank);
}
/* ... of context 0. */
static inline struct cdn_transport *cdn_progress_transport_for(int world_rank)
{
    return cdn_progress_transport_in(0, world_rank);
}

/* The largest message the transport reaching world_rank may send eagerly
 * (whole, with no answer from the receiver), or with always the largest it
 * always sends so (between the two it chooses per message: transport.h);
 * 0 if none reaches it. */
size_t cdn_progress_eager_limit(int world_rank, bool always);
/* The monotonic clock in nanoseconds (timed spins, the shm transport's
 * probes). */
static inline uint64_t cdn_progress_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Is a message of this many bytes sent eagerly whoever sends it (no larger
 * than the smallest eager limit of the transports)?  A blocking wait for
 * such messages polls a moment before it counts as a poller
 * (cdn_progress_wait_until_late). */
static inline bool cdn_progress_comes_eagerly(int64_t bytes)
{
    return (uint64_t)bytes <= cdn_engine.eager_min;
}

/* An application thread starts / stops polling in a blocking call.  While
 * one does, the progress thread stands aside (it would only compete for the
 * same rings, often on the same core).  With quiet doorbells
 * (cdn_engine.quiet_poll) it sleeps in epoll meanwhile and no peer rings
 * it; the last poller leaving wakes it only if input or work is already
 * there (cdn_progress_quiet), so a blocking call costs it no wake-up.
 * Otherwise it parks and resumes within a millisecond once nobody polls,
 * e.g. when the waiter goes to sleep. */
void cdn_progress_quiet(int delta);
void cdn_progress_mute(void);
static inline void cdn_progress_app_enter(void)
{
    unsigned was = atomic_fetch_add_explicit(&cdn_engine.app_pollers, 1, memory_order_seq_cst);
    if (cdn_engine.quiet_poll)
        cdn_progress_quiet(1);
    else if (cdn_engine.mute_fds && was == 0)
        cdn_progress_mute();
}
static inline void cdn_progress_app_leave(void)
{
    /* seq_cst: pairs with the standing-aside thread's arming and its look
     * at app_pollers (cdn_progress_stand_aside) */
    unsigned was = atomic_fetch_sub_explicit(&cdn_engine.app_pollers, 1, memory_order_seq_cst);
    if (cdn_engine.quiet_poll)
        cdn_progress_quiet(-1);
    else if (cdn_engine.mute_fds && was == 1)
        cdn_progress_mute();
}
/* The progress thread while application threads poll, with quiet
 * doorbells: asleep in epoll, armed, until kicked or nobody polls. */
void cdn_progress_stand_aside(long timeout_ns);
/* Lingering: an application thread leaving a short blocking call
 * (cdn_progress_leave_short), the linger ended by whoever finds it is no
 * longer wanted (cdn_progress_linger_end: true if this call ended it). */
void cdn_progress_leave_short(void);
enum cdn_linger_end { CDN_LINGER_LOOKED, CDN_LINGER_STARTED, CDN_LINGER_OTHER };
bool cdn_progress_linger_end(enum cdn_linger_end why);
/* The application started a nonblocking send or receive of rendezvous
 * size.  Its peer's RTS or CTS must reach the progress thread at once if
 * the application now computes, but a linger keeps it out -- which is
 * what a window of such starts followed by a wait wants (a doorbell per
 * message otherwise).  Which of the two the application does is told by
 * the time from its last such start to its next blocking call: over
 * CDN_PROGRESS_OVERLAP_GAP_NS it computed.  Once it has computed after
 * most recent starts, a start ends the linger. */
void cdn_progress_p2p_started(void);
enum { CDN_PROGRESS_OVERLAP_GAP_NS = 10000 };
/* The same for any nonblocking start of rendezvous size (a collective's
 * too), in two parts.  cdn_progress_computes_next, before it starts: true
 * if the application has computed after most recent starts (the progress
 * thread should carry this one: hand it over, end a linger), false if it
 * has waited at once (the start is held: it runs in the caller, its count
 * of pollers left lingering for the wait, cdn_progress_start_end).
 * cdn_progress_rdv_started, when the start returns: the gap to the next
 * blocking call is measured from here, not counting the start's own work
 * (a 1 MiB reduction run in the caller). */
bool cdn_progress_computes_next(void);
void cdn_progress_rdv_started(void);

/* The calling thread is about to start an operation and then wait for it
 * in the same call (a blocking MPI call).  It counts as a poller from now
 * on (cdn_progress_app_enter), so what arrives for the operation while it
 * starts rings nobody; and wake-ups of the progress thread asked for
 * meanwhile (a receive finding its message already in a ring, work
 * deferred by a blocking collective) are left out, since the caller polls
 * at once.  cdn_progress_wait_until takes over both (it polls, or, if the
 * operation is already done, leaves and wakes the thread after all).  A
 * caller that fails before waiting calls cdn_progress_blocking_end.  Only
 * with quiet doorbells; otherwise nothing. */
extern CDN_TLS bool cdn_progress_blocking;
void cdn_progress_blocking_begin(void);
void cdn_progress_blocking_end(void);
/* A wait finds its operation complete without polling: the end of its
 * blocking call if one began, and in any case the doorbells the thread
 * owes are rung (transport op settle) -- a held start left its own to the
 * wait expected next (cdn_progress_start_end). */
void cdn_progress_wait_done(void);

/* A nonblocking call starts a small operation and returns: between _begin
 * and _end it counts as a poller (cdn_progress_app_enter), so nothing
 * rings the progress thread and no wake-up is asked for while it starts
 * the operation's first steps; _end polls the transports once (taking
 * what already arrived for them) and, as the last poller leaving, wakes
 * the thread with one eventfd write only if something it wants is still
 * waiting (cdn_progress_quiet).  A want finding its message waiting armed
 * the start timer instead, whose arming and disarming cost 11 us per call
 * on this KVM guest.  Not for work handed to the thread: woken as the
 * call returns, the thread would run before the application's computation
 * rather than during it (the start timer's reason).  Only with quiet
 * doorbells and a progress thread, outside other polling; returns whether
 * it entered (pass it to _end).  end_linger: the operation may need the
 * progress thread while the application computes, so a linger ends, the
 * caller taking its place as a poller.  held (_end): the application is
 * expected to wait for the operation next (cdn_progress_rdv_started), so
 * the caller's count lingers (cdn_progress_leave_short) even with work
 * left for the wait, and nothing rings or wakes the thread meanwhile. */
bool cdn_progress_start_begin(bool end_linger);
void cdn_progress_start_end(bool entered, bool held);

/* Does the calling thread go on polling the transports after what it does
 * now: an application thread inside a blocking wait
 * (cdn_progress_wait_until, or its late polls: cdn_progress_wait_until_late),
 * a blocking call that starts and then waits
 * (cdn_progress_blocking), or a start it waits for next
 * (cdn_progress_start_begin)?  Then a doorbell it would ring may be owed a
 * moment instead (transport/shm/shm.c, "Owed doorbells"): its polls pay it
 * when due, and what is owed is rung when it stops polling (the wait
 * returns, a start it does not wait for next ends: transport op settle),
 * when this process's last poller leaves and when a thread goes to sleep.
 * Only with quiet doorbells, and not oversubscribed. */
bool cdn_progress_polls_on(void);

/* Drive progress until cond(arg) holds: poll, spin CADENCE_PROGRESS_SPIN
 * empty polls, then sleep until something completes or arrives.  Every
 * blocking call waits through this one loop. */
void cdn_progress_wait_until(bool (*cond)(void *arg), void *arg);
/* The same, polling a moment (CDN_PROGRESS_LATE_POLLS polls) before it
 * counts as a poller (cdn_progress_app_enter): a blocking receive whose
 * message comes within a round trip then pays none of entering and
 * leaving -- four read-modify-writes and a look at every ring, on the
 * path from the message's arrival to the caller's next send.  For waits
 * that start nothing a peer answers with an always-ringing cell (a
 * receive posted without a want: request.h, waited): meanwhile the
 * doorbells are not quiet, and this thread does not split copies.  It
 * polls on all the same (cdn_progress_polls_on): a doorbell its polls
 * would ring is owed instead.  A message of 8-16 KiB goes by rendezvous
 * where the receiver reads by CMA (transport/shm/shm.c, mid_rndv), and its
 * FIN rang the peer's progress thread, asleep while its application
 * waited the same way: in a third of the table's launches each rank woke
 * its thread 5-10 times in the 110 iterations of a 16 KiB MPI_Allreduce,
 * 15-20 us of the application's time each (docs/progress.md). */
void cdn_progress_wait_until_late(bool (*cond)(void *arg), void *arg);
enum { CDN_PROGRESS_LATE_POLLS = 64 };

/* The progress thread's pause while application threads poll (at most
 * timeout_ns, or until cdn_progress_unpark). */
void cdn_progress_park(long timeout_ns);
/* End the progress thread's park now rather than at its timeout (the
 * application thread that polled goes to sleep).  One load when the thread
 * is not parked. */
void cdn_progress_unpark_slow(void);
static inline void cdn_progress_unpark(void)
{
    if (atomic_load_explicit(&cdn_engine.parked, memory_order_relaxed))
        cdn_progress_unpark_slow();
}
/* Queue w for the next poller and get the progress thread out of its park
 * or epoll sleep for it: an operation started by the application then
 * advances while the application computes, and the call that started it
 * returns at once.  When the thread shares the application's only
 * processing unit it is woken CADENCE_PROGRESS_START_DELAY_US later by a
 * timer, so it preempts the application's computation and not the call
 * (arming the timer is one system call and no context switch).  Only with a
 * progress thread (cdn_engine.thread_on): without one, run the work where
 * it is. */
void cdn_progress_defer(struct cdn_work *w);
/* The same on context ctx's list (cdn_progress_defer: context 0's). */
void cdn_progress_defer_in(int ctx, struct cdn_work *w);

/* The most progress threads CADENCE_PROGRESS_THREADS may ask for. */
#define CDN_PROGRESS_THREADS_MAX 16
/* Progress thread (progress/thread.c), and with CADENCE_PROGRESS_THREADS=N
 * above 1 its helpers: helper i (1..N-1) polls the contexts c >= 1 with
 * c % N == i and sleeps on their doorbells, the thread every context (it
 * sleeps on every context's doorbells: the guarantee of strong
 * progress). */
int cdn_progress_thread_start(void);
void cdn_progress_thread_stop(void);

#endif
