/*
 * Bindings of MPI_Alloc_mem and MPI_Free_mem (MPI-4.1 12.2.1); the memory
 * and its hints are runtime/alloc_mem.c's.
 */
#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/alloc_mem.h"
#include "runtime/info.h"

int cdn_MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    const char *caller = "MPI_Alloc_mem";
    int rc;
    if (baseptr == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: baseptr is NULL", caller);
    struct cdn_info *in = cdn_info_arg(info, caller, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    void *base;
    if ((rc = cdn_alloc_mem(size, in, &base, caller)) == MPI_SUCCESS)
        *(void **)baseptr = base;
    return rc;
}

int cdn_MPI_Free_mem(void *base)
{
    return cdn_free_mem(base, "MPI_Free_mem");
}
