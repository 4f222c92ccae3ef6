/*
 * What checkers cannot see of another process's writes, told to them.
 *
 * Happens-before across processes, told to ThreadSanitizer.  An object's
 * address travels to a peer and comes back (a request's in a shared-memory
 * control cell: FIN, ACK, CTS, DATA, PUSH; a one-sided operation's state in
 * the target's answer, progress/rma.c); the order is real, but it passes
 * through another process, which TSan cannot see.  Release when the
 * address leaves, acquire when it comes back.  No code outside TSan
 * builds.
 */
#ifndef CDN_CHECKERS_H
#define CDN_CHECKERS_H

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define CDN_HB_RELEASE(p) __tsan_release((void *)(p))
#define CDN_HB_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define CDN_HB_RELEASE(p) ((void)(p))
#define CDN_HB_ACQUIRE(p) ((void)(p))
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
