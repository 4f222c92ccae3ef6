/*
 * Staging copies: the packed copy of a non-contiguous message that a
 * transport sends from whole (a rendezvous read by CMA, a TCP stream), kept
 * once freed for the next of its size class so that a loop of such sends
 * allocates once (staging.c).
 */
#ifndef CDN_PROGRESS_STAGING_H
#define CDN_PROGRESS_STAGING_H

#include <stddef.h>

/* A buffer of at least bytes (bytes > 0); NULL when out of memory. */
void *cdn_staging_get(size_t bytes);
/* Give back a buffer cdn_staging_get(bytes) returned, with the same bytes. */
void cdn_staging_put(void *buf, size_t bytes);
/* Staging copies asked for and allocated so far (CADENCE_TRANSPORT_REPORT). */
void cdn_staging_counts(unsigned long *asked, unsigned long *allocated);
/* Free the kept buffers (MPI_Finalize). */
void cdn_staging_finalize(void);

#endif
