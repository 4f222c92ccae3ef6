/*
 * Mapping, binding and forking the ranks.  hwloc decides where each rank
 * runs: ranks take cores (or hardware threads) in --map-by order, and are
 * bound by default only when there are no more ranks than cores, so an
 * oversubscribed job is left to the scheduler.  Everything a child needs is
 * prepared in the parent -- the child of this multi-threaded process (the
 * PMIx server has threads) only makes system calls between fork and exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/mpirun/mpirun.h"

extern char **environ;

static const char *bind_name(enum bind_to b)
{
    return b == BIND_CORE ? "core" : b == BIND_HWTHREAD ? "hwthread" : "none";
}

/* The slots ranks take in order: cores or PUs, interleaved across NUMA
 * nodes or packages for --map-by numa|package. */
static int order_slots(hwloc_topology_t topo, enum map_by map_by, hwloc_obj_t **out)
{
    hwloc_obj_type_t slot_type = map_by == MAP_HWTHREAD ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE;
    int n = hwloc_get_nbobjs_by_type(topo, slot_type);
    if (n <= 0) {
        slot_type = HWLOC_OBJ_PU;
        n = hwloc_get_nbobjs_by_type(topo, slot_type);
    }
    if (n <= 0)
        return 0;
    hwloc_obj_t *slots = calloc((size_t)n, sizeof *slots);
    if (slots == NULL)
        return 0;
    hwloc_obj_type_t group = map_by == MAP_NUMA ? HWLOC_OBJ_NUMANODE
                           : map_by == MAP_PACKAGE ? HWLOC_OBJ_PACKAGE : HWLOC_OBJ_MACHINE;
    int ngroups = hwloc_get_nbobjs_by_type(topo, group);
    if (ngroups <= 1) {
        for (int i = 0; i < n; i++)
            slots[i] = hwloc_get_obj_by_type(topo, slot_type, (unsigned)i);
    } else {
        /* round-robin: slot k of group 0, slot k of group 1, ... */
        int filled = 0;
        for (int k = 0; filled < n; k++) {
            for (int g = 0; g < ngroups && filled < n; g++) {
                hwloc_obj_t grp = hwloc_get_obj_by_type(topo, group, (unsigned)g);
                hwloc_obj_t s = hwloc_get_obj_inside_cpuset_by_type(topo, grp->cpuset, slot_type,
                                                                    (unsigned)k);
                if (s != NULL)
                    slots[filled++] = s;
            }
            if (k > n)
                break;
        }
        n = filled;
    }
    *out = slots;
    return n;
}

int mpirun_plan_binding(struct job *job)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        mpirun_warn("hwloc could not read this machine's topology; ranks are not bound");
        return 0;
    }
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    enum bind_to bind = job->bind_to;
    if (bind == BIND_DEFAULT)
        bind = job->size <= ncores ? BIND_CORE : BIND_NONE;
    int targets = bind == BIND_CORE ? ncores : npus;
    if (bind != BIND_NONE && job->bind_to != BIND_DEFAULT && job->size > targets)
        mpirun_warn("%d ranks bound to %d %ss: some share one", job->size, targets,
                    bind_name(bind));
    if (job->verbose)
        fprintf(stderr, MPIRUN_NAME ": %d cores, %d hardware threads; binding to %s\n", ncores,
                npus, bind_name(bind));
    if (bind == BIND_NONE) {
        hwloc_topology_destroy(topo);
        return 0;
    }
    hwloc_obj_t *slots = NULL;
    int nslots = order_slots(topo, job->map_by, &slots);
    for (int r = 0; r < job->size && nslots > 0; r++) {
        hwloc_obj_t s = slots[r % nslots];
        hwloc_obj_t target = s;
        if (bind == BIND_CORE && s->type == HWLOC_OBJ_PU) {
            hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, s);
            if (core != NULL)
                target = core;
        } else if (bind == BIND_HWTHREAD && s->type != HWLOC_OBJ_PU) {
            /* ranks sharing a core take its threads in turn */
            unsigned nth = s->arity > 0 ? (unsigned)((r / nslots) % (int)s->arity) : 0;
            hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, s->cpuset, HWLOC_OBJ_PU, nth);
            if (pu != NULL)
                target = pu;
        }
        size_t sz = CPU_ALLOC_SIZE(CPU_SETSIZE);
        cpu_set_t *set = CPU_ALLOC(CPU_SETSIZE);
        if (set == NULL)
            break;
        CPU_ZERO_S(sz, set);
        hwloc_cpuset_to_glibc_sched_affinity(topo, target->cpuset, set, sz);
        job->ranks[r].cpuset = set;
        job->ranks[r].cpuset_size = sz;
        if (job->verbose) {
            char buf[128];
            hwloc_bitmap_list_snprintf(buf, sizeof buf, target->cpuset);
            fprintf(stderr, MPIRUN_NAME ": rank %d bound to %s %u (cpus %s)\n", r,
                    hwloc_obj_type_string(target->type), target->logical_index, buf);
        }
    }
    free(slots);
    hwloc_topology_destroy(topo);
    return 0;
}

/* Set NAME=VALUE in a malloc'ed, NULL-terminated environment array. */
static char **env_put(char **env, const char *entry)
{
    size_t namelen = strcspn(entry, "=");
    size_t n = 0;
    for (; env[n] != NULL; n++) {
        if (strncmp(env[n], entry, namelen) == 0 && env[n][namelen] == '=') {
            free(env[n]);
            env[n] = strdup(entry);
            return env;
        }
    }
    env = realloc(env, sizeof(char *) * (n + 2));
    if (env == NULL)
        mpirun_die("out of memory");
    env[n] = strdup(entry);
    env[n + 1] = NULL;
    return env;
}

static char **rank_env(struct job *job, int rank)
{
    const struct app *app = &job->apps[job->ranks[rank].app];
    char **env = calloc(1, sizeof(char *));
    if (env == NULL)
        mpirun_die("out of memory");
    for (char **e = environ; *e != NULL; e++) {
        if (job->genvnone && strncmp(*e, "PATH=", 5) != 0 && strncmp(*e, "HOME=", 5) != 0)
            continue;
        /* a launcher's own connection must not leak into the ranks */
        if (strncmp(*e, "PMIX_", 5) == 0)
            continue;
        env = env_put(env, *e);
    }
    for (int i = 0; i < job->ngenv; i++)
        env = env_put(env, job->genv[i]);
    for (int i = 0; i < app->nenv; i++)
        env = env_put(env, app->env[i]);
    return mpirun_server_fork_env(job, rank, env);
}

/* The executable a rank will run, found as execvp would (dies if none). */
static char *resolve(const struct app *app)
{
    const char *prog = app->argv[0];
    char *cand = NULL;
    if (strchr(prog, '/') != NULL) {
        if (prog[0] != '/' && app->wdir != NULL) {
            if (asprintf(&cand, "%s/%s", app->wdir, prog) >= 0 && access(cand, X_OK) == 0)
                return cand;
            free(cand);
        }
        char *abs = realpath(prog, NULL);
        if (abs != NULL && access(abs, X_OK) == 0)
            return abs;
        free(abs);
        mpirun_die("cannot run '%s': %s", prog, access(prog, F_OK) == 0
                   ? "permission denied" : "no such file");
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path != '\0') {
        size_t n = strcspn(path, ":");
        if (asprintf(&cand, "%.*s/%s", (int)n, n ? path : ".", prog) < 0)
            mpirun_die("out of memory");
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        path += n;
        if (*path == ':')
            path++;
    }
    mpirun_die("cannot run '%s': not found in PATH", prog);
}

/* Build every rank's environment and check every program before forking any. */
int mpirun_prepare(struct job *job)
{
    for (int a = 0; a < job->napps; a++) {
        struct app *app = &job->apps[a];
        if (app->wdir != NULL) {
            struct stat st;
            if (stat(app->wdir, &st) != 0 || !S_ISDIR(st.st_mode))
                mpirun_die("-wdir %s: not a directory", app->wdir);
        }
        app->path = resolve(app);
    }
    for (int r = 0; r < job->size; r++) {
        job->ranks[r].env = rank_env(job, r);
        if (job->ranks[r].env == NULL)
            return -1;
    }
    return 0;
}

static void child_fail(const char *what, const char *arg)
{
    /* only write(2): no stdio in a forked child of a threaded process */
    const char *err = strerror(errno);
    const char *parts[] = {MPIRUN_NAME ": ", what, " '", arg, "': ", err, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t n = write(2, parts[i], strlen(parts[i]));
        (void)n;
    }
    _exit(127);
}

int mpirun_spawn(struct job *job, struct rank *r, bool gets_stdin)
{
    const struct app *app = &job->apps[r->app];
    int out[2], err[2], in[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        return -1;
    if (gets_stdin && pipe2(in, O_CLOEXEC) != 0)
        return -1;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        dup2(in[0] >= 0 ? in[0] : devnull, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        if (r->cpuset != NULL)
            sched_setaffinity(0, r->cpuset_size, r->cpuset);
        if (app->wdir != NULL && chdir(app->wdir) != 0)
            child_fail("cannot change to directory", app->wdir);
        execve(app->path, app->argv, r->env);
        child_fail("cannot run", app->path);
    }
    setpgid(pid, pid);  /* also here, so a kill(-pid) right after fork finds the group */
    close(out[1]);
    close(err[1]);
    if (in[0] >= 0)
        close(in[0]);
    if (devnull >= 0)
        close(devnull);
    r->pid = pid;
    r->state = RANK_RUNNING;
    r->out_fd = out[0];
    r->err_fd = err[0];
    r->in_fd = in[1];
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (in[1] >= 0)
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    return 0;
}
