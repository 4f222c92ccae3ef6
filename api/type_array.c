/*
 * Bindings of MPI_Type_create_subarray and MPI_Type_create_darray (and _c):
 * argument checks, the construction in runtime/datatype_array.c, and the
 * decoding record (the _c forms keep the sizes as large counts).
 */
#include <stdlib.h>
#include <string.h>

#include "api/datatype_args.h"
#include "cdn_api_impl.h"

static int array_args(int ndims, const void *a, const void *b, const void *c, const char *names,
                      MPI_Datatype *newtype, const char *caller)
{
    if (ndims <= 0)
        return cdn_err(MPI_ERR_ARG, "%s: ndims %d is not positive", caller, ndims);
    if (a == NULL || b == NULL || c == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: one of %s is NULL", caller, names);
    return cdn_dt_out_arg(newtype, caller);
}

static int subarray_common(int ndims, const MPI_Count *sizes, const MPI_Count *subsizes,
                           const MPI_Count *starts, int order, MPI_Datatype oldtype, const char *caller,
                           struct cdn_datatype **out)
{
    struct cdn_datatype *old;
    int rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old);
    if (rc != MPI_SUCCESS)
        return rc;
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return cdn_err(MPI_ERR_ARG, "%s: order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", caller, order);
    for (int d = 0; d < ndims; d++) {
        long long n = sizes[d], s = subsizes[d], st = starts[d];
        if (n <= 0)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_sizes[%d] = %lld is not positive", caller, d, n);
        if (s < 0 || s > n)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_subsizes[%d] = %lld is not in 0..%lld", caller, d, s, n);
        if (st < 0 || st > n - s)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_starts[%d] = %lld is not in 0..%lld (size %lld, subsize %lld)",
                           caller, d, st, n - s, n, s);
    }
    *out = cdn_dt_make_subarray(ndims, sizes, subsizes, starts, order, old);
    return *out == NULL ? cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller) : MPI_SUCCESS;
}

int cdn_MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                 const int array_of_starts[], int order, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_subarray";
    int rc = array_args(ndims, array_of_sizes, array_of_subsizes, array_of_starts,
                        "array_of_sizes, array_of_subsizes, array_of_starts", newtype, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count *w = malloc(3 * (size_t)ndims * sizeof *w);
    if (w == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    for (int d = 0; d < ndims; d++)
        w[d] = array_of_sizes[d], w[ndims + d] = array_of_subsizes[d], w[2 * ndims + d] = array_of_starts[d];
    struct cdn_datatype *dt = NULL;
    rc = subarray_common(ndims, w, w + ndims, w + 2 * ndims, order, oldtype, caller, &dt);
    free(w);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = cdn_datatype_record(dt, MPI_COMBINER_SUBARRAY, 3 * ndims + 2, 0, 0, 1, caller)) == MPI_SUCCESS) {
        cdn_datatype_record_type(dt, oldtype);
        dt->ints[0] = ndims;
        memcpy(dt->ints + 1, array_of_sizes, (size_t)ndims * sizeof(int));
        memcpy(dt->ints + 1 + ndims, array_of_subsizes, (size_t)ndims * sizeof(int));
        memcpy(dt->ints + 1 + 2 * ndims, array_of_starts, (size_t)ndims * sizeof(int));
        dt->ints[1 + 3 * ndims] = order;
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[], const MPI_Count array_of_subsizes[],
                                   const MPI_Count array_of_starts[], int order, MPI_Datatype oldtype,
                                   MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_subarray_c";
    int rc = array_args(ndims, array_of_sizes, array_of_subsizes, array_of_starts,
                        "array_of_sizes, array_of_subsizes, array_of_starts", newtype, caller);
    struct cdn_datatype *dt = NULL;
    if (rc == MPI_SUCCESS)
        rc = subarray_common(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = cdn_datatype_record(dt, MPI_COMBINER_SUBARRAY, 2, 0, 3 * ndims, 1, caller)) == MPI_SUCCESS) {
        cdn_datatype_record_type(dt, oldtype);
        dt->ints[0] = ndims;
        dt->ints[1] = order;
        memcpy(dt->counts, array_of_sizes, (size_t)ndims * sizeof(MPI_Count));
        memcpy(dt->counts + ndims, array_of_subsizes, (size_t)ndims * sizeof(MPI_Count));
        memcpy(dt->counts + 2 * ndims, array_of_starts, (size_t)ndims * sizeof(MPI_Count));
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

static int darray_common(int size, int rank, int ndims, const MPI_Count *gsizes, const int *distribs,
                         const int *dargs, const int *psizes, int order, MPI_Datatype oldtype,
                         MPI_Datatype *newtype, const char *caller, struct cdn_datatype **out)
{
    struct cdn_datatype *old;
    int rc = array_args(ndims, distribs, dargs, psizes, "array_of_distribs, array_of_dargs, array_of_psizes",
                        newtype, caller);
    if (rc == MPI_SUCCESS && gsizes == NULL)
        rc = cdn_err(MPI_ERR_ARG, "%s: array_of_gsizes is NULL", caller);
    if (rc == MPI_SUCCESS)
        rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old);
    if (rc == MPI_SUCCESS)
        *out = cdn_dt_make_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, &rc, caller);
    return rc;
}

int cdn_MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                               const int array_of_distribs[], const int array_of_dargs[],
                               const int array_of_psizes[], int order, MPI_Datatype oldtype,
                               MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_darray";
    if (ndims > 0 && array_of_gsizes == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: array_of_gsizes is NULL", caller);
    MPI_Count *g = malloc((size_t)(ndims > 0 ? ndims : 1) * sizeof *g);
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    for (int d = 0; d < ndims; d++)
        g[d] = array_of_gsizes[d];
    struct cdn_datatype *dt = NULL;
    int rc = darray_common(size, rank, ndims, g, array_of_distribs, array_of_dargs, array_of_psizes, order,
                           oldtype, newtype, caller, &dt);
    free(g);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t n = (size_t)ndims * sizeof(int);
    if ((rc = cdn_datatype_record(dt, MPI_COMBINER_DARRAY, 4 * ndims + 4, 0, 0, 1, caller)) == MPI_SUCCESS) {
        cdn_datatype_record_type(dt, oldtype);
        int *v = dt->ints;
        v[0] = size, v[1] = rank, v[2] = ndims;
        memcpy(v + 3, array_of_gsizes, n);
        memcpy(v + 3 + ndims, array_of_distribs, n);
        memcpy(v + 3 + 2 * ndims, array_of_dargs, n);
        memcpy(v + 3 + 3 * ndims, array_of_psizes, n);
        v[3 + 4 * ndims] = order;
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                                 const int array_of_distribs[], const int array_of_dargs[],
                                 const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_darray_c";
    struct cdn_datatype *dt = NULL;
    int rc = darray_common(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                           array_of_psizes, order, oldtype, newtype, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t n = (size_t)ndims * sizeof(int);
    if ((rc = cdn_datatype_record(dt, MPI_COMBINER_DARRAY, 3 * ndims + 4, 0, ndims, 1, caller)) == MPI_SUCCESS) {
        cdn_datatype_record_type(dt, oldtype);
        int *v = dt->ints;
        v[0] = size, v[1] = rank, v[2] = ndims;
        memcpy(v + 3, array_of_distribs, n);
        memcpy(v + 3 + ndims, array_of_dargs, n);
        memcpy(v + 3 + 2 * ndims, array_of_psizes, n);
        v[3 + 3 * ndims] = order;
        memcpy(dt->counts, array_of_gsizes, (size_t)ndims * sizeof(MPI_Count));
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}
