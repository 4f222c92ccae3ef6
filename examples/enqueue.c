/*
 * An offload queue (docs/streams.md; seed 003's enqueue listing with a
 * host queue in place of a CUDA stream): rank 0 enqueues a send, rank 1 a
 * receive and then its work on what arrives would follow in the same
 * stream; the calls return at once and the engine runs the queue;
 * MPIX_Stream_synchronize is the host-side wait.
 *
 *   mpicc -O2 enqueue.c -o enqueue
 *   CADENCE_PROGRESS_CONTEXTS=2 mpirun -n 2 ./enqueue
 */
#include <mpi.h>
#include <stdio.h>

#define N 1000

int main(void)
{
    int rank;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cadence_host_queue");
    MPIX_Stream stream;
    MPIX_Stream_create(info, &stream);
    MPI_Info_free(&info);
    MPI_Comm stream_comm;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &stream_comm);

    static double x[N], y[N];
    double sum = 0, total = 0;
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            x[i] = i;
        MPIX_Send_enqueue(x, N, MPI_DOUBLE, 1, 0, stream_comm);
    } else if (rank == 1) {
        MPIX_Recv_enqueue(y, N, MPI_DOUBLE, 0, 0, stream_comm, MPI_STATUS_IGNORE);
    }
    /* everyone's partial sum, in the same queue behind the transfer */
    MPIX_Allreduce_enqueue(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, stream_comm);
    MPIX_Stream_synchronize(stream);  /* the host waits here, not at each call */

    int ok = 1;
    if (rank == 1)
        for (int i = 0; i < N; i++)
            ok &= y[i] == i;
    MPI_Comm_free(&stream_comm);
    MPIX_Stream_free(&stream);
    if (rank == 1)
        printf("enqueue: %d doubles through a host queue: %s\n", N, ok ? "ok" : "WRONG DATA");
    MPI_Finalize();
    return !ok;
}
