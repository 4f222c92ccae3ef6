/*
 * Strong progress and idle cost, between two processes (mpirun -n 2).
 *
 * rendezvous / ssend: rank 1 posts a receive (16 MiB, or a small one
 * matched by MPI_Issend), tells rank 0, then computes for 1 s without any
 * MPI call.  Rank 0 sends and waits.  With the progress thread, rank 0's
 * wait returns while rank 1 still computes: its completion time must be
 * well before the moment rank 1 calls MPI_Wait.  Times are CLOCK_MONOTONIC,
 * one clock for every process of the node; the property checked is the
 * order of two events in one run, not a speed.
 *
 * idle: rank 1 blocks in MPI_Recv for 5 s while rank 0 sleeps; each
 * process must use under 5% of a core meanwhile (getrusage, all threads).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static volatile double sink;

static void compute(double seconds)
{
    double end = now() + seconds;
    double x = 1.0;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void overlap(int rank, int sync, int bytes, const char *what)
{
    char *buf = malloc(bytes);
    double times[2];  /* rank 0: wait returned; rank 1: wait called */
    if (rank == 1) {
        MPI_Request r;
        MPI_Irecv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
        int go = 1;
        MPI_Send(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        compute(1.0);
        times[1] = now();
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int ok = 1;
        for (int i = 0; i < bytes; i++)
            ok &= buf[i] == (char)(i * 13);
        CHECK(ok, "%s: data arrived intact", what);
        MPI_Recv(&times[0], 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(times[0] < times[1] - 0.5, "%s: rank 0's wait returned %.3f s before rank 1 called "
              "MPI_Wait (needs > 0.5 s)", what, times[1] - times[0]);
    } else {
        for (int i = 0; i < bytes; i++)
            buf[i] = (char)(i * 13);
        int go;
        MPI_Recv(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Request r;
        if (sync)
            MPI_Issend(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r);
        else
            MPI_Isend(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        times[0] = now();
        MPI_Send(&times[0], 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
    }
    free(buf);
}

static void idle(int rank, double seconds)
{
    int x = 0;
    double c0 = cpu_seconds(), t0 = now();
    if (rank == 0) {
        usleep((useconds_t)(seconds * 1e6));
        x = 42;
        MPI_Send(&x, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(x == 42, "idle: the message came");
    }
    double used = cpu_seconds() - c0, wall = now() - t0;
    CHECK(used < 0.05 * wall, "idle: rank %d used %.3f s of CPU in %.2f s (%.1f%% of a core, "
          "limit 5%%)", rank, used, wall, 100 * used / wall);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "all";
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "t_progress needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "strong") == 0) {
        overlap(rank, 0, 16 << 20, "Isend 16 MiB");
        overlap(rank, 1, 64, "Issend 64 B");
        overlap(rank, 1, 16 << 20, "Issend 16 MiB");
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "idle") == 0)
        idle(rank, 5.0);
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_progress[%d]", rank);
    return check_summary(name);
}
