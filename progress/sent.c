/* Messages sent per transport, and the line MPI_Finalize prints (see sent.h). */
#include "progress/sent.h"

#include <stdio.h>
#include <stdlib.h>

#include "progress/engine.h"
#include "progress/match.h"
#include "progress/rma.h"
#include "runtime/config.h"
#include "progress/staging.h"
#include "progress/threadq.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "transport/transport.h"

atomic_ulong *cdn_sent_count;
int cdn_sent_nkinds;
atomic_ulong *cdn_sent_ctx_count;
atomic_ulong cdn_sent_at_call;
bool cdn_sent_report;

void cdn_sent_init(void)
{
    cdn_sent_report = cdn_param_long("CADENCE_TRANSPORT_REPORT", 0, 0, 1) != 0;
    atomic_store_explicit(&cdn_sent_at_call, 0, memory_order_relaxed);
}

int cdn_sent_open(int nkinds)
{
    free(cdn_sent_count);
    free(cdn_sent_ctx_count);
    cdn_sent_count = cdn_sent_ctx_count = NULL;
    cdn_sent_nkinds = nkinds;
    if (!cdn_sent_report)
        return MPI_SUCCESS;
    cdn_sent_count = calloc((size_t)nkinds + 1, sizeof *cdn_sent_count);
    cdn_sent_ctx_count = calloc((size_t)cdn_engine.nctx, sizeof *cdn_sent_ctx_count);
    if (cdn_sent_count == NULL || cdn_sent_ctx_count == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: CADENCE_TRANSPORT_REPORT: out of memory");
    return MPI_SUCCESS;
}

void cdn_sent_print(void)
{
    if (!cdn_sent_report)
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "cadence: rank %d: sent", cdn_rt.world_rank);
    /* the kinds context 0 opened, in its order (the others open the same) */
    const struct cdn_pctx *c0 = &cdn_engine.ctx[0];
    for (int i = 0; i < c0->ntransports && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s %lu,",
                      c0->transports[i]->ops->name,
                      atomic_load_explicit(&cdn_sent_count[c0->transports[i]->kind],
                                           memory_order_relaxed));
    if (n < (int)sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " self %lu\n",
                 atomic_load_explicit(&cdn_sent_count[cdn_sent_nkinds], memory_order_relaxed));
    fputs(line, stderr);
    if (cdn_engine.nctx > 1) {
        n = snprintf(line, sizeof line, "cadence: rank %d: messages by progress context",
                     cdn_rt.world_rank);
        for (int i = 0; i < cdn_engine.nctx && n < (int)sizeof line; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s %d %lu", i > 0 ? "," : "", i,
                          atomic_load_explicit(&cdn_sent_ctx_count[i], memory_order_relaxed));
        if (n < (int)sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, "\n");
        fputs(line, stderr);
    }
    /* read after the progress thread stopped: its counts are final */
    fprintf(stderr, "cadence: rank %d: progress lingers %lu (ended by the thread's look %lu, "
            "by starts %lu, otherwise %lu), held starts %lu\n", cdn_rt.world_rank,
            atomic_load(&cdn_engine.lingers),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_LOOKED]),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_STARTED]),
            atomic_load(&cdn_engine.linger_ends[CDN_LINGER_OTHER]),
            atomic_load(&cdn_engine.held));
    if (cdn_engine.mute_fds)
        fprintf(stderr, "cadence: rank %d: transport fds muted while application threads "
                "polled %lu\n", cdn_rt.world_rank, atomic_load(&cdn_engine.mutes));
    unsigned long asked, allocated;
    cdn_staging_counts(&asked, &allocated);
    fprintf(stderr, "cadence: rank %d: staging copies of non-contiguous messages %lu, "
            "allocated %lu\n", cdn_rt.world_rank, asked, allocated);
    cdn_match_copy_counts(&asked, &allocated);
    fprintf(stderr, "cadence: rank %d: unexpected messages copied %lu, copies allocated %lu\n",
            cdn_rt.world_rank, asked, allocated);
    fprintf(stderr, "cadence: rank %d: immediate sends complete at the call %lu\n",
            cdn_rt.world_rank, atomic_load(&cdn_sent_at_call));
    unsigned long via[CDN_RMA_NVIA];
    cdn_rma_counts(via);
    if (via[CDN_RMA_VIA_MAP] + via[CDN_RMA_VIA_XFER] + via[CDN_RMA_VIA_AM] > 0)
        fprintf(stderr, "cadence: rank %d: one-sided operations by loads and stores %lu, by "
                "the transport's copy %lu, by active messages %lu\n", cdn_rt.world_rank,
                via[CDN_RMA_VIA_MAP], via[CDN_RMA_VIA_XFER], via[CDN_RMA_VIA_AM]);
    unsigned long tq[CDN_TQ_NCOUNTS];
    cdn_tq_counts(tq);
    if (tq[CDN_TQ_CELL] + tq[CDN_TQ_SPILL] > 0)
        fprintf(stderr, "cadence: rank %d: thread queues: cells %lu, spilled %lu; data in the "
                "arena %lu, on the heap %lu; rendezvous %lu, copies split %lu, helped by "
                "the sender %lu; drained for an away thread %lu\n", cdn_rt.world_rank,
                tq[CDN_TQ_CELL], tq[CDN_TQ_SPILL], tq[CDN_TQ_ARENA], tq[CDN_TQ_HEAP],
                tq[CDN_TQ_RNDV], tq[CDN_TQ_SPLIT], tq[CDN_TQ_HELPED], tq[CDN_TQ_SHARED]);
}
