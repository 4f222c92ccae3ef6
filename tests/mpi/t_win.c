/* Window objects: the four creating calls (and their _c forms), the
 * predefined attributes, shared memory among the processes of a node,
 * group, name, info, keyvals with their callbacks, error handlers on
 * windows, an invalid window, MPI_Comm_free with a window alive, many
 * create/free cycles.  With the argument "leave", one window stays alive
 * into MPI_Finalize (which must clean it up, not crash). */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size;

static int eclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

/* ---- predefined attributes ---- */

static void check_attrs(MPI_Win win, void *base, MPI_Aint sz, int du, int flavor, const char *what)
{
    void *v;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &v, &flag);
    CHECK(flag && v == base, "%s: MPI_WIN_BASE %p, expected %p", what, v, base);
    MPI_Aint *s = NULL;
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &s, &flag);
    CHECK(flag && s != NULL && *s == sz, "%s: MPI_WIN_SIZE %ld, expected %ld", what,
          s ? (long)*s : -1L, (long)sz);
    int *i = NULL;
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &i, &flag);
    CHECK(flag && i != NULL && *i == du, "%s: MPI_WIN_DISP_UNIT %d, expected %d", what,
          i ? *i : -1, du);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &i, &flag);
    CHECK(flag && *i == flavor, "%s: MPI_WIN_CREATE_FLAVOR %d, expected %d", what, *i, flavor);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &i, &flag);
    CHECK(flag && *i == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL %d", what, *i);
}

static void test_create(void)
{
    MPI_Aint sz = 8 * (rank + 1);
    double *buf = malloc((size_t)sz);
    MPI_Win win;
    CHECK(MPI_Win_create(buf, sz, rank + 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
          "MPI_Win_create");
    check_attrs(win, buf, sz, rank + 1, MPI_WIN_FLAVOR_CREATE, "create");
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free sets MPI_WIN_NULL");
    /* large-count form; size 0 with a NULL base is allowed */
    MPI_Win_create_c(NULL, 0, (MPI_Aint)1 << 20, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    check_attrs(win, NULL, 0, 1 << 20, MPI_WIN_FLAVOR_CREATE, "create_c");
    MPI_Win_free(&win);
    free(buf);
}

static void test_allocate(void)
{
    MPI_Aint sz = rank == 0 ? 0 : 1000 * rank + 3;  /* rank 0 exposes nothing */
    char *base = (char *)1;
    MPI_Win win;
    CHECK(MPI_Win_allocate(sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS,
          "MPI_Win_allocate");
    if (sz > 0) {
        CHECK(base != NULL && (uintptr_t)base % 64 == 0, "allocated base %p is 64-byte aligned",
              (void *)base);
        memset(base, 0x5a, (size_t)sz);  /* the whole part is ours (valgrind checks) */
        CHECK(base[sz - 1] == 0x5a, "window memory writable");
    }
    check_attrs(win, base, sz, 4, MPI_WIN_FLAVOR_ALLOCATE, "allocate");
    MPI_Win_free(&win);
    double *d;
    MPI_Win_allocate_c(64 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &d,
                       &win);
    for (int i = 0; i < 64; i++)
        d[i] = i * rank;
    CHECK(d[63] == 63.0 * rank, "allocate_c memory");
    check_attrs(win, d, 64 * sizeof(double), (int)sizeof(double), MPI_WIN_FLAVOR_ALLOCATE,
                "allocate_c");
    MPI_Win_free(&win);
}

static void test_dynamic(void)
{
    MPI_Win win;
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
          "MPI_Win_create_dynamic");
    check_attrs(win, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC, "dynamic");
    MPI_Win_free(&win);
}

/* ---- shared memory ---- */

static void test_shared(MPI_Info info, int noncontig)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    MPI_Aint sz = nr == 1 ? 0 : (MPI_Aint)(sizeof(int) * (size_t)(10 + nr));  /* rank 1: empty */
    int *mine;
    MPI_Win win;
    CHECK(MPI_Win_allocate_shared(sz, sizeof(int), info, node, &mine, &win) == MPI_SUCCESS,
          "MPI_Win_allocate_shared");
    check_attrs(win, mine, sz, (int)sizeof(int), MPI_WIN_FLAVOR_SHARED, "shared");
    for (int i = 0; i < (int)(sz / sizeof(int)); i++)
        mine[i] = 1000 * nr + i;
    MPI_Barrier(node);
    char *prev_end = NULL;
    for (int r = 0; r < ns; r++) {
        MPI_Aint rs;
        int du;
        int *p;
        MPI_Win_shared_query(win, r, &rs, &du, &p);
        MPI_Aint expect = r == 1 ? 0 : (MPI_Aint)(sizeof(int) * (size_t)(10 + r));
        CHECK(rs == expect && du == (int)sizeof(int), "shared_query(%d): size %ld du %d", r,
              (long)rs, du);
        if (r == nr)
            CHECK(p == mine, "shared_query(me) gives my base");
        if (rs > 0 && noncontig)
            CHECK((uintptr_t)p % 64 == 0, "noncontig part %d at %p is aligned", r, (void *)p);
        else if (rs > 0 && prev_end != NULL)
            CHECK((char *)p == prev_end, "part %d follows the previous non-empty part", r);
        if (rs > 0)
            prev_end = (char *)p + rs;
        int bad = 0;
        for (int i = 0; i < (int)(rs / sizeof(int)); i++)
            bad += p[i] != 1000 * r + i;
        CHECK(bad == 0, "rank %d reads rank %d's part through shared memory: %d wrong", nr, r,
              bad);
    }
    MPI_Aint rs;
    MPI_Aint du;
    int *p;
    MPI_Win_shared_query_c(win, MPI_PROC_NULL, &rs, &du, &p);
    CHECK(rs == 10 * (MPI_Aint)sizeof(int) && p != NULL && p[0] == 0,
          "MPI_PROC_NULL gives rank 0's part (size %ld)", (long)rs);
    char v[MPI_MAX_INFO_VAL];
    int flag;
    MPI_Info used;
    MPI_Win_get_info(win, &used);
    MPI_Info_get(used, "alloc_shared_noncontig", MPI_MAX_INFO_VAL - 1, v, &flag);
    CHECK(flag && strcmp(v, noncontig ? "true" : "false") == 0, "alloc_shared_noncontig %s", v);
    MPI_Info_free(&used);
    /* errors on the window: a rank out of range */
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int idu;
    CHECK(eclass(MPI_Win_shared_query(win, ns, &rs, &idu, &p)) == MPI_ERR_RANK,
          "shared_query of rank %d: MPI_ERR_RANK", ns);
    MPI_Win_free(&win);
    /* everybody empty */
    MPI_Win_allocate_shared(0, 1, MPI_INFO_NULL, node, &mine, &win);
    MPI_Win_shared_query_c(win, MPI_PROC_NULL, &rs, &du, &p);
    CHECK(rs == 0 && p == NULL, "all-empty shared window: size 0, NULL base");
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

/* ---- group, name, info ---- */

static void test_group_name_info(void)
{
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "no_locks", "true");
    MPI_Info_set(in, "accumulate_ordering", "none");
    MPI_Info_set(in, "accumulate_ops", "bogus");   /* invalid: the default stays */
    MPI_Info_set(in, "cadence_unknown_key", "1");  /* not a window hint: not reported */
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), in, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&in);

    MPI_Group wg, cg;
    int cmp;
    MPI_Win_get_group(win, &wg);
    MPI_Comm_group(MPI_COMM_WORLD, &cg);
    MPI_Group_compare(wg, cg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group is the communicator's (compare %d)", cmp);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 0 && name[0] == '\0', "default window name is empty (\"%s\")", name);
    MPI_Win_set_name(win, "my window");
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 9 && strcmp(name, "my window") == 0, "window name \"%s\"", name);

    static const char *expect[][2] = {
        {"no_locks", "true"}, {"accumulate_ordering", "none"}, {"accumulate_ops", "same_op_no_op"},
        {"same_size", "false"}, {"same_disp_unit", "false"}};
    MPI_Info used;
    char v[MPI_MAX_INFO_VAL];
    int flag;
    MPI_Win_get_info(win, &used);
    for (int i = 0; i < 5; i++) {
        MPI_Info_get(used, expect[i][0], MPI_MAX_INFO_VAL - 1, v, &flag);
        CHECK(flag && strcmp(v, expect[i][1]) == 0, "info %s = %s (expected %s)", expect[i][0],
              flag ? v : "(unset)", expect[i][1]);
    }
    MPI_Info_get(used, "cadence_unknown_key", MPI_MAX_INFO_VAL - 1, v, &flag);
    CHECK(!flag, "an unknown key is not reported as used");
    MPI_Info_free(&used);

    MPI_Info_create(&in);
    MPI_Info_set(in, "same_size", "true");
    MPI_Info_set(in, "accumulate_ordering", "rar,waw");
    MPI_Win_set_info(win, in);
    MPI_Info_free(&in);
    MPI_Win_get_info(win, &used);
    MPI_Info_get(used, "same_size", MPI_MAX_INFO_VAL - 1, v, &flag);
    CHECK(flag && strcmp(v, "true") == 0, "set_info same_size: %s", v);
    MPI_Info_get(used, "accumulate_ordering", MPI_MAX_INFO_VAL - 1, v, &flag);
    CHECK(flag && strcmp(v, "rar,waw") == 0, "set_info accumulate_ordering: %s", v);
    MPI_Info_get(used, "no_locks", MPI_MAX_INFO_VAL - 1, v, &flag);
    CHECK(flag && strcmp(v, "true") == 0, "no_locks kept across set_info: %s", v);
    MPI_Info_free(&used);
    MPI_Win_free(&win);
}

/* ---- keyvals and attributes ---- */

static int deletes, last_deleted, copies;
static MPI_Win deleted_on;

static int del_fn(MPI_Win win, int keyval, void *val, void *extra)
{
    (void)keyval;
    deletes++;
    last_deleted = (int)(intptr_t)val;
    deleted_on = win;
    /* the window is still valid while its attributes are deleted */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    if (MPI_Win_get_name(win, name, &len) != MPI_SUCCESS)
        (*(int *)extra)++;
    return MPI_SUCCESS;
}

static int copy_fn(MPI_Win w, int k, void *e, void *in, void *out, int *flag)
{
    (void)w, (void)k, (void)e, (void)in, (void)out;
    copies++;  /* windows are never duplicated: must not run */
    *flag = 0;
    return MPI_SUCCESS;
}

static void test_attributes(void)
{
    int invalid_in_delete = 0, key, key2, ckey;
    MPI_Win_create_keyval(copy_fn, del_fn, &key, &invalid_in_delete);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &key2, NULL);
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    void *v;
    int flag = 1;
    MPI_Win_get_attr(win, key, &v, &flag);
    CHECK(!flag, "no attribute before set");
    MPI_Win_set_attr(win, key, (void *)(intptr_t)11);
    MPI_Win_get_attr(win, key, &v, &flag);
    CHECK(flag && (intptr_t)v == 11, "get_attr after set: %ld", (long)(intptr_t)v);
    MPI_Win_set_attr(win, key, (void *)(intptr_t)22);  /* overwrite: delete runs on 11 */
    CHECK(deletes == 1 && last_deleted == 11 && deleted_on == win,
          "overwrite ran the delete callback on the old value (%d, %d)", deletes, last_deleted);
    MPI_Win_delete_attr(win, key);
    CHECK(deletes == 2 && last_deleted == 22, "delete_attr ran the callback (%d)", deletes);
    MPI_Win_get_attr(win, key, &v, &flag);
    CHECK(!flag, "no attribute after delete");
    MPI_Win_set_attr(win, key2, (void *)(intptr_t)5);
    MPI_Win_get_attr(win, key2, &v, &flag);
    CHECK(flag && (intptr_t)v == 5, "MPI_WIN_NULL_* keyval works");

    /* errors, on the window's handler (MPI_ERRORS_RETURN) */
    CHECK(eclass(MPI_Win_set_attr(win, MPI_WIN_BASE, NULL)) == MPI_ERR_KEYVAL,
          "a predefined attribute cannot be set");
    CHECK(eclass(MPI_Win_delete_attr(win, MPI_WIN_SIZE)) == MPI_ERR_KEYVAL,
          "a predefined attribute cannot be deleted");
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckey, NULL);
    CHECK(eclass(MPI_Win_get_attr(win, ckey, &v, &flag)) == MPI_ERR_KEYVAL,
          "a communicator keyval on a window: MPI_ERR_KEYVAL");
    MPI_Comm_free_keyval(&ckey);
#ifndef T_WIN_MPICH  /* MPICH rejects it too, but on another handler */
    int pk = MPI_WIN_MODEL;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(eclass(MPI_Win_free_keyval(&pk)) == MPI_ERR_KEYVAL, "a predefined keyval cannot be freed");
#endif

    /* freed keyval: the attribute lives on; free runs its delete callback */
    MPI_Win_set_attr(win, key, (void *)(intptr_t)33);
    MPI_Win_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval sets MPI_KEYVAL_INVALID");
    MPI_Win handle = win;
    MPI_Win_free(&win);
    CHECK(deletes == 3 && last_deleted == 33 && deleted_on == handle,
          "MPI_Win_free ran the delete callback on 33 (%d, %d)", deletes, last_deleted);
    CHECK(invalid_in_delete == 0, "the window was valid inside its delete callback");
    CHECK(copies == 0, "no copy callback ran");
    MPI_Win_free_keyval(&key2);
}

/* ---- error handlers ---- */

static int win_handler_calls, win_handler_class;
static MPI_Win win_handler_win;

static void win_handler(MPI_Win *win, int *code, ...)
{
    win_handler_calls++;
    win_handler_win = *win;
    win_handler_class = eclass(*code);
}

static int comm_handler_calls, comm_handler_class;

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    comm_handler_calls++;
    comm_handler_class = eclass(*code);
}

static void test_errhandlers(void)
{
    int *base;
    MPI_Win win;
    /* a window starts with MPI_ERRORS_ARE_FATAL whatever its communicator has */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Errhandler eh;
    MPI_Win_get_errhandler(win, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window handler is MPI_ERRORS_ARE_FATAL (0x%x)",
          (unsigned)eh);
    MPI_Errhandler_free(&eh);

    MPI_Errhandler weh, ceh;
    MPI_Win_create_errhandler(win_handler, &weh);
    MPI_Comm_create_errhandler(comm_handler, &ceh);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(eclass(MPI_Win_set_errhandler(win, ceh)) == MPI_ERR_ERRHANDLER,
          "a communicator handler cannot be set on a window");
    MPI_Win_set_errhandler(win, weh);
    MPI_Win_get_errhandler(win, &eh);
    CHECK(eh == weh, "get_errhandler returns the user handler");
    MPI_Errhandler_free(&eh);
    MPI_Errhandler_free(&weh);  /* the window keeps it alive */

    /* an error detected on the window goes to its handler */
    void *v;
    int flag;
    int rc = MPI_Win_get_attr(win, 0x12345, &v, &flag);
    CHECK(win_handler_calls == 1 && win_handler_win == win && win_handler_class == MPI_ERR_KEYVAL,
          "bad keyval raised on the window's handler (%d calls, class %d)", win_handler_calls,
          win_handler_class);
    CHECK(eclass(rc) == MPI_ERR_KEYVAL, "and returned MPI_ERR_KEYVAL");
    rc = MPI_Win_set_name(win, NULL);
    CHECK(win_handler_calls == 2 && win_handler_class == MPI_ERR_ARG, "NULL name: MPI_ERR_ARG");
    /* an RMA call's error goes to the window's handler too */
    rc = MPI_Win_lock(99, 0, 0, win);
    CHECK(win_handler_calls == 3 && win_handler_class == MPI_ERR_LOCKTYPE,
          "MPI_Win_lock of a bad type: MPI_ERR_LOCKTYPE on the window (class %d)",
          win_handler_class);
    CHECK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER) == MPI_SUCCESS && win_handler_calls == 4 &&
              win_handler_class == MPI_ERR_OTHER, "MPI_Win_call_errhandler");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(eclass(MPI_Win_set_name(win, NULL)) == MPI_ERR_ARG && win_handler_calls == 4,
          "MPI_ERRORS_RETURN returns the code");

    /* an invalid window goes to MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, ceh);
    /* (MPI_Win_get_name names MPI_WIN_NULL: MPI-4.1, t_comm_41) */
    rc = MPI_Win_set_name(MPI_WIN_NULL, "x");
    CHECK(comm_handler_calls == 1 && comm_handler_class == MPI_ERR_WIN && eclass(rc) == MPI_ERR_WIN,
          "MPI_WIN_NULL: MPI_ERR_WIN on MPI_COMM_WORLD's handler (%d calls, class %d)",
          comm_handler_calls, comm_handler_class);
#ifndef T_WIN_MPICH  /* MPICH does not check handles past its table: it crashes */
    rc = MPI_Win_set_errhandler(win + 1000, MPI_ERRORS_RETURN);
    CHECK(comm_handler_calls == 2 && comm_handler_class == MPI_ERR_WIN, "a stale handle: MPI_ERR_WIN");
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&ceh);

    /* creation errors go to the communicator's handler (MPI_ERRORS_RETURN) */
    MPI_Win w2;
    CHECK(eclass(MPI_Win_allocate(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w2)) == MPI_ERR_SIZE,
          "negative size: MPI_ERR_SIZE");
    CHECK(eclass(MPI_Win_create(base, 4, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &w2)) == MPI_ERR_DISP,
          "disp_unit 0: MPI_ERR_DISP");
    CHECK(eclass(MPI_Win_allocate_c(4, (MPI_Aint)1 << 40, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                    &w2)) == MPI_ERR_DISP, "disp_unit 2^40: MPI_ERR_DISP");
    CHECK(eclass(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_NULL, &w2)) == MPI_ERR_COMM,
          "MPI_COMM_NULL: MPI_ERR_COMM");
    CHECK(eclass(MPI_Win_create(NULL, 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w2)) == MPI_ERR_ARG,
          "NULL base with size 8: MPI_ERR_ARG");
    MPI_Win_free(&win);
    MPI_Win nullwin = MPI_WIN_NULL;
    CHECK(eclass(MPI_Win_free(&nullwin)) == MPI_ERR_WIN, "freeing MPI_WIN_NULL: MPI_ERR_WIN");
}

/* A window outlives the communicator it was made from. */
static void test_comm_free(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, dup, &base, &win);
    MPI_Comm_free(&dup);
    MPI_Group g;
    int gs = -1;
    MPI_Win_get_group(win, &g);
    MPI_Group_size(g, &gs);
    CHECK(gs == size, "the window's group after MPI_Comm_free: %d", gs);
    MPI_Group_free(&g);
    *base = 7;
    MPI_Win_free(&win);
    /* communication still works on fresh communicators */
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size, "allreduce after window churn: %d", sum);
}

static void test_cycles(int n)
{
    for (int i = 0; i < n; i++) {
        char *base;
        MPI_Win win;
        MPI_Win_allocate(i % 7, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_free(&win);
    }
    CHECK(1, "%d create/free cycles", n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int leave = argc > 1 && strcmp(argv[1], "leave") == 0;
    test_create();
    test_allocate();
    test_dynamic();
    test_shared(MPI_INFO_NULL, 0);
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "alloc_shared_noncontig", "true");
    test_shared(in, 1);
    MPI_Info_free(&in);
    test_group_name_info();
    test_attributes();
    test_errhandlers();
    test_comm_free();
    test_cycles(leave ? 10 : 300);
    MPI_Win kept = MPI_WIN_NULL;
    int *base;
    if (leave)  /* not freed: MPI_Finalize cleans up and says so */
        MPI_Win_allocate(16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &kept);
    int rc = check_summary("t_win");
    MPI_Finalize();
    return rc;
}
