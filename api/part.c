/*
 * Bindings of partitioned communication: MPI_Psend_init, MPI_Precv_init,
 * MPI_Pready(_range, _list), MPI_Parrived, MPIX_Pbuf_prepare(all), and
 * the partitioned collectives (MPIX_Pbcast_init, MPIX_Pallreduce_init,
 * MPIX_Palltoall_init).  Argument checks here; partitioned/ does the rest.
 */
#include <stdbool.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "partitioned/part.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/info.h"
#include "runtime/op.h"

static int init_args(const char *fn, const void *buf, int partitions, MPI_Count count,
                     MPI_Datatype datatype, int peer, int tag, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request, bool send, struct cdn_comm **c,
                     struct cdn_datatype **dt, struct cdn_info **in)
{
    int rc = MPI_SUCCESS;
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    *c = cdn_api_comm(comm, fn, &rc);
    if (*c == NULL)
        return rc;
    if (partitions < 0)
        return cdn_err(MPI_ERR_ARG, "%s: partitions %d is negative", fn, partitions);
    rc = cdn_api_buf(fn, "buf", false, buf, count, datatype, dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (partitions > 0 && count > 0 &&
        (MPI_Count)partitions * count > (((MPI_Count)1 << 62) / (cdn_datatype_size(*dt) + 1)))
        return cdn_err(MPI_ERR_COUNT, "%s: %d partitions of %lld elements is too large a "
                       "message", fn, partitions, (long long)count);
    const char *what = send ? "dest" : "source";
    if (peer == MPI_ANY_SOURCE)
        return cdn_err(MPI_ERR_RANK, "%s: MPI_ANY_SOURCE is not allowed: a partitioned "
                       "operation names its peer", fn);
    if (peer != MPI_PROC_NULL && (peer < 0 || peer >= cdn_comm_peer_size(*c)))
        return cdn_err(MPI_ERR_RANK, "%s: %s %d is not a rank of the %s (size %d)", fn, what,
                       peer, (*c)->inter ? "remote group" : "communicator",
                       cdn_comm_peer_size(*c));
    if (tag == MPI_ANY_TAG)
        return cdn_err(MPI_ERR_TAG, "%s: MPI_ANY_TAG is not allowed: a partitioned operation "
                       "names its tag", fn);
    if (tag < 0 || tag > CDN_TAG_UB)
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is not in 0..MPI_TAG_UB (%d)", fn, tag,
                       CDN_TAG_UB);
    *in = cdn_info_arg(info, fn, &rc);
    return rc;
}

int cdn_MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    struct cdn_info *in;
    int rc = init_args("MPI_Psend_init", buf, partitions, count, datatype, dest, tag, comm, info,
                       request, true, &c, &dt, &in);
    struct cdn_request *r;
    if (rc == MPI_SUCCESS)
        rc = cdn_part_send_init(buf, partitions, count, dt, dest, tag, c, in, &r);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}

int cdn_MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                       int source, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    struct cdn_info *in;
    int rc = init_args("MPI_Precv_init", buf, partitions, count, datatype, source, tag, comm,
                       info, request, false, &c, &dt, &in);
    struct cdn_request *r;
    if (rc == MPI_SUCCESS)
        rc = cdn_part_recv_init(buf, partitions, count, dt, source, tag, c, in, &r);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}

/* The partitioned request behind a handle; errors name the call and go to
 * the request's communicator's handler. */
static struct cdn_request *part_request(MPI_Request request, const char *fn, int *rc)
{
    if (request == MPI_REQUEST_NULL) {
        *rc = cdn_err(MPI_ERR_REQUEST, "%s: the request is MPI_REQUEST_NULL", fn);
        return NULL;
    }
    struct cdn_request *r = cdn_request_get(request);
    if (r == NULL) {
        *rc = cdn_err(MPI_ERR_REQUEST, "%s: 0x%x is not a valid request", fn,
                      (unsigned)request);
        return NULL;
    }
    if (r->kind != CDN_REQ_PART) {
        cdn_api_request_error(r);
        *rc = cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is not a partitioned request", fn,
                      (unsigned)request);
        return NULL;
    }
    return r;
}

static int failed(struct cdn_request *r, int rc)
{
    if (rc != MPI_SUCCESS)
        cdn_api_request_error(r);
    return rc;
}

int cdn_MPI_Pready(int partition, MPI_Request request)
{
    int rc;
    struct cdn_request *r = part_request(request, "MPI_Pready", &rc);
    if (r == NULL)
        return rc;
    return failed(r, cdn_part_pready(r, partition, "MPI_Pready"));
}

int cdn_MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    int rc;
    struct cdn_request *r = part_request(request, "MPI_Pready_range", &rc);
    if (r == NULL)
        return rc;
    if (partition_low > partition_high)
        return failed(r, cdn_err(MPI_ERR_ARG, "MPI_Pready_range: partition_low %d is above "
                                 "partition_high %d", partition_low, partition_high));
    rc = MPI_SUCCESS;
    for (int p = partition_low; rc == MPI_SUCCESS && p <= partition_high; p++)
        rc = cdn_part_pready(r, p, "MPI_Pready_range");
    return failed(r, rc);
}

int cdn_MPI_Pready_list(int length, int array_of_partitions[], MPI_Request request)
{
    int rc;
    struct cdn_request *r = part_request(request, "MPI_Pready_list", &rc);
    if (r == NULL)
        return rc;
    if (length < 0 || (length > 0 && array_of_partitions == NULL))
        return failed(r, cdn_err(MPI_ERR_ARG, "MPI_Pready_list: %s", length < 0
                                 ? "length is negative" : "array_of_partitions is NULL"));
    rc = MPI_SUCCESS;
    for (int i = 0; rc == MPI_SUCCESS && i < length; i++)
        rc = cdn_part_pready(r, array_of_partitions[i], "MPI_Pready_list");
    return failed(r, rc);
}

int cdn_MPI_Parrived(MPI_Request request, int partition, int *flag)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Parrived: flag is NULL");
    if (request == MPI_REQUEST_NULL) {  /* MPI-4.1 4.2.2: a null request has arrived */
        *flag = 1;
        return MPI_SUCCESS;
    }
    int rc;
    struct cdn_request *r = part_request(request, "MPI_Parrived", &rc);
    if (r == NULL)
        return rc;
    return failed(r, cdn_part_parrived(r, partition, flag, "MPI_Parrived"));
}

int cdn_MPIX_Pbuf_prepare(MPI_Request request)
{
    int rc;
    struct cdn_request *r = part_request(request, "MPIX_Pbuf_prepare", &rc);
    if (r == NULL)
        return rc;
    return failed(r, cdn_part_prepare(r, "MPIX_Pbuf_prepare"));
}

int cdn_MPIX_Pbuf_prepareall(int count, MPI_Request array_of_requests[])
{
    if (count < 0 || (count > 0 && array_of_requests == NULL))
        return cdn_err(MPI_ERR_ARG, "MPIX_Pbuf_prepareall: %s",
                       count < 0 ? "count is negative" : "array_of_requests is NULL");
    for (int i = 0; i < count; i++) {
        int rc;
        struct cdn_request *r = part_request(array_of_requests[i], "MPIX_Pbuf_prepareall", &rc);
        if (r == NULL)
            return rc;
        rc = cdn_part_prepare(r, "MPIX_Pbuf_prepareall");
        if (rc != MPI_SUCCESS)
            return failed(r, rc);
    }
    return MPI_SUCCESS;
}

/* ---- partitioned collectives ---- */

static int coll_args(const char *fn, int partitions, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request, struct cdn_comm **c)
{
    int rc = MPI_SUCCESS;
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    *c = cdn_api_comm(comm, fn, &rc);
    if (*c == NULL)
        return rc;
    if ((*c)->inter)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is an intercommunicator; partitioned "
                       "collectives take an intracommunicator", fn);
    if (partitions < 1)
        return cdn_err(MPI_ERR_ARG, "%s: partitions %d is not positive", fn, partitions);
    cdn_info_arg(info, fn, &rc);
    return rc;
}

int cdn_MPIX_Pbcast_init(void *buffer, int partitions, MPI_Count count, MPI_Datatype datatype,
                         int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    const char *fn = "MPIX_Pbcast_init";
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    struct cdn_request *r;
    int rc = coll_args(fn, partitions, comm, info, request, &c);
    if (rc == MPI_SUCCESS)
        rc = cdn_api_buf(fn, "buffer", false, buffer, count, datatype, &dt);
    if (rc == MPI_SUCCESS && (root < 0 || root >= c->size))
        rc = cdn_err(MPI_ERR_ROOT, "%s: root %d is not a rank of the communicator (size %d)", fn,
                     root, c->size);
    if (rc == MPI_SUCCESS)
        rc = cdn_part_bcast_init(buffer, partitions, count, dt, root, c, &r);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}

int cdn_MPIX_Pallreduce_init(const void *sendbuf, void *recvbuf, int partitions,
                             MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    const char *fn = "MPIX_Pallreduce_init";
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    struct cdn_op *o;
    struct cdn_request *r;
    int rc = coll_args(fn, partitions, comm, info, request, &c);
    if (rc == MPI_SUCCESS)
        rc = cdn_api_buf(fn, "recvbuf", false, recvbuf, count, datatype, &dt);
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        rc = cdn_api_buf(fn, "sendbuf", false, sendbuf, count, datatype, &dt);
    if (rc == MPI_SUCCESS)
        rc = cdn_op_check(op, dt, false, fn, &o);
    if (rc == MPI_SUCCESS)
        rc = cdn_part_allreduce_init(sendbuf, recvbuf, partitions, count, dt, o, c, &r);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}

int cdn_MPIX_Palltoall_init(const void *sendbuf, void *recvbuf, int partitions,
                            MPI_Count count, MPI_Datatype datatype, MPI_Comm comm,
                            MPI_Info info, MPI_Request *request)
{
    const char *fn = "MPIX_Palltoall_init";
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    struct cdn_request *r;
    int rc = coll_args(fn, partitions, comm, info, request, &c);
    if (rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: sendbuf is MPI_IN_PLACE, which this call does not "
                     "take", fn);
    if (rc == MPI_SUCCESS)
        rc = cdn_api_buf(fn, "sendbuf", false, sendbuf, count, datatype, &dt);
    if (rc == MPI_SUCCESS)
        rc = cdn_api_buf(fn, "recvbuf", false, recvbuf, count, datatype, &dt);
    if (rc == MPI_SUCCESS)
        rc = cdn_part_alltoall_init(sendbuf, recvbuf, partitions, count, dt, c, &r);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}
