/*
 * Collective creation of communicators: the context-id agreement over a
 * set of processes (one group, or two groups joined by their leaders), and
 * the constructions every creating call is made of (dup, split, a
 * communicator of a group).
 */
#ifndef CDN_COLL_COMM_CREATE_H
#define CDN_COLL_COMM_CREATE_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "coll/xchg.h"

struct cdn_comm;
struct cdn_group;
struct cdn_info;
struct cdn_request;

/* Two groups that agree through their leaders: each group's participants
 * (local), the leader's index among them, and the communicator the two
 * leaders talk on with the other leader's rank in it. */
struct cdn_inter_link {
    struct cdn_xchg local;
    int leader;
    struct cdn_comm *bridge;
    int peer;
    int tag;
};

/* Agree on n (1 or 2) context ids with every participant of x. */
int cdn_comm_agree_ids(struct cdn_xchg *x, int n, uint32_t *ids, const char *caller);
/* The same across both groups of a link. */
int cdn_comm_agree_ids_inter(struct cdn_inter_link *l, int n, uint32_t *ids, const char *caller);
/* Leaders swap sbuf/rbuf (sbytes/rbytes), then each leader broadcasts what it
 * received to its group: every process ends with the other group's rbuf. */
int cdn_inter_swap_bcast(struct cdn_inter_link *l, const void *sbuf, size_t sbytes, void *rbuf,
                         size_t rbytes);

/* A new intracommunicator of group (the caller's reference is taken) on
 * context ctx, inheriting parent's error handler (parent may be NULL). */
int cdn_comm_make(struct cdn_comm *parent, struct cdn_group *group, uint32_t ctx,
                  struct cdn_comm **out, const char *caller);
/* An intercommunicator: local_comm is an intracommunicator of the local
 * group made by cdn_comm_make (its reference is taken, as are the groups'). */
int cdn_comm_make_inter(struct cdn_comm *parent, struct cdn_group *local, struct cdn_group *remote,
                        uint32_t ctx, struct cdn_comm *local_comm, struct cdn_comm **out,
                        const char *caller);
/* MPI_Comm_dup (copy_attrs: run the copy callbacks; info: the hints of the
 * new communicator, NULL to copy parent's). */
int cdn_comm_dup(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                 struct cdn_comm **out, const char *caller);
/* The parts of a dup: the new object with everything but its context
 * id(s) (0 until agreed: ids[0] its own, ids[1] an intercommunicator's
 * local communicator's), and dropping it when the agreement failed. */
int cdn_comm_dup_prepare(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                         struct cdn_comm **out, const char *caller);
void cdn_comm_dup_set_ids(struct cdn_comm *c, const uint32_t *ids);
void cdn_comm_dup_abandon(struct cdn_comm *c, const char *caller);
/* Run the parent's copy callbacks into the duplicate c (the blocking dup
 * once the ids are agreed, idup at the call). */
int cdn_comm_dup_copy_attrs(struct cdn_comm *parent, struct cdn_comm *c, const char *caller);
/* MPI_Comm_idup(_with_info): *out is published at once but pending
 * (runtime/comm.h) until *req completes; the agreement runs in the
 * background (coll/idup.c). */
int cdn_comm_idup(struct cdn_comm *parent, struct cdn_info *info, bool use_info,
                  MPI_Comm *newcomm, struct cdn_request **req, const char *caller);
/* MPI_Comm_split on an intracommunicator: *out NULL for MPI_UNDEFINED. */
int cdn_comm_split(struct cdn_comm *parent, int color, int key, struct cdn_comm **out,
                   const char *caller);
/* An intercommunicator between local and remote (taken over; local is
 * retained) on ids agreed over the link. */
int cdn_comm_build_inter(struct cdn_comm *parent, struct cdn_inter_link *l,
                         struct cdn_group *local, struct cdn_group *remote, struct cdn_comm **out,
                         const char *caller);
/* MPI_Comm_split / MPI_Comm_create on an intercommunicator (MPI-4.1
 * 7.4.2): an intercommunicator between the local and the remote processes
 * of the same colour / of the two groups given; *out NULL where either part
 * is empty or the process is not in it. */
int cdn_comm_split_inter(struct cdn_comm *parent, int color, int key, struct cdn_comm **out,
                         const char *caller);
int cdn_comm_create_inter(struct cdn_comm *parent, struct cdn_group *group, struct cdn_comm **out,
                          const char *caller);
/* Every process of parent calls: those with member true get a
 * communicator of group (a reference is taken) on an agreed id. */
int cdn_comm_create_on(struct cdn_comm *parent, struct cdn_group *group, struct cdn_comm **out,
                       const char *caller);

#endif
