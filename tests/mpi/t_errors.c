/*
 * Error classes, codes, strings and handlers on communicators, as a user
 * sees them: MPI_ERRORS_RETURN hands back codes whose class and text are
 * right, user handlers are called with the communicator and the code, an
 * unimplemented function says so by name, user classes and codes work.
 */
#include <mpi.h>
#include <string.h>

#include "check_mpi.h"

static int calls;
static MPI_Comm seen_comm;
static int seen_code;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    seen_comm = *comm;
    seen_code = *code;
}

static int class_of(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

static void error_text(int code, char *text)
{
    int len = -1;
    MPI_Error_string(code, text, &len);
    CHECK(len == (int)strlen(text), "Error_string length %d matches", len);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    char text[MPI_MAX_ERROR_STRING];

    /* The default handler on both predefined communicators is fatal. */
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "world starts with MPI_ERRORS_ARE_FATAL (0x%x)", eh);
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free sets the handle to NULL");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* An invalid communicator: MPI_ERR_COMM, and the text says which.  It is
     * raised on MPI_COMM_WORLD's handler (SELF's is still fatal here). */
    int rank, rc = MPI_Comm_rank(MPI_COMM_NULL, &rank);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_COMM, "Comm_rank(NULL) is MPI_ERR_COMM");
    error_text(rc, text);
    CHECK(strstr(text, "MPI_Comm_rank") && strstr(text, "MPI_COMM_NULL"),
          "message names the call and the argument: %s", text);
    rc = MPI_Comm_size(MPI_COMM_WORLD, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "NULL size pointer is MPI_ERR_ARG");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* A declared but unimplemented function names itself. */
    MPI_Comm ic;
    rc = MPI_Comm_join(-1, &ic);  /* process management is not there yet */
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "Comm_join is unsupported (class %d)",
          class_of(rc));
    error_text(rc, text);
    CHECK(strstr(text, "MPI_Comm_join") && strstr(text, "not implemented"), "text: %s", text);
    /* Calls with no object go to MPI_COMM_SELF's handler (RETURN here). */
    rc = MPI_Info_create(NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "Info_create(NULL) returns MPI_ERR_ARG on SELF's handler");
    /* File errors default to MPI_ERRORS_RETURN even with fatal elsewhere. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    rc = MPI_File_delete("nothing", MPI_INFO_NULL);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "file errors return");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* Every predefined class has a text and maps to itself. */
    int classes[] = {MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_TRUNCATE, MPI_ERR_OTHER,
                     MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_SESSION, MPI_T_ERR_NOT_SUPPORTED,
                     MPI_ERR_VALUE_TOO_LARGE, MPI_ERR_ERRHANDLER};
    for (unsigned i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        CHECK(class_of(classes[i]) == classes[i], "class %d maps to itself", classes[i]);
        error_text(classes[i], text);
        CHECK(strlen(text) > 0, "class %d has a text", classes[i]);
    }
    error_text(MPI_ERR_TRUNCATE, text);
    CHECK(strstr(text, "MPI_ERR_TRUNCATE") != NULL, "text of MPI_ERR_TRUNCATE: %s", text);
    rc = MPI_Error_class(-5, &rank);
    CHECK(class_of(rc) == MPI_ERR_ARG, "an invalid code is MPI_ERR_ARG");

    /* User handler: called with the communicator and the code. */
    MPI_Errhandler mine;
    CHECK(MPI_Comm_create_errhandler(handler, &mine) == MPI_SUCCESS, "create handler");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine);
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == mine, "get returns the user handler");
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&mine);  /* still set on WORLD: must keep working */
    CHECK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_TAG) == MPI_SUCCESS, "call returns");
    CHECK(calls == 1 && seen_comm == MPI_COMM_WORLD && seen_code == MPI_ERR_TAG,
          "handler saw world and MPI_ERR_TAG (calls %d, code %d)", calls, seen_code);
    rc = MPI_Comm_rank(MPI_COMM_WORLD, NULL);
    CHECK(calls == 2 && class_of(seen_code) == MPI_ERR_ARG && rc == seen_code,
          "a real error reaches the user handler and is returned");
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, 12345) != MPI_SUCCESS, "bad handle refused");

    /* Handlers made for windows cannot go on communicators. */
    MPI_Errhandler winh;
    MPI_Win_create_errhandler((MPI_Win_errhandler_function *)handler, &winh);
    rc = MPI_Comm_set_errhandler(MPI_COMM_SELF, winh);
    CHECK(class_of(rc) == MPI_ERR_ERRHANDLER, "window handler refused on a communicator");
    MPI_Errhandler_free(&winh);

    /* User classes, codes and strings. */
    int ucls, ucode;
    CHECK(MPI_Add_error_class(&ucls) == MPI_SUCCESS && ucls > MPI_ERR_LASTCODE, "user class");
    CHECK(MPI_Add_error_code(ucls, &ucode) == MPI_SUCCESS && ucode > MPI_ERR_LASTCODE, "user code");
    CHECK(class_of(ucode) == ucls, "user code belongs to its class");
    MPI_Add_error_string(ucode, "the frobnicator jammed");
    error_text(ucode, text);
    CHECK(strcmp(text, "the frobnicator jammed") == 0, "user string: %s", text);
    rc = MPI_Add_error_string(MPI_ERR_TAG, "no");
    CHECK(class_of(rc) == MPI_ERR_ARG, "predefined strings cannot change");
    rc = MPI_Remove_error_class(ucls);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a class with codes cannot be removed");
    CHECK(MPI_Remove_error_string(ucode) == MPI_SUCCESS, "remove string");
    CHECK(MPI_Remove_error_code(ucode) == MPI_SUCCESS, "remove code");
    CHECK(MPI_Remove_error_class(ucls) == MPI_SUCCESS, "remove class");
    rc = MPI_Error_class(ucode, &rank);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a removed code is no longer valid");

    /* Removed classes and codes are reused: 10000 add/remove cycles (more
     * than the 4096 values there are) keep working, and each value is
     * whole again (class, string) when handed out a second time. */
    int cycle_fail = 0;
    for (int i = 0; i < 10000 && !cycle_fail; i++) {
        char want[64];
        snprintf(want, sizeof want, "cycle %d", i);
        int c, k;
        if (MPI_Add_error_class(&c) != MPI_SUCCESS || MPI_Add_error_code(c, &k) != MPI_SUCCESS ||
            MPI_Add_error_string(k, want) != MPI_SUCCESS) {
            cycle_fail = i + 1;
            break;
        }
        error_text(k, text);
        int kc = -1;
        MPI_Error_class(k, &kc);
        if (strcmp(text, want) != 0 || kc != c)
            cycle_fail = i + 1;
        if (MPI_Remove_error_code(k) != MPI_SUCCESS || MPI_Remove_error_class(c) != MPI_SUCCESS)
            cycle_fail = i + 1;
    }
    CHECK(cycle_fail == 0, "add/remove cycle %d failed", cycle_fail);
    /* all values live at once: the next add fails cleanly, a removal frees one */
    static int live[4096];
    int nlive = 0;
    MPI_Add_error_class(&ucls);
    while (nlive < 4096 && MPI_Add_error_code(ucls, &live[nlive]) == MPI_SUCCESS)
        nlive++;
    CHECK(nlive == 4095, "%d codes beside their class, want 4095", nlive);
    rc = MPI_Add_error_code(ucls, &ucode);
    CHECK(class_of(rc) == MPI_ERR_OTHER, "a full table is MPI_ERR_OTHER (class %d)", class_of(rc));
    MPI_Remove_error_code(live[100]);
    CHECK(MPI_Add_error_code(ucls, &ucode) == MPI_SUCCESS && ucode == live[100],
          "the removed code is handed out again");
    int *lastused = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused, &flag);
    CHECK(flag && *lastused >= live[nlive - 1], "MPI_LASTUSEDCODE %d covers every code",
          flag ? *lastused : -1);
    for (int i = 0; i < nlive; i++)
        MPI_Remove_error_code(live[i]);
    CHECK(MPI_Remove_error_class(ucls) == MPI_SUCCESS, "the class goes once its codes are gone");

    /* Status accessors of MPI-4.1. */
    MPI_Status st;
    memset(&st, 0, sizeof st);
    MPI_Status_set_source(&st, 3);
    MPI_Status_set_tag(&st, 99);
    MPI_Status_set_error(&st, MPI_ERR_TAG);
    int s = -1, tag = -1, err = -1;
    MPI_Status_get_source(&st, &s);
    MPI_Status_get_tag(&st, &tag);
    MPI_Status_get_error(&st, &err);
    CHECK(s == 3 && tag == 99 && err == MPI_ERR_TAG, "status fields round-trip");
    CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 99, "public status fields agree");
    /* MPI_Status_set_elements_c: large counts and partial derived types */
    MPI_Count big = (MPI_Count)3 << 30, got_c = -1;
    int got_i = -1;
    CHECK(MPI_Status_set_elements_c(&st, MPI_BYTE, big) == MPI_SUCCESS, "set_elements_c 3 GiB");
    MPI_Get_elements_c(&st, MPI_BYTE, &got_c);
    MPI_Get_count(&st, MPI_BYTE, &got_i);
    CHECK(got_c == big && got_i == MPI_UNDEFINED, "3 GiB of bytes: elements_c %lld, count %d",
          (long long)got_c, got_i);
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    MPI_Status_set_elements_c(&st, three, 7);
    MPI_Get_elements_c(&st, three, &got_c);
    MPI_Get_count(&st, three, &got_i);
    CHECK(got_c == 7 && got_i == MPI_UNDEFINED, "7 ints as 3-int types: elements %lld, count %d",
          (long long)got_c, got_i);
    MPI_Status_set_elements_c(&st, three, 9);
    MPI_Get_count(&st, three, &got_i);
    CHECK(got_i == 3, "9 ints are 3 whole 3-int types (count %d)", got_i);
    MPI_Type_free(&three);
    rc = MPI_Status_set_elements_c(&st, MPI_INT, -1);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "set_elements_c(-1) is MPI_ERR_COUNT (class %d)",
          class_of(rc));

    MPI_Finalize();
    return check_summary("t_errors");
}
