/*
 * A build without a GPU runtime: no offload stream type besides Cadence's
 * host queue (api/offload.h).
 */
#include "api/offload.h"

const struct cdn_offload *cdn_offload_find(const char *type)
{
    (void)type;
    return NULL;
}

const char *cdn_offload_types(void)
{
    return "";
}
