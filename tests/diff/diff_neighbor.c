/* Differential neighbourhood-collective program: built with Debian's MPICH
 * and with Cadence, run at the same number of ranks, the sorted outputs
 * must match.  Cartesian topologies of 1 to 3 dimensions, some with a
 * periodic dimension of size 1 or 2 that lists one process as both
 * neighbours, non-periodic ones, and a distributed graph with repeated
 * edges; every neighbourhood collective in its blocking, nonblocking and
 * persistent form.  Each block carries its sender's rank and block index.
 * Each line starts with the rank that printed it.
 *
 * Where one process is several neighbours, MPI-4.1 8.6 fixes which message
 * lands in which block (Cartesian: block s in block s^1; graphs: the k-th
 * edge to a process matches the k-th edge from it), and MPICH 4.0.2 follows
 * it only in part: its alltoallv and alltoallw pair Cartesian blocks in
 * list order, and its alltoall pairs the messages from one process in
 * reverse list order (on any topology), which is the rule only when a
 * Cartesian neighbour appears exactly twice.  Those answers are not
 * printed; tests/mpi/t_coll_neighbor.c checks them against the rule. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_rank_out.h"

#define MAXN 8  /* neighbours: at most 2 x 3 dimensions, or the graph's */


static void out(const char *what, const char *op, int form, const int *v, int n)
{
    char line[1024];
    int k = snprintf(line, sizeof line, "r%d %s %s form=%d:", rank, what, op, form);
    for (int i = 0; i < n && k < (int)sizeof line - 16; i++)
        k += snprintf(line + k, sizeof line - (size_t)k, " %d", v[i]);
    fprintf(outf, "%s\n", line);
}

/* Run one call in form 0 (blocking), 1 (nonblocking + wait) or 2
 * (persistent: init, start, wait, free). */
#define RUN(form, B, I, P, ...)                                         \
    do {                                                                \
        MPI_Request r_;                                                 \
        if ((form) == 0) {                                              \
            B(__VA_ARGS__);                                             \
        } else if ((form) == 1) {                                       \
            I(__VA_ARGS__, &r_);                                        \
            MPI_Wait(&r_, MPI_STATUS_IGNORE);                           \
        } else {                                                        \
            P(__VA_ARGS__, MPI_INFO_NULL, &r_);                         \
            MPI_Start(&r_);                                             \
            MPI_Wait(&r_, MPI_STATUS_IGNORE);                           \
            MPI_Request_free(&r_);                                      \
        }                                                               \
    } while (0)

/* How often the process listed most often appears among the sources. */
static int most_repeated(MPI_Comm c, int indeg)
{
    int srcs[MAXN], dsts[MAXN], t, most = 0;
    MPI_Topo_test(c, &t);
    if (t == MPI_CART) {
        for (int d = 0; d < indeg / 2; d++)
            MPI_Cart_shift(c, d, 1, &srcs[2 * d], &srcs[2 * d + 1]);
    } else {
        MPI_Dist_graph_neighbors(c, indeg, srcs, MPI_UNWEIGHTED, indeg, dsts, MPI_UNWEIGHTED);
    }
    for (int i = 0; i < indeg; i++) {
        int n = 0;
        for (int j = 0; j < indeg; j++)
            n += srcs[j] != MPI_PROC_NULL && srcs[j] == srcs[i];
        most = n > most ? n : most;
    }
    return most;
}

static void exchange(MPI_Comm c, const char *what, int indeg, int outdeg)
{
    int t, rep = most_repeated(c, indeg);
    MPI_Topo_test(c, &t);
    /* the answers MPICH 4.0.2 gives by MPI-4.1's rule (see the top) */
    bool a2a_same = rep <= 1 || (t == MPI_CART && rep == 2);
    bool a2av_same = rep <= 1 || t != MPI_CART;
    int sb[2 * MAXN], rb[2 * MAXN], sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    MPI_Aint sdw[MAXN], rdw[MAXN];
    MPI_Datatype st[MAXN], rt[MAXN];
    for (int form = 0; form < 3; form++) {
        /* alltoall: one int per neighbour, rank*100 + block */
        for (int i = 0; i < outdeg; i++)
            sb[i] = rank * 100 + i;
        for (int i = 0; i < 2 * MAXN; i++)
            rb[i] = -1;
        RUN(form, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, MPI_Neighbor_alltoall_init,
            sb, 1, MPI_INT, rb, 1, MPI_INT, c);
        if (a2a_same)
            out(what, "alltoall", form, rb, indeg);
        /* alltoallv: two ints a block, the send blocks laid out backwards */
        int at = 0;
        for (int i = outdeg - 1; i >= 0; i--) {
            sc[i] = 2;
            sd[i] = at;
            for (int k = 0; k < 2; k++)
                sb[at + k] = rank * 100 + i * 10 + k;
            at += 2;
        }
        for (int i = 0; i < indeg; i++) {
            rc[i] = 2;
            rd[i] = 2 * i;
        }
        for (int i = 0; i < 2 * MAXN; i++)
            rb[i] = -1;
        RUN(form, MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, MPI_Neighbor_alltoallv_init,
            sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c);
        if (a2av_same)
            out(what, "alltoallv", form, rb, 2 * indeg);
        /* alltoallw: byte displacements, blocks in order */
        for (int i = 0; i < outdeg; i++) {
            sb[i] = rank * 100 + 50 + i;
            sc[i] = 1;
            sdw[i] = (MPI_Aint)(sizeof(int) * (size_t)i);
            st[i] = MPI_INT;
        }
        for (int i = 0; i < indeg; i++) {
            rc[i] = 1;
            rdw[i] = (MPI_Aint)(sizeof(int) * (size_t)i);
            rt[i] = MPI_INT;
        }
        for (int i = 0; i < 2 * MAXN; i++)
            rb[i] = -1;
        RUN(form, MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, MPI_Neighbor_alltoallw_init,
            sb, sc, sdw, st, rb, rc, rdw, rt, c);
        if (a2av_same)
            out(what, "alltoallw", form, rb, indeg);
        /* allgather and allgatherv: one block for every neighbour */
        int mine = rank * 100 + 77 + form;
        for (int i = 0; i < 2 * MAXN; i++)
            rb[i] = -1;
        RUN(form, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, MPI_Neighbor_allgather_init,
            &mine, 1, MPI_INT, rb, 1, MPI_INT, c);
        out(what, "allgather", form, rb, indeg);
        for (int i = 0; i < indeg; i++) {
            rc[i] = 1;
            rd[i] = indeg - 1 - i;
        }
        for (int i = 0; i < 2 * MAXN; i++)
            rb[i] = -1;
        RUN(form, MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv,
            MPI_Neighbor_allgatherv_init, &mine, 1, MPI_INT, rb, rc, rd, MPI_INT, c);
        out(what, "allgatherv", form, rb, indeg);
    }
}

static void cart(int nd, const int *dims, const int *periods)
{
    char what[128];
    int k = snprintf(what, sizeof what, "cart");
    for (int i = 0; i < nd; i++)
        k += snprintf(what + k, sizeof what - (size_t)k, "%s%d%s", i ? "x" : " ", dims[i],
                      periods[i] ? "p" : "");
    MPI_Comm c;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &c);
    if (c != MPI_COMM_NULL) {
        exchange(c, what, 2 * nd, 2 * nd);
        MPI_Comm_free(&c);
    }
}

int main(int argc, char **argv)
{
    diff_start(&argc, &argv, "diff_neighbor.out");
    int p1[3] = {1, 1, 1}, p0[3] = {0, 0, 0}, pm[3] = {1, 0, 1};
    cart(1, (int[]){size}, p1);
    cart(1, (int[]){size}, p0);
    cart(1, (int[]){1}, p1);
    cart(2, (int[]){1, size}, p1);
    cart(2, (int[]){size, 1}, p1);
    cart(2, (int[]){size, 1}, pm);
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0};
    MPI_Dims_create(size, 2, d2);
    MPI_Dims_create(size, 3, d3);
    cart(2, d2, p1);
    cart(2, d2, p0);
    cart(3, d3, p1);
    cart(3, d3, pm);
    cart(3, (int[]){1, size, 1}, p1);
    if (size % 2 == 0)
        cart(2, (int[]){2, size / 2}, p1);
    /* a distributed graph with the next rank listed twice both ways */
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    int srcs[3] = {prev, prev, rank}, dsts[3] = {next, rank, next};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    exchange(g, "distgraph", 3, 3);
    MPI_Comm_free(&g);
    fclose(outf);
    MPI_Finalize();
    return 0;
}
