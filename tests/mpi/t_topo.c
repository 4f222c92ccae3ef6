/* Topologies, self-checked: Cartesian coordinates and ranks round-trip,
 * messages sent along MPI_Cart_shift arrive from the source it names,
 * Cart_sub splits rows, graph and distributed graph neighbour lists are
 * symmetric with what every rank declared, errors are classed, and
 * MPI_Dims_create gives a table of MPICH's answers.  (Many more answers
 * are compared with MPICH in tests/diff.) */
#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

static int wrank, wsize;

static void test_cart(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(wsize, 2, dims);
    CHECK(dims[0] * dims[1] == wsize && dims[0] >= dims[1], "dims %d x %d", dims[0], dims[1]);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
    int r, coords[2], back, t;
    MPI_Comm_rank(cart, &r);
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "topo_test %d", t);
    MPI_Cart_coords(cart, r, 2, coords);
    MPI_Cart_rank(cart, coords, &back);
    CHECK(back == r && coords[0] * dims[1] + coords[1] == r, "coords (%d,%d) of %d", coords[0],
          coords[1], r);
    for (int d = 0; d < 2; d++) {
        int src, dst, got = -2;
        MPI_Cart_shift(cart, d, 1, &src, &dst);
        MPI_Sendrecv(&r, 1, MPI_INT, dst, d, &got, 1, MPI_INT, src, d, cart, MPI_STATUS_IGNORE);
        if (src == MPI_PROC_NULL)
            CHECK(got == -2 && d == 1 && coords[1] == 0, "no source at the edge of dim %d", d);
        else
            CHECK(got == src, "dim %d: got %d from source %d", d, got, src);
    }
    int remain[2] = {0, 1};
    MPI_Comm row;
    MPI_Cart_sub(cart, remain, &row);
    int rs, rr, nd;
    MPI_Comm_size(row, &rs);
    MPI_Comm_rank(row, &rr);
    MPI_Cartdim_get(row, &nd);
    CHECK(rs == dims[1] && rr == coords[1] && nd == 1, "row: size %d rank %d ndims %d", rs, rr, nd);
    /* neighbours through a dup keep the topology */
    MPI_Comm dup;
    MPI_Comm_dup(cart, &dup);
    MPI_Topo_test(dup, &t);
    CHECK(t == MPI_CART, "dup keeps the topology");
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    int cls, rc = MPI_Cart_shift(cart, 2, 1, &r, &back);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "shift along dimension 2 of 2: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Cartdim_get(MPI_COMM_WORLD, &nd);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "no topology: class %d", cls);
    int big[1] = {wsize + 1}, per0[1] = {0};
    MPI_Comm none;
    rc = MPI_Cart_create(MPI_COMM_WORLD, 1, big, per0, 0, &none);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "grid larger than the job: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int fix[2] = {0, 3};
    rc = MPI_Dims_create(wsize * 3 + 1, 2, fix);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_DIMS, "fixed dimension that does not divide: class %d", cls);
    /* a grid smaller than the job: the rest get MPI_COMM_NULL */
    int one[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, one, per0, 0, &none);
    CHECK((wrank == 0) == (none != MPI_COMM_NULL), "1-point grid: only rank 0 is in it");
    if (none != MPI_COMM_NULL)
        MPI_Comm_free(&none);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
}

static void test_graphs(void)
{
    /* a ring as a graph: node i's neighbours are i+1 and i-1 */
    int *index = malloc(sizeof(int) * (size_t)wsize), *edges = malloc(sizeof(int) * 2 * (size_t)wsize);
    for (int i = 0; i < wsize; i++) {
        edges[2 * i] = (i + 1) % wsize;
        edges[2 * i + 1] = (i + wsize - 1) % wsize;
        index[i] = 2 * i + 2;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, wsize, index, edges, 0, &g);
    int n, nb[2];
    MPI_Graph_neighbors_count(g, wrank, &n);
    MPI_Graph_neighbors(g, wrank, 2, nb);
    CHECK(n == 2 && nb[0] == (wrank + 1) % wsize, "graph neighbours %d: %d", n, nb[0]);
    int got = -1;
    MPI_Sendrecv(&wrank, 1, MPI_INT, nb[0], 0, &got, 1, MPI_INT, nb[1], 0, g, MPI_STATUS_IGNORE);
    CHECK(got == nb[1], "message from graph neighbour %d: %d", nb[1], got);
    MPI_Comm_free(&g);
    /* distributed: each rank declares edges to its next two ranks */
    int from = wrank, deg = 2, to[2] = {(wrank + 1) % wsize, (wrank + 2) % wsize};
    int w[2] = {1, 2};
    MPI_Comm d;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &from, &deg, to, w, MPI_INFO_NULL, 0, &d);
    int in, out, weighted, src[2], sw[2], dst[2], dw[2];
    MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted);
    CHECK(in == 2 && out == 2 && weighted, "dist graph degrees %d %d %d", in, out, weighted);
    MPI_Dist_graph_neighbors(d, 2, src, sw, 2, dst, dw);
    int found = 0;
    for (int i = 0; i < 2; i++)
        found += (src[i] == (wrank + wsize - 1) % wsize && sw[i] == 1) +
                 (src[i] == (wrank + wsize - 2) % wsize && sw[i] == 2);
    CHECK(found >= 2, "in-edges from the two previous ranks with their weights");
    MPI_Comm_free(&d);
    free(index);
    free(edges);
}

/* MPI_Dims_create answers Debian's MPICH 4.0.2 gives (tests/diff compares
 * many more where MPICH is installed): equal spreads settle as MPICH's
 * search settles them, large primes stay whole, preset entries are kept,
 * and all entries preset need only divide nnodes. */
static void test_dims_known(void)
{
    static const struct {
        int nnodes, ndims, in[6], out[6];
    } known[] = {
        {590520, 4, {0}, {38, 37, 21, 20}},
        {590520, 4, {0, 2, 0, 0}, {74, 2, 70, 57}},
        {73513440, 5, {0}, {42, 40, 39, 34, 33}},
        {479001600, 6, {0}, {33, 32, 28, 27, 25, 24}},
        {720, 6, {2, 0, 0, 0, 0, 0}, {2, 5, 4, 3, 3, 2}},
        {1536, 4, {0}, {8, 8, 6, 4}},
        {30, 5, {0}, {5, 3, 2, 1, 1}},
        {1024, 3, {0}, {16, 8, 8}},
        {46656, 4, {0, 2, 0, 0}, {32, 2, 27, 27}},
        {131042, 3, {0}, {65521, 2, 1}},
        {1260, 3, {0}, {14, 10, 9}},
        {96, 5, {0}, {4, 3, 2, 2, 2}},
        {12, 2, {3, 2}, {3, 2}},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        int d[6];
        for (int k = 0; k < known[i].ndims; k++)
            d[k] = known[i].in[k];
        int rc = MPI_Dims_create(known[i].nnodes, known[i].ndims, d), same = rc == MPI_SUCCESS;
        for (int k = 0; k < known[i].ndims; k++)
            same = same && d[k] == known[i].out[k];
        CHECK(same, "MPI_Dims_create(%d, %d): rc %d, %d x %d x %d ... (want %d x %d x %d ...)",
              known[i].nnodes, known[i].ndims, rc, d[0], d[1], d[2], known[i].out[0],
              known[i].out[1], known[i].out[2]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    test_cart();
    test_graphs();
    test_dims_known();
    MPI_Finalize();
    return check_summary("t_topo");
}
