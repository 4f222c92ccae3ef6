/*
 * Bindings that create communicators: dup (and its info and nonblocking
 * forms), split, split_type, create, create_group, create_from_group, and
 * the intercommunicator constructors.  The collective work is in
 * coll/comm_create.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "coll/comm_create.h"
#include "runtime/errhandler.h"
#include "runtime/group.h"
#include "runtime/hwtopo.h"
#include "runtime/info.h"

#define COMM_ARG(var, handle, caller)                       \
    int rc = MPI_SUCCESS;                                   \
    struct cdn_comm *var = cdn_api_comm(handle, caller, &rc); \
    if (var == NULL)                                        \
        return rc

static int intra_only(struct cdn_comm *c, const char *caller)
{
    if (c->inter)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is an intercommunicator; this call "
                       "takes an intracommunicator", caller);
    return MPI_SUCCESS;
}

static int give(struct cdn_comm *c, MPI_Comm *newcomm, const char *caller)
{
    if (c == NULL) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    return cdn_comm_publish(c, newcomm, caller);
}

/* Every form of dup; the nonblocking
 * forms return the duplicate's handle at once, usable only once the request
 * completes (coll/idup.c). */
static int dup_common(MPI_Comm comm, MPI_Info info, bool use_info, MPI_Comm *newcomm,
                      bool nonblocking, MPI_Request *request, const char *caller)
{
    COMM_ARG(c, comm, caller);
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", caller);
    if (nonblocking && request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", caller);
    struct cdn_info *in = NULL;
    if (use_info) {
        in = cdn_info_arg(info, caller, &rc);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    /* A failed dup (a copy callback's error, say) leaves no communicator */
    *newcomm = MPI_COMM_NULL;
    if (!nonblocking) {
        struct cdn_comm *nc;
        rc = cdn_comm_dup(c, in, use_info, &nc, caller);
        return rc != MPI_SUCCESS ? rc : give(nc, newcomm, caller);
    }
    *request = MPI_REQUEST_NULL;
    struct cdn_request *r;
    rc = cdn_comm_idup(c, in, use_info, newcomm, &r, caller);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}

int cdn_MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    return dup_common(comm, MPI_INFO_NULL, false, newcomm, false, NULL, "MPI_Comm_dup");
}

int cdn_MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    return dup_common(comm, info, true, newcomm, false, NULL, "MPI_Comm_dup_with_info");
}

int cdn_MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    return dup_common(comm, MPI_INFO_NULL, false, newcomm, true, request, "MPI_Comm_idup");
}

int cdn_MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                MPI_Request *request)
{
    return dup_common(comm, info, true, newcomm, true, request, "MPI_Comm_idup_with_info");
}

int cdn_MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    COMM_ARG(c, comm, "MPI_Comm_split");
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_split: newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return cdn_err(MPI_ERR_ARG, "MPI_Comm_split: color %d is negative and not "
                       "MPI_UNDEFINED", color);
    struct cdn_comm *nc;
    rc = c->inter ? cdn_comm_split_inter(c, color, key, &nc, "MPI_Comm_split")
                  : cdn_comm_split(c, color, key, &nc, "MPI_Comm_split");
    return rc != MPI_SUCCESS ? rc : give(nc, newcomm, "MPI_Comm_split");
}

/* HW_UNGUIDED: the outermost level that splits every process's part off
 * as a strict subset; every process sees the same colours, so all pick the
 * same level.  *level -1: none does. */
static int unguided_level(struct cdn_comm *c, int *level, int *color)
{
    int *all = malloc(sizeof(int) * (size_t)c->size);
    if (all == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Comm_split_type: out of memory");
    *level = -1;
    struct cdn_xchg x;
    cdn_xchg_all(&x, c, CDN_TAG_SPLIT);
    int rc = MPI_SUCCESS;
    for (int l = 0; l < cdn_hw_nlevels && c->size > 1; l++) {
        int mine;
        if (!cdn_hw_color(cdn_hw_levels[l], &mine))
            mine = -1;
        rc = cdn_xchg_allgather(&x, &mine, all, sizeof mine);
        if (rc != MPI_SUCCESS)
            break;
        bool split = false, defined = true;
        for (int i = 0; i < c->size; i++) {
            split = split || all[i] != all[0];
            defined = defined && all[i] >= 0;
        }
        bool strict = split && defined;
        if (strict) {
            *level = l;
            *color = mine;
            break;
        }
    }
    free(all);
    return rc;
}

/* A hardware resource by its hwloc type name, with or without the
 * "hwloc://" prefix of the MPI-4.1 examples, or "mpi_shared_memory". */
static bool hw_color(const char *value, int *color)
{
    if (strncmp(value, "hwloc://", 8) == 0)
        value += 8;
    return cdn_hw_color(value, color);
}

/* MPI_COMM_TYPE_RESOURCE_GUIDED by process set: the processes of the
 * parent in the set form one communicator (the sets Cadence knows:
 * mpi://WORLD, everybody; mpi://SELF, each process alone). */
static int pset_color(const char *name)
{
    if (strcmp(name, "mpi://WORLD") == 0)
        return 0;
    if (strcmp(name, "mpi://SELF") == 0)
        return cdn_rt.world_rank;
    return MPI_UNDEFINED;
}

int cdn_MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                            MPI_Comm *newcomm)
{
    const char *fn = "MPI_Comm_split_type";
    COMM_ARG(c, comm, fn);
    if (c->inter)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is an intercommunicator; splitting "
                       "by type is erroneous on intercommunicators (MPI-4.1 7.4.2)", fn);
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", fn);
    struct cdn_info *in = cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    int color = MPI_UNDEFINED;
    const char *level = NULL, *pset = NULL;
    char value[MPI_MAX_INFO_VAL];
    switch (split_type) {
    case MPI_UNDEFINED:
        break;
    case MPI_COMM_TYPE_SHARED:
        color = cdn_hw_node_color();
        break;
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED:
        /* processes whose value names no level of their machine get MPI_COMM_NULL */
        if (cdn_info_lookup(in, "mpi_hw_resource_type", value, sizeof value, NULL)) {
            if (hw_color(value, &color))
                level = value;
        } else if (split_type == MPI_COMM_TYPE_RESOURCE_GUIDED &&
                   cdn_info_lookup(in, "mpi_pset_name", value, sizeof value, NULL)) {
            color = pset_color(value);
            if (color != MPI_UNDEFINED)
                pset = value;
        }
        break;
    case MPI_COMM_TYPE_HW_UNGUIDED: {
        int l;
        rc = unguided_level(c, &l, &color);
        if (rc != MPI_SUCCESS)
            return rc;
        if (l >= 0)
            level = cdn_hw_levels[l];
        else
            color = MPI_UNDEFINED;
        break;
    }
    default:
        return cdn_err(MPI_ERR_ARG, "%s: split_type %d is not MPI_COMM_TYPE_SHARED, _HW_GUIDED, "
                       "_HW_UNGUIDED, _RESOURCE_GUIDED nor MPI_UNDEFINED", fn, split_type);
    }
    struct cdn_comm *nc;
    rc = cdn_comm_split(c, color, key, &nc, fn);
    if (rc == MPI_SUCCESS && nc != NULL) {
        rc = cdn_comm_hints_take(&nc->info, in, fn);
        if (rc == MPI_SUCCESS)
            rc = cdn_comm_take_pctx(nc, fn);
        const char *key = level != NULL ? "mpi_hw_resource_type" : "mpi_pset_name";
        const char *val = level != NULL ? level : pset;
        if (rc == MPI_SUCCESS && val != NULL && nc->info == NULL)
            nc->info = cdn_info_new();
        if (rc == MPI_SUCCESS && val != NULL &&
            (nc->info == NULL || cdn_info_set(nc->info, key, val) != MPI_SUCCESS))
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        if (rc != MPI_SUCCESS) {
            cdn_comm_release(nc);
            return rc;
        }
    }
    return rc != MPI_SUCCESS ? rc : give(nc, newcomm, fn);
}

/* Every member of g must be a process of c. */
static int subset_of(struct cdn_group *g, struct cdn_comm *c, const char *caller)
{
    for (int i = 0; i < g->size; i++)
        if (cdn_group_rank_of(c->group, g->world[i]) == MPI_UNDEFINED)
            return cdn_err(MPI_ERR_GROUP, "%s: rank %d of the group (world rank %d) is not in "
                           "the communicator's group", caller, i, g->world[i]);
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    const char *fn = "MPI_Comm_create";
    COMM_ARG(c, comm, fn);
    struct cdn_group *g = cdn_api_group(group, fn, &rc);
    if (g == NULL)
        return rc;
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", fn);
    if ((rc = subset_of(g, c, fn)) != MPI_SUCCESS)
        return rc;
    struct cdn_comm *nc;
    rc = c->inter ? cdn_comm_create_inter(c, g, &nc, fn) : cdn_comm_create_on(c, g, &nc, fn);
    return rc != MPI_SUCCESS ? rc : give(nc, newcomm, fn);
}

/* Among the members of g only, talking on comm's internal context: the
 * participants are g's members as ranks of comm. */
static int group_xchg(struct cdn_comm *comm, struct cdn_group *g, int tag, struct cdn_xchg *x,
                      int **ranks, const char *caller)
{
    int *r = malloc(sizeof(int) * ((size_t)g->size + 1));
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    for (int i = 0; i < g->size; i++)
        r[i] = comm == cdn_comm_world() ? g->world[i] : cdn_group_rank_of(comm->group, g->world[i]);
    *x = (struct cdn_xchg){.comm = comm, .n = g->size, .me = g->rank, .ranks = r, .tag = tag};
    *ranks = r;
    return MPI_SUCCESS;
}

static int create_among(struct cdn_comm *parent, struct cdn_group *g, int tag,
                        struct cdn_comm **out, const char *caller)
{
    *out = NULL;
    if (g->rank == MPI_UNDEFINED)
        return MPI_SUCCESS;  /* not a member: nothing to agree on */
    struct cdn_xchg x;
    int *ranks;
    int rc = group_xchg(parent, g, tag, &x, &ranks, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    uint32_t id;
    rc = cdn_comm_agree_ids(&x, 1, &id, caller);
    free(ranks);
    if (rc != MPI_SUCCESS)
        return rc;
    cdn_group_retain(g);
    return cdn_comm_make(parent, g, id, out, caller);
}

int cdn_MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    const char *fn = "MPI_Comm_create_group";
    COMM_ARG(c, comm, fn);
    if ((rc = intra_only(c, fn)) != MPI_SUCCESS)
        return rc;
    struct cdn_group *g = cdn_api_group(group, fn, &rc);
    if (g == NULL)
        return rc;
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", fn);
    if (tag < 0)
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is negative", fn, tag);
    if ((rc = subset_of(g, c, fn)) != MPI_SUCCESS)
        return rc;
    struct cdn_comm *nc;
    rc = create_among(c, g, cdn_xchg_user_tag(tag), &nc, fn);
    return rc != MPI_SUCCESS ? rc : give(nc, newcomm, fn);
}

/* A string tag as a management tag (FNV-1a). */
static int string_tag(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return cdn_xchg_user_tag((int)(h & 0x3fffffff));
}

static int from_group_args(const char *stringtag, MPI_Info info, MPI_Errhandler errhandler,
                           struct cdn_errhandler **eh, const char *caller)
{
    int rc;
    if (stringtag == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: stringtag is NULL", caller);
    if (strlen(stringtag) >= MPI_MAX_STRINGTAG_LEN)
        return cdn_err(MPI_ERR_ARG, "%s: stringtag is longer than MPI_MAX_STRINGTAG_LEN-1", caller);
    cdn_info_arg(info, caller, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    *eh = cdn_errh_get(errhandler);
    if (*eh == NULL && errhandler != MPI_ERRHANDLER_NULL)
        return cdn_err(MPI_ERR_ERRHANDLER, "%s: 0x%x is not a valid error handler", caller,
                       (unsigned)errhandler);
    if (*eh != NULL && (*eh)->kind == CDN_ERRH_USER && (*eh)->objtype != CDN_OBJ_COMM)
        return cdn_err(MPI_ERR_ERRHANDLER, "%s: error handler 0x%x was not created for "
                       "communicators", caller, (unsigned)errhandler);
    return MPI_SUCCESS;
}

static int finish_from_group(struct cdn_comm *nc, MPI_Info info, struct cdn_errhandler *eh,
                             MPI_Comm *newcomm, const char *caller)
{
    int rc;
    struct cdn_info *in = cdn_info_arg(info, caller, &rc);
    if ((rc = cdn_comm_hints_take(&nc->info, in, caller)) != MPI_SUCCESS ||
        (rc = cdn_comm_take_pctx(nc, caller)) != MPI_SUCCESS) {
        cdn_comm_release(nc);
        return rc;
    }
    if (eh != NULL)
        cdn_comm_set_errh(nc, eh);
    return give(nc, newcomm, caller);
}

int cdn_MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                   MPI_Errhandler errhandler, MPI_Comm *newcomm)
{
    const char *fn = "MPI_Comm_create_from_group";
    int rc = MPI_SUCCESS;
    struct cdn_group *g = cdn_api_group(group, fn, &rc);
    if (g == NULL)
        return rc;
    struct cdn_errhandler *eh;
    if ((rc = from_group_args(stringtag, info, errhandler, &eh, fn)) != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newcomm is NULL", fn);
    if (g->size == 0)  /* nobody to agree with: no communicator (as MPICH) */
        return give(NULL, newcomm, fn);
    if (g->rank == MPI_UNDEFINED)
        return cdn_err(MPI_ERR_GROUP, "%s: the calling process is not in the group", fn);
    struct cdn_comm *nc;
    rc = create_among(cdn_comm_world(), g, string_tag(stringtag), &nc, fn);
    return rc != MPI_SUCCESS ? rc : finish_from_group(nc, info, eh, newcomm, fn);
}

/* ---- intercommunicators ---- */

int cdn_MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                             int remote_leader, int tag, MPI_Comm *newintercomm)
{
    const char *fn = "MPI_Intercomm_create";
    COMM_ARG(c, local_comm, fn);
    if ((rc = intra_only(c, fn)) != MPI_SUCCESS)
        return rc;
    if (newintercomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newintercomm is NULL", fn);
    if (local_leader < 0 || local_leader >= c->size)
        return cdn_err(MPI_ERR_RANK, "%s: local_leader %d is not a rank of local_comm (size %d)",
                       fn, local_leader, c->size);
    if (tag < 0)
        return cdn_err(MPI_ERR_TAG, "%s: tag %d is negative", fn, tag);
    struct cdn_comm *peer = NULL;
    if (c->rank == local_leader) {  /* peer_comm and remote_leader matter at the leader only */
        peer = cdn_api_comm(peer_comm, fn, &rc);
        if (peer == NULL)
            return rc;
        if (remote_leader < 0 || remote_leader >= cdn_comm_peer_size(peer))
            return cdn_err(MPI_ERR_RANK, "%s: remote_leader %d is not a rank of peer_comm "
                           "(size %d)", fn, remote_leader, cdn_comm_peer_size(peer));
    }
    struct cdn_inter_link l = {.leader = local_leader, .bridge = peer, .peer = remote_leader,
                               .tag = cdn_xchg_user_tag(tag)};
    cdn_xchg_all(&l.local, c, CDN_TAG_INTER);
    int n = c->size, rn;
    rc = cdn_inter_swap_bcast(&l, &n, sizeof n, &rn, sizeof rn);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_group *remote = cdn_group_alloc(rn);
    if (remote == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    rc = cdn_inter_swap_bcast(&l, c->group->world, sizeof(int) * (size_t)n, remote->world,
                              sizeof(int) * (size_t)rn);
    if (rc != MPI_SUCCESS) {
        cdn_group_release(remote);
        return rc;
    }
    cdn_group_locate(remote);
    l.local.tag = CDN_TAG_CTXID;
    struct cdn_comm *nc;
    rc = cdn_comm_build_inter(c, &l, c->group, remote, &nc, fn);
    return rc != MPI_SUCCESS ? rc : give(nc, newintercomm, fn);
}

int cdn_MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                         MPI_Group remote_group, int remote_leader,
                                         const char *stringtag, MPI_Info info,
                                         MPI_Errhandler errhandler, MPI_Comm *newintercomm)
{
    const char *fn = "MPI_Intercomm_create_from_groups";
    int rc = MPI_SUCCESS;
    struct cdn_group *lg = cdn_api_group(local_group, fn, &rc);
    struct cdn_group *rg = lg != NULL ? cdn_api_group(remote_group, fn, &rc) : NULL;
    if (rg == NULL)
        return rc;
    struct cdn_errhandler *eh;
    if ((rc = from_group_args(stringtag, info, errhandler, &eh, fn)) != MPI_SUCCESS)
        return rc;
    if (newintercomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newintercomm is NULL", fn);
    if (lg->rank == MPI_UNDEFINED)
        return cdn_err(MPI_ERR_GROUP, "%s: the calling process is not in local_group", fn);
    if (local_leader < 0 || local_leader >= lg->size || remote_leader < 0 ||
        remote_leader >= rg->size)
        return cdn_err(MPI_ERR_RANK, "%s: %s %d is not a rank of its group", fn,
                       local_leader < 0 || local_leader >= lg->size ? "local_leader" : "remote_leader",
                       local_leader < 0 || local_leader >= lg->size ? local_leader : remote_leader);
    struct cdn_comm *world = cdn_comm_world();
    struct cdn_inter_link l = {.leader = local_leader, .bridge = world,
                               .peer = rg->world[remote_leader], .tag = string_tag(stringtag)};
    int *ranks;
    rc = group_xchg(world, lg, string_tag(stringtag), &l.local, &ranks, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    cdn_group_retain(rg);
    struct cdn_comm *nc;
    rc = cdn_comm_build_inter(NULL, &l, lg, rg, &nc, fn);
    free(ranks);
    return rc != MPI_SUCCESS ? rc : finish_from_group(nc, info, eh, newintercomm, fn);
}

int cdn_MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    const char *fn = "MPI_Intercomm_merge";
    COMM_ARG(c, intercomm, fn);
    if (!c->inter)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is not an intercommunicator", fn);
    if (newintracomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newintracomm is NULL", fn);
    struct cdn_inter_link l = {.leader = 0, .bridge = c, .peer = 0, .tag = CDN_TAG_MERGE};
    cdn_xchg_all(&l.local, c->local_comm, CDN_TAG_MERGE);
    int mine = high != 0, theirs;
    rc = cdn_inter_swap_bcast(&l, &mine, sizeof mine, &theirs, sizeof theirs);
    if (rc != MPI_SUCCESS)
        return rc;
    /* the low group first; on a tie, the group holding the lowest world rank of its leader */
    bool first = mine != theirs ? mine < theirs : c->group->world[0] < c->remote_group->world[0];
    l.local.tag = CDN_TAG_CTXID;
    uint32_t id;
    rc = cdn_comm_agree_ids_inter(&l, 1, &id, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_group *a = first ? c->group : c->remote_group, *b = first ? c->remote_group : c->group;
    struct cdn_group *g = cdn_group_alloc(a->size + b->size);
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    memcpy(g->world, a->world, sizeof(int) * (size_t)a->size);
    memcpy(g->world + a->size, b->world, sizeof(int) * (size_t)b->size);
    cdn_group_locate(g);
    struct cdn_comm *nc;
    rc = cdn_comm_make(c, g, id, &nc, fn);
    return rc != MPI_SUCCESS ? rc : give(nc, newintracomm, fn);
}
