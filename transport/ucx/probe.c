/*
 * What this machine offers the ucx transport, for mpiinfo: UCX's version,
 * the UCX_TLS in force, and whether a UCP context can be made with what
 * the transport asks for (nothing is connected; no MPI needed).
 */
#include <stdio.h>
#include <stdlib.h>

#include <ucp/api/ucp.h>

#include "transport/transport.h"

void cdn_ucx_transport_probe(char *out, size_t len);

void cdn_ucx_transport_probe(char *out, size_t len)
{
    const char *tls = getenv("UCX_TLS");
    ucp_config_t *cfg;
    ucp_context_h ctx;
    ucs_status_t s = ucp_config_read(NULL, NULL, &cfg);
    if (s == UCS_OK) {
        ucp_params_t prm = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                            .features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP};
        s = ucp_init(&prm, cfg, &ctx);
        ucp_config_release(cfg);
        if (s == UCS_OK)
            ucp_cleanup(ctx);
    }
    snprintf(out, len, "UCX %s, UCX_TLS=%s: %s%s", ucp_get_version_string(),
             tls != NULL ? tls : "(all)", s == UCS_OK ? "can start" : "cannot start: ",
             s == UCS_OK ? "" : ucs_status_string(s));
}
