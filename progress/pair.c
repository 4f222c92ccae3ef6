/*
 * The composite request of MPI_Isendrecv and MPI_Isendrecv_replace: a
 * parent armed for two events whose children, a send and a receive, notify
 * it as they complete (the same parent mechanism schedules use).  Its
 * completion hook reports the receive's status and, for _replace, copies the
 * staged message over the user's buffer: the receive cannot land there
 * directly while the send may still be reading it.
 */
#include <stdlib.h>
#include <string.h>

#include "progress/p2p.h"
#include "runtime/error.h"

enum { PAIR_RECV, PAIR_SEND };  /* the children's parent_slot */

static void pair_complete(struct cdn_request *r)
{
    struct cdn_pair *pr = &r->u.pair;
    struct cdn_request *s = pr->send, *rv = pr->recv;
    int err = rv->status.MPI_ERROR != MPI_SUCCESS ? rv->status.MPI_ERROR : s->status.MPI_ERROR;
    r->status = rv->status;
    r->status.MPI_ERROR = err;
    if (s->status.MPI_ERROR != MPI_SUCCESS)
        cdn_status_set_cancelled(&r->status, 0);  /* withdrawn by pair_child_done, not the user */
    if (pr->replace_dt != NULL) {
        struct cdn_dt_segment seg;
        cdn_dt_segment_init(&seg, pr->replace_buf, pr->replace_count, pr->replace_dt);
        cdn_dt_unpack(&seg, 0, rv->u.p2p.buf, cdn_status_bytes(&rv->status));
        cdn_dt_segment_fini(&seg);
    }
}

static void pair_free(struct cdn_request *r)
{
    struct cdn_pair *pr = &r->u.pair;
    if (pr->send != NULL)
        cdn_request_release(pr->send);
    if (pr->recv != NULL) {
        if (pr->replace_dt != NULL)
            free(pr->recv->u.p2p.buf);
        cdn_request_release(pr->recv);
    }
    if (pr->replace_dt != NULL)
        cdn_datatype_release(pr->replace_dt);
}

/* A send that failed (a peer lost, a transport's refusal) withdraws the
 * receive while nothing has matched it: the peer it waits for may be the
 * one that failed, or be stuck in its own MPI_Sendrecv whose send failed
 * the same way, and MPI_Sendrecv would never return its error. */
static void pair_child_done(struct cdn_request *r, int slot)
{
    struct cdn_pair *pr = &r->u.pair;
    if (slot == PAIR_SEND && pr->send->status.MPI_ERROR != MPI_SUCCESS)
        pr->recv->ops->cancel(pr->recv);  /* completes it (its event here) if unmatched */
    cdn_request_event(r);
}

static const struct cdn_request_ops pair_ops = {
    .name = "sendrecv", .complete = pair_complete, .free = pair_free,
    .child_done = pair_child_done,
};

int cdn_p2p_sendrecv(const void *sendbuf, MPI_Count sendcount, struct cdn_datatype *sendtype,
                     int dest, int sendtag, void *recvbuf, MPI_Count recvcount,
                     struct cdn_datatype *recvtype, int source, int recvtag,
                     struct cdn_comm *comm, bool replace, struct cdn_request **out)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_PAIR, &pair_ops, comm);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Isendrecv: out of memory for a request");
    struct cdn_pair *pr = &r->u.pair;
    cdn_request_arm(r, 2);
    struct cdn_datatype *rtype = recvtype;
    MPI_Count rcount = recvcount;
    if (replace) {  /* _replace: stage the message as bytes */
        pr->replace_buf = (void *)sendbuf;
        pr->replace_count = sendcount;
        pr->replace_dt = sendtype;
        cdn_datatype_retain(sendtype);
        rcount = cdn_datatype_size(sendtype) * sendcount;
        rtype = cdn_datatype_get(MPI_BYTE);
        recvbuf = malloc(rcount > 0 ? (size_t)rcount : 1);
        if (recvbuf == NULL) {
            pr->replace_dt = NULL;
            cdn_datatype_release(sendtype);
            cdn_request_release(r);
            cdn_request_release(r);
            return cdn_err(MPI_ERR_NO_MEM, "MPI_Isendrecv_replace: out of memory staging "
                           "%lld bytes", (long long)rcount);
        }
    }
    /* Children: made unstarted so the parent link is in place before any
     * completion, then started receive first (a self message finds it). */
    int rc = cdn_p2p_recv(recvbuf, rcount, rtype, source, recvtag, comm, true, &pr->recv);
    if (rc == MPI_SUCCESS)
        rc = cdn_p2p_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, CDN_SEND_STANDARD,
                          true, &pr->send);
    if (rc != MPI_SUCCESS) {
        if (pr->recv == NULL && pr->replace_dt != NULL)
            free(recvbuf);  /* else pair_free frees it with the receive */
        atomic_store(&r->cc, 0);
        cdn_request_release(r);  /* the engine's reference */
        cdn_request_release(r);  /* the caller's: pair_free releases the children */
        return rc;
    }
    pr->recv->parent = r;
    pr->recv->parent_slot = PAIR_RECV;
    pr->send->parent = r;
    pr->send->parent_slot = PAIR_SEND;
    pr->recv->ops->start(pr->recv);
    pr->send->ops->start(pr->send);
    *out = r;
    return MPI_SUCCESS;
}
