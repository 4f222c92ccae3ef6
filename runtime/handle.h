/*
 * Handles: the integers users hold, and the tables that map them to objects.
 *
 * Cadence uses MPICH's handle encoding so MPICH-compiled programs run
 * unchanged: bits 30-31 give the kind (1 = predefined, 2 = created at run
 * time), bits 26-29 the object type, the low 26 bits an index.  A handle of
 * the wrong type or kind is rejected by looking at its bits alone, before any
 * table is touched.
 *
 * A table hands out indices from a free list and stores object pointers in
 * chunks that are never moved or freed, so a lookup takes no lock.
 */
#ifndef CDN_HANDLE_H
#define CDN_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum cdn_handle_kind {
    CDN_HK_INVALID = 0,
    CDN_HK_BUILTIN = 1,
    CDN_HK_DIRECT = 2,
};

enum cdn_obj_type {
    CDN_OBJ_COMM = 0x1,
    CDN_OBJ_GROUP = 0x2,
    CDN_OBJ_DATATYPE = 0x3,
    CDN_OBJ_FILE = 0x4,
    CDN_OBJ_ERRHANDLER = 0x5,
    CDN_OBJ_OP = 0x6,
    CDN_OBJ_INFO = 0x7,
    CDN_OBJ_WIN = 0x8,
    CDN_OBJ_KEYVAL = 0x9,
    CDN_OBJ_REQUEST = 0xb,
    CDN_OBJ_GREQ_CLASS = 0xc,
    CDN_OBJ_SCHEDULE = 0xd,
    CDN_OBJ_SESSION = 0xe,
    CDN_OBJ_STREAM = 0xf,
};

#define CDN_HANDLE_KIND(h) ((int)(((uint32_t)(h) >> 30) & 0x3u))
#define CDN_HANDLE_TYPE(h) ((int)(((uint32_t)(h) >> 26) & 0xfu))
#define CDN_HANDLE_INDEX(h) ((uint32_t)(h) & 0x03ffffffu)
#define CDN_HANDLE_MAKE(kind, type, index) \
    ((int)(((uint32_t)(kind) << 30) | ((uint32_t)(type) << 26) | (uint32_t)(index)))

/* For the tables the inline lookups of hot paths read (comm.h,
 * datatype.h): not exported from libmpi, so code reaches them directly
 * rather than through the global offset table. */
#define CDN_HANDLE_TABLE_HIDDEN __attribute__((visibility("hidden")))

#define CDN_HANDLE_CHUNK 1024
#define CDN_HANDLE_MAX_CHUNKS 1024

struct cdn_handle_table {
    int type;                                   /* enum cdn_obj_type */
    pthread_mutex_t lock;                       /* allocation and free only */
    _Atomic(void *) *_Atomic chunks[CDN_HANDLE_MAX_CHUNKS];
    uint32_t next;                              /* first never-used index */
    uint32_t *free_list;
    uint32_t nfree, free_cap;
    atomic_int live;                            /* objects currently stored */
};

#define CDN_HANDLE_TABLE_INIT(objtype) {.type = (objtype), .lock = PTHREAD_MUTEX_INITIALIZER}

/* Store obj (not NULL); returns its handle, or 0 when memory or indices run out. */
int cdn_handle_alloc(struct cdn_handle_table *t, void *obj);
/* The object behind a run-time handle of this table's type, or NULL.
 * Inline: every call with a handle argument looks one up, the point-to-
 * point hot path included.  _typed takes the table's object type as a
 * constant, so kind and type are one comparison of the top six bits. */
static inline void *cdn_handle_get_typed(struct cdn_handle_table *t, int type, int handle)
{
    uint32_t h = (uint32_t)handle, index = CDN_HANDLE_INDEX(h);
    if ((h >> 26) != (((uint32_t)CDN_HK_DIRECT << 4) | (uint32_t)type) ||
        index >= (uint32_t)CDN_HANDLE_CHUNK * CDN_HANDLE_MAX_CHUNKS)
        return NULL;
    _Atomic(void *) *chunk =
        atomic_load_explicit(&t->chunks[index / CDN_HANDLE_CHUNK], memory_order_acquire);
    if (chunk == NULL)
        return NULL;
    return atomic_load_explicit(&chunk[index % CDN_HANDLE_CHUNK], memory_order_acquire);
}

static inline void *cdn_handle_get(struct cdn_handle_table *t, int handle)
{
    return cdn_handle_get_typed(t, t->type, handle);
}
/* Forget the handle; its index is reused later. */
void cdn_handle_free(struct cdn_handle_table *t, int handle);
/* Release the table's memory (at finalize, once no handle is live). */
void cdn_handle_table_destroy(struct cdn_handle_table *t);

#endif
