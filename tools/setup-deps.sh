#!/bin/sh
# setup-deps.sh — install the Debian 12 packages Cadence needs that are missing.
#
# Build: meson, ninja, pkg-config, a C compiler, Python 3, OpenPMIx, hwloc and
# OpenSSL's libcrypto (required), libfabric, UCX and rdma-core (optional transports) with fi_info
# and ucx_info (mpiinfo names what they find), Check.
# Tests also use Debian's MPICH (the ABI and differential tests), Open MPI
# and MPICH's development files beside Cadence (the discovery and launcher
# mismatch tests), CMake and autoconf (the FindMPI and `CC=mpicc ./configure`
# tests), Slurm (srun --mpi=pmix on a private one-node cluster) and
# valgrind (memory checks of the MPI tests); the package test uses dpkg-dev
# (tools/package-deb) and runs Debian's MPICH-built NetPIPE (netpipe-mpich2)
# and ScaLAPACK tests (scalapack-mpi-test) on Cadence.  A test whose tool is missing
# skips, saying so, and tools/test-summary.py fails a run in which a whole
# suite skipped.
#   tools/setup-deps.sh          what the build and the tests need
#   tools/setup-deps.sh --bench  also gnuplot, for tools/bench's side-by-side runs
set -eu

packages="build-essential pkg-config python3 meson ninja-build libpmix-dev libhwloc-dev libssl-dev
libfabric-dev libfabric-bin libucx-dev ucx-utils libibverbs-dev check libmpich-dev mpich openmpi-bin
libopenmpi-dev
cmake autoconf slurm-wlm valgrind dpkg-dev netpipe-mpich2 scalapack-mpi-test"
if [ "${1:-}" = "--bench" ]; then
    packages="$packages gnuplot-nox"
fi

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "setup-deps: all packages present"
    exit 0
fi
echo "setup-deps: missing:$missing"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-deps: apt-get not found. This script installs Debian packages; on another" >&2
    echo "system install the equivalents of:$missing" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "setup-deps: not root and no sudo. As root run:" >&2
    echo "  apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086  # the package list is meant to split
$sudo apt-get install -y -q --no-install-recommends $missing
