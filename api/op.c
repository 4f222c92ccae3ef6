/*
 * Bindings of reduction operations: MPI_Op_create(_c), MPI_Op_free,
 * MPI_Op_commutative and MPI_Reduce_local(_c) (runtime/op.c does the work),
 * and the argument check a local reduction shares with
 * MPIX_Schedule_add_mpi_operation.
 */
#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/datatype.h"
#include "runtime/op.h"

int cdn_MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    return cdn_op_create(user_fn, NULL, commute != 0, op, "MPI_Op_create");
}

int cdn_MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    return cdn_op_create(NULL, user_fn, commute != 0, op, "MPI_Op_create_c");
}

int cdn_MPI_Op_free(MPI_Op *op)
{
    return cdn_op_free(op, "MPI_Op_free");
}

int cdn_MPI_Op_commutative(MPI_Op op, int *commute)
{
    struct cdn_op *o = cdn_op_get(op);
    if (o == NULL)
        return cdn_err(MPI_ERR_OP, "MPI_Op_commutative: 0x%x is not a valid op", (unsigned)op);
    if (commute == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Op_commutative: commute is NULL");
    *commute = o->commute;
    return MPI_SUCCESS;
}

int cdn_api_reduce_args(const char *fn, const char *const names[2], const void *inbuf,
                        void *inoutbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                        struct cdn_datatype **dtp, struct cdn_op **opp)
{
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: count %lld is negative", fn, (long long)count);
    struct cdn_datatype *dt;
    int rc = cdn_datatype_check(datatype, fn, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count > 0 && cdn_datatype_size(dt) > 0 && (inbuf == NULL || inoutbuf == NULL))
        return cdn_err(MPI_ERR_BUFFER, "%s: %s is NULL with count %lld", fn,
                       names[inbuf == NULL ? 0 : 1], (long long)count);
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)
        return cdn_err(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed", fn);
    *dtp = dt;
    return cdn_op_check(op, dt, false, fn, opp);
}

static int reduce_local(const char *fn, const void *inbuf, void *inoutbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op)
{
    struct cdn_datatype *dt;
    struct cdn_op *o;
    static const char *const names[2] = {"inbuf", "inoutbuf"};
    int rc = cdn_api_reduce_args(fn, names, inbuf, inoutbuf, count, datatype, op, &dt, &o);
    if (rc != MPI_SUCCESS)
        return rc;
    cdn_op_reduce(o, inbuf, inoutbuf, count, dt);
    return MPI_SUCCESS;
}

int cdn_MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                         MPI_Op op)
{
    return reduce_local("MPI_Reduce_local", inbuf, inoutbuf, count, datatype, op);
}

int cdn_MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op)
{
    return reduce_local("MPI_Reduce_local_c", inbuf, inoutbuf, count, datatype, op);
}
