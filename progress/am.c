/*
 * Active-message dispatch (am.h) and the end of one-sided transfers.
 */
#include "progress/am.h"

#include <mpi.h>
#include <stdatomic.h>

#include "progress/engine.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

static _Atomic(cdn_am_handler) handlers[CDN_AM_MAX];

void cdn_am_register(unsigned id, cdn_am_handler h)
{
    if (id == 0 || id >= CDN_AM_MAX)
        cdn_rt_abort(1, "cadence: active-message handler id %u is out of range", id);
    atomic_store_explicit(&handlers[id], h, memory_order_release);
}

int cdn_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len)
{
    if (tp == NULL)
        tp = cdn_progress_transport_for(peer);
    if (tp == NULL)
        return cdn_err(MPI_ERR_OTHER, "active message: no transport reaches world rank %d", peer);
    if (len > tp->am_max)
        return cdn_err(MPI_ERR_OTHER, "active message: %zu bytes is over the %s transport's "
                       "limit of %zu", len, tp->ops->name, tp->am_max);
    return tp->ops->am_send(tp, peer, id, data, len);
}

void cdn_am_arrived(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len)
{
    cdn_am_handler h = id < CDN_AM_MAX ? atomic_load_explicit(&handlers[id], memory_order_acquire)
                                       : NULL;
    if (h == NULL)
        cdn_rt_abort(1, "cadence: rank %d sent an active message for handler %u, which this "
                     "process does not have", peer, id);
    h(tp, peer, data, len);
}

void cdn_xfer_done(struct cdn_xfer *x, int err)
{
    x->on_done(x, err);
}
