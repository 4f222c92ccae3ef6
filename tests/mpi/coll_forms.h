/* Shared by the collective tests: running one collective in a chosen form
 * (blocking, MPI_I... then wait, persistent made once then started), and
 * the non-commutative user op they reduce with (affine maps x -> a x + b
 * mod M, composed in rank order). */
#ifndef COLL_FORMS_H
#define COLL_FORMS_H

#include <mpi.h>
#include <stdlib.h>

#include "check_mpi.h"

/* A form to run a collective in; a persistent one is made at the first
 * iteration and restarted at the next. */
struct form {
    int kind;  /* 0 blocking, 1 nonblocking, 2 persistent */
    MPI_Request preq;
};

#define COLL(f, B, I, P, ...)                                                                \
    do {                                                                                     \
        int rc_;                                                                             \
        if ((f)->kind == 0) {                                                                \
            rc_ = B(__VA_ARGS__);                                                            \
        } else if ((f)->kind == 1) {                                                         \
            MPI_Request r_;                                                                  \
            rc_ = I(__VA_ARGS__, &r_);                                                       \
            if (rc_ == MPI_SUCCESS)                                                          \
                rc_ = MPI_Wait(&r_, MPI_STATUS_IGNORE);                                      \
        } else {                                                                             \
            rc_ = MPI_SUCCESS;                                                               \
            if ((f)->preq == MPI_REQUEST_NULL)                                               \
                rc_ = P(__VA_ARGS__, MPI_INFO_NULL, &(f)->preq);                             \
            if (rc_ == MPI_SUCCESS)                                                          \
                rc_ = MPI_Start(&(f)->preq);                                                 \
            if (rc_ == MPI_SUCCESS)                                                          \
                rc_ = MPI_Wait(&(f)->preq, MPI_STATUS_IGNORE);                               \
        }                                                                                    \
        CHECK(rc_ == MPI_SUCCESS, "%s (form %d) returned %d", #B, (f)->kind, rc_);           \
    } while (0)

static inline void form_done(struct form *f)
{
    if (f->preq != MPI_REQUEST_NULL)
        MPI_Request_free(&f->preq);
}

/* Run one test function `call` (which uses f) in the form of the caller's
 * variable `kind`. */
#define RUN(call)                                                                            \
    do {                                                                                     \
        struct form f_ = {kind, MPI_REQUEST_NULL};                                           \
        struct form *f = &f_;                                                                \
        call;                                                                                \
        form_done(f);                                                                        \
    } while (0)

/* The message sizes to test: the program's arguments, or 1 and 37. */
static inline int coll_sizes(int argc, char **argv, long *sizes, int max)
{
    int n = 0;
    for (int i = 1; i < argc && n < max; i++)
        sizes[n++] = atol(argv[i]);
    if (n == 0) {
        sizes[0] = 1, sizes[1] = 37;
        n = 2;
    }
    return n;
}

#define M 1009
static inline void affine(void *in_, void *inout_, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *in = in_, *io = inout_;
    for (int i = 0; i < *len; i++) {  /* io = in o io: first in, then io */
        int a = in[2 * i], b = in[2 * i + 1], c = io[2 * i], d = io[2 * i + 1];
        io[2 * i] = a * c % M;
        io[2 * i + 1] = (b * c + d) % M;
    }
}
static inline void affine_ref(int *acc, const int *x)  /* acc = acc o x */
{
    int a = acc[0], b = acc[1];
    acc[0] = a * x[0] % M;
    acc[1] = (b * x[0] + x[1]) % M;
}

#endif
