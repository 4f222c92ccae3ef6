/*
 * Context ids: which matching contexts a new communicator gets, agreed by
 * every process that will belong to it (see ctxid.c for the protocol).
 */
#ifndef CDN_CTXID_H
#define CDN_CTXID_H

#include <stdbool.h>
#include <stdint.h>

/* Ids 0..CDN_CTXID_MAX-2 step 2; 0/1 (WORLD), 2/3 (SELF) are taken. */
#define CDN_CTXID_WORDS 64                       /* 32 ids a word */
#define CDN_CTXID_MAX (2u * 32u * CDN_CTXID_WORDS)

/* The global AND of buf[0..nwords-1] over every process taking part in
 * this allocation: an internal exchange supplied by the caller. */
typedef int(cdn_ctxid_reduce_fn)(void *arg, uint32_t *buf, int nwords);

/* Agree on n (1 or 2) context ids free on every process taking part,
 * never holding the mask while waiting for peers: every attempt is two
 * exchanges.  First the participants AND a snapshot of their masks
 * (cdn_ctxid_nb_snapshot); then each tries to reserve n ids of the result
 * locally (cdn_ctxid_nb_reserve: false when one was taken meanwhile by
 * another thread); they AND the outcomes, and where any failed the
 * reserving ones give the ids back (cdn_ctxid_free) and all try again.
 * `seed` (the same on every process, different between allocations that
 * may run at once) seeds which ids a retry tries.  Collective over the
 * processes reduce() spans.  The nonblocking form (MPI_Comm_idup) runs the
 * same steps as schedules. */
int cdn_ctxid_alloc(int n, uint64_t seed, cdn_ctxid_reduce_fn *reduce, void *arg, uint32_t *ids,
                    const char *caller);
/* cdn_ctxid_nb_reserve sets *err (MPI_ERR_INTERN, same everywhere) when
 * the agreed mask has fewer than n ids.  pick: 0 takes the lowest ids;
 * cdn_ctxid_pick gives retries a value that differs between concurrent
 * allocations (seed) and attempts, so they try different ids. */
void cdn_ctxid_nb_snapshot(uint32_t *mask);
bool cdn_ctxid_nb_reserve(const uint32_t *agreed, int n, uint32_t *ids, uint64_t pick, int *err,
                          const char *caller);
uint64_t cdn_ctxid_pick(uint64_t seed, int attempt);
/* The seed of an allocation over parent context id ctx with internal tag
 * `tag` (negative): distinct for creations that may run at once. */
static inline uint64_t cdn_ctxid_seed(uint32_t ctx, int tag)
{
    return ((uint64_t)ctx << 32) | (uint32_t)(-tag);
}
/* Give an id back (the communicator using it is destroyed). */
void cdn_ctxid_free(uint32_t id);
/* Mark every id but the predefined ones free (init). */
void cdn_ctxid_reset(void);
/* How many ids are in use (tests, leak checks). */
int cdn_ctxid_in_use(void);

#endif
