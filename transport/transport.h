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

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Where a peer's memory is, for a transport to reach: its address there
 * and the key a registration gave it (0 where the transport reaches memory
 * by address alone, as CMA does).  A rendezvous message carries the
 * sender's; RMA windows will publish theirs. */
struct cdn_mem_key {
    uint64_t addr;
    uint64_t key;
};

/* One message's transfer, as a transport sees it.  The engine keeps one in
 * every point-to-point request and hands transports a pointer to it, never
 * the request (a transport does not include progress/request.h: test
 * `layers`).  The engine's fields are set before the transport is called
 * and only read by it; the transport's are its own, zero when the engine
 * hands the transfer over.  Completion goes back through the upcalls below
 * with the same pointer. */
struct cdn_xfer {
    /* the engine's */
    int peer;                  /* world rank of the other side */
    bool sync;                 /* send: the receiver acknowledges the match (MPI_Ssend) */
    bool lazy;                 /* send: only a thread blocked in MPI wants the message at
                                * once (a standard one on a user's context: its doorbell may
                                * skip the fence, transport/shm/ring.h "Lazy cells") */
    bool alone;                /* rendezvous receive: the sender's application is likely
                                * computing (a partitioned transfer), so move the data in a
                                * way that needs nothing of it: shm reads it by CMA, never
                                * through the rings (whose copy in is the sender's), and
                                * offers the sender half even while more of its messages
                                * wait (a sender waiting in MPI takes it; a computing one
                                * does not, and the receiver takes it back) */
    /* the transport's */
    bool rndv;                 /* send: it went by rendezvous */
    int state;                 /* free for the transport (what a send waits for) */
    atomic_int parts;          /* pieces still being moved */
    atomic_int err;            /* the first error of a piece */
    /* the engine's */
    uint64_t bytes;            /* send: the message's size; rendezvous receive: the bytes
                                * to move (the part of the message that fits) */
    const void *src;           /* send: the message as contiguous bytes (the buffer, or a
                                * staging copy once cdn_p2p_send_contig made one), or NULL */
    uint64_t cookie;           /* rendezvous receive: the sender's transfer (echoed back) */
    struct cdn_mem_key rkey;   /* rendezvous receive: the sender's data */
    void *dst;                 /* rendezvous receive: the contiguous receive buffer, or NULL
                                * (then place data with cdn_p2p_recv_data) */
    void (*on_done)(struct cdn_xfer *x, int err);  /* get, put: what cdn_xfer_done runs */
    /* the transport's */
    uint64_t wire_id;          /* send: the message's number on its channel (a cancel names
                                * it: transfers' addresses are reused, these are not) */
    uint64_t moved;            /* bytes moved so far, or whatever the transport counts */
    struct cdn_xfer *next;     /* the transport's lists */
};

struct cdn_transport_ops {
    const char *name;
    /* Open endpoints and publish addresses (before the PMIx fence). */
    int (*init)(struct cdn_transport *tp);
    /* Attach to / connect the peers (after the fence). */
    int (*wireup)(struct cdn_transport *tp);
    bool (*reaches)(struct cdn_transport *tp, int world_rank);
    /* Send a message: eager or rendezvous (its RTS carrying a memory key
     * for the data), queued if the channel is full.  Completion comes back
     * through cdn_p2p_send_done. */
    int (*send)(struct cdn_transport *tp, struct cdn_xfer *sx);
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
    int (*pull)(struct cdn_transport *tp, struct cdn_xfer *rx);
    /* A synchronous eager message was matched: tell its sender. */
    int (*ack)(struct cdn_transport *tp, int peer, uint64_t cookie);
    /* An active message: len <= am_max bytes for the engine's handler id
     * at world rank peer (cdn_am_arrived there), in order with every other
     * message to that peer; data may be reused when the call returns.
     * For control messages: cancel, and later partitioned, RMA, streams. */
    int (*am_send)(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len);
    /* Optional: a send the engine completed without the transport (the
     * receiver dropped its message: a cancel): forget what is kept for it. */
    void (*dropped)(struct cdn_transport *tp, struct cdn_xfer *sx);
    /* Optional (CDN_TP_CAP_GET / _PUT): move x->bytes between local memory
     * (x->dst for get, x->src for put) and x->rkey at world rank x->peer
     * with no action by the peer's application; the end comes through
     * cdn_xfer_done. */
    int (*get)(struct cdn_transport *tp, struct cdn_xfer *x);
    int (*put)(struct cdn_transport *tp, struct cdn_xfer *x);
    /* Optional: register len bytes at addr for peers to reach (*key gets
     * what a peer names them by); NULL: memory is reached by address
     * alone (key 0).  mem_dereg ends a registration. */
    int (*mem_reg)(struct cdn_transport *tp, void *addr, size_t len, struct cdn_mem_key *key);
    void (*mem_dereg)(struct cdn_transport *tp, const struct cdn_mem_key *key);
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
    /* Optional: the launcher says world rank peer ended without
     * finalizing (a PMIx event, runtime/pmix.h): fail what is held for it
     * and call cdn_p2p_peer_failed, as on a failure the transport saw
     * itself, for a transport that may not see one in time (a provider
     * that reports no error for a dead peer, shared memory).  Any thread,
     * outside poll. */
    void (*peer_lost)(struct cdn_transport *tp, int peer);
    void (*finalize)(struct cdn_transport *tp);
};

/* Capabilities (cdn_transport_ops.caps). */
#define CDN_TP_CAP_GET 0x1     /* get: one-sided read of a peer's memory */
#define CDN_TP_CAP_PUT 0x2     /* put: one-sided write */
/* Its fd (without `polled`) may be muted in the engine's epoll set while
 * application threads poll in blocking calls (progress/engine.c,
 * cdn_progress_mute): what arrives then is theirs to take. */
#define CDN_TP_CAP_MUTE 0x4

struct cdn_transport {
    const struct cdn_transport_ops *ops;
    int ctx;              /* the progress context this instance serves: each context
                           * has its own instance of every transport (own rings,
                           * own connections); set by the engine before init */
    int kind;             /* its index in cdn_transport_kinds (set by the engine) */
    unsigned caps;        /* what it can do beyond messages (CDN_TP_CAP_*) */
    size_t am_max;        /* the largest active message */
    size_t eager_limit;   /* larger messages go by rendezvous */
    size_t eager_always;  /* ... and these smaller ones always go eagerly (<= eager_limit);
                           * between the two the transport chooses per message */
    void *priv;
};

/* A transport compiled in: the name CADENCE_TRANSPORTS calls it by, what
 * it reaches (for messages), and its constructor of one instance (the
 * engine makes one per progress context), which returns NULL when the
 * transport does not apply to this job. */
struct cdn_transport_kind {
    const char *name;
    const char *reaches;
    struct cdn_transport *(*create)(void);
    /* Opened only when CADENCE_TRANSPORTS names it (the fabric transports:
     * the default list is shm, tcp). */
    bool named_only;
    /* Optional: why create() returned NULL, when that is a failure to
     * start (a library without a usable provider, no device) rather than
     * "this job does not need it"; named in CADENCE_TRANSPORTS, that is an
     * error with this reason.  NULL result: it does not apply. */
    const char *(*why_not)(void);
    /* Optional: what this machine offers it (providers, devices), for
     * mpiinfo; works without MPI. */
    void (*probe)(char *out, size_t len);
};
/* The name under which an instance publishes an address in the job's
 * modex: base for context 0, base.<ctx> for the others (the peer's
 * instance of the same context reads it). */
void cdn_transport_modex_key(const struct cdn_transport *tp, const char *base, char *out,
                             size_t len);
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

/* ---- upcalls into the engine (progress/p2p.c, progress/am.c) ---- */

/* A message header (and, eager, its payload of h->bytes bytes) arrived
 * from world rank peer.  rkey: rendezvous, where the data is at the peer.
 * wire_id: the message's number on the channel from that peer, the same
 * number the sender's transport stored in its transfer's wire_id (a cancel
 * names the message by it). */
void cdn_p2p_arrived(struct cdn_transport *tp, int peer, const struct cdn_wire_hdr *h,
                     const void *payload, const struct cdn_mem_key *rkey, uint64_t wire_id);
/* The transport is done with a send's buffer; matched: the receiver is
 * known to have matched it (rendezvous FIN).  err: MPI_SUCCESS or a code. */
void cdn_p2p_send_done(struct cdn_xfer *sx, bool matched, int err);
/* A synchronous send's eager message was matched (cookie: its transfer,
 * as the header carried it); err: MPI_SUCCESS, or why no answer can come. */
void cdn_p2p_acked(uint64_t cookie, int err);
/* Fill the header of a send's message. */
void cdn_p2p_wire_hdr(const struct cdn_xfer *sx, struct cdn_wire_hdr *h);
/* Pack a piece of a send's message into dst; returns the bytes packed. */
size_t cdn_p2p_send_pack(struct cdn_xfer *sx, uint64_t offset, void *dst, size_t len);
/* The send's message as contiguous bytes (sx->src, or a staging copy made
 * now and kept in sx->src when the datatype is not contiguous); NULL when
 * out of memory. */
const void *cdn_p2p_send_contig(struct cdn_xfer *sx);
/* Copy a piece of a rendezvous message into the receive's buffer. */
void cdn_p2p_recv_data(struct cdn_xfer *rx, uint64_t offset, const void *data, size_t len);
/* A rendezvous receive has all its data (or failed: err). */
void cdn_p2p_recv_done(struct cdn_xfer *rx, int err);
/* World rank peer is gone without finalizing (its connection reset): the
 * transport has failed what it held for the peer; this fails the posted
 * receives that name it (wildcard receives are left alone).  err: an
 * MPIX_ERR_PROC_FAILED code. */
void cdn_p2p_peer_failed(struct cdn_transport *tp, int peer, int err);
/* An active message for handler id arrived from world rank peer. */
void cdn_am_arrived(struct cdn_transport *tp, int peer, unsigned id, const void *data,
                    size_t len);
/* A get or put ended (err: MPI_SUCCESS or a code). */
void cdn_xfer_done(struct cdn_xfer *x, int err);

#endif
