/*
 * Handle tables (see handle.h).  Allocation and free take the table lock;
 * lookups read atomics only, which is why chunks are never moved or freed
 * while the library is initialised.
 */
#include "runtime/handle.h"

#include <stdlib.h>

int cdn_handle_alloc(struct cdn_handle_table *t, void *obj)
{
    int handle = 0;
    if (obj == NULL)
        return 0;  /* NULL marks a free slot: it cannot be stored */
    pthread_mutex_lock(&t->lock);
    uint32_t index;
    if (t->nfree > 0) {
        index = t->free_list[--t->nfree];
    } else {
        if (t->next >= (uint32_t)CDN_HANDLE_CHUNK * CDN_HANDLE_MAX_CHUNKS)
            goto out;
        index = t->next;
        uint32_t c = index / CDN_HANDLE_CHUNK;
        if (atomic_load_explicit(&t->chunks[c], memory_order_relaxed) == NULL) {
            _Atomic(void *) *chunk = calloc(CDN_HANDLE_CHUNK, sizeof *chunk);
            if (chunk == NULL)
                goto out;
            atomic_store_explicit(&t->chunks[c], chunk, memory_order_release);
        }
        t->next++;
    }
    _Atomic(void *) *chunk = atomic_load_explicit(&t->chunks[index / CDN_HANDLE_CHUNK],
                                                  memory_order_relaxed);
    atomic_store_explicit(&chunk[index % CDN_HANDLE_CHUNK], obj, memory_order_release);
    atomic_fetch_add(&t->live, 1);
    handle = CDN_HANDLE_MAKE(CDN_HK_DIRECT, t->type, index);
out:
    pthread_mutex_unlock(&t->lock);
    return handle;
}

void cdn_handle_free(struct cdn_handle_table *t, int handle)
{
    if (cdn_handle_get(t, handle) == NULL)
        return;
    uint32_t index = CDN_HANDLE_INDEX(handle);
    pthread_mutex_lock(&t->lock);
    _Atomic(void *) *chunk = atomic_load_explicit(&t->chunks[index / CDN_HANDLE_CHUNK],
                                                  memory_order_relaxed);
    atomic_store_explicit(&chunk[index % CDN_HANDLE_CHUNK], NULL, memory_order_release);
    if (t->nfree == t->free_cap) {
        uint32_t cap = t->free_cap ? 2 * t->free_cap : 64;
        uint32_t *list = realloc(t->free_list, cap * sizeof *list);
        if (list == NULL) {  /* the index is leaked, never reused: harmless */
            pthread_mutex_unlock(&t->lock);
            atomic_fetch_sub(&t->live, 1);
            return;
        }
        t->free_list = list;
        t->free_cap = cap;
    }
    t->free_list[t->nfree++] = index;
    pthread_mutex_unlock(&t->lock);
    atomic_fetch_sub(&t->live, 1);
}

void cdn_handle_table_destroy(struct cdn_handle_table *t)
{
    pthread_mutex_lock(&t->lock);
    for (int c = 0; c < CDN_HANDLE_MAX_CHUNKS; c++) {
        free((void *)atomic_load(&t->chunks[c]));
        atomic_store(&t->chunks[c], NULL);
    }
    free(t->free_list);
    t->free_list = NULL;
    t->nfree = t->free_cap = t->next = 0;
    atomic_store(&t->live, 0);
    pthread_mutex_unlock(&t->lock);
}
