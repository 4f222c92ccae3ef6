/* MPI-4 sessions: two sessions in one process without MPI_Init (or, with
 * argument "world", alongside it), their process sets and pset info, groups
 * from psets, communicators from groups with string tags (checked by
 * sending over them), per-session error handlers, and error handlers on
 * MPI_FILE_NULL. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int handler_calls;
static MPI_Session handler_session;

static void on_error(MPI_Session *s, int *code, ...)
{
    handler_calls++;
    handler_session = *s;
    (void)code;
}

static int file_calls;
static void on_file_error(MPI_File *f, int *code, ...)
{
    (void)f, (void)code;
    file_calls++;
}

static void ring(MPI_Comm comm, const char *what)
{
    int r, n, got = -1;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % n, 3, &got, 1, MPI_INT, (r + n - 1) % n, 3, comm,
                 MPI_STATUS_IGNORE);
    CHECK(got == (r + n - 1) % n, "%s: ring got %d", what, got);
}

int main(int argc, char **argv)
{
    int world = argc > 1 && strcmp(argv[1], "world") == 0, flag;
    if (world)
        MPI_Init(&argc, &argv);
    MPI_Errhandler eh;
    MPI_Session_create_errhandler(on_error, &eh);
    MPI_Session a, b;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    CHECK(MPI_Session_init(info, eh, &a) == MPI_SUCCESS, "session a");
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b) == MPI_SUCCESS, "session b");
    MPI_Info_free(&info);
    MPI_Initialized(&flag);
    CHECK(flag == world, "MPI_Initialized is %d with sessions", flag);

    int np, len;
    MPI_Session_get_num_psets(a, MPI_INFO_NULL, &np);
    CHECK(np >= 2, "%d process sets", np);
    char name[MPI_MAX_PSET_NAME_LEN];
    int found_world = 0, found_self = 0;
    for (int i = 0; i < np; i++) {
        len = 0;
        MPI_Session_get_nth_pset(a, MPI_INFO_NULL, i, &len, NULL);
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "pset %d name length %d", i, len);
        MPI_Session_get_nth_pset(a, MPI_INFO_NULL, i, &len, name);
        found_world += strcmp(name, "mpi://WORLD") == 0;
        found_self += strcmp(name, "mpi://SELF") == 0;
    }
    CHECK(found_world == 1 && found_self == 1, "mpi://WORLD and mpi://SELF listed");
    MPI_Info pinfo;
    char v[64];
    MPI_Session_get_pset_info(a, "mpi://WORLD", &pinfo);
    len = sizeof v;
    MPI_Info_get_string(pinfo, "mpi_size", &len, v, &flag);
    int wsize = flag ? atoi(v) : -1;
    CHECK(flag && wsize >= 1, "mpi://WORLD mpi_size %s", flag ? v : "-");
    MPI_Info_free(&pinfo);
    MPI_Session_get_pset_info(b, "mpi://SELF", &pinfo);
    len = sizeof v;
    MPI_Info_get_string(pinfo, "mpi_size", &len, v, &flag);
    CHECK(flag && strcmp(v, "1") == 0, "mpi://SELF mpi_size %s", flag ? v : "-");
    MPI_Info_free(&pinfo);
    MPI_Info used;
    MPI_Session_get_info(a, &used);
    len = sizeof v;
    MPI_Info_get_string(used, "thread_level", &len, v, &flag);
    CHECK(flag && strcmp(v, "MPI_THREAD_MULTIPLE") == 0, "session thread_level %s", flag ? v : "-");
    MPI_Info_free(&used);

    /* communicators from process sets */
    MPI_Group wg, sg;
    MPI_Group_from_session_pset(a, "mpi://WORLD", &wg);
    MPI_Group_from_session_pset(b, "mpi://SELF", &sg);
    int gs;
    MPI_Group_size(wg, &gs);
    CHECK(gs == wsize, "world pset group size %d", gs);
    MPI_Comm wc, wc2, sc;
    MPI_Comm_create_from_group(wg, "t_session.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &wc);
    MPI_Comm_create_from_group(wg, "t_session.other", MPI_INFO_NULL, MPI_ERRORS_RETURN, &wc2);
    MPI_Comm_create_from_group(sg, "t_session.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc);
    int n;
    MPI_Comm_size(wc, &n);
    CHECK(n == wsize, "world communicator size %d", n);
    ring(wc, "from mpi://WORLD");
    ring(wc2, "second from mpi://WORLD");
    ring(sc, "from mpi://SELF");
    MPI_Errhandler ceh;
    MPI_Comm_get_errhandler(wc, &ceh);
    CHECK(ceh == MPI_ERRORS_RETURN, "create_from_group sets the handler");
    MPI_Errhandler_free(&ceh);

    /* each session has its own handler */
    int rc = MPI_Session_get_nth_pset(a, MPI_INFO_NULL, 99, &len, name);
    CHECK(handler_calls == 1 && handler_session == a, "session a's handler ran (%d)", handler_calls);
    rc = MPI_Session_get_nth_pset(b, MPI_INFO_NULL, 99, &len, name);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(handler_calls == 1 && cls == MPI_ERR_ARG, "session b returns the error (class %d)", cls);
    MPI_Errhandler got;
    MPI_Session_get_errhandler(a, &got);
    CHECK(got == eh, "get_errhandler");
    MPI_Errhandler_free(&got);
    MPI_Session_call_errhandler(a, MPI_ERR_OTHER);
    CHECK(handler_calls == 2, "call_errhandler");
    MPI_Session_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    /* MPI_FILE_NULL's handler */
    MPI_Errhandler feh;
    MPI_File_get_errhandler(MPI_FILE_NULL, &feh);
    CHECK(feh == MPI_ERRORS_RETURN, "MPI_FILE_NULL starts with MPI_ERRORS_RETURN");
    MPI_File_create_errhandler(on_file_error, &feh);
    MPI_File_set_errhandler(MPI_FILE_NULL, feh);
    MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO);
    CHECK(file_calls == 1, "the file handler ran");
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&feh);

    MPI_Comm_free(&sc);
    MPI_Comm_free(&wc2);
    MPI_Group_free(&sg);
    MPI_Group_free(&wg);
    if (world)
        MPI_Finalize();  /* the sessions keep the runtime up */
    ring(wc, "after the other finalize");
    MPI_Comm_free(&wc);
    MPI_Datatype t3;  /* made while a session exists, used after all were finalized */
    MPI_Type_contiguous(3, MPI_INT, &t3);
    MPI_Type_commit(&t3);
    MPI_Session_finalize(&a);
    CHECK(a == MPI_SESSION_NULL, "finalize resets the handle");
    MPI_Session_finalize(&b);
    MPI_Finalized(&flag);
    CHECK(flag == world, "MPI_Finalized is %d", flag);

    /* MPI-4.1 11.3: a process may start sessions again after finalizing
     * all of them (the runtime stays up, idle, until exit) */
    MPI_Session c;
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &c) == MPI_SUCCESS,
          "a session after every session was finalized");
    MPI_Group cg;
    MPI_Comm cc;
    MPI_Group_from_session_pset(c, "mpi://WORLD", &cg);
    CHECK(MPI_Comm_create_from_group(cg, "t_session again", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                     &cc) == MPI_SUCCESS, "a communicator in the new session");
    int cr, cn, out[3], in[3] = {-1, -1, -1};
    MPI_Comm_rank(cc, &cr);
    MPI_Comm_size(cc, &cn);
    for (int i = 0; i < 3; i++)
        out[i] = 10 * cr + i;
    MPI_Sendrecv(out, 1, t3, (cr + 1) % cn, 4, in, 1, t3, (cr + cn - 1) % cn, 4, cc,
                 MPI_STATUS_IGNORE);
    int prev = (cr + cn - 1) % cn;
    CHECK(in[0] == 10 * prev && in[1] == 10 * prev + 1 && in[2] == 10 * prev + 2,
          "old datatype in the new session: got %d %d %d from %d", in[0], in[1], in[2], prev);
    MPI_Type_free(&t3);
    MPI_Comm_free(&cc);
    MPI_Group_free(&cg);
    MPI_Session_finalize(&c);
    if (!world) {  /* MPI_Init never ran: the world model may still start */
        CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init after the sessions");
        ring(MPI_COMM_WORLD, "world after the sessions");
        MPI_Finalize();
        MPI_Finalized(&flag);
        CHECK(flag, "MPI_Finalized after the world model ended");
    }
    return check_summary("t_session");
}
