/*
 * Unit tests of the datatype engine's interface (runtime/datatype.h) on
 * predefined and contiguous types: sizes, extents and names of builtins, the
 * C-struct layout of the MINLOC/MAXLOC pair types, lookups of bad handles,
 * contiguity, element counts, and segments packed whole or in chunks.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "runtime/datatype_impl.h"
#include "run_suite.h"

static void setup(void) { ck_assert_int_eq(cdn_datatype_init(), MPI_SUCCESS); }
static void teardown(void) { cdn_datatype_finalize(); }

START_TEST(test_builtin_sizes)
{
    static const struct { MPI_Datatype t; MPI_Count size; } cases[] = {
        {MPI_CHAR, 1}, {MPI_SHORT, 2}, {MPI_INT, 4}, {MPI_LONG, 8}, {MPI_LONG_LONG, 8},
        {MPI_FLOAT, 4}, {MPI_DOUBLE, 8}, {MPI_LONG_DOUBLE, 16}, {MPI_C_BOOL, 1},
        {MPI_WCHAR, 4}, {MPI_INT64_T, 8}, {MPI_UINT16_T, 2}, {MPI_C_DOUBLE_COMPLEX, 16},
        {MPI_C_LONG_DOUBLE_COMPLEX, 32}, {MPI_AINT, 8}, {MPI_OFFSET, 8}, {MPI_COUNT, 8},
        {MPI_BYTE, 1}, {MPI_PACKED, 1}, {MPI_2INT, 8}, {MPI_LB, 0}, {MPI_UB, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cdn_datatype *dt = cdn_datatype_get(cases[i].t);
        ck_assert_ptr_nonnull(dt);
        ck_assert_int_eq(cdn_datatype_size(dt), cases[i].size);
        ck_assert_int_eq(cdn_datatype_extent(dt), cases[i].size);
        ck_assert_int_eq(cdn_datatype_lb(dt), 0);
        ck_assert(cdn_datatype_is_builtin(dt));
        ck_assert(cdn_datatype_is_contig(dt, 10));
    }
    ck_assert_str_eq(cdn_datatype_get(MPI_INT)->name, "MPI_INT");
    ck_assert_str_eq(cdn_datatype_get(MPI_C_COMPLEX)->name, "MPI_C_COMPLEX");
}
END_TEST

START_TEST(test_pair_types_have_c_layout)
{
    struct { float v; int i; } fi;
    struct { double v; int i; } di;
    struct { long v; int i; } li;
    struct { short v; int i; } si;
    struct { long double v; int i; } ldi;
    static const MPI_Datatype t[] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT,
                                     MPI_LONG_DOUBLE_INT};
    const MPI_Aint ext[] = {sizeof fi, sizeof di, sizeof li, sizeof si, sizeof ldi};
    const MPI_Count size[] = {8, 12, 12, 6, 20};
    for (int k = 0; k < 5; k++) {
        struct cdn_datatype *dt = cdn_datatype_get(t[k]);
        ck_assert_ptr_nonnull(dt);
        ck_assert_int_eq(cdn_datatype_size(dt), size[k]);
        ck_assert_int_eq(cdn_datatype_extent(dt), ext[k]);
        ck_assert_int_eq(cdn_datatype_elements(dt, size[k] * 3), 6);
        cdn_datatype_release(dt);  /* a predefined type is never freed */
        ck_assert_ptr_eq(cdn_datatype_get(t[k]), dt);
    }
    /* pack 2 MPI_SHORT_INT: the padding between short and int is skipped */
    struct { short v; int i; } a[2] = {{1, 2}, {3, 4}}, b[2];
    memset(b, 0, sizeof b);
    char packed[12];
    struct cdn_dt_segment s;
    cdn_dt_segment_init(&s, a, 2, cdn_datatype_get(MPI_SHORT_INT));
    ck_assert_ptr_null(cdn_dt_segment_contig(&s));
    ck_assert_int_eq(cdn_dt_pack(&s, 0, packed, 100), 12);
    short sv;
    int iv;
    memcpy(&sv, packed + 6, 2);
    memcpy(&iv, packed + 8, 4);
    ck_assert_int_eq(sv, 3);
    ck_assert_int_eq(iv, 4);
    cdn_dt_segment_init(&s, b, 2, cdn_datatype_get(MPI_SHORT_INT));
    ck_assert_int_eq(cdn_dt_unpack(&s, 0, packed, 12), 12);
    ck_assert_int_eq(b[1].v, 3);
    ck_assert_int_eq(b[0].i, 2);
}
END_TEST

START_TEST(test_bad_handles)
{
    struct cdn_datatype *dt = NULL;
    ck_assert_ptr_null(cdn_datatype_get(MPI_DATATYPE_NULL));
    ck_assert_ptr_null(cdn_datatype_get(MPI_COMM_WORLD));
    ck_assert_ptr_null(cdn_datatype_get((MPI_Datatype)0x4c0004ff));
    ck_assert_ptr_null(cdn_datatype_get((MPI_Datatype)0x8c000100));
    ck_assert_int_ne(cdn_datatype_check(MPI_DATATYPE_NULL, "test", &dt), MPI_SUCCESS);
    ck_assert_int_eq(cdn_datatype_check(MPI_INT, "test", &dt), MPI_SUCCESS);
    ck_assert_ptr_eq(dt, cdn_datatype_get(MPI_INT));
}
END_TEST

START_TEST(test_contiguous_segments)
{
    struct cdn_datatype *dt = cdn_dt_make_vector(1, 5, 0, cdn_datatype_get(MPI_INT));
    ck_assert_ptr_nonnull(dt);
    ck_assert_int_eq(cdn_datatype_size(dt), 20);
    ck_assert_int_eq(cdn_datatype_extent(dt), 20);
    ck_assert(cdn_datatype_is_contig(dt, 7));
    int src[35], dst[35];
    for (int i = 0; i < 35; i++)
        src[i] = i * 3 + 1;
    struct cdn_dt_segment s;
    cdn_dt_segment_init(&s, src, 7, dt);
    ck_assert_ptr_eq(cdn_dt_segment_contig(&s), src);
    ck_assert_int_eq(cdn_dt_segment_bytes(&s), 140);
    char packed[140];
    MPI_Count off = 0;
    for (MPI_Count chunk = 1; off < 140; chunk = chunk * 2 + 1)
        off += cdn_dt_pack(&s, off, packed + off, chunk);
    ck_assert_int_eq(off, 140);
    ck_assert_int_eq(cdn_dt_pack(&s, 140, packed, 10), 0);
    ck_assert_mem_eq(packed, src, 140);
    cdn_dt_segment_fini(&s);
    cdn_dt_segment_init(&s, dst, 7, dt);
    ck_assert_int_eq(cdn_dt_unpack(&s, 70, packed + 70, 1000), 70);
    ck_assert_int_eq(cdn_dt_unpack(&s, 0, packed, 70), 70);
    ck_assert_mem_eq(dst, src, 140);
    cdn_dt_segment_fini(&s);
    ck_assert_int_eq(cdn_datatype_elements(dt, 24), 6);
    ck_assert_int_eq(cdn_datatype_elements(dt, 22), MPI_UNDEFINED);
    cdn_datatype_release(dt);
}
END_TEST

/* Packs of 4 MiB and more take the non-temporal store path: blocks of 8,
 * 16, 24 and 1024 bytes, odd counts, packed from an offset so the
 * destination is not 16-byte aligned, against a plain loop. */
START_TEST(test_large_strided_pack)
{
    static const MPI_Count blocks[] = {8, 16, 24, 1024};
    for (int b = 0; b < 4; b++) {
        MPI_Count bl = blocks[b], count = (5L << 20) / bl + 1;
        struct cdn_datatype *dt = cdn_dt_make_vector(count, bl, 2 * bl, cdn_datatype_get(MPI_BYTE));
        ck_assert_ptr_nonnull(dt);
        unsigned char *src = malloc((size_t)(2 * bl * count)), *packed = malloc((size_t)(bl * count + 16));
        for (MPI_Count i = 0; i < 2 * bl * count; i++)
            src[i] = (unsigned char)(i * 7 + i / 4099);
        for (int shift = 0; shift < 2; shift++) {
            struct cdn_dt_segment s;
            cdn_dt_segment_init(&s, src, 1, dt);
            MPI_Count skip = shift ? 8 : 0, len = bl * count - skip;
            ck_assert_int_eq(cdn_dt_pack(&s, skip, packed + shift, len), len);
            cdn_dt_segment_fini(&s);
            int bad = 0;
            for (MPI_Count i = skip; i < bl * count; i++)
                bad += packed[shift + i - skip] != src[i / bl * 2 * bl + i % bl];
            ck_assert_msg(bad == 0, "block %ld shift %d: %d bytes differ", (long)bl, shift, bad);
        }
        free(src);
        free(packed);
        cdn_datatype_release(dt);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("datatype_basic");
    TCase *tc = tcase_create("basic");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_builtin_sizes);
    tcase_add_test(tc, test_pair_types_have_c_layout);
    tcase_add_test(tc, test_bad_handles);
    tcase_add_test(tc, test_contiguous_segments);
    tcase_add_test(tc, test_large_strided_pack);
    suite_add_tcase(s, tc);
    return cdn_run_suite(s, 0);
}
