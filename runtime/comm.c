/*
 * The predefined communicators.  Their objects are static: a handle's index
 * picks one, so MPI_COMM_WORLD needs no table lookup.
 */
#include "runtime/comm.h"

#include <string.h>

#include "runtime/errhandler.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

static struct cdn_comm builtin[2] = {
    {.handle = MPI_COMM_WORLD, .lock = PTHREAD_MUTEX_INITIALIZER},
    {.handle = MPI_COMM_SELF, .lock = PTHREAD_MUTEX_INITIALIZER},
};

struct cdn_comm *cdn_comm_get(MPI_Comm handle)
{
    if (!cdn_api_ready())
        return NULL;
    if (handle == MPI_COMM_WORLD)
        return &builtin[0];
    if (handle == MPI_COMM_SELF)
        return &builtin[1];
    return NULL;
}

bool cdn_comm_info_value(struct cdn_comm *comm, const char *key, char *value, int valuelen)
{
    (void)comm, (void)key, (void)value, (void)valuelen;
    return false;   /* no info object can be set on the predefined communicators yet */
}

int cdn_comm_neighbors(struct cdn_comm *comm, int *indegree, const int **sources,
                       int *outdegree, const int **destinations)
{
    (void)comm;
    *indegree = *outdegree = 0;
    *sources = *destinations = NULL;
    return MPI_ERR_TOPOLOGY;    /* the predefined communicators have no topology */
}

struct cdn_errhandler *cdn_comm_errh(struct cdn_comm *comm)
{
    return atomic_load_explicit(&comm->errh, memory_order_acquire);
}

void cdn_comm_set_errh(struct cdn_comm *comm, struct cdn_errhandler *eh)
{
    cdn_errh_retain(eh);
    struct cdn_errhandler *old = atomic_exchange(&comm->errh, eh);
    if (old != NULL)
        cdn_errh_release(old);
}

void cdn_comm_init_builtin(int world_rank, int world_size)
{
    static const char *names[2] = {"MPI_COMM_WORLD", "MPI_COMM_SELF"};
    builtin[0].rank = world_rank;
    builtin[0].size = world_size;
    builtin[1].rank = 0;
    builtin[1].size = 1;
    builtin[0].context_id = 0;  /* even ids: point-to-point; odd: the comm's collectives */
    builtin[1].context_id = 2;
    builtin[0].world_ranks = NULL;
    builtin[1].world_ranks = &cdn_rt.world_rank;
    for (int i = 0; i < 2; i++) {
        strcpy(builtin[i].name, names[i]);
        atomic_store(&builtin[i].errh, NULL);
        cdn_comm_set_errh(&builtin[i], cdn_errh_get(MPI_ERRORS_ARE_FATAL));
    }
}

void cdn_comm_finalize_builtin(void)
{
    for (int i = 0; i < 2; i++) {
        struct cdn_errhandler *old = atomic_exchange(&builtin[i].errh, NULL);
        if (old != NULL)
            cdn_errh_release(old);
    }
}
