#!/bin/sh
# Differential datatype test: diff_pack.c built with Debian's MPICH
# (mpicc.mpich) and with Cadence (build/tools/mpicc), each run as a
# one-process job; the outputs — sizes, bounds, get_envelope/get_contents,
# MPI_Pack and external32 bytes — must be identical.
#
# Environment: CADENCE_BUILD_ROOT and CADENCE_SOURCE_ROOT (set by test_env_vars
# in tests/meson.build).
# Exit 77 (meson's skip) when MPICH's compiler is missing.
set -u

. "${CADENCE_SOURCE_ROOT:?must name the source tree}/tests/mpich_env.sh"
src=$CADENCE_SOURCE_ROOT/tests/diff/diff_pack.c
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
    echo "FAIL: Cadence's datatype output differs from MPICH's (- MPICH, + Cadence)"
    exit 1
fi
echo "OK: $(grep -c '^[A-Za-z_0-9]*:' "$tmp/cadence.out") types agree with MPICH"
