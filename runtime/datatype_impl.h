/*
 * Inside the datatype engine: the datatype object and its two compact
 * descriptions, shared by the files runtime/datatype*.c and the bindings in
 * api/ (nothing else should include this file).
 *
 * A type's memory layout is a tree of immutable, reference-counted nodes:
 *   LEAF    `size` contiguous bytes at `off`;
 *   VEC     `count` copies of `child`, `stride` bytes apart, from `off`;
 *   BLOCKS  blocks i = blen[i] copies of child[i], stride[i] apart, at
 *           off + disp[i] (indexed, hindexed, struct, darray pieces).
 * Trees are shared between a type and the types built from it, and repeat
 * counts are numbers in a node, so a 1000x1000 subarray is two nodes.
 * Packing order is tree order, which is the typemap order of MPI.
 *
 * The packed stream is described by a second small tree of "units" (runs of
 * basic elements, repeats, sequences): it counts basic elements
 * (MPI_Get_elements) and converts to and from external32, whose element
 * sizes differ from native ones (MPI_LONG is 4 bytes there).
 */
#ifndef CDN_DATATYPE_IMPL_H
#define CDN_DATATYPE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/datatype.h"

enum cdn_dt_kind { CDN_DT_LEAF, CDN_DT_VEC, CDN_DT_BLOCKS };

struct cdn_dt_node;

struct cdn_dt_block {
    MPI_Aint disp;
    MPI_Count blen;
    MPI_Aint stride;            /* between the blen copies of child */
    struct cdn_dt_node *child;
    MPI_Count psize, pseg;      /* bytes and segments of the blocks before this one */
};

struct cdn_dt_node {
    atomic_int refs;
    int kind;                   /* enum cdn_dt_kind */
    int depth;
    MPI_Aint off;
    MPI_Count size;             /* data bytes of one instance */
    MPI_Count nsegs;            /* contiguous segments of one instance */
    MPI_Count count;            /* VEC: copies; BLOCKS: number of blocks */
    MPI_Aint stride;            /* VEC */
    struct cdn_dt_node *child;  /* VEC */
    struct cdn_dt_block blocks[];
};

enum cdn_du_kind { CDN_DU_RUN, CDN_DU_REP, CDN_DU_SEQ };

struct cdn_dt_units {
    atomic_int refs;
    int kind;                   /* enum cdn_du_kind */
    MPI_Count size, xsize;      /* native and external32 bytes */
    MPI_Count nelems;           /* basic elements */
    MPI_Count n;                /* RUN: elements; REP: copies; SEQ: children */
    int esize, xesize;          /* RUN: bytes of one element, native and external32 */
    int parts;                  /* RUN: 2 for complex (two reals), else 1 */
    int is_signed;              /* RUN: sign-extend when external32 is narrower */
    struct cdn_dt_units *child; /* REP */
    struct cdn_dt_units *kids[];/* SEQ */
};

struct cdn_attr;

/* struct cdn_datatype itself is in datatype.h (its accessors are inline). */

/* ---- nodes (datatype_node.c) ---- */
struct cdn_dt_node *cdn_dt_leaf(MPI_Aint off, MPI_Count size);
/* count copies of child, stride apart, from off (takes over the reference to child). */
struct cdn_dt_node *cdn_dt_vec(MPI_Aint off, MPI_Count count, MPI_Aint stride, struct cdn_dt_node *child);
/* Blocks with disp/blen/stride/child filled in (references taken over); empty
 * blocks are dropped, abutting contiguous ones merged.  NULL when no data. */
struct cdn_dt_node *cdn_dt_blocks(MPI_Aint off, MPI_Count n, struct cdn_dt_block *blocks);
struct cdn_dt_node *cdn_dt_node_retain(struct cdn_dt_node *n);
void cdn_dt_node_release(struct cdn_dt_node *n);
/* Nodes in the tree (shared children counted once per use): for tests. */
MPI_Count cdn_dt_node_count(const struct cdn_dt_node *n);

/* ---- units (datatype_units.c) ---- */
struct cdn_dt_units *cdn_du_run(MPI_Count n, int esize, int xesize, int parts, int is_signed);
struct cdn_dt_units *cdn_du_rep(MPI_Count n, struct cdn_dt_units *child);   /* takes child */
struct cdn_dt_units *cdn_du_seq(MPI_Count n, struct cdn_dt_units **kids);   /* takes kids */
struct cdn_dt_units *cdn_du_retain(struct cdn_dt_units *u);
void cdn_du_release(struct cdn_dt_units *u);
MPI_Count cdn_du_elements(const struct cdn_dt_units *u, MPI_Count bytes);
/* Convert count elements of packed native data to external32 and back. */
void cdn_du_to_external(const struct cdn_dt_units *u, MPI_Count count, const char *native, char *ext);
void cdn_du_from_external(const struct cdn_dt_units *u, MPI_Count count, const char *ext, char *native);

/* ---- objects (datatype.c) ---- */
/* A new derived type (refs 1, no handle yet) from a layout and units; computes
 * nothing else. */
struct cdn_datatype *cdn_datatype_new(void);
/* Give a derived type its handle; MPI_ERR_INTERN code on exhaustion. */
int cdn_datatype_publish(struct cdn_datatype *dt, const char *caller);
/* The predefined types (datatype_builtin.c), set up by cdn_datatype_init. */
int cdn_datatype_builtin_setup(void);
void cdn_datatype_builtin_teardown(void);
/* The decoding record of a new type: arrays of ni ints, na addresses, nc
 * large counts (zeroed, filled by the caller) and room for nd types, added
 * with cdn_datatype_record_type (which takes a reference on derived ones). */
int cdn_datatype_record(struct cdn_datatype *dt, int combiner, MPI_Count ni, MPI_Count na, MPI_Count nc,
                        MPI_Count nd, const char *caller);
void cdn_datatype_record_type(struct cdn_datatype *dt, MPI_Datatype h);
/* Publish dt as *newtype when rc is MPI_SUCCESS, else drop it; returns the code. */
int cdn_datatype_finish(struct cdn_datatype *dt, int rc, MPI_Datatype *newtype, const char *caller);
/* MPI_Type_match_size */
MPI_Datatype cdn_datatype_match_size(int typeclass, int size);
/* True for MPI_LB / MPI_UB markers. */
bool cdn_datatype_is_marker(MPI_Datatype handle);

/* ---- constructors (datatype_build.c): all take dt references they keep
 * themselves, return a new unpublished type or NULL on a memory failure ---- */
struct cdn_dt_piece {        /* blen copies of type, at disp, extent apart */
    MPI_Aint disp;
    MPI_Count blen;
    struct cdn_datatype *type;
};
struct cdn_datatype *cdn_dt_make_pieces(MPI_Count n, const struct cdn_dt_piece *p, bool is_struct);
struct cdn_datatype *cdn_dt_make_vector(MPI_Count count, MPI_Count blen, MPI_Aint stride,
                                        struct cdn_datatype *old);
struct cdn_datatype *cdn_dt_make_resized(struct cdn_datatype *old, MPI_Aint lb, MPI_Aint extent);
/* Subarray and darray (datatype_array.c); *err gets an MPI error code when
 * the arguments are bad (NULL return). */
struct cdn_datatype *cdn_dt_make_subarray(int ndims, const MPI_Count *sizes, const MPI_Count *subsizes,
                                          const MPI_Count *starts, int order, struct cdn_datatype *old);
struct cdn_datatype *cdn_dt_make_darray(int size, int rank, int ndims, const MPI_Count *gsizes,
                                        const int *distribs, const int *dargs, const int *psizes,
                                        int order, struct cdn_datatype *old, int *err, const char *caller);

/* ---- iov (datatype_pack.c) ---- */
MPI_Count cdn_dt_iov_count(const struct cdn_datatype *dt);
/* Whole segments within the first max_bytes bytes, and their bytes. */
void cdn_dt_iov_len(const struct cdn_datatype *dt, MPI_Count max_bytes, MPI_Count *n, MPI_Count *bytes);
/* Segments [first, first+max) of one element at address base. */
MPI_Count cdn_dt_iov(const struct cdn_datatype *dt, MPI_Aint base, MPI_Count first, MPIX_Iov *iov, MPI_Count max);

#endif
