/*
 * A thread communicator (docs/streams.md; seed 003's listing, with an
 * allreduce over the threads to show they are ranks): NT OpenMP threads
 * per process, each one rank of threadcomm.
 *
 *   mpicc -fopenmp -O2 threadcomm.c -o threadcomm
 *   mpirun -n 2 ./threadcomm
 */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

#define NT 4

int main(void)
{
    MPI_Comm threadcomm;
    int ok = 1;

    MPI_Init(NULL, NULL);
    MPIX_Threadcomm_init(MPI_COMM_WORLD, NT, &threadcomm);

#pragma omp parallel num_threads(NT) reduction(&& : ok)
    {
        int rank, size, sum = 0;
        MPIX_Threadcomm_start(threadcomm);
        MPI_Comm_size(threadcomm, &size);
        MPI_Comm_rank(threadcomm, &rank);
        /* MPI operations over threadcomm: every thread is a rank */
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, threadcomm);
        ok = sum == size * (size - 1) / 2;
        if (rank == 0)
            printf("threadcomm: %d ranks, the sum of their ranks %d: %s\n", size, sum,
                   ok ? "ok" : "WRONG");
        MPIX_Threadcomm_finish(threadcomm);
    }

    MPIX_Threadcomm_free(&threadcomm);
    MPI_Finalize();
    return !ok;
}
