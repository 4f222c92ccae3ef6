/*
 * The shared-memory transport's ops: how messages between processes of one
 * node move (see shm.h for segments, ring.h for rings and doorbells).
 *
 * Protocols, per message size:
 *   eager (<= CADENCE_SHM_EAGER_LIMIT, at most one cell): header and data
 *     in one cell; the receiver matches straight out of the ring, so an
 *     expected message is copied once, ring to user buffer.  The send is
 *     complete once the cell is written (a synchronous one when ACK comes).
 *   rendezvous: RTS (header + the sender's address); on a match the
 *     receiver either pulls with one process_vm_readv (CMA, single copy)
 *     and sends FIN, or answers CTS and the sender streams DATA cells
 *     through the ring, the receiver unpacking each as it arrives (a
 *     pipelined two-copy transfer) -- whichever copies faster between the
 *     two processes now (rndv_by_cma), the rings always when CMA is not
 *     permitted (ptrace rules, containers) or CADENCE_SHM_CMA=0.
 *   split copy (contiguous receive of >= CADENCE_SHM_SPLIT_MIN bytes waited
 *     for by an application thread, CMA proven on this peer, the sender has
 *     a progress thread): the receiver offers the upper half in a claim
 *     slot of the sender's ring in its segment and sends PUSH naming it
 *     (a PUSH of less than SHM_PUSH_RING_MIN rings nobody), then reads the
 *     lower half.  A sender that polls
 *     meanwhile claims the offer (compare-and-swap), writes the upper half
 *     into the receive buffer with process_vm_writev and answers PUSHED --
 *     one copy, done by both cores.  A receiver done with its half first
 *     claims the offer itself and reads the rest, so it never waits for a
 *     sender that is computing; the sender then finds the offer taken and
 *     leaves it.
 *     The receiver's FIN follows PUSH in the same ring, so the sender has
 *     finished writing (or found the offer taken) before it sees FIN and
 *     completes.
 * Active messages (C_AM): one cell, the handler id in a; the engine's
 * cancel travels so, naming a message by its number among the messages
 * to the peer (msgs_out, counted alike by the receiver: msgs_in).
 * Cells are written under the peer's lock (rings are single-producer);
 * when a ring is full, sends and control messages wait in the peer's
 * outbound queue, in order, and are flushed by later polls.
 * Doorbells an application thread would ring while it goes on polling
 * are owed for a moment first ("Owed doorbells" below).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "progress/engine.h"
#include "progress/job.h"
#include "runtime/config.h"
#include "progress/sent.h"
#include "progress/spin.h"
#include "runtime/copy.h"
#include "runtime/error.h"
#include "transport/shm/shm.h"
#include "runtime/checkers.h"

enum { C_EAGER = 1, C_RTS, C_FIN, C_ACK, C_CTS, C_DATA, C_AM, C_PUSH = 9, C_PUSHED,
       C_SMALL /* C_EAGER's short form (ring.h, struct shm_small) */ };

/* A control cell: type, a and b, h.bytes = len, h.cookie = d, and e and f
 * as the first 16 bytes of data. */
struct shm_ctrl {
    uint32_t type;
    uint64_t a, b, len, d, e, f;
};

enum { OUT_SEND, OUT_CTRL, OUT_STREAM, OUT_AM };

#define SHM_AM_INLINE 64

struct shm_out {
    struct shm_out *next;
    int kind;
    struct cdn_xfer *x;           /* OUT_SEND, OUT_STREAM */
    struct shm_ctrl ctrl;         /* OUT_CTRL; OUT_AM: the id in a, the length in len */
    void *am;                     /* OUT_AM: a copy of the payload: am_inline, or
                                   * allocated when longer (a full ring only) */
    unsigned char am_inline[SHM_AM_INLINE];
    uint64_t a, len;              /* OUT_STREAM: the receiver's request, bytes to send */
    uint64_t off;                 /* OUT_STREAM: bytes sent */
};

#define CMA_CHUNK (1 << 20)
/* The smallest pushed part that rings a sleeping sender (ctrl_need). */
#define SHM_PUSH_RING_MIN (256 << 10)
/* Split copies in a stream of messages from this size up (split_point). */
#define SHM_SPLIT_STREAM_MIN (512 << 10)
/* How often the way not chosen is tried (rndv_by_cma, send_rndv). */
#define SHM_PROBE_NS 5000000ull  /* 5 ms */
/* CMA reads timed before the first choice (rndv_by_cma). */
#define SHM_CMA_WARM 4
/* How long an owed doorbell waits for its peer to poll (peer_ring). */
#define SHM_RING_GRACE_NS 5000ull

static struct shm_state *state_of(struct cdn_transport *tp)
{
    return (struct shm_state *)tp->priv;
}

static struct shm_peer *peer_of(struct shm_state *st, int world)
{
    return &st->peers[st->local_of[world]];
}

/* Returns true when this is the first queued item of the transport (the
 * progress thread should be told: it sleeps differently with work queued). */
static bool queue(struct shm_state *st, struct shm_peer *p, struct shm_out *o)
{
    o->next = NULL;
    if (p->outq_tail)
        p->outq_tail->next = o;
    else
        p->outq = o;
    p->outq_tail = o;
    cdn_progress_work_changed(1);
    return atomic_fetch_add(&st->queued, 1) == 0;
}

/* A zeroed queue item for p: a spare one, or a new one the first time the
 * queue is this deep (p->lock held); NULL when out of memory. */
static struct shm_out *out_get(struct shm_state *st, struct shm_peer *p)
{
    struct shm_out *o = p->out_spare;
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&st->queued_total, 1, memory_order_relaxed);
    if (o == NULL) {
        if (cdn_sent_report)
            atomic_fetch_add_explicit(&st->out_allocs, 1, memory_order_relaxed);
        return calloc(1, sizeof *o);
    }
    p->out_spare = o->next;
    memset(o, 0, sizeof *o);
    return o;
}

/* Take the entry *link points at (p->outq or an entry's next) off the
 * queue and keep it as a spare (p->lock held). */
static void unqueue(struct shm_state *st, struct shm_peer *p, struct shm_out **link)
{
    struct shm_out *o = *link;
    *link = o->next;
    if (p->outq_tail == o)
        p->outq_tail = link == &p->outq ? NULL : (struct shm_out *)link;  /* next is the first member */
    o->next = p->out_spare;
    p->out_spare = o;
    atomic_fetch_sub(&st->queued, 1);
    cdn_progress_work_changed(-1);
}

/* An OUT_AM item's payload copy is done with. */
static void am_drop(struct shm_out *o)
{
    if (o->am != o->am_inline)
        free(o->am);
    o->am = NULL;
}

static void dequeue(struct shm_state *st, struct shm_peer *p)
{
    unqueue(st, p, &p->outq);
}

/* A time stamp for timing copies (rndv_by_cma): the processor's counter
 * where there is one (a few cycles to read), else the monotonic clock. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    return cdn_progress_now_ns();
#endif
}

/* A copy of bytes in dt ticks folded into an average rate (bytes per 1024
 * ticks): three parts the old, one the new. */
static unsigned rate_fold(unsigned old, uint64_t bytes, uint64_t dt)
{
    uint64_t r = bytes * 1024 / (dt > 0 ? dt : 1);
    r = r == 0 ? 1 : r > UINT32_MAX / 4 ? UINT32_MAX / 4 : r;
    return old == 0 ? (unsigned)r : (unsigned)((3 * (uint64_t)old + r) / 4);
}

/* The same into a rate other threads may update: a race loses a sample. */
static void rate_add(atomic_uint *rate, uint64_t bytes, uint64_t dt)
{
    atomic_store_explicit(rate, rate_fold(atomic_load_explicit(rate, memory_order_relaxed),
                                          bytes, dt), memory_order_relaxed);
}

/* Has the time in *due come?  take: and if so, claim it for the caller,
 * setting the next one every ns later (one thread of many gets it). */
static bool due_now(_Atomic uint64_t *due, uint64_t every, bool take)
{
    uint64_t now = cdn_progress_now_ns();
    uint64_t was = atomic_load_explicit(due, memory_order_relaxed);
    return now >= was && (!take || atomic_compare_exchange_strong_explicit(
                                       due, &was, now + every, memory_order_relaxed,
                                       memory_order_relaxed));
}

/* Does a message of eager_always < bytes <= eager_limit to p go by
 * rendezvous, given that it is contiguous (send_rndv)?  While p reads our
 * rendezvous messages by CMA or has not chosen yet; while it reads through
 * the rings one now and then all the same, so that its choice, made on
 * rendezvous messages only, stays current (rndv_by_cma's probes).  take:
 * the caller sends it, and the next such one is due SHM_PROBE_NS later
 * (shm_send_now only asks, and leaves the message to shm_send). */
static bool mid_rndv(struct shm_peer *p, bool take)
{
    return atomic_load_explicit(&p->prod.ring->reader_way, memory_order_relaxed) !=
               SHM_WAY_RINGS ||
           due_now(&p->mid_probe_due, SHM_PROBE_NS, take);
}

/* Does a send go by rendezvous?  Above the eager limit, always; from above
 * its half (tp.eager_always), a contiguous message does while the receiver
 * reads our rendezvous messages by CMA, or has not chosen yet: where CMA
 * wins, one copy from the send buffer, whose lines are clean, beats two
 * copies through a cell whose lines each core takes from the other's
 * cache (on the Intel host, 16 KiB ping-pong 2.9 us eager against 1.5 by
 * rendezvous, bibw 17 GB/s against 23; on the host where the rings copy
 * at 30-40 GB/s the receiver chooses the rings, and these stay eager). */
static bool send_rndv(struct shm_state *st, struct shm_peer *p, const struct cdn_xfer *sx)
{
    if (sx->bytes <= st->tp.eager_always)
        return false;
    if (sx->bytes > st->tp.eager_limit)
        return true;
    return sx->src != NULL && mid_rndv(p, true);
}

/* Write the header of an eager message of h into c -- the short form if
 * it fits (a standard message of at most SHM_SMALL_MAX bytes: ring.h,
 * struct shm_small), else the long one: the place of its payload. */
static inline unsigned char *eager_cell(struct shm_cell *c, const struct cdn_wire_hdr *h)
{
    if (h->flags != 0 || h->bytes > SHM_SMALL_MAX) {
        c->h = *h;
        c->type = C_EAGER;
        c->len = (uint16_t)h->bytes;
        return c->data;
    }
    struct shm_small *sc = (struct shm_small *)c;
    sc->type = C_SMALL;
    sc->len = (uint16_t)h->bytes;
    sc->ctx = h->ctx;
    sc->src = h->src;
    sc->tag = h->tag;
    return sc->data;
}

/* A cell in the short form has arrived: the header it stands for. */
static inline void small_arrived(struct shm_state *st, struct shm_peer *p,
                                 const struct shm_cell *c)
{
    const struct shm_small *sc = (const struct shm_small *)c;
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&st->eager_short, 1, memory_order_relaxed);
    struct cdn_wire_hdr h = {.ctx = sc->ctx, .src = sc->src, .tag = sc->tag, .flags = 0,
                             .bytes = sc->len, .cookie = 0};
    cdn_p2p_arrived(&st->tp, p->world, &h, sc->data, NULL, p->msgs_in++);
}

/* Write a send's first cell; false when the ring is full.  *done: an eager
 * send whose buffer is free (report after unlocking). */
static inline bool emit_send(struct shm_peer *p, struct cdn_xfer *sx, bool *done)
{
    struct shm_cell *c = shm_ring_reserve(&p->prod);
    if (c == NULL)
        return false;
    CDN_HB_RELEASE(sx);
    struct cdn_wire_hdr h;
    cdn_p2p_wire_hdr(sx, &h);
    if (!sx->rndv) {
        cdn_p2p_send_pack(sx, 0, eager_cell(c, &h), (size_t)h.bytes);
        *done = true;
    } else {
        c->h = h;
        c->type = C_RTS;
        c->h.flags |= CDN_WIRE_RNDV;
        c->a = (uint64_t)(uintptr_t)sx->src;  /* the memory key: CMA reaches it by address */
        c->len = 0;
        *done = false;
        atomic_fetch_add_explicit(&p->rndv_out, 1, memory_order_relaxed);
    }
    if (sx->rndv || (h.flags & CDN_WIRE_SYNC))  /* cell_need: SHM_WANT_POSTED */
        atomic_store_explicit(&p->prod.ring->posted_cells,
                              atomic_load_explicit(&p->prod.ring->posted_cells,
                                                   memory_order_relaxed) + 1,
                              memory_order_relaxed);  /* before the commit and the bell's fence */
    shm_ring_commit(&p->prod);
    return true;
}

static bool emit_ctrl(struct shm_peer *p, const struct shm_ctrl *m)
{
    struct shm_cell *c = shm_ring_reserve(&p->prod);
    if (c == NULL)
        return false;
    c->type = (uint16_t)m->type;
    c->a = m->a;
    c->b = m->b;
    c->len = 0;
    c->h.bytes = m->len;
    c->h.cookie = m->d;
    memcpy(c->data, &m->e, sizeof m->e);
    memcpy(c->data + sizeof m->e, &m->f, sizeof m->f);
    shm_ring_commit(&p->prod);
    return true;
}

static bool emit_am(struct shm_peer *p, unsigned id, const void *data, size_t len)
{
    struct shm_cell *c = shm_ring_reserve(&p->prod);
    if (c == NULL)
        return false;
    c->type = C_AM;
    c->a = id;
    c->len = (uint16_t)len;
    if (len > 0)
        memcpy(c->data, data, len);
    shm_ring_commit(&p->prod);
    return true;
}

/* Stream DATA cells of a two-copy rendezvous; true when all are written.
 * *cells counts the cells written. */
static bool emit_stream(struct shm_peer *p, struct shm_out *o, int *cells)
{
    while (o->off < o->len) {
        struct shm_cell *c = shm_ring_reserve(&p->prod);
        if (c == NULL)
            return false;
        size_t n = o->len - o->off < SHM_CELL_PAYLOAD ? (size_t)(o->len - o->off) : SHM_CELL_PAYLOAD;
        c->type = C_DATA;
        c->a = o->off;
        c->b = o->a;
        uint64_t t0 = ticks();
        c->len = (uint16_t)cdn_p2p_send_pack(o->x, o->off, c->data, n);
        if (n >= 4096) {
            p->fill_rate = rate_fold(p->fill_rate, n, ticks() - t0);
            /* the consumer reads it at its next choice: at once for the
             * first few cells (until it has a rate, the receiver takes the
             * rings, and every CTS rings this side: 16 KiB collectives of
             * 100 timed iterations paid 8 of those wake-ups), then every
             * 8 cells */
            if (++p->fills <= 8 || p->fills % 8 == 0)
                atomic_store_explicit(&p->prod.ring->fill_rate, p->fill_rate,
                                      memory_order_relaxed);
        }
        shm_ring_commit(&p->prod);
        o->off += n;
        (*cells)++;
    }
    return true;
}

/* Write what waits for the peer, in order.  Called with p->lock held;
 * completed sends are chained through done_list for the caller.  Returns
 * the number of cells written (the caller rings the doorbell if any). */
static int flush(struct shm_state *st, struct shm_peer *p, struct cdn_xfer **done_list,
                 struct cdn_xfer **streamed)
{
    int n = 0;
    while (p->outq != NULL) {
        struct shm_out *o = p->outq;
        bool ok, done = false;
        if (o->kind == OUT_SEND) {
            ok = emit_send(p, o->x, &done);
            if (ok && done) {
                o->x->next = *done_list;
                *done_list = o->x;
            }
        } else if (o->kind == OUT_CTRL) {
            ok = emit_ctrl(p, &o->ctrl);
        } else if (o->kind == OUT_AM) {
            ok = emit_am(p, (unsigned)o->ctrl.a, o->am, (size_t)o->ctrl.len);
            if (ok)
                am_drop(o);
        } else {
            ok = emit_stream(p, o, &n);
            if (ok) {
                /* its RTS is answered: the receiver took it through the ring */
                atomic_fetch_sub_explicit(&p->rndv_out, 1, memory_order_relaxed);
                o->x->next = *streamed;
                *streamed = o->x;
            }
        }
        if (!ok)
            break;
        if (o->kind != OUT_STREAM)
            n++;
        dequeue(st, p);
    }
    return n;
}

static void report(struct cdn_xfer *done_list, struct cdn_xfer *streamed)
{
    while (done_list != NULL) {
        struct cdn_xfer *x = done_list;
        done_list = x->next;
        x->next = NULL;
        cdn_p2p_send_done(x, false, MPI_SUCCESS);
    }
    while (streamed != NULL) {
        struct cdn_xfer *x = streamed;
        streamed = x->next;
        x->next = NULL;
        cdn_p2p_send_done(x, true, MPI_SUCCESS);
    }
}

/* The need to ring p's doorbell with after writing a cell that needs
 * need: anything but a lazy cell once the ring is half full (ring.h,
 * "Wants").  Called with p->lock held (the producer end is under it). */
static int ring_need(struct shm_peer *p, int need)
{
    return need != SHM_RING_LAZY && shm_ring_crowded(&p->prod) ? SHM_WAKE_ALWAYS : need;
}

/* What a send's first cell is to a sleeping receiver (ring.h, "Wants"): a
 * standard eager message waits for the next poll unless the receiver
 * wants data at once (a thread blocks in MPI, or an urgent receive is
 * posted: ordinary receives complete when their owner next polls); on a
 * user's context only the former, so it rings lazily (ring.h).  The
 * sender of an RTS or a synchronous eager message waits for the
 * receiver's answer, so those ring a receiver with any receive posted. */
static int send_need(const struct cdn_xfer *sx)
{
    if (sx->sync || sx->rndv)
        return SHM_WANT_POSTED;
    return sx->lazy ? SHM_RING_LAZY : SHM_WANT_DATA;
}

/* ---- Owed doorbells ----
 *
 * A doorbell is a write to the peer's eventfd.  Waking a thread on the
 * other processing unit costs the writer 14-17 us on this KVM guest
 * (tools/bench/wakecost.c), and the woken thread takes the peer's
 * processing unit from its application for as long again -- often for
 * nothing: a peer whose application ends a held start (its count of
 * pollers given up because its progress thread sleeps with no timeout)
 * and enters MPI_Wait a few hundred nanoseconds later is "not polling" for
 * that moment, and a message written then rang it.  In a loop of 64 KiB
 * MPI_Allreduce_init starts and waits that was 2-9 iterations in 110 at
 * 25-90 us instead of 7, and the thread-off build was 11-20% faster on
 * average (docs/progress.md, "Owed doorbells").
 *
 * So an application thread that goes on polling after the write
 * (cdn_progress_polls_on: inside a blocking wait, or starting an operation
 * it waits for next) owes the doorbell instead: its own polls ring it
 * SHM_RING_GRACE_NS later if the peer still would be rung then (a sleeper
 * armed, nobody polling there, a want for the cell); it is rung at once,
 * if still wanted, when the thread stops polling (its wait returns, or a
 * start it does not wait for next ends: shm_settle -- a held start's
 * doorbells are left to its wait), when this process's last poller leaves
 * (shm_polled) or a thread here goes to sleep (shm_arm), and by the
 * progress thread's polls once due.  A peer that polls meanwhile takes the
 * cell itself and is never woken.
 */

/* Ring p's doorbell now if it would be rung for any of needs (bit need +
 * 3); true if it was. */
static bool ring_needs(struct shm_peer *p, unsigned needs)
{
    for (int need = SHM_WAKE_ALWAYS; need < SHM_NWANTS; need++)
        if ((needs & (1u << (need + 3))) && shm_bell_ring_fenced(&p->seg->bell, p->efd, need))
            return true;
    return false;
}

/* Ring what is owed: every owed doorbell (all), or those due by now. */
static void pay_owed(struct shm_state *st, bool all)
{
    if (atomic_load_explicit(&st->owed, memory_order_relaxed) == 0)
        return;
    uint64_t now = all ? 0 : cdn_progress_now_ns();
    for (int i = 0; i < st->nlocal; i++) {
        struct shm_peer *p = &st->peers[i];
        uint64_t due = atomic_load_explicit(&p->owed_due, memory_order_acquire);
        if (i == st->me || due == 0 || (!all && now < due) ||
            !atomic_compare_exchange_strong(&p->owed_due, &due, 0))
            continue;
        atomic_fetch_sub_explicit(&st->owed, 1, memory_order_relaxed);
        /* after the due time is taken: a need added meanwhile owes anew */
        unsigned needs = atomic_exchange_explicit(&p->owed_needs, 0, memory_order_acq_rel);
        if (ring_needs(p, needs) && cdn_sent_report)
            atomic_fetch_add_explicit(&st->owed_paid, 1, memory_order_relaxed);
    }
}

/* Ring p's doorbell for need (shm_bell_ring), or owe it. */
static void peer_ring(struct shm_state *st, struct shm_peer *p, int need)
{
    struct shm_bell *b = &p->seg->bell;
    need = shm_bell_unlazy(b, need);
    if (need == SHM_WAKE_NEVER)
        return;
    if (!cdn_progress_polls_on()) {
        shm_bell_ring_fenced(b, p->efd, need);
        return;
    }
    if (!shm_bell_would_ring(b, need))
        return;
    /* the need first: a payer takes the due time, then the needs */
    atomic_fetch_or_explicit(&p->owed_needs, 1u << (need + 3), memory_order_acq_rel);
    uint64_t none = 0;
    if (atomic_compare_exchange_strong(&p->owed_due, &none,
                                       cdn_progress_now_ns() + SHM_RING_GRACE_NS)) {
        atomic_fetch_add_explicit(&st->owed, 1, memory_order_relaxed);
        if (cdn_sent_report)
            atomic_fetch_add_explicit(&st->owed_total, 1, memory_order_relaxed);
    }
}

/* A blocking standard eager send with no request (transport.h, send_now):
 * the cell and the doorbell of shm_send's eager case (send_need: lazily
 * rung on a user's context).  Allocating, completing and freeing a request
 * was two thirds of a small MPI_Send's instructions. */
static bool shm_send_now(struct cdn_transport *tp, int peer, const struct cdn_wire_hdr *h,
                         const void *data, size_t len, bool lazy)
{
    struct shm_state *st = state_of(tp);
    struct shm_peer *p = peer_of(st, peer);
    if (len > st->tp.eager_always && mid_rndv(p, false))
        return false;  /* by rendezvous: shm_send */
    cdn_spin_lock(&p->lock);
    struct shm_cell *c = p->outq == NULL ? shm_ring_reserve(&p->prod) : NULL;
    if (c == NULL) {
        cdn_spin_unlock(&p->lock);
        return false;
    }
    unsigned char *to = eager_cell(c, h);
    if (len > 0)
        cdn_copy(to, data, len);
    shm_ring_commit(&p->prod);
    p->msgs_out++;
    int need = ring_need(p, lazy ? SHM_RING_LAZY : SHM_WANT_DATA);
    cdn_spin_unlock(&p->lock);
    peer_ring(st, p, need);
    return true;
}

static int shm_send(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct shm_state *st = state_of(tp);
    struct shm_peer *p = peer_of(st, sx->peer);
    sx->rndv = send_rndv(st, p, sx);
    if (cdn_sent_report && sx->rndv && sx->bytes <= tp->eager_limit)
        atomic_fetch_add_explicit(&st->rndv_mid, 1, memory_order_relaxed);
    if (sx->rndv && cdn_p2p_send_contig(sx) == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory packing %llu bytes for rank %d",
                       (unsigned long long)sx->bytes, p->world);
    bool done = false, sent = false;
    cdn_spin_lock(&p->lock);
    sx->wire_id = p->msgs_out++;  /* its number among our messages to p, queued or not */
    if (p->outq == NULL)
        sent = emit_send(p, sx, &done);
    if (!sent) {
        struct shm_out *o = out_get(st, p);
        if (o == NULL) {
            p->msgs_out--;
            cdn_spin_unlock(&p->lock);
            return cdn_err(MPI_ERR_NO_MEM, "send: out of memory queueing for rank %d", p->world);
        }
        o->kind = OUT_SEND;
        o->x = sx;
        if (queue(st, p, o))
            cdn_progress_kick();
    }
    int need = sent ? ring_need(p, send_need(sx)) : SHM_WAKE_ALWAYS;
    cdn_spin_unlock(&p->lock);
    /* A full ring rings whatever the message: the receiver drains it. */
    peer_ring(st, p, need);
    if (done)
        cdn_p2p_send_done(sx, false, MPI_SUCCESS);
    return MPI_SUCCESS;
}

/* What a control message is to a sleeping peer: a completion it may look
 * at later (see ring.h, wants) or a request to act now.  PUSHED is the
 * latter: it completes a receive nobody may be waiting for, but the
 * receiver answers it with the FIN the sender waits for; left for the next
 * poll, the sender's wait lasted as long as the receiver's computation. */
static int ctrl_need(uint32_t type, uint64_t len)
{
    /* A push is an offer the receiver takes back if nobody comes: worth
     * waking the sender's progress thread for only when the part is large
     * enough to pay for the wake-up (SHM_PUSH_RING_MIN). */
    if (type == C_PUSH)
        return len >= SHM_PUSH_RING_MIN ? SHM_WAKE_ALWAYS : SHM_WAKE_NEVER;
    return type == C_FIN || type == C_ACK ? SHM_WANT_DONE : SHM_WAKE_ALWAYS;
}

static void send_ctrl_msg(struct shm_state *st, struct shm_peer *p, const struct shm_ctrl *m)
{
    cdn_spin_lock(&p->lock);
    bool sent = p->outq == NULL && emit_ctrl(p, m);
    int need = sent ? ring_need(p, ctrl_need(m->type, m->len)) : SHM_WAKE_ALWAYS;
    if (!sent) {
        struct shm_out *o = out_get(st, p);
        if (o == NULL)
            cdn_rt_abort(1, "cadence: shm transport: out of memory queueing a control message");
        o->kind = OUT_CTRL;
        o->ctrl = *m;
        queue(st, p, o);
    }
    cdn_spin_unlock(&p->lock);
    peer_ring(st, p, need);
}

static void send_ctrl(struct shm_state *st, struct shm_peer *p, uint32_t type, uint64_t a,
                      uint64_t b, uint64_t len)
{
    struct shm_ctrl m = {.type = type, .a = a, .b = b, .len = len};
    send_ctrl_msg(st, p, &m);
}

static int shm_ack(struct cdn_transport *tp, int peer, uint64_t cookie)
{
    struct shm_state *st = state_of(tp);
    send_ctrl(st, peer_of(st, peer), C_ACK, cookie, 0, 0);
    return MPI_SUCCESS;
}

/* An active message: one cell (shm_am_send), or a queued copy while
 * messages wait for ring space before it: in the queue item up to
 * SHM_AM_INLINE bytes (a cancel's 24), allocated above that. */
static int shm_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data,
                       size_t len)
{
    struct shm_state *st = state_of(tp);
    struct shm_peer *p = peer_of(st, peer);
    cdn_spin_lock(&p->lock);
    bool sent = p->outq == NULL && emit_am(p, id, data, len);
    if (!sent) {
        struct shm_out *o = out_get(st, p);
        void *copy = o == NULL                ? NULL
                     : len <= SHM_AM_INLINE ? o->am_inline
                                            : malloc(len);
        if (copy == NULL) {
            if (o != NULL) {
                o->next = p->out_spare;
                p->out_spare = o;
            }
            cdn_spin_unlock(&p->lock);
            return cdn_err(MPI_ERR_NO_MEM, "active message: out of memory queueing for rank %d",
                           p->world);
        }
        memcpy(copy, data, len);
        o->kind = OUT_AM;
        o->ctrl.a = id;
        o->ctrl.len = len;
        o->am = copy;
        if (queue(st, p, o))
            cdn_progress_kick();
    }
    int need = sent ? ring_need(p, SHM_WAKE_ALWAYS) : SHM_WAKE_ALWAYS;
    cdn_spin_unlock(&p->lock);
    peer_ring(st, p, need);
    return MPI_SUCCESS;
}

/* The receiver dropped a rendezvous message of ours (a cancel): its RTS is
 * answered. */
static void shm_dropped(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    if (sx->rndv)
        atomic_fetch_sub_explicit(&peer_of(state_of(tp), sx->peer)->rndv_out, 1,
                                  memory_order_relaxed);
}

/* Move len bytes between local memory and address remote of process pid
 * (write: to it, else from it) with CMA.  Returns 0 or an errno (EPERM,
 * ENOSYS: CMA not permitted here). */
static int cma_copy(pid_t pid, bool write, char *local, uint64_t remote, uint64_t len)
{
    while (len > 0) {
        struct iovec l = {.iov_base = local, .iov_len = (size_t)len};
        struct iovec r = {.iov_base = (void *)(uintptr_t)remote, .iov_len = (size_t)len};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0)
            return n < 0 ? errno : EIO;
        local += n;
        remote += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 0;
}

/* Single copy of bytes [from, to) of a rendezvous message: read the
 * sender's buffer with process_vm_readv (straight into a contiguous receive
 * buffer, else through a bounce buffer unpacked chunk by chunk). */
static int cma_pull(struct shm_peer *p, struct cdn_xfer *rx, uint64_t from, uint64_t to)
{
    if (rx->dst != NULL)
        return cma_copy(p->pid, false, (char *)rx->dst + from, rx->rkey.addr + from, to - from);
    char *bounce = NULL;
    if (to > from && (bounce = malloc(to - from < CMA_CHUNK ? (size_t)(to - from) : CMA_CHUNK)) == NULL)
        return ENOMEM;
    int e = 0;
    for (uint64_t off = from; off < to && e == 0; off += CMA_CHUNK) {
        uint64_t want = to - off < CMA_CHUNK ? to - off : CMA_CHUNK;
        e = cma_copy(p->pid, false, bounce, rx->rkey.addr + off, want);
        if (e == 0)
            cdn_p2p_recv_data(rx, off, bounce, (size_t)want);
    }
    free(bounce);
    return e;
}

/* One-sided get and put (CDN_TP_CAP_GET, _PUT): a CMA copy between our
 * memory and the peer's, done here and now; the peer's application does
 * nothing (its kernel does the copy). */
static int cma_xfer(struct cdn_transport *tp, struct cdn_xfer *x, bool put)
{
    struct shm_peer *p = peer_of(state_of(tp), x->peer);
    int e = cma_copy(p->pid, put, put ? (char *)(uintptr_t)x->src : (char *)x->dst, x->rkey.addr,
                     x->bytes);
    cdn_xfer_done(x, e == 0 ? MPI_SUCCESS
                            : cdn_err(MPI_ERR_OTHER, "%s of %llu bytes at rank %d failed: %s",
                                      put ? "put" : "get", (unsigned long long)x->bytes, p->world,
                                      strerror(e)));
    return MPI_SUCCESS;
}

static int shm_get(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return cma_xfer(tp, x, false);
}

static int shm_put(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return cma_xfer(tp, x, true);
}

/* A free claim slot of p's ring in our segment, or -1. */
static int claim_get(struct shm_peer *p)
{
    uint64_t used = atomic_load_explicit(&p->claims_used, memory_order_relaxed);
    for (;;) {
        if (used == UINT64_MAX)
            return -1;
        int k = __builtin_ctzll(~used);
        if (atomic_compare_exchange_weak_explicit(&p->claims_used, &used, used | 1ull << k,
                                                  memory_order_acquire, memory_order_relaxed))
            return k;
    }
}

static void claim_put(struct shm_peer *p, int k)
{
    atomic_fetch_and_explicit(&p->claims_used, ~(1ull << k), memory_order_release);
}

static uint32_t claim_word(uint32_t gen, uint32_t state)
{
    return gen << 2 | state;
}

/* Where a contiguous receive of len bytes splits its copy with the sender
 * (len: no split).  Only in a thread that is there to make progress: an
 * application thread waiting in MPI, or the progress thread (which takes
 * the processor from a computing application thread anyway).  An
 * application thread merely testing goes back to its work instead.  Not
 * while the sender has rendezvous messages of ours to read (traffic both
 * ways, as in bibw): its core is busy copying already, and a push would
 * only add two control cells and a system call to each message.  Nor,
 * below SHM_SPLIT_STREAM_MIN, while the sender has more cells in the ring
 * behind this message's RTS (a stream of messages, as in bw): there the
 * two control cells, the claim and the sender's system call cost more
 * than half the copy saves (bw 64 KiB 20 GB/s split against 23 not,
 * 128 KiB 19-22 against 27, 256 KiB 23-29 against 29; 512 KiB 32-34
 * against 31-32, and with every message of a window split, 1 MiB 27-40
 * against 21, 4 MiB 26 against 14).  One message at a time (latency)
 * gains at every size: 128 KiB 5.4 -> 4.1 us. */
static uint64_t split_point(struct shm_state *st, struct shm_peer *p, const struct cdn_xfer *rx)
{
    if (st->split_min == 0 || rx->dst == NULL || rx->bytes < st->split_min ||
        !atomic_load_explicit(&p->cma_proven, memory_order_relaxed) ||
        !p->seg->serves_push || !cdn_progress_driven() ||
        atomic_load_explicit(&p->rndv_out, memory_order_relaxed) > 0 ||
        (rx->bytes < SHM_SPLIT_STREAM_MIN && shm_ring_more(p->cons.ring) && !rx->alone))
        return rx->bytes;
    return rx->bytes / 2 & ~(uint64_t)4095;
}

/* One part of a rendezvous receive is in (or failed: err): after the last
 * part, tell the sender (FIN: its buffer is free) and complete the receive
 * with the first part's error. */
static void part_done(struct shm_state *st, struct shm_peer *p, struct cdn_xfer *rx, int err)
{
    int none = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        atomic_compare_exchange_strong(&rx->err, &none, err);
    if (atomic_fetch_sub_explicit(&rx->parts, 1, memory_order_acq_rel) == 1) {
        send_ctrl(st, p, C_FIN, rx->cookie, 0, 0);
        cdn_p2p_recv_done(rx, atomic_load_explicit(&rx->err, memory_order_acquire));
    }
}

/* Choosing CMA or the rings for a rendezvous message (CADENCE_SHM_CMA=2).
 * Which is faster depends on the host and on where the hypervisor places
 * the two vCPUs.  On one host process_vm_readv tops out at about 13 GB/s
 * (page pinning in the kernel: tools/bench/cmacost.c) while the two-copy
 * pipeline through a ring moves 30-40 GB/s -- until the vCPUs are placed
 * apart (the cache-line round trip going from 50 to 250 ns), when copying
 * lines the other core holds falls to 3-6 GB/s and the rings lose to CMA
 * by 3-5x (so does Open MPI's two-copy path); on another, CMA runs at
 * 20-30 GB/s and the rings at 18-24.  So both sides time their copies as
 * messages move -- the receiver its CMA reads and each data cell's copy
 * out of the ring, the sender each cell's copy into it (published in the
 * ring's fill_rate) -- in time-stamp ticks, averaged per peer, and compare
 * what each way costs:
 *
 *  - one way, the two ring copies run on the two cores at once, so the
 *    rings move data at the slower copy's rate;
 *  - both ways (we have rendezvous sends of our own to the peer
 *    outstanding), each core makes both copies, ours out of its ring and
 *    ours into the peer's, so the rings move data at 1 / (1/out + 1/in),
 *    while CMA leaves each core one copy.
 *
 * A message read by CMA counts as read in the time of the part read here:
 * with a split copy (below) whose upper half the sender writes, both
 * halves are copied at once, so the message is in about when the lower
 * half is (timing it to the sender's PUSHED instead counted the time the
 * PUSHED cell waited in the ring behind other messages' RTSs, each a whole
 * CMA read: bibw 1 MiB saw rates 25 times too low).
 *
 * The receiver takes the rings once they run 1.25 times as fast as CMA
 * and CMA again once they no longer run faster (a margin, so that rates
 * near the line do not flip the choice at every message: a latency loop
 * flipping between the two ran at twice the time of either; 1.25 rather
 * than 1.5, because on the host where the rings copy at 30-40 GB/s they
 * move 34 GB/s both ways against CMA's 25, 1.36 times).  Now and then it
 * takes the other way, so a placement that changes is noticed:
 *
 *  - CMA while the rings are chosen, every SHM_PROBE_NS for
 *    SHM_PROBE_CMA_MSGS messages, the first not timed: the first CMA read
 *    after messages through the rings ran at half the rate of the reads
 *    after it (bibw 1 MiB, 2,700-4,200 bytes per 1024 ticks against
 *    7,000-9,000), and timing it alone kept the rings chosen at half of
 *    CMA's bidirectional bandwidth;
 *  - the rings while CMA is chosen, one message, every SHM_PROBE_NS one
 *    way and every SHM_PROBE_BOTH_NS both ways: there the peer answers the
 *    CTS only after reading every message of ours before it, so the one
 *    message is not in before the whole window is, and its streaming runs
 *    alone after that (bibw 4 MiB with three messages every 50 ms: 13 GB/s
 *    against 24 without probes).
 *
 * (A probe per window of 64 messages cost bw at 64 KiB a third.) */
#define SHM_PROBE_BOTH_NS 500000000ull  /* 500 ms */
#define SHM_PROBE_CMA_MSGS 3

/* A CMA read of bytes in dt ticks: the first SHM_CMA_WARM count at the
 * best of them (the first reads of a buffer fault its pages in: 1,900
 * bytes per 1024 ticks against 7,400 later), then in the average. */
static void cma_timed(struct shm_peer *p, uint64_t bytes, uint64_t dt)
{
    unsigned n = atomic_load_explicit(&p->cma_samples, memory_order_relaxed);
    if (n >= SHM_CMA_WARM) {
        rate_add(&p->cma_rate, bytes, dt);
        return;
    }
    atomic_store_explicit(&p->cma_samples, n + 1, memory_order_relaxed);
    unsigned r = rate_fold(0, bytes, dt);
    if (r > atomic_load_explicit(&p->cma_rate, memory_order_relaxed))
        atomic_store_explicit(&p->cma_rate, r, memory_order_relaxed);
}

/* The way rndv_by_cma takes now: true for CMA. */
static bool choose_cma(struct shm_peer *p)
{
    uint64_t cma = atomic_load_explicit(&p->cma_rate, memory_order_relaxed);
    uint64_t out = atomic_load_explicit(&p->ring_rate, memory_order_relaxed);
    uint64_t in = atomic_load_explicit(&p->cons.ring->fill_rate, memory_order_relaxed);
    if (atomic_load_explicit(&p->cma_samples, memory_order_relaxed) < SHM_CMA_WARM)
        return true;      /* CMA first, a few times: its first reads fault the buffers in */
    if (out == 0 || in == 0)
        return false;     /* then the rings */
    bool both = atomic_load_explicit(&p->rndv_out, memory_order_relaxed) > 0;
    uint64_t ring = both ? out * in / (out + in)     /* each core makes both copies */
                         : out < in ? out : in;      /* the pipeline runs at its slower copy */
    bool by_ring = atomic_load_explicit(&p->by_ring, memory_order_relaxed);
    if (by_ring != (by_ring ? ring >= cma : 4 * ring >= 5 * cma))
        atomic_store_explicit(&p->by_ring, by_ring = !by_ring, memory_order_relaxed);
    /* the other way now and then, to keep its rate current */
    unsigned left = atomic_load_explicit(&p->probe_left, memory_order_relaxed);
    if (left > 0) {
        atomic_store_explicit(&p->probe_left, left - 1, memory_order_relaxed);
        return by_ring;
    }
    uint64_t every = by_ring || !both ? SHM_PROBE_NS : SHM_PROBE_BOTH_NS;
    if (due_now(&p->probe_due, every, true)) {
        if (by_ring)
            atomic_store_explicit(&p->probe_left, SHM_PROBE_CMA_MSGS - 1, memory_order_relaxed);
        return by_ring;
    }
    return !by_ring;
}

/* Tell the peer how its rendezvous messages are read now (send_rndv). */
static void publish_way(struct shm_peer *p, enum shm_way way)
{
    if (atomic_load_explicit(&p->cons.ring->reader_way, memory_order_relaxed) != way)
        atomic_store_explicit(&p->cons.ring->reader_way, way, memory_order_relaxed);
}

static bool rndv_by_cma(struct shm_state *st, struct shm_peer *p, const struct cdn_xfer *rx,
                        bool *timed)
{
    *timed = true;
    if (st->cma == 0 || !p->cma_ok) {
        publish_way(p, SHM_WAY_RINGS);
        return false;
    }
    if (rx->alone)  /* the rings need the sender's copy: CMA needs nobody (a split it
                     * does not claim in time is taken back) */
        return true;
    if (st->cma == 1) {
        publish_way(p, SHM_WAY_CMA);
        return true;
    }
    atomic_fetch_add_explicit(&p->rndv_seen, 1, memory_order_relaxed);
    bool cma_way = choose_cma(p);
    publish_way(p, atomic_load_explicit(&p->by_ring, memory_order_relaxed) ? SHM_WAY_RINGS
                                                                           : SHM_WAY_CMA);
    bool last = atomic_exchange_explicit(&p->last_cma, cma_way, memory_order_relaxed);
    *timed = last == cma_way;
    return cma_way;
}

static int shm_pull(struct cdn_transport *tp, struct cdn_xfer *rx)
{
    struct shm_state *st = state_of(tp);
    struct shm_peer *p = peer_of(st, rx->peer);
    bool timed;
    if (rndv_by_cma(st, p, rx, &timed)) {
        uint64_t split = split_point(st, p, rx);
        int slot = split < rx->bytes ? claim_get(p) : -1;
        if (slot < 0)
            split = rx->bytes;
        bool offered = split < rx->bytes;
        /* two parts when offered: the upper half's, whoever copies it */
        atomic_store_explicit(&rx->parts, offered ? 2 : 1, memory_order_relaxed);
        uint32_t offer = 0;
        uint64_t t0 = ticks();
        if (offered) {
            if (cdn_sent_report)
                atomic_fetch_add_explicit(&st->splits, 1, memory_order_relaxed);
            CDN_HB_RELEASE(rx);
            uint32_t gen = ++p->claim_gen[slot] & 0x3fffffffu;
            offer = claim_word(gen, SHM_CLAIM_OFFERED);
            atomic_store_explicit(&p->cons.ring->claim[slot], offer, memory_order_release);
            struct shm_ctrl m = {.type = C_PUSH, .a = rx->cookie, .b = (uint64_t)(uintptr_t)rx,
                                 .len = rx->bytes - split,
                                 .d = (uint64_t)(uintptr_t)rx->dst + split, .e = split,
                                 .f = (uint64_t)gen << 8 | (uint64_t)slot};
            send_ctrl_msg(st, p, &m);
        }
        int e = cma_pull(p, rx, 0, split);
        /* the whole message in the time of the part read here: the sender
         * writes the upper half meanwhile, or we read it too (below) */
        uint64_t dt = ticks() - t0;
        if (offered) {
            /* the upper half still offered: take it back and read it here */
            if (atomic_compare_exchange_strong_explicit(
                    &p->cons.ring->claim[slot], &offer, offer | SHM_CLAIM_RECEIVER,
                    memory_order_acq_rel, memory_order_acquire)) {
                claim_put(p, slot);
                if (cdn_sent_report)
                    atomic_fetch_add_explicit(&st->split_taken_back, 1, memory_order_relaxed);
                if (e == 0)
                    e = cma_pull(p, rx, split, rx->bytes);
                dt = ticks() - t0;
                part_done(st, p, rx, MPI_SUCCESS);
            }
            /* else the sender writes it, and PUSHED completes the other part */
        }
        if (e == 0) {
            if (timed && rx->bytes > 0)
                cma_timed(p, rx->bytes, dt);
            if (!atomic_load_explicit(&p->cma_proven, memory_order_relaxed))
                atomic_store_explicit(&p->cma_proven, true, memory_order_relaxed);
            if (cdn_sent_report)
                atomic_fetch_add_explicit(&st->rndv_cma, 1, memory_order_relaxed);
            part_done(st, p, rx, MPI_SUCCESS);
            return MPI_SUCCESS;
        }
        if (offered || (e != EPERM && e != ENOSYS && e != EACCES)) {
            part_done(st, p, rx, cdn_err(MPI_ERR_OTHER, "receive: reading %llu bytes from rank "
                                           "%d failed: %s", (unsigned long long)rx->bytes, p->world,
                                           strerror(e)));
            return MPI_SUCCESS;
        }
        p->cma_ok = false;  /* not permitted: two copies through the ring from now on */
    }
    rx->moved = 0;
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&st->rndv_ring, 1, memory_order_relaxed);
    CDN_HB_RELEASE(rx);
    send_ctrl(st, p, C_CTS, rx->cookie, (uint64_t)(uintptr_t)rx, rx->bytes);
    if (rx->bytes == 0)
        cdn_p2p_recv_done(rx, MPI_SUCCESS);
    return MPI_SUCCESS;
}

/* Sender: claim the upper part of a split copy, write it into the receive
 * buffer and say so (b: 0, or why not; d: where the part starts; f: the
 * slot).  Only in the progress thread or an application thread waiting in
 * MPI; an application thread that only tests leaves the offer to the
 * receiver, as does one that comes too late (the receiver took it back). */
static void on_push(struct shm_state *st, struct shm_peer *p, const struct shm_cell *c)
{
    struct cdn_xfer *sx = (struct cdn_xfer *)(uintptr_t)c->a;
    uint64_t off, f;
    memcpy(&off, c->data, sizeof off);
    memcpy(&f, c->data + sizeof off, sizeof f);
    uint32_t slot = (uint32_t)(f & 0xff), offer = claim_word((uint32_t)(f >> 8), SHM_CLAIM_OFFERED);
    if (!cdn_progress_driven() || slot >= SHM_CLAIMS ||
        !atomic_compare_exchange_strong_explicit(&p->prod.ring->claim[slot], &offer,
                                                 offer | SHM_CLAIM_SENDER, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return;
    const char *src = cdn_p2p_send_contig(sx);
    int e = cma_copy(p->pid, true, (char *)(uintptr_t)(src + off), c->h.cookie, c->h.bytes);
    struct shm_ctrl m = {.type = C_PUSHED, .a = c->b, .b = (uint64_t)e, .d = off, .f = slot};
    send_ctrl_msg(st, p, &m);
}

/* Receiver: the sender's part of a split copy is there, or it declined or
 * could not write it and the part is read from here (its buffer stays
 * valid: FIN has not been sent). */
static void on_pushed(struct shm_state *st, struct shm_peer *p, const struct shm_cell *c)
{
    struct cdn_xfer *rx = (struct cdn_xfer *)(uintptr_t)c->a;
    uint64_t slot;
    memcpy(&slot, c->data + sizeof(uint64_t), sizeof slot);
    claim_put(p, (int)slot);
    if (cdn_sent_report && c->b == 0)
        atomic_fetch_add_explicit(&st->split_pushed, 1, memory_order_relaxed);
    int err = MPI_SUCCESS;
    if (c->b == 0)  /* written by another process: valgrind saw no write */
        CDN_MEM_DEFINED((char *)rx->dst + c->h.cookie, rx->bytes - c->h.cookie);
    if (c->b != 0) {
        int e = cma_pull(p, rx, c->h.cookie, rx->bytes);
        if (e != 0)
            err = cdn_err(MPI_ERR_OTHER, "receive: rank %d did not write its part (%s) and "
                          "reading it failed: %s", p->world, strerror((int)c->b), strerror(e));
    }
    part_done(st, p, rx, err);
}

static void on_cts(struct shm_state *st, struct shm_peer *p, const struct shm_cell *c)
{
    cdn_spin_lock(&p->lock);
    struct shm_out *o = out_get(st, p);
    if (o == NULL)
        cdn_rt_abort(1, "cadence: shm transport: out of memory starting a transfer");
    o->kind = OUT_STREAM;
    o->x = (struct cdn_xfer *)(uintptr_t)c->a;
    o->a = c->b;
    o->len = c->h.bytes;
    queue(st, p, o);
    struct cdn_xfer *done = NULL, *streamed = NULL;
    int n = flush(st, p, &done, &streamed);
    cdn_spin_unlock(&p->lock);
    if (n > 0)
        peer_ring(st, p, SHM_WAKE_ALWAYS);
    report(done, streamed);
}

static void on_data(struct shm_peer *p, const struct shm_cell *c)
{
    struct cdn_xfer *rx = (struct cdn_xfer *)(uintptr_t)c->b;
    uint64_t t0 = ticks();  /* the copy out of the ring, for rndv_by_cma */
    cdn_p2p_recv_data(rx, c->a, c->data, c->len);
    if (c->len >= 4096)
        rate_add(&p->ring_rate, c->len, ticks() - t0);
    rx->moved += c->len;
    if (rx->moved >= rx->bytes)
        cdn_p2p_recv_done(rx, MPI_SUCCESS);
}

/* The need a cell was written with (send_need, send_ctrl_msg).  The producer may be rewriting a cell taken meanwhile:
 * shm_ring_would_ring re-checks its sequence number after this look. */
static inline int cell_need(const struct shm_cell *c)
{
    uint16_t type = __atomic_load_n(&c->type, __ATOMIC_RELAXED);
    if (type == C_RTS)
        return SHM_WANT_POSTED;
    if (type == C_SMALL)
        return SHM_WANT_DATA;
    if (type == C_EAGER)
        return __atomic_load_n(&c->h.flags, __ATOMIC_RELAXED) & CDN_WIRE_SYNC ? SHM_WANT_POSTED
                                                                              : SHM_WANT_DATA;
    return ctrl_need(type, __atomic_load_n(&c->h.bytes, __ATOMIC_RELAXED));
}

static __attribute__((noinline)) void handle(struct shm_state *st, struct shm_peer *p,
                                             struct shm_cell *c)
{
    if (cell_need(c) == SHM_WANT_POSTED)
        atomic_store_explicit(&p->cons.posted_taken,
                              atomic_load_explicit(&p->cons.posted_taken, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    if (c->type == C_FIN || c->type == C_ACK || c->type == C_CTS || c->type == C_PUSH ||
        c->type == C_PUSHED)
        CDN_HB_ACQUIRE(c->a);
    else if (c->type == C_DATA)
        CDN_HB_ACQUIRE(c->b);
    switch (c->type) {
    case C_SMALL:
        small_arrived(st, p, c);
        break;
    case C_EAGER:
        cdn_p2p_arrived(&st->tp, p->world, &c->h, c->data, NULL, p->msgs_in++);
        break;
    case C_RTS: {
        struct cdn_mem_key rkey = {.addr = c->a, .key = 0};
        cdn_p2p_arrived(&st->tp, p->world, &c->h, NULL, &rkey, p->msgs_in++);
        break;
    }
    case C_FIN:
        atomic_fetch_sub_explicit(&p->rndv_out, 1, memory_order_relaxed);
        cdn_p2p_send_done((struct cdn_xfer *)(uintptr_t)c->a, true, MPI_SUCCESS);
        break;
    case C_ACK:
        cdn_p2p_acked(c->a, MPI_SUCCESS);
        break;
    case C_AM:
        cdn_am_arrived(&st->tp, p->world, (unsigned)c->a, c->data, c->len);
        break;
    case C_CTS:
        on_cts(st, p, c);
        break;
    case C_DATA:
        on_data(p, c);
        break;
    case C_PUSH:
        on_push(st, p, c);
        break;
    case C_PUSHED:
        on_pushed(st, p, c);
        break;
    default:
        cdn_rt_abort(1, "cadence: shm transport: cell of unknown type %u from rank %d", c->type,
                     p->world);
    }
}

static int shm_poll(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    int n = 0;
    for (int i = 0; i < st->nin; i++) {
        struct shm_peer *p = st->from[i];
        struct shm_cell *c;
        for (uint32_t k = 0; k < p->cons.ncells && (c = shm_ring_peek(&p->cons)) != NULL; k++) {
            /* The common cells, standard eager messages, here; handle()
             * does the same for them (not of need SHM_WANT_POSTED: nothing
             * to count) and everything else. */
            if (c->type == C_SMALL) {
                shm_ring_look_ahead(&p->cons, 1);
                small_arrived(st, p, c);
            } else if (c->type == C_EAGER && !(c->h.flags & CDN_WIRE_SYNC)) {
                shm_ring_look_ahead(&p->cons, shm_cell_lines(c->len));
                if (cdn_sent_report)
                    atomic_fetch_add_explicit(&st->eager_long, 1, memory_order_relaxed);
                cdn_p2p_arrived(&st->tp, p->world, &c->h, c->data, NULL, p->msgs_in++);
            } else {
                handle(st, p, c);
            }
            shm_ring_release(&p->cons);
            n++;
        }
    }
    if (atomic_load_explicit(&st->queued, memory_order_relaxed) > 0) {
        for (int i = 0; i < st->nlocal; i++) {
            struct shm_peer *p = &st->peers[i];
            if (i == st->me)
                continue;
            struct cdn_xfer *done = NULL, *streamed = NULL;
            cdn_spin_lock(&p->lock);
            int m = p->outq != NULL ? flush(st, p, &done, &streamed) : 0;
            cdn_spin_unlock(&p->lock);
            if (m > 0) {
                peer_ring(st, p, SHM_WAKE_ALWAYS);
                n += m;
            }
            report(done, streamed);
        }
    }
    pay_owed(st, false);
    return n;
}

/* Has any peer written a cell we have not read?  A fresh look at shared
 * memory (ring.h), so any thread may ask, armed or not. */
static inline __attribute__((always_inline)) bool any_pending(const struct shm_state *st)
{
    for (int i = 0; i < st->nin; i++)
        if (shm_ring_pending(st->in[i]))
            return true;
    return false;
}

static bool shm_busy(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    return atomic_load_explicit(&st->queued, memory_order_relaxed) > 0 || any_pending(st);
}

static int shm_fd(struct cdn_transport *tp)
{
    return state_of(tp)->efd;
}

static int shm_arm(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    pay_owed(st, true);  /* nobody here polls while we sleep */
    shm_bell_arm(&st->seg->bell);
    if (any_pending(st))
        return 1;
    return atomic_load(&st->queued) > 0 ? 2 : 0;
}

/* Any unread cell that would ring b now (cell_need against b's wants)?
 * full: a full ring counts (its producer may have queued a send and rung,
 * or been kept from ringing by a poller). */
static bool any_would_ring(const struct shm_state *st, const struct shm_bell *b, bool full)
{
    for (int i = 0; i < st->nlocal; i++)
        if (i != st->me && shm_ring_would_ring(st->peers[i].cons.ring, b, cell_need, full))
            return true;
    return false;
}

/* A want that rises from none while a sleeper is armed wakes it if a cell
 * it now wants is already there -- only such a cell: a receive posted
 * while standard eager messages wait in the ring does not wake anybody
 * (its owner takes them when it next polls).  While an application thread
 * polls, the last one to leave re-checks against the wants then
 * (shm_polled): a blocking receive does not look at the rings twice. */
static bool shm_want(struct cdn_transport *tp, int want, int delta)
{
    struct shm_state *st = state_of(tp);
    struct shm_bell *b = &st->seg->bell;
    /* seq_cst read-modify-write: the fence between raising the want and
     * looking at sleepers, pollers and the rings (ring.h) */
    if (atomic_fetch_add_explicit(shm_bell_want(b, want), delta, memory_order_seq_cst) != 0 ||
        delta <= 0 || atomic_load_explicit(&b->sleepers, memory_order_seq_cst) == 0 ||
        atomic_load_explicit(&b->polled, memory_order_seq_cst) > 0)
        return false;
    for (int i = 0; i < st->nlocal; i++) {
        struct shm_cons *c = &st->peers[i].cons;
        /* a posted want: only an RTS or a synchronous cell matters (ring.h) */
        if (i == st->me || (want == SHM_WANT_POSTED &&
                            atomic_load_explicit(&c->ring->posted_cells, memory_order_seq_cst) ==
                                atomic_load_explicit(&c->posted_taken, memory_order_relaxed)))
            continue;
        if (shm_ring_would_ring(c->ring, b, cell_need, false))
            return true;
    }
    return false;
}

/* The last poller leaving wakes the sleeper only for what would have rung
 * it: in a ping-pong the peer's next message is often there already, and
 * nobody wants it until the next call posts its receive. */
static bool shm_polled(struct cdn_transport *tp, int delta)
{
    struct shm_state *st = state_of(tp);
    struct shm_bell *b = &st->seg->bell;
    if (delta < 0 && atomic_load_explicit(&b->polled, memory_order_seq_cst) == 1)
        pay_owed(st, true);  /* the last poller leaves: nobody pays later */
    if (!shm_bell_quiet(b, delta))
        return false;
    return atomic_load_explicit(&st->queued, memory_order_relaxed) > 0 ||
           any_would_ring(st, b, true);
}

static void shm_settle(struct cdn_transport *tp)
{
    pay_owed(state_of(tp), true);
}

static bool shm_lazy_wanted(struct cdn_transport *tp)
{
    struct shm_bell *b = &state_of(tp)->seg->bell;
    return atomic_load_explicit(&b->want[SHM_WANT_DATA], memory_order_relaxed) > 0;
}

static void shm_disarm(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    shm_bell_disarm(&st->seg->bell, st->efd);
}

static bool shm_reaches(struct cdn_transport *tp, int world_rank)
{
    struct shm_state *st = state_of(tp);
    return world_rank >= 0 && world_rank < st->world_size && st->local_of[world_rank] >= 0 &&
           st->local_of[world_rank] != st->me;
}

static int shm_init(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    int rc = shm_seg_create(st);
    if (rc != MPI_SUCCESS)
        return rc;
    st->in = malloc((size_t)st->nlocal * sizeof *st->in);
    st->from = malloc((size_t)st->nlocal * sizeof *st->from);
    if (st->in == NULL || st->from == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: shm transport: out of memory");
    for (int i = 0; i < st->nlocal; i++) {
        if (i != st->me) {
            st->in[st->nin] = shm_seg_ring(st->seg, i);
            st->from[st->nin++] = &st->peers[i];
        }
    }
    return MPI_SUCCESS;
}

static int shm_wireup(struct cdn_transport *tp)
{
    return shm_seg_attach_all(state_of(tp));
}

static void shm_finalize(struct cdn_transport *tp)
{
    struct shm_state *st = state_of(tp);
    pay_owed(st, true);
    if (cdn_sent_report) {
        fprintf(stderr, "cadence: rank %d: shm split copies %lu, upper half by the sender %lu, "
                "taken back %lu\n", cdn_job_rank(), atomic_load(&st->splits),
                atomic_load(&st->split_pushed), atomic_load(&st->split_taken_back));
        fprintf(stderr, "cadence: rank %d: shm rendezvous received by CMA %lu, through the rings "
                "%lu\n", cdn_job_rank(), atomic_load(&st->rndv_cma), atomic_load(&st->rndv_ring));
        fprintf(stderr, "cadence: rank %d: shm sent by rendezvous though no larger than the "
                "eager limit %lu\n", cdn_job_rank(), atomic_load(&st->rndv_mid));
        fprintf(stderr, "cadence: rank %d: shm queued for ring space %lu, queue items allocated "
                "%lu\n", cdn_job_rank(), atomic_load(&st->queued_total),
                atomic_load(&st->out_allocs));
        fprintf(stderr, "cadence: rank %d: shm standard eager messages received in one line %lu, "
                "longer %lu\n", cdn_job_rank(), atomic_load(&st->eager_short),
                atomic_load(&st->eager_long));
        fprintf(stderr, "cadence: rank %d: shm doorbells rung %lu, owed %lu (rung when due %lu)\n",
                cdn_job_rank(), atomic_load(&shm_bell_rings), atomic_load(&st->owed_total),
                atomic_load(&st->owed_paid));
        for (int i = 0; i < st->nlocal; i++)
            if (i != st->me && atomic_load(&st->peers[i].rndv_seen) > 0)
                fprintf(stderr, "cadence: rank %d: shm copy rates from rank %d (bytes per 1024 "
                        "time-stamp ticks): CMA %u, out of the ring %u, into it %u\n",
                        cdn_job_rank(), st->peers[i].world, atomic_load(&st->peers[i].cma_rate),
                        atomic_load(&st->peers[i].ring_rate),
                        atomic_load(&st->peers[i].cons.ring->fill_rate));
    }
    shm_seg_destroy(st);
    for (int i = 0; i < st->nlocal; i++) {
        struct shm_peer *p = &st->peers[i];
        while (p->outq != NULL) {
            am_drop(p->outq);
            dequeue(st, p);
        }
        while (p->out_spare != NULL) {
            struct shm_out *o = p->out_spare;
            p->out_spare = o->next;
            free(o);
        }
    }
    free(st->peers);
    free(st->local_of);
    free(st->in);
    free(st->from);
    free(st);
}

static const struct cdn_transport_ops shm_ops = {
    .name = "shm",
    .init = shm_init,
    .wireup = shm_wireup,
    .reaches = shm_reaches,
    .send = shm_send,
    .send_now = shm_send_now,
    .pull = shm_pull,
    .ack = shm_ack,
    .am_send = shm_am_send,
    .dropped = shm_dropped,
    .get = shm_get,
    .put = shm_put,
    .poll = shm_poll,
    .busy = shm_busy,
    .polled = shm_polled,
    .fd = shm_fd,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .want = shm_want,
    .lazy_wanted = shm_lazy_wanted,
    .settle = shm_settle,
    .finalize = shm_finalize,
};

struct cdn_transport *cdn_shm_transport_create(void)
{
    int nlocal = cdn_job_local_size();
    if (nlocal <= 1 || cdn_param_long("CADENCE_SHM", 1, 0, 1) == 0)
        return NULL;
    struct shm_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    st->nlocal = nlocal;
    st->world_size = cdn_job_size();
    st->peers = calloc((size_t)nlocal, sizeof *st->peers);
    st->local_of = malloc((size_t)st->world_size * sizeof *st->local_of);
    if (st->peers == NULL || st->local_of == NULL) {
        free(st->peers);
        free(st->local_of);
        free(st);
        return NULL;
    }
    for (int w = 0; w < st->world_size; w++)
        st->local_of[w] = -1;
    const int *peers = cdn_job_local_peers();
    for (int i = 0; i < nlocal; i++) {
        st->peers[i].world = peers[i];
        st->peers[i].efd = -1;
        st->peers[i].cma_ok = true;
        atomic_init(&st->peers[i].lock.held, false);
        st->local_of[peers[i]] = i;
        if (peers[i] == cdn_job_rank())
            st->me = i;
    }
    st->efd = st->sock = st->segfd = -1;
    st->cma = (int)cdn_param_long("CADENCE_SHM_CMA", 2, 0, 2);
    long limit = cdn_param_long("CADENCE_SHM_EAGER_LIMIT", 16384, 0, (long)SHM_CELL_PAYLOAD);
    st->split_min = (uint64_t)cdn_param_long("CADENCE_SHM_SPLIT_MIN", 64 << 10, 0, LONG_MAX);
    st->prefault_max = (int)cdn_param_long("CADENCE_SHM_PREFAULT", 16, 0, 1 << 20);
    st->tp.ops = &shm_ops;
    st->tp.am_max = SHM_CELL_PAYLOAD;
    st->tp.caps = st->cma != 0 ? CDN_TP_CAP_GET | CDN_TP_CAP_PUT : 0;
    st->tp.eager_limit = (size_t)limit;
    /* from above half the limit send_rndv chooses; not without CMA */
    st->tp.eager_always = st->cma == 0 ? (size_t)limit : (size_t)limit / 2;
    st->tp.priv = st;
    return &st->tp;
}
