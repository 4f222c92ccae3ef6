/*
 * Bindings of the datatype constructors (MPI-4.1 5.1.2-5.1.7) with their
 * large-count _c forms, and MPI_Type_commit / MPI_Type_free / MPI_Type_dup.
 *
 * Each binding checks its arguments, hands the layout to the engine
 * (runtime/datatype_build.c, datatype_array.c) and keeps the arguments
 * exactly as given for MPI_Type_get_envelope/get_contents: an int form
 * records integers and addresses, a _c form its large counts (the grouping
 * of the standard's decoding table).  The int forms widen their arrays and
 * share the _c form's construction.  MPI_Type_create_f90_* hand out the
 * predefined types of runtime/datatype_f90.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api/datatype_args.h"
#include "cdn_api_impl.h"
#include "runtime/attr.h"

static void copy_ints(int *dst, const int *src, MPI_Count n)
{
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void copy_counts(MPI_Count *dst, const MPI_Count *src, MPI_Count n)
{
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof *dst);
}

/* ---- contiguous, vector, hvector ---- */

static int vector_common(MPI_Count count, MPI_Count blen, MPI_Aint stride, bool stride_in_bytes,
                         MPI_Datatype oldtype, MPI_Datatype *newtype, const char *caller,
                         struct cdn_datatype **out)
{
    struct cdn_datatype *old;
    int rc;
    if ((rc = cdn_dt_count_arg(count, "count", caller)) || (rc = cdn_dt_blen_arg(blen, "blocklength", caller)) ||
        (rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old)) || (rc = cdn_dt_out_arg(newtype, caller)))
        return rc;
    MPI_Aint bytes = stride_in_bytes ? stride : stride * (old->ub - old->lb);
    *out = cdn_dt_make_vector(count, blen, bytes, old);
    return *out == NULL ? cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller) : MPI_SUCCESS;
}

int cdn_MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_contiguous_c";
    struct cdn_datatype *dt = NULL;
    int rc = cdn_dt_count_arg(count, "count", caller);
    if (rc == MPI_SUCCESS)
        rc = vector_common(1, count, 0, true, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_CONTIGUOUS, 0, 0, 1, 1, caller)) == MPI_SUCCESS) {
        dt->counts[0] = count;
        cdn_datatype_record_type(dt, oldtype);
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_contiguous";
    struct cdn_datatype *dt = NULL;
    int rc = cdn_dt_count_arg(count, "count", caller);
    if (rc == MPI_SUCCESS)
        rc = vector_common(1, count, 0, true, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_CONTIGUOUS, 1, 0, 0, 1, caller)) == MPI_SUCCESS) {
        dt->ints[0] = count;
        cdn_datatype_record_type(dt, oldtype);
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

#define VECTOR_BINDINGS(Name, combiner, in_bytes, stride_t)                                          \
    int cdn_MPI_Type_##Name(int count, int blocklength, stride_t stride, MPI_Datatype oldtype,         \
                            MPI_Datatype *newtype)                                                   \
    {                                                                                                \
        const char *caller = "MPI_Type_" #Name;                                                      \
        struct cdn_datatype *dt = NULL;                                                              \
        int rc = vector_common(count, blocklength, stride, in_bytes, oldtype, newtype, caller, &dt); \
        if (rc == MPI_SUCCESS &&                                                                     \
            (rc = cdn_datatype_record(dt, combiner, in_bytes ? 2 : 3, in_bytes, 0, 1, caller)) == MPI_SUCCESS) {  \
            dt->ints[0] = count, dt->ints[1] = blocklength;                                          \
            if (in_bytes)                                                                            \
                dt->aints[0] = stride;                                                               \
            else                                                                                     \
                dt->ints[2] = (int)stride;                                                           \
            cdn_datatype_record_type(dt, oldtype);                                                                \
        }                                                                                            \
        return cdn_datatype_finish(dt, rc, newtype, caller);                                                      \
    }                                                                                                \
    int cdn_MPI_Type_##Name##_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,             \
                                MPI_Datatype oldtype, MPI_Datatype *newtype)                         \
    {                                                                                                \
        const char *caller = "MPI_Type_" #Name "_c";                                                 \
        struct cdn_datatype *dt = NULL;                                                              \
        int rc = vector_common(count, blocklength, stride, in_bytes, oldtype, newtype, caller, &dt); \
        if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, combiner, 0, 0, 3, 1, caller)) == MPI_SUCCESS) {   \
            dt->counts[0] = count, dt->counts[1] = blocklength, dt->counts[2] = stride;              \
            cdn_datatype_record_type(dt, oldtype);                                                                \
        }                                                                                            \
        return cdn_datatype_finish(dt, rc, newtype, caller);                                                      \
    }

VECTOR_BINDINGS(vector, MPI_COMBINER_VECTOR, false, int)
VECTOR_BINDINGS(create_hvector, MPI_COMBINER_HVECTOR, true, MPI_Aint)

/* ---- indexed family and struct: a list of pieces ---- */

/* n pieces: blens[i] (or blen when blens is NULL) copies of types[i] (a
 * struct) or of oldtype (the indexed family) at disps[i] elements of
 * oldtype's extent (or bytes).  A struct of count 0 may pass NULL for
 * types: it is the empty type (size 0, extent 0), as in MPICH. */
static int pieces_common(MPI_Count n, const MPI_Count *blens, MPI_Count blen, const MPI_Aint *disps,
                         bool disps_in_bytes, bool is_struct, const MPI_Datatype *types,
                         MPI_Datatype oldtype, MPI_Datatype *newtype, const char *caller,
                         struct cdn_datatype **out)
{
    int rc;
    struct cdn_datatype *old = NULL;
    if ((rc = cdn_dt_count_arg(n, "count", caller)) || (rc = cdn_dt_out_arg(newtype, caller)))
        return rc;
    if (!is_struct && (rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old)))
        return rc;
    if (blens == NULL && (rc = cdn_dt_blen_arg(blen, "blocklength", caller)))
        return rc;
    struct cdn_dt_piece *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (p == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    for (MPI_Count i = 0; i < n && rc == MPI_SUCCESS; i++) {
        p[i].blen = blens != NULL ? blens[i] : blen;
        if (p[i].blen < 0)
            rc = cdn_err(MPI_ERR_ARG, "%s: array_of_blocklengths[%lld] = %lld is negative", caller,
                         (long long)i, (long long)p[i].blen);
        else if (is_struct)
            rc = cdn_dt_type_arg(types[i], "array_of_types[i]", caller, &p[i].type);
        else
            p[i].type = old;
        if (rc == MPI_SUCCESS)
            p[i].disp = disps_in_bytes ? disps[i] : disps[i] * (p[i].type->ub - p[i].type->lb);
    }
    if (rc == MPI_SUCCESS) {
        *out = cdn_dt_make_pieces(n, p, is_struct);
        if (*out == NULL)
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    free(p);
    return rc;
}

/* Widen an int array (NULL stays NULL); *rc gets an error code on failure. */
static MPI_Count *widen(const int *a, MPI_Count n, int *rc, const char *caller)
{
    if (a == NULL || n <= 0)
        return NULL;
    MPI_Count *w = malloc((size_t)n * sizeof *w);
    if (w == NULL) {
        *rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        return NULL;
    }
    for (MPI_Count i = 0; i < n; i++)
        w[i] = a[i];
    return w;
}

static bool arrays_given(MPI_Count count, const void *a, const void *b, const char *caller, int *rc)
{
    if (count > 0 && (a == NULL || b == NULL)) {
        *rc = cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller,
                      a == NULL ? "array_of_blocklengths" : "array_of_displacements");
        return false;
    }
    return true;
}

int cdn_MPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                         MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_indexed";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, array_of_blocklengths, array_of_displacements, caller, &rc))
        return rc;
    MPI_Count *bl = widen(array_of_blocklengths, count, &rc, caller);
    MPI_Count *dp = widen(array_of_displacements, count, &rc, caller);
    if (rc == MPI_SUCCESS)
        rc = pieces_common(count, bl, 0, dp, false, false, NULL, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_INDEXED, 2 * (MPI_Count)count + 1, 0, 0, 1, caller)) == 0) {
        dt->ints[0] = count;
        copy_ints(dt->ints + 1, array_of_blocklengths, count);
        copy_ints(dt->ints + 1 + count, array_of_displacements, count);
        cdn_datatype_record_type(dt, oldtype);
    }
    free(bl);
    free(dp);
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                 const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                 MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_hindexed";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, array_of_blocklengths, array_of_displacements, caller, &rc))
        return rc;
    MPI_Count *bl = widen(array_of_blocklengths, count, &rc, caller);
    if (rc == MPI_SUCCESS)
        rc = pieces_common(count, bl, 0, array_of_displacements, true, false, NULL, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_HINDEXED, (MPI_Count)count + 1, count, 0, 1, caller)) == 0) {
        dt->ints[0] = count;
        copy_ints(dt->ints + 1, array_of_blocklengths, count);
        copy_counts(dt->aints, array_of_displacements, count);
        cdn_datatype_record_type(dt, oldtype);
    }
    free(bl);
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

#define INDEXED_C(Name, combiner, in_bytes)                                                          \
    int cdn_MPI_Type_##Name##_c(MPI_Count count, const MPI_Count array_of_blocklengths[],             \
                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,      \
                                MPI_Datatype *newtype)                                               \
    {                                                                                                \
        const char *caller = "MPI_Type_" #Name "_c";                                                 \
        struct cdn_datatype *dt = NULL;                                                              \
        int rc = MPI_SUCCESS;                                                                        \
        if (!arrays_given(count, array_of_blocklengths, array_of_displacements, caller, &rc))        \
            return rc;                                                                               \
        rc = pieces_common(count, array_of_blocklengths, 0, array_of_displacements, in_bytes,        \
                           false, NULL, oldtype, newtype, caller, &dt);                              \
        if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, combiner, 0, 0, 2 * count + 1, 1, caller)) == 0) { \
            dt->counts[0] = count;                                                                   \
            copy_counts(dt->counts + 1, array_of_blocklengths, count);                               \
            copy_counts(dt->counts + 1 + count, array_of_displacements, count);                      \
            cdn_datatype_record_type(dt, oldtype);                                                                \
        }                                                                                            \
        return cdn_datatype_finish(dt, rc, newtype, caller);                                                      \
    }

INDEXED_C(indexed, MPI_COMBINER_INDEXED, false)
INDEXED_C(create_hindexed, MPI_COMBINER_HINDEXED, true)

int cdn_MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                      MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_indexed_block";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, "", array_of_displacements, caller, &rc))
        return rc;
    MPI_Count *dp = widen(array_of_displacements, count, &rc, caller);
    if (rc == MPI_SUCCESS)
        rc = pieces_common(count, NULL, blocklength, dp, false, false, NULL, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_INDEXED_BLOCK, (MPI_Count)count + 2, 0, 0, 1, caller)) == 0) {
        dt->ints[0] = count, dt->ints[1] = blocklength;
        copy_ints(dt->ints + 2, array_of_displacements, count);
        cdn_datatype_record_type(dt, oldtype);
    }
    free(dp);
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_hindexed_block";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, "", array_of_displacements, caller, &rc))
        return rc;
    rc = pieces_common(count, NULL, blocklength, array_of_displacements, true, false, NULL, oldtype, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_HINDEXED_BLOCK, 2, count, 0, 1, caller)) == 0) {
        dt->ints[0] = count, dt->ints[1] = blocklength;
        copy_counts(dt->aints, array_of_displacements, count);
        cdn_datatype_record_type(dt, oldtype);
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

#define BLOCK_C(Name, combiner, in_bytes)                                                            \
    int cdn_MPI_Type_##Name##_c(MPI_Count count, MPI_Count blocklength,                              \
                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,      \
                                MPI_Datatype *newtype)                                               \
    {                                                                                                \
        const char *caller = "MPI_Type_" #Name "_c";                                                 \
        struct cdn_datatype *dt = NULL;                                                              \
        int rc = MPI_SUCCESS;                                                                        \
        if (!arrays_given(count, "", array_of_displacements, caller, &rc))                           \
            return rc;                                                                               \
        rc = pieces_common(count, NULL, blocklength, array_of_displacements, in_bytes, false,        \
                           NULL, oldtype, newtype, caller, &dt);                                     \
        if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, combiner, 0, 0, count + 2, 1, caller)) == 0) {     \
            dt->counts[0] = count, dt->counts[1] = blocklength;                                      \
            copy_counts(dt->counts + 2, array_of_displacements, count);                              \
            cdn_datatype_record_type(dt, oldtype);                                                                \
        }                                                                                            \
        return cdn_datatype_finish(dt, rc, newtype, caller);                                                      \
    }

BLOCK_C(create_indexed_block, MPI_COMBINER_INDEXED_BLOCK, false)
BLOCK_C(create_hindexed_block, MPI_COMBINER_HINDEXED_BLOCK, true)

static int struct_types_arg(MPI_Count count, const MPI_Datatype *types, const char *caller)
{
    if (count > 0 && types == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: array_of_types is NULL", caller);
    return MPI_SUCCESS;
}

int cdn_MPI_Type_create_struct(int count, const int array_of_blocklengths[],
                               const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[],
                               MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_struct";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, array_of_blocklengths, array_of_displacements, caller, &rc) ||
        (rc = struct_types_arg(count, array_of_types, caller)))
        return rc;
    MPI_Count *bl = widen(array_of_blocklengths, count, &rc, caller);
    if (rc == MPI_SUCCESS)
        rc = pieces_common(count, bl, 0, array_of_displacements, true, true, array_of_types, MPI_DATATYPE_NULL,
                           newtype, caller, &dt);
    if (rc == MPI_SUCCESS &&
        (rc = cdn_datatype_record(dt, MPI_COMBINER_STRUCT, (MPI_Count)count + 1, count, 0, count, caller)) == 0) {
        dt->ints[0] = count;
        copy_ints(dt->ints + 1, array_of_blocklengths, count);
        copy_counts(dt->aints, array_of_displacements, count);
        for (int i = 0; i < count; i++)
            cdn_datatype_record_type(dt, array_of_types[i]);
    }
    free(bl);
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                 const MPI_Count array_of_displacements[], const MPI_Datatype array_of_types[],
                                 MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_create_struct_c";
    struct cdn_datatype *dt = NULL;
    int rc = MPI_SUCCESS;
    if (!arrays_given(count, array_of_blocklengths, array_of_displacements, caller, &rc) ||
        (rc = struct_types_arg(count, array_of_types, caller)))
        return rc;
    rc = pieces_common(count, array_of_blocklengths, 0, array_of_displacements, true, true, array_of_types,
                       MPI_DATATYPE_NULL, newtype, caller, &dt);
    if (rc == MPI_SUCCESS && (rc = cdn_datatype_record(dt, MPI_COMBINER_STRUCT, 0, 0, 2 * count + 1, count, caller)) == 0) {
        dt->counts[0] = count;
        copy_counts(dt->counts + 1, array_of_blocklengths, count);
        copy_counts(dt->counts + 1 + count, array_of_displacements, count);
        for (MPI_Count i = 0; i < count; i++)
            cdn_datatype_record_type(dt, array_of_types[i]);
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

/* ---- resized, dup, commit, free ---- */

static int resized_common(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype,
                          bool large, const char *caller)
{
    struct cdn_datatype *old, *dt = NULL;
    int rc;
    if ((rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old)) || (rc = cdn_dt_out_arg(newtype, caller)))
        return rc;
    dt = cdn_dt_make_resized(old, lb, extent);
    if (dt != NULL && (rc = cdn_datatype_record(dt, MPI_COMBINER_RESIZED, 0, large ? 0 : 2, large ? 2 : 0, 1, caller)) == 0) {
        MPI_Aint *dst = large ? dt->counts : dt->aints;
        dst[0] = lb, dst[1] = extent;
        cdn_datatype_record_type(dt, oldtype);
    }
    return cdn_datatype_finish(dt, rc, newtype, caller);
}

int cdn_MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
    return resized_common(oldtype, lb, extent, newtype, false, "MPI_Type_create_resized");
}

int cdn_MPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent, MPI_Datatype *newtype)
{
    return resized_common(oldtype, lb, extent, newtype, true, "MPI_Type_create_resized_c");
}

int cdn_MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *caller = "MPI_Type_dup";
    struct cdn_datatype *old, *dt;
    int rc;
    if ((rc = cdn_dt_type_arg(oldtype, "oldtype", caller, &old)) || (rc = cdn_dt_out_arg(newtype, caller)))
        return rc;
    dt = cdn_dt_make_resized(old, old->lb, old->ub - old->lb);
    if (dt == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    dt->committed = old->committed;
    if ((rc = cdn_datatype_record(dt, MPI_COMBINER_DUP, 0, 0, 0, 1, caller)) == MPI_SUCCESS)
        cdn_datatype_record_type(dt, oldtype);
    if (rc == MPI_SUCCESS)
        rc = cdn_datatype_publish(dt, caller);
    if (rc == MPI_SUCCESS)
        rc = cdn_attr_copy_all(&old->attrs, oldtype, &dt->attrs, caller);
    if (rc != MPI_SUCCESS) {  /* a copy callback's error, say: no new type */
        cdn_attr_delete_all(&dt->attrs, dt->handle, caller);
        cdn_datatype_release(dt);
        *newtype = MPI_DATATYPE_NULL;
        return rc;
    }
    *newtype = dt->handle;
    return MPI_SUCCESS;
}

int cdn_MPI_Type_commit(MPI_Datatype *datatype)
{
    struct cdn_datatype *dt;
    int rc;
    if (datatype == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_commit: datatype is NULL");
    if ((rc = cdn_dt_type_arg(*datatype, "datatype", "MPI_Type_commit", &dt)))
        return rc;
    dt->committed = true;  /* the layout was compiled at construction */
    return MPI_SUCCESS;
}

int cdn_MPI_Type_free(MPI_Datatype *datatype)
{
    struct cdn_datatype *dt;
    int rc;
    if (datatype == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_free: datatype is NULL");
    if ((rc = cdn_dt_type_arg(*datatype, "datatype", "MPI_Type_free", &dt)))
        return rc;
    if (dt->builtin)
        return cdn_err(MPI_ERR_TYPE, "MPI_Type_free: %s is a predefined datatype and cannot be freed",
                       dt->name);
    if (dt->f90)
        return cdn_err(MPI_ERR_TYPE, "MPI_Type_free: 0x%x came from MPI_Type_create_f90_%s and is "
                       "predefined; it cannot be freed", (unsigned)dt->handle,
                       dt->combiner == MPI_COMBINER_F90_INTEGER ? "integer" :
                       dt->combiner == MPI_COMBINER_F90_REAL ? "real" : "complex");
    rc = cdn_attr_delete_all(&dt->attrs, dt->handle, "MPI_Type_free");
    *datatype = MPI_DATATYPE_NULL;
    cdn_datatype_release(dt);
    return rc;
}

/* ---- Fortran 90 parameterised types (runtime/datatype_f90.c) ---- */

int cdn_MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    int rc = cdn_dt_out_arg(newtype, "MPI_Type_create_f90_integer");
    return rc ? rc : cdn_datatype_f90(MPI_COMBINER_F90_INTEGER, 0, r, newtype,
                                      "MPI_Type_create_f90_integer");
}

int cdn_MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    int rc = cdn_dt_out_arg(newtype, "MPI_Type_create_f90_real");
    return rc ? rc : cdn_datatype_f90(MPI_COMBINER_F90_REAL, p, r, newtype,
                                      "MPI_Type_create_f90_real");
}

int cdn_MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    int rc = cdn_dt_out_arg(newtype, "MPI_Type_create_f90_complex");
    return rc ? rc : cdn_datatype_f90(MPI_COMBINER_F90_COMPLEX, p, r, newtype,
                                      "MPI_Type_create_f90_complex");
}
