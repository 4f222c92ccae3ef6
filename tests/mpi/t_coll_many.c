/*
 * 1000 nonblocking collectives outstanding at once, spread over four
 * communicators (MPI_COMM_WORLD, a duplicate of it, a split of it with the
 * ranks reversed, MPI_COMM_SELF) and four kinds (allreduce, bcast, barrier,
 * allgather), completed together by one MPI_Waitall, then checked: their
 * messages must match in call order, never across calls or communicators.
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
    /* i % 5: 0, 1 world; 2 its duplicate; 3 reversed; 4 self */
    MPI_Comm comms[5] = {MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_SELF};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[3]);
    for (int i = 0; i < NCOLL; i++) {
        in[i] = rank * 100000 + i;
        MPI_Comm comm = comms[i % 5];
        int crank, csize;
        MPI_Comm_rank(comm, &crank);
        MPI_Comm_size(comm, &csize);
        switch (i % 4) {
        case 0:
            MPI_Iallreduce(&in[i], &out[i * size], 1, MPI_INT, MPI_SUM, comm, &reqs[i]);
            break;
        case 1:
            out[i * size] = crank == i % csize ? i * 3 : -1;
            MPI_Ibcast(&out[i * size], 1, MPI_INT, i % csize, comm, &reqs[i]);
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
        int kind = i % 5, n = kind == 4 ? 1 : size;
        /* the world rank behind rank r of the communicator */
#define WORLD_OF(r) (kind == 4 ? rank : kind == 3 ? size - 1 - (r) : (r))
        if (i % 4 == 0) {
            long ref = 0;
            for (int r = 0; r < n; r++)
                ref += WORLD_OF(r) * 100000 + i;
            bad += out[i * size] != ref;
        } else if (i % 4 == 1) {
            bad += out[i * size] != i * 3;
        } else if (i % 4 == 3) {
            for (int r = 0; r < n; r++)
                bad += out[i * size + r] != WORLD_OF(r) * 100000 + i;
        }
    }
    MPI_Comm_free(&comms[2]);
    MPI_Comm_free(&comms[3]);
    CHECK(bad == 0, "%ld results wrong among %d outstanding collectives", bad, NCOLL);
    free(reqs);
    free(in);
    free(out);
    int failed = check_summary("t_coll_many"), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
