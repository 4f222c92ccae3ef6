/*
 * Partitioned collectives (Cadence extensions): MPIX_Pbcast_init,
 * MPIX_Pallreduce_init, MPIX_Palltoall_init.
 *
 *   t_pcoll data      every collective at several partition counts, sizes
 *                     and roots, contiguous and strided types, MPI_SUM and
 *                     a non-commutative user op (2x2 matrix products, which
 *                     must come out in rank order), partitions marked in
 *                     reverse order, each checked as soon as MPI_Parrived
 *                     reports it, over 10 instances
 *   t_pcoll early     a partition goes through the collective while the
 *                     others are held back: every rank sees partition 0
 *                     arrive before any rank marks partition 1 (bcast,
 *                     allreduce, alltoall)
 *   t_pcoll threads   4 threads per rank mark their own partitions of an
 *                     allreduce and check their own results, 200 instances
 *   t_pcoll errors    misuse is an MPI error, never a hang
 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_mpi.h"

static int rank, size;

static long val(int it, int r, long i)
{
    return (long)it * 1000003L + (long)r * 7919L + i;
}

/* Wait until partition p arrived (10 s at most); false if it never did. */
static bool arrive(MPI_Request req, int p)
{
    int flag = 0;
    time_t end = time(NULL) + 10;
    while (!flag && time(NULL) < end) {
        MPI_Parrived(req, p, &flag);
        if (!flag)
            sched_yield();
    }
    return flag;
}

/* ---- 2x2 matrices mod M: an associative, non-commutative op ---- */

#define M 1000003L
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    long *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long c[4] = {(a[0] * b[0] + a[1] * b[2]) % M, (a[0] * b[1] + a[1] * b[3]) % M,
                     (a[2] * b[0] + a[3] * b[2]) % M, (a[2] * b[1] + a[3] * b[3]) % M};
        memcpy(b, c, sizeof c);
    }
}

static void mat_of(int it, int r, long i, long *m)
{
    m[0] = (val(it, r, i) % 97) + 1;
    m[1] = r + 2;
    m[2] = (i % 5) + 1;
    m[3] = it + 3;
}

/* ---- data ---- */

static void bcast(int parts, int count, int root, bool strided, int iters)
{
    MPI_Datatype t = MPI_LONG;
    long n = (long)parts * count, span = strided ? 2 * n : n;
    if (strided) {
        MPI_Datatype v;
        MPI_Type_vector(1, 1, 2, MPI_LONG, &v);
        MPI_Type_create_resized(v, 0, 2 * sizeof(long), &t);
        MPI_Type_free(&v);
        MPI_Type_commit(&t);
    }
    long *buf = calloc((size_t)span, sizeof(long));
    MPI_Request req;
    int rc = MPIX_Pbcast_init(buf, parts, count, t, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK(rc == MPI_SUCCESS, "MPIX_Pbcast_init: %d", rc);
    long bad = 0;
    for (int it = 0; it < iters; it++) {
        if (rank != root)
            memset(buf, 0, (size_t)span * sizeof(long));
        MPI_Start(&req);
        for (int k = parts - 1; k >= 0; k--) {
            if (rank == root) {
                for (long i = (long)k * count; i < (long)(k + 1) * count; i++)
                    buf[strided ? 2 * i : i] = val(it, root, i);
                MPI_Pready(k, req);
            }
        }
        for (int p = 0; p < parts; p++) {
            if (!arrive(req, p)) {
                bad++;
                continue;
            }
            for (long i = (long)p * count; i < (long)(p + 1) * count; i++)
                bad += buf[strided ? 2 * i : i] != val(it, root, i);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(bad == 0, "bcast %d x %d root %d%s: %ld wrong", parts, count, root,
          strided ? " strided" : "", bad);
    MPI_Request_free(&req);
    if (strided)
        MPI_Type_free(&t);
    free(buf);
}

static void allreduce(int parts, int count, bool noncommutative, bool in_place, int iters)
{
    MPI_Datatype t = MPI_LONG;
    MPI_Op op = MPI_SUM;
    int width = 1;
    if (noncommutative) {
        MPI_Type_contiguous(4, MPI_LONG, &t);
        MPI_Type_commit(&t);
        MPI_Op_create(matmul, 0, &op);
        width = 4;
    }
    long n = (long)parts * count;
    long *sb = calloc((size_t)(n * width), sizeof(long));
    long *rb = calloc((size_t)(n * width), sizeof(long));
    MPI_Request req;
    int rc = MPIX_Pallreduce_init(in_place ? MPI_IN_PLACE : sb, rb, parts, count, t, op,
                                  MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK(rc == MPI_SUCCESS, "MPIX_Pallreduce_init: %d", rc);
    long bad = 0;
    for (int it = 0; it < iters; it++) {
        long *mine = in_place ? rb : sb;
        MPI_Start(&req);
        for (int k = parts - 1; k >= 0; k--) {
            for (long i = (long)k * count; i < (long)(k + 1) * count; i++) {
                if (noncommutative)
                    mat_of(it, rank, i, mine + 4 * i);
                else
                    mine[i] = val(it, rank, i);
            }
            MPI_Pready(k, req);
        }
        for (int p = 0; p < parts; p++) {
            if (!arrive(req, p)) {
                bad++;
                continue;
            }
            for (long i = (long)p * count; i < (long)(p + 1) * count; i++) {
                if (noncommutative) {
                    long want[4], m[4];
                    mat_of(it, 0, i, want);
                    for (int r = 1; r < size; r++) {
                        int one = 1;
                        mat_of(it, r, i, m);
                        /* want = want x m: inout = in op inout with in = want */
                        matmul(want, m, &one, NULL);
                        memcpy(want, m, sizeof m);
                    }
                    bad += memcmp(want, rb + 4 * i, sizeof want) != 0;
                } else {
                    long want = 0;
                    for (int r = 0; r < size; r++)
                        want += val(it, r, i);
                    bad += rb[i] != want;
                }
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(bad == 0, "allreduce %d x %d%s%s: %ld wrong", parts, count,
          noncommutative ? " non-commutative" : "", in_place ? " in place" : "", bad);
    MPI_Request_free(&req);
    if (noncommutative) {
        MPI_Type_free(&t);
        MPI_Op_free(&op);
    }
    free(sb);
    free(rb);
}

static void alltoall(int parts, int count, int iters)
{
    long block = (long)parts * count;
    long *sb = calloc((size_t)(block * size), sizeof(long));
    long *rb = calloc((size_t)(block * size), sizeof(long));
    MPI_Request req;
    int rc = MPIX_Palltoall_init(sb, rb, parts, count, MPI_LONG, MPI_COMM_WORLD, MPI_INFO_NULL,
                                 &req);
    CHECK(rc == MPI_SUCCESS, "MPIX_Palltoall_init: %d", rc);
    long bad = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Start(&req);
        for (int k = parts - 1; k >= 0; k--) {
            for (int r = 0; r < size; r++)
                for (long i = (long)k * count; i < (long)(k + 1) * count; i++)
                    sb[r * block + i] = val(it, rank, r * block + i);
            MPI_Pready(k, req);
        }
        for (int p = 0; p < parts; p++) {
            if (!arrive(req, p)) {
                bad++;
                continue;
            }
            for (int r = 0; r < size; r++)
                for (long i = (long)p * count; i < (long)(p + 1) * count; i++)
                    bad += rb[r * block + i] != val(it, r, rank * block + i);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(bad == 0, "alltoall %d x %d: %ld wrong", parts, count, bad);
    MPI_Request_free(&req);
    free(sb);
    free(rb);
}

static void test_data(void)
{
    int shapes[][2] = {{1, 1024}, {4, 256}, {16, 64}, {3, 20000}, {300, 4}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int parts = shapes[k][0], count = shapes[k][1];
        for (int root = 0; root < size; root += size > 2 ? size - 1 : 1)
            bcast(parts, count, root, false, 10);
        bcast(parts, count, size / 2, true, 3);
        allreduce(parts, count, false, false, 10);
        allreduce(parts, count, false, true, 3);
        allreduce(parts, count, true, false, 3);
        alltoall(parts, count, 10);
    }
}

/* ---- early ---- */

/* Partition 0 goes through while partition 1 waits: every rank marks 0,
 * waits for 0 to arrive, agrees through a barrier, then marks 1. */
static void test_early(void)
{
    enum { P = 2, C = 8192 };
    long *a = calloc(2 * P * C * (size_t)size, sizeof(long));
    long *b = a + P * C * size;
    MPI_Request req[3];
    MPIX_Pbcast_init(a, P, C, MPI_LONG, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPIX_Pallreduce_init(a, b, P, C, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPIX_Palltoall_init(a, b, P, C / size, MPI_LONG, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
    const char *name[3] = {"bcast", "allreduce", "alltoall"};
    for (int k = 0; k < 3; k++) {
        for (long i = 0; i < 2L * P * C * size; i++)
            a[i] = rank == 0 || k > 0 ? i + 1 : 0;
        MPI_Start(&req[k]);
        bool marks = k > 0 || rank == 0;
        if (marks)
            MPI_Pready(0, req[k]);
        bool got = arrive(req[k], 0);
        int flag1 = 1;
        MPI_Parrived(req[k], 1, &flag1);
        CHECK(got, "%s: partition 0 never arrived while partition 1 was held back", name[k]);
        CHECK(!flag1 || (k == 0 && rank == 0), "%s: partition 1 arrived before it was marked",
              name[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (marks)
            MPI_Pready(1, req[k]);
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        MPI_Request_free(&req[k]);
    }
    free(a);
}

/* ---- threads ---- */

struct th {
    MPI_Request req;
    long *sb, *rb;
    int count, iters, first, last;
    pthread_barrier_t *go, *done;
    long bad;
};

static void *worker(void *arg)
{
    struct th *t = arg;
    for (int it = 0; it < t->iters; it++) {
        pthread_barrier_wait(t->go);
        for (int p = t->first; p < t->last; p++) {
            for (long i = (long)p * t->count; i < (long)(p + 1) * t->count; i++)
                t->sb[i] = val(it, rank, i);
            MPI_Pready(p, t->req);
        }
        for (int p = t->first; p < t->last; p++) {
            if (!arrive(t->req, p)) {
                t->bad++;
                continue;
            }
            for (long i = (long)p * t->count; i < (long)(p + 1) * t->count; i++) {
                long want = 0;
                for (int r = 0; r < size; r++)
                    want += val(it, r, i);
                t->bad += t->rb[i] != want;
            }
        }
        pthread_barrier_wait(t->done);
    }
    return NULL;
}

static void test_threads(void)
{
    enum { T = 4, PER = 2, C = 512, ITERS = 200 };
    long *sb = calloc(T * PER * C, sizeof(long)), *rb = calloc(T * PER * C, sizeof(long));
    MPI_Request req;
    MPIX_Pallreduce_init(sb, rb, T * PER, C, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &req);
    pthread_barrier_t go, done;
    pthread_barrier_init(&go, NULL, T + 1);
    pthread_barrier_init(&done, NULL, T + 1);
    pthread_t th[T];
    struct th a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (struct th){.req = req, .sb = sb, .rb = rb, .count = C, .iters = ITERS,
                           .first = i * PER, .last = (i + 1) * PER, .go = &go, .done = &done};
        pthread_create(&th[i], NULL, worker, &a[i]);
    }
    for (int it = 0; it < ITERS; it++) {
        MPI_Start(&req);
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&done);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    long bad = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        bad += a[i].bad;
    }
    CHECK(bad == 0, "threads: %ld wrong over %d instances", bad, ITERS);
    MPI_Request_free(&req);
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&done);
    free(sb);
    free(rb);
}

/* ---- errors ---- */


static void test_errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    long x[512 * 8];
    MPI_Request r;
    EXPECT(MPIX_Pbcast_init(x, 0, 1, MPI_LONG, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r), MPI_ERR_ARG,
           "0 partitions");
    EXPECT(MPIX_Pbcast_init(x, -1, 1, MPI_LONG, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r),
           MPI_ERR_ARG, "-1 partitions");
    EXPECT(MPIX_Pbcast_init(x, 2, 1, MPI_LONG, size, MPI_COMM_WORLD, MPI_INFO_NULL, &r),
           MPI_ERR_ROOT, "a bad root");
    EXPECT(MPIX_Palltoall_init(MPI_IN_PLACE, x, 2, 1, MPI_LONG, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &r), MPI_ERR_BUFFER, "alltoall in place");
    EXPECT(MPIX_Pallreduce_init(x, x + 8, 2, 1, MPI_LONG, MPI_OP_NULL, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &r), MPI_ERR_OP, "MPI_OP_NULL");
    MPIX_Pbcast_init(x, 2, 4, MPI_LONG, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST, "Pready before MPI_Start");
    MPI_Start(&r);
    if (rank == 0) {
        EXPECT(MPI_Pready(2, r), MPI_ERR_ARG, "a partition out of range");
        EXPECT(MPI_Pready(0, r), MPI_SUCCESS, "Pready");
        EXPECT(MPI_Pready(0, r), MPI_ERR_ARG, "Pready twice");
        EXPECT(MPI_Pready(1, r), MPI_SUCCESS, "Pready");
    } else {
        EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST, "Pready at a broadcast's non-root");
    }
    EXPECT(MPI_Request_free(&r), MPI_ERR_REQUEST, "freeing an active request");
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    int flag = 0;
    MPIX_Pallreduce_init(x, x + 8, 2, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    EXPECT(MPI_Parrived(r, 5, &flag), MPI_ERR_ARG, "Parrived out of range");
    MPI_Pready_range(0, 1, r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "data";
    if (strcmp(mode, "data") == 0)
        test_data();
    else if (strcmp(mode, "early") == 0)
        test_early();
    else if (strcmp(mode, "threads") == 0)
        test_threads();
    else if (strcmp(mode, "errors") == 0)
        test_errors();
    else
        CHECK(0, "unknown mode %s", mode);
    MPI_Finalize();
    return check_summary("t_pcoll");
}
