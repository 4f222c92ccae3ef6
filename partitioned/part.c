/*
 * Partitioned point-to-point communication in the progress engine: no
 * thread of its own, no lock on the MPI_Pready path.
 *
 * A partitioned send and its receive move their bytes as "transfers":
 * internal messages on the communicator's partitioned matching context
 * (CDN_COMM_CTX_PART), each one byte range of the message.  The plan --
 * how many transfers and where each begins -- is a function of both sides'
 * partition counts and the info keys (plan_make), so each side computes the
 * same one from the same inputs:
 *
 *   cadence_part_transfers=N     N equal transfers (Table 3's case 1, "hard
 *                                coded"): both sides know the plan at init
 *   cadence_part_transfers=send  one per send partition (cases 2 and 3,
 *                                "send-side driven"): the sender knows it
 *   cadence_part_transfers=recv  one per receive partition (case 4,
 *                                "receive-side driven")
 *   auto (default)               the union of both sides' partition
 *                                boundaries (cases 5 and 6: k per partition
 *                                on the side with fewer), then neighbours
 *                                merged up to cadence_part_min_bytes and
 *                                large ones split down to
 *                                cadence_part_max_bytes (case 7)
 *
 * Matching: MPI_Psend_init sends a HELLO on (dest, tag) of the
 * partitioned context carrying the sender's id (a number unique in the
 * sending process while the request lives), its partition count, size and
 * plan keys; MPI_Precv_init posts the receive for it.  HELLOs travel and
 * match as ordinary messages, so partitioned operations pair up in the
 * order of their init calls, as MPI requires.  The receiver answers with
 * an ACK (its partition count and the plan's keys, or what does not match)
 * on the sender's control tag.  Transfer u of sender id travels with tag
 * INT_MIN + (id << 16 | u); the control tag is the unit number 0xFFFF.
 * When the sender can plan alone (cases 1-3) it sends each transfer as
 * soon as its partitions are ready, before any ACK: no round trip is
 * waited for.  Otherwise MPI_Pready before the ACK only marks the
 * partition, and the ACK's handler sends what is ready.  Everything runs
 * in whichever thread completes the message (the progress thread, or an
 * application thread polling): the request is the parent of its internal
 * messages (child_done).
 *
 * MPI_Pready: one compare-and-swap on the partition's flag (0 -> 2, or
 * 0 -> 1 before the plan is known: the ACK's handler and a late Pready
 * race to take 1 -> 2 and exactly one counts it), then one atomic
 * decrement per transfer the partition overlaps; the thread that takes a
 * transfer's count to zero sends it (packing it first when the datatype is
 * not contiguous).  A receiver counts per receive partition the transfers
 * still to come; MPI_Parrived reads that count.
 *
 * MPIX_Pbuf_prepare: the receiver, once its instance is started (its
 * transfers posted), sends READY for that instance; the sender's call
 * returns when READY for its current instance has come.  From then on
 * every transfer of the instance finds its receive posted: none is held
 * as an unexpected copy at the receiver, and none waits there for a
 * receive (a rendezvous transfer's data moves at once).
 *
 * Sizes that differ between the sides are an error on both sides at every
 * instance; transfers the sender plans alone are then received into
 * nothing (zero-byte receives), so no sender waits for ever.
 */
#include "partitioned/part.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/info.h"

/* ---- the common part: flags, MPI_Pready, MPI_Parrived ---- */

_Atomic unsigned char *cdn_part_flags_new(int n)
{
    return calloc(n > 0 ? (size_t)n : 1, sizeof(_Atomic unsigned char));
}

void cdn_part_flags_clear(struct cdn_part *p)
{
    if (p->flags != NULL)
        memset((void *)p->flags, 0, (size_t)p->partitions);
}

int cdn_part_pready(struct cdn_request *r, int p, const char *fn)
{
    struct cdn_part *pt = cdn_part_of(r);
    if (!pt->kind->sends)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is a partitioned receive; only "
                       "the sending side marks partitions ready", fn, (unsigned)r->handle);
    if (!r->active)
        return cdn_err(MPI_ERR_REQUEST, "%s: partitioned request 0x%x is not active (start it "
                       "with MPI_Start first)", fn, (unsigned)r->handle);
    if (p < 0 || p >= pt->partitions)
        return cdn_err(MPI_ERR_ARG, "%s: partition %d is not in 0..%d", fn, p,
                       pt->partitions - 1);
    unsigned char zero = 0;
    if (!atomic_compare_exchange_strong(&pt->flags[p], &zero, 1))
        return cdn_err(MPI_ERR_ARG, "%s: partition %d of request 0x%x was already marked ready "
                       "in this instance", fn, p, (unsigned)r->handle);
    pt->kind->ready(r, p);
    return MPI_SUCCESS;
}

int cdn_part_parrived(struct cdn_request *r, int p, int *flag, const char *fn)
{
    struct cdn_part *pt = cdn_part_of(r);
    if (!pt->kind->receives)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is a partitioned send; only a "
                       "receiving side has partitions that arrive", fn, (unsigned)r->handle);
    if (p < 0 || p >= pt->partitions)
        return cdn_err(MPI_ERR_ARG, "%s: partition %d is not in 0..%d", fn, p,
                       pt->partitions - 1);
    if (!r->active || cdn_request_done(r)) {  /* inactive: true (MPI-4.1 4.2.2) */
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (pt->kind->arrived(r, p)) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    cdn_progress_poll_ctx(r->pctx);  /* a test: it makes progress */
    *flag = pt->kind->arrived(r, p) || cdn_request_done(r);
    return MPI_SUCCESS;
}

int cdn_part_prepare(struct cdn_request *r, const char *fn)
{
    struct cdn_part *pt = cdn_part_of(r);
    if (!r->active)
        return cdn_err(MPI_ERR_REQUEST, "%s: partitioned request 0x%x is not active (start it "
                       "with MPI_Start first)", fn, (unsigned)r->handle);
    return pt->kind->prepare != NULL ? pt->kind->prepare(r) : MPI_SUCCESS;
}

bool cdn_part_waits_late(const struct cdn_request *r)
{
    const struct cdn_part *pt = cdn_part_of(r);
    return pt->kind->waits_late != NULL && pt->kind->waits_late(r);
}

int cdn_part_user_free(struct cdn_request *r, const char *fn)
{
    if (r->active)
        return cdn_err(MPI_ERR_REQUEST, "%s: partitioned request 0x%x is active (complete it "
                       "with MPI_Wait or MPI_Test before freeing it)", fn, (unsigned)r->handle);
    struct cdn_part *pt = cdn_part_of(r);
    if (pt->kind->user_free != NULL)
        pt->kind->user_free(r);
    return MPI_SUCCESS;
}

/* ---- ids: the sender's number, part of every tag of its transfers ---- */

#define ID_MAX 32767   /* ids 0..32766: INT_MIN + (id << 16 | 0xffff) stays below -1 */
#define UNITS_MAX 0xffff  /* transfers 0..65534 */
#define CTL_UNIT 0xffff

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t id_used[(ID_MAX + 63) / 64];
static int id_next;
static atomic_ullong cookie_seq;

/* Ids are handed out round the ring, so a freed one is not reused soon. */
static int id_take(void)
{
    int id = -1;
    pthread_mutex_lock(&id_lock);
    for (int k = 0; k < ID_MAX && id < 0; k++) {
        int i = (id_next + k) % ID_MAX;
        if (!(id_used[i / 64] & (1ull << (i % 64)))) {
            id_used[i / 64] |= 1ull << (i % 64);
            id = i;
            id_next = (i + 1) % ID_MAX;
        }
    }
    pthread_mutex_unlock(&id_lock);
    return id;
}

static void id_give(int id)
{
    pthread_mutex_lock(&id_lock);
    id_used[id / 64] &= ~(1ull << (id % 64));
    pthread_mutex_unlock(&id_lock);
}

static inline int part_tag(int id, int unit)
{
    return INT_MIN + (int)(((unsigned)id << 16) | (unsigned)unit);
}

/* ---- the plan ---- */

enum policy { POL_AUTO, POL_SEND, POL_RECV, POL_FIXED };
static const char *const policy_name[] = {"auto", "send", "recv", "a fixed count"};

struct plan_in {
    int policy;
    int send_parts, recv_parts;
    int64_t bytes, fixed, min, max;
};

/* Boundaries: off[0] = 0 < off[1] < ... < off[k] = bytes.  False when out
 * of memory or when a plan that is not auto needs more transfers than a
 * tag can number. */
static bool plan_make(const struct plan_in *in, int64_t **offp, int *kp)
{
    int64_t b = in->bytes;
    int64_t *off = NULL;
    int k = 0;
    if (b == 0) {
        off = calloc(1, sizeof *off);
        *offp = off;
        *kp = 0;
        return off != NULL;
    }
    if (in->policy != POL_AUTO) {
        int64_t n = in->policy == POL_SEND ? in->send_parts
                    : in->policy == POL_RECV ? in->recv_parts : in->fixed;
        if (n > b)
            n = b;
        if (n < 1 || n >= UNITS_MAX)
            return false;
        off = malloc((size_t)(n + 1) * sizeof *off);
        if (off == NULL)
            return false;
        for (int64_t i = 0; i <= n; i++)
            off[i] = (int64_t)((__int128)b * i / n);
        *offp = off;
        *kp = (int)n;
        return true;
    }
    int64_t min = in->min, max = in->max;
    for (;;) {
        /* The union of both sides' boundaries, walked in order. */
        int64_t ps = b / in->send_parts, pr = b / in->recv_parts;
        int64_t cap = 64;
        off = malloc((size_t)cap * sizeof *off);
        if (off == NULL)
            return false;
        off[0] = 0;
        k = 0;
        int64_t i = 1, j = 1;
        while (off[k] < b) {
            int64_t next = b;
            for (;;) {  /* the next boundary at least min past the unit's start */
                int64_t bs = i < in->send_parts ? i * ps : b;
                int64_t br = j < in->recv_parts ? j * pr : b;
                next = bs < br ? bs : br;
                if (bs == next)
                    i++;
                if (br == next)
                    j++;
                if (next - off[k] >= min || next == b)
                    break;
            }
            int64_t len = next - off[k], pieces = 1;
            if (max > 0 && len > max)
                pieces = (len + max - 1) / max;
            if (k + pieces + 1 >= cap) {
                while (k + pieces + 1 >= cap)
                    cap *= 2;
                int64_t *more = realloc(off, (size_t)cap * sizeof *off);
                if (more == NULL) {
                    free(off);
                    return false;
                }
                off = more;
            }
            int64_t start = off[k];
            for (int64_t q = 1; q <= pieces; q++)
                off[++k] = start + (int64_t)((__int128)len * q / pieces);
        }
        /* A short last transfer joins the one before. */
        if (k >= 2 && off[k] - off[k - 1] < min &&
            (max <= 0 || off[k] - off[k - 2] <= max)) {
            off[k - 1] = off[k];
            k--;
        }
        if (k < UNITS_MAX) {
            *offp = off;
            *kp = k;
            return true;
        }
        free(off);  /* too many: coarser, deterministically on both sides */
        min = min > 0 ? min * 2 : 1;
        if (max > 0 && max < b / (UNITS_MAX / 2))
            max *= 2;
    }
}

/* The transfer holding byte x (off sorted, x < off[k]). */
static int unit_of(const int64_t *off, int k, int64_t x)
{
    int lo = 0, hi = k - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (off[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* ---- messages of the protocol ---- */

#define HELLO_MAGIC 0x43505431  /* "CPT1" */

struct hello {
    uint64_t cookie;     /* echoed in every control message for this pair */
    int32_t magic, id;
    int32_t partitions, policy;
    int64_t bytes, fixed, min, max;
    int32_t min_set, max_set;
};

enum ctl_type { CTL_ACK = 1, CTL_READY };
enum mismatch { MM_NONE, MM_SIZE, MM_POLICY, MM_PLAN };

struct ctl {
    uint64_t cookie;
    int32_t type, mismatch;
    int32_t partitions, policy;  /* ACK: the receiver's count and the plan's keys */
    int64_t bytes, fixed, min, max;
    int64_t epoch;               /* READY: the receiver's instance */
};

/* Child slots (the parent's child_done); transfers are 0.. */
enum { SLOT_HELLO = -1, SLOT_CTL = -2, SLOT_ACK = -3, SLOT_READY = -4 };

struct pp {
    struct cdn_part base;        /* first: cdn_part_of */
    struct cdn_request *req;
    bool sender, null_peer;
    struct cdn_comm *comm;
    int peer, tag;
    uint32_t ctx;
    struct cdn_dt_segment seg;   /* the whole buffer: partitions * count elements */
    char *data;                  /* the packed stream: the user's buffer when contiguous,
                                  * else the stage */
    bool staged;
    int64_t bytes, pbytes;       /* the whole message, one partition of this side */
    /* this side's info keys */
    int policy;
    int64_t fixed, min, max;
    bool min_set, max_set;
    int id;                      /* the sender's id (the receiver learns it from HELLO) */
    uint64_t cookie;
    /* the plan, fixed once agreed is set */
    atomic_bool agreed;
    int nunits;
    int64_t *off;
    int *ulo, *uhi;              /* sender: partition p spans transfers ulo[p]..uhi[p] */
    int *unit_need;              /* sender: partitions a transfer spans */
    atomic_int *unit_left;       /* ... not yet ready in this instance */
    int *part_need;              /* receiver: transfers a partition spans */
    atomic_int *part_left;       /* ... not yet arrived in this instance */
    struct cdn_request **units;
    bool discard;                /* receiver: the sides do not match; transfers dropped */
    /* control */
    struct hello hello;
    struct ctl ctl_in, ack, ready;
    struct cdn_request *hello_req, *ctl_req, *ack_req, *ready_req;
    pthread_mutex_t lock;        /* agreement against start; never on the Pready path */
    atomic_bool acked;           /* sender: the ACK came */
    bool token;                  /* the instance waits for the ACK (sender) or the HELLO
                                  * (receiver) */
    int agree_err;               /* the agreement's error, reported by every instance */
    int64_t epoch;               /* instances started */
    int64_t prepared;            /* receiver: the instance READY was sent for */
    atomic_llong ready_epoch;    /* sender: the receiver is ready for this instance */
    atomic_int left;             /* events before the instance completes */
    atomic_int err;              /* its first error */
    atomic_bool freed;
    atomic_long early;           /* sender: transfers sent before the ACK came (tests) */
};

static struct pp *pp_of(const struct cdn_request *r)
{
    return (struct pp *)(void *)cdn_part_of(r);
}

static void record(struct pp *s, int e)
{
    int none = MPI_SUCCESS;
    if (e != MPI_SUCCESS)
        atomic_compare_exchange_strong(&s->err, &none, e);
}

/* n events of the instance happened (e: an error among them). */
static void epoch_sub(struct pp *s, int n, int e)
{
    record(s, e);
    if (atomic_fetch_sub_explicit(&s->left, n, memory_order_acq_rel) == n)
        cdn_request_event(s->req);
}

static void pp_complete(struct cdn_request *r)
{
    struct pp *s = pp_of(r);
    r->status.MPI_ERROR = atomic_load(&s->err);
    if (!s->sender) {
        r->status.MPI_SOURCE = s->null_peer ? MPI_PROC_NULL : s->peer;
        r->status.MPI_TAG = s->null_peer ? MPI_ANY_TAG : s->tag;
        cdn_status_set_bytes(&r->status, s->null_peer || r->status.MPI_ERROR != MPI_SUCCESS
                                             ? 0 : (MPI_Count)s->bytes);
    }
}

/* Start child c of the request (it holds a reference on the request until
 * its child_done).  The control messages' children only: a transfer
 * needs none, its instance (and so the request's engine reference) lasting
 * until after its child_done, which touches nothing once it has counted. */
static void child_start(struct pp *s, struct cdn_request *c)
{
    cdn_request_retain(s->req);
    c->ops->start(c);
}

static inline void unit_start(struct cdn_request *c)
{
    c->ops->start(c);
}

static int mismatch_err(const struct pp *s, int mm, int64_t their_bytes, int their_parts,
                        int their_policy)
{
    const char *side = s->sender ? "send" : "receive";
    const char *other = s->sender ? "receive" : "send";
    switch (mm) {
    case MM_SIZE:
        return cdn_err(MPI_ERR_TRUNCATE, "partitioned %s (rank %d, tag %d): %lld bytes in %d "
                       "partitions here, but the matching partitioned %s has %lld bytes in %d "
                       "partitions; the sizes must be equal", side, s->peer, s->tag,
                       (long long)s->bytes, s->base.partitions, other, (long long)their_bytes,
                       their_parts);
    case MM_POLICY:
        return cdn_err(MPI_ERR_INFO_VALUE, "partitioned %s (rank %d, tag %d): info "
                       "cadence_part_transfers asks for %s here and %s on the matching %s",
                       side, s->peer, s->tag, policy_name[s->policy],
                       their_policy >= 0 && their_policy <= POL_FIXED ? policy_name[their_policy]
                                                                       : "?", other);
    default:
        return cdn_err(MPI_ERR_NO_MEM, "partitioned %s (rank %d, tag %d): no plan of transfers "
                       "could be made for %lld bytes (out of memory, or more than %d transfers "
                       "asked for)", side, s->peer, s->tag, (long long)s->bytes, UNITS_MAX - 1);
    }
}

/* ---- making the transfers ---- */

static int make_units_in(struct pp *s, const struct plan_in *in)
{
    if (!plan_make(in, &s->off, &s->nunits))
        return -1;
    int k = s->nunits;
    s->units = calloc(k > 0 ? (size_t)k : 1, sizeof *s->units);
    if (s->units == NULL)
        return -1;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    for (int u = 0; u < k; u++) {
        int64_t len = s->off[u + 1] - s->off[u];
        int tag = part_tag(s->id, u);
        int rc;
        if (s->sender)
            rc = cdn_p2p_send_init_ctx(s->data + s->off[u], len, byte, s->peer, tag, s->comm,
                                       s->ctx, &s->units[u]);
        else if (s->discard)
            rc = cdn_p2p_recv_init_ctx(NULL, 0, byte, s->peer, tag, s->comm, s->ctx,
                                       &s->units[u]);
        else
            rc = cdn_p2p_recv_init_ctx(s->data + s->off[u], len, byte, s->peer, tag, s->comm,
                                       s->ctx, &s->units[u]);
        if (rc != MPI_SUCCESS)
            return -1;
        s->units[u]->parent = s->req;
        s->units[u]->parent_slot = u;
        /* the transfer's receive is never urgent (below): the send is lazy */
        s->units[u]->u.p2p.lazy_ok = s->sender;
        if (!s->sender) {
            /* Only the application waits for a transfer (MPI_Parrived, a
             * wait): like a user's receive it asks nobody to ring for its
             * data, and one that comes eagerly raises no want at all (as a
             * blocking receive's: request.h, waited) -- a rendezvous one
             * still rings for its RTS, so its data moves while the
             * application computes. */
            s->units[u]->u.p2p.urgent = false;
            s->units[u]->u.p2p.waited = cdn_progress_comes_eagerly(len);
            /* Its sender's threads are likely computing the next
             * partitions: the receiver moves a rendezvous transfer's data
             * alone (transport.h). */
            s->units[u]->u.p2p.x.alone = true;
        }
    }
    if (s->sender) {
        int m = s->base.partitions;
        s->ulo = malloc((size_t)(m > 0 ? m : 1) * sizeof *s->ulo);
        s->uhi = malloc((size_t)(m > 0 ? m : 1) * sizeof *s->uhi);
        s->unit_need = calloc(k > 0 ? (size_t)k : 1, sizeof *s->unit_need);
        s->unit_left = calloc(k > 0 ? (size_t)k : 1, sizeof *s->unit_left);
        if (s->ulo == NULL || s->uhi == NULL || s->unit_need == NULL || s->unit_left == NULL)
            return -1;
        for (int p = 0; p < m; p++) {
            if (s->pbytes == 0 || k == 0) {
                s->ulo[p] = 0;
                s->uhi[p] = -1;
                continue;
            }
            s->ulo[p] = unit_of(s->off, k, p * s->pbytes);
            s->uhi[p] = unit_of(s->off, k, (p + 1) * s->pbytes - 1);
            for (int u = s->ulo[p]; u <= s->uhi[p]; u++)
                s->unit_need[u]++;
        }
    } else if (!s->discard) {
        int n = s->base.partitions;
        s->part_need = calloc(n > 0 ? (size_t)n : 1, sizeof *s->part_need);
        s->part_left = calloc(n > 0 ? (size_t)n : 1, sizeof *s->part_left);
        if (s->part_need == NULL || s->part_left == NULL)
            return -1;
        for (int q = 0; q < n && s->pbytes > 0 && k > 0; q++)
            s->part_need[q] = unit_of(s->off, k, (q + 1) * s->pbytes - 1) -
                              unit_of(s->off, k, q * s->pbytes) + 1;
    }
    return 0;
}

/* The plan and the transfers of in; on failure nothing of them is left
 * (nunits 0). */
static int make_units(struct pp *s, const struct plan_in *in)
{
    if (make_units_in(s, in) == 0)
        return 0;
    for (int u = 0; s->units != NULL && u < s->nunits; u++)
        if (s->units[u] != NULL) {
            s->units[u]->parent = NULL;
            cdn_request_release(s->units[u]);
        }
    free(s->units);
    free(s->off);
    free(s->ulo);
    free(s->uhi);
    free(s->unit_need);
    free(s->unit_left);
    free(s->part_need);
    free(s->part_left);
    s->units = NULL;
    s->off = NULL;
    s->ulo = s->uhi = s->unit_need = s->part_need = NULL;
    s->unit_left = s->part_left = NULL;
    s->nunits = 0;
    return -1;
}

/* The sender's transfer u has every partition ready: send it. */
static void send_unit(struct pp *s, int u)
{
    struct cdn_request *c = s->units[u];
    int64_t len = s->off[u + 1] - s->off[u];
    if (s->staged)
        cdn_dt_pack(&s->seg, s->off[u], s->data + s->off[u], len);
    if (!atomic_load(&s->acked))
        atomic_fetch_add_explicit(&s->early, 1, memory_order_relaxed);
    if (cdn_p2p_send_now_of(c)) {  /* small: gone at once, no request event */
        epoch_sub(s, 1, MPI_SUCCESS);
        return;
    }
    unit_start(c);
}

/* Partition p counts towards its transfers (its flag went to 2). */
static void count_ready(struct pp *s, int p)
{
    if (s->nunits == 0)
        return;  /* no plan (the sides did not agree), or nothing to send */
    for (int u = s->ulo[p]; u <= s->uhi[p]; u++)
        if (s->unit_need[u] == 1 ||  /* this partition's alone: no count to take */
            atomic_fetch_sub_explicit(&s->unit_left[u], 1, memory_order_acq_rel) == 1)
            send_unit(s, u);
}

static void send_ready(struct cdn_request *r, int p)
{
    struct pp *s = pp_of(r);
    if (s->null_peer)
        return;
    if (atomic_load(&s->acked)) {  /* settled: no ACK handler can race for the flag */
        atomic_store_explicit(&s->base.flags[p], 2, memory_order_relaxed);
        count_ready(s, p);
        return;
    }
    if (!atomic_load(&s->agreed))
        return;  /* flag 1: the ACK's handler counts it (or the check below) */
    unsigned char one = 1;
    if (atomic_compare_exchange_strong(&s->base.flags[p], &one, 2))
        count_ready(s, p);
}

/* ---- the sender's control messages ---- */

/* Under s->lock: the plan became known (or failed: err) -- the instance
 * waiting for the ACK now waits for the transfers instead. */
static bool agree_locked(struct pp *s, int err)
{
    s->agree_err = err;
    bool tok = s->token;
    s->token = false;
    if (tok && s->nunits > 0) {
        for (int u = 0; u < s->nunits; u++)
            atomic_store(&s->unit_left[u], s->unit_need[u]);
        atomic_fetch_add(&s->left, s->nunits);
    }
    atomic_store(&s->agreed, true);  /* after the counts: a Pready that sees it uses them */
    atomic_store(&s->acked, true);   /* last: a start that sees it takes no lock (pp_start) */
    return tok;
}

static void on_ack(struct pp *s, const struct ctl *m)
{
    int err = MPI_SUCCESS;
    if (m->mismatch != MM_NONE)
        err = mismatch_err(s, m->mismatch, m->bytes, m->partitions, m->policy);
    pthread_mutex_lock(&s->lock);
    if (atomic_load(&s->acked)) {  /* a second ACK cannot come; ignore */
        pthread_mutex_unlock(&s->lock);
        return;
    }
    bool planned = atomic_load(&s->agreed);  /* the sender planned alone at init */
    if (!planned && err == MPI_SUCCESS) {
        struct plan_in in = {.policy = m->policy, .send_parts = s->base.partitions,
                             .recv_parts = m->partitions, .bytes = s->bytes,
                             .fixed = m->fixed, .min = m->min, .max = m->max};
        if (make_units(s, &in) != 0)
            err = mismatch_err(s, MM_PLAN, 0, 0, 0);
    }
    if (err != MPI_SUCCESS && !planned)
        s->nunits = 0;  /* nothing will be sent: the instance ends with the error */
    bool tok;
    if (planned) {
        s->agree_err = err;
        tok = s->token;
        s->token = false;
        atomic_store(&s->acked, true);  /* last: see pp_start */
    } else {
        tok = agree_locked(s, err);
    }
    pthread_mutex_unlock(&s->lock);
    /* Partitions marked before the plan was known (flag 1) count now. */
    if (!planned && s->nunits > 0)
        for (int p = 0; p < s->base.partitions; p++) {
            unsigned char one = 1;
            if (atomic_compare_exchange_strong(&s->base.flags[p], &one, 2))
                count_ready(s, p);
        }
    if (tok)
        epoch_sub(s, 1, err);
}

static void on_ctl(struct pp *s, int e)
{
    if (e != MPI_SUCCESS) {  /* the receive failed (the peer is gone, or cancelled) */
        if (atomic_load(&s->freed))
            return;
        pthread_mutex_lock(&s->lock);
        bool tok = false;
        if (!atomic_load(&s->acked)) {
            if (!atomic_load(&s->agreed))
                s->nunits = 0;
            tok = agree_locked(s, e);
        }
        pthread_mutex_unlock(&s->lock);
        if (tok)
            epoch_sub(s, 1, e);
        cdn_progress_signal();
        return;
    }
    struct ctl m = s->ctl_in;
    /* Until the ACK, its arrival is acted on at once (an urgent receive:
     * the plan may wait for it).  After it only READY comes, which
     * MPIX_Pbuf_prepare polls for: a receive posted for the request's life
     * must not keep every peer ringing this process for every message. */
    if (atomic_load(&s->acked) || (m.cookie == s->cookie && m.type == CTL_ACK)) {
        s->ctl_req->u.p2p.urgent = false;
        s->ctl_req->u.p2p.waited = true;
    }
    if (!atomic_load(&s->freed))
        child_start(s, s->ctl_req);  /* the next control message */
    if (m.cookie != s->cookie)
        return;  /* for an earlier request with this id */
    if (m.type == CTL_ACK) {
        on_ack(s, &m);
    } else if (m.type == CTL_READY) {
        atomic_store(&s->ready_epoch, m.epoch);
        cdn_progress_signal();
    }
}

/* ---- the receiver's side of the agreement ---- */

static void on_hello(struct pp *s, int e)
{
    const struct hello *h = &s->hello;
    int err = e, mm = MM_NONE;
    struct plan_in in = {0};
    if (err == MPI_SUCCESS && h->magic != HELLO_MAGIC)
        err = cdn_err(MPI_ERR_INTERN, "partitioned receive (rank %d, tag %d): the matching "
                      "send's first message is not a partitioned HELLO", s->peer, s->tag);
    if (err == MPI_SUCCESS) {
        s->id = h->id;
        int policy = h->policy;
        if (policy == POL_AUTO)
            policy = s->policy;
        else if (s->policy != POL_AUTO &&
                 (s->policy != h->policy || (policy == POL_FIXED && s->fixed != h->fixed)))
            mm = MM_POLICY;
        in = (struct plan_in){.policy = policy, .send_parts = h->partitions,
                              .recv_parts = s->base.partitions, .bytes = h->bytes,
                              .fixed = h->policy == POL_FIXED ? h->fixed : s->fixed,
                              .min = s->min_set || !h->min_set ? s->min : h->min,
                              .max = s->max_set || !h->max_set ? s->max : h->max};
        if (mm == MM_NONE && h->bytes != s->bytes)
            mm = MM_SIZE;
        if (mm != MM_NONE) {
            err = mismatch_err(s, mm, h->bytes, h->partitions, h->policy);
            /* What the sender planned alone it sends anyway: drop it here. */
            s->discard = h->policy == POL_SEND || h->policy == POL_FIXED;
            in.policy = h->policy;
            in.recv_parts = s->base.partitions > 0 ? s->base.partitions : 1;
        }
        if (mm == MM_NONE || s->discard) {
            if (make_units(s, &in) != 0) {
                mm = MM_PLAN;
                err = mismatch_err(s, mm, 0, 0, 0);
                s->nunits = 0;
                s->discard = false;
            }
        }
        s->ack = (struct ctl){.cookie = h->cookie, .type = CTL_ACK, .mismatch = mm,
                              .partitions = s->base.partitions, .policy = in.policy,
                              .bytes = s->bytes, .fixed = in.fixed, .min = in.min,
                              .max = in.max};
        struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
        if (cdn_p2p_send_init_ctx(&s->ack, sizeof s->ack, byte, s->peer,
                                  part_tag(s->id, CTL_UNIT), s->comm, s->ctx,
                                  &s->ack_req) == MPI_SUCCESS) {
            s->ack_req->parent = s->req;
            s->ack_req->parent_slot = SLOT_ACK;
            child_start(s, s->ack_req);
        } else {
            err = mismatch_err(s, MM_PLAN, 0, 0, 0);
        }
    }
    pthread_mutex_lock(&s->lock);
    s->agree_err = err;
    if (err != MPI_SUCCESS && !s->discard)
        s->nunits = 0;
    bool tok = s->token;
    s->token = false;
    if (tok && s->nunits > 0) {
        if (s->part_left != NULL)
            for (int q = 0; q < s->base.partitions; q++)
                atomic_store(&s->part_left[q], s->part_need[q]);
        atomic_fetch_add(&s->left, s->nunits);
        for (int u = 0; u < s->nunits; u++)
            unit_start(s->units[u]);
    }
    /* last: MPI_Parrived reads the counts once it sees it, and a start that
     * sees it takes no lock (pp_start) */
    atomic_store(&s->agreed, true);
    pthread_mutex_unlock(&s->lock);
    if (tok)
        epoch_sub(s, 1, err);
    cdn_progress_signal();
}

/* Receiver: transfer u completed. */
static void unit_arrived(struct pp *s, int u, int e)
{
    if (!s->discard && e == MPI_SUCCESS) {
        int64_t a = s->off[u], b = s->off[u + 1];
        if (s->staged)
            cdn_dt_unpack(&s->seg, a, s->data + a, b - a);
        for (int64_t q = a / s->pbytes; q <= (b - 1) / s->pbytes; q++)
            atomic_fetch_sub_explicit(&s->part_left[q], 1, memory_order_release);
    }
    epoch_sub(s, 1, s->discard ? MPI_SUCCESS : e);
}

static void pp_child_done(struct cdn_request *r, int slot)
{
    struct pp *s = pp_of(r);
    struct cdn_request *c = slot >= 0 ? s->units[slot]
                            : slot == SLOT_HELLO ? s->hello_req
                            : slot == SLOT_CTL ? s->ctl_req
                            : slot == SLOT_ACK ? s->ack_req : s->ready_req;
    int e = c->status.MPI_ERROR;
    if (atomic_load(&c->cancelled))
        e = MPI_ERR_REQUEST;
    if (slot >= 0) {  /* a transfer: its count may end the instance, then nothing more */
        if (s->sender)
            epoch_sub(s, 1, e);
        else
            unit_arrived(s, slot, e);
        return;
    }
    if (slot == SLOT_HELLO) {
        if (!s->sender)
            on_hello(s, e);
        else if (e != MPI_SUCCESS)
            on_ctl(s, e);  /* the HELLO could not go: as a failed ACK */
    } else if (slot == SLOT_CTL) {
        on_ctl(s, e);
    } else if (slot == SLOT_READY) {
        epoch_sub(s, 1, e);
    }
    cdn_request_release(r);  /* child_start's reference */
}

/* ---- starting, preparing, freeing ---- */

static int pp_start(struct cdn_request *r)
{
    struct pp *s = pp_of(r);
    cdn_status_empty(&r->status);
    cdn_part_flags_clear(&s->base);
    if (s->null_peer) {
        atomic_store(&s->err, MPI_SUCCESS);
        cdn_request_arm(r, 1);
        cdn_request_event(r);
        return MPI_SUCCESS;
    }
    /* Once the agreement is over (the sender has its ACK, the receiver its
     * HELLO: the flags are stored last in their handlers' critical
     * sections) nothing but the application's own calls touches what a
     * start sets: no lock, and no event of the start's own (plain stores:
     * the arm's release publishes them, and a transfer is started or
     * posted only after them). */
    bool settled = atomic_load(&s->agreed) && (!s->sender || atomic_load(&s->acked));
    if (!settled)
        pthread_mutex_lock(&s->lock);
    s->epoch++;
    atomic_store_explicit(&s->err, MPI_SUCCESS, memory_order_relaxed);
    bool agreed = atomic_load(&s->agreed);
    bool waits = s->sender ? !atomic_load(&s->acked) : !agreed;
    if (agreed && s->sender)
        for (int u = 0; u < s->nunits; u++)
            if (s->unit_need[u] > 1)  /* (a transfer of one partition keeps no count) */
                atomic_store_explicit(&s->unit_left[u], s->unit_need[u], memory_order_relaxed);
    if (agreed && !s->sender && s->part_left != NULL)
        for (int q = 0; q < s->base.partitions; q++)
            atomic_store_explicit(&s->part_left[q], s->part_need[q], memory_order_relaxed);
    if (agreed && !waits)
        record(s, s->agree_err);
    s->token = waits;
    int token = settled ? 0 : 1;  /* the start's own event, while a handler may run */
    int left = token + (agreed ? s->nunits : 0) + (waits ? 1 : 0);
    atomic_store_explicit(&s->left, left, memory_order_relaxed);
    cdn_request_arm(r, 1);
    if (left == 0) {  /* settled, nothing to move */
        cdn_request_event(r);
        return MPI_SUCCESS;
    }
    if (agreed && !s->sender)
        for (int u = 0; u < s->nunits; u++)
            unit_start(s->units[u]);
    if (!settled) {
        pthread_mutex_unlock(&s->lock);
        epoch_sub(s, 1, MPI_SUCCESS);
    }
    return MPI_SUCCESS;
}

static bool agreed_cond(void *arg)
{
    return atomic_load(&((struct pp *)arg)->agreed);
}

static bool ready_cond(void *arg)
{
    struct pp *s = arg;
    return atomic_load(&s->ready_epoch) >= s->epoch ||
           (atomic_load(&s->acked) && s->agree_err != MPI_SUCCESS);
}

static int pp_prepare(struct cdn_request *r)
{
    struct pp *s = pp_of(r);
    if (s->null_peer)
        return MPI_SUCCESS;
    if (s->sender) {
        cdn_progress_wait_until(ready_cond, s);
        if (atomic_load(&s->ready_epoch) < s->epoch)
            return s->agree_err;
        return MPI_SUCCESS;
    }
    cdn_progress_wait_until(agreed_cond, s);
    pthread_mutex_lock(&s->lock);
    int rc = MPI_SUCCESS;
    if (s->prepared == s->epoch)
        rc = cdn_err(MPI_ERR_REQUEST, "MPIX_Pbuf_prepare: partitioned receive 0x%x was already "
                     "prepared in this instance", (unsigned)r->handle);
    else if (s->agree_err != MPI_SUCCESS)
        rc = s->agree_err;
    if (rc == MPI_SUCCESS && s->ready_req == NULL) {
        rc = cdn_p2p_send_init_ctx(&s->ready, sizeof s->ready, cdn_datatype_get(MPI_BYTE),
                                   s->peer, part_tag(s->id, CTL_UNIT), s->comm, s->ctx,
                                   &s->ready_req);
        if (rc == MPI_SUCCESS) {
            s->ready_req->parent = r;
            s->ready_req->parent_slot = SLOT_READY;
        }
    }
    if (rc == MPI_SUCCESS) {
        s->prepared = s->epoch;
        s->ready = (struct ctl){.cookie = s->hello.cookie, .type = CTL_READY, .epoch = s->epoch};
        atomic_fetch_add(&s->left, 1);  /* the instance waits for READY to leave */
    }
    pthread_mutex_unlock(&s->lock);
    if (rc == MPI_SUCCESS)
        child_start(s, s->ready_req);
    return rc;
}

static void cancel_posted(struct cdn_request *c)
{
    if (c != NULL && !cdn_request_done(c))
        c->ops->cancel(c);
}

static void pp_user_free(struct cdn_request *r)
{
    struct pp *s = pp_of(r);
    atomic_store(&s->freed, true);
    if (s->sender)
        cancel_posted(s->ctl_req);
    else if (!atomic_load(&s->agreed))
        cancel_posted(s->hello_req);
}

static void release_child(struct cdn_request *c)
{
    if (c != NULL) {
        c->parent = NULL;
        cdn_request_release(c);
    }
}

static void pp_free(struct cdn_request *r)
{
    struct pp *s = pp_of(r);
    if (s == NULL)
        return;
    for (int u = 0; s->units != NULL && u < s->nunits; u++)
        release_child(s->units[u]);
    /* (a plan that failed half made may have children past nunits) */
    release_child(s->hello_req);
    release_child(s->ctl_req);
    release_child(s->ack_req);
    release_child(s->ready_req);
    free(s->units);
    free(s->off);
    free(s->ulo);
    free(s->uhi);
    free(s->unit_need);
    free(s->unit_left);
    free(s->part_need);
    free(s->part_left);
    free((void *)s->base.flags);
    if (s->staged)
        free(s->data);
    cdn_dt_segment_fini(&s->seg);
    if (s->sender && s->id >= 0)
        id_give(s->id);
    pthread_mutex_destroy(&s->lock);
    free(s);
    memset(r->u.room, 0, sizeof(void *));
}

static const struct cdn_request_ops pp_ops = {
    .name = "partitioned", .start = pp_start, .complete = pp_complete, .free = pp_free,
    .child_done = pp_child_done,
};

static const struct cdn_part_kind send_kind = {
    .name = "partitioned send", .sends = true, .ready = send_ready, .prepare = pp_prepare,
    .user_free = pp_user_free,
};

static bool recv_arrived(struct cdn_request *r, int q)
{
    struct pp *s = pp_of(r);
    if (s->null_peer)
        return true;
    if (!atomic_load(&s->agreed) || s->discard || s->part_left == NULL)
        return false;
    return atomic_load_explicit(&s->part_left[q], memory_order_acquire) == 0;
}

static const struct cdn_part_kind recv_kind = {
    .name = "partitioned receive", .receives = true, .arrived = recv_arrived,
    .prepare = pp_prepare, .user_free = pp_user_free,
};

int cdn_part_transfers(const struct cdn_request *r, long *early)
{
    const struct pp *s = pp_of(r);
    if (s->base.kind != &send_kind && s->base.kind != &recv_kind)
        return -1;
    if (early != NULL)
        *early = atomic_load(&s->early);
    return atomic_load(&s->agreed) ? s->nunits : -1;
}

/* ---- init ---- */

static int64_t min_default(void)
{
    static atomic_llong v = -1;
    long long m = atomic_load(&v);
    if (m < 0) {
        m = cdn_param_long("CADENCE_PART_MIN_BYTES", 4096, 0, LONG_MAX);
        atomic_store(&v, m);
    }
    return m;
}

static int info_number(struct cdn_info *info, const char *key, int64_t lo, int64_t *out,
                       bool *set, const char *fn)
{
    char v[64];
    if (info == NULL || !cdn_info_lookup(info, key, v, sizeof v, NULL))
        return MPI_SUCCESS;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || n < lo)
        return cdn_err(MPI_ERR_INFO_VALUE, "%s: info %s=\"%s\" is not a number >= %lld", fn,
                       key, v, (long long)lo);
    *out = n;
    if (set != NULL)
        *set = true;
    return MPI_SUCCESS;
}

static int read_keys(struct pp *s, struct cdn_info *info, const char *fn)
{
    s->policy = POL_AUTO;
    s->min = min_default();
    s->max = 0;
    char v[64];
    if (info != NULL && cdn_info_lookup(info, "cadence_part_transfers", v, sizeof v, NULL)) {
        if (strcmp(v, "auto") == 0) {
            s->policy = POL_AUTO;
        } else if (strcmp(v, "send") == 0) {
            s->policy = POL_SEND;
        } else if (strcmp(v, "recv") == 0) {
            s->policy = POL_RECV;
        } else {
            char *end;
            long long n = strtoll(v, &end, 10);
            if (end == v || *end != '\0' || n < 1 || n >= UNITS_MAX)
                return cdn_err(MPI_ERR_INFO_VALUE, "%s: info cadence_part_transfers=\"%s\" is "
                               "none of auto, send, recv or a count in 1..%d", fn, v,
                               UNITS_MAX - 1);
            s->policy = POL_FIXED;
            s->fixed = n;
        }
    }
    int rc = info_number(info, "cadence_part_min_bytes", 0, &s->min, &s->min_set, fn);
    if (rc == MPI_SUCCESS)
        rc = info_number(info, "cadence_part_max_bytes", 0, &s->max, &s->max_set, fn);
    return rc;
}

static int pp_new(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                  int peer, int tag, struct cdn_comm *comm, struct cdn_info *info, bool sender,
                  struct cdn_request **out)
{
    const char *fn = sender ? "MPI_Psend_init" : "MPI_Precv_init";
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_PART, &pp_ops, comm);
    struct pp *s = calloc(1, sizeof *s);
    if (r == NULL || s == NULL) {
        free(s);
        if (r != NULL)
            cdn_request_release(r);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    }
    memcpy(r->u.room, &s, sizeof s);
    r->persistent = true;
    s->req = r;
    s->sender = sender;
    s->base.kind = sender ? &send_kind : &recv_kind;
    s->base.partitions = partitions;
    s->comm = comm;
    s->peer = peer;
    s->tag = tag;
    s->null_peer = peer == MPI_PROC_NULL;
    s->ctx = CDN_COMM_CTX_PART(comm);
    s->id = -1;
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->agreed, false);
    atomic_init(&s->left, 0);
    atomic_init(&s->err, MPI_SUCCESS);
    atomic_init(&s->ready_epoch, 0);
    atomic_init(&s->freed, false);
    atomic_init(&s->acked, false);
    atomic_init(&s->early, 0);
    cdn_dt_segment_init(&s->seg, buf, (MPI_Count)partitions * count, dt);
    s->bytes = cdn_dt_segment_bytes(&s->seg);
    s->pbytes = count * cdn_datatype_size(dt);
    s->data = cdn_dt_segment_contig(&s->seg);
    int rc = read_keys(s, info, fn);
    if (rc != MPI_SUCCESS)
        goto fail;
    if (s->data == NULL && s->bytes > 0) {
        s->data = malloc((size_t)s->bytes);
        s->staged = true;
        if (s->data == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory staging %lld bytes of a "
                         "non-contiguous datatype", fn, (long long)s->bytes);
            goto fail;
        }
    }
    if (sender)
        s->base.flags = cdn_part_flags_new(partitions);
    if (sender && s->base.flags == NULL) {
        rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
        goto fail;
    }
    *out = r;
    if (s->null_peer)
        return MPI_SUCCESS;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    if (!sender) {
        rc = cdn_p2p_recv_init_ctx(&s->hello, sizeof s->hello, byte, peer, tag, comm, s->ctx,
                                   &s->hello_req);
        if (rc != MPI_SUCCESS)
            goto fail;
        s->hello_req->parent = r;
        s->hello_req->parent_slot = SLOT_HELLO;
        child_start(s, s->hello_req);
        return MPI_SUCCESS;
    }
    s->id = id_take();
    if (s->id < 0) {
        rc = cdn_err(MPI_ERR_NO_MEM, "%s: %d partitioned sends exist in this process already "
                     "(the most there can be at once)", fn, ID_MAX);
        goto fail;
    }
    s->cookie = ((uint64_t)(uint32_t)cdn_rt.world_rank << 40) ^
                (atomic_fetch_add(&cookie_seq, 1) + 1);
    /* Cases 1-3: the sender plans alone and may send before the ACK. */
    if (s->policy == POL_SEND || s->policy == POL_FIXED) {
        struct plan_in in = {.policy = s->policy, .send_parts = partitions > 0 ? partitions : 1,
                             .recv_parts = 1, .bytes = s->bytes, .fixed = s->fixed,
                             .min = s->min, .max = s->max};
        if (make_units(s, &in) != 0) {
            rc = mismatch_err(s, MM_PLAN, 0, 0, 0);
            goto fail;
        }
        atomic_store(&s->agreed, true);
    }
    s->hello = (struct hello){.cookie = s->cookie, .magic = HELLO_MAGIC, .id = s->id,
                              .partitions = partitions, .policy = s->policy,
                              .bytes = s->bytes, .fixed = s->fixed, .min = s->min,
                              .max = s->max, .min_set = s->min_set, .max_set = s->max_set};
    rc = cdn_p2p_recv_init_ctx(&s->ctl_in, sizeof s->ctl_in, byte, peer,
                               part_tag(s->id, CTL_UNIT), comm, s->ctx, &s->ctl_req);
    if (rc == MPI_SUCCESS)
        rc = cdn_p2p_send_init_ctx(&s->hello, sizeof s->hello, byte, peer, tag, comm, s->ctx,
                                   &s->hello_req);
    if (rc != MPI_SUCCESS)
        goto fail;
    s->ctl_req->parent = r;
    s->ctl_req->parent_slot = SLOT_CTL;
    s->hello_req->parent = r;
    s->hello_req->parent_slot = SLOT_HELLO;
    child_start(s, s->ctl_req);
    child_start(s, s->hello_req);
    return MPI_SUCCESS;
fail:
    cdn_request_release(r);  /* pp_free releases what was made */
    return rc;
}

int cdn_part_send_init(const void *buf, int partitions, MPI_Count count,
                       struct cdn_datatype *dt, int dest, int tag, struct cdn_comm *comm,
                       struct cdn_info *info, struct cdn_request **out)
{
    return pp_new((void *)buf, partitions, count, dt, dest, tag, comm, info, true, out);
}

int cdn_part_recv_init(void *buf, int partitions, MPI_Count count, struct cdn_datatype *dt,
                       int source, int tag, struct cdn_comm *comm, struct cdn_info *info,
                       struct cdn_request **out)
{
    return pp_new(buf, partitions, count, dt, source, tag, comm, info, false, out);
}
