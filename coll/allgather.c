/*
 * Allgather(v) and alltoall(v,w).
 *
 * Allgather: ring (p-1 steps, each passing one block to the right: any
 * block sizes, bandwidth-optimal) or Bruck (ceil(log2 p) steps doubling the
 * blocks held, in a packed scratch buffer rotated into place at the end:
 * latency-optimal for small blocks; equal blocks only).
 *
 * Alltoall: pairwise exchange (step k sends to rank + k and receives from
 * rank - k, one pair of messages in flight) or scattered (every message
 * posted at once).  MPI_IN_PLACE copies the receive buffer's blocks aside
 * first and sends from the copies.
 */
#include "coll/coll.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "sched/sched.h"

#define ALLGATHER_SHORT (64 * 1024)
#define ALLTOALL_SHORT 1024

static char *at(const void *buf, MPI_Aint disp, const struct cdn_datatype *dt)
{
    return (char *)buf + disp * cdn_datatype_extent(dt);
}

static void allgather_ring(struct cdn_sched *s, struct cdn_comm *c, const MPI_Count *rcounts,
                           const MPI_Aint *displs, void *rbuf, struct cdn_datatype *rdt)
{
    int p = c->size, r = c->rank;
    int right = (r + 1) % p, left = (r - 1 + p) % p;
    for (int j = 0; j < p - 1; j++) {
        int sb = (r - j + p) % p, rb = (r - j - 1 + p) % p;
        cdn_sched_send(s, at(rbuf, displs[sb], rdt), rcounts[sb], rdt, right, j % 256);
        cdn_sched_recv(s, at(rbuf, displs[rb], rdt), rcounts[rb], rdt, left, j % 256);
        cdn_sched_round(s);
    }
}

static void allgather_bruck(struct cdn_sched *s, struct cdn_comm *c, MPI_Count rcount,
                            void *rbuf, struct cdn_datatype *rdt)
{
    int p = c->size, r = c->rank;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    MPI_Count blk = rcount * cdn_datatype_size(rdt);
    char *tmp = cdn_sched_scratch(s, (size_t)(blk * p));
    if (tmp == NULL)
        return;
    /* tmp block i holds rank (r + i) % p's data */
    cdn_sched_copy(s, at(rbuf, (MPI_Aint)r * rcount, rdt), rcount, rdt, tmp, blk, byte);
    cdn_sched_round(s);
    int step = 0;
    for (int k = 1; k < p; k <<= 1, step++) {
        int n = k < p - k ? k : p - k;
        cdn_sched_send(s, tmp, blk * n, byte, (r - k + p) % p, step);
        cdn_sched_recv(s, tmp + blk * k, blk * n, byte, (r + k) % p, step);
        cdn_sched_round(s);
    }
    for (int i = 1; i < p; i++)
        cdn_sched_copy(s, tmp + blk * i, blk, byte, at(rbuf, (MPI_Aint)((r + i) % p) * rcount, rdt),
                       rcount, rdt);
}

void cdn_coll_allgatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                         MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                         const MPI_Count *rcounts, const MPI_Aint *displs,
                         struct cdn_datatype *rdt, bool uniform)
{
    int r = c->rank;
    if (sbuf != MPI_IN_PLACE) {
        cdn_sched_copy(s, sbuf, scount, sdt, at(rbuf, displs[r], rdt), rcounts[r], rdt);
        cdn_sched_round(s);
    }
    if (c->size == 1)
        return;
    int alg = uniform ? cdn_coll_forced(c, CDN_COLL_ALLGATHER) : CDN_ALLGATHER_RING;
    if (alg == CDN_ALG_AUTO)
        alg = rcounts[0] * cdn_datatype_size(rdt) * c->size < ALLGATHER_SHORT
                  ? CDN_ALLGATHER_BRUCK : CDN_ALLGATHER_RING;
    if (alg == CDN_ALLGATHER_BRUCK)
        allgather_bruck(s, c, rcounts[0], rbuf, rdt);
    else
        allgather_ring(s, c, rcounts, displs, rbuf, rdt);
}

void cdn_coll_alltoallw(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                        const MPI_Count *scounts, const MPI_Aint *sdispls,
                        struct cdn_datatype *const *sdts, void *rbuf, const MPI_Count *rcounts,
                        const MPI_Aint *rdispls, struct cdn_datatype *const *rdts, bool uniform)
{
    int p = c->size, r = c->rank;
    const char **src = cdn_sched_scratch(s, (size_t)p * sizeof *src);
    if (src == NULL)
        return;
    if (sbuf == MPI_IN_PLACE) {
        /* send what the receive buffer holds now, from copies */
        for (int i = 0; i < p; i++) {
            src[i] = NULL;
            if (i == r)
                continue;
            char *t = cdn_sched_typed_scratch(s, rcounts[i], rdts[i]);
            if (t == NULL)
                return;
            cdn_sched_copy(s, (char *)rbuf + rdispls[i], rcounts[i], rdts[i], t, rcounts[i], rdts[i]);
            src[i] = t;
        }
        cdn_sched_round(s);
        scounts = rcounts;
        sdts = rdts;
    } else {
        for (int i = 0; i < p; i++)
            src[i] = (const char *)sbuf + sdispls[i];
        cdn_sched_copy(s, src[r], scounts[r], sdts[r], (char *)rbuf + rdispls[r], rcounts[r], rdts[r]);
    }
    int alg = cdn_coll_forced(c, CDN_COLL_ALLTOALL);
    if (alg == CDN_ALG_AUTO)
        alg = p <= 8 || (uniform && rcounts[0] * cdn_datatype_size(rdts[0]) < ALLTOALL_SHORT)
                  ? CDN_ALLTOALL_SCATTERED : CDN_ALLTOALL_PAIRWISE;
    for (int k = 1; k < p; k++) {
        int to = (r + k) % p, from = (r - k + p) % p;
        cdn_sched_send(s, src[to], scounts[to], sdts[to], to, 0);
        cdn_sched_recv(s, (char *)rbuf + rdispls[from], rcounts[from], rdts[from], from, 0);
        if (alg == CDN_ALLTOALL_PAIRWISE)
            cdn_sched_round(s);
    }
}

/* ---- blocking alltoall of small blocks, without a schedule ----
 *
 * The same messages as cdn_coll_alltoallw's scattered exchange (every pair
 * one message under sub-tag 0, so a rank on either path talks to a rank on
 * the other), posted straight as point-to-point requests: a kept schedule
 * cost an 8-byte alltoall its node bookkeeping on every call. */

bool cdn_coll_alltoall_direct_fits(struct cdn_comm *c, const void *sbuf, MPI_Count rcount,
                                   struct cdn_datatype *rdt)
{
    int alg = cdn_coll_forced(c, CDN_COLL_ALLTOALL);
    return !c->inter && sbuf != MPI_IN_PLACE && c->size <= CDN_COLL_EXCHANGE_MAX + 1 &&
           rcount * cdn_datatype_size(rdt) <= CDN_ALLTOALL_DIRECT_MAX &&
           (alg == CDN_ALG_AUTO || alg == CDN_ALLTOALL_SCATTERED);
}

int cdn_coll_alltoall_direct(const char *fn, struct cdn_comm *c, const void *sbuf,
                             MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                             MPI_Count rcount, struct cdn_datatype *rdt)
{
    int tag, rc = cdn_coll_call_tag(fn, c, &tag);
    if (rc != MPI_SUCCESS)
        return rc;
    int p = c->size, r = c->rank;
    MPI_Aint sblock = scount * cdn_datatype_extent(sdt), rblock = rcount * cdn_datatype_extent(rdt);
    struct cdn_coll_msg in[CDN_COLL_EXCHANGE_MAX], out[CDN_COLL_EXCHANGE_MAX];
    for (int k = 1; k < p; k++) {
        int to = (r + k) % p, from = (r - k + p) % p;
        out[k - 1] = (struct cdn_coll_msg){(char *)sbuf + to * sblock, scount, sdt, to};
        in[k - 1] = (struct cdn_coll_msg){(char *)rbuf + from * rblock, rcount, rdt, from};
    }
    cdn_sched_typed_copy((const char *)sbuf + r * sblock, scount, sdt, (char *)rbuf + r * rblock,
                         rcount, rdt);
    return cdn_coll_exchange(c, tag, in, p - 1, out, p - 1);
}
