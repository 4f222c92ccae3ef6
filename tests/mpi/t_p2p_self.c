/*
 * Point-to-point in a one-process job: a process sending to itself through
 * the same matching as any message, on MPI_COMM_SELF and MPI_COMM_WORLD.
 * Data is checked for every size (eager and rendezvous paths of the self
 * transport), wildcards, the non-overtaking order, MPI_PROC_NULL, probe and
 * matched probe, truncation, synchronous, ready and buffered sends,
 * sendrecv (and _replace) and the large-count _c forms.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static void fill(int *buf, int n, int seed)
{
    for (int i = 0; i < n; i++)
        buf[i] = seed * 1000003 + i;
}

static int verify(const int *buf, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != seed * 1000003 + i)
            return 0;
    return 1;
}

static int count_of(MPI_Status *st, MPI_Datatype t)
{
    int c = -1;
    MPI_Get_count(st, t, &c);
    return c;
}

static void sizes(MPI_Comm comm, const char *name)
{
    static const int counts[] = {0, 1, 7, 1024, 16384, 16385, 100000, 1 << 20};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        int n = counts[k];
        int *s = malloc((size_t)n * sizeof(int) + 4), *r = calloc((size_t)n + 1, sizeof(int));
        fill(s, n, (int)k + 1);
        MPI_Request rq[2];
        MPI_Status st[2];
        MPI_Isend(s, n, MPI_INT, 0, 5, comm, &rq[0]);
        MPI_Irecv(r, n, MPI_INT, 0, 5, comm, &rq[1]);
        int rc = MPI_Waitall(2, rq, st);
        CHECK(rc == MPI_SUCCESS, "%s: Waitall of %d ints returned %d", name, n, rc);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "%s: handles nulled", name);
        CHECK(verify(r, n, (int)k + 1), "%s: %d ints arrive intact", name, n);
        CHECK(st[1].MPI_SOURCE == 0 && st[1].MPI_TAG == 5, "%s: status source %d tag %d", name,
              st[1].MPI_SOURCE, st[1].MPI_TAG);
        CHECK(count_of(&st[1], MPI_INT) == n, "%s: count %d == %d", name, count_of(&st[1], MPI_INT), n);
        /* receive posted first */
        memset(r, 0, (size_t)n * sizeof(int));
        MPI_Irecv(r, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &rq[1]);
        MPI_Send(s, n, MPI_INT, 0, 6, comm);
        MPI_Wait(&rq[1], &st[1]);
        CHECK(verify(r, n, (int)k + 1) && st[1].MPI_TAG == 6, "%s: %d ints to a posted wildcard "
              "receive", name, n);
        free(s);
        free(r);
    }
}

static void ordering(MPI_Comm comm)
{
    enum { N = 200 };
    int v[N], got[N];
    MPI_Request rq[N];
    for (int i = 0; i < N; i++) {
        v[i] = i;
        MPI_Isend(&v[i], 1, MPI_INT, 0, i % 3, comm, &rq[i]);
    }
    /* Same tag: arrival order is send order.  Any tag: still send order. */
    for (int i = 0; i < N; i++)
        MPI_Recv(&got[i], 1, MPI_INT, 0, MPI_ANY_TAG, comm, MPI_STATUS_IGNORE);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= got[i] == i;
    CHECK(ok, "non-overtaking: %d messages received with MPI_ANY_TAG in send order", N);
    MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++)
        MPI_Isend(&v[i], 1, MPI_INT, 0, i % 2, comm, &rq[i]);
    int last1 = -1, last0 = -1;
    ok = 1;
    for (int i = 0; i < N / 2; i++) {
        int x;
        MPI_Recv(&x, 1, MPI_INT, 0, 1, comm, MPI_STATUS_IGNORE);
        ok &= x > last1 && x % 2 == 1;
        last1 = x;
    }
    for (int i = 0; i < N / 2; i++) {
        int x;
        MPI_Recv(&x, 1, MPI_INT, 0, 0, comm, MPI_STATUS_IGNORE);
        ok &= x > last0 && x % 2 == 0;
        last0 = x;
    }
    CHECK(ok, "per-tag order kept when tags are received out of order");
    MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
}

static void proc_null(void)
{
    int x = 42;
    MPI_Status st;
    CHECK(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "send to PROC_NULL");
    MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st, MPI_INT) == 0,
          "recv from PROC_NULL: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
          count_of(&st, MPI_INT));
    CHECK(x == 42, "recv from PROC_NULL leaves the buffer alone");
    int flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL, "iprobe PROC_NULL finds it at once");
    MPI_Message m;
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st);
    CHECK(m == MPI_MESSAGE_NO_PROC, "mprobe PROC_NULL gives MPI_MESSAGE_NO_PROC");
    MPI_Mrecv(&x, 1, MPI_INT, &m, &st);
    CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL, "mrecv of NO_PROC");
}

static void probes(MPI_Comm comm)
{
    int a[10], b[10], flag = 1;
    fill(a, 10, 9);
    MPI_Status st;
    MPI_Iprobe(0, 77, comm, &flag, &st);
    CHECK(!flag, "iprobe finds nothing before the send");
    MPI_Request rq;
    MPI_Isend(a, 10, MPI_INT, 0, 77, comm, &rq);
    MPI_Probe(MPI_ANY_SOURCE, 77, comm, &st);
    CHECK(st.MPI_TAG == 77 && count_of(&st, MPI_INT) == 10, "probe: tag %d count %d", st.MPI_TAG,
          count_of(&st, MPI_INT));
    MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, &st);
    CHECK(flag, "iprobe sees the message again (probe does not receive)");
    MPI_Message m;
    MPI_Improbe(0, 77, comm, &flag, &m, &st);
    CHECK(flag && m != MPI_MESSAGE_NULL, "improbe takes the message");
    MPI_Iprobe(0, 77, comm, &flag, &st);
    CHECK(!flag, "a taken message is invisible to probes");
    MPI_Request rr;
    MPI_Imrecv(b, 10, MPI_INT, &m, &rr);
    MPI_Wait(&rr, &st);
    CHECK(m == MPI_MESSAGE_NULL && verify(b, 10, 9), "imrecv delivers the message");
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    /* a big one through mprobe/mrecv: the rendezvous form of the self path */
    int n = 50000;
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    fill(s, n, 3);
    MPI_Issend(s, n, MPI_INT, 0, 78, comm, &rq);
    MPI_Mprobe(0, 78, comm, &m, &st);
    CHECK(count_of(&st, MPI_INT) == n, "mprobe count %d", count_of(&st, MPI_INT));
    flag = 1;
    MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "an Issend is not complete before its receive");
    MPI_Mrecv(r, n, MPI_INT, &m, &st);
    CHECK(verify(r, n, 3), "mrecv data");
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    free(s);
    free(r);
}

static void truncation(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int n = 10; n <= 100000; n *= 100) {
        int *s = malloc(n * sizeof(int)), *r = calloc(n, sizeof(int));
        fill(s, n, 4);
        MPI_Request rq;
        MPI_Status st;
        MPI_Isend(s, n, MPI_INT, 0, 1, MPI_COMM_WORLD, &rq);
        st.MPI_ERROR = -7;
        int rc = MPI_Recv(r, n / 2, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "%d ints into %d: class %d is MPI_ERR_TRUNCATE", n, n / 2, cls);
        CHECK(verify(r, n / 2, 4) && r[n / 2] == 0, "the part that fits (%d ints) is delivered, "
              "nothing past it", n / 2);
        CHECK(count_of(&st, MPI_INT) == n / 2, "count says what was delivered: %d",
              count_of(&st, MPI_INT));
        char text[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, text, &len);
        CHECK(strstr(text, "longer than the receive buffer") != NULL, "message: %s", text);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        free(s);
        free(r);
    }
    /* in Waitall: MPI_ERR_IN_STATUS, errors in the statuses */
    int x[4] = {1, 2, 3, 4}, y[2];
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Isend(x, 4, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(y, 2, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq[1]);
    int rc = MPI_Waitall(2, rq, st);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "Waitall with a truncated receive: MPI_ERR_IN_STATUS (%d)", cls);
    MPI_Error_class(st[1].MPI_ERROR, &cls);
    CHECK(st[0].MPI_ERROR == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "statuses: %d, class %d",
          st[0].MPI_ERROR, cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void modes(void)
{
    int a[100], b[100];
    fill(a, 100, 5);
    MPI_Request rq;
    MPI_Irecv(b, 100, MPI_INT, 0, 3, MPI_COMM_SELF, &rq);
    MPI_Rsend(a, 100, MPI_INT, 0, 3, MPI_COMM_SELF);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(verify(b, 100, 5), "rsend to a posted receive");
    MPI_Irecv(b, 100, MPI_INT, 0, 3, MPI_COMM_SELF, &rq);
    MPI_Ssend(a, 100, MPI_INT, 0, 3, MPI_COMM_SELF);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(verify(b, 100, 5), "ssend to a posted receive");

    /* buffered: the send completes with no receive posted */
    int size = 3 * (400 + MPI_BSEND_OVERHEAD) + 64;
    char *buf = malloc(size);
    MPI_Buffer_attach(buf, size);
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3; i++) {
        fill(a, 100, 10 + i);
        CHECK(MPI_Bsend(a, 100, MPI_INT, 0, 20 + i, MPI_COMM_WORLD) == MPI_SUCCESS, "bsend %d", i);
    }
    fill(a, 100, 0);  /* the user buffer may change at once */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *huge = calloc(1000, sizeof(int));
    int rc = MPI_Bsend(huge, 1000, MPI_INT, 0, 30, MPI_COMM_WORLD);
    free(huge);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "a bsend larger than the attached buffer fails: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    for (int i = 2; i >= 0; i--) {
        MPI_Recv(b, 100, MPI_INT, 0, 20 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(b, 100, 10 + i), "bsend %d data", i);
    }
    MPI_Request ib;
    MPI_Ibsend(a, 100, MPI_INT, 0, 40, MPI_COMM_WORLD, &ib);
    int flag = 0;
    MPI_Test(&ib, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "ibsend completes at once");
    void *back;
    int bsize;
    MPI_Recv(b, 100, MPI_INT, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&back, &bsize);
    CHECK(back == buf && bsize == size, "detach gives the buffer back");
    free(buf);
}

static void sendrecv(void)
{
    int a[1000], b[1000];
    fill(a, 1000, 6);
    MPI_Status st;
    MPI_Sendrecv(a, 1000, MPI_INT, 0, 8, b, 1000, MPI_INT, 0, 8, MPI_COMM_SELF, &st);
    CHECK(verify(b, 1000, 6) && st.MPI_TAG == 8 && count_of(&st, MPI_INT) == 1000, "sendrecv");
    int big = 100000;
    int *c = malloc(big * sizeof(int));
    fill(c, big, 7);
    MPI_Sendrecv_replace(c, big, MPI_INT, 0, 9, 0, 9, MPI_COMM_WORLD, &st);
    CHECK(verify(c, big, 7) && count_of(&st, MPI_INT) == big, "sendrecv_replace of %d ints", big);
    MPI_Request rq;
    MPI_Isendrecv(a, 1000, MPI_INT, 0, 10, b, 1000, MPI_INT, 0, 10, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    CHECK(verify(b, 1000, 6) && st.MPI_SOURCE == 0, "isendrecv");
    MPI_Isendrecv_replace(c, big, MPI_INT, 0, 11, 0, 11, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    CHECK(verify(c, big, 7), "isendrecv_replace");
    free(c);
}

static void large_count(void)
{
    MPI_Count n = 3000;
    double *a = malloc(n * sizeof(double)), *b = calloc(n, sizeof(double));
    for (MPI_Count i = 0; i < n; i++)
        a[i] = (double)i / 3;
    MPI_Request rq;
    MPI_Status st;
    MPI_Irecv_c(b, n, MPI_DOUBLE, 0, 1, MPI_COMM_SELF, &rq);
    MPI_Send_c(a, n, MPI_DOUBLE, 0, 1, MPI_COMM_SELF);
    MPI_Wait(&rq, &st);
    MPI_Count c = -1;
    MPI_Get_count_c(&st, MPI_DOUBLE, &c);
    CHECK(c == n && memcmp(a, b, n * sizeof(double)) == 0, "_c send/recv: count %lld", (long long)c);
    MPI_Get_elements_c(&st, MPI_DOUBLE, &c);
    CHECK(c == n, "Get_elements_c %lld", (long long)c);
    int ic;
    MPI_Get_count(&st, MPI_INT, &ic);
    CHECK(ic == 2 * n, "the same bytes counted as ints: %d", ic);
    MPI_Sendrecv(a, 1, MPI_DOUBLE, 0, 4, b, 1, MPI_DOUBLE, 0, 4, MPI_COMM_SELF, &st);
    MPI_Get_count(&st, MPI_LONG_DOUBLE, &ic);
    CHECK(ic == MPI_UNDEFINED, "8 bytes counted as 16-byte elements: MPI_UNDEFINED (%d)", ic);
    memset(b, 0, n * sizeof(double));
    MPI_Isend_c(a, n, MPI_DOUBLE, 0, 2, MPI_COMM_SELF, &rq);
    MPI_Recv_c(b, n, MPI_DOUBLE, 0, 2, MPI_COMM_SELF, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(memcmp(a, b, n * sizeof(double)) == 0, "_c isend/recv");
    MPI_Sendrecv_c(a, n, MPI_DOUBLE, 0, 3, b, n, MPI_DOUBLE, 0, 3, MPI_COMM_SELF, &st);
    CHECK(memcmp(a, b, n * sizeof(double)) == 0, "_c sendrecv");
    free(a);
    free(b);
}

/* Derived datatypes on both sides: every-other-int vectors, eager and
 * rendezvous sizes, strided to contiguous and back. */
static void derived(void)
{
    for (int n = 4; n <= 40000; n *= 10) {
        MPI_Datatype vec;
        MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int *s = malloc(2 * n * sizeof(int)), *r = calloc(2 * n, sizeof(int)), *c = calloc(n, sizeof(int));
        for (int i = 0; i < 2 * n; i++)
            s[i] = i % 2 ? -1 : i / 2 + 7;
        MPI_Request rq[2];
        MPI_Status st;
        MPI_Irecv(r, 1, vec, 0, 1, MPI_COMM_SELF, &rq[0]);
        MPI_Isend(s, 1, vec, 0, 1, MPI_COMM_SELF, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        int ok = 1;
        for (int i = 0; i < 2 * n; i++)
            ok &= r[i] == (i % 2 ? 0 : i / 2 + 7);
        CHECK(ok, "vector of %d ints to vector: data in the strided slots only", n);
        MPI_Sendrecv(s, 1, vec, 0, 2, c, n, MPI_INT, 0, 2, MPI_COMM_SELF, &st);
        ok = 1;
        for (int i = 0; i < n; i++)
            ok &= c[i] == i + 7;
        int elems = -1;
        MPI_Get_elements(&st, MPI_INT, &elems);
        CHECK(ok && elems == n, "vector of %d ints to contiguous (%d elements)", n, elems);
        memset(r, 0, 2 * n * sizeof(int));
        MPI_Sendrecv(c, n, MPI_INT, 0, 3, r, 1, vec, 0, 3, MPI_COMM_SELF, &st);
        ok = 1;
        for (int i = 0; i < 2 * n; i++)
            ok &= r[i] == (i % 2 ? 0 : i / 2 + 7);
        CHECK(ok, "contiguous %d ints to a vector", n);
        MPI_Type_free(&vec);
        free(s);
        free(r);
        free(c);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    derived();
    sizes(MPI_COMM_SELF, "SELF");
    sizes(MPI_COMM_WORLD, "WORLD");
    ordering(MPI_COMM_WORLD);
    ordering(MPI_COMM_SELF);
    proc_null();
    probes(MPI_COMM_SELF);
    truncation();
    modes();
    sendrecv();
    large_count();
    /* WORLD and SELF are separate matching contexts */
    int x = 1, y = 0, flag = 1;
    MPI_Request rq;
    MPI_Isend(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &rq);
    MPI_Iprobe(0, 0, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "a message on WORLD is not seen on SELF");
    MPI_Recv(&y, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(y == 1, "and is received on WORLD");
    MPI_Finalize();
    return check_summary("t_p2p_self");
}
