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

/* Recursive doubling, written once: the steps a participant takes, handed
 * to a visitor that either adds them to a schedule (rd_sched) or makes
 * them at once on point-to-point requests (the blocking direct path,
 * rd_direct).  fold: the first 2 * rem participants pair up, the even one
 * sending its data to the odd one, which combines x[r-1] op x[r]; step:
 * the pof2 that remain exchange with their partner at each distance and
 * combine, the lower range first; unfold: the odd ones hand the result
 * back.  Peers are communicator ranks, sub-tags from a->sub. */
struct rd_visitor {
    void (*fold)(void *v, int peer, int sub, bool send);
    void (*step)(void *v, int peer, int sub, bool peer_lower);
    void (*unfold)(void *v, int peer, int sub, bool send);
};

static void rd_walk(const struct among *a, const struct rd_visitor *vt, void *v)
{
    int p = a->p, r = a->r, pof2, rem;
    int newrank = rd_layout(p, r, &pof2, &rem);
    if (r < 2 * rem)
        vt->fold(v, rank_of(a, r % 2 ? r - 1 : r + 1), a->sub, r % 2 == 0);
    for (int mask = 1, step = 1; newrank >= 0 && mask < pof2; mask <<= 1, step++) {
        int peer = rd_peer(newrank, mask, rem);
        vt->step(v, rank_of(a, peer), a->sub + step, peer < r);
    }
    if (r < 2 * rem)
        vt->unfold(v, rank_of(a, r % 2 ? r - 1 : r + 1), a->sub + RD_LAST_SUB, r % 2 == 1);
}

/* The schedule's visitor.  acc: the result, holding this rank's data once
 * node copy (-1: none) has run; first: a buffer holding that data from the
 * start (the copy's source), which the first send takes instead, so the
 * first exchange runs alongside the copy (one round fewer to start). */
struct rd_sched {
    struct cdn_sched *s;
    const void *first;
    int copy;
    void *acc, *tmp;
    MPI_Count count;
    struct cdn_datatype *dt;
    struct cdn_op *op;
};

static void sched_fold(void *v, int peer, int sub, bool send)
{
    struct rd_sched *x = v;
    if (send) {
        cdn_sched_send(x->s, x->first, x->count, x->dt, peer, sub);
    } else {
        int rv = cdn_sched_recv(x->s, x->tmp, x->count, x->dt, peer, sub);
        int n = cdn_sched_reduce(x->s, x->tmp, x->acc, x->count, x->dt, x->op);  /* x[r-1] op x[r] */
        dep(x->s, rv, n);
        dep(x->s, x->copy, n);
    }
    cdn_sched_round(x->s);
    x->first = x->acc;
}

static void sched_step(void *v, int peer, int sub, bool peer_lower)
{
    struct rd_sched *x = v;
    cdn_sched_send(x->s, x->first, x->count, x->dt, peer, sub);
    cdn_sched_recv(x->s, x->tmp, x->count, x->dt, peer, sub);
    cdn_sched_round(x->s);  /* (the copy's round too) */
    x->first = x->acc;
    if (x->op->commute || peer_lower)
        cdn_sched_reduce(x->s, x->tmp, x->acc, x->count, x->dt, x->op);  /* lower range first */
    else
        combine(x->s, -1, -1, x->acc, x->tmp, x->count, x->dt, x->op);
    cdn_sched_round(x->s);
}

static void sched_unfold(void *v, int peer, int sub, bool send)
{
    struct rd_sched *x = v;
    if (send)
        cdn_sched_send(x->s, x->acc, x->count, x->dt, peer, sub);
    else
        cdn_sched_recv(x->s, x->acc, x->count, x->dt, peer, sub);
}

static const struct rd_visitor rd_sched_ops = {sched_fold, sched_step, sched_unfold};

static void allreduce_rd(struct cdn_sched *s, const struct among *a, const void *first, int copy,
                         void *acc, MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    void *tmp = cdn_sched_typed_scratch(s, count, dt);
    if (tmp == NULL)
        return;
    struct rd_sched x = {s, first, copy, acc, tmp, count, dt, op};
    rd_walk(a, &rd_sched_ops, &x);
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
 * CDN_ALLREDUCE_DIRECT_MAX contiguous bytes walks the same recursive
 * doubling (rd_walk: the same peers, sub-tags and combining order as the
 * schedule's, so the bits are the same) making each step at once on
 * point-to-point requests, with the partner's data in a buffer on the
 * stack. */

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

/* The direct path's visitor: each step at once, the partner's data in
 * tmp.  After an error (a message of the wrong size: the ranks' counts
 * differ) every exchange still takes place, so that no peer waits for a
 * message that never comes; the data is not combined any more, and the
 * first error is returned. */
struct rd_direct {
    struct cdn_comm *c;
    void *rbuf, *tmp;
    MPI_Count count;
    struct cdn_datatype *dt;
    struct cdn_op *op;
    size_t bytes;
    int base, rc;
};

static void direct_fold(void *v, int peer, int sub, bool send)
{
    struct rd_direct *x = v;
    if (send) {
        x->rc = exchange(x->c, x->rbuf, NULL, x->count, x->dt, peer, x->base + sub, true);
    } else {
        x->rc = exchange(x->c, NULL, x->tmp, x->count, x->dt, peer, x->base + sub, false);
        if (x->rc == MPI_SUCCESS)
            cdn_op_reduce(x->op, x->tmp, x->rbuf, x->count, x->dt);  /* x[r-1] op x[r] */
    }
}

static void direct_step(void *v, int peer, int sub, bool peer_lower)
{
    struct rd_direct *x = v;
    int got = exchange(x->c, x->rbuf, x->tmp, x->count, x->dt, peer, x->base + sub, true);
    x->rc = x->rc != MPI_SUCCESS ? x->rc : got;
    if (x->rc != MPI_SUCCESS)
        return;
    if (x->op->commute || peer_lower) {
        cdn_op_reduce(x->op, x->tmp, x->rbuf, x->count, x->dt);  /* lower range first */
    } else {
        cdn_op_reduce(x->op, x->rbuf, x->tmp, x->count, x->dt);  /* rbuf op tmp, into tmp */
        cdn_copy(x->rbuf, x->tmp, x->bytes);
    }
}

static void direct_unfold(void *v, int peer, int sub, bool send)
{
    struct rd_direct *x = v;
    int got = send ? exchange(x->c, x->rbuf, NULL, x->count, x->dt, peer, x->base + sub, true)
                   : exchange(x->c, NULL, x->rbuf, x->count, x->dt, peer, x->base + sub, false);
    x->rc = x->rc != MPI_SUCCESS ? x->rc : got;
}

static const struct rd_visitor rd_direct_ops = {direct_fold, direct_step, direct_unfold};

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
    struct among all = {c->size, c->rank, NULL, 0};
    struct rd_direct x = {c, rbuf, tmp, count, dt, op, bytes, base, MPI_SUCCESS};
    rd_walk(&all, &rd_direct_ops, &x);
    return x.rc;
}
