/* SPSC cell rings and doorbells (see ring.h). */
#include "transport/shm/ring.h"

#include <string.h>
#include <unistd.h>

void shm_ring_init(struct shm_ring *r, uint32_t ncells)
{
    r->ncells = ncells;
    atomic_init(&r->tail, 0);
    atomic_init(&r->posted_cells, 0);
    atomic_init(&r->fill_rate, 0);
    atomic_init(&r->reader_way, SHM_WAY_UNKNOWN);
    for (uint32_t i = 0; i < ncells; i++)
        atomic_init(&((struct shm_cell *)r->cells[i])->seq, 0);
}

void shm_prod_open(struct shm_prod *p, struct shm_ring *r)
{
    p->ring = r;
    p->ncells = r->ncells;
    p->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    p->head = p->tail_seen;  /* opened at wire-up, before anything is sent */
}

void shm_cons_open(struct shm_cons *c, struct shm_ring *r)
{
    c->ring = r;
    c->ncells = r->ncells;
    c->tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_init(&c->posted_taken, atomic_load_explicit(&r->posted_cells, memory_order_relaxed));
}

atomic_ulong shm_bell_rings;

bool shm_bell_would_ring(struct shm_bell *b, int need)
{
    atomic_thread_fence(memory_order_seq_cst);
    /* polled last: the consumer writes it at every blocking call's entry
     * and exit, so each look at it is a transfer between the cores; the
     * wants (on the sleepers' line) say no first for most cells -- a FIN
     * nobody sleeps for -- (latency 32 KiB -7%, bcast 64 KiB -8% with the
     * progress thread on: docs/progress.md, "Shared memory"). */
    return atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0 &&
           shm_bell_wants(b, need) && atomic_load_explicit(&b->polled, memory_order_seq_cst) == 0;
}

bool shm_bell_ring_fenced(struct shm_bell *b, int eventfd, int need)
{
    if (!shm_bell_would_ring(b, need))
        return false;
    atomic_fetch_add_explicit(&shm_bell_rings, 1, memory_order_relaxed);  /* beside a system call */
    uint64_t one = 1;
    if (write(eventfd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is saturated, the sleeper wakes anyway */
    }
    return true;
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
    uint32_t ncells = r->ncells;
    for (uint64_t pos = tail; pos < tail + ncells; pos++) {
        struct shm_cell *c = cell_at(r, ncells, pos);
        if (atomic_load_explicit(&c->seq, memory_order_seq_cst) != (uint32_t)(pos + 1))
            return false;
        if (full && pos - tail + 1 >= ncells / 2)
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
