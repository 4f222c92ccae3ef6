/*
 * MPIX streams: a serial execution context of the application that owns
 * one progress context of the engine (progress/engine.h, struct cdn_pctx)
 * for its traffic.  A stream communicator (MPIX_Stream_comm_create) is a
 * duplicate whose messages travel through its stream's context, so
 * threads with streams of their own share no rings, connections or poll
 * lock.  Contexts 1 .. CADENCE_PROGRESS_CONTEXTS-1 are what streams take
 * (context 0 carries the implicit traffic), the highest free first; a
 * communicator asking for `cadence_progress_context=auto` is given the
 * others.  See docs/streams.md.
 */
#ifndef CDN_STREAM_H
#define CDN_STREAM_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>


/* Multiplexed stream communicators (MPIX_Stream_comm_create_multiplex):
 * at most CDN_STREAM_MAX local streams a process; MPIX_Stream_send's
 * message travels on the communicator's matching context for the
 * destination stream (CDN_COMM_CTX_STREAM, runtime/comm.h) with the wire
 * tag tag << CDN_STREAM_TAG_BITS | source stream index, so a receive from
 * any stream matches on the tag's upper bits only; tags there are at most
 * CDN_STREAM_TAG_UB. */
#define CDN_STREAM_TAG_BITS 6
#define CDN_STREAM_MAX (1 << CDN_STREAM_TAG_BITS)
#define CDN_STREAM_TAG_UB ((1 << (31 - CDN_STREAM_TAG_BITS)) - 1)

struct cdn_stream {
    MPIX_Stream handle;
    int pctx;          /* the progress context it owns */
    atomic_int refs;   /* the user's handle and every communicator it is attached to */
    /* CADENCE_STREAM_CHECKS: the thread inside a call on one of its
     * communicators (0: none), and how deep (a callback's own calls) */
    _Atomic unsigned long user;
    int depth;
    /* An offload stream (info type "cadence_host_queue", or a GPU
     * stream's): its queue of enqueued operations (api/enqueue.c; opaque here), freed with it. */
    void *queue;
    void (*queue_free)(void *queue);
};

/* MPIX_Stream_create: a stream owning a free progress context; an error
 * naming CADENCE_PROGRESS_CONTEXTS when none is free. */
int cdn_stream_create(struct cdn_stream **out, const char *caller);
/* The stream behind a handle (not MPIX_STREAM_NULL), or NULL. */
struct cdn_stream *cdn_stream_get(MPIX_Stream handle);
/* MPIX_Stream_free: refused while a communicator uses it. */
int cdn_stream_free(struct cdn_stream *s, const char *caller);
void cdn_stream_retain(struct cdn_stream *s);
void cdn_stream_release(struct cdn_stream *s);
/* Is progress context k owned by a stream? (auto placement skips it) */
bool cdn_stream_owns(int k);

#endif
