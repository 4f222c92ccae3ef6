/*
 * Per-communicator collective state and algorithm selection.
 *
 * Tags: every collective call on a communicator takes the next sequence
 * number of that communicator (all ranks call collectives in the same
 * order, MPI-4.1 6.12), and its messages use tags seq * 256 + sub on the
 * communicator's internal context, so calls outstanding together never
 * match each other's messages.  The sequence wraps after 2^22 calls; only
 * a collective still pending 4 million calls later could collide.
 * Persistent collectives take their number at init (initialisations are
 * ordered), so their starts need no common order.
 *
 * Kept schedules: building a schedule costs a few microseconds (its nodes
 * and their requests), as much as a small collective's whole exchange and
 * most of what a nonblocking call may spend before the computation it
 * overlaps.  A blocking or nonblocking barrier, broadcast, reduce,
 * allreduce or alltoall on an intracommunicator moving at most
 * CADENCE_COLL_KEEP_BYTES leaves its schedule with the communicator, which
 * keeps the last KEPT_MAX: a later call with the same buffers, counts,
 * types, op, root and algorithm choice runs it again, like MPI_Start, under
 * that call's own sequence number -- so whether a rank finds a kept
 * schedule never changes the tags all ranks agree on.  The slot holds one
 * reference; a schedule is idle, free to run again, when that is the only
 * one (no caller, user handle or running instance holds it), so a
 * nonblocking call hands the kept schedule out as the user's request and
 * it comes back when the user's MPI_Wait or MPI_Test frees the handle.  A
 * schedule whose last run failed is not run again.  Kept schedules hold
 * references on their datatypes and op, whose addresses therefore cannot
 * be reused for other objects, on their scratch memory and on the
 * communicator: MPI_Comm_free and MPI_Finalize drop them (runtime/comm.c,
 * coll_drop).
 *
 * Selection: CADENCE_<COLL>_ALGORITHM wins over the communicator's info
 * key cadence_<coll>_algorithm (the person launching the job overrides
 * what the program asked for); otherwise the builders choose by message and
 * communicator size (docs/collectives.md).
 */
#include "coll/coll.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/p2p.h"
#include "progress/request.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/info.h"
#include "sched/sched.h"

#define SEQ_BITS 22
#define KEPT_MAX 4

struct kept {
    struct cdn_request *r;  /* NULL: free slot */
    struct cdn_coll_key key;
};

struct coll_state {
    atomic_uint seq;
    pthread_mutex_t lock;  /* kept[] */
    struct kept kept[KEPT_MAX];
    unsigned evict;
};

static void state_free(struct cdn_comm *comm)
{
    struct coll_state *st = comm->coll;
    for (int i = 0; i < KEPT_MAX; i++)
        if (st->kept[i].r != NULL)
            cdn_request_release(st->kept[i].r);
    pthread_mutex_destroy(&st->lock);
    free(st);
    comm->coll = NULL;
}

static struct coll_state *state_of(struct cdn_comm *comm)
{
    struct coll_state *st = __atomic_load_n((struct coll_state **)&comm->coll, __ATOMIC_ACQUIRE);
    if (st != NULL)
        return st;
    struct coll_state *fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL)
        return NULL;
    atomic_init(&fresh->seq, 0);
    pthread_mutex_init(&fresh->lock, NULL);
    void *expected = NULL;
    if (__atomic_compare_exchange_n(&comm->coll, &expected, fresh, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        comm->coll_free = state_free;
        return fresh;
    }
    pthread_mutex_destroy(&fresh->lock);
    free(fresh);
    return expected;
}

static int next_tag(struct coll_state *st)
{
    unsigned seq = atomic_fetch_add_explicit(&st->seq, 1, memory_order_relaxed);
    return (int)((seq & ((1u << SEQ_BITS) - 1)) * CDN_SCHED_SUBTAGS);
}

int cdn_coll_call_tag(const char *fn, struct cdn_comm *comm, int *tag)
{
    struct coll_state *st = state_of(comm);
    if (st == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for collective state", fn);
    *tag = next_tag(st);
    return MPI_SUCCESS;
}

/* Does every one of the n messages come eagerly? */
static bool all_eager(const struct cdn_coll_msg *m, int n)
{
    for (int i = 0; i < n; i++)
        if (!cdn_progress_comes_eagerly(m[i].count * cdn_datatype_size(m[i].dt)))
            return false;
    return true;
}

int cdn_coll_exchange(struct cdn_comm *c, int tag, const struct cdn_coll_msg *recvs, int nrecvs,
                      const struct cdn_coll_msg *sends, int nsends)
{
    struct cdn_request *rq[2 * CDN_COLL_EXCHANGE_MAX];
    int n = 0, rc = MPI_SUCCESS;
    /* Receives small enough to come eagerly are waited for as MPI_Recv's
     * (cdn_request_wait_late): a moment's polling before the caller counts
     * as a poller, whose entering and leaving are read-modify-writes on
     * lines the peers read.  Nothing here asks for a wake-up meanwhile:
     * the receives are not urgent, and small sends go with no request.
     * A larger exchange is a poller from the start (the waits below poll
     * at once; a rendezvous pulled by a poller splits its copy). */
    bool late = all_eager(recvs, nrecvs) && all_eager(sends, nsends);
    if (!late)
        cdn_progress_blocking_begin();
    for (int i = 0; rc == MPI_SUCCESS && i < nrecvs; i++) {
        const struct cdn_coll_msg *m = &recvs[i];
        rc = cdn_p2p_recv_internal(m->buf, m->count, m->dt, m->peer, tag, c, true, &rq[n]);
        if (rc == MPI_SUCCESS) {
            struct cdn_request *r = rq[n++];
            /* waited, as MPI_Recv's (request.h): this call polls for
             * it, and a thread asleep in MPI wants every message.  A
             * posted want would cost every call two of the process's
             * want edges, read-modify-writes on the doorbell line its
             * peers read before each send. */
            r->u.p2p.urgent = false;
            r->u.p2p.waited = true;
            rc = r->ops->start(r);
        }
    }
    int posted = n;
    for (int i = 0; rc == MPI_SUCCESS && i < nsends; i++) {
        const struct cdn_coll_msg *m = &sends[i];
        /* a small message goes at once with no request, as MPI_Send's does */
        if (cdn_p2p_send_now_internal(m->buf, m->count, m->dt, m->peer, tag, c))
            continue;
        rc = cdn_p2p_send_internal(m->buf, m->count, m->dt, m->peer, tag, c, false, &rq[n]);
        n += rc == MPI_SUCCESS;
    }
    for (int i = 0; rc != MPI_SUCCESS && i < posted; i++)
        rq[i]->ops->cancel(rq[i]);  /* nothing may come for them */
    for (int i = 0; i < n; i++) {
        if (late)
            cdn_request_wait_late(rq[i]);
        else
            cdn_request_wait(rq[i]);
        if (rc == MPI_SUCCESS)
            rc = i < posted ? cdn_p2p_recv_exact(rq[i]) : rq[i]->status.MPI_ERROR;
        cdn_request_release(rq[i]);
    }
    if (!late)
        cdn_progress_blocking_end();  /* when nothing was waited for */
    return rc;
}

struct cdn_sched *cdn_coll_sched(struct cdn_comm *comm, bool persistent)
{
    struct coll_state *st = state_of(comm);
    if (st == NULL)
        return NULL;
    struct cdn_sched *s = cdn_sched_new(comm, next_tag(st), persistent);
    if (s != NULL)
        cdn_sched_exact(s);
    return s;
}

MPI_Count cdn_coll_keep_max(void)
{
    static _Atomic MPI_Count max = -1;  /* read once: a bad value is reported once */
    MPI_Count m = atomic_load_explicit(&max, memory_order_relaxed);
    if (m < 0) {
        m = cdn_param_long("CADENCE_COLL_KEEP_BYTES", 1L << 20, 0, LONG_MAX);
        atomic_store_explicit(&max, m, memory_order_relaxed);
    }
    return m;
}

/* Nobody but the slot holds r: no caller, user handle or running instance
 * (whose engine reference goes last, after its completion).  Acquire: the
 * last instance's writes are seen. */
static bool idle(struct cdn_request *r)
{
    return atomic_load_explicit(&r->refs, memory_order_acquire) == 1;
}

struct cdn_request *cdn_coll_kept_take(struct cdn_comm *comm, const struct cdn_coll_key *k)
{
    struct coll_state *st = state_of(comm);
    if (st == NULL)
        return NULL;
    struct cdn_request *r = NULL;
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < KEPT_MAX && r == NULL; i++) {
        struct cdn_request *x = st->kept[i].r;
        if (x != NULL && memcmp(&st->kept[i].key, k, sizeof *k) == 0 && idle(x) &&
            x->status.MPI_ERROR == MPI_SUCCESS) {
            cdn_request_retain(x);
            r = x;
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (r != NULL)
        cdn_sched_retag(r, next_tag(st));
    return r;
}

void cdn_coll_kept_put(struct cdn_comm *comm, const struct cdn_coll_key *k, struct cdn_request *r)
{
    struct coll_state *st = comm->coll;
    if (st == NULL || !cdn_sched_reusable(r))
        return;
    cdn_request_retain(r);
    pthread_mutex_lock(&st->lock);
    int slot = -1;
    for (int i = 0; i < KEPT_MAX && slot < 0; i++)
        if (st->kept[i].r == NULL)
            slot = i;
    if (slot < 0)
        slot = (int)(st->evict++ % KEPT_MAX);
    struct cdn_request *old = st->kept[slot].r;  /* if in use, its holders keep it */
    st->kept[slot].r = r;
    st->kept[slot].key = *k;
    pthread_mutex_unlock(&st->lock);
    if (old != NULL)
        cdn_request_release(old);
}

/* ---- selection ---- */

static const struct {
    const char *env, *info;
    const char *names[3];  /* index = algorithm id; [0] unused (auto) */
} selectable[CDN_COLL_NSELECT] = {
    [CDN_COLL_BCAST] = {"CADENCE_BCAST_ALGORITHM", "cadence_bcast_algorithm",
                        {"auto", "binomial", "scatter_allgather"}},
    [CDN_COLL_REDUCE] = {"CADENCE_REDUCE_ALGORITHM", "cadence_reduce_algorithm",
                         {"auto", "binomial", "linear"}},
    [CDN_COLL_ALLREDUCE] = {"CADENCE_ALLREDUCE_ALGORITHM", "cadence_allreduce_algorithm",
                            {"auto", "recursive_doubling", "ring"}},
    [CDN_COLL_ALLGATHER] = {"CADENCE_ALLGATHER_ALGORITHM", "cadence_allgather_algorithm",
                            {"auto", "ring", "bruck"}},
    [CDN_COLL_ALLTOALL] = {"CADENCE_ALLTOALL_ALGORITHM", "cadence_alltoall_algorithm",
                           {"auto", "pairwise", "scattered"}},
};

static int parse(enum cdn_coll_id id, const char *v, const char *from)
{
    for (int a = 0; a < 3; a++)
        if (strcmp(v, selectable[id].names[a]) == 0)
            return a;
    static atomic_int warned[CDN_COLL_NSELECT];
    if (atomic_exchange(&warned[id], 1) == 0)
        fprintf(stderr, "cadence: %s: unknown algorithm '%s' (use %s, %s or %s); choosing "
                "automatically\n", from, v, selectable[id].names[0], selectable[id].names[1],
                selectable[id].names[2]);
    return CDN_ALG_AUTO;
}

/* The environment is read once per process. */
static int env_choice[CDN_COLL_NSELECT];
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_read(void)
{
    for (int id = 0; id < CDN_COLL_NSELECT; id++) {
        const char *v = cdn_param_str(selectable[id].env);
        env_choice[id] = v != NULL ? parse((enum cdn_coll_id)id, v, selectable[id].env)
                                   : CDN_ALG_AUTO;
    }
}

/* The info argument of the persistent call being built (cdn_coll_call_info). */
static CDN_TLS struct cdn_info *call_info;

void cdn_coll_call_info(struct cdn_info *info)
{
    call_info = info;
}

int cdn_coll_forced(struct cdn_comm *comm, enum cdn_coll_id id)
{
    pthread_once(&env_once, env_read);
    if (env_choice[id] != CDN_ALG_AUTO)
        return env_choice[id];
    char v[64];
    if (call_info != NULL && cdn_info_lookup(call_info, selectable[id].info, v, (int)sizeof v, NULL))
        return parse(id, v, selectable[id].info);
    /* the info lookup takes the communicator's lock: a collective of a
     * process that never kept a cadence_ hint skips it */
    if (cdn_comm_cadence_hints() &&
        cdn_comm_info_value(comm, selectable[id].info, v, (int)sizeof v))
        return parse(id, v, selectable[id].info);
    return CDN_ALG_AUTO;
}
