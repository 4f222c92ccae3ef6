/*
 * Message queues between the threads of one process on a thread
 * communicator (MPIX_Threadcomm_*, api/threadcomm.c).  Our own code, on
 * the hot path: a message between two threads should cost one cache-line
 * transfer, as one between two processes over shared memory does, and the
 * general self path cost four -- the sender matched under the receiver's
 * matching lock, in the receiver's queues and request, lines the receiver
 * was writing too (interthread 8-byte latency 0.7 us against 0.3 between
 * processes, and a tenth of the small-message bandwidth).
 *
 * A thread communicator's process holds one single-producer ring per
 * (sending thread, receiving thread) pair, made on the pair's first
 * message.  The sender writes a cell -- the message's header, and its data
 * when small -- and publishes it with one release store; the receiving
 * thread drains its rings when it polls (cdn_progress_poll, while it is
 * bound to its rank between MPIX_Threadcomm_start and _finish) and matches
 * each message in its own matching context, through the self path's
 * arrival (cdn_p2p_self_arrive): a posted receive gets it, else it is
 * queued unexpected.  The cells are written by the producer alone and the
 * consumer's position lives on a line of its own, so a cell's line moves
 * once per message.
 *
 * Producers are serialized by a lock on the producer's line (the sending
 * thread's own, unless the progress thread runs a schedule step of that
 * rank); a full ring spills into an overflow list the consumer takes after
 * the ring, so an immediate send never waits and order per pair holds.
 * Messages up to CDN_TQ_EAGER travel eagerly: in the cell up to
 * CDN_TQ_INLINE bytes, else in one of the ring's two arenas (byte rings
 * the consumer gives back in order; a heap copy when they are full or the
 * message spilled).  Larger ones and synchronous sends carry the send
 * request: the receiver copies once from the sender's buffer and completes
 * it, and from CDN_TQ_SPLIT_MIN bytes the sending thread, polling while it
 * waits for its send, copies chunks of it too (cdn_tq_copy).
 *
 * The receiving thread drains its rings, or, while it is away from MPI,
 * a thread that is idle in MPI does it for it (work sharing, below):
 * otherwise messages between threads would be matched only when the
 * receiver calls MPI (as between processes without a progress thread).  A receiver about to sleep in a wait re-checks its
 * rings after registering as a sleeper (cdn_tq_pending), and a sender
 * wakes sleepers after publishing (cdn_progress_signal).
 */
#ifndef CDN_THREADQ_H
#define CDN_THREADQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "progress/engine.h"
#include "transport/transport.h"

#define CDN_TQ_INLINE 200          /* data carried in the cell */
#define CDN_TQ_EAGER (16 * 1024)   /* above: the receiver copies from the sender's buffer */
#define CDN_TQ_SPLIT_MIN (64 * 1024) /* ... and from here the waiting sender helps */

struct cdn_tq;

/* The queues of a thread communicator's n threads in this process. */
struct cdn_tq *cdn_tq_new(int n);
/* Free them (MPIX_Threadcomm_free; no thread bound).  Messages never
 * received are dropped. */
void cdn_tq_free(struct cdn_tq *q);

/* Send from thread `from` to thread `to` (indices in this process): the
 * header, then either the data (eager, sreq NULL: bytes <= CDN_TQ_EAGER,
 * packed by pack(pack_arg, dst, len), or copied from pack_arg when pack is
 * NULL) or the send request (sreq: flags carry CDN_WIRE_RNDV).  False when
 * out of memory. */
typedef void (*cdn_tq_pack_fn)(void *arg, void *dst, size_t len);
bool cdn_tq_send(struct cdn_tq *q, int from, int to, const struct cdn_wire_hdr *h,
                 cdn_tq_pack_fn pack, void *pack_arg, void *sreq);

/* A rendezvous message's copy, contiguous on both sides, by the receiving
 * thread that matched it; from CDN_TQ_SPLIT_MIN bytes the sending thread
 * (index `sender`) takes chunks too while it polls (waiting for the send). */
void cdn_tq_copy(struct cdn_tq *q, int sender, void *dst, const void *src, size_t len);

/* This thread is thread `me` of q from now (MPIX_Threadcomm_start) / no
 * longer (_finish).  False when it is bound to too many at once. */
bool cdn_tq_bind(struct cdn_tq *q, int me);
void cdn_tq_unbind(struct cdn_tq *q);

/* How many thread communicators this thread is bound to: the poll's test. */
extern CDN_TLS int cdn_tq_nbound;

/* Drain this thread's rings (cdn_progress_poll); messages processed. */
int cdn_tq_poll_bound(void);
/* Has this thread a message waiting in a ring?  (before it sleeps) */
bool cdn_tq_pending_bound(void);

/* With CADENCE_TRANSPORT_REPORT: how this process's thread queues carried
 * their messages (MPI_Finalize prints them: progress/sent.c). */
enum { CDN_TQ_CELL, CDN_TQ_SPILL, CDN_TQ_ARENA, CDN_TQ_HEAP, CDN_TQ_RNDV, CDN_TQ_SPLIT,
       CDN_TQ_HELPED, CDN_TQ_SHARED, CDN_TQ_NCOUNTS };
void cdn_tq_counts(unsigned long out[CDN_TQ_NCOUNTS]);

/* Work sharing: a thread idle in MPI (its poll found nothing) drains the
 * rings of a thread of a thread communicator that is away -- computing,
 * or asleep -- with messages waiting, and runs what they complete: the
 * next steps of that thread's nonblocking collectives.  A thread rank
 * helps the threads of its own communicators; the progress thread (and
 * any thread not bound to one) every live one.  A thread counts as away
 * when it has not drained its rings between two of the helper's looks,
 * which are at least CADENCE_WORK_SHARING_LOOK_US apart.  CADENCE_WORK_SHARING=0 turns it off. */
extern atomic_int cdn_tq_nlive;
int cdn_tq_share_slow(void);
static inline int cdn_tq_share(void)
{
    return __builtin_expect(atomic_load_explicit(&cdn_tq_nlive, memory_order_relaxed) > 0, 0)
               ? cdn_tq_share_slow()
               : 0;
}

static inline int cdn_tq_poll(void)
{
    return __builtin_expect(cdn_tq_nbound > 0, 0) ? cdn_tq_poll_bound() : 0;
}

static inline bool cdn_tq_pending(void)
{
    return __builtin_expect(cdn_tq_nbound > 0, 0) && cdn_tq_pending_bound();
}

#endif
