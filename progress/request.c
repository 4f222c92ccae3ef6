/*
 * The request pool, request handles and completion (see request.h).
 *
 * Requests are carved from chunks of CDN_REQ_CHUNK objects; each object gets
 * a handle in the request handle table once, when its chunk is made, and
 * keeps it.  Freed objects go to a small per-thread cache first, then to
 * the pool's free list under a mutex, which a thread refills its cache from
 * in batches: nothing on the send/receive path calls malloc once the pool
 * is warm, and most allocations take no lock.  A thread's cache goes back
 * to the pool when the thread exits.
 */
#include "progress/request.h"

#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "runtime/comm.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

#define CDN_REQ_CHUNK 64

struct req_chunk {
    struct req_chunk *next;
    struct cdn_request reqs[CDN_REQ_CHUNK];
};

/* Requests a thread keeps for itself: a window of 64 receives and 64
 * sends (bibw) is 128 at once; with 64, half of each window's frees and
 * its refills took the pool's mutex (8% of bibw's 8-byte samples). */
#define TCACHE_MAX 256
#define TCACHE_BATCH 16

static struct {
    pthread_mutex_t lock;
    struct cdn_request *free;
    struct req_chunk *chunks;
    int nfree, ntotal;
    int epoch;                     /* bumped when the pool is freed at finalize */
    pthread_key_t key;             /* flushes a thread's cache at its exit */
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .epoch = 1,
};
struct cdn_handle_table cdn_request_table = CDN_HANDLE_TABLE_INIT(CDN_OBJ_REQUEST);

static CDN_TLS struct tcache {
    struct cdn_request *head;
    int n;
    int epoch;                     /* the pool epoch these objects belong to */
} tcache;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Give a cache back to the pool (thread exit, finalize). */
static void tcache_flush(void *arg)
{
    struct tcache *c = arg != NULL ? arg : &tcache;
    pthread_mutex_lock(&pool.lock);
    if (c->epoch == pool.epoch) {
        while (c->head != NULL) {
            struct cdn_request *r = c->head;
            c->head = r->pool_next;
            r->pool_next = pool.free;
            pool.free = r;
            pool.nfree++;
        }
    }
    c->head = NULL;
    c->n = 0;
    pthread_mutex_unlock(&pool.lock);
}

static void make_key(void)
{
    pthread_key_create(&pool.key, tcache_flush);
}

/* Called with pool.lock held. */
static int pool_grow(void)
{
    struct req_chunk *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -1;
    int made = 0;
    for (int i = 0; i < CDN_REQ_CHUNK; i++) {
        struct cdn_request *r = &c->reqs[i];
        r->handle = cdn_handle_alloc(&cdn_request_table, r);
        if (r->handle == 0)
            break;  /* out of handles: keep the part of the chunk that has them */
        r->pool_next = pool.free;
        pool.free = r;
        made++;
    }
    c->next = pool.chunks;  /* kept even if empty: handles may point into it */
    pool.chunks = c;
    pool.nfree += made;
    pool.ntotal += made;
    return made > 0 ? 0 : -1;
}

/* Refill this thread's cache from the pool; false when out of memory. */
static bool tcache_refill(void)
{
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&pool.lock);
    if (tcache.epoch != pool.epoch) {  /* first use, or a cache of a freed pool */
        tcache.head = NULL;
        tcache.n = 0;
        tcache.epoch = pool.epoch;
        pthread_setspecific(pool.key, &tcache);
    }
    for (int i = 0; i < TCACHE_BATCH; i++) {
        if (pool.free == NULL && pool_grow() != 0)
            break;
        struct cdn_request *g = pool.free;
        pool.free = g->pool_next;
        pool.nfree--;
        g->pool_next = tcache.head;
        tcache.head = g;
        tcache.n++;
    }
    pthread_mutex_unlock(&pool.lock);
    return tcache.head != NULL;
}

/* Is this thread's cache ready to give a request? */
static inline bool tcache_ready(void)
{
    return CDN_LIKELY(tcache.head != NULL && tcache.epoch == pool.epoch);
}

/* A request off this thread's cache (tcache_ready). */
static inline struct cdn_request *request_take(void)
{
    struct cdn_request *r = tcache.head;
    tcache.head = r->pool_next;
    tcache.n--;
    return r;
}

/* Every field of the request but the kind state u (handle and pool_next
 * belong to the pool). */
static inline void header_init(struct cdn_request *r, int kind, const struct cdn_request_ops *ops,
                               struct cdn_comm *comm)
{
    atomic_init(&r->cc, 0);
    atomic_init(&r->refs, 1);
    r->ops = ops;
    r->kind = kind;
    r->persistent = false;
    r->active = false;
    r->owner_waits = false;
    atomic_init(&r->live, false);
    atomic_init(&r->cancelled, false);
    r->parent = NULL;
    r->parent_slot = 0;
    r->comm = comm;
    r->pctx = comm != NULL ? comm->pctx : 0;
    if (comm != NULL)
        cdn_comm_retain(comm);  /* MPI_Comm_free waits for the requests on it */
    cdn_status_empty(&r->status);
    r->next = r->prev = NULL;
}

/* The allocations with an empty cache: refill it, then allocate (a tail
 * call from the fast path, which then saves no registers). */
static __attribute__((noinline)) struct cdn_request *
alloc_refill(int kind, const struct cdn_request_ops *ops, struct cdn_comm *comm, bool bare)
{
    if (!tcache_refill())
        return NULL;
    return bare ? cdn_request_alloc_bare(kind, ops, comm) : cdn_request_alloc(kind, ops, comm);
}

struct cdn_request *cdn_request_alloc(int kind, const struct cdn_request_ops *ops,
                                      struct cdn_comm *comm)
{
    if (!tcache_ready())
        return alloc_refill(kind, ops, comm, false);
    struct cdn_request *r = request_take();
    cdn_zero_words(&r->u, sizeof r->u);
    header_init(r, kind, ops, comm);
    return r;
}

struct cdn_request *cdn_request_alloc_bare(int kind, const struct cdn_request_ops *ops,
                                           struct cdn_comm *comm)
{
    if (!tcache_ready())
        return alloc_refill(kind, ops, comm, true);
    struct cdn_request *r = request_take();
    header_init(r, kind, ops, comm);
    return r;
}

void cdn_request_retain(struct cdn_request *r)
{
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

/* The last reference went: release the kind's resources, back to the pool. */
static void request_free(struct cdn_request *r)
{
    if (r->ops != NULL && r->ops->free != NULL)
        r->ops->free(r);
    if (r->comm != NULL) {
        cdn_comm_release(r->comm);
        r->comm = NULL;
    }
    if (tcache.n < TCACHE_MAX && tcache.epoch == pool.epoch) {
        r->pool_next = tcache.head;
        tcache.head = r;
        tcache.n++;
        return;
    }
    pthread_mutex_lock(&pool.lock);
    r->pool_next = pool.free;
    pool.free = r;
    pool.nfree++;
    pthread_mutex_unlock(&pool.lock);
}

void cdn_request_release(struct cdn_request *r)
{
    /* The last reference needs no read-modify-write: no one else holds one
     * to take another from (the acquire orders the other holders' last
     * uses, released by their decrement, before the free).  The owner's
     * release after a completion usually is the last: the engine let go
     * of its reference as it completed the request. */
    if (atomic_load_explicit(&r->refs, memory_order_acquire) == 1 ||
        atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        request_free(r);
}

MPI_Request cdn_request_publish(struct cdn_request *r)
{
    atomic_store_explicit(&r->live, true, memory_order_release);
    return r->handle;
}

void cdn_request_unpublish(struct cdn_request *r)
{
    atomic_store_explicit(&r->live, false, memory_order_release);
    cdn_request_release(r);
}

int cdn_request_pool_finalize(void)
{
    tcache_flush(NULL);  /* ours; exited threads flushed theirs */
    pthread_mutex_lock(&pool.lock);
    int leaked = pool.ntotal - pool.nfree;
    /* Objects still referenced (a request the user never completed) keep
     * their memory: the chunks are only freed when every request is back. */
    if (leaked == 0) {
        while (pool.chunks != NULL) {
            struct req_chunk *c = pool.chunks;
            pool.chunks = c->next;
            free(c);
        }
        pool.free = NULL;
        pool.nfree = pool.ntotal = 0;
        pool.epoch++;  /* caches of live threads now point to nothing: dropped */
        cdn_handle_table_destroy(&cdn_request_table);
    }
    pthread_mutex_unlock(&pool.lock);
    return leaked;
}

void cdn_request_event(struct cdn_request *r)
{
    struct cdn_request *parent = r->parent;
    int slot = r->parent_slot;
    bool hook = r->ops != NULL && r->ops->complete != NULL;
    /* Read before the completion: the owner may free r as soon as cc is 0. */
    bool owned = r->owner_waits;
    int last = 2;
    /* The last event of a request without a hook: one read-modify-write
     * takes cc from 2 to 0. */
    if (hook || !atomic_compare_exchange_strong_explicit(&r->cc, &last, 0, memory_order_seq_cst,
                                                         memory_order_relaxed)) {
        int prev = atomic_fetch_sub_explicit(&r->cc, 1, memory_order_acq_rel);
        if (prev != 2)
            return;
        /* The last event: the hook runs before anyone can see cc == 0. */
        if (hook)
            r->ops->complete(r);
        parent = r->parent;
        slot = r->parent_slot;
        owned = r->owner_waits;  /* (again: not kept across the hook) */
        /* seq_cst read-modify-write, as above: cdn_progress_signal's fence */
        atomic_exchange_explicit(&r->cc, 0, memory_order_seq_cst);
    }
    /* The engine's reference, taken by cdn_request_arm, goes first: what
     * follows does not touch r.  Rarely the last (the owner still holds
     * its own), so no load first as in release. */
    if (!owned && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        request_free(r);
    if (parent != NULL && parent->ops->child_done != NULL) {
        parent->ops->child_done(parent, slot);  /* it signals, if anyone may wait for r */
        return;
    }
    if (parent != NULL)
        cdn_request_event(parent);
    cdn_progress_signal();
}

static bool request_done(void *arg)
{
    struct cdn_request *r = arg;
    if (cdn_request_done(r))
        return true;
    if (r->ops->progress != NULL)
        r->ops->progress(r);
    return cdn_request_done(r);
}

/* Waits progress the request's own context first, then the others. */
void cdn_request_wait(struct cdn_request *r)
{
    cdn_progress_wait_on(r->pctx, request_done, r);
}

void cdn_request_wait_late(struct cdn_request *r)
{
    cdn_progress_wait_on_late(r->pctx, request_done, r);
}
