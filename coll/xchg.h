/*
 * The small internal exchanges creating objects (communicators, windows)
 * agrees through: broadcast, allreduce and allgather among a set of ranks
 * of a communicator, and a pairwise swap, all blocking and all on the
 * communicator's internal context (CDN_COMM_CTX_COLL) with tags <=
 * CDN_TAG_COMM_BASE, so they never meet user messages nor collectives.
 *
 * The allreduce is the collectives' own (cdn_coll_allreduce_among: the
 * recursive doubling of MPI_Allreduce, as a schedule), with the
 * predefined MPI operations; broadcast and allgather are plain binomial
 * trees and a gather then broadcast.  None needs the communicator's
 * collective state (there is none yet when a communicator is created
 * from nothing: sessions).  The participants are ranks of one
 * communicator: all of them, or a list (MPI_Comm_create_group).
 */
#ifndef CDN_COLL_XCHG_H
#define CDN_COLL_XCHG_H

#include <mpi.h>
#include <stddef.h>

struct cdn_comm;

/* Internal tags of communicator management (all <= CDN_TAG_COMM_BASE). */
enum {
    CDN_TAG_CTXID = -4096,        /* context-id agreement rounds */
    CDN_TAG_SPLIT = -4097,        /* (color, key) allgather of split */
    CDN_TAG_INTER = -4098,        /* intercommunicator leaders and their groups */
    CDN_TAG_MERGE = -4099,
    CDN_TAG_CHECK = -4100,        /* agreement on the outcome of a collective creation */
    CDN_TAG_WIN = -4101,          /* window parts (runtime/win.c, on the window's own comm) */
    CDN_TAG_USER_BASE = -8192,    /* minus a user tag (create_group, intercomm_create) */
    /* below the user tags: MPI_Comm_idup number k of a communicator uses
     * CDN_TAG_IDUP_BASE - 512 * (k % CDN_IDUP_TAGS) .. + 511 (coll/idup.c) */
    CDN_TAG_IDUP_BASE = -0x50000000,
};

#define CDN_IDUP_TAGS 65536

struct cdn_xchg {
    struct cdn_comm *comm;   /* messages travel on its internal context */
    int n;                   /* participants */
    int me;                  /* my index among them */
    const int *ranks;        /* comm rank of participant i; NULL: i itself */
    int tag;
};

/* All of comm's ranks. */
void cdn_xchg_all(struct cdn_xchg *x, struct cdn_comm *comm, int tag);
/* A user tag mapped into the management tag range. */
int cdn_xchg_user_tag(int tag);

int cdn_xchg_send(struct cdn_xchg *x, int to, const void *buf, size_t bytes);
int cdn_xchg_recv(struct cdn_xchg *x, int from, void *buf, size_t bytes);
/* Send to and receive from comm rank `peer` of x->comm at once (no deadlock). */
int cdn_xchg_swap(struct cdn_comm *comm, int peer, int tag, const void *sbuf, size_t sbytes,
                  void *rbuf, size_t rbytes);
int cdn_xchg_bcast(struct cdn_xchg *x, void *buf, size_t bytes, int root);
/* Combine everybody's count elements of a predefined type in buf with a
 * predefined op into everybody's buf. */
int cdn_xchg_allreduce(struct cdn_xchg *x, void *buf, int count, MPI_Datatype type, MPI_Op op);
/* all[i * bytes ..] gets participant i's mine. */
int cdn_xchg_allgather(struct cdn_xchg *x, const void *mine, void *all, size_t bytes);

/* Everybody's mine (mybytes each, may differ) concatenated in participant
 * order into a malloc'd *all of *total bytes; *counts (malloc'd, may be
 * NULL) gets each participant's byte count. */
int cdn_xchg_allgatherv(struct cdn_xchg *x, const void *mine, int mybytes, void **all, int *total,
                        int **counts);

#endif
