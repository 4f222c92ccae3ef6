/*
 * MPI_Alloc_mem's memory.  A plain block comes from posix_memalign at
 * CDN_ALLOC_MEM_ALIGN bytes or the alignment the info asks for; with
 * "alloc_shm" = "true" the block is a MAP_SHARED mapping of a memfd, the
 * kind of memory Cadence's shared windows are made of, so it stays shared
 * with a child after fork().  Hints (MPI-4.1 12.2.1 and docs/abi.md):
 *
 *   mpi_minimum_memory_alignment   a power of two; the block's address is a
 *                                  multiple of it (never less than the default)
 *   alloc_shm                      "true" or "false"
 *
 * A hint whose value cannot be read is an MPI_ERR_ARG naming the key and the
 * value: a program that asked for an alignment must not get less silently.
 * Other keys are ignored, as MPI asks.
 *
 * Every block is recorded in a small hash table keyed by its address, so
 * MPI_Free_mem knows how to release it and rejects an address it did not
 * hand out (MPI_ERR_BASE) instead of corrupting the heap.
 */
#include "runtime/alloc_mem.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/error.h"

#define NBUCKETS 256

struct block {
    struct block *next;
    void *base;        /* what the user holds */
    void *map;         /* the mapping to munmap, NULL for a heap block */
    size_t map_len;
};

static struct {
    pthread_mutex_t lock;
    struct block *bucket[NBUCKETS];
} M = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct block **bucket_of(const void *base)
{
    uintptr_t h = (uintptr_t)base >> 6;
    h ^= h >> 17;
    return &M.bucket[h % NBUCKETS];
}

/* Read the hints; MPI_SUCCESS or an MPI_ERR_ARG code naming the bad one. */
static int read_hints(struct cdn_info *info, size_t *align, bool *shm, const char *caller)
{
    char v[MPI_MAX_INFO_VAL];
    *align = CDN_ALLOC_MEM_ALIGN;
    *shm = false;
    if (info == NULL)
        return MPI_SUCCESS;
    if (cdn_info_lookup(info, "mpi_minimum_memory_alignment", v, sizeof v, NULL)) {
        char *end;
        errno = 0;
        unsigned long long a = strtoull(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || v[0] == '-' || a == 0 || (a & (a - 1)) != 0 ||
            a > (1ull << 30))
            return cdn_err(MPI_ERR_ARG, "%s: info mpi_minimum_memory_alignment = \"%s\" is not a "
                           "power of two from 1 to 2^30", caller, v);
        if (a > *align)
            *align = (size_t)a;
    }
    if (cdn_info_lookup(info, "alloc_shm", v, sizeof v, NULL)) {
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return cdn_err(MPI_ERR_ARG, "%s: info alloc_shm = \"%s\" is neither \"true\" nor "
                           "\"false\"", caller, v);
        *shm = strcmp(v, "true") == 0;
    }
    return MPI_SUCCESS;
}

/* A memfd mapping of len bytes with base aligned to align (mmap gives page
 * alignment; a larger one maps align more bytes and starts inside). */
static int map_shared(struct block *b, size_t len, size_t align, const char *caller)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t extra = align > page ? align : 0;
    size_t map_len = ((len + extra + page - 1) / page) * page;
    int fd = memfd_create("cadence-alloc-mem", MFD_CLOEXEC);
    if (fd < 0)
        return cdn_err(MPI_ERR_NO_MEM, "%s: memfd_create for alloc_shm failed: %s", caller,
                       strerror(errno));
    void *map = MAP_FAILED;
    int err = ftruncate(fd, (off_t)map_len) == 0 ? 0 : errno;
    if (err == 0) {
        map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = map == MAP_FAILED ? errno : 0;
    }
    close(fd);  /* the mapping keeps the memory */
    if (err != 0)
        return cdn_err(MPI_ERR_NO_MEM, "%s: cannot map %zu shared bytes (alloc_shm): %s", caller,
                       len, strerror(err));
    uintptr_t a = ((uintptr_t)map + align - 1) & ~(uintptr_t)(align - 1);
    b->map = map;
    b->map_len = map_len;
    b->base = (void *)a;
    return MPI_SUCCESS;
}

int cdn_alloc_mem(MPI_Aint size, struct cdn_info *info, void **base, const char *caller)
{
    size_t align;
    bool shm;
    int rc;
    if (size < 0)
        return cdn_err(MPI_ERR_ARG, "%s: size %ld is negative", caller, (long)size);
    if ((rc = read_hints(info, &align, &shm, caller)) != MPI_SUCCESS)
        return rc;
    struct block *b = calloc(1, sizeof *b);
    if (b == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    size_t len = size > 0 ? (size_t)size : 1;  /* a distinct address even for 0 */
    if (shm) {
        rc = map_shared(b, len, align, caller);
    } else if ((rc = posix_memalign(&b->base, align, len)) != 0) {
        rc = cdn_err(MPI_ERR_NO_MEM, "%s: cannot allocate %ld bytes aligned to %zu: %s", caller,
                     (long)size, align, strerror(rc));
    }
    if (rc != MPI_SUCCESS) {
        free(b);
        return rc;
    }
    pthread_mutex_lock(&M.lock);
    struct block **head = bucket_of(b->base);
    b->next = *head;
    *head = b;
    pthread_mutex_unlock(&M.lock);
    *base = b->base;
    return MPI_SUCCESS;
}

int cdn_free_mem(void *base, const char *caller)
{
    if (base == NULL)
        return MPI_SUCCESS;
    pthread_mutex_lock(&M.lock);
    struct block **p = bucket_of(base);
    while (*p != NULL && (*p)->base != base)
        p = &(*p)->next;
    struct block *b = *p;
    if (b != NULL)
        *p = b->next;
    pthread_mutex_unlock(&M.lock);
    if (b == NULL)
        return cdn_err(MPI_ERR_BASE, "%s: base %p was not returned by MPI_Alloc_mem (or was "
                       "freed already)", caller, base);
    if (b->map != NULL)
        munmap(b->map, b->map_len);
    else
        free(b->base);
    free(b);
    return MPI_SUCCESS;
}
