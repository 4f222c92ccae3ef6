/* Create and free many communicators of every kind (argv[1] of each; 10,000
 * by default): more than there are context ids, so ids must be reused, and
 * under valgrind (a short run) nothing may leak. */
#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 10000, wrank, wsize, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Group wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int kv;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, kv, &bad);
    for (int i = 0; i < n; i++) {
        MPI_Comm c = MPI_COMM_NULL;
        int dims[1] = {wsize}, per[1] = {1};
        switch (i % 5) {
        case 0: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
        case 1: MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, 0, &c); break;
        case 2: MPI_Comm_create_group(MPI_COMM_WORLD, wg, i, &c); break;
        case 3: MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &c); break;
        case 4: {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "hint", "x");
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
            MPI_Info_free(&info);
            break;
        }
        }
        if (c == MPI_COMM_NULL) {
            bad++;
            break;
        }
        if (i % 1000 == 0) {  /* still a working communicator */
            int r, s, got = -1;
            MPI_Comm_rank(c, &r);
            MPI_Comm_size(c, &s);
            MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % s, 0, &got, 1, MPI_INT, (r + s - 1) % s, 0, c,
                         MPI_STATUS_IGNORE);
            bad += got != (r + s - 1) % s;
        }
        MPI_Comm_free(&c);
    }
    CHECK(bad == 0, "%d communicators created and freed", n);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, kv);
    MPI_Comm_free_keyval(&kv);
    MPI_Group_free(&wg);
    MPI_Finalize();
    return check_summary("t_comm_leak");
}
