/*
 * Partitioned requests (kind CDN_REQ_PART): partitioned point-to-point
 * (MPI_Psend_init / MPI_Precv_init, part.c) and the partitioned
 * collectives (MPIX_Pbcast_init, MPIX_Pallreduce_init, MPIX_Palltoall_init,
 * pcoll.c).  Every one is a persistent request whose state begins with a
 * struct cdn_part; MPI_Pready*, MPI_Parrived and MPIX_Pbuf_prepare reach
 * the kind through it.  See docs/partitioned.md.
 */
#ifndef CDN_PART_H
#define CDN_PART_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "progress/request.h"

struct cdn_comm;
struct cdn_datatype;
struct cdn_info;
struct cdn_op;

struct cdn_part_kind {
    const char *name;
    bool sends;     /* takes MPI_Pready */
    bool receives;  /* takes MPI_Parrived */
    /* Partition p was marked ready (its flag went 0 -> 1, the caller
     * checked the request and p); any thread, no lock held. */
    void (*ready)(struct cdn_request *r, int p);
    /* Has partition p of the active instance arrived?  Any thread. */
    bool (*arrived)(struct cdn_request *r, int p);
    /* MPIX_Pbuf_prepare on an active request: returns once the receiver's
     * buffer is known ready for this instance (blocking). */
    int (*prepare)(struct cdn_request *r);
    /* The user frees the (inactive) request: take back what is posted on
     * its behalf between instances. */
    void (*user_free)(struct cdn_request *r);
    /* Optional: may a wait poll a moment before it counts as a poller, as
     * for a small MPI_Recv (cdn_request_wait_late)? */
    bool (*waits_late)(const struct cdn_request *r);
};

/* The common head of every partitioned request's state. */
struct cdn_part {
    const struct cdn_part_kind *kind;
    int partitions;          /* the caller's side: send partitions for Pready, receive
                              * partitions for Parrived */
    /* Per partition of a side that takes MPI_Pready: 0 not ready in this
     * instance, nonzero ready (a kind may use values above 1). */
    _Atomic unsigned char *flags;
};

static inline struct cdn_part *cdn_part_of(const struct cdn_request *r)
{
    struct cdn_part *p;
    __builtin_memcpy(&p, r->u.room, sizeof p);
    return p;
}

/* ---- point-to-point (part.c) ---- */

/* MPI_Psend_init / MPI_Precv_init after the bindings' argument checks
 * (peer a rank of comm or MPI_PROC_NULL, tag in 0..MPI_TAG_UB). */
int cdn_part_send_init(const void *buf, int partitions, MPI_Count count,
                       struct cdn_datatype *dt, int dest, int tag, struct cdn_comm *comm,
                       struct cdn_info *info, struct cdn_request **out);
int cdn_part_recv_init(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                       int source, int tag, struct cdn_comm *comm, struct cdn_info *info,
                       struct cdn_request **out);

/* MPI_Pready / MPI_Parrived / MPIX_Pbuf_prepare on a request known to be
 * partitioned; fn names the call in messages. */
int cdn_part_pready(struct cdn_request *r, int p, const char *fn);
int cdn_part_parrived(struct cdn_request *r, int p, int *flag, const char *fn);
int cdn_part_prepare(struct cdn_request *r, const char *fn);
/* MPI_Wait's choice: true when a wait for r may poll a moment first. */
bool cdn_part_waits_late(const struct cdn_request *r);
/* MPI_Request_free of a partitioned request: refused while active. */
int cdn_part_user_free(struct cdn_request *r, const char *fn);

/* What a test reads of a partitioned point-to-point request: its number of
 * transfers (-1 while the plan is not known) and, for a send, how many
 * transfers left before the receiver's ACK had come. */
int cdn_part_transfers(const struct cdn_request *r, long *early);

/* Set every flag back to 0 (an instance starts). */
void cdn_part_flags_clear(struct cdn_part *p);
/* The flags of n partitions, zeroed (NULL when out of memory). */
_Atomic unsigned char *cdn_part_flags_new(int n);

/* ---- collectives (pcoll.c) ---- */

int cdn_part_bcast_init(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                        int root, struct cdn_comm *comm, struct cdn_request **out);
int cdn_part_allreduce_init(const void *sendbuf, void *recvbuf, int partitions,
                            MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op,
                            struct cdn_comm *comm, struct cdn_request **out);
int cdn_part_alltoall_init(const void *sendbuf, void *recvbuf, int partitions,
                           MPI_Count count, struct cdn_datatype *dt, struct cdn_comm *comm,
                           struct cdn_request **out);

#endif
