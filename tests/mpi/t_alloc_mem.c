/* MPI_Alloc_mem / MPI_Free_mem: blocks of many sizes (0 included) hold
 * what is written to them and carry messages between ranks; the
 * mpi_minimum_memory_alignment and alloc_shm hints are honoured; bad sizes,
 * bad hint values and foreign or freed pointers are clear errors; windows
 * over such memory (MPI_Win_create) and MPI_Win_allocate behave as before;
 * threads allocate and free concurrently.  Run at 1 and 2 ranks, and under
 * valgrind (nothing leaks). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;

static int eclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

static void fill(unsigned char *p, MPI_Aint n, int seed)
{
    for (MPI_Aint i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static int filled(const unsigned char *p, MPI_Aint n, int seed)
{
    for (MPI_Aint i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + seed))
            return 0;
    return 1;
}

/* Blocks of each size, with and without hints, written and read back. */
static void test_sizes(MPI_Info info, const char *what, uintptr_t align)
{
    static const MPI_Aint sizes[] = {0, 1, 7, 64, 4096, 100000, 3 << 20};
    void *blocks[sizeof sizes / sizeof sizes[0]];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        blocks[i] = NULL;
        int rc = MPI_Alloc_mem(sizes[i], info, &blocks[i]);
        CHECK(rc == MPI_SUCCESS && blocks[i] != NULL, "%s: MPI_Alloc_mem(%ld) class %d, %p", what,
              (long)sizes[i], eclass(rc), blocks[i]);
        if (blocks[i] == NULL)
            continue;
        CHECK((uintptr_t)blocks[i] % align == 0, "%s: block of %ld bytes at %p is not aligned to %lu",
              what, (long)sizes[i], blocks[i], (unsigned long)align);
        fill(blocks[i], sizes[i], (int)i);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (blocks[i] == NULL)
            continue;
        CHECK(filled(blocks[i], sizes[i], (int)i), "%s: block of %ld bytes lost its data", what,
              (long)sizes[i]);
        CHECK(MPI_Free_mem(blocks[i]) == MPI_SUCCESS, "%s: MPI_Free_mem of the %ld-byte block",
              what, (long)sizes[i]);
    }
    /* size 0 twice gives two distinct addresses, each freeable */
    void *a = NULL, *b = NULL;
    MPI_Alloc_mem(0, info, &a);
    MPI_Alloc_mem(0, info, &b);
    CHECK(a != NULL && b != NULL && a != b, "%s: two 0-byte blocks at %p and %p", what, a, b);
    MPI_Free_mem(a);
    MPI_Free_mem(b);
}

static void test_hints(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    test_sizes(MPI_INFO_NULL, "no info", 64);
    test_sizes(info, "empty info", 64);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", "4096");
    test_sizes(info, "alignment 4096", 4096);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", "8");  /* never below the default */
    test_sizes(info, "alignment 8", 64);
    MPI_Info_set(info, "alloc_shm", "true");
    test_sizes(info, "alloc_shm", 64);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", "2097152");  /* above a page */
    test_sizes(info, "alloc_shm, alignment 2 MiB", 2097152);
    MPI_Info_set(info, "alloc_shm", "false");
    test_sizes(info, "alloc_shm false, alignment 2 MiB", 2097152);
    MPI_Info_set(info, "some_other_key", "whatever");  /* unknown keys are ignored */
    test_sizes(info, "unknown key", 2097152);
    MPI_Info_free(&info);
}

static void test_errors(void)
{
    void *p = (void *)&rank;
    int rc = MPI_Alloc_mem(-1, MPI_INFO_NULL, &p);
    CHECK(eclass(rc) == MPI_ERR_ARG && p == (void *)&rank, "size -1: class %d", eclass(rc));
    rc = MPI_Alloc_mem((MPI_Aint)1 << 60, MPI_INFO_NULL, &p);
    CHECK(eclass(rc) == MPI_ERR_NO_MEM && p == (void *)&rank, "size 2^60: class %d", eclass(rc));
    rc = MPI_Alloc_mem(8, MPI_INFO_NULL, NULL);
    CHECK(eclass(rc) == MPI_ERR_ARG, "baseptr NULL: class %d", eclass(rc));
    rc = MPI_Alloc_mem(8, (MPI_Info)0x12345, &p);
    CHECK(eclass(rc) == MPI_ERR_INFO, "invalid info handle: class %d", eclass(rc));

    static const char *bad[][2] = {
        {"mpi_minimum_memory_alignment", "3"}, {"mpi_minimum_memory_alignment", "0"},
        {"mpi_minimum_memory_alignment", "-64"}, {"mpi_minimum_memory_alignment", "64k"},
        {"mpi_minimum_memory_alignment", ""}, {"alloc_shm", "yes please"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, bad[i][0], bad[i][1]);
        p = (void *)&rank;
        rc = MPI_Alloc_mem(8, info, &p);
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len;
        MPI_Error_string(rc, msg, &len);
        CHECK(eclass(rc) == MPI_ERR_ARG && strstr(msg, bad[i][0]) != NULL && p == (void *)&rank,
              "%s = \"%s\": class %d, message \"%s\"", bad[i][0], bad[i][1], eclass(rc), msg);
        MPI_Info_free(&info);
    }

    /* MPI_Free_mem: NULL is fine; a foreign, an interior or a freed pointer is not */
    CHECK(MPI_Free_mem(NULL) == MPI_SUCCESS, "MPI_Free_mem(NULL)");
    char *m = malloc(16);
    rc = MPI_Free_mem(m);
    CHECK(eclass(rc) == MPI_ERR_BASE, "MPI_Free_mem of malloc memory: class %d", eclass(rc));
    free(m);
    rc = MPI_Free_mem(&rank);
    CHECK(eclass(rc) == MPI_ERR_BASE, "MPI_Free_mem of a static: class %d", eclass(rc));
    char *q = NULL;
    MPI_Alloc_mem(100, MPI_INFO_NULL, &q);
    rc = MPI_Free_mem(q + 1);
    CHECK(eclass(rc) == MPI_ERR_BASE, "MPI_Free_mem inside a block: class %d", eclass(rc));
    CHECK(MPI_Free_mem(q) == MPI_SUCCESS, "the block is still freeable");
    rc = MPI_Free_mem(q);
    CHECK(eclass(rc) == MPI_ERR_BASE, "MPI_Free_mem twice: class %d", eclass(rc));
}

/* A ring: each rank sends from one MPI_Alloc_mem block into the next rank's. */
static void test_messages(const char *shm)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shm", shm);
    for (MPI_Aint n = 1; n <= (1 << 22); n *= 16) {
        unsigned char *out = NULL, *in = NULL;
        MPI_Alloc_mem(n, info, &out);
        MPI_Alloc_mem(n, info, &in);
        fill(out, n, rank);
        memset(in, 0, (size_t)n);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(out, (int)n, MPI_BYTE, to, 5, in, (int)n, MPI_BYTE, from, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(filled(in, n, from), "alloc_shm %s: %ld bytes from rank %d arrived wrong", shm,
              (long)n, from);
        MPI_Free_mem(out);
        MPI_Free_mem(in);
    }
    MPI_Info_free(&info);
}

/* Windows: MPI_Win_create over MPI_Alloc_mem memory keeps that memory, and
 * MPI_Win_allocate's own memory is not MPI_Alloc_mem's to free. */
static void test_windows(void)
{
    double *buf = NULL;
    MPI_Alloc_mem(64 * sizeof(double), MPI_INFO_NULL, &buf);
    for (int i = 0; i < 64; i++)
        buf[i] = rank + i / 100.0;
    MPI_Win win;
    CHECK(MPI_Win_create(buf, 64 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                         &win) == MPI_SUCCESS, "MPI_Win_create over MPI_Alloc_mem memory");
    void *base = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == buf, "MPI_WIN_BASE %p, the block is at %p", base, (void *)buf);
    MPI_Win_free(&win);
    int ok = 1;
    for (int i = 0; i < 64; i++)
        ok &= buf[i] == rank + i / 100.0;
    CHECK(ok, "the block's data changed across MPI_Win_create/free");
    CHECK(MPI_Free_mem(buf) == MPI_SUCCESS, "MPI_Free_mem after the window is gone");

    double *wbase = NULL;
    CHECK(MPI_Win_allocate(128, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win) == MPI_SUCCESS,
          "MPI_Win_allocate");
    wbase[15] = 1.5;
    CHECK(eclass(MPI_Free_mem(wbase)) == MPI_ERR_BASE,
          "MPI_Free_mem of MPI_Win_allocate's memory is refused");
    CHECK(wbase[15] == 1.5, "the window's memory survived the refused MPI_Free_mem");
    MPI_Win_free(&win);
}

static void *thread_allocs(void *arg)
{
    int seed = *(int *)arg, bad = 0;
    for (int i = 0; i < 500; i++) {
        unsigned char *p[4] = {NULL};
        for (int k = 0; k < 4; k++) {
            if (MPI_Alloc_mem(100 + 37 * k, MPI_INFO_NULL, &p[k]) != MPI_SUCCESS)
                bad++;
            else
                fill(p[k], 100 + 37 * k, seed + k);
        }
        for (int k = 0; k < 4; k++) {
            if (p[k] != NULL && !filled(p[k], 100 + 37 * k, seed + k))
                bad++;
            if (MPI_Free_mem(p[k]) != MPI_SUCCESS)
                bad++;
        }
    }
    *(int *)arg = bad;
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[4];
    int arg[4];
    for (int t = 0; t < 4; t++) {
        arg[t] = t * 11;
        pthread_create(&th[t], NULL, thread_allocs, &arg[t]);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECK(arg[t] == 0, "thread %d: %d failed allocations, frees or data checks", t, arg[t]);
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_hints();
    test_errors();
    test_messages("false");
    test_messages("true");
    test_windows();
    if (provided == MPI_THREAD_MULTIPLE)
        test_threads();
    MPI_Finalize();
    return check_summary("t_alloc_mem");
}
