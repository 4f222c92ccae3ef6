/* Groups and communicator creation: dup, split, create, create_group,
 * compare, names, free deferred while an operation is pending, thousands of
 * dup/free cycles, concurrent creation from several threads (the
 * context-id agreement), split_type.  Every new communicator is checked by
 * sending over it.  Runs at any number of ranks. */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int wrank, wsize;

/* A ring over comm: each rank sends its world rank to the next and checks
 * what the previous one sent against `expect_prev` (its world rank). */
static void ring(MPI_Comm comm, int expect_prev, const char *what)
{
    int r, n, got = -1;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    int rc = MPI_Sendrecv(&wrank, 1, MPI_INT, (r + 1) % n, 7, &got, 1, MPI_INT, (r + n - 1) % n, 7,
                          comm, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && got == expect_prev, "%s: ring got %d, expected %d (rc %d)", what,
          got, expect_prev, rc);
}

static void test_groups(void)
{
    MPI_Group world, rev, even, u, in, diff, empty_check;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int s, r;
    MPI_Group_size(world, &s);
    MPI_Group_rank(world, &r);
    CHECK(s == wsize && r == wrank, "world group size %d rank %d", s, r);
    int *ranks = malloc(sizeof(int) * (size_t)wsize), *out = malloc(sizeof(int) * (size_t)wsize);
    for (int i = 0; i < wsize; i++)
        ranks[i] = wsize - 1 - i;
    MPI_Group_incl(world, wsize, ranks, &rev);
    MPI_Group_rank(rev, &r);
    CHECK(r == wsize - 1 - wrank, "reversed group rank %d", r);
    MPI_Group_translate_ranks(world, wsize, ranks, rev, out);
    for (int i = 0; i < wsize; i++)
        CHECK(out[i] == i, "translate %d -> %d", ranks[i], out[i]);
    int res;
    MPI_Group_compare(world, rev, &res);
    CHECK(res == (wsize == 1 ? MPI_IDENT : MPI_SIMILAR), "compare world/reversed %d", res);
    int range[1][3] = {{0, wsize - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &even);
    MPI_Group_size(even, &s);
    CHECK(s == (wsize + 1) / 2, "even group size %d", s);
    MPI_Group_rank(even, &r);
    CHECK(r == (wrank % 2 == 0 ? wrank / 2 : MPI_UNDEFINED), "even group rank %d", r);
    MPI_Group_difference(world, even, &diff);
    MPI_Group_size(diff, &s);
    CHECK(s == wsize / 2, "odd group size %d", s);
    MPI_Group_union(diff, even, &u);
    MPI_Group_compare(u, world, &res);
    CHECK(res == (wsize <= 1 ? MPI_IDENT : MPI_SIMILAR), "odd+even vs world %d", res);
    MPI_Group_intersection(diff, even, &in);
    CHECK(in == MPI_GROUP_EMPTY, "odd ^ even is MPI_GROUP_EMPTY");
    MPI_Group_range_excl(world, 1, range, &empty_check);
    MPI_Group_compare(empty_check, diff, &res);
    CHECK(res == MPI_IDENT, "range_excl evens == difference (%d)", res);
    MPI_Group g2;
    int one = 0;
    MPI_Group_excl(world, 1, &one, &g2);
    MPI_Group_size(g2, &s);
    CHECK(s == wsize - 1, "excl size %d", s);
    /* errors return the right class */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int bad = wsize, rc = MPI_Group_incl(world, 1, &bad, &g2 + 0);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "incl of rank %d: class %d", bad, cls);
    rc = MPI_Group_size(MPI_GROUP_NULL, &s);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_GROUP, "MPI_GROUP_NULL: class %d", cls);
    MPI_Group_free(&g2);
    MPI_Group_free(&empty_check);
    MPI_Group_free(&in);
    MPI_Group_free(&u);
    MPI_Group_free(&diff);
    MPI_Group_free(&even);
    MPI_Group_free(&rev);
    CHECK(rev == MPI_GROUP_NULL, "free sets MPI_GROUP_NULL");
    MPI_Group_free(&world);
    free(ranks);
    free(out);
}

static void test_dup_split(void)
{
    MPI_Comm dup, split, cr, cg;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int res;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT, "dup is congruent (%d)", res);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT, "same comm is ident");
    ring(dup, (wrank + wsize - 1) % wsize, "dup");
    /* isolation: a message on dup never matches a receive on WORLD */
    int a = 100 + wrank, b = 200 + wrank, ga = -1, gb = -1;
    int to = (wrank + 1) % wsize, from = (wrank + wsize - 1) % wsize;
    MPI_Request rq[4];
    MPI_Irecv(&ga, 1, MPI_INT, from, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&gb, 1, MPI_INT, from, 0, dup, &rq[1]);
    MPI_Isend(&b, 1, MPI_INT, to, 0, dup, &rq[2]);
    MPI_Isend(&a, 1, MPI_INT, to, 0, MPI_COMM_WORLD, &rq[3]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    CHECK(ga == 100 + from && gb == 200 + from, "contexts kept apart: %d %d", ga, gb);
    /* names */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == 0, "a dup has no name (%s)", name);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "name %s", name);

    /* split: two colours, keys reverse the order */
    MPI_Comm_split(dup, wrank % 2, -wrank, &split);
    int r, n;
    MPI_Comm_rank(split, &r);
    MPI_Comm_size(split, &n);
    int members = (wsize - wrank % 2 + 1) / 2;
    CHECK(n == members, "split size %d, expected %d", n, members);
    CHECK(r == (members - 1 - wrank / 2), "split rank %d", r);
    /* in the reversed order, the previous rank is the next world rank of my colour */
    int prev = r == 0 ? wrank % 2 : wrank + 2;
    ring(split, n == 1 ? wrank : prev, "split");
    MPI_Comm undef;
    MPI_Comm_split(dup, wrank == 0 ? MPI_UNDEFINED : 1, 0, &undef);
    CHECK((wrank == 0) == (undef == MPI_COMM_NULL), "MPI_UNDEFINED gives MPI_COMM_NULL");
    if (undef != MPI_COMM_NULL) {
        ring(undef, wrank == 1 ? wsize - 1 : wrank - 1, "split without rank 0");
        MPI_Comm_free(&undef);
    }
    MPI_Comm_compare(split, dup, &res);
    CHECK(res == (wsize == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "split vs dup %d", res);

    /* create: the even ranks */
    MPI_Group wg, eg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int range[1][3] = {{0, wsize - 1, 2}};
    MPI_Group_range_incl(wg, 1, range, &eg);
    MPI_Comm_create(dup, eg, &cr);
    CHECK((wrank % 2 == 0) == (cr != MPI_COMM_NULL), "create: members get a communicator");
    if (cr != MPI_COMM_NULL) {
        ring(cr, wrank == 0 ? ((wsize - 1) / 2) * 2 : wrank - 2, "create");
        MPI_Comm_free(&cr);
    }
    /* create_group: only the even ranks call */
    if (wrank % 2 == 0) {
        MPI_Comm_create_group(dup, eg, 42, &cg);
        CHECK(cg != MPI_COMM_NULL, "create_group made a communicator");
        ring(cg, wrank == 0 ? ((wsize - 1) / 2) * 2 : wrank - 2, "create_group");
        MPI_Comm cg2;
        MPI_Comm_dup(cg, &cg2);
        ring(cg2, wrank == 0 ? ((wsize - 1) / 2) * 2 : wrank - 2, "dup of create_group");
        MPI_Comm_free(&cg2);
        MPI_Comm_free(&cg);
    }
    MPI_Group_free(&eg);
    MPI_Group_free(&wg);
    MPI_Comm_free(&split);
    CHECK(split == MPI_COMM_NULL, "free sets MPI_COMM_NULL");

    /* errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;
    int cls, rc = MPI_Comm_free(&w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "freeing MPI_COMM_WORLD: class %d", cls);
    rc = MPI_Comm_dup(MPI_COMM_NULL, &w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "dup of MPI_COMM_NULL: class %d", cls);
    int flag = 1;
    MPI_Comm_test_inter(dup, &flag);
    CHECK(flag == 0, "dup is not an intercommunicator");
    rc = MPI_Comm_remote_size(dup, &n);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "remote_size of an intracommunicator: class %d", cls);
    rc = MPI_Send(&a, 1, MPI_INT, wsize, 0, dup);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "send to rank %d: class %d", wsize, cls);

    /* idup gives a complete request */
    MPI_Comm idup;
    MPI_Request req;
    MPI_Comm_idup(dup, &idup, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ring(idup, (wrank + wsize - 1) % wsize, "idup");
    MPI_Comm_free(&idup);
    MPI_Comm_free(&dup);
}

/* MPI_Comm_free while a receive is pending: the receive still completes. */
static void test_deferred_free(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int to = (wrank + 1) % wsize, from = (wrank + wsize - 1) % wsize, got = -1;
    MPI_Request r;
    MPI_Irecv(&got, 1, MPI_INT, from, 3, dup, &r);
    MPI_Send(&wrank, 1, MPI_INT, to, 3, dup);
    MPI_Comm_free(&dup);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(got == from, "receive on a freed communicator got %d", got);
}

/* Thousands of dup/free cycles: ids are reused, never exhausted. */
static void test_cycles(void)
{
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        MPI_Comm c;
        if (MPI_Comm_dup(MPI_COMM_WORLD, &c) != MPI_SUCCESS) {
            bad++;
            break;
        }
        if (i % 500 == 0)
            ring(c, (wrank + wsize - 1) % wsize, "cycle");
        MPI_Comm_free(&c);
    }
    CHECK(bad == 0, "3000 dup/free cycles");
    /* many alive at once, then freed */
    MPI_Comm many[300];
    for (int i = 0; i < 300; i++)
        MPI_Comm_dup(i == 0 ? MPI_COMM_WORLD : many[i - 1], &many[i]);
    ring(many[299], (wrank + wsize - 1) % wsize, "300th nested dup");
    for (int i = 299; i >= 0; i--)
        MPI_Comm_free(&many[i]);
}

/* Threads create communicators at once, each from its own parent. */
#define NTHREADS 3
static MPI_Comm parents[NTHREADS];
static int thread_fail[NTHREADS];

static void *creator(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < 60; i++) {
        MPI_Comm c, s;
        MPI_Comm_dup(parents[t], &c);
        MPI_Comm_split(c, wrank % 2, wrank, &s);
        int r, n, got = -1;
        MPI_Comm_rank(c, &r);
        MPI_Comm_size(c, &n);
        int msg = wrank * 1000 + t * 100 + i % 100;
        MPI_Sendrecv(&msg, 1, MPI_INT, (r + 1) % n, t, &got, 1, MPI_INT, (r + n - 1) % n, t, c,
                     MPI_STATUS_IGNORE);
        if (got != ((r + n - 1) % n) * 1000 + t * 100 + i % 100)
            thread_fail[t]++;
        MPI_Comm_free(&s);
        MPI_Comm_free(&c);
    }
    return NULL;
}

static void test_threads(void)
{
    for (int t = 0; t < NTHREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, creator, (void *)(long)t);
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(thread_fail[t] == 0, "thread %d: %d bad messages", t, thread_fail[t]);
        MPI_Comm_free(&parents[t]);
    }
}

static void test_split_type(void)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wrank, MPI_INFO_NULL, &node);
    int n;
    MPI_Comm_size(node, &n);
    CHECK(n == wsize, "one node: shared split has all %d ranks (%d)", wsize, n);
    ring(node, (wrank + wsize - 1) % wsize, "shared");
    MPI_Comm_free(&node);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &node);
    CHECK(node != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory");
    if (node != MPI_COMM_NULL) {
        char v[64];
        int flag = 0, len = sizeof v;
        MPI_Info used;
        MPI_Comm_get_info(node, &used);
        MPI_Info_get_string(used, "mpi_hw_resource_type", &len, v, &flag);
        CHECK(flag && strcmp(v, "mpi_shared_memory") == 0, "resource type on the result: %s",
              flag ? v : "(unset)");
        MPI_Info_free(&used);
        MPI_Comm_size(node, &n);
        CHECK(n == wsize, "HW_GUIDED node size %d", n);
        MPI_Comm_free(&node);
    }
    MPI_Info_set(info, "mpi_hw_resource_type", "no-such-level");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &node);
    CHECK(node == MPI_COMM_NULL, "HW_GUIDED with an unknown level gives MPI_COMM_NULL");
    MPI_Info_set(info, "mpi_hw_resource_type", "Package");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &node);
    if (node != MPI_COMM_NULL) {
        MPI_Comm_size(node, &n);
        CHECK(n >= 1 && n <= wsize, "Package split size %d", n);
        MPI_Comm_free(&node);
    }
    MPI_Info_free(&info);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &node);
    if (node != MPI_COMM_NULL) {
        MPI_Comm_size(node, &n);
        CHECK(n < wsize, "HW_UNGUIDED gives a strict subset (%d of %d)", n, wsize);
        MPI_Comm_free(&node);
    } else {
        CHECK(1, "HW_UNGUIDED: no level splits this job");
    }
}

/* An empty group makes no communicator, successfully, in every creating
 * call that takes a group (MPI_Comm_create_from_group was an error). */
static void test_empty_groups(void)
{
    MPI_Comm c = MPI_COMM_WORLD;
    int rc = MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "create(MPI_GROUP_EMPTY): rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 5, &c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "create_group(MPI_GROUP_EMPTY): rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "t_comm.empty", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "create_from_group(MPI_GROUP_EMPTY): rc %d",
          rc);
    MPI_Group wg, none;  /* an empty group made by the user */
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, 0, NULL, &none);
    c = MPI_COMM_WORLD;
    rc = MPI_Comm_create_from_group(none, "t_comm.none", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "create_from_group(empty group): rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = MPI_Comm_create(MPI_COMM_WORLD, none, &c);
    CHECK(rc == MPI_SUCCESS && c == MPI_COMM_NULL, "create(empty group): rc %d", rc);
    MPI_Group_free(&none);
    MPI_Group_free(&wg);
}

/* Each bad argument of a send or receive, including handles that look
 * valid by their bits (a freed communicator's and a freed datatype's, a
 * datatype handle given as a communicator), gets its class and a message
 * naming the call and the value; nothing is sent. */
static void expect_error(int rc, int want, const char *text, const char *what)
{
    int cls = rc, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    CHECK(rc != MPI_SUCCESS && cls == want && strstr(msg, text) != NULL,
          "%s: class %d (want %d), message \"%s\" (want \"%s\")", what, cls, want, msg, text);
}

static void test_p2p_args(void)
{
    int buf[2] = {5, 6};
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm dup, gone;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup(MPI_COMM_WORLD, &gone);
    MPI_Comm freed_comm = gone;
    MPI_Comm_free(&gone);
    MPI_Datatype pair, freed_type;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    freed_type = pair;
    MPI_Type_free(&pair);

    expect_error(MPI_Send(buf, 1, MPI_INT, 0, 3, freed_comm), MPI_ERR_COMM,
                 "MPI_Send: 0x", "send on a freed communicator");
    expect_error(MPI_Isend(buf, 1, MPI_INT, 0, 3, freed_comm, &req), MPI_ERR_COMM,
                 "is not a valid communicator", "isend on a freed communicator");
    expect_error(MPI_Recv(buf, 1, MPI_INT, 0, 3, MPI_COMM_NULL, MPI_STATUS_IGNORE),
                 MPI_ERR_COMM, "(MPI_COMM_NULL)", "recv on MPI_COMM_NULL");
    expect_error(MPI_Irecv(buf, 1, MPI_INT, 0, 3, (MPI_Comm)MPI_INT, &req), MPI_ERR_COMM,
                 "MPI_Irecv: 0x", "a datatype handle as the communicator");
    expect_error(MPI_Send(buf, 1, freed_type, 0, 3, dup), MPI_ERR_TYPE,
                 "is not a valid datatype", "send of a freed datatype");
    expect_error(MPI_Irecv(buf, 1, freed_type, 0, 3, dup, &req), MPI_ERR_TYPE,
                 "MPI_Irecv: datatype 0x", "irecv of a freed datatype");
    expect_error(MPI_Send(buf, 1, (MPI_Datatype)MPI_COMM_WORLD, 0, 3, dup), MPI_ERR_TYPE,
                 "is not a valid datatype", "a communicator handle as the datatype");
    expect_error(MPI_Send(buf, 1, MPI_INT, 0, -1, dup), MPI_ERR_TAG, "MPI_Send: tag -1",
                 "negative tag");
    expect_error(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, dup), MPI_ERR_TAG,
                 "is not in 0..MPI_TAG_UB", "MPI_ANY_TAG on a send");
    expect_error(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 3, dup), MPI_ERR_RANK,
                 "MPI_Send: dest", "MPI_ANY_SOURCE as a destination");
    expect_error(MPI_Isend(buf, 1, MPI_INT, -7, 3, dup, &req), MPI_ERR_RANK,
                 "dest -7 is not a rank", "negative destination");
    expect_error(MPI_Irecv(buf, 1, MPI_INT, wsize, 3, dup, &req), MPI_ERR_RANK,
                 "source", "source past the last rank");
    expect_error(MPI_Send(NULL, 1, MPI_INT, 0, 3, dup), MPI_ERR_BUFFER, "buf is NULL",
                 "NULL buffer with data");
    expect_error(MPI_Send(buf, -2, MPI_INT, 0, 3, dup), MPI_ERR_COUNT, "count -2",
                 "negative count");
    expect_error(MPI_Irecv(buf, 1, MPI_INT, 0, 3, dup, NULL), MPI_ERR_ARG, "request is NULL",
                 "NULL request");
    CHECK(req == MPI_REQUEST_NULL, "refused calls leave the request alone");
    /* The valid edge cases pass the same test. */
    int rc = MPI_Send(NULL, 0, MPI_INT, MPI_PROC_NULL, 3, dup);
    CHECK(rc == MPI_SUCCESS, "empty send to MPI_PROC_NULL: rc %d", rc);
    MPI_Status st;
    rc = MPI_Recv(buf, 2, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, dup, &st);
    CHECK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && buf[0] == 5 && buf[1] == 6,
          "receive from MPI_PROC_NULL: rc %d source %d", rc, st.MPI_SOURCE);
    rc = MPI_Sendrecv(&wrank, 1, MPI_INT, wrank, 4, buf, 1, MPI_INT, MPI_ANY_SOURCE, 4, dup, &st);
    CHECK(rc == MPI_SUCCESS && buf[0] == wrank && st.MPI_SOURCE == wrank,
          "self sendrecv: rc %d got %d from %d", rc, buf[0], st.MPI_SOURCE);
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "nothing was sent by the refused calls");
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    test_groups();
    test_dup_split();
    test_deferred_free();
    test_cycles();
    test_threads();
    test_split_type();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_empty_groups();
    test_p2p_args();
    MPI_Finalize();
    return check_summary("t_comm");
}
