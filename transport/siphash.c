/* SipHash-2-4 (see siphash.h): two rounds per 8-byte word, four to finish. */
#include "transport/siphash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

struct sip {
    uint64_t v0, v1, v2, v3;
};

static inline void round1(struct sip *s)
{
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl(s->v2, 32);
}

static inline void absorb(struct sip *s, uint64_t m)
{
    s->v3 ^= m;
    round1(s);
    round1(s);
    s->v0 ^= m;
}

struct cdn_siphash_key cdn_siphash_key(const uint8_t bytes[16])
{
    struct cdn_siphash_key k = {load_le64(bytes), load_le64(bytes + 8)};
    return k;
}

uint64_t cdn_siphash24(const struct cdn_siphash_key *k, const void *a, size_t alen, const void *b,
                       size_t blen)
{
    struct sip s = {k->k0 ^ 0x736f6d6570736575ull, k->k1 ^ 0x646f72616e646f6dull,
                    k->k0 ^ 0x6c7967656e657261ull, k->k1 ^ 0x7465646279746573ull};
    unsigned char tail[8];
    size_t have = 0;  /* bytes of a word carried from a to b */
    const unsigned char *part[2] = {a, b};
    size_t plen[2] = {alen, blen};
    for (int i = 0; i < 2; i++) {
        const unsigned char *p = part[i];
        size_t n = plen[i];
        if (have > 0) {
            size_t take = 8 - have < n ? 8 - have : n;
            memcpy(tail + have, p, take);
            have += take;
            p += take;
            n -= take;
            if (have < 8)
                continue;
            absorb(&s, load_le64(tail));
            have = 0;
        }
        for (; n >= 8; p += 8, n -= 8)
            absorb(&s, load_le64(p));
        memcpy(tail, p, n);
        have = n;
    }
    uint64_t last = (uint64_t)(alen + blen) << 56;
    for (size_t i = 0; i < have; i++)
        last |= (uint64_t)tail[i] << (8 * i);
    absorb(&s, last);
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        round1(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
