/*
 * User-level schedules (MPIX_Schedule_*, docs/schedules.md), at 1 to 4
 * ranks.  The first argument picks a mode; each checks data, not only
 * return codes:
 *
 * api        every function's error cases (messages name the function and
 *            the argument), a request in two schedules, sub-requests that
 *            may be waited for but not started or freed, an empty commit,
 *            nothing added after commit, rounds never empty.
 * data       a ring exchange and local reductions started 100 times; the
 *            seed's Fig. 2 (a reduction to a non-zero root: MPI_Reduce_init
 *            to rank 0, then a send to the last rank); a nested schedule.
 * points     reset and completion points over 100 starts (the prefix runs
 *            once, the tail once at MPI_Request_free, with messages), and a
 *            second schedule whose tail runs at MPI_Finalize.
 * autofree   sub-requests freed with the schedule's request (the default)
 *            or given back (mpix_schedule_auto_free = false).
 * order      sub-request completions in any order advance a round.
 * errors     a failed sub-request's error reaches the schedule's request
 *            (MPI_Wait; MPI_ERR_IN_STATUS for MPI_Waitall); a failing
 *            callback too.
 * loops      repeats (count, predicate, nested), conditions (operation,
 *            round), callbacks (round, whole schedule).
 * strong     started once, the schedule completes while the application
 *            computes without MPI calls (its completion callback tells),
 *            and the first MPI_Test finds it complete.
 * threads    rounds completed by several threads (MPI_THREAD_MULTIPLE,
 *            application threads testing sub-requests and the progress
 *            thread): each round runs exactly once per start.
 * finalize   schedules, requests and sub-requests left to MPI_Finalize.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_mpi.h"

static int rank, size;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The class of rc, and its message contains want. */
static bool fails_with(int rc, int cls, const char *want)
{
    if (rc == MPI_SUCCESS)
        return false;
    int c, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &c);
    MPI_Error_string(rc, msg, &len);
    if (c != cls || (want != NULL && strstr(msg, want) == NULL)) {
        fprintf(stderr, "rank %d: class %d (want %d), message \"%s\" (want \"%s\")\n", rank, c,
                cls, msg, want != NULL ? want : "");
        return false;
    }
    return true;
}

static int right(void)
{
    return (rank + 1) % size;
}

static int left(void)
{
    return (rank + size - 1) % size;
}

/* ---- api ---- */

static int is_true(void *state)
{
    (void)state;
    return 1;
}

static int cb_nothing(void *state)
{
    (void)state;
    return MPI_SUCCESS;
}

static void mode_api(void)
{
    MPIX_Schedule s = MPIX_SCHEDULE_NULL, t = MPIX_SCHEDULE_NULL;
    MPI_Request req = MPI_REQUEST_NULL, q, q2;
    int x = 1, y = 0, z = 0;

    CHECK(fails_with(MPIX_Schedule_create(NULL), MPI_ERR_ARG, "MPIX_Schedule_create: sched is NULL"),
          "create(NULL)");
    CHECK(fails_with(MPIX_Schedule_add_operation(MPIX_SCHEDULE_NULL, MPI_REQUEST_NULL),
                     MPI_ERR_ARG, "MPIX_Schedule_add_operation: sched"), "null schedule");
    CHECK(MPIX_Schedule_init(&s) == MPI_SUCCESS && s != MPIX_SCHEDULE_NULL, "init");
    CHECK(MPIX_Schedule_create(&t) == MPI_SUCCESS && t != s, "create");

    /* empty: commit fails, request stays null; empty rounds are not made */
    CHECK(MPIX_Schedule_create_round(s) == MPI_SUCCESS, "create_round on an empty round");
    req = 12345;
    CHECK(fails_with(MPIX_Schedule_commit(s, &req), MPI_ERR_ARG, "has no operation"),
          "empty commit");
    CHECK(req == MPI_REQUEST_NULL, "empty commit leaves the request MPI_REQUEST_NULL");
    CHECK(fails_with(MPIX_Schedule_commit(s, NULL), MPI_ERR_ARG, "request is NULL"),
          "commit(NULL)");

    /* requests that cannot be added */
    CHECK(fails_with(MPIX_Schedule_add_operation(s, MPI_REQUEST_NULL), MPI_ERR_REQUEST,
                     "MPI_REQUEST_NULL"), "add null request");
    MPI_Isend(&x, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &q);
    CHECK(fails_with(MPIX_Schedule_add_operation(s, q), MPI_ERR_REQUEST, "not a persistent"),
          "add nonpersistent");
    MPI_Recv(&y, 1, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Recv_init(&z, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &q);
    MPI_Start(&q);
    CHECK(fails_with(MPIX_Schedule_add_operation(s, q), MPI_ERR_REQUEST, "is active"),
          "add active");
    MPI_Send(&x, 1, MPI_INT, 0, 6, MPI_COMM_SELF);
    MPI_Wait(&q, MPI_STATUS_IGNORE);

    /* owned: a second add, to this or another schedule, fails naming it */
    CHECK(MPIX_Schedule_add_operation(s, q) == MPI_SUCCESS, "add");
    char name[64];
    snprintf(name, sizeof name, "already an operation of schedule %p", (void *)s);
    CHECK(fails_with(MPIX_Schedule_add_operation(s, q), MPI_ERR_REQUEST, name), "add twice");
    CHECK(fails_with(MPIX_Schedule_add_operation(t, q), MPI_ERR_REQUEST, name),
          "add to a second schedule");
    snprintf(name, sizeof name, "is an operation of schedule %p", (void *)s);
    CHECK(fails_with(MPI_Start(&q), MPI_ERR_REQUEST, name), "MPI_Start of a sub-request");
    CHECK(fails_with(MPI_Startall(1, &q), MPI_ERR_REQUEST, name), "MPI_Startall");
    CHECK(fails_with(MPI_Request_free(&q), MPI_ERR_REQUEST, name), "MPI_Request_free");
    CHECK(q != MPI_REQUEST_NULL, "the refused free left the handle");
    int flag = 0;
    CHECK(MPI_Test(&q, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag, "test inactive sub");

    /* bad reductions */
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_OP_NULL, &x, &y, 1, MPI_INT),
                     MPI_ERR_OP, "MPIX_Schedule_add_mpi_operation"), "bad op");
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_DATATYPE_NULL),
                     MPI_ERR_TYPE, NULL), "bad type");
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, -1, MPI_INT),
                     MPI_ERR_COUNT, "count -1 is negative"), "negative len");
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_SUM, NULL, &y, 1, MPI_INT),
                     MPI_ERR_BUFFER, "invec is NULL"), "null invec");
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_LAND, &x, &y, 1, MPI_FLOAT),
                     MPI_ERR_OP, NULL), "op not defined on the type");

    /* points, repeats, conditions, callbacks: bad arguments */
    CHECK(MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_INT) == MPI_SUCCESS,
          "add_mpi_operation");
    CHECK(fails_with(MPIX_Schedule_add_repeat(s, 1, 0, NULL, NULL), MPI_ERR_ARG, "count 0"),
          "repeat count 0");
    CHECK(fails_with(MPIX_Schedule_add_repeat(s, 1, MPIX_SCHEDULE_UNBOUNDED, NULL, NULL),
                     MPI_ERR_ARG, "forever"), "unbounded repeat without predicate");
    CHECK(fails_with(MPIX_Schedule_add_repeat(s, 2, 1, NULL, NULL), MPI_ERR_ARG, "nrounds 2"),
          "repeat of more rounds than built");
    CHECK(fails_with(MPIX_Schedule_add_condition(s, 99, NULL, NULL), MPI_ERR_ARG, "scope 99"),
          "condition scope");
    CHECK(fails_with(MPIX_Schedule_add_condition(s, MPIX_SCHEDULE_OPERATION, NULL, NULL),
                     MPI_ERR_ARG, "predicate is NULL"), "condition NULL");
    CHECK(fails_with(MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_OPERATION, NULL, NULL),
                     MPI_ERR_ARG, "scope 1"), "callback scope");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_schedule_auto_free", "maybe");
    CHECK(fails_with(MPIX_Schedule_set_info(s, info), MPI_ERR_INFO_VALUE, "\"maybe\""),
          "auto_free value");
    MPI_Info_free(&info);
    CHECK(MPIX_Schedule_create_round(s) == MPI_SUCCESS, "round");
    CHECK(MPIX_Schedule_create_round(s) == MPI_SUCCESS, "round on the empty round");
    CHECK(fails_with(MPIX_Schedule_add_condition(s, MPIX_SCHEDULE_ROUND, (void *)1, NULL),
                     MPI_ERR_ARG, "no operation yet"), "round condition on an empty round");
    /* two rounds built (not three: the empty one was not made) */
    CHECK(fails_with(MPIX_Schedule_add_repeat(s, 2, 1, NULL, NULL), MPI_ERR_ARG,
                     "the 1 round built"), "rounds never empty");
    CHECK(MPIX_Schedule_mark_completion_point(s) == MPI_SUCCESS, "completion point");
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_INT);  /* the tail */
    MPIX_Schedule_create_round(s);
    CHECK(fails_with(MPIX_Schedule_mark_reset_point(s), MPI_ERR_ARG, "after the completion"),
          "reset after completion");
    CHECK(fails_with(MPIX_Schedule_add_repeat(s, 2, 1, NULL, NULL), MPI_ERR_ARG,
                     "contain the completion point"), "repeat across the completion point");

    CHECK(MPIX_Schedule_commit(s, &req) == MPI_SUCCESS && req != MPI_REQUEST_NULL, "commit");
    CHECK(fails_with(MPIX_Schedule_commit(s, &q2), MPI_ERR_ARG, "is committed"), "commit twice");
    CHECK(fails_with(MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_INT),
                     MPI_ERR_ARG, "is committed"), "add after commit");
    CHECK(fails_with(MPIX_Schedule_create_round(s), MPI_ERR_ARG, "is committed"),
          "round after commit");
    CHECK(fails_with(MPIX_Schedule_mark_reset_point(s), MPI_ERR_ARG, "is committed"),
          "reset point after commit");
    snprintf(name, sizeof name, "schedule %p (request 0x%x)", (void *)s, (unsigned)req);
    CHECK(fails_with(MPI_Start(&q), MPI_ERR_REQUEST, name), "the message names the request");
    /* the request works with every completion call */
    y = 0;
    for (int i = 0; i < 3; i++) {
        MPI_Start(&req);
        MPI_Send(&x, 1, MPI_INT, 0, 6, MPI_COMM_SELF);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(y == 3, "y = %d after 3 starts (one reduction each; the tail has not run)", y);
    MPI_Start(&req);
    MPI_Send(&x, 1, MPI_INT, 0, 6, MPI_COMM_SELF);
    flag = 0;
    while (!flag)
        MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
    CHECK(req != MPI_REQUEST_NULL, "get_status keeps the request");
    int idx;
    MPI_Waitany(1, &req, &idx, MPI_STATUS_IGNORE);
    CHECK(idx == 0 && req != MPI_REQUEST_NULL, "waitany: persistent stays");
    CHECK(MPI_Request_free(&req) == MPI_SUCCESS && req == MPI_REQUEST_NULL, "free request");
    CHECK(y == 5, "y = %d: the tail ran at MPI_Request_free", y);
    CHECK(MPIX_Schedule_free(&s) == MPI_SUCCESS && s == MPIX_SCHEDULE_NULL, "free schedule");
    /* on an empty schedule */
    MPIX_Schedule u;
    MPIX_Schedule_create(&u);
    CHECK(fails_with(MPIX_Schedule_add_condition(u, MPIX_SCHEDULE_OPERATION, is_true, NULL),
                     MPI_ERR_ARG, "no operation was added yet"), "condition with no operation");
    CHECK(fails_with(MPIX_Schedule_set_callback(u, MPIX_SCHEDULE_ROUND, cb_nothing, NULL),
                     MPI_ERR_ARG, "has no operation yet"), "round callback on an empty round");
    CHECK(fails_with(MPIX_Schedule_add_repeat(u, 1, 1, NULL, NULL), MPI_ERR_ARG,
                     "the 0 rounds built"), "repeat with no round");
    CHECK(MPIX_Schedule_set_callback(u, MPIX_SCHEDULE_WHOLE, cb_nothing, NULL) == MPI_SUCCESS,
          "whole callback on an empty schedule");
    CHECK(MPIX_Schedule_mark_reset_point(u) == MPI_SUCCESS &&
          MPIX_Schedule_mark_completion_point(u) == MPI_SUCCESS, "points on an empty schedule");
    req = 1;
    CHECK(fails_with(MPIX_Schedule_commit(u, &req), MPI_ERR_ARG, "has no operation") &&
          req == MPI_REQUEST_NULL, "a callback is not an operation");
    MPIX_Schedule_free(&u);

    MPIX_Schedule t0 = t;
    CHECK(MPIX_Schedule_free(&t) == MPI_SUCCESS, "free an unused schedule");
    CHECK(fails_with(MPIX_Schedule_free(&t0), MPI_ERR_ARG, "not a valid schedule (freed"),
          "free twice");
    CHECK(fails_with(MPIX_Schedule_free(&t), MPI_ERR_ARG, "(MPIX_SCHEDULE_NULL)"),
          "free MPIX_SCHEDULE_NULL");
    MPIX_Schedule bogus = (MPIX_Schedule)&x;
    CHECK(fails_with(MPIX_Schedule_create_round(bogus), MPI_ERR_ARG, "not a valid schedule"),
          "a pointer that is not a schedule");
}

/* ---- data ---- */

enum { N = 64, STARTS = 100 };

/* A ring exchange of N ints then acc += received, per start. */
static void mode_data(void)
{
    int sendbuf[N], recvbuf[N], acc[N];
    MPI_Request sreq, rreq, req;
    MPIX_Schedule s;
    MPIX_Schedule_create(&s);
    MPI_Send_init(sendbuf, N, MPI_INT, right(), 1, MPI_COMM_WORLD, &sreq);
    MPI_Recv_init(recvbuf, N, MPI_INT, left(), 1, MPI_COMM_WORLD, &rreq);
    MPIX_Schedule_add_operation(s, rreq);
    MPIX_Schedule_add_operation(s, sreq);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, recvbuf, acc, N, MPI_INT);
    CHECK(MPIX_Schedule_commit(s, &req) == MPI_SUCCESS, "commit");
    memset(acc, 0, sizeof acc);
    for (int it = 0; it < STARTS; it++) {
        for (int i = 0; i < N; i++)
            sendbuf[i] = rank * 1000 + i + it;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(recvbuf[N - 1] == left() * 1000 + N - 1 + it, "start %d: received %d", it,
              recvbuf[N - 1]);
    }
    long want = 0;
    for (int it = 0; it < STARTS; it++)
        want += left() * 1000 + 5 + it;
    CHECK(acc[5] == want, "acc %d, want %ld", acc[5], want);
    MPI_Request_free(&req);
    MPIX_Schedule_free(&s);

    /* Fig. 2: reduce to the last rank = reduce to 0, then 0 sends to it */
    int root = size - 1, v[4], sum[4], got[4] = {0};
    MPI_Request red, fwd = MPI_REQUEST_NULL;
    MPIX_Schedule_create(&s);
    MPI_Reduce_init(v, sum, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &red);
    MPIX_Schedule_add_operation(s, red);
    MPIX_Schedule_create_round(s);
    if (root != 0 && rank == 0)
        MPI_Send_init(sum, 4, MPI_INT, root, 2, MPI_COMM_WORLD, &fwd);
    else if (root != 0 && rank == root)
        MPI_Recv_init(got, 4, MPI_INT, 0, 2, MPI_COMM_WORLD, &fwd);
    if (fwd != MPI_REQUEST_NULL)
        MPIX_Schedule_add_operation(s, fwd);
    MPIX_Schedule_commit(s, &req);
    for (int it = 0; it < STARTS; it++) {
        for (int i = 0; i < 4; i++)
            v[i] = rank + i * it;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == root) {
            int w = size * (size - 1) / 2 + size * 3 * it;
            CHECK((size == 1 ? sum[3] : got[3]) == w, "Fig. 2 start %d: %d, want %d", it,
                  size == 1 ? sum[3] : got[3], w);
        }
    }
    MPI_Request_free(&req);
    MPIX_Schedule_free(&s);

    /* nested: the ring schedule inside another, before a reduction */
    MPIX_Schedule inner, outer;
    MPI_Request ireq, oreq;
    int one = 1, count = 0;
    MPIX_Schedule_create(&inner);
    MPI_Send_init(sendbuf, N, MPI_INT, right(), 3, MPI_COMM_WORLD, &sreq);
    MPI_Recv_init(recvbuf, N, MPI_INT, left(), 3, MPI_COMM_WORLD, &rreq);
    MPIX_Schedule_add_operation(inner, sreq);
    MPIX_Schedule_add_operation(inner, rreq);
    MPIX_Schedule_commit(inner, &ireq);
    MPIX_Schedule_free(&inner);  /* the request lives on */
    MPIX_Schedule_create(&outer);
    CHECK(MPIX_Schedule_add_operation(outer, ireq) == MPI_SUCCESS, "add a schedule's request");
    MPIX_Schedule_create_round(outer);
    MPIX_Schedule_add_mpi_operation(outer, MPI_SUM, &one, &count, 1, MPI_INT);
    MPIX_Schedule_commit(outer, &oreq);
    CHECK(fails_with(MPI_Start(&ireq), MPI_ERR_REQUEST, "is an operation of schedule"),
          "the nested request cannot be started alone");
    for (int it = 0; it < STARTS; it++) {
        sendbuf[0] = rank + it;
        MPI_Start(&oreq);
        MPI_Wait(&oreq, MPI_STATUS_IGNORE);
        CHECK(recvbuf[0] == left() + it && count == it + 1, "nested start %d: %d, count %d", it,
              recvbuf[0], count);
    }
    MPI_Request_free(&oreq);
    MPIX_Schedule_free(&outer);
    int flag = 0;
    CHECK(fails_with(MPI_Test(&ireq, &flag, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, NULL),
          "the nested request was freed with the outer one (auto-free)");
}

/* ---- points ---- */

static int tail_at_finalize;

static void mode_points(void)
{
    int one = 1, first = 0, body = 0, tail = 0, sb = 0, rb = -1, tsb, trb = -1;
    MPI_Request s1, r1, s2, r2, req;
    MPIX_Schedule s;
    MPIX_Schedule_create(&s);
    /* prefix: count, and a message */
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &first, 1, MPI_INT);
    MPI_Send_init(&sb, 1, MPI_INT, right(), 10, MPI_COMM_WORLD, &s1);
    MPI_Recv_init(&rb, 1, MPI_INT, left(), 10, MPI_COMM_WORLD, &r1);
    MPIX_Schedule_add_operation(s, s1);
    MPIX_Schedule_add_operation(s, r1);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_mark_reset_point(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &body, 1, MPI_INT);
    CHECK(MPIX_Schedule_mark_completion_point(s) == MPI_SUCCESS, "completion point");
    /* tail: a message and a count */
    tsb = rank + 500;
    MPI_Send_init(&tsb, 1, MPI_INT, right(), 11, MPI_COMM_WORLD, &s2);
    MPI_Recv_init(&trb, 1, MPI_INT, left(), 11, MPI_COMM_WORLD, &r2);
    MPIX_Schedule_add_operation(s, s2);
    MPIX_Schedule_add_operation(s, r2);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &tail, 1, MPI_INT);
    MPIX_Schedule_commit(s, &req);
    for (int it = 0; it < STARTS; it++) {
        sb = rank + it;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(first == 1 && body == STARTS && tail == 0, "after %d starts: prefix %d, body %d, "
          "tail %d", STARTS, first, body, tail);
    CHECK(rb == left(), "the prefix's message moved once (%d)", rb);
    MPI_Request_free(&req);
    /* the tail now runs (its message needs the neighbours' frees too) */
    double end = now() + 30;
    int flag;
    while (__atomic_load_n(&tail, __ATOMIC_ACQUIRE) == 0 && now() < end)
        MPI_Iprobe(MPI_ANY_SOURCE, 9999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(tail == 1 && trb == left() + 500 && body == STARTS, "after free: tail %d (message "
          "%d), body %d", tail, trb, body);
    MPIX_Schedule_free(&s);

    /* a tail left to MPI_Finalize (counted after it, in main) */
    MPIX_Schedule_create(&s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &body, 1, MPI_INT);
    MPIX_Schedule_mark_completion_point(s);
    static int fone = 1;
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &fone, &tail_at_finalize, 1, MPI_INT);
    MPIX_Schedule_commit(s, &req);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(tail_at_finalize == 0, "no tail before MPI_Finalize");
    /* neither the request nor the schedule is freed */
}

/* ---- autofree ---- */

static void mode_autofree(void)
{
    int x = 7, y = 0;
    for (int off = 0; off < 2; off++) {
        MPI_Request sq, rq, req;
        MPIX_Schedule s;
        MPIX_Schedule_create(&s);
        if (off) {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "mpix_schedule_auto_free", "false");
            CHECK(MPIX_Schedule_set_info(s, info) == MPI_SUCCESS, "set_info");
            MPI_Info_free(&info);
        }
        MPI_Send_init(&x, 1, MPI_INT, right(), 20, MPI_COMM_WORLD, &sq);
        MPI_Recv_init(&y, 1, MPI_INT, left(), 20, MPI_COMM_WORLD, &rq);
        MPIX_Schedule_add_operation(s, sq);
        MPIX_Schedule_add_operation(s, rq);
        MPIX_Schedule_commit(s, &req);
        MPIX_Schedule_free(&s);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(y == 7, "y %d", y);
        MPI_Request_free(&req);
        int flag;
        if (!off) {
            CHECK(fails_with(MPI_Test(&sq, &flag, MPI_STATUS_IGNORE), MPI_ERR_REQUEST,
                             "not a valid request"), "auto-free: the sub-request is gone");
            continue;
        }
        /* given back: usable as an ordinary persistent request */
        x = 8;
        int rc1 = MPI_Start(&rq), rc2 = MPI_Start(&sq);
        CHECK(!fails_with(rc1, 0, "") && !fails_with(rc2, 0, ""), "restart");
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(y == 8, "y %d after the given-back requests ran", y);
        CHECK(MPI_Request_free(&sq) == MPI_SUCCESS && MPI_Request_free(&rq) == MPI_SUCCESS,
              "free given-back requests");
    }
    /* a schedule freed without commit: its sub-requests are freed too */
    MPIX_Schedule s;
    MPI_Request q;
    MPIX_Schedule_create(&s);
    MPI_Send_init(&x, 1, MPI_INT, right(), 21, MPI_COMM_WORLD, &q);
    MPIX_Schedule_add_operation(s, q);
    MPIX_Schedule_free(&s);
    int flag;
    CHECK(fails_with(MPI_Test(&q, &flag, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, NULL),
          "uncommitted schedule freed: its sub-request too");
}

/* ---- order ---- */

static void mode_order(void)
{
    /* rank 0 receives one message from every other rank and two from
     * rank 1 (tags 1 and 2) in one round; the senders send in reverse
     * order, the later ones first, so completions come in any order */
    int n = size + 1, vals[8] = {0}, one = 1, count = 0;
    MPI_Request reqs[8], req;
    MPIX_Schedule s;
    if (size == 1) {
        printf("order: needs 2 ranks or more\n");
        return;
    }
    for (int it = 0; it < 20; it++) {
        if (rank == 0) {
            MPIX_Schedule_create(&s);
            for (int k = 0; k < n - 1; k++) {
                int src = k < size - 1 ? k + 1 : 1, tag = k < size - 1 ? 1 : 2;
                MPI_Recv_init(&vals[k], 1, MPI_INT, src, tag, MPI_COMM_WORLD, &reqs[k]);
                MPIX_Schedule_add_operation(s, reqs[k]);
            }
            MPIX_Schedule_create_round(s);
            MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &count, 1, MPI_INT);
            MPIX_Schedule_commit(s, &req);
            MPI_Start(&req);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int k = 0; k < n - 1; k++)
                CHECK(vals[k] == (k < size - 1 ? (k + 1) * 10 + it : 99 + it), "from %d: %d", k,
                      vals[k]);
            MPI_Request_free(&req);
            MPIX_Schedule_free(&s);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = now() + 0.001 * (size - rank);
            while (now() < t)
                ;
            int v = rank * 10 + it, w = 99 + it;
            if (rank == 1)
                MPI_Send(&w, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
            MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        CHECK(count == 20, "count %d", count);
}

/* ---- errors ---- */

static int failing(void *state)
{
    (void)state;
    return MPI_ERR_OTHER;
}

static void mode_errors(void)
{
    int big[4] = {1, 2, 3, 4}, small = 0, x = 0, y = 0, cls;
    MPI_Request sq, rq, req, other, both[2];
    MPI_Status st[2];
    MPIX_Schedule s;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* the receive is too small for the message: MPI_ERR_TRUNCATE */
    MPIX_Schedule_create(&s);
    MPI_Send_init(big, 4, MPI_INT, right(), 30, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&small, 1, MPI_INT, left(), 30, MPI_COMM_WORLD, &rq);
    MPIX_Schedule_add_operation(s, sq);
    MPIX_Schedule_add_operation(s, rq);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_INT);
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    MPI_Start(&req);
    int rc = MPI_Wait(&req, &st[0]);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Wait: class %d, want MPI_ERR_TRUNCATE", cls);
    rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE, "the sub-request itself: class %d", cls);
    /* MPI_Waitall over the schedule and a good request */
    MPI_Send_init(&x, 1, MPI_INT, 0, 31, MPI_COMM_SELF, &other);
    MPI_Request orecv;
    MPI_Irecv(&y, 1, MPI_INT, 0, 31, MPI_COMM_SELF, &orecv);
    MPI_Start(&req);
    MPI_Start(&other);
    both[0] = req;
    both[1] = other;
    st[0].MPI_ERROR = st[1].MPI_ERROR = -1;
    rc = MPI_Waitall(2, both, st);
    MPI_Error_class(st[0].MPI_ERROR, &cls);
    int rcls;
    MPI_Error_class(rc, &rcls);
    CHECK(rcls == MPI_ERR_IN_STATUS && cls == MPI_ERR_TRUNCATE && st[1].MPI_ERROR == MPI_SUCCESS,
          "Waitall: rc %d, statuses %d %d", rc, st[0].MPI_ERROR, st[1].MPI_ERROR);
    MPI_Wait(&orecv, MPI_STATUS_IGNORE);
    MPI_Request_free(&other);
    MPI_Request_free(&req);
    /* a callback that fails fails the schedule */
    MPIX_Schedule_create(&s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &x, &y, 1, MPI_INT);
    MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_ROUND, failing, NULL);
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    MPI_Start(&req);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "failing callback: class %d", cls);
    MPI_Request_free(&req);
}

/* ---- loops ---- */

static int below(void *state)
{
    int *p = state;
    return p[0] < p[1];
}

static int is_set(void *state)
{
    return *(int *)state != 0;
}

struct counts {
    atomic_int rounds, whole;
    int rank_seen;
};

static int count_round(void *state)
{
    struct counts *c = state;
    atomic_fetch_add(&c->rounds, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_seen);  /* a local call is allowed */
    (void)MPI_Wtime();
    return MPI_SUCCESS;
}

static int count_whole(void *state)
{
    atomic_fetch_add(&((struct counts *)state)->whole, 1);
    return MPI_SUCCESS;
}

static void mode_loops(void)
{
    int one = 1, sb, rb, acc;
    MPI_Request sq, rq, ar, req;
    MPIX_Schedule s;

    /* repeat 5 times: ring exchange, then acc += received */
    MPIX_Schedule_create(&s);
    MPI_Send_init(&sb, 1, MPI_INT, right(), 40, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&rb, 1, MPI_INT, left(), 40, MPI_COMM_WORLD, &rq);
    MPIX_Schedule_add_operation(s, sq);
    MPIX_Schedule_add_operation(s, rq);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &rb, &acc, 1, MPI_INT);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &sb, 1, MPI_INT);
    CHECK(MPIX_Schedule_add_repeat(s, 2, 5, NULL, NULL) == MPI_SUCCESS, "repeat");
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    for (int it = 0; it < 10; it++) {
        acc = 0;
        sb = rank * 100;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* received left*100 + 0..4 */
        CHECK(acc == 5 * left() * 100 + 10 && sb == rank * 100 + 5, "repeat x5, start %d: acc "
              "%d sb %d", it, acc, sb);
    }
    MPI_Request_free(&req);

    /* the same with rendezvous messages (a sub-request restarted by the
     * loop from inside its own completion), and a synchronous send */
    enum { LN = 65536 };
    int *lsb = malloc(LN * sizeof *lsb), *lrb = malloc(LN * sizeof *lrb), lacc = 0, ssb = 0,
        srb = 0;
    MPI_Request lq[4];
    MPIX_Schedule_create(&s);
    MPI_Send_init(lsb, LN, MPI_INT, right(), 43, MPI_COMM_WORLD, &lq[0]);
    MPI_Recv_init(lrb, LN, MPI_INT, left(), 43, MPI_COMM_WORLD, &lq[1]);
    MPI_Ssend_init(&ssb, 1, MPI_INT, right(), 44, MPI_COMM_WORLD, &lq[2]);
    MPI_Recv_init(&srb, 1, MPI_INT, left(), 44, MPI_COMM_WORLD, &lq[3]);
    for (int k = 0; k < 4; k++)
        MPIX_Schedule_add_operation(s, lq[k]);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &lrb[LN - 1], &lacc, 1, MPI_INT);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &lsb[LN - 1], 1, MPI_INT);
    MPIX_Schedule_add_repeat(s, 2, 7, NULL, NULL);
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    for (int it = 0; it < 5; it++) {
        for (int i = 0; i < LN; i++)
            lsb[i] = rank;
        lacc = 0;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(lacc == 7 * left() + 21 && lrb[0] == left(), "rendezvous repeat, start %d: %d",
              it, lacc);
    }
    MPI_Request_free(&req);
    free(lsb);
    free(lrb);

    /* until a predicate: a persistent allreduce adds size each run, and
     * the group repeats while the total is below 10 * size (a convergence
     * loop); nested inside a repeat of 3 */
    int total[2] = {0, 0}, ones = 1, sum = 0, outer = 0;
    MPIX_Schedule_create(&s);
    MPI_Allreduce_init(&ones, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &ar);
    MPIX_Schedule_add_operation(s, ar);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &sum, &total[0], 1, MPI_INT);
    MPIX_Schedule_add_repeat(s, 2, MPIX_SCHEDULE_UNBOUNDED, below, total);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &outer, 1, MPI_INT);
    CHECK(MPIX_Schedule_add_repeat(s, 3, 3, NULL, NULL) == MPI_SUCCESS, "nested repeat");
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    for (int it = 0; it < 5; it++) {
        total[0] = 0;
        total[1] = 10 * size;
        outer = 0;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* the first outer run reaches 10*size; the next two run the inner
         * group once each (do-while) */
        CHECK(total[0] == 12 * size && outer == 3, "until-predicate, start %d: total %d "
              "(want %d), outer %d", it, total[0], 12 * size, outer);
    }
    MPI_Request_free(&req);

    /* conditions: an operation and a round, decided when they would start */
    int op_on = 0, round_on = 0, a = 0, b = 0;
    MPIX_Schedule_create(&s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &a, 1, MPI_INT);
    MPIX_Schedule_add_condition(s, MPIX_SCHEDULE_OPERATION, is_set, &op_on);
    MPIX_Schedule_create_round(s);
    MPI_Send_init(&sb, 1, MPI_INT, right(), 41, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&rb, 1, MPI_INT, left(), 41, MPI_COMM_WORLD, &rq);
    MPIX_Schedule_add_operation(s, sq);
    MPIX_Schedule_add_operation(s, rq);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &b, 1, MPI_INT);
    CHECK(MPIX_Schedule_add_condition(s, MPIX_SCHEDULE_ROUND, is_set, &round_on) == MPI_SUCCESS,
          "round condition");
    CHECK(fails_with(MPIX_Schedule_add_condition(s, MPIX_SCHEDULE_ROUND, is_set, &round_on),
                     MPI_ERR_ARG, "has a condition already"), "second round condition");
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    int wa = 0, wb = 0;
    for (int it = 0; it < 12; it++) {
        op_on = it % 2;
        round_on = it % 3 == 0;  /* alike on every rank: the messages match */
        sb = rank * 10 + it;
        rb = -1;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        wa += op_on;
        wb += round_on;
        CHECK(a == wa && b == wb, "conditions, start %d: a %d (want %d) b %d (want %d)", it, a,
              wa, b, wb);
        CHECK(round_on ? rb == left() * 10 + it : rb == -1, "start %d: rb %d", it, rb);
    }
    MPI_Request_free(&req);

    /* callbacks: after a round (each repeat run), after the schedule */
    struct counts c = {0};
    c.rank_seen = -1;
    MPIX_Schedule_create(&s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, &one, &a, 1, MPI_INT);
    CHECK(MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_ROUND, count_round, &c) == MPI_SUCCESS,
          "round callback");
    MPIX_Schedule_add_repeat(s, 1, 4, NULL, NULL);
    MPI_Send_init(&sb, 1, MPI_INT, right(), 42, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&rb, 1, MPI_INT, left(), 42, MPI_COMM_WORLD, &rq);
    MPIX_Schedule_add_operation(s, sq);
    MPIX_Schedule_add_operation(s, rq);
    CHECK(MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_WHOLE, count_whole, &c) == MPI_SUCCESS,
          "whole callback");
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    for (int it = 0; it < 10; it++) {
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(atomic_load(&c.whole) == it + 1 && atomic_load(&c.rounds) == 4 * (it + 1),
              "callbacks, start %d: whole %d rounds %d (before MPI_Wait returned)", it,
              atomic_load(&c.whole), atomic_load(&c.rounds));
    }
    CHECK(c.rank_seen == rank, "the callback's MPI_Comm_rank: %d", c.rank_seen);
    MPI_Request_free(&req);
}

/* ---- strong ---- */

enum { BIG = 256 * 1024 };

static atomic_int completed;

static int mark_completed(void *state)
{
    (void)state;
    atomic_store(&completed, 1);
    return MPI_SUCCESS;
}

static void mode_strong(void)
{
    /* three rounds: a 1 MiB ring exchange, a reduction, the result on */
    int *sb = malloc(BIG * sizeof *sb), *rb = malloc(BIG * sizeof *rb),
        *acc = calloc(BIG, sizeof *acc), *rb2 = malloc(BIG * sizeof *rb2);
    MPI_Request q[4], req;
    MPIX_Schedule s;
    MPIX_Schedule_create(&s);
    MPI_Send_init(sb, BIG, MPI_INT, right(), 50, MPI_COMM_WORLD, &q[0]);
    MPI_Recv_init(rb, BIG, MPI_INT, left(), 50, MPI_COMM_WORLD, &q[1]);
    MPIX_Schedule_add_operation(s, q[0]);
    MPIX_Schedule_add_operation(s, q[1]);
    MPIX_Schedule_create_round(s);
    MPIX_Schedule_add_mpi_operation(s, MPI_SUM, rb, acc, BIG, MPI_INT);
    MPIX_Schedule_create_round(s);
    MPI_Send_init(acc, BIG, MPI_INT, right(), 51, MPI_COMM_WORLD, &q[2]);
    MPI_Recv_init(rb2, BIG, MPI_INT, left(), 51, MPI_COMM_WORLD, &q[3]);
    MPIX_Schedule_add_operation(s, q[2]);
    MPIX_Schedule_add_operation(s, q[3]);
    MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_WHOLE, mark_completed, NULL);
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    int firsts = 0, runs = 5;
    for (int it = 0; it < runs; it++) {
        for (int i = 0; i < BIG; i++)
            sb[i] = rank + i + it;
        memset(acc, 0, BIG * sizeof *acc);
        atomic_store(&completed, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&req);
        /* compute, no MPI call, until the engine says it completed */
        double end = now() + 20;
        volatile double x = 1;
        while (!atomic_load(&completed) && now() < end)
            for (int i = 0; i < 1000; i++)
                x = x * 1.0000001 + 1e-9;
        /* the callback runs just before the completion: give the thread
         * that ran it time to finish the step even if it was preempted */
        end = now() + 0.1;
        while (now() < end)
            x = x * 1.0000001 + 1e-9;
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        firsts += flag;
        CHECK(atomic_load(&completed), "start %d: the schedule did not complete during 20 s of "
              "computation", it);
        CHECK(flag, "start %d: the first MPI_Test after it completed found it active", it);
        if (!flag)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        int l2 = (rank + size - 2) % size;
        CHECK(rb2[7] == l2 + 7 + it, "start %d: %d, want %d", it, rb2[7], l2 + 7 + it);
    }
    printf("strong: %d of %d schedules complete at the first MPI_Test\n", firsts, runs);
    MPI_Request_free(&req);
    free(sb);
    free(rb);
    free(acc);
    free(rb2);
}

/* ---- threads ---- */

enum { ROUNDS = 6, PER = 4, TSTARTS = 50 };

static atomic_int round_runs[ROUNDS];
static MPI_Request subs[ROUNDS][2 * PER];
static atomic_int stop;

static int count_at(void *state)
{
    atomic_fetch_add((atomic_int *)state, 1);
    return MPI_SUCCESS;
}

/* An application thread testing sub-requests (allowed) while the
 * schedule runs: completions happen on it, on the main thread and on the
 * progress thread. */
static void *tester(void *arg)
{
    int k = (int)(long)arg;
    while (!atomic_load(&stop)) {
        for (int r = 0; r < ROUNDS; r++) {
            int flag;
            MPI_Test(&subs[r][(k + r) % (2 * PER)], &flag, MPI_STATUS_IGNORE);
        }
    }
    return NULL;
}

static void mode_threads(void)
{
    int sb[ROUNDS][PER], rb[ROUNDS][PER];
    MPI_Request req;
    MPIX_Schedule s;
    MPIX_Schedule_create(&s);
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < PER; k++) {
            MPI_Send_init(&sb[r][k], 1, MPI_INT, right(), 60 + k, MPI_COMM_WORLD, &subs[r][k]);
            MPI_Recv_init(&rb[r][k], 1, MPI_INT, left(), 60 + k, MPI_COMM_WORLD,
                          &subs[r][PER + k]);
            MPIX_Schedule_add_operation(s, subs[r][k]);
            MPIX_Schedule_add_operation(s, subs[r][PER + k]);
        }
        MPIX_Schedule_set_callback(s, MPIX_SCHEDULE_ROUND, count_at, &round_runs[r]);
        MPIX_Schedule_create_round(s);
    }
    MPIX_Schedule_commit(s, &req);
    MPIX_Schedule_free(&s);
    pthread_t th[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, tester, (void *)(long)k);
    for (int it = 0; it < TSTARTS; it++) {
        for (int r = 0; r < ROUNDS; r++)
            for (int k = 0; k < PER; k++)
                sb[r][k] = rank * 1000 + r * 10 + k + it;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int r = 0; r < ROUNDS; r++) {
            CHECK(atomic_load(&round_runs[r]) == it + 1, "start %d: round %d ran %d times", it,
                  r, atomic_load(&round_runs[r]));
            for (int k = 0; k < PER; k++)
                CHECK(rb[r][k] == left() * 1000 + r * 10 + k + it, "start %d round %d: %d", it,
                      r, rb[r][k]);
        }
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    MPI_Request_free(&req);
}

/* ---- finalize ---- */

static int fin_tail;
/* sent by the inner schedule's tail inside MPI_Finalize, after
 * mode_finalize has returned: not on its stack */
static int fin_x = 3;

static void mode_finalize(void)
{
    int one = 1, y = 0;
    MPI_Request sq, rq, req, ireq;
    MPIX_Schedule s, inner, never;
    /* an uncommitted schedule holding a request */
    MPIX_Schedule_create(&never);
    MPI_Send_init(&fin_x, 1, MPI_INT, right(), 70, MPI_COMM_WORLD, &sq);
    MPIX_Schedule_add_operation(never, sq);
    /* a nested schedule with auto-free off, its tail a message */
    MPIX_Schedule_create(&inner);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_schedule_auto_free", "false");
    MPIX_Schedule_set_info(inner, info);
    MPI_Info_free(&info);
    MPIX_Schedule_add_mpi_operation(inner, MPI_SUM, &one, &y, 1, MPI_INT);
    MPIX_Schedule_mark_completion_point(inner);
    MPI_Send_init(&fin_x, 1, MPI_INT, right(), 71, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&fin_tail, 1, MPI_INT, left(), 71, MPI_COMM_WORLD, &rq);
    MPIX_Schedule_add_operation(inner, sq);
    MPIX_Schedule_add_operation(inner, rq);
    MPIX_Schedule_commit(inner, &ireq);
    MPIX_Schedule_create(&s);
    MPIX_Schedule_add_operation(s, ireq);
    MPIX_Schedule_commit(s, &req);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(y == 1 && fin_tail == 0, "before MPI_Finalize: y %d, tail message %d", y, fin_tail);
    /* nothing freed: MPI_Finalize frees the outer request (auto-free frees
     * the inner one, whose tail sends), both schedules and the requests */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "api";
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bool known = true;
    if (strcmp(mode, "api") == 0)
        mode_api();
    else if (strcmp(mode, "data") == 0)
        mode_data();
    else if (strcmp(mode, "points") == 0)
        mode_points();
    else if (strcmp(mode, "autofree") == 0)
        mode_autofree();
    else if (strcmp(mode, "order") == 0)
        mode_order();
    else if (strcmp(mode, "errors") == 0)
        mode_errors();
    else if (strcmp(mode, "loops") == 0)
        mode_loops();
    else if (strcmp(mode, "strong") == 0)
        mode_strong();
    else if (strcmp(mode, "threads") == 0)
        mode_threads();
    else if (strcmp(mode, "finalize") == 0)
        mode_finalize();
    else
        known = false;
    CHECK(known, "unknown mode %s", mode);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    if (strcmp(mode, "points") == 0)
        CHECK(tail_at_finalize == 1, "the tail left to MPI_Finalize ran %d times",
              tail_at_finalize);
    if (strcmp(mode, "finalize") == 0)
        CHECK(fin_tail == 3, "the nested tail's message at MPI_Finalize: %d", fin_tail);
    char name[64];
    snprintf(name, sizeof name, "t_sched %s[%d]", mode, rank);
    return check_summary(name);
}
