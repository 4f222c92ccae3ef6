/*
 * Progress contexts (progress/engine.h, struct cdn_pctx), run with
 * CADENCE_PROGRESS_CONTEXTS=3 and linked with the library's internals to
 * read which context each communicator got:
 *
 *   - MPI_COMM_WORLD and a plain duplicate: context 0;
 *   - MPI_Comm_dup_with_info with cadence_progress_context=auto: the
 *     contexts other than 0 in turn; =2: context 2, and a duplicate of that
 *     communicator stays there; MPI_Comm_split_type with the key too;
 *   - a value naming no context: MPI_ERR_INFO_VALUE naming the variable;
 *   - MPI_Comm_get_info reports the key;
 *   - one thread per communicator (MPI_THREAD_MULTIPLE) runs ping-pongs of
 *     8 B to 1 MiB (eager and rendezvous), an MPI_Iallreduce and a probe
 *     on its own communicator at the same time as the others, data
 *     checked; the run's report (CADENCE_TRANSPORT_REPORT, checked by the
 *     meson test) shows messages through every context's transports;
 *   - with T_CONTEXTS_HELPERS=n (run with CADENCE_PROGRESS_THREADS=n+1),
 *     n helper progress threads run (cdn-progress-1.., in /proc).
 */
#include <dirent.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"
#include "progress/engine.h"
#include "runtime/comm.h"

#define NTHREADS 3
#define ROUNDS 40

static int me, size;

static int pctx_of(MPI_Comm c)
{
    struct cdn_comm *cc = cdn_comm_get(c);
    return cc != NULL ? cc->pctx : -1;
}

static MPI_Comm dup_on(MPI_Comm parent, const char *value, int *rc)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cadence_progress_context", value);
    MPI_Comm c = MPI_COMM_NULL;
    *rc = MPI_Comm_dup_with_info(parent, info, &c);
    MPI_Info_free(&info);
    return c;
}

struct job {
    MPI_Comm comm;
    int id;
    int failures;
};

static void *traffic(void *arg)
{
    struct job *j = arg;
    static const int sizes[] = {8, 4096, 65536, 1 << 20};
    int peer = me ^ 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        unsigned char *out = malloc((size_t)n), *in = malloc((size_t)n);
        for (int r = 0; r < ROUNDS / (int)(s + 1); r++) {
            for (int i = 0; i < n; i++)
                out[i] = (unsigned char)(i * 7 + r + j->id * 31 + me);
            memset(in, 0, (size_t)n);
            if (peer >= size)
                break;
            if (me < peer) {
                MPI_Send(out, n, MPI_BYTE, peer, r, j->comm);
                MPI_Recv(in, n, MPI_BYTE, peer, r, j->comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(in, n, MPI_BYTE, peer, r, j->comm, MPI_STATUS_IGNORE);
                MPI_Send(out, n, MPI_BYTE, peer, r, j->comm);
            }
            for (int i = 0; i < n; i++)
                if (in[i] != (unsigned char)(i * 7 + r + j->id * 31 + peer)) {
                    j->failures++;
                    break;
                }
        }
        free(out);
        free(in);
    }
    /* a collective and a probe on the same communicator */
    long v = me + 1, sum = 0;
    MPI_Request rq;
    MPI_Iallreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, j->comm, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (sum != (long)size * (size + 1) / 2)
        j->failures++;
    if (peer < size) {
        int x = j->id, got = -1, flag = 0;
        MPI_Request sr;
        MPI_Isend(&x, 1, MPI_INT, peer, 999, j->comm, &sr);
        MPI_Status st;
        while (!flag)
            MPI_Iprobe(peer, 999, j->comm, &flag, &st);
        MPI_Recv(&got, 1, MPI_INT, peer, 999, j->comm, MPI_STATUS_IGNORE);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        if (got != j->id)
            j->failures++;
    }
    return NULL;
}

/* Threads of this process whose name starts with prefix. */
static int threads_named(const char *prefix)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(name, sizeof name, f) != NULL && strncmp(name, prefix, strlen(prefix)) == 0)
            n++;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    CHECK(cdn_engine.nctx == 3, "three progress contexts (CADENCE_PROGRESS_CONTEXTS=3): %d",
          cdn_engine.nctx);
    CHECK(pctx_of(MPI_COMM_WORLD) == 0, "MPI_COMM_WORLD on context 0");
    const char *helpers = getenv("T_CONTEXTS_HELPERS");
    if (helpers != NULL)
        CHECK(threads_named("cdn-progress-") == atoi(helpers), "%s helper progress threads "
              "(%d found)", helpers, threads_named("cdn-progress-"));
    MPI_Comm plain;
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    CHECK(pctx_of(plain) == 0, "a duplicate of MPI_COMM_WORLD on context 0");

    struct job jobs[NTHREADS];
    int rc;
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t] = (struct job){.comm = dup_on(MPI_COMM_WORLD, t < 2 ? "auto" : "2", &rc),
                               .id = t};
        CHECK(rc == MPI_SUCCESS, "dup_with_info cadence_progress_context");
    }
    CHECK(pctx_of(jobs[0].comm) == 1 && pctx_of(jobs[1].comm) == 2,
          "auto takes contexts 1, then 2 (%d, %d)", pctx_of(jobs[0].comm),
          pctx_of(jobs[1].comm));
    CHECK(pctx_of(jobs[2].comm) == 2, "\"2\" takes context 2 (%d)", pctx_of(jobs[2].comm));
    MPI_Comm child;
    MPI_Comm_dup(jobs[2].comm, &child);
    CHECK(pctx_of(child) == 2, "a duplicate stays on its parent's context (%d)", pctx_of(child));
    MPI_Info used;
    char value[64];
    int flag = 0;
    MPI_Comm_get_info(jobs[2].comm, &used);
    MPI_Info_get_string(used, "cadence_progress_context", &(int){sizeof value}, value, &flag);
    CHECK(flag && strcmp(value, "2") == 0, "MPI_Comm_get_info reports the key");
    MPI_Info_free(&used);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cadence_progress_context", "1");
    MPI_Comm split;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &split);
    CHECK(pctx_of(split) == 1, "split_type with the key: context 1 (%d)", pctx_of(split));
    MPI_Info_free(&info);

    /* values naming no context */
    const char *bad[] = {"3", "-1", "x", "1x"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        MPI_Comm c = dup_on(MPI_COMM_WORLD, bad[b], &rc);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        CHECK(cls == MPI_ERR_INFO_VALUE && strstr(msg, "CADENCE_PROGRESS_CONTEXTS") != NULL &&
              c == MPI_COMM_NULL, "cadence_progress_context=%s: MPI_ERR_INFO_VALUE (%d: %s)",
              bad[b], cls, msg);
        if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
    }

    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, traffic, &jobs[t]);
    struct job wjob = {.comm = plain, .id = 9};
    traffic(&wjob);  /* context 0 at the same time */
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(jobs[t].failures == 0, "thread %d on context %d: data, sum and probe right (%d "
              "wrong)", t, pctx_of(jobs[t].comm), jobs[t].failures);
        MPI_Comm_free(&jobs[t].comm);
    }
    CHECK(wjob.failures == 0, "context 0 beside them: right (%d wrong)", wjob.failures);
    MPI_Comm_free(&child);
    MPI_Comm_free(&split);
    MPI_Comm_free(&plain);
    char label[48];
    snprintf(label, sizeof label, "t_contexts[%d]", me);
    int fail = check_summary(label);
    MPI_Finalize();
    return fail;
}
