/*
 * Derived datatypes between processes.  Rank 0
 * sends, rank 1 receives (a one-process run sends to itself: the self
 * path); run under mpirun with the shm transport's eager, CMA rendezvous and
 * pipelined-copy paths chosen by CADENCE_SHM_* settings.  Every case runs at
 * an eager size and a rendezvous size:
 *   - a strided vector received as contiguous, and contiguous received as a
 *     vector;
 *   - an array of structs with holes, received into a struct whose fields
 *     lie in another order (same type signature, different layout);
 *   - resized column types in arrays (matrix columns to rows);
 *   - truncation: the part that fits arrives, MPI_ERR_TRUNCATE is returned;
 *   - a partial receive: MPI_Get_count is MPI_UNDEFINED, MPI_Get_elements
 *     counts the basic elements;
 *   - a type freed while its send is in flight;
 *   - uncommitted types, MPI_DATATYPE_NULL and negative counts refused.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check_mpi.h"

static int rank, size, peer_to, peer_from;
static const int sizes[] = {10, 100000};   /* eager, rendezvous (in elements) */

/* Rank 0 posts the send, the receiving rank the receive; with one process
 * both, in that order, completed together. */
static void exchange(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                     MPI_Datatype rtype, int tag, MPI_Status *st, int *rc)
{
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    *rc = MPI_SUCCESS;
    if (rank == 0)
        MPI_Isend(sbuf, scount, stype, peer_to, tag, MPI_COMM_WORLD, &rq[0]);
    if (rank == peer_to)
        MPI_Irecv(rbuf, rcount, rtype, peer_from, tag, MPI_COMM_WORLD, &rq[1]);
    if (MPI_Waitall(2, rq, sts) != MPI_SUCCESS)
        *rc = sts[1].MPI_ERROR != MPI_SUCCESS ? sts[1].MPI_ERROR : sts[0].MPI_ERROR;
    *st = sts[1];
}

static int receiver(void)
{
    return rank == peer_to;
}

static void vectors(int n)
{
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *strided = malloc(2 * n * sizeof(int)), *flat = malloc(n * sizeof(int));
    for (int i = 0; i < 2 * n; i++)
        strided[i] = i % 2 ? -1 : 3 * (i / 2) + 1;
    memset(flat, 0, n * sizeof(int));
    MPI_Status st;
    int rc, ok = 1, count = -1, elems = -1;
    exchange(strided, 1, vec, flat, n, MPI_INT, 1, &st, &rc);
    if (receiver()) {
        for (int i = 0; i < n; i++)
            ok &= flat[i] == 3 * i + 1;
        MPI_Get_count(&st, MPI_INT, &count);
        MPI_Get_elements(&st, MPI_INT, &elems);
        CHECK(rc == MPI_SUCCESS && ok && count == n && elems == n,
              "vector of %d ints -> contiguous: rc %d data %d count %d elements %d", n, rc, ok,
              count, elems);
    }
    /* and back: contiguous -> vector; the holes keep their values */
    for (int i = 0; i < n; i++)
        flat[i] = 5 * i - 2;
    for (int i = 0; i < 2 * n; i++)
        strided[i] = -7;
    exchange(flat, n, MPI_INT, strided, 1, vec, 2, &st, &rc);
    if (receiver()) {
        ok = 1;
        for (int i = 0; i < 2 * n; i++)
            ok &= strided[i] == (i % 2 ? -7 : 5 * (i / 2) - 2);
        MPI_Get_count(&st, vec, &count);
        MPI_Get_elements(&st, vec, &elems);
        CHECK(rc == MPI_SUCCESS && ok && count == 1 && elems == n,
              "%d contiguous ints -> vector: data %d count %d elements %d", n, ok, count, elems);
    }
    MPI_Type_free(&vec);
    free(strided);
    free(flat);
}

/* Sender's record: holes after c and after i.  Receiver's: the same fields
 * (char, double, int in type-map order) placed differently. */
struct rec_a {
    char c;
    double d;
    int i;
};
struct rec_b {
    int i;
    double d;
    char pad[3];
    char c;
};

static MPI_Datatype record_type(const MPI_Aint disp[3], MPI_Aint extent)
{
    int bl[3] = {1, 1, 1};
    MPI_Datatype ts[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, s, r;
    MPI_Type_create_struct(3, bl, disp, ts, &s);
    MPI_Type_create_resized(s, 0, extent, &r);
    MPI_Type_free(&s);
    MPI_Type_commit(&r);
    return r;
}

static void structs(int n)
{
    MPI_Aint da[3] = {offsetof(struct rec_a, c), offsetof(struct rec_a, d), offsetof(struct rec_a, i)};
    MPI_Aint db[3] = {offsetof(struct rec_b, c), offsetof(struct rec_b, d), offsetof(struct rec_b, i)};
    MPI_Datatype ta = record_type(da, sizeof(struct rec_a)), tb = record_type(db, sizeof(struct rec_b));
    struct rec_a *a = calloc(n, sizeof *a);
    struct rec_b *b = malloc(n * sizeof *b);
    for (int k = 0; k < n; k++) {
        a[k].c = (char)('a' + k % 26);
        a[k].d = k * 0.5;
        a[k].i = -k;
    }
    memset(b, 0x5a, n * sizeof *b);
    MPI_Status st;
    int rc, ok = 1, count = -1;
    exchange(a, n, ta, b, n, tb, 3, &st, &rc);
    if (receiver()) {
        for (int k = 0; k < n; k++)
            ok &= b[k].c == (char)('a' + k % 26) && b[k].d == k * 0.5 && b[k].i == -k &&
                  b[k].pad[0] == 0x5a && b[k].pad[2] == 0x5a;
        MPI_Get_count(&st, tb, &count);
        CHECK(rc == MPI_SUCCESS && ok && count == n,
              "%d structs with holes -> another layout, same signature: data %d count %d", n, ok,
              count);
    }
    MPI_Type_free(&ta);
    MPI_Type_free(&tb);
    free(a);
    free(b);
}

/* Columns of a rows x cols matrix (a column type resized to one double, so
 * `cols` of them in a row are the whole matrix column by column) received
 * as contiguous: the transpose. */
static void resized_columns(int n)
{
    int rows = n < 100 ? 4 : 400, cols = n < 100 ? 3 : 250;
    MPI_Datatype col0, col;
    MPI_Type_vector(rows, 1, cols, MPI_DOUBLE, &col0);
    MPI_Type_create_resized(col0, 0, sizeof(double), &col);
    MPI_Type_free(&col0);
    MPI_Type_commit(&col);
    double *m = malloc((size_t)rows * cols * sizeof(double));
    double *t = calloc((size_t)rows * cols, sizeof(double));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            m[r * cols + c] = r * 1000 + c;
    MPI_Status st;
    int rc, ok = 1, elems = -1;
    exchange(m, cols, col, t, rows * cols, MPI_DOUBLE, 4, &st, &rc);
    if (receiver()) {
        for (int c = 0; c < cols; c++)
            for (int r = 0; r < rows; r++)
                ok &= t[c * rows + r] == r * 1000 + c;
        MPI_Get_elements(&st, MPI_DOUBLE, &elems);
        CHECK(rc == MPI_SUCCESS && ok && elems == rows * cols,
              "%d resized columns of %d -> transposed contiguous: data %d elements %d", cols,
              rows, ok, elems);
    }
    MPI_Type_free(&col);
    free(m);
    free(t);
}

/* More data than the receive's vector holds: what fits lands in the
 * strided slots, the rest is dropped, MPI_ERR_TRUNCATE. */
static void truncation(int n)
{
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *src = malloc((n + 5) * sizeof(int)), *dst = malloc((2 * n + 4) * sizeof(int));
    for (int i = 0; i < n + 5; i++)
        src[i] = i + 100;
    for (int i = 0; i < 2 * n + 4; i++)
        dst[i] = -1;
    MPI_Status st;
    int rc, ok = 1, elems = -1;
    exchange(src, n + 5, MPI_INT, dst, 1, vec, 5, &st, &rc);
    if (receiver()) {
        int cls = -1;
        MPI_Error_class(rc, &cls);
        for (int i = 0; i < 2 * n + 4; i++)
            ok &= dst[i] == (i % 2 || i >= 2 * n ? -1 : i / 2 + 100);
        MPI_Get_elements(&st, MPI_INT, &elems);
        CHECK(cls == MPI_ERR_TRUNCATE && ok && elems == n,
              "%d ints into a vector of %d: class %d, data %d, elements %d", n + 5, n, cls, ok,
              elems);
    }
    MPI_Type_free(&vec);
    free(src);
    free(dst);
}

/* Fewer elements than the receive asked for, not a whole number of its
 * type: count is MPI_UNDEFINED, elements are the ints that came. */
static void partial(int n)
{
    int k = n < 100 ? 3 : 300;   /* ints per vector, every other slot */
    MPI_Datatype vec0, vec;
    MPI_Type_vector(k, 1, 2, MPI_INT, &vec0);
    MPI_Type_create_resized(vec0, 0, 2 * k * sizeof(int), &vec);
    MPI_Type_free(&vec0);
    MPI_Type_commit(&vec);
    int sent = 3 * k + 2, cap = 5;
    int *src = malloc(sent * sizeof(int)), *dst = malloc(2 * k * cap * sizeof(int));
    for (int i = 0; i < sent; i++)
        src[i] = 7 * i;
    for (int i = 0; i < 2 * k * cap; i++)
        dst[i] = -3;
    MPI_Status st;
    int rc, ok = 1, count = 0, elems = -1;
    MPI_Count elems_c = -1;
    exchange(src, sent, MPI_INT, dst, cap, vec, 6, &st, &rc);
    if (receiver()) {
        for (int i = 0; i < sent; i++)
            ok &= dst[2 * i] == 7 * i && dst[2 * i + 1] == -3;
        ok &= dst[2 * sent] == -3;
        MPI_Get_count(&st, vec, &count);
        MPI_Get_elements(&st, vec, &elems);
        MPI_Get_elements_c(&st, vec, &elems_c);
        CHECK(rc == MPI_SUCCESS && ok && count == MPI_UNDEFINED && elems == sent && elems_c == sent,
              "%d ints into %d vectors of %d: data %d count %d elements %d/%lld", sent, cap, k,
              ok, count, elems, (long long)elems_c);
    }
    MPI_Type_free(&vec);
    free(src);
    free(dst);
}

/* MPI_Type_free right after MPI_Isend: the send keeps its type alive. */
static void freed_in_flight(int n)
{
    MPI_Datatype vec;
    MPI_Type_vector(n, 2, 3, MPI_SHORT, &vec);
    MPI_Type_commit(&vec);
    short *s = malloc(3 * n * sizeof(short)), *r = calloc(2 * n, sizeof(short));
    for (int i = 0; i < 3 * n; i++)
        s[i] = (short)(i % 3 == 2 ? -1 : i);
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (rank == 0)
        MPI_Isend(s, 1, vec, peer_to, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Type_free(&vec);
    if (receiver())
        MPI_Irecv(r, 2 * n, MPI_SHORT, peer_from, 7, MPI_COMM_WORLD, &rq[1]);
    int rc = MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    if (receiver()) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok &= r[2 * i] == (short)(3 * i) && r[2 * i + 1] == (short)(3 * i + 1);
        CHECK(rc == MPI_SUCCESS && ok, "type freed while its send of %d blocks is in flight", n);
    }
    free(s);
    free(r);
}

static int class_of(int rc)
{
    int cls = rc;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* Bad datatype arguments are refused before anything is sent. */
static void bad_input(void)
{
    MPI_Datatype v;
    int buf[8] = {0};
    MPI_Request rq;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    int rc = MPI_Send(buf, 1, v, 0, 8, MPI_COMM_SELF);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "send of an uncommitted type: class %d", class_of(rc));
    rc = MPI_Irecv(buf, 1, v, 0, 8, MPI_COMM_SELF, &rq);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "receive into an uncommitted type: class %d", class_of(rc));
    MPI_Type_free(&v);
    rc = MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 8, MPI_COMM_SELF);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: class %d", class_of(rc));
    rc = MPI_Send(buf, -1, MPI_INT, 0, 8, MPI_COMM_SELF);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "negative count: class %d", class_of(rc));
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, 8, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "nothing was sent by the refused calls");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    bad_input();
    peer_to = size > 1 ? 1 : 0;
    peer_from = 0;
    if (rank <= 1) {
        for (int s = 0; s < 2; s++) {
            vectors(sizes[s]);
            structs(sizes[s]);
            resized_columns(sizes[s]);
            truncation(sizes[s]);
            partial(sizes[s]);
            freed_in_flight(sizes[s]);
        }
    }
    MPI_Finalize();
    char name[32];
    snprintf(name, sizeof name, "t_dt_p2p[%d]", rank);
    return check_summary(name);
}
