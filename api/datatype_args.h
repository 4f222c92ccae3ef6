/*
 * Argument checks shared by the datatype bindings (api/type_*.c): each
 * returns MPI_SUCCESS or an error code whose message names the caller, the
 * argument and its value.
 */
#ifndef CDN_API_DATATYPE_ARGS_H
#define CDN_API_DATATYPE_ARGS_H

#include <mpi.h>

#include "runtime/datatype_impl.h"
#include "runtime/error.h"

static inline int cdn_dt_count_arg(MPI_Count count, const char *what, const char *caller)
{
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: %s %lld is negative", caller, what, (long long)count);
    return MPI_SUCCESS;
}

static inline int cdn_dt_blen_arg(MPI_Count blen, const char *what, const char *caller)
{
    if (blen < 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s %lld is negative", caller, what, (long long)blen);
    return MPI_SUCCESS;
}

/* A valid datatype handle (committed or not). */
static inline int cdn_dt_type_arg(MPI_Datatype h, const char *what, const char *caller,
                                  struct cdn_datatype **out)
{
    *out = cdn_datatype_get(h);
    if (h == MPI_DATATYPE_NULL)
        return cdn_err(MPI_ERR_TYPE, "%s: %s is MPI_DATATYPE_NULL", caller, what);
    if (*out == NULL)
        return cdn_err(MPI_ERR_TYPE, "%s: %s 0x%x is not a valid datatype", caller, what, (unsigned)h);
    return MPI_SUCCESS;
}

static inline int cdn_dt_out_arg(const void *out, const char *caller)
{
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newtype is NULL", caller);
    return MPI_SUCCESS;
}

#endif
