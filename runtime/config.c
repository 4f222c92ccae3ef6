/* The table of CADENCE_ environment variables (see config.h). */
#include "runtime/config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const struct cdn_param cdn_params[] = {
    {"CADENCE_INITIAL_ERRHANDLER", "choice", "fatal", "library",
     "Error handler for errors raised outside MPI_Init..MPI_Finalize and before any other is "
     "set: fatal (MPI_ERRORS_ARE_FATAL), abort (MPI_ERRORS_ABORT) or return (MPI_ERRORS_RETURN)."},
    {"CADENCE_PROGRESS_THREADS", "boolean", "1", "library",
     "Run a background progress thread per process (strong progress: started operations "
     "complete while the application computes). 0 turns it off; progress is then made inside "
     "MPI calls only."},
    {"CADENCE_PROGRESS_SPIN", "integer", "2000", "library",
     "Empty polls a waiting thread (application or progress thread) makes before it sleeps "
     "on the transports' doorbells."},
    {"CADENCE_PROGRESS_BIND", "boolean", "1", "library",
     "Pin the progress thread (hwloc) to one processing unit of the process's allowed set, "
     "counted from the last one by local rank. 0 leaves it unbound."},
    {"CADENCE_CC", "string", "the C compiler Cadence was built with", "mpicc",
     "The C compiler mpicc runs (like MPICH_CC or OMPI_CC)."},
};
const int cdn_nparams = (int)(sizeof cdn_params / sizeof cdn_params[0]);

const char *cdn_param_str(const char *name)
{
#ifndef NDEBUG
    int known = 0;
    for (int i = 0; i < cdn_nparams; i++)
        known |= strcmp(cdn_params[i].name, name) == 0;
    assert(known && "CADENCE_ variable read but not registered in runtime/config.c");
#endif
    const char *v = getenv(name);
    return (v != NULL && v[0] != '\0') ? v : NULL;
}
