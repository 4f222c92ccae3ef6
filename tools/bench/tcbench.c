/*
 * Between two threads of one process on a thread communicator, against
 * between two processes (seed 003's Fig. 7).  MPI API only; the thread
 * form needs MPIX_Threadcomm_* (Cadence: CADENCE_MPI), elsewhere it prints
 * a comment line and no figure.
 *
 *   tc_latency  ping-pong half round trip, 8 B .. 4 MiB (osu_latency's
 *               counts: 10,000 + 100 up to 8 KiB, 1,000 + 10 above); mean,
 *               median, p99 (us)
 *   tc_bw       windows of 64 MPI_Isend and a 4-byte acknowledgement,
 *               8 B .. 4 MiB (1,000 + 10 windows up to 8 KiB, 100 + 10
 *               above, at most 4 GiB a size); MB/s
 *
 * Run with one process for the thread form (two threads on a thread
 * communicator of MPI_COMM_WORLD: tests tc_latency_thread, tc_bw_thread)
 * or two for the process form (tc_latency_process, tc_bw_process): the
 * test name says which, the launch's size decides.
 */
#include "bench_common.h"

#include <pthread.h>

enum { WIN = 64, MAXB = 4 << 20 };

struct side {
    MPI_Comm comm;
    int rank;
    const char *form;
};

static void latency(struct side *s)
{
    static const long dflt[] = {8, 64, 512, 4096, 65536, 1 << 20, 4 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, sizeof dflt / sizeof *dflt, &sizes);
    char *buf = calloc(1, MAXB);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k];
        int iters, skip;
        counts(b, 10000, 100, 1000, 10, &iters, &skip);
        double *t = malloc(sizeof *t * (size_t)iters);
        int peer = 1 - s->rank;
        for (int i = 0; i < skip + iters; i++) {
            double t0 = MPI_Wtime();
            if (s->rank == 0) {
                MPI_Send(buf, (int)b, MPI_BYTE, peer, 1, s->comm);
                MPI_Recv(buf, (int)b, MPI_BYTE, peer, 1, s->comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int)b, MPI_BYTE, peer, 1, s->comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)b, MPI_BYTE, peer, 1, s->comm);
            }
            if (i >= skip)
                t[i - skip] = (MPI_Wtime() - t0) / 2;
        }
        if (s->rank == 0) {
            char test[64];
            double sum = 0;
            for (int i = 0; i < iters; i++)
                sum += t[i];
            snprintf(test, sizeof test, "tc_latency_%s", s->form);
            report_times(test, b, sum / iters, t, iters);
        }
        free(t);
    }
    free(buf);
}

static void bandwidth(struct side *s)
{
    static const long dflt[] = {8, 512, 4096, 65536, 1 << 20, 4 << 20};
    const long *sizes;
    int ns = sizes_of(dflt, sizeof dflt / sizeof *dflt, &sizes);
    char *buf = calloc(1, MAXB);
    for (int k = 0; k < ns; k++) {
        long b = sizes[k];
        int iters, skip;
        counts(b, 1000, 10, 100, 10, &iters, &skip);
        long cap = (4L << 30) / (b * WIN);  /* at most 4 GiB a size */
        if (cap >= 1 && iters > cap)
            iters = (int)cap;
        int peer = 1 - s->rank;
        double t0 = 0;
        for (int i = 0; i < skip + iters; i++) {
            if (i == skip)
                t0 = MPI_Wtime();
            MPI_Request rq[WIN];
            char ack[4];
            for (int w = 0; w < WIN; w++) {
                if (s->rank == 0)
                    MPI_Isend(buf, (int)b, MPI_BYTE, peer, 2, s->comm, &rq[w]);
                else
                    MPI_Irecv(buf, (int)b, MPI_BYTE, peer, 2, s->comm, &rq[w]);
            }
            MPI_Waitall(WIN, rq, MPI_STATUSES_IGNORE);
            if (s->rank == 0)
                MPI_Recv(ack, 4, MPI_BYTE, peer, 3, s->comm, MPI_STATUS_IGNORE);
            else
                MPI_Send(ack, 4, MPI_BYTE, peer, 3, s->comm);
        }
        double t = MPI_Wtime() - t0;
        if (s->rank == 0)
            printf("tc_bw_%s,%ld,mean,%.1f,MB/s\n", s->form, b,
                   (double)b * WIN * iters / t / 1e6);
    }
    free(buf);
}

static void run(struct side *s)
{
    if (want("tc_latency_thread") || want("tc_latency_process"))
        latency(s);
    if (want("tc_bw_thread") || want("tc_bw_process"))
        bandwidth(s);
}

#ifdef CADENCE_MPI
static MPI_Comm tc;

static void *thread_side(void *arg)
{
    (void)arg;
    struct side s = {.form = "thread"};
    MPIX_Threadcomm_start(tc);
    MPI_Comm_rank(tc, &s.rank);
    s.comm = tc;
    run(&s);
    MPIX_Threadcomm_finish(tc);
    return NULL;
}
#endif

int main(int argc, char **argv)
{
    bench_options(argc, argv);
    int provided, nprocs, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (nprocs == 2) {
        struct side s = {.comm = MPI_COMM_WORLD, .rank = rank, .form = "process"};
        run(&s);
    } else if (nprocs == 1) {
#ifdef CADENCE_MPI
        MPIX_Threadcomm_init(MPI_COMM_WORLD, 2, &tc);
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, thread_side, NULL);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        MPIX_Threadcomm_free(&tc);
#else
        printf("# tcbench: no thread communicators in this MPI: no figure\n");
#endif
    } else if (rank == 0) {
        fprintf(stderr, "tcbench: 1 process (threads) or 2 (processes), not %d\n", nprocs);
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
