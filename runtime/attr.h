/*
 * Keyvals and attributes, for any kind of object (datatypes now;
 * communicators and windows reuse it).  The object owns a list head
 * (`struct cdn_attr *attrs`, NULL when empty) and passes its handle to the
 * calls, which is what the user's callbacks receive.
 *
 * Keyval handles follow MPICH: object type 9 (keyval), with the object kind
 * in bits 22-25 (1 communicator, 2 datatype, 3 window), so a datatype keyval
 * passed to a communicator call is rejected.  A freed keyval lives on while
 * attributes still use it: their delete callbacks still run (MPI-4.1 7.7).
 * Callbacks are never called with a lock held, so they may call MPI.
 */
#ifndef CDN_ATTR_H
#define CDN_ATTR_H

#include <mpi.h>

enum cdn_attr_kind { CDN_ATTR_COMM = 1, CDN_ATTR_TYPE = 2, CDN_ATTR_WIN = 3 };

/* The shape shared by MPI_{Comm,Type,Win}_copy_attr_function and the delete
 * functions: in the MPICH ABI every handle type is an int. */
typedef int(cdn_attr_copy_fn)(int oldobj, int keyval, void *extra_state, void *attribute_val_in,
                              void *attribute_val_out, int *flag);
typedef int(cdn_attr_delete_fn)(int obj, int keyval, void *attribute_val, void *extra_state);

struct cdn_attr;

int cdn_keyval_create(int kind, cdn_attr_copy_fn *copy_fn, cdn_attr_delete_fn *delete_fn,
                      void *extra_state, int *keyval, const char *caller);
/* Sets *keyval to MPI_KEYVAL_INVALID. */
int cdn_keyval_free(int kind, int *keyval, const char *caller);

int cdn_attr_set(struct cdn_attr **list, int kind, int obj, int keyval, void *value, const char *caller);
/* *(void **)value_out gets the value when *flag is set. */
int cdn_attr_get(struct cdn_attr **list, int kind, int keyval, void *value_out, int *flag,
                 const char *caller);
int cdn_attr_delete(struct cdn_attr **list, int kind, int obj, int keyval, const char *caller);
/* On dup: run each copy callback of `from` (object oldobj) and keep what it
 * asks to keep in `to` (empty on entry). */
int cdn_attr_copy_all(struct cdn_attr **from, int oldobj, struct cdn_attr **to, const char *caller);
/* On free: run the delete callbacks, newest attribute first, and empty the list. */
int cdn_attr_delete_all(struct cdn_attr **list, int obj, const char *caller);
/* Drop the list without callbacks (teardown of an object whose attributes
 * were already deleted, or at finalize). */
void cdn_attr_list_discard(struct cdn_attr **list);
/* Release the keyval table (MPI_Finalize). */
void cdn_attr_finalize(void);

#endif
