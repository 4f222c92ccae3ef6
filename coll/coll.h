/*
 * Collective algorithms as schedule builders, their selection, and the
 * policy of a call.
 *
 * A builder adds the nodes of one collective call to a schedule (sched/).
 * The api/ bindings check arguments, convert handles and normalise arrays,
 * then hand the call to coll/ (cdn_coll_*_call, coll/call.c), which takes
 * the direct path of a small blocking call, runs a kept schedule again, or
 * makes the schedule with cdn_coll_sched(), calls the builder (intra- or
 * intercommunicator form), and then starts and waits (blocking), starts
 * (MPI_I...) or keeps it for MPI_Start (persistent: algorithm chosen and
 * schedule built once, at init).  Builders read their arguments at build
 * time only, so count/displacement arrays may be temporaries.
 *
 * Arrays are normalised by the bindings: counts as MPI_Count, displacements
 * as MPI_Aint in elements of the receive/send type, except the w-forms,
 * whose displacements are in bytes.  MPI_IN_PLACE passes through.
 */
#ifndef CDN_COLL_H
#define CDN_COLL_H

#include <mpi.h>
#include <stdbool.h>

struct cdn_comm;
struct cdn_datatype;
struct cdn_op;
struct cdn_sched;

/* The collectives with more than one algorithm, and their algorithms. */
enum cdn_coll_id { CDN_COLL_BCAST, CDN_COLL_REDUCE, CDN_COLL_ALLREDUCE, CDN_COLL_ALLGATHER,
                   CDN_COLL_ALLTOALL, CDN_COLL_NSELECT };
enum { CDN_ALG_AUTO = 0,
       CDN_BCAST_BINOMIAL = 1, CDN_BCAST_SCATTER_ALLGATHER,
       CDN_REDUCE_BINOMIAL = 1, CDN_REDUCE_LINEAR,
       CDN_ALLREDUCE_RECURSIVE_DOUBLING = 1, CDN_ALLREDUCE_RING,
       CDN_ALLGATHER_RING = 1, CDN_ALLGATHER_BRUCK,
       CDN_ALLTOALL_PAIRWISE = 1, CDN_ALLTOALL_SCATTERED };

/* A schedule for the next collective call on comm (its tags come from the
 * communicator's collective sequence number); NULL when out of memory. */
struct cdn_sched *cdn_coll_sched(struct cdn_comm *comm, bool persistent);
/* *tag: the next call's base tag on comm (what cdn_coll_sched gives its
 * schedule), for a collective run without one; fn names the call in the
 * error when out of memory. */
int cdn_coll_call_tag(const char *fn, struct cdn_comm *comm, int *tag);

/* The algorithm forced for a collective on comm (CADENCE_<COLL>_ALGORITHM,
 * then the key cadence_<coll>_algorithm of the info argument of the
 * persistent call being built on this thread, cdn_coll_call_info, then the
 * communicator's), or CDN_ALG_AUTO.  An unknown name is reported once on
 * stderr and ignored. */
int cdn_coll_forced(struct cdn_comm *comm, enum cdn_coll_id id);
/* The info argument of the MPI_<Coll>_init call whose schedule this thread
 * builds now (NULL once it is built, or for none). */
struct cdn_info;
void cdn_coll_call_info(struct cdn_info *info);

/* A blocking or nonblocking collective call, as far as its schedule goes:
 * an identical later call on the same communicator may run the schedule
 * again (coll.c, "Kept schedules").  Zero it before filling it in (it is
 * compared bytewise).  r*: the receive side where it has its own count and
 * type (alltoall). */
struct cdn_coll_key {
    int kind, root, alg;
    const void *sbuf;
    void *rbuf;
    MPI_Count count, rcount;
    struct cdn_datatype *dt, *rdt;
    struct cdn_op *op;
};
/* Largest call (bytes) whose schedule is kept: CADENCE_COLL_KEEP_BYTES. */
MPI_Count cdn_coll_keep_max(void);
/* An idle schedule kept for a call like k, retagged with this call's tags
 * (it takes the call's sequence number, as cdn_coll_sched would), with a
 * reference for the caller; or NULL: build one. */
struct cdn_request *cdn_coll_kept_take(struct cdn_comm *comm, const struct cdn_coll_key *k);
/* Keep r (a schedule built for the call k, not persistent) for the next
 * call like k: the communicator takes a reference of its own; the caller
 * keeps its reference. */
void cdn_coll_kept_put(struct cdn_comm *comm, const struct cdn_coll_key *k, struct cdn_request *r);

/* Blocking collectives run without a schedule: post the receives (not
 * urgent: the caller polls for them) and the sends on comm's internal
 * context under tag, then wait for all of them; the first error wins.  At
 * most CDN_COLL_EXCHANGE_MAX of each. */
#define CDN_COLL_EXCHANGE_MAX 64
struct cdn_coll_msg {
    void *buf;
    MPI_Count count;
    struct cdn_datatype *dt;
    int peer;
};
int cdn_coll_exchange(struct cdn_comm *c, int tag, const struct cdn_coll_msg *recvs, int nrecvs,
                      const struct cdn_coll_msg *sends, int nsends);
/* Blocking allreduce of at most CDN_ALLREDUCE_DIRECT_MAX contiguous bytes
 * by recursive doubling, straight on point-to-point requests (no schedule):
 * does this call qualify, and run it (coll/reduce.c). */
#define CDN_ALLREDUCE_DIRECT_MAX 1024
bool cdn_coll_allreduce_direct_fits(struct cdn_comm *c, MPI_Count count, struct cdn_datatype *dt);
int cdn_coll_allreduce_direct(const char *fn, struct cdn_comm *c, const void *sbuf, void *rbuf,
                              MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op);
/* Blocking barrier of an intracommunicator, without a schedule. */
int cdn_coll_barrier_direct(const char *fn, struct cdn_comm *c);
/* Blocking broadcast of at most CDN_BCAST_DIRECT_MAX bytes by the binomial
 * tree, without a schedule (coll/bcast.c). */
#define CDN_BCAST_DIRECT_MAX 1024
bool cdn_coll_bcast_direct_fits(struct cdn_comm *c, MPI_Count count, struct cdn_datatype *dt);
int cdn_coll_bcast_direct(const char *fn, struct cdn_comm *c, void *buf, MPI_Count count,
                          struct cdn_datatype *dt, int root);
/* Blocking alltoall of blocks of at most CDN_ALLTOALL_DIRECT_MAX bytes on
 * at most CDN_COLL_EXCHANGE_MAX + 1 ranks, not in place, with the
 * scattered algorithm, without a schedule (coll/allgather.c). */
#define CDN_ALLTOALL_DIRECT_MAX 1024
bool cdn_coll_alltoall_direct_fits(struct cdn_comm *c, const void *sbuf, MPI_Count rcount,
                                   struct cdn_datatype *rdt);
int cdn_coll_alltoall_direct(const char *fn, struct cdn_comm *c, const void *sbuf,
                             MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                             MPI_Count rcount, struct cdn_datatype *rdt);
void cdn_coll_barrier(struct cdn_sched *s, struct cdn_comm *c);
void cdn_coll_bcast(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                    struct cdn_datatype *dt, int root);
void cdn_coll_gatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, MPI_Count scount,
                      struct cdn_datatype *sdt, void *rbuf, const MPI_Count *rcounts,
                      const MPI_Aint *displs, struct cdn_datatype *rdt, int root);
void cdn_coll_scatterv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                       const MPI_Count *scounts, const MPI_Aint *displs, struct cdn_datatype *sdt,
                       void *rbuf, MPI_Count rcount, struct cdn_datatype *rdt, int root);
/* uniform: every rcounts[i] equal and displs[i] = i * rcounts[0] (allgather). */
void cdn_coll_allgatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                         MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                         const MPI_Count *rcounts, const MPI_Aint *displs,
                         struct cdn_datatype *rdt, bool uniform);
/* Byte displacements; one type per peer.  uniform: plain alltoall. */
void cdn_coll_alltoallw(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                        const MPI_Count *scounts, const MPI_Aint *sdispls,
                        struct cdn_datatype *const *sdts, void *rbuf, const MPI_Count *rcounts,
                        const MPI_Aint *rdispls, struct cdn_datatype *const *rdts, bool uniform);
void cdn_coll_reduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                     MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op, int root);
/* The allreduce (recursive doubling) in place in buf among n participants
 * of the schedule's communicator: participant i is its rank ranks[i]
 * (ranks NULL: rank i), this process participant me; its messages use the
 * schedule's sub-tags sub .. sub + 31.  What creating objects agrees
 * through (coll/xchg.c, coll/idup.c): MPI_Allreduce's own algorithm, not
 * one of their own. */
void cdn_coll_allreduce_among(struct cdn_sched *s, int n, int me, const int *ranks, int sub,
                              void *buf, MPI_Count count, struct cdn_datatype *dt,
                              struct cdn_op *op);
void cdn_coll_allreduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                        MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op);
void cdn_coll_reduce_scatter(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                             void *rbuf, const MPI_Count *rcounts, struct cdn_datatype *dt,
                             struct cdn_op *op);
void cdn_coll_scan(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf, void *rbuf,
                   MPI_Count count, struct cdn_datatype *dt, struct cdn_op *op, bool exclusive);
/* Neighbourhood exchanges over explicit neighbour lists (topology of comm);
 * cart: the lists are a Cartesian topology's (-1, +1 per dimension), whose
 * blocks pair up crosswise where a neighbour repeats (coll/basic.c). */
void cdn_coll_neighbor_alltoallw(struct cdn_sched *s, bool cart, int indegree,
                                 const int *sources, int outdegree, const int *dests,
                                 const void *sbuf, const MPI_Count *scounts,
                                 const MPI_Aint *sdispls, struct cdn_datatype *const *sdts,
                                 void *rbuf, const MPI_Count *rcounts, const MPI_Aint *rdispls,
                                 struct cdn_datatype *const *rdts);

/* Intercommunicator forms (coll/inter.c).  root: MPI_ROOT, MPI_PROC_NULL or
 * a rank of the remote group.  Arrays describing the remote group's blocks
 * (gatherv's rcounts at the root, scatterv's scounts, allgatherv's,
 * alltoallw's) have remote_size entries; reduce_scatter's rcounts are the
 * local group's.  No MPI_IN_PLACE. */
void cdn_coll_inter_barrier(struct cdn_sched *s, struct cdn_comm *c);
void cdn_coll_inter_bcast(struct cdn_sched *s, struct cdn_comm *c, void *buf, MPI_Count count,
                          struct cdn_datatype *dt, int root);
void cdn_coll_inter_gatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                            MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                            const MPI_Count *rcounts, const MPI_Aint *displs,
                            struct cdn_datatype *rdt, int root);
void cdn_coll_inter_scatterv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                             const MPI_Count *scounts, const MPI_Aint *displs,
                             struct cdn_datatype *sdt, void *rbuf, MPI_Count rcount,
                             struct cdn_datatype *rdt, int root);
void cdn_coll_inter_allgatherv(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                               MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                               const MPI_Count *rcounts, const MPI_Aint *displs,
                               struct cdn_datatype *rdt);
/* Byte displacements, one type per remote process. */
void cdn_coll_inter_alltoallw(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                              const MPI_Count *scounts, const MPI_Aint *sdispls,
                              struct cdn_datatype *const *sdts, void *rbuf,
                              const MPI_Count *rcounts, const MPI_Aint *rdispls,
                              struct cdn_datatype *const *rdts);
void cdn_coll_inter_reduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                           void *rbuf, MPI_Count count, struct cdn_datatype *dt,
                           struct cdn_op *op, int root);
void cdn_coll_inter_allreduce(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                              void *rbuf, MPI_Count count, struct cdn_datatype *dt,
                              struct cdn_op *op);
void cdn_coll_inter_reduce_scatter(struct cdn_sched *s, struct cdn_comm *c, const void *sbuf,
                                   void *rbuf, const MPI_Count *rcounts,
                                   struct cdn_datatype *dt, struct cdn_op *op);

/* ---- a collective call (coll/call.c) ---- */

/* How a call ends. */
enum cdn_coll_form { CDN_COLL_BLOCKING, CDN_COLL_NONBLOCKING, CDN_COLL_PERSISTENT };
/* A call whose arguments api/ has checked: its name (for errors), the
 * communicator, the form, and the user's request (nonblocking and
 * persistent forms). */
struct cdn_coll_call {
    const char *fn;
    struct cdn_comm *c;
    int form;               /* enum cdn_coll_form */
    MPI_Request *request;
};
int cdn_coll_barrier_call(const struct cdn_coll_call *call);
int cdn_coll_bcast_call(const struct cdn_coll_call *call, void *buf, MPI_Count count,
                        struct cdn_datatype *dt, int root);
/* gather(v) (gather: many = receive, at the root) and scatter(v). */
int cdn_coll_rooted_call(const struct cdn_coll_call *call, bool gather, const void *onebuf,
                         MPI_Count onecount, struct cdn_datatype *onedt, void *manybuf,
                         const MPI_Count *counts, const MPI_Aint *displs,
                         struct cdn_datatype *manydt, int root);
int cdn_coll_allgatherv_call(const struct cdn_coll_call *call, const void *sbuf, MPI_Count scount,
                             struct cdn_datatype *sdt, void *rbuf, const MPI_Count *rcounts,
                             const MPI_Aint *displs, struct cdn_datatype *rdt, bool uniform);
/* MPI_Alltoall before its per-peer arrays are built: the direct path, or a
 * kept schedule run again -- true when the call was made (*rc: its
 * result); else *key is what to keep the schedule under (NULL: not kept),
 * for cdn_coll_alltoallw_call (kk: its storage). */
bool cdn_coll_alltoall_quick(const struct cdn_coll_call *call, const void *sbuf,
                             MPI_Count scount, struct cdn_datatype *sdt, void *rbuf,
                             MPI_Count rcount, struct cdn_datatype *rdt, struct cdn_coll_key *kk,
                             struct cdn_coll_key **key, int *rc);
/* alltoall(v,w): byte displacements, a type per peer; uniform: plain
 * alltoall. */
int cdn_coll_alltoallw_call(const struct cdn_coll_call *call, const void *sbuf,
                            const MPI_Count *scounts, const MPI_Aint *sdispls,
                            struct cdn_datatype *const *sdts, void *rbuf,
                            const MPI_Count *rcounts, const MPI_Aint *rdispls,
                            struct cdn_datatype *const *rdts, bool uniform,
                            const struct cdn_coll_key *key);
enum cdn_coll_red { CDN_RED_REDUCE, CDN_RED_ALLREDUCE, CDN_RED_SCAN, CDN_RED_EXSCAN,
                    CDN_RED_SCATTER /* reduce_scatter(_block): rcounts */ };
int cdn_coll_reduction_call(const struct cdn_coll_call *call, enum cdn_coll_red kind,
                            const void *sbuf, void *rbuf, MPI_Count count,
                            const MPI_Count *rcounts, struct cdn_datatype *dt, struct cdn_op *op,
                            int root);
/* Neighbourhood collectives over the communicator's topology's lists. */
int cdn_coll_neighbor_call(const struct cdn_coll_call *call, int indegree, const int *sources,
                           int outdegree, const int *dests, const void *sbuf,
                           const MPI_Count *scounts, const MPI_Aint *sdispls,
                           struct cdn_datatype *const *sdts, void *rbuf,
                           const MPI_Count *rcounts, const MPI_Aint *rdispls,
                           struct cdn_datatype *const *rdts);

#endif
