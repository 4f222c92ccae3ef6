/*
 * The UDP transport's state, shared by its files: rel.c (the reliability
 * layer: the socket, segments, acknowledgements, retransmission, the
 * timer, fault injection, peer loss) and udp.c (the ops table: TCP's
 * frames carried over that layer, eager and rendezvous).
 *
 * One socket per progress context, no connections.  Between each pair of
 * instances, each direction is a numbered sequence of segments (one per
 * datagram) whose payloads, in order, form a byte stream of frames.  The
 * sender keeps each segment in a window slot until it is acknowledged
 * (cumulatively or selectively), sends it again when its retransmission
 * timeout (RFC 6298's estimator) passes or later segments were
 * acknowledged around it, and holds what does not fit the window in an
 * outbound queue.  The receiver drops duplicates and segments past its
 * window, keeps early ones until the gap fills, and acknowledges on its
 * next datagram to the peer, after a short delay, or at once when
 * something arrived out of order.
 *
 * Threads: only the poller (the engine's poll_lock holder) reads the
 * socket and reassembles; any thread sends, under the peer's lock, which
 * guards the peer's sending state, outbound queue, waiting lists and the
 * acknowledgement it owes.  Upcalls into the engine are made without it.
 */
#ifndef CDN_UDP_H
#define CDN_UDP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/frames.h"
#include "transport/inet.h"
#include "transport/siphash.h"
#include "transport/tcp/frame.h"
#include "transport/transport.h"
#include "transport/udp/wire.h"

#define CDN_MODEX_UDP_ADDR "cdn.udp.addr"  /* struct udp_addr */

struct udp_addr {
    uint32_t ip;     /* network order */
    uint16_t port;   /* network order */
    uint16_t zero;
    /* the sender's CADENCE_UDP_MTU and CADENCE_UDP_WINDOW (network order):
     * a peer's segments must fit ours, so both must match (fetch_addr) */
    uint32_t mtu;
    uint32_t window;
};

/* A sent segment kept until acknowledged. */
struct udp_seg {
    unsigned char *buf;   /* header and payload (the MTU, kept once made) */
    uint64_t sent_us;     /* when last sent */
    uint32_t tx;          /* times sent */
    bool sacked;          /* acknowledged selectively */
};

/* A segment that arrived before the ones ahead of it. */
struct udp_early {
    unsigned char *buf;   /* its payload (kept once made) */
    uint32_t len;
    bool here;
};

enum { PEER_OK, PEER_GONE, PEER_FAILED };

struct udp_out;  /* a frame, or a rendezvous stream, waiting for window space (udp.c) */

struct udp_peer {
    struct cdn_fpeer fp;          /* world rank, lock, waiting lists (transport/frames.h) */
    int state;                    /* PEER_* */
    bool addr_known;
    struct sockaddr_in sa;        /* its socket */
    bool touched;                 /* anything sent to or received from it */
    /* sending (lock held) */
    struct udp_mac seal;          /* MAC keys and GMAC context for what we send it */
    uint64_t snd_una, snd_nxt;    /* oldest unacknowledged segment, next new one */
    struct udp_seg *win;          /* window slots, by seq % window */
    struct udp_out *outq, *outq_tail;
    uint64_t srtt_us, rttvar_us, rto_us;
    bool rtt_valid;
    uint64_t heard_us;            /* last valid datagram from it, or when we began waiting */
    uint64_t probe_us;            /* last probe sent */
    /* the acknowledgement owed (lock held: senders piggyback it) */
    uint64_t rcv_nxt;             /* next segment expected from it */
    uint64_t rcv_sack[UDP_SACK_WORDS];
    uint32_t ts_recent;           /* the ts of its newest data segment, to echo */
    unsigned ack_owed;            /* in-order segments not yet acknowledged */
    uint64_t ack_due_us;
    bool owing;                   /* on the poller's list of peers owed an acknowledgement */
    bool bye;                     /* it said BYE: its silence is an ending, not a failure */
    /* receiving (poller only) */
    struct udp_early *early;      /* by seq % window */
    unsigned char *rx;            /* the frame stream, in order, not yet handled */
    size_t rx_len;
};

/* CADENCE_TRANSPORT_REPORT's counts. */
enum {
    UC_SENT, UC_RETRANS, UC_RECV, UC_DUP, UC_BAD_MAC, UC_UNKNOWN, UC_WINDOW,
    UC_F_DROP, UC_F_DUP, UC_F_REORDER, UC_F_CORRUPT, UC_N
};

#define UDP_RBUF 65536  /* the receive buffer: any datagram, whole */
#define UDP_HELD_MAX 8  /* datagrams the fault injector holds back to reorder */

struct udp_state {
    struct cdn_transport tp;
    int me, size;
    int fd;                       /* the socket */
    int timer_fd;                 /* retransmission, delayed acks, probes */
    int epfd;                     /* both: the fd the engine sleeps on */
    struct udp_addr addr;
    uint8_t key[CDN_JOB_KEY_BYTES];
    struct udp_mac mac;           /* the poller's, for checking (transport/udp/wire.h) */
    uint64_t ctr_base;            /* this socket's serial in the process, << UDP_CTR_BITS */
    atomic_uint_least64_t ctr;    /* datagrams sealed: the low bits of each one's ctr */
    struct udp_peer *peers;       /* by world rank */
    struct cdn_frames_peers peer_table;  /* where their cdn_fpeers are (tp.priv) */
    size_t mtu;                   /* CADENCE_UDP_MTU: the largest datagram */
    size_t mss;                   /* payload bytes per segment */
    unsigned window;              /* CADENCE_UDP_WINDOW: segments in flight per peer */
    uint64_t rto_min_us, rto_max_us, rto_init_us;
    uint64_t ack_delay_us;        /* CADENCE_UDP_ACK_DELAY_US */
    uint64_t peer_timeout_us;     /* CADENCE_UDP_PEER_TIMEOUT_MS */
    uint64_t probe_us;            /* probe a silent peer we wait for this often */
    bool closing;                 /* finalizing: a silent peer is gone, not failed */
    pthread_mutex_t timer_lock;
    _Atomic uint64_t timer_at;    /* when timer_fd fires (0: not armed) */
    /* poller only */
    unsigned char *rbuf;          /* one received datagram */
    int *owing;                   /* peers owed an acknowledgement */
    int nowing;
    struct udp_faults faults;
    uint64_t rng;
    unsigned char *held[UDP_HELD_MAX];  /* datagrams held back (fault injection) */
    size_t held_len[UDP_HELD_MAX];
    int nheld;
    atomic_ulong count[UC_N];
};

/* rel.c */
uint64_t udp_now_us(void);
/* Open the socket and timer, publish the address (MPI_Init, before the fence). */
int udp_open(struct udp_state *st);
/* Make the peer usable for sending (lock held): its address fetched once. */
int udp_usable(struct udp_state *st, struct udp_peer *p, const char *what);
/* Room for how many more segments in p's window (lock held). */
unsigned udp_room(struct udp_state *st, struct udp_peer *p);
/* The payload area of the next new segment (lock held, room > 0). */
unsigned char *udp_seg_payload(struct udp_state *st, struct udp_peer *p);
/* Send the next new segment with len payload bytes (lock held). */
void udp_seg_push(struct udp_state *st, struct udp_peer *p, size_t len);
/* Read the socket and handle what came, run due timers; events handled. */
int udp_poll_socket(struct udp_state *st);
/* Take everything held for p (lock held) and fail it after unlocking. */
void udp_peer_failed(struct udp_state *st, struct udp_peer *p, const char *why);
void udp_close(struct udp_state *st);
/* Print the report line (CADENCE_TRANSPORT_REPORT). */
void udp_report(struct udp_state *st);

/* udp.c */
/* Segments were acknowledged: move what waits for window space (lock
 * held); sends whose data is now all in segments are chained on *done. */
void udp_flush(struct udp_state *st, struct udp_peer *p, struct cdn_xfer **done);
/* Report finished sends (lock not held). */
void udp_report_done(struct cdn_xfer *done);
/* n in-order stream bytes from p (poller, lock not held). */
void udp_stream_in(struct udp_state *st, struct udp_peer *p, const unsigned char *data, size_t n);
/* Fail everything p held (taken off it under its lock), with err. */
struct udp_failed {
    struct udp_out *outq;
    struct cdn_frames_held held;
};
void udp_take_all(struct udp_peer *p, struct udp_failed *f);
void udp_fail_all(struct udp_failed *f, int err);

#endif
