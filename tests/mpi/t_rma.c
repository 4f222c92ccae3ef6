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
 *   - the large-count forms, MPI_PROC_NULL;
 *   - errors: an operation before the first fence and after a fence with
 *     MPI_MODE_NOSUCCEED (MPI_ERR_RMA_SYNC), outside the target's part
 *     (MPI_ERR_RMA_RANGE), a bad rank, differing sizes, a user op, a
 *     dynamic window, a bad assert.
 */
#include <mpi.h>
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
    MPI_Win_allocate(BIG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
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
    MPI_Win_free(&win);
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
    MPI_Win_allocate(3 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
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
    MPI_Win_free(&win);
    MPI_Type_free(&o2);
    MPI_Type_free(&t3);
    free(src);
    free(got);
}

static void accumulate(void)
{
    MPI_Win win;
    long *part;
    MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
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
    MPI_Win_free(&win);
}

static void errors(void)
{
    MPI_Win win;
    int *part;
    MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
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
    MPI_Win_free(&win);
    MPI_Win dyn;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, dyn);
    EXPECT(MPI_Put(x, 1, MPI_INT, 0, 0, 1, MPI_INT, dyn), MPI_ERR_RMA_FLAVOR, "a dynamic window");
    MPI_Win_fence(0, dyn);
    MPI_Win_free(&dyn);
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
    int *mine = malloc(N * sizeof *mine);
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
    MPI_Finalize();
    return check_summary("t_rma");
}
