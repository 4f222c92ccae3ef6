/*
 * The stub CUDA runtime (cuda_runtime.h here): a stream is a thread that
 * runs the host functions launched on it in order.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct work {
    struct work *next;
    cudaHostFn_t fn;
    void *arg;
};

struct CUstream_st {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t more, idle;
    struct work *head, *tail;
    bool busy, stop;
};

static void *stream_main(void *p)
{
    struct CUstream_st *s = p;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->more, &s->lock);
        if (s->head == NULL)
            break;
        struct work *w = s->head;
        s->head = w->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->busy = true;
        pthread_mutex_unlock(&s->lock);
        w->fn(w->arg);
        free(w);
        pthread_mutex_lock(&s->lock);
        s->busy = false;
        if (s->head == NULL)
            pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    if (pStream == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cudaErrorMemoryAllocation;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->more, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        free(s);
        return cudaErrorMemoryAllocation;
    }
    *pStream = s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (s == NULL)
        return cudaErrorInvalidResourceHandle;
    pthread_mutex_lock(&s->lock);
    while (s->head != NULL || s->busy)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (s == NULL)
        return cudaErrorInvalidResourceHandle;
    /* the real call returns at once and lets queued work finish */
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->more);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->more);
    pthread_cond_destroy(&s->idle);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *userData)
{
    if (s == NULL)
        return cudaErrorInvalidResourceHandle;
    if (fn == NULL)
        return cudaErrorInvalidValue;
    struct work *w = malloc(sizeof *w);
    if (w == NULL)
        return cudaErrorMemoryAllocation;
    *w = (struct work){.fn = fn, .arg = userData};
    pthread_mutex_lock(&s->lock);
    if (s->tail != NULL)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    pthread_cond_signal(&s->more);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    }
    return "unrecognized error code";
}
