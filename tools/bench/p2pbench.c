/*
 * Point-to-point benchmarks written against the MPI API only, so the same
 * source builds with Cadence, MPICH and Open MPI.  Two ranks.
 *
 *   p2pbench latency   ping-pong half round trip, 0 B .. 4 MiB
 *   p2pbench pingpong  blocking ping-pong, 1 KiB .. 256 KiB, every round trip
 *                      timed after a warm-up: mean, median and 99th
 *                      percentile of the half round trip (param "bytes/stat")
 *   p2pbench bw        unidirectional bandwidth: windows of 64 Isends
 *   p2pbench bibw      both directions at once
 *   p2pbench rate      message rate of 8-byte messages (windows of 64)
 *   p2pbench overlap   Isend/Irecv of 1 MiB + compute + Wait, against the
 *                      parts measured alone: overlap = 1 - (t_all - t_compute)
 *                      / t_comm (1.0: the transfer hid entirely behind compute)
 *
 * Output: CSV lines "test,bytes,value,unit" on rank 0.  Timing uses
 * MPI_Wtime; each point is the best of a few repetitions.  Only
 * point-to-point calls are used (synchronisation included).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static char *sbuf, *rbuf;

enum { WINDOW = 64, MAXB = 4 << 20 };

/* Two-rank barrier and max with point-to-point only (collectives may not
 * exist in the library under test). */
static void sync2(void)
{
    char a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_BYTE, 1 - rank, 9, &b, 1, MPI_BYTE, 1 - rank, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

static double max2(double x)
{
    double y;
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, 1 - rank, 10, &y, 1, MPI_DOUBLE, 1 - rank, 10, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return x > y ? x : y;
}

static int iters_for(long bytes)
{
    if (bytes <= 8192)
        return 10000;
    if (bytes <= 262144)
        return 1000;
    return 100;
}

/* One blocking round trip of b bytes: rank 0 sends first. */
static void roundtrip(long b, int tag)
{
    if (rank == 0) {
        MPI_Send(sbuf, (int)b, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)b, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, (int)b, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, (int)b, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
    }
}

static void latency(void)
{
    for (long b = 0; b <= MAXB; b = b ? b * 4 : 8) {
        int n = iters_for(b);
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            sync2();
            double t0 = MPI_Wtime();
            for (int i = 0; i < n; i++) {
                roundtrip(b, 1);
            }
            double t = (MPI_Wtime() - t0) / n / 2;
            best = t < best ? t : best;
        }
        if (rank == 0)
            printf("latency,%ld,%.3f,us\n", b, best * 1e6);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The tail matters here, not the best case: a waiter that loses its core
 * to a busy process shows in the mean and the 99th percentile first. */
static void pingpong(void)
{
    static const long sizes[] = {1024, 4096, 12288, 16384, 65536, 262144};
    enum { WARM = 200, N = 2000 };
    double *t = malloc(N * sizeof *t);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long b = sizes[k];
        sync2();
        for (int i = 0; i < WARM + N; i++) {
            double t0 = MPI_Wtime();
            roundtrip(b, 5);
            if (i >= WARM)
                t[i - WARM] = (MPI_Wtime() - t0) / 2 * 1e6;
        }
        if (rank == 0) {
            double sum = 0;
            for (int i = 0; i < N; i++)
                sum += t[i];
            qsort(t, N, sizeof *t, cmp_double);
            printf("pingpong,%ld/mean,%.2f,us\n", b, sum / N);
            printf("pingpong,%ld/median,%.2f,us\n", b, t[N / 2]);
            printf("pingpong,%ld/p99,%.2f,us\n", b, t[N * 99 / 100]);
        }
    }
    free(t);
}

static void bandwidth(int bidir, const char *name, long from, long to)
{
    MPI_Request rq[2 * WINDOW];
    for (long b = from; b <= to; b *= 4) {
        int n = iters_for(b) / 10 + 5;
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            sync2();
            double t0 = MPI_Wtime();
            for (int i = 0; i < n; i++) {
                int k = 0;
                if (rank == 0 || bidir)
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Isend(sbuf, (int)b, MPI_BYTE, 1 - rank, 2, MPI_COMM_WORLD, &rq[k++]);
                if (rank == 1 || bidir)
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Irecv(rbuf, (int)b, MPI_BYTE, 1 - rank, 2, MPI_COMM_WORLD, &rq[k++]);
                MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
                char ack = 0;
                if (rank == 1)
                    MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
                else
                    MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            double t = MPI_Wtime() - t0;
            best = t < best ? t : best;
        }
        double bytes = (double)b * WINDOW * n * (bidir ? 2 : 1);
        if (rank == 0) {
            if (b == 8 && !bidir && strcmp(name, "rate") == 0)
                printf("rate,%ld,%.0f,msg/s\n", b, WINDOW * n / best);
            else
                printf("%s,%ld,%.1f,MB/s\n", name, b, bytes / best / 1e6);
        }
    }
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

static double one_transfer(long b, double work, int communicate)
{
    MPI_Request rq;
    sync2();
    double t0 = MPI_Wtime();
    if (communicate) {
        if (rank == 0)
            MPI_Isend(sbuf, (int)b, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &rq);
        else
            MPI_Irecv(rbuf, (int)b, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &rq);
    }
    if (work > 0)
        compute(work);
    if (communicate)
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    return max2(MPI_Wtime() - t0);
}

static void overlap(void)
{
    for (long b = 65536; b <= MAXB; b *= 4) {
        double comm = 1e9, all = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            double t = one_transfer(b, 0, 1);
            comm = t < comm ? t : comm;
        }
        double work = comm * 2 > 0.002 ? comm * 2 : 0.002;
        for (int rep = 0; rep < 5; rep++) {
            double t = one_transfer(b, work, 1);
            all = t < all ? t : all;
        }
        double ov = 1 - (all - work) / comm;
        ov = ov < 0 ? 0 : ov > 1 ? 1 : ov;
        if (rank == 0)
            printf("overlap,%ld,%.1f,%%\n", b, 100 * ov);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sbuf = malloc(MAXB);
    rbuf = malloc(MAXB);
    memset(sbuf, 1, MAXB);
    memset(rbuf, 0, MAXB);
    const char *what = argc > 1 ? argv[1] : "all";
    int all = strcmp(what, "all") == 0;
    if (all || strcmp(what, "latency") == 0)
        latency();
    if (all || strcmp(what, "pingpong") == 0)
        pingpong();
    if (all || strcmp(what, "bw") == 0)
        bandwidth(0, "bw", 1024, MAXB);
    if (all || strcmp(what, "bibw") == 0)
        bandwidth(1, "bibw", 1024, MAXB);
    if (all || strcmp(what, "rate") == 0)
        bandwidth(0, "rate", 8, 8);
    if (all || strcmp(what, "overlap") == 0)
        overlap();
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
