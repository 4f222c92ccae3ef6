/*
 * The ABI probe: one program, compiled once against MPICH's mpi.h and once
 * against Cadence's, both run against Cadence's library.  It prints one fact
 * per line ("name value"), each a value that comes from the header the
 * program was compiled with (type sizes, struct layout, handle values) or
 * from what the library does with those values (results of calls made with
 * predefined handles, error classes coming back through error handlers).
 * run_abi_test.sh diffs the two outputs: a header that disagrees with the
 * library, or with MPICH, shows up as a differing line.
 *
 * Nothing printed may legitimately differ between two builds: addresses,
 * host names and times appear only as booleans ("wtime_monotonic 1").
 *
 * The probe also checks what it can on its own (a field at MPICH's offset,
 * a class equal to the header's constant); a failed check goes to stderr and
 * makes the exit status 1, so a single build cannot pass by agreeing with an
 * equally wrong twin.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if MPI_VERSION < 4 || (MPI_VERSION == 4 && MPI_SUBVERSION < 1)
/* MPI-4.1 functions that MPICH 4.0's header and libmpich.so do not have.
 * The MPICH-built probe cannot link against them, so it looks them up at run
 * time in the library it loaded (Cadence's libmpich.so.12) and calls them
 * with the MPI-4.1 signatures, as a program built by a newer MPICH would. */
#include <dlfcn.h>
#include <stdlib.h>

static void *mpi41_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p == NULL) {
        fprintf(stderr, "FAIL: the MPI library exports no %s\n", name);
        exit(1);
    }
    return p;
}

#define MPI41_FUNCTION(name, params, args, ...)                         \
    static int name params                                              \
    {                                                                   \
        int (*fn)(__VA_ARGS__);                                         \
        void *p = mpi41_symbol(#name);                                  \
        memcpy(&fn, &p, sizeof fn);                                     \
        return fn args;                                                 \
    }

MPI41_FUNCTION(MPI_Status_get_source, (MPI_Status *s, int *v), (s, v), MPI_Status *, int *)
MPI41_FUNCTION(MPI_Status_get_tag, (MPI_Status *s, int *v), (s, v), MPI_Status *, int *)
MPI41_FUNCTION(MPI_Status_get_error, (MPI_Status *s, int *v), (s, v), MPI_Status *, int *)
MPI41_FUNCTION(MPI_Status_set_source, (MPI_Status *s, int v), (s, v), MPI_Status *, int)
MPI41_FUNCTION(MPI_Status_set_tag, (MPI_Status *s, int v), (s, v), MPI_Status *, int)
MPI41_FUNCTION(MPI_Status_set_error, (MPI_Status *s, int v), (s, v), MPI_Status *, int)
MPI41_FUNCTION(MPI_Remove_error_class, (int v), (v), int)
MPI41_FUNCTION(MPI_Remove_error_code, (int v), (v), int)
MPI41_FUNCTION(MPI_Remove_error_string, (int v), (v), int)
#endif

static int failures;

#define FACT(name, fmt, ...) printf("%s " fmt "\n", name, __VA_ARGS__)

#define EXPECT(cond, ...)                                               \
    do {                                                                \
        if (!(cond)) {                                                  \
            failures++;                                                 \
            fprintf(stderr, "FAIL abi_probe.c:%d: ", __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
        }                                                               \
    } while (0)

/* A call that must succeed. */
#define CALL(call)                                                      \
    do {                                                                \
        int rc_ = (call);                                               \
        EXPECT(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);       \
    } while (0)

static int class_of(int code)
{
    int cls = -1;
    CALL(MPI_Error_class(code, &cls));
    return cls;
}

/* ---- layout: sizes and offsets fixed by the MPICH ABI on x86_64 ---- */

#define SIZE_FACT(type, expected)                                       \
    do {                                                                \
        FACT("sizeof_" #type, "%zu", sizeof(type));                     \
        EXPECT(sizeof(type) == (expected), "sizeof(" #type ") is %zu, MPICH's is %zu", \
               sizeof(type), (size_t)(expected));                       \
    } while (0)

#define OFFSET_FACT(field, expected)                                    \
    do {                                                                \
        FACT("offsetof_MPI_Status." #field, "%zu", offsetof(MPI_Status, field)); \
        EXPECT(offsetof(MPI_Status, field) == (expected),               \
               "MPI_Status." #field " at %zu, MPICH's at %zu",          \
               offsetof(MPI_Status, field), (size_t)(expected));        \
    } while (0)

#define SIGNED_FACT(type)                                               \
    do {                                                                \
        FACT("signed_" #type, "%d", (type)-1 < (type)0);                \
        EXPECT((type)-1 < (type)0, #type " is unsigned");               \
    } while (0)

static void probe_layout(void)
{
    SIZE_FACT(MPI_Status, 5 * sizeof(int));
    FACT("alignof_MPI_Status", "%zu", _Alignof(MPI_Status));
    OFFSET_FACT(count_lo, 0);
    OFFSET_FACT(count_hi_and_cancelled, 4);
    OFFSET_FACT(MPI_SOURCE, 8);
    OFFSET_FACT(MPI_TAG, 12);
    OFFSET_FACT(MPI_ERROR, 16);
    SIZE_FACT(MPI_F08_status, 5 * sizeof(MPI_Fint));

    SIZE_FACT(MPI_Aint, sizeof(long));
    SIZE_FACT(MPI_Count, sizeof(long));
    SIZE_FACT(MPI_Offset, sizeof(long));
    SIZE_FACT(MPI_Fint, sizeof(int));
    SIGNED_FACT(MPI_Aint);
    SIGNED_FACT(MPI_Count);
    SIGNED_FACT(MPI_Offset);
    SIGNED_FACT(MPI_Fint);

    /* Integer handles, except MPI_File and the tool handles (pointers). */
    SIZE_FACT(MPI_Comm, sizeof(int));
    SIZE_FACT(MPI_Group, sizeof(int));
    SIZE_FACT(MPI_Datatype, sizeof(int));
    SIZE_FACT(MPI_Op, sizeof(int));
    SIZE_FACT(MPI_Errhandler, sizeof(int));
    SIZE_FACT(MPI_Request, sizeof(int));
    SIZE_FACT(MPI_Message, sizeof(int));
    SIZE_FACT(MPI_Win, sizeof(int));
    SIZE_FACT(MPI_Info, sizeof(int));
    SIZE_FACT(MPI_Session, sizeof(int));
    SIZE_FACT(MPI_File, sizeof(void *));
    SIZE_FACT(MPI_T_enum, sizeof(void *));
    SIZE_FACT(MPI_T_cvar_handle, sizeof(void *));
    SIZE_FACT(MPI_T_pvar_handle, sizeof(void *));
    SIZE_FACT(MPI_T_pvar_session, sizeof(void *));
}

/* ---- start-up, environment and communicator queries ---- */

static void probe_init(int *argc, char ***argv)
{
    int flag = -1;
    CALL(MPI_Initialized(&flag));
    FACT("initialized_before_init", "%d", flag);
    EXPECT(flag == 0, "MPI_Initialized is %d before MPI_Init", flag);

    int provided = -1;
    CALL(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    FACT("init_thread_provided", "%d", provided);
    EXPECT(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
           "provided %d is not a thread level", provided);
    int queried = -1;
    CALL(MPI_Query_thread(&queried));
    FACT("query_thread_matches", "%d", queried == provided);
    EXPECT(queried == provided, "MPI_Query_thread says %d, Init_thread said %d", queried,
           provided);
    CALL(MPI_Is_thread_main(&flag));
    FACT("is_thread_main", "%d", flag);
    CALL(MPI_Initialized(&flag));
    FACT("initialized_after_init", "%d", flag);
    EXPECT(flag == 1, "MPI_Initialized is %d after MPI_Init", flag);
    CALL(MPI_Finalized(&flag));
    FACT("finalized_before_finalize", "%d", flag);
}

static void probe_comm(MPI_Comm comm, const char *label, const char *expected_name)
{
    char key[64];
    int size = -1, rank = -1, len = -1;
    char name[MPI_MAX_OBJECT_NAME];

    CALL(MPI_Comm_size(comm, &size));
    CALL(MPI_Comm_rank(comm, &rank));
    snprintf(key, sizeof key, "%s_size", label);
    FACT(key, "%d", size);
    snprintf(key, sizeof key, "%s_rank", label);
    FACT(key, "%d", rank);
    EXPECT(size >= 1 && rank >= 0 && rank < size, "%s: rank %d of size %d", label, rank, size);

    CALL(MPI_Comm_get_name(comm, name, &len));
    snprintf(key, sizeof key, "%s_name", label);
    FACT(key, "%s", name);
    EXPECT(strcmp(name, expected_name) == 0, "%s is named \"%s\"", label, name);
    EXPECT(len == (int)strlen(name), "%s: name length %d for \"%s\"", label, len, name);
}

static void probe_comms(void)
{
    probe_comm(MPI_COMM_WORLD, "comm_world", "MPI_COMM_WORLD");
    probe_comm(MPI_COMM_SELF, "comm_self", "MPI_COMM_SELF");
    int self_size = -1;
    CALL(MPI_Comm_size(MPI_COMM_SELF, &self_size));
    EXPECT(self_size == 1, "MPI_COMM_SELF has size %d", self_size);

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CALL(MPI_Comm_set_name(MPI_COMM_SELF, "abi probe self"));
    CALL(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    FACT("comm_self_renamed", "%s", name);
    EXPECT(strcmp(name, "abi probe self") == 0, "set_name then get_name gave \"%s\"", name);
    CALL(MPI_Comm_set_name(MPI_COMM_SELF, "MPI_COMM_SELF"));

    /* The default handler on WORLD, as a handle the header names. */
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CALL(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    FACT("comm_world_errhandler", "0x%x", (unsigned)eh);
    FACT("comm_world_errhandler_is_fatal", "%d", eh == MPI_ERRORS_ARE_FATAL);
    EXPECT(eh == MPI_ERRORS_ARE_FATAL, "WORLD's handler is 0x%x, MPI_ERRORS_ARE_FATAL is 0x%x",
           (unsigned)eh, (unsigned)MPI_ERRORS_ARE_FATAL);
    CALL(MPI_Errhandler_free(&eh));
    FACT("errhandler_free_nulls_handle", "%d", eh == MPI_ERRHANDLER_NULL);
    EXPECT(eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free left 0x%x", (unsigned)eh);
}

static void probe_environment(void)
{
    int version = -1, subversion = -1;
    CALL(MPI_Get_version(&version, &subversion));
    FACT("get_version", "%d.%d", version, subversion);
    EXPECT(version >= 4, "MPI_Get_version says %d.%d", version, subversion);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    CALL(MPI_Get_library_version(lib, &len));
    EXPECT(len == (int)strlen(lib), "library version length %d for %zu characters", len,
           strlen(lib));
    char first[64] = "";
    sscanf(lib, "%63s", first);
    /* "Cadence" in both builds proves the MPICH-built binary loaded Cadence. */
    FACT("library_version_first_word", "%s", first);
    EXPECT(strcmp(first, "Cadence") == 0, "library version starts \"%s\"", first);

    char host[MPI_MAX_PROCESSOR_NAME];
    len = -1;
    CALL(MPI_Get_processor_name(host, &len));
    FACT("processor_name_nonempty", "%d", len > 0 && len == (int)strlen(host));
    EXPECT(len > 0 && len == (int)strlen(host), "processor name length %d", len);

    double t0 = MPI_Wtime(), t1 = MPI_Wtime(), tick = MPI_Wtick();
    FACT("wtime_monotonic", "%d", t1 >= t0 && t0 > 0.0);
    FACT("wtick_sane", "%d", tick > 0.0 && tick < 1.0);
    EXPECT(t1 >= t0 && t0 > 0.0, "MPI_Wtime went from %g to %g", t0, t1);
    EXPECT(tick > 0.0 && tick < 1.0, "MPI_Wtick is %g", tick);
}

/* ---- errors through the ABI ---- */

static int handler_calls;
static MPI_Comm handler_comm;
static int handler_code;

static void user_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    handler_code = *code;
}

static void probe_errors_return(void)
{
    /* An invalid communicator is raised on MPI_COMM_SELF, other errors on
     * the communicator of the call: both return. */
    CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CALL(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CALL(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    FACT("comm_world_errhandler_after_set", "0x%x", (unsigned)eh);
    EXPECT(eh == MPI_ERRORS_RETURN, "WORLD's handler is 0x%x after setting MPI_ERRORS_RETURN",
           (unsigned)eh);
    CALL(MPI_Errhandler_free(&eh));

    int rank = -7;
    int rc = MPI_Comm_rank(MPI_COMM_NULL, &rank);
    int cls = rc == MPI_SUCCESS ? MPI_SUCCESS : class_of(rc);
    FACT("comm_null_rank_class", "%d", cls);
    FACT("comm_null_rank_is_err_comm", "%d", cls == MPI_ERR_COMM);
    EXPECT(cls == MPI_ERR_COMM, "MPI_Comm_rank(MPI_COMM_NULL) gave class %d, MPI_ERR_COMM is %d",
           cls, MPI_ERR_COMM);
    FACT("comm_null_rank_untouched", "%d", rank == -7);

    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    CALL(MPI_Error_string(rc, text, &len));
    FACT("comm_null_message_names_call", "%d", strstr(text, "MPI_Comm_rank") != NULL);
    EXPECT(len == (int)strlen(text) && strstr(text, "MPI_Comm_rank"), "message: %s", text);

    /* A function declared but not implemented yet.  Once MPI_Barrier lands
     * it succeeds on a singleton, which the probe accepts too. */
    rc = MPI_Barrier(MPI_COMM_WORLD);
    cls = rc == MPI_SUCCESS ? MPI_SUCCESS : class_of(rc);
    FACT("barrier_class", "%d", cls);
    EXPECT(cls == MPI_SUCCESS || cls == MPI_ERR_UNSUPPORTED_OPERATION,
           "MPI_Barrier gave class %d, MPI_ERR_UNSUPPORTED_OPERATION is %d", cls,
           MPI_ERR_UNSUPPORTED_OPERATION);

    cls = -1;
    CALL(MPI_Error_class(MPI_ERR_TRUNCATE, &cls));
    FACT("predefined_class_maps_to_itself", "%d", cls == MPI_ERR_TRUNCATE);
    EXPECT(cls == MPI_ERR_TRUNCATE, "class of MPI_ERR_TRUNCATE is %d", cls);
}

static void probe_user_errors(void)
{
    int ucls = -1, ucode = -1, len = -1;
    char text[MPI_MAX_ERROR_STRING];
    CALL(MPI_Add_error_class(&ucls));
    CALL(MPI_Add_error_code(ucls, &ucode));
    CALL(MPI_Add_error_string(ucode, "abi probe: a user error code"));
    FACT("user_error_class", "%d", ucls);
    FACT("user_error_code", "%d", ucode);
    FACT("user_code_class_round_trip", "%d", class_of(ucode) == ucls);
    EXPECT(class_of(ucode) == ucls, "class of the user code is %d, not %d", class_of(ucode), ucls);
    CALL(MPI_Error_string(ucode, text, &len));
    FACT("user_code_string", "%s", text);
    EXPECT(strcmp(text, "abi probe: a user error code") == 0 && len == (int)strlen(text),
           "user code string \"%s\" (%d)", text, len);

    /* A user handler on WORLD, called by MPI_Comm_call_errhandler and by a
     * failing call. */
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CALL(MPI_Comm_create_errhandler(user_handler, &eh));
    FACT("user_errhandler_is_new", "%d",
         eh != MPI_ERRHANDLER_NULL && eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_RETURN);
    CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));

    CALL(MPI_Comm_call_errhandler(MPI_COMM_WORLD, ucode));
    FACT("call_errhandler_calls", "%d", handler_calls);
    FACT("call_errhandler_comm", "0x%x", (unsigned)handler_comm);
    FACT("call_errhandler_comm_is_world", "%d", handler_comm == MPI_COMM_WORLD);
    FACT("call_errhandler_code_is_user_code", "%d", handler_code == ucode);
    EXPECT(handler_calls == 1 && handler_comm == MPI_COMM_WORLD && handler_code == ucode,
           "handler saw %d call(s), comm 0x%x, code %d", handler_calls,
           (unsigned)handler_comm, handler_code);

    int rc = MPI_Comm_size(MPI_COMM_WORLD, NULL);
    int cls = rc == MPI_SUCCESS ? MPI_SUCCESS : class_of(rc);
    FACT("failing_call_handler_calls", "%d", handler_calls);
    FACT("failing_call_handler_class", "%d", class_of(handler_code));
    FACT("failing_call_returns_handler_code", "%d", rc == handler_code);
    EXPECT(handler_calls == 2 && cls == MPI_ERR_ARG && rc == handler_code,
           "Comm_size(WORLD, NULL): %d handler call(s), class %d, rc %d, handler code %d",
           handler_calls, cls, rc, handler_code);

    CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CALL(MPI_Errhandler_free(&eh));
    FACT("user_errhandler_freed", "%d", eh == MPI_ERRHANDLER_NULL);

    CALL(MPI_Remove_error_string(ucode));
    CALL(MPI_Remove_error_code(ucode));
    CALL(MPI_Remove_error_class(ucls));
    int after = -1;
    rc = MPI_Error_class(ucode, &after);
    FACT("removed_code_rejected", "%d", rc != MPI_SUCCESS);
    EXPECT(rc != MPI_SUCCESS, "MPI_Error_class accepted removed code %d (class %d)", ucode, after);
}

/* ---- status accessors and the raw fields they write ---- */

static void probe_status(void)
{
    MPI_Status st;
    memset(&st, 0, sizeof st);
    CALL(MPI_Status_set_source(&st, 3));
    CALL(MPI_Status_set_tag(&st, 42));
    CALL(MPI_Status_set_error(&st, MPI_ERR_TRUNCATE));
    FACT("status_raw_source", "%d", st.MPI_SOURCE);
    FACT("status_raw_tag", "%d", st.MPI_TAG);
    FACT("status_raw_error", "%d", st.MPI_ERROR);
    EXPECT(st.MPI_SOURCE == 3 && st.MPI_TAG == 42 && st.MPI_ERROR == MPI_ERR_TRUNCATE,
           "status fields %d %d %d", st.MPI_SOURCE, st.MPI_TAG, st.MPI_ERROR);

    int source = -1, tag = -1, error = -1;
    CALL(MPI_Status_get_source(&st, &source));
    CALL(MPI_Status_get_tag(&st, &tag));
    CALL(MPI_Status_get_error(&st, &error));
    FACT("status_get", "%d %d %d", source, tag, error);
    EXPECT(source == 3 && tag == 42 && error == MPI_ERR_TRUNCATE, "status getters %d %d %d",
           source, tag, error);

    /* MPICH keeps the cancelled flag in bit 0 of count_hi_and_cancelled. */
    CALL(MPI_Status_set_cancelled(&st, 1));
    FACT("status_cancelled_raw", "%d", st.count_hi_and_cancelled);
    FACT("status_cancelled_count_lo", "%d", st.count_lo);
    EXPECT(st.count_hi_and_cancelled == 1 && st.count_lo == 0,
           "set_cancelled(1) left count_hi_and_cancelled 0x%x, count_lo %d",
           (unsigned)st.count_hi_and_cancelled, st.count_lo);
    CALL(MPI_Status_set_cancelled(&st, 0));
    FACT("status_uncancelled_raw", "%d", st.count_hi_and_cancelled);
    EXPECT(st.count_hi_and_cancelled == 0, "set_cancelled(0) left 0x%x",
           (unsigned)st.count_hi_and_cancelled);

    MPI_Fint f[MPI_F_STATUS_SIZE];
    memset(f, 0xff, sizeof f);
    CALL(MPI_Status_c2f(&st, f));
    FACT("status_c2f", "%d %d %d", (int)f[MPI_F_SOURCE], (int)f[MPI_F_TAG], (int)f[MPI_F_ERROR]);
    EXPECT(f[MPI_F_SOURCE] == 3 && f[MPI_F_TAG] == 42 && f[MPI_F_ERROR] == MPI_ERR_TRUNCATE,
           "Fortran status %d %d %d", (int)f[MPI_F_SOURCE], (int)f[MPI_F_TAG],
           (int)f[MPI_F_ERROR]);
}

/* ---- MPI_Aint arithmetic and handle conversions ---- */

static void probe_conversions(void)
{
    static char buf[64];
    MPI_Aint base = (MPI_Aint)(intptr_t)buf;
    FACT("aint_add_address", "%d", MPI_Aint_add(base, 16) == (MPI_Aint)(intptr_t)(buf + 16));
    FACT("aint_diff_address", "%d", MPI_Aint_diff((MPI_Aint)(intptr_t)(buf + 40), base) == 40);
    FACT("aint_add", "%ld", (long)MPI_Aint_add(1000, 24));
    FACT("aint_diff", "%ld", (long)MPI_Aint_diff(1000, 1024));
    EXPECT(MPI_Aint_add(1000, 24) == 1024 && MPI_Aint_diff(1000, 1024) == -24,
           "MPI_Aint_add/diff are wrong");

    /* MPICH's header makes most of these macros; the File ones are always
     * library calls. */
    FACT("comm_c2f_world", "%d", (int)MPI_Comm_c2f(MPI_COMM_WORLD));
    FACT("comm_f2c_round_trip", "%d", MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_SELF)) == MPI_COMM_SELF);
    FACT("type_c2f_int", "%d", (int)MPI_Type_c2f(MPI_INT));
    FACT("type_f2c_round_trip", "%d", MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);
    FACT("op_c2f_sum", "%d", (int)MPI_Op_c2f(MPI_SUM));
    FACT("errhandler_c2f_return", "%d", (int)MPI_Errhandler_c2f(MPI_ERRORS_RETURN));
    FACT("info_c2f_null", "%d", (int)MPI_Info_c2f(MPI_INFO_NULL));
    FACT("group_c2f_empty", "%d", (int)MPI_Group_c2f(MPI_GROUP_EMPTY));
    FACT("request_c2f_null", "%d", (int)MPI_Request_c2f(MPI_REQUEST_NULL));
    FACT("win_c2f_null", "%d", (int)MPI_Win_c2f(MPI_WIN_NULL));
    FACT("message_c2f_no_proc", "%d", (int)MPI_Message_c2f(MPI_MESSAGE_NO_PROC));
    FACT("session_c2f_null", "%d", (int)MPI_Session_c2f(MPI_SESSION_NULL));
    FACT("file_c2f_null", "%d", (int)MPI_File_c2f(MPI_FILE_NULL));
    FACT("file_f2c_null", "%d", MPI_File_f2c(0) == MPI_FILE_NULL);
    EXPECT(MPI_Comm_c2f(MPI_COMM_WORLD) == (MPI_Fint)MPI_COMM_WORLD &&
           MPI_Type_c2f(MPI_INT) == (MPI_Fint)MPI_INT && MPI_File_c2f(MPI_FILE_NULL) == 0 &&
           MPI_File_f2c(0) == MPI_FILE_NULL,
           "handle conversions are not the MPICH identity");
}

int main(int argc, char **argv)
{
    probe_layout();
    probe_init(&argc, &argv);
    probe_comms();
    probe_environment();
    probe_errors_return();
    probe_user_errors();
    probe_status();
    probe_conversions();

    CALL(MPI_Finalize());
    int flag = -1;
    CALL(MPI_Finalized(&flag));
    FACT("finalized_after_finalize", "%d", flag);
    EXPECT(flag == 1, "MPI_Finalized is %d after MPI_Finalize", flag);

    FACT("probe_failures", "%d", failures);
    return failures != 0;
}
