/*
 * Bindings of communicator queries.  Only MPI_COMM_WORLD and MPI_COMM_SELF
 * exist until communicator creation lands (issue [Comms]).
 */
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/comm.h"

struct cdn_comm *cdn_api_comm(MPI_Comm comm, const char *caller, int *rc)
{
    struct cdn_comm *c = cdn_comm_get(comm);
    if (c == NULL)
        *rc = cdn_err(MPI_ERR_COMM, "%s: 0x%x is not a valid communicator%s", caller,
                      (unsigned)comm, comm == MPI_COMM_NULL ? " (MPI_COMM_NULL)" : "");
    return c;
}

int cdn_MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_rank", &rc);
    if (c == NULL)
        return rc;
    if (rank == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_rank: rank is NULL");
    *rank = c->rank;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_size(MPI_Comm comm, int *size)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_size", &rc);
    if (c == NULL)
        return rc;
    if (size == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_size: size is NULL");
    *size = c->size;
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_get_name", &rc);
    if (c == NULL)
        return rc;
    if (comm_name == NULL || resultlen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_get_name: %s is NULL",
                       comm_name == NULL ? "comm_name" : "resultlen");
    pthread_mutex_lock(&c->lock);
    strcpy(comm_name, c->name);
    pthread_mutex_unlock(&c->lock);
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_set_name", &rc);
    if (c == NULL)
        return rc;
    if (comm_name == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_set_name: comm_name is NULL");
    size_t n = strlen(comm_name);
    if (n >= MPI_MAX_OBJECT_NAME)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_set_name: name of %zu characters is longer than "
                       "MPI_MAX_OBJECT_NAME-1 (%d)", n, MPI_MAX_OBJECT_NAME - 1);
    pthread_mutex_lock(&c->lock);
    memcpy(c->name, comm_name, n + 1);
    pthread_mutex_unlock(&c->lock);
    return MPI_SUCCESS;
}
