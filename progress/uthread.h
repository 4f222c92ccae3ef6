/*
 * Progress threads the application asks for (MPIX_Start_progress_thread,
 * api/stream.c): a thread that polls every progress context, a stream's
 * first, until stopped.  docs/tasks.md, "Progress control".
 */
#ifndef CDN_UTHREAD_H
#define CDN_UTHREAD_H

struct cdn_uthread;

/* Start one, polling context ctx first (-1: the implicit order); an MPI
 * error code. */
int cdn_uthread_start(int ctx, struct cdn_uthread **out, const char *caller);
/* Stop it and wait for it. */
void cdn_uthread_stop(struct cdn_uthread *t);

#endif
