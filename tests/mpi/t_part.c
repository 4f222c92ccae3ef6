/*
 * Partitioned point-to-point (MPI_Psend_init, MPI_Precv_init, MPI_Pready*,
 * MPI_Parrived, MPIX_Pbuf_prepare).  Linked with the library's internals
 * to read each request's plan of transfers (cdn_part_transfers) and the
 * unexpected-message counts.  Ranks pair up: an even rank sends to the odd
 * one after it (an odd rank count leaves the last alone).
 *
 *   t_part cases     every case of the plan (Table 3: 1-7), contiguous and
 *                    strided datatypes, several instances; each partition's
 *                    bytes checked as soon as MPI_Parrived says it arrived;
 *                    the number of transfers checked per case, and that the
 *                    sender-planned cases sent before any answer came; to
 *                    MPI_PROC_NULL, to self (MPI_Startall, MPI_Testall,
 *                    MPI_Request_get_status), over an intercommunicator
 *   t_part threads [ITERS] [THREADS]
 *                    THREADS threads per rank each fill and mark their own
 *                    partitions (MPI_THREAD_MULTIPLE); the receiver's
 *                    threads each wait for and check their own partitions;
 *                    every byte of every instance checked
 *   t_part earlybird a partition marked ready leaves while the others are
 *                    not: the receiver sees partition 0 arrive while the
 *                    sender holds the rest back until told so
 *   t_part prepare   MPIX_Pbuf_prepare: no transfer is held as unexpected
 *                    at the receiver (and without it, with the receiver
 *                    late, some are)
 *   t_part errors    every misuse an MPI error through the handler, no hang
 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_mpi.h"
#include "partitioned/part.h"
#include "progress/match.h"
#include "progress/request.h"

static int rank, size, peer;
static bool sender;
static MPI_Comm pair;  /* ranks 2k and 2k+1 */

static int transfers_of(MPI_Request h, long *early)
{
    return cdn_part_transfers(cdn_request_get(h), early);
}

static MPI_Info info_transfers(const char *v, const char *min, const char *max)
{
    MPI_Info info = MPI_INFO_NULL;
    if (v == NULL && min == NULL && max == NULL)
        return info;
    MPI_Info_create(&info);
    if (v != NULL)
        MPI_Info_set(info, "cadence_part_transfers", v);
    if (min != NULL)
        MPI_Info_set(info, "cadence_part_min_bytes", min);
    if (max != NULL)
        MPI_Info_set(info, "cadence_part_max_bytes", max);
    return info;
}

static int value(int iter, long i)
{
    return (int)(iter * 1000003L + i * 7 + 1);
}

/* ---- cases ---- */

struct pcase {
    const char *name;
    int m, n;             /* send and receive partitions */
    long total;           /* ints in the message */
    const char *policy;   /* cadence_part_transfers on both sides (NULL: auto) */
    const char *min, *max;
    int expect;           /* transfers the plan must have */
    bool early;           /* the sender plans alone: its transfers leave before the ACK */
};

static const struct pcase cases[] = {
    /* case 1: a fixed count on both sides, partitions differ */
    {"case1-fixed", 6, 4, 6 * 4 * 64, "3", NULL, NULL, 3, true},
    /* case 2: M = N, one per partition, planned by the sender alone */
    {"case2-same", 8, 8, 8 * 512, "send", NULL, NULL, 8, true},
    /* case 3: N != M, one per send partition */
    {"case3-send", 6, 3, 6 * 512, "send", NULL, NULL, 6, true},
    /* case 4: N != M, one per receive partition (after the ACK) */
    {"case4-recv", 3, 6, 6 * 512, "recv", NULL, NULL, 6, false},
    /* case 5: M = kN, aggregation of k send partitions per receive one
     * (auto: union of boundaries = the send side's) */
    {"case5-auto", 8, 2, 8 * 1024, NULL, NULL, NULL, 8, false},
    /* case 6: N = kM: disaggregation */
    {"case6-auto", 2, 8, 8 * 1024, NULL, NULL, NULL, 8, false},
    /* case 7: transport-sized units: 64 partitions of 64 bytes aggregated
     * to 4 KiB transfers */
    {"case7-aggregate", 64, 16, 64 * 16, NULL, NULL, NULL, 1, false},
    {"case7-aggregate-min", 64, 16, 64 * 64, NULL, "1024", NULL, 16, false},
    /* ... and one large partition split to 64 KiB transfers */
    {"case7-split", 1, 1, 256 * 1024, NULL, NULL, "65536", 16, false},
    /* mixed boundaries: 3 and 5 partitions, union of 7 */
    {"auto-3-5", 3, 5, 15 * 1024, NULL, "0", NULL, 7, false},
    /* rendezvous-sized transfers */
    {"large-4", 4, 4, 4 * 65536, "send", NULL, NULL, 4, true},
    /* one partition: one transfer */
    {"one", 1, 1, 4096, NULL, NULL, NULL, 1, false},
};

/* A strided view of ints: every other int (the receive side of the
 * strided runs uses it, the send side a contiguous buffer). */
static MPI_Datatype strided_int(void)
{
    MPI_Datatype t, r;
    MPI_Type_vector(1, 1, 2, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 2 * sizeof(int), &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

static void run_case(const struct pcase *c, bool strided, int iters)
{
    long per_s = c->total / c->m, per_r = c->total / c->n;
    MPI_Datatype rtype = strided ? strided_int() : MPI_INT;
    long span = strided ? 2 * c->total : c->total;
    int *buf = calloc((size_t)span, sizeof(int));
    MPI_Info info = info_transfers(c->policy, c->min, c->max);
    MPI_Request req;
    if (!sender)  /* late: the sender-planned cases' transfers leave before any answer */
        usleep(100000);
    if (sender)
        MPI_Psend_init(buf, c->m, per_s, MPI_INT, peer, 7, pair, info, &req);
    else
        MPI_Precv_init(buf, c->n, per_r, rtype, peer, 7, pair, info, &req);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Start(&req);
        if (sender) {
            for (long i = 0; i < c->total; i++)
                buf[i] = value(it, i);
            for (int k = 0; k < c->m; k++) {
                int p = (k * 5 + it) % c->m;  /* an order that is not 0, 1, 2, ... */
                if (c->m % 5 == 0)
                    p = k;
                MPI_Pready(p, req);
            }
        } else {
            int *seen = calloc((size_t)c->n, sizeof(int));
            int left = c->n;
            while (left > 0) {
                for (int q = 0; q < c->n; q++) {
                    int flag = 0;
                    if (seen[q])
                        continue;
                    MPI_Parrived(req, q, &flag);
                    if (!flag)
                        continue;
                    seen[q] = 1;
                    left--;
                    for (long i = q * per_r; i < (q + 1) * per_r; i++)
                        if (buf[strided ? 2 * i : i] != value(it, i))
                            bad++;
                }
            }
            free(seen);
        }
        MPI_Status st;
        MPI_Wait(&req, &st);
        if (!sender) {
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 7 &&
                  count == (int)(c->total * sizeof(int)),
                  "%s: status source %d tag %d count %d", c->name, st.MPI_SOURCE, st.MPI_TAG,
                  count);
            for (long i = 0; i < c->total; i++)
                if (buf[strided ? 2 * i : i] != value(it, i))
                    bad++;
            memset(buf, 0, (size_t)span * sizeof(int));
        }
        /* the sender fills the next instance only once the receiver has
         * checked this one */
        MPI_Barrier(pair);
    }
    long early = 0;
    int k = transfers_of(req, &early);
    CHECK(k == c->expect, "%s%s: %d transfers, expected %d", c->name, strided ? "-strided" : "",
          k, c->expect);
    if (sender)
        CHECK(c->early ? early > 0 : early == 0,
              "%s: %ld transfers left before the ACK (%s expected)", c->name, early,
              c->early ? "some" : "none");
    CHECK(bad == 0, "%s%s: %d ints wrong", c->name, strided ? "-strided" : "", bad);
    MPI_Request_free(&req);
    if (strided)
        MPI_Type_free(&rtype);
    free(buf);
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], false, 4);
        run_case(&cases[i], true, 2);
    }
    /* MPI_PROC_NULL: completes at once, every partition arrived */
    MPI_Request r;
    int x[4];
    MPI_Precv_init(x, 4, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    int flag = 0;
    MPI_Parrived(r, 3, &flag);
    MPI_Status st;
    MPI_Wait(&r, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL receive: flag %d source %d", flag,
          st.MPI_SOURCE);
    MPI_Request_free(&r);
    MPI_Psend_init(x, 4, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    MPI_Pready_range(0, 3, r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    /* to self, with Pready_list; started by MPI_Startall, completed by
     * MPI_Testall, looked at with MPI_Request_get_status and MPI_Test */
    int a[8], b[8];
    MPI_Request sv[2];
    MPI_Precv_init(b, 2, 4, MPI_INT, rank, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sv[1]);
    MPI_Psend_init(a, 4, 2, MPI_INT, rank, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sv[0]);
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 8; i++)
            a[i] = value(it, i);
        MPI_Startall(2, sv);
        int flag = 1;
        MPI_Status gs;
        MPI_Request_get_status(sv[1], &flag, &gs);
        CHECK(!flag, "self: the receive complete before any partition was marked");
        int list[4] = {3, 1, 2, 0};
        MPI_Pready_list(4, list, sv[0]);
        MPI_Status sts[2];
        flag = 0;
        while (!flag)
            MPI_Testall(2, sv, &flag, sts);
        int count;
        MPI_Get_count(&sts[1], MPI_INT, &count);
        CHECK(count == 8 && sts[1].MPI_SOURCE == rank && sts[1].MPI_TAG == 3,
              "self: status count %d source %d tag %d", count, sts[1].MPI_SOURCE,
              sts[1].MPI_TAG);
        MPI_Test(&sv[1], &flag, MPI_STATUS_IGNORE);  /* inactive now: flag true */
        CHECK(flag && sv[1] != MPI_REQUEST_NULL, "self: inactive request: flag %d", flag);
        int ok = 1;
        for (int i = 0; i < 8; i++)
            ok &= b[i] == value(it, i);
        CHECK(ok, "self: instance %d data", it);
    }
    MPI_Request_free(&sv[0]);
    MPI_Request_free(&sv[1]);
    /* over an intercommunicator: the pair's two ranks as two groups */
    MPI_Comm half, inter;
    int prank;
    MPI_Comm_rank(pair, &prank);
    MPI_Comm_split(pair, prank, 0, &half);
    MPI_Intercomm_create(half, 0, pair, 1 - prank, 33, &inter);
    int big[4096];
    MPI_Request q;
    if (sender)
        MPI_Psend_init(big, 4, 1024, MPI_INT, 0, 9, inter, MPI_INFO_NULL, &q);
    else
        MPI_Precv_init(big, 2, 2048, MPI_INT, 0, 9, inter, MPI_INFO_NULL, &q);
    int bad = 0;
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 4096; i++)
            big[i] = sender ? value(it, i) : 0;
        MPI_Start(&q);
        if (sender)
            MPI_Pready_range(0, 3, q);
        MPI_Status qs;
        MPI_Wait(&q, &qs);
        if (!sender)
            for (int i = 0; i < 4096; i++)
                bad += big[i] != value(it, i);
        CHECK(sender || qs.MPI_SOURCE == 0, "intercommunicator: source %d", qs.MPI_SOURCE);
        MPI_Barrier(inter);
    }
    CHECK(bad == 0, "intercommunicator: %d ints wrong", bad);
    MPI_Request_free(&q);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* ---- threads ---- */

struct tshared {
    MPI_Request sreq, rreq;
    int *sbuf, *rbuf;
    int per, iters;
    pthread_barrier_t start, done;
    long bad;
    pthread_mutex_t lock;
};

struct targ {
    struct tshared *sh;
    int first, last;  /* its partitions: [first, last) */
};

/* One application thread: each instance it fills and marks its own send
 * partitions, then waits for its own receive partitions and checks them. */
static void *worker(void *arg)
{
    struct targ *t = arg;
    struct tshared *sh = t->sh;
    for (int it = 0; it < sh->iters; it++) {
        pthread_barrier_wait(&sh->start);  /* both requests are started */
        long bad = 0;
        for (int p = t->first; p < t->last; p++) {
            int *part = sh->sbuf + (long)p * sh->per;
            for (int i = 0; i < sh->per; i++)
                part[i] = value(it + rank, (long)p * sh->per + i);
            if (MPI_Pready(p, sh->sreq) != MPI_SUCCESS)
                bad++;
        }
        int from = (rank + size - 1) % size;
        for (int p = t->first; p < t->last; p++) {
            int flag = 0;
            while (!flag) {
                MPI_Parrived(sh->rreq, p, &flag);
                if (!flag)
                    sched_yield();
            }
            const int *part = sh->rbuf + (long)p * sh->per;
            for (int i = 0; i < sh->per; i++)
                if (part[i] != value(it + from, (long)p * sh->per + i))
                    bad++;
        }
        if (bad != 0) {
            pthread_mutex_lock(&sh->lock);
            sh->bad += bad;
            pthread_mutex_unlock(&sh->lock);
        }
        pthread_barrier_wait(&sh->done);
    }
    return NULL;
}

/* A ring over MPI_COMM_WORLD: each rank sends to the next and receives
 * from the one before, nthreads threads doing the partitions. */
static void test_threads(int iters, int nthreads)
{
    struct tshared sh = {.per = 1024, .iters = iters};
    int parts = nthreads * 2;
    sh.sbuf = calloc((size_t)parts * (size_t)sh.per, sizeof(int));
    sh.rbuf = calloc((size_t)parts * (size_t)sh.per, sizeof(int));
    pthread_barrier_init(&sh.start, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&sh.done, NULL, (unsigned)nthreads + 1);
    pthread_mutex_init(&sh.lock, NULL);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Psend_init(sh.sbuf, parts, sh.per, MPI_INT, to, 11, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &sh.sreq);
    MPI_Precv_init(sh.rbuf, parts, sh.per, MPI_INT, from, 11, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &sh.rreq);
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)nthreads);
    struct targ *ta = malloc(sizeof(struct targ) * (size_t)nthreads);
    for (int i = 0; i < nthreads; i++) {
        ta[i] = (struct targ){.sh = &sh, .first = 2 * i, .last = 2 * i + 2};
        pthread_create(&th[i], NULL, worker, &ta[i]);
    }
    int errs = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Start(&sh.rreq);
        MPI_Start(&sh.sreq);
        pthread_barrier_wait(&sh.start);
        pthread_barrier_wait(&sh.done);
        errs += MPI_Wait(&sh.sreq, MPI_STATUS_IGNORE) != MPI_SUCCESS;
        errs += MPI_Wait(&sh.rreq, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    long k = transfers_of(sh.sreq, NULL);
    CHECK(sh.bad == 0 && errs == 0, "threads: %ld ints wrong, %d waits failed over %d instances",
          sh.bad, errs, iters);
    CHECK(k == parts, "threads: %ld transfers for %d partitions of 4 KiB", k, parts);
    printf("rank %d: threads: %d threads, %d instances of %d partitions checked\n", rank,
           nthreads, iters, parts);
    MPI_Request_free(&sh.sreq);
    MPI_Request_free(&sh.rreq);
    free(th);
    free(ta);
    free(sh.sbuf);
    free(sh.rbuf);
    pthread_barrier_destroy(&sh.start);
    pthread_barrier_destroy(&sh.done);
    pthread_mutex_destroy(&sh.lock);
}

/* ---- early-bird ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* one host: the same clock in every rank */
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Partition 0 is marked ready; the sender then computes 300 ms without
 * calling MPI, and holds partitions 1.. back until the receiver says
 * partition 0 arrived.  The receiver must see 0 arrive (and 1.. not)
 * during that time. */
static void earlybird(int per, const char *min)
{
    int parts = 4;
    int *buf = calloc((size_t)parts * (size_t)per, sizeof(int));
    MPI_Info info = info_transfers(NULL, min, NULL);
    MPI_Request req, note;
    double seen = 0, t0 = 0;
    if (sender) {
        MPI_Psend_init(buf, parts, per, MPI_INT, peer, 5, pair, info, &req);
        for (long i = 0; i < (long)parts * per; i++)
            buf[i] = value(9, i);
        MPI_Barrier(pair);
        MPI_Start(&req);
        MPI_Irecv(&seen, 1, MPI_DOUBLE, peer, 99, pair, &note);
        t0 = now();
        MPI_Pready(0, req);
        usleep(300000);  /* computing: no MPI call */
        double t1 = now();
        int flag = 0;
        while (!flag && now() < t1 + 10)
            MPI_Test(&note, &flag, MPI_STATUS_IGNORE);
        CHECK(flag, "earlybird %d ints: the receiver never saw partition 0 alone", per);
        if (!flag)
            MPI_Cancel(&note);
        CHECK(flag && seen > t0 && seen < t1,
              "earlybird %d ints: partition 0 arrived %.1f ms after its Pready, outside the "
              "300 ms the sender computed", per, (seen - t0) * 1e3);
        if (!flag)
            MPI_Wait(&note, MPI_STATUS_IGNORE);
        MPI_Pready_range(1, parts - 1, req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        printf("rank %d: earlybird %d ints: partition 0 arrived %.2f ms after its Pready, "
               "while the sender computed\n", rank, per, (seen - t0) * 1e3);
    } else {
        MPI_Precv_init(buf, parts, per, MPI_INT, peer, 5, pair, info, &req);
        MPI_Barrier(pair);
        MPI_Start(&req);
        int flag = 0;
        double t1 = now();
        while (!flag && now() < t1 + 10)
            MPI_Parrived(req, 0, &flag);
        seen = now();
        int others = 0, f;
        for (int q = 1; q < parts; q++) {
            MPI_Parrived(req, q, &f);
            others += f;
        }
        CHECK(flag && others == 0, "earlybird %d ints: partition 0 arrived %d, others %d", per,
              flag, others);
        int bad = 0;
        for (int i = 0; i < per; i++)
            bad += buf[i] != value(9, i);
        CHECK(bad == 0, "earlybird %d ints: partition 0 has %d wrong ints when it arrived", per,
              bad);
        MPI_Send(&seen, 1, MPI_DOUBLE, peer, 99, pair);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (long i = 0; i < (long)parts * per; i++)
            bad += buf[i] != value(9, i);
        CHECK(bad == 0, "earlybird %d ints: %d wrong ints", per, bad);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Request_free(&req);
    free(buf);
}

/* ---- MPIX_Pbuf_prepare ---- */

/* iters instances, the receiver starting each 2 ms late (polling MPI
 * meanwhile); returns the
 * unexpected messages the receiver copied meanwhile. */
static unsigned long prepared_run(bool prepare, int iters, int per)
{
    int parts = 4;
    int *buf = calloc((size_t)parts * (size_t)per, sizeof(int));
    MPI_Request req;
    if (sender)
        MPI_Psend_init(buf, parts, per, MPI_INT, peer, 6, pair, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, parts, per, MPI_INT, peer, 6, pair, MPI_INFO_NULL, &req);
    MPI_Barrier(pair);
    unsigned long made0, made1, alloc;
    cdn_match_copy_counts(&made0, &alloc);
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        if (sender) {
            for (long i = 0; i < (long)parts * per; i++)
                buf[i] = value(it, i);
            MPI_Start(&req);
            if (prepare)
                MPIX_Pbuf_prepareall(1, &req);
            MPI_Pready_range(0, parts - 1, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            /* late, and busy in MPI meanwhile (it polls: what came is taken) */
            double until = now() + 0.002;
            int flag;
            while (now() < until)
                MPI_Iprobe(peer, 62, pair, &flag, MPI_STATUS_IGNORE);
            MPI_Start(&req);
            if (prepare)
                MPIX_Pbuf_prepare(req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (long i = 0; i < (long)parts * per; i++)
                bad += buf[i] != value(it, i);
        }
        /* The sender refills only once the data was checked: told so by
         * a message to it, so none but the transfers reaches the receiver. */
        int go = 0;
        if (sender)
            MPI_Recv(&go, 1, MPI_INT, peer, 61, pair, MPI_STATUS_IGNORE);
        else
            MPI_Send(&go, 1, MPI_INT, peer, 61, pair);
    }
    cdn_match_copy_counts(&made1, &alloc);
    CHECK(bad == 0, "prepare %d: %d wrong ints", prepare, bad);
    MPI_Request_free(&req);
    free(buf);
    return made1 - made0;
}

static void test_prepare(void)
{
    unsigned long with = prepared_run(true, 50, 256);
    unsigned long without = prepared_run(false, 50, 256);
    if (!sender) {
        CHECK(with == 0, "prepare: %lu transfers were held as unexpected copies", with);
        CHECK(without > 0, "without prepare, the late receiver held no unexpected copy");
        printf("rank %d: unexpected copies with MPIX_Pbuf_prepare %lu, without %lu\n", rank,
               with, without);
    }
    /* rendezvous-sized transfers as well */
    prepared_run(true, 10, 65536);
}

/* ---- errors ---- */

static int errs_seen;
static void count_err(MPI_Comm *c, int *code, ...)
{
    (void)c;
    (void)code;
    errs_seen++;
}


/* Sides whose sizes (or plans) do not match: an error on both, at every
 * instance, and no hang. */
static void mismatch(int sints, int rints, const char *spol, const char *rpol, int want,
                     const char *what)
{
    int *buf = calloc((size_t)4 * (size_t)(sints > rints ? sints : rints), sizeof(int));
    MPI_Info info = info_transfers(sender ? spol : rpol, NULL, NULL);
    MPI_Request req;
    if (sender)
        MPI_Psend_init(buf, 4, sints, MPI_INT, peer, 8, pair, info, &req);
    else
        MPI_Precv_init(buf, 4, rints, MPI_INT, peer, 8, pair, info, &req);
    for (int it = 0; it < 2; it++) {
        MPI_Start(&req);
        if (sender)
            MPI_Pready_range(0, 3, req);
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(check_class(rc) == want, "%s, instance %d, %s: class %d, expected %d", what, it,
              sender ? "send" : "receive", check_class(rc), want);
        MPI_Barrier(pair);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Request_free(&req);
    free(buf);
}

static void test_errors(void)
{
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(count_err, &eh);
    MPI_Comm_set_errhandler(pair, eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int x[8] = {0}, flag = 0;
    MPI_Request s, r, other;
    MPI_Info bad;
    MPI_Info_create(&bad);
    MPI_Info_set(bad, "cadence_part_transfers", "lots");
    errs_seen = 0;
    EXPECT(MPI_Psend_init(x, 2, 4, MPI_INT, peer, 1, pair, bad, &s), MPI_ERR_INFO_VALUE,
           "a bad cadence_part_transfers");
    EXPECT(MPI_Precv_init(x, 2, 4, MPI_INT, MPI_ANY_SOURCE, 1, pair, MPI_INFO_NULL, &r),
           MPI_ERR_RANK, "MPI_ANY_SOURCE");
    EXPECT(MPI_Precv_init(x, 2, 4, MPI_INT, peer, MPI_ANY_TAG, pair, MPI_INFO_NULL, &r),
           MPI_ERR_TAG, "MPI_ANY_TAG");
    EXPECT(MPI_Psend_init(x, -1, 4, MPI_INT, peer, 1, pair, MPI_INFO_NULL, &s), MPI_ERR_ARG,
           "negative partitions");
    CHECK(errs_seen == 4, "init errors raised on the communicator's handler: %d of 4",
          errs_seen);
    MPI_Info_free(&bad);
    /* a pair of requests to self to misuse */
    MPI_Psend_init(x, 4, 1, MPI_INT, 0, 2, MPI_COMM_SELF, MPI_INFO_NULL, &s);
    MPI_Precv_init(x + 4, 4, 1, MPI_INT, 0, 2, MPI_COMM_SELF, MPI_INFO_NULL, &r);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, eh);
    errs_seen = 0;
    EXPECT(MPI_Pready(0, s), MPI_ERR_REQUEST, "Pready on an inactive request");
    MPI_Parrived(r, 0, &flag);
    CHECK(flag == 1, "Parrived on an inactive request: flag %d", flag);
    flag = 0;
    MPI_Parrived(MPI_REQUEST_NULL, 0, &flag);
    CHECK(flag == 1, "Parrived on MPI_REQUEST_NULL: flag %d", flag);
    EXPECT(MPIX_Pbuf_prepare(s), MPI_ERR_REQUEST, "Pbuf_prepare on an inactive request");
    MPI_Start(&r);
    MPI_Start(&s);
    EXPECT(MPI_Start(&s), MPI_ERR_REQUEST, "starting an active request");
    EXPECT(MPI_Pready(4, s), MPI_ERR_ARG, "a partition out of range");
    EXPECT(MPI_Pready(-1, s), MPI_ERR_ARG, "a negative partition");
    EXPECT(MPI_Pready(1, s), MPI_SUCCESS, "Pready");
    EXPECT(MPI_Pready(1, s), MPI_ERR_ARG, "Pready twice in one instance");
    EXPECT(MPI_Pready_range(3, 2, s), MPI_ERR_ARG, "Pready_range low > high");
    EXPECT(MPI_Pready_list(-1, NULL, s), MPI_ERR_ARG, "Pready_list of negative length");
    EXPECT(MPI_Parrived(s, 0, &flag), MPI_ERR_REQUEST, "Parrived on a send request");
    EXPECT(MPI_Parrived(r, 9, &flag), MPI_ERR_ARG, "Parrived out of range");
    EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST, "Pready on a receive request");
    EXPECT(MPI_Request_free(&s), MPI_ERR_REQUEST, "freeing an active request");
    EXPECT(MPI_Cancel(&s), MPI_ERR_REQUEST, "cancelling a partitioned request");
    int list[3] = {0, 2, 3};
    EXPECT(MPI_Pready_list(3, list, s), MPI_SUCCESS, "Pready_list");
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(errs_seen == 13, "request errors raised on the request's communicator's handler: "
          "%d of 13", errs_seen);
    MPI_Irecv(x, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &other);
    EXPECT(MPI_Pready(0, other), MPI_ERR_REQUEST, "Pready on a point-to-point request");
    EXPECT(MPI_Parrived(other, 0, &flag), MPI_ERR_REQUEST, "Parrived on a receive request");
    MPI_Cancel(&other);
    MPI_Wait(&other, MPI_STATUS_IGNORE);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    /* mismatched sides */
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    mismatch(100, 101, NULL, NULL, MPI_ERR_TRUNCATE, "sizes 400 / 404 ints, auto");
    mismatch(100, 99, "send", "send", MPI_ERR_TRUNCATE, "sizes 400 / 396 ints, send");
    mismatch(65536, 65537, "send", NULL, MPI_ERR_TRUNCATE, "1 MiB / 1 MiB + 16, send");
    mismatch(65536, 65535, "2", "2", MPI_ERR_TRUNCATE, "1 MiB / 1 MiB - 16, fixed 2");
    mismatch(100, 100, "send", "recv", MPI_ERR_INFO_VALUE, "plans send / recv");
    mismatch(100, 100, "3", "4", MPI_ERR_INFO_VALUE, "fixed plans 3 / 4");
    /* and a good pair after them: the communicator still works */
    mismatch(100, 100, NULL, "recv", MPI_SUCCESS, "plans auto / recv");
    MPI_Errhandler_free(&eh);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "cases";
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    int psize;
    MPI_Comm_size(pair, &psize);
    peer = 1 - rank % 2;   /* in pair */
    sender = rank % 2 == 0;
    if (strcmp(mode, "cases") == 0) {
        if (psize == 2)
            test_cases();
    } else if (strcmp(mode, "earlybird") == 0) {
        if (psize == 2) {
            earlybird(16384, NULL);    /* rendezvous-sized partitions */
            earlybird(256, "0");       /* eager ones, not merged */
        }
    } else if (strcmp(mode, "prepare") == 0) {
        if (psize == 2)
            test_prepare();
    } else if (strcmp(mode, "errors") == 0) {
        if (psize == 2)
            test_errors();
    } else if (strcmp(mode, "threads") == 0) {
        CHECK(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
        test_threads(argc > 2 ? atoi(argv[2]) : 1000, argc > 3 ? atoi(argv[3]) : 16);
    } else {
        CHECK(0, "unknown mode %s", mode);
    }
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return check_summary("t_part");
}
