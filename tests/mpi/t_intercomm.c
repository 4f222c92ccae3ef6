/* Intercommunicators: MPI_Intercomm_create between the even and the odd
 * ranks, point-to-point across it (ranks name the remote group), remote
 * size and group, dup, MPI_Intercomm_merge in both orders, and
 * MPI_Intercomm_create_from_groups.  At one rank only the error paths run. */
#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

static int wrank, wsize;

/* Every process sends its world rank to remote rank (local rank % remote
 * size) and receives from each remote process that maps to it. */
static void exchange(MPI_Comm inter, const char *what)
{
    int lr, ls, rs;
    MPI_Comm_rank(inter, &lr);
    MPI_Comm_size(inter, &ls);
    MPI_Comm_remote_size(inter, &rs);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Request sr;
    MPI_Isend(&wrank, 1, MPI_INT, lr % rs, 11, inter, &sr);
    for (int j = 0; j < rs; j++) {
        if (j % ls != lr)
            continue;
        int got = -1, expect;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, j, 11, inter, &st);
        MPI_Group_translate_ranks(rg, 1, &j, wg, &expect);
        CHECK(got == expect && st.MPI_SOURCE == j, "%s: from remote %d got %d, expected %d", what,
              j, got, expect);
    }
    MPI_Wait(&sr, MPI_STATUS_IGNORE);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
}

static void ring(MPI_Comm comm, int expect_prev, const char *what)
{
    int r, n, got = -1;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    MPI_Sendrecv(&wrank, 1, MPI_INT, (r + 1) % n, 7, &got, 1, MPI_INT, (r + n - 1) % n, 7, comm,
                 MPI_STATUS_IGNORE);
    CHECK(got == expect_prev, "%s: ring got %d, expected %d", what, got, expect_prev);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int flag = 1, cls, n;
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(!flag, "MPI_COMM_WORLD is an intracommunicator");
    int rc = MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &(MPI_Comm){0});
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "merging an intracommunicator: class %d", cls);
    if (wsize >= 2) {
        int even = wrank % 2 == 0, neven = (wsize + 1) / 2;
        MPI_Comm half, inter, dup, merged;
        MPI_Comm_split(MPI_COMM_WORLD, !even, wrank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, even ? 1 : 0, 5, &inter);
        MPI_Comm_test_inter(inter, &flag);
        CHECK(flag, "test_inter");
        MPI_Comm_remote_size(inter, &n);
        CHECK(n == (even ? wsize / 2 : neven), "remote size %d", n);
        MPI_Comm_size(inter, &n);
        CHECK(n == (even ? neven : wsize / 2), "local size %d", n);
        exchange(inter, "intercomm");
        MPI_Comm_dup(inter, &dup);
        MPI_Comm_test_inter(dup, &flag);
        CHECK(flag, "a dup of an intercommunicator is one");
        exchange(dup, "dup");
        int res;
        MPI_Comm_compare(inter, dup, &res);
        CHECK(res == MPI_CONGRUENT, "intercomm vs its dup %d", res);
        /* send beyond the remote group is an error */
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        MPI_Comm_remote_size(inter, &n);
        rc = MPI_Send(&wrank, 1, MPI_INT, n, 0, inter);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK, "send to remote rank %d: class %d", n, cls);
        /* merge: evens low; then the other way round */
        MPI_Intercomm_merge(inter, !even, &merged);
        int r;
        MPI_Comm_rank(merged, &r);
        CHECK(r == (even ? wrank / 2 : neven + wrank / 2), "merged rank %d", r);
        MPI_Comm_size(merged, &n);
        CHECK(n == wsize, "merged size %d", n);
        int prev_rank = (r + n - 1) % n;
        int prev_world = prev_rank < neven ? 2 * prev_rank : 2 * (prev_rank - neven) + 1;
        ring(merged, prev_world, "merged");
        MPI_Comm_free(&merged);
        MPI_Intercomm_merge(dup, even, &merged);
        MPI_Comm_rank(merged, &r);
        CHECK(r == (even ? wsize / 2 + wrank / 2 : wrank / 2), "merged (odds first) rank %d", r);
        MPI_Comm_free(&merged);
        /* from groups */
        MPI_Group wg, eg, og;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int range[1][3] = {{0, wsize - 1, 2}};
        MPI_Group_range_incl(wg, 1, range, &eg);
        MPI_Group_difference(wg, eg, &og);
        MPI_Comm fg;
        MPI_Intercomm_create_from_groups(even ? eg : og, 0, even ? og : eg, 0, "t_intercomm",
                                         MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg);
        MPI_Comm_remote_size(fg, &n);
        CHECK(n == (even ? wsize / 2 : neven), "from_groups remote size %d", n);
        exchange(fg, "from_groups");
        MPI_Comm_free(&fg);
        MPI_Group_free(&og);
        MPI_Group_free(&eg);
        MPI_Group_free(&wg);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Finalize();
    return check_summary("t_intercomm");
}
