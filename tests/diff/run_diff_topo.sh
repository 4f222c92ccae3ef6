#!/bin/sh
# Differential multi-process test: tests/diff/$1 (default diff_topo.c)
# built with Debian's MPICH (mpicc.mpich, run by mpiexec.mpich) and with
# Cadence (build/tools/mpicc, run by build/tools/mpirun), at 1, 2, 3 and 4
# ranks; the sorted outputs must be identical.  $2 names what is compared.
#   diff_topo.c       Dims_create, Cartesian coordinates, shifts and
#                     sub-grids, graph and distributed graph neighbours
#   diff_neighbor.c   neighbourhood collectives on Cartesian topologies
#                     (periodic dimensions of size 1 and 2 among them) and
#                     a distributed graph with repeated edges
#
# Environment: CADENCE_BUILD_ROOT and CADENCE_SOURCE_ROOT (set by test_env_vars
# in tests/meson.build).
# Exit 77 (meson's skip) when MPICH's compiler is missing.
set -u

. "${CADENCE_SOURCE_ROOT:?must name the source tree}/tests/mpich_env.sh"
command -v mpiexec.mpich >/dev/null 2>&1 || { echo "SKIP: mpiexec.mpich not found"; exit 77; }
src=$CADENCE_SOURCE_ROOT/tests/diff/${1:-diff_topo.c}
what=${2:-topology}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cadence-difftopo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

mpicc.mpich -std=c17 -O1 -o "$tmp/mpich" "$src" || { echo "FAIL: mpicc.mpich could not build $src"; exit 1; }
"$build/tools/mpicc" -std=c17 -O1 -o "$tmp/cadence" "$src" || { echo "FAIL: Cadence's mpicc could not build $src"; exit 1; }
for n in 1 2 3 4; do
    rm -f "$tmp"/m.* "$tmp"/c.*
    env -u LD_LIBRARY_PATH timeout 60 mpiexec.mpich -n $n "$tmp/mpich" "$tmp/m" >"$tmp/mpich.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: the MPICH build at $n ranks exited with status $rc"; cat "$tmp/mpich.log"; exit 1; }
    timeout 60 "$build/tools/mpirun" -n $n --timeout 50 "$tmp/cadence" "$tmp/c" >"$tmp/cadence.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: the Cadence build at $n ranks exited with status $rc"; cat "$tmp/cadence.log"; exit 1; }
    cat "$tmp"/m.* | sort >"$tmp/mpich.out"
    cat "$tmp"/c.* | sort >"$tmp/cadence.out"
    if ! diff -u "$tmp/mpich.out" "$tmp/cadence.out"; then
        echo "FAIL: at $n ranks Cadence's $what answers differ from MPICH's (- MPICH, + Cadence)"
        exit 1
    fi
    echo "OK: $n ranks, $(wc -l <"$tmp/cadence.out") answers agree with MPICH"
done
