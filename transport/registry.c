/*
 * The transports compiled into the library, in their default order of
 * preference (CADENCE_TRANSPORTS unset): a transport registers here with
 * its name and constructor, and the engine opens transports by name from
 * this list (cdn_transport_kinds) without knowing any of them.  A
 * transport built only where its library was found adds its entry under
 * the same condition as its sources.
 */
#include "transport/transport.h"

#include <stdio.h>

#include "cdn_build_config.h"

/* Each transport's constructor (its folder's only entry point), and for
 * the fabric transports why one could not start. */
struct cdn_transport *cdn_shm_transport_create(void);
struct cdn_transport *cdn_tcp_transport_create(void);
struct cdn_transport *cdn_udp_transport_create(void);
#if CDN_HAVE_OFI
struct cdn_transport *cdn_ofi_transport_create(void);
const char *cdn_ofi_transport_why_not(void);
void cdn_ofi_transport_probe(char *out, size_t len);
#endif
#if CDN_HAVE_UCX
struct cdn_transport *cdn_ucx_transport_create(void);
const char *cdn_ucx_transport_why_not(void);
void cdn_ucx_transport_probe(char *out, size_t len);
#endif
#if CDN_HAVE_VERBS
struct cdn_transport *cdn_verbs_transport_create(void);
const char *cdn_verbs_transport_why_not(void);
void cdn_verbs_transport_probe(char *out, size_t len);
#endif

static const struct cdn_transport_kind kinds[] = {
    {"shm", "processes on one node", cdn_shm_transport_create, false, NULL, NULL},
    {"tcp", "between nodes, or all with CADENCE_TRANSPORTS=tcp", cdn_tcp_transport_create, false,
     NULL, NULL},
    {"udp", "every process, over UDP datagrams with Cadence's own reliability layer",
     cdn_udp_transport_create, true, NULL, NULL},
#if CDN_HAVE_OFI
    {"ofi", "every process, through libfabric (CADENCE_OFI_PROVIDER)", cdn_ofi_transport_create,
     true, cdn_ofi_transport_why_not, cdn_ofi_transport_probe},
#endif
#if CDN_HAVE_UCX
    {"ucx", "every process, through UCX (UCX_TLS)", cdn_ucx_transport_create, true,
     cdn_ucx_transport_why_not, cdn_ucx_transport_probe},
#endif
#if CDN_HAVE_VERBS
    {"verbs", "every process, through an RDMA device (libibverbs)", cdn_verbs_transport_create,
     true, cdn_verbs_transport_why_not, cdn_verbs_transport_probe},
#endif
};

const struct cdn_transport_kind *cdn_transport_kinds(int *n)
{
    *n = (int)(sizeof kinds / sizeof kinds[0]);
    return kinds;
}

void cdn_transport_modex_key(const struct cdn_transport *tp, const char *base, char *out,
                             size_t len)
{
    if (tp->ctx == 0)
        snprintf(out, len, "%s", base);
    else
        snprintf(out, len, "%s.%d", base, tp->ctx);
}
