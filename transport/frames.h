/*
 * The message protocol of the transports that carry TCP's frames
 * (transport/tcp/frame.h) over an ordered, reliable channel per peer:
 * tcp/ (a connection) and udp/ (its own reliability layer over
 * datagrams).  What a send, a receive, an acknowledgement and an active
 * message say in frames, and what the frames that arrive mean for the
 * engine, live here once; how the frames reach the peer is each
 * transport's (its usable and put ops).
 *
 * Per peer, under its lock: the sends waiting for the peer (CTS, a
 * synchronous send's ACK) and the receives waiting for DATA, as
 * transport/xfer_list.h lists, so a cookie or token from the wire is
 * used only after it is found there; and the numbers of the messages
 * each way (a cancel names a message by its number).
 */
#ifndef CDN_TRANSPORT_FRAMES_H
#define CDN_TRANSPORT_FRAMES_H

#include <pthread.h>
#include <stdint.h>

#include "transport/tcp/frame.h"
#include "transport/transport.h"

/* What a send in `waiting` waits for (its transfer's state). */
enum { CDN_FRAMES_WAIT_CTS = 1, CDN_FRAMES_WAIT_ACK };

struct cdn_fpeer;

struct cdn_fpeer_ops {
    /* Make the peer usable for writing (connect on first use, find its
     * address), or the error to give an operation `what` with it (lock held). */
    int (*usable)(struct cdn_transport *tp, struct cdn_fpeer *fp, const char *what);
    /* Write a frame and its payload, or queue a copy (lock held, usable). */
    int (*put)(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
               const void *payload, size_t len);
};

struct cdn_fpeer {
    int world;                    /* its world rank */
    pthread_mutex_t lock;
    const struct cdn_fpeer_ops *ops;
    struct cdn_xfer *waiting;     /* sends waiting for CTS or ACK */
    struct cdn_xfer *pulls;       /* receives waiting for DATA */
    uint64_t msgs_out;            /* EAGER and RTS frames queued to the peer (lock held) */
    uint64_t msgs_in;             /* EAGER and RTS frames read from it (poller only) */
};

void cdn_fpeer_init(struct cdn_fpeer *fp, int world, const struct cdn_fpeer_ops *ops);

/* Where a transport keeps its peers' cdn_fpeer: in an array of its own
 * peer structs, by world rank.  A transport using the ops below points
 * its tp->priv at this. */
struct cdn_frames_peers {
    void *base;      /* the array */
    size_t stride;   /* the size of one of its peers */
    size_t offset;   /* where the cdn_fpeer is in one */
};

/* The transport ops send, pull, ack, am_send and dropped, in frames. */
int cdn_frames_send(struct cdn_transport *tp, struct cdn_xfer *sx);
int cdn_frames_pull(struct cdn_transport *tp, struct cdn_xfer *rx);
int cdn_frames_ack(struct cdn_transport *tp, int peer, uint64_t cookie);
int cdn_frames_am(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len);
void cdn_frames_dropped(struct cdn_transport *tp, struct cdn_xfer *sx);
/* ... as the entries of an ops table. */
#define CDN_FRAMES_OPS                                                                       \
    .send = cdn_frames_send, .pull = cdn_frames_pull, .ack = cdn_frames_ack,                 \
    .am_send = cdn_frames_am, .dropped = cdn_frames_dropped

/* The peer broke the protocol (a frame that fits nothing that waits):
 * end the job, naming it. */
_Noreturn void cdn_frames_bad_peer(const struct cdn_transport *tp, const struct cdn_fpeer *fp,
                                   const char *why);

/* A frame arrived (poller, lock not held): EAGER, RTS, ACK and AM are
 * handled here; CTS, DATA and BYE are the caller's, with the helpers
 * below.  A frame that fits nothing ends the job (cdn_frames_bad_peer). */
void cdn_frames_arrived(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
                        const unsigned char *payload);
/* A CTS: the send it names, taken off `waiting`, when it is to stream
 * data (NULL when it wanted none: then it is done). */
struct cdn_xfer *cdn_frames_cts(struct cdn_transport *tp, struct cdn_fpeer *fp,
                                const struct tcp_frame *f);
/* A DATA header: the receive its payload goes to. */
struct cdn_xfer *cdn_frames_data(struct cdn_transport *tp, struct cdn_fpeer *fp,
                                 const struct tcp_frame *f);
/* r->moved bytes of a receive are in: done when that is all of them. */
void cdn_frames_data_moved(struct cdn_fpeer *fp, struct cdn_xfer *r);

/* What waited for a peer, taken off it (lock held) to fail after unlocking. */
struct cdn_frames_held {
    struct cdn_xfer *waiting, *pulls;
};
void cdn_frames_take(struct cdn_fpeer *fp, struct cdn_frames_held *h);
void cdn_frames_fail(struct cdn_frames_held *h, int err);

#endif
