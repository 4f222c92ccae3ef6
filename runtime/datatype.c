/*
 * Datatype objects: the handle table of derived types, lookup and argument
 * checks, reference counting, the size/bound queries, element counting and
 * the engine's init/finalize.
 *
 * A derived type starts with one reference, the user's handle.  In-flight
 * operations and types built on it (through their get_contents record) take
 * more; the object, its handle and its layout go away with the last one, so
 * MPI_Type_free while a send is pending is safe.  Builtin objects are
 * static and never counted.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/attr.h"
#include "runtime/datatype_impl.h"
#include "runtime/error.h"
#include "runtime/handle.h"

struct cdn_handle_table cdn_datatype_table = CDN_HANDLE_TABLE_INIT(CDN_OBJ_DATATYPE);

struct cdn_datatype *cdn_datatype_new(void)
{
    struct cdn_datatype *dt = calloc(1, sizeof *dt);
    if (dt == NULL)
        return NULL;
    atomic_init(&dt->refs, 1);
    pthread_mutex_init(&dt->lock, NULL);
    dt->align = 1;
    dt->handle = MPI_DATATYPE_NULL;
    return dt;
}

int cdn_datatype_publish(struct cdn_datatype *dt, const char *caller)
{
    int h = cdn_handle_alloc(&cdn_datatype_table, dt);
    if (h == 0)
        return cdn_err(MPI_ERR_INTERN, "%s: out of datatype handles or memory", caller);
    dt->handle = h;
    return MPI_SUCCESS;
}

int cdn_datatype_record(struct cdn_datatype *dt, int combiner, MPI_Count ni, MPI_Count na, MPI_Count nc,
                        MPI_Count nd, const char *caller)
{
    dt->combiner = combiner;
    dt->ni = (int)ni, dt->na = (int)na, dt->nc = (int)nc, dt->nd = 0;
    dt->ints = calloc((size_t)ni + 1, sizeof *dt->ints);
    dt->aints = calloc((size_t)na + 1, sizeof *dt->aints);
    dt->counts = calloc((size_t)nc + 1, sizeof *dt->counts);
    dt->types = calloc((size_t)nd + 1, sizeof *dt->types);
    if (!dt->ints || !dt->aints || !dt->counts || !dt->types)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    dt->large = nc > 0;
    return MPI_SUCCESS;
}

void cdn_datatype_record_type(struct cdn_datatype *dt, MPI_Datatype h)
{
    cdn_datatype_retain(cdn_datatype_get(h));
    dt->types[dt->nd++] = h;
}

int cdn_datatype_finish(struct cdn_datatype *dt, int rc, MPI_Datatype *newtype, const char *caller)
{
    if (dt == NULL)
        return rc != MPI_SUCCESS ? rc : cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    if (rc == MPI_SUCCESS)
        rc = cdn_datatype_publish(dt, caller);
    if (rc != MPI_SUCCESS) {
        cdn_datatype_release(dt);
        return rc;
    }
    *newtype = dt->handle;
    return MPI_SUCCESS;
}

int cdn_datatype_check_fail(MPI_Datatype handle, const char *caller, struct cdn_datatype **out)
{
    struct cdn_datatype *dt = cdn_datatype_get(handle);
    if (handle == MPI_DATATYPE_NULL)
        return cdn_err(MPI_ERR_TYPE, "%s: datatype is MPI_DATATYPE_NULL", caller);
    if (dt == NULL)
        return cdn_err(MPI_ERR_TYPE, "%s: datatype 0x%x is not a valid datatype", caller,
                       (unsigned)handle);
    if (!dt->committed)
        return cdn_err(MPI_ERR_TYPE, "%s: datatype 0x%x is not committed (call MPI_Type_commit)",
                       caller, (unsigned)handle);
    *out = dt;
    return MPI_SUCCESS;
}

void cdn_datatype_destroy(struct cdn_datatype *dt)
{
    if (dt->handle != MPI_DATATYPE_NULL)
        cdn_handle_free(&cdn_datatype_table, dt->handle);
    for (int i = 0; i < dt->nd; i++)
        cdn_datatype_release(cdn_datatype_get(dt->types[i]));
    cdn_attr_list_discard(&dt->attrs);
    free(dt->ints);
    free(dt->aints);
    free(dt->counts);
    free(dt->types);
    cdn_dt_node_release(dt->root);
    cdn_du_release(dt->units);
    pthread_mutex_destroy(&dt->lock);
    free(dt);
}

bool cdn_datatype_is_contig(const struct cdn_datatype *dt, MPI_Count count)
{
    if (dt->size == 0 || count <= 0)
        return true;
    return dt->root->kind == CDN_DT_LEAF && (count == 1 || dt->ub - dt->lb == dt->size);
}

MPI_Datatype cdn_datatype_basic(const struct cdn_datatype *dt)
{
    if (dt->builtin)
        return dt->handle;
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    for (int i = 0; i < dt->nd; i++) {
        if (cdn_datatype_is_marker(dt->types[i]))
            continue;
        struct cdn_datatype *t = cdn_datatype_get(dt->types[i]);
        MPI_Datatype b = t != NULL ? cdn_datatype_basic(t) : MPI_DATATYPE_NULL;
        if (b == MPI_DATATYPE_NULL || (basic != MPI_DATATYPE_NULL && b != basic))
            return MPI_DATATYPE_NULL;
        basic = b;
    }
    return basic;
}

MPI_Count cdn_datatype_elements(const struct cdn_datatype *dt, MPI_Count bytes)
{
    if (bytes < 0)
        return MPI_UNDEFINED;
    if (dt->size == 0)
        return 0;
    MPI_Count rest = cdn_du_elements(dt->units, bytes % dt->size);
    if (rest == MPI_UNDEFINED)
        return MPI_UNDEFINED;
    return bytes / dt->size * dt->units->nelems + rest;
}

int cdn_datatype_init(void)
{
    return cdn_datatype_builtin_setup();
}

void cdn_datatype_finalize(void)
{
    cdn_datatype_f90_finalize();
    cdn_datatype_builtin_teardown();
    cdn_handle_table_destroy(&cdn_datatype_table);
}
