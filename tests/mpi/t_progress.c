/*
 * Strong progress and idle cost, between two processes (mpirun -n 2).
 *
 * rendezvous / ssend: rank 1 posts a receive (16 MiB, or a small one
 * matched by MPI_Issend), tells rank 0, then computes for 1 s without any
 * MPI call.  Rank 0 sends and waits, or sends with a blocking MPI_Send.
 * Through the rings (CADENCE_SHM_CMA=0) the sender streams the data from
 * its wait, and the doorbells for rank 1's progress thread are owed while
 * it polls and rung when due (transport/shm/shm.c, "Owed doorbells").
 * With the progress thread, rank 0's wait returns while rank 1 still
 * computes: its completion time must be well before the moment rank 1
 * calls MPI_Wait.  Times are CLOCK_MONOTONIC,
 * one clock for every process of the node; the property checked is the
 * order of two events in one run, not a speed.
 *
 * repeat: the same property after warm-up, many times in one job: once the
 * first transfer had proven CMA, later ones split their copy with the
 * sender, and the sender's wait ended only when the receiver stopped
 * computing (docs/progress.md).  Each of 20 rounds warms up with 256 KiB
 * and 16 MiB transfers that both sides wait for at once, then checks one
 * 16 MiB transfer while the receiver computes: MPI_Isend and MPI_Issend to
 * a posted receive, and a receive posted after the send arrived (rank 0
 * sends first); then 192 KiB to a receiver that waits at once while the
 * sender computes (a split copy's offer the receiver must take back);
 * then a 1 MiB MPI_Iallreduce that both start while one of
 * them computes (alternately rank 1 and rank 0), after four that both
 * waited for at once: the computing rank's start is held (docs/progress.md,
 * "Held starts"), a wrong guess its progress thread must make good.  The computing rank reads
 * a shared page the other writes when its MPI_Wait returns, and computes
 * until it sees it (at most 5 s): the check is that it saw it, i.e. the
 * order of the two events, however slow a loaded machine makes the
 * transfer; a working round costs only the transfer.
 *
 * quiet: a blocking 16 KiB and 64 KiB ping-pong (1000 round trips each)
 * must not wake the progress thread, which shares each rank's core: its
 * context switches (/proc, the thread named cdn-progress) stay under 2%
 * of the round trips plus two for each time the waiting thread itself
 * went to sleep (0-7 per 1000 here when idle; 17-41 idle and 21-155
 * loaded before).  Each wake-up there can cost the waiter its core for
 * a scheduler slice when other processes run (docs/performance.md); the
 * thread used to be woken at least once per blocking call.
 *
 * The same for windows of 64 nonblocking 8-byte messages (MPI_Isend /
 * MPI_Irecv + MPI_Waitall): eager messages for ordinary receives wait for
 * the receiver's next poll instead of ringing (about one switch per window
 * before).
 *
 * idle: rank 1 blocks in MPI_Recv for 5 s while rank 0 sleeps; each
 * process must use under 1% of a core meanwhile (getrusage, all threads).
 *
 * T_PROGRESS_CONTEXT=v: every check runs on a duplicate of MPI_COMM_WORLD
 * made with the info key cadence_progress_context=v (a progress context
 * other than 0, with CADENCE_PROGRESS_CONTEXTS above 1) instead of on
 * MPI_COMM_WORLD itself.
 */
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"
#include "thread_switches.h"

/* The communicator the checks run on (T_PROGRESS_CONTEXT above). */
static MPI_Comm comm;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static volatile double sink;

static void compute(double seconds)
{
    double end = now() + seconds;
    double x = 1.0;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* repeat mode: a page both ranks map.  done[r] is the number of the last
 * checked step whose MPI_Wait returned at rank r. */
struct board {
    atomic_int done[2];
};
static struct board *board;
static int step;  /* checked steps so far, counted alike on both ranks */

/* Rank 0 makes a memfd; rank 1 opens it through /proc (no name anywhere,
 * nothing to clean up).  False, with a message, when that fails. */
static bool board_open(int rank)
{
    int id[2] = {(int)getpid(), -1}, fd = -1;
    if (rank == 0) {
        fd = memfd_create("t_progress", MFD_CLOEXEC);
        if (fd >= 0 && ftruncate(fd, sizeof *board) == 0)
            id[1] = fd;
    }
    MPI_Bcast(id, 2, MPI_INT, 0, comm);
    if (rank == 1 && id[1] >= 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", id[0], id[1]);
        fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if (fd >= 0) {
        void *m = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        board = m == MAP_FAILED ? NULL : m;
    }
    int ok = board != NULL;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
    if (fd >= 0)
        close(fd);  /* rank 1 has opened its own by now */
    CHECK(ok, "repeat: rank %d could not share a page with the other rank", rank);
    return ok;
}

/* This rank's wait of the current checked step returned. */
static void board_post(int rank)
{
    atomic_store(&board->done[rank], step);
}

/* Compute until rank `other` posts the current step or `limit` s pass;
 * true when it posted. */
static bool compute_until_posted(int other, double limit)
{
    double end = now() + limit, x = 1.0;
    bool seen;
    while (!(seen = atomic_load(&board->done[other]) == step) && now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
    return seen;
}

/* The receiver's side of a 16 MiB-class transfer in overlap(): how it
 * posts its receive relative to the send. */
enum kind { K_ISEND, K_ISSEND, K_LATE_RECV, K_SEND };
static const char *kind_name[] = {"MPI_Isend", "MPI_Issend", "receive posted after the send",
                                  "MPI_Send"};

static char fill(int i, int round)
{
    return (char)(i * 13 + round);
}

/* One transfer of `bytes` from rank 0 to rank 1 of the given kind; rank 1
 * computes between posting and MPI_Wait (secs 0: waits at once).  Without
 * the board it computes `secs` and rank 0's wait must return at least
 * `margin` s before rank 1 calls MPI_Wait; with it (repeat mode) it
 * computes until rank 0's wait returned, at most `secs`.  Returns 1 when
 * the data and the order were right. */
static int overlap(int rank, enum kind kind, int bytes, double secs, double margin, int round,
                   const char *what)
{
    char *buf = malloc(bytes);
    double times[2];  /* rank 0: wait returned; rank 1: wait called */
    int go = 1, ok = 1;
    bool board_step = board != NULL && secs > 0;
    step += board_step;
    MPI_Request r;
    if (rank == 1) {
        if (kind == K_LATE_RECV) {
            MPI_Recv(&go, 1, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
            MPI_Irecv(buf, bytes, MPI_BYTE, 0, 1, comm, &r);
        } else {
            MPI_Irecv(buf, bytes, MPI_BYTE, 0, 1, comm, &r);
            MPI_Send(&go, 1, MPI_INT, 0, 2, comm);
        }
        double t0 = now();
        bool seen = false;
        if (board_step)
            seen = compute_until_posted(0, secs);
        else
            compute(secs);
        times[1] = now();
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int good = 1;
        for (int i = 0; i < bytes; i++)
            good &= buf[i] == fill(i, round);
        CHECK(good, "%s: data arrived intact", what);
        ok &= good;
        MPI_Recv(&times[0], 1, MPI_DOUBLE, 0, 3, comm, MPI_STATUS_IGNORE);
        if (board_step) {
            CHECK(seen, "%s: rank 0's wait returned %.3f s after the receive was posted; rank 1 "
                  "computed %.1f s without seeing it", what, times[0] - t0, secs);
            ok &= seen;
        } else if (secs > 0) {
            CHECK(times[0] < times[1] - margin, "%s: rank 0's wait returned %.3f s before rank 1 "
                  "called MPI_Wait (needs > %.2f s)", what, times[1] - times[0], margin);
            ok &= times[0] < times[1] - margin;
        }
    } else {
        for (int i = 0; i < bytes; i++)
            buf[i] = fill(i, round);
        if (kind != K_LATE_RECV)
            MPI_Recv(&go, 1, MPI_INT, 1, 2, comm, MPI_STATUS_IGNORE);
        if (kind == K_SEND) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 1, comm);
        } else {
            if (kind == K_ISSEND)
                MPI_Issend(buf, bytes, MPI_BYTE, 1, 1, comm, &r);
            else
                MPI_Isend(buf, bytes, MPI_BYTE, 1, 1, comm, &r);
            if (kind == K_LATE_RECV)
                MPI_Send(&go, 1, MPI_INT, 1, 2, comm);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        times[0] = now();
        if (board_step)
            board_post(0);
        MPI_Send(&times[0], 1, MPI_DOUBLE, 1, 3, comm);
    }
    free(buf);
    return ok;
}

/* Both ranks start a 1 MiB MPI_Iallreduce; rank `worker` computes until
 * the other's MPI_Wait returned (at most `secs`; 0: waits at once). */
static int iallreduce(int rank, int worker, double secs, int round, const char *what)
{
    enum { N = (1 << 20) / sizeof(int) };
    int *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++)
        in[i] = i * (rank + 1) + round;
    step += secs > 0;
    MPI_Request r;
    MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, comm, &r);
    bool seen = false;
    if (rank == worker && secs > 0)
        seen = compute_until_posted(1 - worker, secs);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rank != worker && secs > 0)
        board_post(rank);
    int good = 1;
    for (int i = 0; i < N; i++)
        good &= out[i] == 3 * i + 2 * round;
    CHECK(good, "%s: rank %d has the right sums", what, rank);
    int ok = good;
    if (rank == worker && secs > 0) {
        CHECK(seen, "%s: rank %d computed %.1f s and rank %d's wait had not returned", what,
              worker, secs, 1 - worker);
        ok &= seen;
    }
    free(in);
    free(out);
    return ok;
}

/* Rank 0 sends `bytes` and computes until rank 1's MPI_Wait returned (at
 * most `secs`); rank 1 waits at once.  A split copy's upper half is
 * offered to the sender, which is not in MPI and whose thread a part of
 * less than 256 KiB does not wake: the receiver must take the offer back
 * and read the rest itself, not wait for the sender's MPI_Wait. */
static int sender_computes(int rank, int bytes, double secs, int round, const char *what)
{
    char *buf = malloc(bytes);
    int go = 1, ok = 1;
    step++;
    MPI_Request r;
    if (rank == 1) {
        MPI_Irecv(buf, bytes, MPI_BYTE, 0, 1, comm, &r);
        MPI_Send(&go, 1, MPI_INT, 0, 2, comm);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        board_post(1);
        int good = 1;
        for (int i = 0; i < bytes; i++)
            good &= buf[i] == fill(i, round);
        CHECK(good, "%s: data arrived intact", what);
        ok &= good;
    } else {
        for (int i = 0; i < bytes; i++)
            buf[i] = fill(i, round);
        MPI_Recv(&go, 1, MPI_INT, 1, 2, comm, MPI_STATUS_IGNORE);
        MPI_Isend(buf, bytes, MPI_BYTE, 1, 1, comm, &r);
        bool seen = compute_until_posted(1, secs);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(seen, "%s: rank 0 computed %.1f s and rank 1's wait had not returned", what, secs);
        ok &= seen;
    }
    free(buf);
    return ok;
}

/* The strong-progress checks of the "repeat" mode (see the top of the
 * file).  Stops after the first round that fails (each failing check
 * costs its whole computation). */
static void repeat(int rank)
{
    enum { ROUNDS = 20 };
    const double limit = 5.0;
    char what[96];
    int passed = 0, round;
    if (!board_open(rank))
        return;
    for (round = 0; round < ROUNDS; round++) {
        int ok = 1;
        for (int k = K_ISEND; k <= K_LATE_RECV; k++) {
            overlap(rank, k, 256 << 10, 0, 0, round, "warm-up 256 KiB");
            overlap(rank, k, 16 << 20, 0, 0, round, "warm-up 16 MiB");
            snprintf(what, sizeof what, "round %d: %s 16 MiB", round, kind_name[k]);
            ok &= overlap(rank, k, 16 << 20, limit, 0, round, what);
        }
        snprintf(what, sizeof what, "round %d: 192 KiB to a waiting receiver", round);
        ok &= sender_computes(rank, 192 << 10, limit, round, what);
        /* waited for at once, four times: the next start is held (it runs
         * in the caller and lingers for a wait) -- and the worker then
         * computes instead, which the progress thread's look must catch */
        for (int w = 0; w < 4; w++)
            iallreduce(rank, 0, 0, round, "warm-up MPI_Iallreduce 1 MiB");
        snprintf(what, sizeof what, "round %d: MPI_Iallreduce 1 MiB", round);
        ok &= iallreduce(rank, 1 - round % 2, limit, round, what);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
        if (!ok)
            break;
        passed++;
    }
    if (rank == 0)
        printf("repeat: %d of %d rounds passed\n", passed, ROUNDS);
    CHECK(passed == ROUNDS, "repeat: %d of %d rounds passed (stopped at the first failure)",
          passed, ROUNDS);
    munmap(board, sizeof *board);
    board = NULL;
}

static void idle(int rank, double seconds)
{
    int x = 0;
    double c0 = cpu_seconds(), t0 = now();
    if (rank == 0) {
        usleep((useconds_t)(seconds * 1e6));
        x = 42;
        MPI_Send(&x, 1, MPI_INT, 1, 4, comm);
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 4, comm, MPI_STATUS_IGNORE);
        CHECK(x == 42, "idle: the message came");
    }
    double used = cpu_seconds() - c0, wall = now() - t0;
    printf("idle: rank %d used %.3f s of CPU in %.2f s\n", rank, used, wall);
    CHECK(used < 0.01 * wall, "idle: rank %d used %.3f s of CPU in %.2f s (%.1f%% of a core, "
          "limit 1%%)", rank, used, wall, 100 * used / wall);
}

/* Windows of 64 nonblocking 8-byte messages (MPI_Isend / MPI_Irecv, then
 * MPI_Waitall, then a blocking 1-byte answer): the receives complete in
 * the receiver's MPI_Waitall, and no eager message rings the progress
 * thread for them (it used to be woken about once per window, by the
 * posted receives' want for data and by a half-full ring). */
static void quiet_windows(int rank)
{
    enum { W = 64, WINDOWS = 1000, WARM = 50 };
    long sbuf[W], rbuf[W];
    MPI_Request rq[W];
    long before = 0, slept_before = 0;
    int good = 1;
    for (int i = 0; i < WARM + WINDOWS; i++) {
        if (i == WARM) {
            before = progress_thread_switches();
            slept_before = task_switches("/proc/thread-self/status", false);
        }
        for (int k = 0; k < W; k++) {
            if (rank == 0) {
                sbuf[k] = (long)i * W + k;
                MPI_Isend(&sbuf[k], 1, MPI_LONG, 1, 7, comm, &rq[k]);
            } else {
                rbuf[k] = -1;
                MPI_Irecv(&rbuf[k], 1, MPI_LONG, 0, 7, comm, &rq[k]);
            }
        }
        MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
        char ack = 0;
        if (rank == 1) {
            for (int k = 0; k < W; k++)
                good &= rbuf[k] == (long)i * W + k;
            MPI_Send(&ack, 1, MPI_CHAR, 0, 8, comm);
        } else {
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 8, comm, MPI_STATUS_IGNORE);
        }
    }
    long after = progress_thread_switches();
    long slept = task_switches("/proc/thread-self/status", false) - slept_before;
    CHECK(good, "windows of %d Isend/Irecv: data arrived intact and in order", W);
    CHECK(after - before < WINDOWS / 50 + 2 * slept, "windows of %d 8-byte Isend/Irecv: the "
          "progress thread switched %ld times in %d windows while the waiter slept %ld times "
          "(needs < %d + 2 per sleep)", W, after - before, WINDOWS, slept, WINDOWS / 50);
}

static void quiet(int rank)
{
    static const int sizes[] = {16 << 10, 64 << 10};
    const int trips = 1000;
    char *buf = calloc(64 << 10, 1);
    int peer = 1 - rank;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        for (int i = 0; i < 50; i++) {  /* warm-up: connections, CMA proven */
            if (rank == 0) {
                MPI_Send(buf, n, MPI_BYTE, peer, 0, comm);
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, peer, 0, comm);
            }
        }
        long before = progress_thread_switches();
        long slept_before = task_switches("/proc/thread-self/status", false);
        int good = 1;
        for (int i = 0; i < trips; i++) {
            if (rank == 0) {
                memset(buf, (char)i, (size_t)n);
                MPI_Send(buf, n, MPI_BYTE, peer, 0, comm);
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
                good &= buf[0] == (char)(i + 1) && buf[n - 1] == (char)(i + 1);
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
                good &= buf[0] == (char)i && buf[n - 1] == (char)i;
                memset(buf, (char)(i + 1), (size_t)n);
                MPI_Send(buf, n, MPI_BYTE, peer, 0, comm);
            }
        }
        long after = progress_thread_switches();
        long slept = task_switches("/proc/thread-self/status", false) - slept_before;
        CHECK(good, "%d-byte ping-pong: data arrived intact", n);
        CHECK(before >= 0 && after >= 0 && slept_before >= 0,
              "the progress thread (cdn-progress) is there");
        /* A waiter that gave up spinning (its peer was descheduled: other
         * processes run) sleeps, and the thread rightly wakes to progress
         * for it: up to two switches of the thread per sleep are its due. */
        CHECK(after - before < trips / 50 + 2 * slept, "%d-byte blocking ping-pong: the "
              "progress thread switched %ld times in %d round trips while the waiter slept "
              "%ld times (needs < %d + 2 per sleep)", n, after - before, trips, slept,
              trips / 50);
    }
    free(buf);
    quiet_windows(rank);
}

/* On-CPU time of a thread of this process so far (ns), or -1. */
static long long task_cpu_ns(long tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
    FILE *f = fopen(path, "r");
    long long ns = -1;
    if (f != NULL) {
        if (fscanf(f, "%lld", &ns) != 1)
            ns = -1;
        fclose(f);
    }
    return ns;
}

/* 1 MiB transfers polled with MPI_Test between short stretches of
 * computation, as a user overlapping by hand writes them.  The receiver's
 * MPI_Test copies the message under the transports' lock; a progress
 * thread that found that work and kept polling spun on the application's
 * core at its higher priority (95-99% of the time, each transfer
 * milliseconds instead of microseconds).  It must stand back: its CPU time
 * stays well under the loop's wall time.  Data checked. */
static void testpoll(int rank)
{
    enum { N = 1 << 20, ROUNDS = 20 };
    unsigned char *buf = malloc(N);
    long tid = progress_thread_tid();
    CHECK(buf != NULL && tid > 0, "rank %d: buffer and progress thread", rank);
    if (buf == NULL || tid <= 0) {
        free(buf);
        return;
    }
    MPI_Barrier(comm);
    long long c0 = task_cpu_ns(tid);
    double t0 = MPI_Wtime();
    int bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        MPI_Request r;
        if (rank == 0) {
            memset(buf, i + 1, N);
            MPI_Isend(buf, N, MPI_BYTE, 1, 5, comm, &r);
        } else {
            memset(buf, 0, N);
            MPI_Irecv(buf, N, MPI_BYTE, 0, 5, comm, &r);
        }
        int done = 0;
        for (int k = 0; k < 64; k++) {
            double t = MPI_Wtime();
            while (MPI_Wtime() - t < 1e-6)
                ;
            if (!done)
                MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        }
        if (!done)
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (rank == 1)
            bad += buf[0] != i + 1 || buf[N - 1] != i + 1;
    }
    double wall = MPI_Wtime() - t0;
    long long c1 = task_cpu_ns(tid);
    CHECK(bad == 0, "rank %d: %d transfers polled with MPI_Test arrived intact (%d bad)", rank,
          ROUNDS, bad);
    CHECK(c0 >= 0 && c1 >= c0, "rank %d: the progress thread's CPU time is readable", rank);
    double share = (double)(c1 - c0) / 1e9 / wall;
    CHECK(share < 0.75, "rank %d: the progress thread ran %.0f%% of the %.1f ms the MPI_Test "
          "loop took (needs < 75%%: it must not spin while the application polls)", rank,
          share * 100, wall * 1e3);
    free(buf);
}

/* Where the progress thread runs: bound (the default), one processing unit
 * of the process's allowed set, counted from the last one by local rank;
 * with CADENCE_PROGRESS_BIND=0, the process's whole set. */
static void pin(int rank)
{
    cpu_set_t proc, thr;
    CHECK(sched_getaffinity(0, sizeof proc, &proc) == 0, "rank %d: the process's allowed set",
          rank);
    long tid = -1;
    for (int i = 0; i < 500 && (tid = progress_thread_tid()) < 0; i++)
        usleep(1000);
    CHECK(tid > 0, "rank %d: the progress thread (cdn-progress) is there", rank);
    if (tid <= 0)
        return;
    /* it pins itself as it starts: give it a moment */
    bool bound = getenv("CADENCE_PROGRESS_BIND") == NULL ||
                 strcmp(getenv("CADENCE_PROGRESS_BIND"), "0") != 0;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    int npu = CPU_COUNT(&proc), want = -1, pick = npu - 1 - local % npu;
    for (int c = 0; c < CPU_SETSIZE && pick >= 0; c++)
        if (CPU_ISSET(c, &proc) && pick-- == 0)
            want = c;
    bool ok = false;
    for (int i = 0; i < 500 && !ok; i++) {
        ok = sched_getaffinity((pid_t)tid, sizeof thr, &thr) == 0 &&
             (bound ? CPU_COUNT(&thr) == 1 && CPU_ISSET(want, &thr) : CPU_EQUAL(&thr, &proc));
        if (!ok)
            usleep(1000);
    }
    if (bound)
        CHECK(ok, "rank %d (local %d): the progress thread is bound to processing unit %d "
              "alone (of %d allowed; it has %d)", rank, local, want, npu, CPU_COUNT(&thr));
    else
        CHECK(ok, "rank %d: with CADENCE_PROGRESS_BIND=0 the progress thread may use the "
              "process's %d processing units (it has %d)", rank, npu, CPU_COUNT(&thr));
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "all";
    comm = MPI_COMM_WORLD;
    const char *pctx = getenv("T_PROGRESS_CONTEXT");
    if (pctx != NULL) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "cadence_progress_context", pctx);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
        MPI_Info_free(&info);
    }
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "t_progress needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "strong") == 0) {
        overlap(rank, K_ISEND, 16 << 20, 1.0, 0.5, 0, "Isend 16 MiB");
        overlap(rank, K_ISSEND, 64, 1.0, 0.5, 0, "Issend 64 B");
        overlap(rank, K_ISSEND, 16 << 20, 1.0, 0.5, 0, "Issend 16 MiB");
        overlap(rank, K_SEND, 16 << 20, 1.0, 0.5, 0, "Send 16 MiB");
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "repeat") == 0)
        repeat(rank);
    if (strcmp(mode, "all") == 0 || strcmp(mode, "quiet") == 0)
        quiet(rank);
    if (strcmp(mode, "all") == 0 || strcmp(mode, "idle") == 0)
        idle(rank, 5.0);
    if (strcmp(mode, "all") == 0 || strcmp(mode, "pin") == 0)
        pin(rank);
    if (strcmp(mode, "all") == 0 || strcmp(mode, "testpoll") == 0)
        testpoll(rank);
    if (comm != MPI_COMM_WORLD)
        MPI_Comm_free(&comm);
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_progress[%d]", rank);
    return check_summary(name);
}
