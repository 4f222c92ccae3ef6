/*
 * Unit tests of transport/siphash.c and transport/udp/wire.c: SipHash-2-4
 * gives the reference vectors of its paper (key 00..0f, messages 00, 01,
 * ...), whatever way a message is split in two; a sealed datagram passes
 * the check, and any single flipped bit, a truncation, a wrong key or a
 * rank outside the job is refused with the right verdict;
 * CADENCE_UDP_FAULTS parses what it should and refuses, saying why, what
 * it should not.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

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

static size_t sealed(unsigned char *buf, const struct cdn_siphash_key *k, int src, size_t len)
{
    struct udp_dgram d = {.magic = UDP_MAGIC, .version = UDP_VERSION, .flags = DG_DATA,
                          .len = (uint16_t)len, .src = src, .ts = 11, .ts_echo = 13, .seq = 7, .ack = 3, .sack = {5, 0, 9, 0}};
    memcpy(buf, &d, sizeof d);
    for (size_t i = 0; i < len; i++)
        buf[sizeof d + i] = (unsigned char)(i * 31 + 1);
    cdn_udp_dgram_seal((struct udp_dgram *)buf, k);
    return sizeof d + len;
}

START_TEST(test_dgram_check)
{
    struct cdn_siphash_key k = ref_key(), other = k;
    other.k1 ^= 1;
    _Alignas(8) unsigned char buf[256];
    size_t n = sealed(buf, &k, 1, 100);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_OK);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &other, 4, 0), UDP_BAD_MAC);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 1), UDP_UNKNOWN_RANK);  /* from self */
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 1, 0), UDP_UNKNOWN_RANK);  /* past the job */
    for (size_t cut = 0; cut < n; cut++)
        ck_assert_int_ne(cdn_udp_dgram_check(buf, cut, &k, 4, 0), UDP_OK);
    for (size_t bit = 0; bit < n * 8; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        enum udp_verdict v = cdn_udp_dgram_check(buf, n, &k, 4, 0);
        ck_assert_msg(v == UDP_MALFORMED || v == UDP_BAD_MAC, "bit %zu flipped: verdict %d", bit,
                      (int)v);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    n = sealed(buf, &k, -1, 0);
    ck_assert_int_eq(cdn_udp_dgram_check(buf, n, &k, 4, 0), UDP_UNKNOWN_RANK);
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
    tcase_add_test(tc, test_dgram_check);
    tcase_add_test(tc, test_faults_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(suite(), 0);
}
