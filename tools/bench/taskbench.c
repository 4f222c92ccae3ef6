/*
 * Overlap of nonblocking collectives as seed 001 measures it: for
 * MPI_Ireduce (sum of ints, root 0), MPI_Igather (root 0) and MPI_Ibcast
 * (root 0), per size:
 *
 *   t_comm   the pure time: MPI_Ixxx + MPI_Wait, no computation (us)
 *   t_comp   a computation sized to t_comm, alone (us): a fixed amount of
 *            floating-point work, scaled once in place so that it takes
 *            about t_comm on this rank as the machine runs now
 *   t_ovrl   MPI_Ixxx + that computation + MPI_Wait (us)
 *   overlap  OSU's overlap: 100 (1 - (t_ovrl - t_comp) / t_comm), at
 *            least 0 (%)
 *   ratio    t_ovrl / max(t_comm, t_comp): 1 is perfect overlap, 2 none
 *
 * Each time is the mean over the iterations (an untimed barrier before
 * each), averaged over the ranks.  Tests task_ireduce, task_igather,
 * task_ibcast; default sizes 64 KiB and 1 MiB (for the gather, each
 * rank's part is the size divided by the ranks); 50 + 5 iterations up to
 * 64 KiB, 20 + 2 above.  MPI API only.
 *
 * The ranks are the launch's processes, or, launched with one process,
 * -t N threads of it on a thread communicator (MPIX_Threadcomm_*: Cadence
 * only, elsewhere a comment line and no figure).  The test names are the
 * same; compare.py names the forms.
 */
#include "bench_common.h"

#include <pthread.h>

enum { NCOLL = 3 };
static const char *names[NCOLL] = {"task_ireduce", "task_igather", "task_ibcast"};

static volatile double sink;

/* n steps of floating-point work (no memory traffic, no MPI). */
static void work(long n)
{
    double x = sink;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* Steps per microsecond, alone on this rank now. */
static double steps_per_us(void)
{
    long n = 1 << 16;
    for (;;) {
        double t0 = MPI_Wtime();
        work(n);
        double dt = MPI_Wtime() - t0;
        if (dt > 0.01)
            return (double)n / (dt * 1e6);
        n *= 2;
    }
}

struct ctx {
    MPI_Comm comm;
    int rank, size;
};

static void start(int coll, const int *in, int *out, long bytes, const struct ctx *c,
                  MPI_Request *req)
{
    int n = (int)(bytes / (long)sizeof(int)), part = n / c->size;
    if (coll == 0)
        MPI_Ireduce(in, out, n, MPI_INT, MPI_SUM, 0, c->comm, req);
    else if (coll == 1)
        MPI_Igather(in, part, MPI_INT, out, part, MPI_INT, 0, c->comm, req);
    else
        MPI_Ibcast(c->rank == 0 ? (void *)in : out, n, MPI_INT, 0, c->comm, req);
}

/* The mean over the ranks of each rank's mean. */
static double over_ranks(double mine, const struct ctx *c)
{
    double sum;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, c->comm);
    return sum / c->size;
}

static void measure(int coll, long bytes, const struct ctx *c)
{
    int iters, skip;
    counts(bytes > 65536 ? 65537 : 8192, 50, 5, 20, 2, &iters, &skip);
    if (opt_quick) {
        iters = iters / 20 > 1 ? iters / 20 : 2;
        skip = 1;
    }
    int *in = malloc((size_t)bytes), *out = malloc((size_t)bytes);
    for (long i = 0; i < bytes / (long)sizeof(int); i++)
        in[i] = c->rank + (int)i;
    MPI_Request req;
    /* pure */
    double sum = 0;
    for (int i = 0; i < skip + iters; i++) {
        MPI_Barrier(c->comm);
        double t0 = MPI_Wtime();
        start(coll, in, out, bytes, c, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (i >= skip)
            sum += MPI_Wtime() - t0;
    }
    double t_comm = over_ranks(sum / iters * 1e6, c);
    /* the computation: steps for t_comm as calibrated, then scaled once
     * to what they take here now */
    long steps = (long)(steps_per_us() * t_comm) + 1;
    double t0 = MPI_Wtime();
    work(steps);
    double took = (MPI_Wtime() - t0) * 1e6;
    if (took > 0)
        steps = (long)((double)steps * t_comm / took) + 1;
    sum = 0;
    for (int i = 0; i < skip + iters; i++) {
        MPI_Barrier(c->comm);
        t0 = MPI_Wtime();
        work(steps);
        if (i >= skip)
            sum += MPI_Wtime() - t0;
    }
    double t_comp = over_ranks(sum / iters * 1e6, c);
    /* overlapped */
    sum = 0;
    for (int i = 0; i < skip + iters; i++) {
        MPI_Barrier(c->comm);
        t0 = MPI_Wtime();
        start(coll, in, out, bytes, c, &req);
        work(steps);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (i >= skip)
            sum += MPI_Wtime() - t0;
    }
    double t_ovrl = over_ranks(sum / iters * 1e6, c);
    if (c->rank == 0) {
        double overlap = 100.0 * (1.0 - (t_ovrl - t_comp) / t_comm);
        double best = t_comm > t_comp ? t_comm : t_comp;
        printf("%s,%ld,t_comm,%.2f,us\n", names[coll], bytes, t_comm);
        printf("%s,%ld,t_comp,%.2f,us\n", names[coll], bytes, t_comp);
        printf("%s,%ld,t_ovrl,%.2f,us\n", names[coll], bytes, t_ovrl);
        printf("%s,%ld,overlap,%.1f,%%\n", names[coll], bytes, overlap > 0 ? overlap : 0);
        printf("%s,%ld,ratio,%.3f,x\n", names[coll], bytes, t_ovrl / best);
        fflush(stdout);
    }
    free(in);
    free(out);
}

static void run(const struct ctx *c)
{
    static const long dflt[] = {65536, 1 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, sizeof dflt / sizeof *dflt, &sizes);
    for (int coll = 0; coll < NCOLL; coll++)
        if (want(names[coll]))
            for (int k = 0; k < ns; k++)
                measure(coll, sizes[k], c);
}

#ifdef CADENCE_MPI
static MPI_Comm tc;

static void *thread_rank(void *arg)
{
    (void)arg;
    struct ctx c = {.comm = tc};
    MPIX_Threadcomm_start(tc);
    MPI_Comm_rank(tc, &c.rank);
    MPI_Comm_size(tc, &c.size);
    run(&c);
    MPIX_Threadcomm_finish(tc);
    return NULL;
}
#endif

int main(int argc, char **argv)
{
    bench_options(argc, argv);
    int provided, nprocs;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs > 1) {
        struct ctx c = {.comm = MPI_COMM_WORLD, .size = nprocs};
        MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
        run(&c);
    } else {
#ifdef CADENCE_MPI
        MPIX_Threadcomm_init(MPI_COMM_WORLD, opt_threads, &tc);
        pthread_t th[64];
        int n = opt_threads < 64 ? opt_threads : 64;
        for (int i = 0; i < n; i++)
            pthread_create(&th[i], NULL, thread_rank, NULL);
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
        MPIX_Threadcomm_free(&tc);
#else
        printf("# taskbench: no thread communicators in this MPI: no figure\n");
#endif
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
