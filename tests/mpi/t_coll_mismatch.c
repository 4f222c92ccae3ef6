/*
 * Collectives called with counts that do not match across the ranks (an
 * erroneous program) end in an error that names the sizes, never in a
 * hang or in silently short data.  Run on 3 ranks:
 *
 *   bcast ROOT OTHER [return]   MPI_Bcast of ROOT bytes from rank 0; rank 1
 *                               passes OTHER bytes, rank 2 ROOT
 *   ibcast ROOT OTHER [return]  the same with MPI_Ibcast + MPI_Wait (a
 *                               schedule, where MPI_Bcast of a few bytes
 *                               is point-to-point messages straight)
 *   allreduce [return]          MPI_Allreduce (MPI_SUM) of 4 ints; rank 1
 *                               passes 2
 *
 * By default the world's error handler is MPI_ERRORS_ARE_FATAL: the rank
 * that sees the mismatch ends the job (mpirun reports it), the others may
 * be left waiting until then.  With "return" the world gets
 * MPI_ERRORS_RETURN and every rank prints the class its call returned
 * (only for cases where no rank waits for a message that never comes),
 * and, in a broadcast, whether a rank whose count is the root's got the
 * root's bytes ("data ok"; "-": not checked).
 * The meson tests check the exit status and the output.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, rc, cls;
    const char *data = "-";  /* a rank whose count is the root's: its data checked */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "";
    const char *last = argv[argc - 1];
    if (strcmp(last, "return") == 0)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bool nb = strcmp(mode, "ibcast") == 0;
    if ((nb || strcmp(mode, "bcast") == 0) && argc >= 4) {
        long root = atol(argv[2]), other = atol(argv[3]);
        long n = rank == 1 ? other : root;
        char *buf = calloc(1, (size_t)(root > other ? root : other));
        if (rank == 0)
            memset(buf, 7, (size_t)root);
        if (nb) {
            MPI_Request req;
            rc = MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            rc = MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
        if (rank != 1 && rc == MPI_SUCCESS) {
            data = "ok";
            for (long i = 0; i < root; i++)
                if (buf[i] != 7)
                    data = "wrong";
        }
        free(buf);
    } else if (strcmp(mode, "allreduce") == 0) {
        int in[4] = {1, 2, 3, 4}, out[4];
        rc = MPI_Allreduce(in, out, rank == 1 ? 2 : 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        fprintf(stderr, "usage: %s bcast|ibcast ROOT OTHER [return] | allreduce [return]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    MPI_Error_class(rc, &cls);
    printf("rank %d: class %d, data %s\n", rank, cls, data);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
