/*
 * MPI_THREAD_MULTIPLE between two processes: 8 threads per rank exchange
 * messages with the same-numbered thread of the other rank on their own
 * tag, both directions at once (48000 messages), each checking order and
 * content; then 8 senders against 8 receivers using MPI_ANY_TAG, counting
 * every message exactly once.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

enum { THREADS = 8, PER = 3000, WILD = 2000 };

static int rank, peer;
static int errors[THREADS];

static void *pairs(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < PER; i++) {
        int out[3] = {rank, t, i}, in[3] = {-1, -1, -1};
        MPI_Request r[2];
        MPI_Irecv(in, 3, MPI_INT, peer, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 3, MPI_INT, peer, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (in[0] != peer || in[1] != t || in[2] != i)
            errors[t]++;
    }
    return NULL;
}

static int seen[THREADS][WILD];

static void *wild_send(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < WILD; i++) {
        int out[2] = {t, i};
        MPI_Send(out, 2, MPI_INT, peer, 100 + t, MPI_COMM_WORLD);
    }
    return NULL;
}

static void *wild_recv(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < WILD; i++) {
        int in[2];
        MPI_Status st;
        MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (in[0] < 0 || in[0] >= THREADS || in[1] < 0 || in[1] >= WILD || st.MPI_TAG != 100 + in[0])
            errors[t]++;
        else
            __atomic_fetch_add(&seen[in[0]][in[1]], 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, pairs, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    int bad = 0;
    for (int t = 0; t < THREADS; t++)
        bad += errors[t], errors[t] = 0;
    CHECK(bad == 0, "rank %d: %d threads x %d exchanges on own tags: %d wrong", rank, THREADS, PER, bad);

    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, rank == 0 ? wild_send : wild_recv, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    if (rank == 1) {
        int lost = 0, dup = 0;
        for (int t = 0; t < THREADS; t++) {
            bad += errors[t];
            for (int i = 0; i < WILD; i++)
                lost += seen[t][i] == 0, dup += seen[t][i] > 1;
        }
        CHECK(bad == 0 && lost == 0 && dup == 0, "wildcard receivers: %d malformed, %d lost, %d "
              "duplicated of %d", bad, lost, dup, THREADS * WILD);
    }
    int x = 0;
    MPI_Sendrecv_replace(&x, 1, MPI_INT, peer, 7, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_threads_mp[%d]", rank);
    return check_summary(name);
}
