/* The wire-up seen from inside the library: the job facts MPI_Init got from
 * PMIx, and the modex.  Every rank looks up every other rank's published
 * pid and checks that this process exists and carries PMIX_RANK=<rank> in
 * its environment -- so the value really came from that rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/pmix.h"
#include "runtime/runtime.h"

static int env_has(pid_t pid, const char *want)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strcmp(buf + i, want) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int r = 0; r < size; r++) {
        pid_t pid = 0;
        size_t len = sizeof pid;
        if (cdn_modex_get(r, CDN_MODEX_PID, &pid, &len) != MPI_SUCCESS || len != sizeof pid) {
            fprintf(stderr, "rank %d: no pid published by rank %d\n", rank, r);
            bad++;
            continue;
        }
        char want[32];
        snprintf(want, sizeof want, "PMIX_RANK=%d", r);
        if (r == rank ? pid != getpid() : !env_has(pid, want)) {
            fprintf(stderr, "rank %d: rank %d's published pid %d is not that rank\n", rank, r,
                    (int)pid);
            bad++;
        }
    }
    int mine = 0;
    for (int i = 0; i < cdn_rt.local_size; i++)
        mine += cdn_rt.local_peers[i] == rank;
    if (mine != 1 || cdn_rt.local_peers[cdn_rt.local_rank] != rank) {
        fprintf(stderr, "rank %d: not found once at local rank %d among the local peers\n",
                rank, cdn_rt.local_rank);
        bad++;
    }
    printf("rank %d size %d appnum %d local %d/%d universe %d launched %d modex %s\n", rank,
           size, cdn_rt.appnum, cdn_rt.local_rank, cdn_rt.local_size, cdn_rt.universe_size,
           (int)cdn_rt.launched, bad ? "BAD" : "ok");
    MPI_Finalize();
    return bad != 0;
}
