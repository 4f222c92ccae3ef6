/*
 * One-sided communication over active messages (rma.h, docs/rma.md).
 *
 * Wire: every message starts with struct rma_hdr; PUT and ACC carry the
 * bytes of one contiguous run (or a piece of one) of the target datatype,
 * GET asks for one, DATA answers it, ACK answers a PUT or an ACC once it
 * took effect.  Runs come from the target datatype's segments
 * (cdn_dt_iov) at the target displacement; the origin's side is its
 * packed byte stream (cdn_dt_pack / cdn_dt_unpack), so both datatypes may
 * be derived.
 */
#include "progress/rma.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress/am.h"
#include "progress/engine.h"
#include "progress/request.h"
#include "progress/sent.h"
#include "runtime/checkers.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/datatype.h"
#include "runtime/datatype_impl.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "runtime/runtime.h"
#include "runtime/win.h"

/* CADENCE_RMA_DIRECT (read at engine start): reach targets without their
 * threads where the memory allows; CADENCE_RMA_RDMA_MIN: smaller puts and
 * gets by a fabric go by message. */
static bool direct;
static long rdma_min;

struct rma_hdr {
    uint32_t win;    /* the window's context id */
    uint32_t count;  /* ACK: messages acknowledged */
    uint32_t trank;  /* the target's rank in the window, as the origin asked (echoed in
                      * answers: the origin counts them per target) */
    int32_t type;    /* LOCK, UNLOCK: MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE */
    uint64_t off;    /* PUT, ACC, GET: byte offset in the target's part */
    uint64_t len;    /* GET: bytes asked for; PUT, ACC, DATA: bytes that follow */
    uint64_t token;  /* GET, DATA: the origin's get (struct get_state) */
    uint64_t pos;    /* GET, DATA: where in its packed stream */
    int32_t op;      /* ACC: the predefined op's handle */
    int32_t basic;   /* ACC: the predefined type of its elements */
};

/* A get in flight at its origin. */
struct get_state {
    struct cdn_win *w;
    int trank;
    struct cdn_request *req;   /* a request-based form's, completed with it */
    char *buf;                 /* the packed stream: the origin buffer itself when it is
                                * one run, else a copy unpacked at the end */
    struct cdn_dt_segment seg;
    MPI_Count bytes;
    bool packed;
    atomic_llong left;         /* bytes still to arrive */
};

static void get_done(struct get_state *g)
{
    if (g->packed) {
        cdn_dt_unpack(&g->seg, 0, g->buf, g->bytes);
        free(g->buf);
    }
    cdn_dt_segment_fini(&g->seg);
    if (g->req != NULL)
        cdn_request_event(g->req);
    free(g);
}

/* A request-based put or accumulate in flight: its messages not yet
 * acknowledged, plus one the walk holds until it has sent them all. */
struct op_state {
    struct cdn_request *req;
    atomic_long left;
};

static void op_answered(struct op_state *o)
{
    if (atomic_fetch_sub(&o->left, 1) == 1) {
        cdn_request_event(o->req);
        free(o);
    }
}

static const struct cdn_request_ops rma_req_ops = {.name = "one-sided"};

/* A message to rank r of w goes out / its answer came (n of them). */
static void count_out(struct cdn_win *w, int r)
{
    atomic_fetch_add_explicit(&w->rk[r].pending, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->rma_pending, 1, memory_order_relaxed);
}

static void count_in(struct cdn_win *w, int r, long n)
{
    atomic_fetch_sub_explicit(&w->rk[r].pending, n, memory_order_release);
    atomic_fetch_sub_explicit(&w->rma_pending, n, memory_order_release);
}

/* ---- the target's side (handlers: any polling thread) ---- */

static void reply(int peer, unsigned id, struct rma_hdr *h, const void *data, size_t len)
{
    size_t n = sizeof *h + len;
    char small[256], *m = n <= sizeof small ? small : malloc(n);
    if (m == NULL)
        cdn_rt_abort(1, "cadence: out of memory answering a one-sided operation");
    memcpy(m, h, sizeof *h);
    if (len > 0)
        memcpy(m + sizeof *h, data, len);
    if (cdn_am_send(NULL, peer, id, m, n) != MPI_SUCCESS)
        cdn_rt_abort(1, "cadence: could not answer rank %d's one-sided operation", peer);
    if (m != small)
        free(m);
}

/* Where rank r's part starts here, when it is ours or mapped here: the
 * address its offsets add to (0 for our part of a dynamic window, whose
 * offsets are addresses: its base is MPI_BOTTOM). */
static uintptr_t map_base(const struct cdn_win *w, int r)
{
    if (r != w->comm->rank)
        return (uintptr_t)w->parts[r].base;
    return w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : (uintptr_t)w->base;
}

/* Byte off of this process's part. */
static char *part_at(const struct cdn_win *w, uint64_t off)
{
    return (char *)(map_base(w, w->comm->rank) + off);
}

/* The target part's bytes [off, off + len), or NULL (a window freed or
 * never made: an erroneous program; the origin's range was checked). */
static char *target_at(struct cdn_win *w, const struct rma_hdr *h, uint64_t len)
{
    if (w != NULL && w->flavor == MPI_WIN_FLAVOR_DYNAMIC)  /* off is an address */
        return cdn_win_attached(w, (uintptr_t)h->off, len) ? part_at(w, h->off) : NULL;
    if (w == NULL || h->off > (uint64_t)w->size || len > (uint64_t)w->size - h->off)
        return NULL;
    return part_at(w, h->off);
}

/* memmove, with the few bytes of an element or two (the latency-bound
 * case) moved inline: every load before any store, as memmove would. */
static inline void move(char *dst, const char *src, size_t n)
{
    if (n > 16) {
        memmove(dst, src, n);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        char c[4];
        memcpy(c, src, n);
        memcpy(dst, c, n);
    }
}

/* inout = in op inout over len bytes of the basic type, one accumulate at
 * a time in w's part. */
static void accumulate_locked(struct cdn_op *op, MPI_Datatype basic, const void *in,
                              void *inout, uint64_t len)
{
    struct cdn_datatype *dt = cdn_datatype_get(basic);
    if (dt != NULL && op != NULL && cdn_datatype_size(dt) > 0)
        cdn_op_reduce(op, in, inout, (MPI_Count)len / cdn_datatype_size(dt), dt);
}

/* The lock of rank r's part, for whoever applies an accumulate there:
 * the window's own when r is us and nothing else reaches our part. */
static struct cdn_acc_lock *acc_mutex(struct cdn_win *w, int r)
{
    return w->acc_locks != NULL ? &w->acc_locks[r] : &w->acc_lock;
}

/* A spin lock of our own rather than a process-shared mutex: it is taken
 * on every accumulate's path, and two atomic operations of the mutex cost
 * more than one exchange and a store.  It is held for one reduction; a
 * waiter spins a little, then yields (the holder may have been descheduled
 * on a machine with more threads than cores). */
static void acc_take(struct cdn_acc_lock *l)
{
    for (unsigned spins = 0;; spins++) {
        if (atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
            atomic_exchange_explicit(&l->held, 1, memory_order_acquire) == 0)
            return;
        if (spins < 64)
            CDN_CPU_RELAX();
        else
            sched_yield();
    }
}

static void acc_give(struct cdn_acc_lock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

static void accumulate(struct cdn_win *w, int r, struct cdn_op *op, MPI_Datatype basic,
                       const void *in, void *inout, uint64_t len)
{
    struct cdn_acc_lock *m = acc_mutex(w, r);
    acc_take(m);
    accumulate_locked(op, basic, in, inout, len);
    acc_give(m);
}

/* A GACC of op (len bytes of the basic type; data: the origin's, none
 * for MPI_NO_OP) or, op NULL, a CAS (data: the new value, then the
 * compare value) at `at` in rank r's part: the old bytes into old, then
 * the change, under the accumulate lock. */
static void fetch_change(struct cdn_win *w, int r, struct cdn_op *op, MPI_Datatype basic,
                         uint64_t len, const char *data, char *at, char *old)
{
    struct cdn_acc_lock *m = acc_mutex(w, r);
    acc_take(m);
    move(old, at, (size_t)len);
    if (op == NULL) {
        if (memcmp(at, data + len, (size_t)len) == 0)
            move(at, data, (size_t)len);
    } else if (op->handle != MPI_NO_OP) {
        accumulate_locked(op, basic, data, at, len);
    }
    acc_give(m);
}

/* Another process's operation is served here (engine.h, rma_served_ns). */
static void served(void)
{
    if (cdn_engine.rma_spin_ns > 0)
        atomic_store_explicit(&cdn_engine.rma_served_ns, (long long)cdn_progress_now_ns(),
                              memory_order_relaxed);
}

/* A PUT, ACC or GET from world rank peer: do it, and answer. */
static void at_target(int peer, const void *data, enum cdn_rma_kind kind)
{
    served();
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    const char *payload = (const char *)data + sizeof h;
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    char *at = target_at(w, &h, h.len);
    if (kind == CDN_RMA_GET) {
        struct rma_hdr d = {.win = h.win, .trank = h.trank, .token = h.token, .pos = h.pos,
                            .len = at != NULL ? h.len : 0};
        reply(peer, CDN_AM_RMA_DATA, &d, at, (size_t)d.len);
    } else if (at != NULL && kind == CDN_RMA_PUT) {
        memcpy(at, payload, (size_t)h.len);
    } else if (at != NULL) {
        accumulate(w, w->comm->rank, cdn_op_get(h.op), h.basic, payload, at, h.len);
    }
    if (w != NULL)
        cdn_win_release(w);
    if (kind != CDN_RMA_GET) {
        struct rma_hdr a = {.win = h.win, .count = 1, .trank = h.trank, .token = h.token};
        reply(peer, CDN_AM_RMA_ACK, &a, NULL, 0);
    }
}

/* ---- our part's lock (passive target) ---- */

static bool grantable(const struct cdn_win *w, int type)
{
    return w->lk_excl == 0 && (type == MPI_LOCK_SHARED || w->lk_shared == 0);
}

static void take(struct cdn_win *w, int type)
{
    if (type == MPI_LOCK_EXCLUSIVE)
        w->lk_excl = 1;
    else
        w->lk_shared++;
}

/* The lock is the requester's: tell it (an answer it counts). */
static void grant(struct cdn_win *w, const struct cdn_win_waiter *q)
{
    if (q->peer < 0) {
        count_in(w, q->trank, 1);
        return;
    }
    struct rma_hdr a = {.win = w->comm->context_id, .count = 1, .trank = (uint32_t)q->trank};
    reply(q->peer, CDN_AM_RMA_ACK, &a, NULL, 0);
}

/* A lock request (peer -1: this process); granted now, or queued behind
 * the earlier ones. */
static void lock_request(struct cdn_win *w, int peer, int trank, int type)
{
    struct cdn_win_waiter q = {.peer = peer, .trank = trank, .type = type};
    pthread_mutex_lock(&w->lk_lock);
    bool now = w->lk_n == 0 && grantable(w, type);
    if (now) {
        take(w, type);
    } else {
        w->lk_q[(w->lk_head + w->lk_n) % w->comm->size] = q;
        w->lk_n++;
    }
    pthread_mutex_unlock(&w->lk_lock);
    if (now)
        grant(w, &q);
}

/* A holder of type lets go: the waiters that can have it now get it, in
 * the order they asked. */
static void lock_release(struct cdn_win *w, int type)
{
    struct cdn_win_waiter *go = malloc(sizeof *go * (size_t)w->comm->size);
    int n = 0;
    pthread_mutex_lock(&w->lk_lock);
    if (type == MPI_LOCK_EXCLUSIVE)
        w->lk_excl = 0;
    else if (w->lk_shared > 0)
        w->lk_shared--;
    while (w->lk_n > 0 && grantable(w, w->lk_q[w->lk_head].type)) {
        struct cdn_win_waiter q = w->lk_q[w->lk_head];
        w->lk_head = (w->lk_head + 1) % w->comm->size;
        w->lk_n--;
        take(w, q.type);
        if (go != NULL)
            go[n++] = q;
    }
    pthread_mutex_unlock(&w->lk_lock);
    for (int i = 0; i < n; i++)
        grant(w, &go[i]);
    free(go);
}

static void on_lock(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    if (w == NULL) {  /* freed: an erroneous program; do not leave the origin waiting */
        struct rma_hdr a = {.win = h.win, .count = 1, .trank = h.trank};
        reply(peer, CDN_AM_RMA_ACK, &a, NULL, 0);
        return;
    }
    lock_request(w, peer, (int)h.trank, h.type);
    cdn_win_release(w);
}

static void on_unlock(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    if (w != NULL) {
        lock_release(w, h.type);
        cdn_win_release(w);
    }
    struct rma_hdr a = {.win = h.win, .count = 1, .trank = h.trank};
    reply(peer, CDN_AM_RMA_ACK, &a, NULL, 0);
}

/* A GACC or a CAS: answered with the old data. */
static void on_fetch(int peer, const void *data, bool cas)
{
    served();
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    char *at = target_at(w, &h, h.len);
    char *old = at != NULL ? malloc((size_t)h.len) : NULL;
    if (old != NULL)
        fetch_change(w, w->comm->rank, cas ? NULL : cdn_op_get(h.op), h.basic, h.len,
                     (const char *)data + sizeof h, at, old);
    struct rma_hdr d = {.win = h.win, .trank = h.trank, .token = h.token, .pos = h.pos,
                        .len = old != NULL ? h.len : 0};
    reply(peer, CDN_AM_RMA_DATA, &d, old, (size_t)d.len);
    free(old);
    if (w != NULL)
        cdn_win_release(w);
}

static void on_gacc(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    on_fetch(peer, data, false);
}

static void on_cas(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    on_fetch(peer, data, true);
}

static void on_put(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    at_target(peer, data, CDN_RMA_PUT);
}

static void on_acc(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    at_target(peer, data, CDN_RMA_ACC);
}

static void on_get(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)len;
    at_target(peer, data, CDN_RMA_GET);
}

/* ---- the origin's side ---- */

static void on_data(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)peer;
    (void)len;
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    struct get_state *g = (struct get_state *)(uintptr_t)h.token;
    (void)atomic_load_explicit(&g->left, memory_order_acquire);  /* (its fields: rma_start) */
    struct cdn_win *w = g->w;
    memcpy(g->buf + h.pos, (const char *)data + sizeof h, (size_t)h.len);
    /* (a missing window answers with no data: count what was asked) */
    int trank = g->trank;
    if (atomic_fetch_sub(&g->left, (long long)h.len) == (long long)h.len)
        get_done(g);
    count_in(w, trank, 1);
}

/* A message's header, and the window it names with a reference (NULL:
 * none: freed, in an erroneous program). */
static struct cdn_win *win_of(const void *data, struct rma_hdr *h)
{
    memcpy(h, data, sizeof *h);
    return cdn_win_find_ctx(h->win);
}

static void on_ack(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)peer;
    (void)len;
    struct rma_hdr h;
    struct cdn_win *w = win_of(data, &h);
    if (w == NULL)
        return;
    if (h.token != 0) {
        CDN_HB_ACQUIRE((void *)(uintptr_t)h.token);
        op_answered((struct op_state *)(uintptr_t)h.token);
    }
    count_in(w, (int)h.trank, h.count);
    cdn_win_release(w);
}

/* PSCW: a target's MPI_Win_post naming us (trank: its rank), or an
 * origin's MPI_Win_complete. */
static void pscw_arrived(const void *data, bool post)
{
    struct rma_hdr h;
    struct cdn_win *w = win_of(data, &h);
    if (w == NULL)
        return;
    atomic_fetch_add_explicit(post ? &w->rk[h.trank].posts : &w->completes, 1,
                              memory_order_release);
    cdn_win_release(w);
    cdn_progress_signal();
}

static void on_post(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)peer;
    (void)len;
    pscw_arrived(data, true);
}

static void on_complete(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)peer;
    (void)len;
    pscw_arrived(data, false);
}

void cdn_rma_am_register(void)
{
    direct = cdn_param_long("CADENCE_RMA_DIRECT", 1, 0, 1) != 0;
    rdma_min = cdn_param_long("CADENCE_RMA_RDMA_MIN", 65536, 0, 1L << 40);
    cdn_am_register(CDN_AM_RMA_PUT, on_put);
    cdn_am_register(CDN_AM_RMA_ACC, on_acc);
    cdn_am_register(CDN_AM_RMA_GET, on_get);
    cdn_am_register(CDN_AM_RMA_DATA, on_data);
    cdn_am_register(CDN_AM_RMA_ACK, on_ack);
    cdn_am_register(CDN_AM_RMA_LOCK, on_lock);
    cdn_am_register(CDN_AM_RMA_GACC, on_gacc);
    cdn_am_register(CDN_AM_RMA_CAS, on_cas);
    cdn_am_register(CDN_AM_RMA_POST, on_post);
    cdn_am_register(CDN_AM_RMA_COMPLETE, on_complete);
    cdn_am_register(CDN_AM_RMA_UNLOCK, on_unlock);
}

static atomic_ulong via_count[CDN_RMA_NVIA];

/* (counted only for the report: a shared counter costs on the fast path) */
static void count_via(int via)
{
    if (cdn_sent_report)
        atomic_fetch_add_explicit(&via_count[via], 1, memory_order_relaxed);
}

void cdn_rma_counts(unsigned long out[CDN_RMA_NVIA])
{
    for (int i = 0; i < CDN_RMA_NVIA; i++)
        out[i] = atomic_load_explicit(&via_count[i], memory_order_relaxed);
}

/* A transport's one-sided copy, waited for where it is made. */
struct xfer_wait {
    struct cdn_xfer x;
    atomic_bool done;
    int err;
};

static void xfer_done(struct cdn_xfer *x, int err)
{
    struct xfer_wait *t = (struct xfer_wait *)x;
    t->err = err;
    atomic_store_explicit(&t->done, true, memory_order_release);
}

static bool xfer_over(void *arg)
{
    return atomic_load_explicit(&((struct xfer_wait *)arg)->done, memory_order_acquire);
}

/* Start x (zeroed but for on_done): n bytes between local and address
 * `at` (under registration key, 0 where the transport needs none) of
 * world rank peer's memory by tp's one-sided copy. */
static int xfer_post(struct cdn_transport *tp, struct cdn_xfer *x, int peer, bool put,
                     char *local, uint64_t at, uint64_t key, uint64_t n)
{
    x->peer = peer;
    x->bytes = n;
    x->rkey = (struct cdn_mem_key){.addr = at, .key = key};
    if (put)
        x->src = local;
    else
        x->dst = local;
    return put ? tp->ops->put(tp, x) : tp->ops->get(tp, x);
}

/* The same, waited for here; MPI_SUCCESS or its error. */
static int xfer(struct cdn_transport *tp, int peer, bool put, char *local, uint64_t at,
                uint64_t key, uint64_t n)
{
    struct xfer_wait t = {.x = {.on_done = xfer_done}};
    int rc = xfer_post(tp, &t.x, peer, put, local, at, key, n);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!xfer_over(&t))
        cdn_progress_wait_until(xfer_over, &t);
    return t.err;
}

/* Does world rank peer reach us by shared memory (context 0)? */
static bool by_shm(int peer)
{
    struct cdn_transport *tp = cdn_progress_transport_for(peer);
    return tp != NULL && strcmp(tp->ops->name, "shm") == 0;
}

bool cdn_rma_can_map(const struct cdn_comm *comm)
{
    if (!direct)
        return false;
    for (int r = 0; r < comm->size; r++) {
        int peer = cdn_comm_world_rank(comm, r);
        if (peer != cdn_rt.world_rank && !by_shm(peer))
            return false;
    }
    return true;
}

/* The transport's copy: can tp get and put, and does it need our memory
 * registered for that? */
static bool copies(const struct cdn_transport *tp)
{
    unsigned both = CDN_TP_CAP_GET | CDN_TP_CAP_PUT;
    return (tp->caps & both) == both;
}

static void unregister(struct cdn_win *w)
{
    for (int i = 0; i < w->nregs; i++) {
        struct cdn_transport *tp = w->regs[i].tp;
        struct cdn_mem_key key = {w->regs[i].addr, w->regs[i].key};
        tp->ops->mem_dereg(tp, &key);
    }
    w->nregs = 0;
}

void cdn_rma_register(struct cdn_win *w, struct cdn_rma_keys *mine)
{
    memset(mine, 0, sizeof *mine);
    if (!direct || w->flavor == MPI_WIN_FLAVOR_DYNAMIC || w->base == NULL || w->size == 0)
        return;
    for (int r = 0; r < w->comm->size; r++) {
        int peer = cdn_comm_world_rank(w->comm, r);
        struct cdn_transport *tp = peer != cdn_rt.world_rank ? cdn_progress_transport_for(peer)
                                                             : NULL;
        if (tp == NULL || !copies(tp) || tp->ops->mem_reg == NULL || tp->kind >= CDN_RMA_KINDS ||
            (mine->have & (1u << tp->kind)))
            continue;
        if (w->regs == NULL && (w->regs = calloc(CDN_RMA_KINDS, sizeof *w->regs)) == NULL)
            return;  /* (then by active messages) */
        struct cdn_mem_key key;
        if (tp->ops->mem_reg(tp, w->base, (size_t)w->size, &key) != MPI_SUCCESS)
            continue;
        w->regs[w->nregs++] = (struct cdn_win_reg){tp, key.addr, key.key};
        w->unregister = unregister;
        mine->have |= 1u << tp->kind;
        mine->addr[tp->kind] = key.addr;
        mine->key[tp->kind] = key.key;
    }
}

/* A put or get by the transport's copy that nobody waits for: a flush
 * does, by the count of rank r's messages it adds to (the contiguous
 * ones of operations without a request: their memory is the user's
 * until the flush anyway). */
struct xfer_async {
    struct cdn_xfer x;
    struct cdn_win *w;
    int r;
};

static void async_done(struct cdn_xfer *x, int err)
{
    struct xfer_async *t = (struct xfer_async *)x;
    struct cdn_win *w = t->w;
    int r = t->r;
    free(t);
    if (err != MPI_SUCCESS) {
        int none = MPI_SUCCESS;
        atomic_compare_exchange_strong(&w->xfer_err, &none, err);
    }
    count_in(w, r, 1);  /* (the last touch: a waiting MPI_Win_free may go on) */
}

static int xfer_start(struct cdn_transport *tp, struct cdn_win *w, int r, int peer, bool put,
                      char *local, uint64_t at, uint64_t key, uint64_t n)
{
    struct xfer_async *t = calloc(1, sizeof *t);
    if (t == NULL)
        return xfer(tp, peer, put, local, at, key, n);
    *t = (struct xfer_async){.x = {.on_done = async_done}, .w = w, .r = r};
    count_out(w, r);
    int rc = xfer_post(tp, &t->x, peer, put, local, at, key, n);
    if (rc != MPI_SUCCESS) {
        count_in(w, r, 1);
        free(t);
    }
    return rc;
}

int cdn_rma_failed(struct cdn_win *w, const char *caller)
{
    int err = atomic_exchange(&w->xfer_err, MPI_SUCCESS);
    return err == MPI_SUCCESS ? MPI_SUCCESS
                              : cdn_err_prefix(err, caller);
}

/* How operations reach rank r's part: loads and stores when it is ours
 * or mapped here (a mapped window's processes all reach each other by
 * shared memory); the transport's copy when the transport can write and
 * read that process's memory -- by address alone (CMA), or by the key
 * rank r registered its part under with that transport -- and a one-byte
 * read of its part works (the kernel may refuse CMA); else active
 * messages.  keys: every rank's registrations, or NULL. */
static int way_to(struct cdn_win *w, int r, const struct cdn_rma_keys *keys)
{
    if (r == w->comm->rank)
        return CDN_RMA_VIA_MAP;
    int peer = cdn_comm_world_rank(w->comm, r);
    struct cdn_transport *tp = direct ? cdn_progress_transport_for(peer) : NULL;
    if (tp == NULL)
        return CDN_RMA_VIA_AM;
    if (w->shm != NULL)
        return by_shm(peer) ? CDN_RMA_VIA_MAP : CDN_RMA_VIA_AM;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC || !copies(tp) || w->parts[r].size == 0)
        return CDN_RMA_VIA_AM;
    struct cdn_win_rank *k = &w->rk[r];
    k->rdma = tp->ops->mem_reg != NULL;
    if (!k->rdma) {
        k->raddr = (uint64_t)(uintptr_t)w->parts[r].base;
        k->rkey = 0;
    } else if (keys != NULL && tp->kind < CDN_RMA_KINDS &&
               (keys[r].have & (1u << tp->kind))) {
        k->raddr = keys[r].addr[tp->kind];
        k->rkey = keys[r].key[tp->kind];
    } else {
        return CDN_RMA_VIA_AM;
    }
    char probe;
    return xfer(tp, peer, false, &probe, k->raddr, k->rkey, 1) == MPI_SUCCESS ? CDN_RMA_VIA_XFER
                                                                              : CDN_RMA_VIA_AM;
}

void cdn_rma_setup(struct cdn_win *w, const struct cdn_rma_keys *keys)
{
    for (int r = 0; r < w->comm->size; r++)
        w->rk[r].via = way_to(w, r, keys);
}

/* How an operation of this kind and size (the target's bytes) goes to
 * rank r (the copy moves puts' and gets' data only; a fabric's RDMA only
 * from rdma_min bytes on). */
static int via_for(const struct cdn_win *w, int r, enum cdn_rma_kind kind, MPI_Count bytes)
{
    const struct cdn_win_rank *k = &w->rk[r];
    if (k->via != CDN_RMA_VIA_XFER)
        return k->via;
    if ((kind != CDN_RMA_PUT && kind != CDN_RMA_GET) || (k->rdma && bytes < rdma_min))
        return CDN_RMA_VIA_AM;
    return CDN_RMA_VIA_XFER;
}

/* One operation on its way: the runs of the target datatype, each cut to
 * the message size, against the origin's packed stream. */
struct walk {
    struct cdn_win *w;
    enum cdn_rma_kind kind;
    const struct cdn_rma_args *a;
    struct cdn_dt_segment oseg;
    struct cdn_dt_segment rseg;  /* GACC by loads and stores: the result's stream */
    int via;                   /* CDN_RMA_VIA_* */
    int peer;                  /* the target's world rank (XFER, AM) */
    struct cdn_transport *tp;  /* XFER: the transport reaching it */
    uintptr_t at;              /* MAP: where the target part's byte 0 is here (a dynamic
                                * window's offsets are addresses: 0); XFER: there, as the
                                * transport names it */
    uint64_t key;              /* XFER: the target part's registration key (or 0) */
    char *contig;              /* the origin's stream when it is contiguous, else NULL */
    uint64_t chunk;            /* the most data bytes a message (a copy) carries */
    char *msg;                 /* a message being built (header + data), or a bounce
                                * buffer (XFER, MAP accumulates) */
    MPI_Count pos;             /* the packed stream's bytes done */
    struct get_state *get;
    struct op_state *ost;      /* a request-based put or accumulate's */
    struct cdn_op *op;
    MPI_Datatype basic;
    MPI_Count basic_size;
};

/* The run [off, off + len) of the target's part, against the packed
 * stream from w->pos on. */
static int run(struct walk *k, uint64_t off, uint64_t len)
{
    while (len > 0) {
        uint64_t n = len < k->chunk ? len : k->chunk;
        struct rma_hdr h = {.win = k->w->comm->context_id, .trank = (uint32_t)k->a->trank,
                            .off = off, .len = n,
                            .op = (int32_t)(k->op != NULL ? k->op->handle : 0),
                            .basic = (int32_t)k->basic};
        if (k->via == CDN_RMA_VIA_MAP) {  /* loads and stores, now */
            char *at = (char *)(k->at + off);
            int r = k->a->trank;
            /* an accumulate's origin data: in place, or packed */
            const char *in = k->contig != NULL ? k->contig + k->pos : k->msg;
            if (k->kind != CDN_RMA_PUT && k->kind != CDN_RMA_GET && k->contig == NULL &&
                h.op != (int32_t)MPI_NO_OP)
                cdn_dt_pack(&k->oseg, k->pos, k->msg, (MPI_Count)n);
            if (k->kind == CDN_RMA_PUT) {
                cdn_dt_pack(&k->oseg, k->pos, at, (MPI_Count)n);
            } else if (k->kind == CDN_RMA_GET) {
                cdn_dt_unpack(&k->oseg, k->pos, at, (MPI_Count)n);
            } else if (k->kind == CDN_RMA_GACC) {
                char *old = k->msg + n;  /* (the buffer holds both) */
                fetch_change(k->w, r, k->op, k->basic, n, in, at, old);
                cdn_dt_unpack(&k->rseg, k->pos, old, (MPI_Count)n);
            } else {
                accumulate(k->w, r, k->op, k->basic, in, at, n);
            }
        } else if (k->via == CDN_RMA_VIA_XFER && k->contig != NULL && k->a->req == NULL) {
            int rc = xfer_start(k->tp, k->w, k->a->trank, k->peer, k->kind == CDN_RMA_PUT,
                                k->contig + k->pos, k->at + off, k->key, n);
            if (rc != MPI_SUCCESS)
                return rc;
        } else if (k->via == CDN_RMA_VIA_XFER) {
            bool put = k->kind == CDN_RMA_PUT;
            char *local = k->contig != NULL ? k->contig + k->pos : k->msg;
            if (put && k->contig == NULL)
                cdn_dt_pack(&k->oseg, k->pos, local, (MPI_Count)n);
            int rc = xfer(k->tp, k->peer, put, local, k->at + off, k->key, n);
            if (rc != MPI_SUCCESS)
                return rc;
            if (!put && k->contig == NULL)
                cdn_dt_unpack(&k->oseg, k->pos, local, (MPI_Count)n);
        } else if (k->kind == CDN_RMA_GET ||
                   (k->kind == CDN_RMA_GACC && h.op == (int32_t)MPI_NO_OP)) {
            h.token = (uint64_t)(uintptr_t)k->get;
            h.pos = (uint64_t)k->pos;
            count_out(k->w, k->a->trank);
            int rc = cdn_am_send(NULL, k->peer,
                                 k->kind == CDN_RMA_GET ? CDN_AM_RMA_GET : CDN_AM_RMA_GACC,
                                 &h, sizeof h);
            if (rc != MPI_SUCCESS)
                return rc;
        } else if (k->kind == CDN_RMA_GACC) {
            h.token = (uint64_t)(uintptr_t)k->get;
            h.pos = (uint64_t)k->pos;
            memcpy(k->msg, &h, sizeof h);
            cdn_dt_pack(&k->oseg, k->pos, k->msg + sizeof h, (MPI_Count)n);
            count_out(k->w, k->a->trank);
            int rc = cdn_am_send(NULL, k->peer, CDN_AM_RMA_GACC, k->msg, sizeof h + (size_t)n);
            if (rc != MPI_SUCCESS)
                return rc;
        } else {
            if (k->ost != NULL) {
                h.token = (uint64_t)(uintptr_t)k->ost;
                atomic_fetch_add(&k->ost->left, 1);
                CDN_HB_RELEASE(k->ost);  /* (its address comes back in the ACK) */
            }
            memcpy(k->msg, &h, sizeof h);
            cdn_dt_pack(&k->oseg, k->pos, k->msg + sizeof h, (MPI_Count)n);
            count_out(k->w, k->a->trank);
            int rc = cdn_am_send(NULL, k->peer,
                                 k->kind == CDN_RMA_PUT ? CDN_AM_RMA_PUT : CDN_AM_RMA_ACC,
                                 k->msg, sizeof h + (size_t)n);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        k->pos += (MPI_Count)n;
        off += n;
        len -= n;
    }
    return MPI_SUCCESS;
}

/* Every run of the target's (count, datatype) at byte displacement base. */
static int each_run(struct walk *k, MPI_Aint base)
{
    const struct cdn_rma_args *a = k->a;
    MPI_Count tb = a->tcount * cdn_datatype_size(a->tdt);
    if (tb == 0)
        return MPI_SUCCESS;
    if (cdn_datatype_is_contig(a->tdt, a->tcount))
        return run(k, (uint64_t)(base + cdn_datatype_true_lb(a->tdt)), (uint64_t)tb);
    MPI_Count nseg = cdn_dt_iov_count(a->tdt);
    MPI_Aint ext = cdn_datatype_extent(a->tdt);
    enum { BATCH = 64 };
    MPIX_Iov iov[BATCH];
    for (MPI_Count e = 0; e < a->tcount; e++)
        for (MPI_Count s = 0; s < nseg; s += BATCH) {
            MPI_Count got = cdn_dt_iov(a->tdt, base + e * ext, s, iov, BATCH);
            for (MPI_Count i = 0; i < got; i++) {
                int rc = run(k, (uint64_t)(uintptr_t)iov[i].iov_base, (uint64_t)iov[i].iov_len);
                if (rc != MPI_SUCCESS)
                    return rc;
            }
        }
    return MPI_SUCCESS;
}

/* The rank, the epoch, the flavor and the target range of an operation. */
static int rma_check(struct cdn_win *w, const struct cdn_rma_args *a, const char *caller)
{
    if (a->trank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (a->trank < 0 || a->trank >= w->comm->size)
        return cdn_err(MPI_ERR_RANK, "%s: target_rank %d is not a rank of the window's group "
                       "(size %d)", caller, a->trank, w->comm->size);
    if (w->rma_epoch != CDN_RMA_FENCE && w->rma_epoch != CDN_RMA_LOCK_ALL &&
        w->rk[a->trank].held == 0 && !(w->rma_epoch == CDN_RMA_PSCW && w->rk[a->trank].access))
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: no access epoch to rank %d is open on the window: "
                       "call MPI_Win_fence, lock it (MPI_Win_lock, MPI_Win_lock_all), or start "
                       "one to it (MPI_Win_start) first", caller, a->trank);
    if (w->rma_epoch == CDN_RMA_FENCE)
        w->fence_ops = true;
    MPI_Count tb = a->tcount * cdn_datatype_size(a->tdt);
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* target_disp is an address at the target (MPI_Get_address): its
         * engine checks it lies in memory attached there; ours, here */
        MPI_Aint lo = a->tdisp + cdn_datatype_true_lb(a->tdt);
        MPI_Aint span = (MPI_Aint)(a->tcount - 1) * cdn_datatype_extent(a->tdt) +
                        cdn_datatype_true_extent(a->tdt);
        if (tb > 0 && a->trank == w->comm->rank &&
            !cdn_win_attached(w, (uintptr_t)lo, (uint64_t)span))
            return cdn_err(MPI_ERR_RMA_RANGE, "%s: %lld bytes at address 0x%llx are not in memory "
                           "attached to the window", caller, (long long)span,
                           (unsigned long long)lo);
        return MPI_SUCCESS;
    }
    const struct cdn_win_part *part = &w->parts[a->trank];
    MPI_Aint base = a->tdisp * part->disp_unit;
    if (tb > 0) {
        MPI_Aint lo = base + cdn_datatype_true_lb(a->tdt);
        MPI_Aint hi = base + (MPI_Aint)(a->tcount - 1) * cdn_datatype_extent(a->tdt) +
                      cdn_datatype_true_lb(a->tdt) + cdn_datatype_true_extent(a->tdt);
        if (a->tdisp < 0 || lo < 0 || hi > part->size)
            return cdn_err(MPI_ERR_RMA_RANGE, "%s: bytes %lld to %lld of rank %d's part are "
                           "outside it (%lld bytes; target_disp %lld, disp_unit %lld)", caller,
                           (long long)lo, (long long)hi, a->trank, (long long)part->size,
                           (long long)a->tdisp, (long long)part->disp_unit);
    }
    return MPI_SUCCESS;
}

static int rma_start(struct cdn_win *w, enum cdn_rma_kind kind, const struct cdn_rma_args *a,
                     struct cdn_request *req, const char *caller);

int cdn_rma_op(struct cdn_win *w, enum cdn_rma_kind kind, const struct cdn_rma_args *a,
               const char *caller)
{
    int rc0 = rma_check(w, a, caller);
    if (rc0 == MPI_SUCCESS && a->req != NULL && w->rma_epoch != CDN_RMA_LOCK &&
        w->rma_epoch != CDN_RMA_LOCK_ALL)
        rc0 = cdn_err(MPI_ERR_RMA_SYNC, "%s: a request-based operation needs a passive-target "
                      "epoch (MPI_Win_lock or MPI_Win_lock_all)", caller);
    if (rc0 != MPI_SUCCESS)
        return rc0;
    if (a->req != NULL) {
        /* complete once every answer came; born complete when there is
         * nothing to wait for (MPI_PROC_NULL, no data, our own part) */
        struct cdn_request *r = cdn_request_alloc(CDN_REQ_RMA, &rma_req_ops, w->comm);
        if (r == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", caller);
        cdn_status_empty(&r->status);
        cdn_request_arm(r, 1);
        *a->req = r;
        struct cdn_rma_args plain = *a;
        plain.req = NULL;
        bool waits = a->trank != MPI_PROC_NULL && a->tcount * cdn_datatype_size(a->tdt) > 0 &&
                     via_for(w, a->trank, kind, a->tcount * cdn_datatype_size(a->tdt)) ==
                         CDN_RMA_VIA_AM;
        int rc = waits ? rma_start(w, kind, &plain, r, caller) : cdn_rma_op(w, kind, &plain, caller);
        if (!waits || rc != MPI_SUCCESS) {
            if (rc != MPI_SUCCESS)
                r->status.MPI_ERROR = rc;
            cdn_request_event(r);
        }
        return rc;
    }
    if (a->trank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    return rma_start(w, kind, a, NULL, caller);
}

/* Start a checked operation; req: a request-based form's request, for a
 * target other than ourselves (completed by the last answer). */
static int rma_start(struct cdn_win *w, enum cdn_rma_kind kind, const struct cdn_rma_args *a,
                     struct cdn_request *req, const char *caller)
{
    bool no_op = kind == CDN_RMA_GACC && a->op != NULL && a->op->handle == MPI_NO_OP;
    MPI_Count ob = a->ocount * cdn_datatype_size(a->odt);
    MPI_Count tb = a->tcount * cdn_datatype_size(a->tdt);
    if (ob != tb && !(kind == CDN_RMA_GACC && no_op))
        return cdn_err(MPI_ERR_TYPE, "%s: the origin's data is %lld bytes and the target's "
                       "%lld: the type signatures differ", caller, (long long)ob, (long long)tb);
    if (kind == CDN_RMA_GACC && a->rcount * cdn_datatype_size(a->rdt) != tb)
        return cdn_err(MPI_ERR_TYPE, "%s: the result's room is %lld bytes and the target's "
                       "data %lld", caller, (long long)(a->rcount * cdn_datatype_size(a->rdt)),
                       (long long)tb);
    MPI_Aint base = a->tdisp * w->parts[a->trank].disp_unit;
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    if (kind == CDN_RMA_ACC || kind == CDN_RMA_GACC) {
        basic = cdn_datatype_basic(a->tdt);
        MPI_Datatype ob_basic = no_op ? basic : cdn_datatype_basic(a->odt);
        if (kind == CDN_RMA_GACC && cdn_datatype_basic(a->rdt) != basic)
            ob_basic = MPI_DATATYPE_NULL;
        if (basic == MPI_DATATYPE_NULL || ob_basic != basic)
            return cdn_err(MPI_ERR_TYPE, "%s: an accumulate's origin and target types must be "
                           "built from one and the same predefined type", caller);
    }
    if (tb == 0)
        return MPI_SUCCESS;
    int via = via_for(w, a->trank, kind, tb);
    count_via(via);
    if (via == CDN_RMA_VIA_MAP && (no_op || cdn_datatype_is_contig(a->odt, a->ocount)) &&
        cdn_datatype_is_contig(a->tdt, a->tcount) &&
        (kind != CDN_RMA_GACC || cdn_datatype_is_contig(a->rdt, a->rcount))) {
        /* the common case, every side contiguous: one copy, or one
         * reduction, with no walk */
        char *at = (char *)(map_base(w, a->trank) +
                            (uintptr_t)(base + cdn_datatype_true_lb(a->tdt)));
        char *o = (char *)a->oaddr + (no_op ? 0 : cdn_datatype_true_lb(a->odt));
        if (kind == CDN_RMA_PUT) {
            move(at, o, (size_t)tb);
        } else if (kind == CDN_RMA_GET) {
            move(o, at, (size_t)tb);
        } else if (kind == CDN_RMA_ACC) {
            accumulate(w, a->trank, a->op, basic, o, at, (uint64_t)tb);
        } else {
            fetch_change(w, a->trank, a->op, basic, (uint64_t)tb, o, at,
                         (char *)a->raddr + cdn_datatype_true_lb(a->rdt));
        }
        return MPI_SUCCESS;
    }
    struct walk k = {.w = w, .kind = kind, .a = a, .op = a->op, .via = via, .basic = basic};
    if (basic != MPI_DATATYPE_NULL)
        k.basic_size = cdn_datatype_size(cdn_datatype_get(basic));
    k.peer = cdn_comm_world_rank(w->comm, a->trank);
    cdn_dt_segment_init(&k.oseg, a->oaddr, no_op ? 0 : a->ocount, a->odt);
    k.contig = no_op ? NULL : cdn_dt_segment_contig(&k.oseg);
    bool data_only = kind == CDN_RMA_PUT || kind == CDN_RMA_GET;
    if (k.via == CDN_RMA_VIA_AM) {
        struct cdn_transport *tp = cdn_progress_transport_for(k.peer);
        if (tp == NULL || tp->am_max <= sizeof(struct rma_hdr) + 64) {
            cdn_dt_segment_fini(&k.oseg);
            return cdn_err(MPI_ERR_OTHER, "%s: no transport reaches rank %d", caller, a->trank);
        }
        k.chunk = tp->am_max - sizeof(struct rma_hdr);
    } else {
        /* a put's or a get's runs whole, unless they pass through the
         * bounce buffer */
        k.chunk = data_only && (k.via == CDN_RMA_VIA_MAP || k.contig != NULL) ? UINT64_MAX
                                                                             : 256 * 1024;
        k.at = map_base(w, a->trank);
        if (k.via == CDN_RMA_VIA_XFER) {  /* (where the part is, as the transport names it) */
            k.tp = cdn_progress_transport_for(k.peer);
            k.at = (uintptr_t)w->rk[a->trank].raddr;
            k.key = w->rk[a->trank].rkey;
        }
    }
    if (k.basic_size > 0)
        k.chunk -= k.chunk % (uint64_t)k.basic_size;  /* whole elements a message */
    if (kind == CDN_RMA_GACC)
        cdn_dt_segment_init(&k.rseg, a->raddr, a->rcount, a->rdt);
    if ((kind == CDN_RMA_GET || kind == CDN_RMA_GACC) && k.via == CDN_RMA_VIA_AM) {
        /* the answers land in a get's state, which owns the stream they
         * fill from here: the origin buffer's (get) or the result's */
        struct get_state *g = calloc(1, sizeof *g);
        if (g != NULL) {
            g->w = w;
            g->trank = a->trank;
            g->seg = kind == CDN_RMA_GET ? k.oseg : k.rseg;
            g->bytes = tb;
            g->buf = cdn_dt_segment_contig(&g->seg);
            g->packed = g->buf == NULL;
            if (g->packed && (g->buf = malloc((size_t)tb)) == NULL) {
                free(g);
                g = NULL;
            }
        }
        if (g == NULL) {
            cdn_dt_segment_fini(&k.oseg);
            if (kind == CDN_RMA_GACC)
                cdn_dt_segment_fini(&k.rseg);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for %lld bytes", caller,
                           (long long)tb);
        }
        g->req = req;
        /* released: the answers' handler reads g after an acquire of left
         * (its pointer went out and came back through another process,
         * an order no thread checker sees) */
        atomic_store_explicit(&g->left, (long long)tb, memory_order_release);
        k.get = g;
        if (kind == CDN_RMA_GET)
            return each_run(&k, base);
    }
    if (req != NULL && (kind == CDN_RMA_PUT || kind == CDN_RMA_ACC)) {
        if ((k.ost = malloc(sizeof *k.ost)) == NULL) {
            cdn_dt_segment_fini(&k.oseg);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        }
        k.ost->req = req;
        atomic_store_explicit(&k.ost->left, 1, memory_order_release);  /* the walk's */
    }
    /* a message's room, or the bounce buffer's (for a GACC by loads and
     * stores, twice: data and old) */
    bool room = k.via == CDN_RMA_VIA_AM
                    ? kind != CDN_RMA_GET
                    : k.chunk != UINT64_MAX && !(kind == CDN_RMA_ACC && k.contig != NULL);
    if (room && (k.msg = malloc(2 * (sizeof(struct rma_hdr) + (size_t)k.chunk))) == NULL) {
        cdn_dt_segment_fini(&k.oseg);
        if (kind == CDN_RMA_GACC && k.via != CDN_RMA_VIA_AM)
            cdn_dt_segment_fini(&k.rseg);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    int rc = each_run(&k, base);
    free(k.msg);
    cdn_dt_segment_fini(&k.oseg);
    if (kind == CDN_RMA_GACC && k.via != CDN_RMA_VIA_AM)
        cdn_dt_segment_fini(&k.rseg);
    if (k.ost != NULL)
        op_answered(k.ost);  /* the walk's: every message is out */
    return rc;
}

int cdn_rma_cas(struct cdn_win *w, const void *origin, const void *compare, void *result,
                struct cdn_datatype *dt, int trank, MPI_Aint tdisp, const char *caller)
{
    /* range, rank and epoch as a get of one element; then one message */
    struct cdn_rma_args a = {.oaddr = result, .ocount = 1, .odt = dt, .trank = trank,
                             .tdisp = tdisp, .tcount = 1, .tdt = dt};
    int rc = rma_check(w, &a, caller);
    if (rc != MPI_SUCCESS || trank == MPI_PROC_NULL)
        return rc;
    size_t n = (size_t)cdn_datatype_size(dt);
    uint64_t off = (uint64_t)(tdisp * w->parts[trank].disp_unit);
    struct rma_hdr h = {.win = w->comm->context_id, .trank = (uint32_t)trank, .off = off,
                        .len = n};
    char *m = malloc(sizeof h + 2 * n);
    if (m == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    memcpy(m + sizeof h, origin, n);
    memcpy(m + sizeof h + n, compare, n);
    int via = via_for(w, trank, CDN_RMA_GACC, 0);
    count_via(via);
    if (via == CDN_RMA_VIA_MAP) {
        fetch_change(w, trank, NULL, MPI_DATATYPE_NULL, n, m + sizeof h,
                     (char *)(map_base(w, trank) + off), result);
        free(m);
        return MPI_SUCCESS;
    }
    struct get_state *g = calloc(1, sizeof *g);
    if (g == NULL) {
        free(m);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    g->w = w;
    g->trank = trank;
    cdn_dt_segment_init(&g->seg, result, 1, dt);
    g->buf = result;
    g->bytes = (MPI_Count)n;
    atomic_store_explicit(&g->left, (long long)n, memory_order_release);  /* (as above) */
    h.token = (uint64_t)(uintptr_t)g;
    memcpy(m, &h, sizeof h);
    count_out(w, trank);
    rc = cdn_am_send(NULL, cdn_comm_world_rank(w->comm, trank), CDN_AM_RMA_CAS, m,
                     sizeof h + 2 * n);
    free(m);
    return rc;
}

static bool quiet(void *arg)
{
    struct cdn_win *w = arg;
    return atomic_load_explicit(&w->rma_pending, memory_order_acquire) == 0;
}

/* Our loads and stores into mapped parts are done before whatever
 * follows (the synchronisation that makes them visible to the target). */
static void stores_done(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

void cdn_rma_quiesce(struct cdn_win *w)
{
    stores_done();
    if (!quiet(w))
        cdn_progress_wait_until(quiet, w);
}

/* ---- passive target ---- */

static bool rank_quiet(void *arg)
{
    struct cdn_win_rank *r = arg;
    return atomic_load_explicit(&r->pending, memory_order_acquire) == 0;
}

static void rank_quiesce(struct cdn_win *w, int r)
{
    stores_done();
    if (!rank_quiet(&w->rk[r]))
        cdn_progress_wait_until(rank_quiet, &w->rk[r]);
}

/* Ask rank r for its lock (or let go of it): an answer is counted. */
static int lock_msg(struct cdn_win *w, int r, unsigned id, int type)
{
    count_out(w, r);
    if (r == w->comm->rank) {
        if (id == CDN_AM_RMA_LOCK) {
            lock_request(w, -1, r, type);
        } else {
            lock_release(w, type);
            count_in(w, r, 1);
        }
        return MPI_SUCCESS;
    }
    struct rma_hdr h = {.win = w->comm->context_id, .trank = (uint32_t)r, .type = type};
    int rc = cdn_am_send(NULL, cdn_comm_world_rank(w->comm, r), id, &h, sizeof h);
    if (rc != MPI_SUCCESS)
        count_in(w, r, 1);
    return rc;
}

static int passive_check(struct cdn_win *w, const char *caller)
{
    if (w->rma_epoch == CDN_RMA_FENCE && w->fence_ops)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: a fence epoch with operations is open on the "
                       "window: close it (MPI_Win_fence with MPI_MODE_NOSUCCEED) first", caller);
    if (w->rma_epoch == CDN_RMA_LOCK_ALL)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: the window is locked by MPI_Win_lock_all", caller);
    if (w->rma_epoch == CDN_RMA_PSCW)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: an access epoch of MPI_Win_start is open on the "
                       "window", caller);
    return MPI_SUCCESS;
}

int cdn_rma_lock(struct cdn_win *w, int type, int r, int assert, const char *caller)
{
    if (type != MPI_LOCK_SHARED && type != MPI_LOCK_EXCLUSIVE)
        return cdn_err(MPI_ERR_LOCKTYPE, "%s: lock_type %d is neither MPI_LOCK_SHARED nor "
                       "MPI_LOCK_EXCLUSIVE", caller, type);
    if (r < 0 || r >= w->comm->size)
        return cdn_err(MPI_ERR_RANK, "%s: rank %d is not a rank of the window's group (size %d)",
                       caller, r, w->comm->size);
    if ((assert & ~MPI_MODE_NOCHECK) != 0)
        return cdn_err(MPI_ERR_ASSERT, "%s: assert 0x%x: a lock takes MPI_MODE_NOCHECK only",
                       caller, (unsigned)assert);
    int rc = passive_check(w, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (w->rk[r].held != 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: rank %d is locked already", caller, r);
    w->rk[r].nocheck = (assert & MPI_MODE_NOCHECK) != 0;
    if (!w->rk[r].nocheck) {
        if ((rc = lock_msg(w, r, CDN_AM_RMA_LOCK, type)) != MPI_SUCCESS)
            return rc;
        rank_quiesce(w, r);  /* granted */
    }
    w->rk[r].held = type;
    w->nlocks++;
    w->rma_epoch = CDN_RMA_LOCK;
    return MPI_SUCCESS;
}

int cdn_rma_unlock(struct cdn_win *w, int r, const char *caller)
{
    if (r < 0 || r >= w->comm->size)
        return cdn_err(MPI_ERR_RANK, "%s: rank %d is not a rank of the window's group (size %d)",
                       caller, r, w->comm->size);
    if (w->rma_epoch == CDN_RMA_LOCK_ALL || w->rk[r].held == 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: rank %d is not locked by MPI_Win_lock", caller, r);
    rank_quiesce(w, r);  /* our operations took effect there */
    if (!w->rk[r].nocheck) {
        int rc = lock_msg(w, r, CDN_AM_RMA_UNLOCK, w->rk[r].held);
        if (rc != MPI_SUCCESS)
            return rc;
        rank_quiesce(w, r);
    }
    w->rk[r].held = 0;
    if (--w->nlocks == 0)
        w->rma_epoch = CDN_RMA_NONE;
    return cdn_rma_failed(w, caller);
}

int cdn_rma_lock_all(struct cdn_win *w, int assert, const char *caller)
{
    if ((assert & ~MPI_MODE_NOCHECK) != 0)
        return cdn_err(MPI_ERR_ASSERT, "%s: assert 0x%x: a lock takes MPI_MODE_NOCHECK only",
                       caller, (unsigned)assert);
    int rc = passive_check(w, caller);
    if (rc == MPI_SUCCESS && w->nlocks > 0)
        rc = cdn_err(MPI_ERR_RMA_SYNC, "%s: ranks of the window are locked by MPI_Win_lock",
                     caller);
    if (rc != MPI_SUCCESS)
        return rc;
    bool nocheck = (assert & MPI_MODE_NOCHECK) != 0;
    for (int r = 0; r < w->comm->size; r++) {
        w->rk[r].nocheck = nocheck;
        if (!nocheck && (rc = lock_msg(w, r, CDN_AM_RMA_LOCK, MPI_LOCK_SHARED)) != MPI_SUCCESS)
            return rc;
    }
    for (int r = 0; r < w->comm->size; r++) {
        rank_quiesce(w, r);
        w->rk[r].held = MPI_LOCK_SHARED;
    }
    w->rma_epoch = CDN_RMA_LOCK_ALL;
    return MPI_SUCCESS;
}

int cdn_rma_unlock_all(struct cdn_win *w, const char *caller)
{
    if (w->rma_epoch != CDN_RMA_LOCK_ALL)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: the window is not locked by MPI_Win_lock_all",
                       caller);
    cdn_rma_quiesce(w);
    for (int r = 0; r < w->comm->size; r++) {
        if (!w->rk[r].nocheck) {
            int rc = lock_msg(w, r, CDN_AM_RMA_UNLOCK, MPI_LOCK_SHARED);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    cdn_rma_quiesce(w);
    for (int r = 0; r < w->comm->size; r++)
        w->rk[r].held = 0;
    w->rma_epoch = CDN_RMA_NONE;
    return cdn_rma_failed(w, caller);
}

int cdn_rma_flush(struct cdn_win *w, int r, const char *caller)
{
    if (r == -1) {
        if (w->rma_epoch != CDN_RMA_LOCK && w->rma_epoch != CDN_RMA_LOCK_ALL)
            return cdn_err(MPI_ERR_RMA_SYNC, "%s: no passive-target epoch is open on the "
                           "window", caller);
        cdn_rma_quiesce(w);
        return cdn_rma_failed(w, caller);
    }
    if (r < 0 || r >= w->comm->size)
        return cdn_err(MPI_ERR_RANK, "%s: rank %d is not a rank of the window's group (size %d)",
                       caller, r, w->comm->size);
    if (w->rma_epoch != CDN_RMA_LOCK_ALL && w->rk[r].held == 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: rank %d is not locked", caller, r);
    rank_quiesce(w, r);
    return cdn_rma_failed(w, caller);
}

int cdn_rma_fence_check(struct cdn_win *w, const char *caller)
{
    if (w->nlocks > 0 || w->rma_epoch == CDN_RMA_LOCK_ALL)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: a passive-target epoch is open on the window "
                       "(unlock first)", caller);
    if (w->rma_epoch == CDN_RMA_PSCW || w->exposure > 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: a PSCW epoch is open on the window (close it "
                       "with MPI_Win_complete or MPI_Win_wait first)", caller);
    return MPI_SUCCESS;
}

/* ---- PSCW ---- */

static int pscw_msg(struct cdn_win *w, int r, unsigned id)
{
    if (r == w->comm->rank) {
        if (id == CDN_AM_RMA_POST)
            atomic_fetch_add_explicit(&w->rk[r].posts, 1, memory_order_release);
        else
            atomic_fetch_add_explicit(&w->completes, 1, memory_order_release);
        return MPI_SUCCESS;
    }
    struct rma_hdr h = {.win = w->comm->context_id, .trank = (uint32_t)w->comm->rank};
    return cdn_am_send(NULL, cdn_comm_world_rank(w->comm, r), id, &h, sizeof h);
}

int cdn_rma_post(struct cdn_win *w, const int *ranks, int n, const char *caller)
{
    if (w->exposure > 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: an exposure epoch is open on the window already "
                       "(MPI_Win_wait first)", caller);
    if (w->nlocks > 0 || w->rma_epoch == CDN_RMA_LOCK_ALL)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: a passive-target epoch is open on the window",
                       caller);
    atomic_store(&w->completes, 0);
    w->exposure = n > 0 ? n : -1;  /* (-1: an empty group, open until wait) */
    for (int i = 0; i < n; i++) {
        int rc = pscw_msg(w, ranks[i], CDN_AM_RMA_POST);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

static bool posted(void *arg)
{
    return atomic_load_explicit(&((struct cdn_win_rank *)arg)->posts, memory_order_acquire) > 0;
}

int cdn_rma_start(struct cdn_win *w, const int *ranks, int n, const char *caller)
{
    int rc = passive_check(w, caller);
    if (rc == MPI_SUCCESS && w->nlocks > 0)
        rc = cdn_err(MPI_ERR_RMA_SYNC, "%s: ranks of the window are locked", caller);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < n; i++) {
        struct cdn_win_rank *r = &w->rk[ranks[i]];
        if (!posted(r))
            cdn_progress_wait_until(posted, r);
        atomic_fetch_sub_explicit(&r->posts, 1, memory_order_relaxed);
        r->access = true;
    }
    w->rma_epoch = CDN_RMA_PSCW;
    return MPI_SUCCESS;
}

int cdn_rma_complete(struct cdn_win *w, const char *caller)
{
    if (w->rma_epoch != CDN_RMA_PSCW)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: no access epoch of MPI_Win_start is open on the "
                       "window", caller);
    cdn_rma_quiesce(w);  /* every operation of the epoch took effect */
    int rc = MPI_SUCCESS;
    for (int r = 0; r < w->comm->size; r++)
        if (w->rk[r].access) {
            w->rk[r].access = false;
            if (rc == MPI_SUCCESS)
                rc = pscw_msg(w, r, CDN_AM_RMA_COMPLETE);
        }
    w->rma_epoch = CDN_RMA_NONE;
    return rc != MPI_SUCCESS ? rc : cdn_rma_failed(w, caller);
}

static bool completed(void *arg)
{
    struct cdn_win *w = arg;
    return w->exposure < 0 ||
           atomic_load_explicit(&w->completes, memory_order_acquire) >= w->exposure;
}

int cdn_rma_wait(struct cdn_win *w, int *flag, const char *caller)
{
    if (w->exposure == 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: no exposure epoch of MPI_Win_post is open on the "
                       "window", caller);
    if (flag != NULL) {
        if (!completed(w))
            cdn_progress_poll();
        *flag = completed(w);
        if (!*flag)
            return MPI_SUCCESS;
    } else if (!completed(w)) {
        cdn_progress_wait_until(completed, w);
    }
    w->exposure = 0;
    return MPI_SUCCESS;
}
