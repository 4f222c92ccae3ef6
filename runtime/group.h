/*
 * Process groups: an ordered list of processes named by their world rank
 * (MPI_COMM_WORLD rank of the job), plus this process's place in it.
 *
 * A group is immutable once made and reference counted: the user's handle is
 * one reference, every communicator using it another, so MPI_Group_free only
 * forgets the handle.  MPI_GROUP_EMPTY is a static object.
 */
#ifndef CDN_GROUP_H
#define CDN_GROUP_H

#include <mpi.h>
#include <stdatomic.h>

struct cdn_session;

struct cdn_group {
    MPI_Group handle;        /* 0 until published */
    atomic_int refs;
    /* MPI_Group_from_session_pset's session (a reference), which the
     * communicators made from the group derive from; else NULL. */
    struct cdn_session *session;
    int size;
    int rank;                /* this process's rank in the group, or MPI_UNDEFINED */
    int world[];             /* world rank of each member */
};

/* A group of n members with one reference; the caller fills g->world[] and
 * then calls cdn_group_locate.  NULL when out of memory. */
struct cdn_group *cdn_group_alloc(int n);
/* Set g->rank from the members (after filling g->world). */
void cdn_group_locate(struct cdn_group *g);
/* A group of the n world ranks in world[] (copied); NULL when out of memory. */
struct cdn_group *cdn_group_from(int n, const int *world);
struct cdn_group *cdn_group_empty(void);
void cdn_group_retain(struct cdn_group *g);
void cdn_group_release(struct cdn_group *g);
/* The group behind a handle (MPI_GROUP_EMPTY included), or NULL. */
struct cdn_group *cdn_group_get(MPI_Group handle);
/* Give g a user handle (the caller's reference becomes the handle's). */
int cdn_group_publish(struct cdn_group *g, MPI_Group *handle, const char *caller);
/* MPI_Group_free: forget the handle, drop its reference. */
void cdn_group_unpublish(struct cdn_group *g);
/* The rank in g of a world rank, or MPI_UNDEFINED. */
int cdn_group_rank_of(const struct cdn_group *g, int world_rank);
/* MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL. */
int cdn_group_compare(const struct cdn_group *a, const struct cdn_group *b);
/* Free the handle table (finalize). */
void cdn_group_finalize(void);

#endif
