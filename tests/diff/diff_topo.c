/* Differential topology program: built with Debian's MPICH and with
 * Cadence, run at the same number of ranks, the sorted outputs must match:
 * MPI_Dims_create answers, Cartesian coordinates, ranks, shifts and
 * sub-grids, graph and distributed graph neighbour lists.  Each line starts
 * with the rank that printed it. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_rank_out.h"


static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "r%d ", rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(outf, "%s\n", line);
}

static void list(char *buf, size_t cap, const int *v, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 16 < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", i ? "," : "", v[i]);
}

static void dims_create(void)
{
    char b[256];
    for (int nn = 1; nn <= 72; nn++)
        for (int nd = 1; nd <= 4; nd++) {
            int d[4] = {0, 0, 0, 0};
            MPI_Dims_create(nn, nd, d);
            list(b, sizeof b, d, nd);
            out("dims %d %d -> %s", nn, nd, b);
        }
    static const int fixed[][5] = {  /* nnodes, dims[4] (ndims 4 unless trailing -9) */
        {12, 0, 3, 0, -9}, {24, 2, 0, 0, -9}, {16, 0, 0, 4, 0}, {30, 0, 5, 0, 0},
        {36, 3, 0, 0, 2}, {60, 0, 0, 0, 0}, {64, 0, 2, 0, 0}, {7, 0, 1, 0, -9},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        int d[4], nd = 0;
        for (int k = 1; k < 5 && fixed[i][k] != -9; k++)
            d[nd++] = fixed[i][k];
        MPI_Dims_create(fixed[i][0], nd, d);
        list(b, sizeof b, d, nd);
        out("dims-fixed %zu -> %s", i, b);
    }
}

static void cart(int nd, const int *periods)
{
    int dims[3] = {0, 0, 0};
    char b[256], p[64];
    MPI_Dims_create(size, nd, dims);
    MPI_Comm c;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &c);
    list(p, sizeof p, periods, nd);
    int r, coords[3], back, t, ndims;
    MPI_Comm_rank(c, &r);
    MPI_Topo_test(c, &t);
    MPI_Cartdim_get(c, &ndims);
    MPI_Cart_coords(c, r, nd, coords);
    MPI_Cart_rank(c, coords, &back);
    list(b, sizeof b, coords, nd);
    out("cart nd=%d periods=%s topo=%d ndims=%d rank=%d coords=%s back=%d", nd, p, t == MPI_CART,
        ndims, r, b, back);
    for (int d = 0; d < nd; d++)
        for (int disp = -2; disp <= 2; disp++) {
            int s, dst;
            MPI_Cart_shift(c, d, disp, &s, &dst);
            out("cart nd=%d periods=%s shift dir=%d disp=%d -> %d %d", nd, p, d, disp, s, dst);
        }
    if (nd >= 2) {
        int remain[3] = {1, 0, 1};
        MPI_Comm sub;
        MPI_Cart_sub(c, remain, &sub);
        int sr, ss, sd, sdims[3], sper[3], scoords[3];
        MPI_Comm_rank(sub, &sr);
        MPI_Comm_size(sub, &ss);
        MPI_Cartdim_get(sub, &sd);
        MPI_Cart_get(sub, 3, sdims, sper, scoords);
        list(b, sizeof b, scoords, sd);
        out("cart-sub nd=%d periods=%s rank=%d size=%d ndims=%d coords=%s", nd, p, sr, ss, sd, b);
        MPI_Comm_free(&sub);
    }
    int nr;
    MPI_Cart_map(MPI_COMM_WORLD, nd, dims, periods, &nr);
    out("cart-map nd=%d -> %d", nd, nr);
    MPI_Comm_free(&c);
}

static void graph(void)
{
    /* a ring plus a chord from every node to node 0 */
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * 3 * (size_t)size);
    int e = 0;
    for (int i = 0; i < size; i++) {
        edges[e++] = (i + 1) % size;
        edges[e++] = (i + size - 1) % size;
        if (i != 0)
            edges[e++] = 0;
        index[i] = e;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    int t, nn, ne, cnt, nb[8];
    char b[256];
    MPI_Topo_test(g, &t);
    MPI_Graphdims_get(g, &nn, &ne);
    out("graph topo=%d nnodes=%d nedges=%d", t == MPI_GRAPH, nn, ne);
    for (int i = 0; i < size; i++) {
        MPI_Graph_neighbors_count(g, i, &cnt);
        MPI_Graph_neighbors(g, i, 8, nb);
        list(b, sizeof b, nb, cnt);
        out("graph node %d: %d [%s]", i, cnt, b);
    }
    MPI_Comm_free(&g);
    free(index);
    free(edges);
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

static void dist_graph(void)
{
    char b[256], w[256];
    int src[2] = {(rank + size - 1) % size, (rank + 2) % size};
    int dst[2] = {(rank + 1) % size, (rank + size - 2) % size};
    int sw[2] = {rank + 1, 2 * rank}, dw[2] = {rank + 3, rank};
    MPI_Comm d;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &d);
    int in, outd, weighted, s[4], sws[4], ds[4], dws[4], t;
    MPI_Topo_test(d, &t);
    MPI_Dist_graph_neighbors_count(d, &in, &outd, &weighted);
    MPI_Dist_graph_neighbors(d, 4, s, sws, 4, ds, dws);
    list(b, sizeof b, s, in);
    list(w, sizeof w, sws, in);
    out("adjacent topo=%d in=%d out=%d weighted=%d sources=%s weights=%s", t == MPI_DIST_GRAPH, in,
        outd, weighted, b, w);
    list(b, sizeof b, ds, outd);
    list(w, sizeof w, dws, outd);
    out("adjacent destinations=%s weights=%s", b, w);
    MPI_Comm_free(&d);
    /* MPI_Dist_graph_create: every rank names edges from itself; the
     * neighbour order is not specified, so print them sorted */
    int deg = 2, from = rank;
    int to[2] = {(rank + 1) % size, (rank + 3) % size}, wt[2] = {10 + rank, 20 + rank};
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &from, &deg, to, wt, MPI_INFO_NULL, 0, &d);
    MPI_Dist_graph_neighbors_count(d, &in, &outd, &weighted);
    int pin[8][2], pout[8][2], sv[8], svw[8], dv[8], dvw[8];
    MPI_Dist_graph_neighbors(d, 8, sv, svw, 8, dv, dvw);
    for (int i = 0; i < in; i++)
        pin[i][0] = sv[i], pin[i][1] = svw[i];
    for (int i = 0; i < outd; i++)
        pout[i][0] = dv[i], pout[i][1] = dvw[i];
    qsort(pin, (size_t)in, sizeof pin[0], cmp_pair);
    qsort(pout, (size_t)outd, sizeof pout[0], cmp_pair);
    for (int i = 0; i < in; i++)
        out("dist in %d/%d: %d w=%d", i, in, pin[i][0], pin[i][1]);
    for (int i = 0; i < outd; i++)
        out("dist out %d/%d: %d w=%d", i, outd, pout[i][0], pout[i][1]);
    out("dist weighted=%d", weighted);
    MPI_Comm_free(&d);
}

int main(int argc, char **argv)
{
    diff_start(&argc, &argv, "diff_topo.out");
    if (rank == 0)
        dims_create();
    static const int per[4][3] = {{0, 0, 0}, {1, 1, 1}, {1, 0, 1}, {0, 1, 0}};
    for (int nd = 1; nd <= 3; nd++)
        for (int p = 0; p < 4; p++)
            cart(nd, per[p]);
    graph();
    dist_graph();
    fclose(outf);
    MPI_Finalize();
    return 0;
}
