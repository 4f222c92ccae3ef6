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

struct cdn_errhandler;

struct cdn_comm {
    MPI_Comm handle;
    int rank, size;
    _Atomic(struct cdn_errhandler *) errh;
    pthread_mutex_t lock;                   /* name */
    char name[MPI_MAX_OBJECT_NAME];
};

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
