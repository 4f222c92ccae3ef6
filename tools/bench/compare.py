#!/usr/bin/python3
"""Run Cadence, Debian's MPICH and Debian's Open MPI side by side.

    tools/bench/compare.py [--reps N] [--out DIR] [BENCH ...]

Each benchmark is built with every MPI's own compiler wrapper and run with
its own launcher in the same invocation, alternating between the MPIs on
every repetition so that the noise of this shared machine hits all of them
alike.  Results go to DIR/<bench>.csv (one row per measurement) and
DIR/<bench>.png when matplotlib is installed; the summary printed at the end
gives each MPI's median and its ratio to Cadence's -- compare ratios, not
absolute times.

Benchmarks:
  startup   wall time of `<launcher> -n 2 hello` (examples/hello.c)
  pack      pack_bench.c: MPI_Pack of a strided vector vs memcpy (ratio)

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


def available():
    found = []
    for name, cc, launcher, env in MPIS:
        if shutil.which(cc) is None or shutil.which(launcher[0]) is None:
            print(f"note: {name} left out ({cc} or {launcher[0]} not found)", file=sys.stderr)
            continue
        found.append((name, cc, launcher, env))
    return found


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


def program_bench(source, nprocs, param_col, value_col, unit):
    """A C benchmark printing CSV (header first); one row per param."""
    def run(mpis, reps, tmp):
        exes = {}
        for name, cc, launcher, env in mpis:
            exes[name] = os.path.join(tmp, f"{os.path.basename(source)}.{name}")
            build(cc, os.path.join(ROOT, "tools", "bench", source), exes[name])
        rows = []
        for rep in range(1, reps + 1):
            for name, cc, launcher, env in mpis:
                r = subprocess.run(launcher + ["-n", str(nprocs), exes[name], name],
                                   env={**os.environ, **env}, capture_output=True, text=True,
                                   timeout=600)
                if r.returncode != 0:
                    raise SystemExit(f"{name}: {source} failed: {r.stderr}")
                table = list(csv.DictReader(r.stdout.splitlines()))
                rows += [{"mpi": name, "param": row[param_col], "rep": rep,
                          "value": float(row[value_col]), "unit": unit} for row in table]
        return rows
    return run


BENCHES = {
    "startup": bench_startup,
    "pack": program_bench("pack_bench.c", 1, "block_bytes", "ratio", "x memcpy"),
}


def summarize(bench, rows):
    params = sorted({r["param"] for r in rows}, key=lambda p: (len(p), p))
    mpis = list(dict.fromkeys(r["mpi"] for r in rows))
    print(f"\n{bench}: median (ratio to cadence)")
    for p in params:
        med = {m: statistics.median(r["value"] for r in rows if r["mpi"] == m and r["param"] == p)
               for m in mpis}
        base = med.get("cadence")
        cells = []
        for m in mpis:
            unit = next(r["unit"] for r in rows if r["mpi"] == m)
            ratio = f" ({med[m] / base:.2f}x)" if base else ""
            cells.append(f"{m} {med[m]:.4g} {unit}{ratio}")
        print(f"  {p:>12}: " + ", ".join(cells))
    return params, mpis


def plot(bench, rows, params, mpis, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib not installed, no plot (apt-get install python3-matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(len(mpis), 1)
    for i, m in enumerate(mpis):
        meds = [statistics.median(r["value"] for r in rows if r["mpi"] == m and r["param"] == p)
                for p in params]
        ax.bar([x + i * width for x in range(len(params))], meds, width, label=m)
    ax.set_xticks([x + width * (len(mpis) - 1) / 2 for x in range(len(params))], params)
    ax.set_ylabel(rows[0]["unit"] + " (median)")
    ax.set_title(bench)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, f"{bench}.png")
    fig.savefig(path)
    print(f"plot: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benches", nargs="*", default=list(BENCHES))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(BUILD, "bench"))
    args = ap.parse_args()
    mpis = available()
    if not any(m[0] == "cadence" for m in mpis):
        raise SystemExit("Cadence is not built: run ./quickstart.sh first")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for bench in args.benches:
            if bench not in BENCHES:
                raise SystemExit(f"unknown benchmark {bench}; known: {', '.join(BENCHES)}")
            rows = BENCHES[bench](mpis, args.reps, tmp)
            path = os.path.join(args.out, f"{bench}.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["mpi", "param", "rep", "value", "unit"])
                w.writeheader()
                w.writerows(rows)
            print(f"csv: {path}")
            params, names = summarize(bench, rows)
            plot(bench, rows, params, names, args.out)


if __name__ == "__main__":
    main()
