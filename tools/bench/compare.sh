#!/bin/sh
# Build tools/bench/p2pbench.c against Cadence, Debian's MPICH and Debian's
# Open MPI, run each on 2 ranks of this machine one after the other (same
# run, same load), and write:
#   OUT/results.csv   impl,test,bytes,value,unit
#   OUT/ratios.csv    test,bytes,unit,cadence,mpich,openmpi,cadence/mpich,cadence/openmpi
#   OUT/*.png         plots, when gnuplot is installed
# Usage: tools/bench/compare.sh [BUILD_DIR [OUT_DIR [TEST]]]
#   TEST: all (default), latency, bw, bibw, rate, overlap
# Never run by the test suite: timings are not assertions.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
build=${1:-$src/../../build}
out=${2:-bench-out}
what=${3:-all}
mkdir -p "$out"
build=$(cd "$build" && pwd)

impls=""
cc_cadence="$build/tools/mpicc"; run_cadence="$build/tools/mpirun -n 2 --timeout 600"
cc_mpich=mpicc.mpich;           run_mpich="mpiexec.mpich -n 2"
cc_openmpi=mpicc.openmpi;       run_openmpi="mpirun.openmpi -n 2"
[ "$(id -u)" = 0 ] && run_openmpi="$run_openmpi --allow-run-as-root"

echo "impl,test,bytes,value,unit" >"$out/results.csv"
for impl in cadence mpich openmpi; do
    eval cc=\$cc_$impl
    eval run=\$run_$impl
    if ! command -v "${cc%% *}" >/dev/null 2>&1; then
        echo "compare: $impl left out: $cc not found" >&2
        continue
    fi
    "$cc" -O2 -o "$out/p2pbench.$impl" "$src/p2pbench.c" 2>/dev/null
    echo "compare: running $impl" >&2
    $run "$out/p2pbench.$impl" "$what" | grep -E '^[a-z]+,' | sed "s/^/$impl,/" >>"$out/results.csv"
    impls="$impls $impl"
done

python3 - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f'{out}/results.csv')))
table = {}
for r in rows:
    table.setdefault((r['test'], int(r['bytes']), r['unit']), {})[r['impl']] = float(r['value'])
with open(f'{out}/ratios.csv', 'w') as f:
    f.write('test,bytes,unit,cadence,mpich,openmpi,cadence/mpich,cadence/openmpi\n')
    for (test, b, unit), v in sorted(table.items()):
        c, m, o = v.get('cadence'), v.get('mpich'), v.get('openmpi')
        ratio = lambda a, z: f'{a / z:.2f}' if a and z else ''
        fmt = lambda x: '' if x is None else f'{x:g}'
        f.write(f'{test},{b},{unit},{fmt(c)},{fmt(m)},{fmt(o)},{ratio(c, m)},{ratio(c, o)}\n')
PY

if command -v gnuplot >/dev/null 2>&1; then
    for t in latency bw bibw overlap; do
        grep -q ",$t," "$out/results.csv" || continue
        plot=""
        for impl in $impls; do
            grep "^$impl,$t," "$out/results.csv" | cut -d, -f3,4 | tr , ' ' >"$out/$t.$impl.dat"
            plot="$plot${plot:+, }'$out/$t.$impl.dat' using 1:2 with linespoints title '$impl'"
        done
        gnuplot -e "set terminal png size 800,500; set output '$out/$t.png'; set logscale x 2; \
            set xlabel 'bytes'; set ylabel '$t'; set key left top; plot $plot"
    done
else
    echo "compare: gnuplot not installed: no plots (apt-get install gnuplot-nox)" >&2
fi
echo "compare: $out/results.csv, $out/ratios.csv" >&2
