/*
 * Singleton start-up and environment queries: MPI_Init_thread grants
 * MPI_THREAD_MULTIPLE, the state functions follow init and finalize, and the
 * version, name, timer and communicator queries give the expected values.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"

static void *thread_main(void *arg)
{
    int *flag = arg;
    MPI_Is_thread_main(flag);
    return NULL;
}

int main(int argc, char **argv)
{
    int flag = -1, provided = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 0, "Initialized is 0 before init");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "Finalized is 0 before init");
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS, "init");
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE granted (got %d)", provided);
    CHECK(MPI_Query_thread(&provided) == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE,
          "Query_thread says MULTIPLE");
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "Initialized is 1 after init");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "Finalized is 0 before finalize");

    CHECK(MPI_Is_thread_main(&flag) == MPI_SUCCESS && flag == 1, "main thread is main");
    pthread_t t;
    int other = -1;
    pthread_create(&t, NULL, thread_main, &other);
    pthread_join(t, NULL);
    CHECK(other == 0, "another thread is not main (got %d)", other);

    int version, subversion;
    MPI_Get_version(&version, &subversion);
    CHECK(version == 4 && subversion == 1, "MPI 4.1 (got %d.%d)", version, subversion);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION, "matches the header");

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    MPI_Get_library_version(lib, &len);
    CHECK(strncmp(lib, "Cadence MPI ", 12) == 0, "library version names Cadence: %s", lib);
    CHECK(len == (int)strlen(lib), "library version length %d", len);

    char name[MPI_MAX_PROCESSOR_NAME], host[256];
    MPI_Get_processor_name(name, &len);
    gethostname(host, sizeof host);
    CHECK(strcmp(name, host) == 0 && len == (int)strlen(name), "processor name %s is the host", name);

    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    usleep(20000);
    double t1 = MPI_Wtime();
    CHECK(tick > 0 && tick < 1e-3, "Wtick %g is positive and fine", tick);
    CHECK(t1 - t0 >= 0.015 && t1 - t0 < 5, "Wtime advanced by %g s over a 20 ms sleep", t1 - t0);

    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(rank == 0 && size == 1, "singleton world is rank 0 of 1 (got %d of %d)", rank, size);
    MPI_Comm_rank(MPI_COMM_SELF, &rank);
    MPI_Comm_size(MPI_COMM_SELF, &size);
    CHECK(rank == 0 && size == 1, "self is rank 0 of 1");

    char cname[MPI_MAX_OBJECT_NAME];
    MPI_Comm_get_name(MPI_COMM_WORLD, cname, &len);
    CHECK(strcmp(cname, "MPI_COMM_WORLD") == 0 && len == 14, "world's name is %s", cname);
    MPI_Comm_set_name(MPI_COMM_SELF, "me");
    MPI_Comm_get_name(MPI_COMM_SELF, cname, &len);
    CHECK(strcmp(cname, "me") == 0 && len == 2, "self renamed to %s", cname);

    /* A second init is an error, returned because SELF's handler says so. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Init(&argc, &argv), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "second MPI_Init fails with MPI_ERR_OTHER (got %d)", cls);

    CHECK(MPI_Finalize() == MPI_SUCCESS, "finalize");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 1, "Finalized is 1 after finalize");
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "Initialized stays 1");
    int v2, s2;
    CHECK(MPI_Get_version(&v2, &s2) == MPI_SUCCESS && v2 == 4, "Get_version works after finalize");
    return check_summary("t_init");
}
