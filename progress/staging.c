/* Staging copies kept for reuse (see staging.h).
 *
 * Buffers are allocated at a power of two from 4 KiB, and up to KEEP of
 * each size class up to 4 MiB are kept when given back (at most 2 x 8 MiB
 * held in all); larger ones are allocated and freed each time
 * (progress/keep.h). */
#include "progress/staging.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "progress/keep.h"

enum { MIN_SHIFT = 12, MAX_SHIFT = 22, NCLASS = MAX_SHIFT - MIN_SHIFT + 1, KEEP = 2 };

static void *kept[NCLASS][KEEP];
#define CLASS(c) CDN_KEEP_INIT(kept[c])
static struct cdn_keep classes[NCLASS] = {CLASS(0), CLASS(1), CLASS(2), CLASS(3), CLASS(4),
                                          CLASS(5), CLASS(6), CLASS(7), CLASS(8), CLASS(9),
                                          CLASS(10)};
#undef CLASS
_Static_assert(NCLASS == 11, "one keep per class above");
static atomic_ulong asked, allocated;

/* The class of bytes, or -1 above the largest kept; *size gets what to
 * allocate. */
static int class_of(size_t bytes, size_t *size)
{
    int shift = MIN_SHIFT;
    while (((size_t)1 << shift) < bytes && shift <= MAX_SHIFT)
        shift++;
    if (shift > MAX_SHIFT) {
        *size = bytes;
        return -1;
    }
    *size = (size_t)1 << shift;
    return shift - MIN_SHIFT;
}

void *cdn_staging_get(size_t bytes)
{
    size_t size;
    int c = class_of(bytes, &size);
    atomic_fetch_add_explicit(&asked, 1, memory_order_relaxed);
    void *buf = c >= 0 ? cdn_keep_take(&classes[c]) : NULL;
    if (buf == NULL) {
        buf = malloc(size);
        if (buf != NULL)
            atomic_fetch_add_explicit(&allocated, 1, memory_order_relaxed);
    }
    return buf;
}

void cdn_staging_put(void *buf, size_t bytes)
{
    size_t size;
    int c = class_of(bytes, &size);
    if (c < 0 || !cdn_keep_give(&classes[c], buf))
        free(buf);
}

void cdn_staging_counts(unsigned long *a, unsigned long *b)
{
    *a = atomic_load_explicit(&asked, memory_order_relaxed);
    *b = atomic_load_explicit(&allocated, memory_order_relaxed);
}

void cdn_staging_finalize(void)
{
    for (int c = 0; c < NCLASS; c++)
        cdn_keep_drain(&classes[c]);
    atomic_store(&asked, 0);
    atomic_store(&allocated, 0);
}
