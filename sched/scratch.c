/*
 * Scratch memory of schedules, kept for reuse.
 *
 * Written here rather than left to malloc because it is on the hot path of
 * every nonblocking collective that needs a temporary buffer: a block of
 * tens of kilobytes handed back to glibc is often trimmed or unmapped, and
 * the next call's schedule then takes a page fault per 4 KiB page as it
 * first writes the block (about 1.5 us each on this virtual machine: 23 us
 * of a 64 KiB MPI_Iallreduce's start).  Blocks are sized in powers of two
 * from 4 KiB; up to CDN_SCRATCH_KEEP of each size up to 4 MiB are kept,
 * touched, for the next schedule (16 MiB at most in all).  Smaller and
 * larger requests go to malloc directly.  One lock: a get or put is a
 * handful of instructions next to the collective it serves.
 */
#include "sched/scratch.h"

#include <pthread.h>
#include <stdlib.h>

#define CDN_SCRATCH_MIN_SHIFT 12   /* 4 KiB */
#define CDN_SCRATCH_MAX_SHIFT 22   /* 4 MiB */
#define CDN_SCRATCH_KEEP 2         /* per size: at most 16 MiB kept in all */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *kept[CDN_SCRATCH_MAX_SHIFT + 1][CDN_SCRATCH_KEEP];
static int nkept[CDN_SCRATCH_MAX_SHIFT + 1];

/* The size class of a block of bytes, or -1 when it is not kept. */
static int class_of(size_t bytes)
{
    if (bytes < (size_t)1 << (CDN_SCRATCH_MIN_SHIFT - 1) ||
        bytes > (size_t)1 << CDN_SCRATCH_MAX_SHIFT)
        return -1;
    int c = CDN_SCRATCH_MIN_SHIFT;
    while (((size_t)1 << c) < bytes)
        c++;
    return c;
}

void *cdn_scratch_get(size_t bytes)
{
    int c = class_of(bytes);
    if (c < 0)
        return malloc(bytes > 0 ? bytes : 1);
    void *p = NULL;
    pthread_mutex_lock(&lock);
    if (nkept[c] > 0)
        p = kept[c][--nkept[c]];
    pthread_mutex_unlock(&lock);
    return p != NULL ? p : malloc((size_t)1 << c);
}

void cdn_scratch_put(void *p, size_t bytes)
{
    if (p == NULL)
        return;
    int c = class_of(bytes);
    if (c >= 0) {
        pthread_mutex_lock(&lock);
        if (nkept[c] < CDN_SCRATCH_KEEP) {
            kept[c][nkept[c]++] = p;
            p = NULL;
        }
        pthread_mutex_unlock(&lock);
    }
    free(p);
}

void cdn_scratch_trim(void)
{
    pthread_mutex_lock(&lock);
    for (int c = 0; c <= CDN_SCRATCH_MAX_SHIFT; c++)
        while (nkept[c] > 0)
            free(kept[c][--nkept[c]]);
    pthread_mutex_unlock(&lock);
}
