/*
 * Broadcast: a binomial tree (log2 p steps of the whole message, for small
 * messages), or the root scattering the packed message in p pieces followed
 * by a ring allgather of the pieces (each link carries about 2x the message
 * in total whatever p is, for large messages).
 */
#include "coll/coll.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "sched/sched.h"

#define BCAST_LONG (64 * 1024)

/* This rank's place in the binomial tree rooted at root: its parent (-1 at
 * the root) and its children, in sending order; returns how many. */
static int binomial(const struct cdn_comm *c, int root, int *parent, int *children)
{
    int p = c->size, vr = (c->rank - root + p) % p;
    int mask = 1, n = 0;
    while (mask < p && !(vr & mask))
        mask <<= 1;
    *parent = vr != 0 ? (vr - mask + root) % p : -1;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p)
            children[n++] = (vr + mask + root) % p;
    return n;
}

static void bcast_binomial(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                           struct cdn_datatype *dt, int root)
{
    int parent, children[32];
    int n = binomial(c, root, &parent, children);
    if (parent >= 0) {
        cdn_sched_recv(s, buf, count, dt, parent, 0);
        cdn_sched_round(s);
    }
    for (int i = 0; i < n; i++)
        cdn_sched_send(s, buf, count, dt, children[i], 0);
}

static void bcast_scatter_allgather(struct cdn_sched *s, struct cdn_comm *c, void *buf,
                                    MPI_Count count, struct cdn_datatype *dt, int root)
{
    int p = c->size, vr = (c->rank - root + p) % p;
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    MPI_Count bytes = count * cdn_datatype_size(dt);
    bool contig = cdn_datatype_is_contig(dt, count);
    char *data = contig ? (char *)buf + cdn_datatype_true_lb(dt)
                        : cdn_sched_scratch(s, (size_t)bytes);
    if (data == NULL)
        return;
    if (!contig && vr == 0) {
        cdn_sched_copy(s, buf, count, dt, data, bytes, byte);
        cdn_sched_round(s);
    }
    MPI_Count chunk = (bytes + p - 1) / p;
#define PIECE(i) (data + ((i) * chunk < bytes ? (i) * chunk : bytes))
#define PLEN(i) ((i) * chunk >= bytes ? 0 : ((i) + 1) * chunk > bytes ? bytes - (i) * chunk : chunk)
    /* scatter: piece i to relative rank i */
    if (vr == 0) {
        for (int i = 1; i < p; i++)
            cdn_sched_send(s, PIECE(i), PLEN(i), byte, (i + root) % p, 0);
    } else {
        cdn_sched_recv(s, PIECE(vr), PLEN(vr), byte, root, 0);
    }
    cdn_sched_round(s);
    /* ring allgather of the pieces */
    int right = (c->rank + 1) % p, left = (c->rank - 1 + p) % p;
    for (int j = 0; j < p - 1; j++) {
        int sp = (vr - j + p) % p, rp = (vr - j - 1 + p) % p;
        if (vr != p - 1)  /* the root has every piece: the ring ends before it */
            cdn_sched_send(s, PIECE(sp), PLEN(sp), byte, right, 1 + j % 200);
        if (vr != 0)
            cdn_sched_recv(s, PIECE(rp), PLEN(rp), byte, left, 1 + j % 200);
        cdn_sched_round(s);
    }
#undef PIECE
#undef PLEN
    if (!contig && vr != 0)
        cdn_sched_copy(s, data, bytes, byte, buf, count, dt);
}

void cdn_coll_bcast(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                    struct cdn_datatype *dt, int root)
{
    if (c->size == 1 || count == 0)
        return;
    int alg = cdn_coll_forced(c, CDN_COLL_BCAST);
    if (alg == CDN_ALG_AUTO)
        alg = count * cdn_datatype_size(dt) < BCAST_LONG || c->size < 3
                  ? CDN_BCAST_BINOMIAL : CDN_BCAST_SCATTER_ALLGATHER;
    if (alg == CDN_BCAST_SCATTER_ALLGATHER)
        bcast_scatter_allgather(s, c, buf, count, dt, root);
    else
        bcast_binomial(s, c, buf, count, dt, root);
}

/* ---- blocking broadcast of a few bytes, without a schedule ----
 *
 * The binomial tree's messages (sub-tag 0: from the parent, then to each
 * child), posted straight as point-to-point requests (cdn_coll_exchange):
 * a kept schedule cost an 8-byte broadcast its node bookkeeping on every
 * call.  A rank on either path talks to a rank on the other. */

bool cdn_coll_bcast_direct_fits(struct cdn_comm *c, MPI_Count count, struct cdn_datatype *dt)
{
    int alg = cdn_coll_forced(c, CDN_COLL_BCAST);
    return !c->inter && c->size > 1 && count > 0 &&
           count * cdn_datatype_size(dt) <= CDN_BCAST_DIRECT_MAX &&
           (alg == CDN_ALG_AUTO || alg == CDN_BCAST_BINOMIAL);
}

int cdn_coll_bcast_direct(const char *fn, struct cdn_comm *c, void *buf, MPI_Count count,
                          struct cdn_datatype *dt, int root)
{
    int tag, rc = cdn_coll_call_tag(fn, c, &tag);
    if (rc != MPI_SUCCESS)
        return rc;
    int parent, children[32];
    int n = binomial(c, root, &parent, children);
    if (parent >= 0) {
        struct cdn_coll_msg from = {buf, count, dt, parent};
        rc = cdn_coll_exchange(c, tag, &from, 1, NULL, 0);
    }
    /* the children get what came even when it was the wrong size (the
     * counts differ): they wait for it, and report their own error */
    struct cdn_coll_msg to[32];
    for (int i = 0; i < n; i++)
        to[i] = (struct cdn_coll_msg){buf, count, dt, children[i]};
    int sent = n == 0 ? MPI_SUCCESS : cdn_coll_exchange(c, tag, NULL, 0, to, n);
    return rc != MPI_SUCCESS ? rc : sent;
}
