#!/bin/bash
# run_discovery.sh MODE — can users find and use Cadence the usual ways?
#   mpicc     the build tree's mpicc: flags, CADENCE_CC, runpath
#   install   a DESTDIR install: its mpicc, pkg-config mpi/cadence, libmpich names
#   cmake     CMake's FindMPI on the installed mpicc
#   meson     meson's dependency('mpi') on the installed mpicc
#   mpiinfo   mpiinfo's report, and an --unimplemented count checked against api/mpi.api
#   exports   libmpi exports the MPI interface and nothing else, every table entry
#             as PMPI_ with a weak MPI_ alias
set -euo pipefail
mode=$1
build=${CADENCE_BUILD_ROOT:?}
src=${CADENCE_SOURCE_ROOT:?}
hello=$src/examples/hello.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
run() { timeout 60 "$@"; }

# The hello program must run as a singleton with no LD_LIBRARY_PATH and load
# the libmpi of the tree under test ($2).
check_hello() {
    local exe=$1 libdir=$2 out
    out=$(env -u LD_LIBRARY_PATH timeout 30 "$exe") || fail "$exe failed: $out"
    grep -q '^Hello from rank 0 of 1' <<<"$out" || fail "unexpected output of $exe: $out"
    grep -q '^Cadence MPI' <<<"$out" || fail "$exe did not run Cadence: $out"
    local resolved
    resolved=$(env -u LD_LIBRARY_PATH ldd "$exe" | sed -n 's/^[[:space:]]*libmpi.so.12 => \(.*\) (0x.*/\1/p')
    [ -n "$resolved" ] && [ "$(realpath "$(dirname "$resolved")")" = "$(realpath "$libdir")" ] ||
        fail "$exe does not resolve libmpi.so.12 in $libdir: $(env -u LD_LIBRARY_PATH ldd "$exe")"
    echo "ok: $exe runs on $libdir/libmpi.so.12"
}

install_tree() {
    DESTDIR=$tmp/dest meson install -C "$build" --no-rebuild --quiet >/dev/null
    prefix=$tmp/dest$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
    libdir=$prefix/$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
    [ -x "$prefix/bin/mpicc" ] || fail "no installed mpicc in $prefix/bin"
}

case $mode in
mpicc)
    mpicc=$build/tools/mpicc
    show=$($mpicc -show hello.c -o hello)
    [[ $show == *"-I$build/api"* && $show == *"-L$build "* && $show == *"-lmpi"* && $show == *rpath* ]] ||
        fail "-show lacks the build tree's flags: $show"
    [[ $($mpicc -c -show x.c) != *-lmpi* ]] || fail "-c must not add link flags"
    [[ $($mpicc -compile-info) == *"-I$build/api"* ]] || fail "-compile-info"
    [[ $($mpicc -link-info) == *"-lmpi"* ]] || fail "-link-info"
    [[ $($mpicc --showme:compile) == "-I$build/api" ]] || fail "--showme:compile"
    [[ $($mpicc --showme:link) == *"-L$build "*"-lmpi" ]] || fail "--showme:link"
    [[ $($mpicc --showme:version) == *Cadence* ]] || fail "--showme:version"
    [[ $(CADENCE_CC=gcc $mpicc -show x.c) == gcc\ * ]] || fail "CADENCE_CC=gcc not honoured"
    if CADENCE_CC=false $mpicc "$hello" -o "$tmp/never" 2>/dev/null; then
        fail "CADENCE_CC=false should make compilation fail"
    fi
    run "$mpicc" -Wall -Werror "$hello" -o "$tmp/hello"
    check_hello "$tmp/hello" "$build"
    ;;
install)
    install_tree
    [ -e "$libdir/libmpich.so.12" ] && [ "$(readlink "$libdir/libmpich.so.12")" = libmpi.so.12 ] ||
        fail "libmpich.so.12 is not installed as a link to libmpi.so.12"
    [ -f "$prefix/include/mpi.h" ] || fail "mpi.h not installed"
    run "$prefix/bin/mpicc" "$hello" -o "$tmp/hello"
    check_hello "$tmp/hello" "$libdir"
    for pc in mpi cadence; do
        flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs "$pc")
        inc=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags-only-I "$pc" | xargs)
        [ "$(realpath "${inc#-I}")" = "$(realpath "$prefix/include")" ] ||
            fail "pkg-config $pc points at ${inc#-I}, not $prefix/include"
        # shellcheck disable=SC2086
        run cc "$hello" $flags -o "$tmp/hello-$pc"
        check_hello "$tmp/hello-$pc" "$libdir"
    done
    ;;
cmake)
    command -v cmake >/dev/null || { echo "SKIP: cmake not installed"; exit 77; }
    install_tree
    run cmake -S "$src/tests/discovery/cmake" -B "$tmp/cmake" -DMPI_C_COMPILER="$prefix/bin/mpicc" \
        -DHELLO_SOURCE="$hello" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake configure"; }
    grep -q "FindMPI: version 4.1, libraries $libdir/libmpi.so" "$tmp/cmake.log" ||
        { cat "$tmp/cmake.log"; fail "FindMPI did not report Cadence's MPI 4.1 library"; }
    run cmake --build "$tmp/cmake" >/dev/null
    check_hello "$tmp/cmake/hello" "$libdir"
    ;;
meson)
    install_tree
    mkdir "$tmp/nopc"
    # An empty pkg-config path: Debian's Open MPI (ompi-c.pc), if installed,
    # must not be what meson finds; Cadence is found through MPICC and PATH
    # (meson also tries `mpicc` from PATH and keeps the highest version, so
    # Cadence's bin goes first, as a user selecting Cadence would have it).
    PATH=$prefix/bin:$PATH MPICC=$prefix/bin/mpicc PKG_CONFIG_LIBDIR=$tmp/nopc run meson setup "$tmp/meson" \
        "$src/tests/discovery/mesonproj" -Dhello_source="$hello" >"$tmp/meson.log" 2>&1 ||
        { cat "$tmp/meson.log"; fail "meson setup"; }
    grep -q "Run-time dependency MPI for c found: YES" "$tmp/meson.log" || { cat "$tmp/meson.log"; fail "mpi not found"; }
    run meson compile -C "$tmp/meson" >/dev/null
    check_hello "$tmp/meson/hello" "$libdir"
    ;;
mpiinfo)
    info=$build/tools/mpiinfo
    out=$(run "$info")
    grep -q '^Cadence MPI' <<<"$out" || fail "mpiinfo header: $out"
    grep -q 'CADENCE_INITIAL_ERRHANDLER' <<<"$out" || fail "mpiinfo does not list CADENCE_ variables"
    grep -q 'Transports:' <<<"$out" || fail "mpiinfo does not list transports"
    total=$(grep -cE '^[A-Za-z_ ]+\**\s*MPIX?_\w+\(' "$src/api/mpi.api")
    done_=$(grep -cE '^[A-Za-z_ ]+\**\s*MPIX?_\w+\(.*\| .*\b(impl|manual)\b' "$src/api/mpi.api")
    want="$((total - done_)) of $total declared functions are not implemented yet."
    got=$(run "$info" --unimplemented | tail -1)
    [ "$got" = "$want" ] || fail "mpiinfo --unimplemented says '$got', the table says '$want'"
    list=$(run "$info" --unimplemented)
    grep -qx '  MPI_Win_fence' <<<"$list" || fail "MPI_Win_fence should be listed as unimplemented"
    if grep -qx '  MPI_Init' <<<"$list"; then fail "MPI_Init is implemented"; fi
    # The README's status paragraph gives the same counts.
    readme=$(tr '\n' ' ' <"$src/README.md")
    grep -q "$done_ of its $total functions are implemented" <<<"$readme" ||
        fail "README.md status does not say '$done_ of its $total functions are implemented'"
    grep -q "Not there yet ($((total - done_)) functions" <<<"$readme" ||
        fail "README.md status does not say 'Not there yet ($((total - done_)) functions'"
    echo "ok: $got (README agrees)"
    ;;
exports)
    syms=$(nm -D --defined-only "$build/libmpi.so.12" | awk '{print $2, $3}')
    stray=$(awk '{print $2}' <<<"$syms" | grep -vE '^(MPI_|PMPI_|MPIX_|PMPIX_)|^MPIR_Dup_fn$' || true)
    [ -z "$stray" ] || fail "libmpi exports internal symbols: $stray"
    names=$(sed -nE 's/^[A-Za-z_ ]+\**\s*(MPIX?_\w+)\(.*/\1/p' "$src/api/mpi.api")
    n=0
    for f in $names; do
        grep -qx "T P$f" <<<"$syms" || fail "P$f is not exported as a strong symbol"
        grep -qx "W $f" <<<"$syms" || fail "$f is not exported as a weak alias"
        n=$((n + 1))
    done
    echo "ok: $n functions exported as PMPI_/PMPIX_ with weak MPI_/MPIX_ aliases, nothing internal"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
