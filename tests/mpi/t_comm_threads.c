/* Communicator creation from several threads at once (MPI_THREAD_MULTIPLE):
 * one thread duplicates MPI_COMM_SELF in a loop while others duplicate and
 * split communicators derived from MPI_COMM_WORLD (each thread's collectives
 * on its own parent, as MPI requires).  No thread may hold up another's
 * context-id agreement: this used to deadlock when the SELF duplicate waited
 * for the process's id mask while a WORLD duplicate held it across its
 * exchange.  Every new communicator must work, and traffic on communicators
 * made at the same time with the same tags must not cross.
 *
 * Second part: even ranks duplicate SELF then join a barrier on Z in one
 * thread while another thread duplicates X; odd ranks do the barrier on Z
 * and the duplicate of X one after the other in one thread.  A valid
 * program (collectives on each communicator in the same order
 * everywhere), which deadlocked when the duplicate of X held the even
 * ranks' id mask while waiting for odd ranks stuck in the barrier, which
 * waited for the duplicate of SELF, which waited for the mask. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check_mpi.h"

#define NTHREADS 4
#define ITERS 150

static int wrank, wsize;
static MPI_Comm parents[NTHREADS];
static int bad[NTHREADS];
static _Atomic int world_left = NTHREADS - 1;  /* threads still duplicating WORLD's */

/* A message around c's ring tagged 7 (the same tag in every thread): it
 * must come from this thread's peer, carrying this thread's number. */
static void ring(MPI_Comm c, int t, int i)
{
    int r, n, msg[2] = {t, i}, got[2] = {-1, -1};
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    MPI_Sendrecv(msg, 2, MPI_INT, (r + 1) % n, 7, got, 2, MPI_INT, (r + n - 1) % n, 7, c,
                 MPI_STATUS_IGNORE);
    if (got[0] != t || got[1] != i)
        bad[t]++;
}

/* Duplicates of MPI_COMM_SELF back to back until every other thread is
 * done (they must not starve the others' agreements), each checked. */
static void *self_dupper(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm keep[4] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    for (int i = 0; i < ITERS || atomic_load(&world_left) > 0; i++) {
        MPI_Comm *c = &keep[i % 4];
        if (*c != MPI_COMM_NULL)
            MPI_Comm_free(c);
        MPI_Comm_dup(MPI_COMM_SELF, c);
        if (i % 16 == 0)
            ring(*c, t, i);
    }
    for (int k = 0; k < 4; k++)
        MPI_Comm_free(&keep[k]);
    return NULL;
}

static void *world_dupper(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < ITERS; i++) {
        MPI_Comm c, s;
        MPI_Comm_dup(parents[t], &c);
        ring(c, t, i);
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
        if (sum != wsize)
            bad[t]++;
        if (t % 2) {  /* odd threads also split what they made */
            MPI_Comm_split(c, wrank % 2, -wrank, &s);
            ring(s, t, i);
            MPI_Comm_free(&s);
        }
        MPI_Comm_free(&c);
    }
    atomic_fetch_sub(&world_left, 1);
    return NULL;
}

static MPI_Comm zcomm, xcomm;
static int asym_bad;

static void *even_self_then_z(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_SELF, &c);
        int in = i, out = -1;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, zcomm);
        if (out != i)
            asym_bad++;
        MPI_Comm_free(&c);
    }
    return NULL;
}

static void x_dup(int i)
{
    MPI_Comm c;
    MPI_Comm_dup(xcomm, &c);
    int in = wrank + i, out = -1;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, c);
    if (out != wsize * (wsize - 1) / 2 + wsize * i)
        asym_bad++;
    MPI_Comm_free(&c);
}

static void *even_x(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        x_dup(i);
    return NULL;
}

static void asymmetric(void)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &zcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &xcomm);
    if (wrank % 2 == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, even_self_then_z, NULL);
        pthread_create(&b, NULL, even_x, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else {
        for (int i = 0; i < ITERS; i++) {
            int in = i, out = -1;
            MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, zcomm);
            if (out != i)
                asym_bad++;
            x_dup(i);
        }
    }
    CHECK(asym_bad == 0, "asymmetric threads: %d bad results", asym_bad);
    MPI_Comm_free(&xcomm);
    MPI_Comm_free(&zcomm);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    /* thread 1 duplicates MPI_COMM_WORLD itself, 2 and 3 duplicates of it */
    parents[1] = MPI_COMM_WORLD;
    for (int t = 2; t < NTHREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, t == 0 ? self_dupper : world_dupper, (void *)(long)t);
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(bad[t] == 0, "thread %d: %d bad results", t, bad[t]);
    }
    for (int t = 2; t < NTHREADS; t++)
        MPI_Comm_free(&parents[t]);
    asymmetric();
    int r = check_summary("t_comm_threads");
    MPI_Finalize();
    return r;
}
