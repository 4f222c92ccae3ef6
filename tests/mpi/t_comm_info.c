/* Communicator hints (MPI-4.1 7.4.4) through every creating call.
 *
 * MPI_Comm_get_info reports the four point-to-point assertions always
 * (default "false", as MPICH 4), plus the hints in effect; keys Cadence
 * does not use and non-boolean assertion values are ignored, so not
 * reported.  Hints are never carried from one communicator to another:
 * MPI_Comm_dup, MPI_Comm_idup, split, create, create_group give the
 * defaults whatever the parent has; the _with_info forms, split_type and
 * create_from_group take their info argument; set_info updates only the
 * keys it names. */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"

static const char *const keys[] = {"mpi_assert_no_any_tag", "mpi_assert_no_any_source",
                                   "mpi_assert_exact_length", "mpi_assert_allow_overtaking"};
#define NKEYS 4

/* c's reported hints: each assertion as want[k] ("true"/"false"), and
 * nothing but the assertions and `extra` (NULL: none). */
static void expect(MPI_Comm c, const char *want[NKEYS], const char *extra, const char *what)
{
    MPI_Info used;
    MPI_Comm_get_info(c, &used);
    for (int k = 0; k < NKEYS; k++) {
        char v[MPI_MAX_INFO_VAL] = "";
        int flag = 0, len = (int)sizeof v;
        MPI_Info_get_string(used, keys[k], &len, v, &flag);
        CHECK(flag && strcmp(v, want[k]) == 0, "%s: %s = %s, want %s", what, keys[k],
              flag ? v : "(unset)", want[k]);
    }
    int n = 0;
    MPI_Info_get_nkeys(used, &n);
    CHECK(n == NKEYS + (extra != NULL), "%s: %d hints reported, want %d", what, n,
          NKEYS + (extra != NULL));
    if (extra != NULL) {
        int flag = 0, len = 0;
        MPI_Info_get_string(used, extra, &len, NULL, &flag);
        CHECK(flag, "%s: %s not reported", what, extra);
    }
    MPI_Info_free(&used);
}

static const char *all_false[NKEYS] = {"false", "false", "false", "false"};
static const char *all_true[NKEYS] = {"true", "true", "true", "true"};

/* The hints make no difference to what the communicator does. */
static void works(MPI_Comm c, const char *what)
{
    int r, n, sum = 0;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == n * (n - 1) / 2, "%s: sum of ranks %d", what, sum);
}

/* This process's stderr, captured in a temporary file meanwhile. */
struct capture {
    char path[32];
    int fd, saved;
};

static bool capture_begin(struct capture *c, const char *what)
{
    strcpy(c->path, "/tmp/t_comm_info.XXXXXX");
    c->fd = mkstemp(c->path);
    c->saved = dup(2);
    CHECK(c->fd >= 0 && c->saved >= 0, "%s: no temporary file", what);
    if (c->fd < 0 || c->saved < 0)
        return false;
    fflush(stderr);
    dup2(c->fd, 2);
    return true;
}

static void capture_end(struct capture *c, char *text, size_t len)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    ssize_t n = pread(c->fd, text, len - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(c->fd);
    unlink(c->path);
}

/* The info argument of a persistent collective's _init form: its
 * algorithm key is read (an unknown name is reported on stderr as the
 * schedule is built), a known one builds a schedule that computes the
 * right result, and an invalid handle is MPI_ERR_INFO. */
static void init_info_read(void)
{
    int rank, n, x, sum = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "cadence_allreduce_algorithm", "no_such_allreduce");
    MPI_Request req;
    struct capture cap;
    if (!capture_begin(&cap, "init info"))
        return;
    MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, in, &req);
    char text[512];
    capture_end(&cap, text, sizeof text);
    CHECK(strstr(text, "cadence_allreduce_algorithm: unknown algorithm 'no_such_allreduce'") != NULL,
          "init info: MPI_Allreduce_init did not read its info's cadence_allreduce_algorithm "
          "(stderr: '%s')", text);
    MPI_Request_free(&req);
    MPI_Info_set(in, "cadence_allreduce_algorithm", "ring");
    MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, in, &req);
    for (int round = 0; round < 3; round++) {
        x = rank + round;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(sum == n * (n - 1) / 2 + n * round, "init info: ring allreduce round %d gave %d",
              round, sum);
    }
    MPI_Request_free(&req);
    MPI_Info_free(&in);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info bad = (MPI_Info)(uintptr_t)0x7ee1;
    int rc = MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, bad, &req), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INFO, "init info: an invalid info handle gave class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A cadence_ algorithm hint set after collectives ran with none is read by
 * the next collective (they skip the lookup only while no communicator
 * ever kept one): an unknown algorithm is reported on stderr then. */
static void late_hint_read(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int x = 7;
    MPI_Bcast(&x, 1, MPI_INT, 0, c);  /* no cadence_ hint anywhere yet */
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "cadence_bcast_algorithm", "no_such_algorithm");
    MPI_Comm_set_info(c, in);
    MPI_Info_free(&in);
    struct capture cap;
    if (!capture_begin(&cap, "late hint"))
        return;
    MPI_Bcast(&x, 1, MPI_INT, 0, c);
    char text[512];
    capture_end(&cap, text, sizeof text);
    CHECK(strstr(text, "unknown algorithm 'no_such_algorithm'") != NULL,
          "late hint: the bcast did not read cadence_bcast_algorithm (stderr: '%s')", text);
    CHECK(x == 7, "late hint: bcast gave %d", x);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    expect(MPI_COMM_WORLD, all_false, NULL, "MPI_COMM_WORLD");
    expect(MPI_COMM_SELF, all_false, NULL, "MPI_COMM_SELF");
    late_hint_read();
    init_info_read();

    MPI_Info yes;  /* every assertion, in mixed case, and a key nobody uses */
    MPI_Info_create(&yes);
    for (int k = 0; k < NKEYS; k++)
        MPI_Info_set(yes, keys[k], k % 2 ? "TRUE" : "true");
    MPI_Info_set(yes, "no_such_hint", "1");

    MPI_Comm a, b;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, yes, &a);
    expect(a, all_true, NULL, "dup_with_info");
    works(a, "dup_with_info");

    MPI_Comm_dup(a, &b);
    expect(b, all_false, NULL, "dup of a communicator with hints");
    works(b, "dup");
    MPI_Comm_free(&b);

    MPI_Request req;
    MPI_Comm_idup(a, &b, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect(b, all_false, NULL, "idup of a communicator with hints");
    MPI_Comm_free(&b);

    MPI_Comm_idup_with_info(MPI_COMM_WORLD, yes, &b, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect(b, all_true, NULL, "idup_with_info");
    MPI_Comm_free(&b);

    MPI_Info one;  /* only the first key, false; the parent's do not leak in */
    MPI_Info_create(&one);
    MPI_Info_set(one, keys[1], "true");
    MPI_Comm_dup_with_info(a, one, &b);
    const char *only1[NKEYS] = {"false", "true", "false", "false"};
    expect(b, only1, NULL, "dup_with_info of a communicator with hints");
    MPI_Comm_free(&b);

    MPI_Comm_split(a, rank % 2, rank, &b);
    expect(b, all_false, NULL, "split");
    works(b, "split");
    MPI_Comm_free(&b);

    MPI_Comm_split_type(a, MPI_COMM_TYPE_SHARED, rank, yes, &b);
    expect(b, all_true, NULL, "split_type with info");
    MPI_Comm_free(&b);
    MPI_Comm_split_type(a, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &b);
    expect(b, all_false, NULL, "split_type without info");
    MPI_Comm_free(&b);

    MPI_Group g;
    MPI_Comm_group(a, &g);
    MPI_Comm_create(a, g, &b);
    expect(b, all_false, NULL, "create");
    works(b, "create");
    MPI_Comm_free(&b);
    MPI_Comm_create_group(a, g, 7, &b);
    expect(b, all_false, NULL, "create_group");
    MPI_Comm_free(&b);
    MPI_Comm_create_from_group(g, "t_comm_info", yes, MPI_ERRORS_RETURN, &b);
    expect(b, all_true, NULL, "create_from_group with info");
    works(b, "create_from_group");
    MPI_Comm_free(&b);
    MPI_Group_free(&g);

    /* set_info changes what it names; a value that is not a boolean is
     * ignored; Cadence's own keys are kept */
    MPI_Info upd;
    MPI_Info_create(&upd);
    MPI_Info_set(upd, keys[0], "false");
    MPI_Info_set(upd, keys[2], "maybe");
    MPI_Info_set(upd, "cadence_allreduce_algorithm", "ring");
    MPI_Comm_set_info(a, upd);
    const char *after[NKEYS] = {"false", "true", "true", "true"};
    expect(a, after, "cadence_allreduce_algorithm", "set_info");
    works(a, "after set_info");
    MPI_Comm_dup(a, &b);
    expect(b, all_false, NULL, "dup after set_info");
    MPI_Comm_free(&b);

    MPI_Info_free(&upd);
    MPI_Info_free(&one);
    MPI_Info_free(&yes);
    MPI_Comm_free(&a);
    int r = check_summary("t_comm_info");
    MPI_Finalize();
    return r;
}
