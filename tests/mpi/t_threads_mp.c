/*
 * MPI_THREAD_MULTIPLE between two processes: 8 threads per rank exchange
 * messages with the same-numbered thread of the other rank on their own
 * tag, both directions at once, each checking order and content; then 8
 * senders against 8 receivers using MPI_ANY_TAG, counting every message
 * exactly once.
 *
 * Bounded time: each phase runs up to its full count (what a fast machine
 * does) but stops early once its time budget is spent, after at least a
 * minimum count, so the test finishes in seconds on two busy cores and over
 * TCP without a progress thread.  Every message that was sent is checked.
 * The two sides of a pair agree when to stop: each exchange carries the
 * sender's "my budget is spent" flag, and both stop after the first
 * exchange in which either flag was set.  The wildcard receivers stop on
 * end messages that rank 0 sends after all its senders finished; they carry
 * how many each sender sent, and because a receive takes the earliest
 * matching message (non-overtaking), every data message is received before
 * any end message.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_mpi.h"

enum {
    THREADS = 8,
    PER = 3000, PER_MIN = 200,    /* exchanges per thread pair */
    WILD = 2000, WILD_MIN = 200,  /* wildcard messages per sender */
    TAG_END = 99, TAG_WILD = 100,
};
static const double PAIRS_BUDGET = 3.0, WILD_BUDGET = 2.0;  /* seconds */

static int rank, peer;
static int errors[THREADS];
static int done[THREADS];  /* exchanges (pairs) or messages (wildcard) per thread */
static double deadline;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *pairs(void *arg)
{
    int t = (int)(long)arg;
    int i = 0;
    for (bool stop = false; i < PER && !stop; i++) {
        int out[4] = {rank, t, i, i + 1 >= PER_MIN && now() > deadline};
        int in[4] = {-1, -1, -1, -1};
        MPI_Request r[2];
        MPI_Irecv(in, 4, MPI_INT, peer, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 4, MPI_INT, peer, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (in[0] != peer || in[1] != t || in[2] != i || (in[3] != 0 && in[3] != 1))
            errors[t]++;
        stop = out[3] || in[3] == 1;
    }
    done[t] = i;
    return NULL;
}

static int seen[THREADS][WILD];
static int sent_count[THREADS];  /* rank 1: from the end messages */
static int end_counts[THREADS][THREADS];  /* ... as each receiving thread got them */

static void *wild_send(void *arg)
{
    int t = (int)(long)arg;
    int i = 0;
    while (i < WILD && !(i >= WILD_MIN && now() > deadline)) {
        int out[2] = {t, i};
        MPI_Send(out, 2, MPI_INT, peer, TAG_WILD + t, MPI_COMM_WORLD);
        i++;
    }
    done[t] = i;
    return NULL;
}

static void *wild_recv(void *arg)
{
    int t = (int)(long)arg;
    for (;;) {
        int in[THREADS];
        MPI_Status st;
        MPI_Recv(in, THREADS, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_END) {
            memcpy(end_counts[t], in, sizeof end_counts[t]);  /* each thread its own copy */
            break;
        }
        if (in[0] < 0 || in[0] >= THREADS || in[1] < 0 || in[1] >= WILD ||
            st.MPI_TAG != TAG_WILD + in[0])
            errors[t]++;
        else
            __atomic_fetch_add(&seen[in[0]][in[1]], 1, __ATOMIC_RELAXED);
        done[t]++;
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, fn, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    double t0 = now();
    deadline = t0 + PAIRS_BUDGET;
    run_threads(pairs);
    int bad = 0, fewest = PER, total = 0;
    for (int t = 0; t < THREADS; t++) {
        bad += errors[t], errors[t] = 0;
        fewest = done[t] < fewest ? done[t] : fewest;
        total += done[t];
    }
    CHECK(bad == 0 && fewest >= PER_MIN, "rank %d: %d threads x %d-%d exchanges on own tags "
          "(%d in all): %d wrong", rank, THREADS, PER_MIN, PER, total, bad);
    double t1 = now();

    memset(done, 0, sizeof done);
    deadline = t1 + WILD_BUDGET;
    run_threads(rank == 0 ? wild_send : wild_recv);
    if (rank == 0) {
        /* one end message per receiver thread, after every data message */
        for (int t = 0; t < THREADS; t++)
            MPI_Send(done, THREADS, MPI_INT, peer, TAG_END, MPI_COMM_WORLD);
    } else {
        /* every end message says the same: a thread whose copy differs is
         * counted as malformed */
        memcpy(sent_count, end_counts[0], sizeof sent_count);
        for (int t = 1; t < THREADS; t++)
            bad += memcmp(end_counts[t], sent_count, sizeof sent_count) != 0;
        int lost = 0, dup = 0, extra = 0, sent = 0, received = 0;
        for (int t = 0; t < THREADS; t++) {
            bad += errors[t];
            sent += sent_count[t];
            received += done[t];
            for (int i = 0; i < WILD; i++) {
                int want = i < sent_count[t];
                lost += want && seen[t][i] == 0;
                dup += seen[t][i] > 1;
                extra += !want && seen[t][i] > 0;
            }
        }
        int fewest_sent = WILD;
        for (int t = 0; t < THREADS; t++)
            fewest_sent = sent_count[t] < fewest_sent ? sent_count[t] : fewest_sent;
        CHECK(bad == 0 && lost == 0 && dup == 0 && extra == 0 && received == sent &&
              fewest_sent >= WILD_MIN, "wildcard receivers: %d of %d messages received, %d "
              "malformed, %d lost, %d duplicated, %d never sent (fewest from one sender: %d)",
              received, sent, bad, lost, dup, extra, fewest_sent);
    }
    int x = 0;
    MPI_Sendrecv_replace(&x, 1, MPI_INT, peer, 7, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("t_threads_mp[%d]: exchanges %.2f s (%d), wildcard %.2f s\n", rank, t1 - t0, total,
           now() - t1);
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_threads_mp[%d]", rank);
    return check_summary(name);
}
