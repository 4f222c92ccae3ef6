/*
 * Window objects (MPI-4.1 12.2): what MPI_Win_create, _allocate,
 * _allocate_shared and _create_dynamic build, and what a later RMA layer
 * reads.  A window owns a private duplicate of its communicator, so window
 * traffic never meets the user's messages, and knows every process's base,
 * size and displacement unit, gathered once at creation.
 *
 * RMA communication moves data through it (progress/rma.c).  On one node
 * an allocated window's parts live in one shared segment, as a shared
 * window's do, so that the processes reach each other's parts directly.
 */
#ifndef CDN_WIN_H
#define CDN_WIN_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cdn_attr;
struct cdn_comm;
struct cdn_errhandler;
struct cdn_info;

/* One process's part of the window, as seen from this process: for shared
 * windows `base` is where that part is mapped here (MPI_Win_shared_query);
 * otherwise it is the address in the owner's space (for RMA addressing). */
struct cdn_win_part {
    void *base;
    MPI_Aint size;
    MPI_Aint disp_unit;
};

/* The lock an accumulate into one part is applied under: a word, so that
 * it works between processes too (in a mapped window's segment, where
 * zero-filled memory is a free lock); progress/rma.c takes it. */
struct cdn_acc_lock {
    atomic_int held;
};

struct cdn_win {
    MPI_Win handle;
    struct cdn_comm *comm;           /* private: same group as the creator's communicator */
    int flavor;                      /* MPI_WIN_FLAVOR_* */
    int model;                       /* MPI_WIN_UNIFIED (cache-coherent memory) */
    /* This process's part; the MPI_WIN_* attributes point here. */
    void *base;
    MPI_Aint size;
    int disp_unit;
    struct cdn_win_part *parts;      /* one per rank of comm */
    void *mem;                       /* allocate flavor: freed with the window */
    void *shm;                       /* shared flavor, and allocate on one node: the whole
                                      * mapped segment (every part, then acc_locks) */
    size_t shm_len;
    struct cdn_acc_lock *acc_locks;  /* in shm: part r's accumulate lock, taken by whoever
                                      * applies one there, any process */
    pthread_mutex_t lock;            /* name, info */
    char name[MPI_MAX_OBJECT_NAME];
    struct cdn_info *info;           /* the hints in force, with their values */
    struct cdn_attr *attrs;          /* runtime/attr.c */
    _Atomic(struct cdn_errhandler *) errh;
    /* Lifetime: the user's handle is one reference; RMA operations in
     * flight will hold others, so MPI_Win_free destroys it when the last
     * goes. */
    atomic_int refs;
    struct cdn_win *prev, *next;     /* the live windows (finalize cleans up) */
    /* RMA (progress/rma.c) */
    atomic_long rma_pending;         /* our operations' messages not yet acknowledged or
                                      * answered, to any rank */
    atomic_int xfer_err;             /* the first failure of a copy started without waiting
                                      * (progress/rma.c), reported by the next flush */
    struct cdn_win_rank *rk;         /* per rank of comm: the same to it, our lock on it */
    int rma_epoch;                   /* CDN_RMA_* access epoch open here (the user's calls) */
    bool fence_ops;                  /* an operation since the last fence */
    int nlocks;                      /* passive-target locks we hold */
    int exposure;                    /* PSCW: origins of our open exposure epoch (0: none) */
    struct cdn_win_region *regions;  /* dynamic: the memory attached (under lock) */
    /* our part's registrations with transports that need them
     * (progress/rma.c, cdn_rma_register), ended by unregister when the
     * window is destroyed */
    struct cdn_win_reg *regs;
    int nregs;
    void (*unregister)(struct cdn_win *w);
    int nregions, capregions;
    atomic_int completes;            /* ... their MPI_Win_complete calls so far */
    struct cdn_acc_lock acc_lock;    /* accumulates into our part apply one at a time
                                      * (acc_locks[our rank] instead when mapped) */
    /* our part's lock (passive target): who holds it, who waits, in order */
    pthread_mutex_t lk_lock;
    int lk_excl;                     /* an exclusive holder: 1 */
    int lk_shared;                   /* shared holders */
    struct cdn_win_waiter *lk_q;     /* a ring of comm->size entries */
    int lk_head, lk_n;
};

/* What a process keeps about one rank of a window (runtime/win.c makes
 * them with the parts). */
struct cdn_win_rank {
    atomic_long pending;             /* our messages to it not yet answered */
    int held;                        /* the lock we hold on it: 0, MPI_LOCK_SHARED or
                                      * MPI_LOCK_EXCLUSIVE */
    bool nocheck;                    /* ... taken with MPI_MODE_NOCHECK (no messages) */
    atomic_int posts;                /* PSCW: its MPI_Win_post calls naming us, not yet
                                      * taken by an MPI_Win_start */
    bool access;                     /* ... it is in our open access epoch */
    int via;                         /* how our operations reach its part: CDN_RMA_VIA_*
                                      * (progress/rma.h), 0 until the first one */
    uint64_t raddr, rkey;            /* ... by the transport's copy: where its part is, as
                                      * that transport names it, and its key */
    bool rdma;                       /* ... that copy is a fabric's RDMA (registered memory:
                                      * small operations go by message instead) */
};

/* A registration of our part: the transport (opaque here) and its key. */
struct cdn_win_reg {
    void *tp;
    uint64_t addr, key;
};

/* Memory attached to a dynamic window (MPI_Win_attach). */
struct cdn_win_region {
    char *base;
    MPI_Aint size;
};

/* A lock request waiting at its target. */
struct cdn_win_waiter {
    int peer;                        /* world rank; -1: this process */
    int trank;                       /* the rank it asked the lock of (echoed in the grant) */
    int type;
};

/* What a creating call asks for; base is the user's memory for
 * MPI_WIN_FLAVOR_CREATE and ignored otherwise. */
struct cdn_win_args {
    int flavor;
    void *base;
    MPI_Aint size;
    MPI_Aint disp_unit;
    struct cdn_info *info;           /* may be NULL */
};

/* Collective over comm (an intracommunicator): build the window, give it a
 * handle (coll/win_create.c).  Every process returns the same outcome: if any process fails
 * (memory, shared mapping), all return an error and no window exists. */
int cdn_win_create(struct cdn_comm *comm, const struct cdn_win_args *a, struct cdn_win **out,
                   const char *caller);
/* The pieces creation is made of (runtime/win.c): a window object with one
 * reference and MPI_ERRORS_ARE_FATAL, not yet known to anybody (NULL when
 * out of memory); its handle and its place among the live windows; its
 * end, before it was published or after its last reference. */
struct cdn_win *cdn_win_new(int flavor, MPI_Aint size, MPI_Aint disp_unit);
int cdn_win_publish(struct cdn_win *w, const char *caller);
void cdn_win_destroy(struct cdn_win *w);
/* The window behind a handle, or NULL (invalid, or MPI not ready). */
struct cdn_win *cdn_win_get(MPI_Win handle);
/* MPI_Win_free after the attributes are deleted: forget the handle, drop
 * its reference. */
void cdn_win_unpublish(struct cdn_win *w);
void cdn_win_release(struct cdn_win *w);

struct cdn_errhandler *cdn_win_errh(struct cdn_win *w);
/* Replace w's error handler (takes a reference to eh). */
void cdn_win_set_errh(struct cdn_win *w, struct cdn_errhandler *eh);

/* The standard hints (MPI-4.1 12.2.1) with their defaults, overridden by
 * the valid values of those keys in user (may be NULL); merged into
 * w->info when it exists (MPI_Win_set_info).  MPI_ERR_NO_MEM or success. */
int cdn_win_apply_info(struct cdn_win *w, struct cdn_info *user);

/* The live window whose private communicator has context id ctx, with a
 * reference the caller drops (cdn_win_release); NULL when none. */
struct cdn_win *cdn_win_find_ctx(uint32_t ctx);

/* Dynamic windows: attach [base, base + size) (MPI_ERR_RMA_ATTACH when it
 * overlaps memory attached already), detach the region at base
 * (MPI_ERR_RMA_ATTACH when none starts there); does [addr, addr + len)
 * lie inside one attached region? */
int cdn_win_attach(struct cdn_win *w, void *base, MPI_Aint size, const char *caller);
int cdn_win_detach(struct cdn_win *w, const void *base, const char *caller);
bool cdn_win_attached(struct cdn_win *w, uintptr_t addr, uint64_t len);

/* How many windows have a handle (leak checks). */
int cdn_win_live(void);
/* The runtime goes down: windows the program did not free are destroyed
 * (no delete callbacks: MPI forbids finalizing with windows alive); a
 * line on stderr says how many. */
void cdn_win_finalize(void);

#endif
