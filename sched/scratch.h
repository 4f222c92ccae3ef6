/*
 * Scratch memory of schedules (temporary buffers of reductions, packed
 * blocks of all-to-all), kept for reuse (see scratch.c).
 */
#ifndef CDN_SCHED_SCRATCH_H
#define CDN_SCHED_SCRATCH_H

#include <stddef.h>

/* A block of at least bytes, or NULL; put it back with its size. */
void *cdn_scratch_get(size_t bytes);
void cdn_scratch_put(void *p, size_t bytes);
/* Give every kept block back to the system (MPI_Finalize). */
void cdn_scratch_trim(void);

#endif
