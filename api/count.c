/*
 * MPI_Get_count(_c): how many whole items of a datatype a status's byte
 * count (MPICH layout, progress/request.h) holds.  MPI_Get_elements and
 * MPI_Status_set_elements belong to the datatype engine (api/type_query.c).
 */
#include <limits.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/request.h"
#include "runtime/datatype.h"

static int status_count(const MPI_Status *status, MPI_Datatype datatype, const void *out,
                        const char *caller, MPI_Count *count)
{
    if (status == NULL || status == MPI_STATUS_IGNORE)
        return cdn_err(MPI_ERR_ARG, "%s: status is %s", caller,
                       status == NULL ? "NULL" : "MPI_STATUS_IGNORE");
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: count is NULL", caller);
    struct cdn_datatype *dt;
    int rc = cdn_datatype_check(datatype, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count bytes = cdn_status_bytes(status), size = cdn_datatype_size(dt);
    if (size == 0)
        *count = bytes == 0 ? 0 : MPI_UNDEFINED;
    else
        *count = bytes % size ? MPI_UNDEFINED : bytes / size;
    return MPI_SUCCESS;
}

int cdn_MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c;
    int rc = status_count(status, datatype, count, "MPI_Get_count", &c);
    if (rc == MPI_SUCCESS)
        *count = (c > INT_MAX || c < 0) ? MPI_UNDEFINED : (int)c;
    return rc;
}

int cdn_MPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return status_count(status, datatype, count, "MPI_Get_count_c", count);
}
