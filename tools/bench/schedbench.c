/*
 * The experiments of the user-level schedules paper (seed 000: Figs. 7 and
 * 8 and the creation cost), against any MPI.  Every test uses the same
 * user-built binomial broadcast from rank 0: each rank's part of the tree
 * is a list of rounds, one operation each -- receive from the parent
 * (every rank but the root), then send to each child, largest subtree
 * first -- made of MPI_Recv_init / MPI_Send_init requests.
 *
 * With MPIX_Schedule (Cadence's mpi.h defines MPIX_SCHEDULE_NULL) those
 * rounds are one schedule, committed once and run with MPI_Start +
 * MPI_Wait.  Elsewhere (MPICH, Open MPI) the same persistent requests are
 * run the way a user must write it there (and on Cadence too when built
 * with -DSCHEDBENCH_USER_ROUNDS): round after round, MPI_Start
 * then MPI_Wait (each round has one operation: MPI_Startall/MPI_Waitall
 * of one request), "user rounds".  Each test prints a row
 * "TEST,0,kind,1,mpix_schedule" or "TEST,0,kind,0,user_rounds" saying which.
 *
 *   sbcast      Fig. 7: N = 10, 50, 100, 1000 (-c) broadcasts back to back,
 *               8 B .. 1 MiB, as MPI_Bcast and as the schedule; a block is
 *               barrier, create + commit the schedule (user rounds: the
 *               requests' inits), N starts each followed by its wait, free;
 *               MPI_Bcast's block is N calls.  Blocks are repeated until
 *               1,000 broadcasts up to 8 KiB (100 above) after a warm-up of
 *               100 (10); times are per broadcast, averaged over the ranks:
 *               bcast_nN, sched_nN (us, mean), their median and p99 over the
 *               blocks (when there are 10 or more), pct_nN = 100 sched_nN /
 *               bcast_nN (%).  After the timed blocks one more start is
 *               checked: every rank must hold the root's bytes.
 *   sbcast_user the same with user rounds on every MPI (Cadence included)
 *   free        Fig. 8: free time of the broadcast, 4 KiB .. 1 MiB,
 *               100 + 10 iterations, a barrier after each (not timed).
 *               pure: start + wait alone (mean, median, p99); the compute
 *               is a busy loop with no MPI call whose iteration count is
 *               calibrated (alone, on each rank) to take the mean pure time;
 *               overall: start + compute + wait; compute: the same loop's
 *               time alone.  free % = 100 (1 - time inside MPI calls /
 *               overall): the share of the broadcast's duration the
 *               application spends computing; work % = 100 compute /
 *               overall: the share it computes at full speed (a progress
 *               thread that takes the computing core counts against it);
 *               overlap % = 100 (1 - (overall - compute) / pure), OSU's.
 *               Times averaged over the ranks.  With MPIX_Schedule:
 *               MPI_Start, compute, MPI_Wait; with user rounds: MPI_Start of
 *               the first round, the compute split in 64 chunks with an
 *               MPI_Test of the current round after each (starting the
 *               next round when it completed), then the remaining rounds
 *   free_poll   the user-rounds polling loop on every MPI (Cadence included)
 *   create      cost of building the broadcast schedule of this rank: the
 *               requests' inits, create, add, rounds, commit (user rounds:
 *               the inits alone); mean, median, p99 over all ranks'
 *               iterations, 1,000 + 100; release_mean: freeing it
 *               (MPI_Request_free + MPIX_Schedule_free; user rounds:
 *               MPI_Request_free of each request)
 *
 * Two or more ranks.  Options and output: bench_common.h.
 */
#include "bench_common.h"

#include <time.h>

#if defined(MPIX_SCHEDULE_NULL) && !defined(SCHEDBENCH_USER_ROUNDS)
#define HAVE_SCHEDULE 1
#else
#define HAVE_SCHEDULE 0
#endif

enum { MAXB = 1 << 20, MAXOPS = 64, TAG = 700, POLLS = 64 };

static int rank, nprocs;
static char *buf;

/* This rank's part of the binomial tree: one operation per round. */
struct tree {
    int nops;
    int peer[MAXOPS];
    int is_send[MAXOPS];
};

static void tree_of(int r, int n, struct tree *t)
{
    int mask = 1;
    t->nops = 0;
    while (mask < n) { /* the parent: r with its highest bit cleared */
        if (r & mask) {
            t->peer[t->nops] = r - mask;
            t->is_send[t->nops++] = 0;
            break;
        }
        mask <<= 1;
    }
    /* mask is r's lowest set bit (the root: the first power of two >= n);
     * the children are r + each smaller power of two, largest first */
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (r + mask < n) {
            t->peer[t->nops] = r + mask;
            t->is_send[t->nops++] = 1;
        }
}

/* The operations of one broadcast as persistent requests, or (when the MPI
 * has them and the test does not ask for user rounds) one schedule. */
struct bcast {
    int nops, use_schedule;
    MPI_Request op[MAXOPS];
    MPI_Request req; /* the schedule's request */
#if HAVE_SCHEDULE
    MPIX_Schedule sched;
#endif
};

static void fail(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "schedbench: rank %d: %s failed: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS)                                                                    \
            fail(#call, rc_);                                                                      \
    } while (0)

static const struct tree *my_tree;

static void bcast_build(struct bcast *bc, long b, int use_schedule)
{
    const struct tree *t = my_tree;
    bc->nops = t->nops;
    bc->use_schedule = use_schedule && HAVE_SCHEDULE;
    for (int i = 0; i < t->nops; i++) {
        if (t->is_send[i])
            CHECK(MPI_Send_init(buf, (int)b, MPI_BYTE, t->peer[i], TAG, MPI_COMM_WORLD, &bc->op[i]));
        else
            CHECK(MPI_Recv_init(buf, (int)b, MPI_BYTE, t->peer[i], TAG, MPI_COMM_WORLD, &bc->op[i]));
    }
#if HAVE_SCHEDULE
    if (bc->use_schedule) {
        CHECK(MPIX_Schedule_create(&bc->sched));
        for (int i = 0; i < t->nops; i++) {
            if (i > 0)
                CHECK(MPIX_Schedule_create_round(bc->sched));
            CHECK(MPIX_Schedule_add_operation(bc->sched, bc->op[i]));
        }
        CHECK(MPIX_Schedule_commit(bc->sched, &bc->req));
    }
#endif
}

static void bcast_release(struct bcast *bc)
{
#if HAVE_SCHEDULE
    if (bc->use_schedule) { /* the sub-requests go with it (auto-free) */
        CHECK(MPI_Request_free(&bc->req));
        CHECK(MPIX_Schedule_free(&bc->sched));
        return;
    }
#endif
    for (int i = 0; i < bc->nops; i++)
        CHECK(MPI_Request_free(&bc->op[i]));
}

/* One broadcast: the schedule's start + wait, or round after round. */
static void bcast_run(struct bcast *bc)
{
    if (bc->use_schedule) {
        CHECK(MPI_Start(&bc->req));
        CHECK(MPI_Wait(&bc->req, MPI_STATUS_IGNORE));
        return;
    }
    for (int i = 0; i < bc->nops; i++) { /* one operation per round */
        CHECK(MPI_Start(&bc->op[i]));
        CHECK(MPI_Wait(&bc->op[i], MPI_STATUS_IGNORE));
    }
}

/* The application's computation: n rounds of arithmetic, no MPI call. */
static volatile double sink;
static void work(long n)
{
    double x = sink + 1.0;
    for (long k = 0; k < n; k++)
        for (int i = 0; i < 100; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* Rounds of work() per second on this rank, computing alone. */
static double work_rate(void)
{
    long n = 1000;
    double t;
    for (;;) {
        double t0 = now();
        work(n);
        t = now() - t0;
        if (t > 0.02)
            return n / t;
        n *= 4;
    }
}

static double avg_all(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y / nprocs;
}

static void kind_row(const char *test, int use_schedule)
{
    if (rank == 0)
        printf("%s,0,kind,%d,%s\n", test, use_schedule && HAVE_SCHEDULE,
               use_schedule && HAVE_SCHEDULE ? "mpix_schedule" : "user_rounds");
}

/* Print mean, median and p99 of per-operation times named STAT_nN, with
 * the median and p99 only from 10 blocks on. */
static void report_blocks(const char *test, long b, const char *stat, int n, double mean, double *t,
                          int blocks)
{
    char name[64];
    snprintf(name, sizeof name, "%s_n%d", stat, n);
    printf("%s,%ld,%s,%.3f,us\n", test, b, name, mean * 1e6);
    if (blocks < 10)
        return;
    qsort(t, blocks, sizeof *t, cmp_double);
    int p99 = (blocks * 99 + 99) / 100 - 1;
    printf("%s,%ld,%s_median,%.3f,us\n", test, b, name, t[blocks / 2] * 1e6);
    printf("%s,%ld,%s_p99,%.3f,us\n", test, b, name, t[p99] * 1e6);
}

/* Fill the root's buffer with a pattern of size b, clear the others'. */
static void pattern(long b, int clear)
{
    for (long i = 0; i < b; i++)
        buf[i] = rank == 0 || !clear ? (char)(i * 7 + 3) : 0;
}

static void check_data(const char *test, long b)
{
    long bad = -1;
    for (long i = 0; i < b && bad < 0; i++)
        if (buf[i] != (char)(i * 7 + 3))
            bad = i;
    if (bad >= 0) {
        fprintf(stderr, "schedbench: %s %ld B: rank %d got byte %ld = %d, expected %d\n", test, b,
                rank, bad, buf[bad], (char)(bad * 7 + 3));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Fig. 7 */
static void sbcast(const char *test, int use_schedule)
{
    static const long dflt[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1 << 20};
    static const long dflt_counts[] = {10, 50, 100, 1000};
    const long *sizes, *ns = opt_ncounts ? opt_counts : dflt_counts;
    int nsz = sizes_of(dflt, 8, &sizes), nn = opt_ncounts ? opt_ncounts : 4;
    kind_row(test, use_schedule);
    for (int k = 0; k < nsz; k++) {
        long b = sizes[k] < MAXB ? sizes[k] : MAXB;
        int total, skip;
        counts(b, 1000, 100, 100, 10, &total, &skip);
        pattern(b, 0);
        /* warm-up: both forms, skip operations each */
        struct bcast bc;
        bcast_build(&bc, b, use_schedule);
        for (int i = 0; i < skip; i++) {
            CHECK(MPI_Bcast(buf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD));
            bcast_run(&bc);
        }
        bcast_release(&bc);
        for (int j = 0; j < nn; j++) {
            int n = ns[j] > 0 ? (int)ns[j] : 1, blocks = total / n > 0 ? total / n : 1;
            double *tb = malloc(blocks * sizeof *tb), *ts = malloc(blocks * sizeof *ts);
            double sb = 0, ss = 0;
            for (int r = 0; r < blocks; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int i = 0; i < n; i++)
                    CHECK(MPI_Bcast(buf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD));
                tb[r] = (MPI_Wtime() - t0) / n;
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                bcast_build(&bc, b, use_schedule);
                for (int i = 0; i < n; i++)
                    bcast_run(&bc);
                bcast_release(&bc);
                ts[r] = (MPI_Wtime() - t0) / n;
                sb += tb[r];
                ss += ts[r];
            }
            double mb = avg_all(sb / blocks), ms = avg_all(ss / blocks);
            /* the per-block figures averaged over the ranks too */
            double *ab = malloc(blocks * sizeof *ab), *as = malloc(blocks * sizeof *as);
            MPI_Allreduce(tb, ab, blocks, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(ts, as, blocks, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (int r = 0; r < blocks; r++) {
                ab[r] /= nprocs;
                as[r] /= nprocs;
            }
            if (rank == 0) {
                report_blocks(test, b, "bcast", n, mb, ab, blocks);
                report_blocks(test, b, "sched", n, ms, as, blocks);
                printf("%s,%ld,pct_n%d,%.1f,%%\n", test, b, n, 100 * ms / mb);
            }
            free(tb);
            free(ts);
            free(ab);
            free(as);
        }
        /* the schedule delivers the root's bytes */
        pattern(b, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        bcast_build(&bc, b, use_schedule);
        bcast_run(&bc);
        bcast_release(&bc);
        check_data(test, b);
        fflush(stdout);
    }
}

/* One broadcast with w rounds of work() between its start and its end:
 * the schedule computes with no MPI call; user rounds poll.  Returns the
 * seconds spent inside MPI calls. */
static double bcast_overlapped(struct bcast *bc, long w)
{
    double t0 = MPI_Wtime(), in_mpi;
    if (bc->use_schedule) {
        CHECK(MPI_Start(&bc->req));
        in_mpi = MPI_Wtime() - t0;
        work(w);
        t0 = MPI_Wtime();
        CHECK(MPI_Wait(&bc->req, MPI_STATUS_IGNORE));
        return in_mpi + MPI_Wtime() - t0;
    }
    int r = 0;
    CHECK(MPI_Start(&bc->op[0]));
    in_mpi = MPI_Wtime() - t0;
    for (int c = 0; c < POLLS; c++) {
        work(w / POLLS + (c < w % POLLS));
        if (r < bc->nops) {
            int done;
            t0 = MPI_Wtime();
            CHECK(MPI_Test(&bc->op[r], &done, MPI_STATUS_IGNORE));
            if (done && ++r < bc->nops)
                CHECK(MPI_Start(&bc->op[r]));
            in_mpi += MPI_Wtime() - t0;
        }
    }
    t0 = MPI_Wtime();
    for (; r < bc->nops; r++) {
        CHECK(MPI_Wait(&bc->op[r], MPI_STATUS_IGNORE));
        if (r + 1 < bc->nops)
            CHECK(MPI_Start(&bc->op[r + 1]));
    }
    return in_mpi + MPI_Wtime() - t0;
}

static double max_all(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return y;
}

/* Fig. 8 */
static void free_time(const char *test, int use_schedule)
{
    static const long dflt[] = {4096, 16384, 65536, 262144, 1 << 20};
    const long *sizes;
    int nsz = sizes_of(dflt, 5, &sizes);
    kind_row(test, use_schedule);
    double rate = work_rate();
    for (int k = 0; k < nsz; k++) {
        long b = sizes[k] < MAXB ? sizes[k] : MAXB;
        int iters, skip;
        counts(1 << 20, 100, 10, 100, 10, &iters, &skip);
        double *t = malloc(iters * sizeof *t), *all = NULL;
        struct bcast bc;
        pattern(b, 0);
        bcast_build(&bc, b, use_schedule);
        /* pure */
        double sum = 0;
        for (int i = 0; i < skip + iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            bcast_run(&bc);
            double dt = MPI_Wtime() - t0;
            if (i >= skip) {
                t[i - skip] = dt;
                sum += dt;
            }
        }
        double pure = avg_all(sum / iters);
        if (rank == 0)
            all = malloc((size_t)iters * nprocs * sizeof *all);
        MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0)
            report_times(test, b, pure, all, iters * nprocs);
        /* the computation: as long as the slowest rank's pure time; each
         * iteration times it alone, then overlapped with a broadcast */
        long w = (long)(max_all(sum / iters) * rate);
        double comp = 0, overall = 0, in_mpi = 0;
        for (int i = 0; i < skip + iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            work(w);
            double c = MPI_Wtime() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            double m = bcast_overlapped(&bc, w);
            if (i >= skip) {
                overall += MPI_Wtime() - t0;
                comp += c;
                in_mpi += m;
            }
        }
        bcast_release(&bc);
        overall = avg_all(overall / iters);
        comp = avg_all(comp / iters);
        in_mpi = avg_all(in_mpi / iters);
        double ov = 100 * (1 - (overall - comp) / pure);
        if (rank == 0) {
            printf("%s,%ld,overall,%.3f,us\n", test, b, overall * 1e6);
            printf("%s,%ld,compute,%.3f,us\n", test, b, comp * 1e6);
            printf("%s,%ld,free,%.1f,%%\n", test, b, 100 * (1 - in_mpi / overall));
            printf("%s,%ld,work,%.1f,%%\n", test, b, 100 * comp / overall);
            printf("%s,%ld,overlap,%.1f,%%\n", test, b, ov < 0 ? 0 : ov);
        }
        free(all);
        free(t);
        fflush(stdout);
    }
}

/* Creation + commit cost */
static void create_cost(const char *test)
{
    int iters, skip;
    counts(8, 1000, 100, 1000, 100, &iters, &skip);
    kind_row(test, 1);
    double *t = malloc(iters * sizeof *t), *all = NULL, sum = 0, rsum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < skip + iters; i++) {
        struct bcast bc;
        double t0 = MPI_Wtime();
        bcast_build(&bc, 8, 1);
        double t1 = MPI_Wtime();
        bcast_release(&bc);
        double t2 = MPI_Wtime();
        if (i >= skip) {
            t[i - skip] = t1 - t0;
            sum += t1 - t0;
            rsum += t2 - t1;
        }
    }
    double mean = avg_all(sum / iters), release = avg_all(rsum / iters);
    if (rank == 0)
        all = malloc((size_t)iters * nprocs * sizeof *all);
    MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        report_times(test, nprocs, mean, all, iters * nprocs);
        printf("%s,%d,release_mean,%.3f,us\n", test, nprocs, release * 1e6);
    }
    free(all);
    free(t);
}

int main(int argc, char **argv)
{
    bench_options(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2) {
        if (rank == 0)
            fprintf(stderr, "schedbench: needs 2 or more ranks (a broadcast with no peer has "
                            "no operation to schedule)\n");
        MPI_Finalize();
        return 2;
    }
    struct tree tree;
    tree_of(rank, nprocs, &tree);
    my_tree = &tree;
    buf = malloc(MAXB);
    memset(buf, 0, MAXB);
    if (want("sbcast"))
        sbcast("sbcast", 1);
    if (want("sbcast_user"))
        sbcast("sbcast_user", 0);
    if (want("free"))
        free_time("free", 1);
    if (want("free_poll"))
        free_time("free_poll", 0);
    if (want("create"))
        create_cost("create");
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}
