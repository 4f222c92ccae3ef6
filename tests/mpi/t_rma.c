/*
 * One-sided communication in fence epochs (progress/rma.c, docs/rma.md),
 * 1..n processes, data checked against what every rank computes serially:
 *
 *   - MPI_Put to the right neighbour, MPI_Get from the left one, on windows
 *     of MPI_Win_allocate, MPI_Win_create and MPI_Win_allocate_shared (the
 *     shared one also read by load), with a displacement unit of 4;
 *   - 1 MiB each way (many active messages over tcp);
 *   - derived datatypes on both sides (vectors of different strides);
 *   - MPI_Accumulate from every rank at once into rank 0 (MPI_SUM, then
 *     MPI_MAX, MPI_REPLACE of one rank, MPI_NO_OP), and into itself;
 *   - the large-count forms (every one: MPI_Accumulate_c and
 *     MPI_Get_accumulate_c into rank 0 from every rank, the request-based
 *     _c forms to the right), MPI_PROC_NULL;
 *   - errors: an operation before the first fence and after a fence with
 *     MPI_MODE_NOSUCCEED (MPI_ERR_RMA_SYNC), outside the target's part
 *     (MPI_ERR_RMA_RANGE), a bad rank, differing sizes, a user op, a bad
 *     assert;
 *   - a dynamic window: memory attached, its address exchanged, put and
 *     get at it; the attach errors;
 *   - passive target: an exclusive lock, put and unlock to the right;
 *     MPI_Win_lock_all, a get from every rank, MPI_Win_flush_all; mutual
 *     exclusion (every rank increments a counter at rank 0 by get, flush,
 *     put under an exclusive lock, 20 times); accumulates under
 *     MPI_Win_lock_all with flushes; MPI_MODE_NOCHECK; MPI_Win_sync;
 *     1000 gets from a rank that sleeps 3 s without an MPI call, done
 *     long before it wakes (its engine answers); the epoch errors;
 *   - atomics: MPI_Fetch_and_op from every rank 50 times into one counter
 *     (every fetched value seen exactly once across the ranks), a spin
 *     lock of MPI_Compare_and_swap guarding a non-atomic get + put
 *     increment, MPI_Get_accumulate of a vector (MPI_SUM, MPI_NO_OP),
 *     MPI_REPLACE as a swap;
 *   - request-based: MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate
 *     under MPI_Win_lock_all, to the right, to itself and to MPI_PROC_NULL,
 *     completed by MPI_Waitall (a put's request completes once it took
 *     effect: the data is read back at once); refused in a fence epoch;
 *   - PSCW: each rank exposes its part to its left neighbour and accesses
 *     its right one's (MPI_Win_post, MPI_Win_start, MPI_Put and
 *     MPI_Accumulate, MPI_Win_complete, MPI_Win_wait / MPI_Win_test), three
 *     rounds, and the epoch errors.
 */
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

enum { N = 1024, BIG = 1 << 20 };

static int rank, size;

static void noop_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)type;
}

/* The windows of the sections below: MPI_Win_allocate, or with T_RMA_WIN=create
 * MPI_Win_create on malloc'd memory (on one node the first are mapped
 * into every process and reached by loads and stores, the second by the
 * transport's copy and active messages: the report line the suite checks
 * says which ran). */
static void make_win(MPI_Aint bytes, int disp_unit, void *baseptr, MPI_Win *win)
{
    const char *kind = getenv("T_RMA_WIN");
    if (kind != NULL && strcmp(kind, "create") == 0) {
        /* defined first: a peer's CMA write is one valgrind cannot see */
        void *mem = calloc(1, bytes > 0 ? (size_t)bytes : 1);
        *(void **)baseptr = mem;
        MPI_Win_create(mem, bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, win);
    } else {
        MPI_Win_allocate(bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win);
    }
}

static void free_win(MPI_Win *win)
{
    int *flavor, found;
    void *base;
    MPI_Win_get_attr(*win, MPI_WIN_CREATE_FLAVOR, &flavor, &found);
    bool made = found && *flavor == MPI_WIN_FLAVOR_CREATE;
    MPI_Win_get_attr(*win, MPI_WIN_BASE, &base, &found);
    MPI_Win_free(win);
    if (made)
        free(base);
}

static int pat(int r, int i)
{
    return r * 100003 + i;
}

static void ring(MPI_Win win, int *part, const char *kind)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *src = malloc(N * sizeof *src), *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++) {
        src[i] = pat(rank, i);
        got[i] = -1;
    }
    MPI_Win_fence(0, win);
    int rc = MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += part[i] != pat(left, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "%s: put to the right: rc %d, %ld wrong", kind, rc, bad);
    /* get what the left rank holds now (its left's pattern) */
    rc = MPI_Get(got, N, MPI_INT, left, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    bad = 0;
    int left2 = (rank + 2 * size - 2) % size;
    for (int i = 0; i < N; i++)
        bad += got[i] != pat(left2, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "%s: get from the left: rc %d, %ld wrong", kind, rc, bad);
    free(src);
    free(got);
}

static void big(void)
{
    MPI_Win win;
    char *part;
    make_win(BIG, 1, &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    char *src = malloc(BIG), *got = malloc(BIG);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < BIG; i++)
        src[i] = (char)(rank * 7 + i * 13);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    int rc = MPI_Put_c(src, BIG, MPI_BYTE, right, 0, BIG, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    rc |= MPI_Get_c(got, BIG, MPI_BYTE, right, 0, BIG, MPI_BYTE, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    long bad = 0;
    for (int i = 0; i < BIG; i++)
        bad += part[i] != (char)(left * 7 + i * 13) || got[i] != src[i];
    CHECK(rc == MPI_SUCCESS && bad == 0, "1 MiB put and get: rc %d, %ld wrong", rc, bad);
    free(src);
    free(got);
    free_win(&win);
}

static void derived(void)
{
    /* origin: every 2nd int of 2N; target: every 3rd int of 3N */
    MPI_Datatype o2, t3;
    MPI_Type_vector(N, 1, 2, MPI_INT, &o2);
    MPI_Type_vector(N, 1, 3, MPI_INT, &t3);
    MPI_Type_commit(&o2);
    MPI_Type_commit(&t3);
    MPI_Win win;
    int *part;
    make_win(3 * N * sizeof(int), sizeof(int), &part, &win);
    for (int i = 0; i < 3 * N; i++)
        part[i] = -1;
    int *src = malloc(2 * N * sizeof *src), *got = malloc(2 * N * sizeof *got);
    for (int i = 0; i < 2 * N; i++) {
        src[i] = i % 2 == 0 ? pat(rank, i / 2) : -7;
        got[i] = -5;
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Win_fence(0, win);
    int rc = MPI_Put(src, 1, o2, right, 0, 1, t3, win);
    MPI_Win_fence(0, win);
    long bad = 0;
    for (int i = 0; i < 3 * N; i++)
        bad += part[i] != (i % 3 == 0 ? pat(left, i / 3) : -1);
    rc |= MPI_Get(got, 1, o2, right, 0, 1, t3, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 2 * N; i++)
        bad += got[i] != (i % 2 == 0 ? pat(rank, i / 2) : -5);
    CHECK(rc == MPI_SUCCESS && bad == 0, "vectors on both sides: rc %d, %ld wrong", rc, bad);
    free_win(&win);
    MPI_Type_free(&o2);
    MPI_Type_free(&t3);
    free(src);
    free(got);
}

static void accumulate(void)
{
    MPI_Win win;
    long *part;
    make_win(N * sizeof(long), sizeof(long), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; i++)
        part[i] = i;
    long *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
        v[i] = (long)(rank + 1) * (i + 1);
    MPI_Win_fence(0, win);
    int rc = MPI_Accumulate(v, N, MPI_LONG, 0, 0, N, MPI_LONG, MPI_SUM, win);
    rc |= MPI_Accumulate(v, N, MPI_LONG, rank, 0, N, MPI_LONG, MPI_SUM, win);  /* itself too */
    MPI_Win_fence(0, win);
    long bad = 0, tri = (long)size * (size + 1) / 2;
    for (int i = 0; i < N; i++)
        bad += part[i] != i + (long)(rank + 1) * (i + 1) + (rank == 0 ? tri * (i + 1) : 0);
    CHECK(rc == MPI_SUCCESS && bad == 0, "concurrent MPI_SUM into rank 0: rc %d, %ld wrong", rc,
          bad);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++)
        part[i] = 0;
    MPI_Win_fence(0, win);
    rc = MPI_Accumulate(v, N, MPI_LONG, 0, 0, N, MPI_LONG, MPI_MAX, win);
    MPI_Win_fence(0, win);
    bad = 0;
    for (int i = 0; rank == 0 && i < N; i++)
        bad += part[i] != (long)size * (i + 1);
    CHECK(rc == MPI_SUCCESS && bad == 0, "MPI_MAX into rank 0: %ld wrong", bad);
    rc = MPI_Accumulate(v, N, MPI_LONG, 0, 0, N, MPI_LONG,
                        rank == size - 1 ? MPI_REPLACE : MPI_NO_OP, win);
    MPI_Win_fence(0, win);
    bad = 0;
    for (int i = 0; rank == 0 && i < N; i++)
        bad += part[i] != (long)size * (i + 1);
    CHECK(rc == MPI_SUCCESS && bad == 0, "MPI_REPLACE of the last rank, MPI_NO_OP of the others: "
          "%ld wrong", bad);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    free(v);
    free_win(&win);
}

static void errors(void)
{
    MPI_Win win;
    int *part;
    make_win(N * sizeof(int), sizeof(int), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int x[4] = {0};
    EXPECT(MPI_Put(x, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "before a fence");
    MPI_Win_fence(0, win);
    EXPECT(MPI_Put(x, 1, MPI_INT, 0, N, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "past the part");
    EXPECT(MPI_Get(x, 2, MPI_INT, 0, N - 1, 2, MPI_INT, win), MPI_ERR_RMA_RANGE,
           "across the part's end");
    EXPECT(MPI_Put(x, 1, MPI_INT, 0, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "negative disp");
    EXPECT(MPI_Put(x, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK, "a bad rank");
    EXPECT(MPI_Put(x, 2, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_TYPE, "sizes that differ");
    EXPECT(MPI_Put(x, -1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_COUNT, "a negative count");
    MPI_Op mine;
    MPI_Op_create(noop_fn, 1, &mine);
    EXPECT(MPI_Accumulate(x, 1, MPI_INT, 0, 0, 1, MPI_INT, mine, win), MPI_ERR_OP, "a user op");
    MPI_Op_free(&mine);
    EXPECT(MPI_Put(x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS,
           "MPI_PROC_NULL");
    EXPECT(MPI_Win_fence(0x7fff0000, win), MPI_ERR_ASSERT, "a bad assert");
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    EXPECT(MPI_Get(x, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "after NOSUCCEED");
    free_win(&win);
}

/* The large-count forms the sections above do not use, under
 * MPI_Win_lock_all: MPI_Accumulate_c from every rank into rank 0 (read
 * back by MPI_Get_accumulate_c with MPI_NO_OP), and the request-based _c
 * forms to the right neighbour, whose results follow from the left one's
 * data. */
static void large_counts(void)
{
    MPI_Win win;
    long *part;
    make_win(3 * N * sizeof(long), sizeof(long), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 3 * N; i++)
        part[i] = 0;
    long *v = malloc(N * sizeof *v), *got = malloc(N * sizeof *got);
    long *old = malloc(N * sizeof *old), *sum = malloc(N * sizeof *sum);
    for (int i = 0; i < N; i++)
        v[i] = (long)rank * N + i;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request r[4];
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = MPI_Win_lock_all(0, win);
    rc |= MPI_Accumulate_c(v, N, MPI_LONG, 0, N, N, MPI_LONG, MPI_SUM, win);
    rc |= MPI_Rput_c(v, N, MPI_LONG, right, 0, N, MPI_LONG, win, &r[0]);
    rc |= MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    rc |= MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);  /* every put and accumulate took effect */
    rc |= MPI_Rget_c(got, N, MPI_LONG, right, 0, N, MPI_LONG, win, &r[1]);
    rc |= MPI_Raccumulate_c(v, N, MPI_LONG, right, 2 * N, N, MPI_LONG, MPI_SUM, win, &r[2]);
    rc |= MPI_Waitall(2, &r[1], MPI_STATUSES_IGNORE);
    rc |= MPI_Rget_accumulate_c(v, N, MPI_LONG, old, N, MPI_LONG, right, 2 * N, N, MPI_LONG,
                                MPI_SUM, win, &r[3]);
    rc |= MPI_Wait(&r[3], MPI_STATUS_IGNORE);
    rc |= MPI_Get_accumulate_c(NULL, 0, MPI_LONG, sum, N, MPI_LONG, 0, N, N, MPI_LONG,
                               MPI_NO_OP, win);
    rc |= MPI_Win_flush(0, win);
    rc |= MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    long bad = 0, ranks = (long)size * (size - 1) / 2;
    for (int i = 0; i < N; i++) {
        long mine = (long)rank * N + i, theirs = (long)left * N + i;
        bad += got[i] != mine || old[i] != mine || sum[i] != ranks * N + (long)size * i;
        bad += part[i] != theirs || part[2 * N + i] != 2 * theirs;
    }
    CHECK(rc == MPI_SUCCESS && bad == 0, "the large-count accumulates and request-based forms: "
          "rc %d, %ld wrong", rc, bad);
    free(v);
    free(got);
    free(old);
    free(sum);
    free_win(&win);
}

/* A dynamic window: memory attached, its address exchanged, put and get
 * at it; the attach errors. */
static void dynamic(void)
{
    MPI_Win dyn;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
    int *mem = malloc(N * sizeof *mem), *src = malloc(N * sizeof *src);
    int *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++) {
        mem[i] = -1;
        src[i] = pat(rank, i);
    }
    int rc = MPI_Win_attach(dyn, mem, N * sizeof(int));
    MPI_Aint mine, *addr = malloc(sizeof *addr * (size_t)size);
    MPI_Get_address(mem, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Win_fence(0, dyn);
    rc |= MPI_Put(src, N, MPI_INT, right, addr[right], N, MPI_INT, dyn);
    MPI_Win_fence(0, dyn);
    rc |= MPI_Get(got, N, MPI_INT, right, addr[right], N, MPI_INT, dyn);
    MPI_Win_fence(0, dyn);
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += mem[i] != pat(left, i) || got[i] != pat(rank, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "a dynamic window: rc %d, %ld wrong", rc, bad);
    int x = 0;
    EXPECT(MPI_Put(&x, 1, MPI_INT, rank, mine + N * (MPI_Aint)sizeof(int), 1, MPI_INT, dyn),
           MPI_ERR_RMA_RANGE, "past the memory attached here");
    EXPECT(MPI_Win_attach(dyn, mem + 1, 4), MPI_ERR_RMA_ATTACH, "an overlapping attach");
    MPI_Win_fence(MPI_MODE_NOSUCCEED, dyn);
    EXPECT(MPI_Win_detach(dyn, mem + 1), MPI_ERR_RMA_ATTACH, "detach of memory not attached");
    EXPECT(MPI_Win_detach(dyn, mem), MPI_SUCCESS, "detach");
    EXPECT(MPI_Win_detach(dyn, mem), MPI_ERR_RMA_ATTACH, "detach twice");
    MPI_Win_free(&dyn);
    MPI_Win w2;
    int *p2;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &p2, &w2);
    MPI_Win_set_errhandler(w2, MPI_ERRORS_RETURN);
    EXPECT(MPI_Win_attach(w2, mem, 4), MPI_ERR_RMA_FLAVOR, "attach to an allocated window");
    MPI_Win_free(&w2);
    free(mem);
    free(src);
    free(got);
    free(addr);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void passive(void)
{
    MPI_Win win;
    int *part;
    make_win(N * sizeof(int), sizeof(int), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; i++)
        part[i] = -1;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *src = malloc(N * sizeof *src), *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++)
        src[i] = pat(rank, i);
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    rc |= MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win);
    rc |= MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += part[i] != pat(left, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "exclusive lock, put, unlock: rc %d, %ld wrong", rc, bad);
    /* every rank's part from every rank under MPI_Win_lock_all */
    rc = MPI_Win_lock_all(0, win);
    bad = 0;
    for (int r = 0; r < size; r++) {
        rc |= MPI_Get(got, N, MPI_INT, r, 0, N, MPI_INT, win);
        rc |= MPI_Win_flush(r, win);
        int l = (r + size - 1) % size;
        for (int i = 0; i < N; i++)
            bad += got[i] != pat(l, i);
    }
    rc |= MPI_Win_flush_all(win);
    rc |= MPI_Win_flush_local_all(win);
    rc |= MPI_Win_unlock_all(win);
    CHECK(rc == MPI_SUCCESS && bad == 0, "lock_all, get from every rank: rc %d, %ld wrong", rc,
          bad);
    /* mutual exclusion: a read-modify-write of rank 0's counter */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        part[0] = 0;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_SUCCESS;
    for (int k = 0; k < 20; k++) {
        int c = -1;
        rc |= MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        rc |= MPI_Get(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        rc |= MPI_Win_flush_local(0, win);
        c++;
        rc |= MPI_Put(&c, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        rc |= MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    if (rank == 0)
        CHECK(rc == MPI_SUCCESS && part[0] == 20 * size, "exclusive locks: counter %d, expected %d",
              part[0], 20 * size);
    /* accumulates under lock_all, flushed each time */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        part[1] = 0;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Win_lock_all(0, win);
    int one = 1;
    for (int k = 0; k < 100; k++) {
        rc |= MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win);
        rc |= MPI_Win_flush(0, win);
    }
    rc |= MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    if (rank == 0)
        CHECK(rc == MPI_SUCCESS && part[1] == 100 * size, "accumulates under lock_all: %d, "
              "expected %d", part[1], 100 * size);
    /* MPI_MODE_NOCHECK */
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Win_lock(MPI_LOCK_SHARED, left, MPI_MODE_NOCHECK, win);
    rc |= MPI_Get(got, N, MPI_INT, left, 0, N, MPI_INT, win);
    rc |= MPI_Win_unlock(left, win);
    int l2 = (rank + 2 * size - 2) % size;
    bad = 0;
    for (int i = 2; i < N; i++)
        bad += got[i] != pat(l2, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "a NOCHECK lock: rc %d, %ld wrong", rc, bad);
    /* the epoch errors */
    int x = 0;
    EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC, "unlock without a lock");
    EXPECT(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC, "flush without a lock");
    EXPECT(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC, "flush_all without a lock");
    EXPECT(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC, "unlock_all without lock_all");
    EXPECT(MPI_Win_lock(7, right, 0, win), MPI_ERR_LOCKTYPE, "a bad lock type");
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win), MPI_ERR_RANK, "a bad rank");
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, MPI_MODE_NOPUT, win), MPI_ERR_ASSERT,
           "a bad assert");
    EXPECT(MPI_Put(&x, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC,
           "a put outside any epoch");
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "locked twice");
    EXPECT(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC, "lock_all while locked");
    EXPECT(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC, "a fence while locked");
    if (size > 1)
        EXPECT(MPI_Put(&x, 1, MPI_INT, left == right ? rank : left, 0, 1, MPI_INT, win),
               left == right ? MPI_ERR_RMA_SYNC : MPI_ERR_RMA_SYNC, "a rank not locked");
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* passive-target progress: the target sleeps without an MPI call */
    if (size >= 2) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            double t0 = now();
            while (now() < t0 + 3.0)
                usleep(100000);  /* no MPI call */
        } else if (rank == 0) {
            double t0 = now();
            rc = MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            bad = 0;
            for (int k = 0; k < 1000; k++) {
                int v = -1;
                rc |= MPI_Get(&v, 1, MPI_INT, 1, k % N, 1, MPI_INT, win);
                rc |= MPI_Win_flush(1, win);
                bad += v != pat(0, k % N);
            }
            rc |= MPI_Win_unlock(1, win);
            double t = now() - t0;
            CHECK(rc == MPI_SUCCESS && bad == 0 && t < 1.5, "1000 gets from a rank asleep in its "
                  "computation: %.3f s (it sleeps 3 s), %ld wrong", t, bad);
            printf("t_rma: 1000 passive-target gets from a sleeping rank in %.1f ms\n", t * 1e3);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(src);
    free(got);
    free_win(&win);
}

static void atomics(void)
{
    MPI_Win win;
    long *part;
    make_win(N * sizeof(long), sizeof(long), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; i++)
        part[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    enum { K = 50 };
    long one = 1, got[K];
    int rc = MPI_Win_lock_all(0, win);
    for (int k = 0; k < K; k++) {
        rc |= MPI_Fetch_and_op(&one, &got[k], MPI_LONG, 0, 0, MPI_SUM, win);
        rc |= MPI_Win_flush(0, win);
    }
    rc |= MPI_Win_unlock_all(win);
    long *all = malloc(sizeof *all * K * (size_t)size);
    MPI_Allgather(got, K, MPI_LONG, all, K, MPI_LONG, MPI_COMM_WORLD);
    char *seen = calloc((size_t)(K * size), 1);
    long bad = 0;
    for (int i = 0; i < K * size; i++) {
        if (all[i] < 0 || all[i] >= K * size || seen[all[i]]++)
            bad++;
    }
    CHECK(rc == MPI_SUCCESS && bad == 0, "fetch_and_op: every value fetched once (rc %d, %ld "
          "wrong)", rc, bad);
    free(all);
    free(seen);
    /* a spin lock of compare_and_swap at part[1] guards part[2] */
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Win_lock_all(0, win);
    long me = rank + 1, zero = 0, old;
    for (int k = 0; k < 20; k++) {
        do {
            rc |= MPI_Compare_and_swap(&me, &zero, &old, MPI_LONG, 0, 1, win);
            rc |= MPI_Win_flush(0, win);
        } while (old != 0 && rc == MPI_SUCCESS);
        long c = -1;
        rc |= MPI_Get(&c, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
        rc |= MPI_Win_flush(0, win);
        c++;
        rc |= MPI_Put(&c, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
        rc |= MPI_Win_flush(0, win);
        rc |= MPI_Compare_and_swap(&zero, &me, &old, MPI_LONG, 0, 1, win);
        rc |= MPI_Win_flush(0, win);
        bad += old != me;
    }
    rc |= MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    if (rank == 0)
        CHECK(rc == MPI_SUCCESS && bad == 0 && part[2] == 20 * size && part[1] == 0,
              "compare_and_swap lock: counter %ld, expected %d (rc %d, %ld bad releases)",
              part[2], 20 * size, rc, bad);
    /* get_accumulate of a vector at fence; MPI_NO_OP reads, MPI_REPLACE swaps */
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++)
        part[i] = i;
    long *v = malloc(N * sizeof *v), *res = malloc(N * sizeof *res);
    for (int i = 0; i < N; i++)
        v[i] = 1;
    MPI_Win_fence(0, win);
    int right = (rank + 1) % size;
    rc = MPI_Get_accumulate(v, N, MPI_LONG, res, N, MPI_LONG, right, 0, N, MPI_LONG, MPI_SUM,
                            win);
    MPI_Win_fence(0, win);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += res[i] != i || part[i] != i + 1;
    MPI_Win_fence(0, win);
    rc |= MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, res, N, MPI_LONG, right, 0, N, MPI_LONG,
                             MPI_NO_OP, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++)
        bad += res[i] != i + 1 || part[i] != i + 1;
    MPI_Win_fence(0, win);  /* (everybody has read its part before the swaps) */
    long nv = 1000 + rank, prev = -1;
    rc |= MPI_Fetch_and_op(&nv, &prev, MPI_LONG, right, 5, MPI_REPLACE, win);
    MPI_Win_fence(0, win);
    int left = (rank + size - 1) % size;
    bad += prev != 6 || part[5] != 1000 + left;
    CHECK(rc == MPI_SUCCESS && bad == 0, "get_accumulate (MPI_SUM, MPI_NO_OP), a swap: rc %d, "
          "%ld wrong", rc, bad);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_LONG, &two);
    MPI_Type_commit(&two);
    EXPECT(MPI_Compare_and_swap(&me, &zero, &old, two, 0, 0, win), MPI_ERR_TYPE,
           "compare_and_swap of a derived type");
    MPI_Type_free(&two);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    free(v);
    free(res);
    free_win(&win);
}

static void requests(void)
{
    MPI_Win win;
    int *part;
    make_win(4 * N * sizeof(int), sizeof(int), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 4 * N; i++)
        part[i] = i;
    MPI_Barrier(MPI_COMM_WORLD);
    int right = (rank + 1) % size;
    int *src = malloc(N * sizeof *src), *got = malloc(N * sizeof *got);
    int *old = malloc(N * sizeof *old), *mine = malloc(N * sizeof *mine);
    for (int i = 0; i < N; i++)
        src[i] = pat(rank, i);
    MPI_Request rq[6];
    int rc = MPI_Win_lock_all(0, win);
    rc |= MPI_Rput(src, N, MPI_INT, right, 0, N, MPI_INT, win, &rq[0]);
    rc |= MPI_Rget(mine, N, MPI_INT, rank, N, N, MPI_INT, win, &rq[1]);
    rc |= MPI_Raccumulate(src, N, MPI_INT, right, 2 * N, N, MPI_INT, MPI_SUM, win, &rq[2]);
    rc |= MPI_Rget_accumulate(src, N, MPI_INT, old, N, MPI_INT, right, 3 * N, N, MPI_INT,
                              MPI_REPLACE, win, &rq[3]);
    rc |= MPI_Rput(src, N, MPI_INT, MPI_PROC_NULL, 0, N, MPI_INT, win, &rq[4]);
    rc |= MPI_Rget(got, 0, MPI_INT, right, 0, 0, MPI_INT, win, &rq[5]);
    rc |= MPI_Waitall(6, rq, MPI_STATUSES_IGNORE);
    /* the put took effect once its request completed: read it back */
    rc |= MPI_Get(got, N, MPI_INT, right, 0, N, MPI_INT, win);
    rc |= MPI_Win_flush(right, win);
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += got[i] != pat(rank, i) || mine[i] != N + i || old[i] != 3 * N + i;
    rc |= MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++)
        bad += part[2 * N + i] != 2 * N + i + pat(left, i) || part[3 * N + i] != pat(left, i);
    CHECK(rc == MPI_SUCCESS && bad == 0, "request-based operations: rc %d, %ld wrong", rc, bad);
    MPI_Win_fence(0, win);
    MPI_Request r = MPI_REQUEST_NULL;
    EXPECT(MPI_Rput(src, 1, MPI_INT, right, 0, 1, MPI_INT, win, &r), MPI_ERR_RMA_SYNC,
           "MPI_Rput in a fence epoch");
    CHECK(r == MPI_REQUEST_NULL, "no request from a refused MPI_Rput");
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    free(src);
    free(got);
    free(old);
    free(mine);
    free_win(&win);
}

static void pscw(void)
{
    MPI_Win win;
    int *part;
    make_win(2 * N * sizeof(int), sizeof(int), &part, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group wg, gl, gr;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, 1, &left, &gl);
    MPI_Group_incl(wg, 1, &right, &gr);
    int *src = malloc(N * sizeof *src);
    long bad = 0;
    int rc = MPI_SUCCESS;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 2 * N; i++)
            part[i] = 0;
        for (int i = 0; i < N; i++)
            src[i] = pat(rank, i) + round;
        MPI_Barrier(MPI_COMM_WORLD);  /* (everybody's part is reset) */
        rc |= MPI_Win_post(gl, 0, win);
        rc |= MPI_Win_start(gr, 0, win);
        rc |= MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win);
        rc |= MPI_Accumulate(src, N, MPI_INT, right, N, N, MPI_INT, MPI_SUM, win);
        rc |= MPI_Win_complete(win);
        if (round == 1) {
            int flag = 0;
            while (!flag && rc == MPI_SUCCESS)
                rc |= MPI_Win_test(win, &flag);
        } else {
            rc |= MPI_Win_wait(win);
        }
        for (int i = 0; i < N; i++)
            bad += part[i] != pat(left, i) + round || part[N + i] != pat(left, i) + round;
    }
    CHECK(rc == MPI_SUCCESS && bad == 0, "PSCW rounds to the right: rc %d, %ld wrong", rc, bad);
    int x = 0;
    EXPECT(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "complete without start");
    EXPECT(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "wait without post");
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Win_post(gl, 0, win);
    rc |= MPI_Win_start(gr, 0, win);
    if (size > 2)
        EXPECT(MPI_Put(&x, 1, MPI_INT, left, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC,
               "a put to a rank outside the access group");
    EXPECT(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC, "a fence in a PSCW epoch");
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "a lock in one");
    EXPECT(MPI_Win_post(gl, 0, win), MPI_ERR_RMA_SYNC, "a second post");
    rc |= MPI_Win_complete(win);
    rc |= MPI_Win_wait(win);
    CHECK(rc == MPI_SUCCESS, "the epochs close after the errors: %d", rc);
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&wg);
    free(src);
    free_win(&win);
}

/* MPI_Win_free is a barrier: rank 1 frees at once, and must still take
 * rank 0's lock, put and unlock, which come later (its memory, its own,
 * holds the put when the free returns); a free with a lock held is
 * MPI_ERR_RMA_SYNC. */
static void free_sync(void)
{
    int mem = -1, v = 7, rc = MPI_SUCCESS;
    MPI_Win win;
    MPI_Win_create(&mem, sizeof mem, sizeof mem, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (rank == 0 && size > 1) {
        usleep(100000);  /* the others are in MPI_Win_free by now */
        rc |= MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        rc |= MPI_Put(&v, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
        EXPECT(MPI_Win_free(&win), MPI_ERR_RMA_SYNC, "MPI_Win_free with a lock held");
        rc |= MPI_Win_unlock(1, win);
    }
    rc |= MPI_Win_free(&win);
    CHECK(rc == MPI_SUCCESS && win == MPI_WIN_NULL && mem == (rank == 1 ? v : -1),
          "MPI_Win_free waits for the others: rc %d, memory %d", rc, mem);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    int *part;
    MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
    ring(win, part, "MPI_Win_allocate");
    MPI_Win_free(&win);
    int *mine = calloc(N, sizeof *mine);  /* (make_win) */
    MPI_Win_create(mine, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    ring(win, mine, "MPI_Win_create");
    MPI_Win_free(&win);
    free(mine);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    if (nsize == size) {
        MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &part, &win);
        ring(win, part, "MPI_Win_allocate_shared");
        MPI_Aint sz;
        int du, *lp;
        int left = (rank + size - 1) % size, left2 = (rank + 2 * size - 2) % size;
        MPI_Win_shared_query(win, left, &sz, &du, &lp);
        long bad = 0;
        for (int i = 0; i < N; i++)
            bad += lp[i] != pat(left2, i);
        CHECK(bad == 0, "the left rank's part read by load: %ld wrong", bad);
        MPI_Win_free(&win);
    }
    MPI_Comm_free(&node);
    big();
    derived();
    accumulate();
    errors();
    passive();
    atomics();
    requests();
    large_counts();
    pscw();
    dynamic();
    free_sync();
    MPI_Finalize();
    return check_summary("t_rma");
}
