/*
 * Functions a program written for MPICH may call beyond MPI-4.1: the MPI-1
 * functions removed in MPI-3.0 that MPICH 4 still declares and exports
 * (MPI_Address, MPI_Type_extent/lb/ub/hvector/hindexed/struct,
 * MPI_Errhandler_create/get/set), the deprecated MPI-1 attribute calls,
 * MPICH's GPU support queries (MPIX_GPU_query_support, MPIX_Query_*_support,
 * also before MPI_Init), MPICH's half-precision MPIX_C_FLOAT16 and the
 * lineage macros a program tests to recognise
 * an MPICH-ABI library.  Each result is checked against its modern
 * replacement, with data.
 *
 * Built twice: by Cadence's build (test legacy-api) and, in
 * run_abi_test.sh, by Debian's mpicc.mpich against MPICH's mpi.h, then run
 * against Cadence's library -- the binary an old MPICH program is.  Both
 * must pass and print the same lines.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* What configure scripts and libraries test for an MPICH-ABI library. */
#if !defined(MPICH) || !defined(MPICH_NAME) || !defined(MPICH_VERSION) || \
    !defined(MPICH_NUMVERSION) || !defined(MPICH_CALC_VERSION)
#error "mpi.h does not say it is of the MPICH lineage"
#endif
#if MPICH_NAME < 4 || MPICH_NUMVERSION < MPICH_CALC_VERSION(4, 0, 0, 0, 0)
#error "mpi.h claims an MPICH ABI older than MPICH 4"
#endif
#if defined(CADENCE_MPI) && (!defined(CADENCE_VERSION) || !defined(CADENCE_NUMVERSION))
#error "Cadence's mpi.h lacks its own version macros"
#endif

static int failures;

#define EXPECT(cond, ...)                                               \
    do {                                                                \
        if (!(cond)) {                                                  \
            failures++;                                                 \
            fprintf(stderr, "FAIL legacy_api.c:%d: ", __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
        }                                                               \
    } while (0)

static int class_of(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

static void message_of(int code, char *buf)
{
    int len = 0;
    buf[0] = '\0';
    MPI_Error_string(code, buf, &len);
}

/* lb, ub, extent and size of t by the removed calls, against the modern ones */
static void bounds(const char *what, MPI_Datatype t, long want_lb, long want_ub, int want_size)
{
    MPI_Aint lb = -1, ub = -1, extent = -1, mlb = -2, mextent = -2;
    int size = -1;
    EXPECT(MPI_Type_lb(t, &lb) == MPI_SUCCESS, "%s: MPI_Type_lb failed", what);
    EXPECT(MPI_Type_ub(t, &ub) == MPI_SUCCESS, "%s: MPI_Type_ub failed", what);
    EXPECT(MPI_Type_extent(t, &extent) == MPI_SUCCESS, "%s: MPI_Type_extent failed", what);
    MPI_Type_get_extent(t, &mlb, &mextent);
    MPI_Type_size(t, &size);
    EXPECT(lb == want_lb && ub == want_ub && extent == want_ub - want_lb && size == want_size,
           "%s: lb %ld ub %ld extent %ld size %d, want %ld %ld %ld %d", what, (long)lb, (long)ub,
           (long)extent, size, want_lb, want_ub, want_ub - want_lb, want_size);
    EXPECT(lb == mlb && extent == mextent, "%s: MPI_Type_get_extent says %ld %ld", what,
           (long)mlb, (long)mextent);
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    printf("%s lb %ld ub %ld extent %ld size %d envelope %d %d %d combiner %d\n", what, (long)lb,
           (long)ub, (long)extent, size, ni, na, nd, combiner);
}

/* Send one element of t to self and compare the bytes it covers. */
static void roundtrip(const char *what, MPI_Datatype t, int nbytes)
{
    unsigned char src[64], dst[64];
    for (int i = 0; i < 64; i++)
        src[i] = (unsigned char)(i + 1), dst[i] = 0;
    MPI_Type_commit(&t);
    MPI_Sendrecv(src, 1, t, 0, 1, dst, 1, t, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    int moved = 0, wrong = 0;
    for (int i = 0; i < 64; i++) {
        moved += dst[i] != 0;
        wrong += dst[i] != 0 && dst[i] != src[i];
    }
    EXPECT(moved == nbytes && wrong == 0, "%s: %d bytes arrived (%d wrong), want %d", what,
           moved, wrong, nbytes);
    printf("%s sendrecv %d bytes\n", what, moved);
}

static void test_types(void)
{
    char anchor[64];
    MPI_Aint a = 0, g = 0;
    EXPECT(MPI_Address(anchor + 5, &a) == MPI_SUCCESS, "MPI_Address failed");
    MPI_Get_address(anchor + 5, &g);
    EXPECT(a == g && a != 0, "MPI_Address %ld, MPI_Get_address %ld", (long)a, (long)g);
    printf("MPI_Address equals MPI_Get_address %d\n", a == g);

    bounds("MPI_INT", MPI_INT, 0, 4, 4);
    MPI_Datatype t;
    EXPECT(MPI_Type_hvector(3, 2, 12, MPI_INT, &t) == MPI_SUCCESS, "MPI_Type_hvector failed");
    bounds("hvector(3,2,12,int)", t, 0, 32, 24);
    roundtrip("hvector(3,2,12,int)", t, 24);
    MPI_Type_free(&t);

    int blens[3] = {1, 2, 1};
    MPI_Aint disps[3] = {4, 16, 40};
    EXPECT(MPI_Type_hindexed(3, blens, disps, MPI_SHORT, &t) == MPI_SUCCESS,
           "MPI_Type_hindexed failed");
    bounds("hindexed({1,2,1},{4,16,40},short)", t, 4, 42, 8);
    roundtrip("hindexed({1,2,1},{4,16,40},short)", t, 8);
    MPI_Type_free(&t);

    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Aint sdisps[3] = {0, 8, 24};
    EXPECT(MPI_Type_struct(3, blens, sdisps, types, &t) == MPI_SUCCESS, "MPI_Type_struct failed");
    bounds("struct({char,2 double,int})", t, 0, 32, 21);
    roundtrip("struct({char,2 double,int})", t, 21);
    MPI_Type_free(&t);

    /* MPI_LB / MPI_UB markers, what MPI_Type_lb/ub were made for */
    MPI_Datatype mtypes[3] = {MPI_LB, MPI_INT, MPI_UB};
    MPI_Aint mdisps[3] = {-8, 0, 20};
    int mblens[3] = {1, 1, 1};
    EXPECT(MPI_Type_struct(3, mblens, mdisps, mtypes, &t) == MPI_SUCCESS,
           "MPI_Type_struct with MPI_LB/MPI_UB failed");
    bounds("struct({LB -8,int 0,UB 20})", t, -8, 20, 4);
    MPI_Type_free(&t);

    /* errors name the removed function and its replacement */
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Aint x;
    int rc = MPI_Type_extent(MPI_DATATYPE_NULL, &x);
    message_of(rc, msg);
    EXPECT(class_of(rc) == MPI_ERR_TYPE, "MPI_Type_extent(MPI_DATATYPE_NULL): class %d",
           class_of(rc));
    printf("MPI_Type_extent(MPI_DATATYPE_NULL) class %d\n", class_of(rc));
    rc = MPI_Type_hvector(-1, 1, 4, MPI_INT, &t);
    EXPECT(class_of(rc) == MPI_ERR_COUNT, "MPI_Type_hvector(-1): class %d", class_of(rc));
    printf("MPI_Type_hvector(-1) class %d\n", class_of(rc));
#ifdef CADENCE_MPI
    /* Cadence's own messages (MPICH words its differently) */
    EXPECT(strstr(msg, "MPI_Type_extent") != NULL, "message \"%s\" does not name MPI_Type_extent",
           msg);
    message_of(rc, msg);
    EXPECT(strstr(msg, "MPI_Type_hvector") != NULL && strstr(msg, "-1") != NULL,
           "message \"%s\" does not name MPI_Type_hvector and -1", msg);
    rc = MPI_Type_lb(MPI_INT, NULL);
    message_of(rc, msg);
    EXPECT(class_of(rc) == MPI_ERR_ARG && strstr(msg, "MPI_Type_lb") != NULL,
           "MPI_Type_lb(NULL): class %d \"%s\"", class_of(rc), msg);
#endif
}

static int handler_calls, handler_code;
static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static void test_errhandlers(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    EXPECT(MPI_Errhandler_create(handler, &eh) == MPI_SUCCESS && eh != MPI_ERRHANDLER_NULL,
           "MPI_Errhandler_create failed");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    EXPECT(MPI_Errhandler_set(dup, eh) == MPI_SUCCESS, "MPI_Errhandler_set failed");
    EXPECT(MPI_Errhandler_get(dup, &got) == MPI_SUCCESS, "MPI_Errhandler_get failed");
    MPI_Errhandler modern = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(dup, &modern);
    EXPECT(got == modern, "MPI_Errhandler_get 0x%x, MPI_Comm_get_errhandler 0x%x",
           (unsigned)got, (unsigned)modern);
    /* the handler runs for a real error on dup */
    int rank = -1;
    MPI_Comm_rank(dup, &rank);
    int rc = MPI_Send(&rank, 1, MPI_INT, 12345, 0, dup);
    EXPECT(handler_calls == 1 && class_of(handler_code) == MPI_ERR_RANK && class_of(rc) == MPI_ERR_RANK,
           "handler ran %d times with class %d (call returned class %d)", handler_calls,
           class_of(handler_code), class_of(rc));
    printf("MPI_Errhandler_create handler calls %d class %d\n", handler_calls,
           class_of(handler_code));
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&modern);
    MPI_Errhandler_set(dup, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    MPI_Errhandler_get(MPI_COMM_WORLD, &got);
    EXPECT(got == MPI_ERRORS_RETURN, "MPI_COMM_WORLD's handler is 0x%x", (unsigned)got);
    rc = MPI_Errhandler_set(MPI_COMM_NULL, MPI_ERRORS_RETURN);
    EXPECT(class_of(rc) == MPI_ERR_COMM, "MPI_Errhandler_set(MPI_COMM_NULL): class %d",
           class_of(rc));
    MPI_Comm_free(&dup);
}

/* The deprecated MPI-1 attribute calls, with copy and delete callbacks. */
static int copies, deletes;
static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Comm c, int k, void *val, void *extra)
{
    (void)c, (void)k, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void test_attributes(void)
{
    int key = MPI_KEYVAL_INVALID, value = 42, flag = 0;
    EXPECT(MPI_Keyval_create(copy_fn, delete_fn, &key, NULL) == MPI_SUCCESS, "MPI_Keyval_create");
    EXPECT(MPI_Attr_put(MPI_COMM_WORLD, key, &value) == MPI_SUCCESS, "MPI_Attr_put");
    int *got = NULL;
    EXPECT(MPI_Attr_get(MPI_COMM_WORLD, key, &got, &flag) == MPI_SUCCESS && flag && got == &value,
           "MPI_Attr_get gave flag %d, %p", flag, (void *)got);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    got = NULL;
    MPI_Attr_get(dup, key, &got, &flag);
    EXPECT(copies == 1 && flag && got == &value, "dup: %d copies, flag %d", copies, flag);
    MPI_Comm_free(&dup);
    EXPECT(MPI_Attr_delete(MPI_COMM_WORLD, key) == MPI_SUCCESS, "MPI_Attr_delete");
    MPI_Attr_get(MPI_COMM_WORLD, key, &got, &flag);
    EXPECT(!flag && deletes == 2, "after delete: flag %d, %d deletes", flag, deletes);
    int *tag_ub = NULL;
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    EXPECT(flag && tag_ub != NULL && *tag_ub >= 32767, "MPI_TAG_UB through MPI_Attr_get");
    EXPECT(MPI_Keyval_free(&key) == MPI_SUCCESS && key == MPI_KEYVAL_INVALID, "MPI_Keyval_free");
    printf("MPI_Attr/Keyval copies %d deletes %d\n", copies, deletes);
}

/* MPIX_C_FLOAT16: a real 2-byte type that packs, unpacks and travels. */
static void test_float16(void)
{
    unsigned short in[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000}, out[5] = {0};
    int size = -1, packsize = -1, pos = 0;
    MPI_Aint lb = -1, extent = -1;
    MPI_Type_size(MPIX_C_FLOAT16, &size);
    MPI_Type_get_extent(MPIX_C_FLOAT16, &lb, &extent);
    MPI_Pack_size(5, MPIX_C_FLOAT16, MPI_COMM_SELF, &packsize);
    char packed[64];
    int rc = MPI_Pack(in, 5, MPIX_C_FLOAT16, packed, (int)sizeof packed, &pos, MPI_COMM_SELF);
    int upos = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(packed, pos, &upos, out, 5, MPIX_C_FLOAT16, MPI_COMM_SELF);
    EXPECT(size == 2 && lb == 0 && extent == 2 && rc == MPI_SUCCESS && pos == 10 && upos == 10 &&
           memcmp(in, out, sizeof in) == 0,
           "MPIX_C_FLOAT16: size %d lb %ld extent %ld, pack rc %d to %d bytes, round trip %s", size,
           (long)lb, (long)extent, rc, pos, memcmp(in, out, sizeof in) == 0 ? "ok" : "wrong");
    memset(out, 0, sizeof out);
    MPI_Status st;
    int count = -1;
    MPI_Sendrecv(in, 5, MPIX_C_FLOAT16, 0, 9, out, 5, MPIX_C_FLOAT16, 0, 9, MPI_COMM_SELF, &st);
    MPI_Get_count(&st, MPIX_C_FLOAT16, &count);
    EXPECT(count == 5 && memcmp(in, out, sizeof in) == 0, "MPIX_C_FLOAT16 sendrecv: count %d",
           count);
    printf("MPIX_C_FLOAT16 size %d extent %ld packed %d sendrecv count %d\n", size, (long)extent,
           pos, count);
}

static void test_mpix_queries(void)
{
    static const int kinds[] = {MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_ZE, MPIX_GPU_SUPPORT_HIP};
    for (int i = 0; i < 3; i++) {
        int supported = -1;
        int rc = MPIX_GPU_query_support(kinds[i], &supported);
        EXPECT(rc == MPI_SUCCESS && supported == 0, "MPIX_GPU_query_support(%d): rc %d, %d",
               kinds[i], rc, supported);
        printf("MPIX_GPU_query_support %d rc %d supported %d\n", kinds[i], rc, supported);
    }
    int supported = -1;
    int rc = MPIX_GPU_query_support(77, &supported);
    EXPECT(class_of(rc) == MPI_ERR_ARG, "MPIX_GPU_query_support(77): class %d", class_of(rc));
    printf("MPIX_GPU_query_support 77 class %d\n", class_of(rc));
    printf("MPIX_Query support cuda %d ze %d hip %d\n", MPIX_Query_cuda_support(),
           MPIX_Query_ze_support(), MPIX_Query_hip_support());
    printf("MPICH_VERSION %s MPICH_NUMVERSION %d MPICH_NAME %d\n", MPICH_VERSION,
           MPICH_NUMVERSION, MPICH_NAME);
}

int main(int argc, char **argv)
{
    /* asked before MPI_Init, as CUDA-aware checks are; 0 is the honest answer */
    int cuda_before = MPIX_Query_cuda_support();
    printf("MPIX_Query_cuda_support before MPI_Init %d\n", cuda_before);
    EXPECT(cuda_before == 0, "MPIX_Query_cuda_support before MPI_Init: %d", cuda_before);
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_types();
    test_errhandlers();
    test_attributes();
    test_mpix_queries();
    test_float16();
    MPI_Finalize();
    if (failures)
        fprintf(stderr, "legacy_api: %d checks failed\n", failures);
    return failures != 0;
}
