/*
 * The ofi transport's state, shared by its files: fabric.c (choosing a
 * provider, opening fabric, domain, endpoint, completion queue and address
 * vector, the modex, the wait fd, closing) and ofi.c (the ops table: the
 * protocols, the completion queue, peer loss).
 *
 * One reliable-datagram endpoint (FI_EP_RDM) per instance, i.e. per
 * progress context, with one completion queue for everything it sends,
 * receives and reads.  Every posted operation's context is a struct
 * ofi_op, whose first member is the provider's struct fi_context: a
 * completion names the op, never anything the peer chose.
 *
 * Threads: only the poller (the engine's poll_lock holder) reads the
 * completion queue; any thread posts, under the instance's lock, which
 * also guards the lists of requests waiting for peers and the backlog of
 * operations the provider refused with -FI_EAGAIN.  The domain is opened
 * FI_THREAD_SAFE.  Upcalls into the engine are made without the lock.
 */
#ifndef CDN_OFI_H
#define CDN_OFI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "transport/transport.h"

#define CDN_MODEX_OFI_ADDR "cdn.ofi.addr"  /* the endpoint's fi_getname address */
#define OFI_ADDR_MAX 256                   /* largest endpoint name accepted */
#define OFI_EAGER_MAX 65536                /* largest eager, AM and DATA payload (less
                                            * where the provider's messages are shorter) */
#define OFI_PAYLOAD_MIN 4096               /* the RMA layer's active messages need this */
#define OFI_RX_COUNT 64                    /* receive buffers kept posted */
#define OFI_SPARE_MAX 64                   /* idle send buffers kept per size */
#define OFI_RMA_CHUNK (4u << 20)           /* largest single fi_read / fi_write */

/* Message types; the fields each uses:
 *   EAGER  h, len = h.bytes payload bytes follow
 *   RTS    h (CDN_WIRE_RNDV): with FI_RMA a = address, b = key of the data
 *   FIN    a = sender's cookie: the receiver has read the data
 *   ACK    a = sender's cookie (a synchronous eager message matched)
 *   AM     a = the engine's handler id, len payload bytes follow
 *   CTS    (no FI_RMA) a = sender's cookie, b = receiver's token, h.bytes = bytes
 *   DATA   (no FI_RMA) a = receiver's token, b = offset, len payload bytes follow
 *   PING   nothing: sent only to find out whether the peer is still there */
enum ofi_msg_type { M_EAGER = 1, M_RTS, M_FIN, M_ACK, M_AM, M_CTS, M_DATA, M_PING, M_TYPE_END };

struct ofi_msg {
    uint8_t type;
    uint8_t zero[3];
    int32_t from;       /* the sender's world rank */
    uint32_t len;       /* payload bytes after the header */
    uint32_t seq;       /* the sender's count of messages to this peer (see cq.c) */
    uint64_t a, b;
    struct cdn_wire_hdr h;
};

_Static_assert(sizeof(struct ofi_msg) == 64, "the message header is 64 bytes on the wire");

/* What an op is (struct ofi_op.kind). */
enum { OP_RECV = 1, OP_SEND, OP_READ, OP_WRITE };

/* A bulk move cut into chunks (one OP_READ or OP_WRITE each): a
 * rendezvous pull, or a get or put. */
enum { BULK_PULL = 1, BULK_GET, BULK_PUT };

struct ofi_bulk {
    int kind;                 /* BULK_* */
    int peer;
    struct cdn_xfer *x;
    void *bounce;             /* a pull into a non-contiguous receive: the data, whole */
    struct fid_mr *mr;        /* FI_MR_LOCAL: the local buffer's registration */
    int parts;                /* chunks not completed (lock held) */
    int err;                  /* the first chunk's error */
    struct ofi_bulk *next;    /* the instance's list of bulks in flight */
};

struct ofi_op {
    struct fi_context ctx;    /* first: the provider's, and what a completion names */
    int kind;                 /* OP_* */
    int peer;                 /* world rank (not for OP_RECV) */
    struct ofi_op *next;      /* the backlog, or a free list */
    struct fid_mr *mr;        /* FI_MR_LOCAL: the buffer's registration */
    size_t cap;               /* bytes of buffer after the op */
    size_t len;               /* OP_SEND: bytes to send */
    /* OP_READ, OP_WRITE */
    struct ofi_bulk *bulk;
    char *local;
    uint64_t remote, key;
    size_t chunk;
    unsigned char buf[];      /* OP_RECV, OP_SEND: header and payload */
};

enum { PEER_UP = 0, PEER_FAILED };

struct ofi_peer {
    fi_addr_t addr;
    int state;                /* PEER_* */
    uint64_t msgs_out;        /* EAGER and RTS posted to the peer (lock held) */
    uint64_t msgs_in;         /* EAGER and RTS received from it (poller only) */
    struct cdn_xfer *waiting; /* sends waiting for FIN, ACK or CTS */
    struct cdn_xfer *pulls;   /* receives waiting for DATA (no FI_RMA) */
    uint32_t seq_out;         /* numbers every message posted to the peer (lock held) */
    uint32_t seq_in;          /* the number of the next message to handle (poller only) */
    struct ofi_op *held;      /* receive buffers that completed early (poller only) */
};

/* A registration mem_reg made, found again by its key. */
struct ofi_reg {
    struct fid_mr *mr;
    uint64_t key;
    struct ofi_reg *next;
};

struct ofi_state {
    struct cdn_transport tp;
    int me, size;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    int wait_fd;              /* the completion queue's FI_WAIT_FD, or -1 */
    int timer_fd;             /* naps without a wait fd, keepalives with one (cq.c) */
    int sleep_fd;             /* epoll set of both: the transport's fd */
    long keepalive_ns;        /* CADENCE_OFI_KEEPALIVE_MS */
    uint64_t keepalive_at;    /* when poll next pings peers we wait for (poller only) */
    unsigned polls;           /* polls made (poller only): the clock is read every 64th */
    atomic_bool ping_due;     /* the keepalive timer fired while we slept */
    atomic_long nap_ns;       /* the timer's next interval (arm and poll) */
    long nap_max_ns;          /* CADENCE_OFI_NAP_MAX_US */
    bool rma;                 /* FI_RMA: rendezvous by fi_read, get and put */
    uint64_t write_flags;     /* fi_writemsg's: FI_DELIVERY_COMPLETE but over shm (fabric.c) */
    bool mr_local;            /* FI_MR_LOCAL: local buffers need a registration */
    bool mr_virt;             /* FI_MR_VIRT_ADDR: remote addresses are virtual ones */
    bool mr_prov_key;         /* FI_MR_PROV_KEY: the provider picks keys */
    bool mr_endpoint;         /* FI_MR_ENDPOINT: registrations are bound to the endpoint */
    atomic_uint_fast64_t next_key;  /* requested keys (not FI_MR_PROV_KEY) */
    size_t rma_chunk;
    size_t payload_max;       /* OFI_EAGER_MAX, or less: the provider's max_msg_size */
    pthread_mutex_t lock;
    struct ofi_peer *peers;   /* by world rank */
    struct ofi_op *backlog, *backlog_tail;  /* refused with -FI_EAGAIN, in order */
    struct ofi_op *spare_small, *spare_big;
    int nsmall, nbig;
    struct ofi_op *rx[OFI_RX_COUNT];
    struct ofi_op *rx_idle;   /* receive buffers waiting to be posted again */
    struct ofi_bulk *bulks;
    struct ofi_reg *regs;
    bool closing;             /* finalize: errors are expected now */
    atomic_int work;          /* ops posted or in the backlog, not yet completed */
};

/* fabric.c */
/* For mpiinfo: the providers offered here (registry.c's probe). */
void cdn_ofi_probe(char *out, size_t len);
/* Choose a provider and open everything but the address vector's entries;
 * NULL with *why (a static string) when it cannot start. */
struct ofi_state *cdn_ofi_open(const char **why);
int cdn_ofi_publish(struct ofi_state *st);
int cdn_ofi_insert_peers(struct ofi_state *st);
void cdn_ofi_close(struct ofi_state *st);
/* Register len bytes at addr with access flags; MPI error code. */
int cdn_ofi_reg(struct ofi_state *st, void *addr, size_t len, uint64_t access, struct fid_mr **mr);
/* The address a peer names byte 0 of a registration at addr by. */
uint64_t cdn_ofi_remote_base(const struct ofi_state *st, const void *addr);

/* ofi.c */
static inline struct ofi_state *cdn_ofi_state(struct cdn_transport *tp)
{
    return (struct ofi_state *)tp->priv;
}
/* delta more (or fewer) ops await a completion: engine work. */
static inline void cdn_ofi_work(struct ofi_state *st, int delta)
{
    atomic_fetch_add(&st->work, delta);
    cdn_progress_work_changed(delta);
}
/* Take the transfer a cookie names off a list when its state is want (0:
 * any); NULL if none.  Takes the lock. */
struct cdn_xfer *cdn_ofi_take(struct ofi_state *st, struct cdn_xfer **head, uint64_t cookie,
                              int want);
/* A rendezvous send's registration ends. */
void cdn_ofi_send_unreg(struct cdn_xfer *sx);
/* An op is done with (lock held). */
void cdn_ofi_op_put(struct ofi_state *st, struct ofi_op *op);
/* Post what waits in the backlog, in order (lock held). */
void cdn_ofi_backlog_flush(struct ofi_state *st);
int cdn_ofi_peer_err(int peer, const char *what);
/* Build and post one message to peer (lock held). */
int cdn_ofi_post_msg(struct ofi_state *st, int peer, const struct ofi_msg *m,
                     const void *payload, size_t plen);
/* The same for a message without payload, taking the lock. */
int cdn_ofi_send_ctrl(struct ofi_state *st, int peer, int type, uint64_t a, uint64_t b,
                      uint64_t bytes, const char *what);
/* The last chunk of a bulk completed: report it (lock not held). */
void cdn_ofi_bulk_done(struct ofi_state *st, struct ofi_bulk *b);

/* cq.c */
/* What a send in `waiting` waits for (its transfer's state). */
enum { WAIT_FIN = 1, WAIT_ACK, WAIT_CTS };
/* Post every receive buffer (at wireup). */
int cdn_ofi_rx_open(struct ofi_state *st);
void cdn_ofi_rx_close(struct ofi_state *st);
int cdn_ofi_poll(struct cdn_transport *tp);
/* The launcher says the peer ended: fail it (transport.h, peer_lost). */
void cdn_ofi_peer_lost(struct cdn_transport *tp, int peer);
int cdn_ofi_arm(struct cdn_transport *tp);
void cdn_ofi_disarm(struct cdn_transport *tp);
/* The fd the engine sleeps on: the wait fd, else the nap timer. */
int cdn_ofi_fd(struct cdn_transport *tp);

#endif
