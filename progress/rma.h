/*
 * One-sided communication (MPI-4.1 chapter 12; docs/rma.md): MPI_Put,
 * MPI_Get and MPI_Accumulate on windows of runtime/win.h, in fence and
 * passive-target epochs.
 *
 * An operation becomes active messages to the target process (progress/
 * am.h), one per contiguous run of the target datatype, cut to the
 * transport's active-message size; the target's handler -- run by
 * whichever of its threads polls, its progress thread included, so the
 * target's application takes no part -- writes, reads or accumulates into
 * its part of the window and answers (an acknowledgement, or the data).
 * A target on this node is reached without its threads where the memory
 * allows: loads and stores into a part mapped here (allocated and shared
 * windows of one node), or the transport's one-sided copy (puts and gets
 * on created windows: CMA; over a fabric, RDMA on allocated and created
 * windows, their parts registered at creation).
 * The origin counts its messages not yet answered (win->rma_pending); a
 * fence waits for that count to reach zero, then synchronises the
 * window's processes: every operation of the epoch has then taken effect
 * at its target.  An operation on this process's own part is done in the
 * call.  Accumulates into one part apply one at a time (win->acc_lock, or
 * the part's process-shared lock in a mapped window, which the origins
 * on the node take as well), element-wise atomic as the standard asks.
 */
#ifndef CDN_RMA_H
#define CDN_RMA_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

struct cdn_comm;
struct cdn_datatype;
struct cdn_op;
struct cdn_request;
struct cdn_win;

/* How this process's operations reach a rank's part (win->rk[r].via):
 * loads and stores (its own part, or one mapped here from the window's
 * shared segment), the transport's one-sided copy (puts and gets; the
 * others as active messages), or active messages its engine applies. */
enum { CDN_RMA_VIA_MAP = 1, CDN_RMA_VIA_XFER, CDN_RMA_VIA_AM, CDN_RMA_NVIA };

/* Access epochs a window can be in at this process (win->rma_epoch). */
enum { CDN_RMA_NONE, CDN_RMA_FENCE, CDN_RMA_LOCK, CDN_RMA_LOCK_ALL, CDN_RMA_PSCW };

/* One operation: origin (buffer, count, type), target (rank, displacement,
 * count, type); op for an accumulate (NULL: put or get). */
struct cdn_rma_args {
    void *oaddr;
    MPI_Count ocount;
    struct cdn_datatype *odt;
    int trank;
    MPI_Aint tdisp;
    MPI_Count tcount;
    struct cdn_datatype *tdt;
    struct cdn_op *op;
    void *raddr;                 /* MPI_Get_accumulate: where the old data goes */
    MPI_Count rcount;
    struct cdn_datatype *rdt;
    struct cdn_request **req;    /* MPI_Rput and the other request-based forms: gets a
                                  * request complete once the operation is complete at
                                  * its target (NULL: none) */
};

enum cdn_rma_kind { CDN_RMA_PUT, CDN_RMA_GET, CDN_RMA_ACC, CDN_RMA_GACC };

/* Check and start one operation (arguments checked by the caller:
 * handles, counts); MPI_SUCCESS or the error, whose message names caller. */
int cdn_rma_op(struct cdn_win *w, enum cdn_rma_kind kind, const struct cdn_rma_args *a,
               const char *caller);
/* MPI_Compare_and_swap: one element of the predefined type dt (checked
 * by the caller). */
int cdn_rma_cas(struct cdn_win *w, const void *origin, const void *compare, void *result,
                struct cdn_datatype *dt, int trank, MPI_Aint tdisp, const char *caller);
/* Wait until every message of this process's operations on w has been
 * answered: they have all taken effect at their targets (a fence's
 * first half; the synchronisation of the processes is its second). */
void cdn_rma_quiesce(struct cdn_win *w);
/* The first failure of a put or get this process started on w by the
 * transport's copy without waiting for it, since the last call (reported
 * once, as caller's error), or MPI_SUCCESS; the synchronisation calls
 * return it after their wait. */
int cdn_rma_failed(struct cdn_win *w, const char *caller);
/* Passive target: MPI_Win_lock, _unlock, _lock_all, _unlock_all, and the
 * flushes (rank -1: every rank).  The lock of a part is kept by its
 * process's engine (win->lk_*): requests are granted in the order they
 * came, shared ones together. */
int cdn_rma_lock(struct cdn_win *w, int type, int rank, int assert, const char *caller);
int cdn_rma_unlock(struct cdn_win *w, int rank, const char *caller);
int cdn_rma_lock_all(struct cdn_win *w, int assert, const char *caller);
int cdn_rma_unlock_all(struct cdn_win *w, const char *caller);
int cdn_rma_flush(struct cdn_win *w, int rank, const char *caller);
/* PSCW (MPI-4.1 12.5.2): ranks[0..n-1] are the group's ranks in the
 * window.  post opens an exposure epoch to them, start an access epoch
 * to them (waiting for each one's post), complete closes the access
 * epoch once its operations took effect, wait (test: *flag) the exposure
 * epoch once every origin completed. */
int cdn_rma_post(struct cdn_win *w, const int *ranks, int n, const char *caller);
int cdn_rma_start(struct cdn_win *w, const int *ranks, int n, const char *caller);
int cdn_rma_complete(struct cdn_win *w, const char *caller);
int cdn_rma_wait(struct cdn_win *w, int *flag, const char *caller);
/* MPI_Win_fence's check: no passive-target epoch is open. */
int cdn_rma_fence_check(struct cdn_win *w, const char *caller);
/* The handlers (engine init). */
void cdn_rma_am_register(void);
/* A window part's registrations with the transports that reach memory
 * only through one (the fabrics' mem_reg): for transport kind k (its index
 * in the registry), bit k of `have` and where the part is as that
 * transport names it.  Each process publishes its own with its part. */
#define CDN_RMA_KINDS 8
struct cdn_rma_keys {
    uint32_t have;
    uint64_t addr[CDN_RMA_KINDS];
    uint64_t key[CDN_RMA_KINDS];
};
/* Can a window of comm be one shared segment whose parts every process
 * reaches by loads and stores (all its processes on this node, reached
 * through shared memory, and CADENCE_RMA_DIRECT not 0)? */
bool cdn_rma_can_map(const struct cdn_comm *comm);
/* Register this process's part of a new unmapped window with each
 * transport (context 0's instances) that reaches one of its peers, can
 * get and put, and needs registered memory (*mine gets the keys; a
 * registration that fails leaves that way to active messages).  The
 * window ends the registrations when it is destroyed. */
void cdn_rma_register(struct cdn_win *w, struct cdn_rma_keys *mine);
/* A new window's ways to each rank (coll/win_create.c, once its parts are
 * known): keys[r] is rank r's registrations, or keys NULL when none were
 * exchanged (a mapped window). */
void cdn_rma_setup(struct cdn_win *w, const struct cdn_rma_keys *keys);
/* Operations this process started, by the way they went (index
 * CDN_RMA_VIA_*; CADENCE_TRANSPORT_REPORT prints them). */
void cdn_rma_counts(unsigned long out[CDN_RMA_NVIA]);

#endif
