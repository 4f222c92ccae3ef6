/*
 * MPIX streams and stream communicators, linked with the library's
 * internals to check which progress context a communicator uses.  Run
 * with CADENCE_PROGRESS_CONTEXTS=5 (four contexts for streams).
 *
 *   t_stream basic        creation up to the limit and the error past it,
 *                         offload types refused, MPIX_Info_set_hex,
 *                         MPIX_Comm_get_stream, a stream communicator's
 *                         context, point-to-point (with probe), collectives
 *                         and a dup on it, ranks attaching a stream or not,
 *                         freeing order, MPIX_Stream_progress,
 *                         MPIX_Start/Stop_progress_thread
 *   t_stream multiplex K  a multiplexed stream communicator of K streams:
 *                         MPIX_Stream_send/recv with specific and wildcard
 *                         stream indices and tags, MPIX_Comm_get_stream,
 *                         the regular calls on it, errors, and K threads,
 *                         each with its stream, receiving from any stream
 *   t_stream enqueue      (2 ranks) a "cadence_host_queue" stream: every
 *                         enqueue call, MPI_Send/MPI_Recv enqueued, queue
 *                         order, MPIX_Stream_synchronize, errors
 *   t_stream checks       (CADENCE_STREAM_CHECKS=1) a call on a stream
 *                         communicator while another thread is inside one
 *                         is an error
 *   t_stream threads N    N threads per rank, each with a stream and a
 *                         stream communicator of its own, ping-pong their
 *                         thread of the other ranks (ring), data checked
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"
#include "progress/request.h"
#include "runtime/comm.h"
#include "runtime/stream.h"

static int rank, size;

static int ctx_of(MPI_Comm c)
{
    struct cdn_comm *cm = cdn_comm_lookup(c);
    return cm != NULL ? cm->pctx : -1;  /* (none: an earlier check failed) */
}

static int stream_ctx(MPIX_Stream s)
{
    struct cdn_stream *st = cdn_stream_get(s);
    return st != NULL ? st->pctx : -1;
}

static bool message_names(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    return strstr(msg, what) != NULL;
}

/* p2p around the ring, a probe, an allreduce and a bcast on c */
static void exercise(MPI_Comm c, const char *what)
{
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int out[1000], in[1000], bad = 0;
    for (int i = 0; i < 1000; i++)
        out[i] = rank * 1000 + i;
    MPI_Request r;
    MPI_Irecv(in, 1000, MPI_INT, from, 5, c, &r);
    MPI_Send(out, 1000, MPI_INT, to, 5, c);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < 1000; i++)
        bad += in[i] != from * 1000 + i;
    MPI_Status st;
    MPI_Send(out, 10, MPI_INT, to, 6, c);
    MPI_Probe(from, 6, c, &st);
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    MPI_Recv(in, count, MPI_INT, from, 6, c, MPI_STATUS_IGNORE);
    bad += count != 10 || in[9] != from * 1000 + 9;
    int sum = 0, one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    bad += sum != size * (size + 1) / 2;
    int root = size - 1, v = rank == root ? 4242 : 0;
    MPI_Bcast(&v, 1, MPI_INT, root, c);
    bad += v != 4242;
    CHECK(bad == 0, "%s: %d wrong", what, bad);
}

static void test_basic(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* up to the limit, and a clear error past it */
    MPIX_Stream s[8];
    int made = 0, rc = MPI_SUCCESS;
    while (made < 8 && (rc = MPIX_Stream_create(MPI_INFO_NULL, &s[made])) == MPI_SUCCESS)
        made++;
    CHECK(made == 4 && check_class(rc) == MPI_ERR_OTHER &&
              message_names(rc, "CADENCE_PROGRESS_CONTEXTS=5"),
          "streams: %d made before the error (class %d), expected 4 with "
          "CADENCE_PROGRESS_CONTEXTS=5 named", made, check_class(rc));
    int seen = 0;
    for (int i = 0; i < made; i++)
        seen |= 1 << stream_ctx(s[i]);
    CHECK(seen == 0x1e, "streams own contexts mask 0x%x, expected 1-4", seen);
    for (int i = 0; i < made; i++)
        MPIX_Stream_free(&s[i]);
    CHECK(s[0] == MPIX_STREAM_NULL, "a freed stream's handle is MPIX_STREAM_NULL");
    EXPECT(MPIX_Stream_free(&s[0]), MPI_ERR_ARG, "freeing MPIX_STREAM_NULL");
    /* offload types are refused, saying so */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Stream bad;
    rc = MPIX_Stream_create(info, &bad);
    CHECK(check_class(rc) == MPI_ERR_UNSUPPORTED_OPERATION && message_names(rc, "cudaStream_t"),
          "an offload stream: class %d", check_class(rc));
    /* MPIX_Info_set_hex: the bytes in memory order, two digits each */
    unsigned char bytes[3] = {0x01, 0xab, 0xff};
    MPIX_Info_set_hex(info, "value", bytes, 3);
    char v[64];
    int len = sizeof v, flag = 0;
    MPI_Info_get_string(info, "value", &len, v, &flag);
    CHECK(flag && strcmp(v, "01abff") == 0, "MPIX_Info_set_hex: \"%s\"", v);
    MPI_Info_free(&info);
    /* a stream communicator uses its stream's context */
    MPIX_Stream st;
    MPIX_Stream_create(MPI_INFO_NULL, &st);
    MPI_Comm sc;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &sc);
    MPIX_Stream got = MPIX_STREAM_NULL, none = 1;
    MPIX_Comm_get_stream(sc, 0, &got);
    MPIX_Comm_get_stream(MPI_COMM_WORLD, 0, &none);
    CHECK(got == st && none == MPIX_STREAM_NULL, "MPIX_Comm_get_stream: 0x%x (stream 0x%x), "
          "world 0x%x", (unsigned)got, (unsigned)st, (unsigned)none);
    EXPECT(MPIX_Comm_get_stream(sc, 1, &got), MPI_ERR_ARG, "stream index 1");
    CHECK(ctx_of(sc) == stream_ctx(st) && ctx_of(sc) != 0,
          "stream communicator in context %d, its stream's %d", ctx_of(sc), stream_ctx(st));
    exercise(sc, "stream communicator");
    /* its duplicate uses the stream too */
    MPI_Comm dup;
    MPI_Comm_dup(sc, &dup);
    MPIX_Comm_get_stream(dup, 0, &got);
    CHECK(got == st && ctx_of(dup) == stream_ctx(st), "dup of a stream communicator: stream "
          "0x%x, context %d", (unsigned)got, ctx_of(dup));
    exercise(dup, "dup of a stream communicator");
    EXPECT(MPIX_Stream_free(&st), MPI_ERR_OTHER, "freeing a stream still attached");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&sc);
    /* even ranks attach a stream, odd ones none */
    MPI_Comm mixed;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, rank % 2 == 0 ? st : MPIX_STREAM_NULL, &mixed);
    CHECK((rank % 2 == 0) == (ctx_of(mixed) != 0), "mixed: rank %d in context %d", rank,
          ctx_of(mixed));
    exercise(mixed, "mixed stream communicator");
    /* MPIX_Stream_progress drives the stream's context: a receive on it
     * completes by those polls alone (run with the progress thread off) */
    if (size >= 2 && rank < 2) {
        int x = 0, y = 77;
        if (rank == 0) {
            MPI_Request r;
            MPI_Irecv(&x, 1, MPI_INT, 1, 9, mixed, &r);
            MPI_Barrier(MPI_COMM_WORLD);
            struct cdn_request *rq = cdn_request_get(r);
            long polls = 0;
            while (!cdn_request_done(rq) && polls < 100000000) {
                MPIX_Stream_progress(rank % 2 == 0 ? st : MPIX_STREAM_NULL);
                polls++;
            }
            CHECK(cdn_request_done(rq), "MPIX_Stream_progress: the receive never completed");
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(x == 77, "MPIX_Stream_progress: received %d", x);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(&y, 1, MPI_INT, 0, 9, mixed);
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* MPIX_Start_progress_thread: a receive on the stream completes while
     * this thread only looks at it (run with the progress thread off too) */
    if (size >= 2 && rank < 2) {
        int x = 0, y = 78;
        if (rank == 0) {
            CHECK(MPIX_Start_progress_thread(st) == MPI_SUCCESS, "MPIX_Start_progress_thread");
            EXPECT(MPIX_Start_progress_thread(st), MPI_ERR_OTHER, "a second progress thread");
            EXPECT(MPIX_Stream_free(&st), MPI_ERR_OTHER, "freeing a stream with a progress "
                   "thread");
            MPI_Request r;
            MPI_Irecv(&x, 1, MPI_INT, 1, 10, mixed, &r);
            MPI_Barrier(MPI_COMM_WORLD);
            struct cdn_request *rq = cdn_request_get(r);
            for (long i = 0; i < 20000 && !cdn_request_done(rq); i++)
                usleep(100);
            CHECK(cdn_request_done(rq), "the stream's progress thread completed the receive");
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(x == 78 && MPIX_Stop_progress_thread(st) == MPI_SUCCESS,
                  "received %d; MPIX_Stop_progress_thread", x);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(&y, 1, MPI_INT, 0, 10, mixed);
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    EXPECT(MPIX_Stop_progress_thread(st), MPI_ERR_OTHER, "stopping a thread never started");
    CHECK(MPIX_Start_progress_thread(MPIX_STREAM_NULL) == MPI_SUCCESS &&
              MPIX_Stop_progress_thread(MPIX_STREAM_NULL) == MPI_SUCCESS,
          "a progress thread for MPIX_STREAM_NULL");
    MPI_Comm_free(&mixed);
    CHECK(MPIX_Stream_free(&st) == MPI_SUCCESS, "freeing a stream once its communicators are "
          "freed");
    EXPECT(MPIX_Stream_comm_create(MPI_COMM_WORLD, 12345, &mixed), MPI_ERR_ARG,
           "a bad stream handle");
}

/* ---- threads ---- */

struct targ {
    MPI_Comm comm;
    int k, iters;
    long bad;
};

static void *pingpong(void *p)
{
    struct targ *t = p;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    enum { N = 2048 };
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    for (int it = 0; it < t->iters; it++) {
        int n = it % 2 ? N : 8;
        for (int i = 0; i < n; i++)
            out[i] = (t->k * 7919 + it) * 31 + rank + i;
        MPI_Request r;
        MPI_Irecv(in, n, MPI_INT, from, t->k, t->comm, &r);
        MPI_Send(out, n, MPI_INT, to, t->k, t->comm);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            t->bad += in[i] != (t->k * 7919 + it) * 31 + from + i;
    }
    free(out);
    free(in);
    return NULL;
}

static void test_threads(int nt)
{
    MPIX_Stream *s = malloc(sizeof *s * (size_t)nt);
    struct targ *a = calloc((size_t)nt, sizeof *a);
    pthread_t *th = malloc(sizeof *th * (size_t)nt);
    int ctxs = 0;
    for (int k = 0; k < nt; k++) {
        MPIX_Stream_create(MPI_INFO_NULL, &s[k]);
        MPIX_Stream_comm_create(MPI_COMM_WORLD, s[k], &a[k].comm);
        a[k].k = k;
        a[k].iters = 1000;
        ctxs |= 1 << ctx_of(a[k].comm);
    }
    CHECK(__builtin_popcount((unsigned)ctxs) == nt && !(ctxs & 1),
          "%d stream communicators in %d distinct contexts (mask 0x%x)", nt,
          __builtin_popcount((unsigned)ctxs), ctxs);
    for (int k = 0; k < nt; k++)
        pthread_create(&th[k], NULL, pingpong, &a[k]);
    long bad = 0;
    for (int k = 0; k < nt; k++) {
        pthread_join(th[k], NULL);
        bad += a[k].bad;
        MPI_Comm_free(&a[k].comm);
        MPIX_Stream_free(&s[k]);
    }
    CHECK(bad == 0, "threads: %ld ints wrong", bad);
    printf("rank %d: %d threads on streams of their own, 1000 round trips each\n", rank, nt);
    free(s);
    free(a);
    free(th);
}

/* ---- multiplexed ---- */

struct mxarg {
    MPI_Comm comm;
    int i, nk;
    long bad;
};

/* Thread i owns local stream i: it sends to stream j of the next rank for
 * every j, and receives on its stream from any stream of the rank before
 * (source_stream_index -1), nk messages a round, each naming its sender
 * stream and round.  The senders' threads run at their own pace, so a
 * round's receives may take a faster sender's later message: what must
 * hold is each sender stream's messages arriving in order (they share a
 * tag and a context: MPI's non-overtaking), all of them. */
static void *mx_thread(void *p)
{
    struct mxarg *a = p;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int next[64] = {0};
    for (int it = 0; it < 100; it++) {
        MPI_Request rq[64];
        int got[64][2];
        for (int j = 0; j < a->nk; j++)
            MPIX_Stream_irecv(got[j], 2, MPI_INT, from, MPI_ANY_TAG, a->comm, -1, a->i, &rq[j]);
        for (int j = 0; j < a->nk; j++) {
            int msg[2] = {a->i, it};
            MPIX_Stream_send(msg, 2, MPI_INT, to, 100 + a->i, a->comm, a->i, j);
        }
        MPI_Status st[64];
        MPI_Waitall(a->nk, rq, st);
        for (int j = 0; j < a->nk; j++) {
            int src = got[j][0];
            a->bad += src < 0 || src >= a->nk || got[j][1] != next[src]++ ||
                      st[j].MPI_TAG != 100 + src || st[j].MPI_SOURCE != from;
        }
    }
    for (int k = 0; k < a->nk; k++)
        a->bad += next[k] != 100;
    return NULL;
}

static void test_multiplex(int nk)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPIX_Stream s[8];
    for (int i = 0; i < nk; i++)
        MPIX_Stream_create(MPI_INFO_NULL, &s[i]);
    MPI_Comm mc;
    int rc = MPIX_Stream_comm_create_multiplex(MPI_COMM_WORLD, nk, s, &mc);
    CHECK(rc == MPI_SUCCESS, "MPIX_Stream_comm_create_multiplex: %d", rc);
    for (int i = 0; i < nk; i++) {
        MPIX_Stream got;
        MPIX_Comm_get_stream(mc, i, &got);
        CHECK(got == s[i], "MPIX_Comm_get_stream(%d): 0x%x", i, (unsigned)got);
    }
    MPIX_Stream got;
    EXPECT(MPIX_Comm_get_stream(mc, nk, &got), MPI_ERR_ARG, "a stream index past the count");
    /* a specific source stream and tag, then each wildcard, to self */
    int x = 0, y = 5;
    MPI_Status st;
    MPI_Request r;
    MPIX_Stream_irecv(&x, 1, MPI_INT, rank, 7, mc, nk - 1, 0, &r);
    MPIX_Stream_send(&y, 1, MPI_INT, rank, 7, mc, 0, 0);  /* another stream: not it */
    MPIX_Stream_send(&y, 1, MPI_INT, rank, 8, mc, nk - 1, 0);  /* another tag: not it */
    int flag = 0;
    MPI_Test(&r, &flag, &st);
    CHECK(nk == 1 || !flag, "a receive from stream %d matched another stream's message", nk - 1);
    y = 6;
    MPIX_Stream_send(&y, 1, MPI_INT, rank, 7, mc, nk - 1, 0);
    if (!flag)  /* (with one stream the first send was its match) */
        MPI_Wait(&r, &st);
    CHECK(x == (nk == 1 ? 5 : 6) && st.MPI_TAG == 7, "specific stream and tag: %d, tag %d", x,
          st.MPI_TAG);
    MPIX_Stream_recv(&x, 1, MPI_INT, rank, 8, mc, -1, 0, &st);
    CHECK(st.MPI_TAG == 8 && x == 5, "any stream, tag 8: %d, tag %d", x, st.MPI_TAG);
    /* the one left: stream 0's first (with one stream, the second tag 7) */
    MPIX_Stream_recv(&x, 1, MPI_INT, rank, MPI_ANY_TAG, mc, nk == 1 ? -1 : 0, 0, &st);
    CHECK(st.MPI_TAG == 7 && x == (nk == 1 ? 6 : 5), "stream 0, any tag: %d, tag %d", x,
          st.MPI_TAG);
    /* the regular calls on it too */
    exercise(mc, "multiplexed stream communicator");
    /* errors */
    EXPECT(MPIX_Stream_send(&y, 1, MPI_INT, rank, 7, mc, nk, 0), MPI_ERR_ARG,
           "a source stream index past the count");
    EXPECT(MPIX_Stream_send(&y, 1, MPI_INT, rank, 7, mc, 0, nk), MPI_ERR_ARG,
           "a destination stream index past the peer's count");
    EXPECT(MPIX_Stream_send(&y, 1, MPI_INT, rank, 1 << 26, mc, 0, 0), MPI_ERR_TAG,
           "a tag above the multiplexed limit");
    EXPECT(MPIX_Stream_send(&y, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, 0, 0), MPI_ERR_COMM,
           "MPIX_Stream_send on a communicator that is not multiplexed");
    /* threads, each with its stream: any-stream receives */
    pthread_t th[8];
    struct mxarg a[8];
    for (int i = 0; i < nk; i++) {
        a[i] = (struct mxarg){.comm = mc, .i = i, .nk = nk};
        pthread_create(&th[i], NULL, mx_thread, &a[i]);
    }
    long bad = 0;
    for (int i = 0; i < nk; i++) {
        pthread_join(th[i], NULL);
        bad += a[i].bad;
    }
    CHECK(bad == 0, "multiplexed threads: %ld wrong", bad);
    MPI_Comm_free(&mc);
    for (int i = 0; i < nk; i++)
        CHECK(MPIX_Stream_free(&s[i]) == MPI_SUCCESS, "stream %d freed", i);
    printf("rank %d: multiplexed: %d streams, %d threads\n", rank, nk, nk);
}

/* ---- CADENCE_STREAM_CHECKS ---- */

static MPI_Comm checked;
static void *blocked_recv(void *p)
{
    (void)p;
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, 1, 3, checked, MPI_STATUS_IGNORE);  /* until rank 1 sends */
    return NULL;
}

/* Rank 0's thread waits inside MPI_Recv on a stream communicator while the
 * main thread calls MPI_Send on it: with CADENCE_STREAM_CHECKS=1 that is
 * an error naming the stream; once the thread is out, the same call works. */
static void test_checks(void)
{
    MPIX_Stream st;
    MPIX_Stream_create(MPI_INFO_NULL, &st);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &checked);
    MPI_Comm_set_errhandler(checked, MPI_ERRORS_RETURN);
    int go = 1, y = 9;
    if (rank == 0) {
        pthread_t th;
        pthread_create(&th, NULL, blocked_recv, NULL);
        usleep(200000);  /* the thread is inside MPI_Recv by now */
        int rc = MPI_Send(&y, 1, MPI_INT, 1, 4, checked);
        CHECK(check_class(rc) == MPI_ERR_OTHER && message_names(rc, "in use by another thread"),
              "a second thread on a stream communicator: class %d", check_class(rc));
        MPI_Send(&go, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);  /* rank 1 unblocks the thread */
        pthread_join(th, NULL);
        rc = MPI_Send(&y, 1, MPI_INT, 1, 4, checked);
        CHECK(rc == MPI_SUCCESS, "the stream free again: MPI_Send gave %d", rc);
    } else if (rank == 1) {
        MPI_Recv(&go, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&y, 1, MPI_INT, 0, 3, checked);
        MPI_Recv(&y, 1, MPI_INT, 0, 4, checked, MPI_STATUS_IGNORE);
        CHECK(y == 9, "the send after the error arrived: %d", y);
    }
    MPI_Comm_free(&checked);
    MPIX_Stream_free(&st);
}

/* ---- host queue: enqueued operations ---- */

static void test_enqueue(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cadence_host_queue");
    MPIX_Stream st;
    int rc = MPIX_Stream_create(info, &st);
    CHECK(rc == MPI_SUCCESS, "a host-queue stream: %d", rc);
    MPI_Info_free(&info);
    MPI_Comm qc;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &qc);
    MPI_Comm_set_errhandler(qc, MPI_ERRORS_RETURN);
    int peer = 1 - rank, go = 0;
    int a[4] = {0}, b = 0, c[100] = {0}, sum = 0, one = rank + 1;
    if (rank == 0) {
        /* the receiver enqueued first; it says so, then we enqueue */
        MPI_Recv(&go, 1, MPI_INT, peer, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int x[4] = {11, 12, 13, 14}, y = 22, z[100];
        for (int i = 0; i < 100; i++)
            z[i] = i * 3;
        MPIX_Send_enqueue(x, 4, MPI_INT, peer, 1, qc);
        MPI_Send(&y, 1, MPI_INT, peer, 2, qc);          /* enqueued too */
        MPI_Request r;
        MPIX_Isend_enqueue(z, 100, MPI_INT, peer, 3, qc, &r);
        MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE);
        CHECK(r == MPI_REQUEST_NULL, "MPIX_Wait_enqueue gives the handle back at once");
        EXPECT(MPIX_Stream_free(&st), MPI_ERR_OTHER, "freeing a stream with work enqueued"
               " (or its communicator)");
        MPIX_Allreduce_enqueue(&one, &sum, 1, MPI_INT, MPI_SUM, qc);
        rc = MPIX_Stream_synchronize(st);
        CHECK(rc == MPI_SUCCESS && sum == 3, "synchronized: rc %d, allreduce %d", rc, sum);
    } else {
        MPI_Status s1, s2, s3[1];
        MPIX_Recv_enqueue(a, 4, MPI_INT, peer, MPI_ANY_TAG, qc, &s1);
        MPI_Recv(&b, 1, MPI_INT, peer, MPI_ANY_TAG, qc, &s2);  /* enqueued: returns at once */
        MPI_Request r;
        MPIX_Irecv_enqueue(c, 100, MPI_INT, peer, 3, qc, &r);
        MPIX_Waitall_enqueue(1, &r, s3);
        MPIX_Allreduce_enqueue(&one, &sum, 1, MPI_INT, MPI_SUM, qc);
        CHECK(a[0] == 0 && b == 0, "enqueued receives returned before their messages came");
        MPI_Send(&go, 1, MPI_INT, peer, 50, MPI_COMM_WORLD);
        rc = MPIX_Stream_synchronize(st);
        int bad = 0;
        for (int i = 0; i < 100; i++)
            bad += c[i] != i * 3;
        CHECK(rc == MPI_SUCCESS && a[3] == 14 && s1.MPI_TAG == 1 && b == 22 && s2.MPI_TAG == 2 &&
                  bad == 0 && s3[0].MPI_TAG == 3 && sum == 3,
              "in queue order: rc %d, a[3] %d tag %d, b %d tag %d, %d of c wrong (tag %d), "
              "allreduce %d", rc, a[3], s1.MPI_TAG, b, s2.MPI_TAG, bad, s3[0].MPI_TAG, sum);
    }
    /* errors */
    int v = 0;
    EXPECT(MPIX_Send_enqueue(&v, 1, MPI_INT, peer, 1, MPI_COMM_WORLD), MPI_ERR_COMM,
           "MPIX_Send_enqueue on a communicator without an offload stream");
    MPI_Request plain;
    MPI_Irecv(&v, 1, MPI_INT, peer, 77, MPI_COMM_WORLD, &plain);
    EXPECT(MPIX_Wait_enqueue(&plain, MPI_STATUS_IGNORE), MPI_ERR_REQUEST,
           "MPIX_Wait_enqueue of a request not enqueued");
    MPI_Cancel(&plain);
    MPI_Wait(&plain, MPI_STATUS_IGNORE);
    MPI_Comm_free(&qc);
    CHECK(MPIX_Stream_free(&st) == MPI_SUCCESS, "the host-queue stream freed");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "basic";
    if (strcmp(mode, "basic") == 0)
        test_basic();
    else if (strcmp(mode, "enqueue") == 0)
        test_enqueue();
    else if (strcmp(mode, "checks") == 0)
        test_checks();
    else if (strcmp(mode, "multiplex") == 0)
        test_multiplex(argc > 2 ? atoi(argv[2]) : 3);
    else if (strcmp(mode, "threads") == 0)
        test_threads(argc > 2 ? atoi(argv[2]) : 4);
    else
        CHECK(0, "unknown mode %s", mode);
    MPI_Finalize();
    return check_summary("t_stream");
}
