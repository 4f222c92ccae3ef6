/*
 * What travels in a UDP datagram between two Cadence processes, and the
 * checks every received datagram passes before it is used (wire.c); the
 * fault injector's settings (CADENCE_UDP_FAULTS).  Kept apart from the
 * socket so the checks can be tested alone.
 *
 * A datagram is an 80-byte header and up to CADENCE_UDP_MTU - 80 payload
 * bytes.  The header names the sender's world rank, carries a segment
 * number (DG_DATA), the receiver side's acknowledgement (cumulative
 * `ack`: every segment below it arrived; `sack`: bit i, segment ack+1+i
 * arrived too, for 256 segments), a timestamp and the echo of the peer's
 * (round trips measured on every acknowledgement, retransmissions
 * included), and ends with a SipHash-2-4 MAC, keyed by the job key,
 * of the rest of the header and the payload.  The payloads of one peer's
 * segments, in segment order, are a byte stream of TCP's frames
 * (transport/tcp/frame.h): the reliability layer below them is all that
 * differs.
 */
#ifndef CDN_UDP_WIRE_H
#define CDN_UDP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/siphash.h"

#define UDP_MAGIC 0x55444e43u   /* "CDNU" in memory (little-endian) */
#define UDP_VERSION 2
#define UDP_DGRAM_MAX 65000     /* largest datagram sent (CADENCE_UDP_MTU's limit) */
#define UDP_DGRAM_MIN 1024      /* ... and smallest */

enum {
    DG_DATA = 0x1,   /* carries segment seq and its payload */
    DG_PROBE = 0x2,  /* the sender waits to hear from us: acknowledge at once */
};

#define UDP_SACK_WORDS 4   /* selective acknowledgement: 256 segments past `ack` */

struct udp_dgram {
    uint32_t magic;
    uint8_t version;
    uint8_t flags;      /* DG_* */
    uint16_t len;       /* payload bytes after the header */
    int32_t src;        /* the sender's world rank */
    uint32_t ts;        /* the sender's clock when it sent this (µs, low 32 bits, never 0) */
    uint32_t ts_echo;   /* the ts of the newest data segment the sender got from us (0: none) */
    uint32_t zero;
    uint64_t seq;       /* DG_DATA: the segment's number (from 1) */
    uint64_t ack;       /* every segment below this one has arrived */
    uint64_t sack[UDP_SACK_WORDS];  /* bit i (word i / 64): segment ack + 1 + i arrived too */
    uint64_t mac;       /* of the 72 bytes above and the payload */
};

_Static_assert(sizeof(struct udp_dgram) == 80, "the datagram header is 80 bytes on the wire");

/* Set d->mac for the header and the payload after it. */
void cdn_udp_dgram_seal(struct udp_dgram *d, const struct cdn_siphash_key *key);

/* What cdn_udp_dgram_check found. */
enum udp_verdict { UDP_OK, UDP_MALFORMED, UDP_BAD_MAC, UDP_UNKNOWN_RANK };

/* Check n received bytes: their shape, the MAC, and that the sender's rank
 * is another of the job's (0..world_size-1, not self). */
enum udp_verdict cdn_udp_dgram_check(const void *buf, size_t n, const struct cdn_siphash_key *key,
                                     int world_size, int self);

/* CADENCE_UDP_FAULTS: per-datagram probabilities applied on receive. */
struct udp_faults {
    double drop, dup, reorder, corrupt;
    uint64_t seed;
    bool on;
};

/* Parse "drop=P,dup=P,reorder=P,corrupt=P,seed=N" (any key may be left
 * out; P in [0, 1)); false with why filled when it does not parse. */
bool cdn_udp_faults_parse(const char *spec, struct udp_faults *f, char *why, size_t whylen);

#endif
