/*
 * The checks on every datagram a UDP socket receives (see wire.h), and the
 * parser of CADENCE_UDP_FAULTS.  A datagram is used only when its shape is
 * right and its MAC matches under the job key: anything from outside the
 * job, or damaged on the way, stops here.
 */
#include "transport/udp/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define MAC_COVERS offsetof(struct udp_dgram, mac)

void cdn_udp_mac_key(struct udp_mac *m, const uint8_t job_key[16])
{
    m->sip = cdn_siphash_key(job_key);
    m->gcm = NULL;
    /* the AES key: two SipHash tags of fixed labels, so it is not the SipHash key */
    static const char label0[] = "cadence udp aes-gmac key, half 0";
    static const char label1[] = "cadence udp aes-gmac key, half 1";
    uint64_t h[2] = {cdn_siphash24(&m->sip, label0, sizeof label0 - 1, NULL, 0),
                     cdn_siphash24(&m->sip, label1, sizeof label1 - 1, NULL, 0)};
    for (int i = 0; i < 16; i++)
        m->aes[i] = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
}

void cdn_udp_mac_copy_key(struct udp_mac *m, const struct udp_mac *from)
{
    m->sip = from->sip;
    memcpy(m->aes, from->aes, sizeof m->aes);
    m->gcm = NULL;
}

bool cdn_udp_mac_open(struct udp_mac *m)
{
    if (m->gcm != NULL)
        return true;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (c == NULL)
        return false;
    /* the key schedule once; each datagram sets only its nonce (12 bytes: GCM's default) */
    if (EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, m->aes, NULL) != 1) {
        EVP_CIPHER_CTX_free(c);
        return false;
    }
    m->gcm = c;
    return true;
}

void cdn_udp_mac_close(struct udp_mac *m)
{
    EVP_CIPHER_CTX_free(m->gcm);
    m->gcm = NULL;
}

/* AES-128-GMAC of the header's first MAC_COVERS bytes and the payload,
 * under the nonce (src, ctr), truncated to 8 bytes (little-endian word);
 * 0 with ok false when OpenSSL fails. */
static uint64_t gmac(struct udp_mac *m, const void *hdr, int32_t src, uint64_t ctr,
                     const void *payload, size_t len, bool *ok)
{
    EVP_CIPHER_CTX *c = m->gcm;
    unsigned char iv[12], tag[16], none[16];
    uint32_t s = (uint32_t)src;
    for (int i = 0; i < 4; i++)
        iv[i] = (unsigned char)(s >> (8 * i));
    for (int i = 0; i < 8; i++)
        iv[4 + i] = (unsigned char)(ctr >> (8 * i));
    int outl;
    *ok = c != NULL && EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv) == 1 &&
          EVP_EncryptUpdate(c, NULL, &outl, hdr, (int)MAC_COVERS) == 1 &&
          (len == 0 || EVP_EncryptUpdate(c, NULL, &outl, payload, (int)len) == 1) &&
          EVP_EncryptFinal_ex(c, none, &outl) == 1 &&
          EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    if (!*ok)
        return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | tag[i];
    return v;
}

/* The MAC of a datagram whose header is hdr (src, ctr, len its fields):
 * by the payload's length, SipHash or GMAC (wire.h, "The MAC"), one
 * choice for sealing and checking. */
static uint64_t tag(struct udp_mac *m, const void *hdr, int32_t src, uint64_t ctr,
                    const void *payload, uint32_t len, bool *ok)
{
    if (len < UDP_GMAC_MIN) {
        *ok = true;
        return cdn_siphash24(&m->sip, hdr, MAC_COVERS, payload, len);
    }
    return gmac(m, hdr, src, ctr, payload, len, ok);
}

void cdn_udp_dgram_seal(struct udp_dgram *d, struct udp_mac *m)
{
    bool ok;
    d->mac = tag(m, d, d->src, d->ctr, d + 1, d->len, &ok);
    if (!ok) {
        /* no context (a caller's bug) or OpenSSL failed: nothing sensible to send */
        fprintf(stderr, "cadence: udp: AES-GMAC failed sealing a datagram\n");
        abort();
    }
}

enum udp_verdict cdn_udp_dgram_check(const void *buf, size_t n, struct udp_mac *m,
                                     int world_size, int self)
{
    struct udp_dgram d;
    if (n < sizeof d)
        return UDP_MALFORMED;
    memcpy(&d, buf, sizeof d);
    if (d.magic != UDP_MAGIC || d.version != UDP_VERSION || d.zero != 0 ||
        (size_t)d.len != n - sizeof d || (d.flags & ~(DG_DATA | DG_PROBE)) != 0 ||
        ((d.flags & DG_DATA) != 0) != (d.seq != 0))
        return UDP_MALFORMED;
    bool ok;
    uint64_t mac = tag(m, buf, d.src, d.ctr, (const char *)buf + sizeof d, d.len, &ok);
    if (!ok || CRYPTO_memcmp(&mac, &d.mac, sizeof mac) != 0)
        return UDP_BAD_MAC;
    if (d.src < 0 || d.src >= world_size || d.src == self)
        return UDP_UNKNOWN_RANK;
    return UDP_OK;
}

bool cdn_udp_faults_parse(const char *spec, struct udp_faults *f, char *why, size_t whylen)
{
    memset(f, 0, sizeof *f);
    f->seed = 1;
    const char *s = spec;
    while (*s != '\0') {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (end == NULL)
            end = s + strlen(s);
        if (eq == NULL || eq > end) {
            snprintf(why, whylen, "'%.*s' is not key=value", (int)(end - s), s);
            return false;
        }
        size_t klen = (size_t)(eq - s);
        char val[64];
        size_t vlen = (size_t)(end - eq - 1);
        if (vlen == 0 || vlen >= sizeof val) {
            snprintf(why, whylen, "'%.*s' has no value (or one too long)", (int)(end - s), s);
            return false;
        }
        memcpy(val, eq + 1, vlen);
        val[vlen] = '\0';
        char *stop;
        errno = 0;
        if (klen == 4 && strncmp(s, "seed", 4) == 0) {
            unsigned long long v = strtoull(val, &stop, 0);
            if (*stop != '\0' || errno != 0 || val[0] == '-') {
                snprintf(why, whylen, "seed '%s' is not a non-negative integer", val);
                return false;
            }
            f->seed = v;
        } else {
            double *slot = NULL;
            if (klen == 4 && strncmp(s, "drop", 4) == 0)
                slot = &f->drop;
            else if (klen == 3 && strncmp(s, "dup", 3) == 0)
                slot = &f->dup;
            else if (klen == 7 && strncmp(s, "reorder", 7) == 0)
                slot = &f->reorder;
            else if (klen == 7 && strncmp(s, "corrupt", 7) == 0)
                slot = &f->corrupt;
            if (slot == NULL) {
                snprintf(why, whylen, "unknown key '%.*s' (known: drop, dup, reorder, corrupt, "
                         "seed)", (int)klen, s);
                return false;
            }
            double v = strtod(val, &stop);
            if (*stop != '\0' || errno != 0 || !(v >= 0.0 && v < 1.0)) {
                snprintf(why, whylen, "%.*s=%s is not a probability in [0, 1)", (int)klen, s,
                         val);
                return false;
            }
            *slot = v;
        }
        s = *end == ',' ? end + 1 : end;
    }
    f->on = f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0;
    return true;
}
