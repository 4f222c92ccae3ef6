/*
 * Blocks kept for reuse: a bounded stack of pointers behind a spin lock,
 * what a pool gives back instead of free() and takes before malloc()
 * (progress/match.c's unexpected copies, progress/staging.c's staging
 * copies).  Taken and given once per message, beside a copy of it.
 */
#ifndef CDN_PROGRESS_KEEP_H
#define CDN_PROGRESS_KEEP_H

#include <stdbool.h>
#include <stdlib.h>

#include "progress/spin.h"

struct cdn_keep {
    struct cdn_spin lock;
    int n, cap;
    void **items;  /* cap of them */
};

/* A keep over a static array of pointers (its size is the keep's cap). */
#define CDN_KEEP_INIT(array) \
    {CDN_SPIN_INIT, 0, (int)(sizeof(array) / sizeof *(array)), (void **)(array)}

/* The block given back last, or NULL when none is kept. */
static inline void *cdn_keep_take(struct cdn_keep *k)
{
    void *item = NULL;
    cdn_spin_lock(&k->lock);
    if (k->n > 0)
        item = k->items[--k->n];
    cdn_spin_unlock(&k->lock);
    return item;
}

/* Keep item; false when the keep is full (the caller frees it). */
static inline bool cdn_keep_give(struct cdn_keep *k, void *item)
{
    cdn_spin_lock(&k->lock);
    bool kept = k->n < k->cap;
    if (kept)
        k->items[k->n++] = item;
    cdn_spin_unlock(&k->lock);
    return kept;
}

/* Free every block kept (MPI_Finalize). */
static inline void cdn_keep_drain(struct cdn_keep *k)
{
    void *item;
    while ((item = cdn_keep_take(k)) != NULL)
        free(item);
}

#endif
