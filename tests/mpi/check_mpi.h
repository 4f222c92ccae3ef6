/* A tiny assertion helper for MPI test programs: each CHECK prints what it
 * checked and counts failures; check_summary() turns them into the exit code. */
#ifndef CHECK_MPI_H
#define CHECK_MPI_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        check_count++;                                            \
        if (!(cond)) {                                            \
            check_failures++;                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);  \
            fprintf(stderr, __VA_ARGS__);                         \
            fputc('\n', stderr);                                  \
        }                                                         \
    } while (0)

#ifdef MPI_VERSION
/* The error class of an MPI return code. */
static inline int check_class(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* call returns an error of class want (MPI_SUCCESS included). */
#define EXPECT(call, want, what)                                                       \
    do {                                                                                 \
        int rc_ = check_class(call);                                                     \
        CHECK(rc_ == (want), "%s: class %d, expected %d", what, rc_, want);              \
    } while (0)
#endif

static inline int check_summary(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures != 0;
}

#endif
