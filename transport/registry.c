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

/* Each transport's constructor (its folder's only entry point). */
struct cdn_transport *cdn_shm_transport_create(void);
struct cdn_transport *cdn_tcp_transport_create(void);

static const struct cdn_transport_kind kinds[] = {
    {"shm", "processes on one node", cdn_shm_transport_create},
    {"tcp", "between nodes, or all with CADENCE_TRANSPORTS=tcp", cdn_tcp_transport_create},
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
