/*
 * Partitioned collectives (Cadence extensions; docs/partitioned.md):
 * MPIX_Pbcast_init, MPIX_Pallreduce_init, MPIX_Palltoall_init.
 *
 * Partition p is a persistent collective of its own: a schedule (sched/)
 * built by the collectives' own builders (coll/: the algorithm the
 * persistent collective of that size would take), with a trigger node in
 * front of everything where this rank marks partitions (every rank for
 * allreduce and alltoall, the root for bcast).  MPI_Pready(p) fires
 * partition p's trigger; MPI_Parrived(p) is partition p's schedule being
 * complete.  So a partition's messages, reductions and forwarding start
 * the moment it is marked ready, and at a rank in the middle of a tree the
 * moment it arrived, whatever the other partitions do; the schedule engine
 * runs them in whichever thread completes their inputs.  Each partition's
 * schedule takes its tags from the communicator's collective sequence like
 * any collective call, so every rank must make the same calls in the same
 * order, as for every collective.
 *
 * The request the user holds is a partitioned request (kind CDN_REQ_PART)
 * whose children are the partitions' schedules.
 */
#include <stdatomic.h>
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
    struct cdn_part base;        /* first: cdn_part_of */
    atomic_int marked;           /* partitions marked in this instance */
    struct cdn_request *req;
    struct cdn_request **kids;   /* partition p's schedule */
    int *trig;                   /* its trigger node (none where this rank marks none) */
};

static struct pc *pc_of(const struct cdn_request *r)
{
    return (struct pc *)(void *)cdn_part_of(r);
}

static void pc_ready(struct cdn_request *r, int p)
{
    struct pc *c = pc_of(r);
    /* the last partition marked: the application waits next */
    bool last = atomic_fetch_add_explicit(&c->marked, 1, memory_order_relaxed) + 1 ==
                c->base.partitions;
    cdn_sched_fire(c->kids[p], c->trig[p], last);
}

static bool pc_arrived(struct cdn_request *r, int p)
{
    return cdn_request_done(pc_of(r)->kids[p]);
}

/* Every partition's schedule is small and asks for nobody (a wait for it
 * alone would poll a moment first): so may a wait for all of them. */
static bool pc_waits_late(const struct cdn_request *r)
{
    const struct pc *c = pc_of(r);
    for (int p = 0; p < c->base.partitions; p++)
        if (!cdn_sched_waits_late(c->kids[p]))
            return false;
    return true;
}

/* Every rank marks and receives (allreduce, alltoall, a broadcast's root). */
static const struct cdn_part_kind both_kind = {
    .name = "partitioned collective", .sends = true, .receives = true, .ready = pc_ready,
    .arrived = pc_arrived, .waits_late = pc_waits_late,
};
/* A broadcast's other ranks only receive. */
static const struct cdn_part_kind recv_kind = {
    .name = "partitioned collective", .receives = true, .arrived = pc_arrived,
    .waits_late = pc_waits_late,
};

static int pc_start(struct cdn_request *r)
{
    struct pc *c = pc_of(r);
    cdn_status_empty(&r->status);
    cdn_part_flags_clear(&c->base);
    atomic_store_explicit(&c->marked, 0, memory_order_relaxed);
    cdn_request_arm(r, c->base.partitions);
    for (int p = 0; p < c->base.partitions; p++) {
        c->kids[p]->active = true;
        cdn_sched_start(c->kids[p]);
    }
    return MPI_SUCCESS;
}

static void pc_child_done(struct cdn_request *r, int p)
{
    struct pc *c = pc_of(r);
    c->kids[p]->active = false;
    cdn_request_complete(r, c->kids[p]->status.MPI_ERROR);
}

static void pc_free(struct cdn_request *r)
{
    struct pc *c = pc_of(r);
    if (c == NULL)
        return;
    for (int p = 0; c->kids != NULL && p < c->base.partitions; p++)
        if (c->kids[p] != NULL) {
            c->kids[p]->parent = NULL;
            cdn_request_release(c->kids[p]);
        }
    free(c->kids);
    free(c->trig);
    free((void *)c->base.flags);
    free(c);
    memset(r->u.room, 0, sizeof(void *));
}

static const struct cdn_request_ops pc_ops = {
    .name = "partitioned collective", .start = pc_start, .free = pc_free,
    .child_done = pc_child_done,
};

/* What a collective adds to partition p's schedule s after its trigger. */
struct pc_build {
    void (*add)(struct cdn_sched *s, struct cdn_comm *comm, int p, void *arg);
    void *arg;
};

/* The request: one schedule per partition, each begun by a trigger where
 * this rank marks partitions (sends). */
static int pc_make(struct cdn_comm *comm, int partitions, bool sends, const struct pc_build *b,
                   const char *fn, struct cdn_request **out)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_PART, &pc_ops, comm);
    struct pc *c = calloc(1, sizeof *c);
    if (r == NULL || c == NULL) {
        free(c);
        if (r != NULL)
            cdn_request_release(r);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    }
    memcpy(r->u.room, &c, sizeof c);
    r->persistent = true;
    c->req = r;
    c->base.kind = sends ? &both_kind : &recv_kind;
    c->base.partitions = partitions;
    c->base.flags = sends ? cdn_part_flags_new(partitions) : NULL;
    c->kids = calloc((size_t)partitions, sizeof *c->kids);
    c->trig = malloc((size_t)partitions * sizeof *c->trig);
    int rc = MPI_SUCCESS;
    if ((sends && c->base.flags == NULL) || c->kids == NULL || c->trig == NULL)
        rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    for (int p = 0; rc == MPI_SUCCESS && p < partitions; p++) {
        struct cdn_sched *s = cdn_coll_sched(comm, true);
        if (s == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a schedule", fn);
            break;
        }
        c->trig[p] = -1;
        if (sends) {
            c->trig[p] = cdn_sched_trigger(s);
            cdn_sched_round(s);  /* everything after waits for MPI_Pready */
        }
        b->add(s, comm, p, b->arg);
        rc = cdn_sched_commit(s, fn, &c->kids[p]);
        if (rc == MPI_SUCCESS) {
            c->kids[p]->parent = r;
            c->kids[p]->parent_slot = p;
            cdn_sched_standalone(c->kids[p]);  /* started as the user's own call */
        }
    }
    if (rc != MPI_SUCCESS) {
        cdn_request_release(r);  /* pc_free frees what was made */
        return rc;
    }
    *out = r;
    return MPI_SUCCESS;
}

/* ---- the three collectives ---- */

struct bcast_arg {
    char *buf;
    MPI_Count count;
    MPI_Aint stride;
    struct cdn_datatype *dt;
    int root;
};

static void bcast_add(struct cdn_sched *s, struct cdn_comm *comm, int p, void *arg)
{
    struct bcast_arg *a = arg;
    cdn_coll_bcast(s, comm, a->buf + p * a->stride, a->count, a->dt, a->root);
}

int cdn_part_bcast_init(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                        int root, struct cdn_comm *comm, struct cdn_request **out)
{
    struct bcast_arg a = {buf, count, count * cdn_datatype_extent(dt), dt, root};
    struct pc_build b = {bcast_add, &a};
    return pc_make(comm, partitions, comm->rank == root, &b, "MPIX_Pbcast_init", out);
}

struct allreduce_arg {
    const char *sbuf;
    char *rbuf;
    MPI_Count count;
    MPI_Aint stride;
    struct cdn_datatype *dt;
    struct cdn_op *op;
};

static void allreduce_add(struct cdn_sched *s, struct cdn_comm *comm, int p, void *arg)
{
    struct allreduce_arg *a = arg;
    const void *sb = a->sbuf == MPI_IN_PLACE ? MPI_IN_PLACE : a->sbuf + p * a->stride;
    cdn_coll_allreduce(s, comm, sb, a->rbuf + p * a->stride, a->count, a->dt, a->op);
}

int cdn_part_allreduce_init(const void *sendbuf, void *recvbuf, int partitions,
                            MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op,
                            struct cdn_comm *comm, struct cdn_request **out)
{
    struct allreduce_arg a = {sendbuf, recvbuf, count, count * cdn_datatype_extent(dt), dt, op};
    struct pc_build b = {allreduce_add, &a};
    return pc_make(comm, partitions, true, &b, "MPIX_Pallreduce_init", out);
}

struct alltoall_arg {
    const char *sbuf;
    char *rbuf;
    MPI_Count count;
    MPI_Aint slice;      /* one partition of one block, in bytes */
    int partitions;
    struct cdn_datatype *dt;
};

/* Slice p of every block: an alltoallw over the blocks' slices. */
static void alltoall_add(struct cdn_sched *s, struct cdn_comm *comm, int p, void *arg)
{
    struct alltoall_arg *a = arg;
    int n = comm->size;
    MPI_Count *counts = cdn_sched_scratch(s, (size_t)n * sizeof *counts);
    MPI_Aint *displs = cdn_sched_scratch(s, (size_t)n * sizeof *displs);
    struct cdn_datatype **dts = cdn_sched_scratch(s, (size_t)n * sizeof *dts);
    if (counts == NULL || displs == NULL || dts == NULL)
        return;  /* (the schedule is marked broken: its commit says so) */
    for (int j = 0; j < n; j++) {
        counts[j] = a->count;
        displs[j] = ((MPI_Aint)j * a->partitions + p) * a->slice;
        dts[j] = a->dt;
    }
    cdn_coll_alltoallw(s, comm, a->sbuf, counts, displs, dts, a->rbuf, counts, displs, dts,
                       true);
}

int cdn_part_alltoall_init(const void *sendbuf, void *recvbuf, int partitions,
                           MPI_Count count, struct cdn_datatype *dt, struct cdn_comm *comm,
                           struct cdn_request **out)
{
    struct alltoall_arg a = {sendbuf, recvbuf, count, count * cdn_datatype_extent(dt),
                             partitions, dt};
    struct pc_build b = {alltoall_add, &a};
    return pc_make(comm, partitions, true, &b, "MPIX_Palltoall_init", out);
}
