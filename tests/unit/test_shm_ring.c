/*
 * Unit tests of transport/shm/ring.c across real processes (fork, shared
 * anonymous memory, an inherited eventfd): 200000 cells through one ring
 * arrive complete and in order while the ring keeps filling up; a sleeping
 * consumer is woken by the doorbell; an awake one costs the producer no
 * eventfd write; a sleeping one is woken only for what it wants, and for
 * anything once its ring is half full; nothing rings while the consumer
 * polls, and the last poller leaving sees what would have rung.
 */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_suite.h"
#include "transport/shm/ring.h"

struct shared {
    struct shm_bell bell;
    struct shm_ring ring;  /* SHM_RING_CELLS cells follow */
};

#define SHARED_LEN (sizeof(struct shared) + (size_t)SHM_RING_CELLS * SHM_CELL_SIZE)

static struct shared *map_shared(void)
{
    size_t len = SHARED_LEN;
    struct shared *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s, MAP_FAILED);
    memset(s, 0, len);
    shm_ring_init(&s->ring, SHM_RING_CELLS);
    return s;
}

static void produce(struct shared *s, int efd, uint64_t first, uint64_t n)
{
    struct shm_prod p;
    shm_prod_open(&p, &s->ring);
    for (uint64_t i = first; i < first + n; i++) {
        struct shm_cell *c;
        while ((c = shm_ring_reserve(&p)) == NULL)
            ;
        c->type = 7;
        c->a = i;
        c->len = (uint32_t)(i % 200);
        memset(c->data, (int)(i & 0xff), c->len);
        shm_ring_commit(&p);
        shm_bell_ring(&s->bell, efd, SHM_WAKE_ALWAYS);
    }
}

enum { N = 200000 };

START_TEST(test_ring_order_across_processes)
{
    struct shared *s = map_shared();
    int efd = eventfd(0, EFD_NONBLOCK);
    pid_t pid = fork();
    if (pid == 0) {
        produce(s, efd, 0, N);
        _exit(0);
    }
    struct shm_cons c;
    shm_cons_open(&c, &s->ring);
    uint64_t want = 0;
    int bad = 0;
    while (want < N) {
        struct shm_cell *cell = shm_ring_peek(&c);
        if (cell == NULL)
            continue;
        if (cell->type != 7 || cell->a != want || cell->len != want % 200)
            bad++;
        for (uint32_t k = 0; k < cell->len; k++)
            if (cell->data[k] != (unsigned char)(want & 0xff)) {
                bad++;
                break;
            }
        shm_ring_release(&c);
        want++;
    }
    int status;
    waitpid(pid, &status, 0);
    ck_assert_int_eq(bad, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_ptr_null(shm_ring_peek(&c));
    uint64_t v;
    ck_assert_int_lt(read(efd, &v, sizeof v), 0);  /* never armed: never rung */
    close(efd);
    munmap(s, SHARED_LEN);
}
END_TEST

START_TEST(test_doorbell_wakes_sleeper)
{
    struct shared *s = map_shared();
    int efd = eventfd(0, EFD_NONBLOCK);
    struct shm_cons c;
    shm_cons_open(&c, &s->ring);
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        produce(s, efd, 0, 1);
        _exit(0);
    }
    shm_bell_arm(&s->bell);
    ck_assert(!shm_ring_pending(&s->ring));
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int n = poll(&pfd, 1, 10000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    shm_bell_disarm(&s->bell, efd);
    double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_int_eq(n, 1);
    ck_assert(waited > 0.1 && waited < 5.0);
    struct shm_cell *cell = shm_ring_peek(&c);
    ck_assert_ptr_nonnull(cell);
    ck_assert_int_eq(cell->a, 0);
    shm_ring_release(&c);
    uint64_t v;
    ck_assert_int_lt(read(efd, &v, sizeof v), 0);  /* disarm drained it */
    waitpid(pid, NULL, 0);
    close(efd);
    munmap(s, SHARED_LEN);
}
END_TEST

/* Arm, then a cell arrives before the sleep: the re-check must see it. */
START_TEST(test_arm_then_check_sees_cell)
{
    struct shared *s = map_shared();
    int efd = eventfd(0, EFD_NONBLOCK);
    struct shm_cons c;
    shm_cons_open(&c, &s->ring);
    int lost = 0;
    for (int round = 0; round < 2000; round++) {
        pid_t pid = round % 2 == 0 ? fork() : -1;
        if (pid == 0) {
            produce(s, efd, (uint64_t)round, 1);
            _exit(0);
        }
        if (pid < 0)
            produce(s, efd, (uint64_t)round, 1);
        shm_bell_arm(&s->bell);
        if (!shm_ring_pending(&s->ring)) {
            struct pollfd pfd = {.fd = efd, .events = POLLIN};
            if (poll(&pfd, 1, 5000) != 1)
                lost++;
        }
        shm_bell_disarm(&s->bell, efd);
        while (shm_ring_peek(&c) == NULL)
            ;
        shm_ring_release(&c);
        if (pid > 0)
            waitpid(pid, NULL, 0);
    }
    ck_assert_int_eq(lost, 0);
    close(efd);
    munmap(s, SHARED_LEN);
}
END_TEST

/* How many times the eventfd was written since the last look. */
static uint64_t rings_of(int efd)
{
    uint64_t v = 0;
    if (read(efd, &v, sizeof v) != sizeof v)
        v = 0;
    return v;
}

/* Commit one cell of the given type and ring with the given need, as
 * shm.c does; a full ring rings whatever the need (shm.c queues the
 * message).  Returns whether the cell was written. */
static bool produce_cell(struct shm_bell *b, struct shm_prod *p, int efd, uint16_t type, int need)
{
    struct shm_cell *c = shm_ring_reserve(p);
    if (c == NULL) {
        shm_bell_ring(b, efd, SHM_WAKE_ALWAYS);
        return false;
    }
    c->type = type;
    c->len = 0;
    shm_ring_commit(p);
    shm_bell_ring(b, efd, need != SHM_RING_LAZY && shm_ring_crowded(p) ? SHM_WAKE_ALWAYS : need);
    return true;
}

static bool produce_need(struct shm_bell *b, struct shm_prod *p, int efd, int need)
{
    return produce_cell(b, p, efd, 7, need);
}

/* A ring and bell in shared memory, both ends opened, and an eventfd. */
static struct shared *open_pair(int *efd, struct shm_prod *p, struct shm_cons *c)
{
    struct shared *s = map_shared();
    *efd = eventfd(0, EFD_NONBLOCK);
    shm_prod_open(p, &s->ring);
    shm_cons_open(c, &s->ring);
    return s;
}

START_TEST(test_bell_wants)
{
    int efd;
    struct shm_prod p;
    struct shm_cons c;
    struct shared *s = open_pair(&efd, &p, &c);
    /* nobody sleeps: no ring whatever the cell */
    produce_need(&s->bell, &p, efd, SHM_WAKE_ALWAYS);
    ck_assert_uint_eq(rings_of(efd), 0);
    shm_bell_arm(&s->bell);
    /* asleep, wanting nothing: data and completions wait, requests ring */
    produce_need(&s->bell, &p, efd, SHM_WANT_DATA);
    produce_need(&s->bell, &p, efd, SHM_WANT_DONE);
    ck_assert_uint_eq(rings_of(efd), 0);
    produce_need(&s->bell, &p, efd, SHM_WAKE_ALWAYS);
    ck_assert_uint_eq(rings_of(efd), 1);
    /* a posted receive: data rings, completions still wait */
    atomic_fetch_add(&s->bell.want[SHM_WANT_DATA], 1);
    produce_need(&s->bell, &p, efd, SHM_WANT_DATA);
    ck_assert_uint_eq(rings_of(efd), 1);
    produce_need(&s->bell, &p, efd, SHM_WANT_DONE);
    ck_assert_uint_eq(rings_of(efd), 0);
    /* an RTS or synchronous message (need POSTED) rings when any receive
     * is posted, or data is wanted at once; plain data needs the latter */
    produce_need(&s->bell, &p, efd, SHM_WANT_POSTED);
    ck_assert_uint_eq(rings_of(efd), 1);
    atomic_fetch_sub(&s->bell.want[SHM_WANT_DATA], 1);
    produce_need(&s->bell, &p, efd, SHM_WANT_POSTED);
    ck_assert_uint_eq(rings_of(efd), 0);
    atomic_fetch_add(shm_bell_want(&s->bell, SHM_WANT_POSTED), 1);
    produce_need(&s->bell, &p, efd, SHM_WANT_DATA);
    ck_assert_uint_eq(rings_of(efd), 0);
    produce_need(&s->bell, &p, efd, SHM_WANT_POSTED);
    ck_assert_uint_eq(rings_of(efd), 1);
    atomic_fetch_sub(shm_bell_want(&s->bell, SHM_WANT_POSTED), 1);
    /* a lazy cell (standard data on a user's context) rings only a
     * consumer asleep and wanting data, like a data cell */
    produce_need(&s->bell, &p, efd, SHM_RING_LAZY);
    ck_assert_uint_eq(rings_of(efd), 0);
    atomic_fetch_add(&s->bell.want[SHM_WANT_DATA], 1);
    produce_need(&s->bell, &p, efd, SHM_RING_LAZY);
    ck_assert_uint_eq(rings_of(efd), 1);
    atomic_fetch_sub(&s->bell.want[SHM_WANT_DATA], 1);
    /* unread lazy cells pile up quietly until the ring is full: the
     * message that finds no room rings */
    int quiet = 0;
    while (produce_need(&s->bell, &p, efd, SHM_RING_LAZY)) {
        ck_assert_uint_eq(rings_of(efd), 0);
        quiet++;
    }
    ck_assert_int_eq(quiet, SHM_RING_CELLS - 12);  /* twelve cells were in already */
    ck_assert_uint_eq(rings_of(efd), 1);
    /* other cells ring from half full on */
    for (int k = 0; k < SHM_RING_CELLS / 2 + 2; k++) {
        ck_assert_ptr_nonnull(shm_ring_peek(&c));
        shm_ring_release(&c);
    }
    ck_assert(produce_need(&s->bell, &p, efd, SHM_WANT_DONE));
    ck_assert_uint_eq(rings_of(efd), 0);  /* 31 unread; then 32: half full */
    ck_assert(produce_need(&s->bell, &p, efd, SHM_WANT_DONE));
    ck_assert_uint_eq(rings_of(efd), 1);
    ck_assert(produce_need(&s->bell, &p, efd, SHM_RING_LAZY));
    ck_assert_uint_eq(rings_of(efd), 0);
    /* the consumer drains: the producer sees room again and is quiet */
    while (shm_ring_peek(&c) != NULL)
        shm_ring_release(&c);
    produce_need(&s->bell, &p, efd, SHM_WANT_DATA);
    ck_assert_uint_eq(rings_of(efd), 0);
    shm_bell_disarm(&s->bell, efd);
    close(efd);
    munmap(s, SHARED_LEN);
}
END_TEST

/* Cell type 1 is data, 2 a completion, anything else a request to act. */
static int type_need(uint16_t type)
{
    return type == 1 ? SHM_WANT_DATA : type == 2 ? SHM_WANT_DONE : SHM_WAKE_ALWAYS;
}

static int test_need(const struct shm_cell *c)
{
    return type_need(c->type);
}

static void produce_type(struct shm_bell *b, struct shm_prod *p, int efd, uint16_t type)
{
    (void)produce_cell(b, p, efd, type, type_need(type));
}

START_TEST(test_bell_polled)
{
    int efd;
    struct shm_prod p;
    struct shm_cons c;
    struct shared *s = open_pair(&efd, &p, &c);
    shm_bell_arm(&s->bell);  /* the progress thread sleeps */
    /* two pollers: even a request to act rings nobody */
    ck_assert(!shm_bell_quiet(&s->bell, 1));
    ck_assert(!shm_bell_quiet(&s->bell, 1));
    produce_type(&s->bell, &p, efd, 3);
    ck_assert_uint_eq(rings_of(efd), 0);
    /* the first leaves: still quiet; the last leaves: the sleeper is armed */
    ck_assert(!shm_bell_quiet(&s->bell, -1));
    produce_type(&s->bell, &p, efd, 3);
    ck_assert_uint_eq(rings_of(efd), 0);
    ck_assert(shm_bell_quiet(&s->bell, -1));
    /* ... and the two requests would have rung it */
    ck_assert(shm_ring_would_ring(&s->ring, &s->bell, test_need, true));
    while (shm_ring_peek(&c) != NULL)
        shm_ring_release(&c);
    ck_assert(!shm_ring_would_ring(&s->ring, &s->bell, test_need, true));
    /* nobody polls: requests ring again */
    produce_type(&s->bell, &p, efd, 3);
    ck_assert_uint_eq(rings_of(efd), 1);
    while (shm_ring_peek(&c) != NULL)
        shm_ring_release(&c);
    /* data and a completion nobody wants: left for the next poll */
    ck_assert(!shm_bell_quiet(&s->bell, 1));
    produce_type(&s->bell, &p, efd, 1);
    produce_type(&s->bell, &p, efd, 2);
    ck_assert(shm_bell_quiet(&s->bell, -1));
    ck_assert(!shm_ring_would_ring(&s->ring, &s->bell, test_need, true));
    /* a receive posted meanwhile wants the data */
    atomic_fetch_add(&s->bell.want[SHM_WANT_DATA], 1);
    ck_assert(shm_ring_would_ring(&s->ring, &s->bell, test_need, true));
    atomic_fetch_sub(&s->bell.want[SHM_WANT_DATA], 1);
    /* a half-full ring wants draining whatever it holds (its producer may
     * have rung, or queued a message), but a want rising finds nothing it
     * wants there */
    ck_assert(!shm_bell_quiet(&s->bell, 1));
    for (int k = 2; k < SHM_RING_CELLS / 2; k++)
        produce_type(&s->bell, &p, efd, 1);
    ck_assert_uint_eq(rings_of(efd), 0);
    ck_assert(shm_bell_quiet(&s->bell, -1));
    ck_assert(shm_ring_would_ring(&s->ring, &s->bell, test_need, true));
    ck_assert(!shm_ring_would_ring(&s->ring, &s->bell, test_need, false));
    /* nobody sleeps: the last poller leaving has nobody to wake */
    shm_bell_disarm(&s->bell, efd);
    ck_assert(!shm_bell_quiet(&s->bell, 1));
    ck_assert(!shm_bell_quiet(&s->bell, -1));
    close(efd);
    munmap(s, SHARED_LEN);
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("shm_ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_ring_order_across_processes);
    tcase_add_test(tc, test_doorbell_wakes_sleeper);
    tcase_add_test(tc, test_arm_then_check_sees_cell);
    tcase_add_test(tc, test_bell_wants);
    tcase_add_test(tc, test_bell_polled);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(ring_suite(), 1);
}
