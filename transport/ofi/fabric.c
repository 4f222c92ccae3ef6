/*
 * Opening and closing the ofi transport's libfabric objects (see ofi.h).
 *
 * The provider: CADENCE_OFI_PROVIDER names it (libfabric's own spelling,
 * "tcp;ofi_rxm", "shm", "udp;ofi_rxd"), else the first fi_getinfo answers
 * with what we need: FI_MSG on an FI_EP_RDM endpoint, messages delivered in
 * the order they were sent (FI_ORDER_SAS: MPI's non-overtaking rule, since
 * the engine matches in order of arrival), FI_RMA when offered (asked for
 * first, then without).  We can handle every memory-registration mode bit
 * that matters for host memory (FI_MR_LOCAL, _VIRT_ADDR, _PROV_KEY,
 * _ALLOCATED, _ENDPOINT) and say so in the hints.
 *
 * The completion queue is opened with a wait fd when the provider has one
 * (fi_control FI_GETWAIT): the engine sleeps on it.  Without one (shm,
 * udp;ofi_rxd in libfabric 1.17) the engine sleeps on a timerfd of ours
 * instead, armed for naps that grow while nothing arrives (cq.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "progress/job.h"
#include "runtime/error.h"
#include "runtime/config.h"
#include "runtime/pmix.h"
#include "transport/ofi/ofi.h"

#define OFI_API FI_VERSION(1, 9)

static char why_buf[512];

static const char *provider_wanted(void)
{
    const char *p = cdn_param_str("CADENCE_OFI_PROVIDER");
    return p != NULL && *p != '\0' ? p : NULL;
}

static struct fi_info *hints_for(uint64_t caps)
{
    struct fi_info *h = fi_allocinfo();
    if (h == NULL)
        return NULL;
    const char *prov = provider_wanted();
    h->caps = caps;
    h->ep_attr->type = FI_EP_RDM;
    h->mode = FI_CONTEXT;  /* every op starts with a struct fi_context */
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY |
                              FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    h->domain_attr->threading = FI_THREAD_SAFE;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    if (prov != NULL)
        h->fabric_attr->prov_name = strdup(prov);
    return h;
}

/* The first provider with our caps: with FI_RMA if any has it. */
static struct fi_info *choose(const char **why)
{
    uint64_t rma = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    int rc = 0;
    /* CADENCE_OFI_RMA=0: messages only, the CTS and DATA rendezvous */
    for (int pass = cdn_param_long("CADENCE_OFI_RMA", 1, 0, 1) == 0; pass < 2; pass++) {
        struct fi_info *h = hints_for(FI_MSG | (pass == 0 ? rma : 0)), *info = NULL;
        if (h == NULL)
            break;
        rc = fi_getinfo(OFI_API, NULL, NULL, 0, h, &info);
        fi_freeinfo(h);
        if (rc == 0 && info != NULL) {
            /* the hints ask for ordering, but a provider may answer less */
            if ((info->tx_attr->msg_order & FI_ORDER_SAS) &&
                (info->rx_attr->msg_order & FI_ORDER_SAS)) {
                struct fi_info *one = fi_dupinfo(info);
                fi_freeinfo(info);
                return one;
            }
            snprintf(why_buf, sizeof why_buf,
                     "libfabric provider %s does not deliver messages in order "
                     "(no FI_ORDER_SAS), which MPI's non-overtaking rule needs",
                     info->fabric_attr->prov_name);
            fi_freeinfo(info);
            *why = why_buf;
            return NULL;
        }
    }
    const char *prov = provider_wanted();
    snprintf(why_buf, sizeof why_buf,
             "libfabric found no provider with FI_MSG, FI_EP_RDM and ordered messages "
             "(CADENCE_OFI_PROVIDER=%s): %s", prov ? prov : "(any)", fi_strerror(-rc));
    *why = why_buf;
    return NULL;
}

/* For mpiinfo: the providers fi_getinfo offers us here (any provider,
 * whatever CADENCE_OFI_PROVIDER says), the first being the default. */
void cdn_ofi_probe(char *out, size_t len)
{
    struct fi_info *h = fi_allocinfo(), *info = NULL;
    if (h == NULL || len == 0)
        return;
    h->caps = FI_MSG;
    h->ep_attr->type = FI_EP_RDM;
    h->mode = FI_CONTEXT;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY |
                              FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    int rc = fi_getinfo(OFI_API, NULL, NULL, 0, h, &info);
    fi_freeinfo(h);
    if (rc != 0) {
        snprintf(out, len, "no provider with FI_MSG and FI_EP_RDM (%s)", fi_strerror(-rc));
        return;
    }
    size_t n = (size_t)snprintf(out, len, "providers");
    const char *seen[32];
    int nseen = 0;
    for (struct fi_info *i = info; i != NULL && n < len; i = i->next) {
        const char *name = i->fabric_attr->prov_name;
        bool dup = false;
        for (int k = 0; k < nseen && !dup; k++)
            dup = strcmp(seen[k], name) == 0;
        if (dup || nseen == 32)
            continue;
        seen[nseen++] = name;
        n += (size_t)snprintf(out + n, len - n, "%s %s", nseen > 1 ? "," : "", name);
    }
    fi_freeinfo(info);
}

static const char *fail(const char *what, int rc)
{
    snprintf(why_buf, sizeof why_buf, "libfabric: %s failed: %s", what, fi_strerror(-rc));
    return why_buf;
}

/* The completion queue, with a wait fd if the provider gives one. */
static int open_cq(struct ofi_state *st)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA, .size = 4096,
                              .wait_obj = FI_WAIT_FD};
    st->wait_fd = -1;
    if (cdn_param_long("CADENCE_OFI_WAIT_FD", 1, 0, 1) != 0 &&  /* 0: timed naps instead */
        fi_cq_open(st->domain, &attr, &st->cq, NULL) == 0) {
        int fd = -1;
        if (fi_control(&st->cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0) {
            st->wait_fd = fd;
            return 0;
        }
        fi_close(&st->cq->fid);
        st->cq = NULL;
    }
    attr.wait_obj = FI_WAIT_NONE;
    return fi_cq_open(st->domain, &attr, &st->cq, NULL);
}

/* What the engine sleeps on: an epoll set of the wait fd (if any) and our
 * timer (naps without a wait fd, keepalives with one: cq.c). */
static int open_sleep(struct ofi_state *st)
{
    st->nap_max_ns = 1000 * cdn_param_long("CADENCE_OFI_NAP_MAX_US", 10000, 100, 1000000);
    st->keepalive_ns = 1000000L * cdn_param_long("CADENCE_OFI_KEEPALIVE_MS", 1000, 0, 3600000);
    st->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    st->sleep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (st->timer_fd < 0 || st->sleep_fd < 0)
        return -FI_EMFILE;
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(st->sleep_fd, EPOLL_CTL_ADD, st->timer_fd, &ev) != 0 ||
        (st->wait_fd >= 0 && epoll_ctl(st->sleep_fd, EPOLL_CTL_ADD, st->wait_fd, &ev) != 0))
        return -FI_EINVAL;
    return 0;
}

static const char *open_all(struct ofi_state *st)
{
    int rc;
    if ((rc = fi_fabric(st->info->fabric_attr, &st->fabric, NULL)) != 0)
        return fail("fi_fabric", rc);
    if ((rc = fi_domain(st->fabric, st->info, &st->domain, NULL)) != 0)
        return fail("fi_domain", rc);
    if ((rc = open_cq(st)) != 0)
        return fail("fi_cq_open", rc);
    if ((rc = open_sleep(st)) != 0)
        return fail("opening the transport's epoll set and timer", rc);
    struct fi_av_attr av = {.type = FI_AV_TABLE, .count = (size_t)st->size};
    if ((rc = fi_av_open(st->domain, &av, &st->av, NULL)) != 0)
        return fail("fi_av_open", rc);
    if ((rc = fi_endpoint(st->domain, st->info, &st->ep, NULL)) != 0)
        return fail("fi_endpoint", rc);
    if ((rc = fi_ep_bind(st->ep, &st->cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
        return fail("binding the completion queue", rc);
    if ((rc = fi_ep_bind(st->ep, &st->av->fid, 0)) != 0)
        return fail("binding the address vector", rc);
    if ((rc = fi_enable(st->ep)) != 0) {
        if (rc == -FI_EBUSY && strcmp(st->info->fabric_attr->prov_name, "shm") == 0) {
            snprintf(why_buf, sizeof why_buf, "libfabric: fi_enable failed: %s (the shm "
                     "provider's region /dev/shm/%d:%u:0 exists: left by an earlier process "
                     "with this pid that was killed?)", fi_strerror(-rc), (int)getpid(),
                     (unsigned)getuid());
            return why_buf;
        }
        return fail("fi_enable", rc);
    }
    return NULL;
}

static void mr_modes(struct ofi_state *st)
{
    uint64_t m = (uint64_t)st->info->domain_attr->mr_mode;
    st->rma = (st->info->caps & FI_RMA) != 0;
    /* A put completes once its data is in the target's memory (MPI's
     * flush), which libfabric promises only with FI_DELIVERY_COMPLETE.
     * The shm provider writes by CMA from the origin, so its completion
     * already means that; asked for delivery completion it takes a path
     * that waits for the target instead, and in libfabric 1.17 a burst of
     * such writes to a target sitting in a barrier was seen to hang. */
    st->write_flags = FI_COMPLETION;
    if (strcmp(st->info->fabric_attr->prov_name, "shm") != 0)
        st->write_flags |= FI_DELIVERY_COMPLETE;
    st->mr_local = (m & FI_MR_LOCAL) != 0;
    st->mr_virt = (m & FI_MR_VIRT_ADDR) != 0;
    st->mr_prov_key = (m & FI_MR_PROV_KEY) != 0;
    st->mr_endpoint = (m & FI_MR_ENDPOINT) != 0;
    atomic_init(&st->next_key, 1);
    size_t max = st->info->ep_attr->max_msg_size;
    st->rma_chunk = max > 0 && max < OFI_RMA_CHUNK ? max : OFI_RMA_CHUNK;
    st->payload_max = OFI_EAGER_MAX;
    if (max > 0 && max < sizeof(struct ofi_msg) + OFI_EAGER_MAX)
        st->payload_max = max > sizeof(struct ofi_msg) ? max - sizeof(struct ofi_msg) : 0;
}

struct ofi_state *cdn_ofi_open(const char **why)
{
    *why = NULL;
    struct ofi_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        *why = "out of memory";
        return NULL;
    }
    st->me = cdn_job_rank();
    st->size = cdn_job_size();
    st->wait_fd = st->timer_fd = st->sleep_fd = -1;
    pthread_mutex_init(&st->lock, NULL);
    st->peers = calloc((size_t)st->size, sizeof *st->peers);
    if (st->peers == NULL) {
        *why = "out of memory";
        cdn_ofi_close(st);
        return NULL;
    }
    st->info = choose(why);
    if (st->info == NULL) {
        cdn_ofi_close(st);
        return NULL;
    }
    mr_modes(st);
    if (st->payload_max < OFI_PAYLOAD_MIN) {
        snprintf(why_buf, sizeof why_buf, "libfabric provider %s sends messages of at most "
                 "%zu bytes; the ofi transport needs %zu", st->info->fabric_attr->prov_name,
                 st->info->ep_attr->max_msg_size, sizeof(struct ofi_msg) + OFI_PAYLOAD_MIN);
        *why = why_buf;
        cdn_ofi_close(st);
        return NULL;
    }
    if ((*why = open_all(st)) != NULL) {
        cdn_ofi_close(st);
        return NULL;
    }
    return st;
}

/* CADENCE_OFI_VERBOSE=1: what was chosen, once per process. */
static void say_chosen(const struct ofi_state *st)
{
    if (cdn_param_long("CADENCE_OFI_VERBOSE", 0, 0, 1) == 0 || st->tp.ctx != 0)
        return;
    fprintf(stderr, "cadence: rank %d: ofi: provider %s, domain %s, %s, mr_mode 0x%x, %s\n",
            st->me, st->info->fabric_attr->prov_name, st->info->domain_attr->name,
            st->rma ? "FI_RMA (rendezvous by fi_read)" : "no FI_RMA (rendezvous by CTS and DATA)",
            (unsigned)st->info->domain_attr->mr_mode,
            st->wait_fd >= 0 ? "a wait fd" : "no wait fd (timed naps)");
}

int cdn_ofi_publish(struct ofi_state *st)
{
    say_chosen(st);
    char name[OFI_ADDR_MAX], key[64];
    size_t len = sizeof name;
    int rc = fi_getname(&st->ep->fid, name, &len);
    if (rc != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: ofi: fi_getname failed: %s", fi_strerror(-rc));
    cdn_transport_modex_key(&st->tp, CDN_MODEX_OFI_ADDR, key, sizeof key);
    return cdn_modex_put(key, name, len);
}

int cdn_ofi_insert_peers(struct ofi_state *st)
{
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_OFI_ADDR, key, sizeof key);
    for (int w = 0; w < st->size; w++) {
        st->peers[w].addr = FI_ADDR_NOTAVAIL;
        if (w == st->me)
            continue;
        char name[OFI_ADDR_MAX];
        size_t len = sizeof name;
        int rc = cdn_modex_get(w, key, name, &len);
        if (rc != MPI_SUCCESS)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: ofi: rank %d published no address "
                           "(%s)", w, key);
        if (len > sizeof name)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: ofi: rank %d's address is %zu bytes, "
                           "more than %d", w, len, OFI_ADDR_MAX);
        int n = fi_av_insert(st->av, name, 1, &st->peers[w].addr, 0, NULL);
        if (n != 1)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: ofi: fi_av_insert of rank %d's address "
                           "failed: %s", w, fi_strerror(n < 0 ? -n : FI_EINVAL));
    }
    return MPI_SUCCESS;
}

int cdn_ofi_reg(struct ofi_state *st, void *addr, size_t len, uint64_t access, struct fid_mr **mr)
{
    uint64_t key = st->mr_prov_key ? 0 : atomic_fetch_add(&st->next_key, 1);
    int rc = fi_mr_reg(st->domain, addr, len, access, 0, key, 0, mr, NULL);
    if (rc == 0 && st->mr_endpoint) {
        rc = fi_mr_bind(*mr, &st->ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(*mr);
        if (rc != 0)
            fi_close(&(*mr)->fid);
    }
    if (rc != 0)
        return cdn_err(MPI_ERR_OTHER, "ofi: registering %zu bytes at %p failed: %s", len, addr,
                       fi_strerror(-rc));
    return MPI_SUCCESS;
}

/* Without FI_MR_VIRT_ADDR a peer names registered bytes by their offset. */
uint64_t cdn_ofi_remote_base(const struct ofi_state *st, const void *addr)
{
    return st->mr_virt ? (uint64_t)(uintptr_t)addr : 0;
}

static void close_fid(struct fid *f)
{
    if (f != NULL)
        fi_close(f);
}

void cdn_ofi_close(struct ofi_state *st)
{
    close_fid(st->ep ? &st->ep->fid : NULL);
    close_fid(st->av ? &st->av->fid : NULL);
    close_fid(st->cq ? &st->cq->fid : NULL);
    close_fid(st->domain ? &st->domain->fid : NULL);
    close_fid(st->fabric ? &st->fabric->fid : NULL);
    if (st->timer_fd >= 0)
        close(st->timer_fd);
    if (st->sleep_fd >= 0)
        close(st->sleep_fd);
    if (st->info != NULL)
        fi_freeinfo(st->info);
    pthread_mutex_destroy(&st->lock);
    free(st->peers);
    free(st);
}
