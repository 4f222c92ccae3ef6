#!/usr/bin/python3
"""Run Cadence, Debian's MPICH and Debian's Open MPI side by side.

    tools/bench/compare.py [table] [--reps N] [--quick] [--load N] [--check]
    tools/bench/compare.py --check --from build/bench/table.csv
    tools/bench/compare.py BENCH ... [--reps N] [--nothread] [--load N]
    tools/bench/compare.py part [--reps N] [--quick] [--check] [--out DIR]
    tools/bench/compare.py rma [--reps N] [--quick] [--check] [--out DIR]
    tools/bench/compare.py fabrics [--reps N] [--quick] [--check] [--out DIR]
    tools/bench/compare.py udp [--reps N] [--quick] [--check] [--out DIR]

Each benchmark is built with every MPI's own compiler wrapper and run with
its own launcher in the same invocation, alternating between the MPIs on
every repetition (the order rotates each repetition) so that the noise of
this shared machine hits all of them alike.  Every point of p2pbench.c and
collbench.c is the mean over OSU Micro-Benchmarks' iteration counts after a
warm-up; a repetition is one launch; summaries give the median over the
repetitions [min-max].

`table` (the default) runs every benchmark below except pack, the TCP
ones, the rma group and the fabrics group for Cadence, MPICH, Open MPI
and cadence-nothread, 3 repetitions, and writes DIR/table.csv (every measurement), DIR/table.md
(median [min-max] per row, the ratio Cadence / better of MPICH and Open
MPI, the goal and whether it is met, the command line) and DIR/<bench>.png
(gnuplot).  With --load N it also runs `latency-load` (8 B and 64 KiB
ping-pong) beside N busy processes; the other benchmarks stay unloaded.
A benchmark's round (every MPI once) that finds the two vCPUs apart
before or after it (the cache-line round trip above --gate-rtt, 120 ns) is
run again after they come near: the hypervisor's placement moves every
small-message row of every MPI by up to 5x.

--check evaluates the goals (GOALS below) on the medians of the run it
makes (the table run unless benchmarks are named), or with --from FILE on
a finished run's CSV without running anything; it lists every goal missed
or not checked (an MPI or a benchmark missing: never counted as met) and
exits 1 when one is missed, else 0.  A missed goal is marked "within the
launches' spread" when Cadence's most favourable repetition meets it
against the reference's least favourable one; it still counts as missed.
`--from FILE` alone (or `table --from FILE`) rewrites DIR/table.md from it;
a CSV of fabric benchmarks alone (one, or several concatenated) gives
DIR/fabrics.md instead, with or without --check; of UDP benchmarks alone,
DIR/udp.md.

BENCH (each writes DIR/<bench>.csv, DIR/<bench>.ratios.csv, DIR/<bench>.png):
  startup     wall time of `<launcher> -n 2 hello` (examples/hello.c), ms:
              the mean of 5 launches after one untimed launch
  pack        pack_bench.c: MPI_Pack of a strided vector vs memcpy (ratio)
  latency     p2pbench.c, 2 ranks: ping-pong half round trip 0 B-1 MiB (us)
  bw, bibw    uni- and bidirectional bandwidth, windows of 64, 1 B-4 MiB (MB/s)
  rate        8-byte message rate, one pair, windows of 64 (msg/s)
  latency_mt  MPI_THREAD_MULTIPLE ping-pong, 2 threads per rank (us)
  rate_mt-1, rate_mt-2, rate_mt-4 (group rate_mt)
              8-byte message rate with 1, 2, 4 threads per rank, each
              pair on its own communicator, MPI_THREAD_MULTIPLE (msg/s,
              all threads together; not in the table)
  rate_mt_shared-N, rate_mt-N, rate_mt_stream-N, N = 1, 2, 4, 8 (group streams)
              the same with every pair on MPI_COMM_WORLD, on a communicator
              of its own, and (Cadence) on a stream communicator of its own
              (CADENCE_PROGRESS_CONTEXTS=9): seed 003's Fig. 4
  tc_latency_thread, tc_bw_thread, tc_latency_process, tc_bw_process
  (group threadcomm)
              tcbench.c: ping-pong latency and windowed bandwidth 8 B-4 MiB
              between two threads of one process on a thread communicator
              (Cadence only, launched unbound) and between two processes:
              seed 003's Fig. 7 (tc_latency.png, tc_bw.png)
  task_ireduce-pN, task_igather-pN, task_ibcast-pN, and -tN, N = 2, 4, 8
  (group tasks)
              taskbench.c: seed 001's T_comm, T_comp, T_ovrl, overlap % and
              T_ovrl / max(T_comm, T_comp) at 64 KiB and 1 MiB, N ranks as
              processes (-pN) or as N threads of one process on a thread
              communicator (-tN: Cadence only, launched unbound); Cadence
              also as cadence-noshare (CADENCE_WORK_SHARING=0); writes
              tasks.md (the 1 MiB table), task_<coll>.png (the ratio over N)
              and task_<coll>_ovrl.png (T_ovrl over N)
  overlap     Isend/Irecv + compute + Wait, OSU overlap (%)
  allreduce bcast alltoall                 collbench.c, blocking (us)
  iallreduce ibcast ialltoall              nonblocking: pure time (us),
                                           overall, overlap (%)
  allreduce_init bcast_init alltoall_init  persistent (MPI >= 4 only)
  allreduce_forms bcast_forms alltoall_forms
              the three forms interleaved in one launch (MPI >= 4 only):
              what the persistent goals compare
  bcast_released bcast_init_released
              bcast and bcast_init with the root releasing the others after
              each iteration instead of MPI_Barrier: the same loop for every
              MPI (collbench.c; no goal of their own, docs/performance.md)
  allreduce-n8  8 ranks on this 2-core machine, allreduce of 8 B,
              200 + 20 iterations
  latency-load  latency at 8 B and 64 KiB (run beside --load N processes)
  latency-tcp, bw-tcp, bibw-tcp
              the same over TCP on loopback with shared memory off for all
              three (TCP_ONLY below)
  part_p2p    partbench.c, 2 ranks: one-way time 1 KiB-4 MiB, partitioned
              (1 partition), persistent, nonblocking and blocking ping-pong
              interleaved in one launch (us)
  part_count_total-64KiB, part_count_total-4MiB, part_count_fixed
              the partitioned ping-pong with 1-64 partitions of a fixed
              total / of 16 KiB each; the size column is the partition count
  part_earlybird  16 partitions of 64 KiB made ready one by one behind a
              computation: last MPI_Pready to the receiver's completion
              against a whole blocking send (us)
  pcoll_bcast pcoll_allreduce pcoll_alltoall
              Cadence's partitioned collectives (1 and 8 partitions) against
              the persistent ones, 1 KiB-1 MiB, interleaved (us)
  p2p, coll, tcp   groups: latency bw bibw rate latency_mt overlap / the nine
              collectives, the three *_forms, the two *_released / the three
              TCP benchmarks (fabrics: above)
  part        the eight partitioned benchmarks above, run as a table of their
              own: `compare.py part` writes DIR/table.csv, DIR/table.md and
              DIR/<bench>.png (DIR: build/bench/part unless --out) and checks
              the partitioned goals; not part of the default table run
  rma_put_lat_lockall rma_get_lat_lockall rma_put_lat_fence rma_get_lat_fence
  rma_acc_lat rma_fop_lat rma_cas_lat (group rma, with the five below)
              rmabench.c, 2 ranks, rank 0 the origin: MPI_Put / MPI_Get /
              MPI_Accumulate (doubles, MPI_SUM) of 8 B-1 MiB, MPI_Fetch_and_op
              and MPI_Compare_and_swap of one int64, each followed by
              MPI_Win_flush under MPI_Win_lock_all (the target in
              MPI_Barrier meanwhile) or by MPI_Win_fence on both ranks (us)
  rma_put_bw_lockall rma_get_bw_lockall rma_put_bw_fence rma_get_bw_fence
              64 puts / gets at a time, then the flush or fence (MB/s)
  rma_passive seed 003's passive target: 1000 flushed gets of one int under
              MPI_Win_lock from a rank asleep for 10 s (2 s with --quick)
              without an MPI call (ms, size column 8)
  rma_passive-tcp, rma_put_lat_lockall-tcp, rma_get_lat_lockall-tcp
              the same over TCP (RMA_TCP_ONLY: TCP_ONLY, and Open MPI's
              osc/pt2pt, as its allocated windows use shared memory otherwise).
              `compare.py rma` writes DIR/<bench>.csv, .ratios.csv, .png,
              rma_put_lat.png, rma_get_lat.png, rma_put_bw.png, rma_get_bw.png
              (one line per MPI and form) and rma.md (the table run's layout);
              window kind: RMABENCH_WIN=allocate|create|dynamic (default
              allocate); not in the table
  latency-fabric, bw-fabric, rate-fabric (group fabrics)
              p2pbench's latency (8 B and the powers of 4 from 16 B to 1 MiB),
              bw (to 4 MiB) and rate over TCP on loopback, with these rows
              instead of the MPIs (FABRIC_CADENCE, FABRIC_ONLY):
                cadence-ucx  Cadence, CADENCE_TRANSPORTS=ucx UCX_TLS=tcp,self
                mpich        Debian's MPICH (ch4:ucx) as TCP_ONLY runs it:
                             MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self
                cadence-ofi  Cadence, CADENCE_TRANSPORTS=ofi
                             CADENCE_OFI_PROVIDER="tcp;ofi_rxm"
                cadence-tcp  Cadence, CADENCE_TRANSPORTS=tcp
              (no Open MPI, no Cadence default).  Goals: cadence-ucx's
              latency <= 1.1x and bandwidth >= MPICH's at every size;
              cadence-tcp's latency <= 1.2x and bandwidth >= 1/1.2 of
              cadence-ofi's.  `compare.py fabrics --reps 3 --check` writes
              DIR/<bench>.csv, .ratios.csv (to the first row run), .png (a
              line per row over the size) and fabrics.md (every point: each
              row's median [min-max], cadence-ucx / mpich, cadence-tcp /
              cadence-ofi, the goals); not in the table

Options:
  --quick     every iteration count divided by 20, one repetition, one
              timed startup launch: a smoke test of the whole run
  --nothread  also run Cadence with CADENCE_PROGRESS_THREADS=0 (always on in
              table mode, as "cadence-nothread")
  --again     also run Cadence's default configuration a second time, as
              "cadence-again", in the same alternation: what two launches
              of one build differ by; table.md and the output list the
              points where it, and where cadence-nothread, is faster than
              the default by more than 10%
  --contexts N  also run Cadence with CADENCE_PROGRESS_CONTEXTS=N, as
              "cadence-ctxN" (rate_mt's communicators then get a progress
              context each)
  --load N    N busy processes spin during the runs (table mode: only during
              latency-load; otherwise during every run, output files get a
              -loadN suffix)
  --mpis A,B  only these MPIs (names as printed, e.g. cadence,mpich)

An MPI whose compiler wrapper or launcher is missing is left out with a
note (tools/setup-deps.sh --bench installs MPICH and Open MPI); goals that
need it are reported as not checked.
"""
import argparse
import collections
import csv
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CADENCE_BUILD_ROOT", os.path.join(ROOT, "build"))
FIELDS = ["bench", "mpi", "rep", "size", "stat", "value", "unit"]
KIB, MIB = 1 << 10, 1 << 20

# name, compiler wrapper, launcher argv prefix, extra environment
MPIS = [
    ("cadence", os.path.join(BUILD, "tools", "mpicc"), [os.path.join(BUILD, "tools", "mpirun")], {}),
    ("mpich", "mpicc.mpich", ["mpiexec.mpich"], {}),
    ("openmpi", "mpicc.openmpi", ["mpirun.openmpi", "--oversubscribe"],
     {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
      "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}),
]
NOTHREAD = "cadence-nothread"
# The default configuration launched a second time under its own name in the
# same alternation: what two launches of the same build differ by here.
AGAIN = "cadence-again"
# Cadence without work sharing between the threads of a process (the
# `tasks` run)
NOSHARE = "cadence-noshare"
OTHERS = ["mpich", "openmpi"]  # "the better of MPICH and Open MPI"

# Per-MPI launcher arguments and environment that take shared memory away
# and leave TCP.  Debian's MPICH 4.0 is ch4:ucx: NOLOCAL makes ch4 treat
# every rank as remote (no posix shmmod), UCX_TLS leaves UCX only tcp.
TCP_ONLY = {
    "cadence": ([], {"CADENCE_TRANSPORTS": "tcp"}),
    "mpich": ([], {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self"}),
    "openmpi": (["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"], {}),
}

# The `fabrics` run: Cadence over each of its fabric transports, every one
# of them over TCP on loopback, as MPIs of their own (with_fabrics), beside
# MPICH over UCX's tcp transport (TCP_ONLY's, FABRIC_ONLY): the issue's
# comparison of Cadence's ucx transport with MPICH's ch4:ucx on the same
# UCX transport, and of Cadence's own tcp transport with its ofi one over
# libfabric's tcp provider.  Open MPI is not part of it.
FABRIC_CADENCE = {
    "cadence-ucx": {"CADENCE_TRANSPORTS": "ucx", "UCX_TLS": "tcp,self"},
    "cadence-ofi": {"CADENCE_TRANSPORTS": "ofi", "CADENCE_OFI_PROVIDER": "tcp;ofi_rxm"},
    "cadence-tcp": {"CADENCE_TRANSPORTS": "tcp"},
}
# the rows of the fabric benchmarks, in fabrics.md's order
FABRIC_MPIS = ["cadence-ucx", "mpich", "cadence-ofi", "cadence-tcp"]
# The `udp` run: Cadence over its UDP transport, without and with 1% of
# the datagrams dropped on receive (CADENCE_UDP_FAULTS), beside its TCP
# transport, all on loopback with shared memory off (with_udp).
UDP_CADENCE = {
    "cadence-tcp": {"CADENCE_TRANSPORTS": "tcp"},
    "cadence-udp": {"CADENCE_TRANSPORTS": "udp"},
    "cadence-udp-loss1": {"CADENCE_TRANSPORTS": "udp", "CADENCE_UDP_FAULTS": "drop=0.01,seed=1"},
}
UDP_MPIS = list(UDP_CADENCE)
# (the Cadence rows carry their environment: no "cadence" entry, which
# every Cadence variant would take)
FABRIC_ONLY = {"mpich": TCP_ONLY["mpich"]}


def available():
    found = []
    for name, cc, launcher, env in MPIS:
        if shutil.which(cc) is None or shutil.which(launcher[0]) is None:
            print(f"note: {name} left out ({cc} or {launcher[0]} not found)", file=sys.stderr)
            continue
        found.append((name, cc, launcher, env))
    return found


def with_cadence(mpis, name, env):
    """mpis and Cadence once more as the MPI `name`, with env added to its
    environment (unchanged when Cadence is missing or name is there)."""
    base = next((m for m in mpis if m[0] == "cadence"), None)
    if base is None or any(m[0] == name for m in mpis):
        return mpis
    return mpis + [(name, base[1], base[2], {**base[3], **env})]


def with_nothread(mpis):
    return with_cadence(mpis, NOTHREAD, {"CADENCE_PROGRESS_THREADS": "0"})


def with_contexts(mpis, n):
    """Cadence with CADENCE_PROGRESS_CONTEXTS=n as well, as "cadence-ctxN"."""
    return with_cadence(mpis, f"cadence-ctx{n}", {"CADENCE_PROGRESS_CONTEXTS": str(n)})


def with_noshare(mpis):
    return with_cadence(mpis, NOSHARE, {"CADENCE_WORK_SHARING": "0"})


def with_again(mpis):
    return with_cadence(mpis, AGAIN, {})


def with_fabrics(mpis):
    """Cadence over each fabric transport as well (FABRIC_CADENCE)."""
    for name, env in FABRIC_CADENCE.items():
        mpis = with_cadence(mpis, name, env)
    return mpis


def with_udp(mpis):
    """Cadence over TCP and over UDP, without and with loss (UDP_CADENCE)."""
    for name, env in UDP_CADENCE.items():
        mpis = with_cadence(mpis, name, env)
    return mpis


def chosen(mpis, names, nothread=False):
    """The MPIs to run: those of --mpis (comma-separated names; all when
    empty) and always Cadence, with cadence-nothread if asked; exits when
    Cadence is not built."""
    if nothread:
        mpis = with_nothread(mpis)
    if names:
        keep = names.split(",")
        mpis = [m for m in mpis if m[0] in keep or m[0] == "cadence"]
    if not any(m[0] == "cadence" for m in mpis):
        raise SystemExit("Cadence is not built: run ./quickstart.sh first")
    return mpis


def start_load(n):
    """n processes that spin until stopped (stop_load)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_load(procs):
    for p in procs:
        p.kill()
        p.wait()


def launch(argv, env, timeout):
    """Run a job in its own process group; on timeout end that group."""
    p = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, f"timed out after {timeout} s"
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {err.strip()[-500:]}"
    return out, None


class Bench:
    """A benchmark program run as `<launcher> -n NPROCS exe TEST ARGS`.

    It prints "test,size,stat,value,unit" lines; rows whose test is TEST
    are kept.  variant: per-MPI (launcher arguments, environment) added to
    each run (a Cadence variant such as cadence-nothread takes Cadence's).
    only: the MPIs (names) it runs for, None for all."""

    def __init__(self, source, test, nprocs=2, args=(), quick_args=("-q",), variant=None,
                 timeout=600, only=None):
        self.source, self.test, self.nprocs = source, test, nprocs
        self.args, self.quick_args = list(args), list(quick_args)
        self.variant, self.timeout, self.only = variant or {}, timeout, only

    def runs(self, name):
        return self.only is None or name in self.only

    def build(self, mpi, tmp):
        cc = mpi[1]
        exe = os.path.join(tmp, f"{os.path.basename(self.source)}.{os.path.basename(cc)}")
        if not os.path.exists(exe):
            src = self.source if os.path.isabs(self.source) else \
                os.path.join(ROOT, "tools", "bench", self.source)
            subprocess.run([cc, "-O2", "-pthread", src, "-o", exe], check=True)
        return exe

    def argv(self, mpi, exe, quick):
        extra_args, _ = self.variant.get(mpi[0].split("-")[0], ([], {}))
        return mpi[2] + extra_args + ["-n", str(self.nprocs), exe, self.test] + self.args + \
            (self.quick_args if quick else [])

    def env(self, mpi):
        return {**mpi[3], **self.variant.get(mpi[0].split("-")[0], ([], {}))[1]}

    def run(self, mpi, tmp, quick):
        """(rows without bench/mpi/rep, error or None)"""
        exe = self.build(mpi, tmp)
        out, err = launch(self.argv(mpi, exe, quick), self.env(mpi), self.timeout)
        if err:
            return [], err
        rows = []
        for line in out.splitlines():
            f = line.split(",")
            if len(f) == 5 and f[0] == self.test:
                rows.append({"size": int(f[1]), "stat": f[2], "value": float(f[3]), "unit": f[4]})
        return rows, None


class Startup(Bench):
    """Milliseconds from launcher start to exit of a 2-rank hello job: the
    mean of `launches` after one untimed launch (which warms the caches)."""

    def __init__(self, launches=5):
        super().__init__(os.path.join(ROOT, "examples", "hello.c"), "", timeout=120)
        self.launches = launches

    def argv(self, mpi, exe, quick):
        return mpi[2] + ["-n", "2", exe]

    def run(self, mpi, tmp, quick):
        exe = self.build(mpi, tmp)
        times = []
        for i in range(1 + (1 if quick else self.launches)):
            t0 = time.perf_counter()
            _, err = launch(self.argv(mpi, exe, quick), self.env(mpi), self.timeout)
            if err:
                return [], err
            if i > 0:
                times.append((time.perf_counter() - t0) * 1e3)
        return [{"size": 2, "stat": "mean", "value": statistics.mean(times), "unit": "ms"},
                {"size": 2, "stat": "median", "value": statistics.median(times), "unit": "ms"}], None


class Pack(Bench):
    """pack_bench.c (one process) prints a CSV table with a header."""

    def __init__(self):
        super().__init__("pack_bench.c", "pack", nprocs=1, quick_args=())

    def run(self, mpi, tmp, quick):
        exe = self.build(mpi, tmp)
        out, err = launch(self.argv(mpi, exe, quick), self.env(mpi), self.timeout)
        if err:
            return [], err
        return [{"size": int(r["block_bytes"]), "stat": "ratio", "value": float(r["ratio"]),
                 "unit": "x memcpy"} for r in csv.DictReader(out.splitlines())], None


BLOCKING = ["allreduce", "bcast", "alltoall"]
NONBLOCKING = ["i" + c for c in BLOCKING]
PERSISTENT = [c + "_init" for c in BLOCKING]
COLLS = BLOCKING + NONBLOCKING + PERSISTENT
# the three forms of each in one launch, interleaved (collbench *_forms)
FORMS = [c + "_forms" for c in BLOCKING]
# the broadcasts with the root releasing the others after each iteration
RELEASED = ["bcast_released", "bcast_init_released"]

# partbench.c: MPI-4 partitioned point-to-point (MPICH has it, Open MPI 4.1
# does not) and Cadence's partitioned collectives
PCOLLS = ["pcoll_bcast", "pcoll_allreduce", "pcoll_alltoall"]
PART = ["part_p2p", "part_count_total-64KiB", "part_count_total-4MiB", "part_count_fixed",
        "part_earlybird"] + PCOLLS

# taskbench.c (the `tasks` run)
TASK_COLLS = ["ireduce", "igather", "ibcast"]
TASK_RANKS = [2, 4, 8]
TASKS = [f"task_{c}-{f}{n}" for c in TASK_COLLS for f in ("p", "t") for n in TASK_RANKS]

# rmabench.c (the `rma` run): one-sided communication, rank 0 the origin,
# rank 1 the target
RMA_LAT = ["rma_put_lat_lockall", "rma_get_lat_lockall", "rma_put_lat_fence",
           "rma_get_lat_fence", "rma_acc_lat", "rma_fop_lat", "rma_cas_lat"]
RMA_BW = ["rma_put_bw_lockall", "rma_get_bw_lockall", "rma_put_bw_fence", "rma_get_bw_fence"]
RMA_TCP = ["rma_passive-tcp", "rma_put_lat_lockall-tcp", "rma_get_lat_lockall-tcp"]
RMA = RMA_LAT + RMA_BW + ["rma_passive"] + RMA_TCP
# TCP_ONLY for one-sided communication.  Open MPI 4.1 puts a window from
# MPI_Win_allocate whose processes share a node in osc/sm (loads and stores
# in shared memory) whatever the BTLs, and osc/rdma needs a BTL with RDMA
# (tcp has none: MPI_Win_allocate fails); osc/pt2pt, which Debian's
# /etc/openmpi/openmpi-mca-params.conf leaves out (osc = ^ucx,pt2pt), moves
# the operations as messages over ob1 and tcp.
RMA_TCP_ONLY = {**TCP_ONLY,
                "openmpi": (TCP_ONLY["openmpi"][0] + ["--mca", "osc", "pt2pt"], {})}
# Open MPI's windows from MPI_Win_create and MPI_Win_create_dynamic
# (RMABENCH_WIN=create, dynamic) are osc/rdma over vader, which has RDMA
# only with a single-copy mechanism: with MPIS's "none" they fail
# (MPI_ERR_WIN), so those kinds run with CMA.  Allocated windows keep MPIS's
# setting (osc/sm; with CMA Open MPI would choose osc/rdma for them too).
RMA_SHM = {"openmpi": ([], {"OMPI_MCA_btl_vader_single_copy_mechanism": "cma"})} \
    if os.environ.get("RMABENCH_WIN") in ("create", "dynamic") else {}

# p2pbench.c over the fabrics (`compare.py fabrics`): 8 B and the powers of
# 4 from 16 B to 1 MiB (bw: to 4 MiB)
FABRICS = ["latency-fabric", "bw-fabric", "rate-fabric"]
# ... and over UDP (`compare.py udp`), the same sizes
UDP = ["latency-udp", "bw-udp", "rate-udp"]
FABRIC_SIZES = [8] + [16 << 2 * k for k in range(10)]

BENCHES = {
    "startup": Startup(),
    "pack": Pack(),
    **{t: Bench("p2pbench.c", t) for t in ["latency", "bw", "bibw", "rate", "overlap"]},
    "latency_mt": Bench("p2pbench.c", "latency_mt", timeout=900),
    # the rate loop in 1, 2 and 4 threads per rank, each pair on its own
    # communicator (not in the table: no goal yet)
    **{f"rate_mt-{n}": Bench("p2pbench.c", "rate_mt", args=["-t", str(n)], timeout=300)
       for n in (1, 2, 4, 8)},
    # seed 003's Fig. 4: every pair on MPI_COMM_WORLD, and (Cadence) a
    # stream communicator each, with a progress context for every stream
    **{f"rate_mt_shared-{n}": Bench("p2pbench.c", "rate_mt_shared", args=["-t", str(n)],
                                    timeout=300)
       for n in (1, 2, 4, 8)},
    **{f"rate_mt_stream-{n}": Bench("p2pbench.c", "rate_mt_stream", args=["-t", str(n)],
                                    timeout=300,
                                    variant={"cadence": ([], {"CADENCE_PROGRESS_CONTEXTS": "9"})})
       for n in (1, 2, 4, 8)},
    **{t: Bench("collbench.c", t) for t in COLLS + FORMS + RELEASED},
    # MPICH spins: up to ~25 ms per operation with 8 ranks on 2 cores
    "allreduce-n8": Bench("collbench.c", "allreduce", nprocs=8,
                          args=["-s", "8", "-i", "200", "-x", "20"],
                          quick_args=["-i", "20", "-x", "2"], timeout=180),
    "latency-load": Bench("p2pbench.c", "latency", args=["-s", "8,65536"], timeout=600),
    **{f"{t}-tcp": Bench("p2pbench.c", t, variant=TCP_ONLY) for t in ["latency", "bw", "bibw"]},
    **{f"{t}-fabric": Bench("p2pbench.c", t, args=args, variant=FABRIC_ONLY, only=FABRIC_MPIS,
                            timeout=300)
       for t, args in (("latency", ["-s", ",".join(str(s) for s in FABRIC_SIZES if s <= MIB)]),
                       ("bw", ["-s", ",".join(str(s) for s in FABRIC_SIZES)]), ("rate", []))},
    **{f"{t}-udp": Bench("p2pbench.c", t, args=args, only=UDP_MPIS, timeout=600)
       for t, args in (("latency", ["-s", ",".join(str(s) for s in FABRIC_SIZES if s <= MIB)]),
                       ("bw", ["-s", ",".join(str(s) for s in FABRIC_SIZES)]), ("rate", []))},
    # seed 003's Fig. 7: two threads of one process on a thread
    # communicator (Cadence; the process unbound, its two threads free to
    # take both processing units as two processes' would) against two
    # processes
    **{f"tc_{k}_thread": Bench("tcbench.c", f"tc_{k}_thread", nprocs=1,
                               variant={"cadence": (["--bind-to", "none"], {})})
       for k in ("latency", "bw")},
    **{f"tc_{k}_process": Bench("tcbench.c", f"tc_{k}_process") for k in ("latency", "bw")},
    # seed 001's overlap of nonblocking collectives: N processes, or N
    # threads of one process on a thread communicator (Cadence; unbound)
    **{f"task_{c}-p{n}": Bench("taskbench.c", f"task_{c}", nprocs=n, timeout=300)
       for c in TASK_COLLS for n in TASK_RANKS},
    **{f"task_{c}-t{n}": Bench("taskbench.c", f"task_{c}", nprocs=1, args=["-t", str(n)],
                               variant={"cadence": (["--bind-to", "none"], {})}, timeout=300)
       for c in TASK_COLLS for n in TASK_RANKS},
    # one-sided communication (`compare.py rma`).  rma_passive: the target
    # sleeps 10 s (-c; 2 s with --quick), which an MPI whose target answers
    # only from inside an MPI call waits out in full
    **{t: Bench("rmabench.c", t, variant=RMA_SHM, timeout=300) for t in RMA_LAT + RMA_BW},
    "rma_passive": Bench("rmabench.c", "rma_passive", quick_args=["-c", "2"], variant=RMA_SHM,
                         timeout=120),
    "rma_passive-tcp": Bench("rmabench.c", "rma_passive", quick_args=["-c", "2"],
                             variant=RMA_TCP_ONLY, timeout=120),
    **{f"{t}-tcp": Bench("rmabench.c", t, variant=RMA_TCP_ONLY, timeout=300)
       for t in ["rma_put_lat_lockall", "rma_get_lat_lockall"]},
    # the partitioned group, a table run of its own (`compare.py part`)
    **{t: Bench("partbench.c", t) for t in ["part_p2p", "part_count_fixed", "part_earlybird"]
       + PCOLLS},
    # one total per launch: the size column is the partition count
    **{f"part_count_total-{name}": Bench("partbench.c", "part_count_total", args=["-s", str(b)])
       for name, b in (("64KiB", 64 << 10), ("4MiB", 4 << 20))},
}
GROUPS = {"p2p": ["latency", "bw", "bibw", "rate", "latency_mt", "overlap"],
          "rate_mt": ["rate_mt-1", "rate_mt-2", "rate_mt-4"],
          "streams": [f"{k}-{n}" for k in ("rate_mt_shared", "rate_mt", "rate_mt_stream")
                      for n in (1, 2, 4, 8)],
          "threadcomm": ["tc_latency_thread", "tc_latency_process", "tc_bw_thread",
                         "tc_bw_process"],
          "coll": COLLS + FORMS + RELEASED,
          "tcp": ["latency-tcp", "bw-tcp", "bibw-tcp"],
          "fabrics": FABRICS,
          "udp": UDP,
          "part": PART,
          "tasks": TASKS,
          "rma": RMA}
TABLE = ["startup"] + GROUPS["p2p"] + GROUPS["coll"] + ["allreduce-n8"]
# the figure a benchmark's table row and plot show
PRIMARY = {"overlap": "overlap", "pack": "ratio", **{b: "ratio" for b in TASKS}}

# The goals of the table, for Cadence with default settings.  Each entry:
# (label, benches, (smallest, largest size) or None for all, stat, op,
#  factor, reference).  op "le": Cadence's value <= factor * reference;
# "ge": >= factor * reference; "not_worse": Cadence no worse than the
# reference by more than factor in the direction of the unit (a time
# lower, a rate higher).  reference: "best" = the better of MPICH and Open
# MPI at that point, an MPI's name, "bench:NAME" = Cadence's own NAME at
# the same size and stat, "stat:NAME" = Cadence's own figure NAME of the
# same bench and size, "MPI:NAME" = that MPI's NAME at the same size and
# stat, or "const" = factor itself.  An eighth element, when present, is
# the MPI whose value is checked (default "cadence"; "bench:" and "stat:"
# references are then its own figures).
GOALS = [
    ("<=1.1x best", ["latency"], (1, MIB), "mean", "le", 1.1, "best"),
    ("<=1.1x best", COLLS, (8, 64 * KIB), "mean", "le", 1.1, "best"),
    ("<= best", COLLS, (MIB, MIB), "mean", "le", 1.0, "best"),
    (">= best", ["rate"], (8, 8), "mean", "ge", 1.0, "best"),
    (">=0.9x best", ["bw", "bibw"], None, "mean", "ge", 0.9, "best"),
    (">=1.1x best", ["bw", "bibw"], (MIB, 4 * MIB), "mean", "ge", 1.1, "best"),
    # persistent against its other forms: interleaved in one launch, since
    # separate launches of this machine differ by more than the forms do
    *[(f"<= {form}", [c + "_forms"], None, "persistent", "le", 1.0, f"stat:{form}")
      for c in BLOCKING for form in ("nonblocking", "blocking")],
    (">=90%", NONBLOCKING, (MIB, MIB), "overlap", "ge", 90.0, "const"),
    # 64 KiB: no lower than the lowest overlap measured before the progress
    # thread stood aside for waiting application threads
    (">=36%", NONBLOCKING, (64 * KIB, 64 * KIB), "overlap", "ge", 36.0, "const"),
    ("<=1.5x openmpi", ["allreduce-n8"], None, "mean", "le", 1.5, "openmpi"),
    ("nothread not >10% faster", None, None, "mean", "not_worse", 1.1, NOTHREAD),
    ("<=2x mpich loaded", ["latency-load"], (8, 64 * KIB), "mean", "le", 2.0, "mpich"),
    # partitioned communication (the `part` run), against Cadence's own
    # other forms of the same size measured interleaved in the same launch:
    # a partitioned message of 1 partition costs no more than a persistent
    # one; the early bird's last partition is done in a quarter of the
    # whole message's time; a partitioned collective of 1 partition costs
    # no more than the persistent one
    ("<=1.05x persistent", ["part_p2p"], None, "partitioned", "le", 1.05, "stat:persistent"),
    ("<=0.25x whole", ["part_earlybird"], None, "last_to_done", "le", 0.25, "stat:whole"),
    ("<=1.1x persistent", PCOLLS, None, "partitioned", "le", 1.1, "stat:persistent"),
    # MPIX streams (the `streams` run): seed 003's Fig. 4, a stream
    # communicator per thread against Cadence's implicit scheme and
    # against MPICH's better scheme at every thread count
    *[g for n in (1, 2, 4, 8) for g in (
        (">=1.2x implicit", [f"rate_mt_stream-{n}"], None, "mean", "ge", 1.2,
         f"bench:rate_mt-{n}"),
        (">= mpich own", [f"rate_mt_stream-{n}"], None, "mean", "ge", 1.0, f"mpich:rate_mt-{n}"),
        (">= mpich shared", [f"rate_mt_stream-{n}"], None, "mean", "ge", 1.0,
         f"mpich:rate_mt_shared-{n}"))],
    # thread communicators (the `threadcomm` run): seed 003's Fig. 7
    ("<= processes", ["tc_latency_thread"], None, "mean", "le", 1.0, "bench:tc_latency_process"),
    (">= processes", ["tc_bw_thread"], None, "mean", "ge", 1.0, "bench:tc_bw_process"),
    # seed 001 (the `tasks` run): T_ovrl within 1.1x of max(T_comm, T_comp)
    # at 1 MiB, and work sharing never slower than without it
    ("T_ovrl <=1.1x max(T_comm, T_comp)", TASKS, (MIB, MIB), "ratio", "le", 1.1, "const"),
    # (threads only: work sharing is between the threads of a process)
    *[("sharing not slower", [b], None, "t_ovrl", "le", 1.0, f"{NOSHARE}:{b}")
      for b in TASKS if "-t" in b],
    # one-sided communication (the `rma` run): every latency at 8 B and
    # every bandwidth at 1 MiB no worse than the better of MPICH and Open
    # MPI; seed 003's passive target: 1000 gets from a sleeping target
    # within 50 ms
    ("<= best", RMA_LAT, (8, 8), "mean", "le", 1.0, "best"),
    (">= best", RMA_BW, (MIB, MIB), "mean", "ge", 1.0, "best"),
    ("<= 50 ms", ["rma_passive", "rma_passive-tcp"], None, "mean", "le", 50.0, "const"),
    # fabrics (the `fabrics` run, TCP on loopback): Cadence over UCX against
    # MPICH over the same UCX transport, and Cadence's own tcp transport
    # within 1.2x of its ofi transport over libfabric's tcp provider, or
    # better, at every size
    ("cadence-ucx <=1.1x mpich", ["latency-fabric"], None, "mean", "le", 1.1, "mpich",
     "cadence-ucx"),
    ("cadence-ucx >= mpich", ["bw-fabric"], None, "mean", "ge", 1.0, "mpich", "cadence-ucx"),
    ("cadence-tcp <=1.2x cadence-ofi", ["latency-fabric"], None, "mean", "le", 1.2,
     "cadence-ofi", "cadence-tcp"),
    ("cadence-tcp >= cadence-ofi / 1.2", ["bw-fabric"], None, "mean", "ge", 1 / 1.2,
     "cadence-ofi", "cadence-tcp"),
    # UDP (the `udp` run, loopback): its latency within 1.2x of TCP's at
    # every size, and its bandwidth with 1% of the datagrams lost at least
    # half its loss-free bandwidth
    ("cadence-udp <=1.2x cadence-tcp", ["latency-udp"], None, "mean", "le", 1.2, "cadence-tcp",
     "cadence-udp"),
    ("loss 1% >= 0.5x loss-free", ["bw-udp"], None, "mean", "ge", 0.5, "cadence-udp",
     "cadence-udp-loss1"),
]
LOWER_IS_BETTER = {"us", "ms", "s"}


def human_size(b):
    if b >= MIB and b % MIB == 0:
        return f"{b // MIB} MiB"
    if b >= KIB and b % KIB == 0:
        return f"{b // KIB} KiB"
    return f"{b} B"


def size_text(bench, size):
    """A point's size as the table says it: partbench's part_count rows
    carry the partition count, part_earlybird's the partition size (of
    16), rate_mt's the thread count."""
    if bench.startswith("part_count"):
        return f"{size} partition{'s' if size != 1 else ''}"
    if bench == "part_earlybird":
        return f"16 × {human_size(size)}"
    if bench.startswith("rate_mt"):
        return f"{size} thr"
    if bench.startswith("rma_passive"):
        return "1000 gets"
    return human_size(size)


def rotate(seq, k):
    k %= len(seq)
    return seq[k:] + seq[:k]


RTT = []  # (when, ns): the machine's cache-line round trip during the run
# (bench, rep) run again / kept with the vCPUs apart; seconds left to wait for them
GATE = {"redone": [], "kept_apart": [], "budget": 1200.0}


def tool(tmp, name):
    """tools/bench/NAME.c (no MPI) built once per run in tmp: its path."""
    exe = os.path.join(tmp, name)
    if not os.path.exists(exe):
        subprocess.run(["cc", "-O2", "-pthread", "-o", exe,
                        os.path.join(ROOT, "tools", "bench", name + ".c")],
                       capture_output=True, timeout=120)
    return exe


def measure_rtt(tmp):
    """The cache-line round trip between the two processing units (lockcost
    --rtt, ns; about 30 ms), or None."""
    try:
        r = subprocess.run([tool(tmp, "lockcost"), "--rtt"], capture_output=True, text=True,
                           timeout=60)
        return float(r.stdout.strip().split(",")[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def line_rtt(tmp, when):
    """Record the cache-line round trip: it moves by 5x when the hypervisor
    moves the two vCPUs apart, and every small-message row with it."""
    RTT.append((when, measure_rtt(tmp)))


COPY = []  # (when, {size: GB/s}): two processes copying both ways at once


def line_copy(tmp, when):
    """Record the copy ceiling under bibw above the eager limit (cmacost
    --both: two processes reading each other's buffer at once, GB/s of both
    directions; a few seconds): it moves with the hypervisor's placement,
    and bibw at 1-4 MiB with it."""
    got = {}
    try:
        r = subprocess.run([tool(tmp, "cmacost"), "--both"], capture_output=True, text=True,
                           timeout=120)
        for line in r.stdout.splitlines():
            f = line.split(",")
            if len(f) == 5 and f[2] == "cma-both" and int(f[1]) in (1 << 20, 4 << 20):
                got[int(f[1])] = float(f[4])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    COPY.append((when, got))


def copy_note():
    def one(got):
        return " / ".join(f"{got[k]:.1f}" if k in got else "?" for k in (1 << 20, 4 << 20))
    return ", ".join(f"{w} {one(g)}" for w, g in COPY)


def rtt_note():
    return ", ".join(f"{w} {'?' if v is None else f'{v:.0f}'}" for w, v in RTT)


def gate_note(gate):
    if gate <= 0:
        return "Placement gate off: rounds run whatever the vCPUs' placement."
    def names(pairs):
        return ", ".join(f"{b} (rep {r})" for b, r in pairs) or "none"
    return (f"Placement gate {gate:.0f} ns: a bench's round (every MPI once) found the vCPUs "
            f"apart before or after it and was run again: {names(GATE['redone'])}; kept "
            f"although still apart after 3 retries: {names(GATE['kept_apart'])}; "
            f"{1200 - GATE['budget']:.0f} s spent waiting for the vCPUs to come near.")


def apart(rtt, gate):
    return gate > 0 and rtt is not None and rtt > gate


def wait_near(tmp, gate):
    """Wait for the vCPUs to be near (rtt <= gate), at most what is left of
    the run's budget (20 minutes in all); the last round trip measured."""
    rtt = measure_rtt(tmp)
    while apart(rtt, gate) and GATE["budget"] > 0:
        time.sleep(5)
        GATE["budget"] -= 5
        rtt = measure_rtt(tmp)
    return rtt


def run_benches(benches, mpis, reps, quick, load, load_benches=None, gate=0):
    """Every bench for every MPI, reps times, alternating; (rows, failures).
    load busy processes spin during the benches of load_benches (all when
    None).  With gate > 0 (ns) a bench's round of every MPI is run again
    (up to 3 times) when the cache-line round trip before or after it says
    the hypervisor had the two vCPUs apart, after waiting for them to be
    near again (GATE records which)."""
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        line_copy(tmp, "before")
        for rep in range(1, reps + 1):
            line_rtt(tmp, f"rep {rep}")
            for bench in benches:
                loaded = load if load_benches is None or bench in load_benches else 0
                for attempt in range(4):
                    before = wait_near(tmp, gate) if gate > 0 else None
                    got_rows, got_failures = run_round(bench, mpis, rep, tmp, quick, loaded)
                    after = measure_rtt(tmp) if gate > 0 else None
                    if not (apart(before, gate) or apart(after, gate)):
                        break
                    if attempt < 3:
                        GATE["redone"].append((bench, rep))
                        print(f"  rep {rep} {bench}: vCPUs apart (round trip {before} / {after} ns),"
                              f" running it again", file=sys.stderr)
                    else:
                        GATE["kept_apart"].append((bench, rep))
                rows += got_rows
                failures += got_failures
        line_rtt(tmp, "end")
        line_copy(tmp, "after")
    return rows, failures


def run_round(bench, mpis, rep, tmp, quick, loaded):
    """One bench for every MPI, in this repetition's order; (rows, failures)."""
    rows, failures = [], []
    procs = start_load(loaded)
    try:
        # (the MPIs the bench runs for rotate among themselves)
        for mpi in rotate([m for m in mpis if BENCHES[bench].runs(m[0])], rep - 1):
            t0 = time.perf_counter()
            got, err = BENCHES[bench].run(mpi, tmp, quick)
            dt = time.perf_counter() - t0
            if err:
                failures.append((bench, mpi[0], rep, err))
                print(f"  {bench} {mpi[0]} rep {rep}: FAILED {err}", file=sys.stderr)
                continue
            rows += [{"bench": bench, "mpi": mpi[0], "rep": rep, **r} for r in got]
            print(f"  rep {rep} {bench:>14} {mpi[0]:>16}: {len(got)} rows, {dt:.1f} s",
                  file=sys.stderr)
    finally:
        stop_load(procs)
    return rows, failures


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"csv: {path}")


def read_csv(path):
    with open(path, newline="") as f:
        return [{**r, "rep": int(r["rep"]), "size": int(r["size"]), "value": float(r["value"])}
                for r in csv.DictReader(f)]


class Results:
    """Median, min and max over the repetitions of every (bench, mpi, size,
    stat), and which MPIs took part in each bench."""

    def __init__(self, rows):
        vals = {}
        self.units, self.mpis, self.sizes = {}, {}, {}
        for r in rows:
            vals.setdefault((r["bench"], r["mpi"], r["size"], r["stat"]), []).append(r["value"])
            self.units[(r["bench"], r["stat"])] = r["unit"]
            self.mpis.setdefault(r["bench"], [])
            if r["mpi"] not in self.mpis[r["bench"]]:
                self.mpis[r["bench"]].append(r["mpi"])
            self.sizes.setdefault(r["bench"], set()).add(r["size"])
        self.all_mpis = list(dict.fromkeys(r["mpi"] for r in rows))
        self.stats = {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in vals.items()}
        self.benches = list(dict.fromkeys(r["bench"] for r in rows))

    def median(self, bench, mpi, size, stat):
        s = self.stats.get((bench, mpi, size, stat))
        return s[0] if s else None

    def extreme(self, bench, mpi, size, stat, favourable):
        """The launch most (favourable) or least favourable to the MPI
        among the repetitions: the lowest time or the highest rate."""
        s = self.stats.get((bench, mpi, size, stat))
        if not s:
            return None
        low = self.lower_better(bench, stat)
        return s[1] if low == favourable else s[2]

    def lower_better(self, bench, stat):
        return self.units.get((bench, stat)) in LOWER_IS_BETTER

    def best_other(self, bench, size, stat):
        """(value, mpi) of the better of MPICH and Open MPI at the point;
        None when either is not in the run at all or neither measured it."""
        if any(m not in self.all_mpis for m in OTHERS):
            return None
        have = [(v, m) for m in OTHERS
                if (v := self.median(bench, m, size, stat)) is not None]
        if not have:
            return None
        return (min if self.lower_better(bench, stat) else max)(have)


def goal_points(res, goal):
    """(bench, size) points a goal covers in the results."""
    label, benches, sizes, stat = goal[:4]
    if benches is None:
        benches = [b for b in res.benches if res.units.get((b, stat)) in
                   LOWER_IS_BETTER | {"MB/s", "msg/s"}]
    for b in benches:
        for s in sorted(res.sizes.get(b, [])):
            if sizes is None or sizes[0] <= s <= sizes[1]:
                yield b, s
        if not res.sizes.get(b):
            yield b, None


def evaluate(res, goal, bench, size):
    """("met" | "missed" | "not checked", text)."""
    label, _, _, stat, op, factor, ref = goal[:7]
    who = goal[7] if len(goal) > 7 else "cadence"
    where = f"{label}: {bench} {size_text(bench, size) if size is not None else ''}".rstrip()
    v = res.median(bench, who, size, stat) if size is not None else None
    if v is None:
        return "not checked", f"{where}: not measured" if size is None else \
            f"{where}: no {'Cadence' if who == 'cadence' else who} result"
    if ref == "best":
        got = res.best_other(bench, size, stat)
        if got is None:
            return "not checked", f"{where}: MPICH or Open MPI result missing"
        r, rname = got
    elif ref == "const":
        r, rname = 1.0, "goal"
    elif ref.startswith("bench:"):
        rname = ref[len("bench:"):]
        r = res.median(rname, who, size, stat)
    elif ref.startswith("stat:"):
        rname = ref[len("stat:"):]
        r = res.median(bench, who, size, rname)
    elif ":" in ref:  # MPI:BENCH, another MPI's figure of another bench
        rmpi, rbench = ref.split(":", 1)
        rname = f"{rmpi} {rbench}"
        r = res.median(rbench, rmpi, size, stat)
    else:
        rname = ref
        r = res.median(bench, ref, size, stat)
    if r is None:
        return "not checked", f"{where}: no {rname} result"
    unit = res.units[(bench, stat)]
    if op == "not_worse":
        text = f"{who} {fmt(v)} {unit}, {rname} {fmt(r)}"
    else:
        limit = factor * r
        text = f"{who} {fmt(v)} {unit}, goal {'<=' if op == 'le' else '>='} {fmt(limit)}" + \
            ("" if ref == "const" else f" ({factor:g} x {rname} {fmt(r)})")
    if holds(op, factor, unit, v, r):
        return "met", f"{where}: {text}"
    # Missed on the medians.  Would Cadence's most favourable launch meet
    # it against the reference's least favourable one?  Then the gap is
    # inside what launches of the same build spread by on this machine.
    rmpi, rbench, rstat = (who, rname, stat) if ref.startswith("bench:") else \
        (who, bench, rname) if ref.startswith("stat:") else \
        (*ref.split(":", 1), stat) if ":" in ref else (rname, bench, stat)
    best_v = res.extreme(bench, who, size, stat, True)
    worst_r = r if ref == "const" else res.extreme(rbench, rmpi, size, rstat, False)
    if best_v is not None and worst_r is not None and holds(op, factor, unit, best_v, worst_r):
        text += SPREAD_NOTE
    if ref == NOTHREAD and AGAIN in res.all_mpis:
        fa, fn = faster_by(res, bench, size, stat, AGAIN), faster_by(res, bench, size, stat, ref)
        if fa is not None and fn is not None and fa >= fn:
            text += f" ({AGAIN} {fmt(res.median(bench, AGAIN, size, stat))}: as much faster)"
    return "missed", f"{where}: {text}"


# Marks a missed goal that the launches' spread covers (evaluate).
SPREAD_NOTE = " (within the launches' spread)"


def holds(op, factor, unit, v, r):
    """Does Cadence's value v meet the goal against the reference r?"""
    if op == "not_worse":
        return v <= factor * r if unit in LOWER_IS_BETTER else v * factor >= r
    return v <= factor * r if op == "le" else v >= factor * r


def tally(verdicts):
    """(met, missed texts, of them within the spread, not checked texts)."""
    missed = [t for v, t in verdicts.values() if v == "missed"]
    return (sum(1 for v, _ in verdicts.values() if v == "met"), missed,
            sum(1 for t in missed if SPREAD_NOTE in t),
            [t for v, t in verdicts.values() if v == "not checked"])


def goals_line(verdicts):
    met, missed, within, unchecked = tally(verdicts)
    return (f"{met} met, {len(missed)} missed ({within} of them within the launches' spread: "
            f"Cadence's best launch meets the goal against the reference's worst), "
            f"{len(unchecked)} not checked")


def check_across(paths):
    """The goals over several runs' CSVs (the same build run again): how
    many runs missed each goal the runs share.  A goal missed in every run
    is missed; one that a run of the same build met is within what runs of
    this machine spread by.  Exit status 1 when a goal is missed in every
    run."""
    try:
        runs = [check(Results(read_csv(p))) for p in paths]
    except OSError as e:
        print(f"compare.py --across: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    shared = set.intersection(*[{k for k, (v, _) in r.items() if v != "not checked"}
                                for r in runs])
    by_label, always = {}, []
    for k in shared:
        n = sum(r[k][0] == "missed" for r in runs)
        by_label.setdefault(k[0], collections.Counter())[n] += 1
        if n == len(runs):
            always.append(k)
    print(f"{len(runs)} runs, {len(shared)} goals checked in all of them:")
    for label in sorted(by_label):
        counts = by_label[label]
        print(f"  {label}: " + ", ".join(f"{counts[n]} missed in {n} of {len(runs)}"
                                          for n in sorted(counts)))
    for k in sorted(always, key=lambda k: (k[0], k[1], k[2] or 0)):
        print(f"MISSED IN EVERY RUN  {runs[-1][k][1]}")
    print(f"goals missed in every run: {len(always)}")
    return 1 if always else 0


def faster_by(res, bench, size, stat, mpi):
    """How much faster (a time lower, a rate higher) MPI's median is than
    Cadence's default at the point, as a fraction; None if unmeasured."""
    v, r = res.median(bench, "cadence", size, stat), res.median(bench, mpi, size, stat)
    if not v or not r:
        return None
    return v / r - 1 if res.lower_better(bench, stat) else r / v - 1


def same_build_report(res):
    """Lines: the thread-off goal's points with the default against its
    second launch (AGAIN) beside the thread-off build, how many of each are
    faster than the default by more than 10%."""
    goal = next(g for g in GOALS if g[6] == NOTHREAD)
    pts = [(b, s) for b, s in goal_points(res, goal) if s is not None]
    out = []
    for mpi in (AGAIN, NOTHREAD):
        d = [(f, b, s) for b, s in pts if (f := faster_by(res, b, s, goal[3], mpi)) is not None]
        if not d:
            continue
        over = sorted((x for x in d if x[0] > 0.1), reverse=True)
        out.append(f"{mpi}: {len(d)} points, faster than cadence by more than 10% at "
                   f"{len(over)}" + (": " + ", ".join(f"{b} {human_size(s)} {f:+.0%}"
                                                        for f, b, s in over) if over else ""))
    return out


# groups run on their own (`compare.py part`, `compare.py rma`, `compare.py
# fabrics`), not in the table run: their goals apply only to runs of theirs
OWN_GOALS = [PART, RMA, FABRICS, UDP]


def goals_of(res):
    """The goals a run is checked against.  The partitioned ones only where
    a partitioned benchmark ran (they belong to `compare.py part`, not to
    the table run), and a run of partitioned benchmarks alone only those,
    with the thread-off goal when cadence-nothread took part; the same for
    the one-sided ones (`compare.py rma`) and the fabric ones (`compare.py
    fabrics`)."""
    for g in GOALS:
        keep = True
        for group in OWN_GOALS:
            has = any(b in group for b in res.benches)
            only = has and all(b in group for b in res.benches)
            own = g[1] is not None and all(b in group for b in g[1])
            if own and not has:
                keep = False
            if only and not own and not (g[6] == NOTHREAD and NOTHREAD in res.all_mpis):
                keep = False
        if keep:
            yield g


def check(res):
    """Every goal at every point: {(label, bench, size): (verdict, text)}."""
    out = {}
    for goal in goals_of(res):
        for bench, size in goal_points(res, goal):
            out[(goal[0], bench, size)] = evaluate(res, goal, bench, size)
    return out


def report_check(verdicts):
    _, missed, _, unchecked = tally(verdicts)
    for t in missed:
        print(f"MISSED       {t}")
    for t in unchecked:
        print(f"NOT CHECKED  {t}")
    print(f"goals: {goals_line(verdicts)}")
    return 1 if missed else 0


def fmt(v):
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


UNIT_TEXT = {"us": "µs", "%": "%", "ms": "ms", "MB/s": "MB/s", "msg/s": "msg/s", "x": "×"}
SECTIONS = [
    ("Point-to-point, 2 ranks", ["latency", "bw", "bibw", "rate", "latency_mt", "overlap"]),
    ("Collectives, 2 ranks", COLLS),
    ("Collectives' three forms interleaved in one launch, 2 ranks", FORMS),
    ("Startup and oversubscription", ["startup", "allreduce-n8"]),
    ("Under load", ["latency-load"]),
    ("Partitioned communication (partbench.c; collectives: Cadence's MPIX_ extension)", PART),
    ("One-sided communication (rmabench.c), 2 ranks: rank 0 the origin, rank 1 the target",
     RMA),
    ("Fabrics over TCP on loopback (p2pbench.c), 2 ranks", FABRICS),
    ("UDP against TCP on loopback (p2pbench.c), 2 ranks", UDP),
]
# partbench's figures of several forms: the rows of each bench, in order
PART_ROWS = {"part_p2p": ["partitioned", "persistent", "nonblocking", "blocking"],
             "part_earlybird": ["last_to_done", "whole", "ratio", "compute", "zero_byte"],
             **{b: ["partitioned", "partitioned8", "persistent"] for b in PCOLLS}}
# what an MPI without partitioned communication gets in a partitioned cell
NO_PART = {"openmpi": "n/a (Open MPI 4.1.4 has no partitioned communication)"}


def missing_cell(bench, mpi, stat):
    """The table cell of a point an MPI did not measure: "—", or for
    partbench's partitioned figures why the MPI has none."""
    if bench not in PART:
        return "—"
    if bench in PCOLLS:
        if stat.startswith("partitioned"):
            return "—" if mpi.startswith("cadence") else "n/a (Cadence's MPIX_ extension)"
        return "n/a (Open MPI 4.1.4 has no persistent collectives)" if mpi == "openmpi" else "—"
    partitioned = stat.startswith("partitioned") or bench.startswith("part_count") or \
        stat in ("last_to_done", "ratio", "compute")
    return NO_PART.get(mpi, "—") if partitioned else "—"


def tail_stat(stat, kind):
    """The per-iteration median or p99 (kind) of a row's figure: "median"
    of "mean", FORM_median of a form's mean (partbench)."""
    return kind if stat == "mean" else f"{stat}_{kind}"


def table_rows(res, bench):
    """(row name, stat) of a bench's rows in the table."""
    if bench in NONBLOCKING:
        return [(f"{bench} pure", "mean"), (f"{bench} overall", "overall"),
                (f"{bench} overlap", "overlap")]
    if bench == "overlap":
        return [("Isend/Irecv overlap", "overlap")]
    if bench in FORMS:
        return [(f"{bench} {f}", f) for f in ("persistent", "nonblocking", "blocking")]
    if bench in PART_ROWS:
        return [(f"{bench} {f}", f) for f in PART_ROWS[bench] if (bench, f) in res.units]
    return [(bench, PRIMARY.get(bench, "mean"))]


def verdict_cell(goals):
    """"yes" when every goal of a row is met, else what was missed or not
    checked."""
    if not goals:
        return "—"
    missed = [lbl for lbl, v in goals if v == "missed"]
    unchecked = [lbl for lbl, v in goals if v == "not checked"]
    if not missed and not unchecked:
        return "yes"
    return "; ".join(([f"**NO**: {', '.join(missed)}"] if missed else []) +
                     ([f"not checked: {', '.join(unchecked)}"] if unchecked else []))


# The headline rows, at the top of table.md: (bench, size, stat)
SUMMARY = [("latency", s, "mean") for s in (8, 64 * KIB, MIB)] + \
    [(b, s, "mean") for b in ("bw", "bibw") for s in (8, 64 * KIB, 4 * MIB)] + \
    [("rate", 8, "mean"), ("latency_mt", 8, "mean")] + \
    [("allreduce", s, "mean") for s in (8, 64 * KIB, MIB)] + \
    [(b, s, "mean") for b in ("allreduce_init", "bcast", "bcast_released", "bcast_init",
                              "bcast_init_released", "alltoall")
     for s in (8, 64 * KIB)] + \
    [("allreduce_forms", s, "persistent") for s in (8, 64 * KIB, MIB)] + \
    [(b, 64 * KIB, "mean") for b in NONBLOCKING] + \
    [(b, MIB, "overlap") for b in NONBLOCKING] + \
    [("allreduce-n8", 8, "mean"), ("startup", 2, "mean"), ("latency-load", 8, "mean"),
     ("latency-load", 64 * KIB, "mean")] + \
    [("part_p2p", s, f) for s in (KIB, 64 * KIB, 4 * MIB) for f in ("partitioned", "persistent")] + \
    [("part_earlybird", 64 * KIB, f) for f in ("last_to_done", "whole")] + \
    [(b, 64 * KIB, f) for b in PCOLLS for f in ("partitioned", "persistent")]


def better_ratio(res, bench, size, stat):
    """Cadence's median / the better of MPICH's and Open MPI's, or None."""
    best = res.best_other(bench, size, stat)
    v = res.median(bench, "cadence", size, stat)
    return v / best[0] if best and v is not None and best[0] else None


def row_ratio(a, b):
    """A ratio column: MPI a's median / MPI b's at the point, or None."""
    def ratio(res, bench, size, stat):
        x, y = res.median(bench, a, size, stat), res.median(bench, b, size, stat)
        return x / y if x is not None and y else None
    return ratio


# the table's ratio columns: (heading, function of (res, bench, size, stat))
BETTER = [("Cadence / better", better_ratio)]
FABRIC_RATIOS = [("cadence-ucx / mpich", row_ratio("cadence-ucx", "mpich")),
                 ("cadence-tcp / cadence-ofi", row_ratio("cadence-tcp", "cadence-ofi"))]
UDP_RATIOS = [("cadence-udp / cadence-tcp", row_ratio("cadence-udp", "cadence-tcp")),
              ("loss1 / udp", row_ratio("cadence-udp-loss1", "cadence-udp"))]


def table_line(res, cols, goals_at, bench, name, stat, size, ratios=BETTER, spread=("cadence",)):
    """One Markdown row: the MPIs' medians (those of spread with
    [min-max]), the ratio columns (default: to the better of MPICH and
    Open MPI), the goals and verdicts."""
    unit = UNIT_TEXT.get(res.units.get((bench, stat)), res.units.get((bench, stat)))
    cells = []
    for m in cols:
        s = res.stats.get((bench, m, size, stat))
        if s is None:
            cells.append(missing_cell(bench, m, stat))
        elif m in spread:
            cells.append(f"{fmt(s[0])} [{fmt(s[1])}–{fmt(s[2])}]")
        else:
            cells.append(fmt(s[0]))
    cells += [f"{r:.2f}" if (r := fn(res, bench, size, stat)) is not None and unit != "%"
              else "—" for _, fn in ratios]
    gs = [(lbl, verdict) for lbl, verdict in goals_at.get((bench, size), [])
          if lbl in {g[0] for g in GOALS if g[3] == stat}]
    goal = "; ".join(lbl for lbl, _ in gs) or "—"
    label = f"{name} {size_text(bench, size)}" if bench != "startup" else name
    return f"| {label} ({unit}) | " + " | ".join(cells) + f" | {goal} | " + \
        verdict_cell(gs) + " |"


def write_table(path, res, verdicts, failures, header, what="table", cols=None, ratios=BETTER,
                spread=("cadence",)):
    """A run's Markdown table: the columns cols (default: Cadence, MPICH,
    Open MPI and the Cadence variants that took part), the ratio columns,
    the goals; spread: the columns with [min-max]."""
    if cols is None:
        cols = [m for m in ["cadence", "mpich", "openmpi", NOTHREAD, AGAIN] if m in res.all_mpis]
    goals_at = {}
    for (label, bench, size), (v, _) in verdicts.items():
        goals_at.setdefault((bench, size), []).append((label, v))
    lines = header[:]
    _, missed, _, unchecked = tally(verdicts)
    lines += [f"Goals: {goals_line(verdicts)}.", ""]
    thead = ["| benchmark | " + " | ".join(cols + [h for h, _ in ratios]) + " | goal | met |",
             "|---|" + "---|" * (len(cols) + len(ratios) + 2)]
    names = {(b, st): n for b in res.benches for n, st in table_rows(res, b)}
    summary = [(b, s, st) for b, s, st in SUMMARY if (b, "cadence", s, st) in res.stats]
    if summary:
        lines += ["## Summary", ""] + thead
        lines += [table_line(res, cols, goals_at, b, names[(b, st)], st, s, ratios, spread)
                  for b, s, st in summary]
        lines.append("")
    for title, benches in SECTIONS:
        benches = [b for b in benches if b in res.benches]
        if not benches:
            continue
        lines += [f"## {title}", ""] + thead
        for bench in benches:
            for name, stat in table_rows(res, bench):
                lines += [table_line(res, cols, goals_at, bench, name, stat, size, ratios, spread)
                          for size in sorted(res.sizes[bench])]
        lines.append("")
    # the tails: per-iteration median and p99
    tails = [(b, name, st) for b in res.benches for name, st in table_rows(res, b)
             if (b, tail_stat(st, "p99")) in res.units]
    if tails:
        lines += ["## Per-iteration median / p99 (µs)", "",
                  "| benchmark | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        for bench, name, stat in tails:
            for size in sorted(res.sizes[bench]):
                med, p99 = [[res.median(bench, m, size, tail_stat(stat, k)) for m in cols]
                            for k in ("median", "p99")]
                cells = [missing_cell(bench, m, stat) if a is None and b is None
                         else f"{fmt(a)} / {fmt(b)}" for m, a, b in zip(cols, med, p99)]
                lines.append(f"| {name} {size_text(bench, size)} | " + " | ".join(cells) + " |")
        lines.append("")
    if AGAIN in res.all_mpis:
        lines += ["## The default against its second launch", ""] + \
            [f"- {t}" for t in same_build_report(res)] + [""]
    if missed:
        lines += ["## Goals missed", ""] + [f"- {t}" for t in missed] + [""]
    if unchecked:
        lines += ["## Goals not checked", ""] + [f"- {t}" for t in unchecked] + [""]
    write_report(path, lines, failures, what)


def write_report(path, lines, failures, what):
    """Write a Markdown report's lines, then its failed runs, if any."""
    if failures:
        lines += ["## Failed runs", ""] + [f"- {b} {m} rep {r}: {e}" for b, m, r, e in failures]
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(f"{what}: {path}")


def plot(name, res, bench, out):
    """One line per MPI through its medians of the bench's primary figure
    (partbench's forms: one line per MPI and form, of the same unit)."""
    if len(res.sizes[bench]) < 2:
        return  # one point: the table says it all
    stat = table_rows(res, bench)[0][1]
    mpis = res.mpis[bench]
    sizes = sorted(res.sizes[bench])
    unit = res.units[(bench, stat)]
    if bench in PART_ROWS:
        series = {f"{m} {st}": [res.median(bench, m, s, st) for s in sizes]
                  for m in mpis for _, st in table_rows(res, bench)
                  if res.units[(bench, st)] == unit}
        series = {k: v for k, v in series.items() if any(x is not None for x in v)}
        title = f"{name} (mean of each form)"
    else:
        series = {m: [res.median(bench, m, s, stat) for s in sizes] for m in mpis}
        title = f"{name} ({stat})"
    counts = bench.startswith("part_count")
    lines_plot(os.path.join(out, f"{name}.png"), title, f"{unit} (median)",
               [str(s) if counts else human_size(s) for s in sizes], series,
               xlabel="partitions" if counts else "size")


def plot_threads(res, out):
    """The multi-threaded rate benchmarks (one point each: rate_mt-N,
    rate_mt_shared-N, rate_mt_stream-N) as seed 003's Fig. 4: one line per
    MPI and kind over the thread count (rate_mt.png)."""
    kinds = [("rate_mt_shared", "one communicator"), ("rate_mt", "a communicator each"),
             ("rate_mt_stream", "a stream each")]
    threads = sorted({int(b.rsplit("-", 1)[1]) for b in res.benches
                      if b.startswith("rate_mt") and b.rsplit("-", 1)[1].isdigit()})
    if len(threads) < 2:
        return
    series = {}
    for kind, label in kinds:
        for m in sorted({m for b in res.benches if b.startswith(kind + "-")
                         for m in res.mpis[b]}):
            vals = [res.median(f"{kind}-{n}", m, n, "mean") if f"{kind}-{n}" in res.benches
                    else None for n in threads]
            if any(v is not None for v in vals):
                series[f"{m}, {label}"] = [v / 1e6 if v is not None else None for v in vals]
    if series:
        lines_plot(os.path.join(out, "rate_mt.png"), "8-byte message rate, 2 ranks",
                   "million messages/s (median)", [str(n) for n in threads], series,
                   xlabel="threads per rank")


def plot_threadcomm(res, out):
    """tcbench's runs as seed 003's Fig. 7: latency and bandwidth over the
    size, one line per MPI and form (threads of one process on a thread
    communicator, or two processes): tc_latency.png, tc_bw.png."""
    for kind, ylabel in (("latency", "us, mean (median of launches)"),
                         ("bw", "MB/s (median of launches)")):
        forms_plot(res, os.path.join(out, f"tc_{kind}.png"),
                   f"{'latency' if kind == 'latency' else 'bandwidth'}: two threads of a process "
                   "(thread communicator) or two processes", ylabel,
                   [(f"tc_{kind}_thread", "threads"), (f"tc_{kind}_process", "processes")])


def forms_plot(res, png, title, ylabel, forms):
    """One line per MPI and form (forms: [(bench, form's name)]) through
    the medians of the mean over the benches' sizes; no plot with fewer
    than two sizes."""
    sizes = sorted(set().union(*[res.sizes.get(b, set()) for b, _ in forms]))
    if len(sizes) < 2:
        return
    series = {}
    for b, form in forms:
        for m in res.mpis.get(b, []):
            vals = [res.median(b, m, s, "mean") for s in sizes]
            if any(v is not None for v in vals):
                series[f"{m}, {form}"] = vals
    lines_plot(png, title, ylabel, [human_size(s) for s in sizes], series)


def write_rma(res, out, failures, header):
    """rmabench's runs: a plot per family over the size, one line per MPI
    and form -- rma_put_lat.png, rma_get_lat.png (lock_all + flush, fence,
    lock_all + flush over TCP), rma_put_bw.png, rma_get_bw.png (lock_all +
    flush, fence) -- and rma.md: the table run's layout (every row's
    medians over the launches, Cadence's [min-max], Cadence / the better of
    MPICH and Open MPI, the rma goals and whether they are met, the
    per-iteration median / p99, the runs that failed)."""
    for op in ("put", "get"):
        for kind, what, ylabel in (("lat", "latency", "us, mean (median of launches)"),
                                   ("bw", "bandwidth, 64 at a time", "MB/s (median of launches)")):
            forms = [(f"rma_{op}_{kind}_lockall", "lock_all + flush"),
                     (f"rma_{op}_{kind}_fence", "fence"),
                     (f"rma_{op}_{kind}_lockall-tcp", "lock_all + flush, TCP")]
            forms_plot(res, os.path.join(out, f"rma_{op}_{kind}.png"),
                       f"MPI_{op.capitalize()} {what}, 2 ranks", ylabel, forms)
    window = os.environ.get("RMABENCH_WIN") or "allocate"
    # (the rma benches' goals only, also when none of them has a result)
    verdicts = {k: v for k, v in check(res).items() if k[1] in RMA}
    write_table(os.path.join(out, "rma.md"), res, verdicts, [f for f in failures if f[0] in RMA],
                header + [f"Window kind: {window} (RMABENCH_WIN, rmabench.c).", ""], "rma")


FABRIC_READING = (
    "Every row over TCP on loopback, shared memory off: cadence-ucx = Cadence with "
    "CADENCE_TRANSPORTS=ucx UCX_TLS=tcp,self; mpich = Debian's MPICH (ch4:ucx) with "
    "MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self; cadence-ofi = Cadence with CADENCE_TRANSPORTS=ofi "
    "CADENCE_OFI_PROVIDER='tcp;ofi_rxm'; cadence-tcp = Cadence with CADENCE_TRANSPORTS=tcp.  "
    "Cells: median [min–max] over the repetitions, each the mean over OSU's iteration counts "
    "after a warm-up (tools/bench/README.md).")


def write_fabrics(res, out, failures, header):
    """fabrics.md: every point of the fabric benchmarks, each row's median
    [min-max] over the launches, cadence-ucx / mpich and cadence-tcp /
    cadence-ofi (what the goals compare), the fabric goals and whether they
    are met, the per-iteration median / p99, the runs that failed."""
    verdicts = {k: v for k, v in check(res).items() if k[1] in FABRICS}
    write_table(os.path.join(out, "fabrics.md"), res, verdicts,
                [f for f in failures if f[0] in FABRICS], header, "fabrics", cols=FABRIC_MPIS,
                ratios=FABRIC_RATIOS, spread=FABRIC_MPIS)


UDP_READING = (
    "Every row on loopback, shared memory off: cadence-tcp = Cadence with "
    "CADENCE_TRANSPORTS=tcp; cadence-udp = with CADENCE_TRANSPORTS=udp; cadence-udp-loss1 = "
    "the same with CADENCE_UDP_FAULTS=drop=0.01,seed=1 (1% of the datagrams dropped on "
    "receive, acknowledgements included).  Progress thread on (the default).  Cells: median "
    "[min–max] over the repetitions, each the mean over OSU's iteration counts after a "
    "warm-up (tools/bench/README.md).")


def write_udp(res, out, failures, header):
    """udp.md: every point of the UDP benchmarks, udp / tcp and loss1 /
    udp (what the goals compare), the goals and whether they are met."""
    verdicts = {k: v for k, v in check(res).items() if k[1] in UDP}
    write_table(os.path.join(out, "udp.md"), res, verdicts, [f for f in failures if f[0] in UDP],
                header, "udp", cols=UDP_MPIS, ratios=UDP_RATIOS, spread=UDP_MPIS)


def task_series(res, c, stat="ratio"):
    """{title: medians of stat over TASK_RANKS at 1 MiB} of task_<c>: one
    series per MPI and form."""
    series = {}
    for f, form in (("t", "threads"), ("p", "processes")):
        benches = [f"task_{c}-{f}{n}" for n in TASK_RANKS]
        for m in sorted({m for b in benches if b in res.benches for m in res.mpis[b]}):
            vals = [res.median(b, m, MIB, stat) if b in res.benches else None for b in benches]
            if any(v is not None for v in vals):
                series[f"{m}, {form}"] = vals
    return series


def plot_tasks(res, out):
    """taskbench's runs as seed 001's figures: T_ovrl / max(T_comm, T_comp)
    and T_ovrl at 1 MiB over the ranks, one line per MPI and form
    (task_<coll>.png, task_<coll>_ovrl.png), and tasks.md: the 1 MiB table
    (medians over the launches)."""
    if not any(b in res.benches for b in TASKS):
        return
    for c in TASK_COLLS:
        series = task_series(res, c)
        if series:
            lines_plot(os.path.join(out, f"task_{c}.png"),
                       f"MPI_{c.capitalize()} of 1 MiB: T_ovrl / max(T_comm, T_comp) "
                       "(1 = full overlap, 2 = none)", "ratio (median of launches)",
                       [str(n) for n in TASK_RANKS], series, logy=False, xlabel="ranks")
        series = task_series(res, c, "t_ovrl")
        if series:
            lines_plot(os.path.join(out, f"task_{c}_ovrl.png"),
                       f"MPI_{c.capitalize()} of 1 MiB: T_ovrl (start, computation of T_comm, wait)",
                       "us (median of launches)", [str(n) for n in TASK_RANKS], series,
                       xlabel="ranks")
    lines = ["| collective | ranks | form | MPI | T_comm us | T_comp us | T_ovrl us | overlap % "
             "| T_ovrl / max |", "|---|---|---|---|---|---|---|---|---|"]
    for c in TASK_COLLS:
        for n in TASK_RANKS:
            for f, form in (("t", "threads"), ("p", "processes")):
                b = f"task_{c}-{f}{n}"
                for m in res.mpis.get(b, []):
                    vals = [res.median(b, m, MIB, st)
                            for st in ("t_comm", "t_comp", "t_ovrl", "overlap", "ratio")]
                    if vals[0] is None:
                        continue
                    lines.append(f"| MPI_{c.capitalize()} | {n} | {form} | {m} | " +
                                 " | ".join(fmt(v) for v in vals) + " |")
    with open(os.path.join(out, "tasks.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def lines_plot(png, title, ylabel, xlabels, series, logy=None, xlabel="size"):
    """A PNG (gnuplot) with one line per series ({title: values, one per
    x label; None where missing}) over the x labels; a log y axis when logy
    is true, or when it is None and the values span more than a factor of
    100."""
    if shutil.which("gnuplot") is None:
        print("note: gnuplot not installed, no plot (apt-get install gnuplot-nox)")
        return
    names = list(series)
    dat = os.path.splitext(png)[0] + ".dat"
    with open(dat, "w") as f:
        f.write("x " + " ".join(f'"{n}"' for n in names) + "\n")
        for i, x in enumerate(xlabels):
            vals = [series[n][i] for n in names]
            f.write(x.replace(" ", "") + " " +
                    " ".join("NaN" if v is None else f"{v:g}" for v in vals) + "\n")
    values = [v for n in names for v in series[n] if v is not None and v > 0]
    if logy is None:
        logy = bool(values) and max(values) / min(values) > 100
    logy = "set logscale y;" if logy else ""
    lines = ", ".join(f"'{dat}' using 0:{i + 2}:xtic(1) with linespoints title columnhead({i + 2})"
                      for i in range(len(names)))
    script = (f"set terminal png noenhanced size 800,480; set output '{png}'; set key below;"
              f" set title '{title}'; set ylabel '{ylabel}'; set xlabel '{xlabel}';"
              f" set xtics rotate by -45; {logy} plot {lines}")
    subprocess.run(["gnuplot", "-e", script], check=True)


def summarize(name, res, bench, out):
    """Print and write each MPI's median and its ratio to Cadence's (to the
    first MPI's where Cadence's default did not run it: the fabric rows)."""
    stat = table_rows(res, bench)[0][1]
    mpis = res.mpis[bench]
    to = "cadence" if "cadence" in mpis else mpis[0]
    others = [m for m in mpis if m != to]
    unit = res.units[(bench, stat)]
    path = os.path.join(out, f"{name}.ratios.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["size", "stat", "unit"] + mpis + [f"{m}/{to}" for m in others])
        print(f"\n{name} ({stat}, {unit}): median (ratio to {to})")
        for s in sorted(res.sizes[bench]):
            med = {m: res.median(bench, m, s, stat) for m in mpis}
            base = med.get(to)
            ratios = {m: med[m] / base if base and med[m] is not None else None for m in others}
            w.writerow([s, stat, unit] + ["" if med[m] is None else f"{med[m]:.6g}" for m in mpis]
                       + ["" if ratios[m] is None else f"{ratios[m]:.3f}" for m in others])
            cells = [f"{m} {fmt(med[m])}" + (f" ({ratios[m]:.2f}x)" if m in ratios and ratios[m]
                                              else "") for m in mpis]
            where = f"-n {s}" if bench == "startup" else size_text(bench, s)
            print(f"  {where:>8}: " + ", ".join(cells))
    print(f"ratios: {path}")


def machine_note():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def git_rev():
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


def report_header(title, args, reps, rev, load0, wall, gate, loaded, reading=None):
    """The top of a Markdown report of a run: the command, the build, the
    machine's state (loaded: busy processes beside every run, or 0), the
    placement gate and how to read the cells (reading: instead of the
    table's text)."""
    cmd = " ".join(shlex.quote(a) for a in ["tools/bench/compare.py"] + sys.argv[1:])
    return [f"# {title} side by side", "",
            f"Command: `{cmd}`" + (f" (CADENCE_BUILD_ROOT={BUILD})"
                                   if "CADENCE_BUILD_ROOT" in os.environ else ""), "",
            f"Cadence {rev}; {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} "
            f"processing units; load average {load0} before, {machine_note()} after; "
            f"{reps} repetition(s){', quick counts (a smoke test)' if args.quick else ''}"
            f"{f', {loaded} busy processes beside every run' if loaded else ''}; "
            f"wall time {wall / 60:.1f} min.", "",
            f"Cache-line round trip between the two processing units (tools/bench/lockcost.c "
            f"--rtt, ns), before each repetition and at the end: {rtt_note()}.", "",
            f"Two processes copying both ways at once (tools/bench/cmacost.c --both, "
            f"GB/s of both directions at 1 MiB / 4 MiB, the ceiling under bibw there): "
            f"{copy_note()}.", "",
            gate_note(gate), "",
            reading or "Cadence: median [min–max] over the repetitions; the others: median. "
            "Every point is the mean over OSU's iteration counts after a warm-up "
            "(tools/bench/README.md); 'better' is the better of MPICH and Open MPI.", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benches", nargs="*")
    ap.add_argument("--reps", type=int, default=0, help="repetitions (default 3; 1 with --quick)")
    ap.add_argument("--out", default="",
                    help="output directory (default build/bench; build/bench/part for `part`)")
    ap.add_argument("--quick", action="store_true", help="counts / 20, one repetition")
    ap.add_argument("--nothread", action="store_true",
                    help="also run Cadence without its progress thread")
    ap.add_argument("--again", action="store_true",
                    help=f"also run Cadence's default configuration a second time as {AGAIN}")
    ap.add_argument("--contexts", type=int, default=0,
                    help="also run Cadence with CADENCE_PROGRESS_CONTEXTS=N (cadence-ctxN)")
    ap.add_argument("--load", type=int, default=0, help="busy processes during the runs")
    ap.add_argument("--gate-rtt", type=float, default=-1,
                    help="run a bench's round again when the cache-line round trip exceeds this "
                    "many ns (default 120 in table mode, else 0: off)")
    ap.add_argument("--mpis", default="", help="comma-separated MPIs to run (default: all found)")
    ap.add_argument("--check", action="store_true", help="evaluate the goals; exit 1 if one is missed")
    ap.add_argument("--from", dest="from_csv", default="",
                    help="a table run's CSV (e.g. DIR/table.csv) to check or tabulate "
                    "instead of running")
    ap.add_argument("--across", nargs="+", default=[], metavar="CSV",
                    help="several table runs' CSVs: how many of them missed each goal "
                    "(exit 1 when one is missed in every run)")
    args = ap.parse_args()
    if args.across:
        return check_across(args.across)
    benches = args.benches or ["table"]
    table = benches == ["table"]
    # `part`: the partitioned benchmarks as a table run of their own
    part = benches == ["part"]
    if args.from_csv:
        res = Results(read_csv(args.from_csv))
        only_part = bool(res.benches) and all(b in PART for b in res.benches)
        args.out = args.out or os.path.join(BUILD, "bench", *(["part"] if only_part else []))
        os.makedirs(args.out, exist_ok=True)
        if bool(res.benches) and all(b in FABRICS for b in res.benches):
            write_fabrics(res, args.out, [], [f"# Fabrics (from {args.from_csv})", "",
                                              FABRIC_READING, ""])
        elif bool(res.benches) and all(b in UDP for b in res.benches):
            write_udp(res, args.out, [], [f"# UDP (from {args.from_csv})", "", UDP_READING, ""])
        elif args.benches in (["table"], ["part"]) or not args.check:
            write_table(os.path.join(args.out, "table.md"), res, check(res), [],
                        [f"# Cadence, MPICH and Open MPI (from {args.from_csv})", ""])
        return report_check(check(res)) if args.check else 0
    args.out = args.out or os.path.join(BUILD, "bench", *(["part"] if part else []))
    os.makedirs(args.out, exist_ok=True)
    table_csv = os.path.join(args.out, "table.csv")

    fabrics = any(b in FABRICS or b == "fabrics" for b in benches)
    udp = any(b in UDP or b == "udp" for b in benches)
    found = with_fabrics(available()) if fabrics else available()
    mpis = chosen(with_udp(found) if udp else found, args.mpis, table or args.nothread)
    if args.again:
        mpis = with_again(mpis)
    if args.contexts > 1:
        mpis = with_contexts(mpis, args.contexts)
    if any(b in TASKS or b == "tasks" for b in benches):
        mpis = with_noshare(mpis)
    reps = args.reps or (1 if args.quick else 3)
    if table:
        names = TABLE + (["latency-load"] if args.load else [])
    elif part:
        names = GROUPS["part"]
    else:
        names = [b for name in benches for b in GROUPS.get(name, [name])]
        for b in names:
            if b not in BENCHES:
                raise SystemExit(f"unknown benchmark {b}; known: {', '.join(BENCHES)}, "
                                 f"{', '.join(GROUPS)}, table")
    t0, load0, rev = time.time(), machine_note(), git_rev()
    gate = args.gate_rtt if args.gate_rtt >= 0 else (120 if table and not args.quick else 0)
    rows, failures = run_benches(names, mpis, reps, args.quick, args.load,
                                 ["latency-load"] if table else None, gate)
    wall = time.time() - t0
    res = Results(rows)
    if table or part:
        write_csv(table_csv, rows)
        title = "Partitioned communication: Cadence, MPICH and Open MPI" if part else \
            "Cadence, MPICH and Open MPI"
        header = report_header(title, args, reps, rev, load0, wall, gate,
                               args.load if part else 0)
        verdicts = check(res)
        write_table(os.path.join(args.out, "table.md"), res, verdicts, failures, header)
        for bench in res.benches:
            plot(bench, res, bench, args.out)
        for t in same_build_report(res) if AGAIN in res.all_mpis else []:
            print(t)
        print(f"wall time {wall:.0f} s")
        return report_check(verdicts) if args.check else 0
    suffix = f"-load{args.load}" if args.load else ""
    for bench in res.benches:
        name = bench + suffix
        write_csv(os.path.join(args.out, f"{name}.csv"), [r for r in rows if r["bench"] == bench])
        summarize(name, res, bench, args.out)
        plot(name, res, bench, args.out)
    plot_threads(res, args.out)
    plot_threadcomm(res, args.out)
    plot_tasks(res, args.out)
    if any(b in RMA for b in names):
        write_rma(res, args.out, failures,
                  report_header("One-sided communication: Cadence, MPICH and Open MPI", args, reps,
                                rev, load0, wall, gate, args.load))
    if fabrics:
        write_fabrics(res, args.out, failures, report_header(
            "Fabrics: Cadence over UCX, MPICH over UCX, Cadence over OFI and over TCP", args,
            reps, rev, load0, wall, gate, args.load, FABRIC_READING))
    if udp:
        write_udp(res, args.out, failures, report_header(
            "UDP: Cadence over UDP, without and with 1% loss, and over TCP", args, reps, rev,
            load0, wall, gate, args.load, UDP_READING))
    for b, m, r, e in failures:
        print(f"FAILED {b} {m} rep {r}: {e}")
    if args.check:
        return report_check(check(res))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
