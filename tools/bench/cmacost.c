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
 *   cc -O2 -o cmacost tools/bench/cmacost.c && ./cmacost
 *
 * Each line is "cmacost,size,kind,us,GB/s": kind "cma" (one
 * process_vm_readv of size bytes), "memcpy" (aligned), "memcpy+8" (the
 * destination 8 bytes past a cache line, the source aligned: glibc's
 * `rep movsb` path falls off a cliff there on some x86 processors), mean
 * over about 2 GB copied after 100 warm-up copies.  CMA needs ptrace
 * permission over the child (a parent has it unless Yama forbids even
 * that); the program says so and exits 1 when it is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void line(long n, const char *kind, double secs, long iters)
{
    printf("cmacost,%ld,%s,%.3f,%.1f\n", n, kind, secs / (double)iters * 1e6,
           (double)n * (double)iters / secs / 1e9);
}

int main(void)
{
    char *src = aligned_alloc(4096, MAXB), *dst = aligned_alloc(4096, MAXB + 64);
    if (src == NULL || dst == NULL)
        return 1;
    memset(src, 1, MAXB);
    memset(dst, 2, MAXB + 64);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        pause();  /* its copy of src is what the parent reads */
        _exit(0);
    }
    int rc = 0;
    for (long n = 4096; n <= MAXB && rc == 0; n *= 2) {
        long iters = 2000000000L / n;
        if (iters > 200000)
            iters = 200000;
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
        line(n, "cma", now() - t, iters);
        for (int off = 0; off <= 8; off += 8) {
            char *d = dst + off;
            for (int k = 0; k < 100; k++)
                memcpy(d, src, (size_t)n);
            t = now();
            for (long k = 0; k < iters; k++) {
                memcpy(d, src, (size_t)n);
                __asm__ volatile("" : : "r"(d) : "memory");  /* keep every copy */
            }
            line(n, off == 0 ? "memcpy" : "memcpy+8", now() - t, iters);
        }
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return rc;
}
