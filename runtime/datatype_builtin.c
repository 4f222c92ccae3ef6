/*
 * The predefined datatypes of the C (and Fortran-named) interface with
 * MPICH's handles, their names, x86_64 sizes and alignments, and their
 * external32 sizes (MPI-4.1 Table 14.x: MPI_LONG and MPI_UNSIGNED_LONG are
 * 4 bytes there, MPI_WCHAR 2).
 *
 * A builtin handle carries its size in bits 8-15 and a distinct index in
 * bits 0-7, which indexes the table here.  The MINLOC/MAXLOC pair types
 * MPI_FLOAT_INT ... MPI_LONG_DOUBLE_INT are, in MPICH's ABI, direct handles
 * 0x8c000000..4: they are built at init as C-struct layouts (so
 * MPI_DOUBLE_INT has size 12 and extent 16) and take indices 0-4 of the
 * datatype handle table before any user type exists.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/datatype_impl.h"

struct builtin_desc {
    MPI_Datatype handle;
    const char *name;
    int xsize;      /* external32 bytes of one basic element */
    int parts;      /* 2 for complex */
    int is_signed;  /* integer that sign-extends from external32 */
    int nelem;      /* basic elements in one (2 for MPI_2INT & co) */
};

#define B(h, x, p, s, e) {h, #h, x, p, s, e}
static const struct builtin_desc descs[] = {
    B(MPI_CHAR, 1, 1, 1, 1), B(MPI_SIGNED_CHAR, 1, 1, 1, 1), B(MPI_UNSIGNED_CHAR, 1, 1, 0, 1),
    B(MPI_BYTE, 1, 1, 0, 1), B(MPI_WCHAR, 2, 1, 1, 1), B(MPI_SHORT, 2, 1, 1, 1),
    B(MPI_UNSIGNED_SHORT, 2, 1, 0, 1), B(MPI_INT, 4, 1, 1, 1), B(MPI_UNSIGNED, 4, 1, 0, 1),
    B(MPI_LONG, 4, 1, 1, 1), B(MPI_UNSIGNED_LONG, 4, 1, 0, 1), B(MPI_FLOAT, 4, 1, 0, 1),
    B(MPI_DOUBLE, 8, 1, 0, 1), B(MPI_LONG_DOUBLE, 16, 1, 0, 1), B(MPI_LONG_LONG_INT, 8, 1, 1, 1),
    B(MPI_UNSIGNED_LONG_LONG, 8, 1, 0, 1), B(MPI_PACKED, 1, 1, 0, 1), B(MPI_LB, 0, 1, 0, 0),
    B(MPI_UB, 0, 1, 0, 0), B(MPI_2INT, 4, 1, 1, 2), B(MPI_COMPLEX, 8, 2, 0, 1),
    B(MPI_DOUBLE_COMPLEX, 16, 2, 0, 1), B(MPI_LOGICAL, 4, 1, 0, 1), B(MPI_REAL, 4, 1, 0, 1),
    B(MPI_DOUBLE_PRECISION, 8, 1, 0, 1), B(MPI_INTEGER, 4, 1, 1, 1), B(MPI_2INTEGER, 4, 1, 1, 2),
    B(MPI_2REAL, 4, 1, 0, 2), B(MPI_2DOUBLE_PRECISION, 8, 1, 0, 2), B(MPI_CHARACTER, 1, 1, 0, 1),
    B(MPI_REAL4, 4, 1, 0, 1), B(MPI_REAL8, 8, 1, 0, 1), B(MPI_REAL16, 16, 1, 0, 1),
    B(MPI_COMPLEX8, 8, 2, 0, 1), B(MPI_COMPLEX16, 16, 2, 0, 1), B(MPI_COMPLEX32, 32, 2, 0, 1),
    B(MPI_INTEGER1, 1, 1, 1, 1), B(MPI_INTEGER2, 2, 1, 1, 1), B(MPI_INTEGER4, 4, 1, 1, 1),
    B(MPI_INTEGER8, 8, 1, 1, 1), B(MPI_INT8_T, 1, 1, 1, 1), B(MPI_INT16_T, 2, 1, 1, 1),
    B(MPI_INT32_T, 4, 1, 1, 1), B(MPI_INT64_T, 8, 1, 1, 1), B(MPI_UINT8_T, 1, 1, 0, 1),
    B(MPI_UINT16_T, 2, 1, 0, 1), B(MPI_UINT32_T, 4, 1, 0, 1), B(MPI_UINT64_T, 8, 1, 0, 1),
    B(MPI_C_BOOL, 1, 1, 0, 1), {MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", 8, 2, 0, 1},
    B(MPI_C_DOUBLE_COMPLEX, 16, 2, 0, 1), B(MPI_C_LONG_DOUBLE_COMPLEX, 32, 2, 0, 1),
    B(MPIX_C_FLOAT16, 2, 1, 0, 1), B(MPI_AINT, 8, 1, 1, 1), B(MPI_OFFSET, 8, 1, 1, 1),
    B(MPI_COUNT, 8, 1, 1, 1), B(MPI_CXX_BOOL, 1, 1, 0, 1), B(MPI_CXX_FLOAT_COMPLEX, 8, 2, 0, 1),
    B(MPI_CXX_DOUBLE_COMPLEX, 16, 2, 0, 1), B(MPI_CXX_LONG_DOUBLE_COMPLEX, 32, 2, 0, 1),
};
#undef B
#define NDESCS (sizeof descs / sizeof descs[0])

static struct cdn_datatype builtins[NDESCS];
struct cdn_datatype *cdn_datatype_by_index[256];

/* The pair types, in handle order 0x8c000000 + i. */
static const struct {
    MPI_Datatype handle, first;
    const char *name;
} pairs[] = {
    {MPI_FLOAT_INT, MPI_FLOAT, "MPI_FLOAT_INT"},       {MPI_DOUBLE_INT, MPI_DOUBLE, "MPI_DOUBLE_INT"},
    {MPI_LONG_INT, MPI_LONG, "MPI_LONG_INT"},          {MPI_SHORT_INT, MPI_SHORT, "MPI_SHORT_INT"},
    {MPI_LONG_DOUBLE_INT, MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE_INT"},
};
#define NPAIRS (sizeof pairs / sizeof pairs[0])
static struct cdn_datatype *pair_types[NPAIRS];

static void builtin_fill(struct cdn_datatype *dt, const struct builtin_desc *d)
{
    int size = (int)(((unsigned)d->handle >> 8) & 0xff);
    memset(dt, 0, sizeof *dt);
    atomic_init(&dt->refs, 1);
    pthread_mutex_init(&dt->lock, NULL);
    dt->handle = d->handle;
    dt->builtin = dt->committed = true;
    dt->combiner = MPI_COMBINER_NAMED;
    snprintf(dt->name, sizeof dt->name, "%s", d->name);
    dt->size = size;
    dt->ub = dt->true_ub = size;
    if (size == 0) {
        dt->align = 1;
        return;
    }
    int esize = size / (d->nelem > 0 ? d->nelem : 1);
    dt->align = esize / d->parts;
    dt->root = cdn_dt_leaf(0, size);
    dt->units = cdn_du_run(d->nelem, esize, d->xsize, d->parts, d->is_signed);
}

bool cdn_datatype_is_marker(MPI_Datatype handle)
{
    return handle == MPI_LB || handle == MPI_UB;
}

int cdn_datatype_builtin_setup(void)
{
    for (size_t i = 0; i < NDESCS; i++) {
        builtin_fill(&builtins[i], &descs[i]);
        cdn_datatype_by_index[(unsigned)descs[i].handle & 0xff] = &builtins[i];
    }
    for (size_t i = 0; i < NPAIRS; i++) {
        struct cdn_dt_piece p[2] = {
            {.disp = 0, .blen = 1, .type = cdn_datatype_get(pairs[i].first)},
            {.disp = 0, .blen = 1, .type = cdn_datatype_get(MPI_INT)},
        };
        p[1].disp = p[0].type->size > 4 ? p[0].type->size : 4;  /* int after the value, aligned */
        struct cdn_datatype *dt = cdn_dt_make_pieces(2, p, true);
        if (dt == NULL)
            return MPI_ERR_NO_MEM;
        dt->builtin = dt->committed = true;
        dt->combiner = MPI_COMBINER_NAMED;
        snprintf(dt->name, sizeof dt->name, "%s", pairs[i].name);
        if (cdn_datatype_publish(dt, "MPI_Init") != MPI_SUCCESS)
            return MPI_ERR_INTERN;
        if (dt->handle != pairs[i].handle)
            return MPI_ERR_INTERN;  /* the table was not empty: cannot happen at init */
        pair_types[i] = dt;
    }
    return MPI_SUCCESS;
}

void cdn_datatype_builtin_teardown(void)
{
    for (size_t i = 0; i < NPAIRS; i++) {
        if (pair_types[i] != NULL) {
            pair_types[i]->builtin = false;  /* let the release free it */
            cdn_datatype_release(pair_types[i]);
            pair_types[i] = NULL;
        }
    }
    for (size_t i = 0; i < NDESCS; i++) {
        cdn_dt_node_release(builtins[i].root);
        cdn_du_release(builtins[i].units);
        builtins[i].root = NULL;
        builtins[i].units = NULL;
        cdn_datatype_by_index[(unsigned)descs[i].handle & 0xff] = NULL;
    }
}

MPI_Datatype cdn_datatype_match_size(int typeclass, int size)
{
    static const MPI_Datatype reals[] = {MPI_REAL4, MPI_REAL8, MPI_REAL16};
    static const MPI_Datatype ints[] = {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8};
    static const MPI_Datatype cplx[] = {MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32};
    const MPI_Datatype *list = NULL;
    size_t n = 0;
    if (typeclass == MPI_TYPECLASS_REAL)
        list = reals, n = 3;
    else if (typeclass == MPI_TYPECLASS_INTEGER)
        list = ints, n = 4;
    else if (typeclass == MPI_TYPECLASS_COMPLEX)
        list = cplx, n = 3;
    for (size_t i = 0; i < n; i++)
        if ((int)(((unsigned)list[i] >> 8) & 0xff) == size)
            return list[i];
    return MPI_DATATYPE_NULL;
}
