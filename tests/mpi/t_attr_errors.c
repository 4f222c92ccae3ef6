/* Attribute callbacks that fail, and keyvals freed while attributes use
 * them, on communicators, datatypes and windows.
 *
 * A failing copy callback fails MPI_Comm_dup / MPI_Type_dup with a code of
 * the callback's class, raised on the right handler (the communicator's;
 * MPI_COMM_SELF's for datatype calls and MPI_Win_free; the window's for
 * MPI_Win_delete_attr) with a message naming the call, and leaves no new
 * object (MPI_COMM_NULL / MPI_DATATYPE_NULL).  A dup whose callback fails
 * (blocking or nonblocking) on rank 0 alone still completes on the other
 * ranks.  A failing delete
 * callback fails MPI_*_delete_attr and MPI_*_free the same way.  The
 * user's own error codes (MPI_Add_error_code) come back unchanged.
 *
 * A freed keyval (MPI-4.1 7.7.2) lives on for its attributes: copy
 * callbacks still run at dup, delete callbacks at delete_attr and free,
 * the handle (kept in another variable) still reaches the attributes that
 * use it; it cannot be attached to another object nor freed again.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;
static int copy_rc, delete_rc, copies, deletes;
static int handled, handled_code;

static int copy_cb(int obj, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)obj, (void)keyval, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return copy_rc;
}

static int delete_cb(int obj, int keyval, void *value, void *extra)
{
    (void)obj, (void)keyval, (void)value, (void)extra;
    deletes++;
    return delete_rc;
}

/* The get_attr a callback would do with the keyval it is given. */
static int seen_flag = -1;
static int delete_get_cb(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)value, (void)extra;
    deletes++;
    void *v;
    int rc = MPI_Comm_get_attr(comm, keyval, &v, &seen_flag);
    return rc;
}

static void comm_handler(MPI_Comm *c, int *code, ...)
{
    (void)c;
    handled++;
    handled_code = *code;
}

static void win_handler(MPI_Win *w, int *code, ...)
{
    (void)w;
    handled++;
    handled_code = *code;
}

/* rc failed with class cls, went to a handler once, and its text names fn. */
static void check_err(int rc, int cls, const char *fn, const char *what)
{
    int c = -1, len;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &c);
    MPI_Error_string(rc, text, &len);
    CHECK(c == cls, "%s: class %d, want %d", what, c, cls);
    CHECK(handled == 1 && handled_code == rc, "%s: handler ran %d times with %d (rc %d)", what,
          handled, handled_code, rc);
    CHECK(strstr(text, fn) != NULL, "%s: message '%s' does not name %s", what, text, fn);
    handled = 0;
}

/* A duplicate that rank 0 failed to make works among the ranks that have
 * it: a ring of point-to-point messages over ranks 1..size-1. */
static void ring_without_0(MPI_Comm b, const char *what)
{
    int n = size - 1, me = rank - 1, got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, (me + 1) % n + 1, 3, &got, 1, MPI_INT, (me + n - 1) % n + 1, 3,
                 b, MPI_STATUS_IGNORE);
    CHECK(got == (me + n - 1) % n + 1, "%s without rank 0: got %d", what, got);
}

static void comm_callbacks(void)
{
    int key, v = 7;
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)copy_cb,
                           (MPI_Comm_delete_attr_function *)delete_cb, &key, NULL);
    MPI_Comm_set_attr(a, key, &v);

    copy_rc = MPI_ERR_TAG;
    b = MPI_COMM_WORLD;
    int rc = MPI_Comm_dup(a, &b);
    check_err(rc, MPI_ERR_TAG, "MPI_Comm_dup", "dup with a failing copy callback");
    CHECK(b == MPI_COMM_NULL, "failed dup: newcomm is not MPI_COMM_NULL");

    /* only rank 0's callback fails: the others get a working duplicate */
    copy_rc = rank == 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
    rc = MPI_Comm_dup(a, &b);
    if (rank == 0) {
        check_err(rc, MPI_ERR_OTHER, "MPI_Comm_dup", "dup failing on rank 0 only");
        CHECK(b == MPI_COMM_NULL, "rank 0's failed dup: newcomm is not MPI_COMM_NULL");
    } else {
        CHECK(rc == MPI_SUCCESS && b != MPI_COMM_NULL, "dup on rank %d: rc %d", rank, rc);
        ring_without_0(b, "dup");
        MPI_Comm_free(&b);
    }
    copy_rc = MPI_SUCCESS;
    MPI_Barrier(a);

    /* the same with MPI_Comm_idup: rank 0 gets the error at once, no
     * communicator and no request; the others' request completes */
    copy_rc = rank == 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
    MPI_Request req = MPI_REQUEST_NULL + 1;
    rc = MPI_Comm_idup(a, &b, &req);
    if (rank == 0) {
        check_err(rc, MPI_ERR_OTHER, "MPI_Comm_idup", "idup failing on rank 0 only");
        CHECK(b == MPI_COMM_NULL && req == MPI_REQUEST_NULL,
              "rank 0's failed idup: newcomm or request not null");
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        ring_without_0(b, "idup");
        MPI_Comm_free(&b);
    }
    copy_rc = MPI_SUCCESS;
    MPI_Barrier(a);

    /* a user code passes unchanged */
    int ucls, ucode;
    MPI_Add_error_class(&ucls);
    MPI_Add_error_code(ucls, &ucode);
    copy_rc = ucode;
    rc = MPI_Comm_dup(a, &b);
    CHECK(rc == ucode && handled_code == ucode && b == MPI_COMM_NULL,
          "user code from copy callback: rc %d, want %d", rc, ucode);
    handled = 0;
    copy_rc = MPI_SUCCESS;

    delete_rc = MPI_ERR_COUNT;
    rc = MPI_Comm_delete_attr(a, key);
    check_err(rc, MPI_ERR_COUNT, "MPI_Comm_delete_attr", "comm delete_attr");
    MPI_Comm_set_attr(a, key, &v);
    rc = MPI_Comm_free(&a);
    check_err(rc, MPI_ERR_COUNT, "MPI_Comm_free", "comm free");
    delete_rc = MPI_SUCCESS;
    MPI_Comm_free_keyval(&key);
}

static void type_callbacks(void)
{
    int key, v = 7;
    MPI_Datatype t, t2;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_create_keyval((MPI_Type_copy_attr_function *)copy_cb,
                           (MPI_Type_delete_attr_function *)delete_cb, &key, NULL);
    MPI_Type_set_attr(t, key, &v);
    copy_rc = MPI_ERR_TAG;
    t2 = MPI_INT;
    int rc = MPI_Type_dup(t, &t2);
    check_err(rc, MPI_ERR_TAG, "MPI_Type_dup", "type dup with a failing copy callback");
    CHECK(t2 == MPI_DATATYPE_NULL, "failed type dup: newtype is not MPI_DATATYPE_NULL");
    copy_rc = MPI_SUCCESS;
    delete_rc = MPI_ERR_COUNT;
    rc = MPI_Type_delete_attr(t, key);
    check_err(rc, MPI_ERR_COUNT, "MPI_Type_delete_attr", "type delete_attr");
    MPI_Type_set_attr(t, key, &v);
    rc = MPI_Type_free(&t);
    check_err(rc, MPI_ERR_COUNT, "MPI_Type_free", "type free");
    CHECK(t == MPI_DATATYPE_NULL, "type free: handle not MPI_DATATYPE_NULL");
    delete_rc = MPI_SUCCESS;
    MPI_Type_free_keyval(&key);
}

static void win_callbacks(void)
{
    int key, v = 7;
    MPI_Win w;
    void *base;
    MPI_Errhandler weh;
    MPI_Win_create_errhandler(win_handler, &weh);
    MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    MPI_Win_set_errhandler(w, weh);
    MPI_Win_create_keyval((MPI_Win_copy_attr_function *)copy_cb,
                          (MPI_Win_delete_attr_function *)delete_cb, &key, NULL);
    MPI_Win_set_attr(w, key, &v);
    delete_rc = MPI_ERR_COUNT;
    int rc = MPI_Win_delete_attr(w, key);
    check_err(rc, MPI_ERR_COUNT, "MPI_Win_delete_attr", "win delete_attr");
    MPI_Win_set_attr(w, key, &v);
    rc = MPI_Win_free(&w);  /* raised on MPI_COMM_SELF */
    check_err(rc, MPI_ERR_COUNT, "MPI_Win_free", "win free");
    CHECK(w == MPI_WIN_NULL, "win free: handle not MPI_WIN_NULL");
    delete_rc = MPI_SUCCESS;
    MPI_Win_free_keyval(&key);
    MPI_Errhandler_free(&weh);
}

static void freed_comm_keyval(void)
{
    int key, saved, v = 7, *got, flag, rc;
    MPI_Comm a, b, c;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)copy_cb, delete_get_cb, &key, NULL);
    saved = key;
    MPI_Comm_set_attr(a, key, &v);
    rc = MPI_Comm_free_keyval(&key);
    CHECK(rc == MPI_SUCCESS && key == MPI_KEYVAL_INVALID, "comm free_keyval: rc %d key 0x%x", rc,
          (unsigned)key);
    rc = MPI_Comm_get_attr(a, saved, &got, &flag);
    CHECK(rc == MPI_SUCCESS && flag && got == &v, "get_attr with a freed keyval: rc %d flag %d",
          rc, flag);
    copies = deletes = 0;
    rc = MPI_Comm_dup(a, &b);
    CHECK(rc == MPI_SUCCESS && copies == 1, "dup after free_keyval: rc %d, %d copies", rc, copies);
    rc = MPI_Comm_get_attr(b, saved, &got, &flag);
    CHECK(rc == MPI_SUCCESS && flag && got == &v, "the duplicate's attribute: rc %d flag %d", rc,
          flag);
    rc = MPI_Comm_set_attr(c, saved, &v);
    CHECK(rc != MPI_SUCCESS && handled == 1, "attaching a freed keyval anew: rc %d", rc);
    handled = 0;
    rc = MPI_Comm_delete_attr(b, saved);
    CHECK(rc == MPI_SUCCESS && deletes == 1, "delete_attr with a freed keyval: rc %d, %d deletes",
          rc, deletes);
    rc = MPI_Comm_free_keyval(&saved);
    CHECK(rc != MPI_SUCCESS && handled == 1, "freeing a keyval twice: rc %d", rc);
    handled = 0;
    rc = MPI_Comm_free(&a);
    CHECK(rc == MPI_SUCCESS && deletes == 2, "free after free_keyval: rc %d, %d deletes", rc,
          deletes);
    MPI_Comm_free(&b);
    MPI_Comm_free(&c);
}

static void freed_type_keyval(void)
{
    int key, saved, v = 7, *got, flag, rc;
    MPI_Datatype t, t2;
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_create_keyval((MPI_Type_copy_attr_function *)copy_cb,
                           (MPI_Type_delete_attr_function *)delete_cb, &key, NULL);
    saved = key;
    MPI_Type_set_attr(t, key, &v);
    MPI_Type_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "type free_keyval: key not MPI_KEYVAL_INVALID");
    copies = deletes = 0;
    rc = MPI_Type_dup(t, &t2);
    CHECK(rc == MPI_SUCCESS && copies == 1, "type dup after free_keyval: rc %d, %d copies", rc,
          copies);
    rc = MPI_Type_get_attr(t2, saved, &got, &flag);
    CHECK(rc == MPI_SUCCESS && flag && got == &v, "type get_attr, freed keyval: rc %d flag %d", rc,
          flag);
    rc = MPI_Type_delete_attr(t2, saved);
    CHECK(rc == MPI_SUCCESS && deletes == 1, "type delete_attr, freed keyval: rc %d, %d deletes",
          rc, deletes);
    rc = MPI_Type_set_attr(MPI_INT, saved, &v);
    CHECK(rc != MPI_SUCCESS && handled == 1, "type set_attr of a freed keyval anew: rc %d", rc);
    handled = 0;
    MPI_Type_free(&t);
    CHECK(deletes == 2, "type free after free_keyval: %d deletes", deletes);
    MPI_Type_free(&t2);
}

static void freed_win_keyval(void)
{
    int key, saved, v = 7, *got, flag, rc;
    MPI_Win w;
    void *base;
    MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Win_create_keyval((MPI_Win_copy_attr_function *)copy_cb,
                          (MPI_Win_delete_attr_function *)delete_cb, &key, NULL);
    saved = key;
    MPI_Win_set_attr(w, key, &v);
    MPI_Win_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "win free_keyval: key not MPI_KEYVAL_INVALID");
    rc = MPI_Win_get_attr(w, saved, &got, &flag);
    CHECK(rc == MPI_SUCCESS && flag && got == &v, "win get_attr, freed keyval: rc %d flag %d", rc,
          flag);
    deletes = 0;
    rc = MPI_Win_free(&w);
    CHECK(rc == MPI_SUCCESS && deletes == 1, "win free after free_keyval: rc %d, %d deletes", rc,
          deletes);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(comm_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, eh);
    comm_callbacks();
    type_callbacks();
    win_callbacks();
    freed_comm_keyval();
    freed_type_keyval();
    freed_win_keyval();
    MPI_Errhandler_free(&eh);
    int r = check_summary("t_attr_errors");
    MPI_Finalize();
    return r;
}
