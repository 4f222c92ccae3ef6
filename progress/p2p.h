/*
 * Point-to-point requests: send and receive kinds (and their persistent
 * forms), the composite sendrecv, probe and matched messages, and the self
 * path.  The api/ bindings check arguments and call these; transports call
 * the upcalls declared in transport/transport.h.
 */
#ifndef CDN_P2P_H
#define CDN_P2P_H

#include <limits.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "progress/engine.h"
#include "progress/request.h"
#include "progress/threadq.h"

/* Set by api/p2p.c while an application thread is inside a point-to-point
 * call (a plain flag, no read-modify-write): the progress thread, which
 * preempts the application on the processing unit they share, naps after
 * its work only when it caught the application inside MPI -- posting a
 * window, back in MPI within microseconds -- and not computing, when a
 * message it would not be rung for must wait for the nap (thread.c).
 * With several application threads it is a hint, never a guarantee.  A
 * line of its own (every call writes it); the threads of a thread
 * communicator leave it alone (cdn_p2p_inside): written by all of them at
 * every call, it cost each message a cache-line transfer. */
struct cdn_p2p_inside {
    _Alignas(64) atomic_bool v;
};
extern struct cdn_p2p_inside cdn_p2p_app_inside;

static inline void cdn_p2p_inside(bool inside)
{
    if (__builtin_expect(cdn_tq_nbound == 0, 1))
        atomic_store_explicit(&cdn_p2p_app_inside.v, inside, memory_order_relaxed);
}

/* A nonblocking send or receive of rendezvous size was started by the
 * application (cdn_progress_p2p_started): whether it ends a linger
 * depends on what the application has done after such starts lately. */
static inline void cdn_p2p_started(const struct cdn_request *r)
{
    if ((r->kind == CDN_REQ_SEND || r->kind == CDN_REQ_RECV) &&
        !cdn_progress_comes_eagerly(r->u.p2p.bytes))
        cdn_progress_p2p_started();
}

/* The largest tag (MPI_TAG_UB): tags travel as 32-bit fields. */
#define CDN_TAG_UB INT_MAX
/* Self path: standard sends up to this size are copied at once. */
#define CDN_SELF_EAGER_LIMIT (64 * 1024)

struct cdn_comm;
struct cdn_msg;
struct cdn_wire_hdr;

/* A message from this process's thread-communicator queues
 * (progress/threadq.c), matched as the self path matches: eager with its
 * payload, or a rendezvous carrying its send request (sreq), whose data is
 * copied from the sender's buffer once matched. */
void cdn_p2p_self_arrive(const struct cdn_wire_hdr *h, const void *payload,
                         struct cdn_request *sreq);

/* Make a send request (mode: enum cdn_send_mode); started unless persistent. */
int cdn_p2p_send(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest, int tag,
                 struct cdn_comm *comm, int mode, bool persistent, struct cdn_request **out);
/* Start (an instance of) a send request made by cdn_p2p_send. */
int cdn_p2p_send_start(struct cdn_request *r);
/* Make a receive request; started unless persistent. */
int cdn_p2p_recv(void *buf, MPI_Count count, struct cdn_datatype *dt, int source, int tag,
                 struct cdn_comm *comm, bool persistent, struct cdn_request **out);
/* The receive of a blocking call (MPI_Recv), waited for at once by its
 * caller: it raises no want while posted (request.h, waited). */
int cdn_p2p_recv_waited(void *buf, MPI_Count count, struct cdn_datatype *dt, int source, int tag,
                        struct cdn_comm *comm, struct cdn_request **out);
/* A blocking standard send written at once with no request when the
 * transport can (small, contiguous, another process, nothing queued);
 * false: nothing was sent, take cdn_p2p_send. */
bool cdn_p2p_send_now(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                      int tag, struct cdn_comm *comm);
/* The same two on the communicator's internal context (CDN_COMM_CTX_COLL,
 * see runtime/comm.h): what collectives and communicator management send
 * on a communicator's behalf, invisible to the user's receives.  Standard
 * mode. */
bool cdn_p2p_send_now_internal(const void *buf, MPI_Count count, struct cdn_datatype *dt,
                               int dest, int tag, struct cdn_comm *comm);
int cdn_p2p_send_internal(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                          int tag, struct cdn_comm *comm, bool persistent,
                          struct cdn_request **out);
/* The message of persistent send request sreq (inactive, standard mode)
 * sent as cdn_p2p_send_now would, without starting the request; false:
 * nothing was sent. */
bool cdn_p2p_send_now_of(const struct cdn_request *sreq);
int cdn_p2p_recv_internal(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                          int tag, struct cdn_comm *comm, bool persistent,
                          struct cdn_request **out);
/* Persistent (unstarted) send and receive requests on an explicit
 * matching context ctx of comm: what partitioned requests
 * (partitioned/part.c) send on the communicator's partitioned context
 * (CDN_COMM_CTX_PART).  Standard mode; the receive is urgent (as on the
 * internal context: its sender does not wait for the receiver's next poll). */
int cdn_p2p_send_init_ctx(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                          int tag, struct cdn_comm *comm, uint32_t ctx,
                          struct cdn_request **out);
int cdn_p2p_recv_init_ctx(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                          int tag, struct cdn_comm *comm, uint32_t ctx,
                          struct cdn_request **out);
/* MPIX_Stream_isend / MPIX_Stream_irecv on a multiplexed stream
 * communicator (runtime/stream.h): started requests on matching context
 * ctx (the destination stream's), through progress context pctx (the
 * local stream's).  The receive's src_idx may be -1 (any stream), its
 * tag MPI_ANY_TAG; its status reports the user's tag. */
int cdn_p2p_stream_send(const void *buf, MPI_Count count, struct cdn_datatype *dt, int dest,
                        int tag, int src_idx, uint32_t ctx, int pctx, struct cdn_comm *comm,
                        struct cdn_request **out);
int cdn_p2p_stream_recv(void *buf, MPI_Count count, struct cdn_datatype *dt, int source,
                        int tag, int src_idx, uint32_t ctx, int pctx, struct cdn_comm *comm,
                        struct cdn_request **out);
/* A collective's receive rreq completed: its status's error, or, when it
 * succeeded with fewer bytes than its buffer holds, MPI_ERR_COUNT naming
 * both sizes.  Every receive of a collective is sized from the call's
 * arguments, so a short message means the ranks' counts or datatypes do
 * not match; taking it silently could leave another rank waiting for a
 * message that never comes (a broadcast whose ranks chose different
 * algorithms from their different counts).  A longer message already
 * failed with MPI_ERR_TRUNCATE. */
int cdn_p2p_recv_exact(const struct cdn_request *rreq);
/* MPI_Isendrecv and, with replace, MPI_Isendrecv_replace (the receive
 * lands in a staging buffer copied over sendbuf at completion; recvbuf,
 * recvcount and recvtype are then ignored). */
int cdn_p2p_sendrecv(const void *sendbuf, MPI_Count sendcount, struct cdn_datatype *sendtype,
                     int dest, int sendtag, void *recvbuf, MPI_Count recvcount,
                     struct cdn_datatype *recvtype, int source, int recvtag,
                     struct cdn_comm *comm, bool replace, struct cdn_request **out);
/* One probe attempt (after polling): *flag, and the status of the message
 * found.  With take, the message is removed and returned as a message
 * request in *msg (MPI_Improbe). */
int cdn_p2p_iprobe(struct cdn_comm *comm, int source, int tag, bool take, int *flag,
                   MPI_Status *status, struct cdn_request **msg);
/* Receive a message taken by mprobe (msgreq is consumed). */
int cdn_p2p_mrecv(void *buf, MPI_Count count, struct cdn_datatype *dt, struct cdn_request *msgreq,
                  struct cdn_request **out);
/* A request born complete (MPI_PROC_NULL, MPI_MESSAGE_NO_PROC). */
struct cdn_request *cdn_p2p_done_request(struct cdn_comm *comm, int source);
/* The request of a standard send whose message left at once
 * (cdn_p2p_send_now): complete, with an empty status and no communicator;
 * NULL when out of memory. */
struct cdn_request *cdn_p2p_sent_request(void);

/* Buffered sends (progress/bsend.c).  A buffer is attached to a slot: a
 * communicator's or a session's bsend field, or NULL for the process's
 * buffer (MPI_Buffer_attach).  The slot's pool is made at the first attach
 * and freed by cdn_bsend_pool_free when its owner goes. */
struct cdn_bsend_pool;
int cdn_bsend_attach(struct cdn_bsend_pool **slot, void *buf, MPI_Count size, const char *caller);
/* Wait until every message in the buffer is on its way, then hand it back
 * (NULL and 0 when none is attached). */
int cdn_bsend_detach(struct cdn_bsend_pool **slot, void *buf_addr, MPI_Count *size,
                     const char *caller);
/* Flush: wait until every message in the slot's buffer is on its way. */
int cdn_bsend_flush(struct cdn_bsend_pool **slot);
/* Iflush: a request that completes once every message in the slot's buffer
 * is on its way (at once if none is); NULL when out of memory. */
struct cdn_request *cdn_bsend_iflush(struct cdn_bsend_pool **slot);
/* The owner of slot goes (no message of it can be in flight any more). */
void cdn_bsend_pool_free(struct cdn_bsend_pool **slot);
/* Copy a buffered send's message into the attached buffer and send it from
 * there; the user's request completes at once. */
int cdn_bsend_start(struct cdn_request *r);

#endif
