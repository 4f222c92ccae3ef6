/*
 * One-sided (MPI-3 RMA) benchmarks written against the MPI API only, so the
 * same source builds with Cadence, MPICH and Open MPI.  Two ranks: rank 0
 * is the origin of every operation, rank 1 the target.  The structure
 * follows the OSU Micro-Benchmarks' one-sided tests: one window per size,
 * the target's application outside any RMA call while rank 0 measures (in
 * the passive-target tests it waits in MPI_Barrier until rank 0 is done,
 * as OSU's target does), every figure the mean over the timed iterations
 * after a warm-up.  Sizes 8 B .. 1 MiB (8, 64, 512 B, 4, 32, 256 KiB,
 * 1 MiB; -s others).
 *
 *   rma_put_lat_lockall, rma_get_lat_lockall
 *               MPI_Win_lock_all once; per iteration one MPI_Put (MPI_Get)
 *               of the size and MPI_Win_flush(1); MPI_Win_unlock_all at the
 *               end; 10,000 + 100 iterations up to 8 KiB, 1,000 + 10 above;
 *               mean (total over iterations), median and p99 (us)
 *   rma_put_lat_fence, rma_get_lat_fence
 *               per iteration rank 0's MPI_Put (MPI_Get), then
 *               MPI_Win_fence(0) on both ranks; the same counts; rank 0's
 *               mean, median and p99 (us)
 *   rma_put_bw_lockall, rma_get_bw_lockall
 *               under MPI_Win_lock_all, per iteration a window of 64
 *               MPI_Put (MPI_Get) of the size, all at displacement 0, and
 *               one MPI_Win_flush(1); MB/s (1e6 bytes/s) = size * 64 *
 *               iterations / time; p2pbench bw's counts: 10,000 + 100
 *               windows up to 8 KiB, above at most 1,000 + 10 and no more
 *               than 4 GiB per size (64 + 7 windows at 1 MiB)
 *   rma_put_bw_fence, rma_get_bw_fence
 *               the same with MPI_Win_fence(0) on both ranks after the 64
 *   rma_acc_lat MPI_Accumulate of size / 8 doubles (MPI_SUM, at least
 *               one) + MPI_Win_flush(1) under MPI_Win_lock_all, as
 *               rma_put_lat_lockall (us)
 *   rma_fop_lat MPI_Fetch_and_op of one MPI_INT64_T (MPI_SUM) +
 *               MPI_Win_flush(1), as rma_put_lat_lockall; size column 8
 *   rma_cas_lat MPI_Compare_and_swap of one MPI_INT64_T + MPI_Win_flush(1)
 *               (every one swaps: iteration i compares with i and writes
 *               i + 1); size column 8
 *   rma_passive seed 003's passive-target case: after a barrier rank 1
 *               sleeps S seconds (usleep, no MPI call; -c S, default 10)
 *               while rank 0 takes MPI_Win_lock(MPI_LOCK_SHARED, 1), makes
 *               1,000 MPI_Get of one int each followed by MPI_Win_flush(1),
 *               and MPI_Win_unlock(1); the milliseconds from before the
 *               lock to after the unlock (stat mean, unit ms, size column
 *               8).  An MPI whose target answers only from inside an MPI
 *               call takes about S seconds; one that answers while the
 *               target's application computes takes milliseconds.
 *
 * Every test checks its data once per size after the timed loop, and a
 * wrong byte ends the run through MPI_Abort (exit status not 0): a put's
 * target bytes are read back with MPI_Get; a get's bytes are the pattern
 * the target wrote before the window was used; every element of the
 * accumulate target is the count of accumulates made; every fetched value
 * of MPI_Fetch_and_op is the count before it, every MPI_Compare_and_swap
 * found the value it compared with, and the target counter ends at the
 * count of both; each of rma_passive's gets reads the value rank 1 wrote
 * before the barrier.
 *
 * The window's kind: environment variable RMABENCH_WIN (read on rank 0):
 *   allocate    MPI_Win_allocate (the default, as OSU's default)
 *   create      MPI_Win_create on memory from malloc (64-byte aligned)
 *   dynamic     MPI_Win_create_dynamic with that memory attached; the
 *               target's address (MPI_Get_address) is the displacement
 * Rank 0 prints it first as a comment line, "# window: allocate".  The
 * target's own stores into its window memory (the initial patterns) are
 * made under an exclusive lock of its own rank, so they are in the window
 * for every memory model.
 *
 * Options and output: bench_common.h (-c: rma_passive's sleep in seconds).
 */
#include "bench_common.h"

#include <stdint.h>

enum { WINDOW = 64, PASSIVE_GETS = 1000 };
enum { MIN_SIZE = 8 };
enum kind { WIN_ALLOCATE, WIN_CREATE, WIN_DYNAMIC };
static const char *kind_names[] = {"allocate", "create", "dynamic"};

enum op { PUT, GET, ACC, FOP, CAS };
enum sync { LOCKALL, FENCE };

static int rank;
static enum kind win_kind;
static unsigned char *sbuf, *rbuf;
static double *ones;       /* the accumulates' origin data */
static int64_t *fetched;   /* MPI_Fetch_and_op's and MPI_Compare_and_swap's results */

/* A window of one size: the memory of this rank's part, and the
 * displacement of rank 1's part (its address for a dynamic window). */
struct rwin {
    MPI_Win win;
    unsigned char *mem;
    MPI_Aint disp;
    long bytes;
};

static void fail(const char *test, long bytes, const char *what, long at, long got, long want)
{
    fprintf(stderr, "rmabench: %s %ld B: wrong %s at %ld: %ld, expected %ld\n", test, bytes, what,
            at, got, want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Byte j of pattern seed (0: all zero). */
static unsigned char pattern(long j, int seed)
{
    return seed ? (unsigned char)(j * 31 + seed) : 0;
}

static void fill(unsigned char *p, long n, int seed)
{
    for (long j = 0; j < n; j++)
        p[j] = pattern(j, seed);
}

static void check_bytes(const char *test, const unsigned char *p, long n, int seed)
{
    for (long j = 0; j < n; j++)
        if (p[j] != pattern(j, seed))
            fail(test, n, "byte", j, p[j], pattern(j, seed));
}

static void win_open(struct rwin *w, long bytes)
{
    w->bytes = bytes;
    w->disp = 0;
    if (win_kind == WIN_ALLOCATE) {
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
        return;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)bytes) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    w->mem = p;
    if (win_kind == WIN_CREATE) {
        MPI_Win_create(w->mem, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        return;
    }
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
    MPI_Win_attach(w->win, w->mem, bytes);
    MPI_Get_address(w->mem, &w->disp);
    /* after rank 1's attach: rank 0 addresses its memory from here on */
    MPI_Bcast(&w->disp, 1, MPI_AINT, 1, MPI_COMM_WORLD);
}

static void win_close(struct rwin *w)
{
    if (win_kind == WIN_DYNAMIC)
        MPI_Win_detach(w->win, w->mem);
    MPI_Win_free(&w->win);
    if (win_kind != WIN_ALLOCATE)
        free(w->mem);
}

/* This rank's part of the window filled with pattern seed, under an
 * exclusive lock of its own, then a barrier: the other rank uses the
 * window after it. */
static void fill_own(struct rwin *w, int seed)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    fill(w->mem, w->bytes, seed);
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0's operation number i (counted from the first warm-up one) of b
 * bytes on rank 1's part at displacement 0. */
static void issue(enum op op, long b, long i, const struct rwin *w)
{
    static const int64_t one = 1;
    int n = (int)b;
    switch (op) {
    case PUT:
        MPI_Put(sbuf, n, MPI_BYTE, 1, w->disp, n, MPI_BYTE, w->win);
        break;
    case GET:
        MPI_Get(rbuf, n, MPI_BYTE, 1, w->disp, n, MPI_BYTE, w->win);
        break;
    case ACC:
        MPI_Accumulate(ones, n / 8, MPI_DOUBLE, 1, w->disp, n / 8, MPI_DOUBLE, MPI_SUM, w->win);
        break;
    case FOP:
        MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 1, w->disp, MPI_SUM, w->win);
        break;
    case CAS: {
        int64_t cmp = i, set = i + 1;
        MPI_Compare_and_swap(&set, &cmp, &fetched[i], MPI_INT64_T, 1, w->disp, w->win);
        break;
    }
    }
}

/* The end of a round: rank 0's flush, or a fence on both ranks. */
static void complete(enum sync sy, const struct rwin *w)
{
    if (sy == FENCE)
        MPI_Win_fence(0, w->win);
    else
        MPI_Win_flush(1, w->win);
}

/* skip + iters rounds of ops operations from rank 0 and a completion
 * (rank 0 alone under lock_all; both ranks with fences); t[i] gets each
 * timed round's seconds (unless t is NULL); the seconds of the timed
 * rounds. */
static double rounds(enum op op, enum sync sy, const struct rwin *w, long b, int ops, int iters,
                     int skip, double *t)
{
    double start = 0;
    long n = 0;
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip)
            start = MPI_Wtime();
        double t0 = MPI_Wtime();
        if (rank == 0)
            for (int k = 0; k < ops; k++)
                issue(op, b, n++, w);
        complete(sy, w);
        if (i >= skip && t)
            t[i - skip] = MPI_Wtime() - t0;
    }
    return MPI_Wtime() - start;
}

/* After n operations: the target's data as each test expects it (rank 0
 * reads it; with fences rank 1 takes part in the epoch). */
static void verify(const char *test, enum op op, enum sync sy, const struct rwin *w, long b,
                   long n)
{
    if (op == FOP || op == CAS) {
        /* each found the count of the ones before it; the counter ends at n */
        for (long i = 0; i < n; i++)
            if (fetched[i] != i)
                fail(test, b, "fetched value", i, (long)fetched[i], i);
        int64_t zero = 0, last = -1;
        MPI_Fetch_and_op(&zero, &last, MPI_INT64_T, 1, w->disp, MPI_NO_OP, w->win);
        complete(sy, w);
        if (last != n)
            fail(test, b, "counter", 0, (long)last, n);
        return;
    }
    if (op != GET) {
        if (rank == 0) {
            memset(rbuf, 0xff, (size_t)b);
            MPI_Get(rbuf, (int)b, MPI_BYTE, 1, w->disp, (int)b, MPI_BYTE, w->win);
        }
        complete(sy, w);
    }
    if (rank != 0)
        return;
    if (op == ACC) {
        const double *d = (const double *)rbuf;
        for (long j = 0; j < b / 8; j++)
            if (d[j] != (double)n)
                fail(test, b, "sum", j, (long)d[j], n);
    } else {
        check_bytes(test, rbuf, b, op == PUT ? 1 : 2);
    }
}

static void run(const char *test, enum op op, enum sync sy, int ops)
{
    static const long dflt[] = {8, 64, 512, 4096, 32768, 262144, 1 << 20};
    static const long one_int64[] = {8};
    const long *sizes = one_int64;
    int ns = op == FOP || op == CAS ? 1 : sizes_of(dflt, 7, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k] < MIN_SIZE ? MIN_SIZE : sizes[k];
        if (op == ACC)
            b -= b % 8;
        int iters, skip;
        if (ops == 1)
            counts(b, 10000, 100, 1000, 10, &iters, &skip);
        else
            bw_counts(b, ops, &iters, &skip);
        double *t = malloc((size_t)iters * sizeof *t);
        fetched = op == FOP || op == CAS ? calloc((size_t)(skip + iters), sizeof *fetched) : NULL;
        struct rwin w;
        win_open(&w, b);
        fill_own(&w, op == PUT || op == GET ? 2 : 0);
        fill(sbuf, b, 1);
        memset(rbuf, 0, (size_t)b);
        double secs = 0;
        if (sy == FENCE) {
            MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win);
            secs = rounds(op, sy, &w, b, ops, iters, skip, t);
            verify(test, op, sy, &w, b, (long)(skip + iters) * ops);
            MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
        } else if (rank == 0) {
            MPI_Win_lock_all(0, w.win);
            secs = rounds(op, sy, &w, b, ops, iters, skip, t);
            verify(test, op, sy, &w, b, (long)(skip + iters) * ops);
            MPI_Win_unlock_all(w.win);
        }
        /* the target waits here (lock_all) until rank 0 is done */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0 && ops == 1)
            report_times(test, b, secs / iters, t, iters);
        else if (rank == 0)
            printf("%s,%ld,mean,%.2f,MB/s\n", test, b, (double)b * ops * iters / secs / 1e6);
        fflush(stdout);
        win_close(&w);
        free(fetched);
        free(t);
    }
}

/* Seed 003's passive-target listing: 1,000 flushed gets of one int from a
 * rank asleep in its computation. */
static void passive(void)
{
    long sleep_s = opt_ncounts ? opt_counts[0] : 10;
    struct rwin w;
    win_open(&w, PASSIVE_GETS * (long)sizeof(int));
    int *mine = (int *)w.mem;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win);
    for (int i = 0; i < PASSIVE_GETS; i++)
        mine[i] = rank * 1000000 + i;
    MPI_Win_unlock(rank, w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = 0;
    if (rank == 1) {
        usleep((useconds_t)(sleep_s * 1000000));  /* computing: no MPI call */
    } else {
        double t0 = MPI_Wtime();
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win);
        for (int i = 0; i < PASSIVE_GETS; i++) {
            int v = -1;
            MPI_Get(&v, 1, MPI_INT, 1, w.disp + i * (MPI_Aint)sizeof(int), 1, MPI_INT, w.win);
            MPI_Win_flush(1, w.win);
            if (v != 1000000 + i)
                fail("rma_passive", 8, "int", i, v, 1000000 + i);
        }
        MPI_Win_unlock(1, w.win);
        t = MPI_Wtime() - t0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# rma_passive: %d gets from a rank asleep for %ld s took %.3f ms (%s)\n",
               PASSIVE_GETS, sleep_s, t * 1e3,
               t < sleep_s / 2.0 ? "while it slept" : "it had to wake up");
        printf("rma_passive,8,mean,%.3f,ms\n", t * 1e3);
        fflush(stdout);
    }
    win_close(&w);
}

/* RMABENCH_WIN on rank 0, for every rank. */
static void choose_window(void)
{
    int k = WIN_ALLOCATE;
    if (rank == 0) {
        const char *e = getenv("RMABENCH_WIN");
        if (e && *e) {
            for (k = 0; k < 3 && strcmp(e, kind_names[k]) != 0; k++)
                ;
            if (k == 3) {
                fprintf(stderr, "rmabench: RMABENCH_WIN=%s: allocate, create or dynamic\n", e);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        printf("# window: %s\n", kind_names[k]);
    }
    MPI_Bcast(&k, 1, MPI_INT, 0, MPI_COMM_WORLD);
    win_kind = (enum kind)k;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        enum op op;
        enum sync sy;
        int ops;
    } tests[] = {
        {"rma_put_lat_lockall", PUT, LOCKALL, 1}, {"rma_get_lat_lockall", GET, LOCKALL, 1},
        {"rma_put_lat_fence", PUT, FENCE, 1},     {"rma_get_lat_fence", GET, FENCE, 1},
        {"rma_put_bw_lockall", PUT, LOCKALL, WINDOW}, {"rma_get_bw_lockall", GET, LOCKALL, WINDOW},
        {"rma_put_bw_fence", PUT, FENCE, WINDOW}, {"rma_get_bw_fence", GET, FENCE, WINDOW},
        {"rma_acc_lat", ACC, LOCKALL, 1},         {"rma_fop_lat", FOP, LOCKALL, 1},
        {"rma_cas_lat", CAS, LOCKALL, 1},
    };
    bench_options(argc, argv);
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "rmabench: needs 2 ranks (has %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    choose_window();
    long maxb = 1 << 20;
    for (int k = 0; k < opt_nsizes; k++)
        maxb = opt_sizes[k] > maxb ? opt_sizes[k] : maxb;
    sbuf = malloc((size_t)maxb);
    rbuf = malloc((size_t)maxb);
    ones = malloc((size_t)maxb);
    for (long j = 0; j < maxb / 8; j++)
        ones[j] = 1.0;
    for (size_t k = 0; k < sizeof tests / sizeof *tests; k++)
        if (want(tests[k].name))
            run(tests[k].name, tests[k].op, tests[k].sy, tests[k].ops);
    if (want("rma_passive"))
        passive();
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    free(ones);
    MPI_Finalize();
    return 0;
}
