/*
 * An iterative solver's whole loop as one schedule, started once
 * (MPIX_Schedule with a repeat group, docs/schedules.md).
 *
 * Jacobi relaxation of u'' = 0 on a line of POINTS points per rank, with
 * u = 1 left of the first point and u = 0 right of the last: every sweep
 * exchanges one ghost point with each neighbour (halo exchange), updates
 * the points and takes the largest change; an MPI_Allreduce of that
 * change over all ranks decides whether to sweep again.  As a schedule:
 *
 *   round 1: MPI_Send_init / MPI_Recv_init with the left and right
 *            neighbours (MPI_PROC_NULL at the ends), then a callback that
 *            updates this rank's points and their largest change
 *   round 2: MPI_Allreduce_init (MPI_MAX) of that change
 *   repeat rounds 1-2 while the global change is above TOL
 *
 * One MPI_Start runs every sweep until convergence; the engine runs the
 * rounds, the callback and the predicate, with no MPI call from the
 * application until MPI_Wait.  The program then runs the same loop written
 * with MPI_Sendrecv and MPI_Allreduce and checks that both took the same
 * number of sweeps and computed the same values, and that these are the
 * exact solution's to within 1e-4.
 *
 *   mpicc sched_loop.c -o sched_loop && mpirun -n 4 ./sched_loop
 *
 * Rank 0 prints "sched_loop: 4 ranks, converged after N sweeps (plain
 * loop: N): ok" and every rank exits 0; a mismatch is printed and exits 1.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { POINTS = 4, TAG = 2 };
static const double TOL = 1e-8;

struct solver {
    double u[POINTS + 2]; /* u[0] and u[POINTS + 1]: the ghost points */
    double change;        /* this rank's largest change in the last sweep */
    double global;        /* everyone's (MPI_Allreduce) */
    int sweeps;
};

static void init(struct solver *s, int rank, int size)
{
    memset(s, 0, sizeof *s);
    s->u[0] = rank == 0 ? 1.0 : 0.0; /* the left boundary value stays */
    s->u[POINTS + 1] = 0.0;
    (void)size;
}

/* One Jacobi sweep over the ghost points just received. */
static int sweep(void *state)
{
    struct solver *s = state;
    double next[POINTS + 2], change = 0;
    for (int i = 1; i <= POINTS; i++) {
        next[i] = (s->u[i - 1] + s->u[i + 1]) / 2;
        if (fabs(next[i] - s->u[i]) > change)
            change = fabs(next[i] - s->u[i]);
    }
    memcpy(&s->u[1], &next[1], POINTS * sizeof(double));
    s->change = change;
    s->sweeps++;
    return MPI_SUCCESS;
}

static int not_converged(void *state)
{
    return ((struct solver *)state)->global > TOL;
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    /* the loop as one schedule */
    struct solver s;
    init(&s, rank, size);
    MPIX_Schedule sched;
    MPIX_Schedule_create(&sched);
    MPI_Request op[5];
    MPI_Send_init(&s.u[1], 1, MPI_DOUBLE, left, TAG, MPI_COMM_WORLD, &op[0]);
    MPI_Send_init(&s.u[POINTS], 1, MPI_DOUBLE, right, TAG, MPI_COMM_WORLD, &op[1]);
    MPI_Recv_init(&s.u[0], 1, MPI_DOUBLE, left, TAG, MPI_COMM_WORLD, &op[2]);
    MPI_Recv_init(&s.u[POINTS + 1], 1, MPI_DOUBLE, right, TAG, MPI_COMM_WORLD, &op[3]);
    for (int i = 0; i < 4; i++)
        MPIX_Schedule_add_operation(sched, op[i]);
    MPIX_Schedule_set_callback(sched, MPIX_SCHEDULE_ROUND, sweep, &s);
    MPIX_Schedule_create_round(sched);
    MPI_Allreduce_init(&s.change, &s.global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &op[4]);
    MPIX_Schedule_add_operation(sched, op[4]);
    MPIX_Schedule_add_repeat(sched, 2, MPIX_SCHEDULE_UNBOUNDED, not_converged, &s);
    MPI_Request loop;
    MPIX_Schedule_commit(sched, &loop);

    MPI_Start(&loop);
    /* ... the application is free to compute here ... */
    MPI_Wait(&loop, MPI_STATUS_IGNORE);
    MPI_Request_free(&loop);
    MPIX_Schedule_free(&sched);

    /* the same loop written with blocking calls */
    struct solver p;
    init(&p, rank, size);
    do {
        MPI_Sendrecv(&p.u[1], 1, MPI_DOUBLE, left, TAG, &p.u[POINTS + 1], 1, MPI_DOUBLE, right,
                     TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&p.u[POINTS], 1, MPI_DOUBLE, right, TAG, &p.u[0], 1, MPI_DOUBLE, left, TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sweep(&p);
        MPI_Allreduce(&p.change, &p.global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    } while (not_converged(&p));

    if (s.sweeps != p.sweeps) {
        printf("sched_loop: rank %d: %d sweeps as a schedule, %d in the plain loop\n", rank,
               s.sweeps, p.sweeps);
        errors++;
    }
    for (int i = 1; i <= POINTS; i++) {
        double exact = 1.0 - (double)(rank * POINTS + i) / (size * POINTS + 1);
        if (s.u[i] != p.u[i] || fabs(s.u[i] - exact) > 1e-4) {
            printf("sched_loop: rank %d: point %d = %.9f (plain loop %.9f, exact %.9f)\n", rank,
                   rank * POINTS + i, s.u[i], p.u[i], exact);
            errors++;
        }
    }
    int all;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("sched_loop: %d ranks, converged after %d sweeps (plain loop: %d): ok\n", size,
               s.sweeps, p.sweeps);
    MPI_Finalize();
    return errors ? 1 : 0;
}
