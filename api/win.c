/*
 * Bindings of window objects (MPI-4.1 12.2, 12.6, 7.7): the four creating
 * calls, MPI_Win_free, group, name, info, MPI_Win_shared_query, window
 * keyvals and attributes (with the predefined MPI_WIN_BASE, _SIZE,
 * _DISP_UNIT, _CREATE_FLAVOR, _MODEL) and window error handlers.
 *
 * An error on a valid window goes to the window's handler (the generated
 * entry point raises on the first MPI_Win argument); an invalid window
 * goes to MPI_COMM_WORLD's, as an invalid communicator does.  Errors of the
 * creating calls go to the communicator's handler, those of MPI_Win_free
 * (whose argument is a pointer) to MPI_COMM_SELF's, like MPI_Comm_free.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/group.h"
#include "runtime/handle.h"
#include "runtime/info.h"
#include "runtime/win.h"
#include "coll/coll.h"
#include "progress/request.h"
#include "progress/rma.h"
#include "runtime/datatype.h"
#include "runtime/op.h"

static struct cdn_win *win_arg(MPI_Win win, const char *caller, int *rc)
{
    struct cdn_win *w = cdn_win_get(win);
    *rc = MPI_SUCCESS;
    if (w == NULL)
        *rc = cdn_err(MPI_ERR_WIN, "%s: 0x%x is not a valid window%s", caller, (unsigned)win,
                      win == MPI_WIN_NULL ? " (MPI_WIN_NULL)" : "");
    return w;
}

#define WIN_ARG(var, handle, caller)                      \
    int rc;                                               \
    struct cdn_win *var = win_arg(handle, caller, &rc);   \
    if (var == NULL)                                      \
        return rc

/* ---- creation ---- */

/* The arguments every creating call shares; *c and a->info on success. */
static int create_args(MPI_Comm comm, MPI_Info info, MPI_Win *win, struct cdn_win_args *a,
                       struct cdn_comm **c, const char *caller)
{
    int rc = MPI_SUCCESS;
    *c = cdn_api_comm(comm, caller, &rc);
    if (*c == NULL)
        return rc;
    if ((*c)->inter)
        return cdn_err(MPI_ERR_COMM, "%s: windows are made over intracommunicators; 0x%x is an "
                       "intercommunicator", caller, (unsigned)comm);
    if (win == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: win is NULL", caller);
    if (a->size < 0)
        return cdn_err(MPI_ERR_SIZE, "%s: size %ld is negative", caller, (long)a->size);
    if (a->disp_unit <= 0)
        return cdn_err(MPI_ERR_DISP, "%s: disp_unit %ld is not positive", caller,
                       (long)a->disp_unit);
    if (a->disp_unit > INT_MAX)  /* MPI_WIN_DISP_UNIT is read as an int (MPI-4.1 12.2.6) */
        return cdn_err(MPI_ERR_DISP, "%s: disp_unit %ld does not fit the int of the "
                       "MPI_WIN_DISP_UNIT attribute", caller, (long)a->disp_unit);
    a->info = cdn_info_arg(info, caller, &rc);
    return rc;
}

/* Check, build, hand out the handle (and the base to baseptr if given). */
static int create(MPI_Comm comm, MPI_Info info, struct cdn_win_args *a, void *baseptr,
                  MPI_Win *win, const char *caller)
{
    struct cdn_comm *c;
    int rc = create_args(comm, info, win, a, &c, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    if (a->flavor == MPI_WIN_FLAVOR_CREATE && a->base == NULL && a->size > 0)
        return cdn_err(MPI_ERR_ARG, "%s: base is NULL but size is %ld", caller, (long)a->size);
    if ((a->flavor == MPI_WIN_FLAVOR_ALLOCATE || a->flavor == MPI_WIN_FLAVOR_SHARED) &&
        baseptr == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: baseptr is NULL", caller);
    struct cdn_win *w;
    rc = cdn_win_create(c, a, &w, caller);
    if (rc != MPI_SUCCESS)
        return rc;
    *win = w->handle;
    if (baseptr != NULL)
        *(void **)baseptr = w->base;
    return MPI_SUCCESS;
}

int cdn_MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                       MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_CREATE, base, size, disp_unit, NULL};
    return create(comm, info, &a, NULL, win, "MPI_Win_create");
}

int cdn_MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                         MPI_Comm comm, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_CREATE, base, size, disp_unit, NULL};
    return create(comm, info, &a, NULL, win, "MPI_Win_create_c");
}

int cdn_MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                         void *baseptr, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_ALLOCATE, NULL, size, disp_unit, NULL};
    return create(comm, info, &a, baseptr, win, "MPI_Win_allocate");
}

int cdn_MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                           void *baseptr, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_ALLOCATE, NULL, size, disp_unit, NULL};
    return create(comm, info, &a, baseptr, win, "MPI_Win_allocate_c");
}

int cdn_MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                void *baseptr, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_SHARED, NULL, size, disp_unit, NULL};
    return create(comm, info, &a, baseptr, win, "MPI_Win_allocate_shared");
}

int cdn_MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                                  MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_SHARED, NULL, size, disp_unit, NULL};
    return create(comm, info, &a, baseptr, win, "MPI_Win_allocate_shared_c");
}

int cdn_MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    struct cdn_win_args a = {MPI_WIN_FLAVOR_DYNAMIC, NULL, 0, 1, NULL};
    return create(comm, info, &a, NULL, win, "MPI_Win_create_dynamic");
}

int cdn_MPI_Win_free(MPI_Win *win)
{
    if (win == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Win_free: win is NULL");
    WIN_ARG(w, *win, "MPI_Win_free");
    if (w->nlocks > 0 || w->rma_epoch == CDN_RMA_LOCK_ALL || w->rma_epoch == CDN_RMA_PSCW ||
        w->exposure != 0)
        return cdn_err(MPI_ERR_RMA_SYNC, "MPI_Win_free: an epoch is open on the window (unlock "
                       "it, or close the PSCW epoch with MPI_Win_complete or MPI_Win_wait, "
                       "first)");
    /* A barrier, as the standard asks: nobody's memory goes while another
     * process may still reach it (a lock request on its way, a load from
     * a mapped part). */
    cdn_rma_quiesce(w);
    if ((rc = cdn_coll_barrier_direct("MPI_Win_free", w->comm)) != MPI_SUCCESS)
        return rc;
    /* Delete callbacks see the window still valid (MPI-4.1 7.7.3). */
    rc = cdn_attr_delete_all(&w->attrs, *win, "MPI_Win_free");
    cdn_win_unpublish(w);
    *win = MPI_WIN_NULL;
    return rc;
}

/* ---- queries ---- */

int cdn_MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    WIN_ARG(w, win, "MPI_Win_get_group");
    if (group == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Win_get_group: group is NULL");
    const struct cdn_group *g = w->comm->group;
    struct cdn_group *copy = cdn_group_from(g->size, g->world);
    if (copy == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Win_get_group: out of memory");
    cdn_group_locate(copy);
    return cdn_group_publish(copy, group, "MPI_Win_get_group");
}

int cdn_MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    static pthread_mutex_t none = PTHREAD_MUTEX_INITIALIZER;
    if (win == MPI_WIN_NULL)  /* MPI-4.1 7.8: the null handle has a name too */
        return cdn_api_name_get(&none, "MPI_WIN_NULL", win_name, resultlen, "win_name",
                                "MPI_Win_get_name");
    WIN_ARG(w, win, "MPI_Win_get_name");
    return cdn_api_name_get(&w->lock, w->name, win_name, resultlen, "win_name",
                            "MPI_Win_get_name");
}

int cdn_MPI_Win_set_name(MPI_Win win, const char *win_name)
{
    WIN_ARG(w, win, "MPI_Win_set_name");
    return cdn_api_name_set(&w->lock, w->name, win_name, "win_name", "MPI_Win_set_name");
}

int cdn_MPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    WIN_ARG(w, win, "MPI_Win_set_info");
    struct cdn_info *in = cdn_info_arg(info, "MPI_Win_set_info", &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    if (in != NULL && cdn_win_apply_info(w, in) != MPI_SUCCESS)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Win_set_info: out of memory");
    return MPI_SUCCESS;
}

int cdn_MPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    WIN_ARG(w, win, "MPI_Win_get_info");
    return cdn_info_publish_copy(w->info, &w->lock, info_used, "MPI_Win_get_info");
}

/* The part of `rank` as this process can load and store it (MPI-4.1
 * 12.2.3).  Shared windows: every part, MPI_PROC_NULL the lowest rank with
 * a non-empty part.  Windows of MPI_Win_create / MPI_Win_allocate: only
 * this process's own part is in its reach (their memory is private), any
 * other answers size 0 and a NULL base, MPI_PROC_NULL this process's part
 * when it is not empty.  Dynamic windows cannot be queried. */
static int shared_query(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                        void *baseptr, const char *caller)
{
    WIN_ARG(w, win, caller);
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return cdn_err(MPI_ERR_RMA_FLAVOR, "%s: the window was made by MPI_Win_create_dynamic, "
                       "which cannot be queried", caller);
    if (size == NULL || disp_unit == NULL || baseptr == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller,
                       size == NULL ? "size" : disp_unit == NULL ? "disp_unit" : "baseptr");
    int n = w->comm->size, me = w->comm->rank;
    bool shared = w->flavor == MPI_WIN_FLAVOR_SHARED;
    if (rank == MPI_PROC_NULL) {
        if (shared)
            for (rank = 0; rank < n && w->parts[rank].size == 0; rank++)
                ;
        else
            rank = w->parts[me].size > 0 ? me : n;
        if (rank == n) {  /* every part in reach is empty */
            *size = 0;
            *disp_unit = w->parts[shared ? 0 : me].disp_unit;
            *(void **)baseptr = NULL;
            return MPI_SUCCESS;
        }
    } else if (rank < 0 || rank >= n) {
        return cdn_err(MPI_ERR_RANK, "%s: rank %d is not in 0..%d nor MPI_PROC_NULL", caller,
                       rank, n - 1);
    }
    bool reach = shared || rank == me;
    *size = reach ? w->parts[rank].size : 0;
    *disp_unit = w->parts[rank].disp_unit;
    *(void **)baseptr = reach ? w->parts[rank].base : NULL;
    return MPI_SUCCESS;
}

int cdn_MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                             void *baseptr)
{
    MPI_Aint du = 0;
    int rc = shared_query(win, rank, size, disp_unit != NULL ? &du : NULL, baseptr,
                          "MPI_Win_shared_query");
    if (rc == MPI_SUCCESS)
        *disp_unit = (int)du;  /* creation kept every disp_unit within int */
    return rc;
}

int cdn_MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                               void *baseptr)
{
    return shared_query(win, rank, size, disp_unit, baseptr, "MPI_Win_shared_query_c");
}

/* ---- keyvals and attributes ---- */

static bool is_predefined(int keyval)
{
    return keyval == MPI_WIN_BASE || keyval == MPI_WIN_SIZE || keyval == MPI_WIN_DISP_UNIT ||
           keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL;
}

int cdn_MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn,
                              MPI_Win_delete_attr_function *delete_fn, int *keyval,
                              void *extra_state)
{
    return cdn_keyval_create(CDN_ATTR_WIN, copy_fn, delete_fn, extra_state, keyval,
                             "MPI_Win_create_keyval");
}

int cdn_MPI_Win_free_keyval(int *keyval)
{
    if (keyval != NULL && is_predefined(*keyval))
        return cdn_err(MPI_ERR_KEYVAL, "MPI_Win_free_keyval: keyval 0x%x is predefined and "
                       "cannot be freed", (unsigned)*keyval);
    return cdn_keyval_free(CDN_ATTR_WIN, keyval, "MPI_Win_free_keyval");
}

/* A predefined attribute cannot be set or deleted (MPI-4.1 12.2.6). */
static int not_predefined(int keyval, const char *what, const char *caller)
{
    if (is_predefined(keyval))
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x is a predefined window attribute, which "
                       "cannot be %s", caller, (unsigned)keyval, what);
    return MPI_SUCCESS;
}

int cdn_MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    WIN_ARG(w, win, "MPI_Win_set_attr");
    if ((rc = not_predefined(win_keyval, "set", "MPI_Win_set_attr")) != MPI_SUCCESS)
        return rc;
    return cdn_attr_set(&w->attrs, CDN_ATTR_WIN, win, win_keyval, attribute_val,
                        "MPI_Win_set_attr");
}

int cdn_MPI_Win_delete_attr(MPI_Win win, int win_keyval)
{
    WIN_ARG(w, win, "MPI_Win_delete_attr");
    if ((rc = not_predefined(win_keyval, "deleted", "MPI_Win_delete_attr")) != MPI_SUCCESS)
        return rc;
    return cdn_attr_delete(&w->attrs, CDN_ATTR_WIN, win, win_keyval, "MPI_Win_delete_attr");
}

int cdn_MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    WIN_ARG(w, win, "MPI_Win_get_attr");
    if (!is_predefined(win_keyval))
        return cdn_attr_get(&w->attrs, CDN_ATTR_WIN, win_keyval, attribute_val, flag,
                            "MPI_Win_get_attr");
    if (attribute_val == NULL || flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Win_get_attr: %s is NULL",
                       flag == NULL ? "flag" : "attribute_val");
    /* MPI_WIN_BASE is the base itself; the others point at the value. */
    void *v;
    switch (win_keyval) {
    case MPI_WIN_BASE: v = w->base; break;
    case MPI_WIN_SIZE: v = &w->size; break;
    case MPI_WIN_DISP_UNIT: v = &w->disp_unit; break;
    case MPI_WIN_CREATE_FLAVOR: v = &w->flavor; break;
    default: v = &w->model; break;
    }
    *(void **)attribute_val = v;
    *flag = 1;
    return MPI_SUCCESS;
}

/* ---- error handlers ---- */

int cdn_MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    WIN_ARG(w, win, "MPI_Win_set_errhandler");
    struct cdn_errhandler *eh;
    if ((rc = cdn_errh_arg(errhandler, CDN_OBJ_WIN, &eh, "MPI_Win_set_errhandler")) != MPI_SUCCESS)
        return rc;
    cdn_win_set_errh(w, eh);
    return MPI_SUCCESS;
}

int cdn_MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    WIN_ARG(w, win, "MPI_Win_get_errhandler");
    return cdn_errh_hand_out(cdn_win_errh(w), errhandler, "MPI_Win_get_errhandler");
}

int cdn_MPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    WIN_ARG(w, win, "MPI_Win_call_errhandler");
    /* MPI_SUCCESS once the handler returns (MPI-4.1 9.5) */
    cdn_errh_invoke(cdn_win_errh(w), CDN_OBJ_WIN, &win, errorcode);
    return MPI_SUCCESS;
}

/* ---- one-sided communication (progress/rma.c) ---- */

/* The result side of MPI_Get_accumulate (NULL: another operation). */
struct result {
    void *addr;
    MPI_Count count;
    MPI_Datatype type;
};

/* Check an operation's arguments and start it. */
static int rma(MPI_Win win, enum cdn_rma_kind kind, const void *oaddr, MPI_Count ocount,
               MPI_Datatype otype, const struct result *res, int trank, MPI_Aint tdisp,
               MPI_Count tcount, MPI_Datatype ttype, MPI_Op op, MPI_Request *request,
               const char *caller)
{
    WIN_ARG(w, win, caller);
    if (request != NULL)
        *request = MPI_REQUEST_NULL;
    if (ocount < 0 || tcount < 0 || (res != NULL && res->count < 0))
        return cdn_err(MPI_ERR_COUNT, "%s: %s_count %lld is negative", caller,
                       ocount < 0 ? "origin" : tcount < 0 ? "target" : "result",
                       (long long)(ocount < 0 ? ocount : tcount < 0 ? tcount : res->count));
    struct cdn_rma_args a = {.oaddr = (void *)oaddr, .ocount = ocount, .trank = trank,
                             .tdisp = tdisp, .tcount = tcount};
    bool acc = kind == CDN_RMA_ACC || kind == CDN_RMA_GACC;
    /* (a get-accumulate with MPI_NO_OP ignores the origin, whatever its type) */
    bool no_origin = kind == CDN_RMA_GACC && op == MPI_NO_OP;
    if ((rc = cdn_datatype_check(ttype, caller, &a.tdt)) != MPI_SUCCESS ||
        (rc = cdn_datatype_check(no_origin ? ttype : otype, caller, &a.odt)) != MPI_SUCCESS)
        return rc;
    if (res != NULL) {
        a.raddr = res->addr;
        a.rcount = res->count;
        if ((rc = cdn_datatype_check(res->type, caller, &a.rdt)) != MPI_SUCCESS)
            return rc;
    }
    if (acc && (rc = cdn_op_check(op, a.tdt, true, caller, &a.op)) != MPI_SUCCESS)
        return rc;
    if (acc && !a.op->builtin)
        return cdn_err(MPI_ERR_OP, "%s: an accumulate takes a predefined op, not a user's",
                       caller);
    if (kind == CDN_RMA_GACC && op == MPI_NO_OP)
        a.ocount = 0;  /* (the origin buffer is not read) */
    struct cdn_request *r = NULL;
    if (request != NULL)
        a.req = &r;
    rc = cdn_rma_op(w, kind, &a, caller);
    if (r != NULL)
        *request = cdn_request_publish(r);
    return rc;
}

int cdn_MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                  int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                  MPI_Datatype target_datatype, MPI_Win win)
{
    return rma(win, CDN_RMA_PUT, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, MPI_OP_NULL, NULL, "MPI_Put");
}

int cdn_MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                int target_rank, MPI_Aint target_disp, int target_count,
                MPI_Datatype target_datatype, MPI_Win win)
{
    return cdn_MPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win);
}

int cdn_MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                  int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                  MPI_Datatype target_datatype, MPI_Win win)
{
    return rma(win, CDN_RMA_GET, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, MPI_OP_NULL, NULL, "MPI_Get");
}

int cdn_MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                int target_rank, MPI_Aint target_disp, int target_count,
                MPI_Datatype target_datatype, MPI_Win win)
{
    return cdn_MPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win);
}

int cdn_MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win win)
{
    return rma(win, CDN_RMA_ACC, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, op, NULL, "MPI_Accumulate");
}

int cdn_MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    return cdn_MPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win);
}

int cdn_MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                             MPI_Datatype origin_datatype, void *result_addr,
                             MPI_Count result_count, MPI_Datatype result_datatype,
                             int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                             MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    struct result r = {result_addr, result_count, result_datatype};
    return rma(win, CDN_RMA_GACC, origin_addr, origin_count, origin_datatype, &r, target_rank,
               target_disp, target_count, target_datatype, op, NULL, "MPI_Get_accumulate");
}

int cdn_MPI_Get_accumulate(const void *origin_addr, int origin_count,
                           MPI_Datatype origin_datatype, void *result_addr, int result_count,
                           MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                           int target_count, MPI_Datatype target_datatype, MPI_Op op,
                           MPI_Win win)
{
    return cdn_MPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                    result_count, result_datatype, target_rank, target_disp,
                                    target_count, target_datatype, op, win);
}

int cdn_MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                   MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Rput: request is NULL");
    return rma(win, CDN_RMA_PUT, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, MPI_OP_NULL, request, "MPI_Rput");
}

int cdn_MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                 int target_rank, MPI_Aint target_disp, int target_count,
                 MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    return cdn_MPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win, request);
}

int cdn_MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                   MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Rget: request is NULL");
    return rma(win, CDN_RMA_GET, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, MPI_OP_NULL, request, "MPI_Rget");
}

int cdn_MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                 int target_rank, MPI_Aint target_disp, int target_count,
                 MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    return cdn_MPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win, request);
}

int cdn_MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Raccumulate: request is NULL");
    return rma(win, CDN_RMA_ACC, origin_addr, origin_count, origin_datatype, NULL, target_rank,
               target_disp, target_count, target_datatype, op, request, "MPI_Raccumulate");
}

int cdn_MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request)
{
    return cdn_MPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                 target_disp, target_count, target_datatype, op, win, request);
}

int cdn_MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                              MPI_Datatype origin_datatype, void *result_addr,
                              MPI_Count result_count, MPI_Datatype result_datatype,
                              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                              MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                              MPI_Request *request)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Rget_accumulate: request is NULL");
    struct result r = {result_addr, result_count, result_datatype};
    return rma(win, CDN_RMA_GACC, origin_addr, origin_count, origin_datatype, &r, target_rank,
               target_disp, target_count, target_datatype, op, request, "MPI_Rget_accumulate");
}

int cdn_MPI_Rget_accumulate(const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, void *result_addr, int result_count,
                            MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, MPI_Request *request)
{
    return cdn_MPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                     result_count, result_datatype, target_rank, target_disp,
                                     target_count, target_datatype, op, win, request);
}

int cdn_MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                         int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    struct result r = {result_addr, 1, datatype};
    return rma(win, CDN_RMA_GACC, origin_addr, 1, datatype, &r, target_rank, target_disp, 1,
               datatype, op, NULL, "MPI_Fetch_and_op");
}

int cdn_MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                             void *result_addr, MPI_Datatype datatype, int target_rank,
                             MPI_Aint target_disp, MPI_Win win)
{
    const char *fn = "MPI_Compare_and_swap";
    WIN_ARG(w, win, fn);
    struct cdn_datatype *dt;
    if ((rc = cdn_datatype_check(datatype, fn, &dt)) != MPI_SUCCESS)
        return rc;
    if (cdn_datatype_basic(dt) != datatype || cdn_datatype_size(dt) == 0)
        return cdn_err(MPI_ERR_TYPE, "%s: the datatype must be a predefined one", fn);
    return cdn_rma_cas(w, origin_addr, compare_addr, result_addr, dt, target_rank, target_disp,
                       fn);
}

int cdn_MPI_Win_fence(int assert, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_fence");
    const int known = MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE |
                      MPI_MODE_NOSUCCEED;
    if ((assert & ~known) != 0)
        return cdn_err(MPI_ERR_ASSERT, "MPI_Win_fence: assert 0x%x has bits no fence takes "
                       "(MPI_MODE_NOSTORE, _NOPUT, _NOPRECEDE, _NOSUCCEED)", (unsigned)assert);
    if ((rc = cdn_rma_fence_check(w, "MPI_Win_fence")) != MPI_SUCCESS)
        return rc;
    /* Our operations of the epoch have taken effect at their targets once
     * they are all answered; after the barrier everybody's have. */
    cdn_rma_quiesce(w);
    w->fence_ops = false;
    rc = cdn_coll_barrier_direct("MPI_Win_fence", w->comm);
    if (rc == MPI_SUCCESS)
        rc = cdn_rma_failed(w, "MPI_Win_fence");
    if (rc != MPI_SUCCESS)
        return rc;
    w->rma_epoch = (assert & MPI_MODE_NOSUCCEED) ? CDN_RMA_NONE : CDN_RMA_FENCE;
    return MPI_SUCCESS;
}

int cdn_MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_lock");
    return cdn_rma_lock(w, lock_type, rank, assert, "MPI_Win_lock");
}

int cdn_MPI_Win_unlock(int rank, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_unlock");
    return cdn_rma_unlock(w, rank, "MPI_Win_unlock");
}

int cdn_MPI_Win_lock_all(int assert, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_lock_all");
    return cdn_rma_lock_all(w, assert, "MPI_Win_lock_all");
}

int cdn_MPI_Win_unlock_all(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_unlock_all");
    return cdn_rma_unlock_all(w, "MPI_Win_unlock_all");
}

/* The flushes: an operation is complete at its origin only when it is
 * complete at its target (the answers say so), so the local forms are the
 * same as the others. */
int cdn_MPI_Win_flush(int rank, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_flush");
    return cdn_rma_flush(w, rank < 0 ? -2 : rank, "MPI_Win_flush");
}

int cdn_MPI_Win_flush_local(int rank, MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_flush_local");
    return cdn_rma_flush(w, rank < 0 ? -2 : rank, "MPI_Win_flush_local");
}

int cdn_MPI_Win_flush_all(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_flush_all");
    return cdn_rma_flush(w, -1, "MPI_Win_flush_all");
}

int cdn_MPI_Win_flush_local_all(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_flush_local_all");
    return cdn_rma_flush(w, -1, "MPI_Win_flush_local_all");
}

/* The unified memory model: public and private copies are one; a full
 * fence orders this process's loads and stores around the call. */
int cdn_MPI_Win_sync(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_sync");
    (void)w;
    atomic_thread_fence(memory_order_seq_cst);
    return MPI_SUCCESS;
}

/* ---- PSCW ---- */

/* The window ranks of group's members (*out: n of them, malloc'd; NULL
 * when n is 0), or an error naming a member outside the window. */
static int group_ranks(struct cdn_win *w, MPI_Group group, int **out, int *n, const char *caller)
{
    struct cdn_group *g = cdn_group_get(group);
    *out = NULL;
    *n = 0;
    if (g == NULL)
        return cdn_err(MPI_ERR_GROUP, "%s: 0x%x is not a valid group", caller, (unsigned)group);
    if (g->size == 0)
        return MPI_SUCCESS;
    int *r = malloc(sizeof *r * (size_t)g->size);
    if (r == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    for (int i = 0; i < g->size; i++) {
        r[i] = cdn_group_rank_of(w->comm->group, g->world[i]);
        if (r[i] == MPI_UNDEFINED) {
            free(r);
            return cdn_err(MPI_ERR_GROUP, "%s: member %d of the group (world rank %d) is not in "
                           "the window's group", caller, i, g->world[i]);
        }
    }
    *out = r;
    *n = g->size;
    return MPI_SUCCESS;
}

static int pscw_open(MPI_Group group, int assert, MPI_Win win, bool post, const char *caller)
{
    WIN_ARG(w, win, caller);
    const int known = post ? MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT
                           : MPI_MODE_NOCHECK;
    if ((assert & ~known) != 0)
        return cdn_err(MPI_ERR_ASSERT, "%s: assert 0x%x has bits it does not take", caller,
                       (unsigned)assert);
    int *ranks, n;
    if ((rc = group_ranks(w, group, &ranks, &n, caller)) != MPI_SUCCESS)
        return rc;
    rc = post ? cdn_rma_post(w, ranks, n, caller) : cdn_rma_start(w, ranks, n, caller);
    free(ranks);
    return rc;
}

int cdn_MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    return pscw_open(group, assert, win, true, "MPI_Win_post");
}

int cdn_MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    return pscw_open(group, assert, win, false, "MPI_Win_start");
}

int cdn_MPI_Win_complete(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_complete");
    return cdn_rma_complete(w, "MPI_Win_complete");
}

int cdn_MPI_Win_wait(MPI_Win win)
{
    WIN_ARG(w, win, "MPI_Win_wait");
    return cdn_rma_wait(w, NULL, "MPI_Win_wait");
}

int cdn_MPI_Win_test(MPI_Win win, int *flag)
{
    WIN_ARG(w, win, "MPI_Win_test");
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Win_test: flag is NULL");
    return cdn_rma_wait(w, flag, "MPI_Win_test");
}

/* ---- dynamic windows ---- */

int cdn_MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    WIN_ARG(w, win, "MPI_Win_attach");
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return cdn_err(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach: the window is not one of "
                       "MPI_Win_create_dynamic");
    if (size < 0 || (base == NULL && size > 0))
        return cdn_err(MPI_ERR_ARG, "MPI_Win_attach: %s", size < 0 ? "size is negative"
                                                                   : "base is NULL");
    return cdn_win_attach(w, base, size, "MPI_Win_attach");
}

int cdn_MPI_Win_detach(MPI_Win win, const void *base)
{
    WIN_ARG(w, win, "MPI_Win_detach");
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return cdn_err(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach: the window is not one of "
                       "MPI_Win_create_dynamic");
    return cdn_win_detach(w, base, "MPI_Win_detach");
}
