/*
 * The request calls as a user sees them in a one-process job: the
 * wait/test family with null, inactive, complete and pending requests,
 * persistent requests started many times, MPI_Cancel and
 * MPI_Test_cancelled, MPI_Request_free of active requests,
 * MPI_Request_get_status(_any/_some/_all), and argument errors with the
 * messages that name the argument and its value; which calls set a
 * status's MPI_ERROR field and which leave it alone.
 */
#include <mpi.h>
#include <string.h>

#include "check_mpi.h"

static int class_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static int has(int rc, const char *text)
{
    char s[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, s, &len);
    if (strstr(s, text) == NULL) {
        fprintf(stderr, "  message was: %s\n", s);
        return 0;
    }
    return 1;
}

static void nulls(void)
{
    MPI_Request r = MPI_REQUEST_NULL, rs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st;
    st.MPI_SOURCE = st.MPI_TAG = 99;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_ANY_SOURCE &&
          st.MPI_TAG == MPI_ANY_TAG, "wait on MPI_REQUEST_NULL gives the empty status");
    int flag = 0, idx = 5, out = 5, ind[3];
    MPI_Test(&r, &flag, &st);
    CHECK(flag, "test on null: flag true");
    MPI_Waitany(3, rs, &idx, &st);
    CHECK(idx == MPI_UNDEFINED, "waitany over nulls: MPI_UNDEFINED (%d)", idx);
    MPI_Testany(3, rs, &idx, &flag, &st);
    CHECK(idx == MPI_UNDEFINED && flag, "testany over nulls: flag true, MPI_UNDEFINED");
    MPI_Waitsome(3, rs, &out, ind, MPI_STATUSES_IGNORE);
    CHECK(out == MPI_UNDEFINED, "waitsome over nulls: outcount MPI_UNDEFINED (%d)", out);
    MPI_Testall(3, rs, &flag, MPI_STATUSES_IGNORE);
    CHECK(flag, "testall over nulls: true");
    CHECK(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall of none");
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE, "get_status of null");
}

static void any_some(void)
{
    int v[4] = {10, 11, 12, 13}, w[4] = {0};
    MPI_Request rq[4];
    for (int i = 0; i < 4; i++)
        MPI_Irecv(&w[i], 1, MPI_INT, 0, i, MPI_COMM_SELF, &rq[i]);
    int flag = 1, idx = -1, out = -1, ind[4];
    MPI_Testany(4, rq, &idx, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag && idx == MPI_UNDEFINED, "testany with nothing sent: flag false");
    MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
    CHECK(!flag, "testall with nothing sent: false");
    MPI_Testsome(4, rq, &out, ind, MPI_STATUSES_IGNORE);
    CHECK(out == 0, "testsome with nothing sent: 0 (%d)", out);
    MPI_Send(&v[2], 1, MPI_INT, 0, 2, MPI_COMM_SELF);
    MPI_Status st;
    MPI_Request_get_status_any(4, rq, &idx, &flag, &st);
    CHECK(flag && idx == 2 && rq[2] != MPI_REQUEST_NULL, "get_status_any: index 2, not freed");
    MPI_Waitany(4, rq, &idx, &st);
    CHECK(idx == 2 && w[2] == 12 && st.MPI_TAG == 2 && rq[2] == MPI_REQUEST_NULL, "waitany: index %d", idx);
    MPI_Send(&v[0], 1, MPI_INT, 0, 0, MPI_COMM_SELF);
    MPI_Send(&v[3], 1, MPI_INT, 0, 3, MPI_COMM_SELF);
    MPI_Status sts[4];
    MPI_Request_get_status_some(4, rq, &out, ind, sts);
    CHECK(out == 2 && rq[0] != MPI_REQUEST_NULL, "get_status_some: 2 complete, not freed");
    MPI_Waitsome(4, rq, &out, ind, sts);
    CHECK(out == 2 && ind[0] == 0 && ind[1] == 3 && w[0] == 10 && w[3] == 13 &&
          sts[1].MPI_TAG == 3, "waitsome: %d done (%d, %d)", out, ind[0], ind[1]);
    MPI_Send(&v[1], 1, MPI_INT, 0, 1, MPI_COMM_SELF);
    MPI_Request_get_status_all(4, rq, &flag, sts);
    CHECK(flag && rq[1] != MPI_REQUEST_NULL, "get_status_all: all done, not freed");
    MPI_Testall(4, rq, &flag, sts);
    CHECK(flag && w[1] == 11 && rq[1] == MPI_REQUEST_NULL && sts[1].MPI_TAG == 1 &&
          sts[0].MPI_SOURCE == MPI_ANY_SOURCE, "testall completes; nulls get empty statuses");
}

static void persistent(void)
{
    int s = 0, r = -1;
    MPI_Request rq[2];
    MPI_Send_init(&s, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(&r, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &rq[1]);
    MPI_Status st;
    int flag = 0;
    MPI_Test(&rq[1], &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE, "an inactive persistent request tests complete");
    int ok = 1;
    for (int i = 0; i < 50; i++) {
        s = i * 7;
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        ok &= r == i * 7 && rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL;
    }
    CHECK(ok, "50 starts of a persistent send/recv pair, handles kept");
    MPI_Start(&rq[1]);
    MPI_Start(&rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "request_free nulls handles");
    /* persistent ssend and bsend forms */
    char buf[1024];
    MPI_Buffer_attach(buf, sizeof buf);
    MPI_Request b;
    MPI_Bsend_init(&s, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &b);
    MPI_Ssend_init(&s, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, &rq[0]);
    for (int i = 0; i < 3; i++) {
        s = 100 + i;
        MPI_Start(&b);
        MPI_Wait(&b, MPI_STATUS_IGNORE);
        MPI_Recv(&r, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ok &= r == 100 + i;
        MPI_Start(&rq[0]);
        MPI_Recv(&r, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        ok &= r == 100 + i;
    }
    CHECK(ok, "persistent bsend and ssend");
    MPI_Request_free(&b);
    MPI_Request_free(&rq[0]);
    void *p;
    int sz;
    MPI_Buffer_detach(&p, &sz);
}

static void cancel(void)
{
    int x = 0;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&x, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int flag = 0;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "a posted receive is cancelled");
    int y = 5;
    MPI_Send(&y, 1, MPI_INT, 0, 50, MPI_COMM_WORLD);
    MPI_Recv(&x, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, &st);
    CHECK(x == 5, "the cancelled receive did not take the next message");
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a received message is not cancelled");
    /* a synchronous send not yet matched can be cancelled */
    MPI_Issend(&y, 1, MPI_INT, 0, 51, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "an unmatched Issend to self is cancelled");
    MPI_Iprobe(0, 51, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "and its message is gone");
    /* a completed one cannot be */
    MPI_Irecv(&x, 1, MPI_INT, 0, 52, MPI_COMM_WORLD, &r);
    MPI_Send(&y, 1, MPI_INT, 0, 52, MPI_COMM_WORLD);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && x == 5, "cancel after the match fails");
    /* freeing an active request: it completes on its own */
    MPI_Irecv(&x, 1, MPI_INT, 0, 53, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
    y = 77;
    MPI_Send(&y, 1, MPI_INT, 0, 53, MPI_COMM_WORLD);
    CHECK(x == 77 && r == MPI_REQUEST_NULL, "a freed active receive still receives");
}

static void errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int x = 0, rc;
    MPI_Request r;
    rc = MPI_Send(&x, -4, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_COUNT && has(rc, "MPI_Send: count -4 is negative"), "negative count");
    rc = MPI_Isend(&x, 1, MPI_INT, 3, 0, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_RANK && has(rc, "MPI_Isend: dest 3 is not a rank"), "bad dest");
    rc = MPI_Recv(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_TAG && has(rc, "MPI_Recv: tag -5"), "bad tag");
    rc = MPI_Send(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_TAG, "ANY_TAG is not a send tag");
    rc = MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_BUFFER && has(rc, "buf is NULL with count 3"), "NULL buffer");
    rc = MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "null datatype");
    rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK(class_of(rc) == MPI_ERR_COMM, "null communicator");
    r = 0x2c00beef;
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_REQUEST && has(rc, "MPI_Wait: 0x2c00beef is not a valid request"),
          "invalid request");
    MPI_Request n = MPI_REQUEST_NULL;
    rc = MPI_Request_free(&n);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "request_free of MPI_REQUEST_NULL");
    MPI_Irecv(&x, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &r);
    rc = MPI_Start(&r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST && has(rc, "not a persistent request"), "start of a nonpersistent");
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Recv_init(&x, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &r);
    MPI_Start(&r);
    rc = MPI_Start(&r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST && has(rc, "already active"), "start of an active request");
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    /* a truncation in MPI_Wait goes to the request's communicator (WORLD returns) */
    int big[4] = {0};
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    MPI_Irecv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &r);
    MPI_Send(big, 4, MPI_INT, 0, 9, MPI_COMM_WORLD);
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE, "truncation returned by WORLD's handler, not SELF's");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Calls that report one status leave its MPI_ERROR field alone (MPI-4.1
 * 3.2.5): probes, matched probes and receives, blocking receives, and the
 * single-completion wait/test calls.  Only the calls that report an array
 * of statuses set it, and only when they return MPI_ERR_IN_STATUS. */
#define SENTINEL 0x5eed
static void status_error(void)
{
    MPI_Comm c = MPI_COMM_SELF;
    int v = 41, w = 0, flag = 0;
    MPI_Status st;
    MPI_Request r, sr;
    MPI_Message m;
#define FRESH() (st.MPI_ERROR = SENTINEL, st.MPI_SOURCE = st.MPI_TAG = -7)
#define KEPT(what, tag)                                                                     \
    CHECK(st.MPI_ERROR == SENTINEL && st.MPI_SOURCE == 0 && st.MPI_TAG == (tag),            \
          "%s: MPI_ERROR 0x%x (want 0x%x untouched), source %d, tag %d", what, st.MPI_ERROR, \
          SENTINEL, st.MPI_SOURCE, st.MPI_TAG)

    MPI_Isend(&v, 1, MPI_INT, 0, 1, c, &sr);
    FRESH(); MPI_Probe(0, 1, c, &st); KEPT("MPI_Probe", 1);
    FRESH(); MPI_Iprobe(0, 1, c, &flag, &st);
    CHECK(flag, "MPI_Iprobe finds the message"); KEPT("MPI_Iprobe", 1);
    FRESH(); MPI_Recv(&w, 1, MPI_INT, 0, 1, c, &st); KEPT("MPI_Recv", 1);
    CHECK(w == 41, "MPI_Recv data %d", w);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);

    MPI_Isend(&v, 1, MPI_INT, 0, 2, c, &sr);
    FRESH(); MPI_Mprobe(0, 2, c, &m, &st); KEPT("MPI_Mprobe", 2);
    w = 0;
    FRESH(); MPI_Mrecv(&w, 1, MPI_INT, &m, &st); KEPT("MPI_Mrecv", 2);
    CHECK(w == 41 && m == MPI_MESSAGE_NULL, "MPI_Mrecv data %d", w);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);

    MPI_Isend(&v, 1, MPI_INT, 0, 3, c, &sr);
    flag = 0;
    while (!flag) {
        FRESH();
        MPI_Improbe(0, 3, c, &flag, &m, &st);
    }
    KEPT("MPI_Improbe", 3);
    w = 0;
    MPI_Imrecv(&w, 1, MPI_INT, &m, &r);
    FRESH(); MPI_Wait(&r, &st); KEPT("MPI_Imrecv + MPI_Wait", 3);
    CHECK(w == 41, "MPI_Imrecv data %d", w);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);

    MPI_Isend(&v, 1, MPI_INT, 0, 4, c, &sr);
    MPI_Mprobe(0, 4, c, &m, MPI_STATUS_IGNORE);
    MPI_Imrecv(&w, 1, MPI_INT, &m, &r);
    flag = 0;
    while (!flag) {
        FRESH();
        MPI_Request_get_status(r, &flag, &st);
    }
    KEPT("MPI_Imrecv + MPI_Request_get_status", 4);
    flag = 0;
    while (!flag) {
        FRESH();
        MPI_Test(&r, &flag, &st);
    }
    KEPT("MPI_Imrecv + MPI_Test", 4);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);

    int idx = -1;
    MPI_Irecv(&w, 1, MPI_INT, 0, 5, c, &r);
    MPI_Send(&v, 1, MPI_INT, 0, 5, c);
    FRESH(); MPI_Waitany(1, &r, &idx, &st); KEPT("MPI_Waitany", 5);
    MPI_Irecv(&w, 1, MPI_INT, 0, 6, c, &r);
    MPI_Send(&v, 1, MPI_INT, 0, 6, c);
    flag = 0;
    while (!flag) {
        FRESH();
        MPI_Testany(1, &r, &idx, &flag, &st);
    }
    KEPT("MPI_Testany", 6);
    w = 0;
    FRESH(); MPI_Sendrecv(&v, 1, MPI_INT, 0, 7, &w, 1, MPI_INT, 0, 7, c, &st);
    KEPT("MPI_Sendrecv", 7);
    CHECK(w == 41, "MPI_Sendrecv data %d", w);
    w = 5;
    FRESH(); MPI_Sendrecv_replace(&w, 1, MPI_INT, 0, 8, 0, 8, c, &st);
    KEPT("MPI_Sendrecv_replace", 8);
    CHECK(w == 5, "MPI_Sendrecv_replace data %d", w);

    /* MPI_PROC_NULL: the status names MPI_PROC_NULL, MPI_ERROR stays */
    FRESH(); MPI_Probe(MPI_PROC_NULL, 0, c, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_ERROR == SENTINEL,
          "MPI_Probe(MPI_PROC_NULL): source %d, MPI_ERROR 0x%x", st.MPI_SOURCE, st.MPI_ERROR);
    FRESH(); MPI_Mprobe(MPI_PROC_NULL, 0, c, &m, &st);
    CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_ERROR == SENTINEL,
          "MPI_Mprobe(MPI_PROC_NULL): MPI_ERROR 0x%x", st.MPI_ERROR);
    FRESH(); MPI_Mrecv(&w, 1, MPI_INT, &m, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_ERROR == SENTINEL,
          "MPI_Mrecv(MPI_MESSAGE_NO_PROC): source %d, MPI_ERROR 0x%x", st.MPI_SOURCE,
          st.MPI_ERROR);
    FRESH(); MPI_Recv(&w, 1, MPI_INT, MPI_PROC_NULL, 0, c, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_ERROR == SENTINEL,
          "MPI_Recv(MPI_PROC_NULL): source %d, MPI_ERROR 0x%x", st.MPI_SOURCE, st.MPI_ERROR);

    /* MPI_Waitall that succeeds leaves the fields alone too; one that
     * returns MPI_ERR_IN_STATUS sets every one */
    MPI_Status sts[2];
    int x[2] = {0, 0}, big[4] = {1, 2, 3, 4};
    MPI_Request rs[2];
    MPI_Irecv(&x[0], 1, MPI_INT, 0, 9, c, &rs[0]);
    MPI_Irecv(&x[1], 1, MPI_INT, 0, 10, c, &rs[1]);
    MPI_Send(&v, 1, MPI_INT, 0, 9, c);
    MPI_Send(&v, 1, MPI_INT, 0, 10, c);
    sts[0].MPI_ERROR = sts[1].MPI_ERROR = SENTINEL;
    int rc = MPI_Waitall(2, rs, sts);
    CHECK(rc == MPI_SUCCESS && sts[0].MPI_ERROR == SENTINEL && sts[1].MPI_ERROR == SENTINEL,
          "MPI_Waitall that succeeds: MPI_ERROR 0x%x 0x%x untouched", sts[0].MPI_ERROR,
          sts[1].MPI_ERROR);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Irecv(&x[0], 1, MPI_INT, 0, 11, c, &rs[0]);
    MPI_Irecv(&x[1], 1, MPI_INT, 0, 12, c, &rs[1]);
    MPI_Send(&v, 1, MPI_INT, 0, 11, c);
    MPI_Send(big, 4, MPI_INT, 0, 12, c);
    sts[0].MPI_ERROR = sts[1].MPI_ERROR = SENTINEL;
    rc = MPI_Waitall(2, rs, sts);
    int cls = -1, rcls = -1;
    MPI_Error_class(sts[1].MPI_ERROR, &cls);
    MPI_Error_class(rc, &rcls);
    CHECK(rcls == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE,
          "MPI_Waitall with a truncation: MPI_ERR_IN_STATUS (%d), MPI_ERROR %d and class %d", rcls,
          sts[0].MPI_ERROR, cls);
    /* the same through MPI_Request_get_status_all and MPI_Testall, with the
     * failing request first and a null one among them: MPI_ERROR set in
     * every status, the null one's to MPI_SUCCESS */
    MPI_Request r3[3];
    MPI_Status s3[3];
    int f3 = 0, c3[3];
    MPI_Irecv(&x[0], 1, MPI_INT, 0, 14, c, &r3[0]);
    r3[1] = MPI_REQUEST_NULL;
    x[1] = 0;
    MPI_Irecv(&x[1], 1, MPI_INT, 0, 15, c, &r3[2]);
    MPI_Send(big, 4, MPI_INT, 0, 14, c);
    MPI_Send(&v, 1, MPI_INT, 0, 15, c);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 3; i++)
            s3[i].MPI_ERROR = SENTINEL;
        rc = pass == 0 ? MPI_Request_get_status_all(3, r3, &f3, s3) : MPI_Testall(3, r3, &f3, s3);
        MPI_Error_class(rc, &rcls);
        for (int i = 0; i < 3; i++)
            MPI_Error_class(s3[i].MPI_ERROR, &c3[i]);
        CHECK(f3 && rcls == MPI_ERR_IN_STATUS && c3[0] == MPI_ERR_TRUNCATE &&
                  s3[1].MPI_ERROR == MPI_SUCCESS && s3[2].MPI_ERROR == MPI_SUCCESS &&
                  s3[2].MPI_TAG == 15 && x[1] == v,
              "%s with a truncation: flag %d, class %d, MPI_ERROR classes %d %d %d, tag %d, "
              "data %d", pass == 0 ? "MPI_Request_get_status_all" : "MPI_Testall", f3, rcls,
              c3[0], c3[1], c3[2], s3[2].MPI_TAG, x[1]);
        CHECK((pass == 0) == (r3[0] != MPI_REQUEST_NULL && r3[2] != MPI_REQUEST_NULL),
              "%s: requests %s", pass == 0 ? "get_status_all" : "Testall",
              pass == 0 ? "kept" : "freed");
    }
    /* a single-completion call that fails returns the code, the field stays */
    MPI_Irecv(&x[0], 1, MPI_INT, 0, 13, c, &r);
    MPI_Send(big, 4, MPI_INT, 0, 13, c);
    FRESH();
    rc = MPI_Wait(&r, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE && st.MPI_ERROR == SENTINEL,
          "MPI_Wait with a truncation returns it (class %d), MPI_ERROR 0x%x untouched", cls,
          st.MPI_ERROR);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_ARE_FATAL);
#undef FRESH
#undef KEPT
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    nulls();
    any_some();
    persistent();
    cancel();
    errors();
    status_error();
    MPI_Finalize();
    return check_summary("t_requests");
}
