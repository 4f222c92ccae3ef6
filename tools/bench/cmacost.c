/*
 * cmacost: what a single copy between processes costs on this machine,
 * against a plain memcpy -- the ceiling under Cadence's rendezvous
 * bandwidth over shared memory (docs/performance.md, "Where this run
 * stands against the goals").  No MPI: a parent reads a forked child's
 * buffer with process_vm_readv (cross-memory attach, CMA: the kernel pins
 * the child's pages and copies them, what the shm transport's receiver
 * does for every message above the eager limit), and copies the same
 * bytes within its own memory with memcpy, at every size from 4 KiB to
 * 4 MiB, both buffers page-aligned and warm.
 *
 *   cc -O2 -o cmacost tools/bench/cmacost.c && ./cmacost [--both]
 *
 * Each line is "cmacost,size,kind,us,GB/s": kind "cma" (one
 * process_vm_readv of size bytes), "memcpy" (aligned), "memcpy+8" (the
 * destination 8 bytes past a cache line, the source aligned: glibc's
 * `rep movsb` path falls off a cliff there on some x86 processors), mean
 * over about 2 GB copied after 100 warm-up copies.  Then kind "cma-both":
 * two processes each read the other's buffer at the same time, size bytes
 * per call, as the two ranks of a bidirectional bandwidth benchmark do
 * (both directions' bytes counted, over the slower process's time) -- the
 * ceiling under bibw above the eager limit.  CMA needs ptrace permission
 * over the other process (a parent has it over its child unless Yama
 * forbids even that; the parent lets its child read it back); the program
 * says so and exits 1 when it is refused.  --both: the cma-both lines
 * only (what tools/bench/compare.py records with each table).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXB (4L << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ways: the copies each iteration made at once (2 for cma-both) */
static void line(long n, const char *kind, double secs, long iters, int ways)
{
    printf("cmacost,%ld,%s,%.3f,%.1f\n", n, kind, secs / (double)iters * 1e6,
           (double)n * ways * (double)iters / secs / 1e9);
}

static long iters_for(long n)
{
    long iters = 2000000000L / n;
    return iters > 200000 ? 200000 : iters;
}

/* Both ways at once: this process and `other` (connected by the pipe ends
 * rd and wr) each read n bytes of the other's src into their own dst,
 * iters times after 100 warm-up reads, starting together; returns this
 * process's time, or -1 if a read failed. */
static double read_both(pid_t other, int rd, int wr, char *src, char *dst, long n, long iters)
{
    struct iovec l = {dst, (size_t)n}, r = {src, (size_t)n};
    char c = 0;
    bool ok = true;
    for (int k = 0; k < 100 && ok; k++)
        ok = process_vm_readv(other, &l, 1, &r, 1, 0) == (ssize_t)n;
    if (!ok)
        fprintf(stderr, "cmacost: process_vm_readv (both ways): %s\n", strerror(errno));
    /* start together: each tells the other it is ready and waits for it */
    if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1 || !ok)
        return -1;
    double t = now();
    for (long k = 0; k < iters; k++)
        (void)process_vm_readv(other, &l, 1, &r, 1, 0);
    return now() - t;
}

static int both_ways(char *src, char *dst)
{
    int to_child[2], to_parent[2], times[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0 || pipe(times) != 0)
        return 1;
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  /* only with Yama */
    pid_t parent = getpid(), child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        memset(src, 3, MAXB);  /* pages of its own, as another rank's */
        for (long n = 4096; n <= MAXB; n *= 2) {
            double t = read_both(parent, to_child[0], to_parent[1], src, dst, n, iters_for(n));
            if (write(times[1], &t, sizeof t) != sizeof t || t < 0)
                _exit(1);
        }
        _exit(0);
    }
    int rc = 0;
    for (long n = 4096; n <= MAXB && rc == 0; n *= 2) {
        long iters = iters_for(n);
        double t = read_both(child, to_parent[0], to_child[1], src, dst, n, iters), tc;
        if (read(times[0], &tc, sizeof tc) != sizeof tc || t < 0 || tc < 0) {
            rc = 1;
            break;
        }
        line(n, "cma-both", t > tc ? t : tc, iters, 2);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return rc;
}

int main(int argc, char **argv)
{
    char *src = aligned_alloc(4096, MAXB), *dst = aligned_alloc(4096, MAXB + 64);
    if (src == NULL || dst == NULL)
        return 1;
    memset(src, 1, MAXB);
    memset(dst, 2, MAXB + 64);
    if (argc > 1 && strcmp(argv[1], "--both") == 0)
        return both_ways(src, dst);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        pause();  /* its copy of src is what the parent reads */
        _exit(0);
    }
    int rc = 0;
    for (long n = 4096; n <= MAXB && rc == 0; n *= 2) {
        long iters = iters_for(n);
        struct iovec l = {dst, (size_t)n}, r = {src, (size_t)n};
        for (int k = 0; k < 100; k++)
            if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)n) {
                fprintf(stderr, "cmacost: process_vm_readv: %s\n", strerror(errno));
                rc = 1;
                break;
            }
        if (rc != 0)
            break;
        double t = now();
        for (long k = 0; k < iters; k++)
            (void)process_vm_readv(child, &l, 1, &r, 1, 0);
        line(n, "cma", now() - t, iters, 1);
        for (int off = 0; off <= 8; off += 8) {
            char *d = dst + off;
            for (int k = 0; k < 100; k++)
                memcpy(d, src, (size_t)n);
            t = now();
            for (long k = 0; k < iters; k++) {
                memcpy(d, src, (size_t)n);
                __asm__ volatile("" : : "r"(d) : "memory");  /* keep every copy */
            }
            line(n, off == 0 ? "memcpy" : "memcpy+8", now() - t, iters, 1);
        }
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return rc != 0 ? rc : both_ways(src, dst);
}
