/*
 * The PMIx side of mpirun: the OpenPMIx server library runs its own thread
 * and calls the functions of `module` below when a rank connects, fences,
 * finalises or aborts.  Every rank of the job lives on this node, so a fence
 * is complete once the library has collected every local contribution: the
 * callback hands the data straight back.  What the loop must act on (an
 * abort, a rank that finalised) is recorded under `lock` and signalled on
 * the loop's eventfd.
 */
#include <pmix.h>
#include <pmix_server.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include "tools/mpirun/mpirun.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct job *the_job;
static int notify_fd = -1;
static struct {
    bool pending, taken;
    int rank, status;
    char msg[512];
} abort_req;

void mpirun_server_lock(void) { pthread_mutex_lock(&lock); }
void mpirun_server_unlock(void) { pthread_mutex_unlock(&lock); }

static void notify(void)
{
    uint64_t one = 1;
    ssize_t n = write(notify_fd, &one, sizeof one);
    (void)n;
}

static struct rank *rank_of(const pmix_proc_t *proc)
{
    if (proc == NULL || strncmp(proc->nspace, the_job->nspace, PMIX_MAX_NSLEN) != 0
        || proc->rank >= (pmix_rank_t)the_job->size)
        return NULL;
    return &the_job->ranks[proc->rank];
}

/* A rank connected (PMIx_Init) or finalised (PMIx_Finalize): note it, release it. */
static pmix_status_t mark(const pmix_proc_t *proc, size_t field, pmix_op_cbfunc_t cbfunc,
                          void *cbdata)
{
    struct rank *r = rank_of(proc);
    pthread_mutex_lock(&lock);
    if (r != NULL)
        *(bool *)((char *)r + field) = true;
    pthread_mutex_unlock(&lock);
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t on_connected(const pmix_proc_t *proc, void *obj,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)obj;
    return mark(proc, offsetof(struct rank, connected), cbfunc, cbdata);
}

static pmix_status_t on_finalized(const pmix_proc_t *proc, void *obj,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)obj;
    return mark(proc, offsetof(struct rank, finalized), cbfunc, cbdata);
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *obj, int status, const char msg[],
                              pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)obj, (void)procs, (void)nprocs;  /* an abort always ends the whole job */
    pthread_mutex_lock(&lock);
    if (!abort_req.pending) {
        abort_req.pending = true;
        abort_req.rank = proc != NULL ? (int)proc->rank : -1;
        abort_req.status = status;
        snprintf(abort_req.msg, sizeof abort_req.msg, "%s", msg != NULL ? msg : "");
    }
    pthread_mutex_unlock(&lock);
    notify();
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs,
                              const pmix_info_t info[], size_t ninfo,
                              char *data, size_t ndata,
                              pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)procs, (void)nprocs, (void)info, (void)ninfo;
    /* one node: the library already gathered every participant's data */
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, data, ndata, cbdata, NULL, NULL);
    return PMIX_SUCCESS;
}

static pmix_status_t on_direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                     size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)proc, (void)info, (void)ninfo, (void)cbfunc, (void)cbdata;
    /* every process of the job is local: the library answers those itself */
    return PMIX_ERR_NOT_FOUND;
}

static pmix_server_module_t module = {
    .client_connected = on_connected,
    .client_finalized = on_finalized,
    .abort = on_abort,
    .fence_nb = on_fence,
    .direct_modex = on_direct_modex,
};

bool mpirun_server_take_abort(int *rank, int *status, char *msg, size_t msgsz)
{
    bool take = false;
    pthread_mutex_lock(&lock);
    if (abort_req.pending && !abort_req.taken) {
        abort_req.taken = take = true;
        *rank = abort_req.rank;
        *status = abort_req.status;
        snprintf(msg, msgsz, "%s", abort_req.msg);
    }
    pthread_mutex_unlock(&lock);
    return take;
}

int mpirun_server_start(struct job *job, int fd)
{
    the_job = job;
    notify_fd = fd;
    char nspace[PMIX_MAX_NSLEN + 1];
    snprintf(nspace, sizeof nspace, "%.200s-server", job->nspace);
    pmix_rank_t srank = 0;
    bool no = false;
    void *list = PMIx_Info_list_start();
    PMIx_Info_list_add(list, PMIX_SERVER_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIx_Info_list_add(list, PMIX_SYSTEM_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIx_Info_list_add(list, PMIX_SERVER_NSPACE, nspace, PMIX_STRING);
    PMIx_Info_list_add(list, PMIX_SERVER_RANK, &srank, PMIX_PROC_RANK);
    PMIx_Info_list_add(list, PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    PMIx_Info_list_add(list, PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
    pmix_data_array_t arr;
    PMIx_Info_list_convert(list, &arr);
    PMIx_Info_list_release(list);
    pmix_status_t rc = PMIx_server_init(&module, arr.array, arr.size);
    PMIx_Data_array_destruct(&arr);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, MPIRUN_NAME ": PMIx_server_init failed: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* Blocking wrapper for the server calls that complete through a callback. */
struct wait_op {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool done;
    pmix_status_t status;
};

static void op_done(pmix_status_t status, void *cbdata)
{
    struct wait_op *w = cbdata;
    pthread_mutex_lock(&w->m);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

static pmix_status_t op_wait(struct wait_op *w, pmix_status_t rc)
{
    if (rc == PMIX_OPERATION_SUCCEEDED)
        return PMIX_SUCCESS;
    if (rc != PMIX_SUCCESS)
        return rc;
    pthread_mutex_lock(&w->m);
    while (!w->done)
        pthread_cond_wait(&w->c, &w->m);
    pthread_mutex_unlock(&w->m);
    return w->status;
}

#define WAIT_OP_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, PMIX_SUCCESS}

static void add_u32(void *list, const char *key, uint32_t v)
{
    PMIx_Info_list_add(list, key, &v, PMIX_UINT32);
}

static void add_u16(void *list, const char *key, uint16_t v)
{
    PMIx_Info_list_add(list, key, &v, PMIX_UINT16);
}

static void add_rank(void *list, const char *key, pmix_rank_t v)
{
    PMIx_Info_list_add(list, key, &v, PMIX_PROC_RANK);
}

/* Put a finished sub-list into `list` as an array value under `key`. */
static void add_array(void *list, const char *key, void *sub)
{
    pmix_data_array_t arr;
    PMIx_Info_list_convert(sub, &arr);
    PMIx_Info_list_release(sub);
    PMIx_Info_list_add(list, key, &arr, PMIX_DATA_ARRAY);
    PMIx_Data_array_destruct(&arr);
}

int mpirun_server_register(struct job *job)
{
    char host[HOST_NAME_MAX + 1] = "localhost";
    gethostname(host, sizeof host);
    uint32_t n = (uint32_t)job->size;

    /* "0,1,...,n-1": every rank is local */
    size_t cap = (size_t)n * 8 + 16;
    char *peers = malloc(cap), *ranges = malloc(cap);
    if (peers == NULL || ranges == NULL)
        return -1;
    size_t off = 0;
    for (uint32_t r = 0; r < n; r++)
        off += (size_t)snprintf(peers + off, cap - off, r ? ",%u" : "%u", r);
    snprintf(ranges, cap, n > 1 ? "0-%u" : "0", n - 1);
    char *nodemap = NULL, *procmap = NULL;
    if (PMIx_generate_regex(host, &nodemap) != PMIX_SUCCESS
        || PMIx_generate_ppn(ranges, &procmap) != PMIX_SUCCESS) {
        fprintf(stderr, MPIRUN_NAME ": PMIx could not encode the node and process maps\n");
        return -1;
    }

    void *list = PMIx_Info_list_start();
    add_u32(list, PMIX_UNIV_SIZE, n);
    add_u32(list, PMIX_JOB_SIZE, n);
    add_u32(list, PMIX_MAX_PROCS, n);
    add_u32(list, PMIX_JOB_NUM_APPS, (uint32_t)job->napps);
    PMIx_Info_list_add(list, PMIX_JOBID, job->nspace, PMIX_STRING);
    PMIx_Info_list_add(list, PMIX_NODE_MAP, nodemap, PMIX_REGEX);
    PMIx_Info_list_add(list, PMIX_PROC_MAP, procmap, PMIX_REGEX);
    add_u32(list, PMIX_NUM_NODES, 1);
    add_u32(list, PMIX_LOCAL_SIZE, n);
    add_u32(list, PMIX_NODE_SIZE, n);
    add_rank(list, PMIX_LOCALLDR, 0);
    PMIx_Info_list_add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    PMIx_Info_list_add(list, PMIX_HOSTNAME, host, PMIX_STRING);
    add_u32(list, PMIX_NODEID, 0);
    for (int a = 0; a < job->napps; a++) {
        void *al = PMIx_Info_list_start();
        add_u32(al, PMIX_APPNUM, (uint32_t)a);
        add_u32(al, PMIX_APP_SIZE, (uint32_t)job->apps[a].nprocs);
        add_rank(al, PMIX_APPLDR, (pmix_rank_t)job->apps[a].first_rank);
        add_array(list, PMIX_APP_INFO_ARRAY, al);
    }
    for (int r = 0; r < job->size; r++) {
        const struct app *app = &job->apps[job->ranks[r].app];
        void *pl = PMIx_Info_list_start();
        add_rank(pl, PMIX_RANK, (pmix_rank_t)r);
        add_u32(pl, PMIX_APPNUM, (uint32_t)job->ranks[r].app);
        add_rank(pl, PMIX_APP_RANK, (pmix_rank_t)(r - app->first_rank));
        add_rank(pl, PMIX_GLOBAL_RANK, (pmix_rank_t)r);
        add_u16(pl, PMIX_LOCAL_RANK, (uint16_t)r);
        add_u16(pl, PMIX_NODE_RANK, (uint16_t)r);
        add_u32(pl, PMIX_NODEID, 0);
        PMIx_Info_list_add(pl, PMIX_HOSTNAME, host, PMIX_STRING);
        add_array(list, PMIX_PROC_INFO_ARRAY, pl);
    }
    pmix_data_array_t arr;
    PMIx_Info_list_convert(list, &arr);
    PMIx_Info_list_release(list);
    free(peers);
    free(ranges);
    free(nodemap);
    free(procmap);

    struct wait_op w = WAIT_OP_INIT;
    pmix_status_t rc = op_wait(&w, PMIx_server_register_nspace(job->nspace, (int)n, arr.array,
                                                               arr.size, op_done, &w));
    PMIx_Data_array_destruct(&arr);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, MPIRUN_NAME ": PMIx could not register the job: %s\n",
                PMIx_Error_string(rc));
        return -1;
    }
    for (int r = 0; r < job->size; r++) {
        pmix_proc_t proc;
        PMIX_LOAD_PROCID(&proc, job->nspace, (pmix_rank_t)r);
        struct wait_op wc = WAIT_OP_INIT;
        rc = op_wait(&wc, PMIx_server_register_client(&proc, getuid(), getgid(), &job->ranks[r],
                                                      op_done, &wc));
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, MPIRUN_NAME ": PMIx could not register rank %d: %s\n", r,
                    PMIx_Error_string(rc));
            return -1;
        }
    }
    return 0;
}

char **mpirun_server_fork_env(struct job *job, int rank, char **env)
{
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, job->nspace, (pmix_rank_t)rank);
    pmix_status_t rc = PMIx_server_setup_fork(&proc, &env);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, MPIRUN_NAME ": PMIx could not set up rank %d's environment: %s\n", rank,
                PMIx_Error_string(rc));
        return NULL;
    }
    return env;
}

void mpirun_server_notify_lost(struct job *job, int rank)
{
    pmix_proc_t lost;
    PMIX_LOAD_PROCID(&lost, job->nspace, (pmix_rank_t)rank);
    pmix_info_t info[1];
    PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &lost, PMIX_PROC);
    /* (best effort: the job is ending anyway) */
    PMIx_Notify_event(PMIX_ERR_PROC_TERM_WO_SYNC, &lost, PMIX_RANGE_NAMESPACE, info, 1, NULL,
                      NULL);
    PMIX_INFO_DESTRUCT(&info[0]);
}

void mpirun_server_stop(struct job *job)
{
    struct wait_op w = WAIT_OP_INIT;
    PMIx_server_deregister_nspace(job->nspace, op_done, &w);
    op_wait(&w, PMIX_SUCCESS);
    PMIx_server_finalize();
}
