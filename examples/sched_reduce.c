/*
 * A reduction to a non-zero root, built by the user as one schedule
 * (MPIX_Schedule, docs/schedules.md) out of operations MPI already has:
 *
 *   round 1: MPI_Reduce_init to rank 0
 *   round 2: rank 0 sends the result to the root (the last rank),
 *            which receives it
 *
 * The schedule is committed once and started ITERS times; each start sums
 * every rank's values, which change between starts, and the root checks
 * the sums.  The engine runs round 2 when round 1 is done on this rank:
 * between MPI_Start and MPI_Wait the application makes no MPI call.
 * (The schedules paper's version of this program marks a reset point after
 * the reduction; rounds before a reset point run at the first start only,
 * so this one, which reduces at every start, marks none.)
 *
 *   mpicc sched_reduce.c -o sched_reduce && mpirun -n 4 ./sched_reduce
 *
 * The root prints "sched_reduce: 4 ranks, root 3, 10 starts: ok" and every
 * rank exits 0; a wrong sum is printed and exits 1.
 */
#include <mpi.h>
#include <stdio.h>

enum { COUNT = 4, ITERS = 10, TAG = 1 };

int main(int argc, char **argv)
{
    int rank, size, errors = 0;
    int value[COUNT], partial[COUNT], result[COUNT];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int root = size - 1;

    MPIX_Schedule sched;
    MPIX_Schedule_init(&sched); /* the same function as MPIX_Schedule_create */

    /* round 1: the reduction MPI has, to rank 0 */
    MPI_Request reduce_op;
    MPI_Reduce_init(value, rank == 0 && root == 0 ? result : partial, COUNT, MPI_INT, MPI_SUM, 0,
                    MPI_COMM_WORLD, MPI_INFO_NULL, &reduce_op);
    MPIX_Schedule_add_operation(sched, reduce_op);

    /* round 2: rank 0 -> root */
    MPIX_Schedule_create_round(sched);
    if (root != 0 && rank == 0) {
        MPI_Request send_op;
        MPI_Send_init(partial, COUNT, MPI_INT, root, TAG, MPI_COMM_WORLD, &send_op);
        MPIX_Schedule_add_operation(sched, send_op);
    } else if (root != 0 && rank == root) {
        MPI_Request recv_op;
        MPI_Recv_init(result, COUNT, MPI_INT, 0, TAG, MPI_COMM_WORLD, &recv_op);
        MPIX_Schedule_add_operation(sched, recv_op);
    }
    /* other ranks: round 2 stays empty and is dropped at commit */

    MPI_Request request;
    MPIX_Schedule_commit(sched, &request);

    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < COUNT; i++)
            value[i] = rank * 10 + i + it;
        MPI_Start(&request);
        /* ... the application computes here ... */
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        if (rank != root)
            continue;
        for (int i = 0; i < COUNT; i++) {
            int want = 10 * size * (size - 1) / 2 + size * (i + it);
            if (result[i] != want) {
                printf("sched_reduce: start %d: result[%d] = %d, expected %d\n", it, i, result[i],
                       want);
                errors++;
            }
        }
    }

    /* the sub-requests are freed with the schedule's request (auto-free) */
    MPI_Request_free(&request);
    MPIX_Schedule_free(&sched);
    if (rank == root && errors == 0)
        printf("sched_reduce: %d ranks, root %d, %d starts: ok\n", size, root, ITERS);
    MPI_Finalize();
    return errors ? 1 : 0;
}
