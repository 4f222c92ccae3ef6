/*
 * Differential datatype program: builds a fixed set of derived types and
 * prints, for each, size, bounds, decoding (envelope and contents) and the
 * bytes of MPI_Pack and MPI_Pack_external("external32") as hex.  It
 * compiles against any MPI; run_diff.sh builds it with Debian's MPICH and
 * with Cadence and requires identical output.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char src[1 << 16];

static void hex(const char *what, const unsigned char *p, long n)
{
    printf("  %s %ld:", what, n);
    for (long i = 0; i < n; i++)
        printf("%s%02x", i % 32 ? "" : "\n    ", p[i]);
    printf("\n");
}

/* with_ext32: also pack external32 (Debian's MPICH 4.0.2 dies with SIGILL in
 * MPI_Pack_external_size for struct types, so those skip it). */
static void show_x(const char *name, MPI_Datatype t, int count, long base, int with_ext32)
{
    MPI_Count size;
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_commit(&t);
    MPI_Type_size_c(t, &size);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    printf("%s: size %ld lb %ld extent %ld true_lb %ld true_extent %ld\n", name, (long)size, (long)lb,
           (long)ext, (long)tlb, (long)text);
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    printf("  envelope combiner %d ints %d addresses %d types %d\n", comb, ni, na, nd);
    if (comb != MPI_COMBINER_NAMED) {
        int *ints = malloc(sizeof(int) * (ni + 1));
        MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (na + 1));
        MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (nd + 1));
        MPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
        printf("  ints");
        for (int i = 0; i < ni; i++)
            printf(" %d", ints[i]);
        printf("\n  addresses");
        for (int i = 0; i < na; i++)
            printf(" %ld", (long)aints[i]);
        printf("\n  types");
        for (int i = 0; i < nd; i++) {
            int a, b, c, k;
            MPI_Type_get_envelope(types[i], &a, &b, &c, &k);
            printf(" combiner=%d", k);
            if (k != MPI_COMBINER_NAMED)
                MPI_Type_free(&types[i]);
        }
        printf("\n");
        free(ints), free(aints), free(types);
    }
    int psize, pos = 0;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    unsigned char *out = malloc((size_t)psize + 1);
    MPI_Pack(src + base, count, t, out, psize, &pos, MPI_COMM_WORLD);
    hex("pack", out, pos);
    free(out);
    if (!with_ext32)
        return;
    MPI_Aint xsize, xpos = 0;
    MPI_Pack_external_size("external32", count, t, &xsize);
    unsigned char *xout = malloc((size_t)xsize + 1);
    MPI_Pack_external("external32", src + base, count, t, xout, xsize, &xpos);
    hex("external32", xout, (long)xpos);
    free(xout);
}

static void show(const char *name, MPI_Datatype t, int count, long base)
{
    show_x(name, t, count, base, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    MPI_Datatype t, u, v;

    MPI_Type_vector(3, 2, 5, MPI_INT, &t);
    show("vector", t, 2, 0);
    MPI_Type_create_hvector(3, 1, -24, MPI_DOUBLE, &u);
    show("hvector_negative", u, 1, 4096);
    int bl[3] = {2, 1, 3}, di[3] = {4, 0, 9};
    MPI_Type_indexed(3, bl, di, MPI_SHORT, &v);
    show("indexed", v, 2, 0);
    MPI_Aint hd[3] = {40, -8, 100};
    MPI_Datatype h;
    MPI_Type_create_hindexed(3, bl, hd, MPI_LONG, &h);
    show("hindexed_long", h, 1, 1024);
    MPI_Datatype ib;
    int ibd[3] = {3, 0, 7};
    MPI_Type_create_indexed_block(3, 2, ibd, MPI_FLOAT, &ib);
    show("indexed_block", ib, 2, 0);

    int sbl[4] = {1, 2, 1, 3};
    MPI_Aint sd[4] = {0, 8, 20, 33};
    MPI_Datatype sts[4] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT, MPI_CHAR}, s;
    MPI_Type_create_struct(4, sbl, sd, sts, &s);
    show_x("struct_holes", s, 3, 0, 0);
    MPI_Aint sd2[2] = {0, 16};
    int sbl2[2] = {2, 1};
    MPI_Datatype sts2[2] = {t, s}, s2;
    MPI_Type_create_struct(2, sbl2, sd2, sts2, &s2);
    show_x("struct_nested", s2, 1, 0, 0);

    int sz[3] = {5, 6, 7}, sub[3] = {2, 3, 4}, st[3] = {1, 2, 3};
    MPI_Datatype sc, sf;
    MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_INT, &sc);
    show("subarray_c", sc, 1, 0);
    MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_SHORT, &sf);
    show("subarray_fortran", sf, 2, 0);

    int g[3] = {9, 7, 4}, dist[3] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
    int dargs[3] = {MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_DISTRIBUTE_DFLT_DARG}, ps[3] = {2, 3, 1};
    for (int rank = 0; rank < 6; rank += 5) {
        MPI_Datatype d;
        char name[32];
        MPI_Type_create_darray(6, rank, 3, g, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &d);
        snprintf(name, sizeof name, "darray_c_rank%d", rank);
        show(name, d, 1, 0);
        MPI_Type_free(&d);
        MPI_Type_create_darray(6, rank, 3, g, dist, dargs, ps, MPI_ORDER_FORTRAN, MPI_DOUBLE, &d);
        snprintf(name, sizeof name, "darray_fortran_rank%d", rank);
        show(name, d, 1, 0);
        MPI_Type_free(&d);
    }
    int g2[2] = {10, 10}, dist2[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
    int dargs2[2] = {3, 4}, ps2[2] = {2, 3};
    MPI_Datatype d2;
    MPI_Type_create_darray(6, 4, 2, g2, dist2, dargs2, ps2, MPI_ORDER_C, MPI_CHAR, &d2);
    show("darray_cyclic3_block4", d2, 1, 0);

    MPI_Datatype r, r2;
    MPI_Type_create_resized(v, -6, 40, &r);
    show("resized", r, 3, 64);
    MPI_Type_contiguous(3, r, &r2);
    show("contiguous_of_resized", r2, 1, 64);
    MPI_Datatype dup;
    MPI_Type_dup(s, &dup);
    show_x("dup", dup, 1, 0, 0);

    MPI_Datatype pairs[6] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_2INT, MPI_LONG_LONG};
    const char *pn[6] = {"MPI_FLOAT_INT", "MPI_DOUBLE_INT", "MPI_LONG_INT", "MPI_SHORT_INT", "MPI_2INT", "MPI_LONG_LONG"};
    for (int i = 0; i < 6; i++)  /* MPICH 4.0.2 asserts in external32 of the struct-like pairs */
        show_x(pn[i], pairs[i], 3, 0, i >= 5);

    MPI_Type_free(&t), MPI_Type_free(&u), MPI_Type_free(&v), MPI_Type_free(&h), MPI_Type_free(&ib);
    MPI_Type_free(&s), MPI_Type_free(&s2), MPI_Type_free(&sc), MPI_Type_free(&sf), MPI_Type_free(&d2);
    MPI_Type_free(&r), MPI_Type_free(&r2), MPI_Type_free(&dup);
    MPI_Finalize();
    return 0;
}
