/*
 * Bindings of datatype keyvals and attributes (MPI-4.1 7.7.4) on the
 * generic store of runtime/attr.c.  Attributes are copied by MPI_Type_dup
 * (api/type_create.c) and deleted by MPI_Type_free.  Predefined types can
 * carry attributes too; they live until MPI_Finalize.
 */
#include "api/datatype_args.h"
#include "cdn_api_impl.h"
#include "runtime/attr.h"

int cdn_MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                               MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                               void *extra_state)
{
    return cdn_keyval_create(CDN_ATTR_TYPE, type_copy_attr_fn, type_delete_attr_fn, extra_state, type_keyval,
                             "MPI_Type_create_keyval");
}

int cdn_MPI_Type_free_keyval(int *type_keyval)
{
    return cdn_keyval_free(CDN_ATTR_TYPE, type_keyval, "MPI_Type_free_keyval");
}

int cdn_MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", "MPI_Type_set_attr", &dt);
    return rc != MPI_SUCCESS ? rc
                             : cdn_attr_set(&dt->attrs, CDN_ATTR_TYPE, datatype, type_keyval, attribute_val,
                                            "MPI_Type_set_attr");
}

int cdn_MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", "MPI_Type_get_attr", &dt);
    return rc != MPI_SUCCESS ? rc
                             : cdn_attr_get(&dt->attrs, CDN_ATTR_TYPE, type_keyval, attribute_val, flag,
                                            "MPI_Type_get_attr");
}

int cdn_MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", "MPI_Type_delete_attr", &dt);
    return rc != MPI_SUCCESS ? rc
                             : cdn_attr_delete(&dt->attrs, CDN_ATTR_TYPE, datatype, type_keyval,
                                               "MPI_Type_delete_attr");
}
