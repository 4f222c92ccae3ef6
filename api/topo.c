/*
 * Bindings of the virtual topology chapter (MPI-4.1 8): Cartesian, graph
 * and distributed graph constructors and queries, Dims_create.  A topology
 * communicator is a new communicator (agreed context id) of the first
 * ranks of the old one, never reordered.
 */
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/comm.h"
#include "coll/comm_create.h"
#include "runtime/group.h"
#include "runtime/info.h"
#include "runtime/topo.h"

#define COMM_ARG(var, handle, caller)                       \
    int rc = MPI_SUCCESS;                                   \
    struct cdn_comm *var = cdn_api_comm(handle, caller, &rc); \
    if (var == NULL)                                        \
        return rc

static int intra(struct cdn_comm *c, const char *caller)
{
    return c->inter ? cdn_err(MPI_ERR_COMM, "%s: the communicator is an intercommunicator; "
                                   "virtual topologies are defined on intracommunicators only "
                                   "(MPI-4.1 8.5)", caller)
                    : MPI_SUCCESS;
}

/* The topology of kind `kind` on c (any kind if 0), or an error. */
static int topo_of(struct cdn_comm *c, int kind, struct cdn_topo **t, const char *caller)
{
    *t = c->topo;
    if (c->topo == NULL || (kind != 0 && c->topo->kind != kind))
        return cdn_err(MPI_ERR_TOPOLOGY, "%s: the communicator has no %s topology", caller,
                       kind == MPI_CART ? "Cartesian" : kind == MPI_GRAPH ? "graph"
                       : kind == MPI_DIST_GRAPH ? "distributed graph" : "virtual");
    return MPI_SUCCESS;
}

/* A communicator of old's first n ranks (the others get NULL), with topology
 * made by mk for the members. */
static int topo_comm(struct cdn_comm *old, int n, struct cdn_topo *(*mk)(void *arg, int rank),
                     void *arg, MPI_Comm *out, const char *caller)
{
    struct cdn_group *g = cdn_group_from(n, old->group->world);
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    struct cdn_comm *nc;
    int rc = cdn_comm_create_on(old, g, &nc, caller);
    cdn_group_release(g);
    if (rc != MPI_SUCCESS)
        return rc;
    if (nc == NULL) {
        *out = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    nc->topo = mk(arg, nc->rank);
    if (nc->topo == NULL) {
        cdn_comm_release(nc);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    return cdn_comm_publish(nc, out, caller);
}

/* ---- Cartesian ---- */

struct cart_args {
    int ndims;
    const int *dims, *periods;
};

static struct cdn_topo *mk_cart(void *arg, int rank)
{
    struct cart_args *a = arg;
    return cdn_topo_cart(a->ndims, a->dims, a->periods, rank);
}

static int cart_args(struct cdn_comm *c, int ndims, const int dims[], const int periods[],
                     int *nnodes, const char *caller)
{
    if (ndims < 0)
        return cdn_err(MPI_ERR_DIMS, "%s: ndims %d is negative", caller, ndims);
    if (ndims > 0 && (dims == NULL || periods == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, dims == NULL ? "dims" : "periods");
    long n = 1;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] <= 0)
            return cdn_err(MPI_ERR_DIMS, "%s: dims[%d] = %d is not positive", caller, i, dims[i]);
        n *= dims[i];
        if (n > c->size)
            break;
    }
    if (n > c->size)
        return cdn_err(MPI_ERR_TOPOLOGY, "%s: the grid has more points than the communicator's "
                       "%d processes", caller, c->size);
    *nnodes = (int)n;
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                        int reorder, MPI_Comm *comm_cart)
{
    (void)reorder;
    const char *fn = "MPI_Cart_create";
    COMM_ARG(c, comm_old, fn);
    if ((rc = intra(c, fn)) != MPI_SUCCESS)
        return rc;
    if (comm_cart == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: comm_cart is NULL", fn);
    int n;
    if ((rc = cart_args(c, ndims, dims, periods, &n, fn)) != MPI_SUCCESS)
        return rc;
    struct cart_args a = {ndims, dims, periods};
    return topo_comm(c, n, mk_cart, &a, comm_cart, fn);
}

int cdn_MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    COMM_ARG(c, comm, "MPI_Cart_map");
    if ((rc = intra(c, "MPI_Cart_map")) != MPI_SUCCESS)
        return rc;
    if (newrank == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_map: newrank is NULL");
    int n;
    if ((rc = cart_args(c, ndims, dims, periods, &n, "MPI_Cart_map")) != MPI_SUCCESS)
        return rc;
    *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int cdn_MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    COMM_ARG(c, comm, "MPI_Cartdim_get");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, "MPI_Cartdim_get")) != MPI_SUCCESS)
        return rc;
    if (ndims == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Cartdim_get: ndims is NULL");
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    COMM_ARG(c, comm, "MPI_Cart_get");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, "MPI_Cart_get")) != MPI_SUCCESS)
        return rc;
    if (maxdims < t->ndims)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_get: maxdims %d is less than the %d dimensions",
                       maxdims, t->ndims);
    if (t->ndims > 0 && (dims == NULL || periods == NULL || coords == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_get: an output array is NULL");
    for (int i = 0; i < t->ndims; i++) {
        dims[i] = t->dims[i];
        periods[i] = t->periods[i];
        coords[i] = t->coords[i];
    }
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    COMM_ARG(c, comm, "MPI_Cart_rank");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, "MPI_Cart_rank")) != MPI_SUCCESS)
        return rc;
    if (rank == NULL || (t->ndims > 0 && coords == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_rank: %s is NULL", rank == NULL ? "rank" : "coords");
    for (int i = 0; i < t->ndims; i++)
        if (!t->periods[i] && (coords[i] < 0 || coords[i] >= t->dims[i]))
            return cdn_err(MPI_ERR_ARG, "MPI_Cart_rank: coords[%d] = %d is outside 0..%d of a "
                           "non-periodic dimension", i, coords[i], t->dims[i] - 1);
    *rank = cdn_cart_rank(t, coords);
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    COMM_ARG(c, comm, "MPI_Cart_coords");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, "MPI_Cart_coords")) != MPI_SUCCESS)
        return rc;
    if (rank < 0 || rank >= c->size)
        return cdn_err(MPI_ERR_RANK, "MPI_Cart_coords: rank %d is not in 0..%d", rank, c->size - 1);
    if (maxdims < t->ndims)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_coords: maxdims %d is less than the %d dimensions",
                       maxdims, t->ndims);
    if (t->ndims > 0 && coords == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_coords: coords is NULL");
    cdn_cart_coords(t, rank, coords);
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    COMM_ARG(c, comm, "MPI_Cart_shift");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, "MPI_Cart_shift")) != MPI_SUCCESS)
        return rc;
    if (rank_source == NULL || rank_dest == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_shift: %s is NULL",
                       rank_source == NULL ? "rank_source" : "rank_dest");
    if (direction < 0 || direction >= t->ndims)
        return cdn_err(MPI_ERR_ARG, "MPI_Cart_shift: direction %d is not in 0..%d", direction,
                       t->ndims - 1);
    cdn_cart_shift(t, c->rank, direction, disp, rank_source, rank_dest);
    return MPI_SUCCESS;
}

int cdn_MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    const char *fn = "MPI_Cart_sub";
    COMM_ARG(c, comm, fn);
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_CART, &t, fn)) != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL || (t->ndims > 0 && remain_dims == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, newcomm == NULL ? "newcomm" : "remain_dims");
    /* colour: the coordinates in the dropped dimensions; key: the rank */
    int color = 0, nd = 0;
    int dims[t->ndims + 1], periods[t->ndims + 1];
    for (int i = 0; i < t->ndims; i++) {
        if (remain_dims[i]) {
            dims[nd] = t->dims[i];
            periods[nd++] = t->periods[i];
        } else {
            color = color * t->dims[i] + t->coords[i];
        }
    }
    struct cdn_comm *nc;
    rc = cdn_comm_split(c, color, c->rank, &nc, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    nc->topo = cdn_topo_cart(nd, dims, periods, nc->rank);
    if (nc->topo == NULL) {
        cdn_comm_release(nc);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    return cdn_comm_publish(nc, newcomm, fn);
}

int cdn_MPI_Dims_create(int nnodes, int ndims, int dims[])
{
    if (nnodes <= 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Dims_create: nnodes %d is not positive", nnodes);
    if (ndims < 0)
        return cdn_err(MPI_ERR_DIMS, "MPI_Dims_create: ndims %d is negative", ndims);
    if (ndims > 0 && dims == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Dims_create: dims is NULL");
    for (int i = 0; i < ndims; i++)
        if (dims[i] < 0)
            return cdn_err(MPI_ERR_DIMS, "MPI_Dims_create: dims[%d] = %d is negative", i, dims[i]);
    if (!cdn_dims_create(nnodes, ndims, dims))
        return cdn_err(MPI_ERR_DIMS, "MPI_Dims_create: the fixed entries of dims do not divide "
                       "nnodes %d", nnodes);
    return MPI_SUCCESS;
}

/* ---- graph ---- */

struct graph_args {
    int nnodes;
    const int *index, *edges;
};

static struct cdn_topo *mk_graph(void *arg, int rank)
{
    struct graph_args *a = arg;
    return cdn_topo_graph(a->nnodes, a->index, a->edges, rank);
}

static int graph_args(struct cdn_comm *c, int nnodes, const int index[], const int edges[],
                      const char *caller)
{
    if (nnodes < 0 || nnodes > c->size)
        return cdn_err(MPI_ERR_ARG, "%s: nnodes %d is not in 0..%d (the communicator size)",
                       caller, nnodes, c->size);
    if (nnodes > 0 && (index == NULL || (index[nnodes - 1] > 0 && edges == NULL)))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, index == NULL ? "index" : "edges");
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i > 0 ? index[i - 1] : 0))
            return cdn_err(MPI_ERR_ARG, "%s: index[%d] = %d decreases", caller, i, index[i]);
    for (int i = 0; nnodes > 0 && i < index[nnodes - 1]; i++)
        if (edges[i] < 0 || edges[i] >= nnodes)
            return cdn_err(MPI_ERR_ARG, "%s: edges[%d] = %d is not a node (0..%d)", caller, i,
                           edges[i], nnodes - 1);
    return MPI_SUCCESS;
}

int cdn_MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                         int reorder, MPI_Comm *comm_graph)
{
    (void)reorder;
    const char *fn = "MPI_Graph_create";
    COMM_ARG(c, comm_old, fn);
    if ((rc = intra(c, fn)) != MPI_SUCCESS)
        return rc;
    if (comm_graph == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: comm_graph is NULL", fn);
    if ((rc = graph_args(c, nnodes, index, edges, fn)) != MPI_SUCCESS)
        return rc;
    struct graph_args a = {nnodes, index, edges};
    return topo_comm(c, nnodes, mk_graph, &a, comm_graph, fn);
}

int cdn_MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank)
{
    COMM_ARG(c, comm, "MPI_Graph_map");
    if ((rc = intra(c, "MPI_Graph_map")) != MPI_SUCCESS)
        return rc;
    if (newrank == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Graph_map: newrank is NULL");
    if ((rc = graph_args(c, nnodes, index, edges, "MPI_Graph_map")) != MPI_SUCCESS)
        return rc;
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int cdn_MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    COMM_ARG(c, comm, "MPI_Graphdims_get");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_GRAPH, &t, "MPI_Graphdims_get")) != MPI_SUCCESS)
        return rc;
    if (nnodes == NULL || nedges == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Graphdims_get: %s is NULL", nnodes == NULL ? "nnodes" : "nedges");
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

int cdn_MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
    COMM_ARG(c, comm, "MPI_Graph_get");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_GRAPH, &t, "MPI_Graph_get")) != MPI_SUCCESS)
        return rc;
    if ((maxindex > 0 && index == NULL) || (maxedges > 0 && edges == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Graph_get: %s is NULL", index == NULL ? "index" : "edges");
    for (int i = 0; i < maxindex && i < t->nnodes; i++)
        index[i] = t->index[i];
    for (int i = 0; i < maxedges && i < t->nedges; i++)
        edges[i] = t->edges[i];
    return MPI_SUCCESS;
}

static int graph_node(struct cdn_comm *c, int rank, struct cdn_topo **t, const char *caller)
{
    int rc = topo_of(c, MPI_GRAPH, t, caller);
    if (rc == MPI_SUCCESS && (rank < 0 || rank >= (*t)->nnodes))
        rc = cdn_err(MPI_ERR_RANK, "%s: rank %d is not a node of the graph (0..%d)", caller, rank,
                     (*t)->nnodes - 1);
    return rc;
}

int cdn_MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    COMM_ARG(c, comm, "MPI_Graph_neighbors_count");
    struct cdn_topo *t;
    if ((rc = graph_node(c, rank, &t, "MPI_Graph_neighbors_count")) != MPI_SUCCESS)
        return rc;
    if (nneighbors == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Graph_neighbors_count: nneighbors is NULL");
    *nneighbors = t->index[rank] - (rank > 0 ? t->index[rank - 1] : 0);
    return MPI_SUCCESS;
}

int cdn_MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    COMM_ARG(c, comm, "MPI_Graph_neighbors");
    struct cdn_topo *t;
    if ((rc = graph_node(c, rank, &t, "MPI_Graph_neighbors")) != MPI_SUCCESS)
        return rc;
    int first = rank > 0 ? t->index[rank - 1] : 0, n = t->index[rank] - first;
    if (maxneighbors > 0 && neighbors == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Graph_neighbors: neighbors is NULL");
    for (int i = 0; i < n && i < maxneighbors; i++)
        neighbors[i] = t->edges[first + i];
    return MPI_SUCCESS;
}

int cdn_MPI_Topo_test(MPI_Comm comm, int *status)
{
    COMM_ARG(c, comm, "MPI_Topo_test");
    if (status == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Topo_test: status is NULL");
    *status = c->topo != NULL ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

/* ---- distributed graph ---- */

struct dist_args {
    int indeg, outdeg;
    const int *src, *srcw, *dst, *dstw;
    bool weighted;
};

static struct cdn_topo *mk_dist(void *arg, int rank)
{
    (void)rank;
    struct dist_args *a = arg;
    return cdn_topo_dist(a->indeg, a->src, a->srcw, a->outdeg, a->dst, a->dstw, a->weighted);
}

static int ranks_ok(const int *r, int n, int size, const char *what, const char *caller)
{
    for (int i = 0; i < n; i++)
        if (r[i] < 0 || r[i] >= size)
            return cdn_err(MPI_ERR_RANK, "%s: %s[%d] = %d is not a rank of the communicator "
                           "(size %d)", caller, what, i, r[i], size);
    return MPI_SUCCESS;
}

static int weights_ok(const int *w, int n, const char *what, const char *caller)
{
    if (w == MPI_UNWEIGHTED || w == MPI_WEIGHTS_EMPTY)
        return MPI_SUCCESS;
    if (n > 0 && w == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, what);
    for (int i = 0; i < n; i++)
        if (w[i] < 0)
            return cdn_err(MPI_ERR_ARG, "%s: %s[%d] = %d is negative", caller, what, i, w[i]);
    return MPI_SUCCESS;
}

int cdn_MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                       const int sourceweights[], int outdegree,
                                       const int destinations[], const int destweights[],
                                       MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    (void)reorder;
    const char *fn = "MPI_Dist_graph_create_adjacent";
    COMM_ARG(c, comm_old, fn);
    if ((rc = intra(c, fn)) != MPI_SUCCESS)
        return rc;
    cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    if (comm_dist_graph == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: comm_dist_graph is NULL", fn);
    if (indegree < 0 || outdegree < 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s %d is negative", fn,
                       indegree < 0 ? "indegree" : "outdegree", indegree < 0 ? indegree : outdegree);
    if ((indegree > 0 && sources == NULL) || (outdegree > 0 && destinations == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, sources == NULL ? "sources" : "destinations");
    if ((rc = ranks_ok(sources, indegree, c->size, "sources", fn)) != MPI_SUCCESS ||
        (rc = ranks_ok(destinations, outdegree, c->size, "destinations", fn)) != MPI_SUCCESS ||
        (rc = weights_ok(sourceweights, indegree, "sourceweights", fn)) != MPI_SUCCESS ||
        (rc = weights_ok(destweights, outdegree, "destweights", fn)) != MPI_SUCCESS)
        return rc;
    bool weighted = sourceweights != MPI_UNWEIGHTED && destweights != MPI_UNWEIGHTED;
    struct dist_args a = {indegree, outdegree, sources,
                          sourceweights == MPI_WEIGHTS_EMPTY ? NULL : sourceweights, destinations,
                          destweights == MPI_WEIGHTS_EMPTY ? NULL : destweights, weighted};
    return topo_comm(c, c->size, mk_dist, &a, comm_dist_graph, fn);
}

/* MPI_Dist_graph_create: every process contributes some edges; all of them
 * are gathered everywhere and each process keeps those that start or end
 * at it, in the order of the contributing ranks and their lists. */
int cdn_MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                              const int destinations[], const int weights[], MPI_Info info,
                              int reorder, MPI_Comm *comm_dist_graph)
{
    (void)reorder;
    const char *fn = "MPI_Dist_graph_create";
    COMM_ARG(c, comm_old, fn);
    if ((rc = intra(c, fn)) != MPI_SUCCESS)
        return rc;
    cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    if (comm_dist_graph == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: comm_dist_graph is NULL", fn);
    if (n < 0)
        return cdn_err(MPI_ERR_ARG, "%s: n %d is negative", fn, n);
    if (n > 0 && (sources == NULL || degrees == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, sources == NULL ? "sources" : "degrees");
    if ((rc = ranks_ok(sources, n, c->size, "sources", fn)) != MPI_SUCCESS)
        return rc;
    int nedges = 0;
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return cdn_err(MPI_ERR_ARG, "%s: degrees[%d] = %d is negative", fn, i, degrees[i]);
        nedges += degrees[i];
    }
    if (nedges > 0 && destinations == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: destinations is NULL", fn);
    if ((rc = ranks_ok(destinations, nedges, c->size, "destinations", fn)) != MPI_SUCCESS ||
        (rc = weights_ok(weights, nedges, "weights", fn)) != MPI_SUCCESS)
        return rc;
    /* weighted-ness is collective: unweighted if any process said MPI_UNWEIGHTED */
    int *mine = malloc(sizeof(int) * (3 * (size_t)nedges + 1));
    if (mine == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    bool have_w = weights != MPI_UNWEIGHTED && weights != MPI_WEIGHTS_EMPTY;
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            mine[3 * k] = sources[i];
            mine[3 * k + 1] = destinations[k];
            mine[3 * k + 2] = have_w ? weights[k] : 1;
        }
    struct cdn_xchg x;
    cdn_xchg_all(&x, c, CDN_TAG_SPLIT);
    int unweighted = weights == MPI_UNWEIGHTED;
    rc = cdn_xchg_allreduce(&x, &unweighted, 1, MPI_INT, MPI_MAX);
    int *all = NULL, total = 0;
    if (rc == MPI_SUCCESS)
        rc = cdn_xchg_allgatherv(&x, mine, (int)sizeof(int) * 3 * nedges, (void **)&all, &total, NULL);
    free(mine);
    if (rc != MPI_SUCCESS)
        return rc;
    int ne = total / (3 * (int)sizeof(int)), indeg = 0, outdeg = 0;
    for (int e = 0; e < ne; e++) {
        indeg += all[3 * e + 1] == c->rank;
        outdeg += all[3 * e] == c->rank;
    }
    int *lists = malloc(sizeof(int) * (2 * ((size_t)indeg + (size_t)outdeg) + 1));
    if (lists == NULL) {
        free(all);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    int *src = lists, *srcw = src + indeg, *dst = srcw + indeg, *dstw = dst + outdeg;
    for (int e = 0, i = 0, o = 0; e < ne; e++) {
        if (all[3 * e + 1] == c->rank) {
            src[i] = all[3 * e];
            srcw[i++] = all[3 * e + 2];
        }
        if (all[3 * e] == c->rank) {
            dst[o] = all[3 * e + 1];
            dstw[o++] = all[3 * e + 2];
        }
    }
    free(all);
    struct dist_args a = {indeg, outdeg, src, srcw, dst, dstw, !unweighted};
    rc = topo_comm(c, c->size, mk_dist, &a, comm_dist_graph, fn);
    free(lists);
    return rc;
}

int cdn_MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    COMM_ARG(c, comm, "MPI_Dist_graph_neighbors_count");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_DIST_GRAPH, &t, "MPI_Dist_graph_neighbors_count")) != MPI_SUCCESS)
        return rc;
    if (indegree == NULL || outdegree == NULL || weighted == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Dist_graph_neighbors_count: an output argument is NULL");
    *indegree = t->indegree;
    *outdegree = t->outdegree;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int cdn_MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                                 int maxoutdegree, int destinations[], int destweights[])
{
    COMM_ARG(c, comm, "MPI_Dist_graph_neighbors");
    struct cdn_topo *t;
    if ((rc = topo_of(c, MPI_DIST_GRAPH, &t, "MPI_Dist_graph_neighbors")) != MPI_SUCCESS)
        return rc;
    if (maxindegree < t->indegree || maxoutdegree < t->outdegree)
        return cdn_err(MPI_ERR_ARG, "MPI_Dist_graph_neighbors: maxindegree %d / maxoutdegree %d "
                       "are less than the degrees %d / %d", maxindegree, maxoutdegree,
                       t->indegree, t->outdegree);
    bool w = t->weighted;
    for (int i = 0; i < t->indegree; i++) {
        sources[i] = t->in[i];
        if (w && sourceweights != MPI_UNWEIGHTED && sourceweights != NULL)
            sourceweights[i] = t->srcw[i];
    }
    for (int i = 0; i < t->outdegree; i++) {
        destinations[i] = t->out[i];
        if (w && destweights != MPI_UNWEIGHTED && destweights != NULL)
            destweights[i] = t->dstw[i];
    }
    return MPI_SUCCESS;
}
