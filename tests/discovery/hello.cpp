// hello.cpp: a C++ program on MPI's C API, as mpicxx, CMake's MPI::MPI_CXX
// and meson's dependency('mpi', language: 'cpp') build it.  Each rank
// prints its rank, the job size and the library that answered, and checks
// an MPI_Allreduce of the ranks.
#include <mpi.h>

#include <cstdio>
#include <string>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0, len = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &len);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const std::string lib(version, static_cast<size_t>(len));
    const bool ok = sum == size * (size - 1) / 2;
    std::printf("C++ rank %d of %d sum %s: %s\n", rank, size, ok ? "ok" : "wrong",
                lib.substr(0, lib.find('\n')).c_str());
    MPI_Finalize();
    return ok ? 0 : 1;
}
