/*
 * Seed 003's passive-target listing without its progress thread: rank 0
 * locks rank 1's window and reads it with 1000 MPI_Get, each flushed,
 * while rank 1 sleeps without calling MPI.  In an MPI whose target takes
 * part in passive-target operations only when it calls MPI, this waits
 * for rank 1 to wake up; in Cadence the target's engine answers while it
 * sleeps (docs/rma.md).
 *
 *   mpirun -n 2 rma_passive [seconds rank 1 sleeps, default 10]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { N = 1000 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double sleep_s = argc > 1 ? atof(argv[1]) : 10.0;
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < N; i++)
        mem[i] = rank * 1000000 + i;
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (size >= 2 && rank == 1) {
        usleep((useconds_t)(sleep_s * 1e6));  /* computing: no MPI call */
    } else if (size >= 2 && rank == 0) {
        double t0 = MPI_Wtime();
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (int i = 0; i < N; i++) {
            int v = -1;
            MPI_Get(&v, 1, MPI_INT, 1, i, 1, MPI_INT, win);
            MPI_Win_flush(1, win);
            bad += v != 1000000 + i;
        }
        MPI_Win_unlock(1, win);
        double t = MPI_Wtime() - t0;
        printf("rma_passive: %d gets from a rank asleep for %.0f s took %.3f s: %s\n", N,
               sleep_s, t, t < sleep_s / 2 ? "while it slept" : "it had to wake up");
        printf("rma_passive: %s\n", bad == 0 ? "ok" : "wrong data");
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return bad != 0;
}
