/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit MAC for short
 * messages.  The UDP transport tags its short datagrams with it under the
 * job key (acknowledgements, probes, payloads below UDP_GMAC_MIN bytes:
 * transport/udp/wire.c), so a datagram from outside the job, or one damaged
 * on the way, is dropped; longer ones get AES-GMAC from OpenSSL's libcrypto,
 * whose AES-GMAC key is derived with SipHash from the job key.
 *
 * Written here although libcrypto is linked: the algorithm is a page of
 * public arithmetic, and for the few bytes of a short datagram a call
 * through OpenSSL's EVP interface (hundreds of ns: setting the nonce,
 * finishing, reading the tag) costs more than the hashing.  At about
 * 1-2 GB/s it is too slow for long payloads, hence GMAC there.
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
