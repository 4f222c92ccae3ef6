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

/* Agree on n (1 or 2) context ids free on every process taking part.
 * `prio` orders concurrent allocations of different communicators (lower
 * first), so threads creating communicators at once cannot starve each
 * other.  Collective over the processes reduce() spans. */
int cdn_ctxid_alloc(int n, uint64_t prio, cdn_ctxid_reduce_fn *reduce, void *arg, uint32_t *ids,
                    const char *caller);
/* The nonblocking form (MPI_Comm_idup), which may not hold the mask while
 * it waits for its peers (they may be busy in a blocking creation that
 * needs this process's mask): every attempt is two exchanges.  First the
 * participants AND a snapshot of their masks (cdn_ctxid_nb_snapshot); then
 * each tries to reserve the lowest n ids of the result locally
 * (cdn_ctxid_nb_reserve: false when one is taken meanwhile or a blocking
 * allocation holds the mask); they AND the outcomes, and where any failed
 * the reserving ones give the ids back (cdn_ctxid_free) and all try again.
 * cdn_ctxid_nb_reserve sets *err (MPI_ERR_INTERN, same everywhere) when
 * the agreed mask has fewer than n ids.  pick (the same everywhere): 0 takes
 * the lowest ids; retries pass a value that differs between concurrent
 * allocations, which then try different ids. */
void cdn_ctxid_nb_snapshot(uint32_t *mask);
bool cdn_ctxid_nb_reserve(const uint32_t *agreed, int n, uint32_t *ids, uint64_t pick, int *err,
                          const char *caller);
/* Give an id back (the communicator using it is destroyed). */
void cdn_ctxid_free(uint32_t id);
/* Mark every id but the predefined ones free (init). */
void cdn_ctxid_reset(void);
/* How many ids are in use (tests, leak checks). */
int cdn_ctxid_in_use(void);

#endif
