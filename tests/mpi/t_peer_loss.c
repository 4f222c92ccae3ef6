/*
 * Peer loss (run over CADENCE_TRANSPORTS=tcp on three ranks): rank 1 is
 * killed (SIGKILL) while rank 0 has a rendezvous send and a receive
 * pending with it.  Both must complete with an error of class
 * MPIX_ERR_PROC_FAILED through MPI_ERRORS_RETURN, and a new send to rank 1
 * must fail the same way, instead of hanging.  mpirun then ends the job
 * naming rank 1; rank 0 holds SIGTERM off so that its report gets out
 * first.  Rank 2 just waits and is ended by mpirun.  The meson test checks
 * rank 0's summary and mpirun's message.  With the argument "stop" rank 1
 * stops (SIGSTOP) instead: a silent peer, its sockets open, that only a
 * transport's timeout can give up (udp: CADENCE_UDP_PEER_TIMEOUT_MS);
 * mpirun ends the job when rank 0 exits.
 */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"

#define BIG (4 << 20)

static int failed_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls == MPIX_ERR_PROC_FAILED;
}

int main(int argc, char **argv)
{
    int rank, size, x = 0, stop = 0;
    for (int i = 1; i < argc; i++)
        stop |= strcmp(argv[i], "stop") == 0;
    if (argc > 1 && strcmp(argv[1], "hold-term") == 0) {
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, NULL);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        char *s = calloc(1, BIG), *r = calloc(1, BIG);
        MPI_Request req[2];
        MPI_Status st[2];
        MPI_Irecv(r, BIG, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(s, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);  /* "die now" */
        int rc = MPI_Waitall(2, req, st);
        CHECK(rc != MPI_SUCCESS, "Waitall with a dead peer returned an error");
        CHECK(failed_class(st[0].MPI_ERROR), "the pending receive from rank 1 failed with "
              "MPIX_ERR_PROC_FAILED (got %d)", st[0].MPI_ERROR);
        CHECK(failed_class(st[1].MPI_ERROR), "the pending send to rank 1 failed with "
              "MPIX_ERR_PROC_FAILED (got %d)", st[1].MPI_ERROR);
        rc = MPI_Send(s, 10, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        CHECK(failed_class(rc), "a new send to rank 1 fails with MPIX_ERR_PROC_FAILED (got %d)", rc);
        check_summary("t_peer_loss[0]");
        fflush(stdout);
        _exit(check_failures != 0);
    } else if (rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        raise(stop ? SIGSTOP : SIGKILL);
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);  /* never comes */
    }
    MPI_Finalize();
    return 0;
}
