/*
 * Bindings of communicator keyvals and attributes (MPI-4.1 7.7) on the
 * generic store of runtime/attr.c (windows': api/win.c), the deprecated MPI-1 forms,
 * and the predefined attributes (MPI_TAG_UB, MPI_HOST, MPI_IO,
 * MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE),
 * which every communicator answers and nobody may set or delete.
 */
#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/p2p.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/runtime.h"

/* The value of a predefined attribute: get_attr hands out a pointer to an
 * int that stays valid (one per keyval, per thread for LASTUSEDCODE's sake). */
static bool predefined(int keyval, void *attribute_val)
{
    static const int tag_ub = CDN_TAG_UB, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime = 0;
    static int universe, appnum;
    static _Thread_local int lastused;
    const int *v;
    switch (keyval) {
    case MPI_TAG_UB: v = &tag_ub; break;
    case MPI_HOST: v = &host; break;
    case MPI_IO: v = &io; break;
    case MPI_WTIME_IS_GLOBAL: v = &wtime; break;
    case MPI_UNIVERSE_SIZE:
        universe = cdn_rt.universe_size > 0 ? cdn_rt.universe_size : cdn_rt.world_size;
        v = &universe;
        break;
    case MPI_APPNUM:
        appnum = cdn_rt.appnum;
        v = &appnum;
        break;
    case MPI_LASTUSEDCODE:
        lastused = cdn_err_last_used_code();
        v = &lastused;
        break;
    default:
        return false;
    }
    *(const int **)attribute_val = v;
    return true;
}

static bool is_predefined(int keyval)
{
    return keyval >= MPI_TAG_UB && keyval <= MPI_APPNUM && (keyval & 1);
}

int cdn_MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                               MPI_Comm_delete_attr_function *delete_fn, int *keyval,
                               void *extra_state)
{
    return cdn_keyval_create(CDN_ATTR_COMM, copy_fn, delete_fn, extra_state, keyval,
                             "MPI_Comm_create_keyval");
}

int cdn_MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                          void *extra_state)
{
    return cdn_keyval_create(CDN_ATTR_COMM, copy_fn, delete_fn, extra_state, keyval,
                             "MPI_Keyval_create");
}

static int free_keyval(int *keyval, const char *caller)
{
    if (keyval != NULL && is_predefined(*keyval))
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x is predefined and cannot be freed",
                       caller, (unsigned)*keyval);
    return cdn_keyval_free(CDN_ATTR_COMM, keyval, caller);
}

int cdn_MPI_Comm_free_keyval(int *keyval)
{
    return free_keyval(keyval, "MPI_Comm_free_keyval");
}

int cdn_MPI_Keyval_free(int *keyval)
{
    return free_keyval(keyval, "MPI_Keyval_free");
}

static int set_attr(MPI_Comm comm, int keyval, void *value, const char *caller)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, caller, &rc);
    if (c == NULL)
        return rc;
    if (is_predefined(keyval))
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x is a predefined attribute, which cannot "
                       "be set", caller, (unsigned)keyval);
    return cdn_attr_set(&c->attrs, CDN_ATTR_COMM, comm, keyval, value, caller);
}

static int get_attr(MPI_Comm comm, int keyval, void *value, int *flag, const char *caller)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, caller, &rc);
    if (c == NULL)
        return rc;
    if (is_predefined(keyval)) {
        if (value == NULL || flag == NULL)
            return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, flag == NULL ? "flag" : "attribute_val");
        *flag = predefined(keyval, value);
        return MPI_SUCCESS;
    }
    return cdn_attr_get(&c->attrs, CDN_ATTR_COMM, keyval, value, flag, caller);
}

static int delete_attr(MPI_Comm comm, int keyval, const char *caller)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, caller, &rc);
    if (c == NULL)
        return rc;
    if (is_predefined(keyval))
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x is a predefined attribute, which cannot "
                       "be deleted", caller, (unsigned)keyval);
    return cdn_attr_delete(&c->attrs, CDN_ATTR_COMM, comm, keyval, caller);
}

int cdn_MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    return set_attr(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}

int cdn_MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return set_attr(comm, keyval, attribute_val, "MPI_Attr_put");
}

int cdn_MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}

int cdn_MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}

int cdn_MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    return delete_attr(comm, comm_keyval, "MPI_Comm_delete_attr");
}

int cdn_MPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return delete_attr(comm, keyval, "MPI_Attr_delete");
}
