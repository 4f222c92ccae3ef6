/*
 * The reductions: reduce, allreduce, reduce_scatter(_block), scan, exscan.
 *
 * Reproducibility: every algorithm combines contributions in an order fixed
 * by the communicator size alone, so a run gives the same bits every time.
 * Non-commutative ops are combined in rank order: the binomial reduce then
 * runs on a tree rooted at rank 0 (whose subtrees are rank ranges) and
 * forwards the result to the root; recursive doubling puts the lower
 * range's operand first; the ring allreduce (whose order rotates per
 * block) is used for commutative ops only.
 *
 * cdn_op_reduce(op, in, inout) computes inout = in op inout; "a op b" into
 * a's buffer is reduce(a, b) followed by a copy of b into a.
 */
#include "coll/coll.h"

#include <string.h>

#include "runtime/comm.h"
#include "runtime/copy.h"
#include "runtime/datatype.h"
#include "runtime/op.h"
#include "sched/sched.h"

/* The ring from here.  On 2 ranks both algorithms move the same bytes, and
 * recursive doubling's one exchange (its first send taking the send buffer
 * while the copy runs) beats the ring's two up to 256 KiB in every form
 * (docs/collectives.md): there from 512 KiB. */
#define ALLREDUCE_LONG (256 * 1024)
#define ALLREDUCE_LONG_2 (512 * 1024)

static char *at(const void *buf, MPI_Aint disp, const struct cdn_datatype *dt)
{
    return (char *)buf + disp * cdn_datatype_extent(dt);
}

static void dep(struct cdn_sched *s, int before, int after)
{
    if (before >= 0 && after >= 0)
        cdn_sched_dep(s, before, after);
}

/* a = a op b, after nodes d1 and d2 (b is clobbered when the op does not
 * commute).  Returns the last node. */
static int combine(struct cdn_sched *s, int d1, int d2, void *a, void *b, MPI_Count count,
                   struct cdn_datatype *dt, struct cdn_op *op)
{
    int n = op->commute ? cdn_sched_reduce(s, b, a, count, dt, op)
                        : cdn_sched_reduce(s, a, b, count, dt, op);
    dep(s, d1, n);
    dep(s, d2, n);
    if (op->commute)
        return n;
    int m = cdn_sched_copy(s, b, count, dt, a, count, dt);
    dep(s, n, m);
    return m;
}

static void reduce_binomial(struct cdn_sched *s, struct cdn_comm *c, const void *mine,
                            void *rbuf, MPI_Count count, struct cdn_datatype *dt,
                            struct cdn_op *op, int root)
{
    int p = c->size, r = c->rank;
    int troot = op->commute ? root : 0;
    int vr = (r - troot + p) % p;
    int nchild = 0, mask = 1;
    for (; mask < p && !(vr & mask); mask <<= 1)
        nchild += vr + mask < p;
    const void *acc = mine;
    int last = -1;
    if (nchild > 0) {
        void *a = r == root ? rbuf : cdn_sched_typed_scratch(s, count, dt);
        if (a == NULL)
            return;
        if (a != mine)
            last = cdn_sched_copy(s, mine, count, dt, a, count, dt);
        for (int m = 1; m < mask; m <<= 1) {
            if (vr + m >= p)
                continue;
            void *tmp = cdn_sched_typed_scratch(s, count, dt);
            if (tmp == NULL)
                return;
            int rv = cdn_sched_recv(s, tmp, count, dt, (vr + m + troot) % p, 0);
            /* the subtree's range follows ours: acc = acc op tmp */
            last = combine(s, rv, last, a, tmp, count, dt, op);
        }
        acc = a;
    }
    int sent = -1;
    if (vr != 0) {
        sent = cdn_sched_send(s, acc, count, dt, (vr - mask + troot) % p, 0);
        dep(s, last, sent);
    } else if (r == root && acc != rbuf) {
        cdn_sched_copy(s, acc, count, dt, rbuf, count, dt);  /* p == 1 */
    }
    if (troot != root) {  /* non-commutative op, root != 0: rank 0 forwards the result */
        if (r == 0) {
            int f = cdn_sched_send(s, acc, count, dt, root, 1);
            dep(s, last, f);
        } else if (r == root) {
            int f = cdn_sched_recv(s, rbuf, count, dt, 0, 1);
            dep(s, sent, f);  /* our own contribution may be read from rbuf */
        }
    }
}

/* The root receives everything, then reduces right to left in rank order:
 * rbuf = x[p-1]; rbuf = x[i] op rbuf for i = p-2 .. 0. */
static void reduce_linear(struct cdn_sched *s, struct cdn_comm *c, const void *mine, void *rbuf,
                          MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op, int root)
{
    int p = c->size, r = c->rank;
    if (r != root) {
        cdn_sched_send(s, mine, count, dt, root, 0);
        return;
    }
    const void **x = cdn_sched_scratch(s, (size_t)p * sizeof *x);
    if (x == NULL)
        return;
    for (int i = 0; i < p; i++) {
        if (i == root && mine != rbuf) {
            x[i] = mine;
            continue;
        }
        void *t = cdn_sched_typed_scratch(s, count, dt);
        if (t == NULL)
            return;
        x[i] = t;
        if (i == root)
            cdn_sched_copy(s, rbuf, count, dt, t, count, dt);
        else
            cdn_sched_recv(s, t, count, dt, i, 0);
    }
    cdn_sched_round(s);
    int last = cdn_sched_copy(s, x[p - 1], count, dt, rbuf, count, dt);
    for (int i = p - 2; i >= 0; i--) {
        int n = cdn_sched_reduce(s, x[i], rbuf, count, dt, op);
        dep(s, last, n);
        last = n;
    }
}

void cdn_coll_reduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                     MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op, int root)
{
    const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    int alg = cdn_coll_forced(c, CDN_COLL_REDUCE);
    if (alg == CDN_REDUCE_LINEAR)
        reduce_linear(s, c, mine, rbuf, count, dt, op, root);
    else
        reduce_binomial(s, c, mine, rbuf, count, dt, op, root);
}

/* Recursive doubling on p ranks: the first 2*rem ranks fold pairwise (odd
 * ones carry the pair) so that pof2 ranks remain.  Sets *pof2 and *rem;
 * returns rank r's place among the pof2 (-1 for a rank folded away). */
static int rd_layout(int p, int r, int *pof2, int *rem)
{
    *pof2 = 1;
    while (*pof2 * 2 <= p)
        *pof2 *= 2;
    *rem = p - *pof2;
    return r < 2 * *rem ? (r % 2 ? r / 2 : -1) : r - *rem;
}

/* The rank that place newrank ^ mask stands for. */
static int rd_peer(int newrank, int mask, int rem)
{
    int nd = newrank ^ mask;
    return nd < rem ? nd * 2 + 1 : nd + rem;
}

/* Who takes part: p participants, this one r, participant i being
 * communicator rank ranks[i] (ranks NULL: rank i; the whole communicator). */
struct among {
    int p, r;
    const int *ranks;
    int sub;   /* the first of the 32 sub-tags it uses (RD_SUBTAGS) */
};

/* Sub-tags of recursive doubling: 0 folds the extra ranks in, 1.. the
 * doubling steps (at most 30), RD_LAST_SUB hands the result back. */
enum { RD_LAST_SUB = 31, RD_SUBTAGS = 32 };

static int rank_of(const struct among *a, int i)
{
    return a->ranks != NULL ? a->ranks[i] : i;
}

/* acc: the result, holding this rank's data once node copy (-1: none) has
 * run; first: a buffer holding that data from the start (the copy's
 * source), which the first send takes instead, so the first exchange runs
 * alongside the copy (one round fewer to start).  Among a's participants
 * (their indices order the combining of a non-commutative op). */
static void allreduce_rd(struct cdn_sched *s, const struct among *a, const void *first, int copy,
                         void *acc, MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    int p = a->p, r = a->r, pof2, rem;
    int newrank = rd_layout(p, r, &pof2, &rem);
    void *tmp = cdn_sched_typed_scratch(s, count, dt);
    if (tmp == NULL)
        return;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            cdn_sched_send(s, first, count, dt, rank_of(a, r + 1), a->sub);
        } else {
            int rv = cdn_sched_recv(s, tmp, count, dt, rank_of(a, r - 1), a->sub);
            int n = cdn_sched_reduce(s, tmp, acc, count, dt, op);  /* x[r-1] op x[r] */
            dep(s, rv, n);
            dep(s, copy, n);
        }
        cdn_sched_round(s);
        first = acc;
    }
    if (newrank >= 0) {
        int step = 1;
        for (int mask = 1; mask < pof2; mask <<= 1, step++) {
            int peer = rd_peer(newrank, mask, rem);
            cdn_sched_send(s, first, count, dt, rank_of(a, peer), a->sub + step);
            cdn_sched_recv(s, tmp, count, dt, rank_of(a, peer), a->sub + step);
            cdn_sched_round(s);  /* (the copy's round too) */
            first = acc;
            if (op->commute || peer < r)
                cdn_sched_reduce(s, tmp, acc, count, dt, op);  /* lower range first */
            else
                combine(s, -1, -1, acc, tmp, count, dt, op);
            cdn_sched_round(s);
        }
    }
    if (r < 2 * rem) {
        if (r % 2)
            cdn_sched_send(s, acc, count, dt, rank_of(a, r - 1), a->sub + RD_LAST_SUB);
        else
            cdn_sched_recv(s, acc, count, dt, rank_of(a, r + 1), a->sub + RD_LAST_SUB);
    }
}

void cdn_coll_allreduce_among(struct cdn_sched *s, int n, int me, const int *ranks, int sub,
                              void *buf, MPI_Count count, struct cdn_datatype *dt,
                              struct cdn_op *op)
{
    struct among a = {n, me, ranks, sub};
    if (n > 1 && count > 0)
        allreduce_rd(s, &a, buf, -1, buf, count, dt, op);
}

/* Reduce-scatter then allgather around the ring, count split in p blocks.
 * sbuf (NULL: in place, acc holds the data already): only the blocks that
 * are reduced into acc are copied there, alongside the first exchange;
 * this rank's own block is sent from sbuf and comes back in the allgather. */
static void allreduce_ring(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *acc,
                           MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    int p = c->size, r = c->rank;
    MPI_Count *cnt = cdn_sched_scratch(s, (size_t)p * sizeof *cnt);
    MPI_Aint *off = cdn_sched_scratch(s, (size_t)p * sizeof *off);
    void *tmp = cdn_sched_typed_scratch(s, count / p + 1, dt);
    if (cnt == NULL || off == NULL || tmp == NULL)
        return;
    for (int i = 0; i < p; i++) {
        cnt[i] = count / p + (i < count % p);
        off[i] = i == 0 ? 0 : off[i - 1] + (MPI_Aint)cnt[i - 1];
    }
    int right = (r + 1) % p, left = (r - 1 + p) % p;
    for (int j = 0; sbuf != NULL && j < p - 1; j++) {
        int rb = (r - j - 1 + p) % p;
        cdn_sched_copy(s, at(sbuf, off[rb], dt), cnt[rb], dt, at(acc, off[rb], dt), cnt[rb],
                       dt);
    }
    for (int j = 0; j < p - 1; j++) {
        int sb = (r - j + p) % p, rb = (r - j - 1 + p) % p;
        const void *from = j == 0 && sbuf != NULL ? sbuf : acc;
        cdn_sched_send(s, at(from, off[sb], dt), cnt[sb], dt, right, j % 100);
        cdn_sched_recv(s, tmp, cnt[rb], dt, left, j % 100);
        cdn_sched_round(s);
        cdn_sched_reduce(s, tmp, at(acc, off[rb], dt), cnt[rb], dt, op);
        cdn_sched_round(s);
    }
    for (int j = 0; j < p - 1; j++) {
        int sb = (r - j + 1 + p) % p, rb = (r - j + p) % p;
        cdn_sched_send(s, at(acc, off[sb], dt), cnt[sb], dt, right, 100 + j % 100);
        cdn_sched_recv(s, at(acc, off[rb], dt), cnt[rb], dt, left, 100 + j % 100);
        cdn_sched_round(s);
    }
}

void cdn_coll_allreduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                        MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    int alg = cdn_coll_forced(c, CDN_COLL_ALLREDUCE);
    if (alg == CDN_ALG_AUTO)
        alg = count * cdn_datatype_size(dt) >= (c->size == 2 ? ALLREDUCE_LONG_2 : ALLREDUCE_LONG) &&
                      count >= c->size
                  ? CDN_ALLREDUCE_RING : CDN_ALLREDUCE_RECURSIVE_DOUBLING;
    bool ring = c->size > 1 && count > 0 && alg == CDN_ALLREDUCE_RING && op->commute;
    if (ring) {  /* copies only what it reduces into */
        allreduce_ring(s, c, sbuf == MPI_IN_PLACE ? NULL : sbuf, rbuf, count, dt, op);
        return;
    }
    int copy = -1;
    if (sbuf != MPI_IN_PLACE)
        copy = cdn_sched_copy(s, sbuf, count, dt, rbuf, count, dt);  /* in the first round */
    struct among all = {c->size, c->rank, NULL, 0};
    if (c->size > 1 && count > 0)
        allreduce_rd(s, &all, copy >= 0 ? sbuf : rbuf, copy, rbuf, count, dt, op);
}

/* Reduce the whole vector to rank 0, then scatter the blocks. */
void cdn_coll_reduce_scatter(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                             void *rbuf, const MPI_Count *rcounts, struct cdn_datatype *dt,
                             struct cdn_op *op)
{
    int p = c->size;
    MPI_Aint *displs = cdn_sched_scratch(s, (size_t)p * sizeof *displs);
    if (displs == NULL)
        return;
    MPI_Count total = 0;
    for (int i = 0; i < p; i++) {
        displs[i] = (MPI_Aint)total;
        total += rcounts[i];
    }
    const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    void *tmp = c->rank == 0 ? cdn_sched_typed_scratch(s, total, dt) : NULL;
    if (c->rank == 0 && tmp == NULL)
        return;
    cdn_coll_reduce(s, c, mine, tmp, total, dt, op, 0);
    cdn_sched_round(s);
    cdn_coll_scatterv(s, c, tmp, rcounts, displs, dt, rbuf, rcounts[c->rank], dt, 0);
}

/* Recursive doubling: partial covers ranks [r - 2^k + 1, r] after step k. */
void cdn_coll_scan(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                   MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op, bool exclusive)
{
    int p = c->size, r = c->rank;
    const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    void *partial = cdn_sched_typed_scratch(s, count, dt);
    void *tmp = cdn_sched_typed_scratch(s, count, dt);
    if (partial == NULL || tmp == NULL)
        return;
    cdn_sched_copy(s, mine, count, dt, partial, count, dt);
    cdn_sched_round(s);
    bool have = false;  /* exclusive: rbuf holds a result */
    int step = 0;
    for (int mask = 1; mask < p; mask <<= 1, step++) {
        if (r + mask < p)
            cdn_sched_send(s, partial, count, dt, r + mask, step);
        if (r - mask >= 0)
            cdn_sched_recv(s, tmp, count, dt, r - mask, step);
        cdn_sched_round(s);
        if (r - mask >= 0) {
            if (exclusive) {
                if (have)
                    cdn_sched_reduce(s, tmp, rbuf, count, dt, op);
                else
                    cdn_sched_copy(s, tmp, count, dt, rbuf, count, dt);
                have = true;
            }
            cdn_sched_reduce(s, tmp, partial, count, dt, op);
            cdn_sched_round(s);
        }
    }
    if (!exclusive)
        cdn_sched_copy(s, partial, count, dt, rbuf, count, dt);
}

/* ---- blocking allreduce of a few bytes, without a schedule ----
 *
 * A kept schedule still costs a small blocking allreduce its node
 * bookkeeping, locks and proxies on every call -- as much again as the
 * exchange itself at 8 bytes.  So a blocking call of at most
 * CDN_ALLREDUCE_DIRECT_MAX contiguous bytes runs the same recursive
 * doubling (same peers, sub-tags and combining order as allreduce_rd,
 * so the bits are the same) straight on point-to-point requests, with the
 * partner's data in a buffer on the stack. */

bool cdn_coll_allreduce_direct_fits(struct cdn_comm *c, MPI_Count count, struct cdn_datatype *dt)
{
    MPI_Count bytes = count * cdn_datatype_size(dt);
    return !c->inter && c->size > 1 && count > 0 && bytes <= CDN_ALLREDUCE_DIRECT_MAX &&
           cdn_datatype_true_lb(dt) == 0 && cdn_datatype_is_contig(dt, count) &&
           cdn_coll_forced(c, CDN_COLL_ALLREDUCE) != CDN_ALLREDUCE_RING;
}

/* Send acc to peer and/or receive from it into into (NULL: no receive),
 * both under tag, and wait for both. */
static int exchange(struct cdn_comm *c, void *acc, void *into, MPI_Count count,
                    struct cdn_datatype *dt, int peer, int tag, bool send)
{
    struct cdn_coll_msg out = {acc, count, dt, peer}, in = {into, count, dt, peer};
    return cdn_coll_exchange(c, tag, &in, into != NULL, &out, send);
}

int cdn_coll_allreduce_direct(const char *fn, struct cdn_comm *c, const void *sbuf, void *rbuf,
                              MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    int base, rc = cdn_coll_call_tag(fn, c, &base);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t bytes = (size_t)(count * cdn_datatype_size(dt));
    _Alignas(64) unsigned char tmp[CDN_ALLREDUCE_DIRECT_MAX];
    if (sbuf != MPI_IN_PLACE)
        cdn_copy(rbuf, sbuf, bytes);
    /* After an error (a message of the wrong size: the ranks' counts
     * differ) every exchange still takes place, so that no peer waits for
     * a message that never comes; the data is not combined any more, and
     * the first error is returned. */
    int p = c->size, r = c->rank, pof2, rem, got;
    int newrank = rd_layout(p, r, &pof2, &rem);
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            rc = exchange(c, rbuf, NULL, count, dt, r + 1, base, true);
        } else {
            rc = exchange(c, NULL, tmp, count, dt, r - 1, base, false);
            if (rc == MPI_SUCCESS)
                cdn_op_reduce(op, tmp, rbuf, count, dt);  /* x[r-1] op x[r] */
        }
    }
    for (int mask = 1, step = 1; newrank >= 0 && mask < pof2; mask <<= 1, step++) {
        int peer = rd_peer(newrank, mask, rem);
        got = exchange(c, rbuf, tmp, count, dt, peer, base + step, true);
        rc = rc != MPI_SUCCESS ? rc : got;
        if (rc != MPI_SUCCESS)
            continue;
        if (op->commute || peer < r) {
            cdn_op_reduce(op, tmp, rbuf, count, dt);  /* lower range first */
        } else {
            cdn_op_reduce(op, rbuf, tmp, count, dt);  /* rbuf op tmp, into tmp */
            cdn_copy(rbuf, tmp, bytes);
        }
    }
    if (r < 2 * rem) {
        got = r % 2 ? exchange(c, rbuf, NULL, count, dt, r - 1, base + RD_LAST_SUB, true)
                    : exchange(c, NULL, rbuf, count, dt, r + 1, base + RD_LAST_SUB, false);
        rc = rc != MPI_SUCCESS ? rc : got;
    }
    return rc;
}
