/*
 * What p2pbench.c and collbench.c share: the command line, the iteration
 * counts, per-iteration statistics and the CSV output.  MPI API only.
 *
 * Command line: PROGRAM TEST[,TEST...] [-q] [-s SIZES] [-i ITERS] [-x SKIP]
 * [-t THREADS] [-c COUNTS]
 *   -q        quick: every iteration and warm-up count divided by 20
 *             (a smoke test, not a measurement)
 *   -s SIZES  comma-separated message sizes in bytes instead of the test's own
 *   -i, -x    iterations and warm-up iterations for every size
 *   -t N      threads per rank (p2pbench latency_mt)
 *   -c COUNTS comma-separated repeat counts instead of the test's own
 *             (schedbench sbcast: operations per block; partbench
 *             part_earlybird: microseconds of computation per partition)
 *
 * Output: CSV lines "test,bytes,stat,value,unit" on rank 0, where stat is
 * "mean" (total time of the timed iterations over their number: what a
 * user gets), "median" and "p99" of the per-iteration times, or a
 * test's own figure (overlap, overall, ...).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_SIZES = 64 };

static int opt_quick, opt_iters, opt_skip = -1, opt_threads = 2;
static long opt_sizes[MAX_SIZES], opt_counts[MAX_SIZES];
static int opt_nsizes, opt_ncounts;
static const char *opt_tests = "";

static void bench_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s TEST[,TEST...] [-q] [-s SIZES] [-i ITERS] [-x SKIP] [-t THREADS] [-c COUNTS]\n",
            prog);
    exit(2);
}

/* Parse a comma-separated list of numbers into out (at most MAX_SIZES). */
static int parse_list(const char *arg, long *out)
{
    int n = 0;
    for (char *p = (char *)arg; *p && n < MAX_SIZES;) {
        out[n++] = strtol(p, &p, 10);
        if (*p == ',')
            p++;
        else if (*p)
            break;
    }
    return n;
}

static void bench_options(int argc, char **argv)
{
    int c;
    if (argc < 2 || argv[1][0] == '-')
        bench_usage(argv[0]);
    opt_tests = argv[1];
    optind = 2;
    while ((c = getopt(argc, argv, "qs:i:x:t:c:")) != -1) {
        switch (c) {
        case 'q':
            opt_quick = 1;
            break;
        case 's':
            opt_nsizes = parse_list(optarg, opt_sizes);
            break;
        case 'c':
            opt_ncounts = parse_list(optarg, opt_counts);
            break;
        case 'i':
            opt_iters = atoi(optarg);
            break;
        case 'x':
            opt_skip = atoi(optarg);
            break;
        case 't':
            opt_threads = atoi(optarg) > 0 ? atoi(optarg) : 1;
            break;
        default:
            bench_usage(argv[0]);
        }
    }
}

/* Is test name among the comma-separated tests of the command line? */
static int want(const char *name)
{
    size_t n = strlen(name);
    for (const char *p = opt_tests; (p = strstr(p, name)) != NULL; p += n)
        if ((p == opt_tests || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* The sizes a test runs: those of -s, or the test's own list. */
static int sizes_of(const long *dflt, int n, const long **out)
{
    if (opt_nsizes) {
        *out = opt_sizes;
        return opt_nsizes;
    }
    *out = dflt;
    return n;
}

/* OSU Micro-Benchmarks' counts: one set up to 8 KiB, one above. */
static void counts(long bytes, int small, int small_skip, int large, int large_skip, int *iters,
                   int *skip)
{
    int big = bytes > 8192;
    *iters = opt_iters > 0 ? opt_iters : big ? large : small;
    *skip = opt_skip >= 0 ? opt_skip : big ? large_skip : small_skip;
    if (opt_quick) {
        *iters = *iters / 20 > 5 ? *iters / 20 : 5;
        *skip = *skip / 20 > 1 ? *skip / 20 : 1;
    }
}

/* The counts of windows of `window` messages of b bytes each (osu_bw's
 * loop): up to 8 KiB OSU's 10,000 windows; above, at most 1,000 and no
 * more than 4 GiB per size (a full 1,000 windows of 64 x 4 MiB is 256 GiB). */
static inline void bw_counts(long b, int window, int *iters, int *skip)
{
    long cap = (4L << 30) / (window * (b ? b : 1));
    int large = cap < 1000 ? (cap > 8 ? (int)cap : 8) : 1000;
    counts(b, 10000, 100, large, large / 10 < 10 ? large / 10 + 1 : 10, iters, skip);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Print mean, median and 99th percentile of n per-iteration times (seconds;
 * sorted in place), in microseconds. */
static void report_times(const char *test, long bytes, double mean, double *t, int n)
{
    qsort(t, n, sizeof *t, cmp_double);
    int p99 = (n * 99 + 99) / 100 - 1;
    printf("%s,%ld,mean,%.3f,us\n", test, bytes, mean * 1e6);
    printf("%s,%ld,median,%.3f,us\n", test, bytes, t[n / 2] * 1e6);
    printf("%s,%ld,p99,%.3f,us\n", test, bytes, t[p99 < 0 ? 0 : p99] * 1e6);
}

/* Seconds on the host's monotonic clock (the same in every process of
 * one host). */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A two-rank barrier with point-to-point only (rank: the caller's in
 * MPI_COMM_WORLD, of 2). */
static inline void sync2_of(int rank)
{
    char a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_BYTE, 1 - rank, 9, &b, 1, MPI_BYTE, 1 - rank, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

#endif
