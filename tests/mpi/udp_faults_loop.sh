#!/bin/sh
# udp_faults_loop.sh RUNS RUN_MPIRUN MPIRUN JOB [JOB...] — the UDP
# transport under injected faults, RUNS times in a row with a new seed each
# time: every JOB ("N PROGRAM [ARGS...]", one word list) runs as
#     run_mpirun.sh udp MPIRUN -n N --timeout 100 PROGRAM ARGS
# with CADENCE_UDP_FAULTS=$UDP_FAULTS,seed=S (S = 1..RUNS), so each must
# pass its data checks over UDP.  Fails at the first job that does not,
# naming the run and its seed.  Then the ranks' report lines, summed over
# all runs, must show every kind of fault injected (drops, duplicates,
# reorderings, corruptions) and the layer's answers to them (retransmissions,
# duplicates suppressed, corrupted datagrams dropped for their MAC).
set -u
runs=$1 run_mpirun=$2 mpirun=$3
shift 3
log=$(mktemp "${TMPDIR:-/tmp}/cadence-udp-loop.XXXXXX") || exit 1
trap 'rm -f "$log" "$log.out"' EXIT
# one job: N PROGRAM [ARGS...] with seed $s
run_job() {
    n=$1
    shift
    if ! CADENCE_TRANSPORTS=udp CADENCE_UDP_FAULTS="$UDP_FAULTS,seed=$s" \
        "$run_mpirun" udp "$mpirun" -n "$n" --timeout 100 "$@" >"$log.out" 2>&1; then
        cat "$log.out"
        echo "FAIL: run $s of $runs (CADENCE_UDP_FAULTS=$UDP_FAULTS,seed=$s): -n $n $*"
        exit 1
    fi
    grep -E '^cadence: rank [0-9]+: udp context' "$log.out" >>"$log"
}
s=1
while [ "$s" -le "$runs" ]; do
    for job in "$@"; do
        # shellcheck disable=SC2086
        run_job $job
    done
    echo "ok: run $s of $runs (seed $s)"
    s=$((s + 1))
done
awk '
    {
        for (i = 1; i <= NF; i++) {
            v = $(i + 1) + 0
            if ($i == "retransmitted") retrans += v
            if ($i == "duplicates") dups += v
            if ($i == "MAC") badmac += $(i + 1) + 0
            if ($i == "dropped" && $(i - 1) == "injected:") drop += v
            if ($i == "duplicated") dup += v
            if ($i == "reordered") reord += v
            if ($i == "corrupted") corr += v
        }
    }
    END {
        printf "over all runs: injected drops %d, duplicates %d, reorderings %d, corruptions %d; " \
            "retransmitted %d, duplicates suppressed %d, dropped for a bad MAC %d\n",
            drop, dup, reord, corr, retrans, dups, badmac
        bad = drop == 0 || dup == 0 || reord == 0 || corr == 0 || retrans == 0 || dups == 0 ||
              badmac == 0
        if (bad)
            print "FAIL: some fault was never injected, or never answered"
        exit bad
    }' "$log"
