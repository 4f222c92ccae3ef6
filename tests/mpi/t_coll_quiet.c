/*
 * Collectives started and completed in a loop, every result checked.
 *
 * quiet (2 ranks): small MPI_Iallreduce + MPI_Wait, MPI_Allreduce_init +
 * MPI_Start/MPI_Wait, MPI_Ialltoall and MPI_Ibarrier loops (1000 calls
 * each, 8 B and 4 KiB) must not wake the progress thread, which shares each
 * rank's core: what such a call receives needs no action before the wait
 * that follows, which does it itself.  The thread's context switches stay
 * under 2% of the calls plus two for each time the waiting thread itself
 * went to sleep (as in t_progress's quiet test).  The thread used to be
 * woken once or twice per call, each time preempting the application for
 * work it did itself microseconds later.  Broadcasts run too (their data
 * checked), but a broadcast loop lets the root run ahead until its ring is
 * half full, which rings the receiver by design.
 *
 * repeat (any number of ranks, also more than there are processors):
 * persistent allreduce, bcast and alltoall started many times, and their
 * blocking and nonblocking forms as many times, at 8 B, 4 KiB and
 * 64 KiB; the data change at every start, and every result is checked.
 * With more ranks than processors (unbound), the progress thread must
 * run without a raised priority.
 *
 * skew (any number of ranks): persistent allreduce, bcast, alltoall and
 * barrier at 8 B and 4 KiB, one rank in turn starting 2 ms after the
 * others, so that its start finds the others' messages already there (a
 * small schedule posts its receives as it starts, and one whose message
 * is there completes inside the start: sched/sched.c, run_alone) while
 * theirs wait for its messages; every result checked.
 *
 * truncate (2 or 3 ranks, erroneous on purpose): a persistent broadcast
 * whose root sends 40,000 ints (a rendezvous) to leaves expecting 100 --
 * on up to 3 ranks the binomial tree's leaves all receive from the root;
 * 3 ranks need CADENCE_BCAST_ALGORITHM=binomial, since the automatic
 * choice there depends on the size, which differs between the root and
 * the leaves in this erroneous call -- (a small
 * schedule, whose receive is posted raising no want: sched/sched.c,
 * start_child); a leaf computes 20 ms before its MPI_Wait, which must
 * report MPI_ERR_TRUNCATE through MPI_ERRORS_RETURN, the root's
 * MPI_Wait must complete, and both must not hang -- three times.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* sched_getaffinity */
#endif
#include <errno.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"
#include "thread_switches.h"

static int rank, size;

enum form { BLOCKING, NONBLOCKING, PERSISTENT };
enum coll { ALLREDUCE, BCAST, ALLTOALL, BARRIER };
static const char *form_names[] = {"blocking", "nonblocking", "persistent"};
static const char *coll_names[] = {"allreduce", "bcast", "alltoall", "barrier"};

struct run {
    enum coll coll;
    enum form form;
    int count;       /* doubles (per block for alltoall) */
    double *sb, *rb;
    MPI_Request req; /* the persistent request */
};

/* Rank r's element i at start `it`. */
static double value(int r, int it, int i)
{
    return (double)(r * 1000 + it * 7 + i % 97);
}

static void fill(struct run *x, int it)
{
    int n = x->coll == ALLTOALL ? x->count * size : x->count;
    for (int i = 0; i < n; i++) {
        /* bcast: the root's data; alltoall: block j goes to rank j */
        x->sb[i] = x->coll == BCAST && rank != 0 ? -1.0 : value(rank, it, i);
        x->rb[i] = -1.0;
    }
}

static int check(struct run *x, int it)
{
    int bad = 0;
    switch (x->coll) {
    case ALLREDUCE:
        for (int i = 0; i < x->count; i++) {
            double want = 0;
            for (int r = 0; r < size; r++)
                want += value(r, it, i);
            bad += x->rb[i] != want;
        }
        break;
    case BCAST:
        for (int i = 0; i < x->count; i++)
            bad += x->sb[i] != value(0, it, i);
        break;
    case ALLTOALL:
        for (int j = 0; j < size; j++)
            for (int i = 0; i < x->count; i++)
                bad += x->rb[j * x->count + i] != value(j, it, rank * x->count + i);
        break;
    default:
        break;
    }
    return bad;
}

static void init(struct run *x)
{
    if (x->form != PERSISTENT)
        return;
    switch (x->coll) {
    case ALLREDUCE:
        MPI_Allreduce_init(x->sb, x->rb, x->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &x->req);
        break;
    case BCAST:
        MPI_Bcast_init(x->sb, x->count, MPI_DOUBLE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &x->req);
        break;
    case ALLTOALL:
        MPI_Alltoall_init(x->sb, x->count, MPI_DOUBLE, x->rb, x->count, MPI_DOUBLE,
                          MPI_COMM_WORLD, MPI_INFO_NULL, &x->req);
        break;
    case BARRIER:
        MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &x->req);
        break;
    }
}

static void once(struct run *x)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (x->form == PERSISTENT) {
        MPI_Start(&x->req);
        MPI_Wait(&x->req, MPI_STATUS_IGNORE);
        return;
    }
    bool nb = x->form == NONBLOCKING;
    switch (x->coll) {
    case ALLREDUCE:
        if (nb)
            MPI_Iallreduce(x->sb, x->rb, x->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        else
            MPI_Allreduce(x->sb, x->rb, x->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BCAST:
        if (nb)
            MPI_Ibcast(x->sb, x->count, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
        else
            MPI_Bcast(x->sb, x->count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        if (nb)
            MPI_Ialltoall(x->sb, x->count, MPI_DOUBLE, x->rb, x->count, MPI_DOUBLE,
                          MPI_COMM_WORLD, &req);
        else
            MPI_Alltoall(x->sb, x->count, MPI_DOUBLE, x->rb, x->count, MPI_DOUBLE,
                         MPI_COMM_WORLD);
        break;
    case BARRIER:
        if (nb)
            MPI_Ibarrier(MPI_COMM_WORLD, &req);
        else
            MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    if (nb)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* iters calls of one collective in one form, every result checked;
 * returns how many results were wrong.  skew: rank it % size calls 2 ms
 * after the others. */
static int loop_skewed(enum coll coll, enum form form, int count, int iters, bool refill,
                       bool skew)
{
    struct run x = {.coll = coll, .form = form, .count = count};
    size_t n = (size_t)count * (size_t)size + 1;
    x.sb = calloc(n, sizeof(double));
    x.rb = calloc(n, sizeof(double));
    init(&x);
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        if (refill || it == 0)
            fill(&x, it);
        if (skew && rank == it % size)
            usleep(2000);
        once(&x);
        bad += check(&x, refill ? it : 0) != 0;
    }
    if (form == PERSISTENT)
        MPI_Request_free(&x.req);
    free(x.sb);
    free(x.rb);
    return bad;
}

static int loop(enum coll coll, enum form form, int count, int iters, bool refill)
{
    return loop_skewed(coll, form, count, iters, refill, false);
}

static void skew(void)
{
    static const int counts[] = {1, 512};  /* 8 B, 4 KiB */
    for (int c = 0; c < 2; c++)
        for (int coll = ALLREDUCE; coll <= BARRIER; coll++) {
            int bad = loop_skewed(coll, PERSISTENT, counts[c], 100, true, true);
            CHECK(bad == 0, "skewed persistent %s, %d doubles: %d of 100 results wrong",
                  coll_names[coll], counts[c], bad);
        }
}

static void repeat(void)
{
    static const int counts[] = {1, 512, 8192};  /* 8 B, 4 KiB, 64 KiB */
    for (int c = 0; c < 3; c++)
        for (int coll = ALLREDUCE; coll <= BARRIER; coll++)
            for (int form = BLOCKING; form <= PERSISTENT; form++) {
                int iters = counts[c] > 1000 ? 100 : 400;
                int bad = loop(coll, form, counts[c], iters, true);
                CHECK(bad == 0, "%s %s, %d doubles: %d of %d results wrong", form_names[form],
                      coll_names[coll], counts[c], bad, iters);
            }
}

/* More ranks than processors (and no binding: mpirun binds none then):
 * the progress thread must not preempt the ranks that have work, so it
 * keeps the default priority (docs/progress.md, "Oversubscription"). */
static void oversubscribed_thread(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || size <= online ||
        CPU_COUNT(&set) < online)
        return;
    long tid = progress_thread_tid();
    if (tid < 0)
        return;  /* CADENCE_PROGRESS_THREADS=0 */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    CHECK(errno == 0 && nice >= 0, "%d ranks on %ld processors: the progress thread runs at "
          "nice %d (wants >= 0: no raised priority when oversubscribed)", size, online, nice);
}

static void quiet(void)
{
    static const int counts[] = {1, 512};
    const int calls = 1000;
    for (int c = 0; c < 2; c++)
        for (int coll = ALLREDUCE; coll <= BARRIER; coll++)
            for (int form = NONBLOCKING; form <= PERSISTENT; form++) {
                loop(coll, form, counts[c], 50, false);  /* warm-up */
                MPI_Barrier(MPI_COMM_WORLD);
                long before = progress_thread_switches();
                long slept_before = task_switches("/proc/thread-self/status", false);
                int bad = loop(coll, form, counts[c], calls, false);
                long after = progress_thread_switches();
                long slept = task_switches("/proc/thread-self/status", false) - slept_before;
                CHECK(bad == 0, "%s %s, %d doubles: %d of %d results wrong", form_names[form],
                      coll_names[coll], counts[c], bad, calls);
                CHECK(before >= 0 && after >= 0 && slept_before >= 0,
                      "the progress thread (cdn-progress) is there");
                /* A broadcast loop does not hold the ranks in step: the root
                 * runs ahead until its ring to the other rank is half full,
                 * which rings by design (docs/progress.md, "Wants"). */
                CHECK(coll == BCAST || after - before < calls / 50 + 2 * slept,
                      "%s %s, %d doubles: the progress thread switched %ld times in %d calls "
                      "while the waiter slept %ld times (needs < %d + 2 per sleep)",
                      form_names[form], coll_names[coll], counts[c], after - before, calls,
                      slept, calls / 50);
            }
}

static void truncate_bcast(void)
{
    if (size < 2 || size > 3)
        return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n = rank == 0 ? 40000 : 100;
    int *buf = calloc(40000, sizeof(int));
    MPI_Request req;
    int rc = MPI_Bcast_init(buf, n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK(rc == MPI_SUCCESS, "MPI_Bcast_init: rc %d", rc);
    for (int k = 0; k < 3 && rc == MPI_SUCCESS; k++) {
        int src = MPI_Start(&req);
        CHECK(src == MPI_SUCCESS, "MPI_Start %d: rc %d", k, src);
        if (rank != 0) {
            struct timespec t = {0, 20 * 1000 * 1000};
            nanosleep(&t, NULL);  /* the root's RTS arrives meanwhile */
        }
        int wrc = MPI_Wait(&req, MPI_STATUS_IGNORE), cls = MPI_SUCCESS;
        if (wrc != MPI_SUCCESS)
            MPI_Error_class(wrc, &cls);
        if (rank != 0)
            CHECK(cls == MPI_ERR_TRUNCATE, "leaf, start %d: MPI_Wait class %d, want "
                  "MPI_ERR_TRUNCATE (%d)", k, cls, MPI_ERR_TRUNCATE);
        else
            CHECK(wrc == MPI_SUCCESS, "root, start %d: MPI_Wait class %d", k, cls);
    }
    MPI_Request_free(&req);
    free(buf);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "repeat";
    if (strcmp(mode, "quiet") == 0)
        quiet();
    else if (strcmp(mode, "skew") == 0)
        skew();
    else if (strcmp(mode, "truncate") == 0)
        truncate_bcast();
    else {
        repeat();
        oversubscribed_thread();
    }
    MPI_Finalize();
    return check_summary(mode);
}
