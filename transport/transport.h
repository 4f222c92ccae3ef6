/*
 * The one transport interface.  Like a libfabric provider, a transport
 * fills one ops table and nothing else reaches into it; the engine calls
 * the table, the transport calls back up through the p2p upcalls at the end
 * of this file.
 *
 * Division of work: matching and MPI semantics live in progress/; a
 * transport moves matched-or-not messages between processes and chooses how
 * to move bulk data (eager copy through cells, rendezvous by CMA, a
 * pipelined copy, RDMA get), because that choice depends on what the
 * hardware and the kernel allow.
 */
#ifndef CDN_TRANSPORT_H
#define CDN_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cdn_request;
struct cdn_transport;

/* The match header every transport carries with a message. */
struct cdn_wire_hdr {
    uint32_t ctx;       /* communicator context id */
    int32_t src;        /* sender's rank in that communicator */
    int32_t tag;
    uint32_t flags;     /* CDN_WIRE_* */
    uint64_t bytes;     /* size of the whole message */
    uint64_t cookie;    /* the sender's request, echoed back in acks and FIN */
};

#define CDN_WIRE_SYNC 0x1   /* the sender waits for a match (MPI_Ssend) */
#define CDN_WIRE_RNDV 0x2   /* only the header came: the data is pulled after a match */

struct cdn_transport_ops {
    const char *name;
    /* Open endpoints and publish addresses (before the PMIx fence). */
    int (*init)(struct cdn_transport *tp);
    /* Attach to / connect the peers (after the fence). */
    int (*wireup)(struct cdn_transport *tp);
    bool (*reaches)(struct cdn_transport *tp, int world_rank);
    /* Send the message of a send request: eager or rendezvous, queued if
     * the channel is full.  Completion comes back through cdn_p2p_send_done. */
    int (*send)(struct cdn_transport *tp, struct cdn_request *sreq);
    /* Optional: a blocking standard send of len <= eager_limit contiguous
     * bytes, written now with no request (header h, cookie 0); false when
     * it cannot go at once (messages queued for the peer, a full channel),
     * and the caller takes the ordinary path.  lazy: the message is on a
     * user's context (cdn_p2p_send_lazy), else on a communicator's
     * internal one, where a receive may be urgent. */
    bool (*send_now)(struct cdn_transport *tp, int peer, const struct cdn_wire_hdr *h,
                     const void *data, size_t len, bool lazy);
    /* A receive matched a rendezvous header: move the data into it, then
     * cdn_p2p_recv_done (and tell the sender). */
    int (*pull)(struct cdn_transport *tp, struct cdn_request *rreq);
    /* A synchronous eager message was matched: tell its sender. */
    int (*ack)(struct cdn_transport *tp, int peer, uint64_t cookie);
    /* Ask the receiver to drop a send's message (named by the wire_id the
     * transport gave it when it wrote the header) if it is still unmatched;
     * the answer comes as cdn_p2p_send_cancelled (NULL: sends cannot be
     * cancelled on this transport). */
    int (*cancel)(struct cdn_transport *tp, struct cdn_request *sreq);
    /* Process what arrived; returns the number of events handled. */
    int (*poll)(struct cdn_transport *tp);
    /* Anything for poll to do?  A lock-free look, any thread, may err on
     * the side of true (NULL: always poll). */
    bool (*busy)(struct cdn_transport *tp);
    /* The fd that becomes readable when something arrives (-1: none). */
    int (*fd)(struct cdn_transport *tp);
    /* About to sleep: ask peers to ring the doorbell.  Returns > 0 when work
     * is already there (do not sleep). */
    int (*arm)(struct cdn_transport *tp);
    void (*disarm)(struct cdn_transport *tp);
    /* The engine's wants changed by delta (cdn_progress_want: want is a
     * CDN_WANT_*): peers may skip waking a sleeper for what it does not
     * want.  Returns true when the want rose from none while a sleeper is
     * armed and input is already there (the caller wakes the sleeper).
     * NULL: the transport wakes its sleeper for everything. */
    bool (*want)(struct cdn_transport *tp, int want, int delta);
    /* Optional: may a message whose doorbell skipped the fence (a lazy
     * one, cdn_p2p_send_lazy) be wanted now, i.e. does a thread of this
     * process sleep in MPI?  Then a sleeper looks at the transport again
     * CDN_PROGRESS_SETTLE_NS after it armed, before sleeping on. */
    bool (*lazy_wanted)(struct cdn_transport *tp);
    /* Optional: an application thread starts (+1) or stops (-1) polling in
     * a blocking call.  While one does, peers do not ring this process's
     * doorbell (the poller takes what arrives).  Returns true when the last
     * poller leaves while a sleeper is armed and input, or work only a
     * poll moves on, is already there (the caller wakes the sleeper).  A
     * transport with an fd and without this op keeps the progress thread
     * parking instead of sleeping in epoll while applications poll. */
    bool (*polled)(struct cdn_transport *tp, int delta);
    /* Optional: an application thread stops polling (it leaves a blocking
     * wait, or a start it does not wait for next): ring now what it owes
     * (doorbells put off while it polled, transport/shm/shm.c). */
    void (*settle)(struct cdn_transport *tp);
    void (*finalize)(struct cdn_transport *tp);
};

struct cdn_transport {
    const struct cdn_transport_ops *ops;
    size_t eager_limit;   /* larger messages go by rendezvous */
    size_t eager_always;  /* ... and these smaller ones always go eagerly (<= eager_limit);
                           * between the two the transport chooses per message */
    void *priv;
};

/* A transport compiled in: the name CADENCE_TRANSPORTS calls it by, what
 * it reaches (for messages), and its constructor, which returns NULL when
 * the transport does not apply to this job. */
struct cdn_transport_kind {
    const char *name;
    const char *reaches;
    struct cdn_transport *(*create)(void);
};
/* Every transport compiled in, in the default order of preference; *n
 * gets how many (transport/registry.c). */
const struct cdn_transport_kind *cdn_transport_kinds(int *n);

/* ---- what the engine tells a transport (progress/engine.c) ---- */

/* The transport holds delta more (or fewer) items that only polling moves
 * on (sends queued for channel space): while any are held, the engine
 * polls instead of sleeping. */
void cdn_progress_work_changed(int delta);
/* Is a background progress thread running in this process? */
bool cdn_progress_thread_running(void);
/* Is the calling thread there to make progress: the progress thread, or
 * any thread while an application thread waits in a blocking call (not
 * one merely testing)? */
bool cdn_progress_driven(void);

/* ---- upcalls into the engine (progress/p2p.c) ---- */

/* A message header (and, eager, its payload of h->bytes bytes) arrived
 * from world rank peer.  raddr: rendezvous source address at the peer.
 * wire_id: the message's number on the channel from that peer, the same
 * number the sender's transport stored in sreq->u.p2p.wire_id (a cancel
 * names the message by it: request addresses are reused, these are not). */
void cdn_p2p_arrived(struct cdn_transport *tp, int peer, const struct cdn_wire_hdr *h,
                     const void *payload, uint64_t raddr, uint64_t wire_id);
/* The transport is done with a send request's buffer; matched: the
 * receiver is known to have matched it (rendezvous FIN). */
void cdn_p2p_send_done(struct cdn_request *sreq, bool matched, int err);
/* A synchronous send's eager message was matched (cookie: its request). */
void cdn_p2p_acked(uint64_t cookie);
/* A peer asks to cancel the message (context ctx, its wire_id) it sent us:
 * true if it was still unexpected and is now dropped. */
bool cdn_p2p_cancel_arrived(struct cdn_transport *tp, int peer, uint32_t ctx, uint64_t wire_id);
/* The receiver dropped a send's message: the send completes cancelled. */
void cdn_p2p_send_cancelled(struct cdn_request *sreq);
/* Fill the header of a send request's message. */
void cdn_p2p_wire_hdr(const struct cdn_request *sreq, struct cdn_wire_hdr *h);
/* Does only a thread blocked in MPI want this send's message at once?  A
 * standard-mode message on a user's context: receives there are never
 * urgent (progress/request.h), so nobody acts on it before the receiver's
 * next poll unless a thread of the receiver sleeps in MPI.  Its doorbell
 * may skip the fence (transport/shm/ring.h, "Lazy cells"). */
bool cdn_p2p_send_lazy(const struct cdn_request *sreq);
/* Pack a piece of a send's message into dst; returns the bytes packed. */
size_t cdn_p2p_send_pack(struct cdn_request *sreq, uint64_t offset, void *dst, size_t len);
/* The send's message as contiguous bytes (packed into a staging copy when
 * the datatype is not contiguous); NULL when out of memory. */
const void *cdn_p2p_send_contig(struct cdn_request *sreq);
/* Rendezvous receive: the sender's request, data address and message size,
 * how many bytes to move (the part that fits), and, when the receive buffer
 * is contiguous, where they go (else NULL: use cdn_p2p_recv_data). */
struct cdn_rndv {
    int peer;
    uint64_t cookie, raddr, len;
    void *dst;
};
void cdn_p2p_rndv_info(struct cdn_request *rreq, struct cdn_rndv *out);
/* Copy a piece of a rendezvous message into the receive's buffer. */
void cdn_p2p_recv_data(struct cdn_request *rreq, uint64_t offset, const void *data, size_t len);
/* A rendezvous receive has all its data. */
void cdn_p2p_recv_done(struct cdn_request *rreq, int err);
/* World rank peer is gone without finalizing (its connection reset): the
 * transport has failed what it held for the peer; this fails the posted
 * receives that name it (wildcard receives are left alone).  err: an
 * MPIX_ERR_PROC_FAILED code. */
void cdn_p2p_peer_failed(struct cdn_transport *tp, int peer, int err);

#endif
