#!/bin/sh
# The ABI test: programs compiled against MPICH 4 run against Cadence.
#
# abi_probe.c, legacy_api.c (the MPI-1 functions MPICH 4 still exports) and
# the constants program written by gen_constants.py are each built twice, by
# Debian's mpicc.mpich (MPICH's mpi.h, -lmpich) and by Cadence's
# build/tools/mpicc.  The MPICH-built binaries run with LD_LIBRARY_PATH at
# the build directory, so they load Cadence's libmpich.so.12; the
# Cadence-built ones run plainly (rpath).  Both builds of the probe and of
# legacy_api must print the same lines, and every constant both headers
# define must have the same value.
#
# Environment: CADENCE_BUILD_ROOT and CADENCE_SOURCE_ROOT (set by test_env_vars
# in tests/meson.build).  Exit 77 (meson's skip) when MPICH's compiler is missing.
set -u

. "${CADENCE_SOURCE_ROOT:?must name the source tree}/tests/mpich_env.sh"
src=$(cd "$CADENCE_SOURCE_ROOT" && pwd -P) || exit 1
here=$src/tests/abi
cadence_cc=$build/tools/mpicc
for f in "$cadence_cc" "$build/libmpich.so.12" "$here/abi_probe.c" "$here/legacy_api.c" \
    "$src/api/mpi_constants.txt"; do
    [ -e "$f" ] || { echo "FAIL: $f does not exist (build first: ninja -C $build)"; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cadence-abi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cflags="-std=c17 -O2 -Wall -Wextra -Werror"
status=0

fail() {
    echo "FAIL: $*"
    status=1
}

# run LOG COMMAND...: run under a timeout, stdout to LOG, stderr shown.
run() {
    log=$1
    shift
    timeout 60 "$@" >"$log"
    rc=$?
    if [ $rc -eq 124 ]; then
        fail "$* timed out after 60 s"
    elif [ $rc -ne 0 ]; then
        fail "$* exited with status $rc"
    fi
    return $rc
}

# The headers a compiler reads for <mpi.h>: mpi.h and its siblings.
headers_of() {
    # shellcheck disable=SC1003 # a backslash, not a quote
    printf '#include <mpi.h>\n' | timeout 60 "$1" -M -x c - 2>/dev/null |
        tr -d '\\' | tr ' ' '\n' | awk '
            /\/mpi\.h$/ && dir == "" { dir = $0; sub(/\/[^\/]*$/, "", dir) }
            /\.h$/ { h[++n] = $0 }
            END { for (i = 1; i <= n; i++) if (index(h[i], dir "/") == 1) print h[i] }'
}

# ---- build ----
for cc in mpich cadence; do
    if [ $cc = mpich ]; then compiler=mpicc.mpich; else compiler=$cadence_cc; fi
    headers=$(headers_of "$compiler")
    mpi_h=$(printf '%s\n' "$headers" | grep '/mpi\.h$' | head -n 1)
    if [ -z "$mpi_h" ]; then
        fail "$compiler does not find mpi.h"
        continue
    fi
    echo "$cc: $compiler reads $mpi_h"
    if [ $cc = cadence ] && [ "$mpi_h" != "$build/api/mpi.h" ]; then
        fail "Cadence's mpicc reads $mpi_h, not $build/api/mpi.h"
    fi
    set --
    for h in $headers; do set -- "$@" --header "$h"; done
    python3 "$here/gen_constants.py" "$src/api/mpi_constants.txt" "$tmp/constants.$cc.c" "$@" ||
        fail "gen_constants.py failed for $mpi_h"
    # shellcheck disable=SC2086 # $cflags splits into words on purpose
    for prog in abi_probe legacy_api; do
        timeout 60 "$compiler" $cflags -o "$tmp/$prog.$cc" "$here/$prog.c" ||
            fail "$compiler could not build $prog.c"
    done
    # shellcheck disable=SC2086
    timeout 60 "$compiler" $cflags -o "$tmp/constants.$cc" "$tmp/constants.$cc.c" ||
        fail "$compiler could not build the constants program"
done
[ $status -eq 0 ] || exit 1

# ---- the MPICH-built binary must load Cadence's library ----
dir_of() {
    [ -n "$1" ] && (cd "$(dirname "$1")" 2>/dev/null && pwd -P)
}
# LD_LIBRARY_PATH is set exactly, and unset for the Cadence-built runs, so
# that what the caller (meson sets one) has there cannot decide the result.
ldd_line=$(LD_LIBRARY_PATH=$build timeout 60 ldd "$tmp/abi_probe.mpich" | grep 'libmpich\.so\.12')
lib=$(printf '%s\n' "$ldd_line" | awk '{ print $3 }')
if [ "$(dir_of "$lib")" != "$build" ]; then
    fail "the MPICH-built probe resolves libmpich.so.12 to '${lib}', not into $build"
    echo "$ldd_line"
else
    echo "mpich: libmpich.so.12 => $lib"
fi
ldd_line=$(env -u LD_LIBRARY_PATH timeout 60 ldd "$tmp/abi_probe.cadence" | grep 'libmpi\.so\.12')
lib=$(printf '%s\n' "$ldd_line" | awk '{ print $3 }')
[ "$(dir_of "$lib")" = "$build" ] ||
    fail "the Cadence-built probe resolves libmpi.so.12 to '${lib}', not into $build"

# ---- run ----
# A handler chosen from the environment would change what the probe sees.
unset CADENCE_INITIAL_ERRHANDLER
for prog in abi_probe legacy_api constants; do
    run "$tmp/$prog.mpich.out" env LD_LIBRARY_PATH="$build" "$tmp/$prog.mpich"
    run "$tmp/$prog.cadence.out" env -u LD_LIBRARY_PATH "$tmp/$prog.cadence"
done
# A failed run has already failed the test; the comparisons below still say
# where the two builds part.

# ---- compare: the probe line for line ----
if diff -u "$tmp/abi_probe.mpich.out" "$tmp/abi_probe.cadence.out" >"$tmp/probe.diff"; then
    echo "abi_probe: $(wc -l <"$tmp/abi_probe.cadence.out") facts identical in both builds"
else
    fail "abi_probe prints differently when built against MPICH's mpi.h (-) and Cadence's (+):"
    cat "$tmp/probe.diff"
fi

# ---- compare: the removed MPI-1 functions give the same results ----
if diff -u "$tmp/legacy_api.mpich.out" "$tmp/legacy_api.cadence.out" >"$tmp/legacy.diff"; then
    echo "legacy_api: $(wc -l <"$tmp/legacy_api.cadence.out") results identical in both builds"
else
    fail "legacy_api prints differently when built against MPICH's mpi.h (-) and Cadence's (+):"
    cat "$tmp/legacy.diff"
fi

# ---- compare: constants both headers define ----
awk '
    FNR == 1 { file++ }
    { name = $1; $1 = ""; value = substr($0, 2) }
    file == 1 { mpich[name] = value; order[++n] = name; next }
    { cadence[name] = value; if (!(name in mpich)) order[++n] = name }
    END {
        for (i = 1; i <= n; i++) {
            k = order[i]
            if (!(k in cadence) || cadence[k] == "absent") {
                print "FAIL: " k " is in api/mpi_constants.txt but not in Cadence'"'"'s mpi.h"
                missing++
            } else if (!(k in mpich) || mpich[k] == "absent") {
                absent = absent " " k
            } else if (mpich[k] != cadence[k]) {
                print "FAIL: " k " is " mpich[k] " in MPICH'"'"'s mpi.h, " cadence[k] " in Cadence'"'"'s"
                bad++
            } else {
                same++
            }
        }
        if (absent != "")
            print "constants MPICH'"'"'s mpi.h lacks (not compared):" absent
        printf "constants: %d compared, %d identical, %d differ\n", same + bad, same, bad
        exit bad + missing != 0 || same == 0
    }' "$tmp/constants.mpich.out" "$tmp/constants.cadence.out" || status=1

if [ $status -eq 0 ]; then
    echo "PASS: MPICH-built programs see the same ABI as Cadence-built ones"
fi
exit $status
