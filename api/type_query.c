/*
 * Bindings of the datatype queries: size and bounds (int, _c and the
 * deprecated _x forms), decoding (get_envelope / get_contents), names,
 * MPI_Type_match_size, MPI_Type_get_value_index, MPI_Get_address and the
 * element counts of a status (MPI_Get_elements, MPI_Status_set_elements).
 *
 * get_contents returns the datatypes a type was built from: a predefined
 * one as itself, a derived one as its handle with one more reference, which
 * the caller drops with MPI_Type_free (MPI-4.1 5.1.13, as MPICH does).
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "api/datatype_args.h"
#include "cdn_api_impl.h"

static int query_type(MPI_Datatype h, const void *out1, const void *out2, const char *caller,
                      struct cdn_datatype **dt)
{
    int rc = cdn_dt_type_arg(h, "datatype", caller, dt);
    if (rc == MPI_SUCCESS && (out1 == NULL || out2 == NULL))
        rc = cdn_err(MPI_ERR_ARG, "%s: an output argument is NULL", caller);
    return rc;
}

/* ---- size and bounds ---- */

int cdn_MPI_Type_size(MPI_Datatype datatype, int *size)
{
    struct cdn_datatype *dt;
    int rc = query_type(datatype, size, size, "MPI_Type_size", &dt);
    if (rc == MPI_SUCCESS)
        *size = dt->size > INT_MAX ? MPI_UNDEFINED : (int)dt->size;
    return rc;
}

#define SIZE_C(Name)                                                            \
    int cdn_MPI_##Name(MPI_Datatype datatype, MPI_Count *size)                   \
    {                                                                            \
        struct cdn_datatype *dt;                                                 \
        int rc = query_type(datatype, size, size, "MPI_" #Name, &dt);            \
        if (rc == MPI_SUCCESS)                                                   \
            *size = dt->size;                                                    \
        return rc;                                                               \
    }
SIZE_C(Type_size_c)
SIZE_C(Type_size_x)

#define BOUNDS(Name, T, lbf, extf)                                              \
    int cdn_MPI_##Name(MPI_Datatype datatype, T *lb, T *extent)                  \
    {                                                                            \
        struct cdn_datatype *dt;                                                 \
        int rc = query_type(datatype, lb, extent, "MPI_" #Name, &dt);            \
        if (rc == MPI_SUCCESS)                                                   \
            *lb = lbf(dt), *extent = extf(dt);                                   \
        return rc;                                                               \
    }
BOUNDS(Type_get_extent, MPI_Aint, cdn_datatype_lb, cdn_datatype_extent)
BOUNDS(Type_get_extent_c, MPI_Count, cdn_datatype_lb, cdn_datatype_extent)
BOUNDS(Type_get_extent_x, MPI_Count, cdn_datatype_lb, cdn_datatype_extent)
BOUNDS(Type_get_true_extent, MPI_Aint, cdn_datatype_true_lb, cdn_datatype_true_extent)
BOUNDS(Type_get_true_extent_c, MPI_Count, cdn_datatype_true_lb, cdn_datatype_true_extent)
BOUNDS(Type_get_true_extent_x, MPI_Count, cdn_datatype_true_lb, cdn_datatype_true_extent)

/* ---- decoding ---- */

int cdn_MPI_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
{
    struct cdn_datatype *dt;
    int rc = query_type(datatype, num_integers, num_addresses, "MPI_Type_get_envelope_c", &dt);
    if (rc == MPI_SUCCESS && (num_large_counts == NULL || num_datatypes == NULL || combiner == NULL))
        rc = cdn_err(MPI_ERR_ARG, "MPI_Type_get_envelope_c: an output argument is NULL");
    if (rc != MPI_SUCCESS)
        return rc;
    *num_integers = dt->ni, *num_addresses = dt->na, *num_large_counts = dt->nc;
    *num_datatypes = dt->builtin ? 0 : dt->nd;
    *combiner = dt->combiner;
    return MPI_SUCCESS;
}

int cdn_MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                              int *num_datatypes, int *combiner)
{
    struct cdn_datatype *dt;
    int rc = query_type(datatype, num_integers, num_addresses, "MPI_Type_get_envelope", &dt);
    if (rc == MPI_SUCCESS && (num_datatypes == NULL || combiner == NULL))
        rc = cdn_err(MPI_ERR_ARG, "MPI_Type_get_envelope: an output argument is NULL");
    if (rc == MPI_SUCCESS && dt->large)
        rc = cdn_err(MPI_ERR_TYPE, "MPI_Type_get_envelope: datatype 0x%x was made by a large-count "
                     "constructor; decode it with MPI_Type_get_envelope_c", (unsigned)datatype);
    if (rc != MPI_SUCCESS)
        return rc;
    *num_integers = dt->ni, *num_addresses = dt->na;
    *num_datatypes = dt->builtin ? 0 : dt->nd;
    *combiner = dt->combiner;
    return MPI_SUCCESS;
}

static int contents(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                    MPI_Count max_large_counts, MPI_Count max_datatypes, int *ints, MPI_Aint *aints,
                    MPI_Count *counts, MPI_Datatype *types, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dt->combiner == MPI_COMBINER_NAMED)
        return cdn_err(MPI_ERR_TYPE, "%s: %s is a predefined datatype; it has no contents", caller, dt->name);
    if (max_integers < dt->ni || max_addresses < dt->na || max_large_counts < dt->nc || max_datatypes < dt->nd)
        return cdn_err(MPI_ERR_ARG, "%s: the arrays are too small for datatype 0x%x (it needs %d integers, "
                       "%d addresses, %d large counts, %d datatypes)", caller, (unsigned)datatype,
                       dt->ni, dt->na, dt->nc, dt->nd);
    if ((dt->ni > 0 && ints == NULL) || (dt->na > 0 && aints == NULL) || (dt->nc > 0 && counts == NULL) ||
        (dt->nd > 0 && types == NULL))
        return cdn_err(MPI_ERR_ARG, "%s: an output array is NULL", caller);
    if (dt->ni > 0)
        memcpy(ints, dt->ints, (size_t)dt->ni * sizeof *ints);
    if (dt->na > 0)
        memcpy(aints, dt->aints, (size_t)dt->na * sizeof *aints);
    if (dt->nc > 0)
        memcpy(counts, dt->counts, (size_t)dt->nc * sizeof *counts);
    for (int i = 0; i < dt->nd; i++) {
        types[i] = dt->types[i];
        cdn_datatype_retain(cdn_datatype_get(types[i]));
    }
    return MPI_SUCCESS;
}

int cdn_MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                              int array_of_integers[], MPI_Aint array_of_addresses[],
                              MPI_Datatype array_of_datatypes[])
{
    struct cdn_datatype *dt = cdn_datatype_get(datatype);
    if (dt != NULL && dt->large)
        return cdn_err(MPI_ERR_TYPE, "MPI_Type_get_contents: datatype 0x%x was made by a large-count "
                       "constructor; decode it with MPI_Type_get_contents_c", (unsigned)datatype);
    return contents(datatype, max_integers, max_addresses, 0, max_datatypes, array_of_integers,
                    array_of_addresses, NULL, array_of_datatypes, "MPI_Type_get_contents");
}

int cdn_MPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[],
                                MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                                MPI_Datatype array_of_datatypes[])
{
    return contents(datatype, max_integers, max_addresses, max_large_counts, max_datatypes, array_of_integers,
                    array_of_addresses, array_of_large_counts, array_of_datatypes, "MPI_Type_get_contents_c");
}

/* ---- names ---- */

int cdn_MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    struct cdn_datatype *dt;
    int rc = query_type(datatype, type_name, resultlen, "MPI_Type_get_name", &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&dt->lock);
    strcpy(type_name, dt->name);
    pthread_mutex_unlock(&dt->lock);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}

int cdn_MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    struct cdn_datatype *dt;
    int rc = query_type(datatype, type_name, type_name, "MPI_Type_set_name", &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t n = strlen(type_name);
    if (n >= MPI_MAX_OBJECT_NAME)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_set_name: name of %zu characters is longer than "
                       "MPI_MAX_OBJECT_NAME-1 (%d)", n, MPI_MAX_OBJECT_NAME - 1);
    pthread_mutex_lock(&dt->lock);
    memcpy(dt->name, type_name, n + 1);
    pthread_mutex_unlock(&dt->lock);
    return MPI_SUCCESS;
}

/* ---- predefined type lookups, addresses ---- */

int cdn_MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    if (datatype == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_match_size: datatype is NULL");
    if (typeclass != MPI_TYPECLASS_REAL && typeclass != MPI_TYPECLASS_INTEGER &&
        typeclass != MPI_TYPECLASS_COMPLEX)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_match_size: typeclass %d is not MPI_TYPECLASS_REAL, "
                       "_INTEGER or _COMPLEX", typeclass);
    MPI_Datatype t = cdn_datatype_match_size(typeclass, size);
    if (t == MPI_DATATYPE_NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_match_size: no datatype of typeclass %d has size %d",
                       typeclass, size);
    *datatype = t;
    return MPI_SUCCESS;
}

int cdn_MPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type, MPI_Datatype *pair_type)
{
    static const MPI_Datatype pairs[][3] = {
        {MPI_FLOAT, MPI_INT, MPI_FLOAT_INT}, {MPI_DOUBLE, MPI_INT, MPI_DOUBLE_INT},
        {MPI_LONG, MPI_INT, MPI_LONG_INT}, {MPI_SHORT, MPI_INT, MPI_SHORT_INT},
        {MPI_INT, MPI_INT, MPI_2INT}, {MPI_LONG_DOUBLE, MPI_INT, MPI_LONG_DOUBLE_INT},
        {MPI_INTEGER, MPI_INTEGER, MPI_2INTEGER}, {MPI_REAL, MPI_REAL, MPI_2REAL},
        {MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_2DOUBLE_PRECISION},
    };
    struct cdn_datatype *v, *i;
    int rc;
    if ((rc = cdn_dt_type_arg(value_type, "value_type", "MPI_Type_get_value_index", &v)) ||
        (rc = cdn_dt_type_arg(index_type, "index_type", "MPI_Type_get_value_index", &i)))
        return rc;
    if (pair_type == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Type_get_value_index: pair_type is NULL");
    *pair_type = MPI_DATATYPE_NULL;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        if (pairs[k][0] == value_type && pairs[k][1] == index_type)
            *pair_type = pairs[k][2];
    return MPI_SUCCESS;
}

int cdn_MPI_Get_address(const void *location, MPI_Aint *address)
{
    if (address == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Get_address: address is NULL");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

/* ---- element counts of a status ---- */

/* The received byte count: count_lo plus the 31 high bits beside the
 * cancelled flag (MPICH's layout, see api/status.c). */
static MPI_Count status_bytes(const MPI_Status *s)
{
    return (MPI_Count)(((uint64_t)(uint32_t)s->count_hi_and_cancelled >> 1) << 32 | (uint32_t)s->count_lo);
}

static void status_set_bytes(MPI_Status *s, MPI_Count bytes)
{
    s->count_lo = (int)(uint32_t)bytes;
    s->count_hi_and_cancelled = (int)(((uint32_t)s->count_hi_and_cancelled & 1u) |
                                      (uint32_t)((uint64_t)bytes >> 32) << 1);
}

static int elements(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (status == NULL || status == MPI_STATUS_IGNORE || count == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s", caller, count == NULL ? "count is NULL" : "status is NULL or MPI_STATUS_IGNORE");
    *count = cdn_datatype_elements(dt, status_bytes(status));
    return MPI_SUCCESS;
}

int cdn_MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c = 0;
    int rc = elements(status, datatype, count == NULL ? NULL : &c, "MPI_Get_elements");
    if (rc == MPI_SUCCESS)
        *count = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return rc;
}

int cdn_MPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return elements(status, datatype, count, "MPI_Get_elements_c");
}

int cdn_MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return elements(status, datatype, count, "MPI_Get_elements_x");
}

/* The bytes of `count` basic elements of dt: whole types, then the first
 * elements of one more (found by a scan of its bytes). */
static int set_elements(MPI_Status *status, MPI_Datatype datatype, MPI_Count count, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (status == NULL || status == MPI_STATUS_IGNORE)
        return cdn_err(MPI_ERR_ARG, "%s: status is NULL or MPI_STATUS_IGNORE", caller);
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: count %lld is negative", caller, (long long)count);
    MPI_Count per = dt->size > 0 ? cdn_datatype_elements(dt, dt->size) : 0, bytes = 0;
    if (dt->builtin)  /* a pair type counts as one element here, as in MPICH */
        per = dt->size > 0 ? 1 : 0;
    if (per > 0) {
        bytes = count / per * dt->size;
        MPI_Count want = count % per;
        for (MPI_Count b = 0; want > 0 && b <= dt->size; b++)  /* rare: a partial type */
            if (cdn_datatype_elements(dt, b) == want) {
                bytes += b;
                break;
            }
    }
    status_set_bytes(status, bytes);
    return MPI_SUCCESS;
}

int cdn_MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements");
}

int cdn_MPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements_c");
}

int cdn_MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements_x");
}
