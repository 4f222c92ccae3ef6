/* The message protocol over frames, shared by tcp/ and udp/ (see frames.h). */
#include "transport/frames.h"

#include <string.h>

#include "progress/job.h"
#include "runtime/error.h"
#include "transport/xfer_list.h"

void cdn_fpeer_init(struct cdn_fpeer *fp, int world, const struct cdn_fpeer_ops *ops)
{
    memset(fp, 0, sizeof *fp);
    fp->world = world;
    fp->ops = ops;
    pthread_mutex_init(&fp->lock, NULL);
}

static struct cdn_fpeer *fpeer(struct cdn_transport *tp, int world)
{
    const struct cdn_frames_peers *t = tp->priv;
    return (struct cdn_fpeer *)((char *)t->base + (size_t)world * t->stride + t->offset);
}

int cdn_frames_send(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct cdn_fpeer *fp = fpeer(tp, sx->peer);
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    cdn_p2p_wire_hdr(sx, &f.h);
    bool eager = f.h.bytes <= tp->eager_limit;
    const void *payload = NULL;
    if (eager && f.h.bytes > 0 && (payload = cdn_p2p_send_contig(sx)) == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "send: out of memory packing %llu bytes for rank %d",
                       (unsigned long long)f.h.bytes, fp->world);
    pthread_mutex_lock(&fp->lock);
    int rc = fp->ops->usable(tp, fp, "send");
    if (rc != MPI_SUCCESS) {
        pthread_mutex_unlock(&fp->lock);
        return rc;
    }
    if (eager) {
        f.type = F_EAGER;
        f.len = (uint32_t)f.h.bytes;
    } else {
        f.type = F_RTS;
        f.h.flags |= CDN_WIRE_RNDV;
    }
    bool waits = !eager || (f.h.flags & CDN_WIRE_SYNC);
    sx->rndv = !eager;
    if (waits) {  /* before writing: the answer may come at once */
        sx->state = eager ? CDN_FRAMES_WAIT_ACK : CDN_FRAMES_WAIT_CTS;
        cdn_xfer_push(&fp->waiting, sx);
    }
    sx->wire_id = fp->msgs_out;
    rc = fp->ops->put(tp, fp, &f, payload, eager ? (size_t)f.h.bytes : 0);
    if (rc == MPI_SUCCESS)
        fp->msgs_out++;
    else if (waits)
        cdn_xfer_remove(&fp->waiting, sx);
    pthread_mutex_unlock(&fp->lock);
    if (rc == MPI_SUCCESS && eager)
        cdn_p2p_send_done(sx, false, MPI_SUCCESS);
    return rc;
}

/* A frame of the transport's own (lock taken here). */
static int put_frame(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
                     const void *payload, size_t len, const char *what)
{
    pthread_mutex_lock(&fp->lock);
    int rc = fp->ops->usable(tp, fp, what);
    if (rc == MPI_SUCCESS)
        rc = fp->ops->put(tp, fp, f, payload, len);
    pthread_mutex_unlock(&fp->lock);
    return rc;
}

int cdn_frames_ack(struct cdn_transport *tp, int peer, uint64_t cookie)
{
    struct cdn_fpeer *fp = fpeer(tp, peer);
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    f.type = F_ACK;
    f.a = cookie;
    return put_frame(tp, fp, &f, NULL, 0, "synchronous send acknowledgement");
}

int cdn_frames_am(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len)
{
    struct cdn_fpeer *fp = fpeer(tp, peer);
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    f.type = F_AM;
    f.a = id;
    f.len = (uint32_t)len;
    return put_frame(tp, fp, &f, data, len, "active message");
}

/* The receiver dropped a message of ours (a cancel): its send waits for
 * nothing more. */
void cdn_frames_dropped(struct cdn_transport *tp, struct cdn_xfer *sx)
{
    struct cdn_fpeer *fp = fpeer(tp, sx->peer);
    pthread_mutex_lock(&fp->lock);
    cdn_xfer_remove(&fp->waiting, sx);
    pthread_mutex_unlock(&fp->lock);
}

int cdn_frames_pull(struct cdn_transport *tp, struct cdn_xfer *rx)
{
    struct cdn_fpeer *fp = fpeer(tp, rx->peer);
    struct tcp_frame f;
    memset(&f, 0, sizeof f);
    f.type = F_CTS;
    f.a = rx->cookie;
    f.b = (uint64_t)(uintptr_t)rx;
    f.h.bytes = rx->bytes;
    pthread_mutex_lock(&fp->lock);
    int rc = fp->ops->usable(tp, fp, "receive");
    if (rc == MPI_SUCCESS) {
        rx->moved = 0;
        if (rx->bytes > 0)
            cdn_xfer_push(&fp->pulls, rx);
        rc = fp->ops->put(tp, fp, &f, NULL, 0);
        if (rc != MPI_SUCCESS && rx->bytes > 0)
            cdn_xfer_remove(&fp->pulls, rx);
    }
    pthread_mutex_unlock(&fp->lock);
    if (rc == MPI_SUCCESS && rx->bytes == 0)
        cdn_p2p_recv_done(rx, MPI_SUCCESS);
    return rc;
}

void cdn_frames_take(struct cdn_fpeer *fp, struct cdn_frames_held *h)
{
    h->waiting = fp->waiting;
    h->pulls = fp->pulls;
    fp->waiting = fp->pulls = NULL;
}

void cdn_frames_fail(struct cdn_frames_held *h, int err)
{
    while (h->waiting != NULL) {
        struct cdn_xfer *r = h->waiting;
        cdn_xfer_remove(&h->waiting, r);
        if (r->state == CDN_FRAMES_WAIT_ACK)
            cdn_p2p_acked((uint64_t)(uintptr_t)r, err);
        else
            cdn_p2p_send_done(r, true, err);
    }
    while (h->pulls != NULL) {
        struct cdn_xfer *r = h->pulls;
        cdn_xfer_remove(&h->pulls, r);
        cdn_p2p_recv_done(r, err);
    }
}

void cdn_frames_bad_peer(const struct cdn_transport *tp, const struct cdn_fpeer *fp,
                         const char *why)
{
    cdn_rt_abort(1, "cadence: rank %d: %s: rank %d sent a malformed frame (%s); ending the job",
                 cdn_job_rank(), tp->ops->name, fp->world, why);
}

/* Take the send a cookie names off the waiting list (NULL if none). */
static struct cdn_xfer *take_waiting(struct cdn_fpeer *fp, uint64_t cookie, int want)
{
    pthread_mutex_lock(&fp->lock);
    struct cdn_xfer *r = cdn_xfer_take(&fp->waiting, cookie, want);
    pthread_mutex_unlock(&fp->lock);
    return r;
}

void cdn_frames_arrived(struct cdn_transport *tp, struct cdn_fpeer *fp, const struct tcp_frame *f,
                        const unsigned char *payload)
{
    switch (f->type) {
    case F_EAGER:
        cdn_p2p_arrived(tp, fp->world, &f->h, payload, NULL, fp->msgs_in++);
        break;
    case F_RTS:  /* the data comes in DATA frames after a CTS: no memory key */
        cdn_p2p_arrived(tp, fp->world, &f->h, NULL, NULL, fp->msgs_in++);
        break;
    case F_ACK:
        if (take_waiting(fp, f->a, CDN_FRAMES_WAIT_ACK) == NULL)
            cdn_frames_bad_peer(tp, fp, "acknowledgement for no waiting synchronous send");
        cdn_p2p_acked(f->a, MPI_SUCCESS);
        break;
    case F_AM:
        cdn_am_arrived(tp, fp->world, (unsigned)f->a, payload, f->len);
        break;
    default:
        cdn_frames_bad_peer(tp, fp, "a frame out of place");
    }
}

struct cdn_xfer *cdn_frames_cts(struct cdn_transport *tp, struct cdn_fpeer *fp,
                                const struct tcp_frame *f)
{
    struct cdn_xfer *s = take_waiting(fp, f->a, CDN_FRAMES_WAIT_CTS);
    if (s == NULL)
        cdn_frames_bad_peer(tp, fp, "clear-to-send for no waiting send");
    if (f->h.bytes > s->bytes)
        cdn_frames_bad_peer(tp, fp, "clear-to-send for more bytes than the message has");
    if (f->h.bytes == 0) {
        cdn_p2p_send_done(s, true, MPI_SUCCESS);
        return NULL;
    }
    return s;
}

struct cdn_xfer *cdn_frames_data(struct cdn_transport *tp, struct cdn_fpeer *fp,
                                 const struct tcp_frame *f)
{
    pthread_mutex_lock(&fp->lock);
    struct cdn_xfer *r = cdn_xfer_find(fp->pulls, f->a);
    pthread_mutex_unlock(&fp->lock);
    if (r == NULL)
        cdn_frames_bad_peer(tp, fp, "data for no waiting receive");
    if (f->b != r->moved || f->len > r->bytes - f->b)
        cdn_frames_bad_peer(tp, fp, "data out of order or past the end of the message");
    return r;
}

void cdn_frames_data_moved(struct cdn_fpeer *fp, struct cdn_xfer *r)
{
    if (r->moved < r->bytes)
        return;
    pthread_mutex_lock(&fp->lock);
    cdn_xfer_remove(&fp->pulls, r);
    pthread_mutex_unlock(&fp->lock);
    cdn_p2p_recv_done(r, MPI_SUCCESS);
}
