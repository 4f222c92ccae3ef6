/*
 * What travels on a TCP connection between two Cadence processes, and the
 * checks every received byte passes before it is used (frame.c).  Kept
 * apart from the sockets so the checks can be fuzzed in a unit test
 * (tests/unit/test_tcp_frame.c).
 *
 * A connection starts with a handshake: the connecting side sends a HELLO
 * (magic, protocol version, its world rank, the job key); the accepting
 * side answers ACCEPT or REJECT (a simultaneous connect it resolved the
 * other way).  After ACCEPT both directions carry frames: a fixed 56-byte
 * header, the match header every transport uses inside it, and for EAGER
 * and DATA `len` payload bytes right after it.
 */
#ifndef CDN_TCP_FRAME_H
#define CDN_TCP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/inet.h"
#include "transport/transport.h"

#define TCP_MAGIC 0x544e4443u     /* "CDNT" in memory (little-endian) */
#define TCP_VERSION 2
#define TCP_KEY_BYTES CDN_JOB_KEY_BYTES
#define TCP_EAGER_MAX 65536       /* largest eager payload any process accepts */
#define TCP_DATA_CHUNK (512 * 1024) /* largest DATA payload in one frame */
#define TCP_AM_MAX 65536          /* largest active-message payload (as an eager one) */

enum tcp_hello_kind { TCP_HELLO = 1, TCP_ACCEPT, TCP_REJECT };

struct tcp_hello {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;                /* enum tcp_hello_kind */
    int32_t rank;                 /* the sender's world rank */
    uint32_t zero;
    uint8_t key[TCP_KEY_BYTES];   /* HELLO: the job key; replies: zero */
};

/* Frame types; the fields each uses:
 *   EAGER      h, len = h.bytes payload bytes follow
 *   RTS        h (CDN_WIRE_RNDV set): a rendezvous message is waiting
 *   CTS        a = sender's cookie, b = receiver's token, h.bytes = bytes to send
 *   DATA       a = receiver's token, b = offset, len payload bytes follow
 *   ACK        a = sender's cookie (a synchronous eager message matched)
 *   AM         a = the engine's handler id, len <= TCP_AM_MAX payload bytes follow
 *   BYE        the sender finalizes: its end of the connection closes next */
enum tcp_frame_type {
    F_EAGER = 1, F_RTS, F_CTS, F_DATA, F_ACK, F_AM, F_BYE, F_TYPE_END
};

struct tcp_frame {
    uint8_t type;
    uint8_t zero[3];
    uint32_t len;
    uint64_t a, b;
    struct cdn_wire_hdr h;
};

_Static_assert(sizeof(struct tcp_frame) == 56, "the frame header is 56 bytes on the wire");
_Static_assert(sizeof(struct tcp_hello) == 48, "the hello is 48 bytes on the wire");

/* Check a frame header: false with *why set when a field is out of range
 * (eager_max: the largest eager payload this process accepts). */
bool cdn_tcp_frame_check(const struct tcp_frame *f, uint32_t eager_max, const char **why);

/* Look at the bytes buffered from a connection: CDN_TCP_NEED_MORE when a
 * header (and an eager or active-message payload, which must arrive
 * whole) is incomplete,
 * CDN_TCP_BAD (with *why) when the header fails the check, else the number
 * of bytes the frame occupies in buf (header plus that payload; a DATA
 * payload is read separately, straight to its destination). */
#define CDN_TCP_NEED_MORE 0
#define CDN_TCP_BAD ((size_t)-1)
size_t cdn_tcp_frame_parse(const void *buf, size_t avail, uint32_t eager_max,
                           struct tcp_frame *out, const char **why);

/* Check a received HELLO against the job: the rank it names (0..size-1,
 * not self) in *rank, or false with *why. */
bool cdn_tcp_hello_check(const struct tcp_hello *h, const uint8_t key[TCP_KEY_BYTES],
                         int world_size, int self, int *rank, const char **why);

/* Check a reply to our HELLO: its kind (TCP_ACCEPT or TCP_REJECT), or 0 with *why. */
int cdn_tcp_reply_check(const struct tcp_hello *h, const char **why);

#endif
