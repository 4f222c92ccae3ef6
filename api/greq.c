/*
 * Generalized requests: MPI_Grequest_start/complete, MPICH's
 * MPIX_Grequest_start (poll and wait functions) and its class interface
 * (MPIX_Grequest_class_create/allocate), and Cadence's persistent form
 * MPIX_Grequest_init.  The request kind is
 * progress/greq.c; docs/tasks.md.
 */
#include <pthread.h>
#include <stdlib.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/greq.h"

static int start(const struct cdn_greq_fns *fns, void *extra_state, MPI_Request *request,
                 const char *fn, bool persistent)
{
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    if (fns->query == NULL || fns->free == NULL || fns->cancel == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: the %s function is NULL", fn,
                       fns->query == NULL ? "query" : fns->free == NULL ? "free" : "cancel");
    struct cdn_request *r;
    int rc = persistent ? cdn_greq_init(fns, extra_state, &r)
                        : cdn_greq_start(fns, extra_state, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    *request = cdn_request_publish(r);
    if (!persistent)
        cdn_greq_begin(r);  /* after the handle is stored (greq.h) */
    return MPI_SUCCESS;
}

int cdn_MPI_Grequest_start(MPI_Grequest_query_function *query_fn,
                           MPI_Grequest_free_function *free_fn,
                           MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                           MPI_Request *request)
{
    struct cdn_greq_fns fns = {.query = query_fn, .free = free_fn, .cancel = cancel_fn};
    return start(&fns, extra_state, request, "MPI_Grequest_start", false);
}

int cdn_MPIX_Grequest_start(MPI_Grequest_query_function *query_fn,
                            MPI_Grequest_free_function *free_fn,
                            MPI_Grequest_cancel_function *cancel_fn,
                            MPIX_Grequest_poll_function *poll_fn,
                            MPIX_Grequest_wait_function *wait_fn, void *extra_state,
                            MPI_Request *request)
{
    struct cdn_greq_fns fns = {.query = query_fn, .free = free_fn, .cancel = cancel_fn,
                               .poll = poll_fn, .wait = wait_fn};
    return start(&fns, extra_state, request, "MPIX_Grequest_start", false);
}

/* Cadence's persistent form: inactive until MPI_Start, or until its node
 * of a schedule runs (MPIX_Schedule_add_operation), once per start. */
int cdn_MPIX_Grequest_init(MPI_Grequest_query_function *query_fn,
                           MPI_Grequest_free_function *free_fn,
                           MPI_Grequest_cancel_function *cancel_fn,
                           MPIX_Grequest_poll_function *poll_fn,
                           MPIX_Grequest_wait_function *wait_fn, void *extra_state,
                           MPI_Request *request)
{
    struct cdn_greq_fns fns = {.query = query_fn, .free = free_fn, .cancel = cancel_fn,
                               .poll = poll_fn, .wait = wait_fn};
    return start(&fns, extra_state, request, "MPIX_Grequest_init", true);
}

int cdn_MPI_Grequest_complete(MPI_Request request)
{
    /* Not cdn_request_get: the user may have freed the handle
     * (MPI_Request_free) and must still complete the operation; the
     * engine's reference keeps the request until it does. */
    struct cdn_request *r = request == MPI_REQUEST_NULL ? NULL
                            : cdn_handle_get_typed(&cdn_request_table, CDN_OBJ_REQUEST, request);
    if (r == NULL || r->kind != CDN_REQ_GREQ)
        return cdn_err(MPI_ERR_REQUEST, "MPI_Grequest_complete: 0x%x is not a generalized "
                       "request", (unsigned)request);
    return cdn_greq_complete(r, "MPI_Grequest_complete");
}

/* ---- classes: a table of function sets, never shrinking (MPICH keeps
 * them to the end too) ---- */

static pthread_mutex_t class_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cdn_greq_fns *classes;
static int nclasses, class_cap;

int cdn_MPIX_Grequest_class_create(MPI_Grequest_query_function *query_fn,
                                   MPI_Grequest_free_function *free_fn,
                                   MPI_Grequest_cancel_function *cancel_fn,
                                   MPIX_Grequest_poll_function *poll_fn,
                                   MPIX_Grequest_wait_function *wait_fn,
                                   MPIX_Grequest_class *greq_class)
{
    const char *fn = "MPIX_Grequest_class_create";
    if (greq_class == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: greq_class is NULL", fn);
    if (query_fn == NULL || free_fn == NULL || cancel_fn == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: the %s function is NULL", fn,
                       query_fn == NULL ? "query" : free_fn == NULL ? "free" : "cancel");
    pthread_mutex_lock(&class_lock);
    if (nclasses == class_cap) {
        int cap = class_cap == 0 ? 8 : 2 * class_cap;
        struct cdn_greq_fns *c = realloc(classes, sizeof *c * (size_t)cap);
        if (c == NULL) {
            pthread_mutex_unlock(&class_lock);
            return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
        classes = c;
        class_cap = cap;
    }
    classes[nclasses] = (struct cdn_greq_fns){.query = query_fn, .free = free_fn,
                                              .cancel = cancel_fn, .poll = poll_fn,
                                              .wait = wait_fn};
    *greq_class = ++nclasses;  /* 0 is no class */
    pthread_mutex_unlock(&class_lock);
    return MPI_SUCCESS;
}

int cdn_MPIX_Grequest_class_allocate(MPIX_Grequest_class greq_class, void *extra_state,
                                     MPI_Request *request)
{
    const char *fn = "MPIX_Grequest_class_allocate";
    pthread_mutex_lock(&class_lock);
    bool ok = greq_class >= 1 && greq_class <= nclasses;
    struct cdn_greq_fns fns = ok ? classes[greq_class - 1] : (struct cdn_greq_fns){0};
    pthread_mutex_unlock(&class_lock);
    if (!ok)
        return cdn_err(MPI_ERR_ARG, "%s: %d is not a class of MPIX_Grequest_class_create", fn,
                       greq_class);
    return start(&fns, extra_state, request, fn, false);
}
