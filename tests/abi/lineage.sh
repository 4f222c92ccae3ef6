#!/bin/sh
# mpi.h's lineage as configure scripts see it: the checks autoconf-based
# builds make (a conftest compiled with the MPI compiler, choking unless a
# macro is defined) must find an MPICH-ABI library of MPICH 4, and
# Cadence's own version macros must agree with the library.
#
# Environment: CADENCE_BUILD_ROOT (meson's test_env sets it).
set -u
build=$(cd "${CADENCE_BUILD_ROOT:?must name the meson build directory}" && pwd -P) || exit 1
cc=$build/tools/mpicc
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cadence-lineage.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0

# conftest NAME BODY: compile a conftest the way AC_COMPILE_IFELSE does.
conftest() {
    printf '#include <mpi.h>\nint main(void)\n{\n%s\n    return 0;\n}\n' "$2" >"$tmp/conftest.c"
    if timeout 60 "$cc" -c -o "$tmp/conftest.o" "$tmp/conftest.c" 2>"$tmp/err"; then
        echo "checking $1... yes"
    else
        echo "checking $1... no"
        echo "FAIL: $1"
        cat "$tmp/err"
        status=1
    fi
}

conftest "whether MPI is MPICH-derived" '#if !defined(MPICH_VERSION)
choke me
#endif'
conftest "for the MPICH macro" '#ifndef MPICH
choke me
#endif'
conftest "for MPICH_NAME >= 3 (MPICH 3 and later)" '#if !defined(MPICH_NAME) || MPICH_NAME < 3
choke me
#endif'
conftest "for an MPICH 4 ABI" '#if MPICH_NUMVERSION < 40000000
choke me
#endif'
conftest "for MPI-4.1" '#if MPI_VERSION < 4 || (MPI_VERSION == 4 && MPI_SUBVERSION < 1)
choke me
#endif'
conftest "whether MPI is Cadence" '#ifndef CADENCE_MPI
choke me
#endif'

# The values, through the preprocessor as a configure script reads them.
values=$(printf '#include <mpi.h>\nMPICH_VERSION MPICH_NUMVERSION CADENCE_VERSION\n' |
    timeout 60 "$cc" -E -P - | tail -n 1)
echo "mpi.h says: $values"
# shellcheck disable=SC2086 # three words on purpose
set -- $values
if [ "$1" != '"4.0.2"' ] || [ "$2" != 40002300 ]; then
    echo "FAIL: MPICH_VERSION $1 / MPICH_NUMVERSION $2, want \"4.0.2\" / 40002300"
    status=1
fi
lib=$(timeout 60 "$build/tools/mpiinfo" --version)
case "$lib" in
    *"$(echo "$3" | tr -d '"')"*) echo "library: $lib" ;;
    *) echo "FAIL: CADENCE_VERSION $3 is not the library's version ($lib)"; status=1 ;;
esac
[ $status -eq 0 ] && echo "PASS: mpi.h declares the MPICH 4.0.2 ABI and Cadence's version"
exit $status
