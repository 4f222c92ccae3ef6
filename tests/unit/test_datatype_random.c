/*
 * Randomised tests of the datatype engine against an independent reference
 * model.  Types are built through the constructor bindings (every
 * constructor, nested up to 4 deep, with empty blocks, negative strides and
 * displacements, resized lb/extent, subarrays in both orders and darrays);
 * alongside, the test flattens each one by brute force from the same
 * arguments into its typemap: a list of (offset, length) byte pieces plus
 * bounds.  Packing must equal concatenating the pieces, in whole, in random
 * chunks and at random offsets; unpacking must write them back; the iovec
 * view must cover the same bytes in the same order; sizes, bounds and
 * element counts must agree.  The seed is fixed, so failures reproduce.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "cdn_api_impl.h"
#include "runtime/datatype_impl.h"
#include "run_suite.h"

struct piece {
    long off, len;
};

struct ref {
    struct piece *p;
    long n, cap;
    long lb, ub, tlb, tub, size, nelems;
    int align;
    int any;
};

static unsigned long long rng_state;
static long rnd(long n) /* 0..n-1 */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (long)((rng_state >> 33) % (unsigned long long)n);
}
static long rnd_in(long lo, long hi) { return lo + rnd(hi - lo + 1); }

#define MAX_PIECES 6000

static void ref_free(struct ref *r) { free(r->p); }

static void push(struct ref *r, long off, long len)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->p = realloc(r->p, (size_t)r->cap * sizeof *r->p);
    }
    r->p[r->n++] = (struct piece){off, len};
}

/* Append blen copies of child at disp, ext apart, updating bounds copy by copy. */
static void add_block(struct ref *r, const struct ref *c, long disp, long blen)
{
    long ext = c->ub - c->lb;
    if (c->size == 0 || blen <= 0)
        return;
    for (long j = 0; j < blen; j++) {
        long s = disp + j * ext;
        for (long k = 0; k < c->n; k++)
            push(r, c->p[k].off + s, c->p[k].len);
        long lb = c->lb + s, ub = c->ub + s, tlb = c->tlb + s, tub = c->tub + s;
        if (!r->any) {
            r->lb = lb, r->ub = ub, r->tlb = tlb, r->tub = tub, r->any = 1;
        } else {
            r->lb = lb < r->lb ? lb : r->lb, r->ub = ub > r->ub ? ub : r->ub;
            r->tlb = tlb < r->tlb ? tlb : r->tlb, r->tub = tub > r->tub ? tub : r->tub;
        }
        r->size += c->size;
        r->nelems += c->nelems;
    }
    if (c->align > r->align)
        r->align = c->align;
}

static void ref_init(struct ref *r) { memset(r, 0, sizeof *r), r->align = 1; }

static const struct { MPI_Datatype t; int size; } basics[] = {
    {MPI_CHAR, 1}, {MPI_SHORT, 2}, {MPI_INT, 4}, {MPI_DOUBLE, 8}, {MPI_FLOAT, 4}, {MPI_LONG_DOUBLE, 16},
};

/* A random type of nesting depth <= d; r gets its reference model. */
static MPI_Datatype gen(int d, struct ref *r);

static MPI_Datatype gen_basic(struct ref *r)
{
    int k = (int)rnd(6);
    ref_init(r);
    push(r, 0, basics[k].size);
    r->ub = r->tub = r->size = basics[k].size;
    r->nelems = 1;
    r->align = basics[k].size;
    r->any = 1;
    return basics[k].t;
}

static void release(MPI_Datatype t)
{
    if (!cdn_datatype_get(t)->builtin)
        ck_assert_int_eq(cdn_MPI_Type_free(&t), MPI_SUCCESS);
}

/* Global index set of one dimension: true when index i is selected. */
struct dimsel {
    int kind; /* 0 range, 1 darray */
    long start, len;
    int distrib, darg, p, coord;
    long g;
};

static int selected(const struct dimsel *s, long i)
{
    if (s->kind == 0)
        return i >= s->start && i < s->start + s->len;
    if (s->distrib == MPI_DISTRIBUTE_NONE)
        return 1;
    long b;
    if (s->distrib == MPI_DISTRIBUTE_BLOCK) {
        b = s->darg == MPI_DISTRIBUTE_DFLT_DARG ? (s->g + s->p - 1) / s->p : s->darg;
        return i / b == s->coord;
    }
    b = s->darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : s->darg;
    return (i / b) % s->p == s->coord;
}

/* Elements of c in an n-dimensional array, in storage order of `order`. */
static void array_ref(struct ref *r, const struct ref *c, int nd, const long *sizes, const struct dimsel *sel,
                      int order)
{
    long ext = c->ub - c->lb, total = 1;
    for (int d = 0; d < nd; d++)
        total *= sizes[d];
    ref_init(r);
    for (long lin = 0; lin < total; lin++) {
        long rest = lin, ok = 1;
        for (int k = 0; k < nd; k++) {  /* fastest dimension first */
            int d = order == MPI_ORDER_C ? nd - 1 - k : k;
            ok &= selected(&sel[d], rest % sizes[d]);
            rest /= sizes[d];
        }
        if (ok)
            add_block(r, c, lin * ext, 1);
    }
    r->align = r->any ? c->align : 1;
    r->lb = 0, r->ub = total * ext;
}

static MPI_Datatype gen(int d, struct ref *r)
{
    if (d == 0 || rnd(5) == 0)
        return gen_basic(r);
    struct ref c;
    MPI_Datatype old = gen(d - 1, &c), t = MPI_DATATYPE_NULL;
    long ext = c.ub - c.lb;
    int kind = (int)rnd(11), rc = MPI_SUCCESS;
    ref_init(r);
    switch (kind) {
    case 0: {
        int n = (int)rnd_in(0, 4);
        rc = cdn_MPI_Type_contiguous(n, old, &t);
        add_block(r, &c, 0, n);
        break;
    }
    case 1: case 2: {
        int count = (int)rnd_in(1, 4), bl = (int)rnd_in(0, 3);
        long stride = kind == 1 ? rnd_in(-4, 4) : rnd_in(-64, 64);
        rc = kind == 1 ? cdn_MPI_Type_vector(count, bl, (int)stride, old, &t)
                       : cdn_MPI_Type_create_hvector(count, bl, stride, old, &t);
        for (int i = 0; i < count; i++)
            add_block(r, &c, i * (kind == 1 ? stride * ext : stride), bl);
        break;
    }
    case 3: case 4: case 5: case 6: {
        int count = (int)rnd_in(1, 4), bls[4], bl = (int)rnd_in(0, 3), di[4];
        MPI_Aint da[4];
        for (int i = 0; i < count; i++) {
            bls[i] = (int)rnd_in(0, 3);
            di[i] = (int)rnd_in(-5, 10);
            da[i] = rnd_in(-64, 128);
        }
        if (kind == 3)
            rc = cdn_MPI_Type_indexed(count, bls, di, old, &t);
        else if (kind == 4)
            rc = cdn_MPI_Type_create_hindexed(count, bls, da, old, &t);
        else if (kind == 5)
            rc = cdn_MPI_Type_create_indexed_block(count, bl, di, old, &t);
        else
            rc = cdn_MPI_Type_create_hindexed_block(count, bl, da, old, &t);
        for (int i = 0; i < count; i++)
            add_block(r, &c, kind == 3 || kind == 5 ? di[i] * ext : da[i], kind <= 4 ? bls[i] : bl);
        break;
    }
    case 7: {
        int count = (int)rnd_in(1, 3), bls[3];
        MPI_Aint da[3];
        MPI_Datatype ts[3];
        struct ref cs[3];
        cs[0] = c, ts[0] = old;
        for (int i = 0; i < count; i++) {
            if (i > 0)
                ts[i] = gen(d - 1, &cs[i]);
            bls[i] = (int)rnd_in(0, 2);
            da[i] = rnd_in(-32, 128);
        }
        rc = cdn_MPI_Type_create_struct(count, bls, da, ts, &t);
        for (int i = 0; i < count; i++)
            add_block(r, &cs[i], da[i], bls[i]);
        long e = r->ub - r->lb;
        if (e % r->align)
            r->ub += r->align - e % r->align;
        for (int i = 1; i < count; i++) {
            release(ts[i]);
            ref_free(&cs[i]);
        }
        break;
    }
    case 8: {
        long lb = rnd_in(-16, 16), extent = rnd_in(1, 64);
        rc = cdn_MPI_Type_create_resized(old, lb, extent, &t);
        add_block(r, &c, 0, 1);
        r->lb = lb, r->ub = lb + extent, r->align = c.align;
        break;
    }
    case 9: case 10: {
        int nd = (int)rnd_in(1, 3), order = rnd(2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        int sz[3], sub[3], st[3], dist[3], darg[3], ps[3], nprocs = 1, rank;
        long lsz[3];
        struct dimsel sel[3];
        for (int i = 0; i < nd; i++) {
            lsz[i] = sz[i] = (int)rnd_in(1, 6);
            sub[i] = (int)rnd_in(0, sz[i]);
            st[i] = (int)rnd_in(0, sz[i] - sub[i]);
            sel[i] = (struct dimsel){.kind = 0, .start = st[i], .len = sub[i]};
            dist[i] = (int)rnd_in(MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE);
            ps[i] = dist[i] == MPI_DISTRIBUTE_NONE ? 1 : (int)rnd_in(1, 3);
            darg[i] = rnd(2) ? MPI_DISTRIBUTE_DFLT_DARG : (int)rnd_in(1, 3);
            if (dist[i] == MPI_DISTRIBUTE_BLOCK && darg[i] != MPI_DISTRIBUTE_DFLT_DARG && darg[i] * ps[i] < sz[i])
                darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
            nprocs *= ps[i];
        }
        if (kind == 9) {
            rc = cdn_MPI_Type_create_subarray(nd, sz, sub, st, order, old, &t);
        } else {
            rank = (int)rnd(nprocs);
            rc = cdn_MPI_Type_create_darray(nprocs, rank, nd, sz, dist, darg, ps, order, old, &t);
            for (int i = nd - 1, q = rank; i >= 0; i--) {
                sel[i] = (struct dimsel){.kind = 1, .distrib = dist[i], .darg = darg[i], .p = ps[i],
                                         .coord = q % ps[i], .g = sz[i]};
                q /= ps[i];
            }
        }
        array_ref(r, &c, nd, lsz, sel, order);
        break;
    }
    }
    ck_assert_int_eq(rc, MPI_SUCCESS);
    release(old);
    ref_free(&c);
    if (!r->any && kind < 8)  /* no data and no explicit bounds */
        r->lb = r->ub = r->tlb = r->tub = 0;
    if (r->n > MAX_PIECES || r->ub - r->lb > 100000 || r->tub - r->tlb > 100000) {
        release(t);  /* too big to check cheaply: try a smaller one */
        ref_free(r);
        return gen_basic(r);
    }
    return t;
}

/* The expected packed stream of count elements; span of touched memory. */
static char *ref_pack(const struct ref *r, long count, const char *base, long *bytes)
{
    long ext = r->ub - r->lb;
    char *out = malloc((size_t)(count * r->size) + 1), *q = out;
    for (long k = 0; k < count; k++)
        for (long i = 0; i < r->n; i++) {
            memcpy(q, base + k * ext + r->p[i].off, (size_t)r->p[i].len);
            q += r->p[i].len;
        }
    *bytes = q - out;
    return out;
}

static void ref_unpack(const struct ref *r, long count, char *base, const char *in)
{
    long ext = r->ub - r->lb;
    for (long k = 0; k < count; k++)
        for (long i = 0; i < r->n; i++) {
            memcpy(base + k * ext + r->p[i].off, in, (size_t)r->p[i].len);
            in += r->p[i].len;
        }
}

static void check_type(MPI_Datatype t, const struct ref *r)
{
    struct cdn_datatype *dt = cdn_datatype_get(t);
    ck_assert_int_eq(cdn_MPI_Type_commit(&t), MPI_SUCCESS);
    ck_assert_int_eq(dt->size, r->size);
    ck_assert_int_eq(cdn_datatype_lb(dt), r->lb);
    ck_assert_int_eq(cdn_datatype_extent(dt), r->ub - r->lb);
    if (r->size > 0) {
        ck_assert_int_eq(cdn_datatype_true_lb(dt), r->tlb);
        ck_assert_int_eq(cdn_datatype_true_extent(dt), r->tub - r->tlb);
    }
    long count = rnd_in(1, 3), ext = r->ub - r->lb;
    /* memory span of count elements */
    long lo = 0, hi = 1;
    for (long k = 0; k < count; k++)
        for (long i = 0; i < r->n; i++) {
            long a = k * ext + r->p[i].off, b = a + r->p[i].len;
            lo = a < lo ? a : lo, hi = b > hi ? b : hi;
        }
    char *mem = malloc((size_t)(hi - lo)), *mem2 = malloc((size_t)(hi - lo)), *mem3 = malloc((size_t)(hi - lo));
    for (long i = 0; i < hi - lo; i++)
        mem[i] = (char)rnd(256);
    char *base = mem - lo;
    long bytes;
    char *want = ref_pack(r, count, base, &bytes);
    ck_assert_int_eq(bytes, count * r->size);
    ck_assert_int_eq(cdn_datatype_elements(dt, bytes), count * r->nelems);

    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, base, count, dt);
    ck_assert_int_eq(cdn_dt_segment_bytes(&seg), bytes);
    char *got = malloc((size_t)bytes + 1);
    ck_assert_int_eq(cdn_dt_pack(&seg, 0, got, bytes + 5), bytes);
    ck_assert(memcmp(got, want, (size_t)bytes) == 0);
    memset(got, 0, (size_t)bytes);
    for (long off = 0; off < bytes;) {  /* sequential random chunks */
        long len = rnd_in(1, 40);
        off += cdn_dt_pack(&seg, off, got + off, len);
    }
    ck_assert(memcmp(got, want, (size_t)bytes) == 0);
    for (int k = 0; k < 8 && bytes > 0; k++) {  /* random offsets */
        long off = rnd(bytes), len = rnd_in(1, bytes - off);
        ck_assert_int_eq(cdn_dt_pack(&seg, off, got, len), len);
        ck_assert(memcmp(got, want + off, (size_t)len) == 0);
    }
    cdn_dt_segment_fini(&seg);

    /* unpack, in chunks, into zeroed memory; the reference does the same */
    memset(mem2, 0, (size_t)(hi - lo));
    memset(mem3, 0, (size_t)(hi - lo));
    ref_unpack(r, count, mem3 - lo, want);
    cdn_dt_segment_init(&seg, mem2 - lo, count, dt);
    for (long off = 0; off < bytes;) {
        long len = rnd_in(1, 64);
        off += cdn_dt_unpack(&seg, off, want + off, len);
    }
    cdn_dt_segment_fini(&seg);
    ck_assert(memcmp(mem2, mem3, (size_t)(hi - lo)) == 0);

    /* iovec view of one element: the same bytes in the same order */
    MPI_Count nseg, segbytes;
    ck_assert_int_eq(cdn_MPIX_Type_iov_len(t, -1, &nseg, &segbytes), MPI_SUCCESS);
    ck_assert_int_eq(segbytes, r->size);
    MPIX_Iov *iov = malloc((size_t)(nseg + 1) * sizeof *iov);
    MPI_Count got_n;
    ck_assert_int_eq(cdn_MPIX_Type_iov(t, 0, iov, nseg + 3, &got_n), MPI_SUCCESS);
    ck_assert_int_eq(got_n, nseg);
    long pi = 0, pdone = 0, total = 0;
    for (MPI_Count i = 0; i < nseg; i++) {  /* walk the reference pieces alongside */
        long a = (long)(MPI_Aint)iov[i].iov_base, len = iov[i].iov_len;
        ck_assert_int_gt(len, 0);
        total += len;
        while (len > 0) {
            ck_assert_int_lt(pi, r->n);
            ck_assert_int_eq(a, r->p[pi].off + pdone);
            long take = r->p[pi].len - pdone < len ? r->p[pi].len - pdone : len;
            a += take, len -= take, pdone += take;
            if (pdone == r->p[pi].len)
                pi++, pdone = 0;
        }
    }
    ck_assert_int_eq(total, r->size);
    for (int k = 0; k < 4 && nseg > 0; k++) {  /* random access by segment index */
        MPI_Count first = rnd(nseg), n2;
        MPIX_Iov two[2];
        ck_assert_int_eq(cdn_MPIX_Type_iov(t, first, two, 2, &n2), MPI_SUCCESS);
        ck_assert_int_eq(n2, first + 1 < nseg ? 2 : 1);
        ck_assert_ptr_eq(two[0].iov_base, iov[first].iov_base);
        ck_assert_int_eq(two[0].iov_len, iov[first].iov_len);
        /* iov_len with a byte limit: whole segments within it */
        MPI_Count prefix = 0, n3, b3;
        for (MPI_Count i = 0; i < first; i++)
            prefix += iov[i].iov_len;
        MPI_Count limit = prefix + (iov[first].iov_len > 1 ? rnd(iov[first].iov_len) : 0);
        ck_assert_int_eq(cdn_MPIX_Type_iov_len(t, limit, &n3, &b3), MPI_SUCCESS);
        if (limit < r->size) {
            ck_assert_int_eq(n3, first);
            ck_assert_int_eq(b3, prefix);
        }
    }
    free(iov);
    free(got);
    free(want);
    free(mem);
    free(mem2);
    free(mem3);
}

static void setup(void) { ck_assert_int_eq(cdn_datatype_init(), MPI_SUCCESS); }
static void teardown(void) { cdn_datatype_finalize(); }

START_TEST(test_random_nested_types)
{
    rng_state = 12345u + (unsigned)_i;
    for (int k = 0; k < 500; k++) {
        struct ref r;
        MPI_Datatype t = gen(4, &r);
        check_type(t, &r);
        release(t);
        ref_free(&r);
    }
}
END_TEST

START_TEST(test_compact_subarray)
{
    int sizes[2] = {1000, 1000}, sub[2] = {1000, 500}, starts[2] = {0, 250};
    MPI_Datatype t;
    ck_assert_int_eq(cdn_MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t), MPI_SUCCESS);
    ck_assert_int_eq(cdn_MPI_Type_commit(&t), MPI_SUCCESS);
    struct cdn_datatype *dt = cdn_datatype_get(t);
    ck_assert_int_le(cdn_dt_node_count(dt->root), 3);
    ck_assert_int_eq(dt->size, 1000 * 500 * 8);
    ck_assert_int_eq(cdn_dt_iov_count(dt), 1000);
    MPIX_Iov iov[1];
    MPI_Count n;  /* segment 700 found arithmetically */
    ck_assert_int_eq(cdn_MPIX_Type_iov(t, 700, iov, 1, &n), MPI_SUCCESS);
    ck_assert_int_eq((MPI_Aint)iov[0].iov_base, (700 * 1000 + 250) * 8);
    ck_assert_int_eq(iov[0].iov_len, 500 * 8);
    MPI_Datatype v;
    ck_assert_int_eq(cdn_MPI_Type_vector(1000000, 1, 3, MPI_INT, &v), MPI_SUCCESS);
    ck_assert_int_le(cdn_dt_node_count(cdn_datatype_get(v)->root), 2);
    ck_assert_int_le(cdn_dt_node_count(dt->root), 3);
    cdn_MPI_Type_free(&v);
    cdn_MPI_Type_free(&t);
}
END_TEST

START_TEST(test_free_keeps_inflight_type)
{
    MPI_Datatype t;
    ck_assert_int_eq(cdn_MPI_Type_vector(4, 1, 2, MPI_INT, &t), MPI_SUCCESS);
    ck_assert_int_eq(cdn_MPI_Type_commit(&t), MPI_SUCCESS);
    struct cdn_datatype *dt;
    ck_assert_int_eq(cdn_datatype_check(t, "test", &dt), MPI_SUCCESS);
    int src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[4];
    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, src, 1, dt);  /* an in-flight operation's reference */
    MPI_Datatype h = t;
    ck_assert_int_eq(cdn_MPI_Type_free(&h), MPI_SUCCESS);
    ck_assert_int_eq(h, MPI_DATATYPE_NULL);
    ck_assert_int_eq(cdn_dt_pack(&seg, 0, out, 16), 16);
    ck_assert_int_eq(out[3], 7);
    cdn_dt_segment_fini(&seg);
    ck_assert_ptr_null(cdn_datatype_get(t));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("datatype_random");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_random_nested_types, 0, 8);
    tcase_add_test(tc, test_compact_subarray);
    tcase_add_test(tc, test_free_keeps_inflight_type);
    suite_add_tcase(s, tc);
    return cdn_run_suite(s, 0);
}
