/*
 * Memory for MPI_Alloc_mem / MPI_Free_mem (MPI-4.1 12.2.1): aligned heap
 * blocks, or memfd-backed shared mappings on request, each remembered so
 * that MPI_Free_mem can tell its own pointers from any other.
 */
#ifndef CDN_ALLOC_MEM_H
#define CDN_ALLOC_MEM_H

#include <mpi.h>

#include "runtime/info.h"

/* The default alignment of a block, in bytes (a cache line). */
#define CDN_ALLOC_MEM_ALIGN 64

/* size bytes (0 gives a distinct minimal block) under the hints of info
 * (NULL: none); *base gets the address.  An MPI error code naming caller on
 * a bad hint value or when the memory cannot be had. */
int cdn_alloc_mem(MPI_Aint size, struct cdn_info *info, void **base, const char *caller);
/* Release a block cdn_alloc_mem returned; NULL is a no-op.  MPI_ERR_BASE
 * for any other address. */
int cdn_free_mem(void *base, const char *caller);

#endif
