/*
 * Point-to-point benchmarks written against the MPI API only, so the same
 * source builds with Cadence, MPICH and Open MPI.  Two ranks.  The tests
 * follow the OSU Micro-Benchmarks' structure and counts; every figure is
 * the mean over the timed iterations after a warm-up (never a best case).
 *
 *   latency     blocking ping-pong, half round trip, 0 B .. 1 MiB
 *               (osu_latency: 10,000 + 100 warm-up iterations up to 8 KiB,
 *               1,000 + 10 above); mean, median and p99 of the iterations
 *   bw          unidirectional bandwidth, 1 B .. 4 MiB (osu_bw: per
 *               iteration a window of 64 MPI_Isend, MPI_Waitall, a 4-byte
 *               acknowledgement; 10,000 + 100 iterations up to 8 KiB; above,
 *               at most 1,000 + 10 and no more than 4 GiB per size)
 *   bibw        both directions at once (osu_bibw: windows of 64 MPI_Irecv
 *               and 64 MPI_Isend on both ranks, MPI_Waitall; same counts)
 *   rate        8-byte messages per second with one pair (osu_mbw_mr:
 *               the bw loop, 10,000 + 100 windows of 64)
 *   latency_mt  osu_latency_mt-like: MPI_THREAD_MULTIPLE, -t threads per rank
 *               (default 2), thread k of rank 0 ping-pongs with thread k of
 *               rank 1 concurrently, each on its own tag; 8 B and 64 KiB;
 *               mean: wall time until the last thread is done over one
 *               thread's round trips (halved); median and p99 of all
 *               threads' round trips;
 *               1,000 + 10 iterations up to 8 KiB, 100 + 10 above (a tenth
 *               of latency's: more threads than cores that spin can take a
 *               scheduler time slice per round trip)
 *   rate_mt     the rate loop in -t threads per rank (MPI_THREAD_MULTIPLE),
 *               thread k of rank 0 streaming to thread k of rank 1 on a
 *               communicator of their own; the size column is the thread
 *               count; total messages per second of all threads from the
 *               first one's start to the last one's end; 1,000 + 10 windows per
 *               thread (a tenth of rate's, as latency_mt); each communicator
 *               asks Cadence for a progress context of its own (info key
 *               cadence_progress_context=auto, used with
 *               CADENCE_PROGRESS_CONTEXTS > 1)
 *   rate_mt_shared, rate_mt_stream
 *               the same with every pair on MPI_COMM_WORLD (a tag pair
 *               each), and (Cadence) on a stream communicator each
 *               (MPIX_Stream_comm_create; with CADENCE_PROGRESS_CONTEXTS
 *               above the thread count): seed 003's Fig. 4
 *   overlap     MPI_Isend/MPI_Irecv + compute + MPI_Wait, 64 KiB .. 4 MiB, with
 *               the OSU overlap definition: pure = start + wait alone, compute
 *               for the pure time, overall = start + compute + wait,
 *               overlap % = 100 (1 - (overall - compute) / pure); 100 + 10
 *               iterations
 *
 * Only point-to-point calls are used (synchronisation included).  Options
 * and output: bench_common.h.
 */
#include "bench_common.h"

#include <pthread.h>

static int rank;
static char *sbuf, *rbuf;

enum { WINDOW = 64, MAXB = 4 << 20 };

/* The other rank's x. */
static double peer(double x)
{
    double y;
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, 1 - rank, 10, &y, 1, MPI_DOUBLE, 1 - rank, 10, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return y;
}

static double max2(double x)
{
    double y = peer(x);
    return x > y ? x : y;
}

static double avg2(double x)
{
    return (x + peer(x)) / 2;
}

/* One blocking round trip of b bytes: rank 0 sends first. */
static void roundtrip(char *s, char *r, long b, int tag)
{
    if (rank == 0) {
        MPI_Send(s, (int)b, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(r, (int)b, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(r, (int)b, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(s, (int)b, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
    }
}

/* iters timed round trips after skip warm-up ones; t[i] gets each half round
 * trip (unless t is NULL), the return value the mean (total time over the
 * count). */
static double pingpong(char *s, char *r, long b, int tag, int iters, int skip, double *t)
{
    double start = 0;
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip)
            start = MPI_Wtime();
        double t0 = MPI_Wtime();
        roundtrip(s, r, b, tag);
        if (i >= skip && t)
            t[i - skip] = (MPI_Wtime() - t0) / 2;
    }
    return (MPI_Wtime() - start) / iters / 2;
}

static void latency(void)
{
    static long dflt[22];
    dflt[0] = 0;
    for (int k = 1; k < 22; k++)
        dflt[k] = 1L << (k - 1);
    const long *sizes;
    int ns = sizes_of(dflt, 22, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k] < MAXB ? sizes[k] : MAXB;
        int iters, skip;
        counts(b, 10000, 100, 1000, 10, &iters, &skip);
        double *t = malloc(iters * sizeof *t);
        sync2_of(rank);
        double mean = pingpong(sbuf, rbuf, b, 1, iters, skip, t);
        if (rank == 0)
            report_times("latency", b, mean, t, iters);
        free(t);
    }
}

struct mt_arg {
    int id, iters, skip;
    long bytes;
    double *t;
    double from, to;  /* when this thread's timed part began and ended */
    MPI_Comm comm;    /* rate_mt: the pair's communicator */
};

/* The threads warm up, then wait at the barrier with the main thread,
 * which starts the clock. */
static pthread_barrier_t mt_barrier;

static void *mt_thread(void *p)
{
    struct mt_arg *a = p;
    char *s = calloc(1, a->bytes + 1), *r = calloc(1, a->bytes + 1);
    pingpong(s, r, a->bytes, 100 + a->id, a->skip, 0, NULL);
    pthread_barrier_wait(&mt_barrier);
    a->from = MPI_Wtime();
    pingpong(s, r, a->bytes, 100 + a->id, a->iters, 0, a->t);
    a->to = MPI_Wtime();
    free(s);
    free(r);
    return NULL;
}

/* The threads' timed part: from the first thread's start to the last
 * thread's end, each read by the thread itself (the main thread, released
 * by the same barrier, may not run again before the threads are done on a
 * processing unit they share: its clock read after the barrier made runs
 * up to three times too fast). */
static double mt_span(const struct mt_arg *a, int nt)
{
    double from = a[0].from, to = a[0].to;
    for (int i = 1; i < nt; i++) {
        from = a[i].from < from ? a[i].from : from;
        to = a[i].to > to ? a[i].to : to;
    }
    return to - from;
}

/* The mean is the wall time until the last thread is done over the
 * iterations of one thread (halved): what each thread's round trips cost
 * while the others run theirs, a pair that waits for another included. */
static void latency_mt(void)
{
    static const long dflt[] = {8, 65536};
    const long *sizes;
    int ns = sizes_of(dflt, 2, &sizes), nt = opt_threads;
    pthread_t th[nt];
    struct mt_arg arg[nt];
    for (int k = 0; k < ns; k++) {
        int iters, skip;
        /* a tenth of latency's counts: threads that spin on two cores can
         * take a scheduler time slice (ms) per round trip */
        counts(sizes[k], 1000, 10, 100, 10, &iters, &skip);
        double *t = malloc((size_t)nt * iters * sizeof *t);
        pthread_barrier_init(&mt_barrier, NULL, nt + 1);
        sync2_of(rank);
        for (int i = 0; i < nt; i++) {
            arg[i] = (struct mt_arg){.id = i, .iters = iters, .skip = skip, .bytes = sizes[k],
                                     .t = t + (size_t)i * iters};
            pthread_create(&th[i], NULL, mt_thread, &arg[i]);
        }
        pthread_barrier_wait(&mt_barrier);
        for (int i = 0; i < nt; i++)
            pthread_join(th[i], NULL);
        double mean = mt_span(arg, nt) / iters / 2;
        pthread_barrier_destroy(&mt_barrier);
        if (rank == 0)
            report_times("latency_mt", sizes[k], mean, t, nt * iters);
        free(t);
    }
}

/* Seconds for iters windows after skip warm-up ones, on comm with the
 * buffers s and r. */
/* tag: the data's; tag + 1 the acknowledgement's */
static double windows_on(MPI_Comm comm, int tag, char *s, char *r, int bidir, long b, int iters,
                         int skip)
{
    MPI_Request rq[2 * WINDOW];
    char ack[4] = {0};
    double start = 0;
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip)
            start = MPI_Wtime();
        int k = 0;
        if (rank == 1 || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(r, (int)b, MPI_BYTE, 1 - rank, tag, comm, &rq[k++]);
        if (rank == 0 || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(s, (int)b, MPI_BYTE, 1 - rank, tag, comm, &rq[k++]);
        MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
        if (bidir)
            continue;
        if (rank == 1)
            MPI_Send(ack, 4, MPI_BYTE, 0, tag + 1, comm);
        else
            MPI_Recv(ack, 4, MPI_BYTE, 1, tag + 1, comm, MPI_STATUS_IGNORE);
    }
    return MPI_Wtime() - start;
}

static double windows(int bidir, long b, int iters, int skip)
{
    return windows_on(MPI_COMM_WORLD, 2, sbuf, rbuf, bidir, b, iters, skip);
}

static void bandwidth(int bidir, const char *name)
{
    static long dflt[23];
    for (int k = 0; k < 23; k++)
        dflt[k] = 1L << k;
    const long *sizes;
    int ns = sizes_of(dflt, 23, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k] < MAXB ? sizes[k] : MAXB;
        int iters, skip;
        bw_counts(b, WINDOW, &iters, &skip);
        sync2_of(rank);
        double t = max2(windows(bidir, b, iters, skip));
        double bytes = (double)b * WINDOW * iters * (bidir ? 2 : 1);
        if (rank == 0)
            printf("%s,%ld,mean,%.2f,MB/s\n", name, b, bytes / t / 1e6);
    }
}

static void rate(void)
{
    static const long dflt[] = {8};
    const long *sizes;
    int ns = sizes_of(dflt, 1, &sizes);
    for (int k = 0; k < ns; k++) {
        int iters, skip;
        counts(sizes[k], 10000, 100, 1000, 10, &iters, &skip);
        sync2_of(rank);
        double t = max2(windows(0, sizes[k], iters, skip));
        if (rank == 0)
            printf("rate,%ld,mean,%.0f,msg/s\n", sizes[k], (double)WINDOW * iters / t);
    }
}

static void *rate_thread(void *p)
{
    struct mt_arg *a = p;
    char s[8] = {1}, r[8];
    int tag = 2 + 2 * a->id;  /* (distinct where the threads share a communicator) */
    windows_on(a->comm, tag, s, r, 0, 8, a->skip, 0);
    pthread_barrier_wait(&mt_barrier);
    a->from = MPI_Wtime();
    windows_on(a->comm, tag, s, r, 0, 8, a->iters, 0);
    a->to = MPI_Wtime();
    return NULL;
}

/* The rate loop in -t threads per rank at once, thread k of rank 0
 * streaming to thread k of rank 1: the total messages of all threads over
 * the wall time until the last is done.  Where the pairs' messages go:
 *   RATE_OWN     a communicator of their own, duplicated from
 *                MPI_COMM_WORLD before the threads start, asking Cadence for
 *                a progress context of its own (info key
 *                cadence_progress_context=auto: with
 *                CADENCE_PROGRESS_CONTEXTS > 1; other MPIs ignore it)
 *   RATE_SHARED  MPI_COMM_WORLD for all, a tag pair each
 *   RATE_STREAM  Cadence: an MPIX stream each and a stream communicator on
 *                it (MPIX_Stream_comm_create); needs
 *                CADENCE_PROGRESS_CONTEXTS > threads (otherwise a comment
 *                line and no figure) */
enum rate_kind { RATE_OWN, RATE_SHARED, RATE_STREAM };

static void rate_mt(enum rate_kind kind, const char *test)
{
    int nt = opt_threads, iters, skip;
    pthread_t th[nt];
    struct mt_arg arg[nt];
    /* a tenth of rate's counts, as latency_mt: more spinning threads than
     * cores can take a scheduler time slice per window */
    counts(8, 1000, 10, 1000, 10, &iters, &skip);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cadence_progress_context", "auto");
#ifdef CADENCE_MPI
    MPIX_Stream streams[nt];
#endif
    int ok = 1;
    for (int i = 0; i < nt; i++) {
        arg[i] = (struct mt_arg){.id = i, .iters = iters, .skip = skip};
        if (kind == RATE_SHARED) {
            arg[i].comm = MPI_COMM_WORLD;
        } else if (kind == RATE_OWN) {
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &arg[i].comm);
        } else {
#ifdef CADENCE_MPI
            MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
            int mine = MPIX_Stream_create(MPI_INFO_NULL, &streams[i]) == MPI_SUCCESS, all;
            MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all) {
                if (mine)
                    MPIX_Stream_free(&streams[i]);
                for (int j = 0; j < i; j++) {
                    MPI_Comm_free(&arg[j].comm);
                    MPIX_Stream_free(&streams[j]);
                }
                ok = 0;
                break;
            }
            MPIX_Stream_comm_create(MPI_COMM_WORLD, streams[i], &arg[i].comm);
#else
            ok = 0;
            break;
#endif
        }
    }
    MPI_Info_free(&info);
    if (!ok) {
        if (rank == 0)
            printf("# %s: no MPIX stream for each of %d threads (Cadence only, with "
                   "CADENCE_PROGRESS_CONTEXTS > %d): no figure\n", test, nt, nt);
        return;
    }
    pthread_barrier_init(&mt_barrier, NULL, nt + 1);
    sync2_of(rank);
    for (int i = 0; i < nt; i++)
        pthread_create(&th[i], NULL, rate_thread, &arg[i]);
    pthread_barrier_wait(&mt_barrier);
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    double t = max2(mt_span(arg, nt));
    pthread_barrier_destroy(&mt_barrier);
    for (int i = 0; i < nt; i++) {
        if (kind != RATE_SHARED)
            MPI_Comm_free(&arg[i].comm);
#ifdef CADENCE_MPI
        if (kind == RATE_STREAM)
            MPIX_Stream_free(&streams[i]);
#endif
    }
    if (rank == 0)
        printf("%s,%d,mean,%.0f,msg/s\n", test, nt, (double)nt * WINDOW * iters / t);
}

static void compute(double seconds)
{
    double end = MPI_Wtime() + seconds, x = 1;
    while (MPI_Wtime() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    if (x == 42)
        printf("#");
}

/* Mean seconds of (start, compute(work), wait) over iters after skip; *comp
 * gets the mean time spent computing. */
static double transfers(long b, double work, int iters, int skip, double *comp)
{
    double sum = 0, csum = 0;
    for (int i = 0; i < skip + iters; i++) {
        MPI_Request rq;
        sync2_of(rank);
        double t0 = MPI_Wtime();
        if (rank == 0)
            MPI_Isend(sbuf, (int)b, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &rq);
        else
            MPI_Irecv(rbuf, (int)b, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &rq);
        double c0 = MPI_Wtime();
        if (work > 0)
            compute(work);
        double c1 = MPI_Wtime();
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (i >= skip) {
            sum += MPI_Wtime() - t0;
            csum += c1 - c0;
        }
    }
    *comp = csum / iters;
    return sum / iters;
}

static void overlap(void)
{
    static const long dflt[] = {65536, 262144, 1 << 20, 4 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, 4, &sizes);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k] < MAXB ? sizes[k] : MAXB;
        int iters, skip;
        double comp;
        counts(1 << 20, 100, 10, 100, 10, &iters, &skip);
        double pure = transfers(b, 0, iters, skip, &comp);
        double all = transfers(b, pure, iters, skip, &comp);
        /* OSU: the times averaged over the ranks, then the overlap */
        pure = avg2(pure);
        all = avg2(all);
        comp = avg2(comp);
        double ov = 100 * (1 - (all - comp) / pure);
        ov = ov < 0 ? 0 : ov;
        if (rank == 0) {
            printf("overlap,%ld,overlap,%.1f,%%\n", b, ov);
            printf("overlap,%ld,pure,%.3f,us\n", b, pure * 1e6);
            printf("overlap,%ld,overall,%.3f,us\n", b, all * 1e6);
        }
    }
}

int main(int argc, char **argv)
{
    bench_options(argc, argv);
    if (want("latency_mt") || want("rate_mt") || want("rate_mt_shared") ||
        want("rate_mt_stream")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "p2pbench: no MPI_THREAD_MULTIPLE (provided %d): latency_mt "
                    "and rate_mt left out\n", provided);
            opt_threads = 0;
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sbuf = malloc(MAXB);
    rbuf = malloc(MAXB);
    memset(sbuf, 1, MAXB);
    memset(rbuf, 0, MAXB);
    if (want("latency"))
        latency();
    if (want("latency_mt") && opt_threads > 0)
        latency_mt();
    if (want("bw"))
        bandwidth(0, "bw");
    if (want("bibw"))
        bandwidth(1, "bibw");
    if (want("rate"))
        rate();
    if (want("rate_mt") && opt_threads > 0)
        rate_mt(RATE_OWN, "rate_mt");
    if (want("rate_mt_shared") && opt_threads > 0)
        rate_mt(RATE_SHARED, "rate_mt_shared");
    if (want("rate_mt_stream") && opt_threads > 0)
        rate_mt(RATE_STREAM, "rate_mt_stream");
    if (want("overlap"))
        overlap();
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
