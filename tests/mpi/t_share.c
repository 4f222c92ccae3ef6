/*
 * Work sharing between the threads of a process (docs/tasks.md): the
 * ranks of a thread communicator start MPI_Ireduce, MPI_Igather and
 * MPI_Ibcast of 1 MiB, and one rank -- the root of the reduce and the
 * gather, the last rank of the broadcast: one that must take messages of
 * other threads to finish -- computes 0.3 s without an MPI call.  Whether
 * its result is in its buffer at the end of the computation, before its
 * next MPI call (a test would do what is left itself), tells whether
 * another thread did its steps for it meanwhile:
 *
 *   one away   the other ranks wait in MPI_Wait (they are the helpers);
 *   all away   the other ranks compute too (only the progress thread can
 *              help).
 *
 * The waiting ranks start 50 ms after the away one, so that their
 * messages reach it while it computes.  Every result is checked.
 *
 *   t_share <threads> <one away> <all away>
 *
 * and between two sessions of each of two processes (run without the
 * progress thread, so the waiting thread is the only one polling):
 *
 *   t_share sessions
 *
 * rank 0 starts an MPI_Ireduce of 1 MiB on session B's communicator and
 * then waits in MPI_Recv on session A's for rank 1, which sends only once
 * its own part of the reduce is done: the reduce's steps at rank 0 -- the
 * copy and the reduction -- ran inside that wait on the other session's
 * communicator, and the result is there when MPI_Recv returns, before any
 * call on session B.
 *
 * each expectation: done (the result is there), pending (it is not:
 * nobody may help), any (not checked: the final data only).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"

enum { MIB = 1 << 20, NCOLL = 3, NCASE = 2 };
static const char *coll_name[NCOLL] = {"MPI_Ireduce", "MPI_Igather", "MPI_Ibcast"};
static const char *case_name[NCASE] = {"one away", "all away"};
static const char *expect[NCASE];

static MPI_Comm tc;
static int nthreads;
static atomic_long bad_data;
static atomic_int flag_seen[NCOLL][NCASE];  /* the away rank's result: 1 there, 2 not */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int pattern(int rank, size_t i)
{
    return rank * 7 + (int)(i % 1000);
}

static void compute(double seconds)
{
    double end = now() + seconds;
    volatile double x = 0;
    while (now() < end)
        x += 1;  /* no MPI call */
}

/* Wrong elements of the result this rank gets (none: nothing to check).
 * The probe at the end of the computation reads the buffer of a request
 * still active, which another thread may be writing: deliberately, the
 * read is what the test asks (a write not finished shows as wrong data),
 * so ThreadSanitizer is told not to watch it. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#if !defined(NO_TSAN) && defined(__SANITIZE_THREAD__)
#define NO_TSAN __attribute__((no_sanitize_thread))
#endif
#ifndef NO_TSAN
#define NO_TSAN
#endif
NO_TSAN static long wrong(int coll, int rank, int size, const int *out, size_t n, size_t part)
{
    long bad = 0;
    if (coll == 0 && rank == 0) {
        for (size_t i = 0; i < n; i++) {
            long sum = 0;
            for (int r = 0; r < size; r++)
                sum += pattern(r, i);
            bad += out[i] != sum;
        }
    } else if (coll == 1 && rank == 0) {
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < part; i++)
                bad += out[(size_t)r * part + i] != pattern(r, i);
    } else if (coll == 2 && rank != 0) {
        for (size_t i = 0; i < n; i++)
            bad += out[i] != pattern(0, i);
    }
    return bad;
}

static void one(int coll, int kase, int rank, int size)
{
    size_t n = MIB / sizeof(int), part = n / (size_t)size;
    int *in = malloc(MIB), *out = malloc(MIB);
    for (size_t i = 0; i < n; i++) {
        in[i] = pattern(rank, i);
        out[i] = -1;
    }
    int away = coll == 2 ? size - 1 : 0;
    MPI_Barrier(tc);
    MPI_Request req;
    if (rank != away)
        usleep(50000);
    if (coll == 0)
        MPI_Ireduce(in, out, (int)n, MPI_INT, MPI_SUM, 0, tc, &req);
    else if (coll == 1)
        MPI_Igather(in, (int)part, MPI_INT, out, (int)part, MPI_INT, 0, tc, &req);
    else
        MPI_Ibcast(rank == 0 ? in : out, (int)n, MPI_INT, 0, tc, &req);
    if (rank == away) {
        compute(0.3);
        /* Is the result there before this rank's next MPI call?  (An
         * MPI_Test would do what is left itself.) */
        atomic_store(&flag_seen[coll][kase], wrong(coll, rank, size, out, n, part) == 0 ? 1 : 2);
    } else if (kase == 1) {
        compute(0.35);  /* past the away rank's end: nobody waits meanwhile */
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    atomic_fetch_add(&bad_data, wrong(coll, rank, size, out, n, part));
    free(in);
    free(out);
}

static void *thread_main(void *arg)
{
    (void)arg;
    if (MPIX_Threadcomm_start(tc) != MPI_SUCCESS) {
        atomic_fetch_add(&bad_data, 1);
        return NULL;
    }
    int rank, size;
    MPI_Comm_rank(tc, &rank);
    MPI_Comm_size(tc, &size);
    for (int c = 0; c < NCOLL; c++)
        for (int k = 0; k < NCASE; k++)
            one(c, k, rank, size);
    MPIX_Threadcomm_finish(tc);
    return NULL;
}

static int sessions(void)
{
    MPI_Session a, b;
    MPI_Group ga, gb;
    MPI_Comm ca, cb;
    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a);
    rc |= MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b);
    rc |= MPI_Group_from_session_pset(a, "mpi://WORLD", &ga);
    rc |= MPI_Group_from_session_pset(b, "mpi://WORLD", &gb);
    rc |= MPI_Comm_create_from_group(ga, "t_share.a", MPI_INFO_NULL, MPI_ERRORS_RETURN, &ca);
    rc |= MPI_Comm_create_from_group(gb, "t_share.b", MPI_INFO_NULL, MPI_ERRORS_RETURN, &cb);
    CHECK(rc == MPI_SUCCESS, "two sessions and their communicators: %d", rc);
    int rank, size;
    MPI_Comm_rank(ca, &rank);
    MPI_Comm_size(ca, &size);
    CHECK(size == 2, "two processes, not %d", size);
    size_t n = MIB / sizeof(int);
    int *in = malloc(MIB), *out = malloc(MIB);
    for (int rep = 0; rep < 5; rep++) {
        for (size_t i = 0; i < n; i++) {
            in[i] = pattern(rank + rep, i);
            out[i] = -1;
        }
        MPI_Barrier(ca);
        MPI_Request req;
        MPI_Ireduce(in, out, (int)n, MPI_INT, MPI_SUM, 0, cb, &req);
        int token = rep;
        if (rank == 0) {
            MPI_Recv(&token, 1, MPI_INT, 1, 9, ca, MPI_STATUS_IGNORE);
            long bad = 0;  /* before any call on session B */
            for (size_t i = 0; i < n; i++)
                bad += out[i] != pattern(rep, i) + pattern(1 + rep, i);
            CHECK(bad == 0, "repetition %d: the reduce on session B was done inside the "
                  "wait on session A (%ld wrong)", rep, bad);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Send(&token, 1, MPI_INT, 0, 9, ca);
        }
    }
    free(in);
    free(out);
    MPI_Comm_free(&ca);
    MPI_Comm_free(&cb);
    MPI_Group_free(&ga);
    MPI_Group_free(&gb);
    MPI_Session_finalize(&a);
    MPI_Session_finalize(&b);
    return check_summary("t_share sessions");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "sessions") == 0)
        return sessions();
    int provided, prank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &prank);
    nthreads = argc > 1 ? atoi(argv[1]) : 2;
    expect[0] = argc > 2 ? argv[2] : "any";
    expect[1] = argc > 3 ? argv[3] : "any";
    int rc = MPIX_Threadcomm_init(MPI_COMM_WORLD, nthreads, &tc);
    CHECK(rc == MPI_SUCCESS, "MPIX_Threadcomm_init: %d", rc);
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, thread_main, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    CHECK(bad_data == 0, "results: %ld wrong", (long)bad_data);
    for (int c = 0; c < NCOLL; c++)
        for (int k = 0; k < NCASE; k++) {
            int seen = atomic_load(&flag_seen[c][k]);
            if (seen == 0)
                continue;  /* the away rank is another process's */
            if (strcmp(expect[k], "any") != 0)
                CHECK(seen == (strcmp(expect[k], "done") == 0 ? 1 : 2),
                      "%s, %s: the away rank's result is %s after its computation, "
                      "expected %s", coll_name[c], case_name[k],
                      seen == 1 ? "there" : "not there", expect[k]);
            printf("rank %d: %s, %s: the away rank's result %s at the end of its "
                   "computation\n", prank, coll_name[c], case_name[k],
                   seen == 1 ? "was there" : "was not there");
        }
    MPIX_Threadcomm_free(&tc);
    MPI_Finalize();
    return check_summary("t_share");
}
