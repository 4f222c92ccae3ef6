/*
 * Reduction operations through MPI_Reduce_local: the predefined ops on a
 * type of each category against a serial reference, MINLOC/MAXLOC on pair
 * types, a derived type of one basic type, user ops (MPI_Op_create,
 * MPI_Op_commutative, MPI_Op_free), and the refusals: wrong op/type pairs,
 * MPI_REPLACE outside accumulate, freeing a predefined op -> MPI_ERR_OP.
 */
#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check_mpi.h"

#define N 9

static int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* Integer ops on several widths, reference computed in long long. */
#define INT_CASE(T, MT)                                                                      \
    do {                                                                                     \
        MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_LOR, MPI_LXOR,    \
                        MPI_BAND, MPI_BOR, MPI_BXOR};                                        \
        for (int o = 0; o < 10; o++) {                                                       \
            T in[N], io[N], ref[N];                                                          \
            for (int i = 0; i < N; i++) {                                                    \
                in[i] = (T)(i * 3 % 7);                                                      \
                io[i] = (T)((i + 2) % 5);                                                    \
                long long a = in[i], b = io[i], r = 0;                                       \
                switch (o) {                                                                 \
                case 0: r = a > b ? a : b; break;                                            \
                case 1: r = a < b ? a : b; break;                                            \
                case 2: r = a + b; break;                                                    \
                case 3: r = a * b; break;                                                    \
                case 4: r = a && b; break;                                                   \
                case 5: r = a || b; break;                                                   \
                case 6: r = !a != !b; break;                                                 \
                case 7: r = a & b; break;                                                    \
                case 8: r = a | b; break;                                                    \
                default: r = a ^ b; break;                                                   \
                }                                                                            \
                ref[i] = (T)r;                                                               \
            }                                                                                \
            int rc = MPI_Reduce_local(in, io, N, MT, ops[o]);                                \
            CHECK(rc == MPI_SUCCESS && memcmp(io, ref, sizeof ref) == 0,                     \
                  "%s op %d: rc %d or wrong result", #MT, o, rc);                            \
        }                                                                                    \
    } while (0)

#define FLOAT_CASE(T, MT)                                                                    \
    do {                                                                                     \
        MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD};                                \
        for (int o = 0; o < 4; o++) {                                                        \
            T in[N], io[N], ref[N];                                                          \
            for (int i = 0; i < N; i++) {                                                    \
                in[i] = (T)(i * 0.5 - 1);                                                    \
                io[i] = (T)(2.25 - i * 0.25);                                                \
                T a = in[i], b = io[i];                                                      \
                ref[i] = o == 0 ? (a > b ? a : b) : o == 1 ? (a < b ? a : b)                 \
                       : o == 2 ? a + b : a * b;                                             \
            }                                                                                \
            int rc = MPI_Reduce_local(in, io, N, MT, ops[o]);                                \
            int bad = 0; /* by value: a long double's padding bytes are garbage */           \
            for (int i = 0; i < N; i++)                                                      \
                bad += io[i] != ref[i];                                                      \
            CHECK(rc == MPI_SUCCESS && bad == 0, "%s op %d: rc %d or %d wrong", #MT, o, rc,  \
                  bad);                                                                      \
        }                                                                                    \
    } while (0)

static void concat(void *in_, void *io_, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *in = in_, *io = io_;
    for (int i = 0; i < *len; i++)
        io[i] = in[i] * 10 + io[i];  /* digits: in first */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    INT_CASE(int, MPI_INT);
    INT_CASE(unsigned char, MPI_UNSIGNED_CHAR);
    INT_CASE(short, MPI_SHORT);
    INT_CASE(long, MPI_LONG);
    INT_CASE(uint64_t, MPI_UINT64_T);
    INT_CASE(int8_t, MPI_INT8_T);
    FLOAT_CASE(float, MPI_FLOAT);
    FLOAT_CASE(double, MPI_DOUBLE);
    FLOAT_CASE(long double, MPI_LONG_DOUBLE);

    /* complex sum and product */
    double _Complex cin[2] = {1 + 2 * I, 3 - I}, cio[2] = {2 - I, 1 + I};
    double _Complex cref[2] = {cin[0] * cio[0], cin[1] * cio[1]};
    CHECK(MPI_Reduce_local(cin, cio, 2, MPI_C_DOUBLE_COMPLEX, MPI_PROD) == MPI_SUCCESS &&
              cio[0] == cref[0] && cio[1] == cref[1], "complex prod");
    /* logical and bitwise on their own categories */
    bool bin[3] = {true, false, true}, bio[3] = {true, true, false};
    CHECK(MPI_Reduce_local(bin, bio, 3, MPI_C_BOOL, MPI_LXOR) == MPI_SUCCESS && !bio[0] &&
              bio[1] && bio[2], "C_BOOL lxor");
    unsigned char yin[2] = {0xf0, 0x0f}, yio[2] = {0x3c, 0x3c};
    CHECK(MPI_Reduce_local(yin, yio, 2, MPI_BYTE, MPI_BAND) == MPI_SUCCESS && yio[0] == 0x30 &&
              yio[1] == 0x0c, "BYTE band");

    /* MINLOC / MAXLOC: ties take the smaller index */
    struct { double v; int i; } din[3] = {{1.0, 4}, {2.0, 1}, {5.0, 0}},
                                dio[3] = {{1.0, 2}, {3.0, 3}, {5.0, 7}};
    CHECK(MPI_Reduce_local(din, dio, 3, MPI_DOUBLE_INT, MPI_MAXLOC) == MPI_SUCCESS &&
              dio[0].v == 1.0 && dio[0].i == 2 && dio[1].v == 3.0 && dio[1].i == 3 &&
              dio[2].i == 0, "DOUBLE_INT maxloc");
    struct { short v; int i; } sin_[2] = {{3, 9}, {-2, 5}}, sio[2] = {{3, 1}, {4, 0}};
    CHECK(MPI_Reduce_local(sin_, sio, 2, MPI_SHORT_INT, MPI_MINLOC) == MPI_SUCCESS &&
              sio[0].i == 1 && sio[1].v == -2 && sio[1].i == 5, "SHORT_INT minloc");
    int iin[4] = {5, 1, 2, 8}, iio[4] = {7, 2, 2, 0};
    CHECK(MPI_Reduce_local(iin, iio, 2, MPI_2INT, MPI_MINLOC) == MPI_SUCCESS && iio[0] == 5 &&
              iio[1] == 1 && iio[2] == 2 && iio[3] == 0, "2INT minloc");

    /* a derived type of one basic type: every other int */
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int vin[6] = {1, 100, 2, 100, 3, 100}, vio[6] = {10, -1, 20, -1, 30, -1};
    CHECK(MPI_Reduce_local(vin, vio, 1, vec, MPI_SUM) == MPI_SUCCESS && vio[0] == 11 &&
              vio[1] == -1 && vio[2] == 22 && vio[4] == 33 && vio[5] == -1, "vector sum");
    MPI_Type_free(&vec);
    /* mixed struct: no predefined op applies */
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype tys[2] = {MPI_DOUBLE, MPI_INT}, mixed;
    MPI_Type_create_struct(2, bl, disp, tys, &mixed);
    MPI_Type_commit(&mixed);
    char buf1[32] = {0}, buf2[32] = {0};
    CHECK(err_class(MPI_Reduce_local(buf1, buf2, 1, mixed, MPI_SUM)) == MPI_ERR_OP,
          "mixed struct sum refused");
    MPI_Type_free(&mixed);

    /* refusals */
    float f1 = 1, f2 = 2;
    CHECK(err_class(MPI_Reduce_local(&f1, &f2, 1, MPI_FLOAT, MPI_BAND)) == MPI_ERR_OP,
          "BAND on FLOAT refused");
    CHECK(err_class(MPI_Reduce_local(bin, bio, 1, MPI_C_BOOL, MPI_SUM)) == MPI_ERR_OP,
          "SUM on C_BOOL refused");
    CHECK(err_class(MPI_Reduce_local(iin, iio, 1, MPI_INT, MPI_MAXLOC)) == MPI_ERR_OP,
          "MAXLOC on INT refused");
    CHECK(err_class(MPI_Reduce_local(cin, cio, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX)) == MPI_ERR_OP,
          "MAX on complex refused");
    CHECK(err_class(MPI_Reduce_local(iin, iio, 1, MPI_INT, MPI_REPLACE)) == MPI_ERR_OP,
          "REPLACE outside accumulate refused");
    CHECK(err_class(MPI_Reduce_local(iin, iio, 1, MPI_INT, MPI_OP_NULL)) == MPI_ERR_OP,
          "MPI_OP_NULL refused");
    CHECK(err_class(MPI_Allreduce(iin, iio, 1, MPI_FLOAT, MPI_LXOR, MPI_COMM_WORLD)) ==
              MPI_ERR_OP, "Allreduce LXOR on FLOAT refused");
    /* the library remembers the last valid builtin pair (runtime/op.c):
     * a refusal right after it, of the same type or the same op, still
     * refuses, and the pair is still accepted after a refusal */
    float fa = 1, fb = 2;
    CHECK(MPI_Reduce_local(&fa, &fb, 1, MPI_FLOAT, MPI_SUM) == MPI_SUCCESS && fb == 3,
          "SUM on FLOAT");
    CHECK(err_class(MPI_Reduce_local(&fa, &fb, 1, MPI_FLOAT, MPI_BOR)) == MPI_ERR_OP,
          "BOR on FLOAT refused after SUM on FLOAT");
    CHECK(err_class(MPI_Reduce_local(bin, bio, 1, MPI_C_BOOL, MPI_SUM)) == MPI_ERR_OP,
          "SUM on C_BOOL refused after SUM on FLOAT");
    CHECK(MPI_Reduce_local(&fa, &fb, 1, MPI_FLOAT, MPI_SUM) == MPI_SUCCESS && fb == 4,
          "SUM on FLOAT again");
    MPI_Op predefined = MPI_SUM;
    CHECK(err_class(MPI_Op_free(&predefined)) == MPI_ERR_OP, "freeing MPI_SUM refused");

    /* user ops */
    MPI_Op cat;
    int commute = -1;
    CHECK(MPI_Op_create(concat, 0, &cat) == MPI_SUCCESS, "Op_create");
    MPI_Op_commutative(cat, &commute);
    CHECK(commute == 0, "user op not commutative");
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1, "MPI_SUM commutative");
    int uin[2] = {1, 2}, uio[2] = {3, 4};
    CHECK(MPI_Reduce_local(uin, uio, 2, MPI_INT, cat) == MPI_SUCCESS && uio[0] == 13 &&
              uio[1] == 24, "user op applied in then inout");
    CHECK(MPI_Op_free(&cat) == MPI_SUCCESS && cat == MPI_OP_NULL, "Op_free");
    CHECK(err_class(MPI_Reduce_local(uin, uio, 2, MPI_INT, cat)) == MPI_ERR_OP,
          "freed op refused");

    int failed = check_summary("t_coll_ops");
    MPI_Finalize();
    return failed;
}
