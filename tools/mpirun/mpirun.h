/*
 * mpirun/mpiexec: the job launcher.  It is a PMIx server (OpenPMIx server
 * library) for the ranks it forks on this node: it registers the job,
 * forks the ranks, serves fence/modex/abort, forwards stdio and signals,
 * and ends the whole job as soon as one rank fails.
 *
 * Files: options.c turns the command line into a `struct job`; server.c is
 * the PMIx side; launch.c maps, binds and forks the ranks; foreign.c tells
 * a rank that never connects because it runs another MPI; mpirun.c is the
 * event loop (stdio, signals, children, timeouts) and the exit policy.
 */
#ifndef CDN_MPIRUN_H
#define CDN_MPIRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MPIRUN_NAME "mpirun"

struct app {
    char **argv;          /* executable and its arguments (points into main's argv) */
    char *path;           /* the resolved executable */
    int nprocs;           /* -n; 0 until defaulted */
    const char *wdir;     /* -wdir, or NULL for mpirun's cwd */
    char **env;           /* -env NAME VALUE pairs as "NAME=VALUE" */
    int nenv;
    int first_rank;
    bool foreign_checked;  /* foreign.c looked at the program's libraries */
    char *foreign;        /* "libmpich.so.12 => /path" when another MPI's, else NULL */
};

enum bind_to { BIND_DEFAULT, BIND_NONE, BIND_CORE, BIND_HWTHREAD };
enum map_by { MAP_CORE, MAP_HWTHREAD, MAP_NUMA, MAP_PACKAGE };

enum rank_state {
    RANK_UNBORN,          /* not forked (yet, or launch failed before it) */
    RANK_RUNNING,
    RANK_EXITED,          /* reaped */
};

struct rank {
    int rank, app;
    pid_t pid;
    enum rank_state state;
    int out_fd, err_fd, in_fd;     /* our ends of its stdout/stderr/stdin pipes */
    char *outbuf, *errbuf;         /* partial lines not yet written */
    size_t outlen, errlen;
    int wait_status;               /* from waitpid */
    void *cpuset;                  /* cpu_set_t * to bind to, or NULL */
    size_t cpuset_size;
    char **env;                    /* its full environment */
    /* set by the PMIx server thread, read under job.lock */
    bool connected, finalized;
};

struct job {
    struct app *apps;
    int napps;
    int size;                      /* total ranks */
    struct rank *ranks;
    /* global options */
    char **genv;                   /* "NAME=VALUE" from -genv / -x */
    int ngenv;
    bool genvnone;
    enum bind_to bind_to;
    enum map_by map_by;
    int ppn;                       /* -ppn, 0 if not given */
    bool tag_output;
    double timeout;                /* seconds, 0 = none */
    bool verbose;
    char nspace[256];             /* PMIx namespace (pmix_nspace_t size) */
    char tmpdir[256];              /* PMIx rendezvous files, removed at exit */
};

/* options.c */
int mpirun_parse(int argc, char **argv, struct job *job);
void mpirun_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void mpirun_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* launch.c */
int mpirun_plan_binding(struct job *job);
int mpirun_prepare(struct job *job);
int mpirun_spawn(struct job *job, struct rank *r, bool gets_stdin);

/* foreign.c: for a rank that never connected, the library of another MPI
 * its program loads ("libmpich.so.12 => /usr/lib/..."), or NULL. */
const char *mpirun_foreign_mpi(struct job *job, const struct rank *r);

/* server.c: events the PMIx thread reports to the loop */
int mpirun_server_start(struct job *job, int notify_fd);
int mpirun_server_register(struct job *job);
char **mpirun_server_fork_env(struct job *job, int rank, char **base);
void mpirun_server_stop(struct job *job);
/* Tell the other ranks that rank ended without MPI_Finalize (a PMIx
 * event, PMIX_ERR_PROC_TERM_WO_SYNC, naming it as the affected process),
 * so that their transports fail what they hold for it at once. */
void mpirun_server_notify_lost(struct job *job, int rank);
/* Abort request recorded by the server thread; returns true once. */
bool mpirun_server_take_abort(int *rank, int *status, char *msg, size_t msgsz);
void mpirun_server_lock(void);
void mpirun_server_unlock(void);

#endif
