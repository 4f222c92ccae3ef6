/*
 * Keyvals and attribute lists (see attr.h).
 *
 * One mutex guards every attribute list's links: attribute calls are rare
 * and short, and a single lock keeps dup (reading one list, filling another)
 * simple.  User callbacks run after the lock is dropped; a keyval is
 * reference counted (its handle plus one per attribute) so it survives
 * MPI_*_free_keyval until the last attribute using it is gone (MPI-4.1
 * 7.7.2): until then its handle still reaches the attributes that use it
 * (get, set, delete, and the callbacks see it), copy callbacks still run at
 * dup and delete callbacks at free, but it cannot be attached to an object
 * that has no attribute for it, nor freed again.
 */
#include "runtime/attr.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "runtime/error.h"
#include "runtime/handle.h"

struct cdn_keyval {
    atomic_int refs;
    int kind;
    int handle;
    atomic_bool freed;  /* by MPI_*_free_keyval; alive for its attributes */
    cdn_attr_copy_fn *copy_fn;
    cdn_attr_delete_fn *delete_fn;
    void *extra_state;
};

struct cdn_attr {
    struct cdn_attr *next;
    struct cdn_keyval *kv;
    int keyval;
    void *value;
};

#define KIND_SHIFT 22
#define KIND_MASK (0xfu << KIND_SHIFT)

static struct cdn_handle_table keyvals = CDN_HANDLE_TABLE_INIT(CDN_OBJ_KEYVAL);
static pthread_mutex_t attr_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *kind_name(int kind)
{
    return kind == CDN_ATTR_COMM ? "communicator" : kind == CDN_ATTR_TYPE ? "datatype" : "window";
}

static struct cdn_keyval *keyval_get(int kind, int keyval)
{
    if ((((unsigned)keyval & KIND_MASK) >> KIND_SHIFT) != (unsigned)kind)
        return NULL;
    struct cdn_keyval *kv = cdn_handle_get(&keyvals, (int)((unsigned)keyval & ~KIND_MASK));
    return kv != NULL && kv->kind == kind ? kv : NULL;
}

static int keyval_arg(int kind, int keyval, const char *caller, struct cdn_keyval **out)
{
    *out = keyval_get(kind, keyval);
    if (*out == NULL)
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x is not a valid %s keyval%s", caller,
                       (unsigned)keyval, kind_name(kind),
                       keyval == MPI_KEYVAL_INVALID ? " (MPI_KEYVAL_INVALID)" : "");
    return MPI_SUCCESS;
}

/* The last reference (handle or attribute) takes the handle with it. */
static void keyval_release(struct cdn_keyval *kv)
{
    if (atomic_fetch_sub_explicit(&kv->refs, 1, memory_order_acq_rel) == 1) {
        cdn_handle_free(&keyvals, (int)((unsigned)kv->handle & ~KIND_MASK));
        free(kv);
    }
}

/* What a user callback returned, as the error of `caller`.  A bare
 * predefined class gets a code of that class whose message names the call
 * and the keyval; the user's own codes (MPI_Add_error_code) and codes that
 * already carry a message pass unchanged; anything else is MPI_ERR_OTHER. */
static int callback_error(int rc, const char *which, const struct cdn_keyval *kv,
                          const char *caller)
{
    if (rc == MPI_SUCCESS)
        return rc;
    int cls = cdn_err_class_of(rc);
    if (cls < 0)
        return cdn_err(MPI_ERR_OTHER, "%s: the %s callback of %s keyval 0x%x returned %d, "
                       "which is not an MPI error code", caller, which, kind_name(kv->kind),
                       (unsigned)kv->handle, rc);
    if (rc == cls && cdn_err_class_name(cls) != NULL)
        return cdn_err(cls, "%s: the %s callback of %s keyval 0x%x returned %s", caller, which,
                       kind_name(kv->kind), (unsigned)kv->handle, cdn_err_class_name(cls));
    return rc;
}

int cdn_keyval_create(int kind, cdn_attr_copy_fn *copy_fn, cdn_attr_delete_fn *delete_fn,
                      void *extra_state, int *keyval, const char *caller)
{
    if (keyval == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: keyval is NULL", caller);
    struct cdn_keyval *kv = calloc(1, sizeof *kv);
    if (kv == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    atomic_init(&kv->refs, 1);
    kv->kind = kind;
    kv->copy_fn = copy_fn;
    kv->delete_fn = delete_fn;
    kv->extra_state = extra_state;
    int h = cdn_handle_alloc(&keyvals, kv);
    if (h == 0) {
        free(kv);
        return cdn_err(MPI_ERR_INTERN, "%s: out of keyval handles", caller);
    }
    kv->handle = (int)((unsigned)h | ((unsigned)kind << KIND_SHIFT));
    *keyval = kv->handle;
    return MPI_SUCCESS;
}

int cdn_keyval_free(int kind, int *keyval, const char *caller)
{
    if (keyval == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: keyval is NULL", caller);
    struct cdn_keyval *kv;
    int rc = keyval_arg(kind, *keyval, caller, &kv);
    if (rc != MPI_SUCCESS)
        return rc;
    if (atomic_exchange(&kv->freed, true))
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x was already freed", caller,
                       (unsigned)*keyval);
    keyval_release(kv);  /* the handle lives on while attributes use it */
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* The link pointing at keyval's attribute in list, or NULL.  Lock held. */
static struct cdn_attr **find(struct cdn_attr **list, int keyval)
{
    for (struct cdn_attr **p = list; *p != NULL; p = &(*p)->next)
        if ((*p)->keyval == keyval)
            return p;
    return NULL;
}

static int run_delete(struct cdn_keyval *kv, int obj, void *value, const char *caller)
{
    if (kv->delete_fn == NULL)
        return MPI_SUCCESS;
    return callback_error(kv->delete_fn(obj, kv->handle, value, kv->extra_state), "delete", kv,
                          caller);
}

int cdn_attr_set(struct cdn_attr **list, int kind, int obj, int keyval, void *value, const char *caller)
{
    struct cdn_keyval *kv;
    int rc = keyval_arg(kind, keyval, caller, &kv);
    if (rc != MPI_SUCCESS)
        return rc;
    struct cdn_attr *fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    pthread_mutex_lock(&attr_lock);
    struct cdn_attr **old = find(list, keyval);
    struct cdn_attr *replaced = NULL;
    if (old == NULL && atomic_load(&kv->freed)) {
        pthread_mutex_unlock(&attr_lock);
        free(fresh);
        return cdn_err(MPI_ERR_KEYVAL, "%s: keyval 0x%x was freed; it can no longer be attached "
                       "to an object that has no attribute for it", caller, (unsigned)keyval);
    }
    if (old != NULL) {  /* replace in place; the old value's delete callback runs below */
        replaced = *old;
        fresh->next = replaced->next;
        *old = fresh;
    } else {
        fresh->next = *list;
        *list = fresh;
        atomic_fetch_add_explicit(&kv->refs, 1, memory_order_relaxed);
    }
    fresh->kv = kv;
    fresh->keyval = keyval;
    fresh->value = value;
    pthread_mutex_unlock(&attr_lock);
    if (replaced != NULL) {
        rc = run_delete(kv, obj, replaced->value, caller);
        free(replaced);
    }
    return rc;
}

int cdn_attr_get(struct cdn_attr **list, int kind, int keyval, void *value_out, int *flag,
                 const char *caller)
{
    struct cdn_keyval *kv;
    int rc = keyval_arg(kind, keyval, caller, &kv);
    if (rc != MPI_SUCCESS)
        return rc;
    if (value_out == NULL || flag == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: %s is NULL", caller, flag == NULL ? "flag" : "attribute_val");
    pthread_mutex_lock(&attr_lock);
    struct cdn_attr **a = find(list, keyval);
    *flag = a != NULL;
    if (a != NULL)
        *(void **)value_out = (*a)->value;
    pthread_mutex_unlock(&attr_lock);
    return MPI_SUCCESS;
}

int cdn_attr_delete(struct cdn_attr **list, int kind, int obj, int keyval, const char *caller)
{
    struct cdn_keyval *kv;
    int rc = keyval_arg(kind, keyval, caller, &kv);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&attr_lock);
    struct cdn_attr **p = find(list, keyval);
    struct cdn_attr *a = p != NULL ? *p : NULL;
    if (a != NULL)
        *p = a->next;
    pthread_mutex_unlock(&attr_lock);
    if (a == NULL)
        return cdn_err(MPI_ERR_KEYVAL, "%s: the object has no attribute for keyval 0x%x", caller,
                       (unsigned)keyval);
    rc = run_delete(a->kv, obj, a->value, caller);
    keyval_release(a->kv);
    free(a);
    return rc;
}

int cdn_attr_copy_all(struct cdn_attr **from, int oldobj, struct cdn_attr **to, const char *caller)
{
    /* Snapshot the list, then call the copy callbacks unlocked. */
    pthread_mutex_lock(&attr_lock);
    size_t n = 0;
    for (struct cdn_attr *a = *from; a != NULL; a = a->next)
        n++;
    struct cdn_attr *snap = calloc(n ? n : 1, sizeof *snap);
    if (snap == NULL) {
        pthread_mutex_unlock(&attr_lock);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory copying attributes", caller);
    }
    size_t i = n;
    for (struct cdn_attr *a = *from; a != NULL; a = a->next) {  /* oldest first */
        snap[--i] = *a;
        atomic_fetch_add_explicit(&a->kv->refs, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&attr_lock);
    int rc = MPI_SUCCESS;
    for (i = 0; i < n; i++) {
        struct cdn_keyval *kv = snap[i].kv;
        void *out = NULL;
        int flag = 0;
        if (rc == MPI_SUCCESS && kv->copy_fn != NULL)
            rc = callback_error(kv->copy_fn(oldobj, kv->handle, kv->extra_state, snap[i].value,
                                            &out, &flag), "copy", kv, caller);
        struct cdn_attr *copy = rc == MPI_SUCCESS && flag ? malloc(sizeof *copy) : NULL;
        if (copy != NULL) {  /* the new list keeps the reference taken for the snapshot */
            *copy = (struct cdn_attr){.next = NULL, .kv = kv, .keyval = snap[i].keyval, .value = out};
            pthread_mutex_lock(&attr_lock);
            copy->next = *to;
            *to = copy;
            pthread_mutex_unlock(&attr_lock);
        } else {
            keyval_release(kv);
        }
    }
    free(snap);
    return rc;
}

int cdn_attr_delete_all(struct cdn_attr **list, int obj, const char *caller)
{
    pthread_mutex_lock(&attr_lock);
    struct cdn_attr *a = *list;
    *list = NULL;
    pthread_mutex_unlock(&attr_lock);
    int rc = MPI_SUCCESS;
    while (a != NULL) {
        struct cdn_attr *next = a->next;
        int r = run_delete(a->kv, obj, a->value, caller);
        if (rc == MPI_SUCCESS)
            rc = r;
        keyval_release(a->kv);
        free(a);
        a = next;
    }
    return rc;
}

void cdn_attr_list_discard(struct cdn_attr **list)
{
    pthread_mutex_lock(&attr_lock);
    struct cdn_attr *a = *list;
    *list = NULL;
    pthread_mutex_unlock(&attr_lock);
    while (a != NULL) {
        struct cdn_attr *next = a->next;
        keyval_release(a->kv);
        free(a);
        a = next;
    }
}

void cdn_attr_finalize(void)
{
    cdn_handle_table_destroy(&keyvals);
}
