/*
 * The TCP transport's state, shared by its files: conn.c (listening
 * address, lazy connections, the authenticated handshake, peer loss) and
 * tcp.c (the ops table: protocols, outbound queues, reading frames).
 *
 * One nonblocking socket per peer pair, opened lazily by the first send.
 * Both sides may connect at once; the connection opened by the lower rank
 * wins (the higher rank answers REJECT to the other), so each pair ends up
 * with exactly one connection and per-sender order holds: nothing but the
 * handshake is written before it is settled.
 *
 * Threads: only the poller (the engine's poll_lock holder) reads sockets
 * and runs the handshake; any thread writes, under the peer's lock, which
 * also guards the peer's state, outbound queue and its lists of requests
 * waiting for the peer.  Upcalls into the engine are made without it.
 * The sockets sit in the transport's own epoll set, whose fd is the one
 * the engine sleeps on.
 */
#ifndef CDN_TCP_H
#define CDN_TCP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/frames.h"
#include "transport/tcp/frame.h"
#include "transport/transport.h"

#define CDN_MODEX_TCP_ADDR "cdn.tcp.addr"  /* struct tcp_addr */

/* What epoll hands back: the first member of each watched object. */
enum { EP_LISTEN = 1, EP_TIMER, EP_CONN, EP_PEER };

struct tcp_addr {
    uint32_t ip;     /* network order */
    uint16_t port;   /* network order */
    uint16_t zero;
};

/* A socket during its handshake. */
enum { CONN_CONNECTING = 1, CONN_HELLO_SENT, CONN_AUTH, CONN_DEAD };

struct tcp_conn {
    int ep;                       /* EP_CONN */
    int fd;
    int role;                     /* CONN_* */
    int peer;                     /* world rank; -1 for an unauthenticated incoming one */
    struct tcp_hello buf;         /* hello or reply being read */
    size_t got;
    uint64_t deadline_ms;         /* CONN_AUTH: close unless authenticated by then */
    char from[64];                /* incoming: the remote address, for the log */
    struct tcp_conn *next;        /* the transport's list of handshaking sockets */
};

enum { PEER_NONE, PEER_CONNECTING, PEER_UP, PEER_GONE, PEER_FAILED };

struct tcp_out;  /* an item waiting to be written (tcp.c) */

struct tcp_peer {
    int ep;                       /* EP_PEER */
    struct cdn_fpeer fp;          /* world rank, lock, waiting lists (transport/frames.h) */
    int state;                    /* PEER_* */
    int fd;                       /* PEER_UP: the connection */
    bool pollout;                 /* EPOLLOUT is being watched */
    struct tcp_conn *out;         /* our connection attempt, until settled */
    struct tcp_out *outq, *outq_tail;
    struct tcp_out *out_spare;    /* queue items taken off, for reuse (lock held) */
    int nspare;
    /* reading (poller only) */
    unsigned char *rx;
    size_t rx_len, rx_off;
    struct cdn_xfer *body;        /* DATA payload being read into this receive */
    uint64_t body_off, body_left;
    bool bye;
};

struct tcp_state {
    struct cdn_transport tp;
    int me, size;
    int epfd;                     /* every socket of the transport, plus the timer */
    int listen_ep;                /* EP_LISTEN */
    int listen_fd;
    int timer_ep;                 /* EP_TIMER */
    int timer_fd;                 /* fires at the earliest handshake deadline */
    struct tcp_addr addr;
    uint8_t key[TCP_KEY_BYTES];
    struct tcp_peer *peers;       /* by world rank */
    struct cdn_frames_peers peer_table;  /* where their cdn_fpeers are (tp.priv) */
    pthread_mutex_t conns_lock;   /* guards the list; sockets are handled by the poller */
    struct tcp_conn *conns;       /* handshaking sockets and those closed in this poll */
    long auth_ms;                 /* CADENCE_TCP_AUTH_TIMEOUT */
    atomic_int queued;            /* items in outbound queues */
};

/* conn.c */
int tcp_listen(struct tcp_state *st);
/* Start connecting to a peer in PEER_NONE (its lock held). */
int tcp_connect(struct tcp_state *st, struct tcp_peer *p);
void tcp_accept_all(struct tcp_state *st);
void tcp_conn_event(struct tcp_state *st, struct tcp_conn *c, uint32_t events);
void tcp_conns_expire(struct tcp_state *st);
/* Free the sockets closed during this poll. */
void tcp_conns_reap(struct tcp_state *st);
void tcp_conns_close_all(struct tcp_state *st);
/* The peer is gone without saying BYE: fail what waits for it. */
void tcp_peer_failed(struct tcp_state *st, struct tcp_peer *p, const char *why);

/* tcp.c */
/* The connection to p is up (its lock held): write what queued for it. */
void tcp_peer_up(struct tcp_state *st, struct tcp_peer *p, int fd);
/* Watch (or stop watching) a peer's socket for room to write (lock held). */
void tcp_watch_out(struct tcp_state *st, struct tcp_peer *p, bool on);
/* Take everything queued and waiting off a peer (lock held) and fail it
 * (after unlocking) with err. */
struct tcp_failed {
    struct tcp_out *outq;
    struct cdn_frames_held held;
};
void tcp_take_all(struct tcp_state *st, struct tcp_peer *p, struct tcp_failed *f);
void tcp_fail_all(struct tcp_failed *f, int err);

uint64_t tcp_now_ms(void);

#endif
