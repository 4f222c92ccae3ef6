#!/bin/bash
# run_discovery.sh MODE — can users find and use Cadence the usual ways?
#   mpicc      the build tree's mpicc and mpicxx: flags, CADENCE_CC/CXX, runpath
#   install    a DESTDIR install reached through symlinks (as update-alternatives
#              or ~/bin make them): mpicc, mpicxx, mpirun; a C program linked
#              by mpicxx (the OSU benchmarks' $(CXX)); libmpich names
#   pkgconfig  pkg-config mpi and cadence through symlinked .pc files
#   cmake      CMake's FindMPI, project(x C CXX), Cadence's bin first on PATH
#   meson      meson's dependency('mpi') for C and C++, PKG_CONFIG_PATH set
#   autotools  `CC=mpicc ./configure` with AX_MPI's checks
#   mpiinfo    mpiinfo's report, and an --unimplemented count checked against api/mpi.api
#   exports    libmpi exports the MPI interface and nothing else, every table entry
#              as PMPI_ with a weak MPI_ alias
# pkgconfig, cmake, meson and autotools run with Debian's Open MPI and MPICH
# development packages installed beside Cadence (they skip, saying so, when
# those are absent): Cadence must be what is found all the same.  Their
# programs run on 2 ranks under the installed mpirun, and must report
# Cadence's library (MPI_Get_library_version) and load it from the install.
set -euo pipefail
mode=$1
build=${CADENCE_BUILD_ROOT:?}
src=${CADENCE_SOURCE_ROOT:?}
hello=$src/examples/hello.c
hello_cxx=$src/tests/discovery/hello.cpp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
run() { timeout 120 "$@"; }

# $2's libmpi.so.12, as $1 resolves it with no LD_LIBRARY_PATH, is in $3.
check_resolves() {
    local exe=$1 libdir=$2 resolved
    resolved=$(env -u LD_LIBRARY_PATH ldd "$exe" | sed -n 's/^[[:space:]]*libmpi.so.12 => \(.*\) (0x.*/\1/p')
    [ -n "$resolved" ] && [ "$(realpath "$(dirname "$resolved")")" = "$(realpath "$libdir")" ] ||
        fail "$exe does not resolve libmpi.so.12 in $libdir: $(env -u LD_LIBRARY_PATH ldd "$exe")"
}

# The hello program must run as a singleton with no LD_LIBRARY_PATH and load
# the libmpi of the tree under test ($2).
check_hello() {
    local exe=$1 libdir=$2 out
    out=$(env -u LD_LIBRARY_PATH timeout 30 "$exe") || fail "$exe failed: $out"
    grep -q '^Hello from rank 0 of 1' <<<"$out" || fail "unexpected output of $exe: $out"
    grep -q '^Cadence MPI' <<<"$out" || fail "$exe did not run Cadence: $out"
    check_resolves "$exe" "$libdir"
    echo "ok: $exe runs on $libdir/libmpi.so.12"
}

# check_job EXE: 2 ranks under the installed mpirun (reached through its
# symlink), each answered by Cadence's library from $libdir.
check_job() {
    local exe=$1 out
    out=$(env -u LD_LIBRARY_PATH timeout 60 "$links/mpirun" --timeout 30 -n 2 "$exe" 2>&1) ||
        fail "mpirun -n 2 $exe failed: $out"
    if grep -q '^C++ rank' <<<"$out"; then  # hello.cpp
        for r in 0 1; do
            grep -q "^C++ rank $r of 2 sum ok: Cadence MPI" <<<"$out" ||
                fail "$exe: rank $r did not report a correct 2-rank job on Cadence: $out"
        done
    else  # examples/hello.c
        grep -q '^Hello from rank 0 of 2' <<<"$out" && grep -q '^Hello from rank 1 of 2' <<<"$out" ||
            fail "$exe did not run as a 2-rank job: $out"
        grep -q '^Cadence MPI' <<<"$out" || fail "$exe did not run Cadence: $out"
    fi
    check_resolves "$exe" "$libdir"
    echo "ok: $exe: 2 ranks on $libdir/libmpi.so.12"
}

# install_tree: a DESTDIR install ($prefix, $libdir), moved there as
# docs/install.md says (the .pc files' prefix= rewritten), and reached
# through two levels of symlinks as update-alternatives makes them:
# $links/mpicc -> $tmp/alt/mpicc -> $prefix/bin/mpicc, likewise mpicxx,
# mpirun, mpiexec (CMake's FindMPI finds mpiexec first and looks for the
# compilers beside it) and the .pc files in $pclinks.
install_tree() {
    DESTDIR=$tmp/dest meson install -C "$build" --no-rebuild --quiet >/dev/null
    prefix=$tmp/dest$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
    libdir=$prefix/$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
    [ -x "$prefix/bin/mpicc" ] && [ -x "$prefix/bin/mpicxx" ] || fail "no installed mpicc/mpicxx in $prefix/bin"
    sed -i "s|^prefix=.*|prefix=$prefix|" "$libdir"/pkgconfig/*.pc
    links=$tmp/links pclinks=$tmp/pclinks
    mkdir -p "$tmp/alt" "$links" "$pclinks"
    for f in "$prefix"/bin/mpi{cc,cxx,run,exec} "$libdir"/pkgconfig/*.pc; do
        local name=${f##*/}
        ln -s "$f" "$tmp/alt/$name"
        case $name in
            *.pc) ln -s "$tmp/alt/$name" "$pclinks/$name" ;;
            *) ln -s "$tmp/alt/$name" "$links/$name" ;;
        esac
    done
}

# The other MPIs a user would have installed beside Cadence.
need_other_mpis() {
    local missing=()
    pkg-config --exists ompi-c || missing+=("Open MPI's ompi-c.pc (libopenmpi-dev)")
    pkg-config --exists mpich || missing+=("MPICH's mpich.pc (libmpich-dev)")
    command -v mpicc.openmpi >/dev/null || missing+=(mpicc.openmpi)
    command -v mpicc.mpich >/dev/null || missing+=(mpicc.mpich)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "SKIP: this test checks Cadence is found beside Debian's Open MPI and MPICH;" \
             "missing: ${missing[*]} (tools/setup-deps.sh installs them)"
        exit 77
    fi
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
    mpicxx=$build/tools/mpicxx
    cxx=$($mpicxx --showme:command)
    [[ $cxx == *++ ]] || fail "mpicxx --showme:command is not a C++ compiler: $cxx"
    [[ $($mpicxx -show x.cpp) == "$cxx -I$build/api x.cpp -L$build "*"-lmpi" ]] || fail "mpicxx -show: $($mpicxx -show x.cpp)"
    [[ $(CADENCE_CXX=clang++ $mpicxx -show x.cpp) == clang++\ * ]] || fail "CADENCE_CXX=clang++ not honoured"
    [[ $($mpicxx --showme:version) == "mpicxx: Cadence MPI"* ]] || fail "mpicxx --showme:version"
    # mpi.h is C++-clean: extern "C", no warnings, every dialect from C++11
    for std in c++11 c++17 c++20; do
        run "$mpicxx" -std=$std -Wall -Wextra -Wpedantic -Werror "$hello_cxx" -o "$tmp/hello_cxx" ||
            fail "mpi.h does not compile cleanly as $std"
    done
    out=$(env -u LD_LIBRARY_PATH timeout 30 "$tmp/hello_cxx") || fail "hello_cxx: $out"
    grep -q '^C++ rank 0 of 1 sum ok: Cadence MPI' <<<"$out" || fail "hello_cxx: $out"
    check_resolves "$tmp/hello_cxx" "$build"
    echo "ok: mpicxx builds C++ programs on the C API"
    ;;
install)
    install_tree
    [ -e "$libdir/libmpich.so.12" ] || fail "libmpich.so.12 is not installed"
    objdump -p "$libdir/libmpich.so.12" | grep -q 'SONAME *libmpich\.so\.12$' &&
        objdump -p "$libdir/libmpich.so.12" | grep -q 'NEEDED *libmpi\.so\.12$' ||
        fail "libmpich.so.12 is not a library with SONAME libmpich.so.12 needing libmpi.so.12"
    [ -f "$prefix/include/mpi.h" ] || fail "mpi.h not installed"
    [ "$(readlink "$prefix/bin/mpic++")" = mpicxx ] || fail "mpic++ is not installed as a link to mpicxx"
    for w in mpicc mpicxx; do
        inc=$("$links/$w" --showme:incdirs)
        [ "$inc" = "$prefix/include" ] || fail "$w through a symlink points at $inc, not $prefix/include"
    done
    run "$links/mpicc" "$hello" -o "$tmp/hello"
    check_hello "$tmp/hello" "$libdir"
    check_job "$tmp/hello"
    run "$links/mpicxx" "$hello_cxx" -o "$tmp/hello_cxx"
    check_job "$tmp/hello_cxx"
    # The OSU Micro-Benchmarks compile C with $(CC) and link with $(CXX).
    run "$links/mpicc" -c "$hello" -o "$tmp/hello.o"
    run "$links/mpicxx" "$tmp/hello.o" -o "$tmp/hello_cxxlinked" || fail "mpicxx cannot link a C object"
    check_job "$tmp/hello_cxxlinked"
    ;;
pkgconfig)
    need_other_mpis
    install_tree
    if grep -H '^URL:' "$libdir"/pkgconfig/*.pc; then fail "a .pc file carries a URL"; fi
    for pc in mpi cadence; do
        flags=$(PKG_CONFIG_PATH=$pclinks pkg-config --cflags --libs "$pc")
        inc=$(PKG_CONFIG_PATH=$pclinks pkg-config --cflags-only-I "$pc" | xargs)
        [ "${inc#-I}" = "$prefix/include" ] || fail "pkg-config $pc points at ${inc#-I}, not $prefix/include"
        # shellcheck disable=SC2086
        run cc "$hello" $flags -o "$tmp/hello-$pc"
        check_job "$tmp/hello-$pc"
    done
    ;;
cmake)
    command -v cmake >/dev/null || { echo "SKIP: cmake not installed (tools/setup-deps.sh installs it)"; exit 77; }
    need_other_mpis
    install_tree
    PATH=$links:$PATH run cmake -S "$src/tests/discovery/cmake" -B "$tmp/cmake" \
        -DHELLO_SOURCE="$hello" -DHELLO_CXX_SOURCE="$hello_cxx" >"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log"; fail "cmake configure"; }
    for lang in C CXX; do
        grep -q "FindMPI $lang: version 4.1, libraries $libdir/libmpi.so" "$tmp/cmake.log" ||
            { cat "$tmp/cmake.log"; fail "FindMPI did not find Cadence's MPI 4.1 library for $lang"; }
    done
    run cmake --build "$tmp/cmake" >/dev/null
    check_job "$tmp/cmake/hello"
    check_job "$tmp/cmake/hello_cxx"
    ;;
meson)
    need_other_mpis
    install_tree
    # What docs/install.md tells a meson user: Cadence's bin first on PATH and
    # its pkgconfig directory on PKG_CONFIG_PATH (meson asks pkg-config for
    # ompi-c/ompi-cxx before it tries mpicc).  Open MPI's .pc files stay
    # where pkg-config finds them.
    PATH=$links:$PATH PKG_CONFIG_PATH=$pclinks run meson setup "$tmp/meson" "$src/tests/discovery/mesonproj" \
        -Dhello_source="$hello" -Dhello_cxx_source="$hello_cxx" >"$tmp/meson.log" 2>&1 ||
        { cat "$tmp/meson.log"; fail "meson setup"; }
    want=$(meson introspect "$build" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
    for lang in c cpp; do
        grep -q "Run-time dependency MPI for $lang found: YES $want\$" "$tmp/meson.log" ||
            { cat "$tmp/meson.log"; fail "meson did not find Cadence $want for $lang"; }
    done
    run meson compile -C "$tmp/meson" >/dev/null
    check_job "$tmp/meson/hello"
    check_job "$tmp/meson/hello_cxx"
    ;;
autotools)
    command -v autoconf >/dev/null || { echo "SKIP: autoconf not installed (tools/setup-deps.sh installs it)"; exit 77; }
    need_other_mpis
    install_tree
    mkdir "$tmp/at" && cp "$src"/tests/discovery/autotools/* "$tmp/at/"
    (cd "$tmp/at" && run autoconf && CC=mpicc PATH=$links:$PATH run ./configure HELLO_SOURCE="$hello" \
        >"$tmp/configure.log" 2>&1) || { cat "$tmp/configure.log" "$tmp/at/config.log" 2>/dev/null; fail "CC=mpicc ./configure"; }
    (cd "$tmp/at" && PATH=$links:$PATH run make >/dev/null) || fail "make"
    check_job "$tmp/at/hello"
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
    grep -qx '  MPI_Comm_spawn' <<<"$list" || fail "MPI_Comm_spawn should be listed as unimplemented"
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
