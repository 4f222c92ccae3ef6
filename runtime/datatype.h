/*
 * The datatype engine's interface: what p2p, collectives, partitioned and
 * RMA code needs from a datatype — its size and bounds, whether a buffer of
 * it is one contiguous run, and a resumable "segment" that packs or unpacks
 * any byte range of the packed stream of (buf, count, datatype).
 *
 * The object behind a handle is opaque here.  Builtin (predefined) types are
 * static objects; derived types are reference counted: MPI_Type_free drops
 * the user's reference, an in-flight operation that called
 * cdn_datatype_retain() keeps the type alive until its release.
 *
 * Internals (the layout tree and the constructors) are in datatype_impl.h.
 */
#ifndef CDN_DATATYPE_H
#define CDN_DATATYPE_H

#include <mpi.h>
#include <stdbool.h>

struct cdn_datatype; /* opaque outside the engine */

/* The datatype behind a handle (builtin or derived), or NULL if invalid.
 * No reference taken. */
struct cdn_datatype *cdn_datatype_get(MPI_Datatype handle);
/* Argument check for communication calls: returns MPI_SUCCESS and sets *out,
 * or an MPI_ERR_TYPE code whose message names caller and problem (null,
 * invalid, uncommitted). */
int cdn_datatype_check(MPI_Datatype handle, const char *caller, struct cdn_datatype **out);

MPI_Count cdn_datatype_size(const struct cdn_datatype *dt); /* bytes of data in one element */
MPI_Aint cdn_datatype_extent(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_lb(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_true_lb(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_true_extent(const struct cdn_datatype *dt);
MPI_Datatype cdn_datatype_handle(const struct cdn_datatype *dt);
bool cdn_datatype_is_builtin(const struct cdn_datatype *dt);
/* True when count elements occupy [buf+true_lb, buf+true_lb+count*size) with
 * no gaps, in order. */
bool cdn_datatype_is_contig(const struct cdn_datatype *dt, MPI_Count count);

void cdn_datatype_retain(struct cdn_datatype *dt); /* builtins: no-op */
void cdn_datatype_release(struct cdn_datatype *dt);

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
