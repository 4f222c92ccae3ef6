/*
 * Bindings of the group functions (MPI-4.1 7.3): queries, the set
 * operations, rank lists and ranges.  Groups are immutable, so every
 * operation builds a new one from world ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/comm.h"
#include "runtime/group.h"

struct cdn_group *cdn_api_group(MPI_Group group, const char *caller, int *rc)
{
    struct cdn_group *g = cdn_group_get(group);
    if (g == NULL)
        *rc = cdn_err(MPI_ERR_GROUP, "%s: 0x%x is not a valid group%s", caller, (unsigned)group,
                      group == MPI_GROUP_NULL ? " (MPI_GROUP_NULL)" : "");
    return g;
}

#define GROUP_ARG(var, handle, caller)                      \
    int rc = MPI_SUCCESS;                                   \
    struct cdn_group *var = cdn_api_group(handle, caller, &rc); \
    if (var == NULL)                                        \
        return rc

int cdn_MPI_Group_size(MPI_Group group, int *size)
{
    GROUP_ARG(g, group, "MPI_Group_size");
    if (size == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_size: size is NULL");
    *size = g->size;
    return MPI_SUCCESS;
}

int cdn_MPI_Group_rank(MPI_Group group, int *rank)
{
    GROUP_ARG(g, group, "MPI_Group_rank");
    if (rank == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_rank: rank is NULL");
    *rank = g->rank;
    return MPI_SUCCESS;
}

int cdn_MPI_Group_free(MPI_Group *group)
{
    if (group == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_free: group is NULL");
    GROUP_ARG(g, *group, "MPI_Group_free");
    cdn_group_unpublish(g);  /* MPI_GROUP_EMPTY: no effect */
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

int cdn_MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    int rc = MPI_SUCCESS;
    struct cdn_group *a = cdn_api_group(group1, "MPI_Group_compare", &rc);
    struct cdn_group *b = a != NULL ? cdn_api_group(group2, "MPI_Group_compare", &rc) : NULL;
    if (b == NULL)
        return rc;
    if (result == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_compare: result is NULL");
    *result = cdn_group_compare(a, b);
    return MPI_SUCCESS;
}

int cdn_MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                                  int ranks2[])
{
    int rc = MPI_SUCCESS;
    struct cdn_group *a = cdn_api_group(group1, "MPI_Group_translate_ranks", &rc);
    struct cdn_group *b = a != NULL ? cdn_api_group(group2, "MPI_Group_translate_ranks", &rc) : NULL;
    if (b == NULL)
        return rc;
    if (n < 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_translate_ranks: n %d is negative", n);
    if (n > 0 && (ranks1 == NULL || ranks2 == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Group_translate_ranks: %s is NULL",
                       ranks1 == NULL ? "ranks1" : "ranks2");
    for (int i = 0; i < n; i++)
        if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= a->size))
            return cdn_err(MPI_ERR_RANK, "MPI_Group_translate_ranks: ranks1[%d] = %d is not a "
                           "rank of group1 (size %d)", i, ranks1[i], a->size);
    for (int i = 0; i < n; i++)
        ranks2[i] = ranks1[i] == MPI_PROC_NULL ? MPI_PROC_NULL
                                               : cdn_group_rank_of(b, a->world[ranks1[i]]);
    return MPI_SUCCESS;
}

static int publish(struct cdn_group *g, MPI_Group *newgroup, const char *caller)
{
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    cdn_group_locate(g);
    return cdn_group_publish(g, newgroup, caller);
}

/* The members of a selected by keep[] (in a's order), as a new group. */
static int from_mask(const struct cdn_group *a, const char *keep, int extra_n, const int *extra,
                     MPI_Group *newgroup, const char *caller)
{
    int n = extra_n;
    for (int i = 0; i < a->size; i++)
        n += keep[i] != 0;
    if (n == 0) {
        *newgroup = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    struct cdn_group *g = cdn_group_alloc(n);
    if (g != NULL) {
        int k = 0;
        for (int i = 0; i < a->size; i++)
            if (keep[i])
                g->world[k++] = a->world[i];
        for (int i = 0; i < extra_n; i++)
            g->world[k++] = extra[i];
    }
    return publish(g, newgroup, caller);
}

int cdn_MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    GROUP_ARG(g, group, "MPI_Group_incl");
    if (newgroup == NULL || (n > 0 && ranks == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Group_incl: %s is NULL", newgroup == NULL ? "newgroup" : "ranks");
    if (n < 0 || n > g->size)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_incl: n %d is not in 0..%d (the group size)", n, g->size);
    char *seen = calloc((size_t)g->size + 1, 1);
    if (seen == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Group_incl: out of memory");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->size || seen[ranks[i]]) {
            free(seen);
            return cdn_err(MPI_ERR_RANK, "MPI_Group_incl: ranks[%d] = %d is %s", i, ranks[i],
                           ranks[i] < 0 || ranks[i] >= g->size ? "not a rank of the group"
                                                                : "listed twice");
        }
        seen[ranks[i]] = 1;
    }
    free(seen);
    if (n == 0) {
        *newgroup = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    struct cdn_group *ng = cdn_group_alloc(n);
    if (ng != NULL)
        for (int i = 0; i < n; i++)
            ng->world[i] = g->world[ranks[i]];
    return publish(ng, newgroup, "MPI_Group_incl");
}

int cdn_MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    GROUP_ARG(g, group, "MPI_Group_excl");
    if (newgroup == NULL || (n > 0 && ranks == NULL))
        return cdn_err(MPI_ERR_ARG, "MPI_Group_excl: %s is NULL", newgroup == NULL ? "newgroup" : "ranks");
    if (n < 0 || n > g->size)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_excl: n %d is not in 0..%d (the group size)", n, g->size);
    char *keep = malloc((size_t)g->size + 1);
    if (keep == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Group_excl: out of memory");
    memset(keep, 1, (size_t)g->size);
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->size || !keep[ranks[i]]) {
            free(keep);
            return cdn_err(MPI_ERR_RANK, "MPI_Group_excl: ranks[%d] = %d is %s", i, ranks[i],
                           ranks[i] < 0 || ranks[i] >= g->size ? "not a rank of the group"
                                                                : "listed twice");
        }
        keep[ranks[i]] = 0;
    }
    rc = from_mask(g, keep, 0, NULL, newgroup, "MPI_Group_excl");
    free(keep);
    return rc;
}

/* Expand ranges (first, last, stride) into the ranks they name, in order;
 * *out is malloc'd, *count its length. */
static int expand_ranges(const struct cdn_group *g, int n, int ranges[][3], int **out, int *count,
                         const char *caller)
{
    if (n < 0)
        return cdn_err(MPI_ERR_ARG, "%s: n %d is negative", caller, n);
    if (n > 0 && ranges == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: ranges is NULL", caller);
    char *seen = calloc((size_t)g->size + 1, 1);
    int *list = malloc(sizeof(int) * ((size_t)g->size + 1));
    if (seen == NULL || list == NULL) {
        free(seen);
        free(list);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    int k = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || first < 0 || first >= g->size || last < 0 || last >= g->size ||
            (stride > 0 && first > last) || (stride < 0 && first < last)) {
            rc = cdn_err(MPI_ERR_RANK, "%s: range %d (%d, %d, %d) is not a valid range of a "
                         "group of size %d", caller, i, first, last, stride, g->size);
            break;
        }
        for (int r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (seen[r]) {
                rc = cdn_err(MPI_ERR_RANK, "%s: rank %d is named twice by the ranges", caller, r);
                break;
            }
            seen[r] = 1;
            list[k++] = r;
        }
    }
    free(seen);
    if (rc != MPI_SUCCESS) {
        free(list);
        return rc;
    }
    *out = list;
    *count = k;
    return MPI_SUCCESS;
}

int cdn_MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    GROUP_ARG(g, group, "MPI_Group_range_incl");
    if (newgroup == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_range_incl: newgroup is NULL");
    int *list, k;
    rc = expand_ranges(g, n, ranges, &list, &k, "MPI_Group_range_incl");
    if (rc != MPI_SUCCESS)
        return rc;
    if (k == 0) {
        free(list);
        *newgroup = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    struct cdn_group *ng = cdn_group_alloc(k);
    if (ng != NULL)
        for (int i = 0; i < k; i++)
            ng->world[i] = g->world[list[i]];
    free(list);
    return publish(ng, newgroup, "MPI_Group_range_incl");
}

int cdn_MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    GROUP_ARG(g, group, "MPI_Group_range_excl");
    if (newgroup == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_range_excl: newgroup is NULL");
    int *list, k;
    rc = expand_ranges(g, n, ranges, &list, &k, "MPI_Group_range_excl");
    if (rc != MPI_SUCCESS)
        return rc;
    char *keep = malloc((size_t)g->size + 1);
    if (keep == NULL) {
        free(list);
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Group_range_excl: out of memory");
    }
    memset(keep, 1, (size_t)g->size);
    for (int i = 0; i < k; i++)
        keep[list[i]] = 0;
    free(list);
    rc = from_mask(g, keep, 0, NULL, newgroup, "MPI_Group_range_excl");
    free(keep);
    return rc;
}

enum setop { UNION, INTERSECTION, DIFFERENCE };

static int set_op(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup, enum setop op,
                  const char *caller)
{
    int rc = MPI_SUCCESS;
    struct cdn_group *a = cdn_api_group(group1, caller, &rc);
    struct cdn_group *b = a != NULL ? cdn_api_group(group2, caller, &rc) : NULL;
    if (b == NULL)
        return rc;
    if (newgroup == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newgroup is NULL", caller);
    char *keep = malloc((size_t)a->size + 1);
    int *extra = malloc(sizeof(int) * ((size_t)b->size + 1));
    if (keep == NULL || extra == NULL) {
        free(keep);
        free(extra);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    for (int i = 0; i < a->size; i++) {
        bool in_b = cdn_group_rank_of(b, a->world[i]) != MPI_UNDEFINED;
        keep[i] = op == UNION || (op == INTERSECTION ? in_b : !in_b);
    }
    int k = 0;
    if (op == UNION)  /* then b's members not in a, in b's order */
        for (int i = 0; i < b->size; i++)
            if (cdn_group_rank_of(a, b->world[i]) == MPI_UNDEFINED)
                extra[k++] = b->world[i];
    rc = from_mask(a, keep, k, extra, newgroup, caller);
    free(keep);
    free(extra);
    return rc;
}

int cdn_MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(group1, group2, newgroup, UNION, "MPI_Group_union");
}

int cdn_MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(group1, group2, newgroup, INTERSECTION, "MPI_Group_intersection");
}

int cdn_MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(group1, group2, newgroup, DIFFERENCE, "MPI_Group_difference");
}

static int comm_group(MPI_Comm comm, MPI_Group *group, bool remote, const char *caller)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, caller, &rc);
    if (c == NULL)
        return rc;
    if (group == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: group is NULL", caller);
    if (remote && !c->inter)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is not an intercommunicator", caller);
    struct cdn_group *g = remote ? c->remote_group : c->group;
    return publish(cdn_group_from(g->size, g->world), group, caller);
}

int cdn_MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    return comm_group(comm, group, false, "MPI_Comm_group");
}

int cdn_MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    return comm_group(comm, group, true, "MPI_Comm_remote_group");
}
