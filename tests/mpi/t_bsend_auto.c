/* Automatic buffering for buffered sends (MPI-4.1 3.6): after
 * MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0) every MPI_Bsend, MPI_Ibsend
 * and persistent MPI_Bsend_init message finds room, whatever its size and
 * however many are queued before the receiver starts; detach gives
 * MPI_BUFFER_AUTOMATIC back with size 0; MPI_Buffer_flush waits for the
 * messages and keeps the buffer, MPI_Buffer_iflush's request completes once
 * they are sent; attaching twice is MPI_ERR_BUFFER.  Each
 * rank sends a burst to the next rank before receiving from the previous
 * one, so the messages really sit in buffers.  Under valgrind nothing leaks. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;

static int eclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

#define NMSG 40

static int msg_len(int i)
{
    return i % 5 == 4 ? (1 << 20) + i : 17 * i + 1;  /* some of 1 MiB */
}

static void fill(int *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        p[i] = seed * 1000003 + i;
}

static int check(const int *p, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (p[i] != seed * 1000003 + i)
            return 0;
    return 1;
}

/* A burst of buffered sends of each kind to the next rank, then the
 * matching receives from the previous one. */
static void burst(const char *kind)
{
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int *buf = malloc(((size_t)1 << 20) * sizeof(int) + 64 * sizeof(int));
    MPI_Request reqs[NMSG];
    for (int i = 0; i < NMSG; i++) {
        int n = msg_len(i), rc;
        fill(buf, n, rank * 100 + i);
        if (strcmp(kind, "Bsend") == 0) {
            rc = MPI_Bsend(buf, n, MPI_INT, to, i, MPI_COMM_WORLD);
            reqs[i] = MPI_REQUEST_NULL;
        } else if (strcmp(kind, "Ibsend") == 0) {
            rc = MPI_Ibsend(buf, n, MPI_INT, to, i, MPI_COMM_WORLD, &reqs[i]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);  /* the copy is made: buf is free */
        } else {
            rc = MPI_Bsend_init(buf, n, MPI_INT, to, i, MPI_COMM_WORLD, &reqs[i]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Start(&reqs[i]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            MPI_Request_free(&reqs[i]);
        }
        CHECK(rc == MPI_SUCCESS, "%s %d of %d ints: class %d", kind, i, n, eclass(rc));
    }
    int bad = 0;
    for (int i = 0; i < NMSG; i++) {
        int n = msg_len(i);
        memset(buf, 0, (size_t)n * sizeof(int));
        MPI_Recv(buf, n, MPI_INT, from, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad += !check(buf, n, from * 100 + i);
    }
    CHECK(bad == 0, "%s: %d of %d messages arrived wrong", kind, bad, NMSG);
    free(buf);
}

/* MPI_Buffer_iflush with large buffered messages the next rank has not
 * received yet: its request completes once they are sent, whether it is
 * waited for before or after they are received. */
static void iflush_while_queued(void)
{
    MPI_Request flush = MPI_REQUEST_NULL;
    int flag = 0;
    MPI_Buffer_flush();  /* the earlier messages may still be on their way */
    CHECK(MPI_Buffer_iflush(&flush) == MPI_SUCCESS, "MPI_Buffer_iflush with nothing queued");
    MPI_Test(&flush, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && flush == MPI_REQUEST_NULL, "an iflush with nothing queued is complete at once");

    int to = (rank + 1) % size, from = (rank + size - 1) % size, n = 1 << 18;
    int *out = malloc((size_t)n * sizeof(int)), *in = malloc((size_t)n * sizeof(int));
    for (int k = 0; k < 3; k++) {
        fill(out, n, 50 + k);
        MPI_Bsend(out, n, MPI_INT, to, 200 + k, MPI_COMM_WORLD);
    }
    MPI_Status st;
    CHECK(MPI_Buffer_iflush(&flush) == MPI_SUCCESS, "MPI_Buffer_iflush with 3 queued");
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        memset(in, 0, (size_t)n * sizeof(int));
        int rc = MPI_Recv(in, n, MPI_INT, from, 200 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad += rc != MPI_SUCCESS || !check(in, n, 50 + k);
    }
    CHECK(MPI_Wait(&flush, &st) == MPI_SUCCESS && flush == MPI_REQUEST_NULL,
          "waiting for the iflush");
    CHECK(bad == 0, "%d of 3 messages sent before an iflush arrived wrong", bad);
    CHECK(MPI_Buffer_iflush(NULL) != MPI_SUCCESS, "MPI_Buffer_iflush(NULL) is an error");
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    CHECK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS, "attach automatic");
    int rc = MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "a second attach: class %d", eclass(rc));
    char small[64];
    rc = MPI_Buffer_attach(small, sizeof small);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "a buffer over automatic: class %d", eclass(rc));
    burst("Bsend");
    burst("Ibsend");
    burst("Bsend_init");
    CHECK(MPI_Buffer_flush() == MPI_SUCCESS, "MPI_Buffer_flush");
    burst("Bsend");  /* still attached after the flush */
    iflush_while_queued();

    void *back = NULL;
    int bsize = -1;
    CHECK(MPI_Buffer_detach(&back, &bsize) == MPI_SUCCESS && back == MPI_BUFFER_AUTOMATIC &&
          bsize == 0, "detach gave %p size %d, want MPI_BUFFER_AUTOMATIC (%p) and 0", back, bsize,
          MPI_BUFFER_AUTOMATIC);

    /* without a buffer a buffered send has nowhere to go */
    int x = 1;
    rc = MPI_Bsend(&x, 1, MPI_INT, 0, 99, MPI_COMM_SELF);
    CHECK(eclass(rc) == MPI_ERR_BUFFER, "Bsend with nothing attached: class %d", eclass(rc));

    /* the large-count forms; the size beside MPI_BUFFER_AUTOMATIC is ignored */
    CHECK(MPI_Buffer_attach_c(MPI_BUFFER_AUTOMATIC, -5) == MPI_SUCCESS, "attach_c automatic");
    rc = MPI_Bsend(&x, 1, MPI_INT, 0, 98, MPI_COMM_SELF);
    int y = 0;
    if (rc == MPI_SUCCESS)
        MPI_Recv(&y, 1, MPI_INT, 0, 98, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && y == 1, "Bsend to self under attach_c: class %d, got %d",
          eclass(rc), y);
    MPI_Count csize = -1;
    back = NULL;
    CHECK(MPI_Buffer_detach_c(&back, &csize) == MPI_SUCCESS && back == MPI_BUFFER_AUTOMATIC &&
          csize == 0, "detach_c gave %p size %lld", back, (long long)csize);

    /* an ordinary buffer still works after automatic buffering */
    int need = 0;
    MPI_Pack_size(1, MPI_INT, MPI_COMM_SELF, &need);
    need += MPI_BSEND_OVERHEAD;
    char *mine = malloc((size_t)need);
    MPI_Buffer_attach(mine, need);
    x = 7;
    y = 0;
    rc = MPI_Bsend(&x, 1, MPI_INT, 0, 97, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS)
        MPI_Recv(&y, 1, MPI_INT, 0, 97, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && y == 7, "Bsend through a user buffer of exactly MPI_Pack_size + "
          "MPI_BSEND_OVERHEAD (%d) bytes: class %d", need, eclass(rc));
    MPI_Buffer_detach(&back, &bsize);
    CHECK(back == mine && bsize == need, "detach of the user buffer gave %p %d", back, bsize);
    free(mine);

    MPI_Finalize();
    return check_summary("t_bsend_auto");
}
