/*
 * The verbs transport's state, shared by its files: device.c (choosing
 * and opening the device, the queues and buffers made once, the queue
 * pairs, the modex exchange and their walk to RTS, teardown), verbs.c
 * (the ops table: messages, the completion queue, flow control, peer
 * loss; its header comment describes the design) and rdma.c (pulls,
 * gets, puts, registrations).
 *
 * Threads: the poller (the engine's poll_lock holder of this instance's
 * context) handles completions; any thread posts, under the peer's lock,
 * which guards the peer's state, its queue pair's send slots, its queue
 * of what waits for a slot and its lists of transfers waiting for it.
 * The completion queue and the completions a sleeper found while arming
 * are under cq_lock, the pool of send buffers under buf_lock, memory
 * registrations handed out by mem_reg under reg_lock.  Upcalls into the
 * engine are made without any of these held.
 */
#ifndef CDN_VERBS_H
#define CDN_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/transport.h"

#define CDN_MODEX_VERBS_ADDR "cdn.verbs.addr"  /* struct vb_addr and its qpn[] */

#define VB_MAGIC 0x56444e43u      /* "CNDV" in memory (little-endian) */
#define VB_VERSION 1
#define VB_PAYLOAD_MIN 4096       /* receive buffers hold at least this (active messages) */
#define VB_EAGER_MAX 65536        /* the largest CADENCE_VERBS_EAGER_LIMIT */
#define VB_INLINE_WANT 128        /* inline data asked of each queue pair */
#define VB_BOUNCE (1u << 20)      /* the staging buffer of a read into a non-contiguous receive */
#define VB_RDMA_CHUNK (1u << 30)  /* the largest single RDMA read or write we post */
#define VB_STASH 32               /* completions a sleeper may take off the queue while arming */

/* What one process publishes (key CDN_MODEX_VERBS_ADDR through
 * cdn_transport_modex_key), followed by nqpn queue pair numbers: the one
 * it made for each world rank (0 at its own). */
struct vb_addr {
    uint32_t magic;
    uint16_t version;
    uint16_t lid;                 /* its port's LID (0 on RoCE) */
    uint8_t gid[16];              /* its GID at CADENCE_VERBS_GID_INDEX */
    uint32_t psn;                 /* the first packet sequence number of its queue pairs */
    uint32_t payload;             /* the eager payload its receive buffers hold */
    uint8_t mtu;                  /* enum ibv_mtu: its port's active MTU */
    uint8_t rd_atomic;            /* RDMA reads it serves at once on one queue pair */
    uint8_t eth;                  /* its port is Ethernet (RoCE): address by GID */
    uint8_t zero;
    uint32_t nqpn;                /* the job's size */
};

_Static_assert(sizeof(struct vb_addr) == 40, "the published address is 40 bytes");

/* Messages (one send each, into a receive buffer of the SRQ); the fields
 * each uses:
 *   EAGER  h, len = h.bytes payload bytes follow
 *   RTS    h (CDN_WIRE_RNDV set), a = the data's address, b = its rkey
 *   FIN    a = the sender's cookie, b = 0 or 1 (the receiver could not
 *          read the data), h.bytes = the bytes it read
 *   ACK    a = the sender's cookie (a synchronous eager message matched)
 *   AM     a = the engine's handler id, len payload bytes follow
 *   BYE    the sender finalizes: nothing more comes from it */
enum vb_frame_type { VB_EAGER = 1, VB_RTS, VB_FIN, VB_ACK, VB_AM, VB_BYE, VB_TYPE_END };

struct vb_frame {
    uint8_t type;
    uint8_t zero[3];
    uint32_t len;                 /* payload bytes after the header */
    int32_t src;                  /* the sender's world rank (checked against the QP) */
    uint32_t zero2;
    uint64_t a, b;
    struct cdn_wire_hdr h;
};

_Static_assert(sizeof(struct vb_frame) == 64, "the message header is 64 bytes on the wire");

/* What a work request's wr_id points at: every such object starts with
 * its kind. */
enum vb_wr_kind { WR_PEER = 1, WR_SEND, WR_RECV, WR_OP };

/* A registered buffer of the send pool (WR_SEND) or of the SRQ (WR_RECV). */
struct vb_buf {
    int kind;
    struct vb_peer *peer;         /* WR_SEND: posted to it */
    unsigned char *data;
    struct vb_buf *next;          /* the free pool; the receives to post again */
};

/* Something waiting in a peer's queue for a send slot (or a pool buffer). */
enum { OUT_FRAME = 1, OUT_OP };

struct vb_out {
    struct vb_out *next;
    int kind;
    struct vb_op *op;             /* OUT_OP */
    size_t len;                   /* OUT_FRAME: header and payload copied after the item */
};

/* RDMA reads or writes moving one transfer: a rendezvous receive's pull
 * (reads, then FIN), a get (reads) or a put (writes). */
enum { OP_PULL = 1, OP_GET, OP_PUT };

struct vb_op {
    int kind;                     /* WR_OP */
    int role;                     /* OP_* */
    struct vb_peer *peer;
    struct cdn_xfer *x;
    struct ibv_mr *mr;            /* the local memory's registration (or the bounce's) */
    unsigned char *local;         /* where the data goes or comes from (the bounce: NULL) */
    unsigned char *bounce;        /* a pull into a non-contiguous receive: staging */
    size_t chunk;                 /* bytes per work request */
    uint64_t raddr;
    uint32_t rkey;
    uint64_t total, posted, done;
    int inflight;                 /* work requests posted and not completed */
    bool queued;                  /* out is in the peer's queue */
    bool over;                    /* completed (or failed) upward; freed once inflight is 0 */
    int err;
    struct vb_out out;            /* OUT_OP, in the peer's queue */
    struct vb_op *next;           /* the peer's ops in flight */
};

enum { PEER_NONE, PEER_UP, PEER_GONE, PEER_FAILED };

struct vb_peer {
    int kind;                     /* WR_PEER: the wr_id of an inline send */
    int world;
    pthread_mutex_t lock;
    int state;                    /* PEER_* */
    struct ibv_qp *qp;
    int sq_used;                  /* send work requests posted and not completed */
    struct vb_out *outq, *outq_tail;
    struct cdn_xfer *waiting;     /* sends waiting for FIN or ACK */
    struct vb_op *ops;            /* pulls, gets and puts in flight */
    uint64_t msgs_out;            /* EAGER and RTS messages sent (lock held) */
    uint64_t msgs_in;             /* ... received (poller only) */
    bool bye;                     /* it said BYE (poller only) */
};

/* A registration handed out by mem_reg. */
struct vb_reg {
    struct ibv_mr *mr;
    struct vb_reg *next;
};

struct vb_state {
    struct cdn_transport tp;
    int me, size;
    char devname[IBV_SYSFS_NAME_MAX];
    struct ibv_context *dev;
    struct ibv_pd *pd;
    struct ibv_comp_channel *chan;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    uint8_t port;
    int gid_index;
    struct ibv_port_attr port_attr;
    union ibv_gid gid;
    bool eth;
    uint32_t psn;
    uint32_t max_msg;             /* the largest work request the port takes */
    int rd_atomic;                /* reads we issue at once on a QP (the device's limit) */
    int rd_serve;                 /* reads we serve at once on a QP */
    uint8_t sl, timeout;          /* CADENCE_VERBS_SL, CADENCE_VERBS_TIMEOUT */
    int sq_depth;                 /* send work requests per QP */
    int srq_depth;                /* receive buffers posted */
    int send_limit;               /* send work requests in flight over all QPs (the CQ's room) */
    atomic_int sends_out;
    uint32_t max_inline;
    size_t payload;               /* bytes a receive buffer holds after the header */
    size_t buf_size;              /* header + payload, rounded up */
    /* the send pool */
    int nbufs;
    unsigned char *sbuf_mem;
    struct ibv_mr *sbuf_mr;
    struct vb_buf *sbufs, *sfree;
    pthread_mutex_t buf_lock;
    /* the SRQ's buffers */
    unsigned char *rbuf_mem;
    struct ibv_mr *rbuf_mr;
    struct vb_buf *rbufs;
    struct vb_buf *repost;        /* handled this poll, to post again (poller only) */
    int nrepost;
    struct vb_peer *peers;        /* by world rank */
    pthread_mutex_t cq_lock;
    struct ibv_wc stash[VB_STASH];
    int nstash;
    atomic_int queued;            /* items in the peers' queues */
    pthread_mutex_t reg_lock;
    struct vb_reg *regs;
    struct vb_op *zombies;        /* ops failed upward while work requests of theirs were
                                   * still posted: freed when the last completes (poller) */
    bool closing;                 /* finalize: arrivals other than BYE and FIN are dropped */
};

/* verbs.c */
/* A send slot on p's QP (and room in the completion queue), or false
 * (lock held); and its return when the work request completed. */
bool cdn_vb_slot_take(struct vb_state *st, struct vb_peer *p);
void cdn_vb_slot_give(struct vb_state *st, struct vb_peer *p);
/* Append to the peer's queue (lock held). */
void cdn_vb_enqueue(struct vb_state *st, struct vb_peer *p, struct vb_out *o);
/* Error codes: a failed ibv_post_send (e: its errno), a peer not up. */
int cdn_vb_post_err(struct vb_peer *p, int e);
int cdn_vb_peer_err(struct vb_peer *p, const char *what);
/* A message without payload to the peer, in order (takes its lock). */
int cdn_vb_send_ctrl(struct vb_state *st, struct vb_peer *p, int type, uint64_t a, uint64_t b,
                     uint64_t bytes, const char *what);
/* The peer cannot be reached (poller only): fail what waits for it. */
void cdn_vb_peer_failed(struct vb_state *st, struct vb_peer *p, const char *why);

/* rdma.c */
/* Post an op's next work requests: 1 when nothing more can go now, 0
 * when it waits for a slot, minus an errno of ibv_post_send (lock held). */
int cdn_vb_op_post(struct vb_state *st, struct vb_peer *p, struct vb_op *op);
/* One of its work requests completed (poller). */
void cdn_vb_op_completed(struct vb_state *st, struct vb_op *op, const struct ibv_wc *wc);
/* Deregister and free an op whose work requests are all back. */
void cdn_vb_op_free(struct vb_op *op);
/* The ops of the table. */
int cdn_vb_pull(struct cdn_transport *tp, struct cdn_xfer *rx);
int cdn_vb_get(struct cdn_transport *tp, struct cdn_xfer *x);
int cdn_vb_put(struct cdn_transport *tp, struct cdn_xfer *x);
int cdn_vb_mem_reg(struct cdn_transport *tp, void *addr, size_t len, struct cdn_mem_key *key);
void cdn_vb_mem_dereg(struct cdn_transport *tp, const struct cdn_mem_key *key);

/* device.c */
/* Open the device and make what lives for the whole instance; NULL with
 * *why filled when it cannot (why[0] left '\0': it does not apply). */
struct vb_state *cdn_vb_open(char *why, size_t why_len);
/* Make a QP per peer, moved to INIT, and publish the address. */
int cdn_vb_qps_create(struct vb_state *st);
/* Read every peer's address and move our QP for it to RTS. */
int cdn_vb_qps_connect(struct vb_state *st);
/* Post n SRQ receive buffers chained by next. */
int cdn_vb_srq_post(struct vb_state *st, struct vb_buf *list);
/* Destroy everything cdn_vb_open and cdn_vb_qps_create made, and st. */
void cdn_vb_close(struct vb_state *st);

#endif
