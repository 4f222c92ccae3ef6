/*
 * The collectives with one algorithm: dissemination barrier, linear
 * gather(v) and scatter(v) (the root talks to every rank; every message is
 * posted at once, so the root's link is the only limit), and the
 * neighbourhood exchange.
 */
#include <stddef.h>

#include "coll/coll.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "sched/sched.h"

static char *at(const void *buf, MPI_Aint disp, const struct cdn_datatype *dt)
{
    return (char *)buf + disp * cdn_datatype_extent(dt);
}

/* Dissemination: in round k every rank signals rank + 2^k and waits for
 * rank - 2^k; after ceil(log2 p) rounds everyone has heard from everyone. */
void cdn_coll_barrier(struct cdn_sched *s, struct cdn_comm *c)
{
    int p = c->size, r = c->rank;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    int round = 0;
    for (int k = 1; k < p; k <<= 1, round++) {
        cdn_sched_send(s, NULL, 0, byte, (r + k) % p, round);
        cdn_sched_recv(s, NULL, 0, byte, (r - k + p) % p, round);
        cdn_sched_round(s);
    }
}

/* The same rounds straight on point-to-point requests (blocking calls):
 * a kept schedule cost every barrier its node bookkeeping. */
int cdn_coll_barrier_direct(const char *fn, struct cdn_comm *c)
{
    int tag, rc = cdn_coll_call_tag(fn, c, &tag);
    if (rc != MPI_SUCCESS)
        return rc;
    int p = c->size, r = c->rank;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    for (int k = 1, round = 0; rc == MPI_SUCCESS && k < p; k <<= 1, round++) {
        struct cdn_coll_msg to = {NULL, 0, byte, (r + k) % p}, from = {NULL, 0, byte,
                                                                       (r - k + p) % p};
        rc = cdn_coll_exchange(c, tag + round, &from, 1, &to, 1);
    }
    return rc;
}

void cdn_coll_gatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, MPI_Count scount,
                      struct cdn_datatype *sdt, void *rbuf, const MPI_Count *rcounts,
                      const MPI_Aint *displs, struct cdn_datatype *rdt, int root)
{
    if (c->rank != root) {
        cdn_sched_send(s, sbuf, scount, sdt, root, 0);
        return;
    }
    for (int i = 0; i < c->size; i++) {
        if (i != root)
            cdn_sched_recv(s, at(rbuf, displs[i], rdt), rcounts[i], rdt, i, 0);
        else if (sbuf != MPI_IN_PLACE)
            cdn_sched_copy(s, sbuf, scount, sdt, at(rbuf, displs[i], rdt), rcounts[i], rdt);
    }
}

void cdn_coll_scatterv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                       const MPI_Count *scounts, const MPI_Aint *displs, struct cdn_datatype *sdt,
                       void *rbuf, MPI_Count rcount, struct cdn_datatype *rdt, int root)
{
    if (c->rank != root) {
        cdn_sched_recv(s, rbuf, rcount, rdt, root, 0);
        return;
    }
    for (int i = 0; i < c->size; i++) {
        if (i != root)
            cdn_sched_send(s, at(sbuf, displs[i], sdt), scounts[i], sdt, i, 0);
        else if (rbuf != MPI_IN_PLACE)
            cdn_sched_copy(s, at(sbuf, displs[i], sdt), scounts[i], sdt, rbuf, rcount, rdt);
    }
}

/* Every block to its neighbour at once.  Where one process is listed
 * twice, which of its messages lands in which block is the topology's rule
 * (MPI-4.1 8.6), kept by the sub-tags:
 *  - Cartesian: the block a process sends towards -1 in a dimension is the
 *    one its -1 neighbour receives from +1, and the other way round, so
 *    block s lands in block s^1.  A send carries its direction (s & 1), a
 *    receive the opposite one; a periodic dimension of size 1 or 2 (both
 *    neighbours one process), or several such dimensions, then pair up
 *    dimension by dimension, as both sides list the dimensions in order.
 *  - graphs: the k-th edge to a process matches the k-th edge from it, so
 *    every message has sub-tag 0 and matches in list order. */
void cdn_coll_neighbor_alltoallw(struct cdn_sched *s, bool cart, int indegree,
                                 const int *sources, int outdegree, const int *dests,
                                 const void *sbuf, const MPI_Count *scounts,
                                 const MPI_Aint *sdispls, struct cdn_datatype *const *sdts,
                                 void *rbuf, const MPI_Count *rcounts, const MPI_Aint *rdispls,
                                 struct cdn_datatype *const *rdts)
{
    for (int i = 0; i < indegree; i++)
        if (sources[i] != MPI_PROC_NULL)
            cdn_sched_recv(s, (char *)rbuf + rdispls[i], rcounts[i], rdts[i], sources[i],
                           cart ? (i & 1) ^ 1 : 0);
    for (int i = 0; i < outdegree; i++)
        if (dests[i] != MPI_PROC_NULL)
            cdn_sched_send(s, (const char *)sbuf + sdispls[i], scounts[i], sdts[i], dests[i],
                           cart ? i & 1 : 0);
}
