/*
 * Buffered sends (MPI_Bsend, MPI_Ibsend, MPI_Bsend_init): the message is
 * packed into the user's attached buffer and sent from there by an internal
 * request, so the user's request is complete as soon as the copy is made.
 *
 * The attached buffer is managed first-fit over a list of the regions in
 * use, sorted by address.  Each region is charged MPI_BSEND_OVERHEAD bytes
 * besides the message, as MPI's sizing rule (MPI_Pack_size +
 * MPI_BSEND_OVERHEAD per message) promises users.  Detach and
 * MPI_Buffer_flush wait for every buffered message to be sent;
 * MPI_Buffer_iflush returns a request the last of them completes.
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
#include "runtime/error.h"

struct region {
    struct region *next;
    char *start;
    size_t len;     /* message + MPI_BSEND_OVERHEAD */
    bool owned;     /* start is a malloc block of its own (automatic buffering) */
};

static struct {
    pthread_mutex_t lock;
    char *buf;
    size_t size;
    bool automatic;        /* MPI_BUFFER_AUTOMATIC is attached */
    struct region *used;   /* sorted by start */
    atomic_int inflight;
    struct cdn_request *flush_waiters;  /* MPI_Buffer_iflush requests, linked by next */
} bs = {.lock = PTHREAD_MUTEX_INITIALIZER};

int cdn_bsend_attach(void *buf, MPI_Count size, const char *caller)
{
    bool automatic = buf == MPI_BUFFER_AUTOMATIC;  /* its size is ignored */
    if (!automatic && size < 0)
        return cdn_err(MPI_ERR_ARG, "%s: size %lld is negative", caller, (long long)size);
    if (buf == NULL && size > 0)
        return cdn_err(MPI_ERR_BUFFER, "%s: buffer is NULL with size %lld", caller, (long long)size);
    pthread_mutex_lock(&bs.lock);
    int rc = MPI_SUCCESS;
    if (bs.automatic)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: MPI_BUFFER_AUTOMATIC is already attached; detach it "
                     "first", caller);
    else if (bs.buf != NULL)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: a buffer of %zu bytes is already attached; detach it "
                     "first", caller, bs.size);
    else if (automatic)
        bs.automatic = true;
    else {
        bs.buf = buf;
        bs.size = (size_t)size;
    }
    pthread_mutex_unlock(&bs.lock);
    return rc;
}

static bool none_inflight(void *arg)
{
    (void)arg;
    return atomic_load(&bs.inflight) == 0;
}

int cdn_bsend_detach(void *buf_addr, MPI_Count *size, const char *caller)
{
    if (buf_addr == NULL || size == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, buf_addr == NULL ? "buffer_addr" : "size");
    /* Every buffered message must be on its way before the buffer goes back. */
    cdn_progress_wait_until(none_inflight, NULL);
    pthread_mutex_lock(&bs.lock);
    *(void **)buf_addr = bs.automatic ? MPI_BUFFER_AUTOMATIC : bs.buf;
    *size = (MPI_Count)bs.size;
    bs.buf = NULL;
    bs.size = 0;
    bs.automatic = false;
    pthread_mutex_unlock(&bs.lock);
    return MPI_SUCCESS;
}

int cdn_bsend_flush(void)
{
    /* what detach and a new attach would do, the buffer staying in place */
    cdn_progress_wait_until(none_inflight, NULL);
    return MPI_SUCCESS;
}

static const struct cdn_request_ops iflush_ops = {.name = "buffer iflush"};

struct cdn_request *cdn_bsend_iflush(void)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_DONE, &iflush_ops, NULL);
    if (r == NULL)
        return NULL;
    cdn_status_empty(&r->status);
    /* Under the lock, so the last buffered message (inflight_done) either
     * sees this waiter or has already made inflight 0 here. */
    pthread_mutex_lock(&bs.lock);
    if (atomic_load(&bs.inflight) > 0) {
        cdn_request_arm(r, 1);
        r->next = bs.flush_waiters;
        bs.flush_waiters = r;
    }
    pthread_mutex_unlock(&bs.lock);
    return r;
}

/* A buffered message is on its way (or failed to start): the last one
 * completes the MPI_Buffer_iflush requests waiting for it. */
static void inflight_done(void)
{
    if (atomic_fetch_sub(&bs.inflight, 1) != 1)
        return;
    pthread_mutex_lock(&bs.lock);
    struct cdn_request *w = bs.flush_waiters;
    bs.flush_waiters = NULL;
    pthread_mutex_unlock(&bs.lock);
    while (w != NULL) {
        struct cdn_request *next = w->next;
        w->next = NULL;
        cdn_request_complete(w, MPI_SUCCESS);
        w = next;
    }
}

/* First fit; called with bs.lock held. */
static struct region *region_alloc(size_t len)
{
    char *at = bs.buf;
    struct region **link = &bs.used;
    for (struct region *r = bs.used;; r = r->next) {
        char *end = r != NULL ? r->start : bs.buf + bs.size;
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
    pthread_mutex_lock(&bs.lock);
    for (struct region **link = &bs.used; *link != NULL; link = &(*link)->next) {
        if (*link == reg) {
            *link = reg->next;
            break;
        }
    }
    pthread_mutex_unlock(&bs.lock);
    free(reg);
}

/* The internal send from the attached buffer: its region goes back when done. */
static void inner_complete(struct cdn_request *r)
{
    region_free((struct region *)r->u.p2p.bsend_region);
    r->u.p2p.bsend_region = NULL;
    inflight_done();
}

static void inner_free(struct cdn_request *r)
{
    if (r->u.p2p.dt != NULL) {
        cdn_dt_segment_fini(&r->u.p2p.seg);
        cdn_datatype_release(r->u.p2p.dt);
    }
}

static const struct cdn_request_ops inner_ops = {
    .name = "bsend", .complete = inner_complete, .free = inner_free,
};

int cdn_bsend_start(struct cdn_request *r)
{
    struct cdn_p2p *p = &r->u.p2p;
    /* Exactly what MPI's sizing rule charges (no rounding up: a buffer of
     * MPI_Pack_size + MPI_BSEND_OVERHEAD bytes must hold the message). */
    size_t need = (size_t)p->bytes + MPI_BSEND_OVERHEAD;
    pthread_mutex_lock(&bs.lock);
    bool automatic = bs.automatic;
    struct region *reg = bs.buf != NULL ? region_alloc(need) : NULL;
    size_t attached = bs.size;
    pthread_mutex_unlock(&bs.lock);
    int rc = MPI_SUCCESS;
    if (automatic)
        reg = region_alloc_owned(need);
    if (reg == NULL && automatic) {
        rc = cdn_err(MPI_ERR_NO_MEM, "MPI_Bsend: no memory for a message of %lld bytes "
                     "(MPI_BUFFER_AUTOMATIC is attached)", (long long)p->bytes);
        cdn_request_complete(r, rc);
        return MPI_SUCCESS;
    }
    if (reg == NULL) {
        rc = cdn_err(MPI_ERR_BUFFER, "MPI_Bsend: a message of %lld bytes needs %zu bytes of "
                     "buffer space; the attached buffer (%zu bytes) does not have them free",
                     (long long)p->bytes, (size_t)p->bytes + MPI_BSEND_OVERHEAD, attached);
        cdn_request_complete(r, rc);
        return MPI_SUCCESS;
    }
    char *data = reg->start + MPI_BSEND_OVERHEAD;
    cdn_dt_pack(&p->seg, 0, data, p->bytes);
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    struct cdn_request *inner;
    atomic_fetch_add(&bs.inflight, 1);
    rc = cdn_p2p_send(data, p->bytes, byte, p->rank, p->tag, p->comm, CDN_SEND_STANDARD, true,
                      &inner);
    if (rc != MPI_SUCCESS) {
        region_free(reg);
        inflight_done();
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

void cdn_bsend_finalize(void)
{
    MPI_Count size;
    void *buf;
    if (atomic_load(&bs.inflight) > 0)
        cdn_bsend_detach(&buf, &size, "MPI_Finalize");
}
