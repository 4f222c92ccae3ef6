/*
 * Unit tests of transport/siphash.c and transport/udp/wire.c: SipHash-2-4
 * gives the reference vectors of its paper (key 00..0f, messages 00, 01,
 * ...), whatever way a message is split in two; a sealed datagram passes
 * the check, and any single flipped bit, a truncation, a wrong key or a
 * rank outside the job is refused with the right verdict, for payloads
 * tagged with SipHash and with AES-GMAC (below and from UDP_GMAC_MIN); the
 * GMAC tag is OpenSSL's AES-128-GCM tag computed here afresh (nonce: rank
 * and counter), changes with the counter, and OpenSSL's GCM passes a
 * published test vector;
 * CADENCE_UDP_FAULTS parses what it should and refuses, saying why, what
 * it should not.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "run_suite.h"
#include "transport/siphash.h"
#include "transport/udp/wire.h"

static struct cdn_siphash_key ref_key(void)
{
    uint8_t k[16];
    for (int i = 0; i < 16; i++)
        k[i] = (uint8_t)i;
    return cdn_siphash_key(k);
}

START_TEST(test_siphash_vectors)
{
    struct cdn_siphash_key k = ref_key();
    uint8_t m[64];
    for (int i = 0; i < 64; i++)
        m[i] = (uint8_t)i;
    ck_assert_uint_eq(cdn_siphash24(&k, m, 0, NULL, 0), 0x726fdb47dd0e0e31ull);
    ck_assert_uint_eq(cdn_siphash24(&k, m, 1, NULL, 0), 0x74f839c593dc67fdull);
    ck_assert_uint_eq(cdn_siphash24(&k, m, 15, NULL, 0), 0xa129ca6149be45e5ull);
    /* a message split anywhere hashes as a whole */
    for (size_t len = 0; len <= 64; len++) {
        uint64_t whole = cdn_siphash24(&k, m, len, NULL, 0);
        for (size_t cut = 0; cut <= len; cut++)
            ck_assert_uint_eq(cdn_siphash24(&k, m, cut, m + cut, len - cut), whole);
    }
}
END_TEST

static struct udp_mac ref_mac(void)
{
    uint8_t k[16];
    for (int i = 0; i < 16; i++)
        k[i] = (uint8_t)i;
    struct udp_mac m;
    cdn_udp_mac_key(&m, k);
    ck_assert(cdn_udp_mac_open(&m));
    return m;
}

static size_t sealed(unsigned char *buf, struct udp_mac *m, int src, size_t len, uint64_t ctr)
{
    struct udp_dgram d = {.magic = UDP_MAGIC, .version = UDP_VERSION, .flags = DG_DATA,
                          .len = (uint16_t)len, .src = src, .ts = 11, .ts_echo = 13, .seq = 7,
                          .ack = 3, .sack = {5, 0, 9, 0}, .ctr = ctr};
    memcpy(buf, &d, sizeof d);
    for (size_t i = 0; i < len; i++)
        buf[sizeof d + i] = (unsigned char)(i * 31 + 1);
    cdn_udp_dgram_seal((struct udp_dgram *)buf, m);
    return sizeof d + len;
}

/* AES-128-GCM's tag, one call with its own context: aad, no plaintext. */
static void gcm_tag(const uint8_t key[16], const unsigned char iv[12], const void *aad,
                    size_t aadlen, unsigned char tag[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int outl;
    unsigned char none[16];
    ck_assert(c != NULL);
    ck_assert(EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, iv) == 1);
    ck_assert(aadlen == 0 || EVP_EncryptUpdate(c, NULL, &outl, aad, (int)aadlen) == 1);
    ck_assert(EVP_EncryptFinal_ex(c, none, &outl) == 1);
    ck_assert(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1);
    EVP_CIPHER_CTX_free(c);
}

START_TEST(test_gcm_vector)
{
    /* "The Galois/Counter Mode of Operation", McGrew and Viega, test case 1:
     * zero key, zero IV, nothing else */
    static const uint8_t zero[16];
    static const unsigned char want[16] = {0x58, 0xe2, 0xfc, 0xce, 0xfa, 0x7e, 0x30, 0x61,
                                           0x36, 0x7f, 0x1d, 0x57, 0xa4, 0xe7, 0x45, 0x5a};
    unsigned char tag[16];
    gcm_tag(zero, zero, NULL, 0, tag);
    ck_assert(memcmp(tag, want, 16) == 0);
}
END_TEST

START_TEST(test_gmac_is_gcm)
{
    struct udp_mac m = ref_mac();
    ck_assert(memcmp(m.aes, (const uint8_t[16]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                                 15}, 16) != 0);  /* not the job key itself */
    static _Alignas(8) unsigned char buf[sizeof(struct udp_dgram) + 4096];
    size_t lens[] = {UDP_GMAC_MIN, UDP_GMAC_MIN + 1, 1000, 4096};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint64_t ctr = (3ull << UDP_CTR_BITS) | (0x123456789ull + i);
        size_t n = sealed(buf, &m, 2, lens[i], ctr);
        unsigned char iv[12] = {2, 0, 0, 0}, tag[16];
        for (int b = 0; b < 8; b++)
            iv[4 + b] = (unsigned char)(ctr >> (8 * b));
        /* AAD: the header but its mac, then the payload */
        static unsigned char aad[sizeof buf];
        size_t covers = offsetof(struct udp_dgram, mac);
        memcpy(aad, buf, covers);
        memcpy(aad + covers, buf + sizeof(struct udp_dgram), lens[i]);
        gcm_tag(m.aes, iv, aad, covers + lens[i], tag);
        struct udp_dgram d;
        memcpy(&d, buf, sizeof d);
        ck_assert_msg(memcmp(&d.mac, tag, 8) == 0, "len %zu: not the GCM tag's first 8 bytes",
                      lens[i]);
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &m, 4, 0), UDP_OK);
        /* another counter: another tag, for the same bytes otherwise */
        sealed(buf, &m, 2, lens[i], ctr + 1);
        struct udp_dgram e;
        memcpy(&e, buf, sizeof e);
        ck_assert(e.mac != d.mac);
        /* the old tag on the new counter is refused */
        memcpy(buf + offsetof(struct udp_dgram, mac), &d.mac, 8);
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &m, 4, 0), UDP_BAD_MAC);
    }
    cdn_udp_mac_close(&m);
}
END_TEST

START_TEST(test_dgram_check)
{
    struct udp_mac k = ref_mac(), other;
    uint8_t okey[16];
    for (int i = 0; i < 16; i++)
        okey[i] = (uint8_t)(i ^ (i == 15));
    cdn_udp_mac_key(&other, okey);
    ck_assert(cdn_udp_mac_open(&other));
    static _Alignas(8) unsigned char buf[sizeof(struct udp_dgram) + 2048];
    /* SipHash, both sides of the threshold, GMAC */
    size_t lens[] = {0, 100, UDP_GMAC_MIN - 1, UDP_GMAC_MIN, 2048};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = sealed(buf, &k, 1, lens[li], 42);
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_OK);
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &other, 4, 0), UDP_BAD_MAC);
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 1), UDP_UNKNOWN_RANK);  /* from self */
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 1, 0), UDP_UNKNOWN_RANK);  /* past the job */
        for (size_t cut = 0; cut < n; cut++)
            ck_assert_int_ne(cdn_udp_dgram_check(buf, cut, &k, 4, 0), UDP_OK);
        for (size_t bit = 0; bit < n * 8; bit++) {
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            enum udp_verdict v = cdn_udp_dgram_check(buf, n, &k, 4, 0);
            ck_assert_msg(v == UDP_MALFORMED || v == UDP_BAD_MAC,
                          "len %zu, bit %zu flipped: verdict %d", lens[li], bit, (int)v);
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        }
        /* a tampered payload byte, the tag left as it was */
        if (lens[li] > 0) {
            buf[n - 1] ^= 0x5a;
            ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_BAD_MAC);
            buf[n - 1] ^= 0x5a;
        }
        ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_OK);
    }
    size_t n = sealed(buf, &k, -1, 0, 1);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_UNKNOWN_RANK);
    n = sealed(buf, &k, -1, UDP_GMAC_MIN, 1);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_UNKNOWN_RANK);
    cdn_udp_mac_close(&k);
    cdn_udp_mac_close(&other);
}
END_TEST

START_TEST(test_faults_parse)
{
    struct udp_faults f;
    char why[160];
    ck_assert(cdn_udp_faults_parse("drop=0.05,dup=0.01,reorder=0.05,corrupt=0.001,seed=9", &f,
                                   why, sizeof why));
    ck_assert(f.on && f.drop == 0.05 && f.dup == 0.01 && f.reorder == 0.05 &&
              f.corrupt == 0.001 && f.seed == 9);
    ck_assert(cdn_udp_faults_parse("", &f, why, sizeof why) && !f.on);
    ck_assert(cdn_udp_faults_parse("seed=3", &f, why, sizeof why) && !f.on && f.seed == 3);
    ck_assert(cdn_udp_faults_parse("dup=0.5", &f, why, sizeof why) && f.on && f.drop == 0);
    const char *bad[] = {"drop=1", "drop=-0.1", "drop=", "drop", "lose=0.1", "drop=0.1x",
                         "seed=-1", "drop=0.1,,dup=0.1", "=0.1", "drop=nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        ck_assert_msg(!cdn_udp_faults_parse(bad[i], &f, why, sizeof why), "'%s' parsed", bad[i]);
        ck_assert_msg(why[0] != '\0', "'%s': no reason", bad[i]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("udp_wire");
    TCase *tc = tcase_create("wire");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_siphash_vectors);
    tcase_add_test(tc, test_gcm_vector);
    tcase_add_test(tc, test_gmac_is_gcm);
    tcase_add_test(tc, test_dgram_check);
    tcase_add_test(tc, test_faults_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(suite(), 0);
}
