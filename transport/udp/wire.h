/*
 * What travels in a UDP datagram between two Cadence processes, and the
 * checks every received datagram passes before it is used (wire.c); the
 * fault injector's settings (CADENCE_UDP_FAULTS).  Kept apart from the
 * socket so the checks can be tested alone.
 *
 * A datagram is an 88-byte header and up to CADENCE_UDP_MTU - 88 payload
 * bytes.  The header names the sender's world rank, carries a segment
 * number (DG_DATA), the receiver side's acknowledgement (cumulative
 * `ack`: every segment below it arrived; `sack`: bit i, segment ack+1+i
 * arrived too, for 256 segments), a timestamp and the echo of the peer's
 * (round trips measured on every acknowledgement, retransmissions
 * included), a per-socket datagram counter, and ends with a MAC, keyed by
 * the job key, of the rest of the header and the payload (see "The MAC"
 * below).  The payloads of one peer's
 * segments, in segment order, are a byte stream of TCP's frames
 * (transport/tcp/frame.h): the reliability layer below them is all that
 * differs.
 *
 * The MAC.  Which one is a function of the payload length alone, so both
 * sides agree:
 *  - below UDP_GMAC_MIN payload bytes (acknowledgements, probes, small
 *    messages): SipHash-2-4 (transport/siphash.c) under the job key, which
 *    costs less than a call into OpenSSL for so few bytes;
 *  - from UDP_GMAC_MIN up: AES-128-GMAC (AES-GCM, OpenSSL's libcrypto, with
 *    the header and payload as additional authenticated data and no
 *    plaintext), AES-NI and carry-less multiplication making it several
 *    times faster than SipHash on 16 KiB.  Its key is derived from the job
 *    key with SipHash (so the two MACs' keys differ).  Its 96-bit nonce is
 *    the sender's world rank (32 bits, little-endian) and the header's
 *    `ctr` (64 bits, little-endian): the sending socket's serial number in
 *    its process (high 16 bits) and that socket's count of datagrams sealed
 *    (low 48 bits, one per datagram, a retransmission too), so no nonce is
 *    used twice under a key.  GMAC's security rests on that uniqueness at
 *    the sender only: the receiver rebuilds the nonce from the header and
 *    keeps no state.  The 16-byte GCM tag is truncated to its first 8
 *    bytes to keep the header as it was: NIST SP 800-38D allows 64-bit tags;
 *    a forger's chance per try is about 2^-64 times the message's length in
 *    16-byte blocks (at most 2^12 here; SP 800-38D's Appendix C bounds how
 *    many failed checks a key should see with such tags, far more than any
 *    job's corrupted datagrams).
 */
#ifndef CDN_UDP_WIRE_H
#define CDN_UDP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/siphash.h"

#define UDP_MAGIC 0x55444e43u   /* "CDNU" in memory (little-endian) */
#define UDP_VERSION 3
#define UDP_DGRAM_MAX 65000     /* largest datagram sent (CADENCE_UDP_MTU's limit) */
#define UDP_DGRAM_MIN 1024      /* ... and smallest */
#define UDP_GMAC_MIN 256        /* payloads this long or longer are tagged with AES-GMAC, shorter with SipHash */
#define UDP_CTR_BITS 48         /* ctr: the socket's datagram count in the low bits, its serial above */

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
    uint64_t ctr;       /* GMAC's nonce with src: sending socket's serial << 48 | its datagram count */
    uint64_t mac;       /* of the 80 bytes above and the payload */
};

_Static_assert(sizeof(struct udp_dgram) == 88, "the datagram header is 88 bytes on the wire");

/* The MAC's keys, and an OpenSSL AES-GCM context holding the GMAC key
 * schedule.  The context is not safe to use from two threads at once: each
 * thread that seals or checks keeps one of its own (the UDP transport: one
 * per peer for sealing, under the peer's lock; one for the poller's checks). */
struct udp_mac {
    struct cdn_siphash_key sip;
    uint8_t aes[16];
    void *gcm;          /* EVP_CIPHER_CTX, keyed with aes; NULL until cdn_udp_mac_open */
};

/* Derive the keys from the job key (no context made yet). */
void cdn_udp_mac_key(struct udp_mac *m, const uint8_t job_key[16]);
/* Make m's GMAC context (from its keys); false when OpenSSL fails. */
bool cdn_udp_mac_open(struct udp_mac *m);
void cdn_udp_mac_close(struct udp_mac *m);
/* Copy the keys of from into m, with no context (cdn_udp_mac_open makes one). */
void cdn_udp_mac_copy_key(struct udp_mac *m, const struct udp_mac *from);

/* Set d->mac for the header and the payload after it (d->src, d->ctr and
 * d->len set; m open when d->len >= UDP_GMAC_MIN). */
void cdn_udp_dgram_seal(struct udp_dgram *d, struct udp_mac *m);

/* What cdn_udp_dgram_check found. */
enum udp_verdict { UDP_OK, UDP_MALFORMED, UDP_BAD_MAC, UDP_UNKNOWN_RANK };

/* Check n received bytes: their shape, the MAC, and that the sender's rank
 * is another of the job's (0..world_size-1, not self). */
enum udp_verdict cdn_udp_dgram_check(const void *buf, size_t n, struct udp_mac *m,
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
