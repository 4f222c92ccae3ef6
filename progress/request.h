/*
 * Requests: the one object every nonblocking operation of Cadence is.
 *
 * A request has a kind and an ops table (start, progress, cancel, complete
 * hook, free), so point-to-point, persistent, composite (sendrecv), matched
 * message, generalized, schedule and partitioned requests are all the same
 * struct to wait/test and to the engine.
 *
 * Completion is one atomic counter, cc.  A request waiting for n events is
 * armed with cc = n + 1: each event takes one off, and the thread that takes
 * the last event off (cc 2 -> 1) runs the completion hook, notifies the
 * parent, then stores cc = 0, which is what waiters look at.  So a hook runs
 * exactly once, before anyone can see the request complete.
 *
 * Lifetime is a reference count: the user's handle is one reference, the
 * engine holds one while the request is active (not a request of a blocking
 * call, whose owner holds its own until it sees completion:
 * cdn_request_arm_owned).  Request objects come from a
 * pool in chunks and keep their handle for life, so the hot path neither
 * mallocs nor touches the handle table's lock; a handle is valid while its
 * object is `live` (given to the user and not yet freed).
 */
#ifndef CDN_REQUEST_H
#define CDN_REQUEST_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/datatype.h"
#include "runtime/handle.h"
#include "transport/transport.h"

struct cdn_request;
struct cdn_comm;
struct cdn_msg;

enum cdn_req_kind {
    CDN_REQ_DONE = 1,   /* born complete: MPI_PROC_NULL, bsend user side */
    CDN_REQ_SEND,
    CDN_REQ_RECV,
    CDN_REQ_PAIR,       /* parent of a send and a receive: MPI_Isendrecv(_replace) */
    CDN_REQ_MESSAGE,    /* a message taken by MPI_(I)mprobe, waiting for MPI_(I)mrecv */
    CDN_REQ_GREQ,       /* generalized (progress/greq.c) */
    CDN_REQ_SCHED,      /* schedule instance (later) */
    CDN_REQ_PART,       /* partitioned (later) */
    CDN_REQ_RMA,        /* MPI_Rput and the other request-based one-sided operations */
};

enum cdn_send_mode {
    CDN_SEND_STANDARD = 0,
    CDN_SEND_SYNC,
    CDN_SEND_READY,
    CDN_SEND_BUFFERED,
};

struct cdn_request_ops {
    const char *name;
    /* Persistent requests: begin one instance (MPI_Start). */
    int (*start)(struct cdn_request *r);
    /* Poll the request's own source of events; NULL when transports drive it. */
    int (*progress)(struct cdn_request *r);
    /* Try to cancel; completes the request as cancelled on success. */
    int (*cancel)(struct cdn_request *r);
    /* Runs once, as the last event arrives and before waiters see completion. */
    void (*complete)(struct cdn_request *r);
    /* Release kind resources when the last reference goes. */
    void (*free)(struct cdn_request *r);
    /* A child (a request whose parent this is) completed: called instead
     * of an event on this request, with the child's parent_slot, after
     * the child's own last step (it may be started again at once).  Also
     * instead of the completion's cdn_progress_signal: it signals when a
     * thread may sleep waiting for the child itself (its own completion,
     * if it completes, signals for it).  NULL: each child's completion is
     * one event here. */
    void (*child_done)(struct cdn_request *r, int slot);
};

/* Point-to-point state (send, receive, persistent forms of both). */
struct cdn_p2p {
    void *buf;
    MPI_Count count;
    struct cdn_datatype *dt;
    struct cdn_dt_segment seg;
    MPI_Count bytes;          /* send: message size; receive: buffer capacity */
    int rank, tag;            /* peer and tag in the communicator (receive: may be wildcards) */
    int tag_mask;             /* receive: the bits of tag that must match (-1: all) */
    uint32_t ctx;             /* context id of the communicator */
    int mode;                 /* enum cdn_send_mode */
    struct cdn_comm *comm;
    struct cdn_transport *tp; /* the transport moving the data, NULL on the self path */
    void *tmp;                /* staging: packed non-contiguous data */
    void *bsend_region;       /* buffered send: its region of the attached buffer */
    struct cdn_msg *msg;      /* MPI_(I)mrecv: the message taken by mprobe */
    atomic_int cancel_state;  /* send cancel handshake (enum in p2p.c) */
    /* What the transport sees (transport.h): the peer's world rank (sends,
     * matched receives), the send's rendezvous choice and wire_id, a
     * rendezvous receive's sender, key and length. */
    struct cdn_xfer x;
    bool urgent;              /* receive: its arrival must be acted on at once, so while it
                               * is posted it raises CDN_WANT_DATA (peers ring for any
                               * message), else CDN_WANT_POSTED (they ring only for an RTS
                               * or a synchronous message).  Must not change while posted.
                               * Only receives on a communicator's internal context may be
                               * urgent: senders to a user's context count on it
                               * (cdn_p2p_send_lazy). */
    bool waited;              /* receive of a blocking call (MPI_Recv): it raises no want
                               * while posted -- its caller polls, and wants data while it
                               * sleeps (engine.c, block), which rings for every cell.
                               * Must not change while posted. */
    bool lazy_ok;             /* send on an internal context whose receive is never urgent
                               * (a partitioned transfer's): lazy as a user's message
                               * (cdn_p2p_send_lazy) */
    bool stream_tag;          /* receive of MPIX_Stream_(i)recv: the wire tag carries the
                               * source stream in its low bits; the status reports the
                               * user's tag (p2p.h, CDN_STREAM_TAG_BITS) */
};

/* Composite: a send and a receive completed together. */
struct cdn_pair {
    struct cdn_request *send, *recv;
    void *replace_buf;        /* _replace: the user buffer the receive is copied to */
    MPI_Count replace_count;
    struct cdn_datatype *replace_dt;
};

struct cdn_request {
    atomic_int cc;                     /* 0: complete (see above) */
    atomic_int refs;
    const struct cdn_request_ops *ops;
    int kind;                          /* enum cdn_req_kind */
    bool persistent;
    bool active;                       /* persistent: started and not yet waited for */
    atomic_bool live;                  /* the user holds the handle */
    atomic_bool cancelled;
    MPI_Request handle;
    bool owner_waits;                  /* armed without the engine's reference
                                        * (cdn_request_arm_owned) */
    struct cdn_request *parent;        /* notified (one event, or its child_done) at
                                        * completion */
    int parent_slot;                   /* what the parent's child_done is told */
    int pctx;                          /* its progress context: its communicator's (0
                                        * without one); a wait progresses it first */
    struct cdn_comm *comm;             /* its error handler sees the request's errors */
    MPI_Status status;                 /* MPI_ERROR holds the request's error code */
    struct cdn_request *next, *prev;   /* engine queues (posted receives, pending sends) */
    struct cdn_request *pool_next;
    union {
        struct cdn_p2p p2p;
        struct cdn_pair pair;
        unsigned char room[256];       /* later kinds keep their state here */
    } u;
};

/* The point-to-point request whose transfer a transport handed back. */
static inline struct cdn_request *cdn_request_of_xfer(struct cdn_xfer *x)
{
    return (struct cdn_request *)(void *)((char *)x - offsetof(struct cdn_request, u.p2p.x));
}

/* ---- status helpers (MPICH layout: count in bytes over two ints) ---- */
#define CDN_STATUS_CANCELLED_BIT 0x1
static inline void cdn_status_set_bytes(MPI_Status *s, MPI_Count bytes)
{
    s->count_lo = (int)(uint32_t)((uint64_t)bytes & 0xffffffffu);
    s->count_hi_and_cancelled = (int)(((uint64_t)bytes >> 32) << 1) |
                                (s->count_hi_and_cancelled & CDN_STATUS_CANCELLED_BIT);
}
static inline MPI_Count cdn_status_bytes(const MPI_Status *s)
{
    return (MPI_Count)((uint64_t)(uint32_t)s->count_lo |
                       (((uint64_t)(uint32_t)s->count_hi_and_cancelled >> 1) << 32));
}
static inline void cdn_status_set_cancelled(MPI_Status *s, int flag)
{
    if (flag)
        s->count_hi_and_cancelled |= CDN_STATUS_CANCELLED_BIT;
    else
        s->count_hi_and_cancelled &= ~CDN_STATUS_CANCELLED_BIT;
}
/* The status of a null or inactive request (MPI-4.1 3.7.3). */
static inline void cdn_status_empty(MPI_Status *s)
{
    s->count_lo = 0;
    s->count_hi_and_cancelled = 0;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
}
/* Copy what a completion call reports; MPI_ERROR only for _all/_some forms. */
static inline void cdn_status_copy(MPI_Status *to, const MPI_Status *from, bool with_error)
{
    if (to == MPI_STATUS_IGNORE)
        return;
    int err = to->MPI_ERROR;
    *to = *from;
    if (!with_error)
        to->MPI_ERROR = err;
}

/* ---- life cycle ---- */

/* Zero n bytes at p (n a constant multiple of 8, p 8-byte aligned) with
 * unrolled 16-byte stores: GCC makes a memset, a plain loop or a compound
 * literal of this size a `rep stos`, whose start-up cost was the largest
 * part of making a request (perf, message-rate benchmark). */
typedef unsigned long long cdn_zero16 __attribute__((vector_size(16), aligned(8), may_alias));
typedef unsigned long long cdn_zero8 __attribute__((may_alias));
static inline void cdn_zero_words(void *p, size_t n)
{
    cdn_zero16 *w = (cdn_zero16 *)p;
#pragma GCC unroll 32
    for (size_t i = 0; i < n / sizeof *w; i++)
        w[i] = (cdn_zero16){0, 0};
    if (n % sizeof *w != 0)
        *(cdn_zero8 *)(void *)((char *)p + n - sizeof(cdn_zero8)) = 0;
}

/* A request from the pool with one reference (the caller's), cc = 0. */
struct cdn_request *cdn_request_alloc(int kind, const struct cdn_request_ops *ops,
                                      struct cdn_comm *comm);
/* The same with the kind state u left as it was: for a kind whose
 * constructor sets every field of its state (p2p.c, p2p_init). */
struct cdn_request *cdn_request_alloc_bare(int kind, const struct cdn_request_ops *ops,
                                           struct cdn_comm *comm);
void cdn_request_retain(struct cdn_request *r);
void cdn_request_release(struct cdn_request *r);
/* The request behind a user handle, or NULL (invalid, freed, or
 * MPI_REQUEST_NULL).  Inline: every wait and test looks its requests up
 * in the pool's handle table (request.c). */
extern CDN_HANDLE_TABLE_HIDDEN struct cdn_handle_table cdn_request_table;
static inline struct cdn_request *cdn_request_get(MPI_Request handle)
{
    struct cdn_request *r = cdn_handle_get_typed(&cdn_request_table, CDN_OBJ_REQUEST, handle);
    if (r == NULL || !atomic_load_explicit(&r->live, memory_order_acquire))
        return NULL;
    return r;
}
/* Hand the request to the user: it becomes live under its handle. */
MPI_Request cdn_request_publish(struct cdn_request *r);
/* The user lets go of the handle (MPI_Request_free, or completion by wait/test). */
void cdn_request_unpublish(struct cdn_request *r);
/* Free the pool at finalize; returns how many requests were still referenced. */
int cdn_request_pool_finalize(void);

/* ---- completion ---- */

/* Arm for nevents events; the engine takes a reference until completion. */
static inline void cdn_request_arm(struct cdn_request *r, int nevents)
{
    r->status.MPI_ERROR = MPI_SUCCESS;
    atomic_store_explicit(&r->cancelled, false, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    atomic_store_explicit(&r->cc, nevents + 1, memory_order_release);
}
/* The same for a request no other thread can see yet (just made by
 * cdn_request_alloc*, not published, never armed): its refs is 1, its
 * status empty and cancelled false, so plain stores do. */
static inline void cdn_request_arm_fresh(struct cdn_request *r, int nevents)
{
    atomic_store_explicit(&r->refs, 2, memory_order_relaxed);
    atomic_store_explicit(&r->cc, nevents + 1, memory_order_release);
}
/* The same for a request whose owner holds its reference until it sees
 * the request complete and never publishes it (the receive of MPI_Recv):
 * the engine takes no reference, which only kept the request alive for
 * the completing event's own last steps -- and that event touches nothing
 * of such a request after it stores cc = 0 (cdn_request_event).  Nothing
 * else may touch a request after its last event in any case: the owner
 * may free it at once. */
static inline void cdn_request_arm_owned(struct cdn_request *r, int nevents)
{
    r->owner_waits = true;
    atomic_store_explicit(&r->cc, nevents + 1, memory_order_release);
}
/* One event happened; the last one completes the request. */
void cdn_request_event(struct cdn_request *r);
/* Complete a request armed for one event, with an error code (or MPI_SUCCESS). */
static inline void cdn_request_complete(struct cdn_request *r, int err)
{
    if (err != MPI_SUCCESS)
        r->status.MPI_ERROR = err;
    cdn_request_event(r);
}
static inline bool cdn_request_done(const struct cdn_request *r)
{
    return atomic_load_explicit(&r->cc, memory_order_acquire) == 0;
}
/* Drive progress until r completes (spin, then block). */
void cdn_request_wait(struct cdn_request *r);
/* The same through cdn_progress_wait_until_late (a blocking receive). */
void cdn_request_wait_late(struct cdn_request *r);

#endif
