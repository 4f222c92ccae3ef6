/* Shared by the multi-process differential programs (run_diff_topo.sh):
 * MPI_Init, then each rank writes its own file argv[1].rank, as launchers
 * may split lines of several ranks' stdout. */
#ifndef DIFF_RANK_OUT_H
#define DIFF_RANK_OUT_H

#include <mpi.h>
#include <stdio.h>

static int rank, size;
static FILE *outf;

static void diff_start(int *argc, char ***argv, const char *fallback)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", *argc > 1 ? (*argv)[1] : fallback, rank);
    outf = fopen(path, "w");
    if (outf == NULL) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

#endif
