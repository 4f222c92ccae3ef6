/*
 * Collective policy (coll.h, "A collective call"): what happens to a call
 * once api/ has checked its arguments and converted its handles -- the
 * direct path of a small blocking call, a schedule kept from an identical
 * earlier call run again, or the algorithm chosen and the schedule built
 * (intracommunicator or intercommunicator form) -- and the ending its
 * form asks for: start and wait (blocking), start (MPI_I...), or keep it
 * for MPI_Start (MPI_..._init: algorithm chosen and schedule built once).
 */
#include <string.h>

#include "coll/coll.h"
#include "progress/engine.h"
#include "progress/request.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/topo.h"
#include "sched/sched.h"

/* Which collective a kept schedule is (cdn_coll_key.kind). */
enum keep_kind { KEEP_BARRIER = 1, KEEP_BCAST, KEEP_ALLREDUCE, KEEP_REDUCE, KEEP_ALLTOALL };

/* Fill *k for a blocking or nonblocking intracommunicator call whose
 * count elements of dt (a block, for alltoall) are at most
 * cdn_coll_keep_max() bytes (coll/coll.c, "Kept schedules"), else NULL. */
static struct cdn_coll_key *keep_key(struct cdn_coll_key *k, const struct cdn_coll_call *call,
                                     int kind, int alg, const void *sbuf, void *rbuf,
                                     MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op,
                                     int root)
{
    if (call->form == CDN_COLL_PERSISTENT || call->c->inter ||
        (dt != NULL && count * (MPI_Count)cdn_datatype_size(dt) > cdn_coll_keep_max()))
        return NULL;
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->alg = alg;
    k->root = root;
    k->sbuf = sbuf;
    k->rbuf = rbuf;
    k->count = count;
    k->dt = dt;
    k->op = op;
    return k;
}

/* Start r as the form says: run it to the end (blocking: its result), or
 * start it and hand it to the user (nonblocking).  Takes the caller's
 * reference. */
static int run_form(struct cdn_request *r, const struct cdn_coll_call *call)
{
    if (call->form != CDN_COLL_BLOCKING) {
        cdn_sched_start(r);
        *call->request = cdn_request_publish(r);
        return MPI_SUCCESS;
    }
    /* A schedule whose messages all come eagerly and whose steps ask for
     * nobody (cdn_sched_waits_late) runs and polls a moment before its
     * caller counts as a poller, as a blocking collective without a
     * schedule does (cdn_coll_exchange): entering and leaving touch the
     * doorbell line the peers read at every send, two cache-line
     * transfers that cost a 4-16 KiB broadcast or alltoall 10-20% of its
     * time on a host whose transfers take 100-200 ns (docs/progress.md,
     * "Owed doorbells"); a peer's doorbell meanwhile is owed, and taken by
     * the polls before it is due.  Any other polls at once. */
    bool late = cdn_sched_waits_late(r);
    if (!late)
        cdn_progress_blocking_begin();  /* the wait below polls at once */
    cdn_sched_run(r);
    if (late)
        cdn_request_wait_late(r);
    else
        cdn_request_wait(r);
    int err = r->status.MPI_ERROR;
    cdn_request_release(r);
    return err;
}

/* Did a schedule kept for a call like this one run it (*rc: its result)?
 * Otherwise the caller builds one. */
static bool ran_kept(const struct cdn_coll_call *call, const struct cdn_coll_key *key, int *rc)
{
    struct cdn_request *r = key != NULL ? cdn_coll_kept_take(call->c, key) : NULL;
    if (r == NULL)
        return false;
    *rc = run_form(r, call);
    return true;
}

/* Commit the schedule and end the call as its form says (key: a call whose
 * schedule the communicator keeps for the next one like it). */
static int launch_keeping(struct cdn_sched *s, const struct cdn_coll_call *call,
                          const struct cdn_coll_key *key)
{
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a schedule", call->fn);
    struct cdn_request *r;
    int rc = cdn_sched_commit(s, call->fn, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (call->form == CDN_COLL_PERSISTENT) {
        *call->request = cdn_request_publish(r);
        return MPI_SUCCESS;
    }
    if (key != NULL)
        cdn_coll_kept_put(call->c, key, r);
    return run_form(r, call);
}

static struct cdn_sched *sched_for(const struct cdn_coll_call *call)
{
    return cdn_coll_sched(call->c, call->form == CDN_COLL_PERSISTENT);
}

int cdn_coll_barrier_call(const struct cdn_coll_call *call)
{
    struct cdn_comm *c = call->c;
    if (call->form == CDN_COLL_BLOCKING && !c->inter)
        return cdn_coll_barrier_direct(call->fn, c);
    int rc;
    struct cdn_coll_key kk,
        *key = keep_key(&kk, call, KEEP_BARRIER, 0, NULL, NULL, 0, NULL, NULL, 0);
    if (ran_kept(call, key, &rc))
        return rc;
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter)
        cdn_coll_inter_barrier(s, c);
    else if (s != NULL)
        cdn_coll_barrier(s, c);
    return launch_keeping(s, call, key);
}

int cdn_coll_bcast_call(const struct cdn_coll_call *call, void *buf, MPI_Count count,
                        struct cdn_datatype *dt, int root)
{
    struct cdn_comm *c = call->c;
    if (call->form == CDN_COLL_BLOCKING && cdn_coll_bcast_direct_fits(c, count, dt))
        return cdn_coll_bcast_direct(call->fn, c, buf, count, dt, root);
    int rc;
    struct cdn_coll_key kk, *key = keep_key(&kk, call, KEEP_BCAST,
                                            cdn_coll_forced(c, CDN_COLL_BCAST), NULL, buf, count,
                                            dt, NULL, root);
    if (ran_kept(call, key, &rc))
        return rc;
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter)
        cdn_coll_inter_bcast(s, c, buf, count, dt, root);
    else if (s != NULL)
        cdn_coll_bcast(s, c, buf, count, dt, root);
    return launch_keeping(s, call, key);
}

int cdn_coll_rooted_call(const struct cdn_coll_call *call, bool gather, const void *onebuf,
                         MPI_Count onecount, struct cdn_datatype *onedt, void *manybuf,
                         const MPI_Count *counts, const MPI_Aint *displs,
                         struct cdn_datatype *manydt, int root)
{
    struct cdn_comm *c = call->c;
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter && gather)
        cdn_coll_inter_gatherv(s, c, onebuf, onecount, onedt, manybuf, counts, displs, manydt,
                               root);
    else if (s != NULL && c->inter)
        cdn_coll_inter_scatterv(s, c, manybuf, counts, displs, manydt, (void *)onebuf, onecount,
                                onedt, root);
    else if (s != NULL && gather)
        cdn_coll_gatherv(s, c, onebuf, onecount, onedt, manybuf, counts, displs, manydt, root);
    else if (s != NULL)
        cdn_coll_scatterv(s, c, manybuf, counts, displs, manydt, (void *)onebuf, onecount, onedt,
                          root);
    return launch_keeping(s, call, NULL);
}

int cdn_coll_allgatherv_call(const struct cdn_coll_call *call, const void *sbuf, MPI_Count scount,
                             struct cdn_datatype *sdt, void *rbuf, const MPI_Count *rcounts,
                             const MPI_Aint *displs, struct cdn_datatype *rdt, bool uniform)
{
    struct cdn_comm *c = call->c;
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter)
        cdn_coll_inter_allgatherv(s, c, sbuf, scount, sdt, rbuf, rcounts, displs, rdt);
    else if (s != NULL)
        cdn_coll_allgatherv(s, c, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, uniform);
    return launch_keeping(s, call, NULL);
}

bool cdn_coll_alltoall_quick(const struct cdn_coll_call *call, const void *sbuf,
                             MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                             MPI_Count rcount, struct cdn_datatype *rdt, struct cdn_coll_key *kk,
                             struct cdn_coll_key **key, int *rc)
{
    struct cdn_comm *c = call->c;
    *key = NULL;
    if (call->form == CDN_COLL_BLOCKING && cdn_coll_alltoall_direct_fits(c, sbuf, rcount, rdt)) {
        *rc = cdn_coll_alltoall_direct(call->fn, c, sbuf, scount, sdt, rbuf, rcount, rdt);
        return true;
    }
    /* the key's count and dt: the send block; rcount and rdt: the receive block */
    *key = keep_key(kk, call, KEEP_ALLTOALL, cdn_coll_forced(c, CDN_COLL_ALLTOALL), sbuf, rbuf,
                    rcount, rdt, NULL, 0);
    if (*key != NULL) {
        (*key)->rcount = rcount;
        (*key)->rdt = rdt;
        (*key)->count = sbuf == MPI_IN_PLACE ? 0 : scount;
        (*key)->dt = sdt;
    }
    return ran_kept(call, *key, rc);
}

int cdn_coll_alltoallw_call(const struct cdn_coll_call *call, const void *sbuf,
                            const MPI_Count *scounts, const MPI_Aint *sdispls,
                            struct cdn_datatype *const *sdts, void *rbuf,
                            const MPI_Count *rcounts, const MPI_Aint *rdispls,
                            struct cdn_datatype *const *rdts, bool uniform,
                            const struct cdn_coll_key *key)
{
    struct cdn_comm *c = call->c;
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter)
        cdn_coll_inter_alltoallw(s, c, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls,
                                 rdts);
    else if (s != NULL)
        cdn_coll_alltoallw(s, c, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts,
                           uniform);
    return launch_keeping(s, call, key);
}

int cdn_coll_reduction_call(const struct cdn_coll_call *call, enum cdn_coll_red kind,
                            const void *sbuf, void *rbuf, MPI_Count count,
                            const MPI_Count *rcounts, struct cdn_datatype *dt, struct cdn_op *op,
                            int root)
{
    struct cdn_comm *c = call->c;
    if (kind == CDN_RED_ALLREDUCE && call->form == CDN_COLL_BLOCKING && dt != NULL &&
        cdn_coll_allreduce_direct_fits(c, count, dt))
        return cdn_coll_allreduce_direct(call->fn, c, sbuf, rbuf, count, dt, op);
    struct cdn_coll_key kk, *key = NULL;
    if (kind == CDN_RED_ALLREDUCE || kind == CDN_RED_REDUCE) {
        bool all = kind == CDN_RED_ALLREDUCE;
        int rc;
        key = keep_key(&kk, call, all ? KEEP_ALLREDUCE : KEEP_REDUCE,
                       cdn_coll_forced(c, all ? CDN_COLL_ALLREDUCE : CDN_COLL_REDUCE), sbuf,
                       rbuf, count, dt, op, root);
        if (ran_kept(call, key, &rc))
            return rc;
    }
    struct cdn_sched *s = sched_for(call);
    if (s != NULL && c->inter) {  /* scan and exscan were refused */
        if (kind == CDN_RED_REDUCE)
            cdn_coll_inter_reduce(s, c, sbuf, rbuf, count, dt, op, root);
        else if (kind == CDN_RED_ALLREDUCE)
            cdn_coll_inter_allreduce(s, c, sbuf, rbuf, count, dt, op);
        else
            cdn_coll_inter_reduce_scatter(s, c, sbuf, rbuf, rcounts, dt, op);
    } else if (s != NULL) {
        switch (kind) {
        case CDN_RED_REDUCE:
            cdn_coll_reduce(s, c, sbuf, rbuf, count, dt, op, root);
            break;
        case CDN_RED_ALLREDUCE:
            cdn_coll_allreduce(s, c, sbuf, rbuf, count, dt, op);
            break;
        case CDN_RED_SCAN:
        case CDN_RED_EXSCAN:
            cdn_coll_scan(s, c, sbuf, rbuf, count, dt, op, kind == CDN_RED_EXSCAN);
            break;
        case CDN_RED_SCATTER:
            cdn_coll_reduce_scatter(s, c, sbuf, rbuf, rcounts, dt, op);
            break;
        }
    }
    return launch_keeping(s, call, key);
}

int cdn_coll_neighbor_call(const struct cdn_coll_call *call, int indegree, const int *sources,
                           int outdegree, const int *dests, const void *sbuf,
                           const MPI_Count *scounts, const MPI_Aint *sdispls,
                           struct cdn_datatype *const *sdts, void *rbuf,
                           const MPI_Count *rcounts, const MPI_Aint *rdispls,
                           struct cdn_datatype *const *rdts)
{
    struct cdn_sched *s = sched_for(call);
    if (s != NULL)
        cdn_coll_neighbor_alltoallw(s, call->c->topo->kind == MPI_CART, indegree, sources,
                                    outdegree, dests, sbuf, scounts, sdispls, sdts, rbuf,
                                    rcounts, rdispls, rdts);
    return launch_keeping(s, call, NULL);
}
