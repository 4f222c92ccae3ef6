/* Communicator and session buffers for buffered sends (MPI-4.1 3.6): a
 * buffered send uses its communicator's buffer, else its session's, else the
 * process's (MPI_Buffer_attach).  Which one was used shows in the errors: a
 * communicator or session buffer too small for a message gives
 * MPI_ERR_BUFFER although the process buffer is large, and the same message
 * goes through once that buffer is detached.  Checked too: data delivered
 * over a ring (each rank sends to the next before receiving from the
 * previous one), detach handing back the attached address and size,
 * MPI_BUFFER_AUTOMATIC on a communicator and a session, flush and iflush,
 * communicators derived from a session's communicator, MPI_Comm_free with a
 * buffer attached and a message in it, and bad arguments with their
 * messages.  Under valgrind nothing leaks. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size, to, from;

static int eclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

/* Does the message of error code rc mention want? */
static int says(int rc, const char *want)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return strstr(msg, want) != NULL;
}

static void fill(int *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        p[i] = seed * 7919 + i;
}

static int intact(const int *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (p[i] != seed * 7919 + i)
            return 0;
    return 1;
}

/* A buffered send of n ints around the ring on comm: MPI_SUCCESS with the
 * data received intact, else the Bsend's error (nothing sent then). */
static int ring_bsend(MPI_Comm comm, int n, int tag)
{
    int *out = malloc((size_t)n * sizeof(int)), *in = calloc((size_t)n, sizeof(int));
    fill(out, n, rank * 100 + tag);
    int rc = MPI_Bsend(out, n, MPI_INT, to, tag, comm);
    /* every rank learns whether every Bsend went, so none waits for a
     * message that was refused */
    int ok = rc == MPI_SUCCESS, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        MPI_Recv(in, n, MPI_INT, from, tag, comm, MPI_STATUS_IGNORE);
        CHECK(intact(in, n, from * 100 + tag), "%d ints over tag %d arrived wrong", n, tag);
    }
    free(out);
    free(in);
    return rc;
}

/* Bytes a buffer needs for one message of n ints. */
static int room_for(int n)
{
    int s = 0;
    MPI_Pack_size(n, MPI_INT, MPI_COMM_WORLD, &s);
    return s + MPI_BSEND_OVERHEAD;
}

#define BIG 100000  /* ints: 400 kB, beyond the eager sizes */

static void communicator_buffer(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int small = room_for(1);
    char *mine = malloc((size_t)small);
    CHECK(MPI_Comm_attach_buffer(c, mine, small) == MPI_SUCCESS, "MPI_Comm_attach_buffer");
    CHECK(ring_bsend(c, 1, 1) == MPI_SUCCESS, "one int through the communicator's buffer");
    int rc = ring_bsend(c, 100, 2);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "100 ints on a communicator with a %d-byte buffer, "
          "beside a large process buffer: class %d, want MPI_ERR_BUFFER", small, eclass(rc));
    CHECK(says(rc, "communicator's buffer"), "the message names the communicator's buffer");
    CHECK(ring_bsend(MPI_COMM_WORLD, 100, 3) == MPI_SUCCESS,
          "100 ints on MPI_COMM_WORLD go through the process buffer");
    rc = MPI_Comm_attach_buffer(c, mine, small);
    CHECK(eclass(rc) == MPI_ERR_BUFFER && says(rc, "MPI_Comm_attach_buffer"),
          "a second buffer on the communicator: class %d", eclass(rc));
    rc = MPI_Comm_attach_buffer(c, MPI_BUFFER_AUTOMATIC, 0);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "automatic over a buffer: class %d", eclass(rc));
    CHECK(MPI_Comm_flush_buffer(c) == MPI_SUCCESS, "MPI_Comm_flush_buffer");

    void *back = NULL;
    int bsize = -1;
    CHECK(MPI_Comm_detach_buffer(c, &back, &bsize) == MPI_SUCCESS && back == mine &&
          bsize == small, "detach gave %p %d, want %p %d", back, bsize, (void *)mine, small);
    free(mine);
    CHECK(ring_bsend(c, 100, 4) == MPI_SUCCESS,
          "100 ints on the communicator once its buffer is detached: the process buffer");
    back = &bsize;  /* anything but NULL */
    bsize = -1;
    CHECK(MPI_Comm_detach_buffer(c, &back, &bsize) == MPI_SUCCESS && back == NULL && bsize == 0,
          "detach with nothing attached gave %p %d", back, bsize);

    /* automatic buffering on the communicator: messages far beyond the
     * process buffer, an iflush while they wait for their receivers */
    CHECK(MPI_Comm_attach_buffer_c(c, MPI_BUFFER_AUTOMATIC, -1) == MPI_SUCCESS,
          "MPI_Comm_attach_buffer_c automatic");
    int n = 1 << 19;  /* 2 MiB each, the process buffer has 1 MiB */
    int *out = malloc((size_t)n * sizeof(int)), *in = malloc((size_t)n * sizeof(int));
    int sent[3];  /* by every rank (a refused message is not waited for) */
    for (int k = 0; k < 3; k++) {
        fill(out, n, 30 + k);
        rc = MPI_Bsend(out, n, MPI_INT, to, 30 + k, c);
        CHECK(rc == MPI_SUCCESS, "2 MiB Bsend %d under automatic buffering: class %d", k,
              eclass(rc));
        sent[k] = rc == MPI_SUCCESS;
    }
    MPI_Allreduce(MPI_IN_PLACE, sent, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Request flush = MPI_REQUEST_NULL;
    CHECK(MPI_Comm_iflush_buffer(c, &flush) == MPI_SUCCESS && flush != MPI_REQUEST_NULL,
          "MPI_Comm_iflush_buffer");
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        memset(in, 0, (size_t)n * sizeof(int));
        if (sent[k])
            MPI_Recv(in, n, MPI_INT, from, 30 + k, c, MPI_STATUS_IGNORE);
        bad += !intact(in, n, 30 + k);
    }
    CHECK(bad == 0, "%d of 3 automatically buffered messages arrived wrong", bad);
    CHECK(MPI_Wait(&flush, MPI_STATUS_IGNORE) == MPI_SUCCESS && flush == MPI_REQUEST_NULL,
          "the iflush completes");
    int flag = 0;
    CHECK(MPI_Comm_iflush_buffer(c, &flush) == MPI_SUCCESS, "a second iflush");
    MPI_Test(&flush, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "an iflush with nothing in flight is complete at once");
    MPI_Count csize = -1;
    CHECK(MPI_Comm_detach_buffer_c(c, &back, &csize) == MPI_SUCCESS &&
          back == MPI_BUFFER_AUTOMATIC && csize == 0,
          "detach_c gave %p %lld, want MPI_BUFFER_AUTOMATIC and 0", back, (long long)csize);
    free(out);
    free(in);

    /* freed with a buffer attached and a message in it: the message still
     * arrives, the buffer goes with the communicator */
    mine = malloc((size_t)room_for(BIG));
    MPI_Comm_attach_buffer(c, mine, room_for(BIG));
    out = malloc(BIG * sizeof(int));
    in = calloc(BIG, sizeof(int));
    fill(out, BIG, 77);
    MPI_Request r;
    MPI_Irecv(in, BIG, MPI_INT, from, 77, c, &r);
    rc = MPI_Bsend(out, BIG, MPI_INT, to, 77, c);
    CHECK(rc == MPI_SUCCESS, "Bsend before MPI_Comm_free: class %d", eclass(rc));
    CHECK(MPI_Comm_free(&c) == MPI_SUCCESS && c == MPI_COMM_NULL,
          "MPI_Comm_free with a buffer attached");
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(intact(in, BIG, 77), "a message buffered before MPI_Comm_free arrived wrong");
    MPI_Barrier(MPI_COMM_WORLD);  /* every message out of the buffers before they go */
    free(mine);
    free(out);
    free(in);
}

static void session_buffer(void)
{
    MPI_Session s;
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s) == MPI_SUCCESS, "session");
    MPI_Group g;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    MPI_Comm sc = MPI_COMM_NULL, sd = MPI_COMM_NULL;
    CHECK(MPI_Comm_create_from_group(g, "t_bsend_buffers", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                     &sc) == MPI_SUCCESS, "a communicator of the session");
    MPI_Group_free(&g);
    MPI_Comm_dup(sc, &sd);

    int small = room_for(1);
    char *mine = malloc((size_t)small);
    CHECK(MPI_Session_attach_buffer(s, mine, small) == MPI_SUCCESS, "MPI_Session_attach_buffer");
    int rc = MPI_Session_attach_buffer(s, mine, small);
    CHECK(eclass(rc) == MPI_ERR_BUFFER && says(rc, "MPI_Session_attach_buffer"),
          "a second buffer on the session: class %d", eclass(rc));
    CHECK(ring_bsend(sc, 1, 5) == MPI_SUCCESS, "one int through the session's buffer");
    rc = ring_bsend(sc, 100, 6);
    CHECK(eclass(rc) == MPI_ERR_BUFFER && says(rc, "session's buffer"),
          "100 ints on the session's communicator: class %d, want MPI_ERR_BUFFER", eclass(rc));
    rc = ring_bsend(sd, 100, 7);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "100 ints on a duplicate of the session's communicator: "
          "class %d, want MPI_ERR_BUFFER", eclass(rc));
    CHECK(ring_bsend(MPI_COMM_WORLD, 100, 8) == MPI_SUCCESS,
          "MPI_COMM_WORLD does not use the session's buffer");
    /* a communicator's own buffer comes before its session's */
    CHECK(MPI_Comm_attach_buffer(sd, MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS, "automatic on sd");
    CHECK(ring_bsend(sd, BIG, 9) == MPI_SUCCESS, "the duplicate's automatic buffer");
    MPI_Request flush;
    int flag = 0;
    CHECK(MPI_Session_flush_buffer(s) == MPI_SUCCESS, "MPI_Session_flush_buffer");
    CHECK(MPI_Session_iflush_buffer(s, &flush) == MPI_SUCCESS, "MPI_Session_iflush_buffer");
    MPI_Test(&flush, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "the session's iflush with nothing in flight is complete at once");
    void *back = NULL;
    int bsize = -1;
    CHECK(MPI_Session_detach_buffer(s, &back, &bsize) == MPI_SUCCESS && back == mine &&
          bsize == small, "session detach gave %p %d, want %p %d", back, bsize, (void *)mine,
          small);
    free(mine);
    CHECK(ring_bsend(sc, 100, 10) == MPI_SUCCESS,
          "100 ints on the session's communicator once its buffer is detached");

    /* automatic on the session, and an iflush while messages wait */
    CHECK(MPI_Session_attach_buffer_c(s, MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS,
          "MPI_Session_attach_buffer_c automatic");
    int *out = malloc(BIG * sizeof(int)), *in = calloc(BIG, sizeof(int));
    fill(out, BIG, 11);
    rc = MPI_Bsend(out, BIG, MPI_INT, to, 11, sc);
    CHECK(rc == MPI_SUCCESS, "Bsend through the session's automatic buffer: class %d",
          eclass(rc));
    CHECK(MPI_Session_iflush_buffer(s, &flush) == MPI_SUCCESS, "iflush with a message queued");
    MPI_Recv(in, BIG, MPI_INT, from, 11, sc, MPI_STATUS_IGNORE);
    CHECK(intact(in, BIG, 11), "the session-buffered message arrived wrong");
    CHECK(MPI_Wait(&flush, MPI_STATUS_IGNORE) == MPI_SUCCESS, "the session's iflush completes");
    MPI_Count csize = -1;
    CHECK(MPI_Session_detach_buffer_c(s, &back, &csize) == MPI_SUCCESS &&
          back == MPI_BUFFER_AUTOMATIC && csize == 0, "session detach_c gave %p %lld", back,
          (long long)csize);
    free(out);
    free(in);

    /* bad arguments */
    rc = MPI_Session_detach_buffer(s, NULL, &bsize);
    CHECK(eclass(rc) == MPI_ERR_ARG && says(rc, "buffer_addr"), "NULL buffer_addr: class %d",
          eclass(rc));
    rc = MPI_Session_iflush_buffer(s, NULL);
    CHECK(eclass(rc) == MPI_ERR_ARG, "iflush with a NULL request: class %d", eclass(rc));
    rc = MPI_Session_attach_buffer(MPI_SESSION_NULL, &bsize, 4);
    CHECK(eclass(rc) == MPI_ERR_SESSION, "MPI_SESSION_NULL: class %d", eclass(rc));

    /* finalize with a buffer attached waits for its messages */
    CHECK(MPI_Session_attach_buffer(s, MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS, "again");
    MPI_Comm_free(&sd);
    MPI_Comm_free(&sc);
    CHECK(MPI_Session_finalize(&s) == MPI_SUCCESS, "finalize with a buffer attached");
}

static void bad_input(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int x = 0, rc;
    rc = MPI_Comm_attach_buffer(MPI_COMM_NULL, &x, 4);
    CHECK(eclass(rc) == MPI_ERR_COMM, "MPI_COMM_NULL: class %d", eclass(rc));
    rc = MPI_Comm_attach_buffer(c, &x, -4);
    CHECK(eclass(rc) == MPI_ERR_ARG && says(rc, "-4"), "negative size: class %d", eclass(rc));
    rc = MPI_Comm_attach_buffer_c(c, NULL, 64);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "NULL buffer of 64 bytes: class %d", eclass(rc));
    rc = MPI_Comm_detach_buffer(c, &x, NULL);
    CHECK(eclass(rc) == MPI_ERR_ARG && says(rc, "size"), "NULL size: class %d", eclass(rc));
    rc = MPI_Comm_iflush_buffer(c, NULL);
    CHECK(eclass(rc) == MPI_ERR_ARG, "iflush with a NULL request: class %d", eclass(rc));
    rc = MPI_Comm_flush_buffer(MPI_COMM_NULL);
    CHECK(eclass(rc) == MPI_ERR_COMM, "flush on MPI_COMM_NULL: class %d", eclass(rc));
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    int big = 1 << 20;
    char *process = malloc((size_t)big);
    CHECK(MPI_Buffer_attach(process, big) == MPI_SUCCESS, "the process buffer");
    communicator_buffer();
    session_buffer();
    bad_input();
    /* a buffer left on MPI_COMM_WORLD goes with MPI_Finalize */
    CHECK(MPI_Comm_attach_buffer(MPI_COMM_WORLD, MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS,
          "automatic on MPI_COMM_WORLD");
    CHECK(ring_bsend(MPI_COMM_WORLD, BIG, 12) == MPI_SUCCESS, "through MPI_COMM_WORLD's buffer");
    void *back;
    int bsize;
    MPI_Buffer_detach(&back, &bsize);
    CHECK(back == process && bsize == big, "the process buffer back: %p %d", back, bsize);
    free(process);
    MPI_Finalize();
    return check_summary("t_bsend_buffers");
}
