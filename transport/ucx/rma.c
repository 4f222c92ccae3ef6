/*
 * The UCX transport's one-sided operations: registration (ucp_mem_map),
 * get and put (ucp_get_nbx, ucp_put_nbx) by the peer's packed key.
 *
 * The contract names registered memory by {addr, key} with a 64-bit key;
 * a packed UCX key is a few hundred bytes.  So `key` is the number of the
 * registration at its owner, and the first get or put naming it asks the
 * owner for the packed key (M_RKEY_REQ, answered M_RKEY by the owner's
 * poll), unpacks it and keeps it, per peer, until finalize; the
 * operations that named it meanwhile wait in the peer's `rma_wait`.  Only
 * that first exchange needs the owner to poll; the data moves without it.
 *
 * A put is complete when its data is at the peer: the put is followed by
 * a flush of the endpoint, whose completion is the one reported.
 */
#include <stdlib.h>
#include <string.h>

#include "progress/engine.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "transport/ucx/ucx.h"

struct ucx_reg {
    struct ucx_reg *next;
    uint64_t id;
    ucp_mem_h memh;
    void *packed;
    size_t packed_len;
};

int ucx_mem_reg(struct cdn_transport *tp, void *addr, size_t len, struct cdn_mem_key *key)
{
    struct ucx_state *st = ucx_state_of(tp);
    struct ucx_reg *g = calloc(1, sizeof *g);
    if (g == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "ucx: no memory to register %zu bytes", len);
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = addr,
        .length = len > 0 ? len : 1,
    };
    pthread_mutex_lock(&st->lock);
    ucs_status_t s = ucp_mem_map(st->ctx, &mp, &g->memh);
    if (s == UCS_OK) {
        s = ucp_rkey_pack(st->ctx, g->memh, &g->packed, &g->packed_len);
        if (s != UCS_OK)
            ucp_mem_unmap(st->ctx, g->memh);
    }
    if (s == UCS_OK) {
        g->id = st->next_reg++;
        g->next = st->regs;
        st->regs = g;
    }
    pthread_mutex_unlock(&st->lock);
    if (s != UCS_OK) {
        free(g);
        return cdn_err(MPI_ERR_OTHER, "ucx: cannot register %zu bytes at %p: %s", len, addr,
                       ucs_status_string(s));
    }
    key->addr = (uint64_t)(uintptr_t)addr;
    key->key = g->id;
    return MPI_SUCCESS;
}

static void reg_free(struct ucx_state *st, struct ucx_reg *g)
{
    ucp_rkey_buffer_release(g->packed);
    ucp_mem_unmap(st->ctx, g->memh);
    free(g);
}

void ucx_mem_dereg(struct cdn_transport *tp, const struct cdn_mem_key *key)
{
    struct ucx_state *st = ucx_state_of(tp);
    pthread_mutex_lock(&st->lock);
    for (struct ucx_reg **link = &st->regs; *link != NULL; link = &(*link)->next)
        if ((*link)->id == key->key) {
            struct ucx_reg *g = *link;
            *link = g->next;
            reg_free(st, g);
            break;
        }
    pthread_mutex_unlock(&st->lock);
}

/* ---- moving data ---- */

static void rma_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_op *op = user_data;
    ucx_op_done(op->st, op, status);
    ucp_request_free(request);
}

/* Start a get or put with the unpacked key (lock held).  Returns the op
 * when it ended at once (for the caller to report after unlocking). */
static struct ucx_op *start(struct ucx_state *st, struct ucx_peer *p, struct cdn_xfer *x,
                            ucp_rkey_h rkey)
{
    bool get = x->state == OP_GET;
    struct ucx_op *op = ucx_op_new(st, get ? OP_GET : OP_PUT, p->world, x, 0);
    if (op == NULL)
        cdn_rt_abort(1, "cadence: rank %d: ucx: out of memory for a %s", st->me,
                     get ? "get" : "put");
    int err;
    ucp_ep_h ep = ucx_ep(st, p, &err, get ? "get" : "put");
    if (ep == NULL) {
        op->status = UCS_ERR_UNREACHABLE;
        return op;
    }
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = rma_cb,
        .user_data = op,
    };
    ucs_status_ptr_t r;
    if (get) {
        r = ucp_get_nbx(ep, x->dst, x->bytes, x->rkey.addr, rkey, &prm);
    } else {
        /* the put's own request is not tracked: the flush after it ends both */
        ucp_request_param_t none = {.op_attr_mask = 0};
        r = ucp_put_nbx(ep, x->src, x->bytes, x->rkey.addr, rkey, &none);
        if (UCS_PTR_IS_PTR(r))
            ucp_request_free(r);
        r = UCS_PTR_IS_ERR(r) ? r : ucp_ep_flush_nbx(ep, &prm);
    }
    if (UCS_PTR_IS_PTR(r)) {
        ucx_op_pending(op);
        return NULL;
    }
    op->status = UCS_PTR_STATUS(r);
    return op;
}

static struct ucx_rkey *rkey_find(struct ucx_peer *p, uint64_t id)
{
    for (struct ucx_rkey *k = p->rkeys; k != NULL; k = k->next)
        if (k->id == id)
            return k;
    return NULL;
}

static int xfer(struct ucx_state *st, struct cdn_xfer *x, int kind)
{
    struct ucx_peer *p = &st->peers[x->peer];
    struct ucx_op *now = NULL;
    bool ask = false;
    x->state = kind;
    pthread_mutex_lock(&st->lock);
    if (p->state == PEER_FAILED || p->state == PEER_GONE) {
        int err = ucx_peer_err(p, kind == OP_GET ? "get" : "put");
        pthread_mutex_unlock(&st->lock);
        return err;
    }
    struct ucx_rkey *k = rkey_find(p, x->rkey.key);
    if (k != NULL && k->missing) {
        pthread_mutex_unlock(&st->lock);
        return cdn_err(MPI_ERR_OTHER, "ucx: rank %d has no registration %llu", x->peer,
                       (unsigned long long)x->rkey.key);
    }
    if (k != NULL && k->rkey != NULL) {
        now = start(st, p, x, k->rkey);
    } else {
        if (k == NULL && (k = calloc(1, sizeof *k)) != NULL) {
            k->id = x->rkey.key;
            k->next = p->rkeys;
            p->rkeys = k;
            ask = true;
        }
        x->next = p->rma_wait;
        p->rma_wait = x;
    }
    pthread_mutex_unlock(&st->lock);
    if (now != NULL)
        ucx_report(st, now);
    if (ask)
        return ucx_ctrl(st, x->peer, M_RKEY_REQ, x->rkey.key, NULL, 0, "remote key request");
    return MPI_SUCCESS;
}

int ucx_get(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return xfer(ucx_state_of(tp), x, OP_GET);
}

int ucx_put(struct cdn_transport *tp, struct cdn_xfer *x)
{
    return xfer(ucx_state_of(tp), x, OP_PUT);
}

/* ---- the key exchange ---- */

void ucx_rkey_request(struct ucx_state *st, struct ucx_peer *p, uint64_t id)
{
    void *copy = NULL;
    size_t len = 0;
    pthread_mutex_lock(&st->lock);
    for (struct ucx_reg *g = st->regs; g != NULL; g = g->next)
        if (g->id == id) {
            if ((copy = malloc(g->packed_len)) != NULL) {
                memcpy(copy, g->packed, g->packed_len);
                len = g->packed_len;
            }
            break;
        }
    pthread_mutex_unlock(&st->lock);
    ucx_ctrl(st, p->world, M_RKEY, id, copy, len, "remote key");
    free(copy);
}

void ucx_rkey_arrived(struct ucx_state *st, struct ucx_peer *p, uint64_t id, const void *packed,
                      size_t len)
{
    struct ucx_op *now = NULL;
    struct cdn_xfer *failed = NULL;
    int err = MPI_SUCCESS;
    pthread_mutex_lock(&st->lock);
    struct ucx_rkey *k = rkey_find(p, id);
    if (k == NULL || k->rkey != NULL) {
        pthread_mutex_unlock(&st->lock);
        cdn_rt_abort(1, "cadence: rank %d: ucx: rank %d sent a remote key not asked for",
                     st->me, p->world);
    }
    ucp_ep_h ep = ucx_ep(st, p, &err, "get");
    ucs_status_t s = len == 0 || ep == NULL ? UCS_ERR_NO_ELEM
                                            : ucp_ep_rkey_unpack(ep, packed, &k->rkey);
    if (s != UCS_OK) {
        k->rkey = NULL;
        k->missing = true;
    }
    for (struct cdn_xfer **link = &p->rma_wait; *link != NULL;) {
        struct cdn_xfer *x = *link;
        if (x->rkey.key != id) {
            link = &x->next;
            continue;
        }
        *link = x->next;
        x->next = NULL;
        if (s != UCS_OK) {
            x->next = failed;
            failed = x;
            continue;
        }
        struct ucx_op *op = start(st, p, x, k->rkey);
        if (op != NULL) {
            op->next = now;
            now = op;
        }
    }
    pthread_mutex_unlock(&st->lock);
    while (now != NULL) {
        struct ucx_op *op = now;
        now = op->next;
        ucx_report(st, op);
    }
    while (failed != NULL) {
        struct cdn_xfer *x = failed;
        failed = x->next;
        x->next = NULL;
        cdn_xfer_done(x, cdn_err(MPI_ERR_OTHER, "ucx: rank %d has no registration %llu "
                                 "(or its key does not unpack: %s)", p->world,
                                 (unsigned long long)id, ucs_status_string(s)));
    }
}

void ucx_rma_finalize(struct ucx_state *st)
{
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        while (p->rkeys != NULL) {
            struct ucx_rkey *k = p->rkeys;
            p->rkeys = k->next;
            if (k->rkey != NULL)
                ucp_rkey_destroy(k->rkey);
            free(k);
        }
    }
    while (st->regs != NULL) {
        struct ucx_reg *g = st->regs;
        st->regs = g->next;
        reg_free(st, g);
    }
}
