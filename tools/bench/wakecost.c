/*
 * wakecost: what it costs on this machine to get a sleeping thread running
 * -- the price a nonblocking call pays to have a progress thread take its
 * work over while the application computes (docs/performance.md, "The
 * floor at 64 KiB").  No MPI: plain Linux calls, so the numbers belong to
 * the machine, not to an MPI library.
 *
 *   cc -O2 -pthread -o wakecost tools/bench/wakecost.c && ./wakecost
 *
 * Each line is "wakecost,what,median,us" over many tries:
 *   syscall           a system call that does nothing (getppid)
 *   timer-arm-10us    timerfd_settime for an expiry 10 us away (what a call
 *                     pays to have a thread woken a moment later)
 *   timer-disarm      timerfd_settime disarming that timer
 *   timer-arm-5ms     the same for 5 ms away (past the next tick: the
 *                     hardware timer is not reprogrammed)
 *   timer-arm-cold    arming a timer 1 ms away (it does not fire inside the
 *                     call; the hardware timer is reprogrammed) right after
 *                     reading 8 MiB, as a rank touches its buffers and rings
 *                     in a 1 MiB collective: a virtual machine's exit costs
 *                     more from a cold cache (timer-arm-10us is warm)
 *   timer-late-10us   how long after its expiry a thread sleeping in epoll
 *                     on a 10 us timer runs
 *   wake-same-cpu     eventfd write that wakes a thread sleeping in epoll
 *                     on the writer's processing unit: the writer's time
 *                     until the write returns (the woken thread, preempting
 *                     it, runs first)
 *   wake-other-cpu    the same with the sleeper on another processing unit
 *   wake-latency-other time from that write until the sleeper runs
 *   wake-other-cold   wake-other-cpu right after reading 8 MiB
 * A computing thread is on the other processing unit during the wake tests
 * when --busy is given (the case of two ranks computing on two cores).
 * Waits for a sleeper on the caller's own processing unit yield to it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TRIES 2000
#define COLD_BYTES (8u << 20) /* what a cold measurement reads first */
#define COLD_TRIES 300

static volatile unsigned char *cold_buf;

/* Read COLD_BYTES, one load per cache line: the caches then hold this
 * buffer and not what the hypervisor's exit path had in them. */
static void chill(void)
{
    unsigned sum = 0;
    for (size_t i = 0; i < COLD_BYTES; i += 64)
        sum += cold_buf[i];
    if (sum == 1)
        printf("#");
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void spin_us(double us)
{
    double t0 = now_us();
    while (now_us() - t0 < us)
        ;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("wakecost,%s,%.2f,us\n", what, v[n / 2]);
    fflush(stdout);
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* A thread sleeping in epoll on fd; records when it woke. */
struct sleeper {
    int fd, epfd, cpu;
    atomic_int armed;      /* it is (about to be) in epoll_wait */
    atomic_int stop;
    _Atomic double woke;   /* now_us() when it last woke */
};

static void *sleeper_main(void *arg)
{
    struct sleeper *s = arg;
    pin(s->cpu);
    while (!atomic_load(&s->stop)) {
        struct epoll_event ev;
        atomic_store(&s->armed, 1);
        int n = epoll_wait(s->epfd, &ev, 1, 1000);
        double t = now_us();
        uint64_t v;
        if (n == 1 && read(s->fd, &v, sizeof v) < 0) {
            /* nothing to drain */
        }
        /* disarmed before the wake is published: the waker's next
         * until_asleep sees this thread back in epoll_wait */
        atomic_store(&s->armed, 0);
        if (n == 1)
            atomic_store(&s->woke, t);
    }
    return NULL;
}

static void sleeper_start(struct sleeper *s, pthread_t *t, int fd, int cpu)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->cpu = cpu;
    s->epfd = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
    pthread_create(t, NULL, sleeper_main, s);
}

static void sleeper_stop(struct sleeper *s, pthread_t t)
{
    atomic_store(&s->stop, 1);
    uint64_t one = 1;
    if (write(s->fd, &one, sizeof one) < 0) {
        /* it wakes at its timeout anyway */
    }
    pthread_join(t, NULL);
    close(s->epfd);
}

static atomic_int busy_stop;
static void *busy_main(void *arg)
{
    pin((int)(intptr_t)arg);
    volatile double x = 1;
    while (!atomic_load(&busy_stop))
        x = x * 1.0000001 + 1e-9;
    return NULL;
}

/* Wait until the sleeper is in epoll (and a little more, to be asleep). */
static void until_asleep(struct sleeper *s)
{
    while (!atomic_load(&s->armed))
        sched_yield();
    spin_us(30);
}

static void wakes(int me, int other, double *v)
{
    int efd = eventfd(0, EFD_NONBLOCK);
    struct sleeper s;
    pthread_t t;
    const char *names[] = {"wake-same-cpu", "wake-other-cpu", "wake-other-cold"};
    for (int k = 0; k < 3; k++) {
        int tries = k == 2 ? COLD_TRIES : TRIES;
        sleeper_start(&s, &t, efd, k == 0 ? me : other);
        double *lat = malloc(TRIES * sizeof *lat);
        for (int i = 0; i < tries; i++) {
            until_asleep(&s);
            if (k == 2)
                chill();
            atomic_store(&s.woke, 0);
            uint64_t one = 1;
            double t0 = now_us();
            if (write(efd, &one, sizeof one) < 0)
                perror("write");
            double t1 = now_us();
            v[i] = t1 - t0;
            while (atomic_load(&s.woke) == 0)
                if (k == 0)
                    sched_yield();  /* let it have our processing unit */
            lat[i] = atomic_load(&s.woke) - t0;
        }
        report(names[k], v, tries);
        if (k == 1)
            report("wake-latency-other", lat, TRIES);
        free(lat);
        sleeper_stop(&s, t);
    }
    close(efd);
}

int main(int argc, char **argv)
{
    alarm(120);  /* a probe must not hang: SIGALRM ends it */
    int busy = argc > 1 && strcmp(argv[1], "--busy") == 0;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int me = 0, other = ncpu > 1 ? 1 : 0;
    pin(me);
    double *v = malloc(TRIES * sizeof *v);
    cold_buf = malloc(COLD_BYTES);
    memset((void *)cold_buf, 1, COLD_BYTES);

    for (int i = 0; i < TRIES; i++) {
        double t0 = now_us();
        (void)getppid();
        v[i] = now_us() - t0;
    }
    report("syscall", v, TRIES);

    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    double *d = malloc(TRIES * sizeof *d);
    for (int i = 0; i < TRIES; i++) {
        struct itimerspec on = {.it_value = {0, 10000}}, off = {{0, 0}, {0, 0}};
        double t0 = now_us();
        timerfd_settime(tfd, 0, &on, NULL);
        double t1 = now_us();
        timerfd_settime(tfd, 0, &off, NULL);
        d[i] = now_us() - t1;
        v[i] = t1 - t0;
        spin_us(30);
    }
    report("timer-arm-10us", v, TRIES);
    report("timer-disarm", d, TRIES);
    for (int i = 0; i < TRIES; i++) {
        struct itimerspec on = {.it_value = {0, 5000000}}, off = {{0, 0}, {0, 0}};
        double t0 = now_us();
        timerfd_settime(tfd, 0, &on, NULL);
        v[i] = now_us() - t0;
        timerfd_settime(tfd, 0, &off, NULL);
        spin_us(30);
    }
    report("timer-arm-5ms", v, TRIES);
    for (int i = 0; i < COLD_TRIES; i++) {
        struct itimerspec on = {.it_value = {0, 1000000}}, off = {{0, 0}, {0, 0}};
        chill();
        double t0 = now_us();
        timerfd_settime(tfd, 0, &on, NULL);
        v[i] = now_us() - t0;
        timerfd_settime(tfd, 0, &off, NULL);
    }
    report("timer-arm-cold", v, COLD_TRIES);

    /* lateness: a sleeper on the timer, on this processing unit */
    struct sleeper s;
    pthread_t t;
    sleeper_start(&s, &t, tfd, me);
    for (int i = 0; i < TRIES; i++) {
        until_asleep(&s);
        atomic_store(&s.woke, 0);
        struct itimerspec on = {.it_value = {0, 10000}};
        double t0 = now_us();
        timerfd_settime(tfd, 0, &on, NULL);
        while (atomic_load(&s.woke) == 0)
            sched_yield();
        v[i] = atomic_load(&s.woke) - t0 - 10.0;
    }
    report("timer-late-10us", v, TRIES);
    sleeper_stop(&s, t);
    close(tfd);

    pthread_t b;
    if (busy && other != me)
        pthread_create(&b, NULL, busy_main, (void *)(intptr_t)other);
    wakes(me, other, v);
    if (busy && other != me) {
        atomic_store(&busy_stop, 1);
        pthread_join(b, NULL);
    }
    free(v);
    free(d);
    free((void *)cold_buf);
    return 0;
}
