/* One MPI program, many behaviours, for the launcher tests (run_launch.sh):
 * t_launch MODE [ARGS...] -- see the modes in main().  Ranks that must
 * outlive a failing one sleep in a loop; mpirun has to kill them. */
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

static void sleep_forever(void)
{
    for (;;)
        sleep(1);
}

static void on_term(int sig)
{
    char msg[64];
    int n = snprintf(msg, sizeof msg, "rank %d got signal %d\n", rank, sig);
    ssize_t w = write(1, msg, (size_t)n);
    (void)w;
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int arg1 = argc > 2 ? atoi(argv[2]) : 0, arg2 = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (strcmp(mode, "ok") == 0) {  /* ok EXPECTED_SIZE */
        if (size != arg1) {
            fprintf(stderr, "rank %d: size %d, expected %d\n", rank, size, arg1);
            return 1;
        }
        printf("rank %d of %d ok\n", rank, size);
    } else if (strcmp(mode, "abort") == 0) {  /* abort RANK CODE */
        if (rank == arg1)
            MPI_Abort(MPI_COMM_WORLD, arg2);
        sleep_forever();
    } else if (strcmp(mode, "kill") == 0) {  /* kill RANK SIGNAL */
        if (rank == arg1) {
            printf("rank %d pid %d raising %d\n", rank, (int)getpid(), arg2);
            fflush(stdout);
            raise(arg2);
        }
        sleep_forever();
    } else if (strcmp(mode, "exit") == 0) {  /* exit RANK CODE: no MPI_Finalize */
        if (rank == arg1)
            exit(arg2);
        sleep_forever();
    } else if (strcmp(mode, "exit-after-finalize") == 0) {  /* RANK CODE */
        MPI_Finalize();
        return rank == arg1 ? arg2 : 0;
    } else if (strcmp(mode, "hang") == 0) {
        sleep_forever();
    } else if (strcmp(mode, "term") == 0) {  /* report a forwarded SIGTERM/SIGINT */
        signal(SIGTERM, on_term);
        signal(SIGINT, on_term);
        printf("rank %d waiting\n", rank);
        fflush(stdout);
        sleep_forever();
    } else if (strcmp(mode, "lines") == 0) {  /* lines N: long lines, written in pieces */
        for (int i = 0; i < arg1; i++) {
            for (int k = 0; k < 20; k++) {
                printf("r%d-%d-%d.", rank, i, k);
                if (k % 7 == 0)
                    fflush(stdout);
            }
            printf("end\n");
            fflush(stdout);
        }
    } else if (strcmp(mode, "stdin") == 0) {  /* rank 0 counts its stdin */
        if (rank == 0) {
            long bytes = 0, lines = 0;
            int c;
            while ((c = getchar()) != EOF) {
                bytes++;
                lines += c == '\n';
            }
            printf("stdin: %ld lines %ld bytes\n", lines, bytes);
        } else if (getchar() != EOF) {
            printf("rank %d read stdin\n", rank);
        }
    } else if (strcmp(mode, "env") == 0) {  /* env NAME... */
        for (int i = 2; i < argc; i++) {
            const char *v = getenv(argv[i]);
            printf("rank %d %s=%s\n", rank, argv[i], v ? v : "(unset)");
        }
    } else if (strcmp(mode, "cwd") == 0) {
        char buf[4096];
        printf("rank %d cwd %s\n", rank, getcwd(buf, sizeof buf) ? buf : "?");
    } else if (strcmp(mode, "bind") == 0) {
        cpu_set_t set;
        sched_getaffinity(0, sizeof set, &set);
        printf("rank %d cpus %d\n", rank, CPU_COUNT(&set));
    } else {
        fprintf(stderr, "t_launch: unknown mode %s\n", mode);
        return 2;
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
