/* The table of CADENCE_ environment variables (see config.h). */
#include "runtime/config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct cdn_param cdn_params[] = {
    {"CADENCE_INITIAL_ERRHANDLER", "choice", "fatal", "library",
     "Error handler for errors raised outside MPI_Init..MPI_Finalize and before any other is "
     "set: fatal (MPI_ERRORS_ARE_FATAL), abort (MPI_ERRORS_ABORT) or return (MPI_ERRORS_RETURN)."},
    {"CADENCE_ALLOW_SINGLETON", "boolean", "0", "library",
     "A process started by another MPI's launcher (MPICH's mpiexec, srun --mpi=pmi2, Open MPI "
     "without PMIx: PMI_SIZE or OMPI_COMM_WORLD_SIZE above 1, no PMIx server) fails in MPI_Init "
     "naming the launcher to use; 1 lets it run as a one-process job instead."},
    {"CADENCE_PROGRESS_THREADS", "integer", "1", "library",
     "Run a background progress thread per process (strong progress: started operations "
     "complete while the application computes). 0 turns it off; progress is then made inside "
     "MPI calls only. N above 1 (at most 16) adds N-1 helper threads, helper i polling the "
     "progress contexts c >= 1 with c % N == i (CADENCE_PROGRESS_CONTEXTS): busy contexts "
     "are progressed in parallel; an idle helper sleeps on its contexts' doorbells."},
    {"CADENCE_PROGRESS_CONTEXTS", "integer", "1", "library",
     "Progress contexts per process (1-64): independent lanes of the engine, each with its own "
     "instance of every transport (shared-memory rings, TCP connections), its own poll lock "
     "and deferred work. MPI_COMM_WORLD and the communicators made from it use context 0; a "
     "communicator whose creating call passes the info key cadence_progress_context (\"auto\", "
     "or a context's number) uses that one, so threads with communicators of their own do "
     "not share rings or locks. Every process of a job must use the same value."},
    {"CADENCE_USER_PROGRESS_NAP_US", "integer", "50", "library",
     "Microseconds a progress thread started by MPIX_Start_progress_thread sleeps between "
     "polls once it has found nothing for CADENCE_PROGRESS_SPIN polls (docs/tasks.md)."},
    {"CADENCE_RMA_DIRECT", "integer", "1", "library",
     "1: one-sided operations reach a target of this node without its threads: an allocated "
     "window of one node's processes lives in a shared segment, and puts, gets and "
     "accumulates on it are loads and stores; puts and gets on created windows go by the "
     "transport's one-sided copy (CMA). 0: every operation is an active message the target's "
     "engine applies (docs/rma.md). Every process of a job must use the same value."},
    {"CADENCE_RMA_RDMA_MIN", "integer", "65536", "library",
     "Bytes: a put or get smaller than this goes by active message even where the transport "
     "has RDMA by registered memory (ofi, ucx, verbs); larger ones by its RDMA write or read. "
     "Libfabric's and UCX's software providers (tcp, shm) need the target's progress for a "
     "small RDMA operation anyway, and its engine keeps polling after serving a message but "
     "not after the provider served one. 0: every size by RDMA (a NIC that does RDMA in "
     "hardware) (docs/rma.md)."},
    {"CADENCE_RMA_SERVE_SPIN_US", "integer", "100", "library",
     "Microseconds the progress thread keeps polling, instead of sleeping, after it served "
     "another process's one-sided operation by message: the next of a stream (a passive-target "
     "loop of gets against a computing target) is answered without a wake-up. 0: sleep at once "
     "(docs/rma.md)."},
    {"CADENCE_WORK_SHARING", "integer", "1", "library",
     "1: a thread idle in MPI (waiting, or the progress thread with nothing of its own) "
     "drains the queues of a thread-communicator rank of its process that is away from MPI "
     "and runs the steps of that rank's nonblocking collectives they release (docs/tasks.md). "
     "0: each thread rank takes its own messages only."},
    {"CADENCE_WORK_SHARING_LOOK_US", "integer", "10", "library",
     "Microseconds between two looks of a thread idle in MPI at the queues of the other "
     "thread-communicator ranks of its process: a rank that has not polled between two "
     "looks, with messages waiting, is away and gets helped (docs/tasks.md)."},
    {"CADENCE_WORK_SHARING_US", "integer", "100", "library",
     "While a nonblocking collective of a thread-communicator rank is in flight, the progress "
     "thread sleeps at most this many microseconds at a time, to look for ranks away from MPI "
     "with messages waiting (docs/tasks.md)."},
    {"CADENCE_PROGRESS_SPIN", "integer", "2000", "library",
     "Empty polls a waiting thread (application or progress thread) makes before it sleeps "
     "on the transports' doorbells."},
    {"CADENCE_PROGRESS_WAIT_SPIN_US", "integer", "1000", "library",
     "After CADENCE_PROGRESS_SPIN empty polls, an application thread waiting in MPI keeps "
     "polling this many microseconds more before it sleeps (not when the node is "
     "oversubscribed, nor after a sleep that found nothing). 0: sleep after the polls."},
    {"CADENCE_PROGRESS_LINGER_US", "integer", "100", "library",
     "With the progress thread and shared memory, once peers' doorbells keep catching the "
     "application between blocking calls: after a short blocking call peers ring nobody until "
     "the progress thread, looking this long later (doubling up to 1 ms while the application "
     "stays busy in MPI), finds no short call left since its last look; rendezvous-size "
     "collective starts end it at once. 0: never."},
    {"CADENCE_PROGRESS_LINGER_ALWAYS", "boolean", "0", "library",
     "Linger after every short blocking call, not only once peers' doorbells keep catching "
     "the application between calls (see CADENCE_PROGRESS_LINGER_US)."},
    {"CADENCE_PROGRESS_BIND", "boolean", "1", "library",
     "Pin the progress thread (hwloc) to one processing unit of the process's allowed set, "
     "counted from the last one by local rank. 0 leaves it unbound."},
    {"CADENCE_PROGRESS_SLICE_US", "integer", "100", "library",
     "Time slice (microseconds) the progress thread asks the scheduler for (Linux >= 6.12): a "
     "short slice lets it preempt a computing application thread as soon as a message "
     "arrives. 0 keeps the kernel's default."},
    {"CADENCE_PROGRESS_NAP_US", "integer", "50", "library",
     "When the progress thread shares the application's processing unit, a wake-up found "
     "work, the application was inside a point-to-point call and nothing urgent is wanted, it "
     "next sleeps this long without arming the doorbells (peers do not ring it), then polls: "
     "a burst of messages costs a wake-up per nap instead of one per message. 0 re-arms at "
     "once."},
    {"CADENCE_PROGRESS_MUTE", "boolean", "1", "library",
     "With the tcp or ucx transport and the progress thread on: while an "
     "application thread polls in a blocking call, those transports' fds are muted in the "
     "progress thread's epoll set, so a message the poller takes itself does not also wake "
     "the thread. 0 leaves them armed."},
    {"CADENCE_PROGRESS_NICE", "integer", "-20", "library",
     "Nice value (-20..0) the progress thread asks for, where the process may raise priority "
     "(root, CAP_SYS_NICE or RLIMIT_NICE; else as far as RLIMIT_NICE allows, or 0): it then "
     "preempts a computing application thread on its core as soon as work arrives. It sleeps "
     "when idle. 0 leaves the priority alone."},
    {"CADENCE_PROGRESS_OVERSUBSCRIBED", "choice", "auto", "library",
     "auto: the process counts as oversubscribed when its node runs more ranks than "
     "processing units for them (a process bound to fewer units than are online compares "
     "with the online units, an unbound one with those it may use). 1 or 0 force it. "
     "Oversubscribed, waiting threads yield the processor between polls and the progress "
     "thread neither spins nor raises its priority."},
    {"CADENCE_PROGRESS_BACKGROUND_MIN", "integer", "524288", "library",
     "Bytes: a nonblocking or persistent collective whose largest step (a message, copy or "
     "reduction) moves at least this much hands its receives, copies and reductions to the "
     "progress thread when started, so it advances while the application computes; smaller "
     "ones start in the calling thread and wake the thread only for messages that need it."},
    {"CADENCE_COLL_KEEP_BYTES", "integer", "1048576", "library",
     "Bytes: a blocking or nonblocking barrier, bcast, reduce, allreduce or alltoall on an "
     "intracommunicator moving at most this much (per buffer; per block for alltoall) leaves "
     "its schedule with the communicator, which keeps the last four; an identical later call "
     "runs it again instead of building one. 0 keeps only calls that move nothing (barrier)."},
    {"CADENCE_STREAM_CHECKS", "boolean", "0 (1 in a debug build)", "library",
     "Check that a stream's communicators are used by one thread at a time: a call naming "
     "such a communicator while another thread is inside one fails with MPI_ERR_OTHER saying "
     "so. A stream is a serial execution context (docs/streams.md); the check costs a "
     "compare-and-swap per call on those communicators."},
    {"CADENCE_THREADCOMM_HELP_WAIT_US", "integer", "0", "library",
     "Microseconds a thread receiving a large message from another thread of its process "
     "on a thread communicator waits for the sender to take a part of the copy before "
     "copying the rest alone (docs/streams.md). For tests; 0: it does not wait."},
    {"CADENCE_PART_MIN_BYTES", "integer", "4096", "library",
     "Bytes: a partitioned send and receive whose plan is automatic (info "
     "cadence_part_transfers unset or auto) merge neighbouring partitions into transfers of at "
     "least this size (the sender's value, unless the receive's info sets "
     "cadence_part_min_bytes). 0 keeps every boundary of both sides. See docs/partitioned.md."},
    {"CADENCE_PROGRESS_START_DELAY_US", "integer", "20", "library",
     "When the progress thread shares the application's only processing unit: microseconds it "
     "waits before running work queued by a nonblocking call (a started collective), so that "
     "it preempts the application's computation rather than the call that queued the work. "
     "0: no wait."},
    {"CADENCE_SHM", "boolean", "1", "library",
     "Use the shared-memory transport between processes of one node. 0 turns it off (TCP "
     "then carries their messages, unless CADENCE_TRANSPORTS leaves it out)."},
    {"CADENCE_SHM_EAGER_LIMIT", "integer", "16384", "library",
     "Largest message (bytes) the shared-memory transport sends eagerly in one cell; larger "
     "ones use rendezvous (single-copy CMA, or a pipelined copy through the rings). At most "
     "16392 (one cell)."},
    {"CADENCE_SHM_CMA", "integer", "2", "library",
     "How rendezvous data moves between processes of a node: 1 with one process_vm_readv "
     "(CMA, single copy), 0 with the pipelined two-copy path through the rings (what is used "
     "anyway when the kernel refuses CMA), 2 (default) each message by whichever of the two "
     "this pair of processes currently copies faster (measured as messages move)."},
    {"CADENCE_SHM_PREFAULT", "integer", "16", "library",
     "On a node of at most this many processes, the shared-memory rings are faulted in at "
     "MPI_Init instead of cell by cell as the first messages use them. 0: never."},
    {"CADENCE_SHM_RING_MIB", "integer", "16", "library",
     "Megabytes of inbound shared-memory rings per process: each ring gets as many 16 KiB "
     "cells as fit (a power of two, 64 to 256) with one ring per other process of the node."},
    {"CADENCE_SHM_SPLIT_MIN", "integer", "65536", "library",
     "Contiguous rendezvous receives of at least this many bytes split the CMA copy with the "
     "sender: the receiver reads the lower half while the sender's progress thread writes the "
     "upper half (process_vm_writev). 0 turns splitting off."},
    {"CADENCE_TRANSPORTS", "string", "shm,tcp", "library",
     "Transports to use between processes, in order of preference (comma-separated: shm, "
     "tcp); each peer is reached by the first that reaches it. tcp alone runs everything "
     "over TCP, also between processes of one node."},
    {"CADENCE_TRANSPORT_REPORT", "boolean", "0", "library",
     "1: at MPI_Finalize each process prints on stderr how many messages it sent over each "
     "transport it opened and to itself ('cadence: rank 1: sent shm 1234, self 5'), and the "
     "shm transport its split copies. The test suite checks with it which transport carried a "
     "test's traffic."},
    {"CADENCE_OFI_PROVIDER", "string", "the first provider with FI_MSG, FI_EP_RDM and ordered messages",
     "library",
     "libfabric provider of the ofi transport, spelled as fi_getinfo spells it (tcp;ofi_rxm, shm, "
     "udp;ofi_rxd) (docs/cluster.md)."},
    {"CADENCE_OFI_RMA", "integer", "1", "library",
     "0: the ofi transport ignores FI_RMA: rendezvous by CTS and DATA messages, no get or put."},
    {"CADENCE_OFI_WAIT_FD", "integer", "1", "library",
     "0: the ofi transport ignores the provider's wait fd and an idle process naps instead."},
    {"CADENCE_OFI_NAP_MAX_US", "integer", "10000", "library",
     "Longest nap (100-1000000 us) of an idle process on an ofi provider without a wait fd."},
    {"CADENCE_OFI_KEEPALIVE_MS", "integer", "1000", "library",
     "How often (ms) an ofi process pings the peers it waits for, to find lost ones; 0: never."},
    {"CADENCE_OFI_VERBOSE", "integer", "0", "library",
     "1: each process prints the ofi provider, domain, RMA use, mr_mode and wait method it "
     "chose."},
    {"CADENCE_UCX_EAGER_LIMIT", "integer", "32768", "library",
     "Largest message the ucx transport sends eagerly (0-1048576); larger ones go by UCX's "
     "active-message rendezvous (docs/cluster.md)."},
    {"CADENCE_UCX_CONNECT_ALL", "integer", "256", "library",
     "MPI_Init opens ucx endpoints to every peer when the job has at most this many processes; "
     "in larger jobs each endpoint opens at its first message."},
    {"CADENCE_UCX_CLOSE_TIMEOUT", "integer", "2000", "library",
     "Milliseconds MPI_Finalize waits for the ucx endpoints to flush before closing them by "
     "force."},
    {"CADENCE_VERBS_DEVICE", "string", "the first device ibv_get_device_list returns", "library",
     "RDMA device the verbs transport uses (mlx5_0); naming one that is not there refuses the "
     "transport and lists the devices found (docs/cluster.md)."},
    {"CADENCE_VERBS_PORT", "integer", "1", "library",
     "Port of the verbs device (1-255); it must be ACTIVE."},
    {"CADENCE_VERBS_GID_INDEX", "integer", "0", "library",
     "GID table index the verbs transport addresses peers by on RoCE (0-255); for routed RoCE "
     "v2 choose a v2 GID."},
    {"CADENCE_VERBS_EAGER_LIMIT", "integer", "8192", "library",
     "Largest message the verbs transport sends eagerly (0-65536); larger ones are read by the "
     "receiver with RDMA read. Every process must use the same value."},
    {"CADENCE_VERBS_SQ_DEPTH", "integer", "64", "library",
     "Send work requests in flight per verbs queue pair (4-16384, capped by the device); more "
     "are queued."},
    {"CADENCE_VERBS_SRQ_DEPTH", "integer", "512", "library",
     "Receive buffers posted to the verbs shared receive queue (16-65536, capped by the "
     "device)."},
    {"CADENCE_VERBS_SEND_BUFS", "integer", "256", "library",
     "Registered send buffers for the verbs transport's eager messages (4-65536)."},
    {"CADENCE_VERBS_TIMEOUT", "integer", "18", "library",
     "Verbs retransmit timeout, 4.096 us x 2^N (1-31): with 7 retries about 8.6 s at 18 before a "
     "silent peer is declared failed; also how long peers may take to finish wire-up."},
    {"CADENCE_VERBS_SL", "integer", "0", "library",
     "InfiniBand service level of the verbs transport's queue pairs (0-15)."},
    {"CADENCE_TCP_IF", "string", "loopback on one node, else the first non-loopback interface",
     "library",
     "Network interface the TCP transport listens on: a name (eth0) or an IPv4 CIDR block "
     "(10.1.0.0/16)."},
    {"CADENCE_TCP_EAGER_LIMIT", "integer", "65536", "library",
     "Largest message (bytes) the TCP transport sends eagerly; larger ones use rendezvous "
     "(a pipelined stream into the receive buffer after the match). At most 65536."},
    {"CADENCE_TCP_AUTH_TIMEOUT", "integer", "2000", "library",
     "Milliseconds an incoming TCP connection has to present the job key before it is "
     "closed and logged."},
    {"CADENCE_UDP_IF", "string", "loopback on one node, else the first non-loopback interface",
     "library",
     "Network interface the UDP transport binds to: a name (eth0) or an IPv4 CIDR block "
     "(10.1.0.0/16)."},
    {"CADENCE_UDP_EAGER_LIMIT", "integer", "65536", "library",
     "Largest message (bytes) the UDP transport sends eagerly; larger ones use rendezvous "
     "(DATA segments streamed after the match). At most 65536."},
    {"CADENCE_UDP_MTU", "integer", "16384", "library",
     "Largest datagram (bytes, 1024-65000) the UDP transport sends: 80 bytes of header and "
     "the payload. Keep it within the path MTU where IP fragments are lost."},
    {"CADENCE_UDP_WINDOW", "integer", "256", "library",
     "Segments (datagrams) the UDP transport keeps in flight per peer before waiting for "
     "acknowledgements (8-4096); also what a receiver keeps of segments that arrived early. "
     "Every process of a job must use the same value."},
    {"CADENCE_UDP_RTO_MIN_MS", "integer", "1", "library",
     "Smallest retransmission timeout (ms, 1-10000) of the UDP transport's estimator."},
    {"CADENCE_UDP_RTO_MAX_MS", "integer", "1000", "library",
     "Largest retransmission timeout (ms, 1-60000): the backoff stops doubling there."},
    {"CADENCE_UDP_ACK_DELAY_US", "integer", "200", "library",
     "Microseconds (0-100000) a UDP receiver holds a lone acknowledgement, hoping to carry it on "
     "a datagram of its own; 0 acknowledges every poll."},
    {"CADENCE_UDP_PEER_TIMEOUT_MS", "integer", "10000", "library",
     "Milliseconds (100-3600000) the UDP transport waits to hear from a peer it waits for "
     "(probing it meanwhile) before it declares it failed (MPIX_ERR_PROC_FAILED). Also the "
     "longest MPI_Finalize waits for peers' acknowledgements."},
    {"CADENCE_UDP_FAULTS", "string", "none", "library",
     "Fault injection on received UDP datagrams, for tests: drop=P,dup=P,reorder=P,corrupt=P,"
     "seed=N (probabilities per datagram in [0, 1); any key may be left out)."},
    {"CADENCE_UDP_SHOW_PORT", "boolean", "0", "library",
     "1: each UDP socket prints its address at MPI_Init (for tests that send at it)."},
    {"CADENCE_BCAST_ALGORITHM", "choice", "auto", "library",
     "Broadcast algorithm: binomial (tree), scatter_allgather (linear scatter of the data then a "
     "ring allgather) or auto (binomial below 64 KiB or 3 ranks, else scatter_allgather)."},
    {"CADENCE_REDUCE_ALGORITHM", "choice", "auto", "library",
     "Reduce algorithm: binomial (tree) or linear (the root reduces every contribution in rank "
     "order); auto chooses binomial."},
    {"CADENCE_ALLREDUCE_ALGORITHM", "choice", "auto", "library",
     "Allreduce algorithm: recursive_doubling or ring (reduce-scatter then allgather around a "
     "ring; commutative ops only); auto takes ring from 256 KiB when the op commutes."},
    {"CADENCE_ALLGATHER_ALGORITHM", "choice", "auto", "library",
     "Allgather algorithm: ring or bruck (log2(p) steps); auto takes bruck while the gathered "
     "data is under 64 KiB. Allgatherv always uses ring."},
    {"CADENCE_ALLTOALL_ALGORITHM", "choice", "auto", "library",
     "Alltoall(v,w) algorithm: pairwise (p-1 exchange steps) or scattered (every message posted "
     "at once); auto takes scattered up to 8 ranks or below 1 KiB per block, else pairwise."},
    {"CADENCE_CC", "string", "the C compiler Cadence was built with", "mpicc",
     "The C compiler mpicc runs (like MPICH_CC or OMPI_CC)."},
    {"CADENCE_CXX", "string", "the C++ compiler Cadence was configured with, else c++", "mpicxx",
     "The C++ compiler mpicxx (and mpic++) runs (like MPICH_CXX or OMPI_CXX)."},
};
const int cdn_nparams = (int)(sizeof cdn_params / sizeof cdn_params[0]);

const char *cdn_param_str(const char *name)
{
#ifndef NDEBUG
    int known = 0;
    for (int i = 0; i < cdn_nparams; i++)
        known |= strcmp(cdn_params[i].name, name) == 0;
    assert(known && "CADENCE_ variable read but not registered in runtime/config.c");
#endif
    const char *v = getenv(name);
    return (v != NULL && v[0] != '\0') ? v : NULL;
}

long cdn_param_long(const char *name, long deflt, long min, long max)
{
    const char *v = cdn_param_str(name);
    if (v == NULL)
        return deflt;
    if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0)
        return min <= 1 && 1 <= max ? 1 : deflt;
    if (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0)
        return 0 >= min ? 0 : deflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 0);
    if (*end == 'k' || *end == 'K')
        x *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        x *= 1024 * 1024, end++;
    if (errno != 0 || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "cadence: %s=%s is not a number in %ld..%ld; using %ld\n", name, v, min,
                max, deflt);
        return deflt;
    }
    return x;
}
