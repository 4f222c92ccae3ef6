/*
 * Bindings of MPI-4 sessions (MPI-4.1 11.3): init and finalize on the
 * shared runtime, the two process sets "mpi://WORLD" and "mpi://SELF",
 * session info and error handlers; and the error handler calls on
 * MPI_FILE_NULL (the only file until MPI-IO exists).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/group.h"
#include "runtime/info.h"
#include "runtime/session.h"

static const char *const psets[] = {"mpi://WORLD", "mpi://SELF"};
#define NPSETS 2

struct cdn_session *cdn_api_session(MPI_Session session, const char *caller, int *rc)
{
    struct cdn_session *s = cdn_session_get(session);
    *rc = MPI_SUCCESS;
    if (s == NULL)
        *rc = cdn_err(MPI_ERR_SESSION, "%s: 0x%x is not a valid session%s", caller,
                      (unsigned)session, session == MPI_SESSION_NULL ? " (MPI_SESSION_NULL)" : "");
    return s;
}

#define SESSION_ARG(var, handle, caller)                                   \
    int rc;                                                                \
    struct cdn_session *var = cdn_api_session(handle, caller, &rc);        \
    if (var == NULL)                                                       \
        return rc

int cdn_MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    const char *fn = "MPI_Session_init";
    if (session == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: session is NULL", fn);
    struct cdn_errhandler *eh;
    int rc = cdn_errh_arg(errhandler, CDN_OBJ_SESSION, &eh, fn);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_info *in = cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS)
        return rc;
    /* "thread_level" asks for a level (MPI-4.1 11.3.1); MULTIPLE otherwise */
    int level = MPI_THREAD_MULTIPLE;
    char v[64];
    if (cdn_info_lookup(in, "thread_level", v, sizeof v, NULL)) {
        static const char *names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                      "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
        for (int i = 0; i < 4; i++)
            if (strcmp(v, names[i]) == 0)
                level = i;
    }
    struct cdn_session *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (in != NULL && (s->info = cdn_info_dup(in)) == NULL) {
        free(s);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    cdn_session_set_errh(s, eh);
    rc = cdn_session_publish(s, session, fn);
    if (rc == MPI_SUCCESS) {
        rc = cdn_rt_init(level, NULL, false, fn);
        if (rc != MPI_SUCCESS)
            *session = MPI_SESSION_NULL;
    }
    if (rc != MPI_SUCCESS)
        cdn_session_unpublish(s);
    return rc;
}

int cdn_MPI_Session_finalize(MPI_Session *session)
{
    if (session == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_finalize: session is NULL");
    SESSION_ARG(s, *session, "MPI_Session_finalize");
    /* MPI_Session_attach_buffer's messages go out first, as a detach would */
    cdn_bsend_flush(&s->bsend);
    cdn_session_unpublish(s);
    *session = MPI_SESSION_NULL;
    return cdn_rt_finalize(false);
}

int cdn_MPI_Session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names)
{
    SESSION_ARG(s, session, "MPI_Session_get_num_psets");
    (void)s, (void)info;
    if (npset_names == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_num_psets: npset_names is NULL");
    *npset_names = NPSETS;
    return MPI_SUCCESS;
}

int cdn_MPI_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len,
                                 char *pset_name)
{
    SESSION_ARG(s, session, "MPI_Session_get_nth_pset");
    (void)s, (void)info;
    if (pset_len == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_nth_pset: pset_len is NULL");
    if (n < 0 || n >= NPSETS)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_nth_pset: n %d is not in 0..%d", n, NPSETS - 1);
    int need = (int)strlen(psets[n]) + 1;
    if (*pset_len > 0) {  /* 0: only ask for the length */
        if (pset_name == NULL)
            return cdn_err(MPI_ERR_ARG, "MPI_Session_get_nth_pset: pset_name is NULL");
        snprintf(pset_name, (size_t)*pset_len, "%s", psets[n]);
    }
    *pset_len = need;
    return MPI_SUCCESS;
}

/* The world ranks of a process set, or -1 for an unknown name. */
static int pset_size(const char *name)
{
    if (strcmp(name, psets[0]) == 0)
        return cdn_rt.world_size;
    if (strcmp(name, psets[1]) == 0)
        return 1;
    return -1;
}

int cdn_MPI_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info)
{
    SESSION_ARG(s, session, "MPI_Session_get_pset_info");
    (void)s;
    if (pset_name == NULL || info == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_pset_info: %s is NULL",
                       info == NULL ? "info" : "pset_name");
    int n = pset_size(pset_name);
    if (n < 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_pset_info: \"%s\" is not a process set "
                       "(mpi://WORLD, mpi://SELF)", pset_name);
    struct cdn_info *i = cdn_info_new();
    char v[32];
    snprintf(v, sizeof v, "%d", n);
    if (i == NULL || cdn_info_set(i, "mpi_size", v) != MPI_SUCCESS) {
        cdn_info_destroy(i);
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Session_get_pset_info: out of memory");
    }
    return cdn_info_publish(i, info, "MPI_Session_get_pset_info");
}

int cdn_MPI_Session_get_info(MPI_Session session, MPI_Info *info_used)
{
    SESSION_ARG(s, session, "MPI_Session_get_info");
    if (info_used == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Session_get_info: info_used is NULL");
    static const char *names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                  "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
    struct cdn_info *i = cdn_info_dup(s->info);
    if (i == NULL || cdn_info_set(i, "thread_level", names[cdn_rt.thread_level & 3]) != MPI_SUCCESS) {
        cdn_info_destroy(i);
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Session_get_info: out of memory");
    }
    return cdn_info_publish(i, info_used, "MPI_Session_get_info");
}

int cdn_MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup)
{
    SESSION_ARG(s, session, "MPI_Group_from_session_pset");
    if (pset_name == NULL || newgroup == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_from_session_pset: %s is NULL",
                       newgroup == NULL ? "newgroup" : "pset_name");
    int n = pset_size(pset_name);
    if (n < 0)
        return cdn_err(MPI_ERR_ARG, "MPI_Group_from_session_pset: \"%s\" is not a process set "
                       "(mpi://WORLD, mpi://SELF)", pset_name);
    const struct cdn_group *wg = cdn_comm_world()->group;
    struct cdn_group *g = n == 1 && strcmp(pset_name, psets[1]) == 0
                              ? cdn_group_from(1, &cdn_rt.world_rank)
                              : cdn_group_from(wg->size, wg->world);
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Group_from_session_pset: out of memory");
    g->session = s;  /* communicators made from g derive from s */
    cdn_session_retain(s);
    return cdn_group_publish(g, newgroup, "MPI_Group_from_session_pset");
}

int cdn_MPI_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler)
{
    SESSION_ARG(s, session, "MPI_Session_set_errhandler");
    struct cdn_errhandler *eh;
    if ((rc = cdn_errh_arg(errhandler, CDN_OBJ_SESSION, &eh, "MPI_Session_set_errhandler")) != MPI_SUCCESS)
        return rc;
    cdn_session_set_errh(s, eh);
    return MPI_SUCCESS;
}

int cdn_MPI_Session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler)
{
    SESSION_ARG(s, session, "MPI_Session_get_errhandler");
    return cdn_errh_hand_out(cdn_session_errh(s), errhandler, "MPI_Session_get_errhandler");
}

int cdn_MPI_Session_call_errhandler(MPI_Session session, int errorcode)
{
    SESSION_ARG(s, session, "MPI_Session_call_errhandler");
    cdn_errh_invoke(cdn_session_errh(s), CDN_OBJ_SESSION, &session, errorcode);
    return MPI_SUCCESS;
}

/* ---- MPI_FILE_NULL ---- */

static int file_null(MPI_File file, const char *caller)
{
    if (file != MPI_FILE_NULL)
        return cdn_err(MPI_ERR_FILE, "%s: %p is not a valid file (no file can be opened yet)",
                       caller, (void *)file);
    return MPI_SUCCESS;
}

int cdn_MPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
    int rc = file_null(file, "MPI_File_set_errhandler");
    struct cdn_errhandler *eh;
    if (rc == MPI_SUCCESS &&
        (rc = cdn_errh_arg(errhandler, CDN_OBJ_FILE, &eh, "MPI_File_set_errhandler")) == MPI_SUCCESS)
        cdn_file_null_set_errh(eh);
    return rc;
}

int cdn_MPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)
{
    int rc = file_null(file, "MPI_File_get_errhandler");
    if (rc != MPI_SUCCESS)
        return rc;
    return cdn_errh_hand_out(cdn_file_null_errh(), errhandler, "MPI_File_get_errhandler");
}

int cdn_MPI_File_call_errhandler(MPI_File fh, int errorcode)
{
    int rc = file_null(fh, "MPI_File_call_errhandler");
    if (rc == MPI_SUCCESS)
        cdn_errh_invoke(cdn_file_null_errh(), CDN_OBJ_FILE, &fh, errorcode);
    return rc;
}
