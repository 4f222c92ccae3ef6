/*
 * The command line: MPICH/Hydra and Open MPI spellings of the options users
 * type, turned into a `struct job`.  Global options apply to the whole job
 * wherever they appear; -n, -wdir and -env belong to the application segment
 * they appear in (segments are separated by ':' for MPMD jobs).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdn_build_config.h"
#include "tools/mpirun/mpirun.h"

static void vreport(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, MPIRUN_NAME ": %s", kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void mpirun_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("", fmt, ap);
    va_end(ap);
    exit(2);
}

void mpirun_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("warning: ", fmt, ap);
    va_end(ap);
}

static void usage(void)
{
    printf(
"Usage: mpirun [global options] [local options] program [args] [: [local options] program [args]]...\n"
"       (mpiexec is the same program)\n"
"\n"
"Local options (per application, before its program):\n"
"  -n, -np N              number of ranks (default: -ppn, else one per core)\n"
"  -wdir, --wdir DIR      working directory of the ranks\n"
"  -env NAME VALUE        set NAME=VALUE for this application's ranks\n"
"\n"
"Global options:\n"
"  -ppn, --npernode N     ranks per node (one node: the default for -n)\n"
"  --host, -hosts LIST    comma-separated node names (name or name:slots); only\n"
"                         this node is supported: use `srun --mpi=pmix` under Slurm\n"
"                         for several nodes\n"
"  -x NAME[=VALUE]        export NAME (from mpirun's environment, or VALUE)\n"
"  -genv NAME VALUE       set NAME=VALUE for every rank\n"
"  -genvall               pass mpirun's whole environment (the default)\n"
"  -genvnone              pass only what -x/-genv/-env name (plus PATH and HOME)\n"
"  --bind-to core|hwthread|none\n"
"                         binding (default: core when ranks <= cores, else none)\n"
"  --map-by core|hwthread|numa|package\n"
"                         order in which ranks take binding targets (default core)\n"
"  --tag-output, -l       prefix every output line with [rank]\n"
"  --timeout SECONDS      end the job if it runs longer (also MPIEXEC_TIMEOUT)\n"
"  --oversubscribe        accepted for Open MPI compatibility (always allowed)\n"
"  -v, --verbose          say what mpirun does\n"
"  -V, --version          print the version and exit\n"
"  -h, --help             print this help and exit\n"
"\n"
"Exit code: 0 when every rank called MPI_Finalize (or never used MPI) and exited 0;\n"
"the MPI_Abort code after MPI_Abort; the first failing rank's exit code, or 128+signal\n"
"when a rank was killed; 124 after --timeout; 2 for a bad command line.\n");
}

/* "--name=value" or "--name value": returns the value or dies naming the option. */
static const char *option_value(int argc, char **argv, int *i, const char *eq)
{
    if (eq != NULL)
        return eq + 1;
    if (*i + 1 >= argc)
        mpirun_die("option %s needs a value", argv[*i]);
    return argv[++*i];
}

static int parse_count(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < 1 || v > 1000000)
        mpirun_die("%s: '%s' is not a positive number of processes", opt, s);
    return (int)v;
}

static bool is_this_host(const char *name, size_t len)
{
    char host[HOST_NAME_MAX + 1] = "";
    gethostname(host, sizeof host);
    size_t shortlen = strcspn(host, ".");
    static const char *const local[] = {"localhost", "127.0.0.1", "::1", "localhost.localdomain"};
    for (size_t k = 0; k < sizeof local / sizeof local[0]; k++)
        if (strlen(local[k]) == len && strncmp(local[k], name, len) == 0)
            return true;
    if (strlen(host) == len && strncmp(host, name, len) == 0)
        return true;
    if (shortlen == len && strncmp(host, name, len) == 0)
        return true;
    /* "host.domain" given for a short hostname */
    size_t nshort = strcspn(name, ".");
    return nshort < len && nshort == strlen(host) && strncmp(host, name, nshort) == 0;
}

static void check_hosts(const char *list)
{
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        size_t namelen = n;
        const char *colon = memchr(p, ':', n);
        if (colon != NULL && strchr(p, ']') == NULL)  /* name:slots */
            namelen = (size_t)(colon - p);
        if (namelen > 0 && !is_this_host(p, namelen)) {
            char host[HOST_NAME_MAX + 1] = "";
            gethostname(host, sizeof host);
            mpirun_die("host '%.*s' is not this node (%s); mpirun starts ranks on this node "
                       "only. To run on several nodes, launch with Slurm (srun --mpi=pmix).",
                       (int)namelen, p, host);
        }
        p += n;
        if (*p == ',')
            p++;
    }
}

static void add_env(char ***list, int *n, const char *name, const char *value)
{
    if (name[0] == '\0' || strchr(name, '=') != NULL)
        mpirun_die("'%s' is not an environment variable name", name);
    char *s;
    if (asprintf(&s, "%s=%s", name, value) < 0)
        mpirun_die("out of memory");
    *list = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
    if (*list == NULL)
        mpirun_die("out of memory");
    (*list)[(*n)++] = s;
}

static bool opt_is(const char *arg, const char *name, const char **eq)
{
    /* accept -name, --name and --name=value / -name=value */
    while (*arg == '-')
        arg++;
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '\0') {
        *eq = NULL;
        return true;
    }
    if (arg[n] == '=') {
        *eq = arg + n;
        return true;
    }
    return false;
}

int mpirun_parse(int argc, char **argv, struct job *job)
{
    memset(job, 0, sizeof *job);
    job->bind_to = BIND_DEFAULT;
    job->map_by = MAP_CORE;
    const char *t = getenv("MPIEXEC_TIMEOUT");
    if (t != NULL && *t != '\0')
        job->timeout = atof(t);

    struct app cur = {0};
    int i = 1;
    for (;;) {
        /* options of one application segment, then its program and arguments */
        for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
            const char *a = argv[i], *eq = NULL;
            if (strcmp(a, "--") == 0) {
                i++;
                break;
            }
            if (opt_is(a, "h", &eq) || opt_is(a, "help", &eq)) {
                usage();
                exit(0);
            } else if (opt_is(a, "V", &eq) || opt_is(a, "version", &eq)) {
                printf("mpirun (Cadence MPI) %s\nPMIx server launcher; MPI %d.%d\n", CDN_VERSION,
                       4, 1);
                exit(0);
            } else if (opt_is(a, "n", &eq) || opt_is(a, "np", &eq) || opt_is(a, "c", &eq)) {
                cur.nprocs = parse_count(a, option_value(argc, argv, &i, eq));
            } else if (opt_is(a, "ppn", &eq) || opt_is(a, "npernode", &eq)) {
                job->ppn = parse_count(a, option_value(argc, argv, &i, eq));
            } else if (opt_is(a, "wdir", &eq) || opt_is(a, "wd", &eq)) {
                cur.wdir = option_value(argc, argv, &i, eq);
            } else if (opt_is(a, "env", &eq)) {
                if (i + 2 >= argc)
                    mpirun_die("-env needs a NAME and a VALUE");
                add_env(&cur.env, &cur.nenv, argv[i + 1], argv[i + 2]);
                i += 2;
            } else if (opt_is(a, "genv", &eq)) {
                if (i + 2 >= argc)
                    mpirun_die("-genv needs a NAME and a VALUE");
                add_env(&job->genv, &job->ngenv, argv[i + 1], argv[i + 2]);
                i += 2;
            } else if (opt_is(a, "x", &eq)) {
                const char *v = option_value(argc, argv, &i, eq);
                const char *veq = strchr(v, '=');
                if (veq != NULL) {
                    char *name = strndup(v, (size_t)(veq - v));
                    add_env(&job->genv, &job->ngenv, name, veq + 1);
                    free(name);
                } else {
                    const char *val = getenv(v);
                    if (val == NULL)
                        mpirun_die("-x %s: %s is not set in mpirun's environment", v, v);
                    add_env(&job->genv, &job->ngenv, v, val);
                }
            } else if (opt_is(a, "genvall", &eq)) {
                job->genvnone = false;
            } else if (opt_is(a, "genvnone", &eq)) {
                job->genvnone = true;
            } else if (opt_is(a, "bind-to", &eq) || opt_is(a, "binding", &eq)) {
                const char *v = option_value(argc, argv, &i, eq);
                if (strcmp(v, "core") == 0)
                    job->bind_to = BIND_CORE;
                else if (strcmp(v, "hwthread") == 0 || strcmp(v, "pu") == 0)
                    job->bind_to = BIND_HWTHREAD;
                else if (strcmp(v, "none") == 0)
                    job->bind_to = BIND_NONE;
                else
                    mpirun_die("--bind-to %s: expected core, hwthread or none", v);
            } else if (opt_is(a, "map-by", &eq)) {
                const char *v = option_value(argc, argv, &i, eq);
                if (strcmp(v, "core") == 0 || strcmp(v, "slot") == 0)
                    job->map_by = MAP_CORE;
                else if (strcmp(v, "hwthread") == 0)
                    job->map_by = MAP_HWTHREAD;
                else if (strcmp(v, "numa") == 0)
                    job->map_by = MAP_NUMA;
                else if (strcmp(v, "package") == 0 || strcmp(v, "socket") == 0)
                    job->map_by = MAP_PACKAGE;
                else
                    mpirun_die("--map-by %s: expected core, hwthread, numa or package", v);
            } else if (opt_is(a, "host", &eq) || opt_is(a, "hosts", &eq)
                       || opt_is(a, "H", &eq)) {
                check_hosts(option_value(argc, argv, &i, eq));
            } else if (opt_is(a, "tag-output", &eq) || opt_is(a, "l", &eq)
                       || opt_is(a, "prepend-rank", &eq)) {
                job->tag_output = true;
            } else if (opt_is(a, "timeout", &eq)) {
                const char *v = option_value(argc, argv, &i, eq);
                char *end;
                job->timeout = strtod(v, &end);
                if (*v == '\0' || *end != '\0' || !(job->timeout > 0))
                    mpirun_die("--timeout %s: expected a positive number of seconds", v);
            } else if (opt_is(a, "oversubscribe", &eq)) {
                /* always allowed */
            } else if (opt_is(a, "v", &eq) || opt_is(a, "verbose", &eq)) {
                job->verbose = true;
            } else {
                mpirun_die("unknown option %s (see mpirun --help)", a);
            }
        }
        if (i >= argc || strcmp(argv[i], ":") == 0)
            mpirun_die("no program to run%s (see mpirun --help)",
                       job->napps > 0 ? " after ':'" : "");
        /* the program and its arguments run to the next lone ':' */
        int start = i;
        while (i < argc && strcmp(argv[i], ":") != 0)
            i++;
        cur.argv = calloc((size_t)(i - start + 1), sizeof(char *));
        if (cur.argv == NULL)
            mpirun_die("out of memory");
        memcpy(cur.argv, argv + start, sizeof(char *) * (size_t)(i - start));
        job->apps = realloc(job->apps, sizeof(struct app) * (size_t)(job->napps + 1));
        if (job->apps == NULL)
            mpirun_die("out of memory");
        job->apps[job->napps++] = cur;
        memset(&cur, 0, sizeof cur);
        if (i >= argc)
            break;
        i++;  /* past ':' */
    }

    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int a = 0; a < job->napps; a++) {
        struct app *app = &job->apps[a];
        if (app->nprocs == 0)
            app->nprocs = job->ppn > 0 ? job->ppn : (ncores > 0 ? (int)ncores : 1);
        app->first_rank = job->size;
        job->size += app->nprocs;
    }
    if (job->ppn > 0 && job->size > job->ppn)
        mpirun_die("%d ranks are more than -ppn %d on the one node this mpirun runs on",
                   job->size, job->ppn);
    return 0;
}
