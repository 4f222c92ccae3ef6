/*
 * Reduction operations (see op.h).
 *
 * The predefined ops are generated: X-macro lists of element kinds (the C
 * types behind MPI's basic types) and of op expressions expand into one
 * small loop per (op, kind) that the standard defines, and into the table
 * that finds it.  A second list maps each MPI basic type to its kind and its
 * category (MPI-4.1 6.9.2); an op accepts the categories in op_cats[].
 * MPI_CHAR counts as a C integer, as MPICH accepts it.
 *
 * Every reduction of a collective runs through these loops, so this file is
 * built at -O3 with AVX2 clones (meson.build): the loops must vectorise.
 */
#include "runtime/op.h"

#include <complex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/handle.h"

/* ---- element kinds ---- */
#define INT_KINDS(X)                                                                         \
    X(I8, int8_t) X(U8, uint8_t) X(I16, int16_t) X(U16, uint16_t) X(I32, int32_t)            \
    X(U32, uint32_t) X(I64, int64_t) X(U64, uint64_t)
#define FLT_KINDS(X) X(F32, float) X(F64, double) X(LD, long double)
#define CPX_KINDS(X) X(C32, float _Complex) X(C64, double _Complex) X(CLD, long double _Complex)
#define BOOL_KINDS(X) X(B1, _Bool)
/* MINLOC/MAXLOC pairs: value type, index type (C struct layout, as the
 * pair datatypes are built). */
#define PAIR_KINDS(X)                                                                        \
    X(FI, float, int) X(DI, double, int) X(LI, long, int) X(II, int, int) X(SI, short, int)  \
    X(LDI, long double, int) X(FF, float, float) X(DD, double, double)

#define KIND_ENUM(k, ...) K_##k,
enum kind { K_NONE, INT_KINDS(KIND_ENUM) FLT_KINDS(KIND_ENUM) CPX_KINDS(KIND_ENUM)
            BOOL_KINDS(KIND_ENUM) PAIR_KINDS(KIND_ENUM) NKINDS };

/* ---- categories and the types in them ---- */
enum cat { CINT = 1, FINT = 2, FLT = 4, LOGI = 8, CPX = 16, BYTE = 32, PAIR = 64, MULTI = 128 };

#define BASIC_TYPES(X)                                                                       \
    X(MPI_CHAR, I8, CINT) X(MPI_SIGNED_CHAR, I8, CINT) X(MPI_UNSIGNED_CHAR, U8, CINT)        \
    X(MPI_SHORT, I16, CINT) X(MPI_UNSIGNED_SHORT, U16, CINT) X(MPI_INT, I32, CINT)           \
    X(MPI_UNSIGNED, U32, CINT) X(MPI_LONG, I64, CINT) X(MPI_UNSIGNED_LONG, U64, CINT)        \
    X(MPI_LONG_LONG_INT, I64, CINT) X(MPI_UNSIGNED_LONG_LONG, U64, CINT)                     \
    X(MPI_INT8_T, I8, CINT) X(MPI_INT16_T, I16, CINT) X(MPI_INT32_T, I32, CINT)              \
    X(MPI_INT64_T, I64, CINT) X(MPI_UINT8_T, U8, CINT) X(MPI_UINT16_T, U16, CINT)            \
    X(MPI_UINT32_T, U32, CINT) X(MPI_UINT64_T, U64, CINT)                                    \
    X(MPI_INTEGER, I32, FINT) X(MPI_INTEGER1, I8, FINT) X(MPI_INTEGER2, I16, FINT)           \
    X(MPI_INTEGER4, I32, FINT) X(MPI_INTEGER8, I64, FINT)                                    \
    X(MPI_FLOAT, F32, FLT) X(MPI_DOUBLE, F64, FLT) X(MPI_LONG_DOUBLE, LD, FLT)               \
    X(MPI_REAL, F32, FLT) X(MPI_DOUBLE_PRECISION, F64, FLT) X(MPI_REAL4, F32, FLT)           \
    X(MPI_REAL8, F64, FLT)                                                                   \
    X(MPI_LOGICAL, I32, LOGI) X(MPI_C_BOOL, B1, LOGI) X(MPI_CXX_BOOL, B1, LOGI)              \
    X(MPI_C_FLOAT_COMPLEX, C32, CPX) X(MPI_C_DOUBLE_COMPLEX, C64, CPX)                       \
    X(MPI_C_LONG_DOUBLE_COMPLEX, CLD, CPX) X(MPI_COMPLEX, C32, CPX)                          \
    X(MPI_DOUBLE_COMPLEX, C64, CPX) X(MPI_COMPLEX8, C32, CPX) X(MPI_COMPLEX16, C64, CPX)     \
    X(MPI_CXX_FLOAT_COMPLEX, C32, CPX) X(MPI_CXX_DOUBLE_COMPLEX, C64, CPX)                   \
    X(MPI_CXX_LONG_DOUBLE_COMPLEX, CLD, CPX)                                                 \
    X(MPI_BYTE, U8, BYTE)                                                                    \
    X(MPI_AINT, I64, MULTI) X(MPI_OFFSET, I64, MULTI) X(MPI_COUNT, I64, MULTI)               \
    X(MPI_FLOAT_INT, FI, PAIR) X(MPI_DOUBLE_INT, DI, PAIR) X(MPI_LONG_INT, LI, PAIR)         \
    X(MPI_2INT, II, PAIR) X(MPI_SHORT_INT, SI, PAIR) X(MPI_LONG_DOUBLE_INT, LDI, PAIR)       \
    X(MPI_2REAL, FF, PAIR) X(MPI_2DOUBLE_PRECISION, DD, PAIR) X(MPI_2INTEGER, II, PAIR)

static const struct {
    MPI_Datatype handle;
    int kind, cat;
    const char *name;
} basic_types[] = {
#define BASIC_ENTRY(h, k, c) {h, K_##k, c, #h},
    BASIC_TYPES(BASIC_ENTRY)
#undef BASIC_ENTRY
};

/* ---- the op loops ---- */
typedef void (*reduce_fn)(const void *in, void *inout, MPI_Count n);

#define E_MAX(a, b) ((a) > (b) ? (a) : (b))
#define E_MIN(a, b) ((a) < (b) ? (a) : (b))
#define E_SUM(a, b) ((a) + (b))
#define E_PROD(a, b) ((a) * (b))
#define E_LAND(a, b) ((a) && (b))
#define E_LOR(a, b) ((a) || (b))
#define E_LXOR(a, b) (!(a) != !(b))
#define E_BAND(a, b) ((a) & (b))
#define E_BOR(a, b) ((a) | (b))
#define E_BXOR(a, b) ((a) ^ (b))

/* The buffers never overlap (restrict), and on x86-64 each loop also gets an
 * AVX2 clone picked at load time: with -O3 (meson.build) a sum of doubles
 * in cache runs several times faster than the scalar loop.  Not under the
 * sanitizers: the clones' resolvers are instrumented too and run when the
 * dynamic loader binds them, before the sanitizer's runtime is set up --
 * under ThreadSanitizer every rank that reduced anything died of SIGSEGV
 * (the `pingpong-2` test included). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CDN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CDN_VECTOR_CLONES
#endif

#define DEF_LOOP(op, k, T)                                                                   \
    CDN_VECTOR_CLONES static void op##_##k(const void *in_, void *io_, MPI_Count n)          \
    {                                                                                        \
        const T *restrict in = in_;                                                          \
        T *restrict io = io_;                                                                \
        for (MPI_Count i = 0; i < n; i++)                                                    \
            io[i] = (T)E_##op(in[i], io[i]);                                                 \
    }
#define DEF_MAX(k, T) DEF_LOOP(MAX, k, T)
#define DEF_MIN(k, T) DEF_LOOP(MIN, k, T)
#define DEF_SUM(k, T) DEF_LOOP(SUM, k, T)
#define DEF_PROD(k, T) DEF_LOOP(PROD, k, T)
#define DEF_LAND(k, T) DEF_LOOP(LAND, k, T)
#define DEF_LOR(k, T) DEF_LOOP(LOR, k, T)
#define DEF_LXOR(k, T) DEF_LOOP(LXOR, k, T)
#define DEF_BAND(k, T) DEF_LOOP(BAND, k, T)
#define DEF_BOR(k, T) DEF_LOOP(BOR, k, T)
#define DEF_BXOR(k, T) DEF_LOOP(BXOR, k, T)

INT_KINDS(DEF_MAX) FLT_KINDS(DEF_MAX)
INT_KINDS(DEF_MIN) FLT_KINDS(DEF_MIN)
INT_KINDS(DEF_SUM) FLT_KINDS(DEF_SUM) CPX_KINDS(DEF_SUM)
INT_KINDS(DEF_PROD) FLT_KINDS(DEF_PROD) CPX_KINDS(DEF_PROD)
INT_KINDS(DEF_LAND) BOOL_KINDS(DEF_LAND)
INT_KINDS(DEF_LOR) BOOL_KINDS(DEF_LOR)
INT_KINDS(DEF_LXOR) BOOL_KINDS(DEF_LXOR)
INT_KINDS(DEF_BAND)
INT_KINDS(DEF_BOR)
INT_KINDS(DEF_BXOR)

/* MINLOC/MAXLOC: the better value wins; on a tie, the smaller index.  The
 * value and the index are copied each, not the struct: the last pair of a
 * buffer ends at the type's true extent, before the struct's padding (a
 * schedule's scratch is sized so; MPI_DOUBLE_INT is 12 bytes of 16). */
#define DEF_LOC(k, V, I)                                                                     \
    struct pair_##k { V v; I i; };                                                           \
    static void MAXLOC_##k(const void *in_, void *io_, MPI_Count n)                          \
    {                                                                                        \
        const struct pair_##k *in = in_;                                                     \
        struct pair_##k *io = io_;                                                           \
        for (MPI_Count j = 0; j < n; j++) {                                                  \
            if (in[j].v > io[j].v || (!(in[j].v < io[j].v) && in[j].i < io[j].i))            \
                io[j].v = in[j].v, io[j].i = in[j].i;                                        \
        }                                                                                    \
    }                                                                                        \
    static void MINLOC_##k(const void *in_, void *io_, MPI_Count n)                          \
    {                                                                                        \
        const struct pair_##k *in = in_;                                                     \
        struct pair_##k *io = io_;                                                           \
        for (MPI_Count j = 0; j < n; j++) {                                                  \
            if (in[j].v < io[j].v || (!(in[j].v > io[j].v) && in[j].i < io[j].i))            \
                io[j].v = in[j].v, io[j].i = in[j].i;                                        \
        }                                                                                    \
    }
PAIR_KINDS(DEF_LOC)

/* Predefined op indices are MPICH's handle low bytes: MPI_MAX 1 .. MPI_NO_OP 14. */
enum { O_MAX = 1, O_MIN, O_SUM, O_PROD, O_LAND, O_BAND, O_LOR, O_BOR, O_LXOR, O_BXOR,
       O_MINLOC, O_MAXLOC, O_REPLACE, O_NO_OP, NOPS };

#define ENT(op, k, ...) [K_##k] = op##_##k,
#define ENT_MAX(k, ...) ENT(MAX, k)
#define ENT_MIN(k, ...) ENT(MIN, k)
#define ENT_SUM(k, ...) ENT(SUM, k)
#define ENT_PROD(k, ...) ENT(PROD, k)
#define ENT_LAND(k, ...) ENT(LAND, k)
#define ENT_LOR(k, ...) ENT(LOR, k)
#define ENT_LXOR(k, ...) ENT(LXOR, k)
#define ENT_BAND(k, ...) ENT(BAND, k)
#define ENT_BOR(k, ...) ENT(BOR, k)
#define ENT_BXOR(k, ...) ENT(BXOR, k)
#define ENT_MINLOC(k, ...) ENT(MINLOC, k)
#define ENT_MAXLOC(k, ...) ENT(MAXLOC, k)

static const reduce_fn loops[NOPS][NKINDS] = {
    [O_MAX] = {INT_KINDS(ENT_MAX) FLT_KINDS(ENT_MAX)},
    [O_MIN] = {INT_KINDS(ENT_MIN) FLT_KINDS(ENT_MIN)},
    [O_SUM] = {INT_KINDS(ENT_SUM) FLT_KINDS(ENT_SUM) CPX_KINDS(ENT_SUM)},
    [O_PROD] = {INT_KINDS(ENT_PROD) FLT_KINDS(ENT_PROD) CPX_KINDS(ENT_PROD)},
    [O_LAND] = {INT_KINDS(ENT_LAND) BOOL_KINDS(ENT_LAND)},
    [O_LOR] = {INT_KINDS(ENT_LOR) BOOL_KINDS(ENT_LOR)},
    [O_LXOR] = {INT_KINDS(ENT_LXOR) BOOL_KINDS(ENT_LXOR)},
    [O_BAND] = {INT_KINDS(ENT_BAND)},
    [O_BOR] = {INT_KINDS(ENT_BOR)},
    [O_BXOR] = {INT_KINDS(ENT_BXOR)},
    [O_MINLOC] = {PAIR_KINDS(ENT_MINLOC)},
    [O_MAXLOC] = {PAIR_KINDS(ENT_MAXLOC)},
};

/* The categories each predefined op is defined on (MPI-4.1 6.9.2). */
static const int op_cats[NOPS] = {
    [O_MAX] = CINT | FINT | FLT | MULTI,          [O_MIN] = CINT | FINT | FLT | MULTI,
    [O_SUM] = CINT | FINT | FLT | CPX | MULTI,    [O_PROD] = CINT | FINT | FLT | CPX | MULTI,
    [O_LAND] = CINT | LOGI,                       [O_LOR] = CINT | LOGI,
    [O_LXOR] = CINT | LOGI,                       [O_BAND] = CINT | FINT | BYTE | MULTI,
    [O_BOR] = CINT | FINT | BYTE | MULTI,         [O_BXOR] = CINT | FINT | BYTE | MULTI,
    [O_MINLOC] = PAIR,                            [O_MAXLOC] = PAIR,
};

static const char *const op_names[NOPS] = {
    [O_MAX] = "MPI_MAX",       [O_MIN] = "MPI_MIN",       [O_SUM] = "MPI_SUM",
    [O_PROD] = "MPI_PROD",     [O_LAND] = "MPI_LAND",     [O_BAND] = "MPI_BAND",
    [O_LOR] = "MPI_LOR",       [O_BOR] = "MPI_BOR",       [O_LXOR] = "MPI_LXOR",
    [O_BXOR] = "MPI_BXOR",     [O_MINLOC] = "MPI_MINLOC", [O_MAXLOC] = "MPI_MAXLOC",
    [O_REPLACE] = "MPI_REPLACE", [O_NO_OP] = "MPI_NO_OP",
};

/* ---- op objects ---- */
static struct cdn_op predefined[NOPS];
static pthread_once_t predefined_once = PTHREAD_ONCE_INIT;
static struct cdn_handle_table ops = CDN_HANDLE_TABLE_INIT(CDN_OBJ_OP);

static void predefined_setup(void)
{
    for (int i = 1; i < NOPS; i++) {
        atomic_init(&predefined[i].refs, 1);
        predefined[i].handle = CDN_HANDLE_MAKE(CDN_HK_BUILTIN, CDN_OBJ_OP, (unsigned)i);
        predefined[i].builtin = true;
        predefined[i].commute = true;
        predefined[i].index = i;
    }
}

struct cdn_op *cdn_op_get(MPI_Op handle)
{
    if (CDN_HANDLE_TYPE(handle) != CDN_OBJ_OP)
        return NULL;
    if (CDN_HANDLE_KIND(handle) == CDN_HK_BUILTIN) {
        unsigned i = CDN_HANDLE_INDEX(handle);
        if (i < 1 || i >= NOPS)
            return NULL;
        pthread_once(&predefined_once, predefined_setup);
        return &predefined[i];
    }
    if (CDN_HANDLE_KIND(handle) == CDN_HK_DIRECT)
        return cdn_handle_get(&ops, handle);
    return NULL;
}

void cdn_op_retain(struct cdn_op *op)
{
    if (op != NULL && !op->builtin)
        atomic_fetch_add_explicit(&op->refs, 1, memory_order_relaxed);
}

void cdn_op_release(struct cdn_op *op)
{
    if (op == NULL || op->builtin)
        return;
    if (atomic_fetch_sub_explicit(&op->refs, 1, memory_order_acq_rel) == 1)
        free(op);
}

int cdn_op_create(MPI_User_function *fn, MPI_User_function_c *fn_c, bool commute, MPI_Op *out,
                  const char *caller)
{
    if (fn == NULL && fn_c == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: user_fn is NULL", caller);
    if (out == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: op is NULL", caller);
    struct cdn_op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory for an op", caller);
    atomic_init(&op->refs, 1);
    op->commute = commute;
    op->fn = fn;
    op->fn_c = fn_c;
    op->handle = cdn_handle_alloc(&ops, op);
    if (op->handle == 0) {
        free(op);
        return cdn_err(MPI_ERR_INTERN, "%s: out of op handles", caller);
    }
    *out = op->handle;
    return MPI_SUCCESS;
}

int cdn_op_free(MPI_Op *handle, const char *caller)
{
    if (handle == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: op is NULL", caller);
    struct cdn_op *op = cdn_op_get(*handle);
    if (op == NULL)
        return cdn_err(MPI_ERR_OP, "%s: 0x%x is not a valid op", caller, (unsigned)*handle);
    if (op->builtin)
        return cdn_err(MPI_ERR_OP, "%s: %s is predefined and cannot be freed", caller,
                       op_names[op->index]);
    cdn_handle_free(&ops, op->handle);
    cdn_op_release(op);
    *handle = MPI_OP_NULL;
    return MPI_SUCCESS;
}

/* ---- checking and applying ---- */

#define NBASIC (sizeof basic_types / sizeof basic_types[0])

/* basic_types[] by the low byte of the handle (which numbers the builtin
 * types), plus one; 0: none.  Every check and reduction looks a type up:
 * a walk of the table cost ~200 instructions per MPI_Iallreduce. */
static unsigned char basic_by_low[256];
static pthread_once_t basic_once = PTHREAD_ONCE_INIT;

static void basic_map(void)
{
    _Static_assert(NBASIC < 255, "basic_by_low holds indexes + 1 in a byte");
    for (size_t i = NBASIC; i-- > 0;)  /* on a clash the first entry wins, as in the walk */
        basic_by_low[(unsigned)basic_types[i].handle & 0xffu] = (unsigned char)(i + 1);
}

static int basic_index(MPI_Datatype basic)
{
    pthread_once(&basic_once, basic_map);
    int j = basic_by_low[(unsigned)basic & 0xffu] - 1;
    if (j >= 0 && basic_types[j].handle == basic)
        return j;
    for (size_t i = 0; i < NBASIC; i++)  /* a clash of low bytes, or no builtin */
        if (basic_types[i].handle == basic)
            return (int)i;
    return -1;
}

/* The last builtin op and builtin type this thread found valid together:
 * neither is ever freed, so the pair stays valid, and a loop of one
 * reduction skips the lookups (about 110 instructions of an 8-byte
 * MPI_Allreduce's 1,200 outside its wait). */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
    MPI_Op handle;
    const struct cdn_datatype *dt;
    struct cdn_op *op;
    bool rma;
} op_ok;

int cdn_op_check(MPI_Op handle, struct cdn_datatype *dt, bool rma, const char *caller,
                 struct cdn_op **out)
{
    if (op_ok.dt == dt && op_ok.handle == handle && op_ok.rma == rma && dt != NULL) {
        *out = op_ok.op;
        return MPI_SUCCESS;
    }
    struct cdn_op *op = cdn_op_get(handle);
    if (op == NULL)
        return cdn_err(MPI_ERR_OP, "%s: 0x%x is not a valid op%s", caller, (unsigned)handle,
                       handle == MPI_OP_NULL ? " (MPI_OP_NULL)" : "");
    *out = op;
    if (!op->builtin)
        return MPI_SUCCESS;
    if (op->index == O_REPLACE || op->index == O_NO_OP)
        return rma ? MPI_SUCCESS
                   : cdn_err(MPI_ERR_OP, "%s: %s is for accumulate operations only", caller,
                             op_names[op->index]);
    if (cdn_datatype_size(dt) == 0)
        return MPI_SUCCESS;
    MPI_Datatype basic = cdn_datatype_basic(dt);
    int b = basic_index(basic);
    if (b < 0 || !(op_cats[op->index] & basic_types[b].cat)) {
        const char *name = b >= 0 ? basic_types[b].name
                           : basic == MPI_DATATYPE_NULL ? "a type mixing basic types"
                                                        : "this basic type";
        return cdn_err(MPI_ERR_OP, "%s: %s is not defined on %s%s", caller, op_names[op->index],
                       name, basic == cdn_datatype_handle(dt) ? "" : " (the derived type's basic type)");
    }
    if (dt->builtin) {
        op_ok.handle = handle;
        op_ok.dt = dt;
        op_ok.op = op;
        op_ok.rma = rma;
    }
    return MPI_SUCCESS;
}

/* A derived type's elements as a C array of its basic type and back:
 * packing gives the basic elements back to back, which is the array except
 * for the pair types (their C struct has padding). */
static void *to_array(const void *buf, MPI_Count count, struct cdn_datatype *dt,
                      struct cdn_datatype *bt, MPI_Count n)
{
    MPI_Count bytes = count * cdn_datatype_size(dt);
    size_t asize = (size_t)(n * cdn_datatype_extent(bt));
    char *packed = malloc((size_t)bytes + 1), *arr = packed;
    if (packed == NULL)
        return NULL;
    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, buf, count, dt);
    cdn_dt_pack(&seg, 0, packed, bytes);
    cdn_dt_segment_fini(&seg);
    if ((MPI_Count)asize != bytes) {
        arr = malloc(asize);
        if (arr != NULL) {
            cdn_dt_segment_init(&seg, arr, n, bt);
            cdn_dt_unpack(&seg, 0, packed, bytes);
            cdn_dt_segment_fini(&seg);
        }
        free(packed);
    }
    return arr;
}

static void from_array(const void *arr, struct cdn_datatype *bt, MPI_Count n, void *buf,
                       MPI_Count count, struct cdn_datatype *dt)
{
    MPI_Count bytes = count * cdn_datatype_size(dt);
    const char *packed = arr;
    char *tmp = NULL;
    struct cdn_dt_segment seg;
    if (n * cdn_datatype_extent(bt) != bytes) {
        tmp = malloc((size_t)bytes + 1);
        if (tmp == NULL)
            return;
        cdn_dt_segment_init(&seg, arr, n, bt);
        cdn_dt_pack(&seg, 0, tmp, bytes);
        cdn_dt_segment_fini(&seg);
        packed = tmp;
    }
    cdn_dt_segment_init(&seg, buf, count, dt);
    cdn_dt_unpack(&seg, 0, packed, bytes);
    cdn_dt_segment_fini(&seg);
    free(tmp);
}

static void user_reduce(struct cdn_op *op, const void *in, void *inout, MPI_Count count,
                        struct cdn_datatype *dt)
{
    MPI_Datatype h = cdn_datatype_handle(dt);
    if (op->fn_c != NULL) {
        op->fn_c((void *)in, inout, &count, &h);
        return;
    }
    MPI_Aint ext = cdn_datatype_extent(dt);
    for (MPI_Count done = 0; done < count;) {
        int len = count - done > INT32_MAX ? INT32_MAX : (int)(count - done);
        op->fn((char *)in + done * ext, (char *)inout + done * ext, &len, &h);
        done += len;
    }
}

void cdn_op_reduce(struct cdn_op *op, const void *in, void *inout, MPI_Count count,
                   struct cdn_datatype *dt)
{
    if (count <= 0 || cdn_datatype_size(dt) == 0)
        return;
    if (!op->builtin) {
        user_reduce(op, in, inout, count, dt);
        return;
    }
    if (op->index == O_NO_OP)
        return;
    MPI_Datatype basic = cdn_datatype_basic(dt);
    reduce_fn f = NULL;
    if (op->index != O_REPLACE) {
        int b = basic_index(basic);
        f = b >= 0 ? loops[op->index][basic_types[b].kind] : NULL;
        if (f == NULL)
            return;  /* refused by cdn_op_check */
    }
    if (cdn_datatype_is_builtin(dt)) {
        if (f != NULL)
            f(in, inout, count);
        else
            memcpy(inout, in, (size_t)(count * cdn_datatype_extent(dt)));
        return;
    }
    if (f == NULL) {  /* MPI_REPLACE on a derived type: a typed copy */
        MPI_Count bytes = count * cdn_datatype_size(dt);
        void *packed = malloc((size_t)bytes);
        if (packed == NULL)
            return;
        struct cdn_dt_segment seg;
        cdn_dt_segment_init(&seg, in, count, dt);
        cdn_dt_pack(&seg, 0, packed, bytes);
        cdn_dt_segment_fini(&seg);
        cdn_dt_segment_init(&seg, inout, count, dt);
        cdn_dt_unpack(&seg, 0, packed, bytes);
        cdn_dt_segment_fini(&seg);
        free(packed);
        return;
    }
    struct cdn_datatype *bt = cdn_datatype_get(basic);
    MPI_Count n = count * cdn_datatype_size(dt) / cdn_datatype_size(bt);
    void *a = to_array(in, count, dt, bt, n);
    void *b = to_array(inout, count, dt, bt, n);
    if (a != NULL && b != NULL) {
        f(a, b, n);
        from_array(b, bt, n, inout, count, dt);
    }
    free(a);
    free(b);
}
