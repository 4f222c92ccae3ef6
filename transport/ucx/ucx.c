/*
 * The UCX transport: every message through one UCP worker per progress
 * context (see ucx.h for threads, proto.c for the protocols, rma.c for
 * get and put).  This file opens UCX, connects peers, receives, polls,
 * sleeps, notices lost peers and closes.
 *
 * How it works.  ucp_init asks for active messages, RMA and wakeup; UCX
 * picks its transports itself from UCX_TLS and the rest of its UCX_*
 * environment, which we never override; only the rendezvous scheme's
 * default is put_zcopy where UCX_RNDV_SCHEME is unset (open_ucp says
 * why).  Each instance publishes its
 * worker's address in the modex (cdn.ucx.addr, per context) and, after
 * the fence, opens an endpoint to every peer (up to CADENCE_UCX_CONNECT_ALL
 * peers; beyond, at the first message), so that UCX's own wireup is paid
 * in MPI_Init and not by the first exchange.  Endpoints ask for peer error
 * handling where UCX's transports offer it.  Every message is one UCP
 * active message (id UCX_AM_ID) whose header (struct ucx_hdr) says what
 * it is and numbers it on its channel.
 *
 * Protocols (proto.c):
 *   eager (<= CADENCE_UCX_EAGER_LIMIT, 32 KiB): header and payload in one
 *     active message forced eager; the send is done when UCX says so (at
 *     once, or at its callback).  The receiver hands the engine UCX's own
 *     buffer where UCX lets it keep one (UCP_AM_FLAG_PERSISTENT_DATA),
 *     else a copy.
 *   rendezvous: the same message forced to UCX's AM rendezvous.  Its
 *     header arrives in order with the rest and is matched like any other,
 *     the engine holding a token for it (cdn_mem_key.key); the payload
 *     stays at the sender until the matched receive pulls it with
 *     ucp_am_recv_data_nbx (UCX moves it as it can: CMA on one node, zero
 *     copy RDMA where the fabric has it, a pipeline over TCP), straight into
 *     a contiguous receive buffer that takes it all, else through a bounce
 *     buffer.  The sender's request completes once the data is fetched: that
 *     is the FIN, the send is done and matched.
 *   synchronous eager: as eager, and the receiver answers M_ACK on a match.
 *   active messages (am_max 64 KiB): eager, payload copied so the caller
 *     may reuse it at once.
 *   get/put (rma.c): ucp_get_nbx / ucp_put_nbx + flush with the peer's
 *     packed key, fetched once per registration by M_RKEY_REQ / M_RKEY (the
 *     contract's key is 64 bits, UCX's are bigger: the key is a
 *     registration id).
 * Order: UCX does not promise that active messages on one endpoint arrive
 * in order, so the receiver keeps those that come early until their turn
 * (ucx_hdr.seq); every message counts, so active messages stay in order
 * with the rest.
 *
 * Sleeping: the worker's event fd (ucp_worker_get_efd) is the transport's
 * fd; arm progresses the worker dry, then ucp_worker_arm (UCS_ERR_BUSY:
 * events already there, do not sleep).  Operations UCX holds that only
 * polling moves on (not rendezvous sends, which wait for the receiver's
 * application) count as the engine's pending work.
 *
 * Peer loss: UCX calls the endpoint's error handler (UCP_ERR_HANDLING_MODE_
 * PEER); its outstanding requests complete with an error, the sends that
 * wait for an ACK, the rendezvous messages not pulled and the gets and puts
 * waiting for a key are failed here, and the engine hears
 * cdn_p2p_peer_failed (MPIX_ERR_PROC_FAILED).  A peer that said M_BYE is
 * gone, not failed.  UCX 1.13's sysv and posix transports have no peer
 * failure handler: with UCX_TLS naming only those (and cma, self), the
 * endpoints open without error handling, and a lost peer is noticed on
 * the launcher's word (mpirun's PMIx event: ucx_peer_lost), which also
 * fails the rendezvous sends UCX never cancels there.
 *
 * Finalize: M_BYE to every peer, a flush bounded by
 * CADENCE_UCX_CLOSE_TIMEOUT (ms), then endpoints closed by force (a
 * flushing close waits for peers that may be gone).
 *
 * Tested with UCX 1.13.1: UCX_TLS=tcp,self; =sysv,posix,cma,self; unset.
 * Limits: one worker per context, so one thread at a time inside UCX per
 * context (st->lock); a rendezvous message its receiver cancels stays held
 * at both ends until finalize; no send_now (every send goes through UCX's
 * request path).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress/engine.h"
#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "runtime/runtime.h"
#include "transport/ucx/ucx.h"

#include <ucs/config/global_opts.h>

struct cdn_transport *cdn_ucx_transport_create(void);
const char *cdn_ucx_transport_why_not(void);

static char why_not[256];

/* ---- UCX's signal handlers ---- */

/* libucs, loaded with the library, catches SIGILL, SIGSEGV, SIGBUS and
 * SIGFPE as it loads (UCX_ERROR_SIGNALS) to print a backtrace, and ends
 * the process with status 1: a program that never opens the ucx transport
 * crashing would exit 1 instead of dying by its signal (what launchers,
 * shells and core dumps go by; the launch-killed-rank test saw it).  Give
 * those signals back to the default before main() runs, unless the user
 * asked UCX for its error handling (UCX_HANDLE_ERRORS or
 * UCX_ERROR_SIGNALS set); a handler that is not libucs's is left alone. */
__attribute__((constructor)) static void ucx_signals_back(void)
{
    if (getenv("UCX_HANDLE_ERRORS") != NULL || getenv("UCX_ERROR_SIGNALS") != NULL)
        return;
    const int sigs[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        Dl_info where;
        if (sigaction(sigs[i], NULL, &sa) != 0 || !(sa.sa_flags & SA_SIGINFO) ||
            dladdr((void *)sa.sa_sigaction, &where) == 0 || where.dli_fname == NULL ||
            strstr(where.dli_fname, "libucs") == NULL)
            continue;
        signal(sigs[i], SIG_DFL);
    }
}

/* ---- endpoints ---- */

int ucx_peer_err(struct ucx_peer *p, const char *what)
{
    if (p->state == PEER_GONE)
        return cdn_err(MPI_ERR_OTHER, "%s: rank %d has finalized", what, p->world);
    return cdn_err(MPIX_ERR_PROC_FAILED, "%s: rank %d has failed (ucx: %s)", what, p->world,
                   ucs_status_string(p->why));
}

/* The peer is lost (lock held): mark it; poll fails what it holds once
 * unlocked. */
static void mark_failed(struct ucx_state *st, struct ucx_peer *p, ucs_status_t status)
{
    if (p->state == PEER_FAILED || p->state == PEER_GONE)
        return;
    if (p->bye || st->closing) {
        p->state = PEER_GONE;
        p->why = status;
        return;
    }
    p->state = PEER_FAILED;
    p->why = status;
    p->fail_pending = true;
    st->failed = true;
}

/* UCX lost the connection behind an endpoint (inside progress, lock
 * held). */
static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct ucx_peer *p = arg;
    (void)ep;
    mark_failed(p->st, p, status);
}

/* The peer's worker address from the modex (malloc'd, *len set). */
static void *peer_address(struct ucx_state *st, int world, size_t *len, int *err)
{
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_UCX_ADDR, key, sizeof key);
    size_t cap = 1024;
    for (;;) {
        void *buf = malloc(cap);
        if (buf == NULL) {
            *err = cdn_err(MPI_ERR_NO_MEM, "ucx: no memory for rank %d's address", world);
            return NULL;
        }
        *len = cap;
        *err = cdn_modex_get(world, key, buf, len);
        if (*err != MPI_SUCCESS || *len <= cap)
            return *err == MPI_SUCCESS ? buf : (free(buf), NULL);
        free(buf);
        cap = *len;
    }
}

static ucs_status_t ep_open(struct ucx_state *st, struct ucx_peer *p, const void *addr,
                            ucp_err_handling_mode_t mode)
{
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = addr,
        .err_mode = mode,
        .err_handler = {.cb = ep_error, .arg = p},
    };
    return ucp_ep_create(st->worker, &ep, &p->ep);
}

ucp_ep_h ucx_ep(struct ucx_state *st, struct ucx_peer *p, int *err, const char *what)
{
    if (p->state == PEER_UP)
        return p->ep;
    if (p->state != PEER_NONE) {
        *err = ucx_peer_err(p, what);
        return NULL;
    }
    size_t len;
    void *addr = peer_address(st, p->world, &len, err);
    if (addr == NULL)
        return NULL;
    /* peer error handling where UCX's transports offer it (not sysv and
     * posix in 1.13), else none; UCX's complaint about the first try is
     * not the user's business */
    ucs_log_level_t level = ucs_global_opts.log_component.log_level;
    if (level < UCS_LOG_LEVEL_DEBUG)
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
    ucs_status_t s = ep_open(st, p, addr, UCP_ERR_HANDLING_MODE_PEER);
    ucs_global_opts.log_component.log_level = level;
    if (s != UCS_OK)
        s = ep_open(st, p, addr, UCP_ERR_HANDLING_MODE_NONE);
    free(addr);
    if (s != UCS_OK) {
        *err = cdn_err(MPI_ERR_OTHER, "%s: ucx cannot reach rank %d: %s", what, p->world,
                       ucs_status_string(s));
        return NULL;
    }
    p->state = PEER_UP;
    return p->ep;
}

/* ---- operations ---- */

/* Ops and arrivals with small payloads come from spares kept on free
 * lists (the send and receive paths allocate nothing once warm). */
struct ucx_op *ucx_op_new(struct ucx_state *st, int kind, int peer, struct cdn_xfer *x,
                          size_t extra)
{
    bool small = extra <= UCX_POOL_DATA;
    struct ucx_op *op = small ? cdn_keep_take(&st->op_spares) : NULL;
    if (op == NULL && (op = malloc(sizeof *op + (small ? UCX_POOL_DATA : extra))) == NULL)
        return NULL;
    memset(op, 0, sizeof *op);
    op->pooled = small;
    op->st = st;
    op->kind = kind;
    op->peer = peer;
    op->x = x;
    return op;
}

void ucx_op_free(struct ucx_state *st, struct ucx_op *op)
{
    if (op->counted)
        cdn_progress_work_changed(-1);
    free(op->tmp);
    if (!op->pooled || !cdn_keep_give(&st->op_spares, op))
        free(op);
}

void ucx_op_pending(struct ucx_op *op)
{
    if (op->kind != OP_RNDV && !op->counted) {
        op->counted = true;
        cdn_progress_work_changed(1);
    }
}

struct ucx_in *ucx_in_new(struct ucx_state *st, size_t room)
{
    bool small = room <= UCX_POOL_DATA;
    struct ucx_in *in = small ? cdn_keep_take(&st->in_spares) : NULL;
    if (in == NULL && (in = malloc(sizeof *in + (small ? UCX_POOL_DATA : room))) == NULL)
        return NULL;
    in->pooled = small;
    return in;
}

void ucx_in_free(struct ucx_state *st, struct ucx_in *in)
{
    if (!in->pooled || !cdn_keep_give(&st->in_spares, in))
        free(in);
}


void ucx_op_done(struct ucx_state *st, struct ucx_op *op, ucs_status_t status)
{
    op->status = status;
    op->next = NULL;
    if (st->done_tail != NULL)
        st->done_tail->next = op;
    else
        st->done = op;
    st->done_tail = op;
}

/* UCX finished a send it had queued (inside progress). */
static void sent_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_op *op = user_data;
    ucx_op_done(op->st, op, status);
    ucp_request_free(request);
}

int ucx_am_post(struct ucx_state *st, struct ucx_peer *p, struct ucx_op *op, const void *data,
                size_t len, unsigned flags, bool *pending, const char *what)
{
    int err = MPI_SUCCESS;
    ucp_ep_h ep = ucx_ep(st, p, &err, what);
    if (ep == NULL)
        return err;
    op->hdr.src = st->me;
    op->hdr.seq = p->seq_out;
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_DATATYPE,
        .cb.send = sent_cb,
        .user_data = op,
        .flags = flags,
        .datatype = ucp_dt_make_contig(1),
    };
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, UCX_AM_ID, &op->hdr, sizeof op->hdr, data, len, &prm);
    if (UCS_PTR_IS_ERR(r))
        return cdn_err(p->state == PEER_FAILED ? MPIX_ERR_PROC_FAILED : MPI_ERR_OTHER,
                       "%s: ucx send to rank %d failed: %s", what, p->world,
                       ucs_status_string(UCS_PTR_STATUS(r)));
    p->seq_out++;
    *pending = r != NULL;
    op->req = r;
    if (r != NULL)
        ucx_op_pending(op);
    return MPI_SUCCESS;
}

/* ---- receiving ---- */

static void arrived_push(struct ucx_state *st, struct ucx_in *in)
{
    in->next = NULL;
    if (st->arrived_tail != NULL)
        st->arrived_tail->next = in;
    else
        st->arrived = in;
    st->arrived_tail = in;
}

/* Queue a message for delivery in its channel's order: at once when it is
 * the next, else in the peer's stash until its turn. */
static void arrived_in_order(struct ucx_state *st, struct ucx_peer *p, struct ucx_in *in)
{
    if (in->hdr.seq != p->seq_in) {
        struct ucx_in **link = &p->stash;
        while (*link != NULL && (*link)->hdr.seq < in->hdr.seq)
            link = &(*link)->next;
        in->next = *link;
        *link = in;
        return;
    }
    arrived_push(st, in);
    p->seq_in++;
    while (p->stash != NULL && p->stash->hdr.seq == p->seq_in) {
        struct ucx_in *next = p->stash;
        p->stash = next->next;
        arrived_push(st, next);
        p->seq_in++;
    }
}

/* UCP's receive callback (inside progress, lock held): keep the message
 * (UCX's own data when it lets us, else a copy) for poll to deliver. */
static ucs_status_t am_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    struct ucx_state *st = arg;
    struct ucx_hdr h;
    if (header_length != sizeof h)
        cdn_rt_abort(1, "cadence: rank %d: ucx: a %zu-byte message header", st->me,
                     header_length);
    memcpy(&h, header, sizeof h);
    if (h.src < 0 || h.src >= st->size)
        cdn_rt_abort(1, "cadence: rank %d: ucx: a message from rank %d of %d", st->me, h.src,
                     st->size);
    bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    bool keep = rndv || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
    struct ucx_in *in = ucx_in_new(st, keep ? 0 : length);
    if (in == NULL)
        cdn_rt_abort(1, "cadence: rank %d: ucx: out of memory receiving", st->me);
    in->hdr = h;
    in->len = length;
    in->desc = keep ? data : NULL;
    in->data = rndv ? NULL : keep ? data : in->copy;
    if (!keep && length > 0)
        memcpy(in->copy, data, length);
    if (h.type == M_BYE)  /* now, not in turn: the connection may end before its turn */
        st->peers[h.src].bye = true;
    arrived_in_order(st, &st->peers[h.src], in);
    return keep ? UCS_INPROGRESS : UCS_OK;
}

/* ---- polling and sleeping ---- */

/* Take what callbacks queued, and the peers that failed (lock held). */
static void take_queued(struct ucx_state *st, struct ucx_in **in, struct ucx_op **done)
{
    *in = st->arrived;
    *done = st->done;
    st->arrived = st->arrived_tail = NULL;
    st->done = st->done_tail = NULL;
}

static void release(struct ucx_state *st, struct ucx_in *in)
{
    if (in->desc != NULL && in->hdr.type != M_RTS) {
        pthread_mutex_lock(&st->lock);
        ucp_am_data_release(st->worker, in->desc);
        pthread_mutex_unlock(&st->lock);
    }
    ucx_in_free(st, in);
}

/* Report the peers whose endpoints failed. */
static void failures(struct ucx_state *st)
{
    pthread_mutex_lock(&st->lock);
    st->failed = false;
    pthread_mutex_unlock(&st->lock);
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        pthread_mutex_lock(&st->lock);
        bool now = p->fail_pending;
        p->fail_pending = false;
        pthread_mutex_unlock(&st->lock);
        if (!now)
            continue;
        const char *why = p->by_launcher ? "the launcher reports that it ended"
                                         : ucs_status_string(p->why);
        fprintf(stderr, "cadence: rank %d: ucx: lost rank %d (%s); operations with it fail "
                "with MPIX_ERR_PROC_FAILED\n", st->me, w, why);
        int err = cdn_err(MPIX_ERR_PROC_FAILED, "rank %d failed: ucx: %s", w, why);
        ucx_fail_peer(st, p, err);
        cdn_p2p_peer_failed(&st->tp, w, err);
    }
}

static int ucx_poll(struct cdn_transport *tp)
{
    struct ucx_state *st = ucx_state_of(tp);
    struct ucx_in *in;
    struct ucx_op *done;
    int n = 0;
    pthread_mutex_lock(&st->lock);
    for (int k = 0; k < 64 && ucp_worker_progress(st->worker) != 0; k++)
        n++;
    take_queued(st, &in, &done);
    bool failed = st->failed;
    pthread_mutex_unlock(&st->lock);
    while (done != NULL) {
        struct ucx_op *op = done;
        done = op->next;
        ucx_report(st, op);
        n++;
    }
    while (in != NULL) {
        struct ucx_in *m = in;
        in = m->next;
        ucx_deliver(st, m);
        release(st, m);
        n++;
    }
    if (failed)
        failures(st);
    return n;
}

/* The launcher says the peer ended (UCX's shared-memory transports have
 * no failure handler of their own). */
static void ucx_peer_lost(struct cdn_transport *tp, int peer)
{
    struct ucx_state *st = ucx_state_of(tp);
    if (peer < 0 || peer >= st->size || peer == st->me)
        return;
    pthread_mutex_lock(&st->lock);
    if (st->peers[peer].state != PEER_FAILED && st->peers[peer].state != PEER_GONE)
        st->peers[peer].by_launcher = true;
    mark_failed(st, &st->peers[peer], UCS_ERR_CONNECTION_RESET);
    pthread_mutex_unlock(&st->lock);
    failures(st);
}

static int ucx_fd(struct cdn_transport *tp)
{
    return ucx_state_of(tp)->efd;
}

/* About to sleep: > 0 when something is there already. */
static int ucx_arm(struct cdn_transport *tp)
{
    struct ucx_state *st = ucx_state_of(tp);
    pthread_mutex_lock(&st->lock);
    int busy = st->arrived != NULL || st->done != NULL || st->failed;
    if (!busy) {
        while (ucp_worker_progress(st->worker) != 0) {
        }
        busy = st->arrived != NULL || st->done != NULL || st->failed;
    }
    if (!busy)
        busy = ucp_worker_arm(st->worker) == UCS_ERR_BUSY;
    pthread_mutex_unlock(&st->lock);
    return busy;
}

static bool ucx_reaches(struct cdn_transport *tp, int world_rank)
{
    struct ucx_state *st = ucx_state_of(tp);
    return world_rank >= 0 && world_rank < st->size && world_rank != st->me;
}

/* ---- starting and ending ---- */

static int ucx_init(struct cdn_transport *tp)
{
    struct ucx_state *st = ucx_state_of(tp);
    char key[64];
    cdn_transport_modex_key(tp, CDN_MODEX_UCX_ADDR, key, sizeof key);
    return cdn_modex_put(key, st->addr, st->addr_len);
}

/* Open the endpoints now, up to CADENCE_UCX_CONNECT_ALL peers (the rest
 * at their first message): UCX's own wireup then happens during MPI_Init,
 * not in the first exchange, which would cost it a tenth of a second of
 * CPU (with UCX_TLS=tcp). */
static int ucx_wireup(struct cdn_transport *tp)
{
    struct ucx_state *st = ucx_state_of(tp);
    long most = cdn_param_long("CADENCE_UCX_CONNECT_ALL", 256, 0, 1L << 30);
    if (st->size > most)
        return MPI_SUCCESS;
    pthread_mutex_lock(&st->lock);
    for (int w = 0; w < st->size; w++) {
        int err;
        if (w != st->me)
            ucx_ep(st, &st->peers[w], &err, "MPI_Init");  /* a failure shows at first use */
    }
    while (ucp_worker_progress(st->worker) != 0) {
    }
    pthread_mutex_unlock(&st->lock);
    return MPI_SUCCESS;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait (progressing) until every request of reqs[] is done or the
 * deadline passes; free the done ones (lock held). */
static void wait_reqs(struct ucx_state *st, void **reqs, double end)
{
    for (int w = 0; w < st->size; w++) {
        while (reqs[w] != NULL && ucp_request_check_status(reqs[w]) == UCS_INPROGRESS &&
               now_s() < end)
            ucp_worker_progress(st->worker);
        if (reqs[w] != NULL && ucp_request_check_status(reqs[w]) != UCS_INPROGRESS)
            ucp_request_free(reqs[w]);
        reqs[w] = NULL;
    }
}

/* Close every endpoint (lock held): flush what we sent (the BYEs) with a
 * bounded wait, then close by force, which needs nothing of the peer (a
 * closing flush waits for a peer that may be gone, and destroying the
 * worker under a close still in progress crashes UCX 1.13). */
static void close_all(struct ucx_state *st)
{
    double limit = (double)cdn_param_long("CADENCE_UCX_CLOSE_TIMEOUT", 2000, 0, 600000) / 1e3;
    void **reqs = calloc((size_t)st->size, sizeof *reqs);
    if (reqs == NULL)
        return;
    ucp_request_param_t none = {.op_attr_mask = 0};
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        if (p->ep != NULL && p->state == PEER_UP) {
            void *r = ucp_ep_flush_nbx(p->ep, &none);
            reqs[w] = UCS_PTR_IS_PTR(r) ? r : NULL;
        }
    }
    wait_reqs(st, reqs, now_s() + limit);
    ucp_request_param_t force = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        if (p->ep == NULL)
            continue;
        void *r = ucp_ep_close_nbx(p->ep, &force);
        reqs[w] = UCS_PTR_IS_PTR(r) ? r : NULL;
        p->ep = NULL;
    }
    wait_reqs(st, reqs, now_s() + limit);
    free(reqs);
}

/* Tell every peer we talked to that we are ending, then close. */
/* Finalize (lock held): free what completed and arrived and was not yet
 * taken, unreported; with_worker: the worker is still there to give
 * back the arrivals' data to. */
static void drop_queued(struct ucx_state *st, bool with_worker)
{
    struct ucx_in *in;
    struct ucx_op *done;
    take_queued(st, &in, &done);
    while (done != NULL) {
        struct ucx_op *op = done;
        done = op->next;
        ucx_op_discard(st, op);
    }
    while (in != NULL) {
        struct ucx_in *m = in;
        in = m->next;
        if (with_worker && m->desc != NULL && m->hdr.type != M_RTS)
            ucp_am_data_release(st->worker, m->desc);
        ucx_in_free(st, m);
    }
}

static void ucx_finalize(struct cdn_transport *tp)
{
    struct ucx_state *st = ucx_state_of(tp);
    pthread_mutex_lock(&st->lock);
    st->closing = true;
    /* rendezvous messages never pulled (cancelled): their senders may stop waiting */
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        for (struct ucx_rts *r = p->rts; r != NULL;) {
            struct ucx_rts *next = r->next;
            ucp_am_data_release(st->worker, r->desc);
            free(r);
            r = next;
        }
        p->rts = NULL;
    }
    pthread_mutex_unlock(&st->lock);
    /* to every peer that holds an endpoint to us or that we hold one to */
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        if (p->state == PEER_UP || (p->state == PEER_NONE && p->seq_in > 0))
            ucx_ctrl(st, w, M_BYE, 0, NULL, 0, "finalize");
    }
    ucx_poll(tp);
    pthread_mutex_lock(&st->lock);
    for (int w = 0; w < st->size; w++) {
        struct ucx_peer *p = &st->peers[w];
        while (p->stash != NULL) {
            struct ucx_in *in = p->stash;
            p->stash = in->next;
            if (in->desc != NULL)
                ucp_am_data_release(st->worker, in->desc);
            ucx_in_free(st, in);
        }
    }
    ucx_rma_finalize(st);
    close_all(st);
    drop_queued(st, true);
    ucp_worker_release_address(st->worker, st->addr);
    ucp_worker_destroy(st->worker);
    ucp_cleanup(st->ctx);
    /* What the worker finished as it went, then the rendezvous sends it
     * never will (one whose receiver cancelled it: UCX's shared-memory
     * transports keep its request to the end). */
    drop_queued(st, false);
    for (int w = 0; w < st->size; w++)
        while (st->peers[w].rndv != NULL)
            ucx_op_discard(st, st->peers[w].rndv);
    pthread_mutex_unlock(&st->lock);
    cdn_keep_drain(&st->op_spares);
    cdn_keep_drain(&st->in_spares);
    pthread_mutex_destroy(&st->lock);
    free(st->peers);
    free(st);
}

static const struct cdn_transport_ops ucx_ops = {
    .name = "ucx",
    .init = ucx_init,
    .wireup = ucx_wireup,
    .reaches = ucx_reaches,
    .send = ucx_send,
    .pull = ucx_pull,
    .ack = ucx_ack,
    .am_send = ucx_am_send,
    .dropped = ucx_dropped,
    .get = ucx_get,
    .put = ucx_put,
    .mem_reg = ucx_mem_reg,
    .mem_dereg = ucx_mem_dereg,
    .peer_lost = ucx_peer_lost,
    .poll = ucx_poll,
    .fd = ucx_fd,
    .arm = ucx_arm,
    .finalize = ucx_finalize,
};

static struct cdn_transport *fail(struct ucx_state *st, const char *what, ucs_status_t s)
{
    snprintf(why_not, sizeof why_not, "%s failed: %s", what, ucs_status_string(s));
    if (st->addr != NULL)
        ucp_worker_release_address(st->worker, st->addr);
    if (st->worker != NULL)
        ucp_worker_destroy(st->worker);
    if (st->ctx != NULL)
        ucp_cleanup(st->ctx);
    pthread_mutex_destroy(&st->lock);
    free(st->peers);
    free(st);
    return NULL;
}

/* UCP's context and worker, and the receive handler. */
static struct cdn_transport *open_ucp(struct ucx_state *st)
{
    ucp_config_t *cfg;
    ucs_status_t s = ucp_config_read(NULL, NULL, &cfg);  /* UCX_TLS and friends */
    if (s != UCS_OK)
        return fail(st, "ucp_config_read", s);
    /* Rendezvous data pushed by the sender, unless the user chose: with
     * UCX's default on shared memory (the receiver reads by CMA, then
     * tells the sender) a sender asleep in MPI_Wait was not woken by that
     * last message, and a 16 MiB send to a receive posted late and then
     * left to compute ended only at the receiver's next MPI call
     * (t_progress repeat over UCX_TLS=sysv,posix,cma,self). */
    if (getenv("UCX_RNDV_SCHEME") == NULL)
        (void)ucp_config_modify(cfg, "RNDV_SCHEME", "put_zcopy");
    ucp_params_t prm = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS,
        .features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 0,
        .estimated_num_eps = (size_t)st->size,
    };
    s = ucp_init(&prm, cfg, &st->ctx);
    ucp_config_release(cfg);
    if (s != UCS_OK) {
        st->ctx = NULL;
        return fail(st, "ucp_init", s);
    }
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,  /* every call is under st->lock */
    };
    if ((s = ucp_worker_create(st->ctx, &wp, &st->worker)) != UCS_OK) {
        st->worker = NULL;
        return fail(st, "ucp_worker_create", s);
    }
    if ((s = ucp_worker_get_efd(st->worker, &st->efd)) != UCS_OK)
        return fail(st, "ucp_worker_get_efd", s);
    if ((s = ucp_worker_get_address(st->worker, &st->addr, &st->addr_len)) != UCS_OK) {
        st->addr = NULL;
        return fail(st, "ucp_worker_get_address", s);
    }
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
        .id = UCX_AM_ID,
        .cb = am_cb,
        .arg = st,
        .flags = UCP_AM_FLAG_PERSISTENT_DATA,
    };
    if ((s = ucp_worker_set_am_recv_handler(st->worker, &hp)) != UCS_OK)
        return fail(st, "ucp_worker_set_am_recv_handler", s);
    return &st->tp;
}

struct cdn_transport *cdn_ucx_transport_create(void)
{
    int size = cdn_job_size();
    why_not[0] = '\0';
    if (size <= 1)
        return NULL;
    struct ucx_state *st = calloc(1, sizeof *st);
    if (st == NULL || (st->peers = calloc((size_t)size, sizeof *st->peers)) == NULL) {
        free(st);
        snprintf(why_not, sizeof why_not, "out of memory");
        return NULL;
    }
    st->me = cdn_job_rank();
    st->size = size;
    st->efd = -1;
    st->next_token = 1;
    st->next_reg = 1;
    for (int w = 0; w < size; w++) {
        st->peers[w].world = w;
        st->peers[w].st = st;
    }
    pthread_mutex_init(&st->lock, NULL);
    st->op_spares = (struct cdn_keep)CDN_KEEP_INIT(st->op_kept);
    st->in_spares = (struct cdn_keep)CDN_KEEP_INIT(st->in_kept);
    st->tp.ops = &ucx_ops;
    st->tp.caps = CDN_TP_CAP_GET | CDN_TP_CAP_PUT | CDN_TP_CAP_MUTE;
    st->tp.am_max = UCX_AM_MAX;
    st->tp.eager_always = st->tp.eager_limit =
        (size_t)cdn_param_long("CADENCE_UCX_EAGER_LIMIT", 32768, 0, 1 << 20);
    st->tp.priv = st;
    return open_ucp(st);
}

const char *cdn_ucx_transport_why_not(void)
{
    return why_not[0] != '\0' ? why_not : NULL;
}
