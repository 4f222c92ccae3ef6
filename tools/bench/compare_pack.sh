#!/bin/sh
# Run pack_bench.c under Cadence, Debian's MPICH and (if installed) Debian's
# Open MPI, one after the other, and write one CSV (and a PNG plot when
# gnuplot is installed).  Never part of the test suite; no timing asserted.
#
# Usage: tools/bench/compare_pack.sh [build-dir] [out-dir]   (defaults: build, bench-out)
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
build=$(cd "${1:-build}" && pwd -P) || exit 1
out=${2:-bench-out}
mkdir -p "$out"
csv=$out/pack.csv
: >"$csv"
header=1

run() {  # label compiler [runner...]
    label=$1 cc=$2
    shift 2
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "skip $label: $cc not found"
        return
    fi
    "$cc" -O2 -o "$out/pack_bench.$label" "$here/pack_bench.c" || { echo "skip $label: build failed"; return; }
    if ! env -u LD_LIBRARY_PATH timeout 300 "$@" "$out/pack_bench.$label" "$label" >"$out/$label.csv"; then
        echo "skip $label: run failed"
        return
    fi
    if [ $header -eq 1 ]; then cat "$out/$label.csv"; header=0; else tail -n +2 "$out/$label.csv"; fi >>"$csv"
    echo "$label: done"
}

run cadence "$build/tools/mpicc"
run mpich mpicc.mpich
run openmpi mpicc.openmpi
echo "wrote $csv"
column -s, -t "$csv" 2>/dev/null || cat "$csv"

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<GP && echo "wrote $out/pack.png"
set terminal png size 800,500
set output "$out/pack.png"
set datafile separator ","
set logscale x 2
set xlabel "vector block (bytes)"
set ylabel "pack time / memcpy time (inverse ratio)"
set key left top
plot for [m in "cadence mpich openmpi"] "< grep '^".m.",' $csv" using 2:(1/\$6) with linespoints title m
GP
fi
