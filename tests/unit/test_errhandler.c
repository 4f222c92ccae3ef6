/*
 * Unit tests of runtime/errhandler.c: looking up predefined and user error
 * handlers, creating them, invoking them, and their reference counts.  The
 * fatal paths end the process, so they run in a child: Check's exit tests
 * for the exit status, and a fork with a pipe for what is printed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"
#include "run_suite.h"

/* What the user handler saw. */
static int calls;
static MPI_Comm *seen_comm;
static MPI_Comm seen_comm_value;
static int seen_code;

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    seen_comm = comm;
    seen_comm_value = *comm;
    seen_code = *code;
}

static void reset_seen(void)
{
    calls = 0;
    seen_comm = NULL;
    seen_comm_value = MPI_COMM_NULL;
    seen_code = -1;
}

static MPI_Errhandler make_comm_handler(void)
{
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    ck_assert_int_eq(cdn_errh_create(CDN_OBJ_COMM, (void (*)(void))comm_handler, &h,
                                     "MPI_Comm_create_errhandler"), MPI_SUCCESS);
    return h;
}

START_TEST(test_predefined)
{
    struct cdn_errhandler *fatal = cdn_errh_get(MPI_ERRORS_ARE_FATAL);
    struct cdn_errhandler *ret = cdn_errh_get(MPI_ERRORS_RETURN);
    struct cdn_errhandler *abrt = cdn_errh_get(MPI_ERRORS_ABORT);
    ck_assert_ptr_nonnull(fatal);
    ck_assert_ptr_nonnull(ret);
    ck_assert_ptr_nonnull(abrt);
    ck_assert_int_eq(fatal->kind, CDN_ERRH_FATAL);
    ck_assert_int_eq(ret->kind, CDN_ERRH_RETURN);
    ck_assert_int_eq(abrt->kind, CDN_ERRH_ABORT);
    ck_assert_int_eq(fatal->handle, MPI_ERRORS_ARE_FATAL);
    ck_assert_int_eq(ret->handle, MPI_ERRORS_RETURN);
    ck_assert_int_eq(abrt->handle, MPI_ERRORS_ABORT);
}
END_TEST

START_TEST(test_invalid_handles)
{
    static const int bad[] = {MPI_ERRHANDLER_NULL, MPI_COMM_WORLD, MPI_COMM_SELF, 0x54000002,
                              0x54000004, 0x54000005, 0x5400ffff, 0x44000001, 0, -1, 1, 5,
                              CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_ERRHANDLER, 0),
                              CDN_HANDLE_MAKE(CDN_HK_DIRECT, CDN_OBJ_ERRHANDLER, 4096),
                              CDN_HANDLE_MAKE(3, CDN_OBJ_ERRHANDLER, 1)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(cdn_errh_get(bad[i]) == NULL, "0x%x accepted", (unsigned)bad[i]);

    /* random integers: only the three predefined values are handlers */
    unsigned seed = 42;
    for (int i = 0; i < 100000; i++) {
        int h = (int)(((unsigned)rand_r(&seed) << 16) ^ (unsigned)rand_r(&seed));
        if (h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN || h == MPI_ERRORS_ABORT)
            continue;
        ck_assert_msg(cdn_errh_get(h) == NULL, "0x%x accepted", (unsigned)h);
    }
}
END_TEST

START_TEST(test_create_rejects_null)
{
    MPI_Errhandler h = MPI_ERRORS_RETURN;
    char buf[MPI_MAX_ERROR_STRING];
    int rc = cdn_errh_create(CDN_OBJ_COMM, NULL, &h, "MPI_Comm_create_errhandler");
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_string(rc, buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "MPI_Comm_create_errhandler"));
    ck_assert_int_eq(h, MPI_ERRORS_RETURN);  /* untouched */

    rc = cdn_errh_create(CDN_OBJ_COMM, (void (*)(void))comm_handler, NULL, "MPI_Win_create_errhandler");
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ARG);
    ck_assert_int_eq(cdn_err_string(rc, buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "MPI_Win_create_errhandler"));
    ck_assert_int_eq(atomic_load(&cdn_rt.errhandlers.live), 0);  /* nothing left behind */
}
END_TEST

START_TEST(test_user_handler_invoked)
{
    MPI_Errhandler h = make_comm_handler();
    ck_assert_int_eq(CDN_HANDLE_KIND(h), CDN_HK_DIRECT);
    ck_assert_int_eq(CDN_HANDLE_TYPE(h), CDN_OBJ_ERRHANDLER);
    struct cdn_errhandler *eh = cdn_errh_get(h);
    ck_assert_ptr_nonnull(eh);
    ck_assert_int_eq(eh->kind, CDN_ERRH_USER);
    ck_assert_int_eq(eh->objtype, CDN_OBJ_COMM);
    ck_assert_int_eq(eh->handle, h);
    ck_assert_int_eq(atomic_load(&eh->refs), 1);

    MPI_Comm comm = MPI_COMM_WORLD;
    int code = cdn_err(MPI_ERR_RANK, "MPI_Send: rank 7 is not in the communicator");
    reset_seen();
    ck_assert_int_eq(cdn_errh_invoke(eh, CDN_OBJ_COMM, &comm, code), code);
    ck_assert_int_eq(calls, 1);
    ck_assert_ptr_eq(seen_comm, &comm);
    ck_assert_int_eq(seen_comm_value, MPI_COMM_WORLD);
    ck_assert_int_eq(seen_code, code);

    /* a second call sees the second code */
    comm = MPI_COMM_SELF;
    int code2 = cdn_err(MPI_ERR_TAG, "MPI_Recv: tag -9 is negative");
    ck_assert_int_eq(cdn_errh_invoke(eh, CDN_OBJ_COMM, &comm, code2), code2);
    ck_assert_int_eq(calls, 2);
    ck_assert_int_eq(seen_comm_value, MPI_COMM_SELF);
    ck_assert_int_eq(seen_code, code2);

    ck_assert_int_eq(cdn_errh_free(&h), MPI_SUCCESS);
    ck_assert_int_eq(atomic_load(&cdn_rt.errhandlers.live), 0);
}
END_TEST

START_TEST(test_return_handler)
{
    MPI_Errhandler user = make_comm_handler();  /* exists, but must not be called */
    struct cdn_errhandler *ret = cdn_errh_get(MPI_ERRORS_RETURN);
    MPI_Comm comm = MPI_COMM_WORLD;
    int code = cdn_err(MPI_ERR_COUNT, "MPI_Send: count -1 is negative");
    reset_seen();
    ck_assert_int_eq(cdn_errh_invoke(ret, CDN_OBJ_COMM, &comm, code), code);
    ck_assert_int_eq(cdn_errh_invoke(ret, CDN_OBJ_FILE, &comm, MPI_ERR_IO), MPI_ERR_IO);
    ck_assert_int_eq(calls, 0);
    ck_assert_int_eq(comm, MPI_COMM_WORLD);
    ck_assert_int_eq(cdn_errh_free(&user), MPI_SUCCESS);
}
END_TEST

START_TEST(test_refcount_outlives_free)
{
    MPI_Errhandler h = make_comm_handler();
    const MPI_Errhandler saved = h;
    struct cdn_errhandler *eh = cdn_errh_get(h);
    ck_assert_ptr_nonnull(eh);
    cdn_errh_retain(eh);  /* e.g. a communicator using it */
    ck_assert_int_eq(atomic_load(&eh->refs), 2);

    ck_assert_int_eq(cdn_errh_free(&h), MPI_SUCCESS);
    ck_assert_int_eq(h, MPI_ERRHANDLER_NULL);
    /* the communicator's reference keeps it valid, under the same handle */
    ck_assert_ptr_eq(cdn_errh_get(saved), eh);
    ck_assert_int_eq(atomic_load(&eh->refs), 1);
    MPI_Comm comm = MPI_COMM_WORLD;
    reset_seen();
    ck_assert_int_eq(cdn_errh_invoke(eh, CDN_OBJ_COMM, &comm, MPI_ERR_OTHER), MPI_ERR_OTHER);
    ck_assert_int_eq(calls, 1);
    ck_assert_int_eq(seen_code, MPI_ERR_OTHER);

    /* the last reference goes: the handle is dead */
    cdn_errh_release(eh);
    ck_assert_ptr_null(cdn_errh_get(saved));
    ck_assert_int_eq(atomic_load(&cdn_rt.errhandlers.live), 0);
    MPI_Errhandler stale = saved;
    int rc = cdn_errh_free(&stale);
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ERRHANDLER);
    ck_assert_int_eq(stale, saved);
}
END_TEST

START_TEST(test_free_errors_and_predefined)
{
    char buf[MPI_MAX_ERROR_STRING];
    ck_assert_int_eq(cdn_err_class_of(cdn_errh_free(NULL)), MPI_ERR_ARG);
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    int rc = cdn_errh_free(&h);
    ck_assert_int_eq(cdn_err_class_of(rc), MPI_ERR_ERRHANDLER);
    ck_assert_int_eq(cdn_err_string(rc, buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "MPI_Errhandler_free: 0x14000000"));
    h = MPI_COMM_WORLD;
    ck_assert_int_eq(cdn_err_class_of(cdn_errh_free(&h)), MPI_ERR_ERRHANDLER);
    ck_assert_int_eq(h, MPI_COMM_WORLD);

    /* freeing a predefined handler clears the variable, not the handler;
     * retain and release do not count it down either */
    h = MPI_ERRORS_RETURN;
    ck_assert_int_eq(cdn_errh_free(&h), MPI_SUCCESS);
    ck_assert_int_eq(h, MPI_ERRHANDLER_NULL);
    struct cdn_errhandler *ret = cdn_errh_get(MPI_ERRORS_RETURN);
    ck_assert_ptr_nonnull(ret);
    cdn_errh_retain(ret);
    for (int i = 0; i < 3; i++)
        cdn_errh_release(ret);
    ck_assert_ptr_eq(cdn_errh_get(MPI_ERRORS_RETURN), ret);
    ck_assert_int_eq(ret->kind, CDN_ERRH_RETURN);
    ck_assert_int_eq(cdn_errh_invoke(ret, CDN_OBJ_COMM, &h, MPI_ERR_TAG), MPI_ERR_TAG);
}
END_TEST

START_TEST(test_many_handlers_distinct)
{
    enum { N = 50 };
    MPI_Errhandler h[N];
    for (int i = 0; i < N; i++)
        h[i] = make_comm_handler();
    ck_assert_int_eq(atomic_load(&cdn_rt.errhandlers.live), N);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            ck_assert_int_ne(h[i], h[j]);
    for (int i = 0; i < N; i += 2)
        ck_assert_int_eq(cdn_errh_free(&h[i]), MPI_SUCCESS);
    for (int i = 0; i < N; i++) {
        if (i % 2 == 0) {
            ck_assert_int_eq(h[i], MPI_ERRHANDLER_NULL);
        } else {
            ck_assert_ptr_nonnull(cdn_errh_get(h[i]));
            ck_assert_int_eq(cdn_errh_get(h[i])->handle, h[i]);
            ck_assert_int_eq(cdn_errh_free(&h[i]), MPI_SUCCESS);
        }
    }
    ck_assert_int_eq(atomic_load(&cdn_rt.errhandlers.live), 0);
}
END_TEST

/* ---- fatal paths: each exits the (forked) test process ---- */

START_TEST(test_fatal_exits_with_class)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    cdn_errh_invoke(cdn_errh_get(MPI_ERRORS_ARE_FATAL), CDN_OBJ_COMM, &comm,
                    cdn_err_unimplemented("MPI_Foo"));
    ck_abort_msg("MPI_ERRORS_ARE_FATAL returned");
}
END_TEST

START_TEST(test_abort_exits_with_class)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    cdn_errh_invoke(cdn_errh_get(MPI_ERRORS_ABORT), CDN_OBJ_COMM, &comm,
                    cdn_err(MPI_ERR_TRUNCATE, "MPI_Recv: truncated"));
    ck_abort_msg("MPI_ERRORS_ABORT returned");
}
END_TEST

/* A handler made for windows, raised on a communicator, is treated as fatal. */
START_TEST(test_wrong_object_kind_is_fatal)
{
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    ck_assert_int_eq(cdn_errh_create(CDN_OBJ_WIN, (void (*)(void))comm_handler, &h,
                                     "MPI_Win_create_errhandler"), MPI_SUCCESS);
    MPI_Comm comm = MPI_COMM_WORLD;
    cdn_errh_invoke(cdn_errh_get(h), CDN_OBJ_COMM, &comm, cdn_err(MPI_ERR_RANK, "bad rank"));
    ck_abort_msg("a window handler was run for a communicator");
}
END_TEST

/* Run invoke(kind, code) in a child with stderr in a pipe; returns the exit status. */
static int run_fatal(MPI_Errhandler which, int code, char *out, size_t outsize)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        MPI_Comm comm = MPI_COMM_WORLD;
        cdn_errh_invoke(cdn_errh_get(which), CDN_OBJ_COMM, &comm, code);
        _exit(200);  /* invoke returned: the parent sees 200 */
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < outsize - 1 && (r = read(fds[0], out + n, outsize - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

START_TEST(test_fatal_message)
{
    char out[4096];
    int st = run_fatal(MPI_ERRORS_ARE_FATAL, cdn_err_unimplemented("MPI_Foo"), out, sizeof out);
    ck_assert_int_eq(st, MPI_ERR_UNSUPPORTED_OPERATION);
    ck_assert_msg(strstr(out, "MPI_Foo is not implemented") != NULL, "stderr: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "MPI_ERR_UNSUPPORTED_OPERATION"));
    ck_assert_ptr_nonnull(strstr(out, "rank 0"));

    st = run_fatal(MPI_ERRORS_ABORT, cdn_err(MPI_ERR_COUNT, "MPI_Bcast: count -2 is negative"),
                   out, sizeof out);
    ck_assert_int_eq(st, MPI_ERR_COUNT);
    ck_assert_msg(strstr(out, "MPI_Bcast: count -2 is negative") != NULL, "stderr: %s", out);

    /* a code that is no code at all still ends the job, with status 1 */
    st = run_fatal(MPI_ERRORS_ARE_FATAL, -5, out, sizeof out);
    ck_assert_int_eq(st, 1);
    ck_assert_msg(strstr(out, "error code -5") != NULL, "stderr: %s", out);
}
END_TEST

/* CADENCE_INITIAL_ERRHANDLER picks the handler used before MPI_Init. */
START_TEST(test_initial_handler_from_env)
{
    static const struct { const char *value; enum cdn_errh_kind kind; } cases[] = {
        {NULL, CDN_ERRH_FATAL}, {"return", CDN_ERRH_RETURN}, {"mpi_errors_return", CDN_ERRH_RETURN},
        {"abort", CDN_ERRH_ABORT}, {"fatal", CDN_ERRH_FATAL}, {"", CDN_ERRH_FATAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].value)
            setenv("CADENCE_INITIAL_ERRHANDLER", cases[i].value, 1);
        else
            unsetenv("CADENCE_INITIAL_ERRHANDLER");
        cdn_errh_init_initial();
        ck_assert_ptr_nonnull(cdn_errh_default());
        ck_assert_msg(cdn_errh_default()->kind == cases[i].kind, "value %s", cases[i].value);
    }
    unsetenv("CADENCE_INITIAL_ERRHANDLER");
    cdn_errh_init_initial();
}
END_TEST

static Suite *errhandler_suite(void)
{
    Suite *s = suite_create("errhandler");
    TCase *tc = tcase_create("handlers");
    tcase_add_test(tc, test_predefined);
    tcase_add_test(tc, test_invalid_handles);
    tcase_add_test(tc, test_create_rejects_null);
    tcase_add_test(tc, test_user_handler_invoked);
    tcase_add_test(tc, test_return_handler);
    tcase_add_test(tc, test_refcount_outlives_free);
    tcase_add_test(tc, test_free_errors_and_predefined);
    tcase_add_test(tc, test_many_handlers_distinct);
    tcase_add_test(tc, test_initial_handler_from_env);
    suite_add_tcase(s, tc);

    tc = tcase_create("fatal");
    tcase_add_exit_test(tc, test_fatal_exits_with_class, MPI_ERR_UNSUPPORTED_OPERATION);
    tcase_add_exit_test(tc, test_abort_exits_with_class, MPI_ERR_TRUNCATE);
    tcase_add_exit_test(tc, test_wrong_object_kind_is_fatal, MPI_ERR_RANK);
    tcase_add_test(tc, test_fatal_message);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(errhandler_suite(), 1);
}
