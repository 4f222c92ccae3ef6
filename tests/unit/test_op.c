/*
 * Unit tests of runtime/op.h: MPI_MINLOC and MPI_MAXLOC on the pair types
 * read and write the value and the index of each pair and nothing else.
 * The last pair of a buffer ends at the type's true extent, before the
 * padding of the C struct (MPI_DOUBLE_INT: 12 bytes of 16), and a
 * schedule's scratch buffer is sized so: here the buffers end right
 * before a page with no access, so touching the padding is a crash.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run_suite.h"
#include "runtime/datatype.h"
#include "runtime/op.h"

static void setup(void) { ck_assert_int_eq(cdn_datatype_init(), MPI_SUCCESS); }

struct di { double v; int i; };

/* A buffer of bytes whose end touches a page with no access. */
static unsigned char *guarded(size_t bytes, void **map, size_t *len)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (bytes + (size_t)page - 1) / (size_t)page + 1;
    *len = pages * (size_t)page;
    unsigned char *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mprotect(m + *len - (size_t)page, (size_t)page, PROT_NONE), 0);
    *map = m;
    return m + *len - (size_t)page - bytes;
}

static void check_loc(MPI_Op op_handle, int maxloc)
{
    struct cdn_datatype *dt = cdn_datatype_get(MPI_DOUBLE_INT);
    struct cdn_op *op = cdn_op_get(op_handle);
    ck_assert_ptr_nonnull(dt);
    ck_assert_ptr_nonnull(op);
    enum { N = 5 };
    MPI_Aint extent = cdn_datatype_extent(dt), true_extent = cdn_datatype_true_extent(dt);
    ck_assert_int_eq(extent, (MPI_Aint)sizeof(struct di));
    size_t bytes = (size_t)((N - 1) * extent + true_extent);  /* as cdn_sched_typed_scratch */
    void *min_map, *iom_map;
    size_t in_len, io_len;
    unsigned char *in = guarded(bytes, &min_map, &in_len), *io = guarded(bytes, &iom_map, &io_len);
    for (int j = 0; j < N; j++) {
        struct di a = {(double)(j % 3), 10 + j}, b = {(double)((j + 1) % 3), 20 + j};
        memcpy(in + (size_t)j * (size_t)extent, &a, j < N - 1 ? sizeof a : (size_t)true_extent);
        memcpy(io + (size_t)j * (size_t)extent, &b, j < N - 1 ? sizeof b : (size_t)true_extent);
    }
    cdn_op_reduce(op, in, io, N, dt);
    for (int j = 0; j < N; j++) {
        double v;
        int i;
        memcpy(&v, io + (size_t)j * (size_t)extent, sizeof v);
        memcpy(&i, io + (size_t)j * (size_t)extent + offsetof(struct di, i), sizeof i);
        double a = (double)(j % 3), b = (double)((j + 1) % 3);
        int in_wins = maxloc ? a > b : a < b;
        ck_assert_msg(v == (in_wins ? a : b) && i == (in_wins ? 10 + j : 20 + j),
                      "pair %d: value %g index %d", j, v, i);
    }
    munmap(min_map, in_len);
    munmap(iom_map, io_len);
}

START_TEST(test_maxloc_last_pair_at_true_extent) { check_loc(MPI_MAXLOC, 1); }
END_TEST

START_TEST(test_minloc_last_pair_at_true_extent) { check_loc(MPI_MINLOC, 0); }
END_TEST

int main(void)
{
    Suite *s = suite_create("op");
    TCase *tc = tcase_create("loc");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_maxloc_last_pair_at_true_extent);
    tcase_add_test(tc, test_minloc_last_pair_at_true_extent);
    suite_add_tcase(s, tc);
    return cdn_run_suite(s, 0);
}
