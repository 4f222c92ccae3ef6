/*
 * Unit tests of runtime/handle.c: MPICH-encoded handles, lookups that reject
 * handles of the wrong type, kind or lifetime, index reuse, tables that grow
 * across chunks, and allocation and free from several threads at once.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "runtime/handle.h"
#include "run_suite.h"

static int objs[3 * CDN_HANDLE_CHUNK + 10];  /* things to point handles at */

START_TEST(test_alloc_encoding_and_get)
{
    struct cdn_handle_table t = CDN_HANDLE_TABLE_INIT(CDN_OBJ_GROUP);
    int h[3];
    for (int i = 0; i < 3; i++) {
        h[i] = cdn_handle_alloc(&t, &objs[i]);
        ck_assert_int_ne(h[i], 0);
        ck_assert_int_eq(CDN_HANDLE_KIND(h[i]), CDN_HK_DIRECT);
        ck_assert_int_eq(((uint32_t)h[i] >> 30), 2);
        ck_assert_int_eq(CDN_HANDLE_TYPE(h[i]), CDN_OBJ_GROUP);
        ck_assert_int_eq(((uint32_t)h[i] >> 26) & 0xf, 0x2);
    }
    ck_assert_int_ne(h[0], h[1]);
    ck_assert_int_ne(h[1], h[2]);
    ck_assert_int_ne(h[0], h[2]);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_eq(cdn_handle_get(&t, h[i]), &objs[i]);
    ck_assert_int_eq(atomic_load(&t.live), 3);
    cdn_handle_table_destroy(&t);
}
END_TEST

START_TEST(test_get_rejects_foreign_handles)
{
    struct cdn_handle_table comms = CDN_HANDLE_TABLE_INIT(CDN_OBJ_COMM);
    struct cdn_handle_table groups = CDN_HANDLE_TABLE_INIT(CDN_OBJ_GROUP);
    int hc = cdn_handle_alloc(&comms, &objs[0]);
    int hg = cdn_handle_alloc(&groups, &objs[1]);
    ck_assert_int_ne(hc, 0);
    ck_assert_int_ne(hg, 0);
    uint32_t ic = CDN_HANDLE_INDEX(hc);

    /* the other table's handle, whatever its index */
    ck_assert_ptr_null(cdn_handle_get(&comms, hg));
    ck_assert_ptr_null(cdn_handle_get(&groups, hc));
    /* the same index under another type or kind */
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_WIN, ic)));
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_BUILTIN, CDN_OBJ_COMM, ic)));
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_INVALID, CDN_OBJ_COMM, ic)));
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(3, CDN_OBJ_COMM, ic)));
    /* predefined MPI handles and plain junk */
    ck_assert_ptr_null(cdn_handle_get(&comms, MPI_COMM_WORLD));
    ck_assert_ptr_null(cdn_handle_get(&comms, 0));
    ck_assert_ptr_null(cdn_handle_get(&comms, -1));
    /* right type and kind, but an index never handed out: in the first chunk,
     * in a chunk never allocated, and past the last chunk */
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_COMM, ic + 1)));
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_COMM,
                                                              5 * CDN_HANDLE_CHUNK + 3)));
    ck_assert_ptr_null(cdn_handle_get(&comms, CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_COMM,
                                                              0x03ffffff)));
    /* and the real ones still work */
    ck_assert_ptr_eq(cdn_handle_get(&comms, hc), &objs[0]);
    ck_assert_ptr_eq(cdn_handle_get(&groups, hg), &objs[1]);
    cdn_handle_table_destroy(&comms);
    cdn_handle_table_destroy(&groups);
}
END_TEST

START_TEST(test_free_and_reuse)
{
    struct cdn_handle_table t = CDN_HANDLE_TABLE_INIT(CDN_OBJ_INFO);
    int a = cdn_handle_alloc(&t, &objs[0]);
    int b = cdn_handle_alloc(&t, &objs[1]);
    int c = cdn_handle_alloc(&t, &objs[2]);
    ck_assert_int_eq(atomic_load(&t.live), 3);

    cdn_handle_free(&t, b);
    ck_assert_ptr_null(cdn_handle_get(&t, b));
    ck_assert_int_eq(atomic_load(&t.live), 2);
    ck_assert_ptr_eq(cdn_handle_get(&t, a), &objs[0]);
    ck_assert_ptr_eq(cdn_handle_get(&t, c), &objs[2]);

    /* freeing it again, or freeing junk, changes nothing */
    cdn_handle_free(&t, b);
    cdn_handle_free(&t, CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_COMM, CDN_HANDLE_INDEX(a)));
    cdn_handle_free(&t, 0);
    ck_assert_int_eq(atomic_load(&t.live), 2);
    ck_assert_ptr_eq(cdn_handle_get(&t, a), &objs[0]);

    /* b's index comes back, once only (a double free must not hand it out twice) */
    int d = cdn_handle_alloc(&t, &objs[3]);
    int e = cdn_handle_alloc(&t, &objs[4]);
    ck_assert_uint_eq(CDN_HANDLE_INDEX(d), CDN_HANDLE_INDEX(b));
    ck_assert_int_ne(d, e);
    ck_assert_ptr_eq(cdn_handle_get(&t, d), &objs[3]);
    ck_assert_ptr_eq(cdn_handle_get(&t, e), &objs[4]);
    ck_assert_ptr_eq(cdn_handle_get(&t, a), &objs[0]);
    ck_assert_ptr_eq(cdn_handle_get(&t, c), &objs[2]);
    ck_assert_int_eq(atomic_load(&t.live), 4);
    cdn_handle_table_destroy(&t);
}
END_TEST

START_TEST(test_many_cross_chunks)
{
    enum { N = 3 * CDN_HANDLE_CHUNK + 10 };
    static int h[N];
    struct cdn_handle_table t = CDN_HANDLE_TABLE_INIT(CDN_OBJ_DATATYPE);
    for (int i = 0; i < N; i++) {
        h[i] = cdn_handle_alloc(&t, &objs[i]);
        ck_assert_int_ne(h[i], 0);
        ck_assert_int_eq(CDN_HANDLE_TYPE(h[i]), CDN_OBJ_DATATYPE);
    }
    ck_assert_int_eq(atomic_load(&t.live), N);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(cdn_handle_get(&t, h[i]), &objs[i]);

    /* free every other one (more than the free list's first capacity) */
    for (int i = 1; i < N; i += 2)
        cdn_handle_free(&t, h[i]);
    ck_assert_int_eq(atomic_load(&t.live), N - N / 2);
    for (int i = 0; i < N; i++) {
        if (i % 2)
            ck_assert_ptr_null(cdn_handle_get(&t, h[i]));
        else
            ck_assert_ptr_eq(cdn_handle_get(&t, h[i]), &objs[i]);
    }
    /* reallocating as many reuses the freed indices: the table does not grow */
    for (int i = 1; i < N; i += 2) {
        h[i] = cdn_handle_alloc(&t, &objs[i]);
        ck_assert_uint_lt(CDN_HANDLE_INDEX(h[i]), N);
    }
    ck_assert_int_eq(atomic_load(&t.live), N);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(cdn_handle_get(&t, h[i]), &objs[i]);
    cdn_handle_table_destroy(&t);
}
END_TEST

/* All CDN_HANDLE_CHUNK * CDN_HANDLE_MAX_CHUNKS indices in use: alloc says 0,
 * until one is freed. */
START_TEST(test_exhaustion)
{
    static struct cdn_handle_table t = CDN_HANDLE_TABLE_INIT(CDN_OBJ_REQUEST);
    const int max = CDN_HANDLE_CHUNK * CDN_HANDLE_MAX_CHUNKS;
    int first = 0, last = 0;
    for (int i = 0; i < max; i++) {
        last = cdn_handle_alloc(&t, &objs[i % 8]);
        if (last == 0)
            ck_abort_msg("allocation %d of %d failed", i, max);
        if (i == 0)
            first = last;
    }
    ck_assert_int_eq(atomic_load(&t.live), max);
    ck_assert_int_eq(cdn_handle_alloc(&t, &objs[9]), 0);
    ck_assert_int_eq(atomic_load(&t.live), max);
    ck_assert_ptr_eq(cdn_handle_get(&t, last), &objs[(max - 1) % 8]);
    cdn_handle_free(&t, first);
    int again = cdn_handle_alloc(&t, &objs[9]);
    ck_assert_int_eq(again, first);
    ck_assert_ptr_eq(cdn_handle_get(&t, again), &objs[9]);
    cdn_handle_table_destroy(&t);
}
END_TEST

START_TEST(test_destroy)
{
    struct cdn_handle_table t = CDN_HANDLE_TABLE_INIT(CDN_OBJ_WIN);
    int h[2 * CDN_HANDLE_CHUNK];
    for (int i = 0; i < 2 * CDN_HANDLE_CHUNK; i++)
        h[i] = cdn_handle_alloc(&t, &objs[i]);
    for (int i = 0; i < 100; i++)
        cdn_handle_free(&t, h[i]);
    ck_assert_ptr_nonnull(t.free_list);
    ck_assert_ptr_nonnull(atomic_load(&t.chunks[1]));

    cdn_handle_table_destroy(&t);
    for (int c = 0; c < CDN_HANDLE_MAX_CHUNKS; c++)
        ck_assert_ptr_null(atomic_load(&t.chunks[c]));
    ck_assert_ptr_null(t.free_list);
    ck_assert_uint_eq(t.nfree, 0);
    ck_assert_uint_eq(t.next, 0);
    ck_assert_int_eq(atomic_load(&t.live), 0);
    ck_assert_ptr_null(cdn_handle_get(&t, h[500]));
    ck_assert_ptr_null(cdn_handle_get(&t, h[1500]));

    /* the table can be used again */
    int n = cdn_handle_alloc(&t, &objs[7]);
    ck_assert_int_eq(CDN_HANDLE_TYPE(n), CDN_OBJ_WIN);
    ck_assert_ptr_eq(cdn_handle_get(&t, n), &objs[7]);
    cdn_handle_table_destroy(&t);
}
END_TEST

/* ---- four threads allocating and freeing at once ---- */

#define NTHREADS 4
#define WINDOW 600   /* live handles per thread: 2400 in all, so chunks are added */
#define ROUNDS 40000

static struct cdn_handle_table shared = CDN_HANDLE_TABLE_INIT(CDN_OBJ_KEYVAL);
static int thread_objs[NTHREADS][WINDOW];
static pthread_barrier_t barrier;

/* Returns the number of the first check that failed, 0 if none; waits at
 * every barrier even then, so a failure cannot hang the other threads. */
static int churn_checks(int id)
{
    int live[WINDOW] = {0};
    unsigned seed = 12345u + (unsigned)id;
    int fail = 0;
    pthread_barrier_wait(&barrier);
    for (int r = 0; r < ROUNDS && !fail; r++) {
        int slot = (int)(rand_r(&seed) % WINDOW);
        if (live[slot] == 0) {
            live[slot] = cdn_handle_alloc(&shared, &thread_objs[id][slot]);
            if (live[slot] == 0 || CDN_HANDLE_TYPE(live[slot]) != CDN_OBJ_KEYVAL)
                fail = 1;
        } else {
            cdn_handle_free(&shared, live[slot]);
            live[slot] = 0;
        }
        /* a few of this thread's live handles still give their own objects */
        for (int k = 0; k < 4; k++) {
            int s = (int)(rand_r(&seed) % WINDOW);
            if (live[s] != 0 && cdn_handle_get(&shared, live[s]) != &thread_objs[id][s])
                fail = 2;
        }
    }
    for (int s = 0; s < WINDOW && !fail; s++)
        if (live[s] != 0 && cdn_handle_get(&shared, live[s]) != &thread_objs[id][s])
            fail = 3;
    /* fill every slot, so that all threads hold WINDOW handles at once */
    for (int s = 0; s < WINDOW && !fail; s++)
        if (live[s] == 0 && (live[s] = cdn_handle_alloc(&shared, &thread_objs[id][s])) == 0)
            fail = 4;
    pthread_barrier_wait(&barrier);
    for (int s = 0; s < WINDOW && !fail; s++)
        if (cdn_handle_get(&shared, live[s]) != &thread_objs[id][s])
            fail = 5;
    if (id == 0 && atomic_load(&shared.live) != NTHREADS * WINDOW)
        fail = 6;
    pthread_barrier_wait(&barrier);
    for (int s = 0; s < WINDOW; s++)
        cdn_handle_free(&shared, live[s]);
    for (int s = 0; s < WINDOW && !fail; s++)
        if (live[s] != 0 && cdn_handle_get(&shared, live[s]) == &thread_objs[id][s])
            fail = 7;  /* freed, and nobody else stores this thread's objects */
    return fail;
}

static void *churn(void *arg)
{
    return (void *)(long)churn_checks((int)(long)arg);
}

START_TEST(test_concurrent_alloc_free)
{
    pthread_t th[NTHREADS];
    ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
    for (long i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        ck_assert_int_eq(pthread_join(th[i], &ret), 0);
        ck_assert_msg(ret == NULL, "thread %d failed check %ld", i, (long)ret);
    }
    ck_assert_int_eq(atomic_load(&shared.live), 0);
    pthread_barrier_destroy(&barrier);
    /* every index handed out is free again, and since NTHREADS * WINDOW were
     * live at once and never more, exactly that many were ever handed out */
    ck_assert_uint_eq(shared.nfree, shared.next);
    ck_assert_uint_eq(shared.next, NTHREADS * WINDOW);
    cdn_handle_table_destroy(&shared);
}
END_TEST

static Suite *handle_suite(void)
{
    Suite *s = suite_create("handle");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_alloc_encoding_and_get);
    tcase_add_test(tc, test_get_rejects_foreign_handles);
    tcase_add_test(tc, test_free_and_reuse);
    tcase_add_test(tc, test_many_cross_chunks);
    tcase_add_test(tc, test_destroy);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_exhaustion);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_concurrent_alloc_free);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(handle_suite(), 0);
}
