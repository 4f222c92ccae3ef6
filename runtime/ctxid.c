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
 * parents at once, and a process may be in a blocking creation on one
 * communicator while the peers it needs are busy in a creation elsewhere
 * (a duplicate of MPI_COMM_SELF in one thread, of a communicator of
 * several processes in another).  So no allocation ever holds the mask
 * across an exchange.  Every attempt is two exchanges: the participants
 * AND a snapshot of their masks, each reserves the agreed id(s) locally
 * if still free (another thread may have taken one meanwhile), and they
 * AND the outcomes; where any process could not, the others give their
 * reservation back and all try again, skipping a pseudo-random number of
 * the lowest agreed ids (drawn from the allocation's priority and attempt,
 * the same on every process), so two allocations that collided part ways.
 * The blocking form (cdn_ctxid_alloc) runs the attempts in the calling
 * thread, the nonblocking one (MPI_Comm_idup, coll/idup.c) as
 * schedules.
 */
#include "runtime/ctxid.h"

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/error.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_mask[CDN_CTXID_WORDS];   /* bit i: id 2*i is free */

void cdn_ctxid_reset(void)
{
    pthread_mutex_lock(&lock);
    memset(free_mask, 0xff, sizeof free_mask);
    free_mask[0] &= ~0x3u;  /* 0 (MPI_COMM_WORLD) and 2 (MPI_COMM_SELF) */
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

uint64_t cdn_ctxid_pick(uint64_t seed, int attempt)
{
    if (attempt == 0)
        return 0;
    uint64_t z = seed ^ ((uint64_t)(unsigned)attempt << 48);  /* splitmix64 */
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
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
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = (free_mask[ids[i] / 64] >> ((ids[i] / 2) % 32)) & 1u;
    for (int i = 0; i < n && ok; i++)
        free_mask[ids[i] / 64] &= ~(1u << ((ids[i] / 2) % 32));
    pthread_mutex_unlock(&lock);
    return ok;
}

int cdn_ctxid_alloc(int n, uint64_t seed, cdn_ctxid_reduce_fn *reduce, void *arg, uint32_t *ids,
                    const char *caller)
{
    uint32_t mask[CDN_CTXID_WORDS];
    for (int attempt = 0;; attempt++) {
        cdn_ctxid_nb_snapshot(mask);
        int rc = reduce(arg, mask, CDN_CTXID_WORDS);
        if (rc != MPI_SUCCESS)
            return rc;
        int err;
        bool reserved = cdn_ctxid_nb_reserve(mask, n, ids, cdn_ctxid_pick(seed, attempt), &err,
                                             caller);
        if (err != MPI_SUCCESS)  /* too few ids agreed: the same everywhere */
            return err;
        uint32_t ok = reserved;
        rc = reduce(arg, &ok, 1);
        if (rc == MPI_SUCCESS && ok)
            return MPI_SUCCESS;
        if (reserved)
            for (int i = 0; i < n; i++)
                cdn_ctxid_free(ids[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
}
