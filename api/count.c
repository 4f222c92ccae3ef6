/*
 * What a status says about a received message's size: MPI_Get_count and
 * MPI_Get_elements (int, _c and _x forms) and MPI_Status_set_elements(_x).
 * A status carries the byte count (MPICH layout, progress/request.h); the
 * datatype turns it into whole items or basic elements.
 */
#include <limits.h>
#include <stdbool.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/request.h"
#include "runtime/datatype.h"

/* Items (elements == false) or basic elements of datatype in the status. */
static int status_count(const MPI_Status *status, MPI_Datatype datatype, const void *out,
                        bool elements, const char *caller, MPI_Count *count)
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
        *count = (bytes == 0 || elements) ? 0 : MPI_UNDEFINED;
    else if (elements)
        *count = cdn_datatype_elements(dt, bytes);
    else
        *count = bytes % size ? MPI_UNDEFINED : bytes / size;
    return MPI_SUCCESS;
}

static int count_int(const MPI_Status *status, MPI_Datatype datatype, int *count, bool elements,
                     const char *caller)
{
    MPI_Count c;
    int rc = status_count(status, datatype, count, elements, caller, &c);
    if (rc == MPI_SUCCESS)
        *count = (c > INT_MAX || c < 0) ? MPI_UNDEFINED : (int)c;
    return rc;
}

int cdn_MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    return count_int(status, datatype, count, false, "MPI_Get_count");
}

int cdn_MPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return status_count(status, datatype, count, false, "MPI_Get_count_c", count);
}

int cdn_MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    return count_int(status, datatype, count, true, "MPI_Get_elements");
}

int cdn_MPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return status_count(status, datatype, count, true, "MPI_Get_elements_c", count);
}

int cdn_MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return status_count(status, datatype, count, true, "MPI_Get_elements_x", count);
}

static int set_elements(MPI_Status *status, MPI_Datatype datatype, MPI_Count count,
                        const char *caller)
{
    struct cdn_datatype *dt;
    if (status == NULL || status == MPI_STATUS_IGNORE)
        return cdn_err(MPI_ERR_ARG, "%s: status is NULL or MPI_STATUS_IGNORE", caller);
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: count %lld is negative", caller, (long long)count);
    int rc = cdn_datatype_check(datatype, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    /* count basic elements: bytes = count * the size of one basic element */
    MPI_Count per = cdn_datatype_elements(dt, cdn_datatype_size(dt));
    MPI_Count esize = per > 0 ? cdn_datatype_size(dt) / per : 0;
    cdn_status_set_bytes(status, count * esize);
    return MPI_SUCCESS;
}

int cdn_MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements");
}

int cdn_MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements_x");
}
