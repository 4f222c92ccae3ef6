/*
 * Intercommunicator collectives (MPI-4.1 section 6), as schedule builders.
 *
 * An intercommunicator joins a local group (c->rank, c->size) and a remote
 * group (c->remote_size); point-to-point on it names remote ranks, so the
 * schedule's own sends and receives always cross between the groups.  Work
 * among the local group runs as a nested schedule on c->local_comm (an
 * intracommunicator of the local group), built by the intracommunicator
 * builders and started by a request node of the outer schedule.  Every
 * process of a group builds the same nested schedules in the same order, so
 * their tags (local_comm's collective sequence numbers) agree.
 *
 *   barrier      local barrier, leaders (local rank 0) exchange a message,
 *                local barrier again;
 *   bcast        the root sends to remote rank 0, which broadcasts locally;
 *   reduce       the non-root group reduces to its leader (rank order, so
 *                non-commutative ops are right), which sends to the root;
 *   allreduce,   each group reduces to its leader, the leaders swap their
 *   reduce_scatter  results, and each leader broadcasts (allreduce) or
 *                scatters by recvcounts (reduce_scatter) what it received;
 *   gather(v), scatter(v), allgather(v), alltoall(v,w): every block goes
 *                straight to the process it is for (all posted at once).
 *
 * Rooted collectives: root is MPI_ROOT at the root, MPI_PROC_NULL at the
 * other processes of its group (they do nothing), and the root's rank in
 * the remote group at every process of the other group.
 */
#include "coll/coll.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "sched/sched.h"

static char *at(const void *buf, MPI_Aint disp, const struct cdn_datatype *dt)
{
    return (char *)buf + disp * cdn_datatype_extent(dt);
}

/* The builder marks a schedule it cannot complete as broken the way the
 * engine does for failed node ids: a dependency on a node that is not there. */
static void broken(struct cdn_sched *s)
{
    cdn_sched_dep(s, -1, -1);
}

/* A persistent schedule of the local group's next collective, for the
 * caller to build and then nest(); NULL (s marked broken) out of memory. */
static struct cdn_sched *local_begin(struct cdn_sched *s, struct cdn_comm *c)
{
    struct cdn_sched *l = cdn_coll_sched(c->local_comm, true);
    if (l == NULL)
        broken(s);
    return l;
}

/* Run the local schedule l as one node of s, in s's current round. */
static void nest(struct cdn_sched *s, struct cdn_sched *l)
{
    struct cdn_request *r;
    if (l == NULL)
        return;
    if (cdn_sched_commit(l, "intercommunicator collective", &r) != MPI_SUCCESS) {
        broken(s);
        return;
    }
    cdn_sched_request(s, r);
}

static void local_barrier(struct cdn_sched *s, struct cdn_comm *c)
{
    struct cdn_sched *l = local_begin(s, c);
    if (l != NULL)
        cdn_coll_barrier(l, c->local_comm);
    nest(s, l);
}

static void local_bcast(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                        struct cdn_datatype *dt)
{
    struct cdn_sched *l = local_begin(s, c);
    if (l != NULL)
        cdn_coll_bcast(l, c->local_comm, buf, count, dt, 0);
    nest(s, l);
}

/* The reduction of the local group's sbufs, in rank order, into acc at the
 * leader (NULL elsewhere). */
static void local_reduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *acc,
                         MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op)
{
    struct cdn_sched *l = local_begin(s, c);
    if (l != NULL)
        cdn_coll_reduce(l, c->local_comm, sbuf, acc, count, dt, op, 0);
    nest(s, l);
}

/* A typed scratch buffer at the leader, NULL elsewhere; *ok false when the
 * leader is out of memory (s is then marked broken). */
static void *leader_scratch(struct cdn_sched *s, struct cdn_comm *c, MPI_Count count,
                            struct cdn_datatype *dt, bool *ok)
{
    *ok = true;
    if (c->rank != 0)
        return NULL;
    /* never empty: the local reduce's root needs a buffer even for count 0 */
    void *p = cdn_sched_typed_scratch(s, count > 0 ? count : 1, dt);
    if (p == NULL) {
        broken(s);
        *ok = false;
    }
    return p;
}

void cdn_coll_inter_barrier(struct cdn_sched *s, struct cdn_comm *c)
{
    struct cdn_datatype *byte = cdn_datatype_get(MPI_BYTE);
    local_barrier(s, c);
    cdn_sched_round(s);
    if (c->rank == 0) {
        cdn_sched_send(s, NULL, 0, byte, 0, 0);
        cdn_sched_recv(s, NULL, 0, byte, 0, 0);
        cdn_sched_round(s);
    }
    local_barrier(s, c);
}

void cdn_coll_inter_bcast(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                          struct cdn_datatype *dt, int root)
{
    if (root == MPI_PROC_NULL)
        return;
    if (root == MPI_ROOT) {
        cdn_sched_send(s, buf, count, dt, 0, 0);
        return;
    }
    if (c->rank == 0) {
        cdn_sched_recv(s, buf, count, dt, root, 0);
        cdn_sched_round(s);
    }
    local_bcast(s, c, buf, count, dt);
}

void cdn_coll_inter_gatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                            MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                            const MPI_Count *rcounts, const MPI_Aint *displs,
                            struct cdn_datatype *rdt, int root)
{
    if (root == MPI_PROC_NULL)
        return;
    if (root != MPI_ROOT) {
        cdn_sched_send(s, sbuf, scount, sdt, root, 0);
        return;
    }
    for (int i = 0; i < c->remote_size; i++)
        cdn_sched_recv(s, at(rbuf, displs[i], rdt), rcounts[i], rdt, i, 0);
}

void cdn_coll_inter_scatterv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                             const MPI_Count *scounts, const MPI_Aint *displs,
                             struct cdn_datatype *sdt, void *rbuf, MPI_Count rcount,
                             struct cdn_datatype *rdt, int root)
{
    if (root == MPI_PROC_NULL)
        return;
    if (root != MPI_ROOT) {
        cdn_sched_recv(s, rbuf, rcount, rdt, root, 0);
        return;
    }
    for (int i = 0; i < c->remote_size; i++)
        cdn_sched_send(s, at(sbuf, displs[i], sdt), scounts[i], sdt, i, 0);
}

/* Each process's block to every remote process; block i of rbuf from
 * remote rank i.  Sends start with the partner of the same rank, so the
 * remote processes are not all hit first by the same sender. */
void cdn_coll_inter_allgatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                               MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                               const MPI_Count *rcounts, const MPI_Aint *displs,
                               struct cdn_datatype *rdt)
{
    int m = c->remote_size;
    for (int k = 0; k < m; k++) {
        int i = (c->rank + k) % m;
        cdn_sched_recv(s, at(rbuf, displs[i], rdt), rcounts[i], rdt, i, 0);
        cdn_sched_send(s, sbuf, scount, sdt, i, 0);
    }
}

void cdn_coll_inter_alltoallw(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                              const MPI_Count *scounts, const MPI_Aint *sdispls,
                              struct cdn_datatype *const *sdts, void *rbuf,
                              const MPI_Count *rcounts, const MPI_Aint *rdispls,
                              struct cdn_datatype *const *rdts)
{
    int m = c->remote_size;
    for (int k = 0; k < m; k++) {
        int i = (c->rank + k) % m;
        cdn_sched_recv(s, (char *)rbuf + rdispls[i], rcounts[i], rdts[i], i, 0);
        cdn_sched_send(s, (const char *)sbuf + sdispls[i], scounts[i], sdts[i], i, 0);
    }
}

void cdn_coll_inter_reduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                           void *rbuf, MPI_Count count, struct cdn_datatype *dt,
                           struct cdn_op *op, int root)
{
    if (root == MPI_PROC_NULL)
        return;
    if (root == MPI_ROOT) {
        cdn_sched_recv(s, rbuf, count, dt, 0, 0);
        return;
    }
    bool ok;
    void *acc = leader_scratch(s, c, count, dt, &ok);
    if (!ok)
        return;
    local_reduce(s, c, sbuf, acc, count, dt, op);
    cdn_sched_round(s);
    if (c->rank == 0)
        cdn_sched_send(s, acc, count, dt, root, 0);
}

/* The leaders swap their group's reduction (mine) for the other group's
 * (theirs, count elements); every process takes part in the local steps. */
static void leaders_swap(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *mine,
                         void *theirs, MPI_Count count, struct cdn_datatype *dt,
                         struct cdn_op *op)
{
    local_reduce(s, c, sbuf, mine, count, dt, op);
    cdn_sched_round(s);
    if (c->rank == 0) {
        cdn_sched_recv(s, theirs, count, dt, 0, 0);
        cdn_sched_send(s, mine, count, dt, 0, 0);
        cdn_sched_round(s);
    }
}

void cdn_coll_inter_allreduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                              void *rbuf, MPI_Count count, struct cdn_datatype *dt,
                              struct cdn_op *op)
{
    bool ok;
    void *mine = leader_scratch(s, c, count, dt, &ok);
    if (!ok)
        return;
    leaders_swap(s, c, sbuf, mine, rbuf, count, dt, op);
    local_bcast(s, c, rbuf, count, dt);
}

/* rcounts: the local group's blocks; both groups reduce sum(rcounts)
 * elements (MPI-4.1 requires the totals to agree). */
void cdn_coll_inter_reduce_scatter(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                                   void *rbuf, const MPI_Count *rcounts,
                                   struct cdn_datatype *dt, struct cdn_op *op)
{
    int n = c->size;
    MPI_Aint *displs = cdn_sched_scratch(s, ((size_t)n + 1) * sizeof *displs);
    if (displs == NULL) {
        broken(s);
        return;
    }
    MPI_Count total = 0;
    for (int i = 0; i < n; i++) {
        displs[i] = (MPI_Aint)total;
        total += rcounts[i];
    }
    bool ok1, ok2;
    void *mine = leader_scratch(s, c, total, dt, &ok1);
    void *theirs = leader_scratch(s, c, total, dt, &ok2);
    if (!ok1 || !ok2)
        return;
    leaders_swap(s, c, sbuf, mine, theirs, total, dt, op);
    struct cdn_sched *l = local_begin(s, c);
    if (l != NULL)
        cdn_coll_scatterv(l, c->local_comm, theirs, rcounts, displs, dt, rbuf, rcounts[c->rank],
                          dt, 0);
    nest(s, l);
}
