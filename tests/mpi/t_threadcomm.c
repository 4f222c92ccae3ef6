/*
 * Thread communicators (MPIX_Threadcomm_*): every thread a rank.  Process
 * p brings 2 + p % 2 threads (or the argument's count, every process); each thread, between MPIX_Threadcomm_start
 * and _finish, checks its rank and the size, sends around the ring of all
 * threads (small and rendezvous-sized, between threads of one process and
 * of different ones), receives from MPI_ANY_SOURCE, probes, and runs an
 * allreduce, a bcast and a barrier over all threads.  Two regions in a
 * row (the ranks are handed out again); the errors.
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
