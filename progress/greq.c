/*
 * Generalized requests (greq.h): the request kind, its callbacks, and the
 * engine's list of polled ones.
 *
 * A polled request (MPIX_Grequest_start with a poll function) sits on a
 * list every cdn_progress_poll looks at while the list is not empty; it
 * counts as pending work, so the progress thread keeps polling (at least
 * every millisecond) instead of sleeping.  A poll takes a batch of the
 * list's requests under its lock, holding a reference to each, and calls
 * their poll functions outside it (a poll function may start or complete
 * generalized requests); a request's poll function never runs in two
 * threads at once (in_poll).  A request leaves the list as it completes.
 */
#include "progress/greq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "progress/engine.h"
#include "runtime/error.h"

struct greq {
    struct cdn_greq_fns fns;
    void *state;
    atomic_bool user_done;   /* MPI_Grequest_complete was called */
    atomic_bool in_poll;     /* a thread runs its poll function */
    bool queried, freed;
    struct cdn_request *next, *prev;  /* the polled list */
    bool listed;
};

_Static_assert(sizeof(struct greq) <= sizeof(((struct cdn_request *)0)->u.room),
               "a generalized request's state fits in the request");

static struct greq *greq_of(const struct cdn_request *r)
{
    return (struct greq *)(void *)r->u.room;
}

atomic_int cdn_greq_npolled;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cdn_request *list_head, *list_tail;

static void unlink_locked(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (!g->listed)
        return;
    if (g->prev != NULL)
        greq_of(g->prev)->next = g->next;
    else
        list_head = g->next;
    if (g->next != NULL)
        greq_of(g->next)->prev = g->prev;
    else
        list_tail = g->prev;
    g->listed = false;
    atomic_fetch_sub_explicit(&cdn_greq_npolled, 1, memory_order_relaxed);
    cdn_progress_work_changed(-1);
    cdn_request_release(r);  /* the list's reference */
}

static void greq_release_fns(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (!g->freed && g->fns.free != NULL) {
        g->freed = true;
        g->fns.free(g->state);  /* (no caller left to return its error to) */
    }
}

static int greq_cancel(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (g->fns.cancel == NULL)
        return MPI_SUCCESS;
    /* the user's error code, as the standard has it returned */
    return g->fns.cancel(g->state, atomic_load(&g->user_done));
}

static int poll_one(struct cdn_request *r);

static int greq_progress(struct cdn_request *r)
{
    return greq_of(r)->fns.poll != NULL ? poll_one(r) : 0;
}

static const struct cdn_request_ops greq_ops = {
    .name = "generalized",
    .progress = greq_progress,
    .cancel = greq_cancel,
    .free = greq_release_fns,
};

/* Put r on the polled list (unless it is there still: completed, not yet
 * dropped by a poll) and make the list's pollers look. */
static void list_add(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    pthread_mutex_lock(&list_lock);
    if (!g->listed) {
        cdn_request_retain(r);  /* the list's */
        g->prev = list_tail;
        g->next = NULL;
        if (list_tail != NULL)
            greq_of(list_tail)->next = r;
        else
            list_head = r;
        list_tail = r;
        g->listed = true;
        atomic_fetch_add_explicit(&cdn_greq_npolled, 1, memory_order_relaxed);
        cdn_progress_work_changed(1);
    }
    pthread_mutex_unlock(&list_lock);
    cdn_progress_kick();  /* a sleeping progress thread: poll from now on */
}

static struct cdn_request *greq_new(const struct cdn_greq_fns *fns, void *extra_state,
                                    const struct cdn_request_ops *ops)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_GREQ, ops, NULL);
    if (r == NULL)
        return NULL;
    struct greq *g = greq_of(r);
    memset(g, 0, sizeof *g);
    g->fns = *fns;
    g->state = extra_state;
    cdn_status_empty(&r->status);
    return r;
}

int cdn_greq_start(const struct cdn_greq_fns *fns, void *extra_state, struct cdn_request **out)
{
    struct cdn_request *r = greq_new(fns, extra_state, &greq_ops);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Grequest_start: out of memory for a request");
    cdn_request_arm(r, 1);  /* MPI_Grequest_complete is its event */
    *out = r;
    return MPI_SUCCESS;
}

void cdn_greq_begin(struct cdn_request *r)
{
    if (greq_of(r)->fns.poll != NULL)
        list_add(r);
}

/* MPI_Start of a persistent one: a new instance.  Armed before user_done
 * drops, so a poll function that completes it at once finds it armed;
 * a poll of the last instance still running in another thread only
 * delays the first poll of this one (in_poll). */
static int greq_restart(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    g->queried = false;
    cdn_status_empty(&r->status);
    cdn_request_arm(r, 1);
    atomic_store(&g->user_done, false);
    if (g->fns.poll != NULL)
        list_add(r);
    return MPI_SUCCESS;
}

/* The last event of an instance.  A schedule's node has nobody to run the
 * query function as a wait would: it runs here, in the completing thread,
 * and its error becomes the node's (and the schedule's). */
static void greq_instance_done(struct cdn_request *r)
{
    if (r->parent != NULL)
        cdn_greq_settle(r);
}

static const struct cdn_request_ops greq_persistent_ops = {
    .name = "persistent generalized",
    .start = greq_restart,
    .complete = greq_instance_done,
    .progress = greq_progress,
    .cancel = greq_cancel,
    .free = greq_release_fns,
};

int cdn_greq_init(const struct cdn_greq_fns *fns, void *extra_state, struct cdn_request **out)
{
    struct cdn_request *r = greq_new(fns, extra_state, &greq_persistent_ops);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPIX_Grequest_init: out of memory for a request");
    r->persistent = true;  /* inactive (complete) until started */
    atomic_store(&greq_of(r)->user_done, true);
    *out = r;
    return MPI_SUCCESS;
}

/* Complete r, with an error (a poll function's) or none. */
static int complete(struct cdn_request *r, int err, const char *caller)
{
    struct greq *g = greq_of(r);
    bool was = false;
    if (!atomic_compare_exchange_strong(&g->user_done, &was, true))
        return cdn_err(MPI_ERR_REQUEST, "%s: the generalized request is complete already",
                       caller);
    if (err != MPI_SUCCESS)
        r->status.MPI_ERROR = err;
    if (g->fns.poll != NULL) {
        /* off the list now (the engine's reference keeps r until the
         * event), so the list holds no reference once it is complete: the
         * free function runs at the call that frees it */
        pthread_mutex_lock(&list_lock);
        unlink_locked(r);
        pthread_mutex_unlock(&list_lock);
    }
    cdn_request_event(r);
    return MPI_SUCCESS;
}

int cdn_greq_complete(struct cdn_request *r, const char *caller)
{
    return complete(r, MPI_SUCCESS, caller);
}

void cdn_greq_settle(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (g->queried)
        return;
    g->queried = true;
    int failed = r->status.MPI_ERROR;  /* (a poll function's error) */
    cdn_status_empty(&r->status);
    int rc = g->fns.query != NULL ? g->fns.query(g->state, &r->status) : MPI_SUCCESS;
    r->status.MPI_ERROR = failed != MPI_SUCCESS ? failed : rc;
}

int cdn_greq_free_fn(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (g->freed || g->fns.free == NULL)
        return MPI_SUCCESS;
    g->freed = true;
    return g->fns.free(g->state);  /* (the user's error code, returned as it is) */
}

MPIX_Grequest_wait_function *cdn_greq_wait_fn(const struct cdn_request *r)
{
    return r->kind == CDN_REQ_GREQ ? greq_of(r)->fns.wait : NULL;
}

void *cdn_greq_state(const struct cdn_request *r)
{
    return greq_of(r)->state;
}

/* Run r's poll function unless another thread does; 1 if r is complete. */
static int poll_one(struct cdn_request *r)
{
    struct greq *g = greq_of(r);
    if (atomic_load(&g->user_done))
        return 1;
    bool no = false;
    if (!atomic_compare_exchange_strong(&g->in_poll, &no, true))
        return 0;
    MPI_Status st;
    cdn_status_empty(&st);
    int rc = g->fns.poll(g->state, &st);
    atomic_store(&g->in_poll, false);
    if (rc != MPI_SUCCESS && !atomic_load(&g->user_done)) {
        /* the operation failed: the request completes with the error, so
         * nobody waits for it for ever */
        complete(r, rc, "poll");
    }
    return atomic_load(&g->user_done) ? 1 : 0;
}

enum { BATCH = 64 };

int cdn_greq_poll_slow(void)
{
    struct cdn_request *batch[BATCH];
    int n = 0;
    pthread_mutex_lock(&list_lock);
    for (struct cdn_request *r = list_head, *next; r != NULL && n < BATCH; r = next) {
        next = greq_of(r)->next;
        if (atomic_load(&greq_of(r)->user_done)) {
            unlink_locked(r);
            continue;
        }
        cdn_request_retain(r);
        batch[n++] = r;
    }
    /* round robin: the batch goes to the list's end */
    for (int i = 0; i < n && list_head != NULL && list_head != list_tail; i++) {
        if (list_head != batch[i])
            break;
        struct cdn_request *r = list_head;
        struct greq *g = greq_of(r);
        list_head = g->next;
        greq_of(list_head)->prev = NULL;
        g->prev = list_tail;
        g->next = NULL;
        greq_of(list_tail)->next = r;
        list_tail = r;
    }
    pthread_mutex_unlock(&list_lock);
    int done = 0;
    for (int i = 0; i < n; i++) {
        done += poll_one(batch[i]);
        cdn_request_release(batch[i]);
    }
    return done;
}
