/*
 * Background progress while the target computes: seed 003's listing (a
 * passive-target MPI_Get loop answered while the target sleeps), with
 * point-to-point in place of the one-sided calls until they exist here.
 * Rank 1 posts a receive of 4 MiB -- large enough to go by rendezvous, so
 * the receiver's side must act before the data can move -- and then
 * computes (sleeps) for 2 s without an MPI call; rank 0 sends and times
 * its send.  Three ways to get the receiver's side to act:
 *
 *   progress_thread user    the seed's own thread: it polls
 *                           MPIX_Stream_progress(MPIX_STREAM_NULL) while a
 *                           flag says progress is needed
 *   progress_thread start   MPIX_Start_progress_thread(MPIX_STREAM_NULL)
 *   progress_thread none    nothing: Cadence's own progress thread (on
 *                           unless CADENCE_PROGRESS_THREADS=0) does it
 *
 * With any of them the send completes in milliseconds, while rank 1 still
 * sleeps; with none and CADENCE_PROGRESS_THREADS=0 it takes the 2 s, as
 * in MPI libraries without asynchronous progress.  Run with 2 processes.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT (1 << 20) /* ints: 4 MiB */
#define BUSY_SECONDS 2

enum { PROGRESS_IDLE, PROGRESS_BUSY, PROGRESS_EXIT };
static volatile int need_progress = PROGRESS_IDLE;

static void *progress_thread(void *arg)
{
    (void)arg;
    for (;;) {
        if (need_progress == PROGRESS_IDLE)
            usleep(1000);
        else if (need_progress == PROGRESS_BUSY)
            MPIX_Stream_progress(MPIX_STREAM_NULL);
        else
            break;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *how = argc > 1 ? argv[1] : "none";
    if (size != 2 || provided != MPI_THREAD_MULTIPLE ||
        (strcmp(how, "user") != 0 && strcmp(how, "start") != 0 && strcmp(how, "none") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n 2 progress_thread user|start|none\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *buf = malloc(sizeof *buf * COUNT);
    pthread_t thread;
    int ok = 1;
    if (rank == 1 && strcmp(how, "user") == 0)
        pthread_create(&thread, NULL, progress_thread, NULL);
    if (rank == 0) {
        for (int i = 0; i < COUNT; i++)
            buf[i] = i;
        MPI_Barrier(MPI_COMM_WORLD);  /* the receive is posted */
        double t0 = MPI_Wtime();
        MPI_Send(buf, COUNT, MPI_INT, 1, 0, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        ok = t < BUSY_SECONDS / 2.0;
        printf("progress_thread %s: 4 MiB sent in %.3f s while the receiver computed "
               "%d s: %s\n", how, t, BUSY_SECONDS, ok ? "during the computation" : "after it");
    } else {
        MPI_Request req;
        memset(buf, 0, sizeof *buf * COUNT);
        MPI_Irecv(buf, COUNT, MPI_INT, 0, 0, MPI_COMM_WORLD, &req);
        if (strcmp(how, "start") == 0)
            MPIX_Start_progress_thread(MPIX_STREAM_NULL);
        need_progress = PROGRESS_BUSY;
        MPI_Barrier(MPI_COMM_WORLD);
        sleep(BUSY_SECONDS);  /* computing, no MPI call */
        need_progress = PROGRESS_IDLE;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < COUNT; i++)
            ok &= buf[i] == i;
        if (strcmp(how, "start") == 0)
            MPIX_Stop_progress_thread(MPIX_STREAM_NULL);
    }
    if (rank == 1 && strcmp(how, "user") == 0) {
        need_progress = PROGRESS_EXIT;
        pthread_join(thread, NULL);
    }
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("progress_thread %s: %s\n", how, all ? "ok" : "FAILED");
    free(buf);
    MPI_Finalize();
    return all ? 0 : 1;
}
