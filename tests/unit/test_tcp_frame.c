/*
 * Unit tests of transport/tcp/frame.c, the checks on everything a TCP peer
 * sends: valid frames of every type pass; every truncation of a frame asks
 * for more bytes; a fuzzer-style loop over random and mutated frames never
 * gets a verdict that breaks the invariants the transport relies on (and,
 * under ASan or valgrind, never reads outside the bytes it was given);
 * hellos with a wrong key, magic, version, kind or rank are refused.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run_suite.h"
#include "transport/tcp/frame.h"

#define EAGER_MAX 8192u

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static struct tcp_frame make(int type, uint32_t len)
{
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    f.type = (uint8_t)type;
    f.len = len;
    f.h.src = 3;
    f.h.tag = 7;
    if (type == F_EAGER)
        f.h.bytes = len;
    if (type == F_AM)
        f.a = 1;
    if (type == F_RTS) {
        f.h.flags = CDN_WIRE_RNDV;
        f.h.bytes = 1 << 20;
    }
    return f;
}

/* What the transport relies on when the parser says yes, written out
 * independently of frame.c. */
static void assert_sane(const struct tcp_frame *f, size_t k, size_t avail)
{
    ck_assert_uint_le(k, avail);
    ck_assert(f->type >= F_EAGER && f->type < F_TYPE_END);
    ck_assert(f->zero[0] == 0 && f->zero[1] == 0 && f->zero[2] == 0);
    if (f->type == F_EAGER) {
        ck_assert_uint_le(f->len, EAGER_MAX);
        ck_assert_uint_eq(f->len, f->h.bytes);
        ck_assert_uint_eq(k, sizeof *f + f->len);
        ck_assert_int_ge(f->h.src, 0);
        ck_assert_uint_eq(f->h.flags & CDN_WIRE_RNDV, 0);
    } else if (f->type == F_AM) {
        ck_assert_uint_le(f->len, TCP_AM_MAX);
        ck_assert_uint_eq(k, sizeof *f + f->len);
        ck_assert(f->a > 0 && f->a <= UINT16_MAX);
    } else {
        ck_assert_uint_eq(k, sizeof *f);
    }
    if (f->type == F_DATA)
        ck_assert(f->len > 0 && f->len <= TCP_DATA_CHUNK);
    else if (f->type != F_EAGER && f->type != F_AM)
        ck_assert_uint_eq(f->len, 0);
    if (f->type == F_RTS)
        ck_assert(f->h.flags & CDN_WIRE_RNDV);
}

START_TEST(test_valid_frames)
{
    static unsigned char buf[sizeof(struct tcp_frame) + EAGER_MAX];
    for (int type = F_EAGER; type < F_TYPE_END; type++) {
        uint32_t len = type == F_EAGER || type == F_AM ? 100 : type == F_DATA ? 4096 : 0;
        struct tcp_frame f = make(type, len), out;
        memcpy(buf, &f, sizeof f);
        const char *why = NULL;
        size_t k = cdn_tcp_frame_parse(buf, sizeof f + (type != F_DATA ? len : 0), EAGER_MAX,
                                       &out, &why);
        ck_assert_msg(k != CDN_TCP_BAD && k != CDN_TCP_NEED_MORE, "type %d refused: %s", type,
                      why ? why : "");
        ck_assert_int_eq(memcmp(&out, &f, sizeof f), 0);
        assert_sane(&out, k, sizeof buf);
    }
}
END_TEST

START_TEST(test_truncated_frames_wait)
{
    static unsigned char buf[sizeof(struct tcp_frame) + 1000];
    struct tcp_frame f = make(F_EAGER, 1000), out;
    memcpy(buf, &f, sizeof f);
    memset(buf + sizeof f, 0xab, 1000);
    const char *why;
    for (size_t avail = 0; avail < sizeof buf; avail++)
        ck_assert_uint_eq(cdn_tcp_frame_parse(buf, avail, EAGER_MAX, &out, &why),
                          CDN_TCP_NEED_MORE);
    ck_assert_uint_eq(cdn_tcp_frame_parse(buf, sizeof buf, EAGER_MAX, &out, &why), sizeof buf);
}
END_TEST

START_TEST(test_bad_fields_refused)
{
    struct tcp_frame out;
    const char *why;
    struct tcp_frame cases[10];
    cases[0] = make(0, 0);
    cases[1] = make(F_TYPE_END, 0);
    cases[2] = make(F_EAGER, EAGER_MAX + 1);             /* over the eager limit */
    cases[3] = make(F_EAGER, 10);
    cases[3].h.bytes = 11;                                /* length disagrees */
    cases[4] = make(F_DATA, TCP_DATA_CHUNK + 1);
    cases[5] = make(F_ACK, 5);                            /* control frame with payload */
    cases[6] = make(F_RTS, 0);
    cases[6].h.flags = 0;                                 /* rendezvous without the flag */
    cases[7] = make(F_CTS, 0);
    cases[7].zero[1] = 1;
    cases[8] = make(F_AM, TCP_AM_MAX + 1);               /* over the active-message limit */
    cases[9] = make(F_AM, 8);
    cases[9].a = 0;                                       /* names no handler */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        why = NULL;
        ck_assert_msg(cdn_tcp_frame_parse(&cases[i], sizeof cases[i], EAGER_MAX, &out, &why) ==
                      CDN_TCP_BAD, "case %zu accepted", i);
        ck_assert_ptr_nonnull(why);
    }
}
END_TEST

/* Random bytes, and valid frames with random bytes changed, parsed from
 * exactly-sized heap copies (an out-of-bounds read is an ASan/valgrind error). */
START_TEST(test_fuzz_random_and_mutated)
{
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 200000; iter++) {
        size_t avail = rnd() % (sizeof(struct tcp_frame) + 300);
        unsigned char *buf = malloc(avail + 1);
        if (iter % 2 == 0 || avail < sizeof(struct tcp_frame)) {
            for (size_t i = 0; i < avail; i++)
                buf[i] = (unsigned char)rnd();
        } else {
            int type = 1 + (int)(rnd() % (F_TYPE_END - 1));
            uint32_t len = type == F_EAGER || type == F_AM ? rnd() % 300
                           : type == F_DATA                  ? 1 + rnd() % 300
                                                             : 0;
            struct tcp_frame f = make(type, len);
            memcpy(buf, &f, sizeof f);
            for (size_t i = sizeof f; i < avail; i++)
                buf[i] = (unsigned char)rnd();
            for (int m = (int)(rnd() % 4); m >= 0; m--)
                buf[rnd() % sizeof f] ^= (unsigned char)(1u << (rnd() % 8));
        }
        struct tcp_frame out;
        const char *why = NULL;
        size_t k = cdn_tcp_frame_parse(buf, avail, EAGER_MAX, &out, &why);
        if (k == CDN_TCP_BAD) {
            ck_assert_ptr_nonnull(why);
            refused++;
        } else if (k != CDN_TCP_NEED_MORE) {
            assert_sane(&out, k, avail);
            accepted++;
        }
        free(buf);
    }
    /* both verdicts were exercised, so the loop tested something */
    ck_assert_int_gt(accepted, 1000);
    ck_assert_int_gt(refused, 1000);
}
END_TEST

START_TEST(test_hello)
{
    uint8_t key[TCP_KEY_BYTES];
    for (int i = 0; i < TCP_KEY_BYTES; i++)
        key[i] = (uint8_t)rnd();
    struct tcp_hello h = {.magic = TCP_MAGIC, .version = TCP_VERSION, .kind = TCP_HELLO, .rank = 2};
    memcpy(h.key, key, sizeof key);
    int rank = -1;
    const char *why;
    ck_assert(cdn_tcp_hello_check(&h, key, 4, 0, &rank, &why));
    ck_assert_int_eq(rank, 2);
    /* any one changed byte is refused, except in the rank while it stays a valid peer */
    for (size_t i = 0; i < sizeof h; i++) {
        for (int bit = 0; bit < 8; bit++) {
            struct tcp_hello m = h;
            ((unsigned char *)&m)[i] ^= (unsigned char)(1u << bit);
            bool ok = cdn_tcp_hello_check(&m, key, 4, 0, &rank, &why);
            bool valid_rank = m.rank != h.rank && m.rank > 0 && m.rank < 4;
            ck_assert_msg(ok == valid_rank, "byte %zu bit %d: verdict %d", i, bit, ok);
        }
    }
    struct tcp_hello self = h;
    self.rank = 0;
    ck_assert(!cdn_tcp_hello_check(&self, key, 4, 0, &rank, &why));
    struct tcp_hello reply = {.magic = TCP_MAGIC, .version = TCP_VERSION, .kind = TCP_ACCEPT};
    ck_assert_int_eq(cdn_tcp_reply_check(&reply, &why), TCP_ACCEPT);
    reply.kind = TCP_HELLO;
    ck_assert_int_eq(cdn_tcp_reply_check(&reply, &why), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tcp_frame");
    TCase *tc = tcase_create("frame");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_valid_frames);
    tcase_add_test(tc, test_truncated_frames_wait);
    tcase_add_test(tc, test_bad_fields_refused);
    tcase_add_test(tc, test_fuzz_random_and_mutated);
    tcase_add_test(tc, test_hello);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(suite(), 0);
}
