/*
 * MPI_THREAD_MULTIPLE on the self path: 8 threads each exchange messages
 * with themselves on their own tag (blocking and nonblocking), then 8
 * senders feed 8 receivers that use MPI_ANY_TAG / MPI_ANY_SOURCE.  Every
 * message carries (sender thread, sequence); none may be lost, duplicated
 * or reordered.
 *
 * Order with wildcard receivers: each sender thread sends its messages in
 * sequence on one tag, so MPI's non-overtaking rule applies to them (same
 * communicator, source and tag, sent by one thread).  A receive that could
 * match two of them must take the earlier one; so once a receiver thread
 * got message i of a sender, every earlier message of that sender has been
 * matched already (by some receiver), and a later receive of the same
 * thread can only get a message after i.  Each receiver checks that the
 * sequence numbers it gets from each sender rise.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>

#include "check_mpi.h"

enum { THREADS = 8, PER_THREAD = 4000 };

static int bad_order[THREADS];

static void *own_tag(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        int out[2] = {t, i}, in[2] = {-1, -1};
        MPI_Request r[2];
        MPI_Irecv(in, 2, MPI_INT, 0, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 2, MPI_INT, 0, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (in[0] != t || in[1] != i)
            bad_order[t]++;
    }
    return NULL;
}

static int seen[THREADS][PER_THREAD];

static void *sender(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        int out[2] = {t, i};
        MPI_Send(out, 2, MPI_INT, 0, 1000 + t, MPI_COMM_SELF);
    }
    return NULL;
}

static int malformed[THREADS], reordered[THREADS];  /* per receiver thread */

static void *wild_receiver(void *arg)
{
    int r = (int)(long)arg;
    int last[THREADS];  /* per sender: the sequence number received last, -1: none */
    for (int t = 0; t < THREADS; t++)
        last[t] = -1;
    for (int i = 0; i < PER_THREAD; i++) {
        int in[2];
        MPI_Status st;
        MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &st);
        if (in[0] < 0 || in[0] >= THREADS || in[1] < 0 || in[1] >= PER_THREAD ||
            st.MPI_TAG != 1000 + in[0]) {
            malformed[r]++;
            continue;
        }
        if (in[1] <= last[in[0]]) {
            if (reordered[r]++ == 0)
                fprintf(stderr, "receiver %d: message %d of sender %d came after its message "
                        "%d\n", r, in[1], in[0], last[in[0]]);
        }
        last[in[0]] = in[1];
        __atomic_fetch_add(&seen[in[0]][in[1]], 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    pthread_t th[2 * THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, own_tag, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    int bad = 0;
    for (int t = 0; t < THREADS; t++)
        bad += bad_order[t];
    CHECK(bad == 0, "own tags: %d of %d messages wrong", bad, THREADS * PER_THREAD);

    for (long t = 0; t < THREADS; t++) {
        pthread_create(&th[t], NULL, sender, (void *)t);
        pthread_create(&th[THREADS + t], NULL, wild_receiver, (void *)t);
    }
    for (int t = 0; t < 2 * THREADS; t++)
        pthread_join(th[t], NULL);
    int lost = 0, dup = 0, wrong = 0, late = 0;
    for (int t = 0; t < THREADS; t++) {
        wrong += malformed[t];
        late += reordered[t];
        for (int i = 0; i < PER_THREAD; i++) {
            lost += seen[t][i] == 0;
            dup += seen[t][i] > 1;
        }
    }
    CHECK(wrong == 0 && lost == 0 && dup == 0,
          "wildcards: %d malformed, %d lost, %d duplicated of %d", wrong, lost, dup,
          THREADS * PER_THREAD);
    CHECK(late == 0, "wildcards: %d messages came after a later one of the same sender "
          "(non-overtaking)", late);
    MPI_Finalize();
    return check_summary("t_p2p_threads");
}
