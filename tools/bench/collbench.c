/*
 * Collective benchmarks (MPI API only: builds with any MPI), any number of
 * ranks, with the OSU Micro-Benchmarks' structure and counts: 1,000 timed
 * iterations after 100 warm-up ones up to 8 KiB, 100 + 10 above; each
 * iteration is timed alone and followed by an MPI_Barrier (not timed).
 * Sizes 8 B .. 1 MiB; allreduce sums floats, bcast sends bytes from rank 0,
 * alltoall sends the size to every rank.
 *
 *   allreduce, bcast, alltoall       blocking: mean, median and p99 of the
 *                                    per-iteration times over all ranks (us)
 *   iallreduce, ibcast, ialltoall    nonblocking + MPI_Wait, with OSU's
 *       overlap: pure (start + wait alone; mean, median, p99), compute for
 *       each rank's mean pure time with no MPI call, overall (start +
 *       compute + wait), overlap % = 100 (1 - (overall - compute) / pure),
 *       the times averaged over the ranks as OSU does; and cpu_kept: the
 *       compute loop's speed while the collective progressed against
 *       computing alone (%, the slowest rank) -- the compute phase spins for
 *       a wall-clock time, so time a progress thread takes from the
 *       computing core shows here, not in the overlap; start and wait: the
 *       overlapped iterations' mean time inside the starting call and
 *       inside MPI_Wait (overall - compute is their sum: what the overlap
 *       loses, split between the call that hands the work over and the
 *       work left when the computation ends)
 *   allreduce_init, bcast_init, alltoall_init
 *                                    persistent: initialised once per size,
 *                                    then MPI_Start + MPI_Wait per iteration
 *                                    (MPI >= 4 only; no rows otherwise)
 *   allreduce_forms, bcast_forms, alltoall_forms
 *       the three forms in one launch, interleaved: rounds of a block of
 *       iterations of each form (blocking, nonblocking + MPI_Wait,
 *       persistent MPI_Start + MPI_Wait), the order rotating from round to
 *       round, the same counts per form as above; rows blocking,
 *       nonblocking and persistent: each form's mean over all ranks'
 *       iterations (us).  Separate launches of this machine differ by
 *       10-50% (the hypervisor's placement and copy speed change between
 *       them), more than the forms differ; within one launch they see the
 *       same machine.  MPI >= 4 only.
 *   allreduce_forms_same, bcast_forms_same, alltoall_forms_same
 *       the same loop with the blocking form in all three places (rows
 *       blocking, blocking2, blocking3): how far two identical forms lie
 *       apart in it on this machine, the resolution of the persistent
 *       goals (docs/performance.md).  MPI >= 4 only.
 *   bcast_released, bcast_init_released
 *                                    bcast and bcast_init, but the untimed
 *       barrier after each iteration is the root releasing the others:
 *       every other rank sends rank 0 an empty message and waits for an
 *       empty answer, which rank 0 sends each once it has heard from all.
 *       The benchmark averages the ranks' broadcast times, and how the wait
 *       for the root's data splits between the broadcast and the barrier is
 *       set by which rank leaves the barrier first: with this one the root
 *       does, as from a barrier gathered to rank 0 and released from it;
 *       with a dissemination barrier the last rank to arrive does (the
 *       leaf).  Run on every MPI, the same loop with the same barrier
 *       (docs/performance.md, "Where every goal stands").
 *
 * Options and output: bench_common.h.
 */
#include "bench_common.h"

#include <stdbool.h>
#include <time.h>

static int rank, nprocs;
static int released;  /* bcast_released: the root releases the others after each iteration */

/* The untimed synchronisation after each iteration: MPI_Barrier, or with
 * `released` the root releasing the others (bcast_released). */
static void after_iteration(void)
{
    if (!released) {
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 0) {
        for (int r = 1; r < nprocs; r++)
            MPI_Recv(NULL, 0, MPI_BYTE, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int r = 1; r < nprocs; r++)
            MPI_Send(NULL, 0, MPI_BYTE, r, 99, MPI_COMM_WORLD);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}
static char *sbuf, *rbuf;

enum op { ALLREDUCE, BCAST, ALLTOALL };
enum kind { BLOCKING, NONBLOCKING, PERSISTENT, FORMS };

static const long default_sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1 << 20};
enum { NDEFAULT = sizeof default_sizes / sizeof *default_sizes, MAXB = 1 << 20 };

static void blocking(enum op op, long b)
{
    switch (op) {
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, (int)(b / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(sbuf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, (int)b, MPI_BYTE, rbuf, (int)b, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
}

static void nonblocking(enum op op, long b, MPI_Request *req)
{
    switch (op) {
    case ALLREDUCE:
        MPI_Iallreduce(sbuf, rbuf, (int)(b / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
        break;
    case BCAST:
        MPI_Ibcast(sbuf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD, req);
        break;
    case ALLTOALL:
        MPI_Ialltoall(sbuf, (int)b, MPI_BYTE, rbuf, (int)b, MPI_BYTE, MPI_COMM_WORLD, req);
        break;
    }
}

#if MPI_VERSION >= 4
static void persistent_init(enum op op, long b, MPI_Request *req)
{
    switch (op) {
    case ALLREDUCE:
        MPI_Allreduce_init(sbuf, rbuf, (int)(b / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                           MPI_INFO_NULL, req);
        break;
    case BCAST:
        MPI_Bcast_init(sbuf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req);
        break;
    case ALLTOALL:
        MPI_Alltoall_init(sbuf, (int)b, MPI_BYTE, rbuf, (int)b, MPI_BYTE, MPI_COMM_WORLD,
                          MPI_INFO_NULL, req);
        break;
    }
}
#endif

/* Start one operation of the kind: run it (blocking), or start it into
 * *req (nonblocking: a new request; persistent: *req, initialised). */
static void start_kind(enum op op, enum kind kind, long b, MPI_Request *req)
{
    if (kind == BLOCKING)
        blocking(op, b);
#if MPI_VERSION >= 4
    else if (kind == PERSISTENT)
        MPI_Start(req);
#endif
    else
        nonblocking(op, b, req);
}

/* Busy computation for t seconds, no MPI call; counts its loop rounds. */
static volatile double sink;
static double rounds;
static void compute(double t)
{
    double t0 = now(), x = 1.0;
    long n = 0;
    while (now() - t0 < t) {
        for (int i = 0; i < 200; i++)
            x = x * 1.0000001 + 1e-9;
        n++;
    }
    sink = x;
    rounds += n;
}

static double sum_all(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

/* The means of an overlapped run's phases (iterations with work > 0). */
struct phases {
    double start, compute, wait;
};

/* iters timed operations after skip warm-up ones, a barrier after each;
 * t[i] gets each one's seconds, the return value their mean.  work > 0:
 * a nonblocking operation computes that long between start and wait, and
 * *ph gets the mean times of the start call, the computation and the wait. */
static double iterations(enum op op, enum kind kind, long b, int iters, int skip, double work,
                         double *t, struct phases *ph)
{
    MPI_Request req = MPI_REQUEST_NULL;
    double sum = 0, csum = 0, ssum = 0, wsum = 0;
#if MPI_VERSION >= 4
    if (kind == PERSISTENT)
        persistent_init(op, b, &req);
#endif
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < skip + iters; i++) {
        double t0 = MPI_Wtime(), c = 0, started = 0, waited = 0;
        start_kind(op, kind, b, &req);
        if (kind != BLOCKING) {
            if (work > 0) {
                /* phases timed only here: the pure time takes no extra
                 * clock reads, which would bias it against the blocking
                 * form's at a few hundred nanoseconds */
                double c0 = MPI_Wtime();
                started = c0 - t0;
                compute(work);
                double w0 = MPI_Wtime();
                c = w0 - c0;
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                waited = MPI_Wtime() - w0;
            } else {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        double dt = MPI_Wtime() - t0;
        if (i >= skip) {
            if (t)
                t[i - skip] = dt;
            sum += dt;
            csum += c;
            ssum += started;
            wsum += waited;
        }
        after_iteration();
    }
    if (kind == PERSISTENT)
        MPI_Request_free(&req);
    if (ph)
        *ph = (struct phases){ssum / iters, csum / iters, wsum / iters};
    return sum / iters;
}

/* A size to run (at most MAXB) and OSU's collective counts for it. */
static long size_counts(long size, int *iters, int *skip)
{
    long b = size < MAXB ? size : MAXB;
    counts(b, 1000, 100, 100, 10, iters, skip);
    return b;
}

#if MPI_VERSION >= 4
/* The three forms of op, interleaved in one launch (the *_forms tests). */
static void measure_forms(const char *name, enum op op, bool same)
{
    static const enum kind three[] = {BLOCKING, NONBLOCKING, PERSISTENT}, one[] = {
        BLOCKING, BLOCKING, BLOCKING};
    static const char *const three_names[] = {"blocking", "nonblocking", "persistent"},
                             *const one_names[] = {"blocking", "blocking2", "blocking3"};
    const enum kind *forms = same ? one : three;
    const char *const *form_names = same ? one_names : three_names;
    const long *sizes;
    int ns = sizes_of(default_sizes, NDEFAULT, &sizes);
    for (int k = 0; k < ns; k++) {
        int iters, skip;
        long b = size_counts(sizes[k], &iters, &skip);
        int block = iters >= 500 ? 50 : 10, rounds = (iters + block - 1) / block;
        MPI_Request preq;
        persistent_init(op, b, &preq);
        double sum[3] = {0, 0, 0};
        long n[3] = {0, 0, 0};
        MPI_Barrier(MPI_COMM_WORLD);
        /* the warm-up: skip iterations of each form, untimed */
        for (int r = -1; r < rounds; r++) {
            for (int j = 0; j < 3; j++) {
                int f = (r + 1 + j) % 3;
                int count = r < 0 ? skip : block;
                for (int i = 0; i < count; i++) {
                    MPI_Request req, *rq = forms[f] == PERSISTENT ? &preq : &req;
                    double t0 = MPI_Wtime();
                    start_kind(op, forms[f], b, rq);
                    if (forms[f] != BLOCKING)
                        MPI_Wait(rq, MPI_STATUS_IGNORE);
                    double dt = MPI_Wtime() - t0;
                    if (r >= 0) {
                        sum[f] += dt;
                        n[f]++;
                    }
                    MPI_Barrier(MPI_COMM_WORLD);
                }
            }
        }
        MPI_Request_free(&preq);
        for (int f = 0; f < 3; f++) {
            double mean = sum_all(sum[f] / n[f]) / nprocs;
            if (rank == 0)
                printf("%s,%ld,%s,%.3f,us\n", name, b, form_names[f], mean * 1e6);
        }
    }
}
#endif

static void measure(const char *name, enum op op, enum kind kind)
{
    const long *sizes;
    int ns = sizes_of(default_sizes, NDEFAULT, &sizes);
    for (int k = 0; k < ns; k++) {
        int iters, skip;
        long b = size_counts(sizes[k], &iters, &skip);
        double *t = malloc(iters * sizeof *t), *all = NULL;
        double mean = iterations(op, kind, b, iters, skip, 0, t, NULL);
        /* every rank's iterations pooled on rank 0 */
        if (rank == 0)
            all = malloc((size_t)iters * nprocs * sizeof *all);
        MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        double avg = sum_all(mean) / nprocs;
        if (rank == 0)
            report_times(name, b, avg, all, iters * nprocs);
        free(all);
        free(t);
        if (kind != NONBLOCKING)
            continue;
        /* the compute loop's speed alone, then overlapped */
        rounds = 0;
        double c0 = now();
        for (int i = 0; i < iters; i++)
            compute(mean);
        double alone = rounds / (now() - c0);
        struct phases ph;
        rounds = 0;
        double overall = iterations(op, kind, b, iters, skip, mean, NULL, &ph);
        double kept = 100 * rounds / (ph.compute * (iters + skip)) / alone, kept_min;
        MPI_Allreduce(&kept, &kept_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        overall = sum_all(overall) / nprocs;
        double comp = sum_all(ph.compute) / nprocs;
        double started = sum_all(ph.start) / nprocs, waited = sum_all(ph.wait) / nprocs;
        double ov = 100 * (1 - (overall - comp) / avg);
        if (rank == 0) {
            printf("%s,%ld,overall,%.3f,us\n", name, b, overall * 1e6);
            printf("%s,%ld,compute,%.3f,us\n", name, b, comp * 1e6);
            printf("%s,%ld,start,%.3f,us\n", name, b, started * 1e6);
            printf("%s,%ld,wait,%.3f,us\n", name, b, waited * 1e6);
            printf("%s,%ld,overlap,%.1f,%%\n", name, b, ov < 0 ? 0 : ov);
            printf("%s,%ld,cpu_kept,%.1f,%%\n", name, b, kept_min > 100 ? 100 : kept_min);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        enum op op;
        enum kind kind;
    } tests[] = {
        {"allreduce", ALLREDUCE, BLOCKING},
        {"bcast", BCAST, BLOCKING},
        {"alltoall", ALLTOALL, BLOCKING},
        {"iallreduce", ALLREDUCE, NONBLOCKING},
        {"ibcast", BCAST, NONBLOCKING},
        {"ialltoall", ALLTOALL, NONBLOCKING},
        {"allreduce_init", ALLREDUCE, PERSISTENT},
        {"bcast_init", BCAST, PERSISTENT},
        {"alltoall_init", ALLTOALL, PERSISTENT},
        {"allreduce_forms", ALLREDUCE, FORMS},
        {"bcast_forms", BCAST, FORMS},
        {"alltoall_forms", ALLTOALL, FORMS},
        {"allreduce_forms_same", ALLREDUCE, FORMS},
        {"bcast_forms_same", BCAST, FORMS},
        {"alltoall_forms_same", ALLTOALL, FORMS},
        {"bcast_released", BCAST, BLOCKING},
        {"bcast_init_released", BCAST, PERSISTENT},
    };
    bench_options(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    sbuf = malloc((size_t)MAXB * nprocs);
    rbuf = malloc((size_t)MAXB * nprocs);
    memset(sbuf, 1, (size_t)MAXB * nprocs);
    memset(rbuf, 0, (size_t)MAXB * nprocs);
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        if (!want(tests[i].name))
            continue;
#if MPI_VERSION < 4
        if (tests[i].kind == PERSISTENT || tests[i].kind == FORMS) {
            if (rank == 0)
                fprintf(stderr, "collbench: %s needs MPI 4 (this is MPI %d.%d): no rows\n",
                        tests[i].name, MPI_VERSION, MPI_SUBVERSION);
            continue;
        }
#else
        if (tests[i].kind == FORMS) {
            measure_forms(tests[i].name, tests[i].op, strstr(tests[i].name, "_same") != NULL);
            continue;
        }
#endif
        released = strstr(tests[i].name, "_released") != NULL;
        measure(tests[i].name, tests[i].op, tests[i].kind);
    }
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
