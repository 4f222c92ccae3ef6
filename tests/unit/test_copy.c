/*
 * Unit tests of runtime/copy.h: cdn_copy copies exactly the bytes asked
 * for at every pair of offsets into a cache line, on both sides of the
 * size from which skewed copies take the vector loop, and touches nothing
 * around the destination; the skewed loop itself is checked directly
 * (cdn_copy picks it only for sizes and offsets it owns).
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run_suite.h"
#include "runtime/copy.h"

enum { PAD = 128, MAXN = 3 * CDN_COPY_SKEW_MIN + 77 };

static unsigned char src_buf[MAXN + 2 * PAD + 64] __attribute__((aligned(64)));
static unsigned char dst_buf[MAXN + 2 * PAD + 64] __attribute__((aligned(64)));

static bool untouched(const unsigned char *from, const unsigned char *to)
{
    for (; from < to; from++)
        if (*from != 0xA5)
            return false;
    return true;
}

static void check_copy(void (*copy)(void *, const void *, size_t), size_t so, size_t dof,
                       size_t n)
{
    if (src_buf[1] == src_buf[0])
        for (size_t i = 0; i < sizeof src_buf; i++)
            src_buf[i] = (unsigned char)(i * 131u + (i >> 8));
    unsigned char *d = dst_buf + PAD + dof;
    const unsigned char *s = src_buf + PAD + so;
    memset(dst_buf, 0xA5, PAD + dof + n + PAD);
    copy(d, s, n);
    ck_assert_msg(memcmp(d, s, n) == 0, "copy of %zu bytes, src +%zu dst +%zu differs", n, so,
                  dof);
    ck_assert_msg(untouched(dst_buf, d) && untouched(d + n, d + n + PAD),
                  "bytes around the destination written (%zu bytes, src +%zu dst +%zu)", n, so,
                  dof);
}

START_TEST(test_every_offset_pair)
{
    static const size_t sizes[] = {0, 1, 63, 4095, CDN_COPY_SKEW_MIN, CDN_COPY_SKEW_MIN + 1,
                                   CDN_COPY_SKEW_MIN + 63, 2 * CDN_COPY_SKEW_MIN + 17,
                                   MAXN - 64};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t so = 0; so < 64; so += 3)
            for (size_t dof = 0; dof < 64; dof += 5)
                check_copy(cdn_copy, so, dof, sizes[k]);
}
END_TEST

START_TEST(test_skewed_loop_directly)
{
    /* every tail length after the 64-byte blocks, every store alignment of
     * either loop, sizes below the head's alignment included */
    for (size_t n = 16; n < 16 + 64 * 3; n++)
        for (size_t dof = 0; dof < 32; dof++)
            check_copy(cdn_copy_skewed, 8, dof, n);
}
END_TEST

static void wrap(void *d, const void *s, size_t n)
{
    cdn_copy(d, s, n);
}

START_TEST(test_skewed_large)
{
    check_copy(wrap, 0, 8, MAXN);   /* the case glibc's rep movsb is slow for */
    check_copy(wrap, 48, 56, MAXN); /* a malloc'd buffer into a ring cell's payload */
    check_copy(wrap, 0, 32, MAXN);  /* half a line apart: memcpy */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("copy");
    TCase *tc = tcase_create("copy");
    tcase_add_test(tc, test_every_offset_pair);
    tcase_add_test(tc, test_skewed_loop_directly);
    tcase_add_test(tc, test_skewed_large);
    suite_add_tcase(s, tc);
    return cdn_run_suite(s, 0);
}
