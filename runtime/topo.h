/*
 * Virtual topologies attached to a communicator: Cartesian, graph and
 * distributed graph (MPI-4.1 chapter 8), and the neighbour lists that
 * neighbourhood collectives read through cdn_comm_neighbors.
 */
#ifndef CDN_TOPO_H
#define CDN_TOPO_H

#include <stdbool.h>

struct cdn_topo {
    int kind;                    /* MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH */
    /* Cartesian */
    int ndims;
    int *dims, *periods, *coords;
    /* graph: the whole graph, as given */
    int nnodes, nedges, rank;    /* rank: this process's node */
    int *index, *edges;
    /* distributed graph: this process's adjacency */
    bool weighted;
    int *srcw, *dstw;
    /* neighbours in MPI order (every kind) */
    int indegree, outdegree;
    int *in, *out;
    /* one allocation behind every array */
    int mem[];
};

/* Make topologies (NULL when out of memory).  rank is the process's rank
 * in the new communicator. */
struct cdn_topo *cdn_topo_cart(int ndims, const int *dims, const int *periods, int rank);
struct cdn_topo *cdn_topo_graph(int nnodes, const int *index, const int *edges, int rank);
struct cdn_topo *cdn_topo_dist(int indegree, const int *sources, const int *sourceweights,
                               int outdegree, const int *dests, const int *destweights,
                               bool weighted);
struct cdn_topo *cdn_topo_dup(const struct cdn_topo *t);
void cdn_topo_free(struct cdn_topo *t);

/* Cartesian helpers. */
void cdn_cart_coords(const struct cdn_topo *t, int rank, int *coords);
/* The rank at coords (periodic dimensions wrap), or MPI_PROC_NULL off a
 * non-periodic edge. */
int cdn_cart_rank(const struct cdn_topo *t, const int *coords);
void cdn_cart_shift(const struct cdn_topo *t, int rank, int dir, int disp, int *src, int *dst);
/* MPI_Dims_create's balanced factorisation; returns false when the fixed
 * entries do not divide nnodes. */
bool cdn_dims_create(int nnodes, int ndims, int *dims);

#endif
