/*
 * lockcost: what locked instructions cost a shared-memory ping-pong on this
 * machine -- the floor under Cadence's small-message latency, message rate
 * and small-message bandwidth (docs/performance.md, "Small messages: the
 * locked instructions").  No MPI: two threads on two processing units
 * passing a message through one cache line each way, as a ring cell does,
 * so the numbers belong to the machine, not to an MPI library.
 *
 *   cc -O2 -pthread -o lockcost tools/bench/lockcost.c && ./lockcost
 *
 * Each message is one 64-byte line written by the sender (payload, then
 * the sequence number with a release store) and read by the receiver
 * (acquire load, payload); the receiver answers the same way.  A variant
 * adds, per message, S locked read-modify-writes (lock xadd on a line of
 * the thread's own) after the sender's store and R after the receiver has
 * read the message, the way a send and a receive in an MPI library that
 * shares its queues with a second thread pay them (locks, reference
 * counts, completion flags); "plain" adds the same number of ordinary
 * increments instead, the cost of the work without the lock prefix.
 *
 * Each line is "lockcost,S,R,kind,mean_ns,median_ns" where the times are
 * half round trips (one message) over 200,000 round trips after 20,000 of
 * warm-up; the median is over 50 blocks of 4,000 round trips each.
 *
 * With --rtt only the first case runs, printing its median: the machine's
 * cache-line round trip between the two processing units, which moves by
 * 5x when the hypervisor moves them (compare.py records it per run).
 *
 * "stream" lines ("lockcost-stream,S,R,kind,mean_ns,median_ns") time the
 * other pattern, message rate: the sender writes messages into a ring of
 * 64 cells (one line each, 8 KiB apart as Cadence's are) as fast as the
 * receiver frees them, the receiver reads each and frees it (a tail
 * counter the sender reads when the ring is full); ns per message.
 *
 * With --bcast: the floor under the OSU broadcast benchmark's figure at
 * 2 ranks and a few bytes (docs/performance.md, "Where every goal
 * stands").  That benchmark times each broadcast alone, then runs an
 * untimed barrier, and averages the two ranks' times.  Two threads run
 * its loop with no MPI: the root writes 8 bytes and a sequence number in
 * one line, the leaf waits for it and acknowledges it in a line of its
 * own (which the root waits for before it writes the next one); then one
 * of two barriers, each a line per thread:
 *   "first-out": each writes its arrival and waits for the other's, so
 *   the last to arrive leaves at once (the fewest transfers a barrier of
 *   two can take: a dissemination barrier);
 *   "root-releases": the leaf writes its arrival and waits for the
 *   root's release, written when the root has seen the arrival (a
 *   gather then a release: the root leaves first, the leaf one transfer
 *   later).
 * `--bcast REPS BYTES` broadcasts BYTES (8 by default): beyond 8 the root
 * copies them from a buffer of its own into a shared one before it writes
 * the line, and the leaf copies them out.
 * Each line is "lockcost-bcast,bytes,barrier,root_bcast_ns,leaf_bcast_ns,
 * osu_ns,root_barrier_ns,leaf_barrier_ns,iteration_ns": means over
 * 200,000 iterations after 20,000, osu_ns the mean of the two ranks'
 * broadcast times (the benchmark's figure), iteration_ns a whole
 * broadcast and barrier.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WARM = 20000, BLOCKS = 50, PER_BLOCK = 4000 };

struct line {
    _Alignas(64) _Atomic uint64_t seq;
    uint64_t payload[7];
};

static struct line ping, pong;
static _Alignas(64) _Atomic uint64_t own[2][8];  /* one line per thread */
static int n_send, n_recv, locked;

enum { RING = 64, CELL = 8192 };
static unsigned char *ring;              /* RING cells of CELL bytes */
static _Alignas(64) _Atomic uint64_t ring_tail;  /* messages freed by the receiver */
static double block_ns[BLOCKS];

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The per-message work: n locked or plain increments of the thread's line. */
static inline void work(int me, int n)
{
    for (int i = 0; i < n; i++) {
        if (locked)
            atomic_fetch_add_explicit(&own[me][0], 1, memory_order_acq_rel);
        else
            atomic_store_explicit(&own[me][0],
                                  atomic_load_explicit(&own[me][0], memory_order_relaxed) + 1,
                                  memory_order_relaxed);
    }
}

static inline void send_msg(int me, struct line *l, uint64_t s)
{
    l->payload[0] = s;
    atomic_store_explicit(&l->seq, s, memory_order_release);
    work(me, n_send);
}

static inline uint64_t recv_msg(int me, struct line *l, uint64_t s)
{
    while (atomic_load_explicit(&l->seq, memory_order_acquire) != s)
        ;
    uint64_t v = l->payload[0];
    work(me, n_recv);
    return v;
}

static void *responder(void *arg)
{
    (void)arg;
    pin(1);
    for (uint64_t s = 1; s <= WARM + (uint64_t)BLOCKS * PER_BLOCK; s++) {
        recv_msg(1, &ping, s);
        send_msg(1, &pong, s);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(int s, int r, int lk)
{
    n_send = s;
    n_recv = r;
    locked = lk;
    atomic_store(&ping.seq, 0);
    atomic_store(&pong.seq, 0);
    pthread_t t;
    pthread_create(&t, NULL, responder, NULL);
    pin(0);
    uint64_t seq = 1, check = 0;
    for (; seq <= WARM; seq++) {
        send_msg(0, &ping, seq);
        check += recv_msg(0, &pong, seq);
    }
    double total = 0;
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = now_ns();
        for (int i = 0; i < PER_BLOCK; i++, seq++) {
            send_msg(0, &ping, seq);
            check += recv_msg(0, &pong, seq);
        }
        double dt = now_ns() - t0;
        total += dt;
        block_ns[b] = dt / PER_BLOCK / 2;
    }
    pthread_join(t, NULL);
    uint64_t n = seq - 1;
    if (check != n * (n + 1) / 2) {
        fprintf(stderr, "lockcost: wrong payloads\n");
        exit(1);
    }
    qsort(block_ns, BLOCKS, sizeof block_ns[0], cmp);
    printf("lockcost,%d,%d,%s,%.1f,%.1f\n", s, r, lk ? "locked" : "plain",
           total / ((double)BLOCKS * PER_BLOCK) / 2, block_ns[BLOCKS / 2]);
    fflush(stdout);
}

static inline struct line *cell(uint64_t s)
{
    return (struct line *)(ring + (s % RING) * CELL);
}

static void *stream_receiver(void *arg)
{
    (void)arg;
    pin(1);
    for (uint64_t s = 1; s <= WARM + (uint64_t)BLOCKS * PER_BLOCK; s++) {
        recv_msg(1, cell(s), s);
        atomic_store_explicit(&ring_tail, s, memory_order_release);
    }
    return NULL;
}

static void run_stream(int s, int r, int lk)
{
    n_send = s;
    n_recv = r;
    locked = lk;
    memset(ring, 0, (size_t)RING * CELL);
    atomic_store(&ring_tail, 0);
    pthread_t t;
    pthread_create(&t, NULL, stream_receiver, NULL);
    pin(0);
    uint64_t seq = 1;
    double total = 0;
    for (int b = -1; b < BLOCKS; b++) {
        int n = b < 0 ? WARM : PER_BLOCK;
        double t0 = now_ns();
        for (int i = 0; i < n; i++, seq++) {
            while (seq - atomic_load_explicit(&ring_tail, memory_order_acquire) > RING)
                ;
            send_msg(0, cell(seq), seq);
        }
        double dt = now_ns() - t0;
        if (b >= 0) {
            total += dt;
            block_ns[b] = dt / PER_BLOCK;
        }
    }
    pthread_join(t, NULL);
    qsort(block_ns, BLOCKS, sizeof block_ns[0], cmp);
    printf("lockcost-stream,%d,%d,%s,%.1f,%.1f\n", s, r, lk ? "locked" : "plain",
           total / ((double)BLOCKS * PER_BLOCK), block_ns[BLOCKS / 2]);
    fflush(stdout);
}

/* --bcast: the lines of the broadcast and of the two barriers */
static struct line bc_data, bc_ack, bar_in[2], bar_out;
static int bar_kind;  /* 0: first-out, 1: root-releases */
static size_t bc_bytes = 8;               /* broadcast size (--bcast REPS BYTES) */
static unsigned char *bc_buf, *bc_priv[2];  /* shared buffer (beyond 8 bytes), private ones */
static double bc_time[2], bar_time[2];

static void wait_seq(struct line *l, uint64_t s)
{
    while (atomic_load_explicit(&l->seq, memory_order_acquire) < s)
        ;
}

static void *bcast_rank(void *arg)
{
    int me = (int)(intptr_t)arg;  /* 0: the root */
    pin(me);
    double tb = 0, tr = 0;
    uint64_t check = 0;
    for (uint64_t i = 1; i <= WARM + (uint64_t)BLOCKS * PER_BLOCK; i++) {
        double t0 = now_ns();
        if (me == 0) {
            wait_seq(&bc_ack, i - 1);  /* the leaf has read the one before */
            if (bc_bytes > 8) {
                memcpy(bc_priv[0], &i, sizeof i);
                memcpy(bc_buf, bc_priv[0], bc_bytes);
            }
            bc_data.payload[0] = i;
            atomic_store_explicit(&bc_data.seq, i, memory_order_release);
        } else {
            wait_seq(&bc_data, i);
            check += bc_data.payload[0];
            if (bc_bytes > 8) {
                memcpy(bc_priv[1], bc_buf, bc_bytes);
                uint64_t v;
                memcpy(&v, bc_priv[1], sizeof v);
                check += v;
            }
            atomic_store_explicit(&bc_ack.seq, i, memory_order_release);
        }
        double t1 = now_ns();
        atomic_store_explicit(&bar_in[me].seq, i, memory_order_release);
        if (bar_kind == 0) {
            wait_seq(&bar_in[1 - me], i);
        } else if (me == 0) {
            wait_seq(&bar_in[1], i);
            atomic_store_explicit(&bar_out.seq, i, memory_order_release);
        } else {
            wait_seq(&bar_out, i);
        }
        double t2 = now_ns();
        if (i > WARM) {
            tb += t1 - t0;
            tr += t2 - t1;
        }
    }
    uint64_t n = WARM + (uint64_t)BLOCKS * PER_BLOCK;
    if (me == 1 && check != (bc_bytes > 8 ? 2 : 1) * (n * (n + 1) / 2)) {
        fprintf(stderr, "lockcost: wrong payloads\n");
        exit(1);
    }
    bc_time[me] = tb / ((double)BLOCKS * PER_BLOCK);
    bar_time[me] = tr / ((double)BLOCKS * PER_BLOCK);
    return NULL;
}

static void run_bcast(int kind)
{
    bar_kind = kind;
    struct line *all[] = {&bc_data, &bc_ack, &bar_in[0], &bar_in[1], &bar_out};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        atomic_store(&all[k]->seq, 0);
    pthread_t t[2];
    for (int me = 0; me < 2; me++)
        pthread_create(&t[me], NULL, bcast_rank, (void *)(intptr_t)me);
    for (int me = 0; me < 2; me++)
        pthread_join(t[me], NULL);
    printf("lockcost-bcast,%zu,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n",
           bc_bytes, kind == 0 ? "first-out" : "root-releases", bc_time[0], bc_time[1],
           (bc_time[0] + bc_time[1]) / 2, bar_time[0], bar_time[1],
           (bc_time[0] + bar_time[0] + bc_time[1] + bar_time[1]) / 2);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const int cases[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 2}, {6, 10}, {16, 16}};
    bool rtt = argc > 1 && strcmp(argv[1], "--rtt") == 0;
    int reps = argc > 1 && !rtt ? atoi(argv[1]) : 3;
    if (sched_getcpu() < 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "lockcost: needs two processing units\n");
        return 1;
    }
    if (rtt) {
        run(0, 0, 1);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bcast") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 3;
        bc_bytes = argc > 3 ? (size_t)atol(argv[3]) : 8;
        if (bc_bytes < 8)
            bc_bytes = 8;
        bc_buf = aligned_alloc(4096, (bc_bytes + 4095) / 4096 * 4096);
        for (int me = 0; me < 2; me++)
            bc_priv[me] = aligned_alloc(4096, (bc_bytes + 4095) / 4096 * 4096);
        if (bc_buf == NULL || bc_priv[0] == NULL || bc_priv[1] == NULL)
            return 1;
        memset(bc_priv[0], 1, bc_bytes);
        for (int k = 0; k < n; k++)
            for (int kind = 0; kind < 2; kind++)
                run_bcast(kind);
        return 0;
    }
    ring = aligned_alloc(4096, (size_t)RING * CELL);
    if (ring == NULL)
        return 1;
    for (int k = 0; k < reps; k++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int lk = 1; lk >= 0; lk--) {
                if (cases[c][0] + cases[c][1] == 0 && lk == 0)
                    continue;
                run(cases[c][0], cases[c][1], lk);
                run_stream(cases[c][0], cases[c][1], lk);
            }
    free(ring);
    return 0;
}
