/* hello.c — the first Cadence MPI program.
 *   mpicc hello.c -o hello && mpirun -n 4 ./hello   (./hello alone is a one-process job) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME], version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    MPI_Get_library_version(version, &len);
    if (rank == 0)
        printf("%s\n", version);
    printf("Hello from rank %d of %d on %s\n", rank, size, name);
    MPI_Finalize();
    return 0;
}
