/*
 * Windows of nonblocking rendezvous messages, as a bandwidth benchmark
 * sends them: rank 0 posts WINDOW MPI_Isend, rank 1 WINDOW MPI_Irecv, both
 * MPI_Waitall, then rank 1 acknowledges the window with a small message
 * (bidirectional with "bi": both ranks send and receive each window).
 * Every message carries its window and index, checked on arrival.  The
 * pattern is the one lingering is for (progress/engine.h): the tests run
 * it with CADENCE_TRANSPORT_REPORT and look at the lingers it reports.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

enum { WINDOW = 16, WINDOWS = 300, BYTES = 65536 };

static unsigned char value(int w, int i, int k)
{
    return (unsigned char)(w * 31 + i * 7 + k);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bi = argc > 1 && strcmp(argv[1], "bi") == 0;
    unsigned char *sbuf = malloc((size_t)WINDOW * BYTES);
    unsigned char *rbuf = malloc((size_t)WINDOW * BYTES);
    MPI_Request rq[2 * WINDOW];
    int bad = 0;
    if (size == 2) {
        int peer = 1 - rank;
        int sends = rank == 0 || bi, recvs = rank == 1 || bi;
        for (int w = 0; w < WINDOWS; w++) {
            int n = 0;
            if (recvs)
                for (int i = 0; i < WINDOW; i++)
                    MPI_Irecv(rbuf + (size_t)i * BYTES, BYTES, MPI_BYTE, peer, i, MPI_COMM_WORLD,
                              &rq[n++]);
            if (sends)
                for (int i = 0; i < WINDOW; i++) {
                    unsigned char *b = sbuf + (size_t)i * BYTES;
                    b[0] = value(w, i, 0);
                    b[BYTES / 2] = value(w, i, 1);
                    b[BYTES - 1] = value(w, i, 2);
                    MPI_Isend(b, BYTES, MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[n++]);
                }
            MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
            if (recvs)
                for (int i = 0; i < WINDOW; i++) {
                    const unsigned char *b = rbuf + (size_t)i * BYTES;
                    bad += b[0] != value(w, i, 0) || b[BYTES / 2] != value(w, i, 1) ||
                           b[BYTES - 1] != value(w, i, 2);
                }
            int ack = w;
            if (rank == 1)
                MPI_Send(&ack, 1, MPI_INT, 0, WINDOW, MPI_COMM_WORLD);
            else
                MPI_Recv(&ack, 1, MPI_INT, 1, WINDOW, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += ack != w;
        }
        CHECK(bad == 0, "%d windows of %d x %d bytes (%s): %d messages or acknowledgements "
              "wrong", WINDOWS, WINDOW, BYTES, bi ? "both ways" : "one way", bad);
    } else {
        CHECK(size == 2, "run on 2 ranks (got %d)", size);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_windows[%d]", rank);
    return check_summary(name);
}
