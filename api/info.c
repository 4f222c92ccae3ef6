/*
 * Bindings of info objects (MPI-4.1 10), callable at any time.  Keys are
 * at most MPI_MAX_INFO_KEY-1 characters, values MPI_MAX_INFO_VAL-1.
 */
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/info.h"

static struct cdn_info *info_arg(MPI_Info handle, const char *caller, int *rc)
{
    struct cdn_info *info = cdn_info_get(handle);
    *rc = MPI_SUCCESS;
    if (info == NULL)
        *rc = cdn_err(MPI_ERR_INFO, "%s: 0x%x is not a valid info object%s", caller,
                      (unsigned)handle, handle == MPI_INFO_NULL ? " (MPI_INFO_NULL)" : "");
    return info;
}

static int key_arg(const char *key, const char *caller)
{
    if (key == NULL)
        return cdn_err(MPI_ERR_INFO_KEY, "%s: key is NULL", caller);
    size_t n = strlen(key);
    if (n == 0 || n >= MPI_MAX_INFO_KEY)
        return cdn_err(MPI_ERR_INFO_KEY, "%s: key of %zu characters is not in 1..%d", caller, n,
                       MPI_MAX_INFO_KEY - 1);
    return MPI_SUCCESS;
}

#define INFO_ARG(var, handle, caller)                         \
    int rc;                                                   \
    struct cdn_info *var = info_arg(handle, caller, &rc);     \
    if (var == NULL)                                          \
        return rc

int cdn_MPI_Info_create(MPI_Info *info)
{
    if (info == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_create: info is NULL");
    struct cdn_info *i = cdn_info_new();
    if (i == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Info_create: out of memory");
    return cdn_info_publish(i, info, "MPI_Info_create");
}

int cdn_MPI_Info_create_env(int argc, char *argv[], MPI_Info *info)
{
    (void)argc, (void)argv;  /* the same facts MPI_INFO_ENV holds */
    if (info == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_create_env: info is NULL");
    struct cdn_info *i = cdn_info_dup(cdn_info_get(MPI_INFO_ENV));
    if (i == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Info_create_env: out of memory");
    return cdn_info_publish(i, info, "MPI_Info_create_env");
}

int cdn_MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    INFO_ARG(i, info, "MPI_Info_dup");
    if (newinfo == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_dup: newinfo is NULL");
    struct cdn_info *d = cdn_info_dup(i);
    if (d == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Info_dup: out of memory");
    return cdn_info_publish(d, newinfo, "MPI_Info_dup");
}

int cdn_MPI_Info_free(MPI_Info *info)
{
    if (info == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_free: info is NULL");
    INFO_ARG(i, *info, "MPI_Info_free");
    if (*info == MPI_INFO_ENV)
        return cdn_err(MPI_ERR_INFO, "MPI_Info_free: MPI_INFO_ENV is predefined and cannot be freed");
    cdn_info_unpublish(i);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

int cdn_MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    INFO_ARG(i, info, "MPI_Info_set");
    if (info == MPI_INFO_ENV)
        return cdn_err(MPI_ERR_INFO, "MPI_Info_set: MPI_INFO_ENV cannot be changed");
    if ((rc = key_arg(key, "MPI_Info_set")) != MPI_SUCCESS)
        return rc;
    if (value == NULL)
        return cdn_err(MPI_ERR_INFO_VALUE, "MPI_Info_set: value is NULL");
    size_t n = strlen(value);
    if (n >= MPI_MAX_INFO_VAL)
        return cdn_err(MPI_ERR_INFO_VALUE, "MPI_Info_set: value of %zu characters is longer than "
                       "MPI_MAX_INFO_VAL-1 (%d)", n, MPI_MAX_INFO_VAL - 1);
    if (cdn_info_set(i, key, value) != MPI_SUCCESS)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Info_set: out of memory");
    return MPI_SUCCESS;
}

int cdn_MPI_Info_delete(MPI_Info info, const char *key)
{
    INFO_ARG(i, info, "MPI_Info_delete");
    if (info == MPI_INFO_ENV)
        return cdn_err(MPI_ERR_INFO, "MPI_Info_delete: MPI_INFO_ENV cannot be changed");
    if ((rc = key_arg(key, "MPI_Info_delete")) != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&i->lock);
    int k = -1;
    for (int j = 0; j < i->n && k < 0; j++)
        if (strcmp(i->e[j].key, key) == 0)
            k = j;
    if (k >= 0) {
        free(i->e[k].key);
        free(i->e[k].value);
        memmove(&i->e[k], &i->e[k + 1], sizeof i->e[0] * (size_t)(i->n - k - 1));
        i->n--;
    }
    pthread_mutex_unlock(&i->lock);
    if (k < 0)
        return cdn_err(MPI_ERR_INFO_NOKEY, "MPI_Info_delete: key \"%s\" is not set", key);
    return MPI_SUCCESS;
}

int cdn_MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    INFO_ARG(i, info, "MPI_Info_get");
    if ((rc = key_arg(key, "MPI_Info_get")) != MPI_SUCCESS)
        return rc;
    if (flag == NULL || (value == NULL && valuelen > 0))
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get: %s is NULL", flag == NULL ? "flag" : "value");
    if (valuelen < 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get: valuelen %d is negative", valuelen);
    /* valuelen excludes the terminating NUL (MPI-4.1 10) */
    *flag = cdn_info_lookup(i, key, value, valuelen + 1, NULL);
    return MPI_SUCCESS;
}

int cdn_MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    INFO_ARG(i, info, "MPI_Info_get_valuelen");
    if ((rc = key_arg(key, "MPI_Info_get_valuelen")) != MPI_SUCCESS)
        return rc;
    if (flag == NULL || valuelen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_valuelen: %s is NULL",
                       flag == NULL ? "flag" : "valuelen");
    *flag = cdn_info_lookup(i, key, NULL, 0, valuelen);
    return MPI_SUCCESS;
}

int cdn_MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
    INFO_ARG(i, info, "MPI_Info_get_string");
    if ((rc = key_arg(key, "MPI_Info_get_string")) != MPI_SUCCESS)
        return rc;
    if (flag == NULL || buflen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_string: %s is NULL", flag == NULL ? "flag" : "buflen");
    if (*buflen > 0 && value == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_string: value is NULL with buflen %d", *buflen);
    int len = 0;
    *flag = cdn_info_lookup(i, key, value, *buflen, &len);
    if (*flag)
        *buflen = len + 1;  /* the size needed, NUL included */
    return MPI_SUCCESS;
}

int cdn_MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    INFO_ARG(i, info, "MPI_Info_get_nkeys");
    if (nkeys == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_nkeys: nkeys is NULL");
    pthread_mutex_lock(&i->lock);
    *nkeys = i->n;
    pthread_mutex_unlock(&i->lock);
    return MPI_SUCCESS;
}

int cdn_MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    INFO_ARG(i, info, "MPI_Info_get_nthkey");
    if (key == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_nthkey: key is NULL");
    pthread_mutex_lock(&i->lock);
    int nkeys = i->n;
    if (n >= 0 && n < nkeys)
        strcpy(key, i->e[n].key);
    pthread_mutex_unlock(&i->lock);
    if (n < 0 || n >= nkeys)
        return cdn_err(MPI_ERR_ARG, "MPI_Info_get_nthkey: n %d is not in 0..%d", n, nkeys - 1);
    return MPI_SUCCESS;
}
