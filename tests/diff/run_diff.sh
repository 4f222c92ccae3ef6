#!/bin/sh
# Differential one-process test: tests/diff/$1 (default diff_pack.c) built
# with Debian's MPICH (mpicc.mpich) and with Cadence (build/tools/mpicc),
# each run as a one-process job; the outputs must be identical.  $2 names
# what is compared, for the messages.
#   diff_pack.c   sizes, bounds, get_envelope/get_contents, MPI_Pack and
#                 external32 bytes of many datatypes
#   diff_dims.c   MPI_Dims_create over tens of thousands of inputs
#
# Environment: CADENCE_BUILD_ROOT and CADENCE_SOURCE_ROOT (set by test_env_vars
# in tests/meson.build).
# Exit 77 (meson's skip) when MPICH's compiler is missing.
set -u

. "${CADENCE_SOURCE_ROOT:?must name the source tree}/tests/mpich_env.sh"
src=$CADENCE_SOURCE_ROOT/tests/diff/${1:-diff_pack.c}
what=${2:-datatype}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cadence-diff.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

mpicc.mpich -std=c17 -O1 -o "$tmp/mpich" "$src" || { echo "FAIL: mpicc.mpich could not build $src"; exit 1; }
"$build/tools/mpicc" -std=c17 -O1 -o "$tmp/cadence" "$src" || { echo "FAIL: Cadence's mpicc could not build $src"; exit 1; }
# MPICH's binary with MPICH's own library (not Cadence's libmpich.so.12).
env -u LD_LIBRARY_PATH timeout 60 "$tmp/mpich" >"$tmp/mpich.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the MPICH build exited with status $rc"; cat "$tmp/mpich.out"; exit 1; }
timeout 60 "$tmp/cadence" >"$tmp/cadence.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the Cadence build exited with status $rc"; cat "$tmp/cadence.out"; exit 1; }
if ! diff -u "$tmp/mpich.out" "$tmp/cadence.out"; then
    echo "FAIL: Cadence's $what output differs from MPICH's (- MPICH, + Cadence)"
    exit 1
fi
echo "OK: $(wc -l <"$tmp/cadence.out") lines of $what output agree with MPICH"
