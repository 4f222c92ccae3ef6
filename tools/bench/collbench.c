/*
 * Collective benchmarks (MPI API only: builds with any MPI).
 *
 *   collbench overlap     OSU-style overlap of MPI_Iallreduce, MPI_Ibcast and
 *                         MPI_Ialltoall at 64 KiB and 1 MiB per rank: pure
 *                         communication time t_pure (start + wait), compute
 *                         time t_cpu = t_pure, overall time t_all (start,
 *                         compute t_cpu without MPI calls, wait);
 *                         overlap = 100 * (1 - (t_all - t_cpu) / t_pure)
 *   collbench otimes      the three times behind each overlap figure (us),
 *                         and how much of its processor the computation
 *                         kept while the collective progressed: loop
 *                         iterations per second during the overlapped
 *                         compute phase against compute alone (%).  The
 *                         compute phase spins for a wall-clock time, so
 *                         time a progress thread takes from the computing
 *                         core is not in the overlap figure; this column
 *                         shows it.
 *   collbench persistent  time per operation of MPI_Allreduce_init +
 *                         MPI_Start/MPI_Wait against MPI_Iallreduce + MPI_Wait
 *                         and blocking MPI_Allreduce at small sizes (the
 *                         persistent rows need MPI >= 4)
 *
 * Output: CSV lines "test,param,value,unit" on rank 0; each point is the
 * median of a few repetitions of a timed loop.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
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

/* Compute rounds per second with nothing else going on (this rank). */
static double compute_rate(double t, int iters)
{
    rounds = 0;
    double t0 = now();
    for (int i = 0; i < iters; i++)
        compute(t);
    return rounds / (now() - t0);
}

enum op { IALLREDUCE, IBCAST, IALLTOALL };
static const char *op_names[] = {"iallreduce", "ibcast", "ialltoall"};

static void start(enum op op, void *sb, void *rb, long bytes, MPI_Request *req)
{
    switch (op) {
    case IALLREDUCE:
        MPI_Iallreduce(sb, rb, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req);
        break;
    case IBCAST:
        MPI_Ibcast(sb, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, req);
        break;
    default:
        MPI_Ialltoall(sb, (int)(bytes / size), MPI_BYTE, rb, (int)(bytes / size), MPI_BYTE,
                      MPI_COMM_WORLD, req);
        break;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 5

/* Mean time of iters (start, compute(work), wait), the max over ranks. */
static double timed(enum op op, void *sb, void *rb, long bytes, double work, int iters)
{
    MPI_Request req;
    for (int i = 0; i < 2; i++) {  /* warm up */
        start(op, sb, rb, bytes, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        start(op, sb, rb, bytes, &req);
        if (work > 0)
            compute(work);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    double t = (MPI_Wtime() - t0) / iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static double median_of(double *v)
{
    qsort(v, REPS, sizeof *v, cmp);
    return v[REPS / 2];
}

static void overlap(int times)
{
    static const long sizes[] = {64 * 1024, 1024 * 1024};
    char *sb = malloc(1 << 20), *rb = malloc(1 << 20);
    memset(sb, 1, 1 << 20);
    memset(rb, 0, 1 << 20);
    for (int o = 0; o < 3; o++) {
        for (int s = 0; s < 2; s++) {
            long bytes = sizes[s];
            int iters = bytes > 100000 ? 20 : 50;
            double pure[REPS], all[REPS];
            for (int r = 0; r < REPS; r++)
                pure[r] = timed((enum op)o, sb, rb, bytes, 0, iters);
            double tp = median_of(pure);
            double alone = compute_rate(tp, iters);
            rounds = 0;
            double spent = 0;
            for (int r = 0; r < REPS; r++) {
                all[r] = timed((enum op)o, sb, rb, bytes, tp, iters);
                spent += tp * iters;
            }
            double ta = median_of(all);
            double kept = 100 * rounds / spent / alone, kept_min;
            MPI_Allreduce(&kept, &kept_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
            double ov = 100 * (1 - (ta - tp) / tp);
            ov = ov < 0 ? 0 : ov > 100 ? 100 : ov;
            if (rank != 0)
                continue;
            const char *unit = bytes >= 1 << 20 ? "1M" : "64K";
            if (times) {
                printf("otimes,%s-%s-overall,%.1f,us\n", op_names[o], unit, ta * 1e6);
                printf("otimes,%s-%s-compute,%.1f,us\n", op_names[o], unit, tp * 1e6);
                printf("otimes,%s-%s-pure,%.1f,us\n", op_names[o], unit, tp * 1e6);
                printf("otimes,%s-%s-cpu-kept,%.1f,%%\n", op_names[o], unit,
                       kept_min > 100 ? 100 : kept_min);
            } else {
                printf("overlap,%s-%s,%.1f,%%\n", op_names[o], unit, ov);
            }
        }
    }
    free(sb);
    free(rb);
}

static void persistent(void)
{
    static const long sizes[] = {8, 64, 512, 4096};
    double *sb = calloc(512, sizeof(double)), *rb = calloc(512, sizeof(double));
    const int iters = 2000;
    for (int s = 0; s < 4; s++) {
        int count = (int)(sizes[s] / 8);
        double nb[REPS];
        for (int r = 0; r < REPS; r++)
            nb[r] = timed(IALLREDUCE, sb, rb, sizes[s], 0, iters);
        if (rank == 0)
            printf("persistent,iallreduce-%ld,%.2f,us\n", sizes[s], median_of(nb) * 1e6);
        double bl[REPS];
        for (int r = 0; r < REPS; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++)
                MPI_Allreduce(sb, rb, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double t = (MPI_Wtime() - t0) / iters;
            MPI_Allreduce(&t, &bl[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        if (rank == 0)
            printf("persistent,allreduce-%ld,%.2f,us\n", sizes[s], median_of(bl) * 1e6);
#if MPI_VERSION >= 4
        MPI_Request req;
        MPI_Allreduce_init(sb, rb, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        double pe[REPS];
        for (int r = 0; r < REPS; r++) {
            for (int i = 0; i < 2; i++) {
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            double t = (MPI_Wtime() - t0) / iters;
            MPI_Allreduce(&t, &pe[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        MPI_Request_free(&req);
        if (rank == 0)
            printf("persistent,allreduce_init-%ld,%.2f,us\n", sizes[s], median_of(pe) * 1e6);
#else
        (void)count;
#endif
    }
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "overlap";
    if (strcmp(what, "overlap") == 0)
        overlap(0);
    else if (strcmp(what, "otimes") == 0)
        overlap(1);
    else if (strcmp(what, "persistent") == 0)
        persistent();
    else if (rank == 0)
        fprintf(stderr, "collbench: unknown test '%s' (overlap, otimes, persistent)\n", what);
    MPI_Finalize();
    return 0;
}
