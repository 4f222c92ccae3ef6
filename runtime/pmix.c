/*
 * The PMIx client side of launch:
 * PMIx_Init, the job's facts with PMIx_Get, PMIx_Put/Commit/Fence for
 * the address exchange, PMIx_Abort and PMIx_Finalize.  Only reserved keys
 * every PMIx server provides are required (rank, job size); the rest have
 * safe defaults so the library runs under servers that give less.
 * A process with no PMIx server but another MPI's launcher variables
 * (MPICH's Hydra, Open MPI without PMIx) is one of N processes that would
 * each run alone as rank 0 of 1: MPI_Init says which launcher to use
 * instead, unless CADENCE_ALLOW_SINGLETON asks for singletons.
 */
#include "runtime/pmix.h"

#include <pmix.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

static pmix_proc_t me;
static bool connected;

/* A PMIx integer of whatever width the server chose. */
static bool value_to_long(const pmix_value_t *v, long *out)
{
    switch (v->type) {
    case PMIX_UINT32: *out = (long)v->data.uint32; return true;
    case PMIX_UINT16: *out = (long)v->data.uint16; return true;
    case PMIX_UINT8: *out = (long)v->data.uint8; return true;
    case PMIX_UINT64: *out = (long)v->data.uint64; return true;
    case PMIX_INT: *out = (long)v->data.integer; return true;
    case PMIX_INT32: *out = (long)v->data.int32; return true;
    case PMIX_INT16: *out = (long)v->data.int16; return true;
    case PMIX_INT64: *out = (long)v->data.int64; return true;
    case PMIX_UINT: *out = (long)v->data.uint; return true;
    case PMIX_SIZE: *out = (long)v->data.size; return true;
    case PMIX_PROC_RANK: *out = (long)v->data.rank; return true;
    default: return false;
    }
}

/* rank's value of key in our job (NULL if absent); release it with PMIX_VALUE_RELEASE. */
static pmix_value_t *get(pmix_rank_t rank, const char *key, pmix_status_t *rc)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    pmix_value_t *v = NULL;
    *rc = PMIx_Get(&p, key, NULL, 0, &v);
    return *rc == PMIX_SUCCESS ? v : NULL;
}

static bool get_long(pmix_rank_t rank, const char *key, long *out)
{
    pmix_status_t rc;
    pmix_value_t *v = get(rank, key, &rc);
    if (v == NULL)
        return false;
    bool ok = value_to_long(v, out);
    PMIX_VALUE_RELEASE(v);
    return ok;
}

static char *get_string(pmix_rank_t rank, const char *key)
{
    pmix_status_t rc;
    pmix_value_t *v = get(rank, key, &rc);
    if (v == NULL)
        return NULL;
    char *s = v->type == PMIX_STRING && v->data.string != NULL ? strdup(v->data.string) : NULL;
    PMIX_VALUE_RELEASE(v);
    return s;
}

/* "0,2-4,7" -> ranks; returns how many, or -1 when malformed. */
static int parse_peers(const char *s, int *out, int max)
{
    int n = 0;
    while (*s != '\0') {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            return -1;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s)
                return -1;
        }
        for (long r = a; r <= b; r++) {
            if (n >= max)
                return -1;
            out[n++] = (int)r;
        }
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return n;
}

static int set_singleton(void)
{
    cdn_rt.launched = false;
    cdn_rt.world_rank = 0;
    cdn_rt.world_size = 1;
    cdn_rt.universe_size = 1;
    cdn_rt.appnum = 0;
    cdn_rt.local_rank = 0;
    cdn_rt.local_size = 1;
    cdn_rt.node_id = 0;
    cdn_rt.num_nodes = 1;
    free(cdn_rt.local_peers);
    cdn_rt.local_peers = malloc(sizeof(int));
    if (cdn_rt.local_peers == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: out of memory");
    cdn_rt.local_peers[0] = 0;
    snprintf(cdn_rt.nspace, sizeof cdn_rt.nspace, "singleton.%d", (int)getpid());
    return MPI_SUCCESS;
}

/* Another MPI's launcher that started this process with its own wire-up
 * protocol (no PMIx server): the variable that shows it, or NULL.  A job of
 * one process is a correct singleton and does not count. */
static const char *foreign_launcher(const char **who)
{
    static const struct {
        const char *size, *rank, *who;
    } launchers[] = {
        {"PMI_SIZE", "PMI_RANK", "MPICH's mpiexec (Hydra) or another PMI-1/PMI-2 launcher"},
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpirun"},
    };
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const char *size = getenv(launchers[i].size);
        if (size == NULL && getenv(launchers[i].rank) == NULL)
            continue;
        if (size != NULL && strcmp(size, "1") == 0)
            continue;
        *who = launchers[i].who;
        return size != NULL ? launchers[i].size : launchers[i].rank;
    }
    return NULL;
}

int cdn_pmix_init(const char *caller)
{
    /* a PMIx server that forked us says so in the environment */
    if (getenv("PMIX_NAMESPACE") == NULL || getenv("PMIX_RANK") == NULL) {
        const char *who, *var = foreign_launcher(&who);
        if (var != NULL && cdn_param_long("CADENCE_ALLOW_SINGLETON", 0, 0, 1) == 0)
            return cdn_err(MPI_ERR_OTHER, "%s: started by %s (%s=%s), which Cadence cannot "
                           "join: each process would run alone as rank 0 of 1; start it with "
                           "Cadence's mpirun (or srun --mpi=pmix), or set "
                           "CADENCE_ALLOW_SINGLETON=1 to run singletons", caller, who, var,
                           getenv(var));
        return set_singleton();
    }
    pmix_status_t prc = PMIx_Init(&me, NULL, 0);
    if (prc != PMIX_SUCCESS)
        return cdn_err(MPI_ERR_OTHER, "%s: cannot connect to the launcher's PMIx server "
                       "(namespace %s): %s", caller, getenv("PMIX_NAMESPACE"),
                       PMIx_Error_string(prc));
    connected = true;
    cdn_rt.launched = true;
    snprintf(cdn_rt.nspace, sizeof cdn_rt.nspace, "%s", me.nspace);
    long v;
    if (!get_long(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &v) || v < 1)
        return cdn_err(MPI_ERR_OTHER, "%s: the launcher did not say the job's size "
                       "(PMIx key %s)", caller, PMIX_JOB_SIZE);
    cdn_rt.world_size = (int)v;
    cdn_rt.world_rank = (int)me.rank;
    cdn_rt.universe_size = get_long(PMIX_RANK_WILDCARD, PMIX_UNIV_SIZE, &v) ? (int)v
                                                                           : cdn_rt.world_size;
    cdn_rt.appnum = get_long(me.rank, PMIX_APPNUM, &v) ? (int)v : 0;
    cdn_rt.num_nodes = get_long(PMIX_RANK_WILDCARD, PMIX_NUM_NODES, &v) ? (int)v : 1;
    cdn_rt.node_id = get_long(me.rank, PMIX_NODEID, &v) ? (int)v : -1;

    /* locality: the ranks on this node, in rank order */
    free(cdn_rt.local_peers);
    cdn_rt.local_peers = malloc(sizeof(int) * (size_t)cdn_rt.world_size);
    if (cdn_rt.local_peers == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    char *peers = get_string(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS);
    int n = peers != NULL ? parse_peers(peers, cdn_rt.local_peers, cdn_rt.world_size) : -1;
    free(peers);
    if (n < 1) {  /* a server without locality: assume we are alone */
        cdn_rt.local_peers[0] = cdn_rt.world_rank;
        n = 1;
    }
    cdn_rt.local_size = n;
    cdn_rt.local_rank = 0;
    for (int i = 0; i < n; i++)
        if (cdn_rt.local_peers[i] == cdn_rt.world_rank)
            cdn_rt.local_rank = i;
    if (get_long(me.rank, PMIX_LOCAL_RANK, &v))
        cdn_rt.local_rank = (int)v;
    return MPI_SUCCESS;
}

int cdn_modex_put(const char *key, const void *val, size_t len)
{
    if (!connected)
        return MPI_SUCCESS;  /* a singleton has nobody to tell */
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)val;
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS)
        return cdn_err(MPI_ERR_OTHER, "cannot publish %s through PMIx: %s", key,
                       PMIx_Error_string(rc));
    return MPI_SUCCESS;
}

int cdn_modex_get(int rank, const char *key, void *buf, size_t *len)
{
    if (!connected)
        return cdn_err(MPI_ERR_OTHER, "no launcher: rank %d published no %s", rank, key);
    pmix_status_t rc;
    pmix_value_t *v = get((pmix_rank_t)rank, key, &rc);
    if (v == NULL)
        return cdn_err(MPI_ERR_OTHER, "rank %d published no %s: %s", rank, key,
                       PMIx_Error_string(rc));
    if (v->type != PMIX_BYTE_OBJECT) {
        PMIX_VALUE_RELEASE(v);
        return cdn_err(MPI_ERR_OTHER, "rank %d's %s is not a byte string", rank, key);
    }
    size_t n = v->data.bo.size < *len ? v->data.bo.size : *len;
    memcpy(buf, v->data.bo.bytes, n);
    *len = v->data.bo.size;
    PMIX_VALUE_RELEASE(v);
    return MPI_SUCCESS;
}

int cdn_pmix_fence(bool collect, const char *caller)
{
    if (!connected)
        return MPI_SUCCESS;
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return cdn_err(MPI_ERR_OTHER, "%s: PMIx_Commit failed: %s", caller, PMIx_Error_string(rc));
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(NULL, 0, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        return cdn_err(MPI_ERR_OTHER, "%s: the job-wide PMIx fence failed: %s", caller,
                       PMIx_Error_string(rc));
    return MPI_SUCCESS;
}

/* ---- a process lost ---- */

static void (*lost_fn)(int world_rank);
static bool lost_registered;  /* with this connection's PMIx */

static void lost_event(size_t id, pmix_status_t status, const pmix_proc_t *source,
                       pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                       pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    (void)id, (void)status, (void)results, (void)nresults;
    const pmix_proc_t *who = source;
    for (size_t i = 0; i < ninfo; i++)
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
            info[i].value.type == PMIX_PROC && info[i].value.data.proc != NULL)
            who = info[i].value.data.proc;
    void (*fn)(int) = lost_fn;
    if (fn != NULL && who != NULL && strncmp(who->nspace, me.nspace, PMIX_MAX_NSLEN) == 0 &&
        who->rank != me.rank && who->rank < (pmix_rank_t)cdn_rt.world_size)
        fn((int)who->rank);
    if (cbfunc != NULL)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

void cdn_pmix_on_lost(void (*fn)(int world_rank))
{
    lost_fn = fn;
    if (fn == NULL || !connected || lost_registered)
        return;
    lost_registered = true;
    pmix_status_t codes[] = {PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_EVENT_PROC_TERMINATED,
                             PMIX_ERR_PROC_ABORTED};
    /* (best effort: a launcher that never sends them leaves peer loss to
     * the transports) */
    PMIx_Register_event_handler(codes, sizeof codes / sizeof codes[0], NULL, 0, lost_event, NULL,
                                NULL);
}

void cdn_pmix_abort(int exitcode, const char *msg)
{
    if (connected)
        PMIx_Abort(exitcode, msg, NULL, 0);
}

int cdn_pmix_finalize(void)
{
    if (!connected)
        return MPI_SUCCESS;
    int rc = cdn_pmix_fence(false, "MPI_Finalize");
    connected = false;
    lost_registered = false;
    pmix_status_t prc = PMIx_Finalize(NULL, 0);
    if (rc == MPI_SUCCESS && prc != PMIX_SUCCESS)
        rc = cdn_err(MPI_ERR_OTHER, "MPI_Finalize: PMIx_Finalize failed: %s",
                     PMIx_Error_string(prc));
    return rc;
}
