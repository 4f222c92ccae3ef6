/*
 * Bindings of communicator queries and of freeing: rank, size, names,
 * compare, test_inter, remote size, hints (set/get_info).  Creation is in
 * api/comm_create.c.
 */
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/group.h"
#include "runtime/info.h"

struct cdn_comm *cdn_api_comm(MPI_Comm comm, const char *caller, int *rc)
{
    struct cdn_comm *c = cdn_comm_get(comm);
    if (c == NULL && cdn_comm_handle_pending(comm))
        *rc = cdn_err(MPI_ERR_COMM, "%s: communicator 0x%x comes from MPI_Comm_idup whose "
                      "request has not completed yet", caller, (unsigned)comm);
    else if (c == NULL)
        *rc = cdn_err(MPI_ERR_COMM, "%s: 0x%x is not a valid communicator%s", caller,
                      (unsigned)comm, comm == MPI_COMM_NULL ? " (MPI_COMM_NULL)" : "");
    return c;
}

#define COMM_ARG(var, handle, caller)                       \
    int rc = MPI_SUCCESS;                                   \
    struct cdn_comm *var = cdn_api_comm(handle, caller, &rc); \
    if (var == NULL)                                        \
        return rc

int cdn_MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    COMM_ARG(c, comm, "MPI_Comm_rank");
    if (rank == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_rank: rank is NULL");
    *rank = c->rank;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_size(MPI_Comm comm, int *size)
{
    COMM_ARG(c, comm, "MPI_Comm_size");
    if (size == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_size: size is NULL");
    *size = c->size;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    COMM_ARG(c, comm, "MPI_Comm_remote_size");
    if (size == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_remote_size: size is NULL");
    if (!c->inter)
        return cdn_err(MPI_ERR_COMM, "MPI_Comm_remote_size: the communicator is not an "
                       "intercommunicator");
    *size = c->remote_size;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    COMM_ARG(c, comm, "MPI_Comm_test_inter");
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_test_inter: flag is NULL");
    *flag = c->inter;
    return MPI_SUCCESS;
}

int cdn_api_name_get(pthread_mutex_t *lock, const char *src, char *name, int *resultlen,
                     const char *argname, const char *caller)
{
    if (name == NULL || resultlen == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, name == NULL ? argname : "resultlen");
    pthread_mutex_lock(lock);
    strcpy(name, src);
    pthread_mutex_unlock(lock);
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

int cdn_api_name_set(pthread_mutex_t *lock, char *dst, const char *name, const char *argname,
                     const char *caller)
{
    if (name == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, argname);
    size_t n = strlen(name);
    if (n >= MPI_MAX_OBJECT_NAME)
        return cdn_err(MPI_ERR_ARG, "%s: name of %zu characters is longer than "
                       "MPI_MAX_OBJECT_NAME-1 (%d)", caller, n, MPI_MAX_OBJECT_NAME - 1);
    pthread_mutex_lock(lock);
    memcpy(dst, name, n + 1);
    pthread_mutex_unlock(lock);
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    static pthread_mutex_t none = PTHREAD_MUTEX_INITIALIZER;
    if (comm == MPI_COMM_NULL)  /* MPI-4.1 7.8: the null handle has a name too */
        return cdn_api_name_get(&none, "MPI_COMM_NULL", comm_name, resultlen, "comm_name",
                                "MPI_Comm_get_name");
    COMM_ARG(c, comm, "MPI_Comm_get_name");
    return cdn_api_name_get(&c->lock, c->name, comm_name, resultlen, "comm_name",
                            "MPI_Comm_get_name");
}

int cdn_MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    COMM_ARG(c, comm, "MPI_Comm_set_name");
    return cdn_api_name_set(&c->lock, c->name, comm_name, "comm_name", "MPI_Comm_set_name");
}

int cdn_MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    COMM_ARG(a, comm1, "MPI_Comm_compare");
    struct cdn_comm *b = cdn_api_comm(comm2, "MPI_Comm_compare", &rc);
    if (b == NULL)
        return rc;
    if (result == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_compare: result is NULL");
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (a->inter != b->inter) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int r = cdn_group_compare(a->group, b->group);
    if (a->inter) {
        int rr = cdn_group_compare(a->remote_group, b->remote_group);
        r = rr > r ? rr : r;  /* IDENT < SIMILAR < UNEQUAL: the weaker of the two */
    }
    *result = r == MPI_IDENT ? MPI_CONGRUENT : r;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_free(MPI_Comm *comm)
{
    if (comm == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_free: comm is NULL");
    COMM_ARG(c, *comm, "MPI_Comm_free");
    if (c->builtin)
        return cdn_err(MPI_ERR_COMM, "MPI_Comm_free: %s is predefined and cannot be freed",
                       c->handle == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "MPI_COMM_SELF");
    /* Delete callbacks see the communicator still valid (MPI-4.1 7.7.2). */
    rc = cdn_attr_delete_all(&c->attrs, *comm, "MPI_Comm_free");
    cdn_comm_unpublish(c);  /* destroyed when its pending requests are done */
    *comm = MPI_COMM_NULL;
    return rc;
}

int cdn_MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    COMM_ARG(c, comm, "MPI_Comm_set_info");
    struct cdn_info *in = cdn_info_arg(info, "MPI_Comm_set_info", &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    if (in == NULL)
        return MPI_SUCCESS;
    pthread_mutex_lock(&c->lock);
    rc = cdn_comm_hints_take(&c->info, in, "MPI_Comm_set_info");
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int cdn_MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    COMM_ARG(c, comm, "MPI_Comm_get_info");
    return cdn_comm_hints_report(c, info_used, "MPI_Comm_get_info");
}
