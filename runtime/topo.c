/*
 * Topology objects (see topo.h).  Reordering is never done (MPI allows the
 * identity), so a process's rank in a topology communicator is its rank in
 * the old one.
 */
#include "runtime/topo.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static struct cdn_topo *topo_alloc(int kind, size_t nints)
{
    struct cdn_topo *t = calloc(1, sizeof *t + sizeof(int) * (nints ? nints : 1));
    if (t != NULL)
        t->kind = kind;
    return t;
}

struct cdn_topo *cdn_topo_cart(int ndims, const int *dims, const int *periods, int rank)
{
    struct cdn_topo *t = topo_alloc(MPI_CART, (size_t)ndims * 5);
    if (t == NULL)
        return NULL;
    t->ndims = ndims;
    t->dims = t->mem;
    t->periods = t->dims + ndims;
    t->coords = t->periods + ndims;
    t->in = t->coords + ndims;
    t->out = t->in;           /* the same list both ways */
    for (int i = 0; i < ndims; i++) {
        t->dims[i] = dims[i];
        t->periods[i] = periods[i] != 0;
    }
    cdn_cart_coords(t, rank, t->coords);
    t->indegree = t->outdegree = 2 * ndims;
    for (int d = 0; d < ndims; d++)
        cdn_cart_shift(t, rank, d, 1, &t->in[2 * d], &t->in[2 * d + 1]);
    return t;
}

struct cdn_topo *cdn_topo_graph(int nnodes, const int *index, const int *edges, int rank)
{
    int nedges = nnodes > 0 ? index[nnodes - 1] : 0;
    struct cdn_topo *t = topo_alloc(MPI_GRAPH, (size_t)nnodes + (size_t)nedges);
    if (t == NULL)
        return NULL;
    t->nnodes = nnodes;
    t->nedges = nedges;
    t->rank = rank;
    t->index = t->mem;
    t->edges = t->index + nnodes;
    memcpy(t->index, index, sizeof(int) * (size_t)nnodes);
    memcpy(t->edges, edges, sizeof(int) * (size_t)nedges);
    int first = rank > 0 ? index[rank - 1] : 0;
    t->in = t->out = t->edges + first;
    t->indegree = t->outdegree = index[rank] - first;
    return t;
}

struct cdn_topo *cdn_topo_dist(int indegree, const int *sources, const int *sourceweights,
                               int outdegree, const int *dests, const int *destweights,
                               bool weighted)
{
    struct cdn_topo *t = topo_alloc(MPI_DIST_GRAPH, 2 * ((size_t)indegree + (size_t)outdegree));
    if (t == NULL)
        return NULL;
    t->weighted = weighted;
    t->indegree = indegree;
    t->outdegree = outdegree;
    t->in = t->mem;
    t->srcw = t->in + indegree;
    t->out = t->srcw + indegree;
    t->dstw = t->out + outdegree;
    memcpy(t->in, sources, sizeof(int) * (size_t)indegree);
    memcpy(t->out, dests, sizeof(int) * (size_t)outdegree);
    for (int i = 0; i < indegree; i++)
        t->srcw[i] = weighted && sourceweights != NULL ? sourceweights[i] : 1;
    for (int i = 0; i < outdegree; i++)
        t->dstw[i] = weighted && destweights != NULL ? destweights[i] : 1;
    return t;
}

struct cdn_topo *cdn_topo_dup(const struct cdn_topo *t)
{
    if (t == NULL)
        return NULL;
    switch (t->kind) {
    case MPI_CART: {
        /* coords already hold the rank: rebuild from them */
        int rank = 0;
        for (int d = 0; d < t->ndims; d++)
            rank = rank * t->dims[d] + t->coords[d];
        return cdn_topo_cart(t->ndims, t->dims, t->periods, rank);
    }
    case MPI_GRAPH:
        return cdn_topo_graph(t->nnodes, t->index, t->edges, t->rank);
    default:
        return cdn_topo_dist(t->indegree, t->in, t->srcw, t->outdegree, t->out, t->dstw,
                             t->weighted);
    }
}

void cdn_topo_free(struct cdn_topo *t)
{
    free(t);
}

void cdn_cart_coords(const struct cdn_topo *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = t->dims[d] > 0 ? rank % t->dims[d] : 0;
        rank = t->dims[d] > 0 ? rank / t->dims[d] : 0;
    }
}

int cdn_cart_rank(const struct cdn_topo *t, const int *coords)
{
    int rank = 0;
    for (int d = 0; d < t->ndims; d++) {
        int c = coords[d], n = t->dims[d];
        if (c < 0 || c >= n) {
            if (!t->periods[d])
                return MPI_PROC_NULL;
            c = ((c % n) + n) % n;
        }
        rank = rank * n + c;
    }
    return rank;
}

void cdn_cart_shift(const struct cdn_topo *t, int rank, int dir, int disp, int *src, int *dst)
{
    int c[t->ndims > 0 ? t->ndims : 1];
    cdn_cart_coords(t, rank, c);
    int mine = c[dir];
    c[dir] = mine + disp;
    *dst = cdn_cart_rank(t, c);
    c[dir] = mine - disp;
    *src = cdn_cart_rank(t, c);
}
