/*
 * The runtime object (cdn_rt: the job's facts, the state of MPI in this
 * process) and cdn_rt_abort, which ends the job.  Bringing the process up
 * and down through every layer is api/start.c's.
 */
#include "runtime/runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/pmix.h"

struct cdn_runtime cdn_rt = {
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
    .errhandlers = CDN_HANDLE_TABLE_INIT(CDN_OBJ_ERRHANDLER),
    .pctx_count = 1,
};

void cdn_rt_abort(int exitcode, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    cdn_pmix_abort(exitcode, msg);  /* the launcher ends the other processes */
    _exit(exitcode);
}
