/*
 * Thread communicators (MPIX_Threadcomm_*): every thread a rank.  Process
 * p brings 2 + p % 2 threads (or the argument's count, every process); each thread, between MPIX_Threadcomm_start
 * and _finish, checks its rank and the size, sends around the ring of all
 * threads (small and rendezvous-sized, between threads of one process and
 * of different ones), receives from MPI_ANY_SOURCE, probes, and runs an
 * allreduce, a bcast and a barrier over all threads; windows of immediate
 * sends of every size class and a burst of blocking sends before any
 * receive, 1 MiB between pairs of ranks, data checked (stress).  Two regions in a row (the ranks are
 * handed out again); the errors.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int prank, psize, nthreads;
static MPI_Comm tc;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long bad_total;
static int ranks_seen;

enum { BIG = 40000 };

/* byte i of message m of iteration it from rank src */
static unsigned char pattern(int src, int it, int m, size_t i)
{
    return (unsigned char)(src * 31 + it * 7 + m * 13 + i);
}

/* Windows of immediate sends of every path a message between threads may
 * take (in a cell, in the ring's arena, on the heap, by rendezvous; more
 * messages than a ring holds), then a burst sent before anything is
 * received (eager sends must not wait for the receiver); data checked. */
static long stress(int rank, int size)
{
    enum { WIN = 70, ITERS = 10, BURST = 100 };
    static const size_t sizes[] = {8, 600, 6000, 20000};
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    long bad = 0;
    unsigned char *out[WIN], *in[WIN];
    for (int m = 0; m < WIN; m++) {
        out[m] = malloc(sizes[m % 4]);
        in[m] = malloc(sizes[m % 4]);
    }
    MPI_Request req[2 * WIN];
    for (int it = 0; it < ITERS; it++) {
        for (int m = 0; m < WIN; m++) {
            size_t n = sizes[m % 4];
            memset(in[m], 0, n);
            for (size_t i = 0; i < n; i++)
                out[m][i] = pattern(rank, it, m, i);
            MPI_Irecv(in[m], (int)n, MPI_BYTE, from, m, tc, &req[m]);
        }
        for (int m = 0; m < WIN; m++) {
            if (m % 9 == 4)
                MPI_Issend(out[m], (int)sizes[m % 4], MPI_BYTE, to, m, tc, &req[WIN + m]);
            else
                MPI_Isend(out[m], (int)sizes[m % 4], MPI_BYTE, to, m, tc, &req[WIN + m]);
        }
        MPI_Waitall(2 * WIN, req, MPI_STATUSES_IGNORE);
        for (int m = 0; m < WIN; m++)
            for (size_t i = 0; i < sizes[m % 4]; i++)
                bad += in[m][i] != pattern(from, it, m, i);
    }
    for (int m = 0; m < WIN; m++) {
        free(out[m]);
        free(in[m]);
    }
    /* the burst: every message sent (blocking, eager) before one is received */
    unsigned char *b = malloc(6000);
    for (int m = 0; m < BURST; m++) {
        size_t n = m % 2 ? 6000 : 8;
        for (size_t i = 0; i < n; i++)
            b[i] = pattern(rank, 99, m, i);
        MPI_Send(b, (int)n, MPI_BYTE, to, 1000 + m, tc);
    }
    for (int m = 0; m < BURST; m++) {
        size_t n = m % 2 ? 6000 : 8;
        MPI_Status st;
        MPI_Recv(b, 6000, MPI_BYTE, from, 1000 + m, tc, &st);
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        bad += (size_t)count != n;
        for (size_t i = 0; i < n; i++)
            bad += b[i] != pattern(from, 99, m, i);
    }
    free(b);
    /* pairs (0,1), (2,3), ...: 1 MiB one way while the sender only waits
     * (between threads of a process the sender takes part in the copy) */
    enum { MB = 1 << 20 };
    int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (peer < size) {
        unsigned char *m = malloc(MB);
        for (int it = 0; it < 5; it++) {
            if (rank % 2 == 0) {
                for (size_t i = 0; i < MB; i++)
                    m[i] = pattern(rank, it, 0, i);
                MPI_Send(m, MB, MPI_BYTE, peer, 2000 + it, tc);
            } else {
                memset(m, 0, MB);
                MPI_Recv(m, MB, MPI_BYTE, peer, 2000 + it, tc, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < MB; i++)
                    bad += m[i] != pattern(peer, it, 0, i);
            }
        }
        free(m);
    }
    return bad;
}

static void *thread_main(void *arg)
{
    (void)arg;
    long bad = 0;
    for (int region = 0; region < 2; region++) {
        if (MPIX_Threadcomm_start(tc) != MPI_SUCCESS) {
            bad++;
            continue;
        }
        int rank, size;
        MPI_Comm_rank(tc, &rank);
        MPI_Comm_size(tc, &size);
        pthread_mutex_lock(&lock);
        ranks_seen |= 1 << rank;
        pthread_mutex_unlock(&lock);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        /* small and large around the ring */
        int x = rank * 100 + region, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, to, 1, &y, 1, MPI_INT, from, 1, tc, MPI_STATUS_IGNORE);
        bad += y != from * 100 + region;
        int *big = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
        for (int i = 0; i < BIG; i++)
            big[i] = rank * 7 + i;
        MPI_Request r;
        MPI_Irecv(in, BIG, MPI_INT, from, 2, tc, &r);
        MPI_Send(big, BIG, MPI_INT, to, 2, tc);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int i = 0; i < BIG; i++)
            bad += in[i] != from * 7 + i;
        free(big);
        free(in);
        bad += stress(rank, size);
        /* a wildcard receive and a probe */
        MPI_Status st;
        MPI_Send(&x, 1, MPI_INT, to, 3, tc);
        MPI_Probe(MPI_ANY_SOURCE, 3, tc, &st);
        bad += st.MPI_SOURCE != from;
        MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, tc, &st);
        bad += st.MPI_SOURCE != from || st.MPI_TAG != 3 || y != from * 100 + region;
        /* collectives over every thread */
        int sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, tc);
        bad += sum != size * (size - 1) / 2;
        int v = rank == size - 1 ? 4242 + region : 0;
        MPI_Bcast(&v, 1, MPI_INT, size - 1, tc);
        bad += v != 4242 + region;
        MPI_Barrier(tc);
        /* misuse */
        MPI_Comm dup;
        bad += check_class(MPI_Comm_dup(tc, &dup)) != MPI_ERR_COMM;
        bad += check_class(MPIX_Threadcomm_start(tc)) != MPI_ERR_OTHER;
        MPI_Comm tmp = tc;
        bad += check_class(MPIX_Threadcomm_free(&tmp)) != MPI_ERR_OTHER;
        MPIX_Threadcomm_finish(tc);
    }
    pthread_mutex_lock(&lock);
    bad_total += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &prank);
    MPI_Comm_size(MPI_COMM_WORLD, &psize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);  /* (MPIX_Threadcomm_free's) */
    nthreads = argc > 1 ? atoi(argv[1]) : 2 + prank % 2;  /* (an argument: every process) */
    int rc = MPIX_Threadcomm_init(MPI_COMM_WORLD, nthreads, &tc);
    CHECK(rc == MPI_SUCCESS, "MPIX_Threadcomm_init: %d", rc);
    int flag = 0;
    MPIX_Comm_test_threadcomm(tc, &flag);
    CHECK(flag, "MPIX_Comm_test_threadcomm on the thread communicator");
    MPIX_Comm_test_threadcomm(MPI_COMM_WORLD, &flag);
    CHECK(!flag, "MPIX_Comm_test_threadcomm on MPI_COMM_WORLD");
    EXPECT(MPIX_Threadcomm_finish(tc), MPI_ERR_OTHER, "finish before start");
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, thread_main, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    int first = 0;
    for (int p = 0; p < prank; p++)
        first += argc > 1 ? nthreads : 2 + p % 2;
    CHECK((unsigned)ranks_seen == ((1u << nthreads) - 1) << first, "ranks of this process's threads: "
          "0x%x, expected %d from %d", ranks_seen, nthreads, first);
    CHECK(bad_total == 0, "threads: %ld wrong", bad_total);
    rc = MPIX_Threadcomm_free(&tc);
    CHECK(rc == MPI_SUCCESS && tc == MPI_COMM_NULL, "MPIX_Threadcomm_free: %d", rc);
    printf("rank %d: %d threads, ranks %d..%d: 2 regions\n", prank, nthreads, first,
           first + nthreads - 1);
    MPI_Finalize();
    return check_summary("t_threadcomm");
}
