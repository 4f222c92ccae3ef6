/*
 * Collective creation of communicators (see comm_create.h).
 *
 * Every construction agrees on a context id first (ctxid.c), over internal
 * exchanges (comm_xchg.c) among exactly the processes that will share it.
 * Processes that end up in different, disjoint communicators of one call
 * (split, create with disjoint groups) may share an id: no process belongs
 * to two of them, so their messages never meet.
 */
#include "coll/comm_create.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/ctxid.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/info.h"
#include "runtime/datatype.h"
#include "runtime/op.h"
#include "runtime/session.h"
#include "runtime/stream.h"
#include "runtime/topo.h"

static int reduce_intra(void *arg, uint32_t *buf, int nwords)
{
    return cdn_xchg_allreduce(arg, buf, nwords, MPI_UINT32_T, MPI_BAND);
}

int cdn_comm_agree_ids(struct cdn_xchg *x, int n, uint32_t *ids, const char *caller)
{
    return cdn_ctxid_alloc(n, cdn_ctxid_seed(x->comm->context_id, x->tag), reduce_intra, x, ids,
                           caller);
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
    int rc = cdn_xchg_allreduce(&l->local, buf, nwords, MPI_UINT32_T, MPI_BAND);
    if (rc != MPI_SUCCESS)
        return rc;
    uint32_t other[nwords];
    rc = cdn_inter_swap_bcast(l, buf, bytes, other, bytes);
    if (rc == MPI_SUCCESS)
        cdn_op_reduce(cdn_op_get(MPI_BAND), other, buf, nwords, cdn_datatype_get(MPI_UINT32_T));
    return rc;
}

int cdn_comm_agree_ids_inter(struct cdn_inter_link *l, int n, uint32_t *ids, const char *caller)
{
    return cdn_ctxid_alloc(n, cdn_ctxid_seed(l->local.comm->context_id, l->local.tag), reduce_inter,
                           l, ids, caller);
}

int cdn_comm_make_inter(struct cdn_comm *parent, struct cdn_group *local, struct cdn_group *remote,
                        uint32_t ctx, struct cdn_comm *local_comm, struct cdn_comm **out,
                        const char *caller)
{
    if (parent != NULL && parent->dest_ctx != NULL) {  /* a thread communicator's view */
        cdn_group_release(local);
        cdn_group_release(remote);
        if (local_comm != NULL)
            cdn_comm_release(local_comm);
        cdn_ctxid_free(ctx);
        return cdn_err(MPI_ERR_COMM, "%s: communicators are not made from a thread "
                       "communicator (not supported yet)", caller);
    }
    struct cdn_comm *c = cdn_comm_new(local, remote, ctx, local_comm);
    if (c == NULL) {
        cdn_ctxid_free(ctx);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    cdn_comm_set_errh(c, parent != NULL ? cdn_comm_errh(parent)
                                        : cdn_errh_get(MPI_ERRORS_ARE_FATAL));
    c->pctx = parent != NULL ? parent->pctx : 0;
    /* a stream communicator's children use its stream too (and hold it) */
    c->stream = parent != NULL && !parent->inter ? parent->stream : NULL;
    if (c->stream != NULL)
        cdn_stream_retain(c->stream);
    /* from a session's group, or from a communicator of a session */
    c->session = c->group->session != NULL ? c->group->session
                 : parent != NULL            ? parent->session
                                             : NULL;
    if (c->session != NULL)
        cdn_session_retain(c->session);
    *out = c;
    return MPI_SUCCESS;
}

int cdn_comm_make(struct cdn_comm *parent, struct cdn_group *group, uint32_t ctx,
                  struct cdn_comm **out, const char *caller)
{
    return cdn_comm_make_inter(parent, group, NULL, ctx, NULL, out, caller);
}

/* What a duplicate carries over from its parent before its ids are agreed:
 * topology (attributes: cdn_comm_dup_copy_attrs); the hints of the info
 * argument of the _with_info forms. */
static int dup_contents(struct cdn_comm *parent, struct cdn_comm *c, struct cdn_info *info,
                        bool use_info, const char *caller)
{
    if (parent->topo != NULL && (c->topo = cdn_topo_dup(parent->topo)) == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    /* the parent's hints are not carried over (runtime/comm_hints.c) */
    int rc = use_info ? cdn_comm_hints_take(&c->info, info, caller) : MPI_SUCCESS;
    return rc != MPI_SUCCESS ? rc : cdn_comm_take_pctx(c, caller);
}

int cdn_comm_dup_copy_attrs(struct cdn_comm *parent, struct cdn_comm *c, const char *caller)
{
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
    if (rc == MPI_SUCCESS) {
        cdn_comm_dup_set_ids(c, ids);  /* given back with c from now on */
        /* Copy callbacks run once the ids are agreed: one that fails fails
         * this process's call only, the others took part in the agreement. */
        rc = cdn_comm_dup_copy_attrs(parent, c, caller);
    }
    if (rc != MPI_SUCCESS) {
        cdn_comm_dup_abandon(c, caller);
        return rc;
    }
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

int cdn_comm_build_inter(struct cdn_comm *parent, struct cdn_inter_link *l,
                         struct cdn_group *local, struct cdn_group *remote, struct cdn_comm **out,
                         const char *caller)
{
    for (int i = 0; i < remote->size; i++)
        if (cdn_group_rank_of(local, remote->world[i]) != MPI_UNDEFINED) {
            cdn_group_release(remote);
            return cdn_err(MPI_ERR_GROUP, "%s: world rank %d is in both groups; the groups of an "
                           "intercommunicator are disjoint", caller, remote->world[i]);
        }
    uint32_t ids[2];
    int rc = cdn_comm_agree_ids_inter(l, 2, ids, caller);
    if (rc != MPI_SUCCESS) {
        cdn_group_release(remote);
        return rc;
    }
    struct cdn_comm *lc;
    cdn_group_retain(local);
    rc = cdn_comm_make(parent, local, ids[1], &lc, caller);
    if (rc != MPI_SUCCESS) {
        cdn_ctxid_free(ids[0]);
        cdn_group_release(remote);
        return rc;
    }
    cdn_group_retain(local);
    return cdn_comm_make_inter(parent, local, remote, ids[0], lc, out, caller);
}

/* Split and create on an intercommunicator end here: every process of both
 * groups agrees on two ids (results of one call are disjoint, so they may
 * share them), and a process whose local part (local, a reference of the
 * caller's that is kept) and remote part (remote, taken over) are both
 * non-empty gets the intercommunicator between them; the others nothing. */
static int inter_sub(struct cdn_comm *parent, struct cdn_group *local, struct cdn_group *remote,
                     struct cdn_comm **out, const char *caller)
{
    *out = NULL;
    struct cdn_inter_link l = {.leader = 0, .bridge = parent, .peer = 0, .tag = CDN_TAG_CTXID};
    cdn_xchg_all(&l.local, parent->local_comm, CDN_TAG_CTXID);
    if (local != NULL && remote != NULL && local->rank != MPI_UNDEFINED && remote->size > 0)
        return cdn_comm_build_inter(parent, &l, local, remote, out, caller);
    cdn_group_release(remote);
    uint32_t ids[2];
    int rc = cdn_comm_agree_ids_inter(&l, 2, ids, caller);
    if (rc == MPI_SUCCESS) {
        cdn_ctxid_free(ids[0]);
        cdn_ctxid_free(ids[1]);
    }
    return rc;
}

/* The processes of one side (table of n entries, ranks in `side`) with
 * this colour, in key order, as a group; NULL when out of memory. */
static struct cdn_group *colour_group(struct split_entry *all, int n, int color,
                                      const struct cdn_group *side)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (all[i].color == color)
            all[m++] = all[i];
    qsort(all, (size_t)m, sizeof *all, by_key);
    struct cdn_group *g = cdn_group_alloc(m);
    if (g == NULL)
        return NULL;
    for (int i = 0; i < m; i++)
        g->world[i] = side->world[all[i].rank];
    cdn_group_locate(g);
    return g;
}

int cdn_comm_split_inter(struct cdn_comm *parent, int color, int key, struct cdn_comm **out,
                         const char *caller)
{
    *out = NULL;
    int n = parent->size, rn = parent->remote_size;
    struct split_entry *all = malloc(sizeof *all * (size_t)(n + rn));
    if (all == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    struct split_entry mine = {color, key, parent->rank};
    struct cdn_inter_link l = {.leader = 0, .bridge = parent, .peer = 0, .tag = CDN_TAG_SPLIT};
    cdn_xchg_all(&l.local, parent->local_comm, CDN_TAG_SPLIT);
    int rc = cdn_xchg_allgather(&l.local, &mine, all, sizeof mine);
    if (rc == MPI_SUCCESS)
        rc = cdn_inter_swap_bcast(&l, all, sizeof *all * (size_t)n, all + n,
                                  sizeof *all * (size_t)rn);
    if (rc != MPI_SUCCESS) {
        free(all);
        return rc;
    }
    struct cdn_group *local = NULL, *remote = NULL;
    if (color != MPI_UNDEFINED) {
        local = colour_group(all, n, color, parent->group);
        remote = colour_group(all + n, rn, color, parent->remote_group);
        if (local == NULL || remote == NULL) {
            /* still take part in the agreement, as MPI_UNDEFINED */
            cdn_group_release(local);
            cdn_group_release(remote);
            local = remote = NULL;
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        }
    }
    free(all);
    int rc2 = inter_sub(parent, local, remote, out, caller);
    cdn_group_release(local);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int cdn_comm_create_inter(struct cdn_comm *parent, struct cdn_group *group, struct cdn_comm **out,
                          const char *caller)
{
    *out = NULL;
    struct cdn_inter_link l = {.leader = 0, .bridge = parent, .peer = 0, .tag = CDN_TAG_SPLIT};
    cdn_xchg_all(&l.local, parent->local_comm, CDN_TAG_SPLIT);
    int n = group->size, rn;
    int rc = cdn_inter_swap_bcast(&l, &n, sizeof n, &rn, sizeof rn);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_group *remote = cdn_group_alloc(rn);
    if (remote == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    rc = cdn_inter_swap_bcast(&l, group->world, sizeof(int) * (size_t)n, remote->world,
                              sizeof(int) * (size_t)rn);
    if (rc != MPI_SUCCESS) {
        cdn_group_release(remote);
        return rc;
    }
    cdn_group_locate(remote);
    return inter_sub(parent, n > 0 ? group : NULL, remote, out, caller);
}
