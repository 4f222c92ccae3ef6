/*
 * Info objects (see info.h) and MPI_INFO_ENV, whose keys (MPI-4.1 11.2.2)
 * come from the process: command and argv from /proc/self/cmdline, maxprocs
 * from the job size, host, wdir, thread_level.
 */
#include "runtime/info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

static struct cdn_handle_table infos = CDN_HANDLE_TABLE_INIT(CDN_OBJ_INFO);
static struct cdn_info env_info = {.handle = MPI_INFO_ENV, .lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

struct cdn_info *cdn_info_new(void)
{
    struct cdn_info *info = calloc(1, sizeof *info);
    if (info != NULL)
        pthread_mutex_init(&info->lock, NULL);
    return info;
}

static int find(const struct cdn_info *info, const char *key)
{
    for (int i = 0; i < info->n; i++)
        if (strcmp(info->e[i].key, key) == 0)
            return i;
    return -1;
}

/* Lock held. */
static int set_locked(struct cdn_info *info, const char *key, const char *value)
{
    char *v = strdup(value);
    if (v == NULL)
        return MPI_ERR_NO_MEM;
    int i = find(info, key);
    if (i >= 0) {
        free(info->e[i].value);
        info->e[i].value = v;
        return MPI_SUCCESS;
    }
    if (info->n == info->cap) {
        int cap = info->cap ? 2 * info->cap : 8;
        struct cdn_info_entry *e = realloc(info->e, sizeof *e * (size_t)cap);
        if (e == NULL) {
            free(v);
            return MPI_ERR_NO_MEM;
        }
        info->e = e;
        info->cap = cap;
    }
    char *k = strdup(key);
    if (k == NULL) {
        free(v);
        return MPI_ERR_NO_MEM;
    }
    info->e[info->n++] = (struct cdn_info_entry){k, v};
    return MPI_SUCCESS;
}

int cdn_info_set(struct cdn_info *info, const char *key, const char *value)
{
    pthread_mutex_lock(&info->lock);
    int rc = set_locked(info, key, value);
    pthread_mutex_unlock(&info->lock);
    return rc;
}

static void fill_env(void);

int cdn_info_merge(struct cdn_info *dst, struct cdn_info *src)
{
    if (src == &env_info)
        pthread_once(&env_once, fill_env);
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&src->lock);
    for (int i = 0; i < src->n && rc == MPI_SUCCESS; i++)
        rc = cdn_info_set(dst, src->e[i].key, src->e[i].value);
    pthread_mutex_unlock(&src->lock);
    return rc;
}

struct cdn_info *cdn_info_dup(struct cdn_info *src)
{
    struct cdn_info *info = cdn_info_new();
    if (info != NULL && src != NULL && cdn_info_merge(info, src) != MPI_SUCCESS) {
        cdn_info_destroy(info);
        return NULL;
    }
    return info;
}

void cdn_info_destroy(struct cdn_info *info)
{
    if (info == NULL || info == &env_info)
        return;
    for (int i = 0; i < info->n; i++) {
        free(info->e[i].key);
        free(info->e[i].value);
    }
    free(info->e);
    pthread_mutex_destroy(&info->lock);
    free(info);
}

bool cdn_info_lookup(struct cdn_info *info, const char *key, char *value, int valuelen, int *len)
{
    if (info == NULL)
        return false;
    if (info == &env_info)
        pthread_once(&env_once, fill_env);
    pthread_mutex_lock(&info->lock);
    int i = find(info, key);
    if (i >= 0) {
        size_t n = strlen(info->e[i].value);
        if (len != NULL)
            *len = (int)n;
        if (value != NULL && valuelen > 0) {
            size_t m = n < (size_t)valuelen - 1 ? n : (size_t)valuelen - 1;
            memcpy(value, info->e[i].value, m);
            value[m] = '\0';
        }
    }
    pthread_mutex_unlock(&info->lock);
    return i >= 0;
}

struct cdn_info *cdn_info_get(MPI_Info handle)
{
    if (handle == MPI_INFO_ENV) {
        pthread_once(&env_once, fill_env);
        return &env_info;
    }
    return cdn_handle_get(&infos, handle);
}

struct cdn_info *cdn_info_arg(MPI_Info handle, const char *caller, int *rc)
{
    *rc = MPI_SUCCESS;
    if (handle == MPI_INFO_NULL)
        return NULL;
    struct cdn_info *info = cdn_info_get(handle);
    if (info == NULL)
        *rc = cdn_err(MPI_ERR_INFO, "%s: 0x%x is not a valid info object", caller, (unsigned)handle);
    return info;
}

int cdn_info_publish(struct cdn_info *info, MPI_Info *handle, const char *caller)
{
    info->handle = cdn_handle_alloc(&infos, info);
    if (info->handle == 0) {
        cdn_info_destroy(info);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of info handles", caller);
    }
    *handle = info->handle;
    return MPI_SUCCESS;
}

int cdn_info_publish_copy(struct cdn_info *src, pthread_mutex_t *lock, MPI_Info *handle,
                          const char *caller)
{
    if (handle == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: info_used is NULL", caller);
    pthread_mutex_lock(lock);
    struct cdn_info *copy = cdn_info_dup(src);
    pthread_mutex_unlock(lock);
    if (copy == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    return cdn_info_publish(copy, handle, caller);
}

void cdn_info_unpublish(struct cdn_info *info)
{
    cdn_handle_free(&infos, info->handle);
    cdn_info_destroy(info);
}

/* The command line: "command" and "argv" (the arguments after it, space
 * separated) of MPI_INFO_ENV. */
static void env_cmdline(void)
{
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (f == NULL)
        return;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (n == 0)
        return;
    set_locked(&env_info, "command", buf);
    char args[4096];
    size_t used = 0;
    for (size_t i = strlen(buf) + 1; i < n; i += strlen(buf + i) + 1) {
        size_t l = strlen(buf + i);
        if (used + l + 2 > sizeof args)
            break;
        if (used > 0)
            args[used++] = ' ';
        memcpy(args + used, buf + i, l);
        used += l;
    }
    args[used] = '\0';
    if (used > 0)
        set_locked(&env_info, "argv", args);
}

static void fill_env(void)
{
    static const char *levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                   "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
    char v[1024];
    pthread_mutex_lock(&env_info.lock);
    env_cmdline();
    snprintf(v, sizeof v, "%d", cdn_rt.world_size > 0 ? cdn_rt.world_size : 1);
    set_locked(&env_info, "maxprocs", v);
    if (gethostname(v, sizeof v) == 0) {
        v[sizeof v - 1] = '\0';
        set_locked(&env_info, "host", v);
    }
    if (getcwd(v, sizeof v) != NULL)
        set_locked(&env_info, "wdir", v);
    int level = cdn_rt.thread_level;
    set_locked(&env_info, "thread_level", levels[level >= 0 && level <= 3 ? level : 0]);
    pthread_mutex_unlock(&env_info.lock);
}

void cdn_info_finalize(void)
{
    cdn_handle_table_destroy(&infos);
}
