#!/usr/bin/python3
"""Run Cadence, Debian's MPICH and Debian's Open MPI side by side.

    tools/bench/compare.py [--reps N] [--out DIR] [BENCH ...]
    tools/bench/compare.py p2p          # latency bw bibw rate overlap
    tools/bench/compare.py pingpong --nothread --load 2

Each benchmark is built with every MPI's own compiler wrapper and run with
its own launcher in the same invocation, alternating between the MPIs on
every repetition so that the noise of this shared machine hits all of them
alike.  Results go to DIR/<bench>.csv (one row per measurement),
DIR/<bench>.ratios.csv (medians and each MPI's ratio to Cadence) and
DIR/<bench>.png when gnuplot is installed; the summary printed at the end
gives the same medians and ratios -- compare ratios, not absolute times.

Benchmarks:
  startup   wall time of `<launcher> -n 2 hello` (examples/hello.c)
  pack      pack_bench.c: MPI_Pack of a strided vector vs memcpy (ratio)
  latency   p2pbench.c, 2 ranks: ping-pong half round trip (us)
  pingpong  p2pbench.c: blocking ping-pong 1-256 KiB, every round trip timed
            after a warm-up: mean, median and p99 per size (us)
  bw, bibw  p2pbench.c: uni- and bidirectional bandwidth, windows of 64 (MB/s)
  rate      p2pbench.c: 8-byte message rate (msg/s)
  overlap   p2pbench.c: Isend/Irecv + compute + Wait against the parts (%)
  p2p       all five p2pbench tests
  latency-tcp, bw-tcp, bibw-tcp
            the same over TCP on loopback with shared memory off for all
            three (TCP_ONLY below: Cadence CADENCE_TRANSPORTS=tcp; MPICH,
            Debian's ch4:ucx, MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self; Open MPI
            --mca pml ob1 --mca btl tcp,self)
  tcp       the three TCP benchmarks
  coll-overlap     collbench.c, 2 ranks: OSU overlap of Iallreduce, Ibcast,
                   Ialltoall at 64 KiB and 1 MiB (%)
  coll-otimes      the overall, compute and pure-communication times behind it (us)
  coll-persistent  MPI_Allreduce_init+Start/Wait vs MPI_Iallreduce+Wait
                   vs blocking MPI_Allreduce,
                   8..4096 bytes (us per operation; init rows only for MPI >= 4)
  coll      the three collbench tests

Options:
  --nothread  also run Cadence with CADENCE_PROGRESS_THREADS=0 (as
              "cadence-nothread"): what the progress thread costs or gains
  --load N    N busy processes spin (nice 0, unbound) during every run: the
              cores are busy, as under a loaded CI machine or an
              oversubscribed job
  --mpis A,B  only these MPIs (names as printed, e.g. cadence,mpich)

An MPI whose compiler wrapper or launcher is missing is left out with a note
(tools/setup-deps.sh --bench installs MPICH and Open MPI).
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CADENCE_BUILD_ROOT", os.path.join(ROOT, "build"))

# name, compiler wrapper, launcher argv prefix, extra environment
MPIS = [
    ("cadence", os.path.join(BUILD, "tools", "mpicc"), [os.path.join(BUILD, "tools", "mpirun")], {}),
    ("mpich", "mpicc.mpich", ["mpiexec.mpich"], {}),
    ("openmpi", "mpicc.openmpi", ["mpirun.openmpi", "--oversubscribe"],
     {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
      "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}),
]


# Per-MPI launcher arguments and environment that take shared memory away
# and leave TCP.  Debian's MPICH 4.0 is ch4:ucx: NOLOCAL makes ch4 treat
# every rank as remote (no posix shmmod), UCX_TLS leaves UCX only tcp.
TCP_ONLY = {
    "cadence": ([], {"CADENCE_TRANSPORTS": "tcp"}),
    "mpich": ([], {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self"}),
    "openmpi": (["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"], {}),
}


def available():
    found = []
    for name, cc, launcher, env in MPIS:
        if shutil.which(cc) is None or shutil.which(launcher[0]) is None:
            print(f"note: {name} left out ({cc} or {launcher[0]} not found)", file=sys.stderr)
            continue
        found.append((name, cc, launcher, env))
    return found


def cc_tag(cc):
    """A file-name-safe tag of a compiler wrapper: variants of one MPI share
    its binary."""
    return os.path.basename(cc).replace(".", "_")


def start_load(n):
    """n processes that spin until stopped (stop_load)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_load(procs):
    for p in procs:
        p.kill()
        p.wait()


def build(cc, source, exe):
    subprocess.run([cc, "-O2", source, "-o", exe], check=True)


def bench_startup(mpis, reps, tmp):
    """Seconds from launcher start to exit of a 2-rank hello job."""
    hello = os.path.join(ROOT, "examples", "hello.c")
    exes = {}
    for name, cc, launcher, env in mpis:
        exes[name] = os.path.join(tmp, f"hello.{name}")
        build(cc, hello, exes[name])
    rows = []
    for rep in range(reps + 1):  # the first round warms caches and is dropped
        for name, cc, launcher, env in mpis:
            t0 = time.perf_counter()
            r = subprocess.run(launcher + ["-n", "2", exes[name]], env={**os.environ, **env},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
            dt = time.perf_counter() - t0
            if r.returncode != 0:
                raise SystemExit(f"{name}: hello failed: {r.stderr.decode(errors='replace')}")
            if rep > 0:
                rows.append({"mpi": name, "param": "n=2", "rep": rep, "value": dt, "unit": "s"})
    return rows


def program_bench(source, nprocs, args, fields=None, variant=None):
    """A C benchmark printing CSV rows "param,value[,unit]"-like records.

    fields: the column names when the program prints no header; rows are
    kept when their first column equals args[0] (p2pbench prints
    "test,bytes,value,unit").  With a header, param/value/unit columns are
    read by name from it (pack_bench prints "block_bytes,...,ratio").
    variant: per-MPI (launcher arguments, environment) added to each run."""
    def run(mpis, nreps, tmp):
        exes = {}
        for name, cc, launcher, env in mpis:
            exes[name] = os.path.join(tmp, f"{os.path.basename(source)}.{cc_tag(cc)}")
            if not os.path.exists(exes[name]):
                build(cc, os.path.join(ROOT, "tools", "bench", source), exes[name])
        rows = []
        for rep in range(1, nreps + 1):
            for name, cc, launcher, env in mpis:
                # a Cadence variant ("cadence-nothread") takes Cadence's settings
                extra_args, extra_env = (variant or {}).get(name.split("-")[0], ([], {}))
                r = subprocess.run(launcher + extra_args + ["-n", str(nprocs), exes[name]] + args,
                                   env={**os.environ, **env, **extra_env}, capture_output=True,
                                   text=True, timeout=900)
                if r.returncode != 0:
                    raise SystemExit(f"{name}: {source} {' '.join(args)} failed: {r.stderr}")
                lines = r.stdout.splitlines()
                if fields:
                    table = [dict(zip(fields, l.split(","))) for l in lines
                             if l.startswith(args[0] + ",")]
                else:
                    table = [{"param": row["block_bytes"], "value": row["ratio"],
                              "unit": "x memcpy"} for row in csv.DictReader(lines)]
                rows += [{"mpi": name, "param": row["param"], "rep": rep,
                          "value": float(row["value"]), "unit": row["unit"]} for row in table]
        return rows
    return run


def p2p(test, variant=None):
    return program_bench("p2pbench.c", 2, [test], ["test", "param", "value", "unit"], variant)


def coll(test):
    return program_bench("collbench.c", 2, [test], ["test", "param", "value", "unit"])


BENCHES = {
    "startup": bench_startup,
    "pack": program_bench("pack_bench.c", 1, ["pack"]),
    "latency": p2p("latency"),
    "pingpong": p2p("pingpong"),
    "bw": p2p("bw"),
    "bibw": p2p("bibw"),
    "rate": p2p("rate"),
    "overlap": p2p("overlap"),
    "latency-tcp": p2p("latency", TCP_ONLY),
    "bw-tcp": p2p("bw", TCP_ONLY),
    "bibw-tcp": p2p("bibw", TCP_ONLY),
    "coll-overlap": coll("overlap"),
    "coll-otimes": coll("otimes"),
    "coll-persistent": coll("persistent"),
}
GROUPS = {"p2p": ["latency", "bw", "bibw", "rate", "overlap"],
          "tcp": ["latency-tcp", "bw-tcp", "bibw-tcp"],
          "coll": ["coll-overlap", "coll-otimes", "coll-persistent"]}
DEFAULT_REPS = {"startup": 20}


def medians(rows):
    params = sorted({r["param"] for r in rows}, key=lambda p: (len(p), p))
    mpis = list(dict.fromkeys(r["mpi"] for r in rows))
    # a point an MPI does not measure (e.g. MPI-4 calls in an MPI-3 library) is NaN
    med = {}
    for m in mpis:
        for p in params:
            vals = [r["value"] for r in rows if r["mpi"] == m and r["param"] == p]
            med[(m, p)] = statistics.median(vals) if vals else float("nan")
    return params, mpis, med


def summarize(bench, rows, out):
    """Print and write each MPI's median and its ratio to Cadence's."""
    params, mpis, med = medians(rows)
    unit = rows[0]["unit"]
    others = [m for m in mpis if m != "cadence"]
    path = os.path.join(out, f"{bench}.ratios.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["param", "unit"] + mpis + [f"{m}/cadence" for m in others])
        print(f"\n{bench} ({unit}): median (ratio to cadence)")
        for p in params:
            base = med.get(("cadence", p))
            base = base if base == base else None  # NaN: not measured
            ratios = [med[(m, p)] / base if base else float("nan") for m in others]
            w.writerow([p, unit] + [f"{med[(m, p)]:.6g}" for m in mpis] +
                       [f"{x:.3f}" for x in ratios])
            cells = [f"cadence {med[('cadence', p)]:.4g}"] + [f"{m} {med[(m, p)]:.4g} ({x:.2f}x)"
                                                for m, x in zip(others, ratios)]
            print(f"  {p:>12}: " + ", ".join(cells))
    print(f"ratios: {path}")
    return params, mpis, med


def plot(bench, rows, params, mpis, med, out):
    """One line per MPI through its medians (gnuplot, PNG)."""
    if shutil.which("gnuplot") is None:
        print("note: gnuplot not installed, no plot (apt-get install gnuplot-nox)")
        return
    dat = os.path.join(out, f"{bench}.dat")
    with open(dat, "w") as f:
        f.write("param " + " ".join(mpis) + "\n")
        for i, p in enumerate(params):
            f.write(f"{p} " + " ".join(f"{med[(m, p)]:g}" for m in mpis) + "\n")
    values = [v for v in med.values() if v > 0]  # NaN compares false: left out
    logy = "set logscale y;" if values and max(values) / min(values) > 100 else ""
    png = os.path.join(out, f"{bench}.png")
    lines = ", ".join(f"'{dat}' using 0:{i + 2}:xtic(1) with linespoints title '{m}'"
                      for i, m in enumerate(mpis))
    script = (f"set terminal png size 800,450; set output '{png}'; set key autotitle columnhead;"
              f" set title '{bench}'; set ylabel '{rows[0]['unit']} (median)';"
              f" set xtics rotate by -45; {logy} plot {lines}")
    subprocess.run(["gnuplot", "-e", script], check=True)
    print(f"plot: {png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benches", nargs="*", default=list(BENCHES))
    ap.add_argument("--reps", type=int, default=0,
                    help="repetitions (default: 20 for startup, 3 for the rest)")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench"))
    ap.add_argument("--nothread", action="store_true",
                    help="also run Cadence without its progress thread")
    ap.add_argument("--load", type=int, default=0, help="busy processes during the runs")
    ap.add_argument("--mpis", default="", help="comma-separated MPIs to run (default: all found)")
    args = ap.parse_args()
    mpis = available()
    if args.nothread:
        base = next((m for m in mpis if m[0] == "cadence"), None)
        if base is not None:
            mpis.insert(1, ("cadence-nothread", base[1], base[2],
                            {**base[3], "CADENCE_PROGRESS_THREADS": "0"}))
    if args.mpis:
        keep = args.mpis.split(",")
        mpis = [m for m in mpis if m[0] in keep or m[0] == "cadence"]
    if not any(m[0] == "cadence" for m in mpis):
        raise SystemExit("Cadence is not built: run ./quickstart.sh first")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        benches = [b for name in args.benches for b in GROUPS.get(name, [name])]
        for bench in benches:
            if bench not in BENCHES:
                raise SystemExit(f"unknown benchmark {bench}; known: {', '.join(BENCHES)}")
            load = start_load(args.load)
            try:
                rows = BENCHES[bench](mpis, args.reps or DEFAULT_REPS.get(bench, 3), tmp)
            finally:
                stop_load(load)
            name = bench + (f"-load{args.load}" if args.load else "")
            path = os.path.join(args.out, f"{name}.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["mpi", "param", "rep", "value", "unit"])
                w.writeheader()
                w.writerows(rows)
            print(f"csv: {path}")
            params, names, med = summarize(name, rows, args.out)
            plot(name, rows, params, names, med, args.out)


if __name__ == "__main__":
    main()
