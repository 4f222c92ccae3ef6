/*
 * Single-producer/single-consumer rings of fixed-size cells in shared
 * memory, and the doorbell that wakes a sleeping consumer.
 *
 * A ring lives in the receiver's segment, one per sending peer.  A cell
 * says itself whether it is full: the producer fills it in place and then
 * stores its sequence number (position + 1) into the cell's first word; the
 * consumer polls the first word of the cell it expects next (the
 * FastForward idea).  A small message is one cache line -- sequence, header
 * and up to 8 bytes of payload -- so a hand-off moves one line between the
 * cores instead of a shared index and then the cell.  The consumer's count
 * of released cells (tail) sits on its own line; the producer keeps a
 * cached copy and reads the shared one only when the ring looks full.
 *
 * Doorbell: the consumer arms (sleepers += 1) before it sleeps in epoll on
 * its eventfd and re-checks its rings; a producer commits, then reads
 * sleepers and writes the eventfd only if someone sleeps.  Both sides put a
 * seq_cst fence between their store and their load, so either the producer
 * sees the sleeper or the sleeper sees the cell: no lost wake-up, and no
 * system call while the consumer is awake.
 *
 * Wants: a sleeping consumer is woken only for cells it has a use for.  A
 * ring costs the producer a system call and an inter-processor interrupt
 * (several microseconds in a virtual machine) and the consumer a context
 * switch on a core where its application may be computing, so the bell
 * also says what the consumer waits for (counters the consumer keeps, see
 * cdn_progress_want): messages (an urgent receive is posted or a thread
 * blocks in MPI), completions (someone waits on a send, or a schedule has
 * steps after it) and posted receives.  An eager message nobody wants at
 * once, or a FIN nobody waits on, stays in the ring until the next poll.
 * An RTS or a synchronous message rings a consumer with any receive
 * posted.  Cells that ask the consumer to act (CTS, CANCEL, stream data,
 * a PUSH of a large part; a smaller PUSH is an offer its producer takes
 * back, and rings nobody) always ring, and so does any cell but a lazy one
 * (below) written into a half-full ring, and a producer that finds the ring full (it
 * queues what it could not write): an idle consumer drains the ring
 * before it fills.  A lazy cell does not ring for a crowded ring: the
 * windows of 64 messages of a message-rate benchmark filled it half-way
 * before the receiver's MPI_Waitall and woke its progress thread once per
 * window; a full ring still rings.  A want
 * that rises while the consumer sleeps is followed by a re-check of the
 * rings for a cell it now wants (the same Dekker pairing as arming).
 *
 * Lazy cells: the fence between committing and looking at the bell costs
 * the producer the wait for its cell's line, a transfer between cores
 * (the consumer polls that line): half of a sender's time in the
 * message-rate benchmark.  So a standard eager message on a user's
 * context (cdn_p2p_send_lazy), which only a consumer thread asleep in MPI
 * wants at once (want DATA), looks at sleepers and want DATA without the
 * fence; only if both are set does it take the fenced path.  The plain
 * looks may run before the cell's store leaves the producer's store
 * buffer, so a consumer that arms, or raises want DATA, at that moment may
 * miss the cell in its re-check and not be rung.  The store is visible
 * within far less than a microsecond, so such a consumer looks again
 * CDN_PROGRESS_SETTLE_NS after arming (engine.c, armed_sleep) or after
 * raising the want (its first sleep in MPI is that short) before it
 * sleeps on: the cell is there then.
 *
 * Polled: while application threads of the consumer poll in a blocking
 * call (polled > 0) nothing rings, even with a sleeper armed: the pollers
 * take every cell, and a ring would only wake the consumer's progress
 * thread onto the poller's core.  The last poller to leave decrements,
 * fences and re-checks the rings (shm_bell_quiet), the same pairing again.
 */
#ifndef CDN_SHM_RING_H
#define CDN_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define SHM_CELL_SIZE (16384 + 64)  /* 16 KiB of payload after the 56-byte header */
/* Cells per ring: a power of two chosen per node by the segment's owner
 * (shm_ring_cells_for, segment.c), the same for every ring of the node.
 * SHM_RING_CELLS is the smallest (the unit tests' rings). */
#define SHM_RING_CELLS 64
#define SHM_RING_CELLS_MAX 256
/* Split-copy offers outstanding per ring at once (a bit each in the
 * receiver's claims_used): as many as a window of 64 messages, whose
 * PUSHED cells come behind the window's RTSs -- with 16, bw at 4 MiB split
 * 16 messages of each window of 64 (16.1-16.8 GB/s). */
#define SHM_CLAIMS 64
/* How a receiver reads a peer's rendezvous messages now (the ring's
 * reader_way): not chosen yet, through the rings, by CMA. */
enum shm_way { SHM_WAY_UNKNOWN, SHM_WAY_RINGS, SHM_WAY_CMA };
enum { SHM_CLAIM_OFFERED = 1, SHM_CLAIM_SENDER = 2, SHM_CLAIM_RECEIVER = 3 };

struct shm_cell {
    _Atomic uint32_t seq;   /* position + 1 (low 32 bits) once committed */
    uint16_t type;          /* enum in shm.c */
    uint16_t len;           /* payload bytes in data[] (< 64 KiB) */
    uint64_t a, b;          /* per type: cookies, addresses, offsets */
    struct cdn_wire_hdr h;
    unsigned char data[];
};
#define SHM_CELL_PAYLOAD (SHM_CELL_SIZE - sizeof(struct shm_cell))

/* A cell in its short form (type C_SMALL in shm.c): a standard eager
 * message of at most SHM_SMALL_MAX bytes, whose header's other fields are
 * known (no flags, bytes = len, no cookie), whole in the cell's first
 * line.  In the long form a message of more than 8 bytes takes a second
 * line, and each line is a transfer between the cores: Open MPI's
 * single-line messages carried 16 and 32 bytes at 1.15x Cadence's rate
 * in bibw. */
struct shm_small {
    _Atomic uint32_t seq;
    uint16_t type;
    uint16_t len;
    uint32_t ctx;
    int32_t src;
    int32_t tag;
    uint32_t unused;
    unsigned char data[40];
};
#define SHM_SMALL_MAX sizeof(((struct shm_small *)0)->data)
_Static_assert(sizeof(struct shm_small) == 64, "a short cell is one cache line");
_Static_assert(offsetof(struct shm_small, type) == offsetof(struct shm_cell, type) &&
                   offsetof(struct shm_small, len) == offsetof(struct shm_cell, len),
               "both forms start alike");

/* The cache lines a cell of len payload bytes spans in its long form. */
static inline uint32_t shm_cell_lines(uint32_t len)
{
    return (uint32_t)((sizeof(struct shm_cell) + len + 63) / 64);
}

struct shm_ring {
    _Alignas(64) uint32_t ncells;         /* a power of two, fixed before anyone attaches */
    _Alignas(64) _Atomic uint64_t tail;   /* cells released by the consumer */
    /* Cells of need SHM_WANT_POSTED (an RTS, a synchronous message) written
     * so far, counted before each is committed: a consumer whose posted
     * want rises compares it with the count it took (shm_cons) and looks
     * through the ring only when one may wait there -- the walk reads
     * every unread cell, up to a ring of lines the producer is writing. */
    _Alignas(64) _Atomic uint64_t posted_cells;
    /* Upper parts of split copies offered to the producer (shm.c, "claims"):
     * generation << 2 | SHM_CLAIM_*, taken by one side's compare-and-swap. */
    _Alignas(64) _Atomic uint32_t claim[SHM_CLAIMS];
    /* The producer's rate of copying into cells (bytes per 1024 time-stamp
     * ticks, averaged; 0: none yet), for the consumer's choice between CMA
     * and the rings (shm.c, rndv_by_cma). */
    _Alignas(64) atomic_uint fill_rate;
    /* How the consumer reads the producer's rendezvous messages now
     * (enum shm_way, written when it changes), for the producer's choice of
     * protocol for messages between the eager limit's half and the limit
     * (shm.c, send_rndv). */
    atomic_uint reader_way;
    _Alignas(64) unsigned char cells[][SHM_CELL_SIZE];
};

/* The bytes of a ring of ncells cells. */
static inline size_t shm_ring_bytes(uint32_t ncells)
{
    return sizeof(struct shm_ring) + (size_t)ncells * SHM_CELL_SIZE;
}

/* What a cell is for, to a sleeping consumer: its want index (the
 * CDN_WANT_* of the same name), or SHM_WAKE_ALWAYS.  A cell of need
 * SHM_WANT_POSTED (an RTS, a synchronous eager message: the sender waits
 * for the receiver to act) rings a consumer that wants data or has any
 * receive posted. */
enum { SHM_WANT_DATA, SHM_WANT_DONE, SHM_WANT_POSTED, SHM_NWANTS, SHM_WAKE_ALWAYS = -1,
       SHM_RING_LAZY = -2, SHM_WAKE_NEVER = -3 };

/* Each line holds what changes together: a producer of lazy cells reads
 * only the first line, which changes when a thread goes to sleep; polled
 * changes at every blocking call, posted at every receive (on the first
 * line, each moved the line away from the producer once per message). */
struct shm_bell {
    _Alignas(64) atomic_int sleepers;     /* consumers armed to be woken */
    atomic_int want[SHM_WANT_POSTED];     /* the consumer's wants (see above) */
    _Alignas(64) atomic_int polled;       /* application threads polling: ring nobody */
    _Alignas(64) atomic_int posted;       /* SHM_WANT_POSTED: receives posted */
};

/* The counter of want w. */
static inline atomic_int *shm_bell_want(struct shm_bell *b, int w)
{
    return w == SHM_WANT_POSTED ? &b->posted : &b->want[w];
}
/* Does a consumer with these wants want a cell of this need? */
static inline bool shm_bell_wants(const struct shm_bell *b, int need)
{
    if (need == SHM_RING_LAZY)
        need = SHM_WANT_DATA;
    if (need == SHM_WAKE_ALWAYS)
        return true;
    if (need == SHM_WAKE_NEVER)
        return false;
    if (need == SHM_WANT_POSTED)
        return atomic_load_explicit(&b->want[SHM_WANT_DATA], memory_order_seq_cst) > 0 ||
               atomic_load_explicit(&b->posted, memory_order_seq_cst) > 0;
    return atomic_load_explicit(&b->want[need], memory_order_seq_cst) > 0;
}

/* Producer and consumer ends: process-private. */
struct shm_prod {
    struct shm_ring *ring;
    uint64_t head, tail_seen;
    uint32_t ncells;                /* the ring's, read once */
};
struct shm_cons {
    struct shm_ring *ring;
    uint64_t tail;
    uint32_t ncells;
    _Atomic uint64_t posted_taken;  /* cells of need SHM_WANT_POSTED taken (the poller's) */
};

void shm_ring_init(struct shm_ring *r, uint32_t ncells);
void shm_prod_open(struct shm_prod *p, struct shm_ring *r);
void shm_cons_open(struct shm_cons *c, struct shm_ring *r);


/* The ring operations every message takes, inline (the message path). */

static inline struct shm_cell *cell_at(const struct shm_ring *r, uint32_t ncells, uint64_t pos)
{
    return (struct shm_cell *)r->cells[pos & (ncells - 1)];
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

/* Fetch a line for reading, without waiting.  An asm statement: GCC
 * dropped __builtin_prefetch from the consumer's loop (shm_poll). */
static inline void prefetch_read(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 0, 3);
#endif
}

/* The next free cell, or NULL when the ring is full. */
static inline struct shm_cell *shm_ring_reserve(struct shm_prod *p)
{
    if (p->head - p->tail_seen >= p->ncells) {
        p->tail_seen = atomic_load_explicit(&p->ring->tail, memory_order_acquire);
        if (p->head - p->tail_seen >= p->ncells)
            return NULL;
    }
    return cell_at(p->ring, p->ncells, p->head);
}

/* Cells ahead whose first line a producer asks for as it commits one. */
enum { SHM_PRODUCER_AHEAD = 4 };

/* Publish the reserved cell. */
static inline void shm_ring_commit(struct shm_prod *p)
{
    struct shm_cell *c = cell_at(p->ring, p->ncells, p->head);
    p->head++;
    atomic_store_explicit(&c->seq, (uint32_t)p->head, memory_order_release);
    /* Ask for the next cells' first lines for writing now: the consumer
     * last read them a ring ago, and fetching one at its send would stall
     * that send's doorbell fence (ring.h) for a transfer between cores.
     * Four, not one: a window of sends then has their transfers under
     * way together (bibw 1-32 B +10% against two ahead, +11% two against
     * one; eight cost bw and message rate at 512 B 8-10%).  Not cells the
     * consumer may still be reading (the ring full as far as we know). */
    for (uint64_t d = 0; d < SHM_PRODUCER_AHEAD && p->head + d - p->tail_seen < p->ncells; d++)
        prefetch_write(cell_at(p->ring, p->ncells, p->head + d));
}

/* The oldest unread cell, or NULL. */
static inline struct shm_cell *shm_ring_peek(struct shm_cons *c)
{
    struct shm_cell *cell = cell_at(c->ring, c->ncells, c->tail);
    if (atomic_load_explicit(&cell->seq, memory_order_acquire) != (uint32_t)(c->tail + 1))
        return NULL;
    return cell;
}

/* How far a consumer looks ahead (shm_ring_look_ahead): the lines of the
 * next cells it asks for at most, and the cells at most. */
enum { SHM_LOOKAHEAD_LINES = 8, SHM_LOOKAHEAD_CELLS = 4 };

/* Ask for the next cells' lines now, without waiting, the cell just taken
 * spanning `lines` lines: in a stream the consumer is behind its producer,
 * and each line is a transfer between the cores (100-200 ns on some
 * hosts) that the consumer otherwise waited for cell after cell; asked for
 * together they come together.  The first line of the next
 * SHM_LOOKAHEAD_CELLS cells after a cell of one or two lines, every line
 * of the next SHM_LOOKAHEAD_LINES / lines cells after a longer one, none
 * after a cell too long for one: measured over the sizes, asking for the
 * second line of two-line cells cost bw at 16-64 B 20-25% (the producer
 * is still writing it), and looking ahead after 512-byte cells cost bw
 * and message rate 13-22% (docs/progress.md, "Shared memory").  A consumer
 * caught up with its producer asks for cells not written yet: lines it
 * polls next anyway, or last read a ring ago. */
static inline void shm_ring_look_ahead(const struct shm_cons *c, uint32_t lines)
{
    if (lines <= 2) {
        for (uint64_t d = 1; d <= SHM_LOOKAHEAD_CELLS; d++)
            prefetch_read(cell_at(c->ring, c->ncells, c->tail + d));
        return;
    }
    for (uint64_t d = 1; d <= SHM_LOOKAHEAD_LINES / lines; d++) {
        const char *cell = (const char *)cell_at(c->ring, c->ncells, c->tail + d);
        for (uint32_t l = 0; l < lines; l++)
            prefetch_read(cell + 64 * l);
    }
}

/* Done with the cell peek returned. */
static inline void shm_ring_release(struct shm_cons *c)
{
    c->tail++;
    atomic_store_explicit(&c->ring->tail, c->tail, memory_order_release);
}

/* Anything unread: a fresh look at shared memory only, so any thread may
 * ask while the consumer works (the doorbell protocol's re-check). */
static inline bool shm_ring_pending(const struct shm_ring *r)
{
    /* seq_cst: the doorbell re-check after arming must not be reordered
     * before the arm (a plain load on x86 either way) */
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_seq_cst);
    const struct shm_cell *cell = cell_at(r, r->ncells, tail);
    return atomic_load_explicit(&cell->seq, memory_order_seq_cst) == (uint32_t)(tail + 1);
}

/* At least two cells unread (the one at the consumer's published tail and
 * the next): the producer has more in flight.  Any thread may ask; the
 * answer may be stale. */
static inline bool shm_ring_more(const struct shm_ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed) + 1;
    const struct shm_cell *cell = cell_at(r, r->ncells, tail);
    return atomic_load_explicit(&cell->seq, memory_order_relaxed) == (uint32_t)(tail + 1);
}

/* The producer's view of how full its ring is: half full or more, a cell
 * other than a lazy one rings regardless of wants, so an idle consumer
 * drains the ring before it fills (a producer that finds it full queues,
 * and rings then whatever the cell). */
static inline bool shm_ring_crowded(struct shm_prod *p)
{
    if (p->head - p->tail_seen < p->ncells / 2)
        return false;
    p->tail_seen = atomic_load_explicit(&p->ring->tail, memory_order_acquire);
    return p->head - p->tail_seen >= p->ncells / 2;
}

/* Doorbell: after committing, wake the consumer if it sleeps and wants what
 * was written (need: a SHM_WANT_* index, SHM_WAKE_ALWAYS, or SHM_RING_LAZY:
 * data only a consumer thread asleep in MPI wants, see below). */
bool shm_bell_ring_fenced(struct shm_bell *b, int eventfd, int need);
/* Would b be rung for need now (the fenced look of shm_bell_ring_fenced,
 * without the write)? */
bool shm_bell_would_ring(struct shm_bell *b, int need);
/* Doorbells this process wrote (eventfd writes), for CADENCE_TRANSPORT_REPORT. */
extern atomic_ulong shm_bell_rings;
/* A lazy need as the fenced path takes it: SHM_WAKE_NEVER unless plain
 * looks (no fence: "Lazy cells" above) find a consumer thread asleep in
 * MPI and an armed sleeper, then SHM_WANT_DATA; other needs unchanged. */
static inline int shm_bell_unlazy(const struct shm_bell *b, int need)
{
    if (need != SHM_RING_LAZY)
        return need;
    return atomic_load_explicit(&b->sleepers, memory_order_relaxed) == 0 ||
                   atomic_load_explicit(&b->want[SHM_WANT_DATA], memory_order_relaxed) == 0
               ? SHM_WAKE_NEVER
               : SHM_WANT_DATA;
}
static inline void shm_bell_ring(struct shm_bell *b, int eventfd, int need)
{
    need = shm_bell_unlazy(b, need);
    if (need != SHM_WAKE_NEVER)
        shm_bell_ring_fenced(b, eventfd, need);
}
/* Consumer: arm before re-checking the rings and sleeping; disarm after
 * (drains the eventfd). */
void shm_bell_arm(struct shm_bell *b);
void shm_bell_disarm(struct shm_bell *b, int eventfd);
/* Consumer: a poller starts (+1) or stops (-1); true when the last one
 * left while a sleeper is armed (the caller then re-checks the rings with
 * shm_ring_would_ring). */
bool shm_bell_quiet(struct shm_bell *b, int delta);
/* Consumer, any thread: would a producer have rung b for the cells now
 * unread in r (need_of: a cell's need, as the producer gives it), had
 * nobody polled?  With full, a half-full ring counts too (its producer
 * rang for a crowded ring, or queued and rang).  Cells taken meanwhile by
 * another thread count as not there. */
bool shm_ring_would_ring(const struct shm_ring *r, const struct shm_bell *b,
                         int (*need_of)(const struct shm_cell *c), bool full);

#endif
