/* Messages sent per transport, and the line MPI_Finalize prints (see sent.h). */
#include "progress/sent.h"

#include <stdio.h>

#include "progress/engine.h"
#include "progress/params.h"
#include "runtime/runtime.h"
#include "transport/transport.h"

atomic_ulong cdn_sent_count[CDN_MAX_TRANSPORTS + 1];
atomic_ulong cdn_sent_at_call;
bool cdn_sent_report;

void cdn_sent_init(void)
{
    cdn_sent_report = cdn_progress_param_long("CADENCE_TRANSPORT_REPORT", 0, 0, 1) != 0;
    for (int i = 0; i <= CDN_MAX_TRANSPORTS; i++)
        atomic_store_explicit(&cdn_sent_count[i], 0, memory_order_relaxed);
    atomic_store_explicit(&cdn_sent_at_call, 0, memory_order_relaxed);
}

void cdn_sent_print(void)
{
    if (!cdn_sent_report)
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "cadence: rank %d: sent", cdn_rt.world_rank);
    for (int i = 0; i < cdn_engine.ntransports && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s %lu,",
                      cdn_engine.transports[i]->ops->name,
                      atomic_load_explicit(&cdn_sent_count[i], memory_order_relaxed));
    if (n < (int)sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " self %lu\n",
                 atomic_load_explicit(&cdn_sent_count[CDN_MAX_TRANSPORTS], memory_order_relaxed));
    fputs(line, stderr);
    /* read after the progress thread stopped: its counts are final */
    fprintf(stderr, "cadence: rank %d: progress lingers %lu (ended by the thread's look %lu, "
            "by starts %lu, otherwise %lu), held starts %lu\n", cdn_rt.world_rank,
            atomic_load(&cdn_engine.lingers),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_LOOKED]),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_STARTED]),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_OTHER]),
            atomic_load(&cdn_engine.held));
    fprintf(stderr, "cadence: rank %d: immediate sends complete at the call %lu\n",
            cdn_rt.world_rank, atomic_load(&cdn_sent_at_call));
}
