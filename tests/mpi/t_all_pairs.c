/*
 * Every rank talks to every other at once from the first message on: each
 * round, every rank posts a receive from and a send to every other rank
 * (eager and rendezvous sizes alternating), then checks what came from
 * whom.  Over TCP the first round makes every pair connect from both sides
 * at the same moment, which is how the simultaneous-connect resolution is
 * exercised; the order check of later rounds catches a message that went
 * down a connection that lost.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = 6;
    const size_t sizes[2] = {64, 300000};
    size_t max = sizes[1] / sizeof(int);
    int *out = malloc(max * sizeof(int)), *in = malloc((size_t)size * max * sizeof(int));
    MPI_Request *rq = malloc(2 * (size_t)size * sizeof *rq);
    int bad = 0;
    for (int round = 0; round < rounds; round++) {
        int n = (int)(sizes[round % 2] / sizeof(int));
        for (int i = 0; i < n; i++)
            out[i] = rank * 1000003 + round * 7919 + i;
        int k = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            memset(in + (size_t)p * max, 0xff, (size_t)n * sizeof(int));
            MPI_Irecv(in + (size_t)p * max, n, MPI_INT, p, round, MPI_COMM_WORLD, &rq[k++]);
            MPI_Isend(out, n, MPI_INT, p, round, MPI_COMM_WORLD, &rq[k++]);
        }
        MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++)
            for (int i = 0; p != rank && i < n; i++)
                bad += in[(size_t)p * max + (size_t)i] != p * 1000003 + round * 7919 + i;
    }
    CHECK(bad == 0, "rank %d: %d rounds with all %d peers at once: %d wrong values", rank, rounds,
          size - 1, bad);
    free(out);
    free(in);
    free(rq);
    char name[32];
    snprintf(name, sizeof name, "t_all_pairs[%d]", rank);
    int rc = check_summary(name);
    MPI_Finalize();
    return rc;
}
