/*
 * The UCX transport's state, shared by its files: ucx.c (context, worker,
 * endpoints, the receive callback, polling, sleeping, peer loss and the
 * ops table), proto.c (the message protocols: eager, rendezvous,
 * acknowledgements, active messages) and rma.c (registration, one-sided
 * get and put, the exchange of packed remote keys).
 *
 * Threads: UCX's worker is opened single-threaded and every call into it
 * is made under the instance's one mutex (st->lock), which also guards
 * the peers' lists.  UCX runs our callbacks inside ucp_worker_progress,
 * so under that mutex: they never call up into the engine, they queue
 * what happened (st->arrived, st->done) and poll delivers it after
 * unlocking, as tcp makes its upcalls without its peer lock.  Only the
 * engine's poller calls poll, so deliveries keep their order.
 */
#ifndef CDN_UCX_H
#define CDN_UCX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include "progress/keep.h"
#include "transport/transport.h"

#define CDN_MODEX_UCX_ADDR "cdn.ucx.addr"  /* the worker's address (ucp_worker_get_address) */
#define UCX_AM_ID 7                       /* the one UCP active message id we use */
#define UCX_AM_MAX (64 * 1024)            /* the engine's largest active message */
#define UCX_POOL_DATA 256                 /* payload room of pooled ops and arrivals */
#define UCX_POOL_MAX 256                  /* spares kept of each */

/* What a message is (its header's type). */
enum {
    M_EAGER = 1,  /* h and the whole payload */
    M_RTS,        /* h; the payload follows by UCX's AM rendezvous, fetched on pull */
    M_ACK,        /* a: the synchronous send's cookie */
    M_AM,         /* a: the engine's handler id; the payload is its message */
    M_RKEY_REQ,   /* a: a registration id of the receiver's (rma.c) */
    M_RKEY,       /* a: the id; payload: the packed key (empty: no such registration) */
    M_BYE,        /* the sender finalizes: a close that follows is not a failure */
};

/* The header of every message (UCP's AM header).  seq numbers every
 * message on the channel, so the receiver restores the send order should
 * UCX deliver out of it (it promises none for active messages). */
struct ucx_hdr {
    uint8_t type;
    uint8_t pad[3];
    int32_t src;                  /* the sender's world rank */
    uint64_t seq;
    uint64_t a;
    struct cdn_wire_hdr h;        /* M_EAGER, M_RTS */
};

/* An operation handed to UCX: a send's header (which must outlive the
 * call), the transfer it moves, and what to do when UCX completes it.
 * Completed ones wait on st->done for poll to report. */
enum { OP_SEND = 1, OP_RNDV, OP_CTRL, OP_PULL, OP_GET, OP_PUT };

struct ucx_state;

struct ucx_op {
    struct ucx_op *next;          /* the done queue, the pool */
    struct ucx_op *rnext;         /* OP_RNDV: its peer's rndv list (apart from next: an op
                                   * completes onto the done queue while still listed) */
    struct ucx_state *st;
    void *req;                    /* UCX's request while it has one (OP_RNDV) */
    int kind;                     /* OP_* */
    bool pooled;                  /* kept in st->op_spares (room for UCX_POOL_DATA bytes) */
    bool counted;                 /* counted in the engine's pending work while UCX has it */
    int peer;
    ucs_status_t status;
    struct cdn_xfer *x;           /* the transfer (NULL: forgotten, a dropped send) */
    void *tmp;                    /* OP_PULL: a bounce buffer, when the receive needs one */
    size_t len;                   /* OP_PULL: the message's bytes */
    struct ucx_hdr hdr;
    unsigned char data[];         /* OP_CTRL: a copy of the payload */
};

/* A message that arrived, waiting for delivery (or for its turn, when it
 * came out of order). */
struct ucx_in {
    struct ucx_in *next;
    bool pooled;                  /* kept in st->in_spares (room for UCX_POOL_DATA bytes) */
    struct ucx_hdr hdr;
    const void *data;             /* the payload (NULL for M_RTS) */
    size_t len;                   /* its bytes (M_RTS: the rendezvous data's) */
    void *desc;                   /* UCX's data to release after delivery, or M_RTS's descriptor */
    unsigned char copy[];         /* the payload, when UCX would not keep it */
};

/* A rendezvous message delivered and not pulled yet: the engine names it
 * by token (its cdn_mem_key.key). */
struct ucx_rts {
    struct ucx_rts *next;
    uint64_t token;
    void *desc;
    size_t len;
};

/* A peer's packed remote key, unpacked here, by the registration id the
 * peer gave it (rma.c). */
struct ucx_rkey {
    struct ucx_rkey *next;
    uint64_t id;
    ucp_rkey_h rkey;              /* NULL: asked for, not here yet */
    bool missing;                 /* the peer has no such registration */
};

enum { PEER_NONE, PEER_UP, PEER_GONE, PEER_FAILED };

struct ucx_peer {
    struct ucx_state *st;
    int world;
    int state;                    /* PEER_* */
    ucp_ep_h ep;                  /* opened by the first send to the peer */
    uint64_t seq_out;             /* messages sent */
    uint64_t seq_in;              /* the next message to deliver */
    struct ucx_in *stash;         /* arrived ahead of their turn, by seq */
    struct cdn_xfer *waiting;     /* synchronous eager sends waiting for their ACK */
    struct ucx_op *rndv;          /* rendezvous sends UCX has not finished */
    struct ucx_rts *rts;          /* rendezvous messages delivered and not pulled */
    struct ucx_rkey *rkeys;       /* the peer's keys (rma.c) */
    struct cdn_xfer *rma_wait;    /* gets and puts waiting for a key (rma.c) */
    ucs_status_t why;             /* PEER_FAILED: UCX's status */
    bool fail_pending;            /* PEER_FAILED not yet reported to the engine */
    bool by_launcher;             /* ... on mpirun's word (ucx_peer_lost), not UCX's */
    bool bye;                     /* its M_BYE arrived: a lost connection is its ending */
};

struct ucx_reg;  /* a registration (rma.c) */

struct ucx_state {
    struct cdn_transport tp;
    int me, size;
    pthread_mutex_t lock;         /* the worker and everything below */
    ucp_context_h ctx;
    ucp_worker_h worker;
    int efd;                      /* the worker's wakeup fd */
    ucp_address_t *addr;
    size_t addr_len;
    struct ucx_peer *peers;       /* by world rank */
    struct ucx_in *arrived, *arrived_tail;  /* in order, to deliver */
    struct ucx_op *done, *done_tail;        /* completed operations, to report */
    bool closing;                 /* finalize began: lost connections are endings */
    bool failed;                  /* a peer has fail_pending (lock held) */
    uint64_t next_token;          /* M_RTS tokens */
    uint64_t next_reg;            /* registration ids (rma.c) */
    struct ucx_reg *regs;         /* this process's registrations (rma.c) */
    /* spare ops and arrivals (progress/keep.h; taken with or without st->lock) */
    struct cdn_keep op_spares, in_spares;
    void *op_kept[UCX_POOL_MAX], *in_kept[UCX_POOL_MAX];
};

/* ucx.c */
/* The endpoint to a peer, opened now if need be (lock held); NULL with
 * *err set when the peer cannot be reached. */
ucp_ep_h ucx_ep(struct ucx_state *st, struct ucx_peer *p, int *err, const char *what);
/* Hand a message to UCX (lock held): the header is op's, the payload
 * data/len; flags: UCP_AM_SEND_FLAG_*.  Returns an MPI code; on success
 * *pending says whether op is UCX's until it completes (else it is done,
 * and the caller frees it). */
int ucx_am_post(struct ucx_state *st, struct ucx_peer *p, struct ucx_op *op, const void *data,
                size_t len, unsigned flags, bool *pending, const char *what);
void ucx_op_free(struct ucx_state *st, struct ucx_op *op);
/* UCX keeps op until its callback: the engine polls meanwhile (ops whose
 * end needs the peer's application, rendezvous sends, are not counted). */
void ucx_op_pending(struct ucx_op *op);
struct ucx_in *ucx_in_new(struct ucx_state *st, size_t room);
void ucx_in_free(struct ucx_state *st, struct ucx_in *in);
/* A completion for op: queue it for poll (lock held: inside progress). */
void ucx_op_done(struct ucx_state *st, struct ucx_op *op, ucs_status_t status);
struct ucx_op *ucx_op_new(struct ucx_state *st, int kind, int peer, struct cdn_xfer *x,
                          size_t extra);
/* The MPI error for an operation with a peer that is gone or failed. */
int ucx_peer_err(struct ucx_peer *p, const char *what);

/* proto.c */
int ucx_send(struct cdn_transport *tp, struct cdn_xfer *sx);
int ucx_pull(struct cdn_transport *tp, struct cdn_xfer *rx);
int ucx_ack(struct cdn_transport *tp, int peer, uint64_t cookie);
int ucx_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len);
void ucx_dropped(struct cdn_transport *tp, struct cdn_xfer *sx);
/* A control message of type with a and payload to a peer (takes the lock). */
int ucx_ctrl(struct ucx_state *st, int peer, int type, uint64_t a, const void *data, size_t len,
             const char *what);
/* Hand one arrived message to the engine (no lock held). */
void ucx_deliver(struct ucx_state *st, struct ucx_in *in);
/* Report a completed operation (no lock held). */
void ucx_report(struct ucx_state *st, struct ucx_op *op);
/* Free an op without reporting it (finalize; lock held): off its peer's
 * rendezvous list first. */
void ucx_op_discard(struct ucx_state *st, struct ucx_op *op);
/* Fail what is held for a failed peer (no lock held). */
void ucx_fail_peer(struct ucx_state *st, struct ucx_peer *p, int err);

/* rma.c */
int ucx_mem_reg(struct cdn_transport *tp, void *addr, size_t len, struct cdn_mem_key *key);
void ucx_mem_dereg(struct cdn_transport *tp, const struct cdn_mem_key *key);
int ucx_get(struct cdn_transport *tp, struct cdn_xfer *x);
int ucx_put(struct cdn_transport *tp, struct cdn_xfer *x);
void ucx_rkey_request(struct ucx_state *st, struct ucx_peer *p, uint64_t id);
void ucx_rkey_arrived(struct ucx_state *st, struct ucx_peer *p, uint64_t id, const void *packed,
                      size_t len);
void ucx_rma_finalize(struct ucx_state *st);

static inline struct ucx_state *ucx_state_of(struct cdn_transport *tp)
{
    return (struct ucx_state *)tp->priv;
}

#endif
