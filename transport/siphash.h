/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit MAC for short
 * messages.  The UDP transport tags every datagram with it under the job
 * key (transport/udp/wire.c), so a datagram from outside the job, or one
 * damaged on the way, is dropped.
 *
 * Written here rather than taken from a crypto library: none is linked,
 * the algorithm is a page of public arithmetic, and it runs on every
 * datagram sent and received (the hot path), where a call through a
 * general MAC interface would cost more than the hashing.
 */
#ifndef CDN_TRANSPORT_SIPHASH_H
#define CDN_TRANSPORT_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* The key, as four little-endian words. */
struct cdn_siphash_key {
    uint64_t k0, k1;
};

/* The key from its 16 bytes. */
struct cdn_siphash_key cdn_siphash_key(const uint8_t bytes[16]);

/* The MAC of two pieces taken as one message (b may be empty). */
uint64_t cdn_siphash24(const struct cdn_siphash_key *k, const void *a, size_t alen, const void *b,
                       size_t blen);

#endif
