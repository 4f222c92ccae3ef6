/*
 * Communicator objects: the predefined MPI_COMM_WORLD and MPI_COMM_SELF
 * (static) and those created at run time (handle table), intra- and
 * intercommunicators.  Creation is collective and lives in
 * coll/comm_create.c; the agreement on context ids in runtime/ctxid.c.
 */
#ifndef CDN_COMM_H
#define CDN_COMM_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/ctxid.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

struct cdn_errhandler;
struct cdn_group;
struct cdn_attr;
struct cdn_info;
struct cdn_topo;
struct cdn_session;
struct cdn_bsend_pool;
struct cdn_stream;
struct cdn_tq;
/* What becomes of a buffered-send pool (progress/bsend.c, MPI_*_attach_buffer)
 * when its owner -- a communicator, a session -- goes: its messages sent
 * (flush) and it freed (pool_free).  The pool code installs these when it
 * makes the first pool, so runtime/ calls nothing above it; an owner with
 * no pool (bsend NULL) has nothing to do. */
struct cdn_bsend_hooks {
    int (*flush)(struct cdn_bsend_pool **slot);
    void (*pool_free)(struct cdn_bsend_pool **slot);
};
extern struct cdn_bsend_hooks cdn_bsend_hooks;
/* The owner's slot: flush / free its pool if it has one. */
void cdn_bsend_owner_flush(struct cdn_bsend_pool **slot);
void cdn_bsend_owner_free(struct cdn_bsend_pool **slot);

/*
 * Contexts: a communicator owns two matching contexts.  context_id (even)
 * carries the user's point-to-point traffic; context_id + 1 (CDN_COMM_CTX_COLL)
 * carries everything Cadence sends internally on the communicator's behalf.
 * On that internal context, tags >= 0 belong to collectives (coll/, sched/),
 * tags <= CDN_TAG_COMM_BASE to communicator management (context-id agreement,
 * intercommunicator setup), so the two never match each other's messages.
 * Every process of a communicator uses the same context_id (for an
 * intercommunicator: every process of both groups).
 */
#define CDN_COMM_CTX_COLL(c) ((c)->context_id + 1)
/* A third matching context, above every communicator's pair of ids
 * (runtime/ctxid.h: ids stay below CDN_CTXID_MAX), carries partitioned
 * point-to-point traffic (partitioned/part.c), so its many per-transfer
 * receives never lengthen the queues the user's messages and the
 * collectives are matched in. */
#define CDN_COMM_CTX_PART(c) (CDN_CTXID_MAX + (c)->context_id)
/* And above those, a multiplexed stream communicator's contexts, one per
 * destination stream index i < 64 (MPIX_Stream_send, runtime/stream.h). */
#define CDN_COMM_CTX_STREAM(c, i) (2u * CDN_CTXID_MAX + (c)->context_id / 2u * 64u + (uint32_t)(i))
/* And above those, a thread communicator's: thread i (< 64) of a process
 * receives on base + 2i (and its internal traffic on base + 2i + 1),
 * base from the thread communicator's own context id. */
#define CDN_COMM_CTX_THREAD(ctx, i) (64u * CDN_CTXID_MAX + (uint32_t)(ctx) / 2u * 128u + 2u * (uint32_t)(i))
#define CDN_TAG_COMM_BASE (-4096)

struct cdn_comm {
    MPI_Comm handle;
    int rank, size;                         /* in the local group */
    uint32_t context_id;                    /* point-to-point matching context (even) */
    /* Point-to-point rank i is world rank world_ranks[i] (NULL: i).  For an
     * intercommunicator these are the REMOTE group's processes. */
    const int *world_ranks;
    _Atomic(struct cdn_errhandler *) errh;
    pthread_mutex_t lock;                   /* name, info */
    char name[MPI_MAX_OBJECT_NAME];
    /* Collectives' per-communicator state (owned by coll/): created on first
     * use; coll_free, when set, is called once as the communicator is
     * destroyed. */
    void *coll;
    void (*coll_free)(struct cdn_comm *comm);
    /* Lifetime: the user's handle is one reference, every request on the
     * communicator another (progress/request.c), so MPI_Comm_free while
     * operations are pending destroys it only when they are done.  The
     * predefined communicators are not counted. */
    atomic_int refs;
    bool builtin;
    bool inter;
    /* MPI_Comm_idup: the handle exists but the context ids are still being
     * agreed in the background; cdn_comm_get refuses it until then. */
    atomic_bool pending;
    /* Numbers the nonblocking creations started on this communicator, so
     * several outstanding at once use different tags (coll/idup.c). */
    atomic_uint idup_seq;
    int remote_size;                        /* intercommunicator: remote group size */
    struct cdn_group *group;                /* local group */
    struct cdn_group *remote_group;         /* intercommunicator only */
    /* Intercommunicator: an intracommunicator of the local group for the
     * internal traffic among it (merge, collectives). */
    struct cdn_comm *local_comm;
    struct cdn_attr *attrs;                 /* runtime/attr.c */
    struct cdn_info *info;                  /* hints (set_info, dup_with_info); may be NULL */
    struct cdn_topo *topo;                  /* virtual topology or NULL */
    /* The session it derives from (MPI_Comm_create_from_group on a group
     * of MPI_Group_from_session_pset, and communicators made from those),
     * held by a reference; NULL in the world model. */
    struct cdn_session *session;
    /* MPI_Comm_attach_buffer's buffer (progress/bsend.c); NULL until the
     * first attach, freed with the communicator. */
    struct cdn_bsend_pool *bsend;
    /* The progress context its messages travel through (progress/engine.h,
     * struct cdn_pctx): its parent's, or the one its creating call's info
     * asks for (cadence_progress_context), fixed for its life. */
    int pctx;
    /* MPIX_Stream_comm_create: the stream whose context it uses (held by
     * a reference), or NULL. */
    struct cdn_stream *stream;
    /* MPIX_Stream_comm_create_multiplex: this process's streams (held;
     * an entry may be NULL: MPIX_STREAM_NULL) and how many each rank
     * attached; nstreams 0 for other communicators. */
    int nstreams;
    struct cdn_stream **streams;
    int *rank_nstreams;
    /* MPIX_Threadcomm_init: the handle's object (threads set) stands for a
     * view per thread, which is what its handle means in a thread between
     * MPIX_Threadcomm_start and _finish (cdn_comm_lookup); a view has
     * dest_ctx: the matching context each rank -- a thread -- receives on. */
    struct cdn_threadcomm *threads;
    const uint32_t *dest_ctx;
    /* A view's queues to the other threads of its process
     * (progress/threadq.h), its thread's index there, and the rank of the
     * process's first thread. */
    struct cdn_tq *tq;
    int tq_me, tq_first;
};

/* The calling thread's view of thread communicator shell, or NULL
 * (MPIX_Threadcomm_start not called in this thread); bind/unbind from
 * start/finish (runtime/comm.c: a few per thread). */
struct cdn_comm *cdn_comm_thread_view(const struct cdn_comm *shell);
bool cdn_comm_thread_bind(const struct cdn_comm *shell, struct cdn_comm *view);
void cdn_comm_thread_unbind(const struct cdn_comm *shell);

/* The context a message to rank dest is sent on: the communicator's, or
 * on a thread communicator the receiving thread's. */
static inline uint32_t cdn_comm_send_ctx(const struct cdn_comm *c, int dest)
{
    return c->dest_ctx != NULL && dest >= 0 ? c->dest_ctx[dest] : c->context_id;
}

/* The value of info key `key` set on comm (MPI_Comm_set_info, dup_with_info,
 * ...): copies at most valuelen-1 bytes plus NUL into value and returns true,
 * or returns false when the key is not set. */
bool cdn_comm_info_value(struct cdn_comm *comm, const char *key, char *value, int valuelen);
/* Hints (runtime/comm_hints.c): keep the hints of `in` that Cadence uses
 * in *dst (made when NULL; the caller holds the owner's lock if any), and
 * MPI_Comm_get_info's answer. */
struct cdn_info;
int cdn_comm_hints_take(struct cdn_info **dst, struct cdn_info *in, const char *caller);
int cdn_comm_hints_report(struct cdn_comm *c, MPI_Info *info_used, const char *caller);
/* The progress context a new communicator asks for by its hints
 * (cadence_progress_context: "auto" or a context's number), if any, into
 * c->pctx; MPI_ERR_INFO_VALUE naming the key and the contexts there are
 * for a value that names none. */
int cdn_comm_take_pctx(struct cdn_comm *c, const char *caller);
/* True once any communicator of this process kept a cadence_ hint: until
 * then a lookup of one finds nothing, and the collectives skip it. */
bool cdn_comm_cadence_hints(void);

/* Topology neighbours of comm for neighbourhood collectives, in the order
 * MPI_Dist_graph_neighbors / MPI_Cart (-1,+1 per dimension) define; the
 * arrays stay owned by comm.  MPI_ERR_TOPOLOGY when comm has no topology. */
int cdn_comm_neighbors(struct cdn_comm *comm, int *indegree, const int **sources,
                       int *outdegree, const int **destinations);

/* The world rank of a point-to-point rank of comm (for transports'
 * addressing); for an intercommunicator a rank of the remote group. */
static inline int cdn_comm_world_rank(const struct cdn_comm *comm, int rank)
{
    return comm->world_ranks != NULL ? comm->world_ranks[rank] : rank;
}

/* How many ranks a point-to-point call may name: the remote group's size
 * on an intercommunicator. */
static inline int cdn_comm_peer_size(const struct cdn_comm *comm)
{
    return comm->inter ? comm->remote_size : comm->size;
}

void cdn_comm_destroy(struct cdn_comm *comm);
static inline void cdn_comm_retain(struct cdn_comm *comm)
{
    if (!comm->builtin)
        atomic_fetch_add_explicit(&comm->refs, 1, memory_order_relaxed);
}
static inline void cdn_comm_release(struct cdn_comm *comm)
{
    if (!comm->builtin && atomic_fetch_sub_explicit(&comm->refs, 1, memory_order_acq_rel) == 1)
        cdn_comm_destroy(comm);
}

/* A new communicator object with one reference, taking over the caller's
 * references to the groups (remote NULL: an intracommunicator) and to
 * local_comm.  NULL when out of memory (the references are dropped). */
struct cdn_comm *cdn_comm_new(struct cdn_group *group, struct cdn_group *remote, uint32_t ctx,
                              struct cdn_comm *local_comm);
/* Give c a user handle; on failure c is released. */
int cdn_comm_publish(struct cdn_comm *c, MPI_Comm *handle, const char *caller);
/* MPI_Comm_free after the attributes are deleted: forget the handle, drop
 * its reference. */
void cdn_comm_unpublish(struct cdn_comm *c);
/* How many run-time communicators have a handle (leak checks). */
int cdn_comm_live(void);

/* The predefined communicators (MPI_COMM_WORLD, MPI_COMM_SELF: handle
 * index 0 and 1) and the table of those created at run time (comm.c). */
extern CDN_HANDLE_TABLE_HIDDEN struct cdn_comm cdn_comm_builtin[2];
extern CDN_HANDLE_TABLE_HIDDEN struct cdn_handle_table cdn_comm_table;

/* cdn_comm_get where MPI is known to be ready (behind the entry point's
 * check: the point-to-point calls' argument test). */
static inline struct cdn_comm *cdn_comm_lookup(MPI_Comm handle)
{
    if (CDN_HANDLE_KIND(handle) == CDN_HK_BUILTIN) {
        uint32_t i = (uint32_t)handle - (uint32_t)MPI_COMM_WORLD;  /* SELF is WORLD + 1 */
        return i < 2 ? &cdn_comm_builtin[i] : NULL;
    }
    struct cdn_comm *c = cdn_handle_get_typed(&cdn_comm_table, CDN_OBJ_COMM, handle);
    if (c != NULL && atomic_load_explicit(&c->pending, memory_order_acquire))
        return NULL;
    if (CDN_UNLIKELY(c != NULL && c->threads != NULL))
        return cdn_comm_thread_view(c);
    return c;
}
/* The object behind a handle itself, a thread communicator's included. */
static inline struct cdn_comm *cdn_comm_lookup_raw(MPI_Comm handle)
{
    if (CDN_HANDLE_KIND(handle) == CDN_HK_BUILTIN)
        return NULL;
    return cdn_handle_get_typed(&cdn_comm_table, CDN_OBJ_COMM, handle);
}

/* The communicator behind a handle, or NULL (invalid, MPI not ready, or
 * an MPI_Comm_idup result whose request has not completed). */
static inline struct cdn_comm *cdn_comm_get(MPI_Comm handle)
{
    return cdn_api_ready() ? cdn_comm_lookup(handle) : NULL;
}
/* Is handle an MPI_Comm_idup result still being set up? (messages) */
bool cdn_comm_handle_pending(MPI_Comm handle);
/* The internal communicator spanning the whole job (MPI_COMM_WORLD's
 * object), also when only sessions are initialised. */
struct cdn_comm *cdn_comm_world(void);
/* The error handler in force on comm (never NULL). */
struct cdn_errhandler *cdn_comm_errh(struct cdn_comm *comm);
/* Replace comm's error handler (takes a reference to eh). */
void cdn_comm_set_errh(struct cdn_comm *comm, struct cdn_errhandler *eh);
/* Set up MPI_COMM_WORLD and MPI_COMM_SELF for this process; undo it. */
int cdn_comm_init_builtin(int world_rank, int world_size);
/* Before the progress engine goes: drop the predefined communicators'
 * collective state (it may hold requests) and wait for the messages in
 * their attached buffers to be sent. */
void cdn_comm_drop_coll_builtin(void);
void cdn_comm_finalize_builtin(void);

#endif
