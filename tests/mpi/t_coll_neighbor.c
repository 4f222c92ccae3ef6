/*
 * Neighbourhood collectives on a periodic 1-D Cartesian ring and on an
 * adjacent distributed graph (each rank hears from rank-1 and rank+2,
 * sends to rank+1 and rank-2), in the three forms, against references
 * computed from the topology.  Then every neighbourhood collective in every
 * form on Cartesian shapes where a periodic dimension of size 1 or 2 lists
 * one process as both neighbours (MPI-4.1 8.6: the block sent towards -1 is
 * received from +1, so block s lands in block s^1), and on a distributed
 * graph with repeated edges (the k-th edge to a process matches the k-th
 * edge from it).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_mpi.h"
#include "coll_forms.h"

static int rank, size;

static void check_ring(MPI_Comm cart, int form)
{
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    int send = rank * 10 + form, recv[2] = {-1, -1};
    MPI_Request req;
    if (form == 0) {
        MPI_Neighbor_allgather(&send, 1, MPI_INT, recv, 1, MPI_INT, cart);
    } else if (form == 1) {
        MPI_Ineighbor_allgather(&send, 1, MPI_INT, recv, 1, MPI_INT, cart, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Neighbor_allgather_init(&send, 1, MPI_INT, recv, 1, MPI_INT, cart, MPI_INFO_NULL,
                                    &req);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
    }
    /* order: the -1 neighbour, then the +1 neighbour */
    CHECK(recv[0] == left * 10 + form && recv[1] == right * 10 + form,
          "cart allgather form %d: got %d %d", form, recv[0], recv[1]);
    int sb[2] = {rank * 100 + 1, rank * 100 + 2}, rb[2] = {-1, -1};
    MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart);
    /* block 0 goes to the -1 neighbour, which receives it as its +1 block
     * (also at 1 and 2 ranks, where left and right are one process) */
    CHECK(rb[0] == left * 100 + 2 && rb[1] == right * 100 + 1, "cart alltoall: got %d %d",
          rb[0], rb[1]);
}

static void check_graph(void)
{
    int srcs[2] = {(rank - 1 + size) % size, (rank + 2) % size};
    int dsts[2] = {(rank + 1) % size, (rank - 2 + 2 * size) % size};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    int sb[2] = {rank * 1000 + 1, rank * 1000 + 2}, rb[2] = {-1, -1};
    int counts[2] = {1, 1}, displs[2] = {0, 1};
    MPI_Neighbor_alltoallv(sb, counts, displs, MPI_INT, rb, counts, displs, MPI_INT, g);
    CHECK(rb[0] == srcs[0] * 1000 + 1 && rb[1] == srcs[1] * 1000 + 2,
          "graph alltoallv: got %d %d", rb[0], rb[1]);
    MPI_Comm_free(&g);
}

#define MAXN 8

static const char *const op_name[5] = {"alltoall", "alltoallv", "alltoallw", "allgather",
                                       "allgatherv"};

/* One neighbourhood collective (op: index in op_name) in form f over comm,
 * whose sources are srcs; want[j] is the index of the block of srcs[j] that
 * lands in receive block j.  Blocks are two ints: rank*100 + index and
 * rank*100 + 50 + index (allgather: rank*100 + 77, 78). */
static void run_op(MPI_Comm c, const char *what, int op, int deg, const int *srcs,
                   const int *want, struct form *f)
{
    int sb[2 * MAXN], vs[2 * MAXN], rb[2 * MAXN], cnt[MAXN], dsp[MAXN], rdsp[MAXN];
    MPI_Aint bd[MAXN];
    MPI_Datatype ty[MAXN];
    int mine[2] = {rank * 100 + 77, rank * 100 + 78};
    for (int i = 0; i < 2 * MAXN; i++)
        rb[i] = -1;
    for (int i = 0; i < deg; i++) {
        sb[2 * i] = rank * 100 + i;
        sb[2 * i + 1] = rank * 100 + 50 + i;
        cnt[i] = 2;
        dsp[i] = 2 * (deg - 1 - i);  /* v form: the send blocks laid out backwards */
        vs[dsp[i]] = sb[2 * i];
        vs[dsp[i] + 1] = sb[2 * i + 1];
        rdsp[i] = 2 * i;
        bd[i] = (MPI_Aint)(sizeof(int) * 2 * (size_t)i);
        ty[i] = MPI_INT;
    }
    if (op == 0)
        COLL(f, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, MPI_Neighbor_alltoall_init, sb,
             2, MPI_INT, rb, 2, MPI_INT, c);
    else if (op == 1)
        COLL(f, MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, MPI_Neighbor_alltoallv_init, vs,
             cnt, dsp, MPI_INT, rb, cnt, rdsp, MPI_INT, c);
    else if (op == 2)
        COLL(f, MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, MPI_Neighbor_alltoallw_init, sb,
             cnt, bd, ty, rb, cnt, bd, ty, c);
    else if (op == 3)
        COLL(f, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, MPI_Neighbor_allgather_init,
             mine, 2, MPI_INT, rb, 2, MPI_INT, c);
    else
        COLL(f, MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, MPI_Neighbor_allgatherv_init,
             mine, 2, MPI_INT, rb, cnt, rdsp, MPI_INT, c);
    for (int j = 0; j < deg; j++) {
        int s = srcs[j], e0 = -1, e1 = -1;
        if (s != MPI_PROC_NULL) {
            e0 = s * 100 + (op < 3 ? want[j] : 77);
            e1 = s * 100 + (op < 3 ? 50 + want[j] : 78);
        }
        CHECK(rb[2 * j] == e0 && rb[2 * j + 1] == e1,
              "%s %s form %d: block %d from %d holds %d %d, want %d %d", what, op_name[op],
              f->kind, j, s, rb[2 * j], rb[2 * j + 1], e0, e1);
    }
}

/* Every neighbourhood collective in every form (a persistent one started
 * twice). */
static void exchange(MPI_Comm c, const char *what, int deg, const int *srcs, const int *want)
{
    for (int op = 0; op < 5; op++)
        for (int kind = 0; kind < 3; kind++) {
            struct form f = {.kind = kind, .preq = MPI_REQUEST_NULL};
            for (int rep = 0; rep < (kind == 2 ? 2 : 1); rep++)
                run_op(c, what, op, deg, srcs, want, &f);
            if (f.preq != MPI_REQUEST_NULL)
                MPI_Request_free(&f.preq);
        }
}

static void cart_shape(int nd, const int *dims, const int *periods)
{
    char what[64];
    int n = snprintf(what, sizeof what, "cart");
    for (int d = 0; d < nd; d++)
        n += snprintf(what + n, sizeof what - (size_t)n, "%s%d%s", d ? "x" : " ", dims[d],
                      periods[d] ? "p" : "");
    MPI_Comm c;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &c);
    if (c == MPI_COMM_NULL)
        return;
    int srcs[MAXN], want[MAXN];
    for (int d = 0; d < nd; d++) {
        MPI_Cart_shift(c, d, 1, &srcs[2 * d], &srcs[2 * d + 1]);
        want[2 * d] = 2 * d + 1;  /* the -1 neighbour sent it towards +1 */
        want[2 * d + 1] = 2 * d;
    }
    exchange(c, what, 2 * nd, srcs, want);
    MPI_Comm_free(&c);
}

/* Each rank r lists sources {r-1, r-1, r} and destinations {r+1, r, r+1}:
 * at 1 and 2 ranks one process is several edges, matched in list order. */
static void dup_graph(void)
{
    int prev = (rank - 1 + size) % size, next = (rank + 1) % size;
    int srcs[3] = {prev, prev, rank}, dsts[3] = {next, rank, next};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    int want[3];
    for (int j = 0; j < 3; j++) {
        /* the k-th edge from srcs[j] to me is its block number ... */
        int k = 0;
        for (int i = 0; i < j; i++)
            k += srcs[i] == srcs[j];
        int s = srcs[j], sd[3] = {(s + 1) % size, s, (s + 1) % size};
        want[j] = -1;
        for (int i = 0, seen = 0; i < 3 && want[j] < 0; i++)
            if (sd[i] == rank && seen++ == k)
                want[j] = i;
    }
    exchange(g, "dist graph with repeated edges", 3, srcs, want);
    MPI_Comm_free(&g);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    for (int form = 0; form < 3; form++)
        check_ring(cart, form);
    MPI_Comm_free(&cart);
    if (size >= 3)
        check_graph();
    int p1[3] = {1, 1, 1}, p0[3] = {0, 0, 0}, pm[3] = {1, 0, 1};
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0};
    MPI_Dims_create(size, 2, d2);
    MPI_Dims_create(size, 3, d3);
    cart_shape(1, (int[]){size}, p1);
    cart_shape(1, (int[]){size}, p0);
    cart_shape(1, (int[]){1}, p1);
    cart_shape(2, (int[]){1, size}, p1);
    cart_shape(2, (int[]){size, 1}, pm);
    cart_shape(2, (int[]){1, 1}, p1);
    cart_shape(2, d2, p1);
    cart_shape(3, d3, p1);
    cart_shape(3, d3, pm);
    cart_shape(3, (int[]){1, size, 1}, p1);
    if (size % 2 == 0)
        cart_shape(2, (int[]){2, size / 2}, p1);
    dup_graph();
    int failed = check_summary("t_coll_neighbor"), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
