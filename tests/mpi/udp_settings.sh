#!/bin/sh
# udp_settings.sh VAR=VALUE PROGRAM [ARGS...]: run PROGRAM with VAR=VALUE
# set on rank 1 only (PMIX_RANK, set by mpirun), so that the processes of
# one job differ in a setting that must agree (t_udp_settings).
set -eu
setting=$1
shift
if [ "${PMIX_RANK:-}" = 1 ]; then
    export "$setting"
fi
exec "$@"
