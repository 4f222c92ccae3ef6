/*
 * Bindings of the collectives: argument checks, handles converted to
 * objects and arrays normalised, then the call handed to coll/
 * (cdn_coll_*_call, coll/call.c), whose policy it is how the call runs --
 * direct path, kept schedule, algorithm, intra- or intercommunicator form
 * -- and ends: start and wait (blocking), start (MPI_I...), or keep it for
 * MPI_Start (MPI_..._init).  Each collective has one body taking MPI_Count
 * scalars and untyped arrays (`large` says whether they are int or
 * MPI_Count/MPI_Aint); COLL_FORMS makes its six entry points.
 *
 * Intercommunicators (coll/inter.c): barrier, bcast, gather(v), scatter(v),
 * reduce, allgather(v), alltoall(v,w), allreduce and reduce_scatter(_block)
 * take MPI-4.1's intercommunicator meaning (root is MPI_ROOT, MPI_PROC_NULL
 * or a remote rank; arrays about the other group have remote_size entries;
 * buffers insignificant at a process are not checked there).  MPI_IN_PLACE
 * is refused on them (MPI_ERR_BUFFER); scan, exscan and the neighbourhood
 * collectives are intracommunicator-only (MPI_ERR_COMM).
 *
 * The info argument of the _init forms is checked, and its algorithm keys
 * (cadence_<coll>_algorithm) choose the persistent schedule's algorithm
 * before the communicator's (coll/coll.c, cdn_coll_forced).
 */
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "coll/coll.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/handle.h"
#include "runtime/info.h"
#include "runtime/op.h"
#include "runtime/topo.h"

enum form { F_BLOCK = CDN_COLL_BLOCKING, F_NB = CDN_COLL_NONBLOCKING, F_PERS = CDN_COLL_PERSISTENT };

/* The call as coll/ takes it. */
#define CALL(fn, c, form, request) (&(struct cdn_coll_call){fn, c, form, request})

static int begin(const char *fn, MPI_Comm comm, int form, MPI_Request *request,
                 struct cdn_comm **c)
{
    int rc = MPI_SUCCESS;
    *c = cdn_api_comm(comm, fn, &rc);
    if (*c == NULL)
        return rc;
    if (form != F_BLOCK && request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    return MPI_SUCCESS;
}

static int check_buf(const char *fn, const char *name, const void *buf, MPI_Count count,
                     MPI_Datatype type, struct cdn_datatype **dt)
{
    return cdn_api_buf(fn, name, true, buf, count, type, dt);
}

static int no_in_place(const char *fn, const char *name, const void *buf)
{
    return buf == MPI_IN_PLACE
               ? cdn_err(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed as %s", fn, name)
               : MPI_SUCCESS;
}

/* Refuses MPI_IN_PLACE as any buffer of a collective on an intercommunicator. */
static int inter_no_in_place(const char *fn, struct cdn_comm *c, const char *name,
                             const void *buf)
{
    if (c->inter && buf == MPI_IN_PLACE)
        return cdn_err(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed as %s on an "
                       "intercommunicator", fn, name);
    return MPI_SUCCESS;
}

static int intra_only(const char *fn, struct cdn_comm *c)
{
    if (c->inter)
        return cdn_err(MPI_ERR_COMM, "%s: not defined on an intercommunicator (MPI-4.1 allows "
                       "it on intracommunicators only)", fn);
    return MPI_SUCCESS;
}

/* Intercommunicator: MPI_ROOT at the root, MPI_PROC_NULL at the rest of its
 * group, a remote rank in the other group. */
static int check_root(const char *fn, struct cdn_comm *c, int root)
{
    if (c->inter) {
        if (root != MPI_ROOT && root != MPI_PROC_NULL && (root < 0 || root >= c->remote_size))
            return cdn_err(MPI_ERR_ROOT, "%s: root %d is neither MPI_ROOT, MPI_PROC_NULL nor a "
                           "rank of the remote group (size %d)", fn, root, c->remote_size);
        return MPI_SUCCESS;
    }
    if (root < 0 || root >= c->size)
        return cdn_err(MPI_ERR_ROOT, "%s: root %d is not a rank of the communicator (size %d)",
                       fn, root, c->size);
    return MPI_SUCCESS;
}

static int check_aliased(const char *fn, const void *sbuf, const void *rbuf, MPI_Count n)
{
    if (sbuf == rbuf && sbuf != NULL && n > 0)
        return cdn_err(MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer (use "
                       "MPI_IN_PLACE)", fn);
    return MPI_SUCCESS;
}

static int check_op(const char *fn, MPI_Op op, struct cdn_datatype *dt, struct cdn_op **out)
{
    return cdn_op_check(op, dt, false, fn, out);
}

/* ---- arrays: int or large, normalised to MPI_Count / MPI_Aint ---- */

struct arrays {
    MPI_Count *counts[2];
    MPI_Aint *displs[2];
    struct cdn_datatype **types[2];
};

/* Inline and with the NULL tests here: most calls have no arrays, and six
 * calls of free(NULL) were 70 instructions of an 8-byte MPI_Allreduce. */
static inline void arrays_free(struct arrays *a)
{
    for (int i = 0; i < 2; i++) {
        if (a->counts[i] != NULL)
            free(a->counts[i]);
        if (a->displs[i] != NULL)
            free(a->displs[i]);
        if (a->types[i] != NULL)
            free(a->types[i]);
    }
}

/* counts[k] from n entries of src (int or MPI_Count); MPI_ERR_COUNT if negative. */
static int get_counts(const char *fn, const char *name, const void *src, bool large, int n,
                      struct arrays *a, int k)
{
    if (src == NULL && n > 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, name);
    a->counts[k] = malloc(((size_t)n + 1) * sizeof(MPI_Count));
    if (a->counts[k] == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        MPI_Count v = large ? ((const MPI_Count *)src)[i] : ((const int *)src)[i];
        if (v < 0)
            return cdn_err(MPI_ERR_COUNT, "%s: %s[%d] = %lld is negative", fn, name, i,
                           (long long)v);
        a->counts[k][i] = v;
    }
    return MPI_SUCCESS;
}

/* displs[k] = src[i] * scale (src int or MPI_Aint). */
static int get_displs(const char *fn, const char *name, const void *src, bool large, int n,
                      MPI_Aint scale, struct arrays *a, int k)
{
    if (src == NULL && n > 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, name);
    a->displs[k] = malloc(((size_t)n + 1) * sizeof(MPI_Aint));
    if (a->displs[k] == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < n; i++)
        a->displs[k][i] = (large ? ((const MPI_Aint *)src)[i] : ((const int *)src)[i]) * scale;
    return MPI_SUCCESS;
}

/* n equal counts, displacements i * count * scale. */
static int uniform(const char *fn, MPI_Count count, int n, MPI_Aint scale, struct arrays *a,
                   int k)
{
    a->counts[k] = malloc(((size_t)n + 1) * sizeof(MPI_Count));
    a->displs[k] = malloc(((size_t)n + 1) * sizeof(MPI_Aint));
    if (a->counts[k] == NULL || a->displs[k] == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        a->counts[k][i] = count;
        a->displs[k][i] = (MPI_Aint)(i * count) * scale;
    }
    return MPI_SUCCESS;
}

/* types[k]: n checked types (from an array, or one type repeated). */
static int get_types(const char *fn, const char *name, const MPI_Datatype *src, MPI_Datatype one,
                     int n, const MPI_Count *counts, const void *buf, struct arrays *a, int k)
{
    if (src == NULL && one == MPI_DATATYPE_NULL && n > 0)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", fn, name);
    a->types[k] = malloc(((size_t)n + 1) * sizeof(struct cdn_datatype *));
    if (a->types[k] == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        int rc = check_buf(fn, name, buf, counts[i], src != NULL ? src[i] : one, &a->types[k][i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---- the six forms of a collective ---- */

/* A persistent form: its info argument checked, and its algorithm keys
 * read while the schedule is built (cdn_coll_call_info). */
#define INIT_FORM(func, fn, params, large, body, ...)                                         \
    int func(params, MPI_Info info, MPI_Request *request)                                    \
    {                                                                                        \
        int rc = MPI_SUCCESS;                                                                \
        struct cdn_info *in = cdn_info_arg(info, fn, &rc);                                   \
        if (rc != MPI_SUCCESS)                                                               \
            return rc;                                                                       \
        cdn_coll_call_info(in);                                                              \
        rc = body(fn, __VA_ARGS__, large, F_PERS, request);                                  \
        cdn_coll_call_info(NULL);                                                            \
        return rc;                                                                           \
    }

#define COLL_FORMS(Name, lower, P, ...)                                                       \
    int cdn_MPI_##Name(P(int, int, int))                                                     \
    {                                                                                        \
        return do_##lower("MPI_" #Name, __VA_ARGS__, false, F_BLOCK, NULL);                  \
    }                                                                                        \
    int cdn_MPI_##Name##_c(P(MPI_Count, MPI_Count, MPI_Aint))                                \
    {                                                                                        \
        return do_##lower("MPI_" #Name "_c", __VA_ARGS__, true, F_BLOCK, NULL);              \
    }                                                                                        \
    int cdn_MPI_I##lower(P(int, int, int), MPI_Request *request)                             \
    {                                                                                        \
        return do_##lower("MPI_I" #lower, __VA_ARGS__, false, F_NB, request);                \
    }                                                                                        \
    int cdn_MPI_I##lower##_c(P(MPI_Count, MPI_Count, MPI_Aint), MPI_Request *request)        \
    {                                                                                        \
        return do_##lower("MPI_I" #lower "_c", __VA_ARGS__, true, F_NB, request);            \
    }                                                                                        \
    INIT_FORM(cdn_MPI_##Name##_init, "MPI_" #Name "_init", P(int, int, int), false,          \
              do_##lower, __VA_ARGS__)                                                       \
    INIT_FORM(cdn_MPI_##Name##_init_c, "MPI_" #Name "_init_c",                               \
              P(MPI_Count, MPI_Count, MPI_Aint), true, do_##lower, __VA_ARGS__)

#define TAIL bool large, int form, MPI_Request *request

/* ---- barrier ---- */

static int do_barrier(const char *fn, MPI_Comm comm, int form, MPI_Request *request)
{
    struct cdn_comm *c;
    int rc = begin(fn, comm, form, request, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    return cdn_coll_barrier_call(CALL(fn, c, form, request));
}

int cdn_MPI_Barrier(MPI_Comm comm)
{
    return do_barrier("MPI_Barrier", comm, F_BLOCK, NULL);
}

int cdn_MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    return do_barrier("MPI_Ibarrier", comm, F_NB, request);
}

int cdn_MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    cdn_info_arg(info, "MPI_Barrier_init", &rc);  /* checked; no key applies */
    if (rc != MPI_SUCCESS)
        return rc;
    return do_barrier("MPI_Barrier_init", comm, F_PERS, request);
}

/* ---- bcast ---- */

static int do_bcast(const char *fn, void *buffer, MPI_Count count, MPI_Datatype datatype,
                    int root, MPI_Comm comm, TAIL)
{
    (void)large;
    struct cdn_comm *c;
    struct cdn_datatype *dt;
    int rc = begin(fn, comm, form, request, &c);
    if (rc == MPI_SUCCESS)
        rc = no_in_place(fn, "buffer", buffer);
    if (rc == MPI_SUCCESS)
        rc = check_root(fn, c, root);
    if (rc == MPI_SUCCESS && !(c->inter && root == MPI_PROC_NULL))
        rc = check_buf(fn, "buffer", buffer, count, datatype, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    return cdn_coll_bcast_call(CALL(fn, c, form, request), buffer, count, dt, root);
}
#define BCAST_P(C, CA, D) void *buffer, C count, MPI_Datatype datatype, int root, MPI_Comm comm
COLL_FORMS(Bcast, bcast, BCAST_P, buffer, count, datatype, root, comm)

/* ---- gather(v), scatter(v) ---- */

/* The rooted gather/scatter family: `many` is the root's side (one block
 * per rank), `one` every rank's own block.  gather: many = receive. */
static int do_rooted(const char *fn, bool gather, const void *onebuf, MPI_Count onecount,
                     MPI_Datatype onetype, const void *manybuf, const void *counts,
                     const void *displs, MPI_Count manycount, MPI_Datatype manytype, int root,
                     MPI_Comm comm, TAIL)
{
    struct cdn_comm *c;
    struct cdn_datatype *onedt = NULL, *manydt = NULL;
    struct arrays a = {0};
    int rc = begin(fn, comm, form, request, &c);
    if (rc == MPI_SUCCESS)
        rc = check_root(fn, c, root);
    if (rc != MPI_SUCCESS)
        return rc;
    /* intercommunicator: the root has only the many side, the other group
     * only the one side, MPI_PROC_NULL neither */
    bool at_root = c->inter ? root == MPI_ROOT : c->rank == root;
    bool has_one = c->inter ? root >= 0 : true;
    int nmany = cdn_comm_peer_size(c);
    bool in_place = at_root && onebuf == MPI_IN_PLACE;
    const char *onename = gather ? "sendbuf" : "recvbuf";
    const char *manyname = gather ? "recvbuf" : "sendbuf";
    rc = inter_no_in_place(fn, c, onename, onebuf);
    if (rc == MPI_SUCCESS && !at_root)
        rc = no_in_place(fn, onename, onebuf);
    if (rc == MPI_SUCCESS && has_one && !in_place)
        rc = check_buf(fn, onename, onebuf, onecount, onetype, &onedt);
    if (rc == MPI_SUCCESS && at_root) {
        rc = no_in_place(fn, manyname, manybuf);
        if (rc == MPI_SUCCESS)
            rc = check_buf(fn, manyname, manybuf, counts != NULL ? 0 : manycount, manytype,
                           &manydt);
        if (rc == MPI_SUCCESS && counts == NULL)
            rc = uniform(fn, manycount, nmany, 1, &a, 0);
        else if (rc == MPI_SUCCESS) {
            rc = get_counts(fn, gather ? "recvcounts" : "sendcounts", counts, large, nmany, &a,
                            0);
            if (rc == MPI_SUCCESS)
                rc = get_displs(fn, "displs", displs, large, nmany, 1, &a, 0);
        }
        if (rc == MPI_SUCCESS && !in_place && !c->inter)
            rc = check_aliased(fn, onebuf, manybuf, a.counts[0][root]);
    }
    if (rc == MPI_SUCCESS)
        rc = cdn_coll_rooted_call(CALL(fn, c, form, request), gather, onebuf, onecount, onedt,
                                  (void *)manybuf, a.counts[0], a.displs[0], manydt, root);
    arrays_free(&a);
    return rc;
}

static int do_gather(const char *fn, const void *sendbuf, MPI_Count sendcount,
                     MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm, TAIL)
{
    return do_rooted(fn, true, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount,
                     recvtype, root, comm, large, form, request);
}
#define GATHER_P(C, CA, D)                                                                   \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf, C recvcount,     \
        MPI_Datatype recvtype, int root, MPI_Comm comm
COLL_FORMS(Gather, gather, GATHER_P, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
           root, comm)

static int do_gatherv(const char *fn, const void *sendbuf, MPI_Count sendcount,
                      MPI_Datatype sendtype, void *recvbuf, const void *recvcounts,
                      const void *displs, MPI_Datatype recvtype, int root, MPI_Comm comm, TAIL)
{
    return do_rooted(fn, true, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                     recvtype, root, comm, large, form, request);
}
#define GATHERV_P(C, CA, D)                                                                  \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf,                  \
        const CA recvcounts[], const D displs[], MPI_Datatype recvtype, int root, MPI_Comm comm
COLL_FORMS(Gatherv, gatherv, GATHERV_P, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
           displs, recvtype, root, comm)

static int do_scatter(const char *fn, const void *sendbuf, MPI_Count sendcount,
                      MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm, TAIL)
{
    return do_rooted(fn, false, recvbuf, recvcount, recvtype, sendbuf, NULL, NULL, sendcount,
                     sendtype, root, comm, large, form, request);
}
#define SCATTER_P(C, CA, D)                                                                  \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf, C recvcount,     \
        MPI_Datatype recvtype, int root, MPI_Comm comm
COLL_FORMS(Scatter, scatter, SCATTER_P, sendbuf, sendcount, sendtype, recvbuf, recvcount,
           recvtype, root, comm)

static int do_scatterv(const char *fn, const void *sendbuf, const void *sendcounts,
                       const void *displs, MPI_Datatype sendtype, void *recvbuf,
                       MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                       TAIL)
{
    return do_rooted(fn, false, recvbuf, recvcount, recvtype, sendbuf, sendcounts, displs, 0,
                     sendtype, root, comm, large, form, request);
}
#define SCATTERV_P(C, CA, D)                                                                 \
    const void *sendbuf, const CA sendcounts[], const D displs[], MPI_Datatype sendtype,     \
        void *recvbuf, C recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm
COLL_FORMS(Scatterv, scatterv, SCATTERV_P, sendbuf, sendcounts, displs, sendtype, recvbuf,
           recvcount, recvtype, root, comm)

/* ---- allgather(v) ---- */

static int do_allgather_any(const char *fn, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, const void *recvcounts,
                            const void *displs, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm, TAIL)
{
    struct cdn_comm *c;
    struct cdn_datatype *sdt = NULL, *rdt = NULL;
    struct arrays a = {0};
    int rc = begin(fn, comm, form, request, &c);
    if (rc == MPI_SUCCESS)
        rc = inter_no_in_place(fn, c, "sendbuf", sendbuf);
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        rc = check_buf(fn, "sendbuf", sendbuf, sendcount, sendtype, &sdt);
    if (rc == MPI_SUCCESS)
        rc = no_in_place(fn, "recvbuf", recvbuf);
    if (rc == MPI_SUCCESS)
        rc = check_buf(fn, "recvbuf", recvbuf, recvcounts != NULL ? 0 : recvcount, recvtype,
                       &rdt);
    int p = rc == MPI_SUCCESS ? cdn_comm_peer_size(c) : 0;  /* blocks received */
    if (rc == MPI_SUCCESS && recvcounts == NULL)
        rc = uniform(fn, recvcount, p, 1, &a, 0);
    else if (rc == MPI_SUCCESS) {
        rc = get_counts(fn, "recvcounts", recvcounts, large, p, &a, 0);
        if (rc == MPI_SUCCESS)
            rc = get_displs(fn, "displs", displs, large, p, 1, &a, 0);
    }
    if (rc == MPI_SUCCESS)
        rc = check_aliased(fn, sendbuf, recvbuf, c->inter ? sendcount : a.counts[0][c->rank]);
    if (rc == MPI_SUCCESS)
        rc = cdn_coll_allgatherv_call(CALL(fn, c, form, request), sendbuf, sendcount, sdt,
                                      recvbuf, a.counts[0], a.displs[0], rdt, recvcounts == NULL);
    arrays_free(&a);
    return rc;
}

static int do_allgather(const char *fn, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_allgather_any(fn, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount,
                            recvtype, comm, large, form, request);
}
#define ALLGATHER_P(C, CA, D)                                                                \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf, C recvcount,     \
        MPI_Datatype recvtype, MPI_Comm comm
COLL_FORMS(Allgather, allgather, ALLGATHER_P, sendbuf, sendcount, sendtype, recvbuf, recvcount,
           recvtype, comm)

static int do_allgatherv(const char *fn, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const void *recvcounts,
                         const void *displs, MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_allgather_any(fn, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                            recvtype, comm, large, form, request);
}
#define ALLGATHERV_P(C, CA, D)                                                               \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf,                  \
        const CA recvcounts[], const D displs[], MPI_Datatype recvtype, MPI_Comm comm
COLL_FORMS(Allgatherv, allgatherv, ALLGATHERV_P, sendbuf, sendcount, sendtype, recvbuf,
           recvcounts, displs, recvtype, comm)

/* ---- alltoall(v,w) ---- */

/* kind 0: alltoall (counts are scalars), 1: alltoallv (element
 * displacements), 2: alltoallw (byte displacements, type arrays). */
static int do_alltoall_any(const char *fn, int kind, const void *sendbuf, const void *scounts,
                           MPI_Count scount, const void *sdispls, const MPI_Datatype *stypes,
                           MPI_Datatype stype, void *recvbuf, const void *rcounts,
                           MPI_Count rcount, const void *rdispls, const MPI_Datatype *rtypes,
                           MPI_Datatype rtype, MPI_Comm comm, TAIL)
{
    struct cdn_comm *c;
    struct arrays a = {0};
    int rc = begin(fn, comm, form, request, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    int p = cdn_comm_peer_size(c);
    bool in_place = sendbuf == MPI_IN_PLACE;
    rc = inter_no_in_place(fn, c, "sendbuf", sendbuf);
    if (rc == MPI_SUCCESS)
        rc = no_in_place(fn, "recvbuf", recvbuf);
    struct cdn_coll_key kk, *key = NULL;
    if (rc == MPI_SUCCESS && kind == 0) {
        /* MPI_Alltoall: one count and one type a side, checked once here
         * with the errors the per-peer arrays below would give first; the
         * arrays (six allocations and p type checks, a third of a small
         * MPI_Ialltoall's instructions) are built only for a new schedule. */
        struct cdn_datatype *rdt, *sdt = NULL;
        rc = check_buf(fn, "recvtype", recvbuf, rcount, rtype, &rdt);
        if (rc == MPI_SUCCESS && !in_place)
            rc = check_buf(fn, "sendtype", sendbuf, scount, stype, &sdt);
        if (rc == MPI_SUCCESS && !in_place)
            rc = check_aliased(fn, sendbuf, recvbuf, rcount);
        if (rc != MPI_SUCCESS)
            return rc;
        if (cdn_coll_alltoall_quick(CALL(fn, c, form, request), sendbuf, scount, sdt, recvbuf,
                                    rcount, rdt, &kk, &key, &rc))
            return rc;
    }
    /* receive side */
    if (rc == MPI_SUCCESS && kind == 0)
        rc = uniform(fn, rcount, p, 1, &a, 1);
    else if (rc == MPI_SUCCESS) {
        rc = get_counts(fn, "recvcounts", rcounts, large, p, &a, 1);
        if (rc == MPI_SUCCESS)
            rc = get_displs(fn, "rdispls", rdispls, large, p, 1, &a, 1);
    }
    if (rc == MPI_SUCCESS)
        rc = get_types(fn, "recvtype", rtypes, rtype, p, a.counts[1], recvbuf, &a, 1);
    if (rc == MPI_SUCCESS && kind != 2)  /* element displacements to bytes */
        for (int i = 0; i < p; i++)
            a.displs[1][i] *= cdn_datatype_extent(a.types[1][0]);
    /* send side */
    if (rc == MPI_SUCCESS && !in_place) {
        if (kind == 0)
            rc = uniform(fn, scount, p, 1, &a, 0);
        else {
            rc = get_counts(fn, "sendcounts", scounts, large, p, &a, 0);
            if (rc == MPI_SUCCESS)
                rc = get_displs(fn, "sdispls", sdispls, large, p, 1, &a, 0);
        }
        if (rc == MPI_SUCCESS)
            rc = get_types(fn, "sendtype", stypes, stype, p, a.counts[0], sendbuf, &a, 0);
        if (rc == MPI_SUCCESS && kind != 2)
            for (int i = 0; i < p; i++)
                a.displs[0][i] *= cdn_datatype_extent(a.types[0][0]);
        if (rc == MPI_SUCCESS)
            rc = check_aliased(fn, sendbuf, recvbuf,
                               c->inter ? (p > 0 ? a.counts[1][0] : 0) : a.counts[1][c->rank]);
    }
    if (rc == MPI_SUCCESS)
        rc = cdn_coll_alltoallw_call(CALL(fn, c, form, request), sendbuf, a.counts[0],
                                     a.displs[0], a.types[0], recvbuf, a.counts[1], a.displs[1],
                                     a.types[1], kind == 0, key);
    arrays_free(&a);
    return rc;
}

static int do_alltoall(const char *fn, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_alltoall_any(fn, 0, sendbuf, NULL, sendcount, NULL, NULL, sendtype, recvbuf, NULL,
                           recvcount, NULL, NULL, recvtype, comm, large, form, request);
}
#define ALLTOALL_P(C, CA, D)                                                                 \
    const void *sendbuf, C sendcount, MPI_Datatype sendtype, void *recvbuf, C recvcount,     \
        MPI_Datatype recvtype, MPI_Comm comm
COLL_FORMS(Alltoall, alltoall, ALLTOALL_P, sendbuf, sendcount, sendtype, recvbuf, recvcount,
           recvtype, comm)

static int do_alltoallv(const char *fn, const void *sendbuf, const void *sendcounts,
                        const void *sdispls, MPI_Datatype sendtype, void *recvbuf,
                        const void *recvcounts, const void *rdispls, MPI_Datatype recvtype,
                        MPI_Comm comm, TAIL)
{
    return do_alltoall_any(fn, 1, sendbuf, sendcounts, 0, sdispls, NULL, sendtype, recvbuf,
                           recvcounts, 0, rdispls, NULL, recvtype, comm, large, form, request);
}
#define ALLTOALLV_P(C, CA, D)                                                                \
    const void *sendbuf, const CA sendcounts[], const D sdispls[], MPI_Datatype sendtype,    \
        void *recvbuf, const CA recvcounts[], const D rdispls[], MPI_Datatype recvtype,      \
        MPI_Comm comm
COLL_FORMS(Alltoallv, alltoallv, ALLTOALLV_P, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
           recvcounts, rdispls, recvtype, comm)

static int do_alltoallw(const char *fn, const void *sendbuf, const void *sendcounts,
                        const void *sdispls, const MPI_Datatype *sendtypes, void *recvbuf,
                        const void *recvcounts, const void *rdispls,
                        const MPI_Datatype *recvtypes, MPI_Comm comm, TAIL)
{
    return do_alltoall_any(fn, 2, sendbuf, sendcounts, 0, sdispls, sendtypes, MPI_DATATYPE_NULL,
                           recvbuf, recvcounts, 0, rdispls, recvtypes, MPI_DATATYPE_NULL, comm,
                           large, form, request);
}
#define ALLTOALLW_P(C, CA, D)                                                                \
    const void *sendbuf, const CA sendcounts[], const D sdispls[],                           \
        const MPI_Datatype sendtypes[], void *recvbuf, const CA recvcounts[],                \
        const D rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm
COLL_FORMS(Alltoallw, alltoallw, ALLTOALLW_P, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
           recvcounts, rdispls, recvtypes, comm)

/* ---- reductions ---- */

enum red { R_REDUCE, R_ALLREDUCE, R_SCAN, R_EXSCAN, R_RSB, R_RS };

static int do_reduction(const char *fn, enum red kind, const void *sendbuf, void *recvbuf,
                        MPI_Count count, const void *recvcounts, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm, TAIL)
{
    struct cdn_comm *c;
    struct cdn_datatype *dt = NULL;
    struct cdn_op *o = NULL;
    struct arrays a = {0};
    int rc = begin(fn, comm, form, request, &c);
    if (rc == MPI_SUCCESS && kind == R_REDUCE)
        rc = check_root(fn, c, root);
    if (rc == MPI_SUCCESS && (kind == R_SCAN || kind == R_EXSCAN))
        rc = intra_only(fn, c);
    if (rc == MPI_SUCCESS)
        rc = inter_no_in_place(fn, c, "sendbuf", sendbuf);
    if (rc != MPI_SUCCESS)
        return rc;
    /* recvbuf matters here; sendbuf too, except at an intercommunicator's root */
    bool significant = kind != R_REDUCE || (c->inter ? root == MPI_ROOT : c->rank == root);
    bool contributes = !(c->inter && kind == R_REDUCE && root < 0);
    if (c->inter && kind == R_REDUCE && root == MPI_PROC_NULL)
        significant = false;
    MPI_Count total = count;
    if (kind == R_RS || kind == R_RSB) {
        rc = kind == R_RS ? get_counts(fn, "recvcounts", recvcounts, large, c->size, &a, 0)
                          : uniform(fn, count, c->size, 1, &a, 0);
        total = 0;
        for (int i = 0; rc == MPI_SUCCESS && i < c->size; i++)
            total += a.counts[0][i];
        count = rc == MPI_SUCCESS ? a.counts[0][c->rank] : 0;
    }
    if (rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE && !significant)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is only allowed at the root", fn);
    if (rc == MPI_SUCCESS && significant)
        rc = no_in_place(fn, "recvbuf", recvbuf);
    if (rc == MPI_SUCCESS && contributes)
        rc = check_buf(fn, sendbuf == MPI_IN_PLACE ? "recvbuf" : "sendbuf",
                       sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, total, datatype, &dt);
    if (rc == MPI_SUCCESS && significant && sendbuf != MPI_IN_PLACE)
        rc = check_buf(fn, "recvbuf", recvbuf, count, datatype, &dt);
    if (rc == MPI_SUCCESS && dt != NULL)
        rc = check_op(fn, op, dt, &o);
    if (rc == MPI_SUCCESS && significant && contributes)
        rc = check_aliased(fn, sendbuf, recvbuf, count);
    if (rc == MPI_SUCCESS) {
        static const enum cdn_coll_red red[] = {
            [R_REDUCE] = CDN_RED_REDUCE, [R_ALLREDUCE] = CDN_RED_ALLREDUCE,
            [R_SCAN] = CDN_RED_SCAN,     [R_EXSCAN] = CDN_RED_EXSCAN,
            [R_RSB] = CDN_RED_SCATTER,   [R_RS] = CDN_RED_SCATTER};
        rc = cdn_coll_reduction_call(CALL(fn, c, form, request), red[kind], sendbuf, recvbuf,
                                     count, a.counts[0], dt, o, root);
    }
    arrays_free(&a);
    return rc;
}

static int do_reduce(const char *fn, const void *sendbuf, void *recvbuf, MPI_Count count,
                     MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, TAIL)
{
    return do_reduction(fn, R_REDUCE, sendbuf, recvbuf, count, NULL, datatype, op, root, comm,
                        large, form, request);
}
#define REDUCE_P(C, CA, D)                                                                   \
    const void *sendbuf, void *recvbuf, C count, MPI_Datatype datatype, MPI_Op op, int root, \
        MPI_Comm comm
COLL_FORMS(Reduce, reduce, REDUCE_P, sendbuf, recvbuf, count, datatype, op, root, comm)

#define RED_FAMILY(Name, lower, KIND)                                                        \
    static int do_##lower(const char *fn, const void *sendbuf, void *recvbuf,               \
                          MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,  \
                          TAIL)                                                              \
    {                                                                                        \
        return do_reduction(fn, KIND, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm,  \
                            large, form, request);                                           \
    }
#define ALLRED_P(C, CA, D)                                                                   \
    const void *sendbuf, void *recvbuf, C count, MPI_Datatype datatype, MPI_Op op,           \
        MPI_Comm comm
RED_FAMILY(Allreduce, allreduce, R_ALLREDUCE)
COLL_FORMS(Allreduce, allreduce, ALLRED_P, sendbuf, recvbuf, count, datatype, op, comm)
RED_FAMILY(Scan, scan, R_SCAN)
COLL_FORMS(Scan, scan, ALLRED_P, sendbuf, recvbuf, count, datatype, op, comm)
RED_FAMILY(Exscan, exscan, R_EXSCAN)
COLL_FORMS(Exscan, exscan, ALLRED_P, sendbuf, recvbuf, count, datatype, op, comm)
RED_FAMILY(Reduce_scatter_block, reduce_scatter_block, R_RSB)
#define RSB_P(C, CA, D)                                                                      \
    const void *sendbuf, void *recvbuf, C recvcount, MPI_Datatype datatype, MPI_Op op,       \
        MPI_Comm comm
COLL_FORMS(Reduce_scatter_block, reduce_scatter_block, RSB_P, sendbuf, recvbuf, recvcount,
           datatype, op, comm)

static int do_reduce_scatter(const char *fn, const void *sendbuf, void *recvbuf,
                             const void *recvcounts, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm, TAIL)
{
    return do_reduction(fn, R_RS, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm, large,
                        form, request);
}
#define RS_P(C, CA, D)                                                                       \
    const void *sendbuf, void *recvbuf, const CA recvcounts[], MPI_Datatype datatype,       \
        MPI_Op op, MPI_Comm comm
COLL_FORMS(Reduce_scatter, reduce_scatter, RS_P, sendbuf, recvbuf, recvcounts, datatype, op,
           comm)

/* ---- neighbourhood collectives ---- */

/* kind: 0 allgather, 1 allgatherv, 2 alltoall, 3 alltoallv, 4 alltoallw
 * (byte displacements as MPI_Aint in both forms). */
static int do_neighbor(const char *fn, int kind, const void *sendbuf, const void *scounts,
                       MPI_Count scount, const void *sdispls, const MPI_Datatype *stypes,
                       MPI_Datatype stype, void *recvbuf, const void *rcounts, MPI_Count rcount,
                       const void *rdispls, const MPI_Datatype *rtypes, MPI_Datatype rtype,
                       MPI_Comm comm, TAIL)
{
    struct cdn_comm *c;
    struct arrays a = {0};
    int rc = begin(fn, comm, form, request, &c);
    if (rc == MPI_SUCCESS)
        rc = intra_only(fn, c);
    if (rc != MPI_SUCCESS)
        return rc;
    int indeg, outdeg;
    const int *srcs, *dsts;
    if (cdn_comm_neighbors(c, &indeg, &srcs, &outdeg, &dsts) != MPI_SUCCESS)
        return cdn_err(MPI_ERR_TOPOLOGY, "%s: the communicator has no process topology", fn);
    rc = no_in_place(fn, "sendbuf", sendbuf);
    if (rc == MPI_SUCCESS)
        rc = no_in_place(fn, "recvbuf", recvbuf);
    /* receive side: one block per source */
    if (rc == MPI_SUCCESS && (kind == 0 || kind == 2))
        rc = uniform(fn, rcount, indeg, 1, &a, 1);
    else if (rc == MPI_SUCCESS) {
        rc = get_counts(fn, "recvcounts", rcounts, large, indeg, &a, 1);
        if (rc == MPI_SUCCESS)
            rc = get_displs(fn, "rdispls", rdispls, large || kind == 4, indeg, 1, &a, 1);
    }
    if (rc == MPI_SUCCESS)
        rc = get_types(fn, "recvtype", rtypes, rtype, indeg, a.counts[1], recvbuf, &a, 1);
    if (rc == MPI_SUCCESS && kind != 4)
        for (int i = 0; i < indeg; i++)
            a.displs[1][i] *= cdn_datatype_extent(a.types[1][0]);
    /* send side: one block per destination (allgather: the same block) */
    if (rc == MPI_SUCCESS && (kind == 0 || kind == 1))
        rc = uniform(fn, scount, outdeg, 0, &a, 0);
    else if (rc == MPI_SUCCESS && kind == 2)
        rc = uniform(fn, scount, outdeg, 1, &a, 0);
    else if (rc == MPI_SUCCESS) {
        rc = get_counts(fn, "sendcounts", scounts, large, outdeg, &a, 0);
        if (rc == MPI_SUCCESS)
            rc = get_displs(fn, "sdispls", sdispls, large || kind == 4, outdeg, 1, &a, 0);
    }
    if (rc == MPI_SUCCESS)
        rc = get_types(fn, "sendtype", stypes, stype, outdeg, a.counts[0], sendbuf, &a, 0);
    if (rc == MPI_SUCCESS && kind != 4)
        for (int i = 0; i < outdeg; i++)
            a.displs[0][i] *= cdn_datatype_extent(a.types[0][0]);
    if (rc == MPI_SUCCESS)
        rc = cdn_coll_neighbor_call(CALL(fn, c, form, request), indeg, srcs, outdeg, dsts,
                                    sendbuf, a.counts[0], a.displs[0], a.types[0], recvbuf,
                                    a.counts[1], a.displs[1], a.types[1]);
    arrays_free(&a);
    return rc;
}

static int do_neighbor_allgather(const char *fn, const void *sendbuf, MPI_Count sendcount,
                                 MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                 MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_neighbor(fn, 0, sendbuf, NULL, sendcount, NULL, NULL, sendtype, recvbuf, NULL,
                       recvcount, NULL, NULL, recvtype, comm, large, form, request);
}
COLL_FORMS(Neighbor_allgather, neighbor_allgather, ALLGATHER_P, sendbuf, sendcount, sendtype,
           recvbuf, recvcount, recvtype, comm)

static int do_neighbor_allgatherv(const char *fn, const void *sendbuf, MPI_Count sendcount,
                                  MPI_Datatype sendtype, void *recvbuf, const void *recvcounts,
                                  const void *displs, MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_neighbor(fn, 1, sendbuf, NULL, sendcount, NULL, NULL, sendtype, recvbuf,
                       recvcounts, 0, displs, NULL, recvtype, comm, large, form, request);
}
COLL_FORMS(Neighbor_allgatherv, neighbor_allgatherv, ALLGATHERV_P, sendbuf, sendcount, sendtype,
           recvbuf, recvcounts, displs, recvtype, comm)

static int do_neighbor_alltoall(const char *fn, const void *sendbuf, MPI_Count sendcount,
                                MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_neighbor(fn, 2, sendbuf, NULL, sendcount, NULL, NULL, sendtype, recvbuf, NULL,
                       recvcount, NULL, NULL, recvtype, comm, large, form, request);
}
COLL_FORMS(Neighbor_alltoall, neighbor_alltoall, ALLTOALL_P, sendbuf, sendcount, sendtype,
           recvbuf, recvcount, recvtype, comm)

static int do_neighbor_alltoallv(const char *fn, const void *sendbuf, const void *sendcounts,
                                 const void *sdispls, MPI_Datatype sendtype, void *recvbuf,
                                 const void *recvcounts, const void *rdispls,
                                 MPI_Datatype recvtype, MPI_Comm comm, TAIL)
{
    return do_neighbor(fn, 3, sendbuf, sendcounts, 0, sdispls, NULL, sendtype, recvbuf,
                       recvcounts, 0, rdispls, NULL, recvtype, comm, large, form, request);
}
COLL_FORMS(Neighbor_alltoallv, neighbor_alltoallv, ALLTOALLV_P, sendbuf, sendcounts, sdispls,
           sendtype, recvbuf, recvcounts, rdispls, recvtype, comm)

static int do_neighbor_alltoallw(const char *fn, const void *sendbuf, const void *sendcounts,
                                 const void *sdispls, const MPI_Datatype *sendtypes,
                                 void *recvbuf, const void *recvcounts, const void *rdispls,
                                 const MPI_Datatype *recvtypes, MPI_Comm comm, TAIL)
{
    return do_neighbor(fn, 4, sendbuf, sendcounts, 0, sdispls, sendtypes, MPI_DATATYPE_NULL,
                       recvbuf, recvcounts, 0, rdispls, recvtypes, MPI_DATATYPE_NULL, comm,
                       large, form, request);
}
#define NALLTOALLW_P(C, CA, D)                                                               \
    const void *sendbuf, const CA sendcounts[], const MPI_Aint sdispls[],                    \
        const MPI_Datatype sendtypes[], void *recvbuf, const CA recvcounts[],                \
        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm
COLL_FORMS(Neighbor_alltoallw, neighbor_alltoallw, NALLTOALLW_P, sendbuf, sendcounts, sdispls,
           sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm)
