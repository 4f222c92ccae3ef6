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

static inline int check_summary(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures != 0;
}

#endif
