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
#include <stdint.h>

struct cdn_errhandler;

struct cdn_comm {
    MPI_Comm handle;
    int rank, size;
    uint32_t context_id;                    /* point-to-point matching context */
    const int *world_ranks;                 /* rank i is world rank world_ranks[i]; NULL: i */
    _Atomic(struct cdn_errhandler *) errh;
    pthread_mutex_t lock;                   /* name */
    char name[MPI_MAX_OBJECT_NAME];
};

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
