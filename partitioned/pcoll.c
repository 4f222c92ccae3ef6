/*
 * Partitioned collectives (Cadence extensions; docs/partitioned.md):
 * MPIX_Pbcast_init, MPIX_Pallreduce_init, MPIX_Palltoall_init.
 *
 * Each is a persistent schedule (sched/) with one chain of nodes per
 * partition, started by a trigger node that MPI_Pready fires, and one
 * watched node per partition whose completion MPI_Parrived reads.  A
 * partition's messages, reductions and forwarding therefore start the
 * moment it is marked ready (and, at a rank in the middle of a tree, the
 * moment it arrived), independently of the other partitions; the schedule
 * engine runs them in whichever thread completes their inputs.
 *
 *   bcast      a binomial tree from the root: the root's trigger of
 *              partition p leads to its sends; any other rank receives p
 *              from its parent (watched) and forwards it to its children
 *   allreduce  recursive doubling per partition (the collectives' own
 *              peers and combining order, cdn_coll_rd_steps, so a
 *              non-commutative op is applied in the order MPI defines):
 *              the trigger (and a copy of sendbuf's partition into
 *              recvbuf's) leads to the first exchange; each exchange's
 *              reduction to the next; the last one is watched
 *   alltoall   the trigger of partition p leads to the sends of slice p of
 *              every block; slice p of every block received (a join,
 *              watched) is partition p arrived
 *
 * The request the user holds is a partitioned request (kind CDN_REQ_PART)
 * whose child is the schedule.  Partition p uses the schedule's sub-tag p,
 * so a collective has at most CDN_SCHED_SUBTAGS partitions.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "partitioned/part.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "sched/sched.h"

struct pc {
    struct cdn_part base;       /* first: cdn_part_of */
    struct cdn_request *req, *sched;
    int *trig;                  /* per partition: its trigger node, or -1 */
    int *watch;                 /* per partition: the node that is its arrival */
};

static struct pc *pc_of(const struct cdn_request *r)
{
    return (struct pc *)(void *)cdn_part_of(r);
}

static void pc_ready(struct cdn_request *r, int p)
{
    struct pc *c = pc_of(r);
    cdn_sched_fire(c->sched, c->trig[p]);
}

static bool pc_arrived(struct cdn_request *r, int p)
{
    struct pc *c = pc_of(r);
    return cdn_sched_node_done(c->sched, c->watch[p]);
}

/* Every rank marks and receives (allreduce, alltoall, a broadcast's root). */
static const struct cdn_part_kind both_kind = {
    .name = "partitioned collective", .sends = true, .receives = true, .ready = pc_ready,
    .arrived = pc_arrived,
};
/* A broadcast's other ranks only receive. */
static const struct cdn_part_kind recv_kind = {
    .name = "partitioned collective", .receives = true, .arrived = pc_arrived,
};

static int pc_start(struct cdn_request *r)
{
    struct pc *c = pc_of(r);
    cdn_status_empty(&r->status);
    cdn_part_flags_clear(&c->base);
    cdn_request_arm(r, 1);
    c->sched->active = true;
    return cdn_sched_start(c->sched);
}

static void pc_child_done(struct cdn_request *r, int slot)
{
    (void)slot;
    struct pc *c = pc_of(r);
    c->sched->active = false;
    cdn_request_complete(r, c->sched->status.MPI_ERROR);
}

static void pc_free(struct cdn_request *r)
{
    struct pc *c = pc_of(r);
    if (c == NULL)
        return;
    if (c->sched != NULL) {
        c->sched->parent = NULL;
        cdn_request_release(c->sched);
    }
    free(c->trig);
    free(c->watch);
    free((void *)c->base.flags);
    free(c);
    memset(r->u.room, 0, sizeof(void *));
}

static const struct cdn_request_ops pc_ops = {
    .name = "partitioned collective", .start = pc_start, .free = pc_free,
    .child_done = pc_child_done,
};

/* Free a schedule that will not be used (built or not). */
static void sched_drop(struct cdn_sched *s, const char *fn)
{
    struct cdn_request *sr;
    if (cdn_sched_commit(s, fn, &sr) == MPI_SUCCESS)
        cdn_request_release(sr);  /* (a failed commit frees it itself) */
}

/* The request, its per-partition tables and, in *sp, the schedule for the
 * caller to build; NULL when out of memory. */
static struct pc *pc_new(struct cdn_comm *comm, int partitions, bool sends, const char *fn,
                         struct cdn_sched **sp, int *rc)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_PART, &pc_ops, comm);
    struct pc *c = calloc(1, sizeof *c);
    struct cdn_sched *s = cdn_coll_sched(comm, true);
    if (r != NULL && c != NULL) {
        memcpy(r->u.room, &c, sizeof c);
        r->persistent = true;
        c->req = r;
        c->base.kind = sends ? &both_kind : &recv_kind;
        c->base.partitions = partitions;
        c->base.flags = sends ? cdn_part_flags_new(partitions) : NULL;
        c->trig = malloc((size_t)partitions * sizeof *c->trig);
        c->watch = malloc((size_t)partitions * sizeof *c->watch);
        if ((!sends || c->base.flags != NULL) && c->trig != NULL && c->watch != NULL &&
            s != NULL) {
            for (int p = 0; p < partitions; p++)
                c->trig[p] = c->watch[p] = -1;
            *sp = s;
            return c;
        }
    }
    if (s != NULL)
        sched_drop(s, fn);
    if (r != NULL)
        cdn_request_release(r);  /* pc_free frees c */
    else
        free(c);
    *rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    return NULL;
}

/* Commit the schedule built for c, or free everything. */
static int pc_commit(struct pc *c, struct cdn_sched *s, const char *fn, struct cdn_request **out)
{
    struct cdn_request *sr;
    int rc = cdn_sched_commit(s, fn, &sr);
    if (rc != MPI_SUCCESS) {
        cdn_request_release(c->req);
        return rc;
    }
    c->sched = sr;
    sr->parent = c->req;
    sr->parent_slot = 0;
    *out = c->req;
    return MPI_SUCCESS;
}

/* Binomial tree rooted at relative rank 0: the parent of vr (or -1) and its
 * children (ascending), as relative ranks. */
static int tree(int vr, int n, int *kids, int *nkids)
{
    *nkids = 0;
    for (int mask = 1; mask < n; mask <<= 1) {
        if (vr & mask)
            break;
        if (vr + mask < n)
            kids[(*nkids)++] = vr + mask;
    }
    return vr == 0 ? -1 : vr & (vr - 1);
}

int cdn_part_bcast_init(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                        int root, struct cdn_comm *comm, struct cdn_request **out)
{
    const char *fn = "MPIX_Pbcast_init";
    int rc = MPI_SUCCESS, n = comm->size, me = comm->rank;
    int vr = (me - root + n) % n, kids[32], nk;
    int parent = tree(vr, n, kids, &nk);
    struct cdn_sched *s;
    struct pc *c = pc_new(comm, partitions, me == root, fn, &s, &rc);
    if (c == NULL)
        return rc;
    MPI_Aint ext = cdn_datatype_extent(dt);
    for (int p = 0; p < partitions; p++) {
        char *pb = (char *)buf + (MPI_Aint)p * count * ext;
        int src;
        if (parent < 0) {
            src = c->trig[p] = cdn_sched_trigger(s);
        } else {
            src = cdn_sched_recv(s, pb, count, dt, (parent + root) % n, p);
        }
        c->watch[p] = src;
        cdn_sched_watch(s, src);
        for (int k = nk - 1; k >= 0; k--) {  /* the largest subtree first */
            int id = cdn_sched_send(s, pb, count, dt, (kids[k] + root) % n, p);
            cdn_sched_dep(s, src, id);
        }
    }
    return pc_commit(c, s, fn, out);
}

/* One partition's recursive doubling (cdn_coll_rd_steps) as nodes with
 * explicit dependencies, so partitions never wait for each other: last is
 * the node after which acc holds this rank's partial result, sent the
 * node after which acc may be written again. */
struct rdp {
    struct cdn_sched *s;
    char *acc;
    void *tmp;
    MPI_Count count;
    struct cdn_datatype *dt;
    struct cdn_op *op;
    int sub, last, sent;
    int tmp_used;                 /* the last node reading tmp (-1: none yet) */
};

static void rdp_fold(void *v, int peer, bool send)
{
    struct rdp *x = v;
    if (send) {  /* this rank drops out until the unfold */
        x->sent = cdn_sched_send(x->s, x->acc, x->count, x->dt, peer, x->sub);
        cdn_sched_dep(x->s, x->last, x->sent);
        return;
    }
    int rv = cdn_sched_recv(x->s, x->tmp, x->count, x->dt, peer, x->sub);
    int red = cdn_sched_reduce(x->s, x->tmp, x->acc, x->count, x->dt, x->op);  /* lower first */
    cdn_sched_dep(x->s, rv, red);
    cdn_sched_dep(x->s, x->last, red);
    x->last = x->tmp_used = red;
}

static void rdp_step(void *v, int peer, bool peer_lower)
{
    struct rdp *x = v;
    int snd = cdn_sched_send(x->s, x->acc, x->count, x->dt, peer, x->sub);
    cdn_sched_dep(x->s, x->last, snd);
    int rv = cdn_sched_recv(x->s, x->tmp, x->count, x->dt, peer, x->sub);
    if (x->tmp_used >= 0)  /* tmp is free once the step before read it */
        cdn_sched_dep(x->s, x->tmp_used, rv);
    int red;
    if (x->op->commute || peer_lower) {
        red = cdn_sched_reduce(x->s, x->tmp, x->acc, x->count, x->dt, x->op);  /* acc = tmp op acc */
        cdn_sched_dep(x->s, snd, red);  /* acc is the send's until it completes */
    } else {
        red = cdn_sched_reduce(x->s, x->acc, x->tmp, x->count, x->dt, x->op);  /* tmp = acc op tmp */
        int cp = cdn_sched_copy(x->s, x->tmp, x->count, x->dt, x->acc, x->count, x->dt);
        cdn_sched_dep(x->s, red, cp);
        cdn_sched_dep(x->s, snd, cp);
        cdn_sched_dep(x->s, rv, red);
        cdn_sched_dep(x->s, x->last, red);  /* it reads acc */
        x->last = x->tmp_used = cp;
        return;
    }
    cdn_sched_dep(x->s, rv, red);
    x->last = x->tmp_used = red;
}

static void rdp_unfold(void *v, int peer, bool send)
{
    struct rdp *x = v;
    if (send) {
        int snd = cdn_sched_send(x->s, x->acc, x->count, x->dt, peer, x->sub);
        cdn_sched_dep(x->s, x->last, snd);
        return;
    }
    int rv = cdn_sched_recv(x->s, x->acc, x->count, x->dt, peer, x->sub);
    cdn_sched_dep(x->s, x->sent, rv);  /* the fold's send read acc */
    x->last = rv;
}

static const struct cdn_coll_rd_visitor rdp_ops = {rdp_fold, rdp_step, rdp_unfold};

int cdn_part_allreduce_init(const void *sendbuf, void *recvbuf, int partitions,
                            MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op,
                            struct cdn_comm *comm, struct cdn_request **out)
{
    const char *fn = "MPIX_Pallreduce_init";
    int rc = MPI_SUCCESS;
    struct cdn_sched *s;
    struct pc *c = pc_new(comm, partitions, true, fn, &s, &rc);
    if (c == NULL)
        return rc;
    MPI_Aint ext = cdn_datatype_extent(dt);
    bool in_place = sendbuf == MPI_IN_PLACE;
    for (int p = 0; p < partitions; p++) {
        MPI_Aint off = (MPI_Aint)p * count * ext;
        struct rdp x = {.s = s, .acc = (char *)recvbuf + off, .count = count, .dt = dt,
                        .op = op, .sub = p, .tmp_used = -1};
        x.last = c->trig[p] = cdn_sched_trigger(s);
        if (!in_place) {
            int cp = cdn_sched_copy(s, (const char *)sendbuf + off, count, dt, x.acc, count, dt);
            cdn_sched_dep(s, x.last, cp);
            x.last = cp;
        }
        if (comm->size > 1 && count > 0) {
            x.tmp = cdn_sched_typed_scratch(s, count, dt);
            if (x.tmp == NULL)
                break;  /* (the schedule is marked broken: the commit says so) */
            cdn_coll_rd_steps(comm->size, comm->rank, &rdp_ops, &x);
        }
        c->watch[p] = x.last;
        cdn_sched_watch(s, x.last);
    }
    return pc_commit(c, s, fn, out);
}

int cdn_part_alltoall_init(const void *sendbuf, void *recvbuf, int partitions,
                           MPI_Count count, struct cdn_datatype *dt, struct cdn_comm *comm,
                           struct cdn_request **out)
{
    const char *fn = "MPIX_Palltoall_init";
    int rc = MPI_SUCCESS, n = comm->size, me = comm->rank;
    struct cdn_sched *s;
    struct pc *c = pc_new(comm, partitions, true, fn, &s, &rc);
    if (c == NULL)
        return rc;
    MPI_Aint ext = cdn_datatype_extent(dt);
    int *ins = malloc((size_t)n * sizeof *ins);
    if (ins == NULL) {
        sched_drop(s, fn);
        cdn_request_release(c->req);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    }
    for (int p = 0; p < partitions; p++) {
        int t = c->trig[p] = cdn_sched_trigger(s);
        for (int k = 0; k < n; k++) {
            int r = (me + k) % n;  /* each rank starts with a different peer */
            MPI_Aint off = ((MPI_Aint)r * partitions + p) * count * ext;
            const char *sb = (const char *)sendbuf + off;
            char *rb = (char *)recvbuf + off;
            if (r == me) {
                ins[k] = cdn_sched_copy(s, sb, count, dt, rb, count, dt);
                cdn_sched_dep(s, t, ins[k]);
                continue;
            }
            int id = cdn_sched_send(s, sb, count, dt, r, p);
            cdn_sched_dep(s, t, id);
            ins[k] = cdn_sched_recv(s, rb, count, dt, r, p);
        }
        int j = cdn_sched_nop(s);
        for (int k = 0; k < n; k++)
            cdn_sched_dep(s, ins[k], j);
        c->watch[p] = j;
        cdn_sched_watch(s, j);
    }
    free(ins);
    return pc_commit(c, s, fn, out);
}
