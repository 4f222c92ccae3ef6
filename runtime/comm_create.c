/*
 * Collective creation of communicators (see comm_create.h).
 *
 * Every construction agrees on a context id first (ctxid.c), over internal
 * exchanges (comm_xchg.c) among exactly the processes that will share it.
 * Processes that end up in different, disjoint communicators of one call
 * (split, create with disjoint groups) may share an id: no process belongs
 * to two of them, so their messages never meet.
 */
#include "runtime/comm_create.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/ctxid.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/info.h"
#include "runtime/topo.h"

static uint64_t prio_of(struct cdn_comm *comm, int tag)
{
    return ((uint64_t)comm->context_id << 32) | (uint32_t)(-tag);
}

static int reduce_intra(void *arg, uint32_t *buf, int nwords)
{
    return cdn_xchg_allreduce(arg, buf, sizeof(uint32_t) * (size_t)nwords, cdn_xchg_band);
}

int cdn_comm_agree_ids(struct cdn_xchg *x, int n, uint32_t *ids, const char *caller)
{
    return cdn_ctxid_alloc(n, prio_of(x->comm, x->tag), reduce_intra, x, ids, caller);
}

int cdn_inter_swap_bcast(struct cdn_inter_link *l, const void *sbuf, size_t sbytes, void *rbuf,
                         size_t rbytes)
{
    int rc = MPI_SUCCESS;
    if (l->local.me == l->leader)
        rc = cdn_xchg_swap(l->bridge, l->peer, l->tag, sbuf, sbytes, rbuf, rbytes);
    return rc != MPI_SUCCESS ? rc : cdn_xchg_bcast(&l->local, rbuf, rbytes, l->leader);
}

static int reduce_inter(void *arg, uint32_t *buf, int nwords)
{
    struct cdn_inter_link *l = arg;
    size_t bytes = sizeof(uint32_t) * (size_t)nwords;
    int rc = cdn_xchg_allreduce(&l->local, buf, bytes, cdn_xchg_band);
    if (rc != MPI_SUCCESS)
        return rc;
    uint32_t other[nwords];
    rc = cdn_inter_swap_bcast(l, buf, bytes, other, bytes);
    if (rc == MPI_SUCCESS)
        cdn_xchg_band(buf, other, bytes);
    return rc;
}

int cdn_comm_agree_ids_inter(struct cdn_inter_link *l, int n, uint32_t *ids, const char *caller)
{
    return cdn_ctxid_alloc(n, prio_of(l->local.comm, l->local.tag), reduce_inter, l, ids, caller);
}

int cdn_comm_make_inter(struct cdn_comm *parent, struct cdn_group *local, struct cdn_group *remote,
                        uint32_t ctx, struct cdn_comm *local_comm, struct cdn_comm **out,
                        const char *caller)
{
    struct cdn_comm *c = cdn_comm_new(local, remote, ctx, local_comm);
    if (c == NULL) {
        cdn_ctxid_free(ctx);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    cdn_comm_set_errh(c, parent != NULL ? cdn_comm_errh(parent)
                                        : cdn_errh_get(MPI_ERRORS_ARE_FATAL));
    *out = c;
    return MPI_SUCCESS;
}

int cdn_comm_make(struct cdn_comm *parent, struct cdn_group *group, uint32_t ctx,
                  struct cdn_comm **out, const char *caller)
{
    return cdn_comm_make_inter(parent, group, NULL, ctx, NULL, out, caller);
}

/* What a duplicate carries over from its parent: attributes (copy
 * callbacks), topology, hints. */
static int dup_contents(struct cdn_comm *parent, struct cdn_comm *c, struct cdn_info *info,
                        bool use_info, const char *caller)
{
    if (parent->topo != NULL && (c->topo = cdn_topo_dup(parent->topo)) == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    pthread_mutex_lock(&parent->lock);
    struct cdn_info *src = use_info ? info : parent->info;
    c->info = src != NULL ? cdn_info_dup(src) : NULL;
    pthread_mutex_unlock(&parent->lock);
    if (src != NULL && c->info == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    return cdn_attr_copy_all(&parent->attrs, parent->handle, &c->attrs, caller);
}

int cdn_comm_dup_prepare(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                         struct cdn_comm **out, const char *caller)
{
    struct cdn_comm *c = NULL, *lc = NULL;
    int rc;
    cdn_group_retain(parent->group);
    if (!parent->inter) {
        rc = cdn_comm_make(parent, parent->group, 0, &c, caller);
    } else {
        rc = cdn_comm_make(parent, parent->group, 0, &lc, caller);
        if (rc != MPI_SUCCESS)
            return rc;
        cdn_group_retain(parent->group);
        cdn_group_retain(parent->remote_group);
        rc = cdn_comm_make_inter(parent, parent->group, parent->remote_group, 0, lc, &c, caller);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    rc = dup_contents(parent, c, info, use_info, caller);
    if (rc != MPI_SUCCESS) {
        cdn_comm_dup_abandon(c, caller);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

void cdn_comm_dup_abandon(struct cdn_comm *c, const char *caller)
{
    cdn_attr_delete_all(&c->attrs, 0, caller);
    cdn_comm_release(c);
}

void cdn_comm_dup_set_ids(struct cdn_comm *c, const uint32_t *ids)
{
    c->context_id = ids[0];
    if (c->inter)
        c->local_comm->context_id = ids[1];
}

int cdn_comm_dup(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                 struct cdn_comm **out, const char *caller)
{
    struct cdn_comm *c;
    int rc = cdn_comm_dup_prepare(parent, info, use_info, &c, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    uint32_t ids[2];
    if (!parent->inter) {
        struct cdn_xchg x;
        cdn_xchg_all(&x, parent, CDN_TAG_CTXID);
        rc = cdn_comm_agree_ids(&x, 1, ids, caller);
    } else {
        struct cdn_inter_link l = {.leader = 0, .bridge = parent, .peer = 0, .tag = CDN_TAG_CTXID};
        cdn_xchg_all(&l.local, parent->local_comm, CDN_TAG_CTXID);
        rc = cdn_comm_agree_ids_inter(&l, 2, ids, caller);
    }
    if (rc != MPI_SUCCESS) {
        cdn_comm_dup_abandon(c, caller);
        return rc;
    }
    cdn_comm_dup_set_ids(c, ids);
    *out = c;
    return MPI_SUCCESS;
}

struct split_entry {
    int color, key, rank;
};

static int by_key(const void *a, const void *b)
{
    const struct split_entry *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int cdn_comm_split(struct cdn_comm *parent, int color, int key, struct cdn_comm **out,
                   const char *caller)
{
    *out = NULL;
    struct split_entry *all = malloc(sizeof *all * (size_t)parent->size);
    if (all == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    struct split_entry mine = {color, key, parent->rank};
    struct cdn_xchg x;
    cdn_xchg_all(&x, parent, CDN_TAG_SPLIT);
    int rc = cdn_xchg_allgather(&x, &mine, all, sizeof mine);
    uint32_t id;
    if (rc == MPI_SUCCESS) {
        x.tag = CDN_TAG_CTXID;
        rc = cdn_comm_agree_ids(&x, 1, &id, caller);
    }
    if (rc != MPI_SUCCESS) {
        free(all);
        return rc;
    }
    if (color == MPI_UNDEFINED) {
        cdn_ctxid_free(id);
        free(all);
        return MPI_SUCCESS;
    }
    int n = 0;
    for (int i = 0; i < parent->size; i++)
        if (all[i].color == color)
            all[n++] = all[i];
    qsort(all, (size_t)n, sizeof *all, by_key);
    struct cdn_group *g = cdn_group_alloc(n);
    if (g == NULL) {
        free(all);
        cdn_ctxid_free(id);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    for (int i = 0; i < n; i++)
        g->world[i] = parent->group->world[all[i].rank];
    free(all);
    cdn_group_locate(g);
    return cdn_comm_make(parent, g, id, out, caller);
}

int cdn_comm_create_on(struct cdn_comm *parent, struct cdn_group *group, struct cdn_comm **out,
                       const char *caller)
{
    *out = NULL;
    struct cdn_xchg x;
    cdn_xchg_all(&x, parent, CDN_TAG_CTXID);
    uint32_t id;
    int rc = cdn_comm_agree_ids(&x, 1, &id, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (group == NULL || group->rank == MPI_UNDEFINED) {
        cdn_ctxid_free(id);
        return MPI_SUCCESS;
    }
    cdn_group_retain(group);
    return cdn_comm_make(parent, group, id, out, caller);
}
