/* Communicator attributes (copy/delete callbacks at dup, free and
 * overwrite; the predefined copy functions; predefined attributes), window
 * keyvals, and info objects (every MPI_Info_ call, MPI_INFO_ENV, hints on
 * communicators). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int copies, deletes, last_deleted;

static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldcomm, (void)keyval;
    CHECK(extra == &copies, "extra_state reaches the copy callback");
    copies++;
    *(void **)out = (void *)((char *)in + 1);  /* the copy is value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    deletes++;
    last_deleted = (int)(long)value;
    return MPI_SUCCESS;
}

static void test_attrs(void)
{
    int kv, kv_dup, kv_null;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &copies);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dup, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv_null, NULL);
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_attr(a, kv, (void *)10L);
    MPI_Comm_set_attr(a, kv_dup, (void *)20L);
    MPI_Comm_set_attr(a, kv_null, (void *)30L);
    void *v;
    int flag;
    MPI_Comm_get_attr(a, kv, &v, &flag);
    CHECK(flag && v == (void *)10L, "get what was set");
    MPI_Comm_set_attr(a, kv, (void *)11L);  /* overwrite: the old value is deleted */
    CHECK(deletes == 1 && last_deleted == 10, "overwrite deletes the old value (%d, %d)", deletes,
          last_deleted);
    MPI_Comm_dup(a, &b);
    CHECK(copies == 1, "dup ran the copy callback once (%d)", copies);
    MPI_Comm_get_attr(b, kv, &v, &flag);
    CHECK(flag && v == (void *)12L, "copied value %ld", (long)v);
    MPI_Comm_get_attr(b, kv_dup, &v, &flag);
    CHECK(flag && v == (void *)20L, "MPI_COMM_DUP_FN copies the value");
    MPI_Comm_get_attr(b, kv_null, &v, &flag);
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN does not copy");
    deletes = 0;
    MPI_Comm_free(&b);
    CHECK(deletes == 1 && last_deleted == 12, "free deletes b's attribute (%d)", deletes);
    MPI_Comm_delete_attr(a, kv_null);
    CHECK(deletes == 2 && last_deleted == 30, "delete_attr runs the callback");
    /* a freed keyval lives on while attributes use it */
    MPI_Comm_free_keyval(&kv);
    CHECK(kv == MPI_KEYVAL_INVALID, "free_keyval resets the handle");
    MPI_Comm_free(&a);
    CHECK(deletes == 3 && last_deleted == 11, "free after free_keyval still deletes (%d)", deletes);
    MPI_Comm_free_keyval(&kv_dup);
    MPI_Comm_free_keyval(&kv_null);

    /* the deprecated MPI-1 forms */
    int old;
    MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &old, NULL);
    MPI_Attr_put(MPI_COMM_WORLD, old, (void *)5L);
    MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag);
    CHECK(flag && v == (void *)5L, "Attr_put/get");
    MPI_Attr_delete(MPI_COMM_WORLD, old);
    MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag);
    CHECK(!flag, "Attr_delete");
    MPI_Keyval_free(&old);

    /* predefined attributes */
    int *p, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag);
    CHECK(flag && *p >= 32767, "MPI_TAG_UB %d", flag ? *p : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag);
    CHECK(flag && *p == MPI_PROC_NULL, "MPI_HOST");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag);
    CHECK(flag && *p == MPI_ANY_SOURCE, "MPI_IO");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag);
    CHECK(flag && (*p == 0 || *p == 1), "MPI_WTIME_IS_GLOBAL");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag);
    CHECK(flag && *p >= size, "MPI_UNIVERSE_SIZE %d", flag ? *p : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag);
    CHECK(flag && *p == 0, "MPI_APPNUM %d", flag ? *p : -1);
    int cls;
    MPI_Add_error_class(&cls);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag);
    CHECK(flag && *p >= cls, "MPI_LASTUSEDCODE %d >= %d", flag ? *p : -1, cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL), c;
    MPI_Error_class(rc, &c);
    CHECK(c == MPI_ERR_KEYVAL, "setting MPI_TAG_UB: class %d", c);

    /* keyvals of another kind are rejected */
    int tkv, wkv;
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &tkv, NULL);
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, tkv, NULL);
    MPI_Error_class(rc, &c);
    CHECK(c == MPI_ERR_KEYVAL, "a datatype keyval on a communicator: class %d", c);
    MPI_Type_free_keyval(&tkv);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &wkv, NULL);
    CHECK(wkv != MPI_KEYVAL_INVALID, "window keyval created");
    MPI_Win_free_keyval(&wkv);
    CHECK(wkv == MPI_KEYVAL_INVALID, "window keyval freed");

    /* attributes on MPI_COMM_SELF are deleted at the start of MPI_Finalize */
    int self_kv;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &self_kv, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, self_kv, (void *)77L);
    MPI_Comm_free_keyval(&self_kv);  /* lives on with the attribute */
}

static void test_info(void)
{
    MPI_Info info, dup;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "beta", "two");
    MPI_Info_set(info, "alpha", "one");  /* replaces */
    int n, flag, len;
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 2, "two keys (%d)", n);
    char key[MPI_MAX_INFO_KEY], val[MPI_MAX_INFO_VAL];
    MPI_Info_get_nthkey(info, 0, key);
    CHECK(strcmp(key, "alpha") == 0, "first key %s", key);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(strcmp(key, "beta") == 0, "second key %s", key);
    MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "one") == 0, "alpha = %s", val);
    MPI_Info_get_valuelen(info, "beta", &len, &flag);
    CHECK(flag && len == 3, "valuelen %d", len);
    len = 2;
    MPI_Info_get_string(info, "beta", &len, val, &flag);
    CHECK(flag && len == 4 && strcmp(val, "t") == 0, "get_string truncates and reports %d (%s)",
          len, val);
    len = 0;
    MPI_Info_get_string(info, "gamma", &len, NULL, &flag);
    CHECK(!flag, "missing key");
    MPI_Info_dup(info, &dup);
    MPI_Info_delete(info, "alpha");
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 1, "delete leaves one key");
    MPI_Info_get(dup, "alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "one") == 0, "the dup keeps its own copy");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Info_delete(info, "alpha"), c;
    MPI_Error_class(rc, &c);
    CHECK(c == MPI_ERR_INFO_NOKEY, "deleting a missing key: class %d", c);
    rc = MPI_Info_set(info, "", "x");
    MPI_Error_class(rc, &c);
    CHECK(c == MPI_ERR_INFO_KEY, "empty key: class %d", c);
    rc = MPI_Info_get_nkeys(MPI_INFO_NULL, &n);
    MPI_Error_class(rc, &c);
    CHECK(c == MPI_ERR_INFO, "MPI_INFO_NULL: class %d", c);

    /* MPI_INFO_ENV */
    len = sizeof val;
    MPI_Info_get_string(MPI_INFO_ENV, "command", &len, val, &flag);
    CHECK(flag && strstr(val, "t_attr_info") != NULL, "INFO_ENV command %s", flag ? val : "-");
    len = sizeof val;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info_get_string(MPI_INFO_ENV, "maxprocs", &len, val, &flag);
    CHECK(flag && atoi(val) == size, "INFO_ENV maxprocs %s", flag ? val : "-");
    len = sizeof val;
    MPI_Info_get_string(MPI_INFO_ENV, "thread_level", &len, val, &flag);
    CHECK(flag && strncmp(val, "MPI_THREAD_", 11) == 0, "INFO_ENV thread_level %s", flag ? val : "-");
    MPI_Info env;
    MPI_Info_create_env(0, NULL, &env);
    MPI_Info_get_nkeys(env, &n);
    CHECK(n >= 4, "create_env has %d keys", n);
    MPI_Info_free(&env);

    /* hints on communicators (t_comm_info checks each standard key): Cadence
     * keeps its own cadence_ keys, ignores keys it does not know, and a dup
     * carries no hints */
    MPI_Comm c1, c2;
    MPI_Info_set(dup, "cadence_alpha", "one");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, dup, &c1);
    MPI_Info used;
    MPI_Comm_get_info(c1, &used);
    MPI_Info_get(used, "cadence_alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "one") == 0, "dup_with_info hint cadence_alpha=%s",
          flag ? val : "-");
    MPI_Info_get(used, "alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(!flag, "dup_with_info: unknown key alpha reported (%s)", flag ? val : "-");
    MPI_Info_free(&used);
    MPI_Info_set(info, "cadence_gamma", "3");
    MPI_Comm_set_info(c1, info);
    MPI_Comm_get_info(c1, &used);
    MPI_Info_get(used, "cadence_gamma", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "3") == 0, "set_info: cadence_gamma=%s", flag ? val : "-");
    MPI_Info_free(&used);
    MPI_Comm_dup(c1, &c2);  /* hints are not carried over */
    MPI_Comm_get_info(c2, &used);
    MPI_Info_get(used, "cadence_gamma", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(!flag, "dup carried cadence_gamma=%s", flag ? val : "-");
    MPI_Info_free(&used);
    MPI_Comm_free(&c2);
    MPI_Comm_free(&c1);
    MPI_Info_free(&dup);
    MPI_Info_free(&info);
    CHECK(info == MPI_INFO_NULL, "free sets MPI_INFO_NULL");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_attrs();
    test_info();
    deletes = 0;
    MPI_Finalize();
    /* MPI_Finalize deleted MPI_COMM_SELF's attribute */
    CHECK(deletes == 1 && last_deleted == 77, "MPI_Finalize deleted SELF's attribute (%d)", deletes);
    return check_summary("t_attr_info");
}
