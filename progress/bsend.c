/*
 * Buffered sends (MPI_Bsend, MPI_Ibsend, MPI_Bsend_init): the message is
 * packed into an attached buffer and sent from there by an internal
 * request, so the user's request is complete as soon as the copy is made.
 *
 * MPI-4.1 3.6 gives three places to attach a buffer: a communicator
 * (MPI_Comm_attach_buffer), a session (MPI_Session_attach_buffer, used by
 * the communicators made from its groups and those derived from them) and
 * the process (MPI_Buffer_attach).  A buffered send takes the first of the
 * three its communicator has attached.  Each is a pool below: the process
 * pool is static, a communicator's or session's is made at its first
 * attach and freed with its owner -- which outlives the messages in it,
 * since each internal send holds its communicator, and a communicator its
 * session.  Freeing a communicator with a buffer attached thus detaches it
 * implicitly once the messages in it are sent; MPI_Session_finalize detaches
 * (and waits) like MPI_Session_detach_buffer.
 *
 * An attached buffer is managed first-fit over a list of the regions in
 * use, sorted by address.  Each region is charged MPI_BSEND_OVERHEAD bytes
 * besides the message, as MPI's sizing rule (MPI_Pack_size +
 * MPI_BSEND_OVERHEAD per message) promises users.  Detach and flush wait
 * for every message of that buffer to be sent; iflush returns a request
 * the last of them completes.
 *
 * Attaching MPI_BUFFER_AUTOMATIC (MPI-4.1 3.6) turns on automatic
 * buffering: each buffered message gets a block of its own from malloc,
 * freed once it is sent, so a Bsend never fails for want of space; detach
 * then hands MPI_BUFFER_AUTOMATIC back with size 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "progress/p2p.h"
#include "runtime/comm.h"
#include "runtime/error.h"
#include "runtime/session.h"

struct cdn_bsend_pool {
    char *buf;
    size_t size;
    bool attached;
    bool automatic;        /* MPI_BUFFER_AUTOMATIC is attached */
    struct region *used;   /* sorted by start */
    atomic_int inflight;   /* changed under lock */
    struct cdn_request *flush_waiters;  /* iflush requests, linked by next */
};

struct region {
    struct region *next;
    struct cdn_bsend_pool *pool;
    char *start;
    size_t len;     /* message + MPI_BSEND_OVERHEAD */
    bool owned;     /* start is a malloc block of its own (automatic buffering) */
};

/* One lock for every pool: buffered sends are not a hot path, and one lock
 * makes a pool's creation, use and detach simple to reason about. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cdn_bsend_pool process;

/* The pool of slot (NULL: the process's), made when make and missing;
 * called with lock held.  NULL when missing (or out of memory). */
static struct cdn_bsend_pool *pool_of(struct cdn_bsend_pool **slot, bool make)
{
    if (slot == NULL)
        return &process;
    if (*slot == NULL && make)
        *slot = calloc(1, sizeof **slot);
    return *slot;
}

int cdn_bsend_attach(struct cdn_bsend_pool **slot, void *buf, MPI_Count size, const char *caller)
{
    bool automatic = buf == MPI_BUFFER_AUTOMATIC;  /* its size is ignored */
    if (!automatic && size < 0)
        return cdn_err(MPI_ERR_ARG, "%s: size %lld is negative", caller, (long long)size);
    if (buf == NULL && size > 0)
        return cdn_err(MPI_ERR_BUFFER, "%s: buffer is NULL with size %lld", caller, (long long)size);
    pthread_mutex_lock(&lock);
    /* the owners free their pools through these (runtime/comm.h) */
    cdn_bsend_hooks = (struct cdn_bsend_hooks){cdn_bsend_flush, cdn_bsend_pool_free};
    struct cdn_bsend_pool *bs = pool_of(slot, true);
    int rc = MPI_SUCCESS;
    if (bs == NULL)
        rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    else if (bs->automatic)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: MPI_BUFFER_AUTOMATIC is already attached; detach it "
                     "first", caller);
    else if (bs->attached && bs->buf != NULL)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: a buffer of %zu bytes is already attached; detach it "
                     "first", caller, bs->size);
    else {
        bs->attached = true;
        bs->automatic = automatic;
        bs->buf = automatic ? NULL : buf;
        bs->size = automatic ? 0 : (size_t)size;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static bool none_inflight(void *arg)
{
    return atomic_load(&((struct cdn_bsend_pool *)arg)->inflight) == 0;
}

/* Wait until no message of slot's pool is in flight; the pool or NULL. */
static struct cdn_bsend_pool *drain(struct cdn_bsend_pool **slot)
{
    pthread_mutex_lock(&lock);
    struct cdn_bsend_pool *bs = pool_of(slot, false);
    pthread_mutex_unlock(&lock);
    if (bs != NULL)
        cdn_progress_wait_until(none_inflight, bs);
    return bs;
}

int cdn_bsend_detach(struct cdn_bsend_pool **slot, void *buf_addr, MPI_Count *size,
                     const char *caller)
{
    if (buf_addr == NULL || size == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, buf_addr == NULL ? "buffer_addr" : "size");
    /* Every buffered message must be on its way before the buffer goes
     * back -- checked again under the lock, for a send another thread
     * started meanwhile. */
    void *was = NULL;
    MPI_Count had = 0;
    for (struct cdn_bsend_pool *bs; (bs = drain(slot)) != NULL;) {
        pthread_mutex_lock(&lock);
        bool idle = atomic_load(&bs->inflight) == 0;
        if (idle) {
            was = bs->automatic ? MPI_BUFFER_AUTOMATIC : bs->buf;
            had = (MPI_Count)bs->size;
            bs->buf = NULL;
            bs->size = 0;
            bs->attached = bs->automatic = false;
        }
        pthread_mutex_unlock(&lock);
        if (idle)
            break;
    }
    *(void **)buf_addr = was;
    *size = had;
    return MPI_SUCCESS;
}

int cdn_bsend_flush(struct cdn_bsend_pool **slot)
{
    /* what detach and a new attach would do, the buffer staying in place */
    drain(slot);
    return MPI_SUCCESS;
}

static const struct cdn_request_ops iflush_ops = {.name = "buffer iflush"};

struct cdn_request *cdn_bsend_iflush(struct cdn_bsend_pool **slot)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_DONE, &iflush_ops, NULL);
    if (r == NULL)
        return NULL;
    cdn_status_empty(&r->status);
    /* Under the lock, so the last buffered message (inflight_done) either
     * sees this waiter or has already made inflight 0 here. */
    pthread_mutex_lock(&lock);
    struct cdn_bsend_pool *bs = pool_of(slot, false);
    if (bs != NULL && atomic_load(&bs->inflight) > 0) {
        cdn_request_arm(r, 1);
        r->next = bs->flush_waiters;
        bs->flush_waiters = r;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

void cdn_bsend_pool_free(struct cdn_bsend_pool **slot)
{
    /* The owner is going, so none of its messages is in flight. */
    free(*slot);
    *slot = NULL;
}

/* A buffered message of bs is on its way (or failed to start): the last one
 * completes the iflush requests waiting for it. */
static void inflight_done(struct cdn_bsend_pool *bs)
{
    pthread_mutex_lock(&lock);
    struct cdn_request *w = NULL;
    if (atomic_fetch_sub(&bs->inflight, 1) == 1) {
        w = bs->flush_waiters;
        bs->flush_waiters = NULL;
    }
    pthread_mutex_unlock(&lock);
    while (w != NULL) {
        struct cdn_request *next = w->next;
        w->next = NULL;
        cdn_request_complete(w, MPI_SUCCESS);
        w = next;
    }
}

/* First fit in bs; called with lock held. */
static struct region *region_alloc(struct cdn_bsend_pool *bs, size_t len)
{
    char *at = bs->buf;
    struct region **link = &bs->used;
    for (struct region *r = bs->used;; r = r->next) {
        char *end = r != NULL ? r->start : bs->buf + bs->size;
        if ((size_t)(end - at) >= len) {
            struct region *n = malloc(sizeof *n);
            if (n == NULL)
                return NULL;
            n->start = at;
            n->len = len;
            n->owned = false;
            n->next = r;
            *link = n;
            return n;
        }
        if (r == NULL)
            return NULL;
        at = r->start + r->len;
        link = &r->next;
    }
}

/* A block of its own for one message, outside any attached buffer. */
static struct region *region_alloc_owned(size_t len)
{
    struct region *n = malloc(sizeof *n);
    if (n != NULL && (n->start = malloc(len)) == NULL) {
        free(n);
        n = NULL;
    }
    if (n != NULL) {
        n->len = len;
        n->owned = true;
        n->next = NULL;
    }
    return n;
}

static void region_free(struct region *reg)
{
    if (reg->owned) {
        free(reg->start);
        free(reg);
        return;
    }
    pthread_mutex_lock(&lock);
    for (struct region **link = &reg->pool->used; *link != NULL; link = &(*link)->next) {
        if (*link == reg) {
            *link = reg->next;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    free(reg);
}

/* The internal send from the attached buffer: its region goes back when done. */
static void inner_complete(struct cdn_request *r)
{
    struct region *reg = r->u.p2p.bsend_region;
    struct cdn_bsend_pool *bs = reg->pool;
    region_free(reg);
    r->u.p2p.bsend_region = NULL;
    inflight_done(bs);
}

static void inner_free(struct cdn_request *r)
{
    cdn_dt_segment_fini(&r->u.p2p.seg);  /* the one reference on u.p2p.dt */
}

static const struct cdn_request_ops inner_ops = {
    .name = "bsend", .complete = inner_complete, .free = inner_free,
};

/* The buffer a buffered send on comm uses (MPI-4.1 3.6): the
 * communicator's, else its session's, else the process's; called with lock
 * held.  *whose names it for messages. */
static struct cdn_bsend_pool *pool_for(struct cdn_comm *comm, const char **whose)
{
    if (comm->bsend != NULL && comm->bsend->attached) {
        *whose = "the communicator's buffer";
        return comm->bsend;
    }
    struct cdn_session *s = comm->session;
    if (s != NULL && s->bsend != NULL && s->bsend->attached) {
        *whose = "the session's buffer";
        return s->bsend;
    }
    *whose = "the process's buffer (MPI_Buffer_attach)";
    return &process;
}

int cdn_bsend_start(struct cdn_request *r)
{
    struct cdn_p2p *p = &r->u.p2p;
    /* Exactly what MPI's sizing rule charges (no rounding up: a buffer of
     * MPI_Pack_size + MPI_BSEND_OVERHEAD bytes must hold the message). */
    size_t need = (size_t)p->bytes + MPI_BSEND_OVERHEAD;
    const char *whose;
    pthread_mutex_lock(&lock);
    struct cdn_bsend_pool *bs = pool_for(p->comm, &whose);
    bool automatic = bs->automatic, attached = bs->attached;
    struct region *reg = attached && !automatic ? region_alloc(bs, need) : NULL;
    size_t room = bs->size;
    /* counted before the lock goes, so a detach waits for this message */
    if (reg != NULL || automatic)
        atomic_fetch_add(&bs->inflight, 1);
    pthread_mutex_unlock(&lock);
    int rc = MPI_SUCCESS;
    if (automatic && (reg = region_alloc_owned(need)) == NULL) {
        inflight_done(bs);
        rc = cdn_err(MPI_ERR_NO_MEM, "MPI_Bsend: no memory for a message of %lld bytes "
                     "(MPI_BUFFER_AUTOMATIC is attached as %s)", (long long)p->bytes, whose);
    } else if (reg == NULL && !attached) {
        rc = cdn_err(MPI_ERR_BUFFER, "MPI_Bsend: a message of %lld bytes needs a buffer, and "
                     "none is attached to the communicator, its session or the process",
                     (long long)p->bytes);
    } else if (reg == NULL) {
        rc = cdn_err(MPI_ERR_BUFFER, "MPI_Bsend: a message of %lld bytes needs %zu bytes of "
                     "buffer space; %s (%zu bytes) does not have them free",
                     (long long)p->bytes, need, whose, room);
    }
    if (rc != MPI_SUCCESS) {
        cdn_request_complete(r, rc);
        return MPI_SUCCESS;
    }
    reg->pool = bs;
    char *data = reg->start + MPI_BSEND_OVERHEAD;
    cdn_dt_pack(&p->seg, 0, data, p->bytes);
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    struct cdn_request *inner;
    rc = cdn_p2p_send(data, p->bytes, byte, p->rank, p->tag, p->comm, CDN_SEND_STANDARD, true,
                      &inner);
    if (rc != MPI_SUCCESS) {
        region_free(reg);
        inflight_done(bs);
        cdn_request_complete(r, rc);
        return MPI_SUCCESS;
    }
    inner->ops = &inner_ops;
    inner->u.p2p.bsend_region = reg;
    cdn_p2p_send_start(inner);
    cdn_request_release(inner);  /* the engine's reference keeps it until sent */
    cdn_request_complete(r, MPI_SUCCESS);
    return MPI_SUCCESS;
}
