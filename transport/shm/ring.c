/* SPSC cell rings and doorbells (see ring.h). */
#include "transport/shm/ring.h"

#include <string.h>
#include <unistd.h>

void shm_ring_init(struct shm_ring *r)
{
    atomic_init(&r->tail, 0);
    atomic_init(&r->posted_cells, 0);
    for (int i = 0; i < SHM_RING_CELLS; i++)
        atomic_init(&((struct shm_cell *)r->cells[i])->seq, 0);
}

void shm_prod_open(struct shm_prod *p, struct shm_ring *r)
{
    p->ring = r;
    p->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    p->head = p->tail_seen;  /* opened at wire-up, before anything is sent */
}

void shm_cons_open(struct shm_cons *c, struct shm_ring *r)
{
    c->ring = r;
    c->tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_init(&c->posted_taken, atomic_load_explicit(&r->posted_cells, memory_order_relaxed));
}

static inline struct shm_cell *cell_at(struct shm_ring *r, uint64_t pos)
{
    return (struct shm_cell *)r->cells[pos % SHM_RING_CELLS];
}

/* Fetch a line for writing (an exclusive copy), without waiting.  x86
 * PREFETCHW: CPUs without it run it as a no-op; GCC emits it for
 * __builtin_prefetch only with -mprfchw. */
static inline void prefetch_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

struct shm_cell *shm_ring_reserve(struct shm_prod *p)
{
    if (p->head - p->tail_seen >= SHM_RING_CELLS) {
        p->tail_seen = atomic_load_explicit(&p->ring->tail, memory_order_acquire);
        if (p->head - p->tail_seen >= SHM_RING_CELLS)
            return NULL;
    }
    return cell_at(p->ring, p->head);
}

void shm_ring_commit(struct shm_prod *p)
{
    struct shm_cell *c = cell_at(p->ring, p->head);
    p->head++;
    atomic_store_explicit(&c->seq, (uint32_t)p->head, memory_order_release);
    /* Ask for the next cell's first line for writing now: the consumer
     * last read it a ring ago, and fetching it at the next send would
     * stall that send's doorbell fence (ring.h) for a transfer between
     * cores. */
    prefetch_write(cell_at(p->ring, p->head));
}

struct shm_cell *shm_ring_peek(struct shm_cons *c)
{
    struct shm_cell *cell = cell_at(c->ring, c->tail);
    if (atomic_load_explicit(&cell->seq, memory_order_acquire) != (uint32_t)(c->tail + 1))
        return NULL;
    return cell;
}

void shm_ring_release(struct shm_cons *c)
{
    c->tail++;
    atomic_store_explicit(&c->ring->tail, c->tail, memory_order_release);
}

bool shm_ring_pending(const struct shm_ring *r)
{
    /* seq_cst: the doorbell re-check after arming must not be reordered
     * before the arm (a plain load on x86 either way) */
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_seq_cst);
    const struct shm_cell *cell = (const struct shm_cell *)r->cells[tail % SHM_RING_CELLS];
    return atomic_load_explicit(&cell->seq, memory_order_seq_cst) == (uint32_t)(tail + 1);
}

bool shm_ring_crowded(struct shm_prod *p)
{
    if (p->head - p->tail_seen < SHM_RING_CELLS / 2)
        return false;
    p->tail_seen = atomic_load_explicit(&p->ring->tail, memory_order_acquire);
    return p->head - p->tail_seen >= SHM_RING_CELLS / 2;
}

void shm_bell_ring(struct shm_bell *b, int eventfd, int need)
{
    if (need == SHM_RING_LAZY) {
        /* no fence: plain looks (ring.h, "Lazy cells"); a consumer thread
         * asleep in MPI and an armed sleeper: the fenced path */
        if (atomic_load_explicit(&b->sleepers, memory_order_relaxed) == 0 ||
            atomic_load_explicit(&b->want[SHM_WANT_DATA], memory_order_relaxed) == 0)
            return;
        need = SHM_WANT_DATA;
    }
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0 &&
        atomic_load_explicit(&b->polled, memory_order_seq_cst) == 0 &&
        shm_bell_wants(b, need)) {
        uint64_t one = 1;
        if (write(eventfd, &one, sizeof one) < 0) {
            /* EAGAIN: the counter is saturated, the sleeper wakes anyway */
        }
    }
}

void shm_bell_arm(struct shm_bell *b)
{
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
}

void shm_bell_disarm(struct shm_bell *b, int eventfd)
{
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
    uint64_t v;
    if (read(eventfd, &v, sizeof v) < 0) {
        /* EAGAIN: nobody rang */
    }
}

bool shm_bell_quiet(struct shm_bell *b, int delta)
{
    /* seq_cst read-modify-write: the fence between the last poller's
     * leaving and its re-check of the rings */
    if (atomic_fetch_add_explicit(&b->polled, delta, memory_order_seq_cst) + delta != 0)
        return false;
    return atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0;
}

bool shm_ring_would_ring(const struct shm_ring *r, const struct shm_bell *b,
                         int (*need_of)(const struct shm_cell *c), bool full)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_seq_cst);
    for (uint64_t pos = tail; pos < tail + SHM_RING_CELLS; pos++) {
        struct shm_cell *c = (struct shm_cell *)r->cells[pos % SHM_RING_CELLS];
        if (atomic_load_explicit(&c->seq, memory_order_seq_cst) != (uint32_t)(pos + 1))
            return false;
        if (full && pos - tail + 1 >= SHM_RING_CELLS / 2)
            return true;  /* crowded: its producer rang, or was kept from it */
        int need = need_of(c);
        /* a cell taken and refilled meanwhile has a later sequence number */
        if (atomic_load_explicit(&c->seq, memory_order_acquire) != (uint32_t)(pos + 1))
            return false;
        if (shm_bell_wants(b, need))
            return true;
    }
    return full;
}
