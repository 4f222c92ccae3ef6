/*
 * The schedule engine (see sched.h): building the DAG, starting an
 * instance, and advancing it as nodes complete.
 *
 * A send, receive or nested-request node owns a persistent child request,
 * made once, at build time, and started again by every start; its parent
 * is the schedule request, and its parent_slot the node: the request
 * core tells the schedule which node completed (sched_child_done) after
 * the child's own last step, so a restart finds the child complete.
 *
 * Lifetime: the schedule request's engine reference (taken at start,
 * dropped by the completion event) and the user's handle keep the
 * schedule; the thread that counts the last node's completion finishes
 * the instance, and nothing touches the schedule after that (run_locked).
 */
#include "sched/sched.h"
#include "sched/scratch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/p2p.h"
#include "progress/request.h"
#include "progress/spin.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "runtime/runtime.h"

enum node_kind { N_NOP, N_SEND, N_RECV, N_REQUEST, N_REDUCE, N_COPY, N_CALLBACK, N_LOOP,
                 N_TRIGGER };

struct node {
    int kind;
    int ndeps;                        /* dependencies (static) */
    int nsucc, capsucc;
    int *succ;
    struct cdn_request *child;        /* N_SEND, N_RECV, N_REQUEST */
    MPI_Count bytes;                  /* N_SEND, N_RECV: the message's size; N_COPY,
                                       * N_REDUCE: the bytes read */
    int peer;                         /* ... and the other rank */
    bool lazy;                        /* N_RECV: its arrival needs no prompt action */
    bool bypassed;                    /* N_NOP: its edges were joined past it at commit;
                                       * it never runs */
    int (*guard)(void *arg);          /* run only when it returns nonzero (else skipped) */
    void *guard_arg;
    atomic_int trig;                  /* N_TRIGGER, instance state: TRIG_RAN | TRIG_FIRED */
    union {
        struct {
            const void *in;
            void *inout;
            MPI_Count count;
            struct cdn_datatype *dt;
            struct cdn_op *op;
        } red;
        struct {
            const void *src;
            void *dst;
            MPI_Count scount, dcount;
            struct cdn_datatype *sdt, *ddt;
            MPI_Count flat;           /* > 0: both sides contiguous, this many bytes from
                                       * src + flat_src to dst + flat_dst */
            MPI_Aint flat_src, flat_dst;
        } copy;
        struct {
            int (*fn)(void *arg);
            void *arg;
        } cb;
        struct {
            int first;                /* the group: nodes first .. this one - 1 */
            int count;                /* runs of the group per start (<= 0: no bound) */
            int runs;                 /* instance state: runs so far */
            int (*again)(void *arg);  /* NULL, or run again only while it returns nonzero */
            void *arg;
        } loop;
    } u;
};

struct cdn_sched {
    struct cdn_request *req;
    struct cdn_comm *comm;
    int tag;
    int n, cap;
    struct node *nodes;
    int failed;                       /* MPI error class of a failed build */
    int round_join, round_first;
    struct scratch {
        void *p;
        size_t bytes;
    } *scratch;                       /* from sched/scratch.c */
    int nscratch, capscratch;
    void (*on_free)(void *arg);
    void *free_arg;
    /* instance state: left, remaining, the queue and the flags below are
     * the lock's (docs/schedules.md, "Running") */
    int *left;                        /* dependencies still to complete, per node (set
                                       * back to deps as the node becomes ready) */
    int *deps;                        /* ... at the start of an instance */
    int *roots, nroots;               /* the nodes with none, in order */
    int *trigs, ntrigs;               /* the N_TRIGGER nodes (their state is reset by a start) */
    int nbypassed;                    /* joins that never run (bypass_joins) */
    bool loops;                       /* it has loop nodes (their runs restart at 0) */
    int remaining;                    /* nodes whose completion is not yet counted */
    atomic_int err;
    struct cdn_spin lock;             /* held for a few stores: a mutex cost 130
                                       * instructions a round trip */
    int *ready;                       /* a ring of qmask + 1 >= n entries (a loop pushes a
                                       * node again, so positions wrap) */
    unsigned rhead, rtail, qmask;
    bool running;                     /* a thread runs the queue (the runner) */
    bool finish_due;                  /* the last completion came while one did (or while
                                       * run_alone started a receive): the runner (that
                                       * run_alone) finishes the instance */
    struct cdn_work work;             /* a start handed to the progress engine */
    MPI_Count bytes;                  /* data its largest node moves, copies or reduces */
    MPI_Count root_work;              /* ... its largest copy or reduction ready at start */
    bool steps_after_send;            /* a rendezvous send leads to a send, or a nested
                                       * request has successors */
    bool wakes;                       /* starting it may ask for the progress thread: it has
                                       * urgent receives, nested requests or wanted sends */
    bool wanting;                     /* this instance holds a CDN_WANT_DONE */
    bool exact;                       /* a short receive is an error (cdn_sched_exact) */
    bool standalone;                  /* started as a call of its own though it has a
                                       * parent (cdn_sched_standalone) */
    bool sharing;                     /* this instance counts in cdn_progress_share_work */
};

static struct cdn_sched *sched_of(struct cdn_request *r)
{
    struct cdn_sched *s;
    memcpy(&s, r->u.room, sizeof s);
    return s;
}

/* A step of something else (a nested request, a user schedule's
 * operation), not a call of its own: its completion must be acted on at
 * once.  A standalone schedule's parent only hears of its completion
 * (cdn_sched_standalone). */
static bool nested(const struct cdn_sched *s)
{
    return s->req->parent != NULL && !s->standalone;
}

static void node_done(struct cdn_sched *s, int i);

/* The instance's first error wins. */
static void record_error(struct cdn_sched *s, int e)
{
    int expected = MPI_SUCCESS;
    if (e != MPI_SUCCESS)
        atomic_compare_exchange_strong(&s->err, &expected, e);
}

/* ---- building ---- */

static void sched_free(struct cdn_request *r);

/* The child of node i completed (the request core's child_done).  Only a
 * nested request's may be waited for by a thread (a user schedule's
 * operation, sched/user.c): a send's or a receive's is the schedule's own,
 * so its completion wakes nobody (the schedule's completion signals). */
static void sched_child_done(struct cdn_request *r, int i)
{
    struct cdn_sched *s = sched_of(r);
    const struct node *nd = &s->nodes[i];
    bool seen = nd->kind == N_REQUEST;
    record_error(s, nd->kind == N_RECV && s->exact ? cdn_p2p_recv_exact(nd->child)
                                                   : nd->child->status.MPI_ERROR);
    node_done(s, i);  /* (the schedule may be gone after it) */
    if (seen)
        cdn_progress_signal();
}

static const struct cdn_request_ops sched_ops = {
    .name = "schedule", .start = cdn_sched_start, .free = sched_free,
    .child_done = sched_child_done,
};

struct cdn_sched *cdn_sched_new(struct cdn_comm *comm, int base_tag, bool persistent)
{
    struct cdn_sched *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->req = cdn_request_alloc(CDN_REQ_SCHED, &sched_ops, comm);
    if (s->req == NULL) {
        free(s);
        return NULL;
    }
    s->req->persistent = persistent;
    memcpy(s->req->u.room, &s, sizeof s);
    s->comm = comm;
    s->tag = base_tag;
    s->round_join = -1;
    atomic_init(&s->lock.held, false);
    atomic_init(&s->err, MPI_SUCCESS);
    return s;
}

static void fail(struct cdn_sched *s, int errclass)
{
    if (s->failed == 0)
        s->failed = errclass;
}

static bool add_succ(struct node *nd, int succ)
{
    if (nd->nsucc == nd->capsucc) {
        int cap = nd->capsucc ? nd->capsucc * 2 : 2;
        int *p = realloc(nd->succ, (size_t)cap * sizeof *p);
        if (p == NULL)
            return false;
        nd->succ = p;
        nd->capsucc = cap;
    }
    nd->succ[nd->nsucc++] = succ;
    return true;
}

void cdn_sched_dep(struct cdn_sched *s, int before, int after)
{
    if (before < 0 || after < 0 || before >= after || after >= s->n) {
        fail(s, before < 0 || after < 0 ? MPI_ERR_NO_MEM : MPI_ERR_INTERN);
        return;
    }
    if (!add_succ(&s->nodes[before], after)) {
        fail(s, MPI_ERR_NO_MEM);
        return;
    }
    s->nodes[after].ndeps++;
}

/* A new node of this kind (its round dependency added), or -1. */
static int add_node(struct cdn_sched *s, int kind)
{
    if (s->failed)
        return -1;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct node *p = realloc(s->nodes, (size_t)cap * sizeof *p);
        if (p == NULL) {
            fail(s, MPI_ERR_NO_MEM);
            return -1;
        }
        s->nodes = p;
        s->cap = cap;
    }
    int id = s->n++;
    memset(&s->nodes[id], 0, sizeof s->nodes[id]);
    s->nodes[id].kind = kind;
    if (s->round_join >= 0)
        cdn_sched_dep(s, s->round_join, id);
    return id;
}

int cdn_sched_size(const struct cdn_sched *s)
{
    return s->n;
}

void cdn_sched_round(struct cdn_sched *s)
{
    int first = s->round_first, last = s->n;
    if (last == first)
        return;
    if (last - first == 1) {  /* a round of one node is its own join */
        s->round_join = first;
        s->round_first = s->n;
        return;
    }
    s->round_join = -1;  /* the join depends on the round, not on the join before */
    int j = add_node(s, N_NOP);
    if (j < 0)
        return;
    for (int i = first; i < last; i++)
        cdn_sched_dep(s, i, j);
    s->round_join = j;
    s->round_first = s->n;
}

/* Attach a persistent child request to a new node. */
static int add_child(struct cdn_sched *s, int kind, struct cdn_request *child)
{
    int id = add_node(s, kind);
    if (id < 0) {
        cdn_request_release(child);
        return -1;
    }
    struct node *nd = &s->nodes[id];
    nd->child = child;
    child->parent = s->req;
    child->parent_slot = id;
    return id;
}

static bool sub_ok(struct cdn_sched *s, int sub)
{
    if (sub < 0 || sub >= CDN_SCHED_SUBTAGS) {
        fail(s, MPI_ERR_INTERN);
        return false;
    }
    return !s->failed;
}

/* A send or receive node around the persistent child r (rc: how making it went). */
static int add_p2p(struct cdn_sched *s, int kind, int rc, struct cdn_request *r)
{
    if (rc != MPI_SUCCESS) {
        fail(s, MPI_ERR_NO_MEM);
        return -1;
    }
    return add_child(s, kind, r);
}

/* A node moving, copying or reducing `bytes`: the schedule's largest step
 * decides whether starting it hands work to the progress thread. */
static void step_bytes(struct cdn_sched *s, MPI_Count bytes)
{
    if (bytes > s->bytes)
        s->bytes = bytes;
}

/* Note node id's message size and peer (for cdn_sched_commit); the message
 * is one of the schedule's steps. */
static int set_message(struct cdn_sched *s, int id, MPI_Count bytes, int peer)
{
    step_bytes(s, bytes);
    if (id >= 0) {
        s->nodes[id].bytes = bytes;
        s->nodes[id].peer = peer;
    }
    return id;
}

void cdn_sched_standalone(struct cdn_request *r)
{
    sched_of(r)->standalone = true;
}

void cdn_sched_exact(struct cdn_sched *s)
{
    s->exact = true;
}

int cdn_sched_send(struct cdn_sched *s, const void *buf, MPI_Count count,
                   struct cdn_datatype *dt, int peer, int sub)
{
    struct cdn_request *r = NULL;
    if (!sub_ok(s, sub))
        return -1;
    int rc = cdn_p2p_send_internal(buf, count, dt, peer, s->tag + sub, s->comm, true, &r);
    return set_message(s, add_p2p(s, N_SEND, rc, r), count * cdn_datatype_size(dt), peer);
}

int cdn_sched_recv(struct cdn_sched *s, void *buf, MPI_Count count, struct cdn_datatype *dt,
                   int peer, int sub)
{
    struct cdn_request *r = NULL;
    if (!sub_ok(s, sub))
        return -1;
    int rc = cdn_p2p_recv_internal(buf, count, dt, peer, s->tag + sub, s->comm, true, &r);
    return set_message(s, add_p2p(s, N_RECV, rc, r), count * cdn_datatype_size(dt), peer);
}

int cdn_sched_request(struct cdn_sched *s, struct cdn_request *child)
{
    if (child->ops == NULL || child->ops->start == NULL) {
        fail(s, MPI_ERR_REQUEST);
        cdn_request_release(child);
        return -1;
    }
    return add_child(s, N_REQUEST, child);
}

int cdn_sched_reduce(struct cdn_sched *s, const void *in, void *inout, MPI_Count count,
                     struct cdn_datatype *dt, struct cdn_op *op)
{
    int id = add_node(s, N_REDUCE);
    if (id < 0)
        return -1;
    struct node *nd = &s->nodes[id];
    nd->u.red.in = in;
    nd->u.red.inout = inout;
    nd->u.red.count = count;
    nd->u.red.dt = dt;
    nd->u.red.op = op;
    nd->bytes = count * cdn_datatype_size(dt);
    step_bytes(s, nd->bytes);
    cdn_datatype_retain(dt);
    cdn_op_retain(op);
    return id;
}

int cdn_sched_copy(struct cdn_sched *s, const void *src, MPI_Count scount,
                   struct cdn_datatype *sdt, void *dst, MPI_Count dcount,
                   struct cdn_datatype *ddt)
{
    int id = add_node(s, N_COPY);
    if (id < 0)
        return -1;
    struct node *nd = &s->nodes[id];
    nd->u.copy.src = src;
    nd->u.copy.dst = dst;
    nd->u.copy.scount = scount;
    nd->u.copy.dcount = dcount;
    nd->u.copy.sdt = sdt;
    nd->u.copy.ddt = ddt;
    MPI_Count sb = scount * cdn_datatype_size(sdt), db = dcount * cdn_datatype_size(ddt);
    if (cdn_datatype_is_contig(sdt, scount) && cdn_datatype_is_contig(ddt, dcount)) {
        nd->u.copy.flat = sb < db ? sb : db;
        nd->u.copy.flat_src = cdn_datatype_true_lb(sdt);
        nd->u.copy.flat_dst = cdn_datatype_true_lb(ddt);
    }
    nd->bytes = sb;
    step_bytes(s, sb);
    cdn_datatype_retain(sdt);
    cdn_datatype_retain(ddt);
    return id;
}

int cdn_sched_callback(struct cdn_sched *s, int (*fn)(void *arg), void *arg)
{
    int id = add_node(s, N_CALLBACK);
    if (id >= 0) {
        s->nodes[id].u.cb.fn = fn;
        s->nodes[id].u.cb.arg = arg;
    }
    return id;
}

int cdn_sched_trigger(struct cdn_sched *s)
{
    int id = add_node(s, N_TRIGGER);
    if (id < 0)
        return -1;
    int *t = realloc(s->trigs, (size_t)(s->ntrigs + 1) * sizeof *t);
    if (t == NULL) {
        fail(s, MPI_ERR_NO_MEM);
        return -1;
    }
    s->trigs = t;
    s->trigs[s->ntrigs++] = id;
    return id;
}

#define TRIG_RAN 1
#define TRIG_FIRED 2

void cdn_sched_fire(struct cdn_request *r, int id, bool wait_next)
{
    struct cdn_sched *s = sched_of(r);
    if (!(atomic_fetch_or(&s->nodes[id].trig, TRIG_FIRED) & TRIG_RAN))
        return;  /* its dependencies are not met yet: it completes when they are */
    /* What it releases starts here, as cdn_sched_start starts an
     * instance: one of rendezvous size that the caller waits for next is
     * held (the caller counts as a poller from now on, so what arrives
     * meanwhile rings nobody), a small one that may want something starts
     * as a poller, one that can want nothing needs no bookkeeping. */
    bool held = wait_next && !cdn_progress_comes_eagerly(s->bytes);
    bool entered = (s->wakes || held) && cdn_progress_start_begin(false);
    node_done(s, id);
    cdn_progress_start_end(entered, held);
}

int cdn_sched_nop(struct cdn_sched *s)
{
    return add_node(s, N_NOP);
}

void cdn_sched_guard(struct cdn_sched *s, int id, int (*guard)(void *arg), void *arg)
{
    if (id < 0 || id >= s->n)
        return;  /* a failed node: the schedule is broken already */
    s->nodes[id].guard = guard;
    s->nodes[id].guard_arg = arg;
}

int cdn_sched_loop(struct cdn_sched *s, int first, int count, int (*again)(void *arg), void *arg)
{
    if (first < 0 || first >= s->n) {
        fail(s, MPI_ERR_INTERN);
        return -1;
    }
    int id = add_node(s, N_LOOP);
    if (id >= 0) {
        s->nodes[id].u.loop.first = first;
        s->nodes[id].u.loop.count = count;
        s->nodes[id].u.loop.again = again;
        s->nodes[id].u.loop.arg = arg;
    }
    return id;
}

struct cdn_request *cdn_sched_node_owner(const struct cdn_request *r)
{
    return r != NULL && r->ops == &sched_ops ? (struct cdn_request *)r : NULL;
}

void *cdn_sched_scratch(struct cdn_sched *s, size_t bytes)
{
    if (s->failed)
        return NULL;
    if (s->nscratch == s->capscratch) {
        int cap = s->capscratch ? s->capscratch * 2 : 4;
        struct scratch *p = realloc(s->scratch, (size_t)cap * sizeof *p);
        if (p == NULL) {
            fail(s, MPI_ERR_NO_MEM);
            return NULL;
        }
        s->scratch = p;
        s->capscratch = cap;
    }
    void *m = cdn_scratch_get(bytes);
    if (m == NULL) {
        fail(s, MPI_ERR_NO_MEM);
        return NULL;
    }
    s->scratch[s->nscratch++] = (struct scratch){m, bytes};
    return m;
}

void *cdn_sched_typed_scratch(struct cdn_sched *s, MPI_Count count, struct cdn_datatype *dt)
{
    if (count <= 0)
        return cdn_sched_scratch(s, 1);
    MPI_Aint span = cdn_datatype_true_extent(dt) + (MPI_Aint)(count - 1) * cdn_datatype_extent(dt);
    char *m = cdn_sched_scratch(s, (size_t)(span > 0 ? span : 1));
    return m != NULL ? m - cdn_datatype_true_lb(dt) : NULL;
}

void cdn_sched_on_free(struct cdn_sched *s, void (*fn)(void *arg), void *arg)
{
    s->on_free = fn;
    s->free_arg = arg;
}

/* Does node nd's message travel whole, with no answer from the receiver
 * (eager, or none at all)?  Then the sender's request completes as it is
 * sent and the receiver's as it arrives: nobody waits for the other side
 * to act on it.  always: surely so (a send's completion is wanted unless
 * it is); else possibly (a receive is lazy if its message may come whole:
 * one that comes by rendezvous rings the receiver all the same, its RTS
 * needing an answer -- counting the transport's per-message choice as
 * not eager made a 2-rank MPI_Allreduce_init of 16 KiB 4.5 us against
 * 2.9 with the progress thread off, its receive raising the want for
 * data). */
static bool eager(const struct cdn_sched *s, const struct node *nd, bool always)
{
    if (nd->peer < 0)  /* MPI_PROC_NULL */
        return true;
    int world = cdn_comm_world_rank(s->comm, nd->peer);
    if (world == cdn_rt.world_rank)
        return nd->bytes <= CDN_SELF_EAGER_LIMIT;
    return (size_t)nd->bytes <= cdn_progress_eager_limit(world, always);
}

/* Which completions must wake a sleeping progress thread (docs/progress.md,
 * "Wants").  A receive is lazy -- posted without CDN_WANT_DATA, so its
 * message does not ring -- when it is eager and nothing that other ranks or
 * a callback wait for follows it, directly or not: then only local work (a
 * reduction, a copy, the schedule's completion) waits for it, and the
 * thread that waits for the schedule does that work a moment later, while
 * waking the progress thread for it would preempt the application on its
 * core (a 2-rank allreduce's one receive, a broadcast's leaf).  Completions
 * of sends are wanted the same way: when a rendezvous send leads to a
 * send, nested request or callback (an eager send completes as it is
 * sent, nothing comes back), or a nested request has successors. */
static void mark_urgency(struct cdn_sched *s)
{
    bool *leads = calloc((size_t)s->n, sizeof *leads);
    if (leads == NULL) {
        fail(s, MPI_ERR_NO_MEM);
        return;
    }
    for (int i = s->n - 1; i >= 0; i--) {  /* successors have larger ids */
        struct node *nd = &s->nodes[i];
        for (int k = 0; k < nd->nsucc && !leads[i]; k++) {
            int j = nd->succ[k], kind = s->nodes[j].kind;
            leads[i] = leads[j] || kind == N_SEND || kind == N_REQUEST || kind == N_CALLBACK ||
                       kind == N_LOOP;
        }
        if (nd->kind == N_RECV)
            nd->lazy = !leads[i] && eager(s, nd, false);
        else if (nd->kind == N_SEND && !eager(s, nd, true))
            s->steps_after_send |= leads[i];
        else if (nd->kind == N_REQUEST)
            s->steps_after_send |= nd->nsucc > 0;
        s->wakes |= (nd->kind == N_RECV && !nd->lazy) || nd->kind == N_REQUEST;
    }
    s->wakes |= s->steps_after_send;
    free(leads);
}

/* A join (a round's N_NOP) with one predecessor or one successor costs a
 * node's run and count on every start and saves no edge: each predecessor
 * gets its successors instead, and the join never runs.  Not in a
 * schedule with loops (a loop re-arms its group by node ranges). */
static void bypass_joins(struct cdn_sched *s)
{
    if (s->loops)
        return;
    for (int j = 0; j < s->n && !s->failed; j++) {
        struct node *nj = &s->nodes[j];
        if (nj->kind != N_NOP || nj->guard != NULL || nj->ndeps == 0 ||
            (nj->ndeps > 1 && nj->nsucc > 1))
            continue;
        for (int p = 0; p < j; p++) {  /* predecessors have smaller ids */
            struct node *np = &s->nodes[p];
            for (int k = 0; k < np->nsucc; k++) {
                if (np->succ[k] != j)
                    continue;
                /* the edge p -> j becomes p -> (each successor of j) */
                if (nj->nsucc == 0) {
                    np->succ[k--] = np->succ[--np->nsucc];
                    continue;
                }
                np->succ[k] = nj->succ[0];
                for (int e = 1; e < nj->nsucc; e++)
                    if (!add_succ(np, nj->succ[e]))
                        fail(s, MPI_ERR_NO_MEM);
            }
        }
        for (int e = 0; e < nj->nsucc; e++)
            s->nodes[nj->succ[e]].ndeps += nj->ndeps - 1;
        nj->nsucc = 0;
        nj->ndeps = 0;
        nj->bypassed = true;
    }
}

int cdn_sched_commit(struct cdn_sched *s, const char *caller, struct cdn_request **out)
{
    for (int i = 0; i < s->n; i++)
        s->loops |= s->nodes[i].kind == N_LOOP;
    if (!s->failed)
        bypass_joins(s);
    if (!s->failed && s->n > 0) {
        s->left = malloc((size_t)s->n * sizeof *s->left);
        s->deps = malloc((size_t)s->n * sizeof *s->deps);
        s->roots = malloc((size_t)s->n * sizeof *s->roots);
        unsigned q = 1;
        while (q < (unsigned)s->n)
            q <<= 1;
        s->qmask = q - 1;
        s->ready = malloc((size_t)q * sizeof *s->ready);
        if (s->left == NULL || s->deps == NULL || s->roots == NULL || s->ready == NULL)
            fail(s, MPI_ERR_NO_MEM);
    }
    for (int i = 0; !s->failed && i < s->n; i++) {
        s->deps[i] = s->left[i] = s->nodes[i].ndeps;
        if (s->nodes[i].bypassed)
            s->nbypassed++;
        else if (s->deps[i] == 0) {
            s->roots[s->nroots++] = i;
            int kind = s->nodes[i].kind;
            if ((kind == N_COPY || kind == N_REDUCE) && s->nodes[i].bytes > s->root_work)
                s->root_work = s->nodes[i].bytes;
        }
    }
    if (!s->failed)
        mark_urgency(s);
    if (s->failed) {
        int cls = s->failed;
        cdn_request_release(s->req);
        return cls == MPI_ERR_NO_MEM
                   ? cdn_err(cls, "%s: out of memory building the schedule", caller)
                   : cdn_err(cls, "%s: internal error building the schedule", caller);
    }
    *out = s->req;
    return MPI_SUCCESS;
}

static void sched_free(struct cdn_request *r)
{
    struct cdn_sched *s = sched_of(r);
    for (int i = 0; i < s->n; i++) {
        struct node *nd = &s->nodes[i];
        if (nd->child != NULL)
            cdn_request_release(nd->child);
        if (nd->kind == N_REDUCE) {
            cdn_datatype_release(nd->u.red.dt);
            cdn_op_release(nd->u.red.op);
        } else if (nd->kind == N_COPY) {
            cdn_datatype_release(nd->u.copy.sdt);
            cdn_datatype_release(nd->u.copy.ddt);
        }
        free(nd->succ);
    }
    for (int i = 0; i < s->nscratch; i++)
        cdn_scratch_put(s->scratch[i].p, s->scratch[i].bytes);
    if (s->on_free != NULL)
        s->on_free(s->free_arg);
    free(s->scratch);
    free(s->nodes);
    free(s->left);
    free(s->deps);
    free(s->roots);
    free(s->trigs);
    free(s->ready);
    free(s);
}

/* ---- running ---- */

void cdn_sched_typed_copy(const void *src, MPI_Count scount, struct cdn_datatype *sdt, void *dst,
                          MPI_Count dcount, struct cdn_datatype *ddt)
{
    MPI_Count sb = scount * cdn_datatype_size(sdt), db = dcount * cdn_datatype_size(ddt);
    MPI_Count len = sb < db ? sb : db;
    if (len <= 0)
        return;
    bool sc = cdn_datatype_is_contig(sdt, scount), dc = cdn_datatype_is_contig(ddt, dcount);
    const char *s0 = (const char *)src + cdn_datatype_true_lb(sdt);
    char *d0 = (char *)dst + cdn_datatype_true_lb(ddt);
    if (sc && dc) {
        if (s0 != d0)
            memmove(d0, s0, (size_t)len);
        return;
    }
    struct cdn_dt_segment ss, ds;
    if (sc) {
        cdn_dt_segment_init(&ds, dst, dcount, ddt);
        cdn_dt_unpack(&ds, 0, s0, len);
        cdn_dt_segment_fini(&ds);
        return;
    }
    cdn_dt_segment_init(&ss, src, scount, sdt);
    if (dc) {
        cdn_dt_pack(&ss, 0, d0, len);
        cdn_dt_segment_fini(&ss);
        return;
    }
    cdn_dt_segment_init(&ds, dst, dcount, ddt);
    char chunk[16384];
    for (MPI_Count off = 0; off < len;) {
        MPI_Count n = len - off < (MPI_Count)sizeof chunk ? len - off : (MPI_Count)sizeof chunk;
        cdn_dt_pack(&ss, off, chunk, n);
        cdn_dt_unpack(&ds, off, chunk, n);
        off += n;
    }
    cdn_dt_segment_fini(&ss);
    cdn_dt_segment_fini(&ds);
}

/* How running a node went: it completed as it ran, its completion comes
 * later (sched_child_done), or (a loop) its group runs again. */
enum ran { RAN_DONE, RAN_LATER, RAN_AGAIN };

/* Run a reduction or a copy node. */
static inline __attribute__((always_inline)) void run_local(const struct node *nd)
{
    if (nd->kind == N_REDUCE) {
        cdn_op_reduce(nd->u.red.op, nd->u.red.in, nd->u.red.inout, nd->u.red.count,
                      nd->u.red.dt);
    } else if (nd->u.copy.flat > 0) {
        const char *from = (const char *)nd->u.copy.src + nd->u.copy.flat_src;
        char *to = (char *)nd->u.copy.dst + nd->u.copy.flat_dst;
        if (from != to)
            memmove(to, from, (size_t)nd->u.copy.flat);
    } else {
        cdn_sched_typed_copy(nd->u.copy.src, nd->u.copy.scount, nd->u.copy.sdt, nd->u.copy.dst,
                             nd->u.copy.dcount, nd->u.copy.ddt);
    }
}

/* Start the child of node nd (a send that could not go at once, a
 * receive, a nested request); its completion comes later, through
 * sched_child_done. */
static inline __attribute__((always_inline)) void start_child(struct cdn_sched *s,
                                                              struct node *nd)
{
    if (nd->kind == N_REQUEST)
        nd->child->active = true;
    /* Not posted now (its last instance completed): the flags may change.
     * A nested schedule's completion is a step of its parent.  A lazy
     * receive (its message comes eagerly, and only local steps or the
     * schedule's completion wait for it) raises no want at all, as a
     * blocking receive's (request.h, waited): only an RTS or a synchronous
     * message rings for a posted receive, and neither comes for it in a
     * correct program; a thread asleep in MPI still wants every message.
     * Raising and dropping CDN_WANT_POSTED cost every start two of the
     * process's want edges. */
    if (nd->kind == N_RECV) {
        bool lazy = nd->lazy && !nested(s);
        nd->child->u.p2p.urgent = !lazy;
        nd->child->u.p2p.waited = lazy;
    }
    nd->child->ops->start(nd->child);  /* errors arrive as the child's status */
}

/* Run node i (the lock not held). */
static enum ran run_node(struct cdn_sched *s, int i)
{
    struct node *nd = &s->nodes[i];
    if (nd->guard != NULL && !nd->guard(nd->guard_arg))
        return RAN_DONE;  /* skipped: as if it ran and completed at once */
    switch (nd->kind) {
    case N_SEND:
        /* A small message goes at once with no request event, as a
         * blocking collective's (cdn_p2p_send_now_of): the node is done. */
        if (cdn_p2p_send_now_of(nd->child))
            return RAN_DONE;
        /* fall through */
    case N_RECV:
    case N_REQUEST:
        start_child(s, nd);
        return RAN_LATER;
    case N_REDUCE:
    case N_COPY:
        run_local(nd);
        return RAN_DONE;
    case N_CALLBACK:
        record_error(s, nd->u.cb.fn(nd->u.cb.arg));
        return RAN_DONE;
    case N_TRIGGER:  /* done when it ran and was fired, whichever comes last */
        return atomic_fetch_or(&nd->trig, TRIG_RAN) & TRIG_FIRED ? RAN_DONE : RAN_LATER;
    case N_LOOP: {
        /* Every node of its group has completed (the loop node depends on
         * all of them) and none outside the group depends on one of them
         * (cdn_sched_loop): nothing of the group runs now. */
        nd->u.loop.runs++;
        bool again = (nd->u.loop.count <= 0 || nd->u.loop.runs < nd->u.loop.count) &&
                     (nd->u.loop.again == NULL || nd->u.loop.again(nd->u.loop.arg));
        if (again)
            return RAN_AGAIN;  /* the group runs again; this node runs again after it */
        nd->u.loop.runs = 0;   /* for the next run of an enclosing group */
        return RAN_DONE;
    }
    default:
        return RAN_DONE;
    }
}

/* Under the lock: node i's completion counts.  Its successors with no
 * dependency left join the queue, their counts set back for the next
 * instance (each count reaches zero once per instance: a start needs no
 * copy of them); true when it was the instance's last. */
static inline __attribute__((always_inline)) bool count_done(struct cdn_sched *s, int i)
{
    const struct node *nd = &s->nodes[i];
    for (int k = 0; k < nd->nsucc; k++) {
        int j = nd->succ[k];
        if (--s->left[j] == 0) {
            s->left[j] = s->deps[j];
            s->ready[s->rtail++ & s->qmask] = j;
        }
    }
    return --s->remaining == 0;
}

/* Under the lock: the group of loop node i runs again.  Each node of it
 * (i included) gets back the dependencies it has inside the group; those
 * with none (the group's first round) join the queue. */
static void count_again(struct cdn_sched *s, int i)
{
    int first = s->nodes[i].u.loop.first;
    for (int j = first; j <= i; j++)
        s->left[j] = 0;
    for (int k = first; k < i; k++)
        for (int e = 0; e < s->nodes[k].nsucc; e++)
            if (s->nodes[k].succ[e] <= i)
                s->left[s->nodes[k].succ[e]]++;
    s->remaining += i - first;
    for (int j = first; j < i; j++)
        if (s->left[j] == 0)
            s->ready[s->rtail++ & s->qmask] = j;
}

/* Complete the instance.  in_start: inside the call that started it
 * (start_instance's own run of the queue).  Then, unless the schedule is
 * a step of something, nobody can wait for the request yet -- it was
 * inactive until this call, whose caller waits for it only after it
 * returns -- so no sleeper needs the completion event's signal: the
 * engine's reference taken by the arm goes back and cc drops to 0 here. */
static void finish(struct cdn_sched *s, bool in_start)
{
    struct cdn_request *r = s->req;
    if (s->wanting) {
        s->wanting = false;
        cdn_progress_want(CDN_WANT_DONE, -1);
    }
    if (s->sharing) {
        s->sharing = false;
        cdn_progress_share_work(-1);
    }
    r->status.MPI_ERROR = atomic_load(&s->err);
    if (!in_start || r->parent != NULL) {
        cdn_request_event(r);
        return;
    }
    atomic_store_explicit(&r->cc, 0, memory_order_release);
    cdn_request_release(r);  /* the engine's reference (its caller holds another) */
}

/* Nodes that take only a moment to start: a send posts an envelope (eager
 * data is at most a ring cell; a rendezvous sends its RTS).  Receives
 * (which copy if their message is there), copies, reductions and nested
 * requests are the work worth handing to the progress thread. */
static bool light(const struct node *nd)
{
    return nd->kind == N_SEND || nd->kind == N_NOP || nd->kind == N_CALLBACK ||
           nd->kind == N_TRIGGER;
}

#define DRAIN_BATCH 16  /* nodes a runner takes off the queue per lock round trip */
#define ALONE_MAX 4096  /* bytes: the largest step of a schedule whose later local
                         * steps run under the lock (run_alone) */

/* The runner's work in run_locked (the lock held, the queue not empty,
 * nobody running it): run the queue until it is empty, the nodes ready
 * now leaving it together and running with the lock released once for
 * all of them, in queue order, and the completions of those that
 * completed as they ran counting at the next lock.  keep_heavy: run only
 * the light ones, leave the others queued; returns whether any were kept.
 * *last: a completion counted was the instance's last (or came while it
 * ran: finish_due).  Apart from run_locked, which is inline in its
 * callers: a completion that leaves nothing to run (a receive that was
 * the instance's last step) does not pay for this one's frame. */
static __attribute__((noinline)) bool drain(struct cdn_sched *s, bool *last, bool keep_heavy)
{
    bool l = *last;
    s->running = true;
    unsigned from = s->rhead, w = s->rhead;  /* kept nodes go to [from, w) */
    int batch[DRAIN_BATCH];
    enum ran how[DRAIN_BATCH];
    while (s->rhead != s->rtail) {
        int n = 0;
        while (s->rhead != s->rtail && n < DRAIN_BATCH) {
            int i = s->ready[s->rhead++ & s->qmask];
            if (keep_heavy && !light(&s->nodes[i]))
                s->ready[w++ & s->qmask] = i;
            else
                batch[n++] = i;
        }
        if (n == 0)
            continue;
        cdn_spin_unlock(&s->lock);
        for (int k = 0; k < n; k++)
            how[k] = run_node(s, batch[k]);
        cdn_spin_lock(&s->lock);
        for (int k = 0; k < n; k++) {
            if (how[k] == RAN_DONE)
                l |= count_done(s, batch[k]);
            else if (how[k] == RAN_AGAIN)
                count_again(s, batch[k]);
        }
    }
    /* every node queued meanwhile was run or kept: the queue is now
     * exactly the kept ones (none without keep_heavy) */
    s->rhead = from;
    s->rtail = w;
    s->running = false;
    *last = l | s->finish_due;
    s->finish_due = false;
    return w != from;
}

/* Called with the lock held (last: the completion just counted was the
 * instance's last); releases it.  Unless another thread already does,
 * run the queue until it is empty (drain).  keep_heavy (the start of a
 * schedule handed to the progress thread): run only the light ones here,
 * so messages leave at once, and leave the others queued for it; returns
 * whether any were kept.  in_start: the call of start_instance (finish).
 *
 * The instance is finished by the thread that counts its last completion
 * -- or by the runner, when one is running the queue meanwhile: after the
 * finish the owner may free the schedule, and the runner still touches
 * it.  So nothing here touches the schedule after the unlock but the
 * finish: no reference is needed. */
static inline __attribute__((always_inline)) bool run_locked(struct cdn_sched *s, bool last,
                                                             bool keep_heavy, bool in_start)
{
    bool kept = false;
    if (s->running) {
        if (last)
            s->finish_due = true;
        last = false;
    } else if (s->rhead != s->rtail) {
        kept = drain(s, &last, keep_heavy);
    }
    cdn_spin_unlock(&s->lock);
    if (last)
        finish(s, in_start);
    return kept;
}

/* The schedules whose lock this thread holds in run_alone while a
 * receive of theirs starts, innermost first (NULL: none): the receive's
 * completion, if it comes at once (its message was there), counts
 * without taking the lock (node_done). */
struct alone {
    struct cdn_sched *s;
    struct alone *outer;
};
static CDN_TLS struct alone *alone_here;

static bool held_here(const struct cdn_sched *s)
{
    for (const struct alone *a = alone_here; a != NULL; a = a->outer)
        if (a->s == s)
            return true;
    return false;
}

/* Under the lock, with no runner: run the queue's nodes, in queue order,
 * with the lock held, as long as they are copies, reductions, joins,
 * request-less sends, or (in a schedule whose largest step is at most
 * ALONE_MAX bytes) receives, whose start is a matching post; stop at the
 * first other node (a send that needs its request, a nested request, a
 * guard, a callback, a loop, or a receive of a larger schedule) and leave
 * it queued.  True when that completed the instance.  A receive's
 * completion comes later (sched_child_done), or at once when its message
 * is there: then it is counted here, the lock being this thread's
 * (alone_here), and its successors run next.  The runner's round for a
 * node (unlock, batch, lock) costs more than these nodes themselves.  As
 * an instance starts no other thread has a reason to take the lock until
 * a receive of it is posted, so its first local steps run so at any size
 * (a broadcast root's sends, an allreduce's copy and send); after that, a
 * thread completing a child of the instance meanwhile waits for the lock
 * a moment longer than counting would take: only small schedules
 * (node_done too: an allreduce's reduction after its receive). */
static inline __attribute__((always_inline)) bool run_alone(struct cdn_sched *s)
{
    while (s->rhead != s->rtail) {
        int i = s->ready[s->rhead & s->qmask];
        struct node *nd = &s->nodes[i];
        if (nd->guard != NULL)
            return false;
        switch (nd->kind) {
        case N_SEND:
            if (!cdn_p2p_send_now_of(nd->child))
                return false;  /* (nothing sent: run_node tries again, then starts it) */
            break;
        case N_REDUCE:
        case N_COPY:
            run_local(nd);
            break;
        case N_NOP:
            break;
        case N_TRIGGER:
            if (atomic_fetch_or(&nd->trig, TRIG_RAN) & TRIG_FIRED)
                break;  /* fired already: done */
            s->rhead++;
            continue;   /* counted when it is fired (cdn_sched_fire) */
        case N_RECV: {
            if (s->bytes > ALONE_MAX)
                return false;
            s->rhead++;
            struct alone here = {s, alone_here};
            alone_here = &here;
            start_child(s, nd);
            alone_here = here.outer;
            continue;  /* counted when it completes */
        }
        default:
            return false;
        }
        s->rhead++;
        if (count_done(s, i))
            return true;
    }
    /* a receive's completion counted here was the last (node_done) */
    bool last = s->finish_due;
    s->finish_due = false;
    return last;
}

/* Node i's completion came later (its child's), on any thread. */
static void node_done(struct cdn_sched *s, int i)
{
    if (CDN_UNLIKELY(alone_here != NULL) && held_here(s)) {  /* run_alone holds the lock */
        if (count_done(s, i))
            s->finish_due = true;  /* (run_alone finishes it) */
        return;
    }
    cdn_spin_lock(&s->lock);
    bool last = count_done(s, i);
    if (!s->running && s->bytes <= ALONE_MAX)
        last |= run_alone(s);
    run_locked(s, last, false, false);
}

static void deferred_drain(struct cdn_work *w)
{
    struct cdn_sched *s = (struct cdn_sched *)((char *)w - offsetof(struct cdn_sched, work));
    struct cdn_request *r = s->req;
    cdn_spin_lock(&s->lock);
    run_locked(s, false, false, false);
    cdn_request_release(r);  /* the reference the queue held */
}

static int start_instance(struct cdn_request *r, bool background)
{
    struct cdn_sched *s = sched_of(r);
    cdn_status_empty(&r->status);
    cdn_request_arm(r, 1);
    /* read by the finishing thread after it takes the lock */
    atomic_store_explicit(&s->err, MPI_SUCCESS, memory_order_relaxed);
    if (s->n == 0) {
        cdn_request_event(r);
        return MPI_SUCCESS;
    }
    /* A new instance: no trigger fired yet (MPI_Start returns before
     * anyone may fire one). */
    for (int k = 0; k < s->ntrigs; k++)
        atomic_store_explicit(&s->nodes[s->trigs[k]].trig, 0, memory_order_relaxed);
    /* Completions of sends matter at once when steps follow them or when
     * the schedule is itself a step of something (ring.h, "Wants"). */
    s->wanting = s->steps_after_send || nested(s);
    if (s->wanting)
        cdn_progress_want(CDN_WANT_DONE, 1);
    cdn_spin_lock(&s->lock);
    /* The dependency counts are set back as each node becomes ready
     * (count_done); a loop's recount (count_again) leaves them changed. */
    if (s->loops) {
        memcpy(s->left, s->deps, (size_t)s->n * sizeof *s->left);
        for (int i = 0; i < s->n; i++)
            if (s->nodes[i].kind == N_LOOP)
                s->nodes[i].u.loop.runs = 0;
    }
    for (int k = 0; k < s->nroots; k++)  /* a few: a loop, not a call of memcpy */
        s->ready[k] = s->roots[k];
    s->rhead = 0;
    s->rtail = (unsigned)s->nroots;
    s->remaining = s->n - s->nbypassed;
    /* Small schedules run their first nodes here: handing them over costs
     * more than running them (a wake-up, a context switch). */
    if (background) {
        cdn_request_retain(r);  /* a kept node may complete the schedule meanwhile */
        if (run_locked(s, false, true, true)) {
            s->work.run = deferred_drain;
            cdn_progress_defer_in(r->pctx, &s->work);  /* its communicator's context */
        } else {
            cdn_request_release(r);
        }
    } else {
        run_locked(s, run_alone(s), false, true);
    }
    return MPI_SUCCESS;
}

bool cdn_sched_waits_late(const struct cdn_request *r)
{
    if (r->ops != &sched_ops)
        return false;
    const struct cdn_sched *s = sched_of((struct cdn_request *)r);
    return !nested(s) && !s->wakes &&
           cdn_progress_comes_eagerly(s->bytes);
}

bool cdn_sched_reusable(struct cdn_request *r)
{
    struct cdn_sched *s = sched_of(r);
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].kind == N_REQUEST || s->nodes[i].kind == N_CALLBACK)
            return false;
    return true;
}

void cdn_sched_retag(struct cdn_request *r, int base_tag)
{
    struct cdn_sched *s = sched_of(r);
    for (int i = 0; i < s->n; i++) {
        struct node *nd = &s->nodes[i];
        if (nd->kind == N_SEND || nd->kind == N_RECV)
            nd->child->u.p2p.tag += base_tag - s->tag;
    }
    s->tag = base_tag;
}

int cdn_sched_start(struct cdn_request *r)
{
    /* A small schedule that may want something starts as a poller: what
     * it finds waiting it takes itself, and the thread is not woken for
     * it.  One that can want nothing needs no bookkeeping (a 2-rank small
     * allreduce).  One that hands work over leaves the thread's wake-up to
     * the start timer (cdn_progress_defer): woken as the call returns, the
     * thread would take the processor before the application's computation
     * starts instead of during it; only a schedule with a copy or
     * reduction that large ready at its start hands over (root_work): one
     * that starts with messages is woken for by its peers' answers.  Steps
     * of rendezvous size may need the progress thread while the
     * application computes, so the start ends a linger (engine.h): as a
     * poller it takes the linger's place.  If the application has been
     * waiting at once after such starts (cdn_progress_computes_next) the
     * start is held instead: it runs here whatever its size and its count
     * lingers for the wait (cdn_progress_start_end). */
    struct cdn_sched *s = sched_of(r);
    bool step = nested(s);
    bool carried = !step && !cdn_progress_comes_eagerly(s->bytes);
    bool computes = carried && cdn_progress_computes_next();
    bool held = carried && !computes;
    bool background = cdn_engine.thread_on && s->bytes >= cdn_engine.background_min &&
                      (step || (computes && s->root_work >= cdn_engine.background_min));
    bool entered = (s->wakes || step || held) && !background &&
                   cdn_progress_start_begin(computes);
    /* a thread rank's: while it runs, the progress thread looks for thread
     * ranks away from MPI (work sharing); finish ends it */
    s->sharing = s->n > 0 && s->comm != NULL && s->comm->tq != NULL && cdn_engine.thread_on;
    if (s->sharing)
        cdn_progress_share_work(1);
    int rc = start_instance(r, background);
    if (entered)
        cdn_progress_start_end(true, held);
    else if (computes)
        cdn_progress_linger_end(CDN_LINGER_STARTED);
    if (carried)
        cdn_progress_rdv_started();
    return rc;
}

int cdn_sched_run(struct cdn_request *r)
{
    return start_instance(r, false);
}
