#!/bin/sh
# The Debian packages, end to end, in a throwaway root.
#
# Builds cadence-mpi and cadence-mpi-swap with tools/package-deb (one build
# per run, in $CADENCE_BUILD_ROOT/package-deb, so later runs are
# incremental), compiles hello.c with Debian's mpicc.mpich, then runs
# steps_in_root.sh chrooted into an overlay of / whose writable layer is a
# tmpfs of a private mount namespace: dpkg, update-alternatives and
# ldconfig change only that layer, which vanishes with the namespace.  The
# machine's own dpkg state, alternatives and loader cache are never written.
#
# Environment: CADENCE_BUILD_ROOT, CADENCE_SOURCE_ROOT (tests/meson.build).
# Exit 77 (meson's skip), saying why, without root, dpkg-dev, unshare,
# chroot, MPICH's mpicc or an overlay mount.
set -u

src=$(cd "${CADENCE_SOURCE_ROOT:?must name the source tree}" && pwd -P) || exit 1
build=$(cd "${CADENCE_BUILD_ROOT:?must name the build tree}" && pwd -P) || exit 1
here=$src/tests/package

skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (a mount namespace with an overlay of / and chroot)"
for tool in dpkg dpkg-deb dpkg-shlibdeps update-alternatives ldconfig unshare chroot mount; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (tools/setup-deps.sh installs dpkg-dev)"
done
command -v mpicc.mpich >/dev/null 2>&1 || skip "mpicc.mpich not found (apt-get install libmpich-dev)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cadence-package.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/probe"
# shellcheck disable=SC2016  # expanded by the inner shell
if ! unshare --mount --fork sh -c '
    mount -t tmpfs tmpfs "$1" && mkdir "$1/u" "$1/w" "$1/m" &&
    mount -t overlay overlay -o "lowerdir=/,upperdir=$1/u,workdir=$1/w" "$1/m" &&
    chroot "$1/m" true' sh "$tmp/probe" 2>"$tmp/probe.err"; then
    skip "cannot chroot into an overlay of / in a mount namespace: $(cat "$tmp/probe.err")"
fi

# ---- outside the root: the packages and an MPICH-built program ----
work=$tmp/work
mkdir -p "$work"
echo "building the packages (tools/package-deb)"
if ! "$src/tools/package-deb" --builddir "$build/package-deb" --outdir "$work" >"$tmp/package.log" 2>&1; then
    cat "$tmp/package.log"
    echo "FAIL: tools/package-deb failed"
    exit 1
fi
cat "$tmp/package.log"
cp "$src/examples/hello.c" "$here/steps_in_root.sh" "$work/"
if ! timeout 120 mpicc.mpich "$src/examples/hello.c" -o "$work/hello.mpich"; then
    echo "FAIL: mpicc.mpich could not build hello.c"
    exit 1
fi

# ---- inside: a private mount and PID namespace, overlay, chroot ----
# The PID namespace ends every process of the test with it; the mounts go
# when the namespace does.  steps_in_root.sh gets a clean environment (no
# LD_LIBRARY_PATH, nothing from meson) and the work directory at /cadence-test.
root=$tmp/root
mkdir -p "$root"
# shellcheck disable=SC2016  # expanded by the inner shell
timeout 540 unshare --mount --pid --fork --kill-child sh -c '
    set -e
    root=$1 work=$2
    mount -t tmpfs -o size=512m tmpfs "$root"
    mkdir "$root/upper" "$root/work" "$root/merged"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$root/upper,workdir=$root/work" "$root/merged"
    m=$root/merged
    mount -t proc proc "$m/proc"
    mount --rbind /sys "$m/sys"
    mount --rbind /dev "$m/dev"
    mount -t tmpfs tmpfs "$m/tmp"
    mount -t tmpfs tmpfs "$m/run"
    mkdir -p "$m/cadence-test"
    mount --bind "$work" "$m/cadence-test"
    exec chroot "$m" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/tmp LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        sh /cadence-test/steps_in_root.sh /cadence-test' sh "$root" "$work"
status=$?
[ $status -eq 124 ] && echo "FAIL: the steps in the throwaway root timed out after 540 s"
exit $status
