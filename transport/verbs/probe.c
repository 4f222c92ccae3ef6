/*
 * What this machine offers the verbs transport, for mpiinfo: the RDMA
 * devices libibverbs finds, or that there is none.
 */
#include <stdio.h>

#include <infiniband/verbs.h>

#include "transport/transport.h"

void cdn_verbs_transport_probe(char *out, size_t len);

void cdn_verbs_transport_probe(char *out, size_t len)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list == NULL || n == 0) {
        snprintf(out, len, "cannot start: no RDMA device");
        if (list != NULL)
            ibv_free_device_list(list);
        return;
    }
    size_t used = (size_t)snprintf(out, len, "devices:");
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, " %s", ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
}
