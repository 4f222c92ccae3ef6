/*
 * Bindings of the environment chapter: initialisation and finalisation,
 * thread levels, version and processor queries, timers, MPI_Abort,
 * MPI_Pcontrol.  Argument checks here; the work in runtime/runtime.c.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "cdn_build_config.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "sched/user.h"

int cdn_MPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return cdn_rt_init(MPI_THREAD_SINGLE, NULL, true, "MPI_Init");
}

int cdn_MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc;
    (void)argv;
    if (provided == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Init_thread: provided is NULL");
    return cdn_rt_init(required, provided, true, "MPI_Init_thread");
}

int cdn_MPI_Finalize(void)
{
    /* MPI_COMM_SELF's attributes are deleted first, so a delete callback
     * can still use MPI (MPI-4.1 11.2.4). */
    if (!cdn_rt.world_inited || cdn_rt.world_finalized)
        return cdn_err(MPI_ERR_OTHER, "MPI_Finalize: MPI_Init %s", cdn_rt.world_inited
                       ? "was already finalised" : "was not called (sessions end with "
                       "MPI_Session_finalize)");
    struct cdn_comm *self = cdn_comm_get(MPI_COMM_SELF);
    int rc = cdn_attr_delete_all(&self->attrs, MPI_COMM_SELF, "MPI_Finalize");
    cdn_usched_finalize();  /* schedules' completion parts may communicate */
    int rc2 = cdn_rt_finalize(true);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int cdn_MPI_Initialized(int *flag)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Initialized: flag is NULL");
    *flag = cdn_rt.world_inited;  /* sessions alone do not count (MPI-4.1 11.2.1) */
    return MPI_SUCCESS;
}

int cdn_MPI_Finalized(int *flag)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Finalized: flag is NULL");
    *flag = cdn_rt.world_finalized;
    return MPI_SUCCESS;
}

int cdn_MPI_Query_thread(int *provided)
{
    if (provided == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Query_thread: provided is NULL");
    *provided = cdn_rt.thread_level;
    return MPI_SUCCESS;
}

int cdn_MPI_Is_thread_main(int *flag)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Is_thread_main: flag is NULL");
    *flag = pthread_equal(pthread_self(), cdn_rt.main_thread) != 0;
    return MPI_SUCCESS;
}

int cdn_MPI_Abort(MPI_Comm comm, int errorcode)
{
    (void)comm;  /* a one-process job: every communicator holds only us */
    cdn_rt_abort(errorcode & 0xff, "Cadence MPI: MPI_Abort was called by rank %d with error "
                 "code %d", cdn_rt.world_rank, errorcode);
}

int cdn_MPI_Get_version(int *version, int *subversion)
{
    if (version == NULL || subversion == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Get_version: %s is NULL",
                       version == NULL ? "version" : "subversion");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int cdn_MPI_Get_library_version(char *version, int *resultlen)
{
    if (version == NULL || resultlen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Get_library_version: %s is NULL",
                       version == NULL ? "version" : "resultlen");
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "Cadence MPI %s (MPI %d.%d, MPICH ABI)\n"
                     "built with %s, %s\n"
                     "transports: %s",
                     CDN_VERSION, MPI_VERSION, MPI_SUBVERSION, CDN_BUILD_CC, CDN_BUILD_OPTIONS,
                     CDN_TRANSPORTS);
    if (n >= MPI_MAX_LIBRARY_VERSION_STRING)
        n = MPI_MAX_LIBRARY_VERSION_STRING - 1;
    *resultlen = n;
    return MPI_SUCCESS;
}

int cdn_MPI_Get_processor_name(char *name, int *resultlen)
{
    if (name == NULL || resultlen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Get_processor_name: %s is NULL",
                       name == NULL ? "name" : "resultlen");
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
        strcpy(name, "localhost");
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

/* MPI_Wtime needs no MPI_Init: before it, time counts from the epoch of
 * CLOCK_MONOTONIC (boot); after it, from MPI_Init, which keeps the double's
 * precision high. */
double cdn_MPI_Wtime(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - cdn_rt.wtime_base.tv_sec) +
           1e-9 * (double)(now.tv_nsec - cdn_rt.wtime_base.tv_nsec);
}

double cdn_MPI_Wtick(void)
{
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC, &res) != 0)
        return 1e-6;
    return (double)res.tv_sec + 1e-9 * (double)res.tv_nsec;
}

/* Profiling control: Cadence has no built-in profiling, so every level is
 * accepted and nothing changes; tools that intercept MPI_Pcontrol see it. */
int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}
#pragma weak MPI_Pcontrol = PMPI_Pcontrol
