/*
 * Kept schedules (coll/coll.c): a small blocking or nonblocking collective
 * leaves its schedule for an identical next call; a nonblocking call hands
 * the kept schedule out as its request.  Every result is checked against
 * a serial reference while the calls are arranged so that ranks find kept
 * schedules at different times (one rank reuses its buffers, the others
 * alternate), more distinct calls than are kept cycle through, nonblocking
 * collectives interleave, identical nonblocking calls are outstanding at
 * once, and user ops, datatypes and communicators that kept schedules
 * refer to are freed and replaced.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "rank %d: ", rank);            \
            fprintf(stderr, __VA_ARGS__);                  \
            fprintf(stderr, "\n");                         \
            failures++;                                    \
        }                                                  \
    } while (0)

enum { N = 8 };

/* Rank r contributes r + it + i at element i. */
static void fill(double *v, int r, int it)
{
    for (int i = 0; i < N; i++)
        v[i] = r + it + i;
}

static double sum_of(int it, int i)
{
    return (double)size * (size - 1) / 2 + (double)size * (it + i);
}

/* Blocking allreduce, reduce, bcast and barrier in a loop; rank 0 always
 * uses the same buffers, the others alternate between two pairs, so hits
 * and misses differ across ranks. */
static void mixed_hits(MPI_Comm comm)
{
    double sb[2][N], rb[2][N];
    for (int it = 0; it < 40; it++) {
        int k = rank == 0 ? 0 : it % 2;
        fill(sb[k], rank, it);
        MPI_Allreduce(sb[k], rb[k], N, MPI_DOUBLE, MPI_SUM, comm);
        for (int i = 0; i < N; i++)
            CHECK(rb[k][i] == sum_of(it, i), "allreduce it %d [%d] = %g, want %g", it, i,
                  rb[k][i], sum_of(it, i));
        int root = it % size;
        memset(rb[k], 0, sizeof rb[k]);
        MPI_Reduce(sb[k], rb[k], N, MPI_DOUBLE, MPI_SUM, root, comm);
        if (rank == root)
            for (int i = 0; i < N; i++)
                CHECK(rb[k][i] == sum_of(it, i), "reduce it %d root %d [%d] = %g", it, root, i,
                      rb[k][i]);
        int v[3] = {0, 0, 0};
        if (rank == root)
            v[0] = it, v[1] = 2 * it, v[2] = 3 * it;
        MPI_Bcast(v, 3, MPI_INT, root, comm);
        CHECK(v[0] == it && v[1] == 2 * it && v[2] == 3 * it, "bcast it %d: %d %d %d", it, v[0],
              v[1], v[2]);
        MPI_Barrier(comm);
    }
}

/* Six distinct calls cycling through four kept slots, with a nonblocking
 * allreduce outstanding across some of them. */
static void cycling(MPI_Comm comm)
{
    double sb[6][N], rb[6][N], nsb[N], nrb[N];
    for (int it = 0; it < 30; it++) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (it % 3 == 0) {
            fill(nsb, rank, it + 100);
            MPI_Iallreduce(nsb, nrb, N, MPI_DOUBLE, MPI_SUM, comm, &req);
        }
        int k = it % 6;
        fill(sb[k], rank, it);
        MPI_Allreduce(sb[k], rb[k], N - k, MPI_DOUBLE, MPI_SUM, comm);
        for (int i = 0; i < N - k; i++)
            CHECK(rb[k][i] == sum_of(it, i), "cycling it %d [%d] = %g", it, i, rb[k][i]);
        if (req != MPI_REQUEST_NULL) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                CHECK(nrb[i] == sum_of(it + 100, i), "iallreduce it %d [%d] = %g", it, i, nrb[i]);
        }
    }
}

/* Nonblocking calls repeated with the same arguments (rank 0 always, the
 * others alternating between two buffer pairs for the allreduce), two
 * identical Ibarriers outstanding together, completion by MPI_Waitall or
 * by polling MPI_Testall, in-place alltoall, and a blocking allreduce
 * alternating with a nonblocking one of the same key.  The handed-out
 * request is an ordinary nonblocking one: MPI_Start refuses it and its
 * completion sets the handle to MPI_REQUEST_NULL. */
static void nonblocking(MPI_Comm comm)
{
    double sb[2][N], rb[2][N], bsb[N], brb[N];
    int *asb = malloc(2 * size * sizeof(int)), *arb = malloc(2 * size * sizeof(int));
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int it = 0; it < 40; it++) {
        MPI_Request req[5];
        int k = rank == 0 ? 0 : it % 2, root = it % size, v[3] = {0, 0, 0};
        fill(sb[k], rank, it);
        MPI_Iallreduce(sb[k], rb[k], N, MPI_DOUBLE, MPI_SUM, comm, &req[0]);
        if (rank == root)
            v[0] = it, v[1] = 2 * it, v[2] = 3 * it;
        MPI_Ibcast(v, 3, MPI_INT, root, comm, &req[1]);
        for (int j = 0; j < size; j++) {
            asb[2 * j] = rank * 1000 + j + it;
            asb[2 * j + 1] = -(rank * 1000 + j + it);
        }
        MPI_Ialltoall(asb, 2, MPI_INT, arb, 2, MPI_INT, comm, &req[2]);
        MPI_Ibarrier(comm, &req[3]);
        MPI_Ibarrier(comm, &req[4]);
        if (it == 3)
            CHECK(MPI_Start(&req[0]) != MPI_SUCCESS, "MPI_Start took a nonblocking request");
        if (it % 2) {
            MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
        } else {
            int flag = 0;
            while (!flag)
                MPI_Testall(5, req, &flag, MPI_STATUSES_IGNORE);
        }
        for (int i = 0; i < 5; i++)
            CHECK(req[i] == MPI_REQUEST_NULL, "it %d: request %d not freed by completion", it, i);
        for (int i = 0; i < N; i++)
            CHECK(rb[k][i] == sum_of(it, i), "iallreduce it %d [%d] = %g, want %g", it, i,
                  rb[k][i], sum_of(it, i));
        CHECK(v[0] == it && v[1] == 2 * it && v[2] == 3 * it, "ibcast it %d: %d %d %d", it, v[0],
              v[1], v[2]);
        for (int j = 0; j < size; j++)
            CHECK(arb[2 * j] == j * 1000 + rank + it && arb[2 * j + 1] == -(j * 1000 + rank + it),
                  "ialltoall it %d from %d: %d %d", it, j, arb[2 * j], arb[2 * j + 1]);
        /* in place: every rank's block j becomes rank j's block for it */
        for (int j = 0; j < size; j++)
            arb[2 * j] = arb[2 * j + 1] = rank * 100 + j + it;
        MPI_Request r;
        MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, arb, 2, MPI_INT, comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int j = 0; j < size; j++)
            CHECK(arb[2 * j] == j * 100 + rank + it && arb[2 * j + 1] == j * 100 + rank + it,
                  "in-place ialltoall it %d from %d: %d", it, j, arb[2 * j]);
        fill(bsb, rank, it + 7);
        if (it % 2) {
            MPI_Allreduce(bsb, brb, N, MPI_DOUBLE, MPI_SUM, comm);
        } else {
            MPI_Iallreduce(bsb, brb, N, MPI_DOUBLE, MPI_SUM, comm, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < N; i++)
            CHECK(brb[i] == sum_of(it + 7, i), "mixed allreduce it %d [%d] = %g", it, i, brb[i]);
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    free(asb);
    free(arb);
}

static void op_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] > b[i] ? a[i] : b[i];
}

static void op_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* The same buffers with a user op freed and another created (the new op
 * may get the old one's handle), then a datatype freed and replaced by one
 * of another layout. */
static void replaced_objects(MPI_Comm comm)
{
    double sb[2 * N], rb[2 * N];
    for (int round = 0; round < 4; round++) {
        MPI_Op op;
        MPI_Op_create(round % 2 ? op_max : op_sum, 1, &op);
        for (int it = 0; it < 3; it++) {
            fill(sb, rank, it);
            MPI_Allreduce(sb, rb, N, MPI_DOUBLE, op, comm);
            for (int i = 0; i < N; i++) {
                double want = round % 2 ? size - 1 + it + i : sum_of(it, i);
                CHECK(rb[i] == want, "user op round %d it %d [%d] = %g, want %g", round, it, i,
                      rb[i], want);
            }
        }
        MPI_Op_free(&op);
    }
    for (int round = 0; round < 4; round++) {
        MPI_Datatype t;
        if (round % 2)
            MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &t);  /* every other element */
        else
            MPI_Type_contiguous(N, MPI_DOUBLE, &t);
        MPI_Type_commit(&t);
        for (int it = 0; it < 3; it++) {
            for (int i = 0; i < 2 * N; i++) {
                sb[i] = rank + it + i;
                rb[i] = -1;
            }
            MPI_Allreduce(sb, rb, 1, t, MPI_SUM, comm);
            for (int i = 0; i < 2 * N; i++) {
                bool in = round % 2 ? (i % 2 == 0 && i < 2 * N - 1) : i < N;
                double want = in ? sum_of(it, i) : -1;
                CHECK(rb[i] == want, "type round %d it %d [%d] = %g, want %g", round, it, i,
                      rb[i], want);
            }
        }
        MPI_Type_free(&t);
    }
}

/* MPI_Alltoall's arguments are checked once a side before a kept or
 * direct schedule runs: every form still refuses bad ones with the class
 * and the argument named, before anything is sent. */
static void alltoall_errors(MPI_Comm comm)
{
    int sb[64], rb[64];
    MPI_Datatype loose;  /* never committed */
    MPI_Type_contiguous(2, MPI_INT, &loose);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const struct {
        const void *sbuf;
        int scount;
        MPI_Datatype stype;
        void *rbuf;
        int rcount;
        MPI_Datatype rtype;
        int cls;
        const char *words;
    } bad[] = {
        {sb, 1, MPI_INT, sb, 1, MPI_INT, MPI_ERR_BUFFER, "same buffer"},
        {sb, 1, MPI_DATATYPE_NULL, rb, 1, MPI_INT, MPI_ERR_TYPE, "MPI_DATATYPE_NULL"},
        {sb, 1, MPI_INT, rb, 1, loose, MPI_ERR_TYPE, "not committed"},
        {sb, 1, MPI_INT, rb, -1, MPI_INT, MPI_ERR_COUNT, "recvtype count -1"},
        {sb, -2, MPI_INT, rb, 1, MPI_INT, MPI_ERR_COUNT, "sendtype count -2"},
        {sb, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_ERR_BUFFER, "recvbuf"},
    };
    for (int form = 0; form < 3; form++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            for (int rep = 0; rep < 2; rep++) {  /* the second after a good call kept one */
                MPI_Request r = MPI_REQUEST_NULL;
                int rc = form == 0 ? MPI_Alltoall(bad[i].sbuf, bad[i].scount, bad[i].stype,
                                                  bad[i].rbuf, bad[i].rcount, bad[i].rtype, comm)
                         : form == 1 ? MPI_Ialltoall(bad[i].sbuf, bad[i].scount, bad[i].stype,
                                                     bad[i].rbuf, bad[i].rcount, bad[i].rtype,
                                                     comm, &r)
                                     : MPI_Alltoall_init(bad[i].sbuf, bad[i].scount,
                                                         bad[i].stype, bad[i].rbuf,
                                                         bad[i].rcount, bad[i].rtype, comm,
                                                         MPI_INFO_NULL, &r);
                int cls = -1, len = 0;
                char msg[MPI_MAX_ERROR_STRING] = "";
                MPI_Error_class(rc, &cls);
                MPI_Error_string(rc, msg, &len);
                CHECK(cls == bad[i].cls && strstr(msg, bad[i].words) != NULL &&
                          r == MPI_REQUEST_NULL,
                      "alltoall form %d case %zu: class %d (want %d), '%s' (want '%s')", form, i,
                      cls, bad[i].cls, msg, bad[i].words);
                for (int j = 0; j < size; j++)
                    sb[j] = rank * 10 + j;
                MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, comm);
                for (int j = 0; j < size; j++)
                    CHECK(rb[j] == j * 10 + rank, "alltoall after case %zu: from %d got %d", i, j,
                          rb[j]);
            }
        }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&loose);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mixed_hits(MPI_COMM_WORLD);
    cycling(MPI_COMM_WORLD);
    nonblocking(MPI_COMM_WORLD);
    replaced_objects(MPI_COMM_WORLD);
    alltoall_errors(MPI_COMM_WORLD);
    for (int d = 0; d < 3; d++) {  /* communicators freed with kept schedules */
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        mixed_hits(dup);
        nonblocking(dup);
        MPI_Comm_free(&dup);
    }
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("t_coll_kept: %s (%d failures)\n", all == 0 ? "ok" : "FAILED", all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
