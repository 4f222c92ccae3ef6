/*
 * Intercommunicator collectives in their three forms (blocking, MPI_I...,
 * persistent started twice with new data), checked against serial
 * references computed locally.  MPI_COMM_WORLD is split unevenly twice
 * ({0} | {1..} and the lower half | the upper half) and joined by
 * MPI_Intercomm_create; every root choice (MPI_ROOT / MPI_PROC_NULL /
 * remote rank), a derived type, the large-count _c forms, a
 * non-commutative user op applied in the contributing group's rank order,
 * the refusals (MPI_IN_PLACE, scan, neighbourhood, bad root) with
 * MPI_ERRORS_RETURN, and many nonblocking ones outstanding together.
 * Message sizes are the program's arguments.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"
#include "coll_forms.h"

/* One side of the intercommunicator under test. */
static MPI_Comm ic;
static int grp, lr, ls, rs;  /* my group (0 lower, 1 upper), local rank/size, remote size */

/* Element i of what process r of group g contributes at iteration it. */
static int val(int g, int r, long i, int it)
{
    return (int)((g * 7919 + r * 1000 + i * 7 + it * 13) % 100003);
}

static void affine_val(int g, int r, long i, int it, int *out)
{
    out[0] = (int)((g * 5 + r * 31 + i * 3 + it + 2) % M);
    out[1] = (int)((g * 11 + r * 17 + i + it * 5 + 1) % M);
}
/* The composition over the n processes of group g, in rank order. */
static void affine_group(int g, int n, long i, int it, int *acc)
{
    affine_val(g, 0, i, it, acc);
    for (int r = 1; r < n; r++) {
        int x[2];
        affine_val(g, r, i, it, x);
        affine_ref(acc, x);
    }
}

static int *ints(long n)
{
    return malloc(sizeof(int) * (size_t)(n + 1));
}

/* The barrier completes in every form, and the user's point-to-point
 * traffic on the intercommunicator (group 1 to group 0's leader, sent just
 * before entering) still matches around it: collective messages keep to
 * their own context. */
static void t_barrier(struct form *f)
{
    for (int it = 0; it < 2; it++) {
        if (grp == 1)
            MPI_Send(&lr, 1, MPI_INT, 0, 40 + it, ic);
        COLL(f, MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, ic);
        if (grp == 0 && lr == 0)
            for (int j = 0; j < rs; j++) {
                int got = -1;
                MPI_Recv(&got, 1, MPI_INT, j, 40 + it, ic, MPI_STATUS_IGNORE);
                CHECK(got == j, "barrier: remote %d sent %d", j, got);
            }
    }
}

/* The root argument at this process when process rr of group rg is root. */
static int root_arg(int rg, int rr)
{
    return grp != rg ? rr : lr == rr ? MPI_ROOT : MPI_PROC_NULL;
}

static void t_bcast(struct form *f, long n, int rg, int rr)
{
    int *buf = ints(n);
    int root = root_arg(rg, rr);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            buf[i] = root == MPI_ROOT ? val(rg, rr, i, it) : -1;
        COLL(f, MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, buf, (int)n, MPI_INT, root, ic);
        long bad = 0;
        for (long i = 0; i < n; i++)
            bad += buf[i] != (root == MPI_PROC_NULL ? -1 : val(rg, rr, i, it));
        CHECK(bad == 0, "bcast n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind, bad);
    }
    free(buf);
}

/* Derived type (every other int), the _c forms; group 0's leader is root. */
static void t_bcast_vector(struct form *f, long n)
{
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *buf = ints(2 * n);
    int root = root_arg(0, 0);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < 2 * n; i++)
            buf[i] = root == MPI_ROOT || i % 2 ? (int)(i / 2) + it : -1;
        COLL(f, MPI_Bcast_c, MPI_Ibcast_c, MPI_Bcast_init_c, buf, 1, vec, root, ic);
        long bad = 0;
        for (long i = 0; i < 2 * n; i++)
            bad += buf[i] != (root == MPI_PROC_NULL && i % 2 == 0 ? -1 : (int)(i / 2) + it);
        CHECK(bad == 0, "bcast vector n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    MPI_Type_free(&vec);
    free(buf);
}

/* gather and scatter: the root holds one block per remote process. */
static void t_gather_scatter(struct form *f, long n, int rg, int rr)
{
    int root = root_arg(rg, rr);
    int *mine = ints(n), *all = ints(n * rs);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            mine[i] = val(grp, lr, i, it);
        for (long i = 0; i < n * rs; i++)
            all[i] = -1;
        COLL(f, MPI_Gather, MPI_Igather, MPI_Gather_init, mine, (int)n, MPI_INT, all, (int)n,
             MPI_INT, root, ic);
        long bad = 0;
        if (root == MPI_ROOT)
            for (long i = 0; i < n * rs; i++)
                bad += all[i] != val(1 - grp, (int)(i / n), i % n, it);
        CHECK(bad == 0, "gather n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind, bad);
    }
    form_done(f);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n * rs; i++)
            all[i] = root == MPI_ROOT ? val(grp, (int)(i / n), i % n, it + 5) : -1;
        for (long i = 0; i < n; i++)
            mine[i] = -1;
        COLL(f, MPI_Scatter, MPI_Iscatter, MPI_Scatter_init, all, (int)n, MPI_INT, mine, (int)n,
             MPI_INT, root, ic);
        long bad = 0;
        for (long i = 0; i < n; i++)
            bad += mine[i] != (root < 0 ? -1 : val(1 - grp, lr, i, it + 5));
        CHECK(bad == 0, "scatter n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind, bad);
    }
    free(mine);
    free(all);
}

/* v-forms (_c): remote process j has n + j elements, placed in reverse
 * order with a gap. */
static void t_gatherv_scatterv(struct form *f, long n, int rg, int rr)
{
    int root = root_arg(rg, rr);
    MPI_Count counts[64];
    MPI_Aint displs[64], total = 0;
    for (int j = rs - 1; j >= 0; j--) {
        counts[j] = n + j;
        displs[j] = total + 1;
        total += counts[j] + 1;
    }
    int *mine = ints(n + ls), *all = ints(total);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n + lr; i++)
            mine[i] = val(grp, lr, i, it);
        for (long i = 0; i < total; i++)
            all[i] = -1;
        COLL(f, MPI_Gatherv_c, MPI_Igatherv_c, MPI_Gatherv_init_c, mine, n + lr, MPI_INT, all,
             counts, displs, MPI_INT, root, ic);
        long bad = 0;
        if (root == MPI_ROOT)
            for (int j = 0; j < rs; j++) {
                for (long i = 0; i < counts[j]; i++)
                    bad += all[displs[j] + i] != val(1 - grp, j, i, it);
                bad += all[displs[j] - 1] != -1;
            }
        CHECK(bad == 0, "gatherv n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind, bad);
    }
    form_done(f);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < total; i++)
            all[i] = -1;
        if (root == MPI_ROOT)
            for (int j = 0; j < rs; j++)
                for (long i = 0; i < counts[j]; i++)
                    all[displs[j] + i] = val(grp, j, i, it + 3);
        for (long i = 0; i < n + lr; i++)
            mine[i] = -1;
        COLL(f, MPI_Scatterv_c, MPI_Iscatterv_c, MPI_Scatterv_init_c, all, counts, displs,
             MPI_INT, mine, n + lr, MPI_INT, root, ic);
        long bad = 0;
        for (long i = 0; i < n + lr; i++)
            bad += mine[i] != (root < 0 ? -1 : val(1 - grp, lr, i, it + 3));
        CHECK(bad == 0, "scatterv n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind,
              bad);
    }
    free(mine);
    free(all);
}

static void t_allgather(struct form *f, long n)
{
    int *mine = ints(n), *all = ints(n * rs);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            mine[i] = val(grp, lr, i, it);
        for (long i = 0; i < n * rs; i++)
            all[i] = -1;
        COLL(f, MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, mine, (int)n, MPI_INT, all,
             (int)n, MPI_INT, ic);
        long bad = 0;
        for (long i = 0; i < n * rs; i++)
            bad += all[i] != val(1 - grp, (int)(i / n), i % n, it);
        CHECK(bad == 0, "allgather n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(mine);
    free(all);
}

/* Remote process j contributes n + j elements, stored in reverse order. */
static void t_allgatherv(struct form *f, long n)
{
    int counts[64], displs[64], total = 0;
    for (int j = rs - 1; j >= 0; j--) {
        counts[j] = (int)n + j;
        displs[j] = total;
        total += counts[j];
    }
    int *mine = ints(n + ls), *all = ints(total);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n + lr; i++)
            mine[i] = val(grp, lr, i, it);
        for (long i = 0; i < total; i++)
            all[i] = -1;
        COLL(f, MPI_Allgatherv, MPI_Iallgatherv, MPI_Allgatherv_init, mine, (int)n + lr, MPI_INT,
             all, counts, displs, MPI_INT, ic);
        long bad = 0;
        for (int j = 0; j < rs; j++)
            for (long i = 0; i < counts[j]; i++)
                bad += all[displs[j] + i] != val(1 - grp, j, i, it);
        CHECK(bad == 0, "allgatherv n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(mine);
    free(all);
}

/* Block for remote process `to` from process `from` of group g. */
static int a2a(int g, int from, int to, long i, int it)
{
    return val(g, from, i + to * 3, it);
}

static void t_alltoall(struct form *f, long n)
{
    int *sb = ints(n * rs), *rb = ints(n * rs);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n * rs; i++) {
            sb[i] = a2a(grp, lr, (int)(i / n), i % n, it);
            rb[i] = -1;
        }
        COLL(f, MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init, sb, (int)n, MPI_INT, rb, (int)n,
             MPI_INT, ic);
        long bad = 0;
        for (long i = 0; i < n * rs; i++)
            bad += rb[i] != a2a(1 - grp, (int)(i / n), lr, i % n, it);
        CHECK(bad == 0, "alltoall n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(sb);
    free(rb);
}

/* alltoallv: process r of a group sends n + r + j elements to remote j,
 * blocks in reverse order; alltoallw (_c): the same with byte displacements
 * and a vector type (stride 2) on the receive side. */
static void t_alltoallvw(struct form *f, long n, int w)
{
    int sc[64], sd[64], rc[64], rd[64], stot = 0, rtot = 0;
    for (int j = rs - 1; j >= 0; j--) {
        sc[j] = (int)n + lr + j;
        sd[j] = stot;
        stot += sc[j];
        rc[j] = (int)n + j + lr;  /* remote j sends n + j + (my rank) */
        rd[j] = rtot;
        rtot += rc[j];
    }
    int *sb = ints(stot), *rb = ints(2 * rtot);
    MPI_Datatype two;  /* one int, extent two ints */
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &two);
    MPI_Type_commit(&two);
    MPI_Count csc[64], crc[64];
    MPI_Aint bsd[64], brd[64];
    MPI_Datatype st[64], rt[64];
    for (int j = 0; j < rs; j++) {
        csc[j] = sc[j], crc[j] = rc[j];
        bsd[j] = (MPI_Aint)sd[j] * (MPI_Aint)sizeof(int);
        brd[j] = (MPI_Aint)rd[j] * 2 * (MPI_Aint)sizeof(int);
        st[j] = MPI_INT, rt[j] = two;
    }
    for (int it = 0; it < 2; it++) {
        for (int j = 0; j < rs; j++)
            for (long i = 0; i < sc[j]; i++)
                sb[sd[j] + i] = a2a(grp, lr, j, i, it);
        for (long i = 0; i < 2 * rtot; i++)
            rb[i] = -1;
        if (w)
            COLL(f, MPI_Alltoallw_c, MPI_Ialltoallw_c, MPI_Alltoallw_init_c, sb, csc, bsd, st,
                 rb, crc, brd, rt, ic);
        else
            COLL(f, MPI_Alltoallv, MPI_Ialltoallv, MPI_Alltoallv_init, sb, sc, sd, MPI_INT, rb,
                 rc, rd, MPI_INT, ic);
        long bad = 0;
        for (int j = 0; j < rs; j++)
            for (long i = 0; i < rc[j]; i++)
                bad += w ? rb[2 * (rd[j] + i)] != a2a(1 - grp, j, lr, i, it) ||
                               rb[2 * (rd[j] + i) + 1] != -1
                         : rb[rd[j] + i] != a2a(1 - grp, j, lr, i, it);
        CHECK(bad == 0, "alltoall%s n=%ld form %d: %ld wrong", w ? "w" : "v", n, f->kind, bad);
    }
    MPI_Type_free(&two);
    free(sb);
    free(rb);
}

/* Reduce: SUM of ints, and the affine op on int pairs (rank order). */
static void t_reduce(struct form *f, long n, int rg, int rr, MPI_Op affine_op)
{
    int root = root_arg(rg, rr);
    int *sb = ints(2 * n), *rb = ints(2 * n);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            sb[i] = val(grp, lr, i, it);
            rb[i] = -1;
        }
        COLL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, sb, rb, (int)n, MPI_INT, MPI_SUM, root,
             ic);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int expect = root == MPI_ROOT ? 0 : -1;
            for (int j = 0; root == MPI_ROOT && j < rs; j++)
                expect += val(1 - grp, j, i, it);
            bad += rb[i] != expect;
        }
        CHECK(bad == 0, "reduce n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind, bad);
    }
    form_done(f);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            affine_val(grp, lr, i, it, &sb[2 * i]);
            rb[2 * i] = rb[2 * i + 1] = -1;
        }
        COLL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, sb, rb, (int)n, pair, affine_op, root,
             ic);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int acc[2] = {-1, -1};
            if (root == MPI_ROOT)
                affine_group(1 - grp, rs, i, it, acc);
            bad += rb[2 * i] != acc[0] || rb[2 * i + 1] != acc[1];
        }
        CHECK(bad == 0, "reduce affine n=%ld root %d/%d form %d: %ld wrong", n, rg, rr, f->kind,
              bad);
    }
    MPI_Type_free(&pair);
    free(sb);
    free(rb);
}

/* Allreduce: each group gets the other group's reduction (SUM, _c form;
 * then the affine op). */
static void t_allreduce(struct form *f, long n, MPI_Op affine_op)
{
    int *sb = ints(2 * n), *rb = ints(2 * n);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            sb[i] = val(grp, lr, i, it);
            rb[i] = -1;
        }
        COLL(f, MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c, sb, rb, n, MPI_INT,
             MPI_SUM, ic);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int expect = 0;
            for (int j = 0; j < rs; j++)
                expect += val(1 - grp, j, i, it);
            bad += rb[i] != expect;
        }
        CHECK(bad == 0, "allreduce n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    form_done(f);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            affine_val(grp, lr, i, it, &sb[2 * i]);
        COLL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, sb, rb, (int)n, pair,
             affine_op, ic);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int acc[2];
            affine_group(1 - grp, rs, i, it, acc);
            bad += rb[2 * i] != acc[0] || rb[2 * i + 1] != acc[1];
        }
        CHECK(bad == 0, "allreduce affine n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    MPI_Type_free(&pair);
    free(sb);
    free(rb);
}

/* Reduce_scatter(_block): both groups reduce T = 12 n elements (12 divides
 * among 1..4 processes); the other group's sum is scattered over mine.
 * The v-form moves half of block 0 to the last block. */
static void t_reduce_scatter(struct form *f, long n, int block)
{
    long T = 12 * n;
    int counts[64], displs[64], base = (int)(T / ls);
    for (int k = 0; k < ls; k++)
        counts[k] = base;
    if (ls > 1) {
        counts[0] -= base / 2;
        counts[ls - 1] += base / 2;
    }
    for (int k = 0, d = 0; k < ls; k++) {
        displs[k] = d;
        d += counts[k];
    }
    if (block)
        counts[lr] = base, displs[lr] = base * lr;
    int *sb = ints(T), *rb = ints(T);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < T; i++)
            sb[i] = val(grp, lr, i, it);
        for (long i = 0; i < counts[lr]; i++)
            rb[i] = -1;
        if (block)
            COLL(f, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                 MPI_Reduce_scatter_block_init, sb, rb, base, MPI_INT, MPI_SUM, ic);
        else
            COLL(f, MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_Reduce_scatter_init, sb, rb,
                 counts, MPI_INT, MPI_SUM, ic);
        long bad = 0;
        for (long i = 0; i < counts[lr]; i++) {
            int expect = 0;
            for (int j = 0; j < rs; j++)
                expect += val(1 - grp, j, displs[lr] + i, it);
            bad += rb[i] != expect;
        }
        CHECK(bad == 0, "reduce_scatter%s n=%ld form %d: %ld wrong", block ? "_block" : "", n,
              f->kind, bad);
    }
    free(sb);
    free(rb);
}

/* Many nonblocking collectives outstanding at once (allreduce, bcast from
 * group 0's leader, barrier, in turn), completed by one MPI_Waitall: their
 * nested local schedules must keep apart on the local communicator. */
#define OUTSTANDING 60
static void t_outstanding(void)
{
    int sb[OUTSTANDING], rb[OUTSTANDING];
    MPI_Request r[OUTSTANDING];
    int root = root_arg(0, 0);
    for (int k = 0; k < OUTSTANDING; k++) {
        sb[k] = val(grp, lr, k, 0);
        rb[k] = root == MPI_ROOT ? val(0, 0, k, 1) : -1;
        if (k % 3 == 0)
            MPI_Iallreduce(&sb[k], &rb[k], 1, MPI_INT, MPI_SUM, ic, &r[k]);
        else if (k % 3 == 1)
            MPI_Ibcast(&rb[k], 1, MPI_INT, root, ic, &r[k]);
        else
            MPI_Ibarrier(ic, &r[k]);
    }
    CHECK(MPI_Waitall(OUTSTANDING, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "outstanding waitall");
    long bad = 0;
    for (int k = 0; k < OUTSTANDING; k++) {
        int expect = k % 3 == 0 ? 0 : -1;
        if (k % 3 == 0)
            for (int j = 0; j < rs; j++)
                expect += val(1 - grp, j, k, 0);
        else if (k % 3 == 1)
            expect = root == MPI_PROC_NULL ? -1 : val(0, 0, k, 1);
        bad += k % 3 != 2 && rb[k] != expect;
    }
    CHECK(bad == 0, "%d outstanding collectives: %ld wrong", OUTSTANDING, bad);
}

static void expect_class(int rc, int cls, const char *what)
{
    int got = MPI_SUCCESS;
    MPI_Error_class(rc, &got);
    CHECK(got == cls, "%s: class %d, expected %d", what, got, cls);
}

/* Refusals, local to each process (no message is sent). */
static void t_errors(void)
{
    int a[8] = {0}, b[8] = {0}, counts[8] = {1, 1, 1, 1, 1, 1, 1, 1}, displs[8] = {0};
    MPI_Request r;
    expect_class(MPI_Allreduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_BUFFER,
                 "allreduce in place");
    expect_class(MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, ic, &r),
                 MPI_ERR_BUFFER, "iallgather in place");
    expect_class(MPI_Alltoall_init(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, ic, MPI_INFO_NULL,
                                   &r),
                 MPI_ERR_BUFFER, "alltoall_init in place");
    expect_class(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, MPI_ROOT, ic),
                 MPI_ERR_BUFFER, "gather in place at MPI_ROOT");
    expect_class(MPI_Reduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, MPI_ROOT, ic), MPI_ERR_BUFFER,
                 "reduce in place at MPI_ROOT");
    expect_class(MPI_Reduce_scatter(MPI_IN_PLACE, b, counts, MPI_INT, MPI_SUM, ic),
                 MPI_ERR_BUFFER, "reduce_scatter in place");
    expect_class(MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "scan");
    expect_class(MPI_Iexscan(a, b, 1, MPI_INT, MPI_SUM, ic, &r), MPI_ERR_COMM, "iexscan");
    expect_class(MPI_Neighbor_allgather(a, 1, MPI_INT, b, 1, MPI_INT, ic), MPI_ERR_COMM,
                 "neighbor_allgather");
    expect_class(MPI_Neighbor_alltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT,
                                        ic),
                 MPI_ERR_COMM, "neighbor_alltoallv");
    expect_class(MPI_Bcast(a, 1, MPI_INT, rs, ic), MPI_ERR_ROOT, "bcast root = remote size");
    expect_class(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, -5, ic), MPI_ERR_ROOT, "reduce root -5");
}

/* Everything on the intercommunicator of `lower` (world ranks below `split`) and the rest. */
static void run_split(int split, const long *sizes, int nsizes, MPI_Op affine_op)
{
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    grp = wrank >= split;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, grp, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, grp ? 0 : split, 17, &ic);
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    MPI_Comm_rank(ic, &lr);
    MPI_Comm_size(ic, &ls);
    MPI_Comm_remote_size(ic, &rs);
    t_errors();
    t_outstanding();
    for (int kind = 0; kind < 3; kind++) {
        RUN(t_barrier(f));
        for (int k = 0; k < nsizes; k++) {
            long n = sizes[k];
            for (int rg = 0; rg < 2; rg++)
                for (int rr = 0; rr < (rg == grp ? ls : rs); rr++) {
                    RUN(t_bcast(f, n, rg, rr));
                    RUN(t_gather_scatter(f, n, rg, rr));
                    RUN(t_gatherv_scatterv(f, n, rg, rr));
                    RUN(t_reduce(f, n, rg, rr, affine_op));
                }
            RUN(t_bcast_vector(f, n));
            RUN(t_allgather(f, n));
            RUN(t_allgatherv(f, n));
            RUN(t_alltoall(f, n));
            RUN(t_alltoallvw(f, n, 0));
            RUN(t_alltoallvw(f, n, 1));
            RUN(t_allreduce(f, n, affine_op));
            RUN(t_reduce_scatter(f, n, 0));
            RUN(t_reduce_scatter(f, n, 1));
        }
    }
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wsize;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Op affine_op;
    MPI_Op_create(affine, 0, &affine_op);
    long sizes[16];
    int nsizes = coll_sizes(argc, argv, sizes, 16);
    CHECK(wsize >= 2, "an intercommunicator needs two processes (have %d)", wsize);
    if (wsize >= 2) {
        run_split(1, sizes, nsizes, affine_op);                   /* {0} | {1..} */
        if (wsize > 2)
            run_split((wsize + 1) / 2, sizes, nsizes, affine_op);  /* lower | upper half */
    }
    MPI_Op_free(&affine_op);
    int failed = check_summary("t_coll_inter") != 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
