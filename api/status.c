/*
 * Local helpers that touch no MPI state: status field access (MPI-4.1
 * accessors and the cancelled flag), C <-> Fortran conversions of handles
 * and statuses, address arithmetic, the link-time constants of mpi.h and
 * the predefined attribute copy function.
 *
 * In the MPICH ABI a Fortran handle is the C handle's integer, and a Fortran
 * status is the same five integers as the C one.
 */
#include <stdint.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"

/* MPI_Status.count_hi_and_cancelled: bit 0 is the cancelled flag, the other
 * 31 bits the high part of the byte count (as MPICH stores them). */
#define CDN_STATUS_CANCELLED 0x1

static int status_arg(const MPI_Status *status, const char *caller)
{
    if (status == NULL || status == MPI_STATUS_IGNORE)
        return cdn_err(MPI_ERR_ARG, "%s: status is %s", caller,
                       status == NULL ? "NULL" : "MPI_STATUS_IGNORE");
    return MPI_SUCCESS;
}

#define STATUS_GET(fn, field, out)                                           \
    int cdn_MPI_Status_get_##fn(MPI_Status *status, int *out)                \
    {                                                                        \
        int rc = status_arg(status, "MPI_Status_get_" #fn);                  \
        if (rc != MPI_SUCCESS)                                               \
            return rc;                                                       \
        if (out == NULL)                                                     \
            return cdn_err(MPI_ERR_ARG, "MPI_Status_get_" #fn ": " #out " is NULL"); \
        *out = status->field;                                                \
        return MPI_SUCCESS;                                                  \
    }

#define STATUS_SET(fn, field, in)                                            \
    int cdn_MPI_Status_set_##fn(MPI_Status *status, int in)                  \
    {                                                                        \
        int rc = status_arg(status, "MPI_Status_set_" #fn);                  \
        if (rc != MPI_SUCCESS)                                               \
            return rc;                                                       \
        status->field = in;                                                  \
        return MPI_SUCCESS;                                                  \
    }

STATUS_GET(source, MPI_SOURCE, source)
STATUS_GET(tag, MPI_TAG, tag)
STATUS_GET(error, MPI_ERROR, error)
STATUS_SET(source, MPI_SOURCE, source)
STATUS_SET(tag, MPI_TAG, tag)
STATUS_SET(error, MPI_ERROR, error)

int cdn_MPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    int rc = status_arg(status, "MPI_Status_set_cancelled");
    if (rc != MPI_SUCCESS)
        return rc;
    if (flag)
        status->count_hi_and_cancelled |= CDN_STATUS_CANCELLED;
    else
        status->count_hi_and_cancelled &= ~CDN_STATUS_CANCELLED;
    return MPI_SUCCESS;
}

/* ---- addresses ---- */

MPI_Aint cdn_MPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

MPI_Aint cdn_MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}

/* ---- handle conversions: the identity in the MPICH ABI ---- */

#define HANDLE_CONVERSIONS(Name, type)                                       \
    MPI_Fint cdn_MPI_##Name##_c2f(type h) { return (MPI_Fint)h; }            \
    type cdn_MPI_##Name##_f2c(MPI_Fint h) { return (type)h; }

HANDLE_CONVERSIONS(Comm, MPI_Comm)
HANDLE_CONVERSIONS(Type, MPI_Datatype)
HANDLE_CONVERSIONS(Group, MPI_Group)
HANDLE_CONVERSIONS(Request, MPI_Request)
HANDLE_CONVERSIONS(Op, MPI_Op)
HANDLE_CONVERSIONS(Errhandler, MPI_Errhandler)
HANDLE_CONVERSIONS(Win, MPI_Win)
HANDLE_CONVERSIONS(Message, MPI_Message)
HANDLE_CONVERSIONS(Session, MPI_Session)
HANDLE_CONVERSIONS(Info, MPI_Info)

/* ---- status conversions: five integers each way ---- */

static int copy_status(const void *from, void *to, const char *caller)
{
    if (from == NULL || to == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s status is NULL", caller, from == NULL ? "input" : "output");
    if (from == (const void *)MPI_STATUS_IGNORE || from == (const void *)MPI_F_STATUS_IGNORE ||
        from == (const void *)MPI_F08_STATUS_IGNORE)
        return cdn_err(MPI_ERR_ARG, "%s: the input status is an IGNORE constant", caller);
    memmove(to, from, sizeof(MPI_Status));
    return MPI_SUCCESS;
}

_Static_assert(sizeof(MPI_Status) == 5 * sizeof(MPI_Fint), "MPI_Status is five integers");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "F08 status matches C status");

int cdn_MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
    return copy_status(c_status, f_status, "MPI_Status_c2f");
}

int cdn_MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
    return copy_status(f_status, c_status, "MPI_Status_f2c");
}

int cdn_MPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status)
{
    return copy_status(f08_status, c_status, "MPI_Status_f082c");
}

int cdn_MPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status)
{
    return copy_status(c_status, f08_status, "MPI_Status_c2f08");
}

int cdn_MPI_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status)
{
    return copy_status(f08_status, f_status, "MPI_Status_f082f");
}

int cdn_MPI_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status)
{
    return copy_status(f_status, f08_status, "MPI_Status_f2f08");
}

/* ---- link-time constants of mpi.h ---- */

/* Distinct addresses that can never be a user's array (MPI-4.1 8.5.4). */
static int unweighted_marker, weights_empty_marker;
int *const MPI_UNWEIGHTED = &unweighted_marker;
int *const MPI_WEIGHTS_EMPTY = &weights_empty_marker;

static MPI_Fint f_status_ignore[5], f_statuses_ignore[5];
MPI_Fint *MPI_F_STATUS_IGNORE = f_status_ignore;
MPI_Fint *MPI_F_STATUSES_IGNORE = f_statuses_ignore;
static MPI_F08_status f08_status_ignore, f08_statuses_ignore;
MPI_F08_status *MPI_F08_STATUS_IGNORE = &f08_status_ignore;
MPI_F08_status *MPI_F08_STATUSES_IGNORE = &f08_statuses_ignore;

static struct cdn_t_pvar_handle {
    int unused;
} all_pvar_handles;
struct cdn_t_pvar_handle *const MPI_T_PVAR_ALL_HANDLES = &all_pvar_handles;

/* MPI_DUP_FN and MPI_{COMM,TYPE,WIN}_DUP_FN: copy the attribute value. */
int MPIR_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in,
                void *attribute_val_out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra_state;
    *(void **)attribute_val_out = attribute_val_in;
    *flag = 1;
    return MPI_SUCCESS;
}
