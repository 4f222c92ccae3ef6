/*
 * 1000 nonblocking collectives outstanding at once, alternating between
 * MPI_COMM_WORLD and MPI_COMM_SELF and between kinds (allreduce, bcast,
 * barrier, allgather), completed together by one MPI_Waitall, then
 * checked: their messages must match in call order, never across calls.
 */
#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

#define NCOLL 1000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Request *reqs = malloc(sizeof *reqs * NCOLL);
    int *in = malloc(sizeof(int) * NCOLL), *out = malloc(sizeof(int) * NCOLL * size);
    for (int i = 0; i < NCOLL; i++) {
        in[i] = rank * 100000 + i;
        MPI_Comm comm = i % 5 == 4 ? MPI_COMM_SELF : MPI_COMM_WORLD;
        switch (i % 4) {
        case 0:
            MPI_Iallreduce(&in[i], &out[i * size], 1, MPI_INT, MPI_SUM, comm, &reqs[i]);
            break;
        case 1:
            out[i * size] = comm == MPI_COMM_SELF || rank == i % size ? i * 3 : -1;
            MPI_Ibcast(&out[i * size], 1, MPI_INT, comm == MPI_COMM_SELF ? 0 : i % size, comm,
                       &reqs[i]);
            break;
        case 2:
            MPI_Ibarrier(comm, &reqs[i]);
            break;
        default:
            MPI_Iallgather(&in[i], 1, MPI_INT, &out[i * size], 1, MPI_INT, comm, &reqs[i]);
            break;
        }
    }
    CHECK(MPI_Waitall(NCOLL, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
    long bad = 0;
    for (int i = 0; i < NCOLL; i++) {
        int world = i % 5 != 4, n = world ? size : 1;
        if (i % 4 == 0) {
            long ref = 0;
            for (int r = 0; r < n; r++)
                ref += (world ? r : rank) * 100000 + i;
            bad += out[i * size] != ref;
        } else if (i % 4 == 1) {
            bad += out[i * size] != i * 3;
        } else if (i % 4 == 3) {
            for (int r = 0; r < n; r++)
                bad += out[i * size + r] != (world ? r : rank) * 100000 + i;
        }
    }
    CHECK(bad == 0, "%ld results wrong among %d outstanding collectives", bad, NCOLL);
    free(reqs);
    free(in);
    free(out);
    int failed = check_summary("t_coll_many"), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
