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

#include "progress/request.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/comm_create.h"
#include "runtime/ctxid.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
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

/* Operands of one AND step, in the schedule's scratch. */
struct band_arg {
    uint32_t *inout;
    const uint32_t *in;
    int nwords;
};

static int band(void *arg)
{
    struct band_arg *a = arg;
    for (int i = 0; i < a->nwords; i++)
        a->inout[i] &= a->in[i];
    return MPI_SUCCESS;
}

static void add_band(struct cdn_sched *s, uint32_t *inout, const uint32_t *in, int nwords)
{
    struct band_arg *a = cdn_sched_scratch(s, sizeof *a);
    if (a == NULL)
        return;  /* the schedule is marked broken; commit reports it */
    *a = (struct band_arg){inout, in, nwords};
    cdn_sched_round(s);
    cdn_sched_callback(s, band, a);
    cdn_sched_round(s);
}

/* buf (nwords) ANDed over every participant: a binomial reduce to local
 * rank 0, the two leaders' swap for an intercommunicator, a binomial
 * broadcast back.  Tags sub (reduce), sub+1 (broadcast), sub+2 (swap). */
static int add_allreduce(struct cdn_sched *s, struct idup *d, uint32_t *buf, int nwords, int sub)
{
    struct cdn_comm *lc = d->parent->inter ? d->parent->local_comm : d->parent;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    MPI_Count bytes = (MPI_Count)(sizeof(uint32_t) * (size_t)nwords);
    int me = lc->rank, n = lc->size;
    uint32_t *tmp = cdn_sched_scratch(s, (size_t)bytes);
    if (tmp == NULL)
        return MPI_SUCCESS;  /* the schedule is marked broken; commit reports it */
    cdn_sched_round(s);
    for (int mask = 1; mask < n; mask <<= 1) {
        if (me & mask) {
            cdn_sched_send(s, buf, bytes, byte, me - mask, sub);
            break;
        }
        if (me + mask < n) {
            cdn_sched_recv(s, tmp, bytes, byte, me + mask, sub);
            add_band(s, buf, tmp, nwords);
        }
    }
    cdn_sched_round(s);
    if (d->parent->inter && me == 0) {
        struct cdn_sched *x = cdn_sched_new(d->parent, d->tag, true);
        struct cdn_request *xr;
        if (x == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", d->caller);
        cdn_sched_send(x, buf, bytes, byte, 0, sub + 2);
        cdn_sched_recv(x, tmp, bytes, byte, 0, sub + 2);
        int rc = cdn_sched_commit(x, d->caller, &xr);
        if (rc != MPI_SUCCESS)
            return rc;
        cdn_sched_request(s, xr);
        add_band(s, buf, tmp, nwords);
    }
    int mask = 1;
    for (; mask < n; mask <<= 1)
        if (me & mask) {
            cdn_sched_recv(s, buf, bytes, byte, me - mask, sub + 1);
            cdn_sched_round(s);
            break;
        }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (me + mask < n)
            cdn_sched_send(s, buf, bytes, byte, me + mask, sub + 1);
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
    int sub = (d->attempt & 1) * 8;  /* consecutive attempts never share a tag */
    struct cdn_sched *s = cdn_sched_new(lc, d->tag, false);
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", d->caller);
    cdn_ctxid_nb_snapshot(d->mask);
    d->reserved = false;
    int rc1 = add_allreduce(s, d, d->mask, CDN_CTXID_WORDS, sub);
    cdn_sched_callback(s, try_reserve, d);
    int rc2 = rc1 == MPI_SUCCESS ? add_allreduce(s, d, &d->ok, 1, sub + 4) : rc1;
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
                       .tag = CDN_TAG_IDUP_BASE - 16 * (int)(seq % CDN_IDUP_TAGS),
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
