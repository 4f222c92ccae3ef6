# Sourced by the differential tests (tests/abi, tests/diff): skip (exit 77,
# meson's skip) without Debian's MPICH compiler, and check the variables
# test_env_vars in tests/meson.build sets.
if ! command -v mpicc.mpich >/dev/null 2>&1; then
    echo "SKIP: mpicc.mpich not found (apt-get install libmpich-dev)"
    exit 77
fi
: "${CADENCE_BUILD_ROOT:?must name the meson build directory}"
: "${CADENCE_SOURCE_ROOT:?must name the source tree}"
build=$(cd "$CADENCE_BUILD_ROOT" && pwd -P) || exit 1
