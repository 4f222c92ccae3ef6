/*
 * Window objects (see win.h): handles, the hints a window reports,
 * destruction.  Creation communicates, and lives with the collectives
 * (coll/win_create.c).
 */
#include "runtime/win.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/attr.h"
#include "runtime/comm.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/group.h"
#include "runtime/handle.h"
#include "runtime/info.h"
#include "runtime/runtime.h"


static struct cdn_handle_table wins = CDN_HANDLE_TABLE_INIT(CDN_OBJ_WIN);
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cdn_win *live_head;

struct cdn_win *cdn_win_get(MPI_Win handle)
{
    return cdn_api_ready() ? cdn_handle_get(&wins, handle) : NULL;
}

struct cdn_errhandler *cdn_win_errh(struct cdn_win *w)
{
    return atomic_load_explicit(&w->errh, memory_order_acquire);
}

void cdn_win_set_errh(struct cdn_win *w, struct cdn_errhandler *eh)
{
    cdn_errh_store(&w->errh, eh);
}

/* ---- hints ---- */

static bool is_bool(const char *v)
{
    return strcmp(v, "true") == 0 || strcmp(v, "false") == 0;
}

/* "none" or a comma-separated list of rar, raw, war, waw. */
static bool is_ordering(const char *v)
{
    if (strcmp(v, "none") == 0)
        return true;
    for (;;) {
        if (strncmp(v, "rar", 3) != 0 && strncmp(v, "raw", 3) != 0 && strncmp(v, "war", 3) != 0 &&
            strncmp(v, "waw", 3) != 0)
            return false;
        v += 3;
        if (*v == '\0')
            return true;
        if (*v++ != ',')
            return false;
    }
}

static bool is_acc_ops(const char *v)
{
    return strcmp(v, "same_op") == 0 || strcmp(v, "same_op_no_op") == 0;
}

/* The hints a window reports (MPICH's set and defaults), and which values
 * of the user's are taken. */
static const struct {
    const char *key, *dflt;
    bool (*valid)(const char *);
} hints[] = {
    {"no_locks", "false", is_bool},
    {"accumulate_ordering", "rar,raw,war,waw", is_ordering},
    {"accumulate_ops", "same_op_no_op", is_acc_ops},
    {"same_size", "false", is_bool},
    {"same_disp_unit", "false", is_bool},
    {"alloc_shared_noncontig", "false", is_bool},
};
#define NHINTS (sizeof hints / sizeof hints[0])

int cdn_win_apply_info(struct cdn_win *w, struct cdn_info *user)
{
    pthread_mutex_lock(&w->lock);
    bool fresh = w->info == NULL;
    if (fresh)
        w->info = cdn_info_new();
    int rc = w->info == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    char v[MPI_MAX_INFO_VAL + 1];
    for (size_t i = 0; i < NHINTS && rc == MPI_SUCCESS; i++) {
        if (hints[i].valid != NULL && cdn_info_lookup(user, hints[i].key, v, sizeof v, NULL) &&
            hints[i].valid(v))
            rc = cdn_info_set(w->info, hints[i].key, v);
        else if (fresh)
            rc = cdn_info_set(w->info, hints[i].key, hints[i].dflt);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

void cdn_win_destroy(struct cdn_win *w)
{
    cdn_attr_list_discard(&w->attrs);
    if (w->unregister != NULL)
        w->unregister(w);
    free(w->regs);
    if (w->shm != NULL)
        munmap(w->shm, w->shm_len);
    free(w->mem);
    free(w->parts);
    if (w->comm != NULL)
        cdn_comm_release(w->comm);
    cdn_info_destroy(w->info);
    struct cdn_errhandler *eh = atomic_exchange(&w->errh, NULL);
    if (eh != NULL)
        cdn_errh_release(eh);
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->lk_lock);
    free(w->rk);
    free(w->lk_q);
    free(w->regions);
    free(w);
}

struct cdn_win *cdn_win_new(int flavor, MPI_Aint size, MPI_Aint disp_unit)
{
    struct cdn_win *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->lk_lock, NULL);
    atomic_init(&w->refs, 1);
    w->flavor = flavor;
    w->model = MPI_WIN_UNIFIED;
    w->size = size;
    w->disp_unit = (int)disp_unit;
    /* MPI-4.1 12.6: a window's handler is MPI_ERRORS_ARE_FATAL until set. */
    cdn_win_set_errh(w, cdn_errh_get(MPI_ERRORS_ARE_FATAL));
    return w;
}

int cdn_win_publish(struct cdn_win *w, const char *caller)
{
    w->handle = cdn_handle_alloc(&wins, w);
    if (w->handle == 0)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of window handles", caller);
    pthread_mutex_lock(&live_lock);
    w->next = live_head;
    if (live_head != NULL)
        live_head->prev = w;
    live_head = w;
    pthread_mutex_unlock(&live_lock);
    return MPI_SUCCESS;
}

void cdn_win_release(struct cdn_win *w)
{
    if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1)
        cdn_win_destroy(w);
}

void cdn_win_unpublish(struct cdn_win *w)
{
    pthread_mutex_lock(&live_lock);
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        live_head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&live_lock);
    cdn_handle_free(&wins, w->handle);
    cdn_win_release(w);
}

struct cdn_win *cdn_win_find_ctx(uint32_t ctx)
{
    struct cdn_win *found = NULL;
    pthread_mutex_lock(&live_lock);
    for (struct cdn_win *w = live_head; w != NULL; w = w->next)
        if (w->comm != NULL && w->comm->context_id == ctx) {
            found = w;
            atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
            break;
        }
    pthread_mutex_unlock(&live_lock);
    return found;
}

int cdn_win_attach(struct cdn_win *w, void *base, MPI_Aint size, const char *caller)
{
    char *b = base;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->nregions; i++) {
        const struct cdn_win_region *r = &w->regions[i];
        if (b < r->base + r->size && r->base < b + size) {
            rc = cdn_err(MPI_ERR_RMA_ATTACH, "%s: %ld bytes at %p overlap the %ld attached at %p",
                         caller, (long)size, base, (long)r->size, (void *)r->base);
            break;
        }
    }
    if (rc == MPI_SUCCESS && w->nregions == w->capregions) {
        int cap = w->capregions ? 2 * w->capregions : 8;
        struct cdn_win_region *p = realloc(w->regions, sizeof *p * (size_t)cap);
        if (p == NULL) {
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        } else {
            w->regions = p;
            w->capregions = cap;
        }
    }
    if (rc == MPI_SUCCESS)
        w->regions[w->nregions++] = (struct cdn_win_region){b, size};
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int cdn_win_detach(struct cdn_win *w, const void *base, const char *caller)
{
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->nregions; i++)
        if (w->regions[i].base == base) {
            w->regions[i] = w->regions[--w->nregions];
            pthread_mutex_unlock(&w->lock);
            return MPI_SUCCESS;
        }
    pthread_mutex_unlock(&w->lock);
    return cdn_err(MPI_ERR_RMA_ATTACH, "%s: no memory attached to the window starts at %p",
                   caller, base);
}

bool cdn_win_attached(struct cdn_win *w, uintptr_t addr, uint64_t len)
{
    bool in = false;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->nregions && !in; i++) {
        uintptr_t b = (uintptr_t)w->regions[i].base;
        in = addr >= b && len <= (uint64_t)w->regions[i].size &&
             addr - b <= (uint64_t)w->regions[i].size - len;
    }
    pthread_mutex_unlock(&w->lock);
    return in;
}

int cdn_win_live(void)
{
    return atomic_load(&wins.live);
}

void cdn_win_finalize(void)
{
    int n = 0;
    while (live_head != NULL) {
        cdn_win_unpublish(live_head);
        n++;
    }
    if (n > 0)
        fprintf(stderr, "Cadence MPI: rank %d: %d window%s not freed before the end of MPI; "
                "freed now (MPI_Win_free must come first: no delete callback ran)\n",
                cdn_rt.world_rank, n, n == 1 ? " was" : "s were");
    cdn_handle_table_destroy(&wins);
}
