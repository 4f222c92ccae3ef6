/*
 * Message queues between the threads of a thread communicator: see
 * threadq.h (our own code: the interthread message path).
 */
#include "progress/threadq.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progress/p2p.h"
#include "progress/sent.h"
#include "progress/spin.h"
#include "runtime/config.h"
#include "runtime/copy.h"

enum { CELLS = 64, BINDS = 8 };
/* Two arenas a ring: eager data beyond a cell's, written by the producer
 * and given back in order by the consumer -- no allocation per message (a
 * buffer allocated by one thread and freed by another cost a message of
 * 512 B six times one of 8 B).  Data up to SMALL bytes goes to a small
 * arena, whose lines come round again while both threads still hold them
 * (512 B took 0.45 us from a 32 KiB arena and 0.75 from a 256 KiB one);
 * larger data to a large one, room for a window of 64 messages of 4 KiB. */
enum { SMALL = 1024 };
static const size_t arena_size[2] = {64 * 1024, 256 * 1024};

/* A message as a ring carries it. */
struct item {
    struct cdn_wire_hdr h;
    void *ptr;      /* eager beyond CDN_TQ_INLINE: the data (in the arena, or a heap
                     * copy); rendezvous: the send request */
    uint64_t end;   /* data in an arena: the arena position after it (else 0) */
    int arena;      /* ... which arena */
    unsigned char data[CDN_TQ_INLINE];
};

struct cell {
    _Atomic uint64_t seq;  /* position + 1 once the cell holds that position's message */
    struct item it;
} __attribute__((aligned(64)));

/* What a full ring spills, in order. */
struct spill {
    struct spill *next;
    struct item it;
};

struct ring {
    /* the producers' line */
    _Alignas(64) struct cdn_spin plock;
    uint64_t tail;       /* the next position to write */
    uint64_t head_seen;  /* the consumer's position when last read */
    struct spill *sp_head, *sp_tail;
    struct {
        unsigned char *mem;   /* arena_size[i] bytes, made on the first message that needs them */
        uint64_t tail;        /* the position next written */
        uint64_t seen;        /* the consumer's position when last read */
    } arena[2];
    /* the consumer's line */
    _Alignas(64) _Atomic uint64_t head;  /* the next position to read */
    _Atomic uint64_t ahead[2];           /* the arenas' positions given back */
    /* set by a producer that spilled, cleared by the consumer under plock */
    _Alignas(64) atomic_bool spilled;
    struct cell cells[CELLS];
};

/* A rendezvous copy split between the receiving thread, which matched it,
 * and the sending thread, waiting in MPI for its send (cdn_tq_copy): one
 * slot per sending thread.  Two cores copy a large message about as fast
 * as two processes' single copy through CMA, which splits it the same way. */
struct copy_slot {
    _Alignas(64) atomic_bool busy;  /* a receiver owns the slot */
    atomic_bool active;             /* ... and its chunks are up for taking */
    atomic_int helpers;             /* sending threads inside copy_chunks */
    char *dst;
    const char *src;
    size_t len, chunk, nchunks;
    atomic_size_t next, done;
};

/* A receiving thread's side (work sharing): whoever drains its rings --
 * the thread itself, or a helper while it is away -- holds the claim, so
 * one thread at a time takes its messages and order per pair holds. */
struct consumer {
    _Alignas(64) atomic_bool claim;
    atomic_uint polls;              /* the thread's own drains so far */
};

struct cdn_tq {
    int n;
    _Atomic(struct ring *) *rings;  /* [to * n + from], made on first use */
    struct copy_slot *slots;        /* [sending thread] */
    struct consumer *cons;          /* [receiving thread] */
    atomic_uint *seen;              /* [helper row * n + thread]: its polls at the helper's
                                     * last look; row n for threads not bound to q */
    struct cdn_tq *next, *prev;     /* every live one (the progress thread helps them) */
};

CDN_TLS int cdn_tq_nbound;
static atomic_ulong counts[CDN_TQ_NCOUNTS];

void cdn_tq_counts(unsigned long out[CDN_TQ_NCOUNTS])
{
    for (int i = 0; i < CDN_TQ_NCOUNTS; i++)
        out[i] = atomic_load_explicit(&counts[i], memory_order_relaxed);
}

static void count(int what)
{
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&counts[what], 1, memory_order_relaxed);
}
static CDN_TLS struct {
    struct cdn_tq *q;
    int me;
} bound[BINDS];
static CDN_TLS bool draining;

/* Work sharing (docs/tasks.md): CADENCE_WORK_SHARING (1: on). */
static bool sharing = true;
static long share_look_ns = 10000;  /* a helper's looks at a thread, at least this far apart */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cdn_tq *live;
atomic_int cdn_tq_nlive;
static CDN_TLS uint64_t last_look;

/* CADENCE_THREADCOMM_HELP_WAIT_US: how long a receiver splitting a copy
 * waits for the sending thread to take a chunk before copying alone (0, the
 * default: not at all).  For tests: whether the sender, polling beside the
 * receiver, gets to a chunk first is a matter of timing. */
static long help_wait_ns;

/* Senders need no fence (cdn_tq_send) once a sleeper's membarrier is
 * registered: set by the first thread communicator, before its first
 * message (MPIX_Threadcomm_init returns before any thread starts). */
static bool asym;

struct cdn_tq *cdn_tq_new(int n)
{
    if (!asym)
        asym = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    help_wait_ns = cdn_param_long("CADENCE_THREADCOMM_HELP_WAIT_US", 0, 0, 10000000) * 1000;
    sharing = cdn_param_long("CADENCE_WORK_SHARING", 1, 0, 1) != 0;
    share_look_ns = cdn_param_long("CADENCE_WORK_SHARING_LOOK_US", 10, 1, 1000000) * 1000;
    struct cdn_tq *q = calloc(1, sizeof *q);
    if (q == NULL)
        return NULL;
    q->n = n;
    q->rings = calloc((size_t)n * (size_t)n, sizeof *q->rings);
    q->slots = aligned_alloc(64, sizeof *q->slots * (size_t)n);
    q->cons = aligned_alloc(64, sizeof *q->cons * (size_t)n);
    q->seen = calloc((size_t)(n + 1) * (size_t)n, sizeof *q->seen);
    if (q->rings == NULL || q->slots == NULL || q->cons == NULL || q->seen == NULL) {
        cdn_tq_free(q);
        return NULL;
    }
    memset(q->slots, 0, sizeof *q->slots * (size_t)n);
    memset(q->cons, 0, sizeof *q->cons * (size_t)n);
    if (sharing) {
        pthread_mutex_lock(&live_lock);
        q->next = live;
        if (live != NULL)
            live->prev = q;
        live = q;
        atomic_fetch_add(&cdn_tq_nlive, 1);
        pthread_mutex_unlock(&live_lock);
    }
    return q;
}

static void item_drop(struct item *it)
{
    if (!(it->h.flags & CDN_WIRE_RNDV) && it->h.bytes > CDN_TQ_INLINE && it->end == 0)
        free(it->ptr);
}

void cdn_tq_free(struct cdn_tq *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&live_lock);  /* (a helper looks at live ones under it) */
    if (q->prev != NULL || live == q) {
        if (q->prev != NULL)
            q->prev->next = q->next;
        else
            live = q->next;
        if (q->next != NULL)
            q->next->prev = q->prev;
        atomic_fetch_sub(&cdn_tq_nlive, 1);
    }
    pthread_mutex_unlock(&live_lock);
    for (int i = 0; q->rings != NULL && i < q->n * q->n; i++) {
        struct ring *r = atomic_load(&q->rings[i]);
        if (r == NULL)
            continue;
        uint64_t head = atomic_load(&r->head);
        for (; head < r->tail; head++)
            item_drop(&r->cells[head % CELLS].it);
        for (struct spill *s = r->sp_head, *next; s != NULL; s = next) {
            next = s->next;
            item_drop(&s->it);
            free(s);
        }
        free(r->arena[0].mem);
        free(r->arena[1].mem);
        free(r);
    }
    free(q->rings);
    free(q->slots);
    free(q->cons);
    free(q->seen);
    free(q);
}

static struct ring *ring_of(struct cdn_tq *q, int from, int to)
{
    _Atomic(struct ring *) *slot = &q->rings[(size_t)to * (size_t)q->n + (size_t)from];
    struct ring *r = atomic_load_explicit(slot, memory_order_acquire);
    if (r != NULL)
        return r;
    struct ring *made = aligned_alloc(64, sizeof *made);
    if (made == NULL)
        return NULL;
    memset(made, 0, sizeof *made);
    if (atomic_compare_exchange_strong_explicit(slot, &r, made, memory_order_acq_rel,
                                                memory_order_acquire))
        return made;
    free(made);  /* another producer of the pair made it first */
    return r;
}

/* Room for `bytes` of eager data in an arena of r (producer, under plock):
 * the address, with the arena and the position after the data in *it;
 * NULL when the arena has none now. */
static void *arena_take(struct ring *r, size_t bytes, struct item *it)
{
    int i = bytes > SMALL;
    size_t size = arena_size[i];
    if (r->arena[i].mem == NULL && (r->arena[i].mem = malloc(size)) == NULL)
        return NULL;
    /* contiguous: data that would wrap starts at the arena's beginning */
    uint64_t at = r->arena[i].tail, off = at % size;
    if (off + bytes > size)
        at += size - off;
    if (at + bytes - r->arena[i].seen > size) {
        r->arena[i].seen = atomic_load_explicit(&r->ahead[i], memory_order_acquire);
        if (at + bytes - r->arena[i].seen > size)
            return NULL;
    }
    r->arena[i].tail = it->end = at + bytes;
    it->arena = i;
    return r->arena[i].mem + at % size;
}

bool cdn_tq_send(struct cdn_tq *q, int from, int to, const struct cdn_wire_hdr *h,
                 cdn_tq_pack_fn pack, void *pack_arg, void *sreq)
{
    struct ring *r = ring_of(q, from, to);
    if (r == NULL)
        return false;
    size_t bytes = (size_t)h->bytes;
    bool eager = sreq == NULL, inl = eager && bytes <= CDN_TQ_INLINE;
    cdn_spin_lock(&r->plock);
    struct item *it = NULL;
    struct cell *c = NULL;
    bool spilled = atomic_load_explicit(&r->spilled, memory_order_relaxed);
    if (!spilled) {
        if (r->tail - r->head_seen >= CELLS)
            r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (r->tail - r->head_seen < CELLS) {
            c = &r->cells[r->tail % CELLS];
            it = &c->it;
        }
    }
    struct spill *s = NULL;
    if (it == NULL) {
        if ((s = malloc(sizeof *s)) == NULL) {
            cdn_spin_unlock(&r->plock);
            return false;
        }
        s->next = NULL;
        it = &s->it;
    }
    it->h = *h;
    it->ptr = sreq;
    it->end = 0;
    void *dst = inl ? it->data : NULL;
    if (eager && !inl && c != NULL && (dst = arena_take(r, bytes, it)) != NULL)
        it->ptr = dst;
    else if (eager && !inl && (dst = it->ptr = malloc(bytes)) == NULL) {
        cdn_spin_unlock(&r->plock);
        free(s);
        return false;
    }
    if (eager && bytes > 0) {
        if (pack != NULL)
            pack(pack_arg, dst, bytes);
        else
            memcpy(dst, pack_arg, bytes);
    }
    if (c != NULL) {
        atomic_store_explicit(&c->seq, r->tail + 1, memory_order_release);
        r->tail++;
    } else {
        if (r->sp_tail != NULL)
            r->sp_tail->next = s;
        else
            r->sp_head = s;
        r->sp_tail = s;
        atomic_store_explicit(&r->spilled, true, memory_order_release);
    }
    /* (read before the unlock: the consumer may free a spilled item, or a
     * producer reuse the cell, at once after it) */
    int kind = !eager ? CDN_TQ_RNDV : inl ? -1 : it->end != 0 ? CDN_TQ_ARENA : CDN_TQ_HEAP;
    cdn_spin_unlock(&r->plock);
    count(c != NULL ? CDN_TQ_CELL : CDN_TQ_SPILL);
    if (kind >= 0)
        count(kind);
    /* A receiver about to sleep looks at its rings after registering as a
     * sleeper (cdn_tq_pending): one of us must see the other.  The fence
     * that takes is the sleeper's (a membarrier, which puts one into every
     * running thread of the process) where the kernel has it: a fence here
     * would wait for this cell's line at every message. */
    if (asym)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
    cdn_progress_signal();
    return true;
}

static void arrive(struct item *it)
{
    if (it->h.flags & CDN_WIRE_RNDV) {
        cdn_p2p_self_arrive(&it->h, NULL, it->ptr);
        return;
    }
    bool inl = it->h.bytes <= CDN_TQ_INLINE;
    cdn_p2p_self_arrive(&it->h, inl ? it->data : it->ptr, NULL);
    if (!inl && it->end == 0)
        free(it->ptr);
}

/* The ring's published cells from the consumer's position on. */
static int drain_cells(struct ring *r)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    int n = 0;
    uint64_t aend[2] = {0, 0};
    for (;;) {
        struct cell *c = &r->cells[head % CELLS];
        if (atomic_load_explicit(&c->seq, memory_order_acquire) != head + 1)
            break;
        arrive(&c->it);
        if (c->it.end != 0)
            aend[c->it.arena] = c->it.end;
        head++;
        /* the cells (and arena bytes) are the producers' again: once per
         * batch of cells, not per message -- a store to a line the
         * producers read, which every later locked instruction here would
         * wait for */
        if ((++n & 15) == 0 || atomic_load_explicit(&r->cells[head % CELLS].seq,
                                                     memory_order_acquire) != head + 1) {
            for (int i = 0; i < 2; i++)
                if (aend[i] != 0)
                    atomic_store_explicit(&r->ahead[i], aend[i], memory_order_release);
            atomic_store_explicit(&r->head, head, memory_order_release);
            aend[0] = aend[1] = 0;
        }
    }
    return n;
}

static int drain(struct ring *r)
{
    int n = drain_cells(r);
    if (!atomic_load_explicit(&r->spilled, memory_order_acquire))
        return n;
    /* The ring's cells are older than anything spilled (a producer writes
     * no cell while spilled is set): take them, then the spill. */
    cdn_spin_lock(&r->plock);
    n += drain_cells(r);
    struct spill *s = r->sp_head;
    r->sp_head = r->sp_tail = NULL;
    atomic_store_explicit(&r->spilled, false, memory_order_relaxed);
    cdn_spin_unlock(&r->plock);
    for (struct spill *next; s != NULL; s = next, n++) {
        next = s->next;
        arrive(&s->it);
        free(s);
    }
    return n;
}

/* fn over every ring into thread `to` of q; the sum of its results. */
static int each_ring_to(struct cdn_tq *q, int to, int (*fn)(struct ring *r))
{
    int n = 0;
    _Atomic(struct ring *) *in = &q->rings[(size_t)to * (size_t)q->n];
    for (int from = 0; from < q->n; from++) {
        struct ring *r = atomic_load_explicit(&in[from], memory_order_acquire);
        if (r != NULL)
            n += fn(r);
    }
    return n;
}

/* fn over every ring this thread receives on; the sum of its results. */
static int each_ring_in(int (*fn)(struct ring *r))
{
    int n = 0;
    for (int b = 0; b < cdn_tq_nbound; b++)
        n += each_ring_to(bound[b].q, bound[b].me, fn);
    return n;
}

static bool claim(struct consumer *c)
{
    return !atomic_load_explicit(&c->claim, memory_order_relaxed) &&
           !atomic_exchange_explicit(&c->claim, true, memory_order_acquire);
}

/* This thread's own rings, unless a helper drains them now (it delivers
 * what is there; the next poll looks again). */
static int drain_own(void)
{
    int n = 0;
    for (int b = 0; b < cdn_tq_nbound; b++) {
        struct cdn_tq *q = bound[b].q;
        struct consumer *c = &q->cons[bound[b].me];
        /* the only writer: no locked instruction */
        atomic_store_explicit(&c->polls, atomic_load_explicit(&c->polls, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        if (!claim(c))
            continue;
        n += each_ring_to(q, bound[b].me, drain);
        atomic_store_explicit(&c->claim, false, memory_order_release);
    }
    return n;
}

/* The chunks left, taken one at a time; how many this thread copied. */
static int copy_chunks(struct copy_slot *c)
{
    for (int n = 0;; n++) {
        size_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        if (i >= c->nchunks)
            return n;
        size_t off = i * c->chunk, n = c->len - off < c->chunk ? c->len - off : c->chunk;
        cdn_copy(c->dst + off, c->src + off, n);
        atomic_fetch_add_explicit(&c->done, 1, memory_order_release);
    }
}

void cdn_tq_copy(struct cdn_tq *q, int sender, void *dst, const void *src, size_t len)
{
    struct copy_slot *c = &q->slots[sender];
    if (len < CDN_TQ_SPLIT_MIN || atomic_load_explicit(&c->busy, memory_order_relaxed) ||
        atomic_exchange_explicit(&c->busy, true, memory_order_acquire)) {
        cdn_copy(dst, src, len);
        return;
    }
    c->dst = dst;
    c->src = src;
    c->len = len;
    c->chunk = (len / 8 + 4095) & ~(size_t)4095;
    c->chunk = c->chunk < 32768 ? 32768 : c->chunk;
    c->nchunks = (len + c->chunk - 1) / c->chunk;
    atomic_store_explicit(&c->next, 0, memory_order_relaxed);
    atomic_store_explicit(&c->done, 0, memory_order_relaxed);
    atomic_store_explicit(&c->active, true, memory_order_release);
    count(CDN_TQ_SPLIT);
    if (help_wait_ns > 0) {
        uint64_t until = cdn_progress_now_ns() + (uint64_t)help_wait_ns;
        while (atomic_load_explicit(&c->next, memory_order_relaxed) == 0 &&
               cdn_progress_now_ns() < until)
            sched_yield();
    }
    copy_chunks(c);
    /* No helper starts after this (it looks at active after counting
     * itself in); wait for the chunks of those inside. */
    atomic_store_explicit(&c->active, false, memory_order_seq_cst);
    while (atomic_load_explicit(&c->done, memory_order_acquire) < c->nchunks ||
           atomic_load_explicit(&c->helpers, memory_order_seq_cst) > 0)
        CDN_CPU_RELAX();
    atomic_store_explicit(&c->busy, false, memory_order_release);
}

/* This thread, a sender, takes chunks of a copy a receiver split. */
static int help_copy(void)
{
    int n = 0;
    for (int b = 0; b < cdn_tq_nbound; b++) {
        struct cdn_tq *q = bound[b].q;
        struct copy_slot *c = &q->slots[bound[b].me];
        if (!atomic_load_explicit(&c->active, memory_order_relaxed))
            continue;
        atomic_fetch_add_explicit(&c->helpers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&c->active, memory_order_seq_cst) && copy_chunks(c) > 0) {
            count(CDN_TQ_HELPED);
            n++;
        }
        atomic_fetch_sub_explicit(&c->helpers, 1, memory_order_release);
    }
    return n;
}

int cdn_tq_poll_bound(void)
{
    if (draining)  /* a completion's callback polling inside a drain */
        return 0;
    draining = true;
    int n = drain_own() + help_copy();
    draining = false;
    return n;
}

/* ---- work sharing ---- */

static int waiting(struct ring *r);

/* Is thread i of q away -- it has not drained its rings since this
 * helper's last look (row: the helper's) -- with messages waiting? */
static bool away_with_work(struct cdn_tq *q, int i, int row)
{
    unsigned p = atomic_load_explicit(&q->cons[i].polls, memory_order_relaxed);
    atomic_uint *seen = &q->seen[(size_t)row * (size_t)q->n + (size_t)i];
    if (atomic_exchange_explicit(seen, p, memory_order_relaxed) != p)
        return false;  /* it polled meanwhile: it takes its messages itself */
    return each_ring_to(q, i, waiting) > 0;
}

/* Drain thread i's rings for it: its messages are matched in its own
 * matching contexts (the header carries the context) and the completions
 * they cause -- a schedule's next receive, copy or reduction -- run here,
 * as steps of thread i's rank, whose communicator they carry. */
static int help_thread(struct cdn_tq *q, int i)
{
    struct consumer *c = &q->cons[i];
    if (!claim(c))
        return 0;
    int n = each_ring_to(q, i, drain);
    atomic_store_explicit(&c->claim, false, memory_order_release);
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&counts[CDN_TQ_SHARED], (unsigned long)n, memory_order_relaxed);
    return n;
}

int cdn_tq_share_slow(void)
{
    if (!sharing || draining)
        return 0;
    uint64_t now = cdn_progress_now_ns();
    if (now - last_look < (uint64_t)share_look_ns)
        return 0;
    last_look = now;
    draining = true;
    int n = 0;
    if (cdn_tq_nbound > 0) {
        /* a thread rank waiting in MPI: the other threads of its own
         * communicators */
        for (int b = 0; b < cdn_tq_nbound; b++) {
            struct cdn_tq *q = bound[b].q;
            for (int i = 0; i < q->n; i++)
                if (i != bound[b].me && away_with_work(q, i, bound[b].me))
                    n += help_thread(q, i);
        }
    } else if (pthread_mutex_trylock(&live_lock) == 0) {
        /* the progress thread, or another thread idle in MPI */
        for (struct cdn_tq *q = live; q != NULL; q = q->next)
            for (int i = 0; i < q->n; i++)
                if (away_with_work(q, i, q->n))
                    n += help_thread(q, i);
        pthread_mutex_unlock(&live_lock);
    }
    draining = false;
    return n;
}

static int waiting(struct ring *r)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    return atomic_load_explicit(&r->cells[head % CELLS].seq, memory_order_seq_cst) == head + 1 ||
           atomic_load_explicit(&r->spilled, memory_order_seq_cst);
}

bool cdn_tq_pending_bound(void)
{
    /* (the sleeper's half of the fence: cdn_tq_send) */
    if (asym)
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    else
        atomic_thread_fence(memory_order_seq_cst);
    return each_ring_in(waiting) > 0;
}

/* bound[0 .. cdn_tq_nbound-1]: what this thread is bound to, packed */
bool cdn_tq_bind(struct cdn_tq *q, int me)
{
    if (cdn_tq_nbound == BINDS)
        return false;
    bound[cdn_tq_nbound].q = q;
    bound[cdn_tq_nbound].me = me;
    cdn_tq_nbound++;
    return true;
}

void cdn_tq_unbind(struct cdn_tq *q)
{
    for (int b = 0; b < cdn_tq_nbound; b++)
        if (bound[b].q == q) {
            bound[b] = bound[--cdn_tq_nbound];
            bound[cdn_tq_nbound].q = NULL;
            return;
        }
}
