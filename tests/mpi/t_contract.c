/*
 * The transport contract below MPI (transport/transport.h), exercised on a
 * running job by a program linked with the library's internals (the core
 * static library), over the transport the job runs on: the first
 * CADENCE_TRANSPORTS names, else shm (the test's ranks share a node),
 * checked to be the one the engine reaches the neighbour by; every check
 * says which transport answered.
 *
 *   - Active messages: each rank sends AM_COUNT active messages of 0 to
 *     AM_MAX_TEST bytes to every other rank for the test's handler
 *     (CDN_AM_TEST), each followed by a standard MPI message; the handler
 *     checks every payload byte and that they come in order, and each MPI
 *     message must find the active message sent before it already handled
 *     (the two share the channel's order).  With the progress thread off
 *     the receiver does not poll while the first half is sent, so on shm
 *     its ring fills and active messages wait in the sender's queue.
 *   - An active message over the transport's am_max fails with an MPI
 *     error, nothing sent.
 *   - One-sided get and put where the transport has them (shm: CMA): each
 *     rank reads its right neighbour's buffer and writes into its left
 *     neighbour's, by the memory key the neighbour published, with no
 *     call by the neighbour; completion through cdn_xfer_done.  A
 *     transport without them must not claim them.
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_mpi.h"
#include "progress/am.h"
#include "progress/engine.h"
#include "transport/transport.h"

#define AM_COUNT 3000
#define AM_MAX_TEST 700
#define MAX_RANKS 16
#define TAG 77

static int me, size;
static atomic_int am_seen[MAX_RANKS];  /* active messages handled, by sender */
static atomic_int am_bad[MAX_RANKS];   /* ... with a wrong payload or out of order */

static size_t am_len(int seq)
{
    return (size_t)(seq * 37 % (AM_MAX_TEST + 1));
}

/* (not by the receiver's rank: a peer's first messages may be handled by
 * the progress thread before this process's MPI_Comm_rank has returned) */
static unsigned char am_byte(int src, int seq, size_t i)
{
    return (unsigned char)(src * 131 + seq * 7 + (int)i);
}

/* The payload: the sequence number, then bytes named by it. */
static void am_fill(unsigned char *b, int seq)
{
    size_t len = am_len(seq);
    for (size_t i = 0; i < len; i++)
        b[i] = am_byte(me, seq, i);
    if (len >= sizeof seq)
        memcpy(b, &seq, sizeof seq);
}

static void on_test(struct cdn_transport *tp, int peer, const void *data, size_t len)
{
    (void)tp;
    if (peer < 0 || peer >= MAX_RANKS) {
        atomic_fetch_add(&am_bad[0], 1);
        return;
    }
    int seq = atomic_load(&am_seen[peer]);
    const unsigned char *b = data;
    bool ok = len == am_len(seq);
    for (size_t i = len >= sizeof seq ? sizeof seq : 0; ok && i < len; i++)
        ok = b[i] == am_byte(peer, seq, i);
    if (ok && len >= sizeof seq) {
        int got;
        memcpy(&got, b, sizeof got);
        ok = got == seq;
    }
    if (!ok && atomic_fetch_add(&am_bad[peer], 1) < 3 && getenv("T_CONTRACT_DEBUG") != NULL) {
        int got = -1;
        if (len >= sizeof got)
            memcpy(&got, b, sizeof got);
        fprintf(stderr, "from rank %d expected #%d (%zu bytes), got %zu bytes (#%d)\n", peer,
                seq, am_len(seq), len, got);
    }
    atomic_fetch_add(&am_seen[peer], 1);
}

static void active_messages(const char *name)
{
    static unsigned char buf[AM_MAX_TEST];
    for (int peer = 0; peer < size; peer++) {
        if (peer == me)
            continue;
        struct cdn_transport *tp = cdn_progress_transport_for(peer);
        CHECK(tp != NULL && strcmp(tp->ops->name, name) == 0, "rank %d reached over %s (%s)",
              peer, name, tp != NULL ? tp->ops->name : "none");
        if (tp == NULL)
            return;
        CHECK(tp->am_max >= AM_MAX_TEST, "%s: am_max %zu holds %d bytes", name, tp->am_max,
              AM_MAX_TEST);
        /* too long: an error, nothing sent */
        unsigned char *big = calloc(1, tp->am_max + 1);
        int rc = big != NULL ? cdn_am_send(NULL, peer, CDN_AM_TEST, big, tp->am_max + 1) : -1;
        CHECK(rc != MPI_SUCCESS, "%s: an active message of am_max + 1 bytes fails", name);
        free(big);
    }
    /* Every rank sends to every other; the receivers poll only from the
     * halfway barrier on (without a progress thread, shm rings fill). */
    MPI_Request *reqs = malloc(sizeof *reqs * (size_t)(AM_COUNT * 2 * size));
    int *tokens = malloc(sizeof *tokens * (size_t)(AM_COUNT * size));
    int n = 0, bad_order = 0;
    for (int seq = 0; seq < AM_COUNT; seq++) {
        if (seq == AM_COUNT / 2)
            MPI_Barrier(MPI_COMM_WORLD);
        for (int peer = 0; peer < size; peer++) {
            if (peer == me)
                continue;
            am_fill(buf, seq);
            int rc = cdn_am_send(NULL, peer, CDN_AM_TEST, buf, am_len(seq));
            CHECK(rc == MPI_SUCCESS, "%s: active message %d to rank %d sent", name, seq, peer);
            tokens[seq * size + peer] = seq;
            MPI_Isend(&tokens[seq * size + peer], 1, MPI_INT, peer, TAG, MPI_COMM_WORLD,
                      &reqs[n++]);
        }
    }
    /* Each message from a peer follows that peer's active message of the
     * same number: it must have been handled already. */
    for (int k = 0; k < AM_COUNT * (size - 1); k++) {
        int seq;
        MPI_Status st;
        MPI_Recv(&seq, 1, MPI_INT, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &st);
        if (atomic_load(&am_seen[st.MPI_SOURCE]) < seq + 1)
            bad_order++;
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int peer = 0; peer < size; peer++) {
        if (peer == me)
            continue;
        CHECK(atomic_load(&am_seen[peer]) == AM_COUNT,
              "%s: %d active messages from rank %d handled (%d expected)", name,
              atomic_load(&am_seen[peer]), peer, AM_COUNT);
        CHECK(atomic_load(&am_bad[peer]) == 0,
              "%s: every active message from rank %d intact and in order (%d not)", name, peer,
              atomic_load(&am_bad[peer]));
    }
    CHECK(bad_order == 0, "%s: every message came after the active message sent before it "
          "(%d did not)", name, bad_order);
    free(reqs);
    free(tokens);
}

struct done_flag {
    struct cdn_xfer x;
    atomic_int done, err;
};

static void on_done(struct cdn_xfer *x, int err)
{
    struct done_flag *d = (struct done_flag *)x;
    atomic_store(&d->err, err);
    atomic_store(&d->done, 1);
}

#define RMA_BYTES (3 << 20)

static void one_sided(const char *name)
{
    if (size < 2)
        return;
    int right = (me + 1) % size, left = (me + size - 1) % size;
    struct cdn_transport *tp = cdn_progress_transport_for(right);
    unsigned caps = tp != NULL ? tp->caps : 0;
    bool can = (caps & (CDN_TP_CAP_GET | CDN_TP_CAP_PUT)) == (CDN_TP_CAP_GET | CDN_TP_CAP_PUT);
    if (strcmp(name, "shm") == 0)
        CHECK(can && tp->ops->get != NULL && tp->ops->put != NULL, "shm: get and put offered");
    else
        CHECK(((caps & CDN_TP_CAP_GET) != 0) == (tp != NULL && tp->ops->get != NULL) &&
              ((caps & CDN_TP_CAP_PUT) != 0) == (tp != NULL && tp->ops->put != NULL),
              "%s: claims get/put exactly when it has them (caps %#x)", name, caps);
    int all_can;
    int mine = can;
    MPI_Allreduce(&mine, &all_can, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_can) {
        printf("rank %d: %s offers no one-sided get/put: not tested here\n", me, name);
        return;
    }
    unsigned char *exposed = malloc(RMA_BYTES), *target = calloc(1, RMA_BYTES);
    unsigned char *got = malloc(RMA_BYTES), *out = malloc(RMA_BYTES);
    for (size_t i = 0; i < RMA_BYTES; i++) {
        exposed[i] = (unsigned char)(i * 13 + (size_t)me);
        out[i] = (unsigned char)(i * 7 + (size_t)me * 3);
    }
    /* publish the keys: address and registration key of both buffers */
    struct cdn_mem_key keys[2] = {{(uint64_t)(uintptr_t)exposed, 0},
                                  {(uint64_t)(uintptr_t)target, 0}};
    for (int k = 0; k < 2 && tp->ops->mem_reg != NULL; k++)
        tp->ops->mem_reg(tp, k == 0 ? exposed : target, RMA_BYTES, &keys[k]);
    struct cdn_mem_key *all = malloc(sizeof keys * (size_t)size);
    MPI_Allgather(keys, (int)sizeof keys, MPI_BYTE, all, (int)sizeof keys, MPI_BYTE,
                  MPI_COMM_WORLD);
    struct done_flag g = {.x = {.peer = right, .bytes = RMA_BYTES, .dst = got,
                                .rkey = all[2 * right], .on_done = on_done}};
    struct done_flag p = {.x = {.peer = left, .bytes = RMA_BYTES, .src = out,
                                .rkey = all[2 * left + 1], .on_done = on_done}};
    int rc1 = tp->ops->get(tp, &g.x);
    struct cdn_transport *ltp = cdn_progress_transport_for(left);
    int rc2 = ltp->ops->put(ltp, &p.x);
    while (!atomic_load(&g.done) || !atomic_load(&p.done))
        cdn_progress_poll();
    CHECK(rc1 == MPI_SUCCESS && atomic_load(&g.err) == MPI_SUCCESS, "%s: get from rank %d",
          name, right);
    CHECK(rc2 == MPI_SUCCESS && atomic_load(&p.err) == MPI_SUCCESS, "%s: put to rank %d", name,
          left);
    size_t wrong = 0;
    for (size_t i = 0; i < RMA_BYTES; i++)
        wrong += got[i] != (unsigned char)(i * 13 + (size_t)right);
    CHECK(wrong == 0, "%s: the %d bytes got from rank %d are its (%zu wrong)", name, RMA_BYTES,
          right, wrong);
    MPI_Barrier(MPI_COMM_WORLD);  /* every put is done */
    wrong = 0;
    for (size_t i = 0; i < RMA_BYTES; i++)
        wrong += target[i] != (unsigned char)(i * 7 + (size_t)right * 3);
    CHECK(wrong == 0, "%s: the %d bytes rank %d put here are its (%zu wrong)", name, RMA_BYTES,
          right, wrong);
    for (int k = 0; k < 2 && tp->ops->mem_dereg != NULL; k++)
        tp->ops->mem_dereg(tp, &keys[k]);
    free(all);
    free(exposed);
    free(target);
    free(got);
    free(out);
}

int main(int argc, char **argv)
{
    /* the transport asked for: the first CADENCE_TRANSPORTS names, else shm */
    const char *tr = getenv("CADENCE_TRANSPORTS");
    char asked[32] = "shm";
    if (tr != NULL && *tr != '\0')
        snprintf(asked, sizeof asked, "%.*s", (int)strcspn(tr, ","), tr);
    cdn_am_register(CDN_AM_TEST, on_test);  /* before any peer can send one */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAX_RANKS) {
        fprintf(stderr, "t_contract: at most %d ranks\n", MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* the one that answers: the engine's for the right neighbour */
    struct cdn_transport *used = size > 1 ? cdn_progress_transport_for((me + 1) % size) : NULL;
    const char *name = used != NULL ? used->ops->name : asked;
    CHECK(strcmp(name, asked) == 0, "the transport reaching the right neighbour is %s, as asked",
          name);
    active_messages(name);
    one_sided(name);
    char label[64];
    snprintf(label, sizeof label, "t_contract[%d] over %s", me, name);
    int rc = check_summary(label);
    MPI_Finalize();
    return rc;
}
