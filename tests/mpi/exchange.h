/* Both ways between ranks 0 and 1 of MPI_COMM_WORLD: n bytes of a pattern
 * from seed, rank 0's first, each checked on arrival (the strangers tests,
 * t_tcp_garbage and t_udp_garbage: the job's own traffic must stay intact). */
#ifndef EXCHANGE_H
#define EXCHANGE_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static void exchange(int rank, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    int other = 1 - rank, bad = 0;
    for (int round = 0; round < 2; round++) {
        if (rank == round) {
            for (size_t i = 0; i < n; i++)
                b[i] = (unsigned char)(seed + i * 13);
            MPI_Send(b, (int)n, MPI_BYTE, other, 5, MPI_COMM_WORLD);
        } else {
            memset(b, 0, n);
            MPI_Recv(b, (int)n, MPI_BYTE, other, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (size_t i = 0; i < n; i++)
                bad += b[i] != (unsigned char)(seed + i * 13);
        }
    }
    CHECK(bad == 0, "rank %d: %zu bytes both ways: %d wrong", rank, n, bad);
    free(b);
}

#endif
