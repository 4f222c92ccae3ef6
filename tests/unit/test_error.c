/*
 * Unit tests of runtime/error.c: error codes that carry a class and a
 * message, the text MPI_Error_string shows for them, user-defined classes
 * and codes (MPI_Add_error_*, MPI_Remove_error_*), and cdn_err from several
 * threads at once.
 */
#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"
#include "run_suite.h"

/* Every test starts with no user classes or codes, also under CK_FORK=no. */
static void reset_user_errors(void)
{
    cdn_err_finalize();
}

static const char *errstr(int code)
{
    static char buf[MPI_MAX_ERROR_STRING];
    ck_assert_int_eq(cdn_err_string(code, buf), 0);
    return buf;
}

/* ---- predefined classes and codes with messages ---- */

START_TEST(test_code_carries_class_and_message)
{
    int code = cdn_err(MPI_ERR_COUNT, "MPI_Send: count %d is negative", -4);
    ck_assert_int_ne(code, MPI_ERR_COUNT);  /* a code, not the bare class */
    ck_assert_int_gt(code, 0);
    ck_assert_int_le(code, MPI_ERR_LASTCODE);
    ck_assert_int_eq(cdn_err_class_of(code), MPI_ERR_COUNT);
    ck_assert_str_eq(errstr(code),
                     "MPI_ERR_COUNT (invalid count argument): MPI_Send: count -4 is negative");

    int code2 = cdn_err(MPI_ERR_COUNT, "second");
    ck_assert_int_ne(code2, code);
    ck_assert_str_eq(errstr(code2), "MPI_ERR_COUNT (invalid count argument): second");
    /* the first message is still there */
    ck_assert_str_eq(errstr(code),
                     "MPI_ERR_COUNT (invalid count argument): MPI_Send: count -4 is negative");
}
END_TEST

START_TEST(test_bare_classes)
{
    ck_assert_str_eq(errstr(MPI_SUCCESS), "MPI_SUCCESS: no error");
    ck_assert_str_eq(errstr(MPI_ERR_TRUNCATE), "MPI_ERR_TRUNCATE: message truncated");
    ck_assert_str_eq(errstr(MPI_ERR_ERRHANDLER), "MPI_ERR_ERRHANDLER: invalid error handler");
    ck_assert_str_eq(errstr(MPIX_ERR_REVOKED), "MPIX_ERR_REVOKED: communicator revoked");
    ck_assert_int_eq(cdn_err_class_of(MPI_SUCCESS), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_class_of(MPI_ERR_TRUNCATE), MPI_ERR_TRUNCATE);
}
END_TEST

/* Every class mpi.h defines has its own name and maps to itself. */
#define CLS(x) {x, #x}
static const struct { int cls; const char *name; } mpi_h_classes[] = {
    CLS(MPI_SUCCESS), CLS(MPI_ERR_BUFFER), CLS(MPI_ERR_COUNT), CLS(MPI_ERR_TYPE),
    CLS(MPI_ERR_TAG), CLS(MPI_ERR_COMM), CLS(MPI_ERR_RANK), CLS(MPI_ERR_ROOT),
    CLS(MPI_ERR_GROUP), CLS(MPI_ERR_OP), CLS(MPI_ERR_TOPOLOGY), CLS(MPI_ERR_DIMS),
    CLS(MPI_ERR_ARG), CLS(MPI_ERR_UNKNOWN), CLS(MPI_ERR_TRUNCATE), CLS(MPI_ERR_OTHER),
    CLS(MPI_ERR_INTERN), CLS(MPI_ERR_IN_STATUS), CLS(MPI_ERR_PENDING), CLS(MPI_ERR_REQUEST),
    CLS(MPI_ERR_ACCESS), CLS(MPI_ERR_AMODE), CLS(MPI_ERR_BAD_FILE), CLS(MPI_ERR_CONVERSION),
    CLS(MPI_ERR_DUP_DATAREP), CLS(MPI_ERR_FILE_EXISTS), CLS(MPI_ERR_FILE_IN_USE),
    CLS(MPI_ERR_FILE), CLS(MPI_ERR_INFO), CLS(MPI_ERR_INFO_KEY), CLS(MPI_ERR_INFO_VALUE),
    CLS(MPI_ERR_INFO_NOKEY), CLS(MPI_ERR_IO), CLS(MPI_ERR_NAME), CLS(MPI_ERR_NO_MEM),
    CLS(MPI_ERR_NOT_SAME), CLS(MPI_ERR_NO_SPACE), CLS(MPI_ERR_NO_SUCH_FILE), CLS(MPI_ERR_PORT),
    CLS(MPI_ERR_QUOTA), CLS(MPI_ERR_READ_ONLY), CLS(MPI_ERR_SERVICE), CLS(MPI_ERR_SPAWN),
    CLS(MPI_ERR_UNSUPPORTED_DATAREP), CLS(MPI_ERR_UNSUPPORTED_OPERATION), CLS(MPI_ERR_WIN),
    CLS(MPI_ERR_BASE), CLS(MPI_ERR_LOCKTYPE), CLS(MPI_ERR_KEYVAL), CLS(MPI_ERR_RMA_CONFLICT),
    CLS(MPI_ERR_RMA_SYNC), CLS(MPI_ERR_SIZE), CLS(MPI_ERR_DISP), CLS(MPI_ERR_ASSERT),
    CLS(MPI_ERR_RMA_RANGE), CLS(MPI_ERR_RMA_ATTACH), CLS(MPI_ERR_RMA_SHARED),
    CLS(MPI_ERR_RMA_FLAVOR), CLS(MPI_ERR_SESSION), CLS(MPI_ERR_PROC_ABORTED),
    CLS(MPI_ERR_VALUE_TOO_LARGE), CLS(MPI_ERR_ERRHANDLER), CLS(MPI_T_ERR_MEMORY),
    CLS(MPI_T_ERR_INVALID), CLS(MPI_T_ERR_NOT_ACCESSIBLE), CLS(MPIX_ERR_PROC_FAILED),
    CLS(MPIX_ERR_NOREQ),
};
#undef CLS

START_TEST(test_every_class_named)
{
    char prefix[128];
    for (size_t i = 0; i < sizeof mpi_h_classes / sizeof mpi_h_classes[0]; i++) {
        int cls = mpi_h_classes[i].cls;
        ck_assert_msg(cdn_err_class_name(cls) != NULL, "no name for %s", mpi_h_classes[i].name);
        ck_assert_str_eq(cdn_err_class_name(cls), mpi_h_classes[i].name);
        ck_assert_int_eq(cdn_err_class_of(cls), cls);
        snprintf(prefix, sizeof prefix, "%s: ", mpi_h_classes[i].name);
        const char *s = errstr(cls);
        ck_assert_msg(strncmp(s, prefix, strlen(prefix)) == 0 && strlen(s) > strlen(prefix),
                      "class %d gives \"%s\"", cls, s);
    }
    ck_assert_ptr_null(cdn_err_class_name(54));   /* a gap in the numbering */
    ck_assert_ptr_null(cdn_err_class_name(127));
    ck_assert_ptr_null(cdn_err_class_name(-1));
}
END_TEST

START_TEST(test_invalid_codes)
{
    static const int bad[] = {-1, -100, INT_MIN, INT_MAX, 54, 127, (5 << 7) | 127,
                              MPI_ERR_LASTCODE + 1, MPI_ERR_LASTCODE};
    char buf[MPI_MAX_ERROR_STRING];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(cdn_err_class_of(bad[i]) == -1, "class of %d", bad[i]);
        strcpy(buf, "junk");
        ck_assert_int_eq(cdn_err_string(bad[i], buf), -1);
        ck_assert_str_eq(buf, "");
    }
}
END_TEST

START_TEST(test_unimplemented_names_function)
{
    int code = cdn_err_unimplemented("MPI_Foo");
    ck_assert_int_eq(cdn_err_class_of(code), MPI_ERR_UNSUPPORTED_OPERATION);
    const char *s = errstr(code);
    ck_assert_str_eq(s, "MPI_ERR_UNSUPPORTED_OPERATION (unsupported operation): MPI_Foo is not "
                     "implemented in Cadence yet (mpiinfo --unimplemented lists what is missing)");
}
END_TEST

START_TEST(test_long_message_truncated)
{
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    int code = cdn_err(MPI_ERR_OTHER, "%s", big);
    const char *s = errstr(code);
    ck_assert_uint_eq(strlen(s), MPI_MAX_ERROR_STRING - 1);
    ck_assert(strncmp(s, "MPI_ERR_OTHER (other error): xxxx", 33) == 0);
    ck_assert_int_eq(s[strlen(s) - 1], 'x');
}
END_TEST

/* A code's message lives in a ring of 1024; once 1024 later errors have
 * reused its slot, its string falls back to the class text. */
START_TEST(test_overwritten_message_falls_back)
{
    int code = cdn_err(MPI_ERR_TRUNCATE, "MPI_Recv: message of 8 bytes, buffer of 4");
    for (int i = 0; i < 1023; i++)
        cdn_err(MPI_ERR_OTHER, "filler %d", i);
    ck_assert_str_eq(errstr(code), "MPI_ERR_TRUNCATE (message truncated): "
                     "MPI_Recv: message of 8 bytes, buffer of 4");
    for (int i = 0; i < 2; i++)
        cdn_err(MPI_ERR_OTHER, "filler %d", i);
    ck_assert_str_eq(errstr(code), "MPI_ERR_TRUNCATE: message truncated");
    ck_assert_int_eq(cdn_err_class_of(code), MPI_ERR_TRUNCATE);
    /* and the newest code still has its own message, not the old one */
    int last = cdn_err(MPI_ERR_TAG, "newest");
    ck_assert_str_eq(errstr(last), "MPI_ERR_TAG (invalid tag): newest");
}
END_TEST

/* ---- user classes and codes ---- */

START_TEST(test_user_class_and_codes)
{
    ck_assert_int_eq(cdn_err_last_used_code(), MPI_ERR_LASTCODE);
    int cls, code1, code2, code3;
    ck_assert_int_eq(cdn_err_add_class(&cls), MPI_SUCCESS);
    ck_assert_int_gt(cls, MPI_ERR_LASTCODE);
    ck_assert_int_eq(cdn_err_class_of(cls), cls);
    ck_assert_int_eq(cdn_err_last_used_code(), cls);

    ck_assert_int_eq(cdn_err_add_code(cls, &code1), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_code(cls, &code2), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_code(MPI_ERR_TRUNCATE, &code3), MPI_SUCCESS);
    ck_assert_int_gt(code1, MPI_ERR_LASTCODE);
    ck_assert_int_ne(code1, cls);
    ck_assert_int_ne(code1, code2);
    ck_assert_int_ne(code3, code2);
    ck_assert_int_eq(cdn_err_class_of(code1), cls);
    ck_assert_int_eq(cdn_err_class_of(code2), cls);
    ck_assert_int_eq(cdn_err_class_of(code3), MPI_ERR_TRUNCATE);
    int last = cdn_err_last_used_code();
    ck_assert(last >= cls && last >= code1 && last >= code2 && last >= code3);
    ck_assert_int_eq(last, code3);
    /* cdn_err on a user class gives the class back: it has no message slot */
    ck_assert_int_eq(cdn_err(cls, "ignored"), cls);
    /* no string yet: an empty one */
    ck_assert_str_eq(errstr(code1), "");
}
END_TEST

START_TEST(test_user_strings)
{
    int cls, code;
    ck_assert_int_eq(cdn_err_add_class(&cls), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_code(cls, &code), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_string(cls, "my library failed"), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_string(code, "my library: disk full"), MPI_SUCCESS);
    ck_assert_str_eq(errstr(cls), "my library failed");
    ck_assert_str_eq(errstr(code), "my library: disk full");

    ck_assert_int_eq(cdn_err_add_string(code, "replaced"), MPI_SUCCESS);
    ck_assert_str_eq(errstr(code), "replaced");
    ck_assert_str_eq(errstr(cls), "my library failed");

    ck_assert_int_eq(cdn_err_remove_string(code), MPI_SUCCESS);
    ck_assert_str_eq(errstr(code), "");
    ck_assert_int_eq(cdn_err_class_of(code), cls);  /* the code itself stays */

    /* the longest allowed string fits; one more character does not */
    char s[MPI_MAX_ERROR_STRING + 1];
    memset(s, 'a', MPI_MAX_ERROR_STRING - 1);
    s[MPI_MAX_ERROR_STRING - 1] = '\0';
    ck_assert_int_eq(cdn_err_add_string(code, s), MPI_SUCCESS);
    ck_assert_str_eq(errstr(code), s);
    s[MPI_MAX_ERROR_STRING - 1] = 'a';
    s[MPI_MAX_ERROR_STRING] = '\0';
    int rc = cdn_err_add_string(code, s);
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(errstr(rc), "MPI_Add_error_string"));
    ck_assert_uint_eq(strlen(errstr(code)), MPI_MAX_ERROR_STRING - 1);  /* unchanged */
}
END_TEST

START_TEST(test_user_invalid_arguments)
{
    int cls, code, out = 12345;
    ck_assert_int_eq(cdn_err_add_class(&cls), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_code(cls, &code), MPI_SUCCESS);

    /* a code for something that is not a class */
    int rc = cdn_err_add_code(777777, &out);
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(errstr(rc), "MPI_Add_error_code: 777777"));
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_code(code, &out)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_code(MPI_SUCCESS, &out)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_code(54, &out)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_code(-3, &out)), MPI_ERR_ARG);
    ck_assert_int_eq(out, 12345);
    ck_assert_int_eq(cdn_err_last_used_code(), code);  /* nothing was handed out */

    /* predefined classes' strings cannot be changed */
    rc = cdn_err_add_string(MPI_ERR_TRUNCATE, "mine now");
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_str_eq(errstr(MPI_ERR_TRUNCATE), "MPI_ERR_TRUNCATE: message truncated");
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_string(code, NULL)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_string(code + 100, "x")), MPI_ERR_ARG);

    /* removals of the wrong kind of thing */
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_class(MPI_ERR_TRUNCATE)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_class(code)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_code(cls)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_code(MPI_ERR_TRUNCATE)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_string(MPI_ERR_OTHER)), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_string(-1)), MPI_ERR_ARG);
    /* all of that left the class and code alone */
    ck_assert_int_eq(cdn_err_class_of(cls), cls);
    ck_assert_int_eq(cdn_err_class_of(code), cls);
}
END_TEST

START_TEST(test_remove_class_needs_no_codes)
{
    int cls, code;
    ck_assert_int_eq(cdn_err_add_class(&cls), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_code(cls, &code), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_add_string(cls, "class text"), MPI_SUCCESS);

    int rc = cdn_err_remove_class(cls);
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(errstr(rc), "still has error codes"));
    ck_assert_int_eq(cdn_err_class_of(cls), cls);
    ck_assert_str_eq(errstr(cls), "class text");

    ck_assert_int_eq(cdn_err_remove_code(code), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_class_of(code), -1);
    char buf[MPI_MAX_ERROR_STRING];
    ck_assert_int_eq(cdn_err_string(code, buf), -1);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_remove_code(code)), MPI_ERR_ARG);  /* twice */

    ck_assert_int_eq(cdn_err_remove_class(cls), MPI_SUCCESS);
    ck_assert_int_eq(cdn_err_class_of(cls), -1);
    ck_assert_int_eq(cdn_err_string(cls, buf), -1);
    ck_assert_int_eq(cdn_err_class_of(cdn_err_add_code(cls, &code)), MPI_ERR_ARG);
    /* the last used code never goes down */
    ck_assert_int_ge(cdn_err_last_used_code(), code);
}
END_TEST

/* ---- concurrency ---- */

#define NTHREADS 8
#define NITER 2000
static const int thread_class[NTHREADS] = {MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE,
                                           MPI_ERR_TAG, MPI_ERR_COMM, MPI_ERR_RANK,
                                           MPI_ERR_TRUNCATE, MPIX_ERR_REVOKED};
static int codes[NTHREADS][NITER];

static void *raise_many(void *arg)
{
    int id = (int)(long)arg, cls = thread_class[id];
    char buf[MPI_MAX_ERROR_STRING], mine[MPI_MAX_ERROR_STRING], fallback[MPI_MAX_ERROR_STRING];
    snprintf(fallback, sizeof fallback, "%s: ", cdn_err_class_name(cls));
    for (int i = 0; i < NITER; i++) {
        int code = cdn_err(cls, "thread %d error %d", id, i);
        codes[id][i] = code;
        if (cdn_err_class_of(code) != cls || cdn_err_string(code, buf) != 0)
            return (void *)1;
        /* either this code's own message or, if already overwritten, the class text */
        snprintf(mine, sizeof mine, "): thread %d error %d", id, i);
        if (strstr(buf, mine) == NULL && strncmp(buf, fallback, strlen(fallback)) != 0)
            return (void *)2;
    }
    return NULL;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

START_TEST(test_concurrent_cdn_err)
{
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, raise_many, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        ck_assert_int_eq(pthread_join(th[i], &ret), 0);
        ck_assert_msg(ret == NULL, "thread %d saw a wrong class or message (%ld)", i, (long)ret);
    }
    /* afterwards every code still maps to its thread's class ... */
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < NITER; i++)
            ck_assert_int_eq(cdn_err_class_of(codes[t][i]), thread_class[t]);
    /* ... and no two errors were given the same code */
    qsort(codes, NTHREADS * NITER, sizeof(int), cmp_int);
    int *all = &codes[0][0];
    for (int i = 1; i < NTHREADS * NITER; i++)
        ck_assert_int_ne(all[i - 1], all[i]);
}
END_TEST

static void *add_codes(void *arg)
{
    int cls = *(int *)arg;
    int *out = (int *)arg + 1;
    for (int i = 0; i < 200; i++)
        if (cdn_err_add_code(cls, &out[i]) != MPI_SUCCESS)
            return (void *)1;
    return NULL;
}

START_TEST(test_concurrent_add_code)
{
    static int per[4][1 + 200];  /* [0] the class, then the codes made for it */
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        ck_assert_int_eq(cdn_err_add_class(&per[t][0]), MPI_SUCCESS);
    for (int t = 0; t < 4; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, add_codes, per[t]), 0);
    for (int t = 0; t < 4; t++) {
        void *ret;
        ck_assert_int_eq(pthread_join(th[t], &ret), 0);
        ck_assert_ptr_null(ret);
    }
    for (int t = 0; t < 4; t++)
        for (int i = 1; i <= 200; i++)
            ck_assert_int_eq(cdn_err_class_of(per[t][i]), per[t][0]);
    qsort(per, 4 * 201, sizeof(int), cmp_int);
    int *all = &per[0][0];
    for (int i = 1; i < 4 * 201; i++)
        ck_assert_int_ne(all[i - 1], all[i]);
    ck_assert_int_eq(cdn_err_last_used_code(), all[4 * 201 - 1]);
}
END_TEST

static Suite *error_suite(void)
{
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("codes");
    tcase_add_checked_fixture(tc, reset_user_errors, reset_user_errors);
    tcase_add_test(tc, test_code_carries_class_and_message);
    tcase_add_test(tc, test_bare_classes);
    tcase_add_test(tc, test_every_class_named);
    tcase_add_test(tc, test_invalid_codes);
    tcase_add_test(tc, test_unimplemented_names_function);
    tcase_add_test(tc, test_long_message_truncated);
    tcase_add_test(tc, test_overwritten_message_falls_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("user");
    tcase_add_checked_fixture(tc, reset_user_errors, reset_user_errors);
    tcase_add_test(tc, test_user_class_and_codes);
    tcase_add_test(tc, test_user_strings);
    tcase_add_test(tc, test_user_invalid_arguments);
    tcase_add_test(tc, test_remove_class_needs_no_codes);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_add_checked_fixture(tc, reset_user_errors, reset_user_errors);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_concurrent_cdn_err);
    tcase_add_test(tc, test_concurrent_add_code);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(error_suite(), 0);
}
