/*
 * Point-to-point between processes (run through mpirun on 2..4 ranks):
 * ping-pong of every size across the eager/rendezvous boundary with data
 * checked both ways, an empty message with no buffer, Ssend, Bsend, persistent requests, MPI_ANY_SOURCE from
 * every other rank, per-sender ordering (also past a full channel: blocking
 * sends written at once, then queued), probe, truncation of a rendezvous
 * message, cancel of an unmatched receive, and derived datatypes.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

static int same(const unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed * 131 + i * 7 + (i >> 8)))
            return 0;
    return 1;
}

static void pingpong(void)
{
    /* 40 and 41 bytes: the last message a shared-memory cell carries in
     * its short form (one cache line) and the first in the long form */
    static const size_t sizes[] = {0, 1, 8, 16, 32, 40, 41, 100, 4096, 8191, 8192, 8193, 16384,
                                   65536, 1 << 20, 5 << 20};
    unsigned char *s = malloc(5 << 20), *r = malloc(5 << 20);
    int bad = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (int peer = 1; peer < size; peer++) {
            if (rank == 0) {
                fill(s, n, (unsigned)(k + peer));
                MPI_Send(s, (int)n, MPI_BYTE, peer, (int)k, MPI_COMM_WORLD);
                memset(r, 0, n);
                MPI_Status st;
                MPI_Recv(r, (int)n, MPI_BYTE, peer, (int)k, MPI_COMM_WORLD, &st);
                int c;
                MPI_Get_count(&st, MPI_BYTE, &c);
                bad += !same(r, n, (unsigned)(k + peer + 1)) || c != (int)n || st.MPI_SOURCE != peer;
            } else if (rank == peer) {
                memset(r, 0, n);
                MPI_Recv(r, (int)n, MPI_BYTE, 0, (int)k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad += !same(r, n, (unsigned)(k + peer));
                fill(s, n, (unsigned)(k + peer + 1));
                MPI_Send(s, (int)n, MPI_BYTE, 0, (int)k, MPI_COMM_WORLD);
            }
        }
    }
    CHECK(bad == 0, "rank %d: ping-pong of 16 sizes (0 B .. 5 MiB): %d bad", rank, bad);
    free(s);
    free(r);
    /* An empty message with no buffer at all (written at once, as a
     * barrier's are): it arrives with its tag and a count of 0. */
    for (int peer = 1; peer < size; peer++) {
        MPI_Status st = {0};
        int c = -1;
        if (rank == 0) {
            MPI_Send(NULL, 0, MPI_INT, peer, 77, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_INT, peer, 78, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &c);
            CHECK(c == 0 && st.MPI_TAG == 78 && st.MPI_SOURCE == peer,
                  "rank 0: empty message from %d: count %d tag %d source %d", peer, c, st.MPI_TAG,
                  st.MPI_SOURCE);
        } else if (rank == peer) {
            MPI_Recv(NULL, 0, MPI_INT, 0, 77, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &c);
            CHECK(c == 0 && st.MPI_TAG == 77 && st.MPI_SOURCE == 0,
                  "rank %d: empty message from 0: count %d tag %d source %d", rank, c, st.MPI_TAG,
                  st.MPI_SOURCE);
            MPI_Send(NULL, 0, MPI_INT, 0, 78, MPI_COMM_WORLD);
        }
    }
}

/* "long": 500 round trips of 1 MiB between ranks 0 and 1, data checked,
 * long enough (tens of ms) for the shm transport's choice between CMA and
 * the rings to take each way more than once (its probes come every 5 ms).
 * A split copy needs the receiver to count no rendezvous sends of its own
 * outstanding, so the test's check that split copies go on after the
 * first message through the rings finds a count that a ring transfer
 * left behind. */
static void long_pingpong(void)
{
    const size_t n = 1 << 20;
    unsigned char *s = malloc(n), *r = malloc(n);
    int bad = 0;
    for (int i = 0; i < 500 && rank < 2; i++) {
        int other = 1 - rank;
        if (rank == 0) {
            fill(s, n, (unsigned)i);
            MPI_Send(s, (int)n, MPI_BYTE, other, 7, MPI_COMM_WORLD);
            MPI_Recv(r, (int)n, MPI_BYTE, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += !same(r, n, (unsigned)i + 1);
        } else {
            MPI_Recv(r, (int)n, MPI_BYTE, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += !same(r, n, (unsigned)i);
            fill(s, n, (unsigned)i + 1);
            MPI_Send(s, (int)n, MPI_BYTE, other, 7, MPI_COMM_WORLD);
        }
    }
    CHECK(bad == 0, "rank %d: 500 round trips of 1 MiB: %d bad", rank, bad);
    free(s);
    free(r);
}

static void any_source_and_order(void)
{
    enum { PER = 300 };
    if (rank == 0) {
        int last[8], bad = 0;
        for (int i = 0; i < 8; i++)
            last[i] = -1;
        for (int i = 0; i < PER * (size - 1); i++) {
            int v[2];
            MPI_Status st;
            MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (v[0] != st.MPI_SOURCE || v[1] != last[v[0]] + 1 || st.MPI_TAG != v[1] % 5) {
                bad++;
                fprintf(stderr, "bad: i=%d v={%d,%d} src %d tag %d last %d\n", i, v[0], v[1], st.MPI_SOURCE, st.MPI_TAG, v[0] >= 0 && v[0] < 8 ? last[v[0]] : -9);
            }
            last[v[0]] = v[1];
        }
        CHECK(bad == 0, "ANY_SOURCE/ANY_TAG: %d messages from %d senders, each sender in order "
              "(%d bad)", PER * (size - 1), size - 1, bad);
        for (int p = 1; p < size; p++)  /* nobody sends more before rank 0 is done */
            MPI_Send(&bad, 1, MPI_INT, p, 98, MPI_COMM_WORLD);
    } else {
        for (int i = 0; i < PER; i++) {
            int v[2] = {rank, i};
            if (i % 3 == 0)
                MPI_Ssend(v, 2, MPI_INT, 0, i % 5, MPI_COMM_WORLD);
            else
                MPI_Send(v, 2, MPI_INT, 0, i % 5, MPI_COMM_WORLD);
        }
        int go;
        MPI_Recv(&go, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

enum { FLOOD_MAX = 3000 };

/* Rank 1 sends n messages to a rank 0 that is busy for 20 ms: nb MPI_Isend
 * (the channel fills and the rest queue), then, after 100 ms without MPI
 * calls (rank 0 has emptied the channel meanwhile; with no progress thread
 * the queue is still there), n - nb blocking MPI_Send, which must not overtake the
 * queued ones (a blocking send goes straight into the channel, with no
 * request, only when nothing is queued) -- every message arrives, in
 * order, intact. */
static void flood_order(int nb, int n)
{
    if (rank == 1) {
        static int v[FLOOD_MAX][2];
        static MPI_Request rq[FLOOD_MAX];
        for (int i = 0; i < n; i++) {
            v[i][0] = i;
            v[i][1] = i * 7 + 3;
            if (i < nb) {
                MPI_Isend(v[i], 2, MPI_INT, 0, 7, MPI_COMM_WORLD, &rq[i]);
                continue;
            }
            if (i == nb) {
                double t0 = MPI_Wtime();
                while (MPI_Wtime() - t0 < 0.1)
                    ;
            }
            MPI_Send(v[i], 2, MPI_INT, 0, 7, MPI_COMM_WORLD);
        }
        MPI_Waitall(nb, rq, MPI_STATUSES_IGNORE);
    } else if (rank == 0) {
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.02)
            ;
        int bad = 0;
        for (int i = 0; i < n; i++) {
            int v[2] = {-1, -1};
            MPI_Recv(v, 2, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += v[0] != i || v[1] != i * 7 + 3;
        }
        CHECK(bad == 0, "%d nonblocking then %d blocking sends past a full channel arrived in "
              "order and intact (%d bad)", nb, n - nb, bad);
    }
}

/* A derived type across processes, rounds times: packed into one cell's
 * short form (40 bytes), its long form (44), and rendezvous-sized (a
 * staging copy packed for the transport to read whole). */
static void strided_vectors(int rounds)
{
    if (rank > 1)
        return;
    static const int counts[] = {10, 11, 20000};
    for (int k = 0; k < 3 * rounds; k++) {
        MPI_Datatype vec;
        int m = counts[k % 3];
        MPI_Type_vector(m, 1, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int *v = calloc(3 * m, sizeof(int));
        if (rank == 0) {
            for (int i = 0; i < 3 * m; i++)
                v[i] = i;
            MPI_Send(v, 1, vec, 1, 14 + k % 3, MPI_COMM_WORLD);
        } else {
            MPI_Recv(v, 1, vec, 0, 14 + k % 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int ok = 1;
            for (int i = 0; i < 3 * m; i++)
                ok &= v[i] == (i % 3 ? 0 : i);
            CHECK(ok, "strided vector of %d ints between processes", m);
        }
        MPI_Type_free(&vec);
        free(v);
    }
}

/* rounds windows of W messages (8 and BIG bytes, alternating) that rank 0
 * receives only after they all arrived (a zero-byte message sent last,
 * probed for), so every one is copied as unexpected; rank 0's answer
 * starts the next window.  Data and order checked. */
static void unexpected_windows(int rounds, int W, int BIG)
{
    char(*buf)[BIG] = malloc((size_t)W * (size_t)BIG);
    char *got = malloc((size_t)BIG);
    MPI_Request rq[64];
    int bad = 0;
    for (int r = 0; r < rounds && size > 1; r++) {
        if (rank == 1) {
            for (int w = 0; w < W; w++) {
                memset(buf[w], (char)(r + w), BIG);
                MPI_Isend(buf[w], w % 2 ? BIG : 8, MPI_BYTE, 0, 31, MPI_COMM_WORLD, &rq[w]);
            }
            /* behind the window (a rendezvous send completes only once
             * received: waited for after) */
            MPI_Send(NULL, 0, MPI_BYTE, 0, 32, MPI_COMM_WORLD);
            MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            MPI_Status st;
            MPI_Probe(1, 32, MPI_COMM_WORLD, &st);  /* the window is all here */
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int w = 0; w < W; w++) {
                int n;
                MPI_Recv(got, BIG, MPI_BYTE, 1, 31, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &n);
                bad += n != (w % 2 ? BIG : 8) || got[0] != (char)(r + w) || got[n - 1] != (char)(r + w);
            }
            MPI_Send(NULL, 0, MPI_BYTE, 1, 33, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        CHECK(bad == 0, "%d windows of %d unexpected messages of up to %d bytes arrived in order "
              "and intact (%d bad)", rounds, W, BIG, bad);
    free(buf);
    free(got);
}

static void modes_and_persistent(void)
{
    int peer = rank == 0 ? 1 : 0;
    if (rank > 1)
        return;
    char bbuf[4096];
    MPI_Buffer_attach(bbuf, sizeof bbuf);
    int x = rank * 100, y = -1;
    MPI_Request rq[2];
    MPI_Send_init(&x, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(&y, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &rq[1]);
    int bad = 0;
    for (int i = 0; i < 100; i++) {
        x = rank * 100 + i;
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        bad += y != peer * 100 + i;
    }
    CHECK(bad == 0, "rank %d: 100 rounds of persistent send/recv", rank);
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    MPI_Bsend(&x, 1, MPI_INT, peer, 10, MPI_COMM_WORLD);
    MPI_Recv(&y, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(y == peer * 100 + 99, "rank %d: bsend", rank);
    void *p;
    int sz;
    MPI_Buffer_detach(&p, &sz);

    /* probe, then truncation of a rendezvous message */
    int n = 1 << 18;
    int *big = malloc(n * sizeof(int));
    if (rank == 0) {
        for (int i = 0; i < n; i++)
            big[i] = i;
        MPI_Send(big, n, MPI_INT, 1, 11, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        MPI_Probe(0, 11, MPI_COMM_WORLD, &st);
        int c;
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(c == n, "probe of a rendezvous message: count %d", c);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        memset(big, 0, n * sizeof(int));
        int rc = MPI_Recv(big, n / 2, MPI_INT, 0, 11, MPI_COMM_WORLD, &st);
        int cls;
        MPI_Error_class(rc, &cls);
        int ok = 1;
        for (int i = 0; i < n / 2; i++)
            ok &= big[i] == i;
        CHECK(cls == MPI_ERR_TRUNCATE && ok && big[n / 2] == 0, "rendezvous truncation: class %d, "
              "the first half delivered", cls);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    free(big);
    /* cancel an unmatched receive; the message goes to the next one */
    if (rank == 1) {
        MPI_Request r;
        MPI_Irecv(&y, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Status st;
        MPI_Wait(&r, &st);
        int flag;
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag, "cancelled receive");
        MPI_Send(&x, 1, MPI_INT, 0, 13, MPI_COMM_WORLD);
        MPI_Recv(&y, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == 77, "the next receive gets the message (%d)", y);
    } else {
        MPI_Recv(&y, 1, MPI_INT, 1, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        x = 77;
        MPI_Send(&x, 1, MPI_INT, 1, 12, MPI_COMM_WORLD);
    }
    /* cancel sends nobody receives: a synchronous eager one and a rendezvous one */
    if (rank == 0) {
        int small = 5;
        char *large = calloc(1 << 20, 1);
        MPI_Request r[2];
        MPI_Status st[2];
        MPI_Issend(&small, 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(large, 1 << 20, MPI_BYTE, 1, 21, MPI_COMM_WORLD, &r[1]);
        MPI_Cancel(&r[0]);
        MPI_Cancel(&r[1]);
        MPI_Waitall(2, r, st);
        int f0, f1;
        MPI_Test_cancelled(&st[0], &f0);
        MPI_Test_cancelled(&st[1], &f1);
        CHECK(f0 && f1, "unmatched Issend (eager) and Isend (rendezvous) to another process are "
              "cancelled (%d, %d)", f0, f1);
        MPI_Send(&small, 1, MPI_INT, 1, 22, MPI_COMM_WORLD);
        free(large);
    } else {
        int flag = 1, z;
        MPI_Recv(&z, 1, MPI_INT, 0, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Iprobe(0, 20, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        int flag2 = 1;
        MPI_Iprobe(0, 21, MPI_COMM_WORLD, &flag2, MPI_STATUS_IGNORE);
        CHECK(!flag && !flag2, "the cancelled messages are gone at the receiver");
    }
    /* a cancel names its message, not its request: each eager send below is
     * complete and freed before the Issend after it, which may take the same
     * request memory, while its message still waits at the receiver */
    enum { ROUNDS = 8 };
    static int sent[ROUNDS];  /* alive until received (rendezvous when eager is off) */
    if (rank == 0) {
        int cancelled = 0;
        for (int i = 0; i < ROUNDS; i++) {
            MPI_Request r;
            MPI_Status st;
            sent[i] = 100 + i;
            MPI_Isend(&sent[i], 1, MPI_INT, 1, 23, MPI_COMM_WORLD, &r);
            MPI_Request_free(&r);
            MPI_Issend(&sent[i], 1, MPI_INT, 1, 24, MPI_COMM_WORLD, &r);
            MPI_Cancel(&r);
            MPI_Wait(&r, &st);
            int f;
            MPI_Test_cancelled(&st, &f);
            cancelled += f;
        }
        CHECK(cancelled == ROUNDS, "every unmatched Issend is cancelled (%d of %d)", cancelled,
              ROUNDS);
        MPI_Send(sent, 1, MPI_INT, 1, 22, MPI_COMM_WORLD);
    } else {
        int z, got = 0, flag = 1;
        MPI_Recv(&z, 1, MPI_INT, 0, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < ROUNDS; i++) {
            MPI_Iprobe(0, 23, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (!flag)
                break;
            MPI_Recv(&z, 1, MPI_INT, 0, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got += z == 100 + i;
        }
        MPI_Iprobe(0, 24, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(got == ROUNDS && !flag, "the eager messages all arrive in order (%d of %d) and "
              "the cancelled ones do not", got, ROUNDS);
    }
    strided_vectors(1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "long") == 0) {
        long_pingpong();
    } else if (argc > 1 && strcmp(argv[1], "unexpected") == 0) {
        unexpected_windows(200, 64, 1000);  /* their copies are reused (tests/mpi/meson.build) */
    } else if (argc > 1 && strcmp(argv[1], "unexpected-large") == 0) {
        unexpected_windows(100, 16, 40000);  /* TCP's eager messages above 16 KiB too */
    } else if (argc > 1 && strcmp(argv[1], "strided") == 0) {
        strided_vectors(30);  /* the staging copies are reused (tests/mpi/meson.build) */
    } else if (argc > 1 && strcmp(argv[1], "flood") == 0) {
        /* 3,000 MPI_Isend past a full channel, ten times: the queue for
         * ring space grows to thousands of items each time (its items are
         * reused: the test's report line, tests/mpi/meson.build) */
        for (int round = 0; round < 10; round++)
            flood_order(FLOOD_MAX, FLOOD_MAX);
    } else {
        pingpong();
        any_source_and_order();
        flood_order(200, 1000);
        modes_and_persistent();
    }
    /* everyone done before anyone finalizes (no barrier yet: a ring of messages) */
    int t = 0;
    if (size > 1) {
        MPI_Sendrecv_replace(&t, 1, MPI_INT, (rank + 1) % size, 99, (rank + size - 1) % size, 99,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_pingpong[%d]", rank);
    return check_summary(name);
}
