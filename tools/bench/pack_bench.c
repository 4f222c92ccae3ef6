/*
 * Pack throughput of strided vectors against memcpy of the same bytes.
 * Compiles against any MPI (mpicc pack_bench.c -o pack_bench) and runs as a
 * one-process job.  For each block size (bytes of a vector block) it packs a
 * vector of doubles with MPI_Pack and copies the same number of contiguous
 * bytes with memcpy, and prints CSV:
 *   mpi,block_bytes,total_bytes,pack_gbps,memcpy_gbps,ratio
 * where ratio = memcpy time / pack time (1.0 = as fast as memcpy), each time
 * the mean of 10 calls after a warm-up one.
 * Usage: pack_bench [label] [total_bytes]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mean seconds of reps calls after one warm-up call. */
static double mean_of(int reps, void (*fn)(void *), void *arg)
{
    fn(arg);
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; r++)
        fn(arg);
    return (MPI_Wtime() - t0) / reps;
}

struct job {
    char *src, *dst;
    long bytes;
    MPI_Datatype type;
};

static void do_pack(void *p)
{
    struct job *j = p;
    int pos = 0;
    MPI_Pack(j->src, 1, j->type, j->dst, (int)j->bytes, &pos, MPI_COMM_WORLD);
}

static void do_memcpy(void *p)
{
    struct job *j = p;
    memcpy(j->dst, j->src, (size_t)j->bytes);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *label = argc > 1 ? argv[1] : "mpi";
    long total = argc > 2 ? atol(argv[2]) : 16L << 20;
    static const int blocks[] = {8, 16, 32, 64, 256, 1024, 4096};
    char *src = malloc((size_t)total * 2), *dst = malloc((size_t)total);
    memset(src, 1, (size_t)total * 2);
    memset(dst, 0, (size_t)total);
    printf("mpi,block_bytes,total_bytes,pack_gbps,memcpy_gbps,ratio\n");
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
        int bl = blocks[b] / 8, count = (int)(total / blocks[b]);
        struct job j = {src, dst, (long)count * blocks[b], MPI_DATATYPE_NULL};
        MPI_Type_vector(count, bl, 2 * bl, MPI_DOUBLE, &j.type);  /* every other block */
        MPI_Type_commit(&j.type);
        double tp = mean_of(10, do_pack, &j), tm = mean_of(10, do_memcpy, &j);
        printf("%s,%d,%ld,%.2f,%.2f,%.3f\n", label, blocks[b], j.bytes, j.bytes / tp / 1e9, j.bytes / tm / 1e9,
               tm / tp);
        MPI_Type_free(&j.type);
    }
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
