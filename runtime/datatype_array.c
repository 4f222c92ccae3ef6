/*
 * Subarray and distributed-array (darray) types, MPI-4.1 5.1.3 and 5.1.4,
 * built from the vector and piece shapes of datatype_build.c.
 *
 * Both are built one dimension at a time from the fastest-varying one (the
 * last in C order, the first in Fortran order): dimension d repeats the type
 * of the faster dimensions at a stride of the product of their global sizes
 * times the old type's extent.  The local elements therefore come in array
 * storage order, the typemap order MPI defines (and MPICH produces), and the
 * result is resized to lb 0 and the extent of the whole global array.
 * A darray's block or cyclic selection of one dimension is a vector of full
 * blocks plus, when the last block is cut short, one piece for its tail.
 */
#include <stdlib.h>

#include "runtime/datatype_impl.h"
#include "runtime/error.h"

/* t resized to [0, extent) (t is released): t repeated at `extent` bytes apart,
 * or, as the last step, the type of the whole array. */
static struct cdn_datatype *with_stride(struct cdn_datatype *t, MPI_Aint stride)
{
    if (t == NULL)
        return NULL;
    struct cdn_datatype *r = cdn_dt_make_resized(t, 0, stride);
    cdn_datatype_release(t);
    return r;
}

/* Elements [start, start+len) of one dimension of elements of type t. */
static struct cdn_datatype *range(struct cdn_datatype *t, MPI_Aint stride, MPI_Count start, MPI_Count len)
{
    struct cdn_dt_piece p = {.disp = start * stride, .blen = len, .type = t};
    return cdn_dt_make_pieces(1, &p, false);
}


/* What dimension d keeps of t, whose elements lie `stride` bytes apart. */
typedef struct cdn_datatype *(*dim_select)(struct cdn_datatype *t, MPI_Aint stride, int d,
                                           const void *args);

/* The walk both constructors share: from the fastest-varying dimension,
 * space the type built so far at the extent of that dimension's global
 * elements, keep what `select` keeps, and resize the result to the whole
 * array.  Returns NULL when out of memory. */
static struct cdn_datatype *by_dimension(struct cdn_datatype *old, int ndims, int order,
                                         const MPI_Count *gsizes, dim_select select,
                                         const void *args)
{
    MPI_Aint stride = old->ub - old->lb;
    cdn_datatype_retain(old);
    struct cdn_datatype *t = old;
    for (int k = 0; k < ndims && t != NULL; k++) {
        int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
        struct cdn_datatype *s = with_stride(t, stride);
        t = s == NULL ? NULL : select(s, stride, d, args);
        cdn_datatype_release(s);
        stride *= gsizes[d];
    }
    return with_stride(t, stride);
}

struct subarray_args {
    const MPI_Count *subsizes, *starts;
};

static struct cdn_datatype *subarray_dim(struct cdn_datatype *t, MPI_Aint stride, int d,
                                         const void *args)
{
    const struct subarray_args *a = args;
    return range(t, stride, a->starts[d], a->subsizes[d]);
}

struct cdn_datatype *cdn_dt_make_subarray(int ndims, const MPI_Count *sizes, const MPI_Count *subsizes,
                                          const MPI_Count *starts, int order, struct cdn_datatype *old)
{
    struct subarray_args a = {subsizes, starts};
    return by_dimension(old, ndims, order, sizes, subarray_dim, &a);
}

/* Local part of one darray dimension, in elements of t spaced `stride` bytes. */
static struct cdn_datatype *darray_dim(struct cdn_datatype *t, MPI_Aint stride, MPI_Count g, int distrib,
                                       int darg, int p, int coord)
{
    if (distrib == MPI_DISTRIBUTE_NONE)
        return range(t, stride, 0, g);
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        MPI_Count b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        MPI_Count start = coord * b, len = g - start < b ? g - start : b;
        return range(t, stride, start, len > 0 ? len : 0);
    }
    MPI_Count b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    MPI_Count start = coord * b, step = (MPI_Count)p * b;
    if (start >= g)
        return range(t, stride, 0, 0);
    MPI_Count nblocks = (g - start + step - 1) / step;  /* blocks that begin inside the array */
    MPI_Count last = start + (nblocks - 1) * step;
    MPI_Count tail = g - last < b ? g - last : b;
    MPI_Count nfull = tail == b ? nblocks : nblocks - 1;
    struct cdn_datatype *vec = cdn_dt_make_vector(nfull, b, step * stride, t);
    if (vec == NULL)
        return NULL;
    struct cdn_dt_piece pc[2] = {
        {.disp = start * stride, .blen = 1, .type = vec},
        {.disp = last * stride, .blen = tail == b ? 0 : tail, .type = t},
    };
    struct cdn_datatype *r = cdn_dt_make_pieces(2, pc, false);
    cdn_datatype_release(vec);
    return r;
}

struct darray_args {
    const MPI_Count *gsizes;
    const int *distribs, *dargs, *psizes, *coords;
};

static struct cdn_datatype *darray_select(struct cdn_datatype *t, MPI_Aint stride, int d,
                                          const void *args)
{
    const struct darray_args *a = args;
    return darray_dim(t, stride, a->gsizes[d], a->distribs[d], a->dargs[d], a->psizes[d],
                      a->coords[d]);
}

static int darray_check(int size, int rank, int ndims, const MPI_Count *gsizes, const int *distribs,
                        const int *dargs, const int *psizes, int order, const char *caller)
{
    if (size <= 0)
        return cdn_err(MPI_ERR_ARG, "%s: size %d is not positive", caller, size);
    if (rank < 0 || rank >= size)
        return cdn_err(MPI_ERR_RANK, "%s: rank %d is not in 0..%d", caller, rank, size - 1);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return cdn_err(MPI_ERR_ARG, "%s: order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                       caller, order);
    long long procs = 1;
    for (int d = 0; d < ndims; d++) {
        if (gsizes[d] <= 0)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_gsizes[%d] = %lld is not positive", caller, d,
                           (long long)gsizes[d]);
        if (psizes[d] <= 0)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_psizes[%d] = %d is not positive", caller, d,
                           psizes[d]);
        procs *= psizes[d];
        int ds = distribs[d], a = dargs[d];
        if (ds != MPI_DISTRIBUTE_BLOCK && ds != MPI_DISTRIBUTE_CYCLIC && ds != MPI_DISTRIBUTE_NONE)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_distribs[%d] = %d is not a distribution constant",
                           caller, d, ds);
        if (ds == MPI_DISTRIBUTE_NONE && psizes[d] != 1)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_psizes[%d] = %d must be 1 for MPI_DISTRIBUTE_NONE",
                           caller, d, psizes[d]);
        if (ds != MPI_DISTRIBUTE_NONE && a != MPI_DISTRIBUTE_DFLT_DARG && a <= 0)
            return cdn_err(MPI_ERR_ARG, "%s: array_of_dargs[%d] = %d is not positive", caller, d, a);
        if (ds == MPI_DISTRIBUTE_BLOCK && a != MPI_DISTRIBUTE_DFLT_DARG &&
            (long long)a * psizes[d] < gsizes[d])
            return cdn_err(MPI_ERR_ARG, "%s: array_of_dargs[%d] = %d times array_of_psizes[%d] = %d "
                           "does not cover array_of_gsizes[%d] = %lld", caller, d, a, d, psizes[d], d,
                           (long long)gsizes[d]);
    }
    if (procs != size)
        return cdn_err(MPI_ERR_ARG, "%s: the process grid has %lld processes, not size %d", caller,
                       procs, size);
    return MPI_SUCCESS;
}

struct cdn_datatype *cdn_dt_make_darray(int size, int rank, int ndims, const MPI_Count *gsizes,
                                        const int *distribs, const int *dargs, const int *psizes,
                                        int order, struct cdn_datatype *old, int *err, const char *caller)
{
    *err = darray_check(size, rank, ndims, gsizes, distribs, dargs, psizes, order, caller);
    if (*err != MPI_SUCCESS)
        return NULL;
    int *coords = malloc((size_t)ndims * sizeof *coords);
    if (coords == NULL) {
        *err = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        return NULL;
    }
    for (int d = ndims - 1, r = rank; d >= 0; d--) {  /* the process grid is row-major */
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    struct darray_args a = {gsizes, distribs, dargs, psizes, coords};
    struct cdn_datatype *t = by_dimension(old, ndims, order, gsizes, darray_select, &a);
    free(coords);
    if (t == NULL)
        *err = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    return t;
}
