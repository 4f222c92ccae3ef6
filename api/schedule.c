/*
 * Bindings of the user-level schedules, MPIX_Schedule_* (docs/schedules.md):
 * handles to objects and argument checks; sched/user.c does the work.
 */
#include <string.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "progress/request.h"
#include "runtime/info.h"
#include "sched/user.h"

/* The info key that turns auto-free of the sub-requests off ("false") or
 * on ("true", the default). */
#define AUTO_FREE_KEY "mpix_schedule_auto_free"

int cdn_MPIX_Schedule_create(MPIX_Schedule *sched)
{
    return cdn_usched_create(sched, "MPIX_Schedule_create");
}

int cdn_MPIX_Schedule_init(MPIX_Schedule *sched)
{
    return cdn_usched_create(sched, "MPIX_Schedule_init");  /* the seed's Fig. 2 name */
}

int cdn_MPIX_Schedule_free(MPIX_Schedule *sched)
{
    if (sched == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_Schedule_free: sched is NULL");
    int rc;
    struct cdn_schedule *us = cdn_usched_get(*sched, "MPIX_Schedule_free", &rc);
    if (us == NULL)
        return rc;
    cdn_usched_free(us);
    *sched = MPIX_SCHEDULE_NULL;
    return MPI_SUCCESS;
}

int cdn_MPIX_Schedule_set_info(MPIX_Schedule sched, MPI_Info info)
{
    static const char fn[] = "MPIX_Schedule_set_info";
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    if (us == NULL)
        return rc;
    struct cdn_info *in = cdn_info_arg(info, fn, &rc);
    if (rc != MPI_SUCCESS || in == NULL)
        return rc;
    char value[MPI_MAX_INFO_VAL + 1];
    int len;
    if (!cdn_info_lookup(in, AUTO_FREE_KEY, value, sizeof value, &len))
        return MPI_SUCCESS;  /* unknown keys are ignored (MPI-4.1 10) */
    if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
        return cdn_err(MPI_ERR_INFO_VALUE, "%s: " AUTO_FREE_KEY " is \"%s\", not \"true\" or "
                       "\"false\"", fn, value);
    return cdn_usched_set_auto_free(us, strcmp(value, "true") == 0, fn);
}

int cdn_MPIX_Schedule_add_operation(MPIX_Schedule sched, MPI_Request request)
{
    static const char fn[] = "MPIX_Schedule_add_operation";
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    if (us == NULL)
        return rc;
    if (request == MPI_REQUEST_NULL)
        return cdn_err(MPI_ERR_REQUEST, "%s: request is MPI_REQUEST_NULL", fn);
    return cdn_usched_add_request(us, cdn_request_get(request), request, fn);
}

int cdn_MPIX_Schedule_add_mpi_operation(MPIX_Schedule sched, MPI_Op op, const void *invec,
                                        void *inoutvec, int len, MPI_Datatype datatype)
{
    static const char fn[] = "MPIX_Schedule_add_mpi_operation";
    static const char *const names[2] = {"invec", "inoutvec"};
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    if (us == NULL)
        return rc;
    struct cdn_datatype *dt;
    struct cdn_op *o;
    rc = cdn_api_reduce_args(fn, names, invec, inoutvec, len, datatype, op, &dt, &o);
    if (rc != MPI_SUCCESS)
        return rc;
    return cdn_usched_add_reduce(us, o, invec, inoutvec, len, dt, fn);
}

/* The calls whose only argument is the schedule. */
static int on_sched(MPIX_Schedule sched, const char *fn,
                    int (*op)(struct cdn_schedule *us, const char *caller))
{
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    return us == NULL ? rc : op(us, fn);
}

int cdn_MPIX_Schedule_create_round(MPIX_Schedule sched)
{
    return on_sched(sched, "MPIX_Schedule_create_round", cdn_usched_round);
}

int cdn_MPIX_Schedule_mark_reset_point(MPIX_Schedule sched)
{
    return on_sched(sched, "MPIX_Schedule_mark_reset_point", cdn_usched_mark_reset);
}

int cdn_MPIX_Schedule_mark_completion_point(MPIX_Schedule sched)
{
    return on_sched(sched, "MPIX_Schedule_mark_completion_point", cdn_usched_mark_completion);
}

int cdn_MPIX_Schedule_add_repeat(MPIX_Schedule sched, int nrounds, int count,
                                 MPIX_Schedule_predicate_function *predicate, void *state)
{
    static const char fn[] = "MPIX_Schedule_add_repeat";
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    return us == NULL ? rc : cdn_usched_repeat(us, nrounds, count, predicate, state, fn);
}

int cdn_MPIX_Schedule_add_condition(MPIX_Schedule sched, int scope,
                                    MPIX_Schedule_predicate_function *predicate, void *state)
{
    static const char fn[] = "MPIX_Schedule_add_condition";
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    return us == NULL ? rc : cdn_usched_condition(us, scope, predicate, state, fn);
}

int cdn_MPIX_Schedule_set_callback(MPIX_Schedule sched, int scope,
                                   MPIX_Schedule_callback_function *callback, void *state)
{
    static const char fn[] = "MPIX_Schedule_set_callback";
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    return us == NULL ? rc : cdn_usched_callback(us, scope, callback, state, fn);
}

int cdn_MPIX_Schedule_commit(MPIX_Schedule sched, MPI_Request *request)
{
    static const char fn[] = "MPIX_Schedule_commit";
    if (request == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: request is NULL", fn);
    *request = MPI_REQUEST_NULL;
    int rc;
    struct cdn_schedule *us = cdn_usched_get(sched, fn, &rc);
    if (us == NULL)
        return rc;
    struct cdn_request *r;
    rc = cdn_usched_commit(us, &r, fn);
    if (rc == MPI_SUCCESS)
        *request = cdn_request_publish(r);
    return rc;
}
