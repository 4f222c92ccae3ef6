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

/* The world ranks of c's remote group. */
static void remote_world(MPI_Comm c, int *out)
{
    MPI_Group rg, wg;
    int n;
    MPI_Comm_remote_group(c, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_size(rg, &n);
    int idx[64];
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_Group_translate_ranks(rg, n, idx, wg, out);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
}

static int split_color(int w)
{
    return w == wsize - 1 && wsize > 2 ? MPI_UNDEFINED : (w / 2) % 2;
}

/* MPI_Comm_split and MPI_Comm_create on an intercommunicator (evens vs
 * odds) give intercommunicators between the matching parts; split_type
 * and topologies stay erroneous. */
static void sub_intercomms(MPI_Comm inter, int even)
{
    int color = split_color(wrank), n, r, cls, rc;
    MPI_Comm sc;
    MPI_Comm_split(inter, color, -wrank, &sc);  /* keys: descending world rank */
    int want_local = 0, want_remote = 0, want_rank = 0, first_remote = -1;
    for (int w = wsize - 1; w >= 0; w--) {
        if (color == MPI_UNDEFINED || split_color(w) != color)
            continue;
        if (w % 2 == wrank % 2) {
            if (w > wrank)
                want_rank++;
            want_local++;
        } else {
            if (first_remote < 0)
                first_remote = w;
            want_remote++;
        }
    }
    if (color == MPI_UNDEFINED || want_remote == 0) {
        CHECK(sc == MPI_COMM_NULL, "split of an intercommunicator: want MPI_COMM_NULL (colour "
              "%d)", color);
    } else {
        int flag;
        CHECK(sc != MPI_COMM_NULL, "split of an intercommunicator: MPI_COMM_NULL for colour %d",
              color);
        MPI_Comm_test_inter(sc, &flag);
        MPI_Comm_size(sc, &n);
        MPI_Comm_rank(sc, &r);
        int rn, rw[64];
        MPI_Comm_remote_size(sc, &rn);
        CHECK(flag && n == want_local && r == want_rank && rn == want_remote,
              "split intercomm: inter %d size %d rank %d remote %d, want %d %d %d", flag, n, r,
              rn, want_local, want_rank, want_remote);
        remote_world(sc, rw);
        CHECK(rw[0] == first_remote, "split intercomm: remote rank 0 is world %d, want %d", rw[0],
              first_remote);
        if (r == 0) {  /* the two rank-0s swap world ranks over the new intercommunicator */
            int other = -1;
            MPI_Sendrecv(&wrank, 1, MPI_INT, 0, 9, &other, 1, MPI_INT, 0, 9, sc,
                         MPI_STATUS_IGNORE);
            CHECK(other == first_remote, "across the split: %d, want %d", other, first_remote);
        }
        MPI_Comm_free(&sc);
    }
    /* create: the evens offer their rank 0 only, the odds everybody */
    MPI_Group lg, sub;
    MPI_Comm_group(inter, &lg);
    int zero = 0, nodd = wsize / 2;
    if (even)
        MPI_Group_incl(lg, 1, &zero, &sub);
    else
        sub = lg;
    MPI_Comm cc;
    MPI_Comm_create(inter, sub, &cc);
    if (even && wrank != 0) {
        CHECK(cc == MPI_COMM_NULL, "create: world %d is not in the group", wrank);
    } else {
        CHECK(cc != MPI_COMM_NULL, "create: world %d got MPI_COMM_NULL", wrank);
        if (cc != MPI_COMM_NULL) {
            int rn;
            MPI_Comm_size(cc, &n);
            MPI_Comm_remote_size(cc, &rn);
            CHECK(n == (even ? 1 : nodd) && rn == (even ? nodd : 1),
                  "create intercomm: size %d remote %d", n, rn);
            exchange(cc, "create on an intercommunicator");
            MPI_Comm_free(&cc);
        }
    }
    if (sub != lg)
        MPI_Group_free(&sub);
    /* the odds offer nobody: nobody gets a communicator */
    MPI_Comm_create(inter, even ? lg : MPI_GROUP_EMPTY, &cc);
    CHECK(cc == MPI_COMM_NULL, "create with an empty side: want MPI_COMM_NULL");
    MPI_Group_free(&lg);
    rc = MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &sc);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "split_type on an intercommunicator: class %d", cls);
    int dims[1] = {1}, periods[1] = {0};
    rc = MPI_Cart_create(inter, 1, dims, periods, 0, &sc);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Cart_create on an intercommunicator: class %d", cls);
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
        sub_intercomms(dup, even);
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
