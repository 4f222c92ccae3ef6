/* Context switches of this process's threads, from /proc: how the tests
 * that a blocking or short nonblocking call leaves the progress thread
 * asleep count its wake-ups. */
#ifndef THREAD_SWITCHES_H
#define THREAD_SWITCHES_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Context switches so far (voluntary, plus involuntary when all) of the
 * task whose /proc status file is path, or -1. */
static long task_switches(const char *path, bool all)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long total = 0;
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
        long v;
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
            (all && sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1))
            total += v;
    }
    fclose(f);
    return total;
}

/* The thread id of this process's thread named cdn-progress, or -1. */
static long progress_thread_tid(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    long tid = -1;
    struct dirent *e;
    while (tid < 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        bool ours = f != NULL && fgets(line, sizeof line, f) != NULL &&
                    strncmp(line, "cdn-progress", 12) == 0;
        if (f != NULL)
            fclose(f);
        if (ours)
            tid = strtol(e->d_name, NULL, 10);
    }
    closedir(d);
    return tid;
}

/* Context switches so far of this process's thread named cdn-progress, or
 * -1 if there is none. */
static long progress_thread_switches(void)
{
    long tid = progress_thread_tid();
    if (tid < 0)
        return -1;
    char path[300];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    return task_switches(path, true);
}

#endif
