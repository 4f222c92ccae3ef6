/*
 * MPIX streams of info type "cudaStream_t" (api/offload_cuda.c), run
 * against the stub CUDA runtime of tests/stub/cuda: a CUDA stream is a
 * host thread running what is launched on it in order, so the test checks
 * Cadence's side -- the stream's creation from MPIX_Info_set_hex, every
 * enqueue call, MPI_Send/MPI_Recv enqueued, order against work launched on
 * the same stream before and after (the seed's "kernel" stand-ins), errors
 * -- and nothing of a GPU.  2 ranks.
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"

static int rank;

static bool message_names(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    return strstr(msg, what) != NULL;
}

/* stand-ins for kernels, run by the stream in its order */
struct fill {
    int *x, n, base;
};

static atomic_bool filled;
static atomic_bool released;  /* the enqueue calls have returned */

static void fill_slowly(void *p)
{
    struct fill *f = p;
    /* a send enqueued after it must not read x before it is done; it waits
     * until the main thread is past its enqueue calls (which must not wait
     * for the stream), or 5 s if one of them does wait (then the check of
     * filled fails) -- not a fixed time, which a loaded run may exceed */
    for (int i = 0; i < 5000 && !atomic_load(&released); i++)
        usleep(1000);
    for (int i = 0; i < f->n; i++)
        f->x[i] = f->base + i;
    atomic_store(&filled, true);
}

struct look {
    const int *a;
    int n, base, bad;
};

static void look_at(void *p)
{
    struct look *l = p;
    for (int i = 0; i < l->n; i++)
        l->bad += l->a[i] != l->base + i;
}

static int stream_of(cudaStream_t cs, MPIX_Stream *st)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &cs, sizeof cs);
    int rc = MPIX_Stream_create(info, st);
    MPI_Info_free(&info);
    return rc;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int peer = 1 - rank;
    enum { N = 1000 };

    cudaStream_t cs;
    CHECK(cudaStreamCreate(&cs) == cudaSuccess, "a (stub) CUDA stream");
    MPIX_Stream st;
    int rc = stream_of(cs, &st);
    CHECK(rc == MPI_SUCCESS, "MPIX_Stream_create of type cudaStream_t: %d", rc);
    MPI_Comm gc;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &gc);
    MPI_Comm_set_errhandler(gc, MPI_ERRORS_RETURN);
    static int x[N], a[N], c[N];
    int y = 0, b = 0, sum = 0, one = rank + 1;
    if (rank == 0) {
        struct fill f = {x, N, 100};
        cudaLaunchHostFunc(cs, fill_slowly, &f);
        MPIX_Send_enqueue(x, N, MPI_INT, peer, 1, gc);  /* after the fill, in stream order */
        y = 22;
        MPI_Send(&y, 1, MPI_INT, peer, 2, gc);          /* enqueued too: returns at once */
        MPI_Request r;
        MPIX_Isend_enqueue(x, N, MPI_INT, peer, 3, gc, &r);
        MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE);
        CHECK(r == MPI_REQUEST_NULL, "MPIX_Wait_enqueue gives the handle back at once");
        MPIX_Allreduce_enqueue(&one, &sum, 1, MPI_INT, MPI_SUM, gc);
        CHECK(!atomic_load(&filled), "the enqueue calls returned before the stream ran them");
        atomic_store(&released, true);
        CHECK(cudaStreamSynchronize(cs) == cudaSuccess && sum == 3,
              "after cudaStreamSynchronize: allreduce %d", sum);
    } else {
        MPI_Status s1, s2, s3[1];
        MPIX_Recv_enqueue(a, N, MPI_INT, peer, MPI_ANY_TAG, gc, &s1);
        struct look l = {a, N, 100, 0};
        cudaLaunchHostFunc(cs, look_at, &l);            /* after the receive completed */
        MPI_Recv(&b, 1, MPI_INT, peer, MPI_ANY_TAG, gc, &s2);
        MPI_Request r;
        MPIX_Irecv_enqueue(c, N, MPI_INT, peer, 3, gc, &r);
        MPIX_Waitall_enqueue(1, &r, s3);
        MPIX_Allreduce_enqueue(&one, &sum, 1, MPI_INT, MPI_SUM, gc);
        rc = MPIX_Stream_synchronize(st);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += c[i] != 100 + i;
        CHECK(rc == MPI_SUCCESS && l.bad == 0 && s1.MPI_TAG == 1 && b == 22 &&
                  s2.MPI_TAG == 2 && bad == 0 && s3[0].MPI_TAG == 3 && sum == 3,
              "in stream order: rc %d, %d of a wrong when the stream looked, tag %d, b %d tag "
              "%d, %d of c wrong (tag %d), allreduce %d", rc, l.bad, s1.MPI_TAG, b,
              s2.MPI_TAG, bad, s3[0].MPI_TAG, sum);
    }
    MPI_Comm_free(&gc);
    CHECK(MPIX_Stream_free(&st) == MPI_SUCCESS, "the stream freed");

    /* a second round on a stream of its own, many operations deep */
    CHECK(stream_of(cs, &st) == MPI_SUCCESS, "a stream again on the same CUDA stream");
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &gc);
    int v[64] = {0};
    for (int i = 0; i < 64; i++) {
        if (rank == 0) {
            v[i] = i * 7;
            MPIX_Send_enqueue(&v[i], 1, MPI_INT, peer, i, gc);
        } else {
            MPIX_Recv_enqueue(&v[i], 1, MPI_INT, peer, i, gc, MPI_STATUS_IGNORE);
        }
    }
    cudaStreamSynchronize(cs);
    int bad = 0;
    for (int i = 0; i < 64; i++)
        bad += v[i] != i * 7;
    CHECK(bad == 0, "64 enqueued messages: %d wrong", bad);
    MPI_Comm_free(&gc);
    MPIX_Stream_free(&st);

    /* errors */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    EXPECT(MPIX_Stream_create(info, &st), MPI_ERR_INFO_KEY, "type cudaStream_t without value");
    MPIX_Info_set_hex(info, "value", &one, sizeof one);
    EXPECT(MPIX_Stream_create(info, &st), MPI_ERR_INFO_VALUE, "a value of 4 bytes");
    MPI_Info_free(&info);
    rc = stream_of(NULL, &st);  /* the stub has no default stream */
    CHECK(rc == MPI_SUCCESS, "a stream on the NULL CUDA stream is made: %d", rc);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, st, &gc);
    MPI_Comm_set_errhandler(gc, MPI_ERRORS_RETURN);
    rc = MPIX_Send_enqueue(&one, 1, MPI_INT, peer, 0, gc);
    CHECK(rc != MPI_SUCCESS && message_names(rc, "invalid resource handle"),
          "the runtime's refusal reaches the caller, with its words: %d", rc);
    MPI_Comm_free(&gc);
    CHECK(MPIX_Stream_free(&st) == MPI_SUCCESS, "nothing left enqueued after the refusal");
    cudaStreamDestroy(cs);
    MPI_Finalize();
    return check_summary("t_stream_cuda");
}
