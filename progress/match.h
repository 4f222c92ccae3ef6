/*
 * Message matching, one matching context per communicator context id.
 *
 * A context has the posted queue (receives waiting for a message, in the
 * order they were posted) and the unexpected queue (messages that arrived
 * before a matching receive, in arrival order).  A receive is matched
 * against the unexpected queue first; an arriving message against the
 * posted queue first; both searches and the append that follows a miss are
 * one critical section, which is what gives MPI's non-overtaking order:
 * transports deliver each sender's messages in the order they were sent,
 * and a search always takes the oldest match.
 *
 * Contexts are created on first use from either side, so a message for a
 * communicator this process has not created yet waits in its unexpected
 * queue.
 */
#ifndef CDN_MATCH_H
#define CDN_MATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "progress/spin.h"
#include "transport/transport.h"

struct cdn_request;

struct cdn_msg_pool;

/* An unexpected message, or one taken by MPI_(I)mprobe. */
struct cdn_msg {
    struct cdn_msg *next, *prev;
    struct cdn_wire_hdr h;
    int peer;                   /* sender's world rank */
    struct cdn_transport *tp;   /* NULL: sent by this process */
    struct cdn_mem_key rkey;    /* rendezvous: the data at the sender (set only then) */
    struct cdn_request *sreq;   /* self path rendezvous: the send request itself */
    uint64_t wire_id;           /* names it for a cancel: the transport's number for it on
                                 * the channel from peer; self path: sreq's address (0 for
                                 * an eager message, whose send is complete) */
    void *data;                 /* eager: the payload (h.bytes bytes) */
    struct cdn_msg_pool *pool;  /* the pool its block goes back to (match.c), or NULL */
    unsigned char inline_data[192];
};

struct cdn_match_ctx {
    uint32_t id;
    struct cdn_spin lock;       /* every post and arrival takes it: progress/spin.h */
    struct cdn_request *posted, *posted_tail;
    struct cdn_msg *unexp, *unexp_tail;
    /* Posted receives raising each want (enum cdn_want; the waited ones
     * raise none), counted under lock: the context raises a want of the
     * engine's only while its count is above zero, so a stream of
     * receives on one communicator takes no read-modify-write for it. */
    int wants[3];
};

/* Context ids below CDN_MATCH_CHUNK (every communicator of a job that makes
 * fewer than about 500) have their context in this static array, read
 * without a call at every post and arrival; the others in chunks
 * allocated on first use. */
#define CDN_MATCH_CHUNK 1024
extern _Atomic(struct cdn_match_ctx *) cdn_match_ctx_low[CDN_MATCH_CHUNK];

struct cdn_match_ctx *cdn_match_ctx_make(uint32_t id);

/* The matching context of a context id, created on first use (NULL: no memory). */
static inline struct cdn_match_ctx *cdn_match_ctx_get(uint32_t id)
{
    if (id < CDN_MATCH_CHUNK) {
        struct cdn_match_ctx *m = atomic_load_explicit(&cdn_match_ctx_low[id], memory_order_acquire);
        if (m != NULL)
            return m;
    }
    return cdn_match_ctx_make(id);
}

/* Post a receive (its u.p2p.rank/tag/ctx are set).  Returns the oldest
 * matching unexpected message, removed from the queue, or NULL after
 * appending rreq to the posted queue. */
struct cdn_msg *cdn_match_post(struct cdn_match_ctx *m, struct cdn_request *rreq);

/* A message arrived.  Returns the oldest matching posted receive, removed
 * from the queue, or NULL after queueing a copy of *msg (and of the eager
 * payload) as unexpected.  *failed is set if that copy could not be made. */
struct cdn_request *cdn_match_arrive(struct cdn_match_ctx *m, const struct cdn_msg *msg,
                                     const void *payload, bool *failed);

/* Take a posted receive back (MPI_Cancel); false if it was matched already. */
bool cdn_match_unpost(struct cdn_match_ctx *m, struct cdn_request *rreq);

/* Take a message back out of the unexpected queue (a cancelled send): the
 * one that came by tp (NULL: the self path) from world rank peer with this
 * wire_id.  False if it was matched already. */
bool cdn_match_unsend(struct cdn_match_ctx *m, struct cdn_transport *tp, int peer, uint64_t wire_id);

/* Look for a message from src with tag (wildcards allowed).  Copies its
 * header to *h and returns true if found; with take, also removes it and
 * returns it in *taken (MPI_Mprobe). */
bool cdn_match_probe(struct cdn_match_ctx *m, int src, int tag, bool take,
                     struct cdn_wire_hdr *h, struct cdn_msg **taken);

void cdn_msg_free(struct cdn_msg *msg);
/* Unexpected messages copied so far, and blocks allocated for the copies
 * (the rest reused kept ones: CADENCE_TRANSPORT_REPORT). */
void cdn_match_copy_counts(unsigned long *made, unsigned long *allocated);

/* Take out of every context the posted receives for which pred holds (a
 * peer failed); returns them chained through next. */
struct cdn_request *cdn_match_take_posted(bool (*pred)(const struct cdn_request *r, int arg),
                                          int arg);

/* Drop every context (finalize); returns how many messages were left unreceived. */
int cdn_match_finalize(void);

#endif
