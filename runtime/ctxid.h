/*
 * Context ids: which matching contexts a new communicator gets, agreed by
 * every process that will belong to it (see ctxid.c for the protocol).
 */
#ifndef CDN_CTXID_H
#define CDN_CTXID_H

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
/* Give an id back (the communicator using it is destroyed). */
void cdn_ctxid_free(uint32_t id);
/* Mark every id but the predefined ones free (init). */
void cdn_ctxid_reset(void);
/* How many ids are in use (tests, leak checks). */
int cdn_ctxid_in_use(void);

#endif
