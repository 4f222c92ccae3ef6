/*
 * What checkers cannot see of another process's writes, told to them.
 *
 * Happens-before across processes, told to ThreadSanitizer.  A request's
 * address travels to a peer and comes back in a control cell (FIN, ACK,
 * CTS, DATA, PUSH); the order is real, but it passes through another process's
 * memory writes, which TSan cannot see.  Release when the address leaves,
 * acquire when it comes back.  No code outside TSan builds.
 */
#ifndef CDN_SHM_TSAN_H
#define CDN_SHM_TSAN_H

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define SHM_HB_RELEASE(p) __tsan_release((void *)(p))
#define SHM_HB_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define SHM_HB_RELEASE(p) ((void)(p))
#define SHM_HB_ACQUIRE(p) ((void)(p))
#endif

/* Bytes another process wrote into this one's memory (CMA: a split copy's
 * upper half pushed by the sender): valgrind's memcheck saw no write and
 * would call them uninitialised when they travel on.  A few no-op
 * instructions outside valgrind; nothing where its header is missing. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define CDN_MEM_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif
#ifndef CDN_MEM_DEFINED
#define CDN_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#endif
