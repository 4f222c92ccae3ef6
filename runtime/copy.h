/*
 * cdn_copy: memcpy for the message path's copies of user data (a ring cell
 * from a send buffer, a receive buffer from a cell, an unexpected message's
 * copy, a collective's local copy), with one case of its own.
 *
 * Why not memcpy alone: from 4 KiB up, glibc 2.36's memcpy copies with
 * `rep movsb` on processors that advertise fast short string moves, and on
 * this machine's AMD EPYC that instruction runs at 3-4 GB/s instead of
 * 90-100 when the destination sits 1-15 bytes further into its cache line
 * than the source (and at 28-55 GB/s for 16-31 bytes), up to 512 KiB
 * (tools/bench/cmacost.c, the memcpy+8 lines).  A send buffer from malloc
 * (16-byte aligned) lands 8 bytes before a ring cell's payload one time in
 * four, and a 16 KiB eager send then took 4.7 µs of copying instead of
 * 0.2.  A vector loop with its stores aligned (AVX2 where the processor
 * has it, else SSE2) runs at 57-105 GB/s whatever the offsets, so copies
 * whose source and destination differ in their offset into a 32-byte unit
 * take it; everything else -- small copies, and buffers equally aligned --
 * stays with memcpy.  The benchmarks' buffers (malloc'd, 16 bytes past a
 * page) sit 40 bytes before a cell's payload: with this, `p2pbench` bw at
 * 16 KiB went from 11.1 to 15.2 GB/s and latency from 1.76 to 1.57 µs
 * (docs/progress.md, "Protocols").
 */
#ifndef CDN_COPY_H
#define CDN_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Below this glibc copies with vector loops, at full speed at any offset. */
#define CDN_COPY_SKEW_MIN 4096

void cdn_copy_skewed(void *dst, const void *src, size_t n);

static inline void cdn_copy(void *dst, const void *src, size_t n)
{
    if (n >= CDN_COPY_SKEW_MIN && (((uintptr_t)dst - (uintptr_t)src) & 31) != 0)
        cdn_copy_skewed(dst, src, n);
    else
        memcpy(dst, src, n);
}

#endif
