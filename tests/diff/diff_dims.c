/* Differential MPI_Dims_create program: built with Debian's MPICH and with
 * Cadence, run as one process; the outputs must be identical.  It asks for
 * every nnodes up to a few thousand in 1 to 6 free dimensions, the same
 * with some entries preset, and big composites (products of many small
 * primes, powers, large prime factors).  An answer MPI refuses prints its
 * error class.  (MPICH overflows on inputs with a prime factor above
 * about 2^15.5 squared, e.g. a prime near 2^31: none are asked.) */
#include <mpi.h>
#include <stdio.h>

static void ask(int nnodes, int ndims, const int *preset)
{
    int d[8], rc;
    char in[96], out[96];
    int ni = 0, no = 0;
    for (int i = 0; i < ndims; i++) {
        d[i] = preset != NULL ? preset[i] : 0;
        ni += snprintf(in + ni, sizeof in - (size_t)ni, "%s%d", i ? "," : "", d[i]);
    }
    in[ni] = '\0';
    rc = MPI_Dims_create(nnodes, ndims, d);
    if (rc != MPI_SUCCESS) {
        int cls = -1;
        MPI_Error_class(rc, &cls);
        printf("%d %d [%s] -> error class %d\n", nnodes, ndims, in, cls);
        return;
    }
    for (int i = 0; i < ndims; i++)
        no += snprintf(out + no, sizeof out - (size_t)no, "%s%d", i ? "x" : "", d[i]);
    out[no] = '\0';
    printf("%d %d [%s] -> %s\n", nnodes, ndims, in, out);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int n = 1; n <= 4096; n++)
        for (int nd = 1; nd <= 6; nd++)
            ask(n, nd, NULL);
    /* some entries preset: the free ones share what the fixed ones leave */
    static const int presets[][6] = {
        {2, 0, 0, 0, 0, 0}, {0, 3, 0, 0, 0, 0}, {0, 0, 2, 0, 0, 0}, {4, 0, 0, 0, 0, 0},
        {0, 2, 0, 3, 0, 0}, {0, 0, 0, 0, 0, 5}, {1, 0, 0, 0, 0, 0}, {0, 6, 0, 0, 2, 0},
    };
    for (int n = 1; n <= 1500; n++)
        for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++)
            for (int nd = 2; nd <= 6; nd++) {
                int fixed = 1;
                for (int i = 0; i < nd; i++)
                    fixed *= presets[p][i] ? presets[p][i] : 1;
                if (n % fixed == 0 || n % 97 == 0)  /* a few that do not divide */
                    ask(n, nd, presets[p]);
            }
    static const int big[] = {
        590520, 720, 5040, 40320, 362880, 3628800, 39916800, 479001600, 1000000, 1048576,
        1 << 30, 30030, 510510, 9699690, 223092870, 65536, 46656,
        531441, 1771561, 4084101, 27000, 216000, 1728000, 6561000, 12252240, 17297280,
        73513440, 122522400, 748010400, 963761198, 1102701600, 2095133040, 2000000000,
        1073741823, 1234567890, 987654321, 600851475, 8648640, 14414400, 21621600, 32432400,
        61261200, 98017920, 245044800, 367567200, 551350800, 698377680, 735134400,
        1396755360, 1470268800, 10000, 100000, 10000000, 100000000, 1000000000, 8192,
        65521 * 2, 65521 * 6, 46337 * 46337, 32749 * 32719, 4096 * 3 * 5 * 7,
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        for (int nd = 1; nd <= 6; nd++)
            ask(big[i], nd, NULL);
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        ask(big[i], 4, (const int[]){0, 2, 0, 0});
    /* every entry preset: only divisibility is checked */
    ask(6, 2, (const int[]){3, 2});
    ask(12, 2, (const int[]){3, 2});
    ask(7, 2, (const int[]){3, 2});
    ask(48, 3, (const int[]){2, 3, 4});
    ask(5, 0, NULL);
    MPI_Finalize();
    return 0;
}
