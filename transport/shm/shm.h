/*
 * The shared-memory transport's state, shared by its two files: segment.c
 * (segments, attach, doorbell fds) and shm.c (the ops table: protocols,
 * outbound queues, polling).
 *
 * Segments: one per process (a memfd, never a file in /dev/shm), created
 * by the process itself before the fence, holding its inbound rings (one
 * per local sender) and its doorbell.  Per-process rather than one per
 * node: nobody waits for a node leader to create anything, each process
 * sizes and first-touches its own inbound memory (NUMA-local to the
 * receiver, who reads it most), and each is handed to the peers with the
 * doorbell eventfd in one SCM_RIGHTS message.
 */
#ifndef CDN_SHM_H
#define CDN_SHM_H

#include <stdbool.h>
#include <sys/types.h>

#include "progress/spin.h"
#include "transport/shm/ring.h"
#include "transport/transport.h"

#define SHM_MAGIC 0x43444e53u  /* "CDNS" */

struct shm_seg {
    uint32_t magic;
    uint32_t nlocal;
    atomic_int attached;             /* peers that mapped this segment */
    uint32_t serves_push;            /* its owner writes split copies (progress thread on) */
    uint32_t ring_cells;             /* cells per ring (shm_ring_cells_for) */
    uint64_t ring_bytes;             /* shm_ring_bytes(ring_cells) */
    struct shm_bell bell;
    _Alignas(64) unsigned char rings[];  /* nlocal rings of ring_bytes, by the sender's
                                          * local index (shm_seg_ring) */
};

/* The ring local process i writes into seg. */
static inline struct shm_ring *shm_seg_ring(struct shm_seg *seg, int i)
{
    return (struct shm_ring *)(seg->rings + (size_t)i * seg->ring_bytes);
}

struct shm_out;  /* an item waiting for ring space (shm.c) */

struct shm_peer {
    int world;                       /* world rank */
    pid_t pid;
    char sockname[64];               /* its abstract socket (wire-up) */
    int efd;                         /* its doorbell */
    struct shm_seg *seg;             /* its segment, mapped here */
    size_t seglen;
    struct cdn_spin lock;            /* this process's producers into its ring (each send
                                      * takes it: progress/spin.h) */
    struct shm_prod prod;            /* our ring in its segment */
    struct shm_cons cons;            /* its ring in our segment (poll_lock) */
    struct shm_out *outq, *outq_tail;
    struct shm_out *out_spare;       /* queue items taken off, for reuse (lock): no
                                      * allocation per queued message once the queue
                                      * has been as deep */
    bool cma_ok;
    atomic_bool cma_proven;          /* a CMA read from it has worked (set by any
                                      * thread that pulled: relaxed) */
    atomic_uint rndv_out;            /* our RTSs to it not yet answered (FIN, a cancel,
                                      * or the last DATA cell written) */
    uint64_t msgs_out;               /* messages sent to it (lock): a send's wire_id */
    uint64_t msgs_in;                /* messages read from it (poll_lock) */
    _Atomic uint64_t claims_used;    /* claim slots of its ring in our segment in use (bits) */
    /* How its rendezvous messages are read (CADENCE_SHM_CMA=2, shm.c's
     * rndv_by_cma): the copy rates measured here (bytes per 1024 time-stamp
     * ticks, averaged; 0: none yet), and the messages chosen so far. */
    atomic_uint cma_rate, ring_rate;
    atomic_uint rndv_seen;
    atomic_uint cma_samples;         /* CMA reads timed so far (up to SHM_CMA_WARM) */
    _Atomic uint64_t mid_probe_due;  /* when send_rndv next sends a message of up to the
                                      * eager limit by rendezvous though the peer reads
                                      * through the rings (ns) */
    atomic_bool by_ring;             /* the rings chosen now (rndv_by_cma) */
    atomic_bool last_cma;            /* the last message read by CMA */
    _Atomic uint64_t probe_due;      /* when to take the other way for a few messages (ns) */
    atomic_uint probe_left;          /* ... and how many of them are still to go */
    unsigned fill_rate, fills;       /* our copies into its ring: the average published in
                                      * the ring every few cells (under lock) */
    uint32_t claim_gen[SHM_CLAIMS];  /* each slot's generation, bumped by its user */
    /* An owed doorbell (shm.c, "Owed doorbells"): when it is due (ns; 0:
     * none owed), and the needs it was owed for (bit need + 3). */
    _Atomic uint64_t owed_due;
    atomic_uint owed_needs;
};

struct shm_state {
    struct cdn_transport tp;
    int nlocal, me;                  /* local processes, our index among them */
    struct shm_peer *peers;          /* by local index (peers[me] unused) */
    int *local_of;                   /* world rank -> local index, -1 if remote */
    int world_size;
    struct shm_seg *seg;             /* ours */
    struct shm_ring **in;            /* its inbound rings, peers[me]'s left out: every
                                      * empty poll looks at each (shm_busy) */
    struct shm_peer **from;          /* ... and the peer writing each (shm_poll) */
    int nin;
    size_t seglen;
    int segfd;                       /* its memfd, until every peer has it */
    char segname[64];                /* our abstract socket's name */
    int efd;                         /* our doorbell */
    int sock;                        /* doorbell fd exchange (wire-up only) */
    int cma;                         /* CADENCE_SHM_CMA: 0 never, 1 always, 2 by the rates */
    uint64_t split_min;              /* CADENCE_SHM_SPLIT_MIN (0: never split) */
    /* Split copies received, their upper halves written by the sender and
     * taken back; counted with CADENCE_TRANSPORT_REPORT (shm_finalize). */
    atomic_ulong splits, split_pushed, split_taken_back;
    /* Rendezvous messages received by CMA and through the rings (the same
     * report). */
    atomic_ulong rndv_cma, rndv_ring;
    /* Messages of at most the eager limit sent by rendezvous (send_rndv;
     * the same report). */
    atomic_ulong rndv_mid;
    /* Standard eager messages received in the short and the long form
     * (ring.h, struct shm_small), for CADENCE_TRANSPORT_REPORT. */
    atomic_ulong eager_short, eager_long;
    /* Items queued for ring space, and queue items allocated for them
     * (out_get; the same report). */
    atomic_ulong queued_total, out_allocs;
    int prefault_max;                /* CADENCE_SHM_PREFAULT: fault rings in up to this many
                                      * processes per node */
    atomic_int queued;               /* items in outbound queues */
    atomic_int owed;                 /* peers owed a doorbell (shm.c) */
    atomic_ulong owed_total, owed_paid;  /* doorbells owed, and rung when due
                                          * (CADENCE_TRANSPORT_REPORT) */
};

/* segment.c */
int shm_seg_create(struct shm_state *st);
int shm_seg_attach_all(struct shm_state *st);
void shm_seg_destroy(struct shm_state *st);

#endif
