/*
 * Buffered sends (MPI_Bsend, MPI_Ibsend, MPI_Bsend_init): the message is
 * packed into the user's attached buffer and sent from there by an internal
 * request, so the user's request is complete as soon as the copy is made.
 *
 * The attached buffer is managed first-fit over a list of the regions in
 * use, sorted by address.  Each region is charged MPI_BSEND_OVERHEAD bytes
 * besides the message, as MPI's sizing rule (MPI_Pack_size +
 * MPI_BSEND_OVERHEAD per message) promises users.  Detach waits for every
 * buffered message to be sent.
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
};

static struct {
    pthread_mutex_t lock;
    char *buf;
    size_t size;
    struct region *used;   /* sorted by start */
    atomic_int inflight;
} bs = {.lock = PTHREAD_MUTEX_INITIALIZER};

int cdn_bsend_attach(void *buf, MPI_Count size, const char *caller)
{
    if (size < 0)
        return cdn_err(MPI_ERR_ARG, "%s: size %lld is negative", caller, (long long)size);
    if (buf == NULL && size > 0)
        return cdn_err(MPI_ERR_BUFFER, "%s: buffer is NULL with size %lld", caller, (long long)size);
    pthread_mutex_lock(&bs.lock);
    int rc = MPI_SUCCESS;
    if (bs.buf != NULL)
        rc = cdn_err(MPI_ERR_BUFFER, "%s: a buffer of %zu bytes is already attached; detach it "
                     "first", caller, bs.size);
    else {
        bs.buf = buf;
        bs.size = (size_t)size;
    }
    pthread_mutex_unlock(&bs.lock);
    return rc;
}

int cdn_bsend_detach(void *buf_addr, MPI_Count *size, const char *caller)
{
    if (buf_addr == NULL || size == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, buf_addr == NULL ? "buffer_addr" : "size");
    /* Every buffered message must be on its way before the buffer goes back. */
    cdn_progress_app_enter();
    while (atomic_load(&bs.inflight) > 0) {
        unsigned gen = atomic_load(&cdn_engine.gen);
        if (atomic_load(&bs.inflight) == 0 || cdn_progress_poll() > 0)
            continue;
        cdn_progress_block(gen);
    }
    cdn_progress_app_leave();
    pthread_mutex_lock(&bs.lock);
    *(void **)buf_addr = bs.buf;
    *size = (MPI_Count)bs.size;
    bs.buf = NULL;
    bs.size = 0;
    pthread_mutex_unlock(&bs.lock);
    return MPI_SUCCESS;
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

static void region_free(struct region *reg)
{
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
    atomic_fetch_sub(&bs.inflight, 1);
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
    size_t need = (size_t)p->bytes + MPI_BSEND_OVERHEAD;
    need = (need + 15) & ~(size_t)15;
    pthread_mutex_lock(&bs.lock);
    struct region *reg = bs.buf != NULL ? region_alloc(need) : NULL;
    size_t attached = bs.size;
    pthread_mutex_unlock(&bs.lock);
    int rc = MPI_SUCCESS;
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
        atomic_fetch_sub(&bs.inflight, 1);
        region_free(reg);
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
