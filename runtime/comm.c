/*
 * Communicator objects: the predefined two (static: a handle's value picks
 * one, so MPI_COMM_WORLD needs no table lookup), the table of those created
 * at run time, and destruction.
 */
#include "runtime/comm.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/attr.h"
#include "runtime/ctxid.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/handle.h"
#include "runtime/info.h"
#include "runtime/runtime.h"
#include "runtime/session.h"
#include "runtime/stream.h"
#include "runtime/topo.h"

struct cdn_comm cdn_comm_builtin[2] = {
    {.handle = MPI_COMM_WORLD, .lock = PTHREAD_MUTEX_INITIALIZER, .builtin = true},
    {.handle = MPI_COMM_SELF, .lock = PTHREAD_MUTEX_INITIALIZER, .builtin = true},
};
struct cdn_handle_table cdn_comm_table = CDN_HANDLE_TABLE_INIT(CDN_OBJ_COMM);

bool cdn_comm_handle_pending(MPI_Comm handle)
{
    if (!cdn_api_ready() || handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF)
        return false;
    struct cdn_comm *c = cdn_handle_get(&cdn_comm_table, handle);
    return c != NULL && atomic_load_explicit(&c->pending, memory_order_acquire);
}

struct cdn_comm *cdn_comm_world(void)
{
    return &cdn_comm_builtin[0];
}

bool cdn_comm_info_value(struct cdn_comm *comm, const char *key, char *value, int valuelen)
{
    pthread_mutex_lock(&comm->lock);
    bool found = cdn_info_lookup(comm->info, key, value, valuelen, NULL);
    pthread_mutex_unlock(&comm->lock);
    return found;
}

int cdn_comm_neighbors(struct cdn_comm *comm, int *indegree, const int **sources,
                       int *outdegree, const int **destinations)
{
    struct cdn_topo *t = comm->topo;
    if (t == NULL) {
        *indegree = *outdegree = 0;
        *sources = *destinations = NULL;
        return MPI_ERR_TOPOLOGY;
    }
    *indegree = t->indegree;
    *outdegree = t->outdegree;
    *sources = t->in;
    *destinations = t->out;
    return MPI_SUCCESS;
}

struct cdn_errhandler *cdn_comm_errh(struct cdn_comm *comm)
{
    return atomic_load_explicit(&comm->errh, memory_order_acquire);
}

void cdn_comm_set_errh(struct cdn_comm *comm, struct cdn_errhandler *eh)
{
    cdn_errh_store(&comm->errh, eh);
}

struct cdn_comm *cdn_comm_new(struct cdn_group *group, struct cdn_group *remote, uint32_t ctx,
                              struct cdn_comm *local_comm)
{
    struct cdn_comm *c = calloc(1, sizeof *c);
    if (c == NULL) {
        cdn_group_release(group);
        cdn_group_release(remote);
        if (local_comm != NULL)
            cdn_comm_release(local_comm);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->refs, 1);
    c->group = group;
    c->rank = group->rank;
    c->size = group->size;
    c->context_id = ctx;
    c->inter = remote != NULL;
    c->remote_group = remote;
    c->remote_size = remote != NULL ? remote->size : 0;
    c->world_ranks = remote != NULL ? remote->world : group->world;
    c->local_comm = local_comm;
    return c;
}

/* The collectives' state may hold requests, which hold the communicator
 * (coll/coll.c, "Kept schedules"): drop it with the user's handle
 * (and at the latest when the communicator goes). */
static void coll_drop(struct cdn_comm *c)
{
    if (c->coll_free != NULL)
        c->coll_free(c);
    c->coll_free = NULL;
}

struct cdn_bsend_hooks cdn_bsend_hooks;

void cdn_bsend_owner_flush(struct cdn_bsend_pool **slot)
{
    if (*slot != NULL)
        cdn_bsend_hooks.flush(slot);
}

void cdn_bsend_owner_free(struct cdn_bsend_pool **slot)
{
    if (*slot != NULL)
        cdn_bsend_hooks.pool_free(slot);
}

void cdn_comm_destroy(struct cdn_comm *c)
{
    coll_drop(c);
    /* a buffer still attached goes with the communicator: the messages in
     * it held the communicator, so they are all sent (progress/bsend.c) */
    cdn_bsend_owner_free(&c->bsend);
    cdn_session_release(c->session);
    cdn_stream_release(c->stream);
    for (int i = 0; i < c->nstreams; i++)
        cdn_stream_release(c->streams[i]);
    free(c->streams);
    free(c->rank_nstreams);
    cdn_attr_list_discard(&c->attrs);
    cdn_ctxid_free(c->context_id);
    cdn_group_release(c->group);
    cdn_group_release(c->remote_group);
    if (c->local_comm != NULL)
        cdn_comm_release(c->local_comm);
    cdn_info_destroy(c->info);
    cdn_topo_free(c->topo);
    struct cdn_errhandler *eh = atomic_exchange(&c->errh, NULL);
    if (eh != NULL)
        cdn_errh_release(eh);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int cdn_comm_publish(struct cdn_comm *c, MPI_Comm *handle, const char *caller)
{
    c->handle = cdn_handle_alloc(&cdn_comm_table, c);
    if (c->handle == 0) {
        cdn_comm_release(c);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of communicator handles", caller);
    }
    *handle = c->handle;
    return MPI_SUCCESS;
}

void cdn_comm_unpublish(struct cdn_comm *c)
{
    coll_drop(c);
    cdn_handle_free(&cdn_comm_table, c->handle);
    cdn_comm_release(c);
}

int cdn_comm_live(void)
{
    return atomic_load(&cdn_comm_table.live);
}

int cdn_comm_init_builtin(int world_rank, int world_size)
{
    static const char *names[2] = {"MPI_COMM_WORLD", "MPI_COMM_SELF"};
    cdn_ctxid_reset();
    struct cdn_group *wg = cdn_group_alloc(world_size);
    struct cdn_group *sg = cdn_group_alloc(1);
    if (wg == NULL || sg == NULL) {
        cdn_group_release(wg);
        cdn_group_release(sg);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < world_size; i++)
        wg->world[i] = i;
    wg->rank = world_rank;
    sg->world[0] = world_rank;
    sg->rank = 0;
    cdn_comm_builtin[0].group = wg;
    cdn_comm_builtin[1].group = sg;
    cdn_comm_builtin[0].rank = world_rank;
    cdn_comm_builtin[0].size = world_size;
    cdn_comm_builtin[1].rank = 0;
    cdn_comm_builtin[1].size = 1;
    cdn_comm_builtin[0].context_id = 0;  /* even ids: point-to-point; odd: the comm's internal traffic */
    cdn_comm_builtin[1].context_id = 2;
    cdn_comm_builtin[0].world_ranks = NULL;
    cdn_comm_builtin[1].world_ranks = sg->world;
    for (int i = 0; i < 2; i++) {
        strcpy(cdn_comm_builtin[i].name, names[i]);
        atomic_store(&cdn_comm_builtin[i].errh, NULL);
        cdn_comm_set_errh(&cdn_comm_builtin[i], cdn_errh_get(MPI_ERRORS_ARE_FATAL));
    }
    return MPI_SUCCESS;
}

void cdn_comm_drop_coll_builtin(void)
{
    for (int i = 0; i < 2; i++) {
        coll_drop(&cdn_comm_builtin[i]);
        /* MPI_Comm_attach_buffer's messages go out while progress can send them */
        cdn_bsend_owner_flush(&cdn_comm_builtin[i].bsend);
    }
}

void cdn_comm_finalize_builtin(void)
{
    for (int i = 0; i < 2; i++) {
        struct cdn_comm *c = &cdn_comm_builtin[i];
        coll_drop(c);
        c->coll = NULL;
        cdn_attr_list_discard(&c->attrs);
        cdn_info_destroy(c->info);
        c->info = NULL;
        cdn_group_release(c->group);
        c->group = NULL;
        cdn_bsend_owner_free(&c->bsend);
        struct cdn_errhandler *old = atomic_exchange(&c->errh, NULL);
        if (old != NULL)
            cdn_errh_release(old);
    }
    cdn_handle_table_destroy(&cdn_comm_table);
}

/* ---- thread communicators: which view each thread has ---- */

#define THREAD_BINDS 8
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
    const struct cdn_comm *shell;
    struct cdn_comm *view;
} binds[THREAD_BINDS];

struct cdn_comm *cdn_comm_thread_view(const struct cdn_comm *shell)
{
    for (int i = 0; i < THREAD_BINDS; i++)
        if (binds[i].shell == shell)
            return binds[i].view;
    return NULL;
}

bool cdn_comm_thread_bind(const struct cdn_comm *shell, struct cdn_comm *view)
{
    for (int i = 0; i < THREAD_BINDS; i++)
        if (binds[i].shell == NULL || binds[i].shell == shell) {
            binds[i].shell = shell;
            binds[i].view = view;
            return true;
        }
    return false;
}

void cdn_comm_thread_unbind(const struct cdn_comm *shell)
{
    for (int i = 0; i < THREAD_BINDS; i++)
        if (binds[i].shell == shell)
            binds[i].shell = NULL;
}
