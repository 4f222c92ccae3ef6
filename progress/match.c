/*
 * Matching queues (see match.h).  Queues are doubly linked lists threaded
 * through the requests and messages themselves, so posting and matching
 * allocate nothing except an unexpected message's copy, which for eager
 * sizes comes from a small pool of reused blocks (below, "the copy pool").
 */
#include "progress/match.h"

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/keep.h"
#include "progress/request.h"
#include "runtime/copy.h"

#define CDN_MATCH_CHUNKS 1024

_Atomic(struct cdn_match_ctx *) cdn_match_ctx_low[CDN_MATCH_CHUNK];
/* Chunk 0 is the static array the inline lookup reads (match.h). */
static _Atomic(struct cdn_match_ctx *) *_Atomic ctx_chunks[CDN_MATCH_CHUNKS] = {cdn_match_ctx_low};
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

/* cdn_match_ctx_get's slow path: a high id, or a context not made yet. */
struct cdn_match_ctx *cdn_match_ctx_make(uint32_t id)
{
    uint32_t c = id / CDN_MATCH_CHUNK, i = id % CDN_MATCH_CHUNK;
    if (c >= CDN_MATCH_CHUNKS)
        return NULL;
    _Atomic(struct cdn_match_ctx *) *chunk = atomic_load_explicit(&ctx_chunks[c], memory_order_acquire);
    if (chunk != NULL) {
        struct cdn_match_ctx *m = atomic_load_explicit(&chunk[i], memory_order_acquire);
        if (m != NULL)
            return m;
    }
    pthread_mutex_lock(&ctx_lock);
    chunk = atomic_load_explicit(&ctx_chunks[c], memory_order_relaxed);
    if (chunk == NULL) {
        chunk = calloc(CDN_MATCH_CHUNK, sizeof *chunk);
        if (chunk == NULL)
            goto fail;
        atomic_store_explicit(&ctx_chunks[c], chunk, memory_order_release);
    }
    struct cdn_match_ctx *m = atomic_load_explicit(&chunk[i], memory_order_relaxed);
    if (m == NULL) {
        /* a line (or more) of its own: the threads of a thread
         * communicator each match on their own context, and two contexts
         * in one line would move it between them at every message */
        size_t size = (sizeof *m + 63) & ~(size_t)63;
        m = aligned_alloc(64, size);
        if (m == NULL)
            goto fail;
        memset(m, 0, size);
        m->id = id;
        atomic_init(&m->lock.held, false);
        atomic_store_explicit(&chunk[i], m, memory_order_release);
    }
    pthread_mutex_unlock(&ctx_lock);
    return m;
fail:
    pthread_mutex_unlock(&ctx_lock);
    return NULL;
}

/* mask: the bits of the tag that must match (-1: all; a multiplexed
 * stream receive's any-stream or any-tag half: cdn_p2p_stream_recv). */
static inline bool matches(int want_src, int want_tag, int mask, const struct cdn_wire_hdr *h)
{
    return (want_src == MPI_ANY_SOURCE || want_src == h->src) &&
           (want_tag == MPI_ANY_TAG || ((want_tag ^ h->tag) & mask) == 0);
}

static void unexp_remove(struct cdn_match_ctx *m, struct cdn_msg *msg)
{
    if (msg->prev)
        msg->prev->next = msg->next;
    else
        m->unexp = msg->next;
    if (msg->next)
        msg->next->prev = msg->prev;
    else
        m->unexp_tail = msg->prev;
    msg->next = msg->prev = NULL;
}

/* What a posted receive asks of peers' doorbells (request.h, urgent). */
static inline enum cdn_want posted_want(const struct cdn_request *r)
{
    return r->u.p2p.urgent ? CDN_WANT_DATA : CDN_WANT_POSTED;
}

/* A receive raising a want is posted (+1) or leaves the queue (-1), under
 * m->lock: the engine hears when the context's count leaves or reaches
 * zero (match.h, wants). */
static inline void posted_want_add(struct cdn_match_ctx *m, const struct cdn_request *r, int delta)
{
    enum cdn_want w = posted_want(r);
    int old = m->wants[w];
    m->wants[w] = old + delta;
    if (old == 0 || old + delta == 0)
        cdn_progress_want(w, delta);
}

static inline __attribute__((always_inline)) void posted_remove(struct cdn_match_ctx *m,
                                                                 struct cdn_request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        m->posted = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        m->posted_tail = r->prev;
    r->next = r->prev = NULL;
    if (!r->u.p2p.waited)
        posted_want_add(m, r, -1);
}

struct cdn_msg *cdn_match_post(struct cdn_match_ctx *m, struct cdn_request *rreq)
{
    int src = rreq->u.p2p.rank, tag = rreq->u.p2p.tag, mask = rreq->u.p2p.tag_mask;
    cdn_spin_lock(&m->lock);
    for (struct cdn_msg *msg = m->unexp; msg != NULL; msg = msg->next) {
        if (matches(src, tag, mask, &msg->h)) {
            unexp_remove(m, msg);
            cdn_spin_unlock(&m->lock);
            return msg;
        }
    }
    if (!rreq->u.p2p.waited)
        posted_want_add(m, rreq, 1);  /* before the message can skip the doorbell */
    rreq->next = NULL;
    rreq->prev = m->posted_tail;
    if (m->posted_tail)
        m->posted_tail->next = rreq;
    else
        m->posted = rreq;
    m->posted_tail = rreq;
    cdn_spin_unlock(&m->lock);
    return NULL;
}

/* ---- the copy pools ----
 *
 * Unexpected messages are copied into blocks kept for reuse: a message
 * with at most 192 bytes of payload (or none: a rendezvous header) into a
 * block of its own size, the payload inline; one of up to POOL_PAYLOAD
 * bytes into a block that holds both, the payload on a line of its own;
 * at most KEEP of each are kept.  With malloc and free, a window of
 * unexpected 16 KiB messages freed together left 128 KiB free at the top
 * of glibc's heap, which glibc hands back to the kernel: the next window's
 * copies faulted their pages in again, 4 faults per message at about a
 * microsecond each on this guest (a 16 KiB bibw took 270,000 page faults
 * for 80,000 unexpected messages); and a small message paid a malloc and
 * a free.  Kept: up to 4,096 small blocks (320 bytes each), 64 of 16.3
 * KiB and 16 of 64.3 KiB (POOL_LARGE: TCP's largest eager payload,
 * TCP_EAGER_MAX, and the self path's, CDN_SELF_EAGER_LIMIT).  Only a
 * payload larger than any eager limit would be allocated with its
 * message. */
#define POOL_PAYLOAD 16384
#define POOL_LARGE 65536
#define POOL_HEAD ((sizeof(struct cdn_msg) + 63) & ~(size_t)63)
enum { KEEP_SMALL = 4096, KEEP_COPY = 64, KEEP_LARGE = 16 };

struct cdn_msg_pool {
    struct cdn_keep kept;
    size_t block;                 /* bytes of a block: a multiple of 64 */
    bool data_in_block;           /* the payload follows the message in the block */
};

static void *small_kept[KEEP_SMALL], *copy_kept[KEEP_COPY], *large_kept[KEEP_LARGE];
static struct cdn_msg_pool small_pool = {CDN_KEEP_INIT(small_kept), POOL_HEAD, false};
static struct cdn_msg_pool copy_pool = {CDN_KEEP_INIT(copy_kept), POOL_HEAD + POOL_PAYLOAD, true};
static struct cdn_msg_pool large_pool = {CDN_KEEP_INIT(large_kept), POOL_HEAD + POOL_LARGE, true};
/* Copies made, and blocks allocated for them (CADENCE_TRANSPORT_REPORT). */
static atomic_ulong copies_made, copies_allocated;

static struct cdn_msg *pool_get(struct cdn_msg_pool *pl)
{
    struct cdn_msg *msg = cdn_keep_take(&pl->kept);
    if (msg == NULL) {
        if ((msg = aligned_alloc(64, pl->block)) == NULL)
            return NULL;
        atomic_fetch_add_explicit(&copies_allocated, 1, memory_order_relaxed);
    }
    msg->pool = pl;
    msg->data = pl->data_in_block ? (char *)msg + POOL_HEAD : NULL;
    return msg;
}


void cdn_match_copy_counts(unsigned long *made, unsigned long *allocated)
{
    *made = atomic_load_explicit(&copies_made, memory_order_relaxed);
    *allocated = atomic_load_explicit(&copies_allocated, memory_order_relaxed);
}

static struct cdn_msg *msg_copy(const struct cdn_msg *tmpl, const void *payload)
{
    size_t n = payload != NULL ? (size_t)tmpl->h.bytes : 0;
    struct cdn_msg_pool *pl = n <= sizeof tmpl->inline_data ? &small_pool
                              : n <= POOL_PAYLOAD            ? &copy_pool
                              : n <= POOL_LARGE              ? &large_pool
                                                             : NULL;
    atomic_fetch_add_explicit(&copies_made, 1, memory_order_relaxed);
    struct cdn_msg *msg = pl != NULL ? pool_get(pl) : malloc(sizeof *msg);
    if (msg == NULL)
        return NULL;
    /* up to data: data and pool are the block's (pool_get set them) */
    memcpy(msg, tmpl, offsetof(struct cdn_msg, data));
    msg->next = msg->prev = NULL;
    if (pl == NULL) {
        msg->pool = NULL;
        if ((msg->data = malloc(n)) == NULL) {
            free(msg);
            return NULL;
        }
        atomic_fetch_add_explicit(&copies_allocated, 1, memory_order_relaxed);
    } else if (pl == &small_pool) {
        msg->data = payload != NULL ? msg->inline_data : NULL;
    }
    if (payload != NULL)
        cdn_copy(msg->data, payload, n);
    return msg;
}

/* cdn_match_arrive found no receive: queue a copy (still under m->lock,
 * released here).  Apart, so the matched path saves no registers for it. */
static __attribute__((noinline)) void arrive_unexpected(struct cdn_match_ctx *m,
                                                         const struct cdn_msg *tmpl,
                                                         const void *payload, bool *failed)
{
    struct cdn_msg *msg = msg_copy(tmpl, payload);
    if (msg == NULL) {
        *failed = true;
    } else {
        msg->prev = m->unexp_tail;
        if (m->unexp_tail)
            m->unexp_tail->next = msg;
        else
            m->unexp = msg;
        m->unexp_tail = msg;
    }
    cdn_spin_unlock(&m->lock);
}

struct cdn_request *cdn_match_arrive(struct cdn_match_ctx *m, const struct cdn_msg *tmpl,
                                     const void *payload, bool *failed)
{
    *failed = false;
    cdn_spin_lock(&m->lock);
    for (struct cdn_request *r = m->posted; r != NULL; r = r->next) {
        if (matches(r->u.p2p.rank, r->u.p2p.tag, r->u.p2p.tag_mask, &tmpl->h)) {
            posted_remove(m, r);
            cdn_spin_unlock(&m->lock);
            return r;
        }
    }
    arrive_unexpected(m, tmpl, payload, failed);
    return NULL;
}

bool cdn_match_unpost(struct cdn_match_ctx *m, struct cdn_request *rreq)
{
    bool found = false;
    cdn_spin_lock(&m->lock);
    for (struct cdn_request *r = m->posted; r != NULL; r = r->next) {
        if (r == rreq) {
            posted_remove(m, r);
            found = true;
            break;
        }
    }
    cdn_spin_unlock(&m->lock);
    return found;
}

bool cdn_match_unsend(struct cdn_match_ctx *m, struct cdn_transport *tp, int peer, uint64_t wire_id)
{
    struct cdn_msg *found = NULL;
    cdn_spin_lock(&m->lock);
    for (struct cdn_msg *msg = m->unexp; msg != NULL; msg = msg->next) {
        if (msg->tp == tp && msg->peer == peer && msg->wire_id == wire_id) {
            unexp_remove(m, msg);
            found = msg;
            break;
        }
    }
    cdn_spin_unlock(&m->lock);
    if (found != NULL)
        cdn_msg_free(found);
    return found != NULL;
}

bool cdn_match_probe(struct cdn_match_ctx *m, int src, int tag, bool take,
                     struct cdn_wire_hdr *h, struct cdn_msg **taken)
{
    bool found = false;
    cdn_spin_lock(&m->lock);
    for (struct cdn_msg *msg = m->unexp; msg != NULL; msg = msg->next) {
        if (matches(src, tag, -1, &msg->h)) {
            *h = msg->h;
            if (take) {
                unexp_remove(m, msg);
                *taken = msg;
            }
            found = true;
            break;
        }
    }
    cdn_spin_unlock(&m->lock);
    return found;
}

void cdn_msg_free(struct cdn_msg *msg)
{
    if (msg->pool != NULL && cdn_keep_give(&msg->pool->kept, msg))
        return;
    if (msg->pool == NULL)
        free(msg->data);  /* else in the block */
    free(msg);
}

struct cdn_request *cdn_match_take_posted(bool (*pred)(const struct cdn_request *r, int arg),
                                          int arg)
{
    struct cdn_request *taken = NULL;
    pthread_mutex_lock(&ctx_lock);
    for (int c = 0; c < CDN_MATCH_CHUNKS; c++) {
        _Atomic(struct cdn_match_ctx *) *chunk = atomic_load(&ctx_chunks[c]);
        for (int i = 0; chunk != NULL && i < CDN_MATCH_CHUNK; i++) {
            struct cdn_match_ctx *m = atomic_load(&chunk[i]);
            if (m == NULL)
                continue;
            cdn_spin_lock(&m->lock);
            for (struct cdn_request *r = m->posted, *next; r != NULL; r = next) {
                next = r->next;
                if (pred(r, arg)) {
                    posted_remove(m, r);
                    r->next = taken;
                    taken = r;
                }
            }
            cdn_spin_unlock(&m->lock);
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    return taken;
}

int cdn_match_finalize(void)
{
    int left = 0;
    pthread_mutex_lock(&ctx_lock);
    for (int c = 0; c < CDN_MATCH_CHUNKS; c++) {
        _Atomic(struct cdn_match_ctx *) *chunk = atomic_load(&ctx_chunks[c]);
        if (chunk == NULL)
            continue;
        for (int i = 0; i < CDN_MATCH_CHUNK; i++) {
            struct cdn_match_ctx *m = atomic_load(&chunk[i]);
            if (m == NULL)
                continue;
            while (m->unexp != NULL) {
                struct cdn_msg *msg = m->unexp;
                unexp_remove(m, msg);
                cdn_msg_free(msg);
                left++;
            }
            free(m);
            atomic_store(&chunk[i], NULL);
        }
        if (c > 0) {  /* chunk 0 is static */
            free((void *)chunk);
            atomic_store(&ctx_chunks[c], NULL);
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    cdn_keep_drain(&small_pool.kept);
    cdn_keep_drain(&copy_pool.kept);
    cdn_keep_drain(&large_pool.kept);
    atomic_store(&copies_made, 0);
    atomic_store(&copies_allocated, 0);
    return left;
}
