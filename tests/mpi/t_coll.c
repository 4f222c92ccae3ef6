/*
 * Every intracommunicator collective in its three forms (blocking,
 * MPI_I..., persistent started twice with new data) checked against a
 * serial reference computed locally: in-place variants, a derived type,
 * the large-count _c forms, non-commutative user ops (composition of
 * affine maps, applied in rank order), and message sizes on both sides of
 * every algorithm switch (the sizes are the program's arguments).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"
#include "coll_forms.h"

static int rank, size;

static int val(int r, long i, int it)
{
    return (int)((r * 1000 + i * 7 + it * 13) % 100003);
}

static void affine_val(int r, long i, int it, int *out)
{
    out[0] = (int)((r * 31 + i * 3 + it + 2) % M);
    out[1] = (int)((r * 17 + i + it * 5 + 1) % M);
}

static void t_barrier(struct form *f)
{
    for (int it = 0; it < 2; it++)
        COLL(f, MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, MPI_COMM_WORLD);
}

static void t_bcast(struct form *f, long n, int root)
{
    int *buf = malloc(sizeof(int) * (size_t)(n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            buf[i] = rank == root ? val(root, i, it) : -1;
        COLL(f, MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, buf, (int)n, MPI_INT, root,
             MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n; i++)
            bad += buf[i] != val(root, i, it);
        CHECK(bad == 0, "bcast n=%ld root=%d form %d: %ld wrong", n, root, f->kind, bad);
    }
    free(buf);
}

/* Derived type: every other int of a strided buffer. */
static void t_bcast_vector(struct form *f, long n)
{
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *buf = malloc(sizeof(int) * (size_t)(2 * n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < 2 * n; i++)
            buf[i] = rank == 0 || i % 2 ? (int)(i / 2) + it : -1;
        COLL(f, MPI_Bcast_c, MPI_Ibcast_c, MPI_Bcast_init_c, buf, 1, vec, 0, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < 2 * n; i++)
            bad += buf[i] != (i % 2 ? (int)(i / 2) + it : (int)(i / 2) + it);
        CHECK(bad == 0, "bcast vector n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    MPI_Type_free(&vec);
    free(buf);
}

static void t_gather_scatter(struct form *f, long n, int root, int in_place)
{
    int *mine = malloc(sizeof(int) * (size_t)(n + 1));
    int *all = malloc(sizeof(int) * (size_t)(n * size + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            mine[i] = val(rank, i, it);
        for (long i = 0; i < n * size; i++)
            all[i] = rank == root && in_place ? val((int)(i / n), i % n, it) : -1;
        const void *sb = rank == root && in_place ? MPI_IN_PLACE : mine;
        COLL(f, MPI_Gather, MPI_Igather, MPI_Gather_init, sb, (int)n, MPI_INT, all, (int)n,
             MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root) {
            long bad = 0;
            for (long i = 0; i < n * size; i++)
                bad += all[i] != val((int)(i / n), i % n, it);
            CHECK(bad == 0, "gather n=%ld root=%d ip=%d form %d: %ld wrong", n, root, in_place,
                  f->kind, bad);
        }
    }
    form_done(f);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n * size; i++)
            all[i] = rank == root ? val((int)(i / n), i % n, it + 5) : -1;
        for (long i = 0; i < n; i++)
            mine[i] = -1;
        void *rb = rank == root && in_place ? MPI_IN_PLACE : mine;
        COLL(f, MPI_Scatter, MPI_Iscatter, MPI_Scatter_init, all, (int)n, MPI_INT, rb, (int)n,
             MPI_INT, root, MPI_COMM_WORLD);
        long bad = 0;
        if (!(rank == root && in_place))
            for (long i = 0; i < n; i++)
                bad += mine[i] != val(rank, i, it + 5);
        CHECK(bad == 0, "scatter n=%ld root=%d ip=%d form %d: %ld wrong", n, root, in_place,
              f->kind, bad);
    }
    free(mine);
    free(all);
}

/* v-forms: rank r has n + r elements, placed in reverse rank order with a gap. */
static void t_gatherv_scatterv(struct form *f, long n, int root)
{
    int counts[64], displs[64], total = 0;
    for (int r = size - 1; r >= 0; r--) {
        counts[r] = (int)n + r;
        displs[r] = total + 1;
        total += counts[r] + 1;
    }
    int *mine = malloc(sizeof(int) * (size_t)(n + size + 1));
    int *all = malloc(sizeof(int) * (size_t)(total + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < counts[rank]; i++)
            mine[i] = val(rank, i, it);
        for (int i = 0; i < total; i++)
            all[i] = -1;
        COLL(f, MPI_Gatherv, MPI_Igatherv, MPI_Gatherv_init, mine, counts[rank], MPI_INT, all,
             counts, displs, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root) {
            long bad = 0;
            for (int r = 0; r < size; r++)
                for (long i = 0; i < counts[r]; i++)
                    bad += all[displs[r] + i] != val(r, i, it);
            CHECK(bad == 0, "gatherv n=%ld form %d: %ld wrong", n, f->kind, bad);
        }
    }
    form_done(f);
    for (int it = 0; it < 2; it++) {
        for (int r = 0; r < size; r++)
            for (long i = 0; i < counts[r]; i++)
                all[displs[r] + i] = val(r, i, it + 3);
        for (long i = 0; i < counts[rank]; i++)
            mine[i] = -1;
        COLL(f, MPI_Scatterv, MPI_Iscatterv, MPI_Scatterv_init, all, counts, displs, MPI_INT,
             mine, counts[rank], MPI_INT, root, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < counts[rank]; i++)
            bad += mine[i] != val(rank, i, it + 3);
        CHECK(bad == 0, "scatterv n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(mine);
    free(all);
}

static void t_allgather(struct form *f, long n, int in_place)
{
    int *mine = malloc(sizeof(int) * (size_t)(n + 1));
    int *all = malloc(sizeof(int) * (size_t)(n * size + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            mine[i] = val(rank, i, it);
        for (long i = 0; i < n * size; i++)
            all[i] = in_place && i / n == rank ? val(rank, i % n, it) : -1;
        COLL(f, MPI_Allgather, MPI_Iallgather, MPI_Allgather_init,
             in_place ? MPI_IN_PLACE : mine, (int)n, MPI_INT, all, (int)n, MPI_INT,
             MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n * size; i++)
            bad += all[i] != val((int)(i / n), i % n, it);
        CHECK(bad == 0, "allgather n=%ld ip=%d form %d: %ld wrong", n, in_place, f->kind, bad);
    }
    free(mine);
    free(all);
}

static void t_allgatherv(struct form *f, long n)
{
    MPI_Count counts[64];
    MPI_Aint displs[64];
    long total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = n + 2 * r;
        displs[r] = total;
        total += counts[r] + 3;
    }
    int *mine = malloc(sizeof(int) * (size_t)(n + 2 * size + 1));
    int *all = malloc(sizeof(int) * (size_t)(total + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < counts[rank]; i++)
            mine[i] = val(rank, i, it);
        for (long i = 0; i < total; i++)
            all[i] = -1;
        COLL(f, MPI_Allgatherv_c, MPI_Iallgatherv_c, MPI_Allgatherv_init_c, mine, counts[rank],
             MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        long bad = 0;
        for (int r = 0; r < size; r++)
            for (long i = 0; i < counts[r]; i++)
                bad += all[displs[r] + i] != val(r, i, it);
        CHECK(bad == 0, "allgatherv_c n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(mine);
    free(all);
}

/* block (from -> to), element i */
static int a2a(int from, int to, long i, int it)
{
    return val(from * 10 + to, i, it);
}

static void t_alltoall(struct form *f, long n, int in_place)
{
    int *sb = malloc(sizeof(int) * (size_t)(n * size + 1));
    int *rb = malloc(sizeof(int) * (size_t)(n * size + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n * size; i++) {
            sb[i] = a2a(rank, (int)(i / n), i % n, it);
            rb[i] = in_place ? sb[i] : -1;
        }
        COLL(f, MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init, in_place ? MPI_IN_PLACE : sb,
             (int)n, MPI_INT, rb, (int)n, MPI_INT, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n * size; i++)
            bad += rb[i] != a2a((int)(i / n), rank, i % n, it);
        CHECK(bad == 0, "alltoall n=%ld ip=%d form %d: %ld wrong", n, in_place, f->kind, bad);
    }
    free(sb);
    free(rb);
}

/* alltoallv and alltoallw: block to r has n + r elements (sender's view: its
 * block to rank r; receiver gets n + rank from everyone). */
static void t_alltoallvw(struct form *f, long n, int w)
{
    int sc[64], sd[64], rc[64], rd[64], st = 0, rt = 0;
    MPI_Datatype types[64];
    for (int r = 0; r < size; r++) {
        sc[r] = (int)n + r;
        sd[r] = st;
        st += sc[r] + 1;
        rc[r] = (int)n + rank;
        rd[r] = rt;
        rt += rc[r] + 2;
        types[r] = MPI_INT;
    }
    int *sb = malloc(sizeof(int) * (size_t)(st + 1)), *rb = malloc(sizeof(int) * (size_t)(rt + 1));
    int sdb[64], rdb[64];
    for (int r = 0; r < size; r++) {
        sdb[r] = sd[r] * (int)sizeof(int);
        rdb[r] = rd[r] * (int)sizeof(int);
    }
    for (int it = 0; it < 2; it++) {
        for (int r = 0; r < size; r++)
            for (long i = 0; i < sc[r]; i++)
                sb[sd[r] + i] = a2a(rank, r, i, it);
        for (int i = 0; i < rt; i++)
            rb[i] = -1;
        if (w)
            COLL(f, MPI_Alltoallw, MPI_Ialltoallw, MPI_Alltoallw_init, sb, sc, sdb, types, rb, rc,
                 rdb, types, MPI_COMM_WORLD);
        else
            COLL(f, MPI_Alltoallv, MPI_Ialltoallv, MPI_Alltoallv_init, sb, sc, sd, MPI_INT, rb,
                 rc, rd, MPI_INT, MPI_COMM_WORLD);
        long bad = 0;
        for (int r = 0; r < size; r++)
            for (long i = 0; i < rc[r]; i++)
                bad += rb[rd[r] + i] != a2a(r, rank, i, it);
        CHECK(bad == 0, "alltoall%c n=%ld form %d: %ld wrong", w ? 'w' : 'v', n, f->kind, bad);
    }
    free(sb);
    free(rb);
}

/* Reductions: SUM of ints, and the non-commutative affine op on int pairs. */
static void t_reduce(struct form *f, long n, int root, int in_place, MPI_Op affine_op)
{
    int *sb = malloc(sizeof(int) * (size_t)(2 * n + 1)), *rb = malloc(sizeof(int) * (size_t)(2 * n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            sb[i] = val(rank, i, it);
            rb[i] = rank == root && in_place ? sb[i] : -1;
        }
        COLL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init,
             rank == root && in_place ? MPI_IN_PLACE : sb, rb, (int)n, MPI_INT, MPI_SUM, root,
             MPI_COMM_WORLD);
        if (rank == root) {
            long bad = 0;
            for (long i = 0; i < n; i++) {
                long ref = 0;
                for (int r = 0; r < size; r++)
                    ref += val(r, i, it);
                bad += rb[i] != ref;
            }
            CHECK(bad == 0, "reduce sum n=%ld root=%d ip=%d form %d: %ld wrong", n, root,
                  in_place, f->kind, bad);
        }
    }
    form_done(f);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            affine_val(rank, i, it, &sb[2 * i]);
        COLL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, sb, rb, (int)n, pair, affine_op, root,
             MPI_COMM_WORLD);
        if (rank == root) {
            long bad = 0;
            for (long i = 0; i < n; i++) {
                int acc[2] = {1, 0}, x[2];
                for (int r = 0; r < size; r++) {
                    affine_val(r, i, it, x);
                    affine_ref(acc, x);
                }
                bad += rb[2 * i] != acc[0] || rb[2 * i + 1] != acc[1];
            }
            CHECK(bad == 0, "reduce affine n=%ld root=%d form %d: %ld wrong", n, root, f->kind,
                  bad);
        }
    }
    MPI_Type_free(&pair);
    free(sb);
    free(rb);
}

static void t_allreduce(struct form *f, long n, int in_place, MPI_Op affine_op)
{
    double *sb = malloc(sizeof(double) * (size_t)(n + 1)), *rb = malloc(sizeof(double) * (size_t)(n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            sb[i] = val(rank, i, it) * 0.5;
            rb[i] = in_place ? sb[i] : -1;
        }
        COLL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, in_place ? MPI_IN_PLACE : sb,
             rb, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            double ref = 0;
            for (int r = 0; r < size; r++)
                ref += val(r, i, it) * 0.5;
            bad += rb[i] != ref;
        }
        CHECK(bad == 0, "allreduce sum n=%ld ip=%d form %d: %ld wrong", n, in_place, f->kind, bad);
    }
    form_done(f);
    /* MAXLOC on MPI_DOUBLE_INT */
    struct { double v; int i; } *dsb = malloc(sizeof *dsb * (size_t)(n + 1)),
                                *drb = malloc(sizeof *drb * (size_t)(n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            dsb[i].v = (double)((rank * 7 + i + it) % 3);
            dsb[i].i = rank;
        }
        COLL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, dsb, drb, (int)n,
             MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            double best = -1;
            int who = -1;
            for (int r = 0; r < size; r++) {
                double v = (double)((r * 7 + i + it) % 3);
                if (v > best)
                    best = v, who = r;
            }
            bad += drb[i].v != best || drb[i].i != who;
        }
        CHECK(bad == 0, "allreduce maxloc n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    form_done(f);
    free(dsb);
    free(drb);
    /* non-commutative */
    int *isb = malloc(sizeof(int) * (size_t)(2 * n + 1)), *irb = malloc(sizeof(int) * (size_t)(2 * n + 1));
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++)
            affine_val(rank, i, it, &isb[2 * i]);
        COLL(f, MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c, isb, irb, n, pair,
             affine_op, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int acc[2] = {1, 0}, x[2];
            for (int r = 0; r < size; r++) {
                affine_val(r, i, it, x);
                affine_ref(acc, x);
            }
            bad += irb[2 * i] != acc[0] || irb[2 * i + 1] != acc[1];
        }
        CHECK(bad == 0, "allreduce affine n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    MPI_Type_free(&pair);
    free(isb);
    free(irb);
    free(sb);
    free(rb);
}

/* A derived type (every other int) reduced with a predefined op. */
static void t_allreduce_vector(struct form *f, long n)
{
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *sb = malloc(sizeof(int) * (size_t)(2 * n + 1)), *rb = malloc(sizeof(int) * (size_t)(2 * n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < 2 * n; i++) {
            sb[i] = val(rank, i, it);
            rb[i] = -7;
        }
        COLL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, sb, rb, 1, vec, MPI_MAX,
             MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < 2 * n; i++) {
            int ref = -7;
            if (i % 2 == 0) {
                ref = val(0, i, it);
                for (int r = 1; r < size; r++)
                    ref = val(r, i, it) > ref ? val(r, i, it) : ref;
            }
            bad += rb[i] != ref;
        }
        CHECK(bad == 0, "allreduce vector max n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    MPI_Type_free(&vec);
    free(sb);
    free(rb);
}

static void t_reduce_scatter(struct form *f, long n, int in_place)
{
    int counts[64];
    long total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (int)n + r;
        total += counts[r];
    }
    long mystart = 0;
    for (int r = 0; r < rank; r++)
        mystart += counts[r];
    int *sb = malloc(sizeof(int) * (size_t)(total + 1)), *rb = malloc(sizeof(int) * (size_t)(total + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < total; i++) {
            sb[i] = val(rank, i, it);
            rb[i] = in_place ? sb[i] : -1;
        }
        COLL(f, MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_Reduce_scatter_init,
             in_place ? MPI_IN_PLACE : sb, rb, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < counts[rank]; i++) {
            long ref = 0;
            for (int r = 0; r < size; r++)
                ref += val(r, mystart + i, it);
            bad += rb[i] != ref;
        }
        CHECK(bad == 0, "reduce_scatter n=%ld ip=%d form %d: %ld wrong", n, in_place, f->kind, bad);
    }
    form_done(f);
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n * size; i++)
            sb[i] = val(rank, i, it + 1);
        COLL(f, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init,
             sb, rb, (int)n, MPI_INT, MPI_BXOR, MPI_COMM_WORLD);
        long bad = 0;
        for (long i = 0; i < n; i++) {
            int ref = 0;
            for (int r = 0; r < size; r++)
                ref ^= val(r, rank * n + i, it + 1);
            bad += rb[i] != ref;
        }
        CHECK(bad == 0, "reduce_scatter_block n=%ld form %d: %ld wrong", n, f->kind, bad);
    }
    free(sb);
    free(rb);
}

static void t_scan(struct form *f, long n, int exclusive, int in_place, MPI_Op affine_op)
{
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int *sb = malloc(sizeof(int) * (size_t)(2 * n + 1)), *rb = malloc(sizeof(int) * (size_t)(2 * n + 1));
    for (int it = 0; it < 2; it++) {
        for (long i = 0; i < n; i++) {
            affine_val(rank, i, it, &sb[2 * i]);
            rb[2 * i] = in_place ? sb[2 * i] : -1;
            rb[2 * i + 1] = in_place ? sb[2 * i + 1] : -1;
        }
        const void *s = in_place ? MPI_IN_PLACE : sb;
        if (exclusive)
            COLL(f, MPI_Exscan, MPI_Iexscan, MPI_Exscan_init, s, rb, (int)n, pair, affine_op,
                 MPI_COMM_WORLD);
        else
            COLL(f, MPI_Scan, MPI_Iscan, MPI_Scan_init, s, rb, (int)n, pair, affine_op,
                 MPI_COMM_WORLD);
        long bad = 0;
        int upto = exclusive ? rank - 1 : rank;
        for (long i = 0; i < n && upto >= 0; i++) {
            int acc[2] = {1, 0}, x[2];
            for (int r = 0; r <= upto; r++) {
                affine_val(r, i, it, x);
                affine_ref(acc, x);
            }
            bad += rb[2 * i] != acc[0] || rb[2 * i + 1] != acc[1];
        }
        CHECK(bad == 0, "%s n=%ld ip=%d form %d: %ld wrong", exclusive ? "exscan" : "scan", n,
              in_place, f->kind, bad);
    }
    MPI_Type_free(&pair);
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op affine_op;
    MPI_Op_create(affine, 0, &affine_op);
    long sizes[16];
    int nsizes = coll_sizes(argc, argv, sizes, 16);
    for (int kind = 0; kind < 3; kind++) {
        RUN(t_barrier(f));
        for (int k = 0; k < nsizes; k++) {
            long n = sizes[k];
            for (int root = 0; root < size; root++) {
                RUN(t_bcast(f, n, root));
                RUN(t_gather_scatter(f, n, root, root % 2));
                RUN(t_gatherv_scatterv(f, n, root));
                RUN(t_reduce(f, n, root, root % 2 == 0, affine_op));
            }
            RUN(t_bcast_vector(f, n));
            RUN(t_allgather(f, n, 0));
            RUN(t_allgather(f, n, 1));
            RUN(t_allgatherv(f, n));
            RUN(t_alltoall(f, n, 0));
            RUN(t_alltoall(f, n, 1));
            RUN(t_alltoallvw(f, n, 0));
            RUN(t_alltoallvw(f, n, 1));
            RUN(t_allreduce(f, n, 0, affine_op));
            RUN(t_allreduce(f, n, 1, affine_op));
            RUN(t_allreduce_vector(f, n));
            RUN(t_reduce_scatter(f, n, 0));
            RUN(t_reduce_scatter(f, n, 1));
            RUN(t_scan(f, n, 0, 0, affine_op));
            RUN(t_scan(f, n, 1, 0, affine_op));
            RUN(t_scan(f, n, 0, 1, affine_op));
            RUN(t_scan(f, n, 1, 1, affine_op));
        }
    }
    MPI_Op_free(&affine_op);
    int failed = check_summary("t_coll") != 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
