/*
 * A test-and-set lock for the short critical sections of the message path:
 * the matching queues (progress/match.c) and a shared-memory peer's
 * producer end (transport/shm/shm.c).  Each message takes one of each on
 * both sides, and a pthread mutex costs about 80 instructions per lock and
 * unlock, two of them locked instructions; this one takes one exchange to
 * lock and a plain store to unlock (a release store needs no fence on x86,
 * so the unlock does not wait for the store buffer -- after a ring cell's
 * store it would wait for that line to come back from the polling peer).
 *
 * A waiter spins a while with pause, then yields the processor between
 * tries: eight ranks may run on two cores with their progress threads, and
 * the holder may be preempted (or be the thread we share a core with); a
 * pure spin would burn its whole slice.  Holders do not wait for anything
 * inside (a peer lock's holder may allocate, or write an eventfd).
 */
#ifndef CDN_SPIN_H
#define CDN_SPIN_H

#include <stdatomic.h>
#include <stdbool.h>

struct cdn_spin {
    atomic_bool held;
};

#define CDN_SPIN_INIT {false}

void cdn_spin_lock_slow(struct cdn_spin *l);

static inline void cdn_spin_lock(struct cdn_spin *l)
{
    if (__builtin_expect(!atomic_exchange_explicit(&l->held, true, memory_order_acquire), 1))
        return;
    cdn_spin_lock_slow(l);
}

static inline void cdn_spin_unlock(struct cdn_spin *l)
{
    atomic_store_explicit(&l->held, false, memory_order_release);
}

#endif
