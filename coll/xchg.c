/*
 * Internal exchanges of object creation (see xchg.h), on the
 * communicator's internal context: the allreduce is MPI_Allreduce's own
 * recursive doubling run as a schedule (cdn_coll_allreduce_among); the
 * rest blocking internal point-to-point.
 */
#include "coll/xchg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "progress/p2p.h"
#include "progress/request.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "sched/sched.h"

void cdn_xchg_all(struct cdn_xchg *x, struct cdn_comm *comm, int tag)
{
    *x = (struct cdn_xchg){.comm = comm, .n = comm->size, .me = comm->rank, .ranks = NULL,
                           .tag = tag};
}

int cdn_xchg_user_tag(int tag)
{
    return CDN_TAG_USER_BASE - (tag & 0x3fffffff);
}

static int comm_rank(const struct cdn_xchg *x, int i)
{
    return x->ranks != NULL ? x->ranks[i] : i;
}

/* Wait for r, take its error, release it. */
static int finish(struct cdn_request *r)
{
    cdn_request_wait(r);
    int rc = r->status.MPI_ERROR;
    cdn_request_release(r);
    return rc;
}

static int isend(struct cdn_comm *comm, int rank, int tag, const void *buf, size_t bytes,
                 struct cdn_request **r)
{
    return cdn_p2p_send_internal(buf, (MPI_Count)bytes, cdn_datatype_get(MPI_BYTE), rank, tag, comm,
                                 false, r);
}

static int irecv(struct cdn_comm *comm, int rank, int tag, void *buf, size_t bytes,
                 struct cdn_request **r)
{
    return cdn_p2p_recv_internal(buf, (MPI_Count)bytes, cdn_datatype_get(MPI_BYTE), rank, tag, comm,
                                 false, r);
}

int cdn_xchg_send(struct cdn_xchg *x, int to, const void *buf, size_t bytes)
{
    struct cdn_request *r;
    int rc = isend(x->comm, comm_rank(x, to), x->tag, buf, bytes, &r);
    return rc != MPI_SUCCESS ? rc : finish(r);
}

int cdn_xchg_recv(struct cdn_xchg *x, int from, void *buf, size_t bytes)
{
    struct cdn_request *r;
    int rc = irecv(x->comm, comm_rank(x, from), x->tag, buf, bytes, &r);
    return rc != MPI_SUCCESS ? rc : finish(r);
}

int cdn_xchg_swap(struct cdn_comm *comm, int peer, int tag, const void *sbuf, size_t sbytes,
                  void *rbuf, size_t rbytes)
{
    struct cdn_request *rr, *sr;
    int rc = irecv(comm, peer, tag, rbuf, rbytes, &rr);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = isend(comm, peer, tag, sbuf, sbytes, &sr);
    if (rc != MPI_SUCCESS) {
        cdn_request_release(rr);  /* never matched: the exchange is broken anyway */
        return rc;
    }
    int rc1 = finish(sr), rc2 = finish(rr);
    return rc1 != MPI_SUCCESS ? rc1 : rc2;
}

/* Binomial tree over indices relative to root. */
int cdn_xchg_bcast(struct cdn_xchg *x, void *buf, size_t bytes, int root)
{
    int rel = (x->me - root + x->n) % x->n, rc = MPI_SUCCESS;
    int mask = 1;
    while (mask < x->n) {
        if (rel & mask) {
            rc = cdn_xchg_recv(x, (rel - mask + root) % x->n, buf, bytes);
            if (rc != MPI_SUCCESS)
                return rc;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    for (; mask > 0; mask >>= 1)
        if (rel + mask < x->n) {
            rc = cdn_xchg_send(x, (rel + mask + root) % x->n, buf, bytes);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    return MPI_SUCCESS;
}

int cdn_xchg_allreduce(struct cdn_xchg *x, void *buf, int count, MPI_Datatype type, MPI_Op op)
{
    if (x->n == 1)
        return MPI_SUCCESS;
    /* its sub-tags end at x->tag, so they stay below CDN_TAG_COMM_BASE */
    struct cdn_sched *s = cdn_sched_new(x->comm, x->tag - (CDN_SCHED_SUBTAGS - 1), false);
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "communicator agreement: out of memory");
    cdn_coll_allreduce_among(s, x->n, x->me, x->ranks, 0, buf, count, cdn_datatype_get(type),
                             cdn_op_get(op));
    struct cdn_request *r;
    int rc = cdn_sched_commit(s, "communicator agreement", &r);
    if (rc != MPI_SUCCESS)
        return rc;
    cdn_sched_run(r);
    return finish(r);
}

int cdn_xchg_allgather(struct cdn_xchg *x, const void *mine, void *all, size_t bytes)
{
    int rc = MPI_SUCCESS;
    memcpy((char *)all + (size_t)x->me * bytes, mine, bytes);
    if (x->me != 0) {
        rc = cdn_xchg_send(x, 0, mine, bytes);
    } else {
        for (int i = 1; i < x->n && rc == MPI_SUCCESS; i++)
            rc = cdn_xchg_recv(x, i, (char *)all + (size_t)i * bytes, bytes);
    }
    return rc != MPI_SUCCESS ? rc : cdn_xchg_bcast(x, all, bytes * (size_t)x->n, 0);
}

int cdn_xchg_allgatherv(struct cdn_xchg *x, const void *mine, int mybytes, void **all, int *total,
                        int **counts)
{
    *all = NULL;
    int *cnt = malloc(sizeof(int) * (size_t)x->n);
    if (cnt == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "communicator agreement: out of memory");
    int rc = cdn_xchg_allgather(x, &mybytes, cnt, sizeof(int));
    int sum = 0, off = 0;
    for (int i = 0; i < x->n; i++) {
        sum += cnt[i];
        if (i < x->me)
            off += cnt[i];
    }
    char *buf = rc == MPI_SUCCESS ? malloc((size_t)sum + 1) : NULL;
    if (rc == MPI_SUCCESS && buf == NULL)
        rc = cdn_err(MPI_ERR_NO_MEM, "communicator agreement: out of memory");
    if (rc == MPI_SUCCESS) {
        memcpy(buf + off, mine, (size_t)mybytes);
        if (x->me != 0) {
            rc = cdn_xchg_send(x, 0, mine, (size_t)mybytes);
        } else {
            for (int i = 1, o = cnt[0]; i < x->n && rc == MPI_SUCCESS; o += cnt[i], i++)
                rc = cdn_xchg_recv(x, i, buf + o, (size_t)cnt[i]);
        }
        if (rc == MPI_SUCCESS)
            rc = cdn_xchg_bcast(x, buf, (size_t)sum, 0);
    }
    if (rc != MPI_SUCCESS) {
        free(buf);
        free(cnt);
        return rc;
    }
    *all = buf;
    *total = sum;
    if (counts != NULL)
        *counts = cnt;
    else
        free(cnt);
    return MPI_SUCCESS;
}

