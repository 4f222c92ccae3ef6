/*
 * Datatypes through the MPI API in a one-process job: queries, decoding
 * round trips (get_envelope/get_contents rebuild an equal type), names,
 * attributes with copy and delete callbacks, MPI_Pack/Unpack and external32
 * with checked data, MPIX_Type_iov, the error classes of bad input, every
 * constructor with count 0 and NULL arrays, and MPI_Type_create_f90_*.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_mpi.h"

static int errclass(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static void test_queries(void)
{
    MPI_Datatype v, s;
    MPI_Aint lb, ext;
    MPI_Count size;
    MPI_Type_vector(3, 2, 4, MPI_INT, &v);
    MPI_Type_size_c(v, &size);
    MPI_Type_get_extent(v, &lb, &ext);
    CHECK(size == 24 && lb == 0 && ext == 40, "vector size %ld extent %ld", (long)size, (long)ext);
    struct { char c; double d; } x;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, (MPI_Aint)((char *)&x.d - (char *)&x)};
    MPI_Datatype ts[2] = {MPI_CHAR, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, disp, ts, &s);
    MPI_Type_get_extent(s, &lb, &ext);
    CHECK(ext == (MPI_Aint)sizeof x, "struct {char; double} extent %ld, sizeof %zu", (long)ext, sizeof x);
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(s, &tlb, &text);
    CHECK(tlb == 0 && text == 16, "true extent %ld", (long)text);
    MPI_Datatype m;
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m);
    CHECK(m == MPI_REAL8, "match_size real 8 gives 0x%x", (unsigned)m);
    MPI_Aint a1, a2;
    MPI_Get_address(&x.c, &a1);
    MPI_Get_address(&x.d, &a2);
    CHECK(MPI_Aint_diff(a2, a1) == disp[1], "Get_address difference");
    MPI_Type_free(&v);
    MPI_Type_free(&s);
}

static void test_contents_roundtrip(void)
{
    MPI_Datatype inner, t, back[2];
    int bl[3] = {2, 0, 1}, dis[3] = {5, 1, -2};
    MPI_Type_indexed(3, bl, dis, MPI_SHORT, &inner);
    MPI_Type_create_resized(inner, -4, 30, &t);
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_RESIZED && ni == 0 && na == 2 && nd == 1, "resized envelope");
    MPI_Aint addrs[2];
    MPI_Type_get_contents(t, 0, 2, 1, NULL, addrs, back);
    CHECK(addrs[0] == -4 && addrs[1] == 30 && back[0] == inner, "resized contents");
    MPI_Type_get_envelope(back[0], &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_INDEXED && ni == 7 && nd == 1, "indexed envelope %d %d", comb, ni);
    int ints[7];
    MPI_Type_get_contents(back[0], 7, 0, 1, ints, NULL, &back[1]);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[3] == 1 && ints[4] == 5 && ints[6] == -2, "indexed ints");
    CHECK(back[1] == MPI_SHORT, "predefined type returned as itself");
    MPI_Type_free(&back[0]);  /* the reference get_contents gave */
    MPI_Type_free(&inner);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);  /* t keeps inner alive */
    CHECK(lb == -4 && ext == 30, "resized bounds after freeing its old type");
    /* large-count constructor: only the _c decoder */
    MPI_Datatype c;
    MPI_Type_contiguous_c(7, MPI_INT, &c);
    int rc = MPI_Type_get_envelope(c, &ni, &na, &nd, &comb);
    CHECK(errclass(rc) == MPI_ERR_TYPE, "get_envelope of a _c type fails");
    MPI_Count cni, cna, cnc, cnd, big;
    MPI_Type_get_envelope_c(c, &cni, &cna, &cnc, &cnd, &comb);
    CHECK(cnc == 1 && cni == 0 && comb == MPI_COMBINER_CONTIGUOUS, "contiguous_c envelope");
    MPI_Datatype old;
    MPI_Type_get_contents_c(c, 0, 0, 1, 1, NULL, NULL, &big, &old);
    CHECK(big == 7 && old == MPI_INT, "contiguous_c contents");
    /* subarray round trip */
    int sz[2] = {6, 5}, sub[2] = {2, 3}, st[2] = {1, 2};
    MPI_Datatype sa;
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &sa);
    int si[8];
    MPI_Type_get_envelope(sa, &ni, &na, &nd, &comb);
    MPI_Type_get_contents(sa, 8, 0, 1, si, NULL, &old);
    CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && si[0] == 2 && si[1] == 6 && si[4] == 3 &&
          si[6] == 2 && si[7] == MPI_ORDER_FORTRAN, "subarray contents");
    MPI_Type_free(&sa);
    MPI_Type_free(&c);
    MPI_Type_free(&t);
}

static int copies, deletes;
static int copy_fn(MPI_Datatype t, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)t, (void)kv;
    copies++;
    *(intptr_t *)out = (intptr_t)in + *(int *)extra;
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Datatype t, int kv, void *val, void *extra)
{
    (void)t, (void)kv, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void test_names_and_attributes(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(MPI_DOUBLE_INT, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE_INT") == 0, "pair type name %s", name);
    MPI_Datatype t, d;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_get_name(t, name, &len);
    CHECK(len == 0, "a new type has an empty name");
    MPI_Type_set_name(t, "two ints");
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "two ints") == 0 && len == 8, "set name");

    int extra = 10, kv, kv2, flag;
    MPI_Type_create_keyval(copy_fn, delete_fn, &kv, &extra);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &kv2, NULL);
    MPI_Type_set_attr(t, kv, (void *)(intptr_t)5);
    MPI_Type_set_attr(t, kv2, (void *)(intptr_t)7);
    MPI_Type_dup(t, &d);
    CHECK(copies == 1, "copy callback ran once on dup (%d)", copies);
    void *val;
    MPI_Type_get_attr(d, kv, &val, &flag);
    CHECK(flag && (intptr_t)val == 15, "copied attribute is the copy callback's value");
    MPI_Type_get_attr(d, kv2, &val, &flag);
    CHECK(!flag, "MPI_TYPE_NULL_COPY_FN does not copy");
    MPI_Type_set_attr(t, kv, (void *)(intptr_t)6);
    CHECK(deletes == 1, "replacing an attribute deletes the old value");
    MPI_Type_delete_attr(t, kv);
    CHECK(deletes == 2, "delete_attr runs the delete callback");
    MPI_Type_get_attr(t, kv, &val, &flag);
    CHECK(!flag, "attribute gone after delete");
    MPI_Type_free_keyval(&kv);
    CHECK(kv == MPI_KEYVAL_INVALID, "free_keyval resets the handle");
    MPI_Type_free(&d);
    CHECK(deletes == 3, "freeing a type deletes its attributes (even after free_keyval)");
    MPI_Type_free_keyval(&kv2);
    MPI_Type_free(&t);
}

static void test_pack(void)
{
    double a[4][5];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            a[i][j] = i * 10 + j;
    MPI_Datatype col0, col;  /* a column, resized so consecutive columns follow */
    MPI_Type_vector(4, 1, 5, MPI_DOUBLE, &col0);
    MPI_Type_create_resized(col0, 0, sizeof(double), &col);
    MPI_Type_free(&col0);
    MPI_Type_commit(&col);
    char buf[256];
    int pos = 0, psize;
    MPI_Pack_size(2, col, MPI_COMM_WORLD, &psize);
    CHECK(psize == 64, "pack size %d", psize);
    MPI_Pack(&a[0][1], 2, col, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    CHECK(pos == 64, "packed %d bytes", pos);
    double p[8];
    memcpy(p, buf, sizeof p);
    CHECK(p[0] == 1 && p[3] == 31 && p[4] == 2 && p[7] == 32, "column data packed in order");
    double b[4][5] = {{0}};
    pos = 0;
    MPI_Unpack(buf, 64, &pos, &b[0][1], 2, col, MPI_COMM_WORLD);
    CHECK(pos == 64 && b[2][1] == 21 && b[3][2] == 32 && b[0][0] == 0 && b[0][3] == 0, "unpack");

    long l[2] = {-2, 0x12345678};
    int iv = 0x01020304;
    unsigned char x[64];
    MPI_Aint xp = 0, xs;
    MPI_Pack_external_size("external32", 2, MPI_LONG, &xs);
    CHECK(xs == 8, "external32 MPI_LONG is 4 bytes (%ld for two)", (long)xs);
    MPI_Pack_external("external32", l, 2, MPI_LONG, x, sizeof x, &xp);
    MPI_Pack_external("external32", &iv, 1, MPI_INT, x, sizeof x, &xp);
    CHECK(xp == 12 && x[0] == 0xff && x[3] == 0xfe && x[4] == 0x12 && x[7] == 0x78 && x[8] == 1 && x[11] == 4,
          "external32 is big-endian with external sizes");
    long lb2[2];
    int iv2;
    xp = 0;
    MPI_Unpack_external("external32", x, 12, &xp, lb2, 2, MPI_LONG);
    MPI_Unpack_external("external32", x, 12, &xp, &iv2, 1, MPI_INT);
    CHECK(lb2[0] == -2 && lb2[1] == 0x12345678 && iv2 == iv, "external32 round trip");

    MPI_Count n, bytes;
    MPIX_Type_iov_len(col, -1, &n, &bytes);
    CHECK(n == 4 && bytes == 32, "iov_len %ld %ld", (long)n, (long)bytes);
    MPIX_Iov iov[2];
    MPIX_Type_iov(col, 2, iov, 2, &n);
    CHECK(n == 2 && (MPI_Aint)iov[0].iov_base == 80 && iov[1].iov_len == 8, "iov at offset 2");
    MPI_Type_free(&col);
}

static void test_errors(void)
{
    MPI_Datatype t, v;
    int rc = MPI_Type_vector(-4, 1, 1, MPI_INT, &t);
    CHECK(errclass(rc) == MPI_ERR_COUNT, "negative count: class %d", errclass(rc));
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "count -4 is negative") != NULL, "message names the value: %s", msg);
    rc = MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t);
    CHECK(errclass(rc) == MPI_ERR_TYPE, "null oldtype");
    t = MPI_INT;
    rc = MPI_Type_free(&t);
    CHECK(errclass(rc) == MPI_ERR_TYPE, "freeing a predefined type");
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    int data[4], pos = 0;
    char buf[64];
    rc = MPI_Pack(data, 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    CHECK(errclass(rc) == MPI_ERR_TYPE, "packing an uncommitted type");
    MPI_Type_commit(&v);
    rc = MPI_Pack(data, 1, v, buf, 4, &pos, MPI_COMM_WORLD);
    CHECK(errclass(rc) == MPI_ERR_TRUNCATE, "pack into a too small buffer");
    int sz[2] = {4, 4}, sub[2] = {2, 5}, st[2] = {0, 0};
    rc = MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
    CHECK(errclass(rc) == MPI_ERR_ARG, "subarray subsize beyond size");
    int g[1] = {10}, dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {2}, ps[1] = {3};
    rc = MPI_Type_create_darray(3, 0, 1, g, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
    CHECK(errclass(rc) == MPI_ERR_ARG, "darray blocks that do not cover the array");
    rc = MPI_Pack_external("native", data, 1, MPI_INT, buf, 64, &(MPI_Aint){0});
    CHECK(errclass(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep");
    int kv = MPI_KEYVAL_INVALID;
    rc = MPI_Type_set_attr(v, kv, NULL);
    CHECK(errclass(rc) == MPI_ERR_KEYVAL, "invalid keyval");
    MPI_Type_free(&v);
}

/* Count 0 with NULL arrays is the empty type in every constructor (as in
 * MPICH): size 0, extent 0, and it sends, receives and packs nothing. */
static void check_empty(const char *name, int rc, MPI_Datatype t, int combiner)
{
    CHECK(rc == MPI_SUCCESS, "%s with count 0 and NULL arrays: error class %d", name, errclass(rc));
    if (rc != MPI_SUCCESS)
        return;
    int size = -1, ni, na, nd, comb = -1, pos = 7, count = -1;
    MPI_Aint lb = -1, extent = -1, tlb = -1, textent = -1;
    MPI_Type_size(t, &size);
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &tlb, &textent);
    CHECK(size == 0 && lb == 0 && extent == 0 && tlb == 0 && textent == 0,
          "%s: size %d lb %ld extent %ld true lb %ld true extent %ld, want all 0", name, size,
          (long)lb, (long)extent, (long)tlb, (long)textent);
    MPI_Count nic, nac, ncc, ndc;
    if (strstr(name, "_c(") != NULL)
        MPI_Type_get_envelope_c(t, &nic, &nac, &ncc, &ndc, &comb);
    else
        MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    CHECK(comb == combiner, "%s: combiner %d, want %d", name, comb, combiner);
    CHECK(MPI_Type_commit(&t) == MPI_SUCCESS, "%s: commit failed", name);
    char buf[4] = {1, 2, 3, 4};
    pos = 0;
    CHECK(MPI_Pack(buf, 3, t, buf, 4, &pos, MPI_COMM_SELF) == MPI_SUCCESS && pos == 0,
          "%s: packing 3 empty elements moved the position to %d", name, pos);
    int x = 5, y = 9;
    MPI_Status st;
    CHECK(MPI_Sendrecv(&x, 1, t, 0, 3, &y, 1, t, 0, 3, MPI_COMM_SELF, &st) == MPI_SUCCESS,
          "%s: sendrecv failed", name);
    MPI_Get_count(&st, t, &count);
    CHECK(y == 9 && count == 0, "%s: sendrecv wrote %d, count %d (want 9, 0)", name, y, count);
    MPI_Type_free(&t);
}

/* call constructs into t; checked after the call has set it */
#define CHECK_EMPTY(call, combiner)                   \
    do {                                              \
        MPI_Datatype t = MPI_DATATYPE_NULL;           \
        int rc_ = call;                               \
        check_empty(#call, rc_, t, combiner);         \
    } while (0)

static void test_empty_constructors(void)
{
    MPI_Datatype t;
    CHECK_EMPTY(MPI_Type_create_struct(0, NULL, NULL, NULL, &t), MPI_COMBINER_STRUCT);
    CHECK_EMPTY(MPI_Type_create_struct_c(0, NULL, NULL, NULL, &t), MPI_COMBINER_STRUCT);
    CHECK_EMPTY(MPI_Type_indexed(0, NULL, NULL, MPI_INT, &t), MPI_COMBINER_INDEXED);
    CHECK_EMPTY(MPI_Type_indexed_c(0, NULL, NULL, MPI_INT, &t), MPI_COMBINER_INDEXED);
    CHECK_EMPTY(MPI_Type_create_hindexed(0, NULL, NULL, MPI_INT, &t), MPI_COMBINER_HINDEXED);
    CHECK_EMPTY(MPI_Type_create_hindexed_c(0, NULL, NULL, MPI_INT, &t), MPI_COMBINER_HINDEXED);
    CHECK_EMPTY(MPI_Type_create_indexed_block(0, 1, NULL, MPI_INT, &t), MPI_COMBINER_INDEXED_BLOCK);
    CHECK_EMPTY(MPI_Type_create_indexed_block_c(0, 1, NULL, MPI_INT, &t),
                MPI_COMBINER_INDEXED_BLOCK);
    CHECK_EMPTY(MPI_Type_create_hindexed_block(0, 1, NULL, MPI_INT, &t),
                MPI_COMBINER_HINDEXED_BLOCK);
    CHECK_EMPTY(MPI_Type_create_hindexed_block_c(0, 1, NULL, MPI_INT, &t),
                MPI_COMBINER_HINDEXED_BLOCK);
    /* an empty struct inside a struct adds no data (placed where the int
     * is, so the bounds do not depend on whether a zero-size block counts
     * for them) */
    MPI_Datatype empty, outer, types[2];
    MPI_Type_create_struct(0, NULL, NULL, NULL, &empty);
    int blens[2] = {3, 1};
    MPI_Aint disps[2] = {8, 8};
    types[0] = empty, types[1] = MPI_INT;
    CHECK(MPI_Type_create_struct(2, blens, disps, types, &outer) == MPI_SUCCESS,
          "a struct holding an empty struct was rejected");
    int size = -1;
    MPI_Aint lb, extent;
    MPI_Type_size(outer, &size);
    MPI_Type_get_extent(outer, &lb, &extent);
    CHECK(size == 4 && lb == 8 && extent == 4, "struct {empty x3 at 8, int at 8}: size %d lb %ld "
          "extent %ld, want 4 8 4", size, (long)lb, (long)extent);
    MPI_Type_free(&outer);
    MPI_Type_free(&empty);
    /* the indexed family still needs a real oldtype, even for count 0 */
    int rc = MPI_Type_indexed(0, NULL, NULL, MPI_DATATYPE_NULL, &t);
    CHECK(errclass(rc) == MPI_ERR_TYPE, "MPI_Type_indexed(0, MPI_DATATYPE_NULL): class %d",
          errclass(rc));
    rc = MPI_Type_create_struct(1, blens, disps, NULL, &t);
    CHECK(errclass(rc) == MPI_ERR_ARG, "MPI_Type_create_struct(1, types NULL): class %d",
          errclass(rc));
}

/* MPI_Type_create_f90_*: the type MPICH picks for each range/precision,
 * decoded as F90_* with the arguments, the same handle each time, data
 * through it, not freeable; out of range is MPI_ERR_OTHER. */
static void check_f90(const char *what, int rc, MPI_Datatype t, int size, int combiner, int p, int r)
{
    CHECK(rc == MPI_SUCCESS, "%s: class %d", what, errclass(rc));
    if (rc != MPI_SUCCESS)
        return;
    int sz = -1, ni = -1, na = -1, nd = -1, comb = -1, ints[2] = {-7, -7};
    MPI_Type_size(t, &sz);
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    MPI_Aint aints[1];
    MPI_Datatype types[1];
    MPI_Type_get_contents(t, 2, 0, 0, ints, aints, types);
    int want_ni = combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2;
    int ok_ints = combiner == MPI_COMBINER_F90_INTEGER ? ints[0] == r : ints[0] == p && ints[1] == r;
    CHECK(sz == size && comb == combiner && ni == want_ni && na == 0 && nd == 0 && ok_ints,
          "%s: size %d (want %d), combiner %d (want %d), envelope %d %d %d, ints %d %d", what, sz,
          size, comb, combiner, ni, na, nd, ints[0], ints[1]);
}

static void test_f90(void)
{
    static const struct { int r, size; } ints[] = {{-1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 4},
                                                    {9, 4}, {10, 8}, {18, 8}, {MPI_UNDEFINED, 1}};
    for (unsigned i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        int rc = MPI_Type_create_f90_integer(ints[i].r, &t);
        char what[64];
        snprintf(what, sizeof what, "f90_integer(%d)", ints[i].r);
        check_f90(what, rc, t, ints[i].size, MPI_COMBINER_F90_INTEGER, 0, ints[i].r);
    }
    static const struct { int p, r, size; } reals[] = {
        {MPI_UNDEFINED, MPI_UNDEFINED, 4}, {6, MPI_UNDEFINED, 4}, {7, MPI_UNDEFINED, 8},
        {15, MPI_UNDEFINED, 8}, {MPI_UNDEFINED, 37, 4}, {MPI_UNDEFINED, 38, 8},
        {MPI_UNDEFINED, 307, 8}, {6, 37, 4}, {6, 38, 8}, {0, 0, 4}};
    for (unsigned i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        char what[64];
        int rc = MPI_Type_create_f90_real(reals[i].p, reals[i].r, &t);
        snprintf(what, sizeof what, "f90_real(%d, %d)", reals[i].p, reals[i].r);
        check_f90(what, rc, t, reals[i].size, MPI_COMBINER_F90_REAL, reals[i].p, reals[i].r);
        rc = MPI_Type_create_f90_complex(reals[i].p, reals[i].r, &t);
        snprintf(what, sizeof what, "f90_complex(%d, %d)", reals[i].p, reals[i].r);
        check_f90(what, rc, t, 2 * reals[i].size, MPI_COMBINER_F90_COMPLEX, reals[i].p, reals[i].r);
    }
    MPI_Datatype t;
    int rc = MPI_Type_create_f90_integer(19, &t);
    CHECK(errclass(rc) == MPI_ERR_OTHER, "f90_integer(19): class %d", errclass(rc));
    rc = MPI_Type_create_f90_real(16, MPI_UNDEFINED, &t);
    CHECK(errclass(rc) == MPI_ERR_OTHER, "f90_real(16, -): class %d", errclass(rc));
    rc = MPI_Type_create_f90_complex(MPI_UNDEFINED, 308, &t);
    CHECK(errclass(rc) == MPI_ERR_OTHER, "f90_complex(-, 308): class %d", errclass(rc));
    rc = MPI_Type_create_f90_integer(5, NULL);
    CHECK(errclass(rc) == MPI_ERR_ARG, "f90_integer(NULL): class %d", errclass(rc));

    /* the same arguments give the same (predefined) type; it carries data */
    MPI_Datatype a, b, c;
    MPI_Type_create_f90_complex(15, 300, &a);
    MPI_Type_create_f90_complex(15, 300, &b);
    MPI_Type_create_f90_complex(15, 301, &c);
    CHECK(a == b && a != c, "f90_complex(15, 300) twice gave 0x%x and 0x%x, (15, 301) 0x%x",
          (unsigned)a, (unsigned)b, (unsigned)c);
    double z[6] = {1.5, -2, 3.25, 4, 5, 6}, w[6] = {0};
    MPI_Status st;
    MPI_Sendrecv(z, 3, a, 0, 4, w, 3, a, 0, 4, MPI_COMM_SELF, &st);
    int count = -1;
    MPI_Get_count(&st, a, &count);
    CHECK(memcmp(z, w, sizeof z) == 0 && count == 3, "3 complex(15, 300) arrived wrong (count %d)",
          count);
    rc = MPI_Type_free(&a);
    CHECK(errclass(rc) == MPI_ERR_TYPE && a == b, "MPI_Type_free of an f90 type: class %d",
          errclass(rc));
    MPI_Datatype d;
    CHECK(MPI_Type_dup(b, &d) == MPI_SUCCESS && MPI_Type_free(&d) == MPI_SUCCESS,
          "a duplicate of an f90 type is an ordinary type");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_queries();
    test_contents_roundtrip();
    test_names_and_attributes();
    test_pack();
    test_errors();
    test_empty_constructors();
    test_f90();
    MPI_Finalize();
    return check_summary("t_datatype");
}
