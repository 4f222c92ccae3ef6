/*
 * Group objects and their handles (see group.h).  The set operations live
 * in api/group.c; what is here is what communicators need too.
 */
#include "runtime/group.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"
#include "runtime/session.h"

static struct cdn_handle_table groups = CDN_HANDLE_TABLE_INIT(CDN_OBJ_GROUP);
static struct cdn_group empty = {.handle = MPI_GROUP_EMPTY, .size = 0, .rank = MPI_UNDEFINED};

struct cdn_group *cdn_group_alloc(int n)
{
    struct cdn_group *g = malloc(sizeof *g + sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (g == NULL)
        return NULL;
    g->handle = 0;
    atomic_init(&g->refs, 1);
    g->session = NULL;
    g->size = n;
    g->rank = MPI_UNDEFINED;
    return g;
}

void cdn_group_locate(struct cdn_group *g)
{
    g->rank = cdn_group_rank_of(g, cdn_rt.world_rank);
}

struct cdn_group *cdn_group_from(int n, const int *world)
{
    if (n == 0)
        return cdn_group_empty();
    struct cdn_group *g = cdn_group_alloc(n);
    if (g == NULL)
        return NULL;
    memcpy(g->world, world, sizeof(int) * (size_t)n);
    cdn_group_locate(g);
    return g;
}

struct cdn_group *cdn_group_empty(void)
{
    return &empty;
}

void cdn_group_retain(struct cdn_group *g)
{
    if (g != &empty)
        atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void cdn_group_release(struct cdn_group *g)
{
    if (g != NULL && g != &empty && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1) {
        cdn_session_release(g->session);
        free(g);
    }
}

struct cdn_group *cdn_group_get(MPI_Group handle)
{
    if (handle == MPI_GROUP_EMPTY)
        return &empty;
    return cdn_handle_get(&groups, handle);
}

int cdn_group_publish(struct cdn_group *g, MPI_Group *handle, const char *caller)
{
    if (g == &empty) {
        *handle = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    g->handle = cdn_handle_alloc(&groups, g);
    if (g->handle == 0) {
        cdn_group_release(g);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of group handles", caller);
    }
    *handle = g->handle;
    return MPI_SUCCESS;
}

void cdn_group_unpublish(struct cdn_group *g)
{
    if (g == &empty)
        return;
    cdn_handle_free(&groups, g->handle);
    cdn_group_release(g);
}

int cdn_group_rank_of(const struct cdn_group *g, int world_rank)
{
    for (int i = 0; i < g->size; i++)
        if (g->world[i] == world_rank)
            return i;
    return MPI_UNDEFINED;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int cdn_group_compare(const struct cdn_group *a, const struct cdn_group *b)
{
    if (a->size != b->size)
        return MPI_UNEQUAL;
    if (a->size == 0 || memcmp(a->world, b->world, sizeof(int) * (size_t)a->size) == 0)
        return MPI_IDENT;
    int *sa = malloc(sizeof(int) * (size_t)a->size * 2);
    if (sa == NULL)
        return MPI_UNEQUAL;
    int *sb = sa + a->size;
    memcpy(sa, a->world, sizeof(int) * (size_t)a->size);
    memcpy(sb, b->world, sizeof(int) * (size_t)b->size);
    qsort(sa, (size_t)a->size, sizeof(int), cmp_int);
    qsort(sb, (size_t)b->size, sizeof(int), cmp_int);
    int r = memcmp(sa, sb, sizeof(int) * (size_t)a->size) == 0 ? MPI_SIMILAR : MPI_UNEQUAL;
    free(sa);
    return r;
}

void cdn_group_finalize(void)
{
    cdn_handle_table_destroy(&groups);
}
