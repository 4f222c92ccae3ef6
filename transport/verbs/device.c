/*
 * The verbs transport's device and connections (see verbs.h for the
 * state, verbs.c for the protocols).
 *
 * Device: CADENCE_VERBS_DEVICE names one (e.g. mlx5_0), else the first
 * ibv_get_device_list gives; its port CADENCE_VERBS_PORT (1) must be
 * ACTIVE.  On an Ethernet port (RoCE) peers are addressed by the GID at
 * CADENCE_VERBS_GID_INDEX (0), on InfiniBand by LID.
 *
 * Made once per instance, in cdn_vb_open (so every failure to start is a
 * reason create() can give): protection domain, completion channel and
 * one completion queue for sends and receives, a shared receive queue
 * with CADENCE_VERBS_SRQ_DEPTH buffers of header + eager payload, all
 * registered in one region, and a pool of CADENCE_VERBS_SEND_BUFS send
 * buffers likewise.  The completion queue holds every receive buffer and
 * every send work request we allow in flight (send_limit), so it cannot
 * overflow.
 *
 * Connections: in init, one RC queue pair per peer, attached to the SRQ
 * and moved to INIT; the modex entry holds our LID, GID, MTU, first PSN
 * and the QP number made for each world rank.  In wireup (after the
 * fence) each peer's entry gives the number of its QP for us, and ours
 * goes INIT -> RTR -> RTS.  No handshake: a message that reaches a peer
 * whose QP is not yet in RTR is dropped by its adapter and sent again
 * (CADENCE_VERBS_TIMEOUT, 7 retries), which covers the time the peers
 * take to finish their wireup.  Its cost is a modex entry of 4 bytes per
 * process of the job and a QP per peer: fine for thousands of processes,
 * not for a hundred thousand (a connection-on-demand scheme would be).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "transport/verbs/verbs.h"


/* ---- opening ---- */

static struct ibv_device *pick_device(struct ibv_device **list, int n, char *why, size_t len)
{
    const char *want = cdn_param_str("CADENCE_VERBS_DEVICE");
    if (want == NULL)
        return list[0];
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ibv_get_device_name(list[i]);
        if (name != NULL && strcmp(name, want) == 0)
            return list[i];
        if (used < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i > 0 ? ", " : "",
                                     name != NULL ? name : "?");
    }
    snprintf(why, len, "CADENCE_VERBS_DEVICE=%s names no RDMA device here (found: %s)", want,
             names);
    return NULL;
}

static const char *port_state_name(enum ibv_port_state s)
{
    switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
    }
}

static int imin(long a, long b)
{
    return (int)(a < b ? a : b);
}

/* Carve a registered region into n buffers of st->buf_size. */
static struct vb_buf *bufs_make(struct vb_state *st, int n, int kind, unsigned char **mem,
                                struct ibv_mr **mr, int access)
{
    size_t bytes = (size_t)n * st->buf_size;
    if (posix_memalign((void **)mem, 4096, bytes) != 0) {
        *mem = NULL;
        return NULL;
    }
    memset(*mem, 0, bytes);
    *mr = ibv_reg_mr(st->pd, *mem, bytes, access);
    struct vb_buf *b = calloc((size_t)n, sizeof *b);
    if (*mr == NULL || b == NULL) {
        free(b);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        b[i].kind = kind;
        b[i].data = *mem + (size_t)i * st->buf_size;
        b[i].next = i + 1 < n ? &b[i + 1] : NULL;
    }
    return b;
}

int cdn_vb_srq_post(struct vb_state *st, struct vb_buf *list)
{
    enum { BATCH = 32 };
    struct ibv_recv_wr wr[BATCH], *bad;
    struct ibv_sge sge[BATCH];
    while (list != NULL) {
        int n = 0;
        for (; list != NULL && n < BATCH; list = list->next, n++) {
            sge[n] = (struct ibv_sge){.addr = (uintptr_t)list->data,
                                      .length = (uint32_t)st->buf_size,
                                      .lkey = st->rbuf_mr->lkey};
            wr[n] = (struct ibv_recv_wr){.wr_id = (uintptr_t)list, .sg_list = &sge[n],
                                         .num_sge = 1, .next = NULL};
            if (n > 0)
                wr[n - 1].next = &wr[n];
        }
        int rc = ibv_post_srq_recv(st->srq, wr, &bad);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Fill why (prefixed "what failed: ") from errno and close st. */
static struct vb_state *open_failed(struct vb_state *st, char *why, size_t len, const char *what)
{
    snprintf(why, len, "%s failed on %s: %s", what, st->devname, strerror(errno ? errno : EIO));
    cdn_vb_close(st);
    return NULL;
}

struct vb_state *cdn_vb_open(char *why, size_t why_len)
{
    why[0] = '\0';
    int n = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list == NULL || n == 0) {
        /* ENOSYS: the kernel has no RDMA support at all -- no device either */
        if (list == NULL && errno != 0 && errno != ENOSYS)
            snprintf(why, why_len, "no RDMA device (ibv_get_device_list failed: %s)",
                     strerror(errno));
        else
            snprintf(why, why_len, "no RDMA device (ibv_get_device_list found none)");
        if (list != NULL)
            ibv_free_device_list(list);
        return NULL;
    }
    struct ibv_device *d = pick_device(list, n, why, why_len);
    if (d == NULL) {
        ibv_free_device_list(list);
        return NULL;
    }
    struct vb_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        ibv_free_device_list(list);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&st->buf_lock, NULL);
    pthread_mutex_init(&st->cq_lock, NULL);
    pthread_mutex_init(&st->reg_lock, NULL);
    snprintf(st->devname, sizeof st->devname, "%s", ibv_get_device_name(d));
    st->me = cdn_job_rank();
    st->size = cdn_job_size();
    errno = 0;
    st->dev = ibv_open_device(d);
    ibv_free_device_list(list);
    if (st->dev == NULL)
        return open_failed(st, why, why_len, "ibv_open_device");

    struct ibv_device_attr da;
    errno = ibv_query_device(st->dev, &da);
    if (errno != 0)
        return open_failed(st, why, why_len, "ibv_query_device");
    st->port = (uint8_t)cdn_param_long("CADENCE_VERBS_PORT", 1, 1, 255);
    if (st->port > da.phys_port_cnt) {
        snprintf(why, why_len, "CADENCE_VERBS_PORT=%u: %s has %u port%s", st->port, st->devname,
                 da.phys_port_cnt, da.phys_port_cnt == 1 ? "" : "s");
        cdn_vb_close(st);
        return NULL;
    }
    errno = ibv_query_port(st->dev, st->port, &st->port_attr);
    if (errno != 0)
        return open_failed(st, why, why_len, "ibv_query_port");
    if (st->port_attr.state != IBV_PORT_ACTIVE) {
        snprintf(why, why_len, "port %u of %s is not active (state %s)", st->port, st->devname,
                 port_state_name(st->port_attr.state));
        cdn_vb_close(st);
        return NULL;
    }
    st->eth = st->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    st->gid_index = (int)cdn_param_long("CADENCE_VERBS_GID_INDEX", 0, 0, 255);
    if (st->gid_index >= st->port_attr.gid_tbl_len ||
        ibv_query_gid(st->dev, st->port, st->gid_index, &st->gid) != 0) {
        snprintf(why, why_len, "CADENCE_VERBS_GID_INDEX=%d: port %u of %s has no such GID "
                 "(its table holds %d)", st->gid_index, st->port, st->devname,
                 st->port_attr.gid_tbl_len);
        cdn_vb_close(st);
        return NULL;
    }
    static const uint8_t zero_gid[16];
    if (st->eth && memcmp(st->gid.raw, zero_gid, sizeof zero_gid) == 0) {
        snprintf(why, why_len, "port %u of %s is Ethernet (RoCE) but its GID %d is empty: set "
                 "CADENCE_VERBS_GID_INDEX (show_gids lists them)", st->port, st->devname,
                 st->gid_index);
        cdn_vb_close(st);
        return NULL;
    }
    st->max_msg = st->port_attr.max_msg_sz < VB_RDMA_CHUNK ? st->port_attr.max_msg_sz
                                                           : VB_RDMA_CHUNK;
    if (st->max_msg == 0)
        st->max_msg = VB_RDMA_CHUNK;
    st->rd_atomic = imin(da.max_qp_init_rd_atom, 16);
    st->rd_serve = imin(da.max_qp_rd_atom, 16);
    st->sl = (uint8_t)cdn_param_long("CADENCE_VERBS_SL", 0, 0, 15);
    st->timeout = (uint8_t)cdn_param_long("CADENCE_VERBS_TIMEOUT", 18, 1, 31);
    st->sq_depth = imin(cdn_param_long("CADENCE_VERBS_SQ_DEPTH", 64, 4, 16384), da.max_qp_wr);
    st->srq_depth = imin(cdn_param_long("CADENCE_VERBS_SRQ_DEPTH", 512, 16, 65536), da.max_srq_wr);
    st->nbufs = (int)cdn_param_long("CADENCE_VERBS_SEND_BUFS", 256, 4, 65536);
    long eager = cdn_param_long("CADENCE_VERBS_EAGER_LIMIT", 8192, 0, VB_EAGER_MAX);
    st->tp.eager_limit = st->tp.eager_always = (size_t)eager;
    st->payload = eager > VB_PAYLOAD_MIN ? (size_t)eager : VB_PAYLOAD_MIN;
    st->buf_size = (sizeof(struct vb_frame) + st->payload + 63) & ~(size_t)63;
    st->tp.am_max = st->payload;
    if (da.max_srq == 0 || st->srq_depth < 16) {
        snprintf(why, why_len, "%s has no shared receive queue", st->devname);
        cdn_vb_close(st);
        return NULL;
    }
    /* the CQ holds every receive and every send we let fly */
    long peers = st->size - 1, sends = peers * st->sq_depth;
    long cqe = st->srq_depth + sends;
    if (cqe > da.max_cqe)
        cqe = da.max_cqe;
    st->send_limit = (int)(cqe - st->srq_depth);
    if (st->send_limit < 1) {
        snprintf(why, why_len, "%s's completion queues (%d entries) do not hold "
                 "CADENCE_VERBS_SRQ_DEPTH=%d receives", st->devname, da.max_cqe, st->srq_depth);
        cdn_vb_close(st);
        return NULL;
    }

    errno = 0;
    if ((st->pd = ibv_alloc_pd(st->dev)) == NULL)
        return open_failed(st, why, why_len, "ibv_alloc_pd");
    if ((st->chan = ibv_create_comp_channel(st->dev)) == NULL)
        return open_failed(st, why, why_len, "ibv_create_comp_channel");
    int fl = fcntl(st->chan->fd, F_GETFL);
    if (fl < 0 || fcntl(st->chan->fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return open_failed(st, why, why_len, "fcntl(O_NONBLOCK) on the completion channel");
    if ((st->cq = ibv_create_cq(st->dev, (int)cqe, st, st->chan, 0)) == NULL)
        return open_failed(st, why, why_len, "ibv_create_cq");
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = (uint32_t)st->srq_depth, .max_sge = 1}};
    if ((st->srq = ibv_create_srq(st->pd, &sa)) == NULL)
        return open_failed(st, why, why_len, "ibv_create_srq");
    st->rbufs = bufs_make(st, st->srq_depth, WR_RECV, &st->rbuf_mem, &st->rbuf_mr,
                          IBV_ACCESS_LOCAL_WRITE);
    if (st->rbufs == NULL)
        return open_failed(st, why, why_len, "registering the receive buffers (ibv_reg_mr; is ulimit -l too low?)");
    st->sbufs = bufs_make(st, st->nbufs, WR_SEND, &st->sbuf_mem, &st->sbuf_mr, 0);
    if (st->sbufs == NULL)
        return open_failed(st, why, why_len, "registering the send buffers (ibv_reg_mr; is ulimit -l too low?)");
    st->sfree = st->sbufs;
    if ((errno = cdn_vb_srq_post(st, st->rbufs)) != 0)
        return open_failed(st, why, why_len, "ibv_post_srq_recv");
    if (ibv_req_notify_cq(st->cq, 0) != 0)
        return open_failed(st, why, why_len, "ibv_req_notify_cq");

    st->peers = calloc((size_t)st->size, sizeof *st->peers);
    if (st->peers == NULL) {
        snprintf(why, why_len, "out of memory for %d peers", st->size);
        cdn_vb_close(st);
        return NULL;
    }
    for (int w = 0; w < st->size; w++) {
        struct vb_peer *p = &st->peers[w];
        p->kind = WR_PEER;
        p->world = w;
        p->state = PEER_NONE;
        pthread_mutex_init(&p->lock, NULL);
    }
    /* any start works; a random one keeps a stale packet of an earlier job
     * from landing in sequence */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    st->psn = ((uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 8) ^ (uint32_t)st->me) & 0xffffff;
    return st;
}

/* ---- queue pairs ---- */

int cdn_vb_qps_create(struct vb_state *st)
{
    size_t len = sizeof(struct vb_addr) + (size_t)st->size * sizeof(uint32_t);
    struct vb_addr *a = calloc(1, len);
    if (a == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: verbs: out of memory for a %zu-byte address",
                       len);
    uint32_t *qpn = (uint32_t *)(a + 1);
    uint32_t want_inline = VB_INLINE_WANT;
    for (int w = 0; w < st->size; w++) {
        if (w == st->me)
            continue;
        struct ibv_qp_init_attr qa = {
            .send_cq = st->cq,
            .recv_cq = st->cq,
            .srq = st->srq,
            .cap = {.max_send_wr = (uint32_t)st->sq_depth, .max_send_sge = 1,
                    .max_recv_sge = 1, .max_inline_data = want_inline},
            .qp_type = IBV_QPT_RC,
            .sq_sig_all = 0,
        };
        struct ibv_qp *qp = ibv_create_qp(st->pd, &qa);
        if (qp == NULL && want_inline > 0) {  /* a device without inline sends */
            want_inline = qa.cap.max_inline_data = 0;
            qp = ibv_create_qp(st->pd, &qa);
        }
        if (qp == NULL) {
            int e = errno;
            free(a);
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: ibv_create_qp for rank %d failed on "
                           "%s: %s (queue pairs made: one per peer)", w, st->devname,
                           strerror(e));
        }
        st->max_inline = qa.cap.max_inline_data < want_inline ? qa.cap.max_inline_data
                                                              : want_inline;
        struct ibv_qp_attr at = {
            .qp_state = IBV_QPS_INIT,
            .pkey_index = 0,
            .port_num = st->port,
            .qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
        };
        int rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                            IBV_QP_ACCESS_FLAGS);
        st->peers[w].qp = qp;
        if (rc != 0) {
            free(a);
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: ibv_modify_qp(INIT) for rank %d "
                           "failed on %s: %s", w, st->devname, strerror(rc));
        }
        qpn[w] = qp->qp_num;
    }
    a->magic = VB_MAGIC;
    a->version = VB_VERSION;
    a->lid = st->port_attr.lid;
    memcpy(a->gid, st->gid.raw, sizeof a->gid);
    a->psn = st->psn;
    a->payload = (uint32_t)st->payload;
    a->mtu = (uint8_t)st->port_attr.active_mtu;
    a->rd_atomic = (uint8_t)st->rd_serve;
    a->eth = st->eth;
    a->nqpn = (uint32_t)st->size;
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_VERBS_ADDR, key, sizeof key);
    int rc = cdn_modex_put(key, a, len);
    free(a);
    return rc;
}

/* Our QP for a peer, INIT -> RTR -> RTS, from its published address. */
static int connect_one(struct vb_state *st, int w, const struct vb_addr *a, uint32_t qpn)
{
    struct ibv_qp *qp = st->peers[w].qp;
    enum ibv_mtu mtu = (enum ibv_mtu)a->mtu < st->port_attr.active_mtu ? (enum ibv_mtu)a->mtu
                                                                        : st->port_attr.active_mtu;
    struct ibv_qp_attr at = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = mtu,
        .dest_qp_num = qpn,
        .rq_psn = a->psn,
        .max_dest_rd_atomic = (uint8_t)st->rd_serve,
        .min_rnr_timer = 12,  /* 0.64 ms before a sender tries a full SRQ again */
        .ah_attr = {.dlid = a->lid, .sl = st->sl, .src_path_bits = 0, .port_num = st->port},
    };
    if (st->eth) {
        at.ah_attr.is_global = 1;
        memcpy(at.ah_attr.grh.dgid.raw, a->gid, sizeof a->gid);
        at.ah_attr.grh.sgid_index = (uint8_t)st->gid_index;
        at.ah_attr.grh.hop_limit = 64;
    }
    int rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: ibv_modify_qp(RTR) to rank %d (QP %u, "
                       "LID %u) failed on %s: %s", w, qpn, a->lid, st->devname, strerror(rc));
    memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = st->psn;
    at.timeout = st->timeout;
    at.retry_cnt = 7;
    at.rnr_retry = 7;  /* a full SRQ is waited out, never an error */
    at.max_rd_atomic = (uint8_t)(a->rd_atomic < st->rd_atomic ? a->rd_atomic : st->rd_atomic);
    rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                    IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: ibv_modify_qp(RTS) to rank %d failed "
                       "on %s: %s", w, st->devname, strerror(rc));
    return MPI_SUCCESS;
}

int cdn_vb_qps_connect(struct vb_state *st)
{
    size_t cap = sizeof(struct vb_addr) + (size_t)st->size * sizeof(uint32_t);
    struct vb_addr *a = malloc(cap);
    if (a == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: verbs: out of memory reading addresses");
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_VERBS_ADDR, key, sizeof key);
    int rc = MPI_SUCCESS;
    for (int w = 0; w < st->size && rc == MPI_SUCCESS; w++) {
        if (w == st->me)
            continue;
        size_t len = cap;
        rc = cdn_modex_get(w, key, a, &len);
        if (rc != MPI_SUCCESS)
            break;
        if (len != cap || a->magic != VB_MAGIC || a->version != VB_VERSION ||
            a->nqpn != (uint32_t)st->size) {
            rc = cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: rank %d published a malformed "
                         "address (%zu bytes, expected %zu)", w, len, cap);
        } else if (a->payload != st->payload) {
            rc = cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: rank %d's receive buffers hold %u "
                         "bytes, ours %zu: every process must use the same "
                         "CADENCE_VERBS_EAGER_LIMIT", w, a->payload, st->payload);
        } else if ((bool)a->eth != st->eth) {
            rc = cdn_err(MPI_ERR_OTHER, "MPI_Init: verbs: rank %d's port is %s and ours %s",
                         w, a->eth ? "Ethernet (RoCE)" : "InfiniBand",
                         st->eth ? "Ethernet (RoCE)" : "InfiniBand");
        } else {
            uint32_t qpn = ((const uint32_t *)(a + 1))[st->me];
            rc = connect_one(st, w, a, qpn);
            if (rc == MPI_SUCCESS)
                st->peers[w].state = PEER_UP;
        }
    }
    free(a);
    return rc;
}

/* ---- teardown ---- */

void cdn_vb_close(struct vb_state *st)
{
    if (st->peers != NULL) {
        for (int w = 0; w < st->size; w++) {
            struct vb_peer *p = &st->peers[w];
            if (p->qp != NULL)
                ibv_destroy_qp(p->qp);
            pthread_mutex_destroy(&p->lock);
        }
        free(st->peers);
    }
    for (struct vb_reg *r = st->regs, *next; r != NULL; r = next) {
        next = r->next;
        ibv_dereg_mr(r->mr);
        free(r);
    }
    if (st->srq != NULL)
        ibv_destroy_srq(st->srq);
    if (st->cq != NULL)
        ibv_destroy_cq(st->cq);
    if (st->chan != NULL)
        ibv_destroy_comp_channel(st->chan);
    if (st->rbuf_mr != NULL)
        ibv_dereg_mr(st->rbuf_mr);
    if (st->sbuf_mr != NULL)
        ibv_dereg_mr(st->sbuf_mr);
    if (st->pd != NULL)
        ibv_dealloc_pd(st->pd);
    if (st->dev != NULL)
        ibv_close_device(st->dev);
    free(st->rbufs);
    free(st->sbufs);
    free(st->rbuf_mem);
    free(st->sbuf_mem);
    pthread_mutex_destroy(&st->buf_lock);
    pthread_mutex_destroy(&st->cq_lock);
    pthread_mutex_destroy(&st->reg_lock);
    free(st);
}
