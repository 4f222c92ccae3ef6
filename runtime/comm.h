/*
 * Communicator objects.  Today only the two predefined communicators of a
 * job exist; creation, groups and contexts come with the communicator work
 * (issue [Comms]).
 */
#ifndef CDN_COMM_H
#define CDN_COMM_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct cdn_errhandler;

/*
 * Contexts: a communicator owns two matching contexts.  context_id (even)
 * carries the user's point-to-point traffic; context_id + 1 (CDN_COMM_CTX_COLL)
 * carries everything Cadence sends internally on the communicator's behalf.
 * On that internal context, tags >= 0 belong to collectives (coll/, sched/),
 * tags <= CDN_TAG_COMM_BASE to communicator management (context-id agreement,
 * intercommunicator setup), so the two never match each other's messages.
 */
#define CDN_COMM_CTX_COLL(c) ((c)->context_id + 1)
#define CDN_TAG_COMM_BASE (-4096)

struct cdn_comm {
    MPI_Comm handle;
    int rank, size;
    uint32_t context_id;                    /* point-to-point matching context (even) */
    const int *world_ranks;                 /* rank i is world rank world_ranks[i]; NULL: i */
    _Atomic(struct cdn_errhandler *) errh;
    pthread_mutex_t lock;                   /* name */
    char name[MPI_MAX_OBJECT_NAME];
    /* Collectives' per-communicator state (owned by coll/): created on first
     * use; coll_free, when set, is called once as the communicator is
     * destroyed. */
    void *coll;
    void (*coll_free)(struct cdn_comm *comm);
};

/* The value of info key `key` set on comm (MPI_Comm_set_info, dup_with_info,
 * ...): copies at most valuelen-1 bytes plus NUL into value and returns true,
 * or returns false when the key is not set. */
bool cdn_comm_info_value(struct cdn_comm *comm, const char *key, char *value, int valuelen);

/* Topology neighbours of comm for neighbourhood collectives, in the order
 * MPI_Dist_graph_neighbors / MPI_Cart (-1,+1 per dimension) define; the
 * arrays stay owned by comm.  MPI_ERR_TOPOLOGY when comm has no topology. */
int cdn_comm_neighbors(struct cdn_comm *comm, int *indegree, const int **sources,
                       int *outdegree, const int **destinations);

/* The world rank of a rank of comm (for transports' addressing). */
static inline int cdn_comm_world_rank(const struct cdn_comm *comm, int rank)
{
    return comm->world_ranks != NULL ? comm->world_ranks[rank] : rank;
}

/* The communicator behind a handle, or NULL (invalid, or MPI not ready). */
struct cdn_comm *cdn_comm_get(MPI_Comm handle);
/* The error handler in force on comm (never NULL). */
struct cdn_errhandler *cdn_comm_errh(struct cdn_comm *comm);
/* Replace comm's error handler (takes a reference to eh). */
void cdn_comm_set_errh(struct cdn_comm *comm, struct cdn_errhandler *eh);
/* Set up MPI_COMM_WORLD and MPI_COMM_SELF for this process; undo it. */
void cdn_comm_init_builtin(int world_rank, int world_size);
void cdn_comm_finalize_builtin(void);

#endif
