/*
 * User-level schedules (see user.h and docs/schedules.md).
 *
 * Building records rounds of items (a sub-request or a local reduction),
 * with the reset point, the completion point, repeat groups, conditions
 * and callbacks.  Commit compiles them onto the DAG engine (sched.c), two
 * DAGs in all:
 *
 *   main   the rounds before the completion point.  Those before the reset
 *          point are guarded (cdn_sched_guard) to run on the first start
 *          only; a condition becomes a guard (an operation) or a callback
 *          node that decides for the whole round before it starts; a round
 *          callback is a callback node after the round; a repeat group is
 *          a loop node after its last round; the schedule's callback is
 *          the last node.
 *   tail   the rounds after the completion point, started once, when the
 *          user frees the schedule's request or at MPI_Finalize.
 *
 * The user's request is a small request of its own kind around the main
 * DAG (the DAG's parent): starting it picks the prefix flag and starts the
 * DAG, whose completion completes it.  Which side runs the tail -- the
 * MPI_Request_free or the completion of the instance running then -- is
 * settled by one atomic word (BUSY / FREED / FINAL): exactly one does.
 *
 * A sub-request's parent is the schedule's request until commit and its
 * DAG node's proxy after, so "is it in a schedule" is "has it a parent"
 * (MPI_Start and MPI_Request_free refuse it, api/request.c), and the
 * schedule is found back from the parent.
 *
 * Every schedule is on one list until freed, for MPI_Finalize and to check
 * handles without following a dangling pointer.
 */
#include "sched/user.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/request.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/op.h"
#include "sched/sched.h"

enum item_kind { I_REQUEST, I_REDUCE };

/* What decides whether a node runs (cdn_sched_guard). */
struct guard {
    struct cdn_schedule *us;
    bool prefix;                          /* before the reset point: first start only */
    atomic_int *round_on;                 /* the round's condition, as decided */
    MPIX_Schedule_predicate_function *pred;
    void *state;
};

struct item {
    int kind;
    struct cdn_request *req;              /* I_REQUEST */
    struct cdn_op *op;                    /* I_REDUCE */
    struct cdn_datatype *dt;
    const void *in;
    void *inout;
    int len;
    MPIX_Schedule_predicate_function *pred;  /* condition, or NULL */
    void *pstate;
};

struct round {
    struct item *items;
    int n, cap;
    MPIX_Schedule_predicate_function *pred;  /* condition of the whole round */
    void *pstate;
    atomic_int on;                        /* ... decided as the round starts */
    MPIX_Schedule_callback_function *cb;  /* called after the round */
    void *cbstate;
};

struct repeat {
    int first, last;                      /* rounds, inclusive */
    int count;
    MPIX_Schedule_predicate_function *pred;
    void *state;
};

enum { ST_BUSY = 1, ST_FREED = 2, ST_FINAL = 4 };

struct cdn_schedule {
    atomic_int refs;                      /* the user's handle, the request */
    bool handle_live;                     /* the user holds the MPIX_Schedule */
    bool committed;
    bool auto_free;
    struct round *rounds;                 /* the last one is the current round */
    int nrounds, caprounds;
    int reset, completion;                /* first round after each point (completion:
                                           * -1 while not marked) */
    struct repeat *repeats;
    int nrepeats, caprepeats;
    int last_round, last_item;            /* the operation added last, or -1 */
    MPIX_Schedule_callback_function *cb;  /* at the end of every instance */
    void *cbstate;
    /* compiled */
    struct cdn_request *req;              /* the user's request (user_ops) */
    struct cdn_request *main, *tail;      /* the DAGs' requests (tail may be NULL) */
    struct cdn_request *tail_done;        /* the tail DAG's parent (tail_ops) */
    struct guard *guards;
    int nguards;
    bool started;
    atomic_int run_prefix;
    atomic_int st;                        /* ST_* */
    atomic_bool done;                     /* tail run, sub-requests freed or given back */
    struct cdn_schedule *next, *prev;     /* the list */
};

static struct {
    pthread_mutex_t lock;
    struct cdn_schedule *head;
} all = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct cdn_schedule *of(const struct cdn_request *r)
{
    struct cdn_schedule *us;
    memcpy(&us, r->u.room, sizeof us);
    return us;
}

/* ---- life cycle ---- */

static void retain(struct cdn_schedule *us)
{
    atomic_fetch_add(&us->refs, 1);
}

static void release_items(struct cdn_schedule *us)
{
    for (int r = 0; r < us->nrounds; r++) {
        for (int i = 0; i < us->rounds[r].n; i++) {
            struct item *it = &us->rounds[r].items[i];
            if (it->kind == I_REDUCE) {
                cdn_op_release(it->op);
                cdn_datatype_release(it->dt);
            }
        }
        free(us->rounds[r].items);
    }
    free(us->rounds);
}

static void release(struct cdn_schedule *us)
{
    if (atomic_fetch_sub(&us->refs, 1) != 1)
        return;
    pthread_mutex_lock(&all.lock);
    if (us->prev != NULL)
        us->prev->next = us->next;
    else
        all.head = us->next;
    if (us->next != NULL)
        us->next->prev = us->prev;
    pthread_mutex_unlock(&all.lock);
    release_items(us);
    if (us->main != NULL)
        cdn_request_release(us->main);
    if (us->tail != NULL)
        cdn_request_release(us->tail);
    if (us->tail_done != NULL)
        cdn_request_release(us->tail_done);
    free(us->repeats);
    free(us->guards);
    free(us);
}

static int user_start(struct cdn_request *w);
static void user_complete(struct cdn_request *w);
static void user_free(struct cdn_request *w)
{
    release(of(w));
}
static const struct cdn_request_ops user_ops = {
    .name = "user schedule", .start = user_start, .complete = user_complete, .free = user_free,
};

static void tail_complete(struct cdn_request *t);
static const struct cdn_request_ops tail_ops = {.name = "user schedule tail",
                                                .complete = tail_complete};

int cdn_usched_create(struct cdn_schedule **out, const char *caller)
{
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: sched is NULL", caller);
    struct cdn_schedule *us = calloc(1, sizeof *us);
    struct round *r0 = calloc(4, sizeof *r0);
    struct cdn_request *w = cdn_request_alloc(CDN_REQ_SCHED, &user_ops, NULL);
    if (us == NULL || r0 == NULL || w == NULL) {
        free(us);
        free(r0);
        if (w != NULL)
            cdn_request_release(w);  /* no room set: the free hook is not reached */
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for a schedule", caller);
    }
    atomic_init(&us->refs, 2);  /* the handle and the request */
    us->handle_live = true;
    us->auto_free = true;
    us->rounds = r0;
    us->nrounds = 1;
    us->caprounds = 4;
    us->completion = -1;
    us->last_round = us->last_item = -1;
    w->persistent = true;
    memcpy(w->u.room, &us, sizeof us);
    us->req = w;
    pthread_mutex_lock(&all.lock);
    us->next = all.head;
    if (all.head != NULL)
        all.head->prev = us;
    all.head = us;
    pthread_mutex_unlock(&all.lock);
    *out = us;
    return MPI_SUCCESS;
}

struct cdn_schedule *cdn_usched_get(MPIX_Schedule handle, const char *caller, int *rc)
{
    struct cdn_schedule *found = NULL;
    *rc = MPI_SUCCESS;
    if (handle != MPIX_SCHEDULE_NULL) {
        pthread_mutex_lock(&all.lock);
        for (struct cdn_schedule *us = all.head; us != NULL; us = us->next)
            if (us == handle && us->handle_live)
                found = us;
        pthread_mutex_unlock(&all.lock);
    }
    if (found == NULL)
        *rc = cdn_err(MPI_ERR_ARG, "%s: sched %p is not a valid schedule%s", caller,
                      (void *)handle, handle == MPIX_SCHEDULE_NULL ? " (MPIX_SCHEDULE_NULL)"
                                                                   : " (freed, or never made)");
    return found;
}

/* A sub-request leaves the schedule: freed with it (auto-free), else given
 * back to the user as an ordinary inactive persistent request. */
static void let_go(struct cdn_schedule *us, struct cdn_request *r)
{
    r->parent = NULL;
    r->active = false;  /* started by the schedule, complete, maybe never waited for */
    if (!us->auto_free || !atomic_load(&r->live))
        return;
    if (cdn_usched_is_request(r))
        cdn_usched_request_free(r);  /* a nested schedule: as MPI_Request_free */
    else
        cdn_request_unpublish(r);
}

static void let_go_all(struct cdn_schedule *us)
{
    for (int r = 0; r < us->nrounds; r++)
        for (int i = 0; i < us->rounds[r].n; i++)
            if (us->rounds[r].items[i].kind == I_REQUEST)
                let_go(us, us->rounds[r].items[i].req);
}

void cdn_usched_free(struct cdn_schedule *us)
{
    pthread_mutex_lock(&all.lock);
    us->handle_live = false;
    pthread_mutex_unlock(&all.lock);
    if (!us->committed) {
        /* the sub-requests were never the DAG's: only the user's handles */
        let_go_all(us);
        atomic_store(&us->done, true);
        cdn_request_release(us->req);
    }
    release(us);
}

/* ---- building ---- */

static int check_open(struct cdn_schedule *us, const char *caller)
{
    if (us->committed)
        return cdn_err(MPI_ERR_ARG, "%s: schedule %p is committed: nothing can be added to it",
                       caller, (void *)us);
    return MPI_SUCCESS;
}

static struct round *current(struct cdn_schedule *us)
{
    return &us->rounds[us->nrounds - 1];
}

static struct item *new_item(struct cdn_schedule *us, const char *caller, int *rc)
{
    struct round *r = current(us);
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 4;
        struct item *p = realloc(r->items, (size_t)cap * sizeof *p);
        if (p == NULL) {
            *rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
            return NULL;
        }
        r->items = p;
        r->cap = cap;
    }
    struct item *it = &r->items[r->n];
    memset(it, 0, sizeof *it);
    us->last_round = us->nrounds - 1;
    us->last_item = r->n++;
    return it;
}

bool cdn_usched_owner_name(const struct cdn_request *r, char *buf, size_t len)
{
    const struct cdn_request *p = r->parent, *d = cdn_sched_node_owner(p);
    if (d != NULL)
        p = d->parent;
    if (p == NULL || (p->ops != &user_ops && p->ops != &tail_ops))
        return false;
    struct cdn_schedule *us = of(p);
    if (us->committed)
        snprintf(buf, len, "schedule %p (request 0x%x)", (void *)us, (unsigned)us->req->handle);
    else
        snprintf(buf, len, "schedule %p", (void *)us);
    return true;
}

int cdn_usched_add_request(struct cdn_schedule *us, struct cdn_request *r, MPI_Request handle,
                           const char *caller)
{
    int rc = check_open(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (r == NULL || r->kind == CDN_REQ_MESSAGE)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is not a valid request", caller,
                       (unsigned)handle);
    if (!r->persistent || r->ops->start == NULL)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is not a persistent request (only "
                       "requests made by an _init call or a schedule's commit can be added%s)",
                       caller, (unsigned)handle,
                       r->kind == CDN_REQ_GREQ ? "; MPIX_Grequest_init makes a generalized "
                                                 "request a schedule can hold" : "");
    char owner[96];
    if (r->parent != NULL)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is already an operation of %s",
                       caller, (unsigned)handle,
                       cdn_usched_owner_name(r, owner, sizeof owner) ? owner : "a schedule");
    if (r->active)
        return cdn_err(MPI_ERR_REQUEST, "%s: persistent request 0x%x is active", caller,
                       (unsigned)handle);
    struct item *it = new_item(us, caller, &rc);
    if (it == NULL)
        return rc;
    it->kind = I_REQUEST;
    it->req = r;
    r->parent = us->req;  /* owned from now on (MPI_Start and MPI_Request_free refuse it) */
    return MPI_SUCCESS;
}

int cdn_usched_add_reduce(struct cdn_schedule *us, struct cdn_op *op, const void *in, void *inout,
                          int len, struct cdn_datatype *dt, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    struct item *it = new_item(us, caller, &rc);
    if (it == NULL)
        return rc;
    it->kind = I_REDUCE;
    it->op = op;
    it->dt = dt;
    it->in = in;
    it->inout = inout;
    it->len = len;
    cdn_op_retain(op);
    cdn_datatype_retain(dt);
    return MPI_SUCCESS;
}

/* Close the current round if it holds operations (an empty round is
 * never made). */
static int close_round(struct cdn_schedule *us, const char *caller)
{
    if (current(us)->n == 0)
        return MPI_SUCCESS;
    if (us->nrounds == us->caprounds) {
        int cap = us->caprounds * 2;
        struct round *p = realloc(us->rounds, (size_t)cap * sizeof *p);
        if (p == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        us->rounds = p;
        us->caprounds = cap;
    }
    memset(&us->rounds[us->nrounds++], 0, sizeof us->rounds[0]);
    return MPI_SUCCESS;
}

int cdn_usched_round(struct cdn_schedule *us, const char *caller)
{
    int rc = check_open(us, caller);
    return rc != MPI_SUCCESS ? rc : close_round(us, caller);
}

/* Does a repeat group cut through the point before round p? */
static const struct repeat *cut(const struct cdn_schedule *us, int p)
{
    for (int k = 0; k < us->nrepeats; k++)
        if (us->repeats[k].first < p && p <= us->repeats[k].last)
            return &us->repeats[k];
    return NULL;
}

int cdn_usched_mark_reset(struct cdn_schedule *us, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    int p = us->nrounds - 1;  /* the current round is the first to run again */
    if (us->completion >= 0 && p > us->completion)
        return cdn_err(MPI_ERR_ARG, "%s: the reset point (before round %d) would come after "
                       "the completion point (before round %d)", caller, p, us->completion);
    const struct repeat *g = cut(us, p);
    if (g != NULL)
        return cdn_err(MPI_ERR_ARG, "%s: the reset point (before round %d) would split the "
                       "repeated rounds %d..%d", caller, p, g->first, g->last);
    us->reset = p;
    return MPI_SUCCESS;
}

int cdn_usched_mark_completion(struct cdn_schedule *us, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc == MPI_SUCCESS)
        rc = close_round(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    int p = us->nrounds - 1;  /* rounds from the next one on form the tail */
    if (p < us->reset)
        return cdn_err(MPI_ERR_ARG, "%s: the completion point (before round %d) would come "
                       "before the reset point (before round %d)", caller, p, us->reset);
    us->completion = p;
    return MPI_SUCCESS;
}

int cdn_usched_repeat(struct cdn_schedule *us, int nrounds, int count,
                      MPIX_Schedule_predicate_function *pred, void *state, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 1 && count != MPIX_SCHEDULE_UNBOUNDED)
        return cdn_err(MPI_ERR_ARG, "%s: count %d is neither positive nor "
                       "MPIX_SCHEDULE_UNBOUNDED", caller, count);
    if (count == MPIX_SCHEDULE_UNBOUNDED && pred == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: count is MPIX_SCHEDULE_UNBOUNDED and predicate is "
                       "NULL: the rounds would repeat forever", caller);
    int closed = us->nrounds - (current(us)->n == 0 ? 1 : 0);
    if (nrounds < 1 || nrounds > closed)
        return cdn_err(MPI_ERR_ARG, "%s: nrounds %d is not between 1 and the %d round%s built "
                       "so far", caller, nrounds, closed, closed == 1 ? "" : "s");
    int first = closed - nrounds, last = closed - 1;
    if (first < us->reset && us->reset <= last)
        return cdn_err(MPI_ERR_ARG, "%s: rounds %d..%d would contain the reset point (before "
                       "round %d)", caller, first, last, us->reset);
    if (us->completion >= 0 && first < us->completion && us->completion <= last)
        return cdn_err(MPI_ERR_ARG, "%s: rounds %d..%d would contain the completion point "
                       "(before round %d)", caller, first, last, us->completion);
    for (int k = 0; k < us->nrepeats; k++) {
        const struct repeat *g = &us->repeats[k];
        if (g->first < first && first <= g->last)
            return cdn_err(MPI_ERR_ARG, "%s: rounds %d..%d would overlap the repeated rounds "
                           "%d..%d without containing them", caller, first, last, g->first,
                           g->last);
    }
    if (us->nrepeats == us->caprepeats) {
        int cap = us->caprepeats ? us->caprepeats * 2 : 2;
        struct repeat *p = realloc(us->repeats, (size_t)cap * sizeof *p);
        if (p == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        us->repeats = p;
        us->caprepeats = cap;
    }
    if ((rc = close_round(us, caller)) != MPI_SUCCESS)
        return rc;
    us->repeats[us->nrepeats++] = (struct repeat){first, last, count, pred, state};
    return MPI_SUCCESS;
}

static int check_scope(int scope, bool whole, const char *caller)
{
    if (scope == MPIX_SCHEDULE_ROUND || (whole ? scope == MPIX_SCHEDULE_WHOLE
                                               : scope == MPIX_SCHEDULE_OPERATION))
        return MPI_SUCCESS;
    return cdn_err(MPI_ERR_ARG, "%s: scope %d is not MPIX_SCHEDULE_%s or MPIX_SCHEDULE_ROUND",
                   caller, scope, whole ? "WHOLE" : "OPERATION");
}

int cdn_usched_condition(struct cdn_schedule *us, int scope,
                         MPIX_Schedule_predicate_function *pred, void *state, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc == MPI_SUCCESS)
        rc = check_scope(scope, false, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (pred == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: predicate is NULL", caller);
    if (scope == MPIX_SCHEDULE_ROUND) {
        struct round *r = current(us);
        if (r->n == 0)
            return cdn_err(MPI_ERR_ARG, "%s: the current round has no operation yet (add one, "
                           "then the condition)", caller);
        if (r->pred != NULL)
            return cdn_err(MPI_ERR_ARG, "%s: the current round has a condition already", caller);
        r->pred = pred;
        r->pstate = state;
        return MPI_SUCCESS;
    }
    if (us->last_item < 0)
        return cdn_err(MPI_ERR_ARG, "%s: no operation was added yet", caller);
    struct item *it = &us->rounds[us->last_round].items[us->last_item];
    if (it->pred != NULL)
        return cdn_err(MPI_ERR_ARG, "%s: the operation added last has a condition already",
                       caller);
    it->pred = pred;
    it->pstate = state;
    return MPI_SUCCESS;
}

int cdn_usched_callback(struct cdn_schedule *us, int scope, MPIX_Schedule_callback_function *fn,
                        void *state, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc == MPI_SUCCESS)
        rc = check_scope(scope, true, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (scope == MPIX_SCHEDULE_WHOLE) {
        us->cb = fn;
        us->cbstate = state;
        return MPI_SUCCESS;
    }
    struct round *r = current(us);
    if (r->n == 0)
        return cdn_err(MPI_ERR_ARG, "%s: the current round has no operation yet (add one, then "
                       "the callback)", caller);
    r->cb = fn;
    r->cbstate = state;
    return MPI_SUCCESS;
}

int cdn_usched_set_auto_free(struct cdn_schedule *us, bool on, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc == MPI_SUCCESS)
        us->auto_free = on;
    return rc;
}

/* ---- compiling ---- */

static int guard_holds(void *arg)
{
    struct guard *g = arg;
    if (g->prefix && !atomic_load_explicit(&g->us->run_prefix, memory_order_relaxed))
        return 0;
    if (g->round_on != NULL && !atomic_load_explicit(g->round_on, memory_order_relaxed))
        return 0;
    return g->pred == NULL || g->pred(g->state) != 0;
}

/* Guard node id (NULL fields: no guard needed). */
static void guard(struct cdn_schedule *us, struct cdn_sched *s, int id, bool prefix,
                  atomic_int *round_on, MPIX_Schedule_predicate_function *pred, void *state)
{
    if (!prefix && round_on == NULL && pred == NULL)
        return;
    struct guard *g = &us->guards[us->nguards++];
    *g = (struct guard){us, prefix, round_on, pred, state};
    cdn_sched_guard(s, id, guard_holds, g);
}

/* A round's condition, decided as the round starts (a callback node). */
static int decide_round(void *arg)
{
    struct round *r = arg;
    atomic_store_explicit(&r->on, r->pred(r->pstate) != 0, memory_order_relaxed);
    return MPI_SUCCESS;
}

static void emit_round(struct cdn_schedule *us, struct cdn_sched *s, struct round *r, bool prefix)
{
    atomic_int *on = NULL;
    if (r->pred != NULL) {
        guard(us, s, cdn_sched_callback(s, decide_round, r), prefix, NULL, NULL, NULL);
        cdn_sched_round(s);
        on = &r->on;
    }
    for (int i = 0; i < r->n; i++) {
        struct item *it = &r->items[i];
        int id;
        if (it->kind == I_REQUEST) {
            cdn_request_retain(it->req);  /* the DAG's reference */
            id = cdn_sched_request(s, it->req);
        } else {
            id = cdn_sched_reduce(s, it->in, it->inout, it->len, it->dt, it->op);
        }
        guard(us, s, id, prefix, on, it->pred, it->pstate);
    }
    cdn_sched_round(s);
    if (r->cb != NULL) {
        guard(us, s, cdn_sched_callback(s, r->cb, r->cbstate), prefix, on, NULL, NULL);
        cdn_sched_round(s);
    }
}

/* Rounds [from, to) as one DAG, child of parent. */
static int compile(struct cdn_schedule *us, int from, int to, bool main, struct cdn_request *parent,
                   struct cdn_request **out, const char *caller)
{
    int *first = malloc((size_t)(to - from + 1) * sizeof *first);
    struct cdn_sched *s = first != NULL ? cdn_sched_new(NULL, 0, true) : NULL;
    if (s == NULL) {
        free(first);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for the schedule", caller);
    }
    for (int r = from; r < to; r++) {
        bool prefix = main && r < us->reset;
        first[r - from] = cdn_sched_size(s);
        emit_round(us, s, &us->rounds[r], prefix);
        for (int k = 0; k < us->nrepeats; k++) {  /* inner groups were added first */
            const struct repeat *g = &us->repeats[k];
            if (g->last != r)
                continue;
            int id = cdn_sched_loop(s, first[g->first - from], g->count, g->pred, g->state);
            guard(us, s, id, prefix, NULL, NULL, NULL);
            cdn_sched_round(s);
        }
    }
    if (main && us->cb != NULL)
        cdn_sched_callback(s, us->cb, us->cbstate);
    free(first);
    int rc = cdn_sched_commit(s, caller, out);
    if (rc == MPI_SUCCESS)
        (*out)->parent = parent;
    return rc;
}

int cdn_usched_commit(struct cdn_schedule *us, struct cdn_request **out, const char *caller)
{
    int rc = check_open(us, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (us->main != NULL || us->guards != NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: an earlier commit of schedule %p ran out of memory; "
                       "free it", caller, (void *)us);
    if (us->nrounds > 1 && current(us)->n == 0)
        us->nrounds--;  /* the empty current round is trimmed */
    int nitems = 0;
    for (int r = 0; r < us->nrounds; r++)
        nitems += us->rounds[r].n;
    if (nitems == 0) {
        return cdn_err(MPI_ERR_ARG, "%s: schedule %p has no operation: nothing to commit",
                       caller, (void *)us);
    }
    int split = us->completion >= 0 && us->completion < us->nrounds ? us->completion
                                                                      : us->nrounds;
    if (us->reset > split)
        us->reset = split;
    us->guards = calloc((size_t)(nitems + 2 * us->nrounds + us->nrepeats), sizeof *us->guards);
    if (us->guards == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for the schedule", caller);
    if (split < us->nrounds) {
        us->tail_done = cdn_request_alloc(CDN_REQ_SCHED, &tail_ops, NULL);
        if (us->tail_done == NULL)
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for the schedule", caller);
        memcpy(us->tail_done->u.room, &us, sizeof us);
    }
    rc = compile(us, 0, split, true, us->req, &us->main, caller);
    if (rc == MPI_SUCCESS && split < us->nrounds)
        rc = compile(us, split, us->nrounds, false, us->tail_done, &us->tail, caller);
    if (rc != MPI_SUCCESS) {
        /* a DAG made before the failure keeps its references on the
         * sub-requests; they stay the schedule's until it is freed */
        return rc;
    }
    us->committed = true;
    cdn_request_retain(us->req);  /* the user's handle */
    *out = us->req;
    return MPI_SUCCESS;
}

/* ---- running ---- */

static int user_start(struct cdn_request *w)
{
    struct cdn_schedule *us = of(w);
    atomic_store_explicit(&us->run_prefix, !us->started, memory_order_relaxed);
    us->started = true;
    atomic_fetch_or(&us->st, ST_BUSY);
    cdn_status_empty(&w->status);
    cdn_request_arm(w, 1);
    return cdn_sched_start(us->main);
}

/* Sub-requests freed or given back; the schedule's own reference on its
 * request goes. */
static void finished(struct cdn_schedule *us)
{
    let_go_all(us);
    atomic_store(&us->done, true);
    cdn_progress_signal();  /* MPI_Finalize may wait for it */
    cdn_request_release(us->req);
}

/* The request was freed and no instance runs: run the tail, once. */
static void final(struct cdn_schedule *us)
{
    if (atomic_fetch_or(&us->st, ST_FINAL) & ST_FINAL)
        return;
    if (us->tail == NULL) {
        finished(us);
        return;
    }
    cdn_request_arm(us->tail_done, 1);
    cdn_sched_start(us->tail);
}

static void tail_complete(struct cdn_request *t)
{
    finished(of(t));
}

static void user_complete(struct cdn_request *w)
{
    struct cdn_schedule *us = of(w);
    w->status.MPI_ERROR = us->main->status.MPI_ERROR;
    if (atomic_fetch_and(&us->st, ~ST_BUSY) & ST_FREED)
        final(us);
}

bool cdn_usched_is_request(const struct cdn_request *r)
{
    return r != NULL && r->ops == &user_ops;
}

void cdn_usched_request_free(struct cdn_request *r)
{
    struct cdn_schedule *us = of(r);
    int old = atomic_fetch_or(&us->st, ST_FREED);
    cdn_request_unpublish(r);  /* the schedule's own reference keeps it */
    if (!(old & ST_BUSY))
        final(us);
}

/* ---- MPI_Finalize ---- */

static bool is_done(void *arg)
{
    return atomic_load(&((struct cdn_schedule *)arg)->done);
}

/* One schedule the user left to MPI_Finalize, retained, or NULL: a builder
 * handle of an uncommitted schedule, a request not freed (and not a
 * sub-request), or a schedule whose tail still runs. */
static struct cdn_schedule *left_over(bool *request)
{
    struct cdn_schedule *found = NULL;
    pthread_mutex_lock(&all.lock);
    for (struct cdn_schedule *us = all.head; us != NULL && found == NULL; us = us->next) {
        bool live = us->committed && atomic_load(&us->req->live) && us->req->parent == NULL;
        if ((!us->committed && us->handle_live) || live ||
            (us->committed && !atomic_load(&us->done) && us->req->parent == NULL &&
             (atomic_load(&us->st) & ST_FREED))) {
            found = us;
            *request = live;
            retain(us);
        }
    }
    pthread_mutex_unlock(&all.lock);
    return found;
}

void cdn_usched_finalize(void)
{
    struct cdn_schedule *us;
    bool request;
    while ((us = left_over(&request)) != NULL) {
        if (!us->committed) {
            cdn_usched_free(us);  /* gives its sub-requests back, or frees them */
        } else if (request) {
            if (atomic_load(&us->st) & ST_BUSY)
                cdn_request_wait(us->req);  /* started and never completed by the user */
            cdn_usched_request_free(us->req);
        } else {
            cdn_progress_wait_until(is_done, us);
        }
        release(us);
    }
    /* the handles the user did not free */
    for (;;) {
        pthread_mutex_lock(&all.lock);
        us = all.head;
        while (us != NULL && !us->handle_live)
            us = us->next;
        if (us != NULL)
            us->handle_live = false;
        pthread_mutex_unlock(&all.lock);
        if (us == NULL)
            break;
        release(us);
    }
}
