/*
 * Generalized requests (MPI_Grequest_*, MPIX_Grequest_*): one process.
 *
 *   t_greq basic     query/free/cancel with the standard's rules: status
 *                    from the query function (elements, cancelled), free
 *                    once by the call that frees, MPI_Request_free before
 *                    completion, completion from another thread while MPI_Wait
 *                    waits, the wait/test family with other requests,
 *                    callback errors returned, misuse errors
 *   t_greq poll      MPIX_Grequest_start: a poll function completing from
 *                    the progress thread while the main thread computes
 *                    without MPI calls (CADENCE_PROGRESS_THREADS=0: from the
 *                    wait instead), a poll function's error, a wait function
 *                    called by MPI_Wait and by MPI_Waitall for requests sharing
 *                    it, the class interface, 1000 outstanding requests
 *   t_greq sched     MPIX_Grequest_init (persistent): MPI_Start, a query per
 *                    instance, cancel, free's error from MPI_Request_free;
 *                    as a node of an MPIX_Schedule between the messages of
 *                    a ring (1..n processes), polled only once its round's
 *                    receive has its data, restarted by every start, data
 *                    checked; completing from the progress thread while
 *                    the user computes; errors of poll and query functions
 *                    as the schedule's; the misuses
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"

/* Whether the checks of who completed a request while the main thread
 * computed hold: not under valgrind (T_GREQ_TIMED=0), whose threads take
 * turns on one core at its own pace. */
static bool timed(void)
{
    const char *v = getenv("T_GREQ_TIMED");
    return v == NULL || strcmp(v, "0") != 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct op {
    int id;
    int query_rc, free_rc, cancel_rc, poll_rc;
    atomic_int queried, freed, cancelled_calls, last_cancel_complete, polls;
    int polls_needed;            /* the poll function completes it after this many */
    double ready_at;             /* ... or once this time has come (0: unused) */
    MPI_Request req;
    atomic_bool completed;
    pthread_t completer;         /* the thread that completed it */
    double completed_at;
    bool cancelled;              /* the query reports it cancelled */
};

static int query_fn(void *extra, MPI_Status *status)
{
    struct op *o = extra;
    atomic_fetch_add(&o->queried, 1);
    MPI_Status_set_elements(status, MPI_INT, o->id);
    MPI_Status_set_cancelled(status, o->cancelled);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = o->id;
    return o->query_rc;
}

/* A query reporting a large count through MPI_Status_set_elements_x. */
static int query_x(void *extra, MPI_Status *status)
{
    struct op *o = extra;
    atomic_fetch_add(&o->queried, 1);
    MPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)3 << 30);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_TAG = o->id;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    struct op *o = extra;
    atomic_fetch_add(&o->freed, 1);
    return o->free_rc;
}

static int cancel_fn(void *extra, int complete)
{
    struct op *o = extra;
    atomic_fetch_add(&o->cancelled_calls, 1);
    atomic_store(&o->last_cancel_complete, complete);
    if (!complete && o->cancel_rc == MPI_SUCCESS) {
        o->cancelled = true;  /* a cancel the operation honours: it completes as cancelled */
        MPI_Grequest_complete(o->req);
    }
    return o->cancel_rc;
}

static void mark(struct op *o)
{
    o->completer = pthread_self();
    o->completed_at = now();
    atomic_store(&o->completed, true);
}

static int poll_fn(void *extra, MPI_Status *status)
{
    (void)status;
    struct op *o = extra;
    int n = atomic_fetch_add(&o->polls, 1) + 1;
    if (o->poll_rc != MPI_SUCCESS)
        return o->poll_rc;
    if ((o->ready_at > 0 && now() >= o->ready_at) ||
        (o->ready_at == 0 && n >= o->polls_needed)) {
        mark(o);
        MPI_Grequest_complete(o->req);
    }
    return MPI_SUCCESS;
}

static atomic_int wait_calls, wait_max_count;

static int wait_fn(int count, void **states, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    atomic_fetch_add(&wait_calls, 1);
    if (count > atomic_load(&wait_max_count))
        atomic_store(&wait_max_count, count);
    for (int i = 0; i < count; i++) {
        struct op *o = states[i];
        if (!atomic_load(&o->completed)) {
            mark(o);
            MPI_Grequest_complete(o->req);
        }
    }
    return MPI_SUCCESS;
}

/* every op made, freed at the end */
static struct op *ops[2048];
static int nops;

static struct op *op_new(int id)
{
    struct op *o = calloc(1, sizeof *o);
    o->id = id;
    if (nops < (int)(sizeof ops / sizeof *ops))
        ops[nops++] = o;
    return o;
}

static void start(struct op *o)
{
    int rc = MPI_Grequest_start(query_fn, free_fn, cancel_fn, o, &o->req);
    CHECK(rc == MPI_SUCCESS && o->req != MPI_REQUEST_NULL, "MPI_Grequest_start: %d", rc);
}

static void *complete_later(void *arg)
{
    struct op *o = arg;
    usleep(50000);
    mark(o);
    MPI_Grequest_complete(o->req);
    return NULL;
}

static void test_basic(void)
{
    /* completed by another thread while MPI_Wait waits; the status is the
     * query function's */
    struct op *a = op_new(7);
    start(a);
    pthread_t th;
    pthread_create(&th, NULL, complete_later, a);
    MPI_Status st;
    int rc = MPI_Wait(&a->req, &st);
    pthread_join(th, NULL);
    int count = -1, flag = 1;
    MPI_Get_count(&st, MPI_INT, &count);
    MPI_Test_cancelled(&st, &flag);
    CHECK(rc == MPI_SUCCESS && a->req == MPI_REQUEST_NULL && count == 7 && st.MPI_TAG == 7 &&
              !flag, "MPI_Wait: rc %d, count %d, tag %d, cancelled %d", rc, count, st.MPI_TAG,
          flag);
    CHECK(a->queried == 1 && a->freed == 1, "query and free once: %d, %d", a->queried, a->freed);

    /* MPI_Test before and after completion; query only once complete */
    struct op *b = op_new(3);
    start(b);
    flag = 1;
    MPI_Test(&b->req, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag && b->queried == 0, "MPI_Test before completion: flag %d, queried %d", flag,
          b->queried);
    MPI_Grequest_complete(b->req);
    MPI_Request_get_status(b->req, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(flag && count == 3 && b->freed == 0, "MPI_Request_get_status: flag %d, count %d, "
          "freed %d", flag, count, b->freed);
    MPI_Test(&b->req, &flag, &st);
    CHECK(flag && b->req == MPI_REQUEST_NULL && b->freed == 1 && b->queried == 1,
          "MPI_Test after completion: flag %d, freed %d, queried %d", flag, b->freed, b->queried);

    /* MPI_Request_free before completion: free runs at completion */
    struct op *c = op_new(1);
    start(c);
    MPI_Request keep = c->req, h = c->req;
    MPI_Request_free(&h);
    CHECK(h == MPI_REQUEST_NULL && c->freed == 0, "MPI_Request_free before completion");
    MPI_Grequest_complete(keep);
    CHECK(c->freed == 1 && c->queried == 0, "free once at completion, no query: %d, %d",
          c->freed, c->queried);

    /* cancel: before completion (the operation completes cancelled) and after */
    struct op *d = op_new(2);
    start(d);
    rc = MPI_Cancel(&d->req);
    MPI_Wait(&d->req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(rc == MPI_SUCCESS && d->cancelled_calls == 1 && d->last_cancel_complete == 0 && flag,
          "cancel before completion: rc %d, calls %d, complete %d, cancelled %d", rc,
          d->cancelled_calls, d->last_cancel_complete, flag);
    struct op *e = op_new(2);
    start(e);
    MPI_Grequest_complete(e->req);
    MPI_Cancel(&e->req);
    MPI_Wait(&e->req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(e->last_cancel_complete == 1 && !flag, "cancel after completion: complete %d, "
          "cancelled %d", e->last_cancel_complete, flag);

    /* callback errors: the query's through the wait, the free's through the
     * call that frees, the cancel's through MPI_Cancel; MPI_ERR_IN_STATUS
     * from MPI_Waitall */
    struct op *f = op_new(1);
    f->query_rc = MPI_ERR_OTHER;
    start(f);
    MPI_Grequest_complete(f->req);
    EXPECT(MPI_Wait(&f->req, &st), MPI_ERR_OTHER, "a query function's error");
    struct op *g = op_new(1);
    g->free_rc = MPI_ERR_INTERN;
    start(g);
    MPI_Grequest_complete(g->req);
    EXPECT(MPI_Test(&g->req, &flag, MPI_STATUS_IGNORE), MPI_ERR_INTERN,
           "a free function's error");
    struct op *h2 = op_new(1);
    h2->cancel_rc = MPI_ERR_ARG;
    start(h2);
    EXPECT(MPI_Cancel(&h2->req), MPI_ERR_ARG, "a cancel function's error");
    MPI_Grequest_complete(h2->req);
    MPI_Wait(&h2->req, MPI_STATUS_IGNORE);
    struct op *i1 = op_new(4), *i2 = op_new(5);
    i2->query_rc = MPI_ERR_OTHER;
    start(i1);
    start(i2);
    MPI_Grequest_complete(i1->req);
    MPI_Grequest_complete(i2->req);
    MPI_Request two[2] = {i1->req, i2->req};
    MPI_Status sts[2];
    EXPECT(MPI_Waitall(2, two, sts), MPI_ERR_IN_STATUS, "MPI_Waitall with a failed query");
    CHECK(sts[0].MPI_ERROR == MPI_SUCCESS && check_class(sts[1].MPI_ERROR) == MPI_ERR_OTHER,
          "statuses' errors: %d, %d", sts[0].MPI_ERROR, sts[1].MPI_ERROR);

    /* with other requests: Waitany and Waitsome over a receive and grequests */
    struct op *j = op_new(9), *k = op_new(10);
    start(j);
    start(k);
    int v = 0, got = -1;
    MPI_Request mix[3];
    MPI_Irecv(&v, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &mix[0]);
    mix[1] = j->req;
    mix[2] = k->req;
    MPI_Grequest_complete(k->req);
    int idx = -1;
    MPI_Waitany(3, mix, &idx, &st);
    CHECK(idx == 2 && st.MPI_TAG == 10, "MPI_Waitany: index %d, tag %d", idx, st.MPI_TAG);
    int one = 42;
    MPI_Send(&one, 1, MPI_INT, 0, 5, MPI_COMM_SELF);
    MPI_Grequest_complete(j->req);
    int outc = 0, idxs[3];
    MPI_Waitsome(3, mix, &outc, idxs, MPI_STATUSES_IGNORE);
    got = v;
    if (outc < 2)
        MPI_Waitall(3, mix, MPI_STATUSES_IGNORE);
    CHECK(got == 42 || v == 42, "the receive among them: %d", v);
    CHECK(j->freed == 1 && k->freed == 1, "every grequest freed once");

    /* misuse */
    struct op *m = op_new(1);
    start(m);
    MPI_Grequest_complete(m->req);
    EXPECT(MPI_Grequest_complete(m->req), MPI_ERR_REQUEST, "completing twice");
    MPI_Wait(&m->req, MPI_STATUS_IGNORE);
    MPI_Request plain;
    MPI_Irecv(&v, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &plain);
    EXPECT(MPI_Grequest_complete(plain), MPI_ERR_REQUEST, "completing a receive");
    MPI_Cancel(&plain);
    MPI_Wait(&plain, MPI_STATUS_IGNORE);
    MPI_Request r;
    EXPECT(MPI_Grequest_start(NULL, free_fn, cancel_fn, NULL, &r), MPI_ERR_ARG,
           "a NULL query function");
    EXPECT(MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, NULL), MPI_ERR_ARG,
           "a NULL request");
}

static void test_poll(void)
{
    int nothread = getenv("CADENCE_PROGRESS_THREADS") != NULL &&
                   strcmp(getenv("CADENCE_PROGRESS_THREADS"), "0") == 0;
    /* completes by its poll function while the main thread computes */
    struct op *a = op_new(11);
    double t0 = now();
    a->ready_at = t0 + 0.05;
    int rc = MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, a, &a->req);
    CHECK(rc == MPI_SUCCESS, "MPIX_Grequest_start: %d", rc);
    volatile double x = 0;
    while (now() < t0 + 0.4)
        x += 1;  /* computing: no MPI call */
    double end = now();
    bool by_thread = atomic_load(&a->completed) && !pthread_equal(a->completer, pthread_self());
    MPI_Status st;
    MPI_Wait(&a->req, &st);
    if (nothread)
        CHECK(pthread_equal(a->completer, pthread_self()) && a->completed_at >= end,
              "without a progress thread the wait polls it");
    else if (timed())
        CHECK(by_thread && a->completed_at < end, "polled to completion by the progress thread "
              "while the user computed (completed %d, at %.3f s of %.3f)",
              (int)atomic_load(&a->completed), a->completed_at - t0, end - t0);
    CHECK(st.MPI_TAG == 11 && a->freed == 1, "its status and free");

    /* a poll function's error completes the request with it */
    struct op *b = op_new(1);
    b->poll_rc = MPI_ERR_IO;
    MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, b, &b->req);
    EXPECT(MPI_Wait(&b->req, MPI_STATUS_IGNORE), MPI_ERR_IO, "a poll function's error");

    /* wait functions: MPI_Wait, and MPI_Waitall for requests that share it */
    struct op *c = op_new(2);
    MPIX_Grequest_start(query_fn, free_fn, cancel_fn, NULL, wait_fn, c, &c->req);
    MPI_Wait(&c->req, &st);
    CHECK(wait_calls >= 1 && st.MPI_TAG == 2, "MPI_Wait called the wait function");
    struct op *w[3];
    MPI_Request ws[3];
    atomic_store(&wait_max_count, 0);
    for (int i = 0; i < 3; i++) {
        w[i] = op_new(20 + i);
        MPIX_Grequest_start(query_fn, free_fn, cancel_fn, NULL, wait_fn, w[i], &w[i]->req);
        ws[i] = w[i]->req;
    }
    MPI_Status sts[3];
    MPI_Waitall(3, ws, sts);
    CHECK(wait_max_count == 3 && sts[2].MPI_TAG == 22, "MPI_Waitall handed all three to the "
          "wait function: %d", wait_max_count);

    /* the class interface */
    MPIX_Grequest_class cls;
    rc = MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, NULL, &cls);
    struct op *d = op_new(30);
    d->polls_needed = 3;
    rc |= MPIX_Grequest_class_allocate(cls, d, &d->req);
    MPI_Wait(&d->req, &st);
    CHECK(rc == MPI_SUCCESS && st.MPI_TAG == 30 && d->polls >= 3 && d->freed == 1,
          "a class's request: rc %d, polls %d", rc, d->polls);
    MPI_Request bad;
    EXPECT(MPIX_Grequest_class_allocate(cls + 100, d, &bad), MPI_ERR_ARG, "an unknown class");

    /* 1000 outstanding polled requests */
    enum { N = 1000 };
    struct op *many[N];
    MPI_Request mr[N];
    for (int i = 0; i < N; i++) {
        many[i] = op_new(i);
        many[i]->polls_needed = 1 + i % 7;
        MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, many[i], &many[i]->req);
        mr[i] = many[i]->req;
    }
    MPI_Status *ms = malloc(sizeof *ms * N);
    rc = MPI_Waitall(N, mr, ms);
    int bad_n = 0;
    for (int i = 0; i < N; i++)
        bad_n += ms[i].MPI_TAG != i || many[i]->queried != 1 || many[i]->freed != 1 ||
                 mr[i] != MPI_REQUEST_NULL;
    CHECK(rc == MPI_SUCCESS && bad_n == 0, "1000 outstanding: rc %d, %d wrong", rc, bad_n);
    free(ms);
}

/* ---- generalized requests in schedules ---- */

enum { TN = 4096, CHUNKS = 4 };

/* A task between a ring's two rounds: out = in * 2 + 1, a quarter a poll. */
struct task {
    struct op o;
    const int *in;
    int *out;
    int expect0;                 /* in[0] when the node may run (its receive done) */
    atomic_int chunk;            /* chunks done in this instance */
    atomic_int early;            /* polls that found the input not yet there */
    atomic_int instances;
    atomic_int by_other_thread;  /* instances completed off the main thread */
    pthread_t main_thread;
};

static int task_poll(void *extra, MPI_Status *status)
{
    (void)status;
    struct task *t = extra;
    if (t->o.poll_rc != MPI_SUCCESS)
        return t->o.poll_rc;
    atomic_fetch_add(&t->o.polls, 1);
    int c = atomic_load(&t->chunk);
    if (c == 0 && t->in != NULL && t->in[0] != t->expect0)
        atomic_fetch_add(&t->early, 1);  /* polled before its receive completed */
    int per = TN / CHUNKS;
    for (int i = c * per; t->in != NULL && i < (c + 1) * per; i++)
        t->out[i] = t->in[i] * 2 + 1;
    if (c + 1 < CHUNKS) {
        atomic_store(&t->chunk, c + 1);
        return MPI_SUCCESS;
    }
    atomic_store(&t->chunk, 0);
    mark(&t->o);  /* (before the count the main thread reads it after) */
    if (!pthread_equal(pthread_self(), t->main_thread))
        atomic_fetch_add(&t->by_other_thread, 1);
    atomic_fetch_add(&t->instances, 1);
    MPI_Grequest_complete(t->o.req);
    return MPI_SUCCESS;
}

static struct task *task_new(int id, const int *in, int *out)
{
    struct task *t = calloc(1, sizeof *t);
    t->o.id = id;
    t->in = in;
    t->out = out;
    t->main_thread = pthread_self();
    int rc = MPIX_Grequest_init(query_fn, free_fn, cancel_fn, task_poll, NULL, t, &t->o.req);
    CHECK(rc == MPI_SUCCESS && t->o.req != MPI_REQUEST_NULL, "MPIX_Grequest_init: %d", rc);
    return t;
}

static void test_sched_direct(void)
{
    /* MPI_Start, twice: a query each instance, free at MPI_Request_free */
    struct task *t = task_new(40, NULL, NULL);
    MPI_Status st;
    EXPECT(MPI_Grequest_complete(t->o.req), MPI_ERR_REQUEST, "completing an inactive one");
    for (int k = 0; k < 2; k++) {
        int rc = MPI_Start(&t->o.req);
        MPI_Wait(&t->o.req, &st);
        CHECK(rc == MPI_SUCCESS && st.MPI_TAG == 40 && t->o.queried == k + 1 &&
              t->instances == k + 1 && t->o.freed == 0 && t->o.req != MPI_REQUEST_NULL,
              "instance %d of a persistent generalized request: queried %d", k,
              (int)t->o.queried);
    }
    int flag = 0;
    MPI_Test(&t->o.req, &flag, &st);  /* inactive: empty status at once */
    CHECK(flag && st.MPI_TAG == MPI_ANY_TAG, "an inactive one tests complete and empty");
    t->o.free_rc = MPI_ERR_IO;
    EXPECT(MPI_Request_free(&t->o.req), MPI_ERR_IO, "MPI_Request_free returns free's error");
    CHECK(t->o.freed == 1 && t->o.req == MPI_REQUEST_NULL, "freed once");

    /* a large count from MPI_Status_set_elements_x */
    struct op *x = op_new(43);
    MPIX_Grequest_init(query_x, free_fn, cancel_fn, NULL, NULL, x, &x->req);
    MPI_Start(&x->req);
    MPI_Grequest_complete(x->req);
    MPI_Wait(&x->req, &st);
    MPI_Count elements = 0;
    MPI_Get_elements_x(&st, MPI_BYTE, &elements);
    CHECK(elements == (MPI_Count)3 << 30 && st.MPI_TAG == 43,
          "MPI_Status_set_elements_x in a query: %lld", (long long)elements);
    MPI_Request_free(&x->req);

    /* cancel: an instance the operation cancels */
    struct op *c = op_new(41);
    int rc = MPIX_Grequest_init(query_fn, free_fn, cancel_fn, NULL, NULL, c, &c->req);
    rc |= MPI_Start(&c->req);
    rc |= MPI_Cancel(&c->req);
    MPI_Wait(&c->req, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(rc == MPI_SUCCESS && cancelled && c->cancelled_calls == 1, "cancelled instance");
    c->cancelled = false;
    MPI_Start(&c->req);
    MPI_Grequest_complete(c->req);
    MPI_Wait(&c->req, &st);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(!cancelled && st.MPI_TAG == 41, "the next instance is not cancelled");
    MPI_Request_free(&c->req);
    free(t);
}

/* A ring: receive from the left and send to the right, the task, then the
 * task's output around again; out = 2 * (what the left's left sent) + 1. */
static void test_sched_ring(int reps, bool compute)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (rank + 1) % n, left = (rank + n - 1) % n, left2 = (rank + 2 * n - 2) % n;
    int *src = malloc(TN * sizeof *src), *in = malloc(TN * sizeof *in);
    int *mid = malloc(TN * sizeof *mid), *out = malloc(TN * sizeof *out);
    struct task *t = task_new(42, in, mid);
    MPIX_Schedule s;
    MPI_Request q[4], req;
    int rc = MPIX_Schedule_create(&s);
    rc |= MPI_Recv_init(in, TN, MPI_INT, left, 1, MPI_COMM_WORLD, &q[0]);
    rc |= MPI_Send_init(src, TN, MPI_INT, right, 1, MPI_COMM_WORLD, &q[1]);
    rc |= MPIX_Schedule_add_operation(s, q[0]);
    rc |= MPIX_Schedule_add_operation(s, q[1]);
    rc |= MPIX_Schedule_create_round(s);
    rc |= MPIX_Schedule_add_operation(s, t->o.req);
    rc |= MPIX_Schedule_create_round(s);
    rc |= MPI_Send_init(mid, TN, MPI_INT, right, 2, MPI_COMM_WORLD, &q[2]);
    rc |= MPI_Recv_init(out, TN, MPI_INT, left, 2, MPI_COMM_WORLD, &q[3]);
    rc |= MPIX_Schedule_add_operation(s, q[2]);
    rc |= MPIX_Schedule_add_operation(s, q[3]);
    CHECK(rc == MPI_SUCCESS, "building the schedule: %d", rc);
    EXPECT(MPIX_Schedule_add_operation(s, t->o.req), MPI_ERR_REQUEST, "added twice");
    EXPECT(MPI_Start(&t->o.req), MPI_ERR_REQUEST, "MPI_Start of a schedule's task");
    rc = MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    int bad = 0, early = 0;
    double overlap_end = 0, done_at_end = 0;
    for (int it = 0; it < reps; it++) {
        for (int i = 0; i < TN; i++) {
            src[i] = rank * 100000 + it * 1000 + i;
            in[i] = mid[i] = out[i] = -1;
        }
        t->expect0 = left * 100000 + it * 1000;
        MPI_Barrier(MPI_COMM_WORLD);  /* every rank's input is reset */
        rc |= MPI_Start(&req);
        if (compute) {
            double t0 = now();
            volatile double x = 0;
            while (now() < t0 + 0.3)
                x += 1;  /* no MPI call */
            overlap_end = now();
            done_at_end += atomic_load(&t->instances) == it + 1 &&
                           t->o.completed_at < overlap_end;
        }
        MPI_Status st;
        rc |= MPI_Wait(&req, &st);
        for (int i = 0; i < TN; i++)
            bad += out[i] != (left2 * 100000 + it * 1000 + i) * 2 + 1;
    }
    early = atomic_load(&t->early);
    CHECK(rc == MPI_SUCCESS && bad == 0 && early == 0 && t->instances == reps &&
              t->o.queried == reps && t->o.freed == 0,
          "%d starts of a ring with a task: rc %d, %d wrong, %d early polls, %d instances, "
          "%d queries", reps, rc, bad, early, (int)t->instances, (int)t->o.queried);
    if (compute) {
        int nothread = getenv("CADENCE_PROGRESS_THREADS") != NULL &&
                       strcmp(getenv("CADENCE_PROGRESS_THREADS"), "0") == 0;
        if (nothread)
            CHECK(t->by_other_thread == 0, "without a progress thread the wait runs the task");
        else if (timed())
            CHECK(t->by_other_thread == reps && done_at_end == reps,
                  "the progress thread ran the task to completion while the user computed "
                  "(%d of %d by another thread, %d before the computation ended)",
                  (int)t->by_other_thread, reps, (int)done_at_end);
    }
    MPI_Request_free(&req);  /* auto-free: the task's request too */
    CHECK(t->o.freed == 1, "the task's free function ran with the schedule's free");
    free(t);
    free(src);
    free(in);
    free(mid);
    free(out);
}

/* A schedule of tasks alone: errors of the poll and query functions. */
static void test_sched_errors(void)
{
    for (int k = 0; k < 2; k++) {
        struct task *a = task_new(50, NULL, NULL), *b = task_new(51, NULL, NULL);
        if (k == 0)
            b->o.poll_rc = MPI_ERR_IO;
        else
            b->o.query_rc = MPI_ERR_FILE;
        MPIX_Schedule s;
        MPI_Request req;
        MPIX_Schedule_create(&s);
        MPIX_Schedule_add_operation(s, a->o.req);
        MPIX_Schedule_create_round(s);
        MPIX_Schedule_add_operation(s, b->o.req);
        MPIX_Schedule_commit(s, &req);
        MPIX_Schedule_free(&s);
        MPI_Start(&req);
        EXPECT(MPI_Wait(&req, MPI_STATUS_IGNORE), k == 0 ? MPI_ERR_IO : MPI_ERR_FILE,
               k == 0 ? "a task's poll error is the schedule's" :
                        "a task's query error is the schedule's");
        CHECK(a->instances == 1, "the first task ran");
        MPI_Request_free(&req);
        CHECK(a->o.freed == 1 && b->o.freed == 1, "both freed with the schedule");
        free(a);
        free(b);
    }
    /* an active (MPIX_Grequest_start) request cannot be a node */
    struct op *o = op_new(52);
    MPIX_Schedule s;
    MPIX_Schedule_create(&s);
    MPIX_Grequest_start(query_fn, free_fn, cancel_fn, NULL, NULL, o, &o->req);
    EXPECT(MPIX_Schedule_add_operation(s, o->req), MPI_ERR_REQUEST, "an active one");
    MPIX_Schedule_free(&s);
    MPI_Grequest_complete(o->req);
    MPI_Wait(&o->req, MPI_STATUS_IGNORE);
}

static void test_sched(void)
{
    test_sched_direct();
    test_sched_ring(5, false);
    test_sched_ring(3, true);
    test_sched_errors();
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    const char *mode = argc > 1 ? argv[1] : "basic";
    if (strcmp(mode, "basic") == 0)
        test_basic();
    else if (strcmp(mode, "poll") == 0)
        test_poll();
    else if (strcmp(mode, "sched") == 0)
        test_sched();
    else
        CHECK(0, "unknown mode %s", mode);
    MPI_Finalize();
    for (int i = 0; i < nops; i++)
        free(ops[i]);
    return check_summary("t_greq");
}
