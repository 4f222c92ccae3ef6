/*
 * Unit tests of progress/match.c and progress/request.c: matching order and
 * wildcards (oldest match wins on both queues), taking receives and
 * messages back out, probes, context creation on first use; the request
 * copy pool (unexpected payloads up to 16 KiB in reused blocks); the request
 * pool (handles kept across reuse, stale handles refused), the completion
 * counter (the hook runs once, before completion is visible; parents hear
 * from every child), and events delivered from many threads at once;
 * posting and arriving from two threads at once (the matching lock), and
 * the engine's wants reaching a transport only when they leave or reach
 * zero, one change of one each, from many threads at once.
 */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include <mpi.h>

#include "progress/engine.h"
#include "progress/match.h"
#include "progress/request.h"
#include "run_suite.h"

static struct cdn_request *recv_req(int src, int tag)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_RECV, NULL, NULL);
    ck_assert_ptr_nonnull(r);
    r->u.p2p.rank = src;
    r->u.p2p.tag = tag;
    r->u.p2p.tag_mask = -1;  /* every bit of the tag (p2p.c sets it so) */
    return r;
}

static struct cdn_msg msg_of(int src, int tag, int bytes)
{
    struct cdn_msg m;
    memset(&m, 0, sizeof m);
    m.h.src = src;
    m.h.tag = tag;
    m.h.bytes = (uint64_t)bytes;
    return m;
}

START_TEST(test_posted_oldest_match_wins)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(100);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_eq(cdn_match_ctx_get(100), m);
    struct cdn_request *a = recv_req(MPI_ANY_SOURCE, 5), *b = recv_req(1, MPI_ANY_TAG),
                       *c = recv_req(1, 5);
    ck_assert_ptr_null(cdn_match_post(m, a));
    ck_assert_ptr_null(cdn_match_post(m, b));
    ck_assert_ptr_null(cdn_match_post(m, c));
    bool failed;
    struct cdn_msg x = msg_of(1, 6, 0);
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), b);  /* a wants tag 5 */
    x = msg_of(1, 5, 0);
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), a);
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), c);
    ck_assert_ptr_null(cdn_match_arrive(m, &x, "", &failed));  /* now unexpected */
    ck_assert(!failed);
    struct cdn_msg *got = cdn_match_post(m, a);
    ck_assert_ptr_nonnull(got);
    cdn_msg_free(got);
    cdn_request_release(a);
    cdn_request_release(b);
    cdn_request_release(c);
}
END_TEST

/* A tag mask (a multiplexed stream receive, runtime/stream.h): only the
 * masked bits must match, in posted and in unexpected searches. */
START_TEST(test_tag_mask)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(107);
    ck_assert_ptr_nonnull(m);
    /* tag 9 from any stream: the upper bits; stream 2 with any tag: the low six */
    struct cdn_request *any_stream = recv_req(1, 9 << 6), *stream2 = recv_req(1, 2);
    any_stream->u.p2p.tag_mask = ~63;
    stream2->u.p2p.tag_mask = 63;
    ck_assert_ptr_null(cdn_match_post(m, any_stream));
    ck_assert_ptr_null(cdn_match_post(m, stream2));
    bool failed;
    struct cdn_msg x = msg_of(1, 8 << 6 | 2, 0);  /* tag 8 from stream 2 */
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), stream2);
    x = msg_of(1, 9 << 6 | 5, 0);  /* tag 9 from stream 5 */
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), any_stream);
    x = msg_of(1, 7 << 6 | 3, 0);  /* unexpected, then a masked post finds it */
    ck_assert_ptr_null(cdn_match_arrive(m, &x, "", &failed));
    struct cdn_request *stream3 = recv_req(1, 3);
    stream3->u.p2p.tag_mask = 63;
    struct cdn_msg *got = cdn_match_post(m, stream3);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(got->h.tag, 7 << 6 | 3);
    cdn_msg_free(got);
    cdn_request_release(any_stream);
    cdn_request_release(stream2);
    cdn_request_release(stream3);
}
END_TEST

START_TEST(test_unexpected_in_arrival_order_with_payload)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(101);
    bool failed;
    char big[1000];
    for (int i = 0; i < 10; i++) {
        struct cdn_msg x = msg_of(i % 2, 7, i == 9 ? (int)sizeof big : 4);
        memset(big, 'a' + i, sizeof big);
        ck_assert_ptr_null(cdn_match_arrive(m, &x, big, &failed));
    }
    struct cdn_request *r = recv_req(1, 7);
    for (int i = 1; i < 10; i += 2) {  /* source 1: messages 1, 3, 5, 7, 9 in order */
        struct cdn_msg *got = cdn_match_post(m, r);
        ck_assert_ptr_nonnull(got);
        ck_assert_int_eq(((char *)got->data)[0], 'a' + i);
        ck_assert_int_eq(((char *)got->data)[got->h.bytes - 1], 'a' + i);
        cdn_msg_free(got);
    }
    struct cdn_wire_hdr h;
    struct cdn_msg *taken = NULL;
    ck_assert(cdn_match_probe(m, MPI_ANY_SOURCE, MPI_ANY_TAG, false, &h, &taken));
    ck_assert_int_eq(h.src, 0);
    ck_assert_ptr_null(taken);
    ck_assert(!cdn_match_probe(m, 1, 7, false, &h, &taken));
    for (int i = 0; i < 10; i += 2) {
        ck_assert(cdn_match_probe(m, 0, 7, true, &h, &taken));
        ck_assert_int_eq(((char *)taken->data)[0], 'a' + i);
        cdn_msg_free(taken);
    }
    ck_assert(!cdn_match_probe(m, MPI_ANY_SOURCE, MPI_ANY_TAG, false, &h, &taken));
    cdn_request_release(r);
}
END_TEST

/* Unexpected copies of 193 B .. 16 KiB come from the copy pool (one block,
 * the payload 64-byte aligned), of 16 KiB + 1 .. 64 KiB from the large pool
 * (the same), smaller ones from the small pool (the payload inline), and a
 * freed block of any is the next one of its pool used; larger ones are
 * malloc'd; the data is right in each, in arrival order. */
START_TEST(test_unexpected_copy_pool)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(104);
    bool failed;
    static char src[70000];
    static const int sizes[] = {4, 192, 193, 4096, 16384, 16385, 65536, 65537};
    /* 0: allocated, 1: the small pool, 2: the copy pool, 3: the large pool */
    static const int pool_of[] = {1, 1, 2, 2, 2, 3, 3, 0};
    static const int reused[] = {1, 0, 4, 3, 2, 6, 5, -1};  /* round 1: last freed first, per pool */
    enum { N = sizeof sizes / sizeof *sizes };
    void *blocks[N], *before[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            struct cdn_msg x = msg_of(0, 8, sizes[i]);
            memset(src, 'A' + i + round, sizeof src);
            ck_assert_ptr_null(cdn_match_arrive(m, &x, src, &failed));
            ck_assert(!failed);
        }
        struct cdn_request *r = recv_req(0, 8);
        for (int i = 0; i < N; i++) {
            struct cdn_msg *got = cdn_match_post(m, r);
            ck_assert_ptr_nonnull(got);
            ck_assert_int_eq((int)got->h.bytes, sizes[i]);
            int kind = got->pool == NULL                      ? 0
                       : got->data == (void *)got->inline_data ? 1
                       : got->h.bytes <= 16384                 ? 2
                                                               : 3;
            ck_assert_int_eq(kind, pool_of[i]);
            if (kind >= 2)
                ck_assert_int_eq((uintptr_t)got->data % 64, 0);
            if (kind != 0 && round == 1)
                ck_assert_ptr_eq(got, before[reused[i]]);
            blocks[i] = got;
            for (int k = 0; k < sizes[i]; k++)
                ck_assert_int_eq(((char *)got->data)[k], 'A' + i + round);
        }
        for (int i = 0; i < N; i++) {
            before[i] = blocks[i];
            cdn_msg_free(blocks[i]);
        }
        cdn_request_release(r);
    }
}
END_TEST

START_TEST(test_unpost_and_unsend)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(102);
    struct cdn_request *a = recv_req(0, 1), *b = recv_req(0, 1);
    cdn_match_post(m, a);
    cdn_match_post(m, b);
    ck_assert(cdn_match_unpost(m, a));
    ck_assert(!cdn_match_unpost(m, a));
    bool failed;
    struct cdn_msg x = msg_of(0, 1, 0);
    ck_assert_ptr_eq(cdn_match_arrive(m, &x, "", &failed), b);
    struct cdn_request *s = cdn_request_alloc(CDN_REQ_SEND, NULL, NULL);
    x.sreq = s;
    x.h.flags = CDN_WIRE_RNDV;
    x.h.cookie = (uint64_t)(uintptr_t)s;
    x.wire_id = (uint64_t)(uintptr_t)s;
    x.peer = 3;
    ck_assert_ptr_null(cdn_match_arrive(m, &x, NULL, &failed));
    ck_assert(!cdn_match_unsend(m, NULL, 4, (uint64_t)(uintptr_t)s));  /* another sender */
    ck_assert(cdn_match_unsend(m, NULL, 3, (uint64_t)(uintptr_t)s));
    ck_assert(!cdn_match_unsend(m, NULL, 3, (uint64_t)(uintptr_t)s));
    struct cdn_wire_hdr h;
    struct cdn_msg *t;
    ck_assert(!cdn_match_probe(m, MPI_ANY_SOURCE, MPI_ANY_TAG, false, &h, &t));
    cdn_request_release(a);
    cdn_request_release(b);
    cdn_request_release(s);
}
END_TEST

/* Two unexpected messages from one peer carry the same cookie (a send's
 * request was freed and its address reused by the next send): a cancel
 * names the message by its wire id and drops that one only. */
START_TEST(test_unsend_reused_cookie)
{
    struct cdn_match_ctx *m = cdn_match_ctx_get(103);
    struct cdn_transport tp = {0};
    bool failed;
    struct cdn_msg old = msg_of(2, 12, 0), cur = msg_of(2, 20, 0);
    old.tp = cur.tp = &tp;
    old.peer = cur.peer = 2;
    old.h.cookie = cur.h.cookie = 0x1000;
    old.wire_id = 7;
    cur.wire_id = 9;
    cur.h.flags = CDN_WIRE_RNDV;
    ck_assert_ptr_null(cdn_match_arrive(m, &old, "", &failed));
    ck_assert_ptr_null(cdn_match_arrive(m, &cur, NULL, &failed));
    ck_assert(!cdn_match_unsend(m, &tp, 2, 8));
    ck_assert(cdn_match_unsend(m, &tp, 2, 9));
    struct cdn_wire_hdr h;
    struct cdn_msg *t = NULL;
    ck_assert(cdn_match_probe(m, MPI_ANY_SOURCE, MPI_ANY_TAG, true, &h, &t));
    ck_assert_int_eq(h.tag, 12);
    ck_assert(!cdn_match_probe(m, MPI_ANY_SOURCE, MPI_ANY_TAG, false, &h, &t));
    cdn_msg_free(t);
}
END_TEST

START_TEST(test_pool_handles)
{
    struct cdn_request *r = cdn_request_alloc(CDN_REQ_SEND, NULL, NULL);
    MPI_Request h = cdn_request_publish(r);
    ck_assert_int_eq((((unsigned)h) >> 26) & 0xf, 0xb);
    ck_assert_ptr_eq(cdn_request_get(h), r);
    ck_assert_ptr_null(cdn_request_get(MPI_REQUEST_NULL));
    cdn_request_unpublish(r);
    ck_assert_ptr_null(cdn_request_get(h));  /* stale */
    /* many at once: all distinct, all found */
    enum { N = 300 };
    struct cdn_request *rs[N];
    MPI_Request hs[N];
    for (int i = 0; i < N; i++) {
        rs[i] = cdn_request_alloc(CDN_REQ_SEND, NULL, NULL);
        hs[i] = cdn_request_publish(rs[i]);
    }
    for (int i = 0; i < N; i++) {
        ck_assert_ptr_eq(cdn_request_get(hs[i]), rs[i]);
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(hs[i], hs[j]);
    }
    for (int i = 0; i < N; i++)
        cdn_request_unpublish(rs[i]);
}
END_TEST

static int hook_runs;
static int hook_saw_cc;
static void hook(struct cdn_request *r)
{
    hook_runs++;
    hook_saw_cc = atomic_load(&r->cc);
}
static const struct cdn_request_ops hook_ops = {.name = "test", .complete = hook};

START_TEST(test_completion_counter_and_parent)
{
    hook_runs = 0;
    struct cdn_request *parent = cdn_request_alloc(CDN_REQ_PAIR, &hook_ops, NULL);
    cdn_request_arm(parent, 2);
    struct cdn_request *k[2];
    for (int i = 0; i < 2; i++) {
        k[i] = cdn_request_alloc(CDN_REQ_SEND, NULL, NULL);
        k[i]->parent = parent;
        cdn_request_arm(k[i], 3);
    }
    for (int e = 0; e < 3; e++) {
        ck_assert(!cdn_request_done(k[0]));
        cdn_request_event(k[0]);
    }
    ck_assert(cdn_request_done(k[0]));
    ck_assert(!cdn_request_done(parent));
    ck_assert_int_eq(hook_runs, 0);
    for (int e = 0; e < 3; e++)
        cdn_request_event(k[1]);
    ck_assert(cdn_request_done(parent));
    ck_assert_int_eq(hook_runs, 1);
    ck_assert_int_ne(hook_saw_cc, 0);  /* the hook ran before completion was visible */
    ck_assert_int_eq(atomic_load(&parent->refs), 1);  /* the engine's reference went */
    cdn_request_release(k[0]);
    cdn_request_release(k[1]);
    cdn_request_release(parent);
}
END_TEST

enum { THREADS = 8, EVENTS = 20000 };
static struct cdn_request *shared;
static void *eventer(void *arg)
{
    (void)arg;
    for (int i = 0; i < EVENTS; i++)
        cdn_request_event(shared);
    return NULL;
}

START_TEST(test_events_from_threads)
{
    hook_runs = 0;
    shared = cdn_request_alloc(CDN_REQ_SEND, &hook_ops, NULL);
    cdn_request_arm(shared, THREADS * EVENTS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, eventer, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert(cdn_request_done(shared));
    ck_assert_int_eq(hook_runs, 1);
    cdn_request_release(shared);
}
END_TEST

/* Posts and arrivals of one context from two threads at once: each
 * message is matched exactly once, by whichever side came second, and
 * both queues end empty (the matching lock keeps the lists whole). */
#define RACE_MSGS 20000
static struct cdn_match_ctx *race_ctx;
static int race_by_arrival;

static void *race_arriver(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACE_MSGS; i++) {
        struct cdn_msg tmpl = msg_of(1, 5, 0);
        bool failed;
        struct cdn_request *r = cdn_match_arrive(race_ctx, &tmpl, NULL, &failed);
        ck_assert(!failed);
        if (r != NULL) {
            race_by_arrival++;
            cdn_request_release(r);
        }
    }
    return NULL;
}

START_TEST(test_post_and_arrive_from_threads)
{
    race_ctx = cdn_match_ctx_get(104);
    race_by_arrival = 0;
    pthread_t t;
    pthread_create(&t, NULL, race_arriver, NULL);
    int by_post = 0;
    for (int i = 0; i < RACE_MSGS; i++) {
        struct cdn_request *r = recv_req(1, 5);
        struct cdn_msg *msg = cdn_match_post(race_ctx, r);
        if (msg != NULL) {
            by_post++;
            cdn_msg_free(msg);
            cdn_request_release(r);
        }
    }
    pthread_join(t, NULL);
    ck_assert_int_eq(by_post + race_by_arrival, RACE_MSGS);
    ck_assert_ptr_null(race_ctx->posted);
    ck_assert_ptr_null(race_ctx->unexp);
}
END_TEST

/* A transport that counts what the engine tells it of its wants. */
static atomic_int fake_want_count, fake_want_calls, fake_want_bad;

static bool fake_want(struct cdn_transport *tp, int want, int delta)
{
    (void)tp;
    (void)want;
    if (delta != 1 && delta != -1)
        atomic_fetch_add(&fake_want_bad, 1);
    atomic_fetch_add(&fake_want_count, delta);
    atomic_fetch_add(&fake_want_calls, 1);
    return false;
}

static const struct cdn_transport_ops fake_ops = {.name = "fake", .want = fake_want};
static struct cdn_transport fake_tp = {.ops = &fake_ops};

#define WANT_THREADS 4
#define WANT_ROUNDS 100000

static void *want_cycler(void *arg)
{
    (void)arg;
    for (int i = 0; i < WANT_ROUNDS; i++) {
        cdn_progress_want(CDN_WANT_POSTED, 1);
        cdn_progress_want(CDN_WANT_POSTED, -1);
    }
    return NULL;
}

START_TEST(test_wants_reach_transport_at_edges)
{
    struct cdn_transport *one[1] = {&fake_tp};
    cdn_engine.transports = one;
    cdn_engine.ntransports = 1;
    /* 100 receives posted, then matched: the transport hears twice */
    for (int i = 0; i < 100; i++)
        cdn_progress_want(CDN_WANT_POSTED, 1);
    ck_assert_int_eq(atomic_load(&fake_want_count), 1);
    for (int i = 0; i < 100; i++)
        cdn_progress_want(CDN_WANT_POSTED, -1);
    ck_assert_int_eq(atomic_load(&fake_want_count), 0);
    ck_assert_int_eq(atomic_load(&fake_want_calls), 2);
    /* edges from many threads at once: the transport's count settles to
     * the process's, each edge one change of one */
    pthread_t t[WANT_THREADS];
    for (int i = 0; i < WANT_THREADS; i++)
        pthread_create(&t[i], NULL, want_cycler, NULL);
    for (int i = 0; i < WANT_THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&fake_want_count), 0);
    ck_assert_int_eq(atomic_load(&fake_want_bad), 0);
    cdn_progress_want(CDN_WANT_POSTED, 1);
    ck_assert_int_eq(atomic_load(&fake_want_count), 1);
    cdn_progress_want(CDN_WANT_POSTED, -1);
    ck_assert_int_eq(atomic_load(&fake_want_count), 0);
    /* five receives posted on a communicator, then matched: the
     * transport hears of the first and the last only */
    struct cdn_match_ctx *m = cdn_match_ctx_get(105);
    atomic_store(&fake_want_calls, 0);
    struct cdn_request *r[5];
    for (int i = 0; i < 5; i++) {
        r[i] = recv_req(0, i);
        ck_assert_ptr_null(cdn_match_post(m, r[i]));
    }
    ck_assert_int_eq(atomic_load(&fake_want_count), 1);
    for (int i = 0; i < 5; i++) {
        struct cdn_msg tmpl = msg_of(0, i, 0);
        bool failed;
        ck_assert_ptr_eq(cdn_match_arrive(m, &tmpl, NULL, &failed), r[i]);
        cdn_request_release(r[i]);
    }
    ck_assert_int_eq(atomic_load(&fake_want_count), 0);
    ck_assert_int_eq(atomic_load(&fake_want_calls), 2);
    cdn_engine.ntransports = 0;
    cdn_engine.transports = NULL;
}
END_TEST

static Suite *match_suite(void)
{
    Suite *s = suite_create("match");
    TCase *tc = tcase_create("queues");
    tcase_add_test(tc, test_posted_oldest_match_wins);
    tcase_add_test(tc, test_tag_mask);
    tcase_add_test(tc, test_unexpected_in_arrival_order_with_payload);
    tcase_add_test(tc, test_unexpected_copy_pool);
    tcase_add_test(tc, test_unpost_and_unsend);
    tcase_add_test(tc, test_unsend_reused_cookie);
    suite_add_tcase(s, tc);
    tc = tcase_create("threads");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_post_and_arrive_from_threads);
    tcase_add_test(tc, test_wants_reach_transport_at_edges);
    suite_add_tcase(s, tc);
    tc = tcase_create("requests");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_pool_handles);
    tcase_add_test(tc, test_completion_counter_and_parent);
    tcase_add_test(tc, test_events_from_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return cdn_run_suite(match_suite(), 0);
}
