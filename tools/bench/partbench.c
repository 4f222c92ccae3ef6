/*
 * Partitioned communication benchmarks (MPI-4 partitioned point-to-point,
 * and Cadence's partitioned collectives), written against the MPI API only
 * so that the same source builds with Cadence, MPICH and Open MPI.  The
 * point-to-point tests need exactly 2 ranks; the pcoll_* tests run on any
 * number.  Every figure is a mean over the timed iterations after a
 * warm-up (never a best case); where an iteration can be timed alone its
 * median and p99 are printed as well.
 *
 *   part_p2p    one-way time of a message of 1 KiB .. 4 MiB (powers of 4):
 *               ping-pong, half round trip timed at rank 0, both ranks
 *               sending and receiving with the same form, four forms
 *               interleaved in one launch (rounds of a block of iterations
 *               of each, blocks of 50, of 10 where a form runs fewer than
 *               500 iterations, the order rotating from round to round, as
 *               collbench's *_forms: separate launches of this machine
 *               differ by more than the forms do):
 *                 partitioned  MPI_Psend_init / MPI_Precv_init with 1
 *                              partition, one pair per direction initialised
 *                              before the timed loop; MPI_Start,
 *                              MPI_Pready(0), MPI_Wait
 *                 persistent   MPI_Send_init / MPI_Recv_init, MPI_Start,
 *                              MPI_Wait
 *                 nonblocking  MPI_Isend / MPI_Irecv, MPI_Wait
 *                 blocking     MPI_Send / MPI_Recv
 *               stats FORM (the mean), FORM_median and FORM_p99 (us);
 *               osu_latency's counts per form (10,000 + 100 warm-up
 *               iterations up to 8 KiB, 1,000 + 10 above) but no more than
 *               1 GiB moved per point (512 round trips at 1 MiB, 128 at
 *               4 MiB, as bw caps OSU's counts)
 *   part_count_total
 *               the partitioned ping-pong of a fixed total (-s, default
 *               64 KiB and then 4 MiB, each preceded by a comment line
 *               "# part_count_total: total BYTES") split into 1, 2, 4, ...,
 *               64 partitions on both sides, the sender marking every
 *               partition ready in order from one thread; the bytes column
 *               is the partition count (as rate_mt's is the thread count);
 *               mean, median, p99 (us); counts of the total's size
 *   part_count_fixed
 *               the same with a fixed partition size (-s, default 16 KiB):
 *               1 .. 64 partitions, the total growing with them
 *   part_earlybird
 *               16 partitions of 64 KiB (-s: the partition size; the bytes
 *               column is the partition size); the sender computes (a busy
 *               loop with no MPI call) for 50 us before each MPI_Pready
 *               (stat compute; -c US: another time, -c 0: the whole 1 MiB's
 *               one-way time / 16, calibrated in the launch from the
 *               medians of a tenth of the count of whole transfers and of
 *               zero-byte ones).  A fixed 50 us and not the calibrated
 *               time: a 64 KiB partition sent alone costs more than 1/16
 *               of the whole message (its own message's overheads, and
 *               here a progress step shares 2 vCPUs with the computation),
 *               so at whole/16 (about 3 us for Cadence here) partitions
 *               queue and last_to_done measures the queue (1-2x whole for
 *               Cadence), not whether a ready partition leaves at once;
 *               50 us is above one partition's transfer for every MPI
 *               here, so what is left after the last MPI_Pready is that
 *               partition and what the MPI did not send early.  Stats (us):
 *                 last_to_done  from the sender's last MPI_Pready until the
 *                               receiver's MPI_Wait completed
 *                 whole         one-way time of a blocking MPI_Send of the
 *                               whole buffer, measured the same way
 *                 zero_byte     the zero-byte one-way latency subtracted
 *                 ratio         last_to_done / whole (x)
 *               with _median and _p99 for the first two.  Both ends are
 *               read at the sender, on its own clock: the receiver answers
 *               its completion with a zero-byte message, and the sender
 *               subtracts the zero-byte one-way latency measured in the same
 *               launch (interleaved with the others).  MPI_WTIME_IS_GLOBAL
 *               would let the receiver read the end on a clock shared with
 *               the sender, but an MPI need not set it, and two processes'
 *               reads of one clock still differ by when each is scheduled:
 *               with the answer both reads are the sender's, the same
 *               measurement on every MPI (checked against the receiver's
 *               own reading of CLOCK_MONOTONIC, which two processes of one
 *               host share: within 3 us for Cadence and MPICH).  One thread (OpenMP-like compute
 *               threads would only take turns on this machine's 2 vCPUs).
 *               part_p2p's counts for the total (1 MiB: 512 + 52), the
 *               three kinds interleaved in blocks as there (the zero-byte
 *               round trips in blocks that add up to their own count)
 *   pcoll_bcast, pcoll_allreduce, pcoll_alltoall
 *               Cadence only (CADENCE_MPI; MPIX_Pbcast_init,
 *               MPIX_Pallreduce_init, MPIX_Palltoall_init), 1 KiB .. 1 MiB
 *               (powers of 4) in total (per destination for alltoall;
 *               allreduce sums doubles, the others move bytes), any number
 *               of ranks: MPI_Start, MPI_Pready of every partition (the
 *               root only for bcast), MPI_Wait on every rank, timed
 *               alone with an untimed barrier after each operation (as
 *               collbench's collectives, and OSU's: back to back, a
 *               broadcast's root runs operations ahead of the others and
 *               the figure measures how far); stats partitioned (1
 *               partition), partitioned8 (8 partitions) and persistent
 *               (MPI_Bcast_init, MPI_Allreduce_init, MPI_Alltoall_init of
 *               the same total, MPI >= 4, on every MPI), interleaved in one
 *               launch as part_p2p's forms: each the mean over the ranks'
 *               operations (us); collbench's counts (1,000 + 100 up to
 *               8 KiB, 100 + 10 above)
 *
 * Without MPI_Psend_init in mpi.h (MPI_VERSION < 4: Open MPI 4.1) or when
 * it returns an error (an MPI that declares it without implementing it),
 * the partitioned figures are left out and a comment line says so; the
 * other forms are measured as usual.  A partitioned transfer's data is
 * checked once per size after the timed loops (the run aborts when it is
 * wrong), and so is a partitioned collective's result.
 *
 * Options and output: bench_common.h.
 */
#include "bench_common.h"

#include <time.h>

#if MPI_VERSION >= 4
#define HAVE_PART 1 /* MPI_Psend_init, MPI_Precv_init, MPI_Pready declared */
#else
#define HAVE_PART 0
#endif

#ifdef CADENCE_MPI
/* Cadence's partitioned collectives.  Declared weak here so that this file
 * builds and runs against a Cadence whose mpi.h or library does not have
 * them yet (the address is then null, and the partitioned rows are left
 * out); where mpi.h declares them this only adds the attribute. */
int MPIX_Pbcast_init(void *buffer, int partitions, MPI_Count count, MPI_Datatype datatype,
                     int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
    __attribute__((weak));
int MPIX_Pallreduce_init(const void *sendbuf, void *recvbuf, int partitions, MPI_Count count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request) __attribute__((weak));
int MPIX_Palltoall_init(const void *sendbuf, void *recvbuf, int partitions, MPI_Count count,
                        MPI_Datatype datatype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request) __attribute__((weak));
#define HAVE_PCOLL 1
#else
#define HAVE_PCOLL 0
#endif

static int rank, nprocs;
static char *sbuf, *rbuf;
static long buf_bytes;

/* Partitioned point-to-point: -1 not tried yet, 0 missing, 1 works. */
static int part_state = HAVE_PART ? -1 : 0;

/* part_earlybird: 16 partitions, 50 us of computation before each
 * MPI_Pready (-c: other microseconds; 0 calibrates, see early_work) */
enum { MAXPARTS = 64, EARLY_PARTS = 16, EARLY_WORK_US = 50 };

/* sbuf and rbuf of at least b bytes each (sbuf filled with 1s). */
static void need(long b)
{
    if (b <= buf_bytes)
        return;
    free(sbuf);
    free(rbuf);
    sbuf = malloc(b);
    rbuf = malloc(b);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "partbench: no memory for %ld bytes\n", b);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(sbuf, 1, b);
    memset(rbuf, 0, b);
    buf_bytes = b;
}

static double sum_all(double x)
{
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

static int all_ok(int ok)
{
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Busy computation for t seconds with no MPI call. */
static volatile double sink;
static void compute(double t)
{
    double t0 = now(), x = 1.0;
    while (now() - t0 < t)
        for (int i = 0; i < 100; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* osu_latency's counts for a ping-pong of b bytes (10,000 + 100 up to
 * 8 KiB, 1,000 + 10 above) but no more than 1 GiB moved per point: 512
 * round trips at 1 MiB, 128 at 4 MiB (MPICH's partitioned 4 MiB takes 3.5
 * ms one way, and part_count_total runs 7 points of it). */
static void pp_counts(long b, int *iters, int *skip)
{
    long cap = (1L << 30) / (2 * (b > 0 ? b : 1));
    int large = cap < 1000 ? (cap > 8 ? (int)cap : 8) : 1000;
    counts(b, 10000, 100, large, large / 10 < 10 ? large / 10 + 1 : 10, iters, skip);
}

/* Print FORM, FORM_median and FORM_p99 of n per-iteration times (seconds;
 * sorted in place), in microseconds. */
static void report_form(const char *test, long bytes, const char *form, double mean, double *t,
                        int n)
{
    qsort(t, n, sizeof *t, cmp_double);
    int p99 = (n * 99 + 99) / 100 - 1;
    printf("%s,%ld,%s,%.3f,us\n", test, bytes, form, mean * 1e6);
    printf("%s,%ld,%s_median,%.3f,us\n", test, bytes, form, t[n / 2] * 1e6);
    printf("%s,%ld,%s_p99,%.3f,us\n", test, bytes, form, t[p99 < 0 ? 0 : p99] * 1e6);
}

static void no_part(const char *test)
{
    if (rank == 0)
        printf("# %s: no partitioned point-to-point in this MPI (MPI %d.%d): partitioned "
               "figures left out\n", test, MPI_VERSION, MPI_SUBVERSION);
}

/* Initialise this rank's partitioned send (send = 1) or receive of parts
 * partitions of count bytes in buf, to or from the other rank on tag:
 * MPI_SUCCESS or the MPI's error (an MPI may declare MPI_Psend_init and
 * raise an error from it). */
static int part_init(int send, char *buf, int parts, long count, int tag, MPI_Request *req)
{
#if HAVE_PART
    int e;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (send)
        e = MPI_Psend_init(buf, parts, (MPI_Count)count, MPI_BYTE, 1 - rank, tag, MPI_COMM_WORLD,
                           MPI_INFO_NULL, req);
    else
        e = MPI_Precv_init(buf, parts, (MPI_Count)count, MPI_BYTE, 1 - rank, tag, MPI_COMM_WORLD,
                           MPI_INFO_NULL, req);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return e;
#else
    (void)send, (void)buf, (void)parts, (void)count, (void)tag, (void)req;
    return MPI_ERR_OTHER;
#endif
}

/* Do both ranks have what they initialised (e: each request's result, n
 * of them)?  Frees the requests when not; the first call finds out
 * whether the MPI has partitioned communication at all (part_state). */
static int part_agree(const int *e, MPI_Request *req, int n)
{
    int mine = 1;
    for (int i = 0; i < n; i++)
        mine &= e[i] == MPI_SUCCESS;
    int ok = all_ok(mine);
    if (!ok) {
        for (int i = 0; i < n; i++)
            if (e[i] == MPI_SUCCESS)
                MPI_Request_free(&req[i]);
        if (part_state < 0 && rank == 0)
            fprintf(stderr, "partbench: MPI_Psend_init/MPI_Precv_init failed: partitioned "
                    "figures left out\n");
    }
    part_state = ok;
    return ok;
}

/* This rank's partitioned pair: send to the other rank from s on tag
 * stag, receive from it into r on tag rtag, parts partitions of count
 * bytes each.  1 when both ranks have theirs. */
static int part_pair(char *s, char *r, int parts, long count, int stag, int rtag,
                     MPI_Request *send, MPI_Request *recv)
{
    if (part_state == 0)
        return 0;
    MPI_Request req[2];
    int e[2] = {part_init(1, s, parts, count, stag, &req[0]),
                part_init(0, r, parts, count, rtag, &req[1])};
    if (!part_agree(e, req, 2))
        return 0;
    *send = req[0];
    *recv = req[1];
    return 1;
}

/* One partitioned transfer: the sender marks the parts partitions ready in
 * order, then waits. */
static void part_send(MPI_Request *req, int parts)
{
#if HAVE_PART
    MPI_Start(req);
    for (int p = 0; p < parts; p++)
        MPI_Pready(p, *req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
#else
    (void)req, (void)parts;
#endif
}

static void part_recv(MPI_Request *req)
{
    MPI_Start(req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
}

enum form { PARTITIONED, PERSISTENT, NONBLOCKING, BLOCKING, NFORMS };
static const char *const form_names[] = {"partitioned", "persistent", "nonblocking", "blocking"};

/* A rank's requests of a persistent or partitioned form: send to the other
 * rank, receive from it. */
struct pair {
    MPI_Request send, recv;
};

/* One round trip of b bytes in the form, rank 0 sending first; tags: 20 +
 * 2 form for rank 0 to 1, one more for 1 to 0. */
static void roundtrip(enum form f, struct pair *pr, long b, int parts)
{
    int out = 20 + 2 * f + rank, in = 20 + 2 * f + 1 - rank;
    MPI_Request rq;
    for (int leg = 0; leg < 2; leg++) {
        if ((leg == 0) == (rank == 0)) {
            switch (f) {
            case PARTITIONED:
                part_send(&pr->send, parts);
                break;
            case PERSISTENT:
                MPI_Start(&pr->send);
                MPI_Wait(&pr->send, MPI_STATUS_IGNORE);
                break;
            case NONBLOCKING:
                MPI_Isend(sbuf, (int)b, MPI_BYTE, 1 - rank, out, MPI_COMM_WORLD, &rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                break;
            default:
                MPI_Send(sbuf, (int)b, MPI_BYTE, 1 - rank, out, MPI_COMM_WORLD);
            }
        } else {
            switch (f) {
            case PARTITIONED:
            case PERSISTENT:
                part_recv(&pr->recv);
                break;
            case NONBLOCKING:
                MPI_Irecv(rbuf, (int)b, MPI_BYTE, 1 - rank, in, MPI_COMM_WORLD, &rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                break;
            default:
                MPI_Recv(rbuf, (int)b, MPI_BYTE, 1 - rank, in, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    }
}

/* One more partitioned round trip with a pattern in the sender's buffer;
 * the receiver checks every byte.  Aborts the run when one is wrong. */
static void check_part(const char *test, struct pair *pr, size_t b, int parts)
{
    for (size_t i = 0; i < b; i++)
        sbuf[i] = (char)(i * 7 + b + 3);
    memset(rbuf, 0, b);
    roundtrip(PARTITIONED, pr, (long)b, parts);
    for (size_t i = 0; i < b; i++)
        if (rbuf[i] != (char)(i * 7 + b + 3)) {
            fprintf(stderr, "partbench: %s: rank %d received a wrong byte %zu of %zu (%d "
                    "partitions)\n", test, rank, i, b, parts);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    memset(sbuf, 1, b);
}

/* part_p2p: the four forms interleaved. */
static void part_p2p(void)
{
    static const long dflt[] = {1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, sizeof dflt / sizeof *dflt, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k];
        int iters, skip;
        pp_counts(b, &iters, &skip);
        int block = iters >= 500 ? 50 : 10, rounds = (iters + block - 1) / block;
        need(b);
        struct pair pr[NFORMS];
        int have[NFORMS] = {0, 1, 1, 1};
        have[PARTITIONED] = part_pair(sbuf, rbuf, 1, b, 20 + 2 * PARTITIONED + rank,
                                      20 + 2 * PARTITIONED + 1 - rank, &pr[PARTITIONED].send,
                                      &pr[PARTITIONED].recv);
        MPI_Send_init(sbuf, (int)b, MPI_BYTE, 1 - rank, 20 + 2 * PERSISTENT + rank, MPI_COMM_WORLD,
                      &pr[PERSISTENT].send);
        MPI_Recv_init(rbuf, (int)b, MPI_BYTE, 1 - rank, 20 + 2 * PERSISTENT + 1 - rank,
                      MPI_COMM_WORLD, &pr[PERSISTENT].recv);
        double *t[NFORMS], sum[NFORMS] = {0};
        int n[NFORMS] = {0};
        for (int f = 0; f < NFORMS; f++)
            t[f] = malloc((size_t)rounds * block * sizeof **t);
        sync2_of(rank);
        /* round -1: the warm-up, skip iterations of each form */
        for (int r = -1; r < rounds; r++) {
            for (int j = 0; j < NFORMS; j++) {
                int f = (r + 1 + j) % NFORMS;
                if (!have[f])
                    continue;
                int count = r < 0 ? skip : block;
                for (int i = 0; i < count; i++) {
                    double t0 = MPI_Wtime();
                    roundtrip(f, &pr[f], b, 1);
                    double dt = (MPI_Wtime() - t0) / 2;
                    if (r >= 0) {
                        t[f][n[f]++] = dt;
                        sum[f] += dt;
                    }
                }
            }
        }
        if (have[PARTITIONED]) {
            check_part("part_p2p", &pr[PARTITIONED], b, 1);
            MPI_Request_free(&pr[PARTITIONED].send);
            MPI_Request_free(&pr[PARTITIONED].recv);
        } else if (k == 0) {
            no_part("part_p2p");
        }
        MPI_Request_free(&pr[PERSISTENT].send);
        MPI_Request_free(&pr[PERSISTENT].recv);
        for (int f = 0; f < NFORMS; f++) {
            if (have[f] && rank == 0)
                report_form("part_p2p", b, form_names[f], sum[f] / n[f], t[f], n[f]);
            free(t[f]);
        }
    }
}

/* The partitioned ping-pong of total bytes in parts partitions: iters
 * round trips after skip; t[i] gets each half round trip, the return
 * value is the mean (total time over the count). */
static double part_pingpong(struct pair *pr, int parts, int iters, int skip, double *t)
{
    double start = 0;
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip)
            start = MPI_Wtime();
        double t0 = MPI_Wtime();
        roundtrip(PARTITIONED, pr, 0, parts);
        if (i >= skip)
            t[i - skip] = (MPI_Wtime() - t0) / 2;
    }
    return (MPI_Wtime() - start) / iters / 2;
}

/* part_count_total (fixed = 0: each size is the total) and part_count_fixed
 * (fixed = 1: each size is the partition size): 1 .. 64 partitions, the
 * bytes column the partition count. */
static void part_count(const char *test, int fixed)
{
    static const long totals[] = {65536, 4 << 20}, psize[] = {16384};
    const long *sizes;
    int ns = fixed ? sizes_of(psize, 1, &sizes) : sizes_of(totals, 2, &sizes);
    if (part_state == 0) {
        no_part(test);
        return;
    }
    for (int k = 0; k < ns; k++) {
        if (rank == 0)
            printf("# %s: %s %ld bytes\n", test, fixed ? "partition" : "total", sizes[k]);
        for (int parts = 1; parts <= MAXPARTS; parts *= 2) {
            long count = fixed ? sizes[k] : sizes[k] / parts, b = count * parts;
            if (count < 1)
                break;
            int iters, skip;
            pp_counts(b, &iters, &skip);
            need(b);
            struct pair pr;
            if (!part_pair(sbuf, rbuf, parts, count, 40 + rank, 41 - rank, &pr.send, &pr.recv)) {
                no_part(test);
                return;
            }
            double *t = malloc(iters * sizeof *t);
            sync2_of(rank);
            double mean = part_pingpong(&pr, parts, iters, skip, t);
            check_part(test, &pr, b, parts);
            MPI_Request_free(&pr.send);
            MPI_Request_free(&pr.recv);
            if (rank == 0)
                report_times(test, parts, mean, t, iters);
            free(t);
        }
    }
}

/* part_earlybird's three kinds of iteration, interleaved. */
enum early { ZERO, WHOLE, EARLY, NEARLY };

/* One iteration of a kind; at rank 0 the seconds from the start of the
 * send (ZERO, WHOLE: the call; EARLY: the return of the last MPI_Pready)
 * until the receiver's zero-byte answer arrived, a round trip for ZERO.
 * Rank 1 receives and answers; it returns 0. */
static double early_iteration(enum early kind, struct pair *pr, long b, double work)
{
    MPI_Request rq[2];
    MPI_Status st[2];
    if (rank == 1) {
        if (kind == EARLY)
            part_recv(&pr->recv);
        else
            MPI_Recv(rbuf, kind == ZERO ? 0 : (int)b, MPI_BYTE, 0, 50 + kind, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 55, MPI_COMM_WORLD);
        return 0;
    }
    MPI_Irecv(NULL, 0, MPI_BYTE, 1, 55, MPI_COMM_WORLD, &rq[0]);
    double t0;
    if (kind == EARLY) {
        MPI_Start(&pr->send);
        for (int p = 0; p < EARLY_PARTS; p++) {
            compute(work);
#if HAVE_PART
            MPI_Pready(p, pr->send);
#endif
        }
        t0 = MPI_Wtime();
        rq[1] = pr->send;
        MPI_Waitall(2, rq, st);
        pr->send = rq[1];
    } else {
        t0 = MPI_Wtime();
        MPI_Send(sbuf, kind == ZERO ? 0 : (int)b, MPI_BYTE, 1, 50 + kind, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    return MPI_Wtime() - t0;
}

/* The mean of n times less x; the times sorted, their median and p99 less
 * x printed as STAT_median and STAT_p99. */
static double report_less(long bytes, const char *stat, double *t, int n, double x)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    for (int i = 0; i < n; i++)
        t[i] -= x;
    report_form("part_earlybird", bytes, stat, sum / n - x, t, n);
    return sum / n - x;
}

/* The computation before each MPI_Pready (seconds): -c US, default
 * EARLY_WORK_US; -c 0 calibrates it: the whole transfer's one-way time
 * over 16 (the median of a tenth of the count of whole transfers less the
 * zero-byte latency's median, measured here). */
static double early_work(struct pair *pr, long b, int zi, int zs, int iters, int skip)
{
    if (opt_ncounts == 0 || opt_counts[0] > 0)
        return (opt_ncounts ? opt_counts[0] : EARLY_WORK_US) * 1e-6;
    int zc = zi / 10 > 5 ? zi / 10 : 5, wc = iters / 10 > 5 ? iters / 10 : 5;
    double *cal = malloc((zc > wc ? zc : wc) * sizeof *cal), z, w;
    /* medians: one slow transfer (a fault on a cold page, the machine
     * taking a vCPU away) would make every computation that long */
    for (int i = 0; i < zs + zc; i++) {
        double dt = early_iteration(ZERO, pr, b, 0);
        if (i >= zs)
            cal[i - zs] = dt / 2;
    }
    qsort(cal, zc, sizeof *cal, cmp_double);
    z = cal[zc / 2];
    for (int i = 0; i < skip + wc; i++) {
        double dt = early_iteration(WHOLE, pr, b, 0);
        if (i >= skip)
            cal[i - skip] = dt;
    }
    qsort(cal, wc, sizeof *cal, cmp_double);
    w = cal[wc / 2] - z;
    free(cal);
    return w > 0 ? w / EARLY_PARTS : 0;
}

static void part_earlybird(void)
{
    static const long dflt[] = {65536};
    const long *sizes;
    int ns = sizes_of(dflt, 1, &sizes);
    for (int k = 0; k < ns; k++) {
        long ps = sizes[k], b = ps * EARLY_PARTS;
        int iters, skip, zi, zs;
        pp_counts(b, &iters, &skip);
        pp_counts(0, &zi, &zs);
        int block = iters >= 500 ? 50 : 10, rounds = (iters + block - 1) / block;
        /* as many zero-byte round trips per round as the others make in
         * all (at least a block), for a latency as steady as the times it
         * is subtracted from */
        int zblock = zi / rounds > block ? zi / rounds : block;
        need(b);
        /* rank 0 sends, rank 1 receives: one partitioned request each */
        struct pair pr;
        MPI_Request *mine = rank == 0 ? &pr.send : &pr.recv;
        int have = 0;
        if (part_state != 0) {
            int e = part_init(rank == 0, rank == 0 ? sbuf : rbuf, EARLY_PARTS, ps, 48, mine);
            have = part_agree(&e, mine, 1);
        }
        sync2_of(rank);
        double work = early_work(&pr, b, zi, zs, iters, skip);
        double *t[NEARLY];
        int n[NEARLY] = {0};
        for (int e = 0; e < NEARLY; e++)
            t[e] = malloc((size_t)rounds * (zblock > block ? zblock : block) * sizeof **t);
        for (int r = -1; r < rounds; r++) {
            for (int j = 0; j < NEARLY; j++) {
                enum early e = (r + 1 + j) % NEARLY;
                if (e == EARLY && !have)
                    continue;
                int count = r < 0 ? skip : e == ZERO ? zblock : block;
                for (int i = 0; i < count; i++) {
                    double dt = early_iteration(e, &pr, b, work);
                    if (r >= 0)
                        t[e][n[e]++] = e == ZERO ? dt / 2 : dt;
                }
            }
        }
        if (rank == 0) {
            double sum = 0;
            for (int i = 0; i < n[ZERO]; i++)
                sum += t[ZERO][i];
            double zero = sum / n[ZERO];
            printf("part_earlybird,%ld,zero_byte,%.3f,us\n", ps, zero * 1e6);
            double whole = report_less(ps, "whole", t[WHOLE], n[WHOLE], zero);
            if (have) {
                printf("part_earlybird,%ld,compute,%.3f,us\n", ps, work * 1e6);
                double last = report_less(ps, "last_to_done", t[EARLY], n[EARLY], zero);
                printf("part_earlybird,%ld,ratio,%.3f,x\n", ps, last / whole);
            }
        }
        if (!have && k == 0)
            no_part("part_earlybird");
        if (have)
            MPI_Request_free(mine);
        for (int e = 0; e < NEARLY; e++)
            free(t[e]);
    }
}

enum op { BCAST, ALLREDUCE, ALLTOALL };
enum pform { P1, P8, PPERSISTENT, NPFORMS };
static const char *const pform_names[] = {"partitioned", "partitioned8", "persistent"};
static const int pform_parts[] = {1, 8, 0};

/* Initialise the form's request for op over b bytes in total (per
 * destination for alltoall); MPI_SUCCESS or the MPI's error. */
static int pcoll_init(enum op op, enum pform f, long b, MPI_Request *req)
{
    int parts = pform_parts[f];
    if (f == PPERSISTENT) {
#if MPI_VERSION >= 4
        switch (op) {
        case BCAST:
            return MPI_Bcast_init(sbuf, (int)b, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req);
        case ALLREDUCE:
            return MPI_Allreduce_init(sbuf, rbuf, (int)(b / 8), MPI_DOUBLE, MPI_SUM,
                                      MPI_COMM_WORLD, MPI_INFO_NULL, req);
        default:
            return MPI_Alltoall_init(sbuf, (int)b, MPI_BYTE, rbuf, (int)b, MPI_BYTE,
                                     MPI_COMM_WORLD, MPI_INFO_NULL, req);
        }
#else
        return MPI_ERR_OTHER;
#endif
    }
#if HAVE_PCOLL
    switch (op) {
    case BCAST:
        return MPIX_Pbcast_init ? MPIX_Pbcast_init(sbuf, parts, b / parts, MPI_BYTE, 0,
                                                   MPI_COMM_WORLD, MPI_INFO_NULL, req)
                                : MPI_ERR_OTHER;
    case ALLREDUCE:
        return MPIX_Pallreduce_init ? MPIX_Pallreduce_init(sbuf, rbuf, parts, b / 8 / parts,
                                                           MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                                           MPI_INFO_NULL, req)
                                    : MPI_ERR_OTHER;
    default:
        return MPIX_Palltoall_init ? MPIX_Palltoall_init(sbuf, rbuf, parts, b / parts, MPI_BYTE,
                                                         MPI_COMM_WORLD, MPI_INFO_NULL, req)
                                   : MPI_ERR_OTHER;
    }
#else
    (void)op, (void)b, (void)req, (void)parts;
    return MPI_ERR_OTHER;
#endif
}

/* One operation of the form. */
static void pcoll_once(enum op op, enum pform f, MPI_Request *req)
{
    MPI_Start(req);
#if HAVE_PART
    if (f != PPERSISTENT && (op != BCAST || rank == 0))
        for (int p = 0; p < pform_parts[f]; p++)
            MPI_Pready(p, *req);
#else
    (void)op, (void)f;
#endif
    MPI_Wait(req, MPI_STATUS_IGNORE);
}

/* Fill the send buffer with what op's result can be checked against. */
static void pcoll_fill(enum op op, long b)
{
    if (op == ALLREDUCE)
        for (long i = 0; i < b / 8; i++)
            ((double *)sbuf)[i] = (double)(i % 1000 + rank);
    else if (op == BCAST)
        for (long i = 0; i < b; i++)
            sbuf[i] = (char)(rank == 0 ? i * 7 + 3 : 0);
    else
        for (long i = 0; i < b * nprocs; i++)
            sbuf[i] = (char)(rank * 31 + i / b * 5 + i);
    memset(rbuf, 0, b * nprocs);
}

/* Is the result of one operation of op after pcoll_fill right? */
static int pcoll_right(enum op op, long b)
{
    for (long i = 0; i < (op == ALLREDUCE ? b / 8 : op == BCAST ? b : b * nprocs); i++) {
        if (op == ALLREDUCE) {
            double want = (double)(i % 1000) * nprocs + (double)nprocs * (nprocs - 1) / 2;
            if (((double *)rbuf)[i] != want)
                return 0;
        } else if (op == BCAST) {
            if (sbuf[i] != (char)(i * 7 + 3))
                return 0;
        } else {
            long from = i / b, j = i % b; /* block from rank `from`, its block for me */
            if (rbuf[i] != (char)(from * 31 + rank * 5 + rank * b + j))
                return 0;
        }
    }
    return 1;
}

static void pcoll(const char *test, enum op op)
{
    static const long dflt[] = {1024, 4096, 16384, 65536, 262144, 1 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, sizeof dflt / sizeof *dflt, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k];
        int iters, skip;
        counts(b, 1000, 100, 100, 10, &iters, &skip);
        int block = iters >= 500 ? 50 : 10, rounds = (iters + block - 1) / block;
        need(b * nprocs);
        MPI_Request req[NPFORMS];
        int have[NPFORMS];
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        for (int f = 0; f < NPFORMS; f++) {
            int e = pcoll_init(op, f, b, &req[f]);
            have[f] = all_ok(e == MPI_SUCCESS);
            if (e == MPI_SUCCESS && !have[f])
                MPI_Request_free(&req[f]);
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        if (k == 0 && rank == 0 && !have[P1])
            printf("# %s: no partitioned collectives in this MPI: partitioned figures left "
                   "out\n", test);
        if (k == 0 && rank == 0 && !have[PPERSISTENT])
            printf("# %s: no persistent collectives in this MPI (MPI %d.%d): persistent "
                   "figures left out\n", test, MPI_VERSION, MPI_SUBVERSION);
        double sum[NPFORMS] = {0};
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = -1; r < rounds; r++) {
            for (int j = 0; j < NPFORMS; j++) {
                int f = (r + 1 + j) % NPFORMS;
                if (!have[f])
                    continue;
                int count = r < 0 ? skip : block;
                for (int i = 0; i < count; i++) {
                    double t0 = MPI_Wtime();
                    pcoll_once(op, f, &req[f]);
                    if (r >= 0)
                        sum[f] += MPI_Wtime() - t0;
                    MPI_Barrier(MPI_COMM_WORLD);  /* untimed: each operation alone */
                }
            }
        }
        /* the result of each partitioned form, once */
        for (int f = 0; f < NPFORMS; f++) {
            if (!have[f])
                continue;
            if (f != PPERSISTENT) {
                pcoll_fill(op, b);
                pcoll_once(op, f, &req[f]);
                if (!all_ok(pcoll_right(op, b))) {
                    if (rank == 0)
                        fprintf(stderr, "partbench: %s %s: wrong result at %ld bytes\n", test,
                                pform_names[f], b);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
                memset(sbuf, 1, b * nprocs);
            }
            MPI_Request_free(&req[f]);
            double mean = sum_all(sum[f] / ((double)rounds * block)) / nprocs;
            if (rank == 0)
                printf("%s,%ld,%s,%.3f,us\n", test, b, pform_names[f], mean * 1e6);
        }
    }
}

int main(int argc, char **argv)
{
    bench_options(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    need(1 << 20);
    int p2p = want("part_p2p") || want("part_count_total") || want("part_count_fixed") ||
              want("part_earlybird");
    if (p2p && nprocs != 2) {
        if (rank == 0)
            fprintf(stderr, "partbench: the part_* tests need 2 ranks (this job has %d)\n",
                    nprocs);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (want("part_p2p"))
        part_p2p();
    if (want("part_count_total"))
        part_count("part_count_total", 0);
    if (want("part_count_fixed"))
        part_count("part_count_fixed", 1);
    if (want("part_earlybird"))
        part_earlybird();
    if (want("pcoll_bcast"))
        pcoll("pcoll_bcast", BCAST);
    if (want("pcoll_allreduce"))
        pcoll("pcoll_allreduce", ALLREDUCE);
    if (want("pcoll_alltoall"))
        pcoll("pcoll_alltoall", ALLTOALL);
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
