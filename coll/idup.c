/*
 * MPI_Comm_idup(_with_info) without blocking: the duplicate's context-id
 * agreement runs as schedules (sched/sched.h) that the progress engine
 * advances, so the request completes while the application computes.
 *
 * The duplicate exists from the call on (attributes copied by the user's
 * thread, so copy callbacks never run on the progress thread) under a
 * published handle marked pending: cdn_comm_get refuses it until the ids
 * are agreed, which is when the request completes.
 *
 * One attempt is one schedule on the parent (for an intercommunicator: on
 * its local communicator, with the leaders' swap a nested schedule on the
 * intercommunicator itself):
 *
 *   allreduce(AND) of the free-id snapshots -> reserve the lowest agreed
 *   id(s) locally if still free -> allreduce(AND) of "reserved"
 *
 * each allreduce MPI_Allreduce's own algorithm (coll/reduce.c,
 * cdn_coll_allreduce_among) with the predefined MPI_BAND.
 *
 * (the nonblocking protocol of runtime/ctxid.h).  A proxy request is the
 * schedule's parent; its completion hook looks at the outcome and either
 * completes the user's request or builds the next attempt.  Tags come from
 * the parent's idup_seq, which every process advances in the same order
 * (MPI orders collective calls per communicator), so several idups
 * outstanding on one communicator never exchange each other's messages;
 * collectives use tags >= 0 and blocking creations their fixed tags.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/comm_create.h"
#include "progress/request.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/ctxid.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "sched/sched.h"

struct idup {
    struct cdn_request *req;     /* the user's */
    struct cdn_comm *parent;     /* the request holds its reference */
    struct cdn_comm *nc;         /* pending duplicate (its handle's reference) */
    const char *caller;
    int tag;
    int attempt;
    int nids;                    /* 1, or 2 for an intercommunicator */
    uint32_t ids[2];
    bool reserved;
    bool orphan;                 /* a copy callback failed here: agree, then drop */
    int err;                     /* no ids left: the same on every process */
    struct cdn_request *sched;   /* the current attempt */
    uint32_t mask[CDN_CTXID_WORDS];
    uint32_t ok;
};

/* buf (nwords) ANDed over every participant: MPI_Allreduce's recursive
 * doubling among the local group (cdn_coll_allreduce_among, sub-tags sub
 * .. sub + 31).  For an intercommunicator the two leaders then swap their
 * groups' results (a nested schedule on the intercommunicator, sub-tag
 * sub + 32) and AND in the other's, and a second allreduce (sub + 33 ..
 * sub + 64) spreads that: the others' results are contained in their
 * leader's.  So an attempt needs at most 2 * 65 sub-tags. */
static int add_allreduce(struct cdn_sched *s, int base, struct idup *d, uint32_t *buf, int nwords,
                         int sub)
{
    struct cdn_comm *lc = d->parent->inter ? d->parent->local_comm : d->parent;
    struct cdn_datatype *u32 = cdn_datatype_get(MPI_UINT32_T);
    struct cdn_op *band = cdn_op_get(MPI_BAND);
    cdn_sched_round(s);
    cdn_coll_allreduce_among(s, lc->size, lc->rank, NULL, sub, buf, nwords, u32, band);
    cdn_sched_round(s);
    if (!d->parent->inter)
        return MPI_SUCCESS;
    if (lc->rank == 0) {
        uint32_t *tmp = cdn_sched_scratch(s, sizeof *tmp * (size_t)nwords);
        if (tmp == NULL)
            return MPI_SUCCESS;  /* the schedule is marked broken; commit reports it */
        struct cdn_sched *x = cdn_sched_new(d->parent, base, true);
        struct cdn_request *xr;
        if (x == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", d->caller);
        cdn_sched_send(x, buf, nwords, u32, 0, sub + 32);
        cdn_sched_recv(x, tmp, nwords, u32, 0, sub + 32);
        int rc = cdn_sched_commit(x, d->caller, &xr);
        if (rc != MPI_SUCCESS)
            return rc;
        cdn_sched_request(s, xr);
        cdn_sched_round(s);
        cdn_sched_reduce(s, tmp, buf, nwords, u32, band);
        cdn_sched_round(s);
    }
    cdn_coll_allreduce_among(s, lc->size, lc->rank, NULL, sub + 33, buf, nwords, u32, band);
    cdn_sched_round(s);
    return MPI_SUCCESS;
}

static int try_reserve(void *arg)
{
    struct idup *d = arg;
    uint64_t pick = cdn_ctxid_pick(cdn_ctxid_seed(d->parent->context_id, d->tag), d->attempt);
    d->reserved = cdn_ctxid_nb_reserve(d->mask, d->nids, d->ids, pick, &d->err, d->caller);
    d->ok = d->reserved;
    return MPI_SUCCESS;
}

static void attempt_done(struct cdn_request *proxy);
static const struct cdn_request_ops attempt_ops = {.name = "MPI_Comm_idup attempt",
                                                  .complete = attempt_done};

static int start_attempt(struct idup *d)
{
    struct cdn_comm *lc = d->parent->inter ? d->parent->local_comm : d->parent;
    /* consecutive attempts never share a tag: each has its own 256 */
    int base = d->tag + (d->attempt & 1) * CDN_SCHED_SUBTAGS;
    struct cdn_sched *s = cdn_sched_new(lc, base, false);
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", d->caller);
    cdn_ctxid_nb_snapshot(d->mask);
    d->reserved = false;
    int rc1 = add_allreduce(s, base, d, d->mask, CDN_CTXID_WORDS, 0);
    cdn_sched_callback(s, try_reserve, d);
    int rc2 = rc1 == MPI_SUCCESS ? add_allreduce(s, base, d, &d->ok, 1, 65) : rc1;
    struct cdn_request *sr;
    int rc = cdn_sched_commit(s, d->caller, &sr);
    if (rc != MPI_SUCCESS)
        return rc;
    if (rc2 != MPI_SUCCESS) {
        cdn_request_release(sr);
        return rc2;
    }
    struct cdn_request *proxy = cdn_request_alloc(CDN_REQ_SCHED, &attempt_ops, lc);
    if (proxy == NULL) {
        cdn_request_release(sr);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of requests", d->caller);
    }
    memcpy(proxy->u.room, &d, sizeof d);
    cdn_request_arm(proxy, 1);
    cdn_request_release(proxy);  /* the engine's reference keeps it until the hook ran */
    sr->parent = proxy;
    d->sched = sr;
    return cdn_sched_start(sr);
}

/* The end: the duplicate becomes usable (or goes), then the request completes. */
static void idup_finish(struct idup *d, int rc)
{
    if (d->orphan) {  /* the user already has the copy callback's error */
        if (rc == MPI_SUCCESS)
            cdn_comm_dup_set_ids(d->nc, d->ids);  /* freed with the communicator */
        else if (d->reserved)
            for (int i = 0; i < d->nids; i++)
                cdn_ctxid_free(d->ids[i]);
        cdn_comm_dup_abandon(d->nc, d->caller);
        d->nc = NULL;
        struct cdn_request *r = d->req;
        cdn_request_complete(r, rc);
        cdn_request_release(r);  /* nobody else holds it; frees d */
        return;
    }
    if (rc == MPI_SUCCESS) {
        cdn_comm_dup_set_ids(d->nc, d->ids);
        atomic_store_explicit(&d->nc->pending, false, memory_order_release);
    } else {
        if (d->reserved)
            for (int i = 0; i < d->nids; i++)
                cdn_ctxid_free(d->ids[i]);
        cdn_comm_dup_abandon(d->nc, d->caller);  /* the handle stays invalid */
    }
    d->nc = NULL;
    cdn_request_complete(d->req, rc);
}

static void attempt_done(struct cdn_request *proxy)
{
    struct idup *d;
    memcpy(&d, proxy->u.room, sizeof d);
    int rc = d->sched->status.MPI_ERROR;
    cdn_request_release(d->sched);  /* the engine still holds it until this returns */
    d->sched = NULL;
    if (rc == MPI_SUCCESS)
        rc = d->err;
    if (rc != MPI_SUCCESS || d->ok) {
        idup_finish(d, rc);
        return;
    }
    if (d->reserved)  /* somebody could not: give ours back and try again */
        for (int i = 0; i < d->nids; i++)
            cdn_ctxid_free(d->ids[i]);
    d->reserved = false;
    d->attempt++;
    rc = start_attempt(d);
    if (rc != MPI_SUCCESS)
        idup_finish(d, rc);
}

static void idup_free(struct cdn_request *r)
{
    struct idup *d;
    memcpy(&d, r->u.room, sizeof d);
    free(d);
}
static const struct cdn_request_ops idup_ops = {.name = "MPI_Comm_idup", .free = idup_free};

int cdn_comm_idup(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                  MPI_Comm *newcomm, struct cdn_request **req, const char *caller)
{
    struct idup *d = calloc(1, sizeof *d);
    if (d == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    struct cdn_comm *nc;
    int rc = cdn_comm_dup_prepare(parent, info, use_info, &nc, caller);
    if (rc != MPI_SUCCESS) {
        free(d);
        return rc;
    }
    /* A copy callback failing here fails this process's call at once; its
     * peers still need it in the agreement, which then runs unseen (the
     * duplicate is never published and goes when it ends).  What was
     * copied is deleted now, in the user's thread. */
    int copy_rc = cdn_comm_dup_copy_attrs(parent, nc, caller);
    bool orphan = copy_rc != MPI_SUCCESS;
    if (orphan)
        cdn_attr_delete_all(&nc->attrs, 0, caller);
    if (orphan && !parent->inter && parent->size == 1) {
        cdn_comm_dup_abandon(nc, caller);
        free(d);
        return copy_rc;
    }
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_SCHED, &idup_ops, parent);
    if (r == NULL) {
        free(d);
        cdn_comm_dup_abandon(nc, caller);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of requests", caller);
    }
    memcpy(r->u.room, &d, sizeof d);
    if (!orphan) {
        atomic_store(&nc->pending, true);
        rc = cdn_comm_publish(nc, newcomm, caller);
        if (rc != MPI_SUCCESS) {
            cdn_request_release(r);  /* frees d */
            return rc;
        }
    }
    if (!parent->inter && parent->size == 1) {
        /* Nobody to agree with: done now.  Retrying through schedules would
         * recurse, every attempt completing inside the one before; a failed
         * reservation here means another thread took the id meanwhile. */
        *d = (struct idup){.req = r, .parent = parent, .nc = nc, .caller = caller, .nids = 1};
        cdn_status_empty(&r->status);
        cdn_request_arm(r, 1);
        for (;;) {
            cdn_ctxid_nb_snapshot(d->mask);
            if (cdn_ctxid_nb_reserve(d->mask, 1, d->ids, 0, &d->err, caller) || d->err != MPI_SUCCESS)
                break;
            sched_yield();
        }
        d->reserved = d->err == MPI_SUCCESS;
        idup_finish(d, d->err);
        *req = r;
        return MPI_SUCCESS;
    }
    unsigned seq = atomic_fetch_add(&parent->idup_seq, 1u);
    *d = (struct idup){.req = r, .parent = parent, .nc = nc, .caller = caller,
                       .tag = CDN_TAG_IDUP_BASE - 2 * CDN_SCHED_SUBTAGS * (int)(seq % CDN_IDUP_TAGS),
                       .nids = parent->inter ? 2 : 1, .orphan = orphan};
    cdn_status_empty(&r->status);
    cdn_request_arm(r, 1);
    rc = start_attempt(d);
    if (rc != MPI_SUCCESS)
        idup_finish(d, rc);  /* completes r with the error */
    if (orphan)
        return copy_rc;
    *req = r;
    return MPI_SUCCESS;
}
