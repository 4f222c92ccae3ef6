/*
 * Processes of one job with different UDP settings (run over
 * CADENCE_TRANSPORTS=udp on two ranks, rank 1 started with another
 * CADENCE_UDP_MTU or CADENCE_UDP_WINDOW by udp_settings.sh): the first
 * message between them must fail with an error naming both values, not
 * end the job on a "malformed frame" or resend forever.  It comes through
 * MPI_Sendrecv, both ranks at once, whose failed send must also withdraw
 * its receive (progress/pair.c): each call returns, under
 * MPI_ERRORS_RETURN, instead of waiting for the peer's message that its
 * own failed send never sent.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check_mpi.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "runs on 2 ranks (got %d)", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int out = rank, in = -1;
    MPI_Status st;
    int rc = MPI_Sendrecv(&out, 1, MPI_INT, 1 - rank, 5, &in, 1, MPI_INT, 1 - rank, 5,
                          MPI_COMM_WORLD, &st);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    int cancelled = 1;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(rc != MPI_SUCCESS && in == -1 && strstr(msg, "CADENCE_UDP_MTU") != NULL &&
              strstr(msg, "every process of a job needs the same values") != NULL,
          "MPI_Sendrecv to a process with other UDP settings fails, saying why: rc %d, "
          "received %d, \"%s\"", rc, in, msg);
    CHECK(!cancelled, "its status does not say cancelled (the receive was withdrawn by MPI)");
    printf("t_udp_settings[%d]: %s\n", rank, msg);
    int failed = check_summary(rank == 0 ? "t_udp_settings[0]" : "t_udp_settings[1]");
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
