/*
 * Which transport carried this process's messages (CADENCE_TRANSPORT_REPORT).
 *
 * The send path counts each message it hands to a transport, or delivers
 * to this process itself, when the report is on; MPI_Finalize then prints
 * one line per process on stderr:
 *     cadence: rank 1: sent shm 1234, self 5
 * (every transport this process opened, then self).  The test suite's
 * mpirun wrapper (tests/mpi/run_mpirun.sh) reads it to check that a test
 * ran over the transport it was meant to.  With the report off the cost is
 * one load of a flag that never changes during a job.
 */
#ifndef CDN_PROGRESS_SENT_H
#define CDN_PROGRESS_SENT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "progress/engine.h"
#include "transport/transport.h"

/* Slot k: transport kind k (cdn_transport_kinds), every context's
 * instance of it; slot nkinds: to this process (cdn_sent_open sizes it). */
extern atomic_ulong *cdn_sent_count;
extern int cdn_sent_nkinds;
/* Slot c: messages handed to progress context c's transports. */
extern atomic_ulong *cdn_sent_ctx_count;
/* MPI_Isend calls complete at the call (cdn_p2p_sent_request), counted
 * with the report on; printed on a line of its own. */
extern atomic_ulong cdn_sent_at_call;
extern bool cdn_sent_report;

/* Read CADENCE_TRANSPORT_REPORT (MPI_Init). */
void cdn_sent_init(void);
/* The transports are open: zeroed counts for them and for this process
 * (MPI_ERR_NO_MEM when out of memory with the report on). */
int cdn_sent_open(int nkinds);
/* Print the line, if the report is on (MPI_Finalize, transports still open). */
void cdn_sent_print(void);

/* One message handed to tp (NULL: delivered to this process). */
static inline void cdn_sent_count_one(const struct cdn_transport *tp)
{
    if (!cdn_sent_report)
        return;
    /* by kind, every context's instances together; after the kinds: this
     * process (tp NULL) */
    atomic_fetch_add_explicit(&cdn_sent_count[tp != NULL ? tp->kind : cdn_sent_nkinds], 1,
                              memory_order_relaxed);
    if (tp != NULL)
        atomic_fetch_add_explicit(&cdn_sent_ctx_count[tp->ctx], 1, memory_order_relaxed);
}

#endif
