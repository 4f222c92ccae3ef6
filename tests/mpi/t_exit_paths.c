/*
 * Ways a program ends badly, one per mode; tests/mpi/expect_exit.sh checks
 * the exit status and what was printed.
 *   unimplemented   call MPI_Comm_spawn (not implemented yet; on
 *                   MPI_COMM_WORLD's default, fatal, handler)
 *   before-init     call MPI_Comm_rank before MPI_Init
 *   after-finalize  call MPI_Comm_rank after MPI_Finalize
 *   abort           MPI_Abort(MPI_COMM_WORLD, 7)
 *   errors-abort    MPI_ERRORS_ABORT on world, then an invalid call
 *   bad-level       MPI_Init_thread with level 42
 * With CADENCE_INITIAL_ERRHANDLER=return the before-init, after-finalize and
 * bad-level modes print the error class returned and exit 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rank = -1, rc = MPI_SUCCESS, cls = -1;
    if (strcmp(mode, "before-init") == 0) {
        rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    } else if (strcmp(mode, "bad-level") == 0) {
        int provided;
        rc = MPI_Init_thread(&argc, &argv, 42, &provided);
    } else {
        MPI_Init(&argc, &argv);
        if (strcmp(mode, "unimplemented") == 0) {
            MPI_Comm ic;
            rc = MPI_Comm_spawn("t_exit_paths", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                                MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE);
        } else if (strcmp(mode, "after-finalize") == 0) {
            MPI_Finalize();
            rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        } else if (strcmp(mode, "abort") == 0) {
            MPI_Abort(MPI_COMM_WORLD, 7);
        } else if (strcmp(mode, "errors-abort") == 0) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
            rc = MPI_Comm_rank(MPI_COMM_WORLD, NULL);
        } else {
            fprintf(stderr, "unknown mode '%s'\n", mode);
            return 2;
        }
    }
    MPI_Error_class(rc, &cls);
    printf("returned class %d\n", cls);
    return 0;
}
