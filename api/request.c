/*
 * Bindings of the request calls: the wait/test family, MPI_Request_free,
 * MPI_Request_get_status(_any/_some/_all), MPI_Start(all), MPI_Cancel,
 * MPI_Test_cancelled.
 *
 * A sub-request of a user schedule (sched/user.c) may be waited for and
 * tested, not started or freed; freeing a schedule's request runs its
 * completion part.
 *
 * Rules implemented here (MPI-4.1 3.7): a null or inactive request counts
 * as complete with an empty status; completing a nonpersistent request
 * frees it and sets the handle to MPI_REQUEST_NULL, a persistent one becomes
 * inactive; single-completion calls return the request's error and leave
 * status.MPI_ERROR alone, the _all/_some forms return MPI_ERR_IN_STATUS and
 * set MPI_ERROR in every status they report.  Errors go to the handler of
 * the failing request's communicator (flag reqerrh in mpi.api).
 */
#include <stdbool.h>
#include <stdlib.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "partitioned/part.h"
#include "progress/engine.h"
#include "progress/greq.h"
#include "progress/p2p.h"
#include "progress/request.h"
#include "runtime/comm.h"
#include "sched/sched.h"
#include "sched/user.h"

/* The communicator whose handler sees this thread's current error. */
static CDN_TLS MPI_Comm err_comm = MPI_COMM_NULL;

void cdn_api_request_error(const struct cdn_request *r)
{
    if (err_comm == MPI_COMM_NULL && r != NULL && r->comm != NULL)
        err_comm = r->comm->handle;
}

int cdn_err_raise_request(int code)
{
    MPI_Comm comm = err_comm;
    err_comm = MPI_COMM_NULL;
    if (comm == MPI_COMM_NULL)
        return cdn_err_raise_self(code);
    return cdn_err_raise_comm(comm, code);
}

enum lookup { L_NULL, L_INACTIVE, L_ACTIVE };

static __attribute__((noinline, cold)) int lookup_fail(MPI_Request h, const char *caller,
                                                       struct cdn_request **out,
                                                       enum lookup *what)
{
    *out = NULL;
    *what = L_NULL;
    return cdn_err(MPI_ERR_REQUEST, "%s: 0x%x is not a valid request", caller, (unsigned)h);
}

/* Classify a handle; on an invalid one return an MPI_ERR_REQUEST code. */
static inline int lookup(MPI_Request h, const char *caller, struct cdn_request **out,
                         enum lookup *what)
{
    struct cdn_request *r = NULL;
    enum lookup w = L_NULL;
    if (h != MPI_REQUEST_NULL) {
        r = cdn_request_get(h);
        if (CDN_UNLIKELY(r == NULL || r->kind == CDN_REQ_MESSAGE))
            return lookup_fail(h, caller, out, what);
        w = (r->persistent && !r->active) ? L_INACTIVE : L_ACTIVE;
    }
    *out = r;
    *what = w;
    return MPI_SUCCESS;
}

static int lookup_array(int count, MPI_Request reqs[], const char *caller, struct cdn_request **rs,
                        enum lookup *what)
{
    for (int i = 0; i < count; i++) {
        int rc = lookup(reqs[i], caller, &rs[i], &what[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

static inline bool done(struct cdn_request *r)
{
    if (!cdn_request_done(r)) {
        if (r->ops->progress != NULL)
            r->ops->progress(r);
        if (!cdn_request_done(r))
            return false;
    }
    /* a generalized request's status comes from its query function, run
     * by the call that first sees it complete */
    if (CDN_UNLIKELY(r->kind == CDN_REQ_GREQ))
        cdn_greq_settle(r);
    return true;
}

/* Report a completed request and free or deactivate it. */
static int finish(MPI_Request *h, struct cdn_request *r, MPI_Status *status, bool with_error)
{
    if (CDN_UNLIKELY(r->kind == CDN_REQ_GREQ))
        cdn_greq_settle(r);
    int err = r->status.MPI_ERROR;
    cdn_status_copy(status, &r->status, with_error);
    /* the call that frees a generalized request runs its free function
     * and returns its error */
    if (CDN_UNLIKELY(r->kind == CDN_REQ_GREQ) && !r->persistent) {
        int frc = cdn_greq_free_fn(r);
        if (err == MPI_SUCCESS)
            err = frc;
    }
    if (err != MPI_SUCCESS)
        cdn_api_request_error(r);
    if (r->persistent) {
        r->active = false;
    } else {
        cdn_request_unpublish(r);
        *h = MPI_REQUEST_NULL;
    }
    return err;
}

static void empty(MPI_Status *status)
{
    if (status != MPI_STATUS_IGNORE) {
        int err = status->MPI_ERROR;
        cdn_status_empty(status);
        status->MPI_ERROR = err;
    }
}

static int args_array(int count, const void *reqs, const char *caller)
{
    if (count < 0)
        return cdn_err(MPI_ERR_COUNT, "%s: count %d is negative", caller, count);
    if (count > 0 && reqs == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: array_of_requests is NULL with count %d", caller, count);
    return MPI_SUCCESS;
}

/* Scratch for array calls: on the stack for small arrays. */
#define SMALL 64  /* OSU's window */
struct scratch {
    struct cdn_request *rs_small[SMALL];
    enum lookup what_small[SMALL];
    struct cdn_request **rs;
    enum lookup *what;
};

static int scratch_get(struct scratch *s, int count, const char *caller)
{
    s->rs = s->rs_small;
    s->what = s->what_small;
    if (count > SMALL) {
        s->rs = malloc((size_t)count * sizeof *s->rs);
        s->what = malloc((size_t)count * sizeof *s->what);
        if (s->rs == NULL || s->what == NULL) {
            free(s->rs);
            free(s->what);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for %d requests", caller, count);
        }
    }
    return MPI_SUCCESS;
}

static void scratch_put(struct scratch *s)
{
    if (s->rs != s->rs_small) {
        free(s->rs);
        free(s->what);
    }
}

/* ---- single ---- */

/* Generalized requests that share a wait function: it is called, with
 * their extra states and no timeout, until they are complete (MPICH's
 * semantics). */
static void greq_wait(int n, struct cdn_request **rs)
{
    void *small[SMALL], **states = n <= SMALL ? small : malloc(sizeof *states * (size_t)n);
    MPIX_Grequest_wait_function *wait = cdn_greq_wait_fn(rs[0]);
    for (;;) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (!cdn_request_done(rs[i]) && states != NULL)
                states[k++] = cdn_greq_state(rs[i]);
        if (k == 0 || states == NULL)
            break;
        MPI_Status st;
        cdn_status_empty(&st);
        if (wait(k, states, 0.0, &st) != MPI_SUCCESS)
            break;  /* (the requests' own waits take over) */
    }
    if (states != small)
        free(states);
}

int cdn_MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Wait: request is NULL");
    struct cdn_request *r;
    enum lookup what;
    int rc = lookup(*request, "MPI_Wait", &r, &what);
    if (rc != MPI_SUCCESS)
        return rc;
    if (what != L_ACTIVE) {
        empty(status);
        return MPI_SUCCESS;
    }
    /* Often complete already (a persistent collective that finished in
     * its MPI_Start, or by the progress thread): no call into the wait,
     * which would only end a blocking call's polling, if one began, and
     * ring what a held start owed. */
    if (cdn_request_done(r)) {
        cdn_progress_wait_done();
    } else if (r->kind == CDN_REQ_GREQ && cdn_greq_wait_fn(r) != NULL) {
        greq_wait(1, &r);
    } else if ((r->kind == CDN_REQ_SCHED && cdn_sched_waits_late(r)) ||
               (r->kind == CDN_REQ_PART && cdn_part_waits_late(r))) {
        cdn_request_wait_late(r);  /* a small started collective: as MPI_Recv waits */
    } else {
        cdn_request_wait(r);
    }
    return finish(request, r, status, false);
}

/* MPI_Test and MPI_Request_get_status: one look (after a poll), freeing
 * the request only for MPI_Test. */
static int test_one(MPI_Request *h, int *flag, MPI_Status *status, bool free_it,
                    const char *caller)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: flag is NULL", caller);
    struct cdn_request *r;
    enum lookup what;
    int rc = lookup(*h, caller, &r, &what);
    if (rc != MPI_SUCCESS)
        return rc;
    *flag = 1;
    if (what != L_ACTIVE) {
        empty(status);
        return MPI_SUCCESS;
    }
    if (!done(r))
        cdn_progress_poll();
    if (!done(r)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    if (free_it)
        return finish(h, r, status, false);
    cdn_status_copy(status, &r->status, false);
    if (r->status.MPI_ERROR != MPI_SUCCESS)
        cdn_api_request_error(r);
    return r->status.MPI_ERROR;
}

int cdn_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Test: request is NULL");
    return test_one(request, flag, status, true, "MPI_Test");
}

int cdn_MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    return test_one(&request, flag, status, false, "MPI_Request_get_status");
}

/* A request argument that must not be MPI_REQUEST_NULL. */
static int lookup_given(MPI_Request *h, const char *caller, struct cdn_request **r,
                        enum lookup *what)
{
    if (h == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", caller);
    if (*h == MPI_REQUEST_NULL)
        return cdn_err(MPI_ERR_REQUEST, "%s: the request is MPI_REQUEST_NULL", caller);
    return lookup(*h, caller, r, what);
}

/* A sub-request of a user schedule is the schedule's to start and free
 * (docs/schedules.md): MPI_ERR_REQUEST naming the schedule. */
static int owned(struct cdn_request *r, MPI_Request h, const char *caller)
{
    char owner[96];
    if (r == NULL || r->parent == NULL)
        return MPI_SUCCESS;
    cdn_api_request_error(r);
    return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is an operation of %s: the schedule "
                   "starts and frees it (start or free the schedule's request instead)",
                   caller, (unsigned)h,
                   cdn_usched_owner_name(r, owner, sizeof owner) ? owner : "a schedule");
}

int cdn_MPI_Request_free(MPI_Request *request)
{
    struct cdn_request *r;
    enum lookup what;
    int rc = lookup_given(request, "MPI_Request_free", &r, &what);
    if (rc == MPI_SUCCESS)
        rc = owned(r, *request, "MPI_Request_free");
    if (rc != MPI_SUCCESS)
        return rc;
    if (r->kind == CDN_REQ_PART && (rc = cdn_part_user_free(r, "MPI_Request_free")) != MPI_SUCCESS) {
        cdn_api_request_error(r);
        return rc;
    }
    /* an inactive persistent generalized request: its free function runs
     * now, and its error is this call's (an active one's runs when it
     * completes, with nobody to return it to) */
    if (r->kind == CDN_REQ_GREQ && what == L_INACTIVE)
        rc = cdn_greq_free_fn(r);
    if (cdn_usched_is_request(r))
        cdn_usched_request_free(r);  /* runs the part after its completion point */
    else
        cdn_request_unpublish(r);  /* an active request lives on until it completes */
    *request = MPI_REQUEST_NULL;
    return rc;
}

int cdn_MPI_Cancel(MPI_Request *request)
{
    struct cdn_request *r;
    enum lookup what;
    int rc = lookup_given(request, "MPI_Cancel", &r, &what);
    if (rc != MPI_SUCCESS)
        return rc;
    if (what == L_INACTIVE)
        return cdn_err(MPI_ERR_REQUEST, "MPI_Cancel: persistent request 0x%x is not active",
                       (unsigned)*request);
    if (r->kind == CDN_REQ_PART) {
        cdn_api_request_error(r);
        return cdn_err(MPI_ERR_REQUEST, "MPI_Cancel: request 0x%x is partitioned; an active "
                       "partitioned request cannot be cancelled", (unsigned)*request);
    }
    if (r->ops->cancel != NULL)
        return r->ops->cancel(r);
    return MPI_SUCCESS;
}

int cdn_MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    if (status == NULL || status == MPI_STATUS_IGNORE || flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Test_cancelled: %s",
                       flag == NULL ? "flag is NULL" : "status is NULL or MPI_STATUS_IGNORE");
    *flag = (status->count_hi_and_cancelled & CDN_STATUS_CANCELLED_BIT) != 0;
    return MPI_SUCCESS;
}

/* A request that cannot be started: its communicator's handler sees it. */
static int start_check(struct cdn_request *r, enum lookup what, MPI_Request h, const char *caller)
{
    if (what == L_NULL)
        return cdn_err(MPI_ERR_REQUEST, "%s: the request is MPI_REQUEST_NULL", caller);
    int rc = owned(r, h, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    bool startable = r->persistent && r->ops->start != NULL;
    if (startable && what != L_ACTIVE)
        return MPI_SUCCESS;
    cdn_api_request_error(r);
    if (!startable)
        return cdn_err(MPI_ERR_REQUEST, "%s: request 0x%x is not a persistent request", caller,
                       (unsigned)h);
    return cdn_err(MPI_ERR_REQUEST, "%s: persistent request 0x%x is already active", caller,
                   (unsigned)h);
}

int cdn_MPI_Start(MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Start: request is NULL");
    struct cdn_request *r;
    enum lookup what;
    int rc = lookup(*request, "MPI_Start", &r, &what);
    /* An inactive persistent request of the user's own passes start_check:
     * the usual case skips the call. */
    if (rc == MPI_SUCCESS && !CDN_LIKELY(what == L_INACTIVE && r->parent == NULL &&
                                         r->ops->start != NULL))
        rc = start_check(r, what, *request, "MPI_Start");
    if (rc != MPI_SUCCESS)
        return rc;
    r->active = true;
    rc = r->ops->start(r);
    cdn_p2p_started(r);
    return rc;
}

int cdn_MPI_Startall(int count, MPI_Request array_of_requests[])
{
    int rc = args_array(count, array_of_requests, "MPI_Startall");
    if (rc != MPI_SUCCESS)
        return rc;
    struct scratch s;
    if ((rc = scratch_get(&s, count, "MPI_Startall")) != MPI_SUCCESS)
        return rc;
    rc = lookup_array(count, array_of_requests, "MPI_Startall", s.rs, s.what);
    for (int i = 0; rc == MPI_SUCCESS && i < count; i++)
        rc = start_check(s.rs[i], s.what[i], array_of_requests[i], "MPI_Startall");
    for (int i = 0; rc == MPI_SUCCESS && i < count; i++) {
        s.rs[i]->active = true;
        s.rs[i]->ops->start(s.rs[i]);
        cdn_p2p_started(s.rs[i]);
    }
    scratch_put(&s);
    return rc;
}

/* ---- any ---- */

/* One pass of Waitany/Testany: *index of a completed request (finished),
 * MPI_UNDEFINED with *none when nothing is active. */
static int any_pass(int count, MPI_Request reqs[], struct scratch *s, int *index, bool *none,
                    MPI_Status *status, bool free_it)
{
    *none = true;
    *index = MPI_UNDEFINED;
    for (int i = 0; i < count; i++) {
        if (s->what[i] != L_ACTIVE)
            continue;
        *none = false;
        if (done(s->rs[i])) {
            *index = i;
            if (!free_it) {
                cdn_status_copy(status, &s->rs[i]->status, false);
                if (s->rs[i]->status.MPI_ERROR != MPI_SUCCESS)
                    cdn_api_request_error(s->rs[i]);
                return s->rs[i]->status.MPI_ERROR;
            }
            return finish(&reqs[i], s->rs[i], status, false);
        }
    }
    return MPI_SUCCESS;
}

/* One pass over the requests of an any/some call, as a wait condition. */
struct pass {
    int count;
    MPI_Request *reqs;
    struct scratch *s;
    int *index;              /* any: the completed one; some: outcount */
    int *indices;            /* some */
    MPI_Status *status;      /* any: one; some: the array */
    bool free_it, none;
    int rc;
};

static bool any_found(void *arg)
{
    struct pass *a = arg;
    a->rc = any_pass(a->count, a->reqs, a->s, a->index, &a->none, a->status, a->free_it);
    return *a->index != MPI_UNDEFINED || a->none;
}

static int anyof(const char *caller, int count, MPI_Request reqs[], int *index, int *flag,
                 MPI_Status *status, bool wait, bool free_it)
{
    int rc = args_array(count, reqs, caller);
    if (rc == MPI_SUCCESS && (index == NULL || (!wait && flag == NULL)))
        rc = cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, index == NULL ? "index" : "flag");
    if (rc != MPI_SUCCESS)
        return rc;
    struct scratch s;
    if ((rc = scratch_get(&s, count, caller)) != MPI_SUCCESS)
        return rc;
    if ((rc = lookup_array(count, reqs, caller, s.rs, s.what)) != MPI_SUCCESS)
        goto out;
    struct pass a = {.count = count, .reqs = reqs, .s = &s, .index = index, .status = status,
                     .free_it = free_it};
    if (wait) {
        cdn_progress_wait_until(any_found, &a);
    } else if (!any_found(&a)) {
        cdn_progress_poll();
        any_found(&a);
    }
    rc = a.rc;
    if (flag != NULL)
        *flag = (*index != MPI_UNDEFINED || a.none);
    if (a.none)
        empty(status);
out:
    scratch_put(&s);
    return rc;
}

int cdn_MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status)
{
    return anyof("MPI_Waitany", count, array_of_requests, indx, NULL, status, true, true);
}

int cdn_MPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag,
                    MPI_Status *status)
{
    return anyof("MPI_Testany", count, array_of_requests, indx, flag, status, false, true);
}

int cdn_MPI_Request_get_status_any(int count, MPI_Request array_of_requests[], int *index,
                                   int *flag, MPI_Status *status)
{
    return anyof("MPI_Request_get_status_any", count, array_of_requests, index, flag, status,
                 false, false);
}

/* ---- all ---- */

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Report every request (all complete or null/inactive); failed: one of
 * the active ones holds an error (the caller's scan for completion saw
 * it, so the statuses need no pass of their own to find it). */
static int report_all(int count, MPI_Request reqs[], struct scratch *s, MPI_Status *statuses,
                      bool free_it, bool failed)
{
    for (int i = 0; i < count; i++) {
        MPI_Status *st = status_at(statuses, i);
        struct cdn_request *r = s->rs[i];
        if (s->what[i] != L_ACTIVE) {
            empty(st);
            if (failed && st != MPI_STATUS_IGNORE)
                st->MPI_ERROR = MPI_SUCCESS;
            continue;
        }
        if (free_it)
            finish(&reqs[i], r, st, failed);
        else {
            cdn_status_copy(st, &r->status, failed);
            if (r->status.MPI_ERROR != MPI_SUCCESS)
                cdn_api_request_error(r);
        }
    }
    return failed ? cdn_err(MPI_ERR_IN_STATUS, "completing %d requests: at least one failed; see "
                            "the MPI_ERROR field of the statuses", count)
                  : MPI_SUCCESS;
}

/* Scan for completion from *next on: true when every active request is
 * done; *next moves past the done ones, *failed notes an error in them. */
static inline bool scan_done(int count, int *next, struct scratch *s, bool *failed)
{
    int i = *next;
    bool f = *failed;
    for (; i < count; i++) {
        struct cdn_request *r = s->rs[i];
        if (s->what[i] != L_ACTIVE)
            continue;
        if (!done(r))
            break;
        f |= r->status.MPI_ERROR != MPI_SUCCESS;
    }
    *next = i;
    *failed = f;
    return i == count;
}

/* The progress context every active request not yet done is on, or -1
 * (none, or several): MPI_Waitall then waits focused on it. */
static int same_context(int count, const struct scratch *s)
{
    int k = -1;
    for (int i = 0; i < count; i++) {
        struct cdn_request *r = s->rs[i];
        if (s->what[i] != L_ACTIVE || done(r))
            continue;
        if (k >= 0 && r->pctx != k)
            return -1;
        k = r->pctx;
    }
    return k;
}

/* Every active request not yet done is a generalized request with the
 * same wait function: hand them to it first. */
static void greq_waitall(int count, struct scratch *s)
{
    MPIX_Grequest_wait_function *wait = NULL;
    int n = 0;
    for (int i = 0; i < count; i++) {
        struct cdn_request *r = s->rs[i];
        if (s->what[i] != L_ACTIVE || cdn_request_done(r))
            continue;
        MPIX_Grequest_wait_function *w = cdn_greq_wait_fn(r);
        if (w == NULL || (wait != NULL && w != wait))
            return;
        wait = w;
        n++;
    }
    if (n == 0)
        return;
    struct cdn_request *small[SMALL], **rs = n <= SMALL ? small : malloc(sizeof *rs * (size_t)n);
    if (rs == NULL)
        return;
    n = 0;
    for (int i = 0; i < count; i++)
        if (s->what[i] == L_ACTIVE && !cdn_request_done(s->rs[i]))
            rs[n++] = s->rs[i];
    greq_wait(n, rs);
    if (rs != small)
        free(rs);
}

/* MPI_Waitall's condition: every active request done.  One wait for the
 * whole array (not one per request): a blocking call enters and leaves
 * the engine's pollers once (cdn_progress_app_enter), which the doorbell
 * of every peer looks at. */
struct all_args {
    int count, next;  /* requests before next are done */
    bool failed;      /* one of those holds an error */
    struct scratch *s;
};

static bool all_done(void *arg)
{
    struct all_args *a = arg;
    return scan_done(a->count, &a->next, a->s, &a->failed);
}

int cdn_MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    int rc = args_array(count, array_of_requests, "MPI_Waitall");
    if (rc != MPI_SUCCESS)
        return rc;
    struct scratch s;
    if ((rc = scratch_get(&s, count, "MPI_Waitall")) != MPI_SUCCESS)
        return rc;
    rc = lookup_array(count, array_of_requests, "MPI_Waitall", s.rs, s.what);
    if (rc == MPI_SUCCESS) {
        struct all_args a = {.count = count, .s = &s};
        greq_waitall(count, &s);
        int k = same_context(count, &s);
        if (k >= 0)
            cdn_progress_wait_on(k, all_done, &a);
        else
            cdn_progress_wait_until(all_done, &a);
        rc = report_all(count, array_of_requests, &s, array_of_statuses, true, a.failed);
    }
    scratch_put(&s);
    return rc;
}

static int testall(const char *caller, int count, MPI_Request reqs[], int *flag,
                   MPI_Status *statuses, bool free_it)
{
    int rc = args_array(count, reqs, caller);
    if (rc == MPI_SUCCESS && flag == NULL)
        rc = cdn_err(MPI_ERR_ARG, "%s: flag is NULL", caller);
    if (rc != MPI_SUCCESS)
        return rc;
    struct scratch s;
    if ((rc = scratch_get(&s, count, caller)) != MPI_SUCCESS)
        return rc;
    if ((rc = lookup_array(count, reqs, caller, s.rs, s.what)) != MPI_SUCCESS)
        goto out;
    int next = 0;
    bool failed = false;
    bool all = scan_done(count, &next, &s, &failed);
    if (!all) {
        cdn_progress_poll();
        all = scan_done(count, &next, &s, &failed);
    }
    *flag = all;
    if (all)
        rc = report_all(count, reqs, &s, statuses, free_it, failed);
out:
    scratch_put(&s);
    return rc;
}

int cdn_MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                    MPI_Status array_of_statuses[])
{
    return testall("MPI_Testall", count, array_of_requests, flag, array_of_statuses, true);
}

int cdn_MPI_Request_get_status_all(int count, MPI_Request array_of_requests[], int *flag,
                                   MPI_Status array_of_statuses[])
{
    return testall("MPI_Request_get_status_all", count, array_of_requests, flag,
                   array_of_statuses, false);
}

/* ---- some ---- */

static int some_pass(int count, MPI_Request reqs[], struct scratch *s, int *outcount,
                     int indices[], MPI_Status *statuses, bool free_it, bool *none)
{
    *none = true;
    *outcount = 0;
    bool failed = false;
    for (int i = 0; i < count; i++) {
        if (s->what[i] != L_ACTIVE)
            continue;
        *none = false;
        if (!done(s->rs[i]))
            continue;
        if (s->rs[i]->status.MPI_ERROR != MPI_SUCCESS)
            failed = true;
        indices[(*outcount)++] = i;
    }
    for (int k = 0; k < *outcount; k++) {
        int i = indices[k];
        MPI_Status *st = status_at(statuses, k);
        if (free_it)
            finish(&reqs[i], s->rs[i], st, failed);
        else {
            cdn_status_copy(st, &s->rs[i]->status, failed);
            if (s->rs[i]->status.MPI_ERROR != MPI_SUCCESS)
                cdn_api_request_error(s->rs[i]);
        }
        if (failed && st != MPI_STATUS_IGNORE && s->rs[i]->status.MPI_ERROR == MPI_SUCCESS)
            st->MPI_ERROR = MPI_SUCCESS;
    }
    if (*none)
        *outcount = MPI_UNDEFINED;
    return failed ? cdn_err(MPI_ERR_IN_STATUS, "completing %d of %d requests: at least one "
                            "failed; see the MPI_ERROR field of the statuses", *outcount, count)
                  : MPI_SUCCESS;
}

static bool some_found(void *arg)
{
    struct pass *a = arg;
    a->rc = some_pass(a->count, a->reqs, a->s, a->index, a->indices, a->status, a->free_it,
                      &a->none);
    return a->none || *a->index > 0;
}

static int someof(const char *caller, int count, MPI_Request reqs[], int *outcount,
                  int indices[], MPI_Status *statuses, bool wait, bool free_it)
{
    int rc = args_array(count, reqs, caller);
    if (rc == MPI_SUCCESS && (outcount == NULL || (count > 0 && indices == NULL)))
        rc = cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller,
                     outcount == NULL ? "outcount" : "array_of_indices");
    if (rc != MPI_SUCCESS)
        return rc;
    struct scratch s;
    if ((rc = scratch_get(&s, count, caller)) != MPI_SUCCESS)
        return rc;
    if ((rc = lookup_array(count, reqs, caller, s.rs, s.what)) != MPI_SUCCESS)
        goto out;
    struct pass a = {.count = count, .reqs = reqs, .s = &s, .index = outcount,
                     .indices = indices, .status = statuses, .free_it = free_it};
    if (wait) {
        cdn_progress_wait_until(some_found, &a);
    } else if (!some_found(&a)) {
        cdn_progress_poll();
        some_found(&a);
    }
    rc = a.rc;
out:
    scratch_put(&s);
    return rc;
}

int cdn_MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                     int array_of_indices[], MPI_Status array_of_statuses[])
{
    return someof("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices,
                  array_of_statuses, true, true);
}

int cdn_MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                     int array_of_indices[], MPI_Status array_of_statuses[])
{
    return someof("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices,
                  array_of_statuses, false, true);
}

int cdn_MPI_Request_get_status_some(int incount, MPI_Request array_of_requests[], int *outcount,
                                    int array_of_indices[], MPI_Status array_of_statuses[])
{
    return someof("MPI_Request_get_status_some", incount, array_of_requests, outcount,
                  array_of_indices, array_of_statuses, false, false);
}
