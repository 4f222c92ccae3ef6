/*
 * Reduction operations: the predefined MPI_Ops and user ops (MPI_Op_create),
 * and the one function every reduction goes through, cdn_op_reduce, with
 * MPI_Reduce_local's meaning (inout = in op inout, element by element).
 *
 * Predefined ops are applied by a function table generated from X-macro
 * lists of element kinds (op.c), never a hand-written switch per pair; which
 * MPI type may meet which op follows the type categories of MPI-4.1 6.9.2
 * (C integer, Fortran integer, floating point, logical, complex, byte, the
 * MINLOC/MAXLOC pair types).  A derived type of one basic type is reduced
 * through the datatype engine's pack/unpack.
 *
 * User op objects are reference counted: a pending collective keeps its op
 * alive across MPI_Op_free.
 */
#ifndef CDN_OP_H
#define CDN_OP_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>

struct cdn_datatype;

struct cdn_op {
    atomic_int refs;
    MPI_Op handle;
    bool builtin;
    bool commute;
    int index;                          /* predefined: 1..14 (handle & 0xff) */
    MPI_User_function *fn;              /* user op, int count */
    MPI_User_function_c *fn_c;          /* user op, MPI_Count count */
};

/* The op behind a handle (predefined or user), or NULL.  No reference taken. */
struct cdn_op *cdn_op_get(MPI_Op handle);
void cdn_op_retain(struct cdn_op *op);
void cdn_op_release(struct cdn_op *op);

/* Argument check of a reduction: op valid (MPI_ERR_OP), and a predefined op
 * defined on dt's basic type (MPI_ERR_OP naming both).  rma admits
 * MPI_REPLACE and MPI_NO_OP, which only accumulate calls may use. */
int cdn_op_check(MPI_Op handle, struct cdn_datatype *dt, bool rma, const char *caller,
                 struct cdn_op **out);

/* inout[i] = in[i] op inout[i] for count elements of dt (checked before). */
void cdn_op_reduce(struct cdn_op *op, const void *in, void *inout, MPI_Count count,
                   struct cdn_datatype *dt);

/* MPI_Op_create(_c) and MPI_Op_free. */
int cdn_op_create(MPI_User_function *fn, MPI_User_function_c *fn_c, bool commute, MPI_Op *out,
                  const char *caller);
int cdn_op_free(MPI_Op *handle, const char *caller);

#endif
