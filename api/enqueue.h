/*
 * Offload streams -- type "cadence_host_queue", or a GPU stream
 * (api/offload.h) -- and their queues (api/enqueue.c): what the other
 * bindings need of them.
 */
#ifndef CDN_API_ENQUEUE_H
#define CDN_API_ENQUEUE_H

#include <mpi.h>
#include <stdbool.h>

struct cdn_comm;
struct cdn_info;
struct cdn_stream;

/* Give stream s an offload queue of info type `type` (MPIX_Stream_create):
 * "cadence_host_queue", or a GPU stream type of api/offload.h whose handle
 * is info's "value"; any other type is MPI_ERR_UNSUPPORTED_OPERATION. */
int cdn_enqueue_attach(struct cdn_stream *s, struct cdn_info *info, const char *type,
                       const char *fn);
/* Has everything enqueued on s completed? */
bool cdn_enqueue_idle(const struct cdn_stream *s);
/* Wait until it has; the first error of an operation since the last call. */
int cdn_enqueue_synchronize(struct cdn_stream *s);
/* Is c a communicator of a host-queue stream (its MPI_Send and MPI_Recv
 * enqueue)? */
bool cdn_enqueue_comm(const struct cdn_comm *c);
/* MPI_Send / MPI_Recv on such a communicator. */
int cdn_enqueue_send(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm);
int cdn_enqueue_recv(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                     MPI_Comm comm, MPI_Status *status);

/* MPI_Finalize: stop the progress threads MPIX_Start_progress_thread
 * started and the application left running (api/stream.c). */
void cdn_stream_progress_threads_stop(void);

#endif
