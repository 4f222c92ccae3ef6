/* MPI_Init (not _thread) provides MPI_THREAD_SINGLE. */
#include <mpi.h>

#include "check_mpi.h"

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "init");
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_SINGLE, "MPI_Init provides SINGLE (got %d)", provided);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "finalize");
    return check_summary("t_init_single");
}
