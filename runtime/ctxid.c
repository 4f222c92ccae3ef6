/*
 * The context-id allocator.
 *
 * Each process keeps a bitmask of its free ids.  To create a communicator,
 * the processes that will form it AND their masks together and take the
 * lowest id(s) set everywhere: an id nobody of them uses, so no message of
 * another communicator can match.  Ids are freed locally when a
 * communicator is destroyed, and reused.
 *
 * Threads (MPI_THREAD_MULTIPLE) may create communicators on different
 * parents at once; two of them must not pick the same id from the same
 * mask.  So a round contributes the real mask only if it owns the mask
 * (one owner per process at a time); a round that does not own it
 * contributes zeros and a "not owner" flag, which the AND spreads to
 * everyone, so the whole group retries.  To avoid two allocations taking
 * turns at failing for ever, the mask goes to the waiting allocation with
 * the lowest priority value (derived from the parent's context id), so the
 * globally lowest one eventually owns the mask everywhere and succeeds.
 * This is the known mask + lock + retry design (as in MPICH), written here
 * from the description.
 *
 * Nonblocking allocations (MPI_Comm_idup) never own the mask: they run in
 * the background while the application may enter a blocking creation on
 * another communicator that its peers need to finish first, so holding the
 * mask across their exchange could deadlock.  They agree on a snapshot,
 * then reserve the agreed ids where still free (never while a blocking
 * allocation owns the mask, whose snapshot must stay true), and a second
 * exchange tells whether every process could (see ctxid.h).
 */
#include "runtime/ctxid.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/error.h"

struct waiter {
    struct waiter *next;
    uint64_t prio;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_mask[CDN_CTXID_WORDS];   /* bit i: id 2*i is free */
static bool mask_owned;
static struct waiter *waiting;

void cdn_ctxid_reset(void)
{
    pthread_mutex_lock(&lock);
    memset(free_mask, 0xff, sizeof free_mask);
    free_mask[0] &= ~0x3u;  /* 0 (MPI_COMM_WORLD) and 2 (MPI_COMM_SELF) */
    mask_owned = false;
    pthread_mutex_unlock(&lock);
}

void cdn_ctxid_free(uint32_t id)
{
    uint32_t bit = id / 2;
    if (bit < 2 || bit >= 32u * CDN_CTXID_WORDS)
        return;
    pthread_mutex_lock(&lock);
    free_mask[bit / 32] |= 1u << (bit % 32);
    pthread_mutex_unlock(&lock);
}

int cdn_ctxid_in_use(void)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CDN_CTXID_WORDS; i++)
        n += 32 - __builtin_popcount(free_mask[i]);
    pthread_mutex_unlock(&lock);
    return n;
}

/* Lock held: is w the waiter with the lowest priority value? */
static bool first_in_line(const struct waiter *w)
{
    for (const struct waiter *o = waiting; o != NULL; o = o->next)
        if (o->prio < w->prio)
            return false;
    return true;
}

static void leave_line(struct waiter *w)
{
    for (struct waiter **p = &waiting; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

void cdn_ctxid_nb_snapshot(uint32_t *mask)
{
    pthread_mutex_lock(&lock);
    memcpy(mask, free_mask, sizeof free_mask);
    pthread_mutex_unlock(&lock);
}

bool cdn_ctxid_nb_reserve(const uint32_t *agreed, int n, uint32_t *ids, uint64_t pick, int *err,
                          const char *caller)
{
    int avail = 0;
    for (int w = 0; w < CDN_CTXID_WORDS; w++)
        avail += __builtin_popcount(agreed[w]);
    *err = MPI_SUCCESS;
    if (avail < n) {
        *err = cdn_err(MPI_ERR_INTERN, "%s: no free context id left (%u communicators exist)",
                       caller, CDN_CTXID_MAX / 2);
        return false;
    }
    /* skip some of the lowest agreed ids: 0 at first, then a number drawn
     * from pick among the lowest 64, so two allocations that collided
     * (each reserved first on different processes) part ways */
    int spread = avail - n + 1 < 64 ? avail - n + 1 : 64;
    int skip = (int)(pick % (uint64_t)spread), got = 0;
    for (int w = 0; w < CDN_CTXID_WORDS && got < n; w++)
        for (uint32_t m = agreed[w]; m != 0 && got < n; m &= m - 1) {
            if (skip > 0) {
                skip--;
                continue;
            }
            ids[got++] = 2u * (uint32_t)(w * 32 + __builtin_ctz(m));
        }
    pthread_mutex_lock(&lock);
    bool ok = !mask_owned;
    for (int i = 0; i < n && ok; i++)
        ok = (free_mask[ids[i] / 64] >> ((ids[i] / 2) % 32)) & 1u;
    for (int i = 0; i < n && ok; i++)
        free_mask[ids[i] / 64] &= ~(1u << ((ids[i] / 2) % 32));
    pthread_mutex_unlock(&lock);
    return ok;
}

int cdn_ctxid_alloc(int n, uint64_t prio, cdn_ctxid_reduce_fn *reduce, void *arg, uint32_t *ids,
                    const char *caller)
{
    uint32_t buf[CDN_CTXID_WORDS + 1];
    struct waiter me = {.prio = prio};
    pthread_mutex_lock(&lock);
    me.next = waiting;
    waiting = &me;
    pthread_mutex_unlock(&lock);
    for (;;) {
        pthread_mutex_lock(&lock);
        bool own = !mask_owned && first_in_line(&me);
        if (own) {
            mask_owned = true;
            memcpy(buf, free_mask, sizeof free_mask);
        } else {
            memset(buf, 0, sizeof free_mask);
        }
        buf[CDN_CTXID_WORDS] = own;  /* ANDed: true only if every process owned its mask */
        pthread_mutex_unlock(&lock);

        int rc = reduce(arg, buf, CDN_CTXID_WORDS + 1);

        pthread_mutex_lock(&lock);
        if (own)
            mask_owned = false;
        if (rc == MPI_SUCCESS && buf[CDN_CTXID_WORDS]) {
            int got = 0;
            for (int w = 0; w < CDN_CTXID_WORDS && got < n; w++)
                while (buf[w] != 0 && got < n) {
                    int b = __builtin_ctz(buf[w]);
                    buf[w] &= ~(1u << b);
                    free_mask[w] &= ~(1u << b);
                    ids[got++] = 2u * (uint32_t)(w * 32 + b);
                }
            if (got < n) {  /* give back what was taken: every process sees the same */
                for (int i = 0; i < got; i++)
                    free_mask[ids[i] / 64] |= 1u << ((ids[i] / 2) % 32);
                rc = cdn_err(MPI_ERR_INTERN, "%s: no free context id left (%u communicators "
                             "exist)", caller, CDN_CTXID_MAX / 2);
            }
            leave_line(&me);
            pthread_mutex_unlock(&lock);
            return rc;
        }
        if (rc != MPI_SUCCESS) {
            leave_line(&me);
            pthread_mutex_unlock(&lock);
            return rc;
        }
        pthread_mutex_unlock(&lock);
        sched_yield();  /* another allocation holds a mask somewhere: let it finish */
    }
}
