/*
 * Neighbourhood collectives on a periodic 1-D Cartesian ring and on an
 * adjacent distributed graph (each rank hears from rank-1 and rank+2,
 * sends to rank+1 and rank-2), in the three forms, against references
 * computed from the topology.  Not registered in meson until communicator
 * creation (MPI_Cart_create, MPI_Dist_graph_create_adjacent) lands.
 */
#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

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
    /* block 0 goes to the -1 neighbour, which receives it as its +1 block */
    CHECK(size < 3 || (rb[0] == left * 100 + 2 && rb[1] == right * 100 + 1),
          "cart alltoall: got %d %d", rb[0], rb[1]);
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
    int failed = check_summary("t_coll_neighbor"), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
