/*
 * Schedules: the DAG engine every multi-step operation runs on.  A schedule
 * is a request (kind CDN_REQ_SCHED) holding a graph of nodes built once and started any number of times:
 *
 *   send / recv    a message on the communicator's internal context, tag
 *                  base + sub (sub in 0..CDN_SCHED_SUBTAGS-1);
 *   request        start any persistent request (another schedule, a
 *                  partitioned request, ...) and wait for it;
 *   reduce         inout = in op inout (any MPI_Op, user ops included);
 *   copy           a datatype-aware copy between two typed buffers;
 *   callback       a function of the builder (MPIX_Schedule user steps);
 *   loop           run a closed group of earlier nodes again (repeats);
 *   trigger        completes once something outside fires it (partitioned
 *                  collectives' MPI_Pready);
 *   nop            a join point.
 *
 * Any node may have a guard: a function asked when the node is ready,
 * which skips the node when it returns 0 (conditions, reset and completion
 * points of the user schedules in sched/user.c).
 *
 * A node runs when every node it depends on has completed; dependencies
 * only point from an earlier node to a later one, so every schedule is a
 * DAG.  "Rounds" are sugar: after cdn_sched_round(), every new node
 * depends on all nodes of the round before (through one nop join).
 *
 * Building returns node ids (>= 0); a failed allocation marks the schedule
 * broken and cdn_sched_commit reports it, so builders need not check each
 * call.  Per-start state (dependency counters, the ready queue) is reset by
 * each start, so a persistent schedule restarts without being rebuilt.
 *
 * Execution: the thread that completes a node (the progress thread, or any
 * application thread polling inside MPI) decrements its successors and runs
 * the ones that became ready.  One thread at a time drains a schedule's
 * ready queue (a per-schedule lock; other threads hand their ready nodes to
 * it), which keeps recursion flat when sends and receives complete
 * immediately.  No MPI call of the user is needed between start and
 * completion.
 */
#ifndef CDN_SCHED_H
#define CDN_SCHED_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

struct cdn_comm;
struct cdn_datatype;
struct cdn_op;
struct cdn_request;
struct cdn_sched;

#define CDN_SCHED_SUBTAGS 256

/* A schedule whose messages use tags base_tag .. base_tag + CDN_SCHED_SUBTAGS-1
 * on comm's internal context; NULL when out of memory.  persistent: the
 * request is started by MPI_Start (else by cdn_sched_start once). */
struct cdn_sched *cdn_sched_new(struct cdn_comm *comm, int base_tag, bool persistent);

/* Every receive of s must fill its buffer (cdn_p2p_recv_exact): a
 * collective's schedule (coll/coll.c), not a user's. */
void cdn_sched_exact(struct cdn_sched *s);

int cdn_sched_send(struct cdn_sched *s, const void *buf, MPI_Count count,
                   struct cdn_datatype *dt, int peer, int sub);
int cdn_sched_recv(struct cdn_sched *s, void *buf, MPI_Count count, struct cdn_datatype *dt,
                   int peer, int sub);
/* Start child (a persistent request; the schedule takes over the caller's
 * reference) and complete when it does. */
int cdn_sched_request(struct cdn_sched *s, struct cdn_request *child);
int cdn_sched_reduce(struct cdn_sched *s, const void *in, void *inout, MPI_Count count,
                     struct cdn_datatype *dt, struct cdn_op *op);
/* Copy min(source, destination) bytes between typed buffers, now (what a
 * copy node does when it runs). */
void cdn_sched_typed_copy(const void *src, MPI_Count scount, struct cdn_datatype *sdt, void *dst,
                          MPI_Count dcount, struct cdn_datatype *ddt);
int cdn_sched_copy(struct cdn_sched *s, const void *src, MPI_Count scount,
                   struct cdn_datatype *sdt, void *dst, MPI_Count dcount,
                   struct cdn_datatype *ddt);
/* fn returns MPI_SUCCESS or an error code, which the schedule reports. */
int cdn_sched_callback(struct cdn_sched *s, int (*fn)(void *arg), void *arg);
int cdn_sched_nop(struct cdn_sched *s);
/* A trigger: a node that completes when its dependencies are met and
 * cdn_sched_fire() was called for it in this instance, whichever comes
 * last (a partitioned collective's MPI_Pready).  wait_next: the caller
 * is expected to wait for the schedule next (the last partition marked),
 * so what the trigger releases starts as a held start's steps. */
int cdn_sched_trigger(struct cdn_sched *s);
void cdn_sched_fire(struct cdn_request *r, int id, bool wait_next);

/* Node id runs only if guard(arg) returns nonzero when its dependencies
 * are met; otherwise it is skipped (completes at once, without running).
 * How conditions, reset points and completion points of MPIX_Schedule work. */
void cdn_sched_guard(struct cdn_sched *s, int id, int (*guard)(void *arg), void *arg);
/* A loop node: nodes first .. (this node - 1), "the group", run again
 * after each run of the group until it ran count times (count <= 0: no
 * bound), or, with again non-NULL, until again(arg) returns 0 (asked
 * after each run but the last by count).  The group must be closed: its
 * nodes depend only on each other or on nodes before first, and nothing
 * after the group but the loop node depends on them -- a group of whole
 * rounds followed by cdn_sched_round() before and after the loop node. */
int cdn_sched_loop(struct cdn_sched *s, int first, int count, int (*again)(void *arg), void *arg);
/* r, when r (a request's parent) is a schedule request -- the request is
 * then a node's child -- or NULL. */
struct cdn_request *cdn_sched_node_owner(const struct cdn_request *r);

/* Node `after` runs only once node `before` completed (before < after). */
void cdn_sched_dep(struct cdn_sched *s, int before, int after);
/* Close the current round: nodes added from now on depend on all of it. */
void cdn_sched_round(struct cdn_sched *s);
/* Nodes added so far (the id the next node gets). */
int cdn_sched_size(const struct cdn_sched *s);

/* Scratch memory owned by the schedule (freed with it), not zeroed. */
void *cdn_sched_scratch(struct cdn_sched *s, size_t bytes);
/* A scratch buffer for count elements of dt, returned so that (buf, count,
 * dt) addresses it (the type's lower bound accounted for). */
void *cdn_sched_typed_scratch(struct cdn_sched *s, MPI_Count count, struct cdn_datatype *dt);
/* Release arg with fn when the schedule is freed (builder state). */
void cdn_sched_on_free(struct cdn_sched *s, void (*fn)(void *arg), void *arg);

/* Finish building: MPI_SUCCESS, or the error of a failed build (the
 * schedule is then freed).  *out gets the request. */
int cdn_sched_commit(struct cdn_sched *s, const char *caller, struct cdn_request **out);
/* Can an idle schedule run again, under other tags (cdn_sched_retag)?
 * Every schedule's nodes are made once and re-armed by each start, so any
 * can, except one holding nested requests or callbacks, whose state is the
 * builder's. */
bool cdn_sched_reusable(struct cdn_request *r);
/* Give a reusable idle schedule the tags of base_tag (as cdn_sched_new):
 * a schedule kept for an identical later call takes that call's tags. */
void cdn_sched_retag(struct cdn_request *r, int base_tag);
/* r has a parent only to tell it of its completion: its starts are
 * decided as a call of the user's own (held, or run in the calling
 * thread), not as a nested step's (handed to the progress thread when
 * large).  A partitioned collective's partitions. */
void cdn_sched_standalone(struct cdn_request *r);
/* Start an instance (what MPI_Start does for a persistent schedule).  One
 * whose largest step moves at least CADENCE_PROGRESS_BACKGROUND_MIN bytes,
 * with a copy or reduction that large ready at its start, has its first
 * receives, copies and reductions handed to the progress thread -- when
 * the application computes after such starts -- so the call returns at
 * once and the schedule advances while the application computes; a
 * smaller one, one that starts with messages, one the application waits
 * for at once (held: docs/progress.md, "Held starts"), or any without a
 * progress thread runs them in the calling thread, as a poller when it
 * may want something (cdn_progress_start_begin): it wakes the thread only
 * for what it could not take itself. */
int cdn_sched_start(struct cdn_request *r);
/* May a wait for r poll a moment before it counts as a poller
 * (cdn_request_wait_late)?  r is a schedule of the engine's own, not a
 * step of another, all of whose messages come eagerly and none of whose
 * steps asks for the progress thread (no urgent receive, no nested
 * request, no wanted send): nothing of it rings anybody, as for a small
 * MPI_Recv. */
bool cdn_sched_waits_late(const struct cdn_request *r);
/* Start an instance and run its ready nodes in the calling thread, for a
 * caller that waits for it next (blocking collectives). */
int cdn_sched_run(struct cdn_request *r);

#endif
