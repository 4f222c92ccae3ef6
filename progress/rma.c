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

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress/am.h"
#include "progress/engine.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/datatype_impl.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "runtime/runtime.h"
#include "runtime/win.h"

struct rma_hdr {
    uint32_t win;    /* the window's context id */
    uint32_t count;  /* ACK: messages acknowledged */
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
    free(g);
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

/* The target part's bytes [off, off + len), or NULL (a window freed or
 * never made: an erroneous program; the origin's range was checked). */
static char *target_at(struct cdn_win *w, const struct rma_hdr *h, uint64_t len)
{
    if (w == NULL || h->off > (uint64_t)w->size || len > (uint64_t)w->size - h->off)
        return NULL;
    return (char *)w->base + h->off;
}

/* inout = in op inout over len bytes of the basic type, one accumulate at
 * a time in w's part. */
static void accumulate(struct cdn_win *w, struct cdn_op *op, MPI_Datatype basic, const void *in,
                       void *inout, uint64_t len)
{
    struct cdn_datatype *dt = cdn_datatype_get(basic);
    if (dt == NULL || op == NULL || cdn_datatype_size(dt) == 0)
        return;
    pthread_mutex_lock(&w->acc_lock);
    cdn_op_reduce(op, in, inout, (MPI_Count)len / cdn_datatype_size(dt), dt);
    pthread_mutex_unlock(&w->acc_lock);
}

/* A PUT, ACC or GET from world rank peer: do it, and answer. */
static void at_target(int peer, const void *data, enum cdn_rma_kind kind)
{
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    const char *payload = (const char *)data + sizeof h;
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    char *at = target_at(w, &h, h.len);
    if (kind == CDN_RMA_GET) {
        struct rma_hdr d = {.win = h.win, .token = h.token, .pos = h.pos,
                            .len = at != NULL ? h.len : 0};
        reply(peer, CDN_AM_RMA_DATA, &d, at, (size_t)d.len);
    } else if (at != NULL && kind == CDN_RMA_PUT) {
        memcpy(at, payload, (size_t)h.len);
    } else if (at != NULL) {
        accumulate(w, cdn_op_get(h.op), h.basic, payload, at, h.len);
    }
    if (w != NULL)
        cdn_win_release(w);
    if (kind != CDN_RMA_GET) {
        struct rma_hdr a = {.win = h.win, .count = 1};
        reply(peer, CDN_AM_RMA_ACK, &a, NULL, 0);
    }
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
    struct cdn_win *w = g->w;
    memcpy(g->buf + h.pos, (const char *)data + sizeof h, (size_t)h.len);
    /* (a missing window answers with no data: count what was asked) */
    if (atomic_fetch_sub(&g->left, (long long)h.len) == (long long)h.len)
        get_done(g);
    atomic_fetch_sub_explicit(&w->rma_pending, 1, memory_order_release);
}

static void on_ack(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    (void)peer;
    (void)len;
    struct rma_hdr h;
    memcpy(&h, data, sizeof h);
    struct cdn_win *w = cdn_win_find_ctx(h.win);
    if (w == NULL)
        return;
    atomic_fetch_sub_explicit(&w->rma_pending, h.count, memory_order_release);
    cdn_win_release(w);
}

void cdn_rma_am_register(void)
{
    cdn_am_register(CDN_AM_RMA_PUT, on_put);
    cdn_am_register(CDN_AM_RMA_ACC, on_acc);
    cdn_am_register(CDN_AM_RMA_GET, on_get);
    cdn_am_register(CDN_AM_RMA_DATA, on_data);
    cdn_am_register(CDN_AM_RMA_ACK, on_ack);
}

/* One operation on its way: the runs of the target datatype, each cut to
 * the message size, against the origin's packed stream. */
struct walk {
    struct cdn_win *w;
    enum cdn_rma_kind kind;
    const struct cdn_rma_args *a;
    struct cdn_dt_segment oseg;
    int peer;                  /* the target's world rank; -1: ourselves */
    uint64_t chunk;            /* the most data bytes a message carries */
    char *msg;                 /* a message being built (header + data) */
    MPI_Count pos;             /* the packed stream's bytes done */
    struct get_state *get;
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
        struct rma_hdr h = {.win = k->w->comm->context_id, .off = off, .len = n,
                            .op = (int32_t)(k->op != NULL ? k->op->handle : 0),
                            .basic = (int32_t)k->basic};
        if (k->peer < 0) {  /* our own part: now */
            char *at = (char *)k->w->base + off;
            if (k->kind == CDN_RMA_PUT) {
                cdn_dt_pack(&k->oseg, k->pos, at, (MPI_Count)n);
            } else if (k->kind == CDN_RMA_GET) {
                cdn_dt_unpack(&k->oseg, k->pos, at, (MPI_Count)n);
            } else {
                cdn_dt_pack(&k->oseg, k->pos, k->msg, (MPI_Count)n);
                accumulate(k->w, k->op, k->basic, k->msg, at, n);
            }
        } else if (k->kind == CDN_RMA_GET) {
            h.token = (uint64_t)(uintptr_t)k->get;
            h.pos = (uint64_t)k->pos;
            atomic_fetch_add_explicit(&k->w->rma_pending, 1, memory_order_relaxed);
            int rc = cdn_am_send(NULL, k->peer, CDN_AM_RMA_GET, &h, sizeof h);
            if (rc != MPI_SUCCESS)
                return rc;
        } else {
            memcpy(k->msg, &h, sizeof h);
            cdn_dt_pack(&k->oseg, k->pos, k->msg + sizeof h, (MPI_Count)n);
            atomic_fetch_add_explicit(&k->w->rma_pending, 1, memory_order_relaxed);
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

int cdn_rma_op(struct cdn_win *w, enum cdn_rma_kind kind, const struct cdn_rma_args *a,
               const char *caller)
{
    if (w->rma_epoch == CDN_RMA_NONE)
        return cdn_err(MPI_ERR_RMA_SYNC, "%s: no access epoch is open on the window: call "
                       "MPI_Win_fence first (passive target and PSCW epochs are not "
                       "implemented yet)", caller);
    if (a->trank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (a->trank < 0 || a->trank >= w->comm->size)
        return cdn_err(MPI_ERR_RANK, "%s: target_rank %d is not a rank of the window's group "
                       "(size %d)", caller, a->trank, w->comm->size);
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return cdn_err(MPI_ERR_RMA_FLAVOR, "%s: windows of MPI_Win_create_dynamic take no "
                       "one-sided operations yet", caller);
    MPI_Count ob = a->ocount * cdn_datatype_size(a->odt);
    MPI_Count tb = a->tcount * cdn_datatype_size(a->tdt);
    if (ob != tb)
        return cdn_err(MPI_ERR_TYPE, "%s: the origin's data is %lld bytes and the target's "
                       "%lld: the type signatures differ", caller, (long long)ob, (long long)tb);
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
    struct walk k = {.w = w, .kind = kind, .a = a, .op = a->op};
    if (kind == CDN_RMA_ACC) {
        k.basic = cdn_datatype_basic(a->tdt);
        MPI_Datatype ob_basic = cdn_datatype_basic(a->odt);
        if (k.basic == MPI_DATATYPE_NULL || ob_basic != k.basic)
            return cdn_err(MPI_ERR_TYPE, "%s: an accumulate's origin and target types must be "
                           "built from one and the same predefined type", caller);
        k.basic_size = cdn_datatype_size(cdn_datatype_get(k.basic));
    }
    if (tb == 0)
        return MPI_SUCCESS;
    int self = w->comm->rank;
    k.peer = a->trank == self ? -1 : cdn_comm_world_rank(w->comm, a->trank);
    if (k.peer >= 0) {
        struct cdn_transport *tp = cdn_progress_transport_for(k.peer);
        if (tp == NULL || tp->am_max <= sizeof(struct rma_hdr) + 64)
            return cdn_err(MPI_ERR_OTHER, "%s: no transport reaches rank %d", caller, a->trank);
        k.chunk = tp->am_max - sizeof(struct rma_hdr);
    } else {
        k.chunk = 64 * 1024;
    }
    if (k.basic_size > 0)
        k.chunk -= k.chunk % (uint64_t)k.basic_size;  /* whole elements a message */
    cdn_dt_segment_init(&k.oseg, a->oaddr, a->ocount, a->odt);
    if (kind == CDN_RMA_GET && k.peer >= 0) {
        struct get_state *g = calloc(1, sizeof *g);
        if (g == NULL) {
            cdn_dt_segment_fini(&k.oseg);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        }
        g->w = w;
        g->seg = k.oseg;  /* (the get owns the segment from here) */
        g->bytes = tb;
        g->buf = cdn_dt_segment_contig(&g->seg);
        g->packed = g->buf == NULL;
        if (g->packed && (g->buf = malloc((size_t)tb)) == NULL) {
            cdn_dt_segment_fini(&g->seg);
            free(g);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for %lld bytes", caller,
                           (long long)tb);
        }
        atomic_init(&g->left, (long long)tb);
        k.get = g;
        return each_run(&k, base);
    }
    if (kind != CDN_RMA_GET &&
        (k.msg = malloc(sizeof(struct rma_hdr) + (size_t)k.chunk)) == NULL) {
        cdn_dt_segment_fini(&k.oseg);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    int rc = each_run(&k, base);
    free(k.msg);
    cdn_dt_segment_fini(&k.oseg);
    return rc;
}

static bool quiet(void *arg)
{
    struct cdn_win *w = arg;
    return atomic_load_explicit(&w->rma_pending, memory_order_acquire) == 0;
}

void cdn_rma_quiesce(struct cdn_win *w)
{
    if (!quiet(w))
        cdn_progress_wait_until(quiet, w);
}
