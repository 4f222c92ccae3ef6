/* MPI_Comm_idup(_with_info) is truly nonblocking: several outstanding on
 * one communicator beside a nonblocking collective, completed in another
 * order than started; the duplicate refused until its request completes;
 * completion while every process computes without MPI calls (the progress
 * thread runs the agreement); intercommunicators; two threads duplicating
 * different communicators at once. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"

#define NDUP 6

static int rank, size;

/* Every process's rank summed over c: c works and spans everybody. */
static void check_works(MPI_Comm c, MPI_Comm like, const char *what)
{
    int r, n, cmp, sum = 0;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    MPI_Comm_compare(c, like, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "%s: compare %d, want MPI_CONGRUENT", what, cmp);
    MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == n * (n - 1) / 2, "%s: sum of ranks %d, want %d", what, sum, n * (n - 1) / 2);
}

static void several_outstanding(void)
{
    int key, val = 42 + rank, *got, flag;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, &val);
    MPI_Comm dups[NDUP];
    MPI_Request reqs[NDUP + 1];
    int in = rank + 1, out = 0;
    for (int i = 0; i < NDUP; i++) {
        MPI_Info info = MPI_INFO_NULL;
        if (i % 2) {
            MPI_Info_create(&info);
            MPI_Info_set(info, "cadence_test_key", "odd");
            MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &dups[i], &reqs[i]);
            MPI_Info_free(&info);
        } else {
            MPI_Comm_idup(MPI_COMM_WORLD, &dups[i], &reqs[i]);
        }
        if (i == 2)
            MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[NDUP]);
    }
    for (int i = NDUP; i >= 0; i--)  /* the reverse order */
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    CHECK(out == size * (size + 1) / 2, "iallreduce among idups: %d, want %d", out,
          size * (size + 1) / 2);
    for (int i = 0; i < NDUP; i++) {
        check_works(dups[i], MPI_COMM_WORLD, "idup");
        MPI_Comm_get_attr(dups[i], key, &got, &flag);
        CHECK(flag && got == &val, "idup %d: attribute not copied", i);
        MPI_Info info;
        char v[16] = "";
        int has = 0;
        MPI_Comm_get_info(dups[i], &info);
        MPI_Info_get_string(info, "cadence_test_key", &(int){sizeof v}, v, &has);
        MPI_Info_free(&info);
        CHECK(i % 2 ? has && strcmp(v, "odd") == 0 : !has, "idup %d: info key %s", i,
              has ? v : "missing");
        for (int j = 0; j < i; j++) {
            int cmp;
            MPI_Comm_compare(dups[i], dups[j], &cmp);
            CHECK(cmp == MPI_CONGRUENT, "idup %d vs %d: %d", i, j, cmp);
        }
    }
    /* messages on one duplicate never reach another: distinct contexts */
    if (size > 1) {
        int a = -1, b = -1;
        if (rank == 0) {
            int x = 1, y = 2;
            MPI_Send(&x, 1, MPI_INT, 1, 0, dups[0]);
            MPI_Send(&y, 1, MPI_INT, 1, 0, dups[1]);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_INT, 0, 0, dups[1], MPI_STATUS_IGNORE);
            MPI_Recv(&a, 1, MPI_INT, 0, 0, dups[0], MPI_STATUS_IGNORE);
            CHECK(a == 1 && b == 2, "contexts mixed: %d %d", a, b);
        }
    }
    for (int i = 0; i < NDUP; i++)
        MPI_Comm_free(&dups[i]);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
    MPI_Comm_free_keyval(&key);
}

/* Rank 0 starts an idup that cannot finish before rank 1 joins: the
 * handle is refused until then. */
static void refused_until_complete(void)
{
    MPI_Comm nc;
    MPI_Request req;
    int go = 1;
    if (rank == 0) {
        MPI_Comm_idup(MPI_COMM_WORLD, &nc, &req);
        if (size > 1) {
            int n = -1, flag = 0, rc = MPI_Comm_size(nc, &n), cls;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_COMM, "size of an incomplete idup: class %d, want MPI_ERR_COMM",
                  cls);
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            CHECK(!flag, "idup complete before rank 1 started it");
            for (int r = 1; r < size; r++)
                MPI_Send(&go, 1, MPI_INT, r, 7, MPI_COMM_WORLD);
        }
    } else {
        MPI_Recv(&go, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_idup(MPI_COMM_WORLD, &nc, &req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(req == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    check_works(nc, MPI_COMM_WORLD, "idup after refusal");
    MPI_Comm_free(&nc);
}

/* Everybody starts, then computes without calling MPI: the progress
 * thread finishes the agreement meanwhile. */
static void completes_while_computing(void)
{
    MPI_Comm nc;
    MPI_Request req;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_idup(MPI_COMM_WORLD, &nc, &req);
    volatile double x = 0;
    for (int i = 0; i < 40; i++) {
        usleep(50000);  /* 2 s of "computation" without MPI calls */
        for (int k = 0; k < 100000; k++)
            x += k * 1e-9;
    }
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "idup not complete after every process computed for 2 s without MPI calls");
    if (!flag)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_works(nc, MPI_COMM_WORLD, "idup during computation");
    MPI_Comm_free(&nc);
}

static void on_intercomm(void)
{
    if (size < 2)
        return;
    MPI_Comm half, inter, dup;
    int color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 5, &inter);
    MPI_Request req[2];
    MPI_Comm dup2;
    MPI_Comm_idup(inter, &dup, &req[0]);
    MPI_Comm_idup(inter, &dup2, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    int flag, rs, mine;
    MPI_Comm_size(half, &mine);
    MPI_Comm_test_inter(dup, &flag);
    MPI_Comm_remote_size(dup, &rs);
    CHECK(flag && rs == size - mine, "idup of an intercommunicator: inter %d, remote size %d, "
          "want %d", flag, rs, size - mine);
    /* point-to-point across: local rank 0 of each side swaps world ranks */
    int lr;
    MPI_Comm_rank(dup, &lr);
    if (lr == 0) {
        int other = -1;
        MPI_Sendrecv(&rank, 1, MPI_INT, 0, 3, &other, 1, MPI_INT, 0, 3, dup, MPI_STATUS_IGNORE);
        CHECK(other == 1 - color, "across the duplicate: leader %d, want %d", other, 1 - color);
    }
    MPI_Comm merged;
    MPI_Intercomm_merge(dup2, color, &merged);
    int msize;
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size, "merge of an idup'd intercommunicator: size %d", msize);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* Two threads, each duplicating its own communicator again and again. */
struct tharg {
    MPI_Comm base;
    int fails;
};

static void *thread_main(void *p)
{
    struct tharg *a = p;
    for (int i = 0; i < 30; i++) {
        MPI_Comm c[2];
        MPI_Request r[2];
        MPI_Comm_idup(a->base, &c[0], &r[0]);
        MPI_Comm_idup(a->base, &c[1], &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 2; k++) {
            int me, sum = 0, n;
            MPI_Comm_rank(c[k], &me);
            MPI_Comm_size(c[k], &n);
            MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c[k]);
            if (sum != n * (n - 1) / 2)
                a->fails++;
            MPI_Comm_free(&c[k]);
        }
    }
    return NULL;
}

static void threads(void)
{
    int provided;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("threads part skipped: MPI_THREAD_MULTIPLE not provided\n");
        return;
    }
    struct tharg a[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &a[0].base);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &a[1].base);  /* reversed order */
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        a[i].fails = 0;
        pthread_create(&t[i], NULL, thread_main, &a[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(a[i].fails == 0, "thread %d: %d duplicates did not work", i, a[i].fails);
        MPI_Comm_free(&a[i].base);
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    several_outstanding();
    refused_until_complete();
    completes_while_computing();
    on_intercomm();
    threads();
    int fails = 0;
    MPI_Allreduce(&check_failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0)
        return check_summary("t_comm_idup") || fails;
    return check_summary("t_comm_idup");
}
