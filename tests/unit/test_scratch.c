/*
 * Unit tests of sched/scratch.c: a block put back is handed out again for
 * a request of the same size class (no fresh, untouched memory), blocks
 * are large enough and distinct while in use, only a bounded number is
 * kept, and sizes outside the kept range still work.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "run_suite.h"
#include "sched/scratch.h"

START_TEST(test_reuse_same_class)
{
    void *a = cdn_scratch_get(40000);
    ck_assert_ptr_nonnull(a);
    memset(a, 7, 65536);  /* the class of 40000 bytes is 64 KiB */
    cdn_scratch_put(a, 40000);
    void *b = cdn_scratch_get(65536);
    ck_assert_ptr_eq(a, b);
    ck_assert_uint_eq(((unsigned char *)b)[65535], 7);
    cdn_scratch_put(b, 65536);
    cdn_scratch_trim();
}
END_TEST

START_TEST(test_distinct_while_in_use)
{
    void *p[6];
    for (int i = 0; i < 6; i++) {
        p[i] = cdn_scratch_get(100000);
        ck_assert_ptr_nonnull(p[i]);
        memset(p[i], i, 100000);
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(p[i], p[j]);
    }
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(((unsigned char *)p[i])[99999], (unsigned)i);
    for (int i = 0; i < 6; i++)
        cdn_scratch_put(p[i], 100000);
    /* only a few are kept: getting six again gives at least four new ones */
    int reused = 0;
    void *q[6];
    for (int i = 0; i < 6; i++) {
        q[i] = cdn_scratch_get(100000);
        for (int j = 0; j < 6; j++)
            reused += q[i] == p[j];
    }
    ck_assert_int_le(reused, 2);
    ck_assert_int_ge(reused, 1);
    for (int i = 0; i < 6; i++)
        cdn_scratch_put(q[i], 100000);
    cdn_scratch_trim();
}
END_TEST

START_TEST(test_outside_kept_range)
{
    void *tiny = cdn_scratch_get(0), *small = cdn_scratch_get(16);
    void *huge = cdn_scratch_get((size_t)64 << 20);
    ck_assert_ptr_nonnull(tiny);
    ck_assert_ptr_nonnull(small);
    ck_assert_ptr_nonnull(huge);
    memset(small, 1, 16);
    memset(huge, 1, (size_t)64 << 20);
    cdn_scratch_put(tiny, 0);
    cdn_scratch_put(small, 16);
    cdn_scratch_put(huge, (size_t)64 << 20);
    cdn_scratch_put(NULL, 100);
    cdn_scratch_trim();
}
END_TEST

static Suite *scratch_suite(void)
{
    Suite *s = suite_create("scratch");
    TCase *tc = tcase_create("scratch");
    tcase_add_test(tc, test_reuse_same_class);
    tcase_add_test(tc, test_distinct_while_in_use);
    tcase_add_test(tc, test_outside_kept_range);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(scratch_suite(), 1);
}
