/*
 * The linger's bookkeeping (progress/engine.h, "Lingering"): after a short
 * blocking call the transports' count of pollers keeps one more, so peers
 * ring nobody while the application is between calls; whoever ends the
 * linger gives that count back exactly once.  A fake transport counts the
 * polled(+1/-1) calls it is given -- the count a peer would read on the
 * doorbell -- and the engine's fields are set as MPI_Init would with a
 * progress thread and quiet doorbells, without starting the thread.
 */
#include <check.h>
#include <time.h>

#include "progress/engine.h"
#include "progress/sent.h"
#include "transport/transport.h"
#include "run_suite.h"

static int polled;  /* the fake doorbell's count of pollers */

static bool fake_polled(struct cdn_transport *tp, int delta)
{
    (void)tp;
    polled += delta;
    return false;
}
static bool fake_busy(struct cdn_transport *tp)
{
    (void)tp;
    return false;
}
static int fake_poll(struct cdn_transport *tp)
{
    (void)tp;
    return 0;
}

static const struct cdn_transport_ops fake_ops = {
    .name = "fake", .poll = fake_poll, .busy = fake_busy, .polled = fake_polled,
};
static struct cdn_transport fake = {.ops = &fake_ops};

static bool always(void *arg)
{
    (void)arg;
    return true;
}

static void setup(void)
{
    polled = 0;
    static struct cdn_transport *one[1];
    one[0] = &fake;
    cdn_engine.ntransports = 1;
    cdn_engine.transports = one;
    cdn_engine.wake_fd = -1;
    cdn_engine.quiet_poll = true;
    cdn_engine.thread_on = true;
    cdn_engine.linger_ns = 100000;
    atomic_store(&cdn_engine.linger_on, true);  /* the progress thread turns it on */
    cdn_sent_report = true;
    atomic_store(&cdn_engine.app_pollers, 0);
    atomic_store(&cdn_engine.lingering, 0);
    atomic_store(&cdn_engine.thread_deep, false);
    atomic_store(&cdn_engine.held_start, false);
    atomic_store(&cdn_engine.p2p_start_ns, 0);
    atomic_store(&cdn_engine.overlap_score, 0);
    atomic_store(&cdn_engine.pending_work, 0);
    atomic_store(&cdn_engine.lingers, 0);
    for (int i = 0; i < 3; i++)
        atomic_store(&cdn_engine.linger_ends[i], 0);
}

/* A blocking call that finds its operation done: enter, wait, leave. */
static void short_blocking_call(void)
{
    cdn_progress_blocking_begin();
    cdn_progress_wait_until(always, NULL);
}

/* A start followed at once by a blocking call, whatever the speed of this
 * build (under valgrind the call alone takes longer than the gap): the
 * start's time is moved a second ahead, so the gap the call measures is
 * below any threshold. */
static void start_then_wait(void)
{
    cdn_progress_p2p_started();
    atomic_store(&cdn_engine.p2p_start_ns, cdn_progress_now_ns() + 1000000000u);
    short_blocking_call();
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

START_TEST(short_call_lingers_once)
{
    short_blocking_call();
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    ck_assert_int_eq(polled, 1);  /* kept: peers ring nobody */
    ck_assert_uint_eq(atomic_load(&cdn_engine.app_pollers), 0);
    /* a second call while lingering leaves as any poller does */
    short_blocking_call();
    ck_assert_int_eq(polled, 1);
    ck_assert_uint_eq(atomic_load(&cdn_engine.lingers), 1);
    ck_assert(cdn_progress_linger_end(CDN_LINGER_LOOKED));
    ck_assert_int_eq(polled, 0);
    ck_assert(!cdn_progress_linger_end(CDN_LINGER_LOOKED));  /* given back once */
    ck_assert_int_eq(polled, 0);
    ck_assert_uint_eq(atomic_load(&cdn_engine.linger_ends[CDN_LINGER_LOOKED]), 1);
}
END_TEST

START_TEST(no_linger_when_off_or_thread_deep)
{
    atomic_store(&cdn_engine.linger_on, false);
    short_blocking_call();
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 0);
    ck_assert_int_eq(polled, 0);
    atomic_store(&cdn_engine.linger_on, true);
    /* a progress thread asleep with no timeout would never end it */
    atomic_store(&cdn_engine.thread_deep, true);
    short_blocking_call();
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 0);
    ck_assert_int_eq(polled, 0);
    ck_assert_uint_eq(atomic_load(&cdn_engine.lingers), 0);
}
END_TEST

START_TEST(start_takes_the_lingers_place)
{
    short_blocking_call();
    ck_assert_int_eq(polled, 1);
    /* a collective start of rendezvous size: a poller from now on, in the
     * linger's place (the count does not move), and leaving as the last */
    ck_assert(cdn_progress_start_begin(true));
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 0);
    ck_assert_int_eq(polled, 1);
    ck_assert_uint_eq(atomic_load(&cdn_engine.app_pollers), 1);
    cdn_progress_start_end(true, false);
    ck_assert_int_eq(polled, 0);
    ck_assert_uint_eq(atomic_load(&cdn_engine.app_pollers), 0);
    ck_assert_uint_eq(atomic_load(&cdn_engine.linger_ends[CDN_LINGER_STARTED]), 1);
    /* a small start leaves a linger alone */
    short_blocking_call();
    ck_assert(cdn_progress_start_begin(false));
    cdn_progress_start_end(true, false);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    ck_assert_int_eq(polled, 1);
    ck_assert(cdn_progress_linger_end(CDN_LINGER_OTHER));
    ck_assert_int_eq(polled, 0);
}
END_TEST

START_TEST(p2p_starts_end_it_once_the_application_computes)
{
    short_blocking_call();
    /* a window: starts followed at once by a wait keep the linger */
    for (int i = 0; i < 5; i++)
        start_then_wait();
    ck_assert_int_eq(atomic_load(&cdn_engine.overlap_score), 0);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    /* starts followed by computation: the second scores it on */
    for (int i = 0; i < 2; i++) {
        cdn_progress_p2p_started();
        ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
        sleep_us(2 * CDN_PROGRESS_OVERLAP_GAP_NS / 1000);
        short_blocking_call();
    }
    ck_assert_int_eq(atomic_load(&cdn_engine.overlap_score), 2);
    ck_assert_int_eq(polled, 1);
    cdn_progress_p2p_started();
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 0);
    ck_assert_int_eq(polled, 0);
    ck_assert_uint_eq(atomic_load(&cdn_engine.linger_ends[CDN_LINGER_STARTED]), 1);
    /* windows again score it back off (the first start ends no linger:
     * the one before ended it and no short call has left since) */
    for (int i = 0; i < 2; i++)
        start_then_wait();
    ck_assert_int_eq(atomic_load(&cdn_engine.overlap_score), 0);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    ck_assert(cdn_progress_linger_end(CDN_LINGER_OTHER));
    ck_assert_int_eq(polled, 0);
}
END_TEST

START_TEST(a_held_start_lingers_with_work_left)
{
    /* the application waited at once after recent starts: a rendezvous
     * start is held -- its count lingers for the wait, work left or not */
    ck_assert(!cdn_progress_computes_next());
    atomic_store(&cdn_engine.pending_work, 1);  /* a transfer the wait will take */
    ck_assert(cdn_progress_start_begin(false));
    cdn_progress_start_end(true, true);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    ck_assert_int_eq(polled, 1);
    ck_assert_uint_eq(atomic_load(&cdn_engine.app_pollers), 0);
    /* the wait polls beside the linger and leaves it in place */
    short_blocking_call();
    ck_assert_int_eq(polled, 1);
    /* a short blocking call does not linger with work left */
    ck_assert(cdn_progress_linger_end(CDN_LINGER_OTHER));
    short_blocking_call();
    ck_assert_int_eq(polled, 0);
    /* a held start lingers with lingering off too, and tells the thread
     * to turn it on (held_start) ... */
    atomic_store(&cdn_engine.linger_on, false);
    atomic_store(&cdn_engine.held_start, false);
    ck_assert(cdn_progress_start_begin(false));
    cdn_progress_start_end(true, true);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 1);
    ck_assert(atomic_load(&cdn_engine.held_start));
    ck_assert(cdn_progress_linger_end(CDN_LINGER_OTHER));
    /* ... but not with the thread in a sleep that has no timeout */
    atomic_store(&cdn_engine.thread_deep, true);
    ck_assert(cdn_progress_start_begin(false));
    cdn_progress_start_end(true, true);
    ck_assert_int_eq(atomic_load(&cdn_engine.lingering), 0);
    ck_assert_int_eq(polled, 0);
    atomic_store(&cdn_engine.pending_work, 0);
    /* once the application computes after starts, they are not held */
    atomic_store(&cdn_engine.overlap_score, 2);
    ck_assert(cdn_progress_computes_next());
}
END_TEST

static Suite *linger_suite(void)
{
    Suite *s = suite_create("linger");
    TCase *tc = tcase_create("bookkeeping");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, short_call_lingers_once);
    tcase_add_test(tc, no_linger_when_off_or_thread_deep);
    tcase_add_test(tc, start_takes_the_lingers_place);
    tcase_add_test(tc, p2p_starts_end_it_once_the_application_computes);
    tcase_add_test(tc, a_held_start_lingers_with_work_left);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(linger_suite(), 0);
}
