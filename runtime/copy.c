/* The vector copy for skewed buffers (see copy.h for why it exists). */
#include "runtime/copy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdatomic.h>

/* Stores aligned (loads may straddle lines, stores then never do), 64
 * bytes per step; the head and the tail through memcpy, below the size
 * where it turns to `rep movsb`. */
#define SKEWED_LOOP(name, attr, vec, load, store, width)                     \
    attr static void name(void *dst, const void *src, size_t n)                \
    {                                                                          \
        char *d = dst;                                                         \
        const char *s = src;                                                   \
        size_t head = ((width) - ((uintptr_t)d & ((width) - 1))) & ((width) - 1); \
        if (head > n)                                                          \
            head = n;                                                          \
        memcpy(d, s, head);                                                    \
        d += head;                                                             \
        s += head;                                                             \
        n -= head;                                                             \
        for (; n >= 64; d += 64, s += 64, n -= 64)                             \
            for (int k = 0; k < 64; k += (width))                              \
                store((vec *)(d + k), load((const vec *)(s + k)));             \
        memcpy(d, s, n);                                                       \
    }

SKEWED_LOOP(copy_sse2, , __m128i, _mm_loadu_si128, _mm_store_si128, 16)
SKEWED_LOOP(copy_avx2, __attribute__((target("avx2"))), __m256i, _mm256_loadu_si256,
            _mm256_store_si256, 32)

typedef void (*copy_fn)(void *dst, const void *src, size_t n);
static _Atomic(copy_fn) skewed;

void cdn_copy_skewed(void *dst, const void *src, size_t n)
{
    /* chosen at the first call; a race only picks the same twice */
    copy_fn f = atomic_load_explicit(&skewed, memory_order_relaxed);
    if (f == NULL) {
        f = __builtin_cpu_supports("avx2") ? copy_avx2 : copy_sse2;
        atomic_store_explicit(&skewed, f, memory_order_relaxed);
    }
    f(dst, src, n);
}
#else
void cdn_copy_skewed(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif
