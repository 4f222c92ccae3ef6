/*
 * The datatype engine's interface: what p2p, collectives, partitioned and
 * RMA code needs from a datatype — its size and bounds, whether a buffer of
 * it is one contiguous run, and a resumable "segment" that packs or unpacks
 * any byte range of the packed stream of (buf, count, datatype).
 *
 * Builtin (predefined) types are static objects; derived types are
 * reference counted: MPI_Type_free drops the user's reference, an in-flight
 * operation that called cdn_datatype_retain() keeps the type alive until
 * its release.  The object is defined here so that the lookup, the argument
 * check and the size/bound queries inline into the point-to-point path;
 * code outside the engine reads it only through these functions.
 *
 * Internals (the layout tree and the constructors) are in datatype_impl.h.
 */
#ifndef CDN_DATATYPE_H
#define CDN_DATATYPE_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/handle.h"

struct cdn_dt_node;
struct cdn_dt_units;
struct cdn_attr;

struct cdn_datatype {
    atomic_int refs;            /* derived only: user handle + in-flight users + contents */
    MPI_Datatype handle;
    bool builtin;
    bool committed;
    bool large;                 /* made by a _c constructor: only get_envelope_c decodes it */
    bool f90;                   /* from MPI_Type_create_f90_*: predefined, never freed by users */
    int align;                  /* largest alignment of its basic types (struct padding) */
    MPI_Count size;
    MPI_Aint lb, ub, true_lb, true_ub;
    struct cdn_dt_node *root;   /* layout of one element; NULL when size is 0 */
    struct cdn_dt_units *units; /* packed stream of one element; NULL when size is 0 */
    /* how it was made (MPI_Type_get_envelope / get_contents) */
    int combiner;
    int ni, na, nc, nd;
    int *ints;
    MPI_Aint *aints;
    MPI_Count *counts;
    MPI_Datatype *types;        /* the arguments, each holding a reference */
    pthread_mutex_t lock;       /* name */
    char name[MPI_MAX_OBJECT_NAME];
    struct cdn_attr *attrs;     /* runtime/attr.c */
};

/* Builtin types by the low byte of their handle (datatype_builtin.c; a slot
 * holds the type whose handle it is, or NULL), derived ones in a handle
 * table (datatype.c). */
extern CDN_HANDLE_TABLE_HIDDEN struct cdn_datatype *cdn_datatype_by_index[256];
extern CDN_HANDLE_TABLE_HIDDEN struct cdn_handle_table cdn_datatype_table;

/* The datatype behind a handle (builtin or derived), or NULL if invalid.
 * No reference taken. */
static inline struct cdn_datatype *cdn_datatype_get(MPI_Datatype handle)
{
    if (CDN_HANDLE_KIND(handle) == CDN_HK_BUILTIN) {
        struct cdn_datatype *dt = cdn_datatype_by_index[(uint32_t)handle & 0xffu];
        return dt != NULL && dt->handle == handle ? dt : NULL;
    }
    return cdn_handle_get_typed(&cdn_datatype_table, CDN_OBJ_DATATYPE, handle);
}

/* Argument check for communication calls: returns MPI_SUCCESS and sets *out,
 * or an MPI_ERR_TYPE code whose message names caller and problem (null,
 * invalid, uncommitted).  The valid case inlines; the slow half (the
 * same lookup again, then the message) is cdn_datatype_check_fail. */
int cdn_datatype_check_fail(MPI_Datatype handle, const char *caller, struct cdn_datatype **out);
/* The datatype behind a handle if communication may use it (valid and
 * committed), else NULL: the test cdn_datatype_check passes. */
static inline struct cdn_datatype *cdn_datatype_usable(MPI_Datatype handle)
{
    struct cdn_datatype *dt = cdn_datatype_get(handle);
    return dt != NULL && dt->committed ? dt : NULL;
}
static inline int cdn_datatype_check(MPI_Datatype handle, const char *caller,
                                     struct cdn_datatype **out)
{
    struct cdn_datatype *dt = cdn_datatype_usable(handle);
    if (dt != NULL) {
        *out = dt;
        return MPI_SUCCESS;
    }
    return cdn_datatype_check_fail(handle, caller, out);
}

/* bytes of data in one element */
static inline MPI_Count cdn_datatype_size(const struct cdn_datatype *dt) { return dt->size; }
static inline MPI_Aint cdn_datatype_extent(const struct cdn_datatype *dt) { return dt->ub - dt->lb; }
static inline MPI_Aint cdn_datatype_lb(const struct cdn_datatype *dt) { return dt->lb; }
static inline MPI_Aint cdn_datatype_true_lb(const struct cdn_datatype *dt) { return dt->true_lb; }
static inline MPI_Aint cdn_datatype_true_extent(const struct cdn_datatype *dt)
{
    return dt->true_ub - dt->true_lb;
}
static inline MPI_Datatype cdn_datatype_handle(const struct cdn_datatype *dt) { return dt->handle; }
static inline bool cdn_datatype_is_builtin(const struct cdn_datatype *dt) { return dt->builtin; }
/* True when count elements occupy [buf+true_lb, buf+true_lb+count*size) with
 * no gaps, in order. */
bool cdn_datatype_is_contig(const struct cdn_datatype *dt, MPI_Count count);

/* Inline: every operation takes and drops one (builtins: no-op).  The last
 * release destroys the type (cdn_datatype_destroy, datatype.c). */
void cdn_datatype_destroy(struct cdn_datatype *dt);
static inline void cdn_datatype_retain(struct cdn_datatype *dt)
{
    if (dt != NULL && !dt->builtin)
        atomic_fetch_add_explicit(&dt->refs, 1, memory_order_relaxed);
}
static inline void cdn_datatype_release(struct cdn_datatype *dt)
{
    if (dt != NULL && !dt->builtin &&
        atomic_fetch_sub_explicit(&dt->refs, 1, memory_order_acq_rel) == 1)
        cdn_datatype_destroy(dt);
}

/* The one predefined type every basic element of dt is (a pair type such as
 * MPI_DOUBLE_INT counts as one), or MPI_DATATYPE_NULL when dt mixes types:
 * what reductions need, since the standard allows predefined ops on derived
 * types built from a single basic type. */
MPI_Datatype cdn_datatype_basic(const struct cdn_datatype *dt);

/* MPI_Get_elements: basic elements in `bytes` packed bytes of this type
 * (MPI_UNDEFINED if bytes does not end on a basic element boundary). */
MPI_Count cdn_datatype_elements(const struct cdn_datatype *dt, MPI_Count bytes);

/*
 * Resumable segment: the packed byte stream of (buf, count, dt).  Initialise
 * once (it holds a reference on dt until cdn_dt_segment_fini); pack/unpack
 * any [offset, offset+len).  A call costs a descent of the layout tree (its
 * depth, with a binary search in indexed/struct levels) and then copies in
 * tight leaf loops, so sequential and random offsets are both cheap.
 * cdn_dt_segment_contig says when the whole stream is one run in memory
 * (zero-copy).  Return values are the bytes moved (len clipped at the end).
 */
struct cdn_dt_segment {
    char *buf;
    MPI_Count count;
    struct cdn_datatype *dt;
    MPI_Count bytes;  /* count * size */
    char *contig;     /* start of the single run, or NULL */
    bool ref;         /* holds a reference on dt (a derived type) */
};
/* Where count elements of dt at buf are when they are one run in memory
 * (any zero-byte buffer is), else NULL; *bytes = count * size.  No
 * reference taken: what a call that is done with the buffer before it
 * returns needs of a segment. */
char *cdn_dt_contig_run(const void *buf, MPI_Count count, const struct cdn_datatype *dt,
                        MPI_Count *bytes);
/* Cheap for a contiguous buffer of a builtin type (no reference to take,
 * no layout to look at beyond the type's root): it is on every send and
 * receive request. */
void cdn_dt_segment_init(struct cdn_dt_segment *seg, const void *buf, MPI_Count count,
                         struct cdn_datatype *dt);
static inline void cdn_dt_segment_fini(struct cdn_dt_segment *seg)
{
    if (seg->ref)
        cdn_datatype_release(seg->dt);
    seg->ref = false;
    seg->dt = NULL;
}
/* count * size */
static inline MPI_Count cdn_dt_segment_bytes(const struct cdn_dt_segment *seg)
{
    return seg->bytes;
}
/* The address of the packed stream in the user's buffer if it is one
 * contiguous run (send/receive it in place), else NULL. */
static inline void *cdn_dt_segment_contig(const struct cdn_dt_segment *seg)
{
    return seg->contig;
}
MPI_Count cdn_dt_pack(struct cdn_dt_segment *seg, MPI_Count offset, void *dst, MPI_Count len);
MPI_Count cdn_dt_unpack(struct cdn_dt_segment *seg, MPI_Count offset, const void *src, MPI_Count len);

/* MPI_Type_create_f90_* (datatype_f90.c): the predefined type for combiner
 * MPI_COMBINER_F90_INTEGER/REAL/COMPLEX and the requested precision p and
 * range r, the same handle for the same arguments; MPI_ERR_OTHER when no
 * type fits. */
int cdn_datatype_f90(int combiner, int p, int r, MPI_Datatype *out, const char *caller);
void cdn_datatype_f90_finalize(void);

/* Engine init/finalize, called from cdn_rt_init/cdn_rt_finalize. */
int cdn_datatype_init(void);
void cdn_datatype_finalize(void);

#endif
