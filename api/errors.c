/*
 * Bindings of the error-handling chapter: error classes, codes and strings,
 * and error handlers on communicators (window handlers: api/win.c; session
 * and file handlers: api/session.c).
 */
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "runtime/comm.h"
#include "runtime/handle.h"

int cdn_MPI_Error_class(int errorcode, int *errorclass)
{
    if (errorclass == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Error_class: errorclass is NULL");
    int cls = cdn_err_class_of(errorcode);
    if (cls < 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Error_class: %d is not a valid error code", errorcode);
    *errorclass = cls;
    return MPI_SUCCESS;
}

int cdn_MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    if (string == NULL || resultlen == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Error_string: %s is NULL",
                       string == NULL ? "string" : "resultlen");
    char buf[MPI_MAX_ERROR_STRING];
    if (cdn_err_string(errorcode, buf) != 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Error_string: %d is not a valid error code", errorcode);
    size_t n = strlen(buf);
    memcpy(string, buf, n + 1);
    *resultlen = (int)n;
    return MPI_SUCCESS;
}

int cdn_MPI_Add_error_class(int *errorclass)
{
    if (errorclass == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_class: errorclass is NULL");
    return cdn_err_add_class(errorclass);
}

int cdn_MPI_Add_error_code(int errorclass, int *errorcode)
{
    if (errorcode == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_code: errorcode is NULL");
    return cdn_err_add_code(errorclass, errorcode);
}

int cdn_MPI_Add_error_string(int errorcode, const char *string)
{
    return cdn_err_add_string(errorcode, string);
}

int cdn_MPI_Remove_error_class(int errorclass)
{
    return cdn_err_remove_class(errorclass);
}

int cdn_MPI_Remove_error_code(int errorcode)
{
    return cdn_err_remove_code(errorcode);
}

int cdn_MPI_Remove_error_string(int errorcode)
{
    return cdn_err_remove_string(errorcode);
}

/* ---- error handler objects ---- */

int cdn_MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return cdn_errh_create(CDN_OBJ_COMM, (void (*)(void))fn, errhandler,
                           "MPI_Comm_create_errhandler");
}

int cdn_MPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return cdn_errh_create(CDN_OBJ_WIN, (void (*)(void))fn, errhandler,
                           "MPI_Win_create_errhandler");
}

int cdn_MPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return cdn_errh_create(CDN_OBJ_FILE, (void (*)(void))fn, errhandler,
                           "MPI_File_create_errhandler");
}

int cdn_MPI_Session_create_errhandler(MPI_Session_errhandler_function *fn,
                                      MPI_Errhandler *errhandler)
{
    return cdn_errh_create(CDN_OBJ_SESSION, (void (*)(void))fn, errhandler,
                           "MPI_Session_create_errhandler");
}

int cdn_MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    return cdn_errh_free(errhandler);
}

int cdn_MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_set_errhandler", &rc);
    if (c == NULL)
        return rc;
    struct cdn_errhandler *eh;
    if ((rc = cdn_errh_arg(errhandler, CDN_OBJ_COMM, &eh, "MPI_Comm_set_errhandler")) != MPI_SUCCESS)
        return rc;
    cdn_comm_set_errh(c, eh);
    return MPI_SUCCESS;
}

int cdn_MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_get_errhandler", &rc);
    if (c == NULL)
        return rc;
    return cdn_errh_hand_out(cdn_comm_errh(c), errhandler, "MPI_Comm_get_errhandler");
}

int cdn_MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, "MPI_Comm_call_errhandler", &rc);
    if (c == NULL)
        return rc;
    /* The handler runs on the user's code as it is; MPI_SUCCESS is returned
     * unless the handler is MPI_ERRORS_RETURN-like and returns (MPI-4.1 9.5). */
    cdn_errh_invoke(cdn_comm_errh(c), CDN_OBJ_COMM, &comm, errorcode);
    return MPI_SUCCESS;
}
