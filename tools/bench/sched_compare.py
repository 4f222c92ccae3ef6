#!/usr/bin/python3
"""Seed 000's experiments (user-level schedules) with Cadence, Debian's MPICH
and Debian's Open MPI side by side.

    tools/bench/sched_compare.py [--reps N] [--quick] [--check] [--mpis A,B] [--out DIR]
    tools/bench/sched_compare.py --from build/bench/sched.csv [--check]

Builds schedbench.c with each MPI's compiler wrapper and runs, alternating
between the MPIs on every repetition (the order rotates) as compare.py does:

  sbcast-n2   Fig. 7 at 2 ranks: the user-built binomial broadcast started
              N = 10, 50, 100, 1000 times back to back against MPI_Bcast
              called as often, 8 B - 1 MiB; the figure is the schedule's time
              as a % of MPI_Bcast's
  sbcast-n4   the same at 4 ranks, 8 B, 64 KiB, 1 MiB, N = 10, 50, 100:
              100 broadcasts per N after 10
  sbcast-n8   8 ranks, 8 B, 64 KiB, 1 MiB, N = 10, 50, 100: 30 broadcasts
              per N (N for N > 30) after 4
              (4 and 8 ranks oversubscribe this 2-core machine, where MPICH
              spins: 5-45 ms per broadcast, so N = 1000 only at 2 ranks)
  free        Fig. 8 at 2 ranks: the free time of the broadcast, 4 KiB - 1 MiB
  free_poll   the same written as the user-rounds polling loop on every MPI
  create-nP   creating + committing the broadcast's schedule, P = 2, 4, 8

Cadence runs MPIX_Schedule; MPICH and Open MPI have none and run the same
persistent requests round by round from the application ("user rounds",
with MPI_Test polling in the compute loop for Fig. 8): the tables and
plots say which.  Writes DIR/sched.csv (every measurement), DIR/sched.md
(medians over the repetitions; Cadence's with [min-max]; the goals) and
DIR/sched-fig7-nP.png, DIR/sched-fig8.png (gnuplot).

Goals (Cadence): free time (outside MPI calls) >= 98% at 64 KiB - 1 MiB;
creation + commit
< 1 ms.  --check exits 1 when one is missed.  --quick: every count / 20,
fewer sizes at 8 ranks, one repetition: a smoke test, not a measurement.
"""
import argparse
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import KIB, MIB, Bench, fmt, human_size  # noqa: E402

RANKS = [2, 4, 8]
QUICK_OVERSUBSCRIBED = ["-q", "-s", "8,1048576", "-c", "10"]
BENCHES = {
    "sbcast-n2": Bench("schedbench.c", "sbcast"),
    # oversubscribed (2 cores): MPICH spins, at 5-45 ms per broadcast
    "sbcast-n4": Bench("schedbench.c", "sbcast", nprocs=4,
                       args=["-s", "8,65536,1048576", "-c", "10,50,100", "-i", "100", "-x", "10"],
                       quick_args=QUICK_OVERSUBSCRIBED, timeout=400),
    "sbcast-n8": Bench("schedbench.c", "sbcast", nprocs=8,
                       args=["-s", "8,65536,1048576", "-c", "10,50,100", "-i", "30", "-x", "4"],
                       quick_args=QUICK_OVERSUBSCRIBED, timeout=400),
    "free": Bench("schedbench.c", "free"),
    "free_poll": Bench("schedbench.c", "free_poll"),
    **{f"create-n{n}": Bench("schedbench.c", "create", nprocs=n) for n in RANKS},
}
FREE = ["free", "free_poll"]
# (label, bench, sizes, stat, op, limit)
GOALS = [
    (">= 98% free time", "free", (64 * KIB, MIB), "free", "ge", 98.0),
    *[("< 1 ms creation + commit", f"create-n{n}", None, "mean", "le", 1000.0) for n in RANKS],
]
KIND = {1: "MPIX_Schedule", 0: "user rounds"}


def kind_of(res, bench, mpi):
    v = res.median(bench, mpi, 0, "kind")
    return KIND.get(int(v)) if v is not None else None


def label(res, bench, mpi):
    k = kind_of(res, bench, mpi)
    return f"{mpi} ({k})" if k else mpi


def counts_of(res, bench):
    """The N of a Fig. 7 bench's pct_nN rows, ascending."""
    return sorted({int(k[3][len("pct_n"):]) for k in res.stats
                   if k[0] == bench and k[3].startswith("pct_n")})


def sizes_of(res, bench):
    return sorted(s for s in res.sizes.get(bench, ()) if s > 0)


def cell(res, bench, mpi, size, stat):
    """Cadence: median [min-max]; the others: the median."""
    s = res.stats.get((bench, mpi, size, stat))
    if s is None:
        return "—"
    return f"{fmt(s[0])} [{fmt(s[1])}–{fmt(s[2])}]" if mpi == "cadence" else fmt(s[0])


def check(res):
    """[(verdict, text)] for every goal point."""
    out = []
    for lbl, bench, sizes, stat, op, limit in GOALS:
        points = [s for s in sizes_of(res, bench)
                  if sizes is None or sizes[0] <= s <= sizes[1]] or [None]
        for s in points:
            v = res.median(bench, "cadence", s, stat) if s is not None else None
            where = f"{lbl}: {bench}" + (f" {human_size(s)}" if bench.startswith("free") else "")
            if v is None:
                out.append(("not checked", f"{where}: no Cadence result"))
                continue
            ok = v >= limit if op == "ge" else v < limit
            out.append(("met" if ok else "missed",
                        f"{where}: cadence {fmt(v)} {res.units[(bench, stat)]}"))
    return out


def fig7_table(res, bench, mpis):
    lines = [f"| size | N | " + " | ".join(label(res, bench, m) for m in mpis) +
             " | cadence schedule / MPI_Bcast (µs) |", "|---|---|" + "---|" * (len(mpis) + 1)]
    for s in sizes_of(res, bench):
        for n in counts_of(res, bench):
            cells = [cell(res, bench, m, s, f"pct_n{n}") for m in mpis]
            times = f"{fmt(res.median(bench, 'cadence', s, f'sched_n{n}'))} / " \
                f"{fmt(res.median(bench, 'cadence', s, f'bcast_n{n}'))}"
            lines.append(f"| {human_size(s)} | {n} | " + " | ".join(cells) + f" | {times} |")
    return lines


def fig8_table(res, bench, mpis):
    lines = [f"| size | " + " | ".join(label(res, bench, m) for m in mpis) +
             " | cadence pure / overall (µs) |", "|---|" + "---|" * (len(mpis) + 1)]
    for s in sizes_of(res, bench):
        cells = [f"{cell(res, bench, m, s, 'free')} / {fmt(res.median(bench, m, s, 'work'))}"
                 f" / {fmt(res.median(bench, m, s, 'overlap'))}" for m in mpis]
        times = f"{fmt(res.median(bench, 'cadence', s, 'mean'))} / " \
            f"{fmt(res.median(bench, 'cadence', s, 'overall'))}"
        lines.append(f"| {human_size(s)} | " + " | ".join(cells) + f" | {times} |")
    return lines


def create_table(res, mpis):
    benches = [f"create-n{n}" for n in RANKS if f"create-n{n}" in res.benches]
    if not benches:
        return []
    lines = ["| ranks | " + " | ".join(label(res, benches[0], m) for m in mpis) + " |",
             "|---|" + "---|" * len(mpis)]
    for b in benches:
        n = b[len("create-n"):]
        cells = [f"{cell(res, b, m, int(n), 'mean')} ({fmt(res.median(b, m, int(n), 'median'))} / "
                 f"{fmt(res.median(b, m, int(n), 'p99'))}; free "
                 f"{fmt(res.median(b, m, int(n), 'release_mean'))})" for m in mpis]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def report(path, res, verdicts, failures, header):
    mpis = [m for m in ["cadence", "mpich", "openmpi"] if m in res.all_mpis]
    lines = header[:]
    for n in RANKS:
        b = f"sbcast-n{n}"
        if b in res.benches:
            lines += [f"## Fig. 7: broadcast as a schedule, % of MPI_Bcast's time, {n} ranks", "",
                      "Median over the repetitions of 100 x (schedule time / MPI_Bcast time) "
                      "for N broadcasts (schedule creation and free included); below 100 the "
                      "schedule is faster.", ""] + fig7_table(res, b, mpis) + [""]
    for b in FREE:
        if b in res.benches:
            what = "what a user writes on each MPI" if b == "free" else \
                "the user-rounds polling loop on every MPI"
            lines += [f"## Fig. 8: free time, 2 ranks ({b}: {what})", "",
                      "free % (outside MPI calls) / work % (computing at full speed) / "
                      "OSU overlap % (tools/bench/README.md).", ""] + \
                fig8_table(res, b, mpis) + [""]
    create = create_table(res, mpis)
    if create:
        lines += ["## Creating the broadcast's schedule (µs)", "",
                  "mean (median / p99; freeing it) per rank: persistent inits, create, "
                  "add, rounds, commit (user rounds: the inits).", ""] + create + [""]
    lines += ["## Goals", ""] + [f"- {v}: {t}" for v, t in verdicts] + [""]
    compare.write_report(path, lines, failures, "report")


def plots(res, out):
    for n in RANKS:
        b = f"sbcast-n{n}"
        if b not in res.benches:
            continue
        sizes, ns = sizes_of(res, b), counts_of(res, b)
        series = {f"{label(res, b, m)} N={c}": [res.median(b, m, s, f"pct_n{c}") for s in sizes]
                  for m in res.mpis[b] for c in sorted({ns[0], ns[-1]})}
        compare.lines_plot(os.path.join(out, f"sched-fig7-n{n}.png"),
                           f"Fig. 7: schedule broadcast / MPI_Bcast, {n} ranks",
                           "% of MPI_Bcast time (median)", [human_size(s) for s in sizes], series)
    if "free" in res.benches:
        sizes = sizes_of(res, "free")
        series = {label(res, "free", m): [res.median("free", m, s, "free") for s in sizes]
                  for m in res.mpis["free"]}
        if "cadence" in res.mpis["free"]:
            series[label(res, "free", "cadence") + " work %"] = \
                [res.median("free", "cadence", s, "work") for s in sizes]
        if "cadence" in res.mpis.get("free_poll", []):
            series[label(res, "free_poll", "cadence") + " + MPI_Test"] = \
                [res.median("free_poll", "cadence", s, "free") for s in sizes]
        compare.lines_plot(os.path.join(out, "sched-fig8.png"), "Fig. 8: free time, 2 ranks",
                           "% of the duration (median)", [human_size(s) for s in sizes], series,
                           logy=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=0, help="repetitions (default 3; 1 with --quick)")
    ap.add_argument("--out", default=os.path.join(compare.BUILD, "bench"))
    ap.add_argument("--quick", action="store_true", help="counts / 20, one repetition")
    ap.add_argument("--mpis", default="", help="comma-separated MPIs to run (default: all found)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    ap.add_argument("--from", dest="from_csv", default="",
                    help="a finished run's CSV to tabulate instead of running")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    report_md = os.path.join(args.out, "sched.md")
    if args.from_csv:
        rows, failures = compare.read_csv(args.from_csv), []
        header = [f"# Seed 000's experiments (from {args.from_csv})", ""]
    else:
        mpis = compare.chosen(compare.available(), args.mpis)
        reps = args.reps or (1 if args.quick else 3)
        compare.BENCHES.update(BENCHES)
        t0, load0, rev = time.time(), compare.machine_note(), compare.git_rev()
        rows, failures = compare.run_benches(list(BENCHES), mpis, reps, args.quick, 0)
        wall = time.time() - t0
        compare.write_csv(os.path.join(args.out, "sched.csv"), rows)
        cmd = " ".join(shlex.quote(a) for a in ["tools/bench/sched_compare.py"] + sys.argv[1:])
        header = ["# Seed 000's experiments: Cadence, MPICH and Open MPI side by side", "",
                  f"Command: `{cmd}`", "",
                  f"Cadence {rev}; {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} "
                  f"processing units; load average {load0} before, {compare.machine_note()} "
                  f"after; {reps} repetition(s)"
                  f"{', quick counts (a smoke test)' if args.quick else ''}; "
                  f"wall time {wall / 60:.1f} min.", ""]
    res = compare.Results(rows)
    verdicts = check(res)
    report(report_md, res, verdicts, failures, header)
    plots(res, args.out)
    for v, t in verdicts:
        if v != "met":
            print(f"{v.upper():12} {t}")
    print(f"goals: {sum(v == 'met' for v, _ in verdicts)} met, "
          f"{sum(v == 'missed' for v, _ in verdicts)} missed, "
          f"{sum(v == 'not checked' for v, _ in verdicts)} not checked")
    for b, m, r, e in failures:
        print(f"FAILED {b} {m} rep {r}: {e}")
    if args.check and any(v == "missed" for v, _ in verdicts):
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
