/*
 * Thread communicators (MPIX_Threadcomm_*; docs/streams.md): every thread
 * of a parallel region is a rank.
 *
 * MPIX_Threadcomm_init (collective over the processes of comm, outside the
 * region) duplicates comm -- the duplicate's handle is the thread
 * communicator's -- gathers how many threads each process brings, and
 * makes one view per local thread: a communicator object whose rank is
 * the thread's (the processes' threads numbered in process order), whose
 * size is every thread's, whose "world rank" of each rank is its process,
 * and whose messages to rank r go to the matching context of r's thread
 * (dest_ctx: CDN_COMM_CTX_THREAD).  MPIX_Threadcomm_start binds the
 * calling thread to the next view (in the order the threads arrive): the
 * handle then means that view in that thread (cdn_comm_lookup), until
 * MPIX_Threadcomm_finish.  Point-to-point between threads of one process
 * is the self path (one copy, no ring); between processes the transports.
 * Collectives run on each view as on any communicator.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "api/entry.h"
#include "cdn_api_impl.h"
#include "coll/comm_create.h"
#include "progress/engine.h"
#include "progress/threadq.h"
#include "runtime/comm.h"
#include "runtime/errhandler.h"
#include "runtime/group.h"

#define THREADS_MAX 64  /* a process's threads: CDN_COMM_CTX_THREAD has room for 64 */

struct cdn_threadcomm {
    int nthreads, total, first;   /* this process's threads, all ranks, its first rank */
    struct cdn_comm **views;
    uint32_t *dest_ctx;
    struct cdn_tq *tq;            /* the queues between this process's threads */
    atomic_int next;              /* the next view to hand out */
    pthread_barrier_t bar;
};

static struct cdn_comm *shell_arg(MPI_Comm comm, const char *fn, int *rc)
{
    struct cdn_comm *c = cdn_api_ready() ? cdn_comm_lookup_raw(comm) : NULL;
    if (c == NULL || c->threads == NULL) {
        *rc = cdn_err(MPI_ERR_COMM, "%s: 0x%x is not a thread communicator "
                      "(MPIX_Threadcomm_init)", fn, (unsigned)comm);
        return NULL;
    }
    return c;
}

static void tc_free(struct cdn_threadcomm *tc)
{
    for (int i = 0; tc->views != NULL && i < tc->nthreads; i++)
        if (tc->views[i] != NULL)
            cdn_comm_release(tc->views[i]);
    free(tc->views);
    free(tc->dest_ctx);
    cdn_tq_free(tc->tq);
    pthread_barrier_destroy(&tc->bar);
    free(tc);
}

int cdn_MPIX_Threadcomm_init(MPI_Comm comm, int num_threads, MPI_Comm *newthreadcomm)
{
    const char *fn = "MPIX_Threadcomm_init";
    int rc = MPI_SUCCESS;
    struct cdn_comm *c = cdn_api_comm(comm, fn, &rc);
    if (c == NULL)
        return rc;
    if (newthreadcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: newthreadcomm is NULL", fn);
    if (c->inter || c->dest_ctx != NULL)
        return cdn_err(MPI_ERR_COMM, "%s: the communicator is %s", fn, c->inter
                       ? "an intercommunicator" : "a thread communicator");
    int mine = num_threads >= 1 && num_threads <= THREADS_MAX ? num_threads : 0;
    int *counts = malloc(sizeof *counts * (size_t)c->size);
    if (counts == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    /* every process takes part even with a bad count: the others go on */
    rc = cdn_MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, comm);
    struct cdn_comm *shell = NULL;
    if (rc == MPI_SUCCESS)
        rc = cdn_comm_dup(c, NULL, false, &shell, fn);
    int bad = MPI_SUCCESS;
    for (int p = 0; p < c->size && bad == MPI_SUCCESS; p++)
        if (counts[p] == 0)
            bad = cdn_err(MPI_ERR_ARG, "%s: process %d of the communicator asked for %d threads "
                          "(1..%d)", fn, p, p == c->rank ? num_threads : 0, THREADS_MAX);
    struct cdn_threadcomm *tc = calloc(1, sizeof *tc);
    if (rc != MPI_SUCCESS || bad != MPI_SUCCESS || tc == NULL) {
        free(counts);
        free(tc);
        if (shell != NULL)
            cdn_comm_release(shell);
        return rc != MPI_SUCCESS ? rc : bad != MPI_SUCCESS
                   ? bad : cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    int total = 0, first = 0;
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank)
            first = total;
        total += counts[p];
    }
    tc->nthreads = mine;
    tc->total = total;
    tc->first = first;
    pthread_barrier_init(&tc->bar, NULL, (unsigned)mine);
    tc->views = calloc((size_t)mine, sizeof *tc->views);
    tc->dest_ctx = malloc(sizeof *tc->dest_ctx * (size_t)total);
    int *world = malloc(sizeof *world * (size_t)total);
    tc->tq = mine > 0 ? cdn_tq_new(mine) : NULL;
    rc = tc->views == NULL || tc->dest_ctx == NULL || world == NULL || tc->tq == NULL
             ? cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn) : MPI_SUCCESS;
    for (int p = 0, r = 0; rc == MPI_SUCCESS && p < c->size; p++)
        for (int t = 0; t < counts[p]; t++, r++) {
            tc->dest_ctx[r] = CDN_COMM_CTX_THREAD(shell->context_id, t);
            world[r] = cdn_comm_world_rank(c, p);
        }
    for (int i = 0; rc == MPI_SUCCESS && i < mine; i++) {
        struct cdn_group *g = cdn_group_alloc(total);
        if (g == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
            break;
        }
        for (int r = 0; r < total; r++)
            g->world[r] = world[r];
        g->rank = first + i;  /* (ranks share a world rank: not cdn_group_locate) */
        struct cdn_comm *v = cdn_comm_new(g, NULL, CDN_COMM_CTX_THREAD(shell->context_id, i),
                                          NULL);
        if (v == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", fn);
            break;
        }
        v->dest_ctx = tc->dest_ctx;
        v->tq = tc->tq;
        v->tq_me = i;
        v->tq_first = first;
        v->pctx = shell->pctx;
        cdn_comm_set_errh(v, cdn_comm_errh(shell));
        tc->views[i] = v;
    }
    free(world);
    free(counts);
    if (rc != MPI_SUCCESS) {
        tc_free(tc);
        cdn_comm_release(shell);
        return rc;
    }
    shell->threads = tc;
    cdn_progress_waiters(mine);  /* its threads wait in MPI as ranks do */
    return cdn_comm_publish(shell, newthreadcomm, fn);
}

int cdn_MPIX_Threadcomm_start(MPI_Comm threadcomm)
{
    const char *fn = "MPIX_Threadcomm_start";
    int rc;
    struct cdn_comm *shell = shell_arg(threadcomm, fn, &rc);
    if (shell == NULL)
        return rc;
    struct cdn_threadcomm *tc = shell->threads;
    if (cdn_comm_thread_view(shell) != NULL)
        return cdn_err(MPI_ERR_OTHER, "%s: this thread has started it already", fn);
    int i = atomic_fetch_add(&tc->next, 1);
    if (i >= tc->nthreads)
        return cdn_err(MPI_ERR_OTHER, "%s: more threads than the %d it was made for", fn,
                       tc->nthreads);
    if (!cdn_comm_thread_bind(shell, tc->views[i]) || !cdn_tq_bind(tc->tq, i)) {
        cdn_comm_thread_unbind(shell);
        return cdn_err(MPI_ERR_OTHER, "%s: this thread is in too many thread communicators "
                       "at once", fn);
    }
    pthread_barrier_wait(&tc->bar);  /* every thread has its rank */
    return MPI_SUCCESS;
}

int cdn_MPIX_Threadcomm_finish(MPI_Comm threadcomm)
{
    const char *fn = "MPIX_Threadcomm_finish";
    int rc;
    struct cdn_comm *shell = shell_arg(threadcomm, fn, &rc);
    if (shell == NULL)
        return rc;
    struct cdn_threadcomm *tc = shell->threads;
    struct cdn_comm *view = cdn_comm_thread_view(shell);
    if (view == NULL)
        return cdn_err(MPI_ERR_OTHER, "%s: this thread has not started it", fn);
    cdn_comm_thread_unbind(shell);
    cdn_tq_unbind(tc->tq);
    /* every thread out before the ranks are handed out anew */
    if (pthread_barrier_wait(&tc->bar) == PTHREAD_BARRIER_SERIAL_THREAD)
        atomic_store(&tc->next, 0);
    pthread_barrier_wait(&tc->bar);
    return MPI_SUCCESS;
}

int cdn_MPIX_Threadcomm_free(MPI_Comm *threadcomm)
{
    const char *fn = "MPIX_Threadcomm_free";
    if (threadcomm == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: threadcomm is NULL", fn);
    int rc;
    struct cdn_comm *shell = shell_arg(*threadcomm, fn, &rc);
    if (shell == NULL)
        return rc;
    if (cdn_comm_thread_view(shell) != NULL)
        return cdn_err(MPI_ERR_OTHER, "%s: called between MPIX_Threadcomm_start and _finish",
                       fn);
    struct cdn_threadcomm *tc = shell->threads;
    shell->threads = NULL;
    tc_free(tc);
    cdn_comm_unpublish(shell);  /* (the user's reference: the last) */
    *threadcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

int cdn_MPIX_Comm_test_threadcomm(MPI_Comm comm, int *flag)
{
    if (flag == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_Comm_test_threadcomm: flag is NULL");
    struct cdn_comm *c = cdn_comm_lookup_raw(comm);
    if (c == NULL && CDN_HANDLE_KIND(comm) != CDN_HK_BUILTIN)
        return cdn_err(MPI_ERR_COMM, "MPIX_Comm_test_threadcomm: 0x%x is not a communicator",
                       (unsigned)comm);
    *flag = c != NULL && c->threads != NULL;
    return MPI_SUCCESS;
}
