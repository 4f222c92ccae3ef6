/*
 * Window creation (runtime/win.h, cdn_win_create): collective over a
 * private communicator made first (its own context id agreed over the
 * user's communicator).  Every process then publishes its part (base,
 * size, displacement unit, and the keys of its registrations with the
 * fabric transports: progress/rma.c, cdn_rma_register) together with
 * how its local set-up went, so a failure anywhere (memory, the shared
 * mapping) fails the call everywhere instead of leaving peers with a
 * half-made window.
 *
 * Shared windows: rank 0 of the window creates one memfd holding every
 * process's part back to back (contiguous across ranks, as MPI promises
 * unless "alloc_shared_noncontig" is true; then each part starts on a
 * 64-byte boundary), and the others map it through /proc/<pid>/fd/<fd>
 * while rank 0 keeps the descriptor open.  Every process therefore sees
 * every part at its own address.  Allocated windows whose processes are
 * all on this node get the same segment (each part 2 KiB past a page
 * boundary: enum layout), so that one-sided operations between them are loads and
 * stores (progress/rma.c) with no part for the target's threads; with
 * CADENCE_RMA_DIRECT=0 they keep private memory.  Behind the parts the
 * segment holds one accumulate lock per part (a word, free when zero):
 * whoever applies an accumulate to a part takes that part's.  "On this
 * node" means reached through the shm transport (cdn_rma_can_map): under
 * CADENCE_TRANSPORTS=ofi, say, the parts stay private and registered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/comm_create.h"
#include "progress/rma.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/info.h"
#include "runtime/runtime.h"
#include "runtime/win.h"

#define WIN_ALIGN 64

/* What each process tells the others at creation. */
struct part_msg {
    void *base;
    MPI_Aint size;
    MPI_Aint disp_unit;
    int errclass;  /* MPI_SUCCESS, or why this process's local set-up failed */
    struct cdn_rma_keys keys;  /* its registrations (an unmapped window) */
};

/* How the parts lie in a shared segment: back to back (a shared window's
 * default), each on a 64-byte boundary (alloc_shared_noncontig), or
 * each 2 KiB past a page boundary (an allocated window's).  The last is
 * for one-sided copies: a buffer from malloc of 128 KiB or more starts
 * 16 bytes past a page, and a get copying a page-aligned part into it
 * ran at half speed from 4 KiB on (4.3 against 1.9 us at 4 KiB: the
 * processor takes the loads for the stores 16 bytes before them, their
 * addresses' low 12 bits being alike), where mid-page parts are 2 KiB
 * away from either. */
enum layout { BACK_TO_BACK, ALIGNED, MID_PAGE };

/* Each part's offset in the segment (bases[i], when bases is not NULL);
 * returns where the last one ends. */
static size_t place_parts(const struct cdn_win *w, int n, enum layout how, size_t *bases)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (how != BACK_TO_BACK)
            off = (off + WIN_ALIGN - 1) & ~(size_t)(WIN_ALIGN - 1);
        if (how == MID_PAGE)
            off += (4096 + 2048 - off % 4096) % 4096;
        if (bases != NULL)
            bases[i] = off;
        off += (size_t)w->parts[i].size;
    }
    return off;
}

/* Are all processes of comm on this node (so they can share memory)? */
static bool all_local(const struct cdn_comm *comm)
{
    for (int i = 0; i < comm->size; i++) {
        int r = comm->group->world[i];
        bool found = r == cdn_rt.world_rank;
        for (int j = 0; j < cdn_rt.local_size && !found; j++)
            found = cdn_rt.local_peers[j] == r;
        if (!found)
            return false;
    }
    return true;
}

/* The segment's bytes: the parts, then the accumulate locks. */
static size_t segment_len(const struct cdn_win *w, int n, enum layout how, size_t *locks_at)
{
    size_t total = place_parts(w, n, how, NULL);
    *locks_at = (total + WIN_ALIGN - 1) & ~(size_t)(WIN_ALIGN - 1);
    return *locks_at + (size_t)n * sizeof(struct cdn_acc_lock);
}

/* Map the shared segment of every part; collective over x (the window's
 * communicator), with one outcome for all.  A shared window's layout is
 * its hint's (rank 0's decides), an allocated window's noncontiguous. */
static int shm_setup(struct cdn_win *w, struct cdn_xchg *x, const char *caller)
{
    bool shared = w->flavor == MPI_WIN_FLAVOR_SHARED;
    char v[8];
    struct {
        pid_t pid;
        int fd;
        int err;        /* errno at rank 0 */
        int noncontig;
    } seg = {getpid(), -1, 0, 0};
    seg.noncontig = cdn_info_lookup(w->info, "alloc_shared_noncontig", v, sizeof v, NULL) &&
                    strcmp(v, "true") == 0;
    size_t bytes = 0;
    for (int i = 0; i < x->n; i++)
        bytes += (size_t)w->parts[i].size;
    if (bytes == 0)
        return MPI_SUCCESS;  /* every part empty: nothing to map (same answer everywhere) */
    /* rank 0's hint decides the layout for everybody */
    enum layout how = !shared ? MID_PAGE : seg.noncontig ? ALIGNED : BACK_TO_BACK;
    size_t locks_at, total = segment_len(w, x->n, how, &locks_at);
    if (x->me == 0) {
        seg.fd = memfd_create("cadence-win", MFD_CLOEXEC);
        if (seg.fd < 0 || ftruncate(seg.fd, (off_t)total) != 0)
            seg.err = errno != 0 ? errno : EIO;
    }
    int rc = cdn_xchg_bcast(x, &seg, sizeof seg, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    bool noncontig = seg.noncontig;
    if (shared && cdn_info_set(w->info, "alloc_shared_noncontig",
                               noncontig ? "true" : "false") != MPI_SUCCESS)
        seg.err = seg.err != 0 ? seg.err : ENOMEM;  /* fails below, with everybody */
    how = !shared ? MID_PAGE : noncontig ? ALIGNED : BACK_TO_BACK;
    total = segment_len(w, x->n, how, &locks_at);
    int err = seg.err, fd = seg.fd;
    if (err == 0 && x->me != 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)seg.pid, seg.fd);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            err = errno;
    }
    void *map = MAP_FAILED;
    if (err == 0) {
        map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
            err = errno;
    }
    if (x->me != 0 && fd >= 0)
        close(fd);
    /* rank 0 keeps its descriptor open until everybody has mapped */
    int worst = err;
    rc = cdn_xchg_allreduce(x, &worst, 1, MPI_INT, MPI_MAX);
    if (x->me == 0 && seg.fd >= 0)
        close(seg.fd);
    if (rc != MPI_SUCCESS || worst != 0) {
        if (map != MAP_FAILED)
            munmap(map, total);
        if (rc != MPI_SUCCESS)
            return rc;
        return err != 0 ? cdn_err(MPI_ERR_RMA_SHARED, "%s: the shared segment of %zu bytes "
                                  "could not be set up: %s", caller, total, strerror(err))
                        : cdn_err(MPI_ERR_RMA_SHARED, "%s: another process could not map the "
                                  "shared segment of %zu bytes", caller, total);
    }
    w->shm = map;
    w->shm_len = total;
    w->acc_locks = (struct cdn_acc_lock *)((char *)map + locks_at);  /* zero: free */
    size_t *bases = malloc(sizeof *bases * (size_t)x->n);
    if (bases == NULL)  /* (a few bytes a process: the job is lost anyway) */
        cdn_rt_abort(1, "cadence: out of memory placing a window's parts");
    place_parts(w, x->n, how, bases);
    for (int i = 0; i < x->n; i++)
        w->parts[i].base = (char *)map + bases[i];
    free(bases);
    w->base = w->parts[x->me].base;
    return MPI_SUCCESS;
}

/* Exchange the parts; fail everywhere when any process failed locally
 * (mine: this process's failure code, already reported).  An unmapped
 * window's parts go with their registrations: *keys gets every rank's
 * (the caller frees them). */
static int gather_parts(struct cdn_win *w, struct cdn_xchg *x, int mine, bool map,
                        struct cdn_rma_keys **keys, const char *caller)
{
    struct part_msg me = {.base = w->base, .size = w->size, .disp_unit = w->disp_unit,
                          .errclass = mine != MPI_SUCCESS ? cdn_err_class_of(mine) : 0};
    if (mine == MPI_SUCCESS && !map)
        cdn_rma_register(w, &me.keys);
    struct part_msg *all = calloc((size_t)x->n, sizeof *all);
    w->parts = calloc((size_t)x->n, sizeof *w->parts);
    w->rk = calloc((size_t)x->n, sizeof *w->rk);
    w->lk_q = calloc((size_t)x->n, sizeof *w->lk_q);
    *keys = map ? NULL : calloc((size_t)x->n, sizeof **keys);
    if (all == NULL || w->parts == NULL || w->rk == NULL || w->lk_q == NULL ||
        (!map && *keys == NULL)) {
        /* a few bytes a process: the job is lost anyway */
        free(all);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    int rc = cdn_xchg_allgather(x, &me, all, sizeof me);
    int bad = -1;
    for (int i = 0; rc == MPI_SUCCESS && i < x->n; i++) {
        w->parts[i] = (struct cdn_win_part){all[i].base, all[i].size, all[i].disp_unit};
        if (*keys != NULL)
            (*keys)[i] = all[i].keys;
        if (all[i].errclass != 0 && bad < 0)
            bad = i;
    }
    int cls = bad >= 0 ? all[bad].errclass : 0;
    free(all);
    if (rc != MPI_SUCCESS || mine != MPI_SUCCESS)
        return rc != MPI_SUCCESS ? rc : mine;
    if (bad >= 0)
        return cdn_err(cls, "%s: rank %d of the communicator could not create its part of the "
                       "window", caller, bad);
    return MPI_SUCCESS;
}

/* Does the window get a shared segment (mapped once the sizes are known)? */
static bool mapped(const struct cdn_comm *comm, int flavor)
{
    return flavor == MPI_WIN_FLAVOR_SHARED ||
           (flavor == MPI_WIN_FLAVOR_ALLOCATE && comm->size > 1 && cdn_rma_can_map(comm));
}

/* This process's memory, before anything is exchanged. */
static int local_part(struct cdn_win *w, const struct cdn_win_args *a, bool map,
                      const char *caller)
{
    switch (map ? MPI_WIN_FLAVOR_SHARED : a->flavor) {
    case MPI_WIN_FLAVOR_CREATE:
        w->base = a->base;
        break;
    case MPI_WIN_FLAVOR_ALLOCATE:
        if (a->size > 0 && posix_memalign(&w->mem, WIN_ALIGN, (size_t)a->size) != 0) {
            w->mem = NULL;
            return cdn_err(MPI_ERR_NO_MEM, "%s: cannot allocate %ld bytes of window memory",
                           caller, (long)a->size);
        }
        w->base = w->mem;
        break;
    default:  /* dynamic: MPI_BOTTOM; shared: mapped once the sizes are known */
        break;
    }
    return MPI_SUCCESS;
}

int cdn_win_create(struct cdn_comm *comm, const struct cdn_win_args *a, struct cdn_win **out,
                   const char *caller)
{
    struct cdn_win *w = cdn_win_new(a->flavor, a->size, a->disp_unit);
    if (w == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    int rc = cdn_comm_create_on(comm, comm->group, &w->comm, caller);
    if (rc != MPI_SUCCESS) {
        cdn_win_destroy(w);
        return rc;
    }
    bool map = mapped(comm, a->flavor);
    int mine = local_part(w, a, map, caller);
    if (mine == MPI_SUCCESS && cdn_win_apply_info(w, a->info) != MPI_SUCCESS)
        mine = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    if (mine == MPI_SUCCESS && a->flavor == MPI_WIN_FLAVOR_SHARED && !all_local(comm))
        mine = cdn_err(MPI_ERR_RMA_SHARED, "%s: the processes of the communicator are not all on "
                       "this node, so they cannot share memory (split it with "
                       "MPI_COMM_TYPE_SHARED first)", caller);
    struct cdn_xchg x;
    cdn_xchg_all(&x, w->comm, CDN_TAG_WIN);
    struct cdn_rma_keys *keys = NULL;
    rc = gather_parts(w, &x, mine, map, &keys, caller);
    if (rc == MPI_SUCCESS && map)
        rc = shm_setup(w, &x, caller);
    if (rc == MPI_SUCCESS)
        cdn_rma_setup(w, keys);
    free(keys);
    if (rc == MPI_SUCCESS)
        rc = cdn_win_publish(w, caller);
    if (rc != MPI_SUCCESS) {
        cdn_win_destroy(w);
        return rc;
    }
    *out = w;
    return MPI_SUCCESS;
}

