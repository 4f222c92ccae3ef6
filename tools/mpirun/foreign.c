/*
 * Ranks that never connect to mpirun's PMIx server.  A program built
 * against another MPI (MPICH's libmpich, Open MPI's libmpi.so.40) and
 * started by this mpirun runs as N singletons without a word; a program
 * that is not an MPI program at all (hostname, true, a script) never
 * connects either, and is fine.  The difference is what the program loads:
 * ldd, run with the rank's own environment (its LD_LIBRARY_PATH decides
 * which library a soname resolves to), lists the libraries whose names
 * start with "libmpi" (libmpi.so.*, libmpich.so.*, libmpi_cxx.so.*, ...);
 * one that is not Cadence's -- Cadence's carries the string "Cadence MPI" --
 * makes the program foreign.  Each program is looked at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/mpirun/mpirun.h"

#define CADENCE_MARK "Cadence MPI"

/* Is the library at path Cadence's? (An unreadable one counts as ours:
 * only a library we can see to be another MPI's is blamed.) */
static bool is_cadence(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    struct stat st;
    bool ours = true;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            ours = memmem(map, (size_t)st.st_size, CADENCE_MARK, strlen(CADENCE_MARK)) != NULL;
            munmap(map, (size_t)st.st_size);
        }
    }
    close(fd);
    return ours;
}

/* ldd's output for prog under env (NULL when ldd cannot be run). */
static char *run_ldd(const char *prog, char **env)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);  /* mpirun blocks the signals it handles */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {"ldd", (char *)prog, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "ldd", &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        return NULL;
    }
    FILE *f = fdopen(out[0], "r");
    char *text = NULL;
    size_t cap = 0;
    ssize_t len = f != NULL ? getdelim(&text, &cap, '\0', f) : -1;  /* all of it */
    if (f != NULL)
        fclose(f);
    else
        close(out[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (len < 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The first "libmpi* => /path" line of ldd's output whose library is not
 * Cadence's, as "name => path" (malloc'ed), or NULL. */
static char *first_foreign(char *ldd)
{
    for (char *line = strtok(ldd, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        line += strspn(line, " \t");
        if (strncmp(line, "libmpi", 6) != 0)
            continue;
        char *arrow = strstr(line, " => ");
        if (arrow == NULL)
            continue;
        char *path = arrow + 4;
        char *end = strstr(path, " (0x");
        if (path[0] != '/' || end == NULL)
            continue;  /* "not found": the loader will say so itself */
        *end = '\0';
        if (!is_cadence(path)) {
            char *what = NULL;
            return asprintf(&what, "%.*s => %s", (int)(arrow - line), line, path) < 0 ? NULL
                                                                                       : what;
        }
    }
    return NULL;
}

const char *mpirun_foreign_mpi(struct job *job, const struct rank *r)
{
    struct app *app = &job->apps[r->app];
    if (!app->foreign_checked) {
        app->foreign_checked = true;
        char *ldd = run_ldd(app->path, r->env);
        app->foreign = ldd != NULL ? first_foreign(ldd) : NULL;
        free(ldd);
    }
    return app->foreign;
}
