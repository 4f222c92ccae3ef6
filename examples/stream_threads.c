/*
 * Threads on MPIX streams (docs/streams.md; seed 003's first stream
 * listing, made to check what it receives): NT OpenMP threads per rank,
 * thread t of rank 0 sending to thread t of rank 1 on a stream
 * communicator of its own pair, so the pairs share no rings or locks.
 *
 *   mpicc -fopenmp -O2 stream_threads.c -o stream_threads
 *   CADENCE_PROGRESS_CONTEXTS=5 mpirun -n 2 ./stream_threads
 *
 * (a stream owns one of the contexts 1..CADENCE_PROGRESS_CONTEXTS-1)
 */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

#define NT 4

int main(void)
{
    int rank, provided, bad = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    MPIX_Stream streams[NT];
    MPI_Comm comms[NT];
    for (int i = 0; i < NT; i++) {
        MPIX_Stream_create(MPI_INFO_NULL, &streams[i]);
        MPIX_Stream_comm_create(MPI_COMM_WORLD, streams[i], &comms[i]);
    }

#pragma omp parallel num_threads(NT) reduction(+ : bad)
    {
        int id = omp_get_thread_num();
        char buf[100];
        int tag = 0;
        for (int i = 0; i < 100; i++)
            buf[i] = rank == 0 ? (char)(id * 7 + i) : 0;
        if (rank == 0) {
            MPI_Send(buf, 100, MPI_CHAR, 1, tag, comms[id]);
        } else if (rank == 1) {
            MPI_Recv(buf, 100, MPI_CHAR, 0, tag, comms[id], MPI_STATUS_IGNORE);
            for (int i = 0; i < 100; i++)
                bad += buf[i] != (char)(id * 7 + i);
        }
    }

    for (int i = 0; i < NT; i++) {
        MPI_Comm_free(&comms[i]);
        MPIX_Stream_free(&streams[i]);
    }
    if (rank == 1)
        printf("stream_threads: %d threads on streams of their own: %s\n", NT,
               bad == 0 ? "ok" : "WRONG DATA");
    MPI_Finalize();
    return bad != 0;
}
