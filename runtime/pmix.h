/*
 * Wire-up through the PMIx client API only, so Cadence runs under any PMIx
 * server: our mpirun, Slurm's srun --mpi=pmix, PRRTE.  Without a launcher
 * the process is a one-process job and none of this talks to anyone.
 */
#ifndef CDN_PMIX_H
#define CDN_PMIX_H

#include <stdbool.h>
#include <stddef.h>

/* Modex keys the runtime publishes for every process. */
#define CDN_MODEX_PID "cdn.pid"  /* pid_t */

/* Connect to the launcher if there is one and fill the job facts of cdn_rt
 * (rank, size, locality, appnum, universe size); a singleton otherwise.
 * Returns an MPI error code (its message names `caller`). */
int cdn_pmix_init(const char *caller);

/* Publish a value under `key` for the other processes; visible to them after
 * the next cdn_pmix_fence(true).  Returns an MPI error code. */
int cdn_modex_put(const char *key, const void *val, size_t len);

/* Fetch what `rank` of MPI_COMM_WORLD published under `key`: at most *len
 * bytes into buf, *len set to the value's size.  MPI_ERR_OTHER if absent. */
int cdn_modex_get(int rank, const char *key, void *buf, size_t *len);

/* Commit what was put, then wait for every process of the job (collecting
 * the published data when `collect`).  Returns an MPI error code. */
int cdn_pmix_fence(bool collect, const char *caller);

/* Where the launcher's word that a process of the job ended without
 * MPI_Finalize goes (a PMIx event: PMIX_ERR_PROC_TERM_WO_SYNC,
 * PMIX_EVENT_PROC_TERMINATED or PMIX_ERR_PROC_ABORTED, naming the process
 * by PMIX_EVENT_AFFECTED_PROC, else as the event's source): fn(world
 * rank), called on PMIx's thread.  Set once by the engine before
 * cdn_pmix_init's caller goes on; our mpirun sends the event for a rank
 * that died, other launchers may or may not. */
void cdn_pmix_on_lost(void (*fn)(int world_rank));

/* Ask the launcher to end the whole job with this exit code; returns only
 * when there is no launcher or it did not answer. */
void cdn_pmix_abort(int exitcode, const char *msg);

/* Final fence and disconnect (MPI_Finalize). */
int cdn_pmix_finalize(void);

#endif
