#!/bin/sh
# test-verbs.sh MODE ... — the verbs transport's tests (transport/verbs/).
#
#   test-verbs.sh run RUN_MPIRUN MPIRUN -n N [MPIRUN ARGS...] PROGRAM [ARGS...]
#       Run a test job over the verbs transport through tests/mpi/run_mpirun.sh
#       (which checks that verbs carried the messages).  Where MPI_Init
#       refuses the transport because the machine has no RDMA device, the
#       test is skipped (exit 77) printing "SKIP: no RDMA device ...";
#       any other failure is a failure.
#   test-verbs.sh refuses MPIRUN PROGRAM
#       On a machine without an RDMA device: a 2-rank job with
#       CADENCE_TRANSPORTS=verbs must fail in MPI_Init (the fatal handler's
#       exit code 15), in time, naming the reason "no RDMA device".  Where
#       a device exists this is skipped (the run tests cover it).
set -u
refusal='CADENCE_TRANSPORTS names the verbs transport, which cannot start here: no RDMA device'

# Does this machine have an RDMA device?  The kernel lists every one
# (InfiniBand, RoCE, iWARP, rxe, siw) under /sys/class/infiniband.
have_device() {
    [ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]
}

mode=${1:-}
[ $# -gt 0 ] && shift
case $mode in
run)
    run_mpirun=$1
    shift
    out=$(CADENCE_TRANSPORTS=verbs timeout 120 "$run_mpirun" verbs "$@" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q -- "$refusal"; then
        reason=$(printf '%s\n' "$out" | grep -o -- 'no RDMA device.*' | head -n 1)
        if have_device; then
            printf '%s\n' "$out"
            echo "FAIL: the verbs transport found no RDMA device, but /sys/class/infiniband lists one"
            exit 1
        fi
        echo "SKIP: $reason"
        exit 77
    fi
    printf '%s\n' "$out"
    exit $rc
    ;;
refuses)
    mpirun=$1 prog=$2
    if have_device; then
        echo "SKIP: an RDMA device is present ($(ls /sys/class/infiniband | tr '\n' ' ')): the no-device refusal cannot be checked here"
        exit 77
    fi
    out=$(CADENCE_TRANSPORTS=verbs timeout 30 "$mpirun" -n 2 --timeout 25 "$prog" 2>&1)
    rc=$?
    if [ $rc -ne 15 ]; then
        printf 'FAIL: the job exited %d, expected 15 (MPI_Init refusing the transport); output:\n%s\n' \
            "$rc" "$out"
        exit 1
    fi
    n=$(printf '%s\n' "$out" | grep -c -- "$refusal")
    if [ "$n" -lt 1 ]; then
        printf 'FAIL: no rank printed /%s/; output:\n%s\n' "$refusal" "$out"
        exit 1
    fi
    printf '%s\n' "$out"
    echo "ok: MPI_Init refused the verbs transport with the reason 'no RDMA device' (exit 15)"
    ;;
*)
    echo "usage: test-verbs.sh run RUN_MPIRUN MPIRUN -n N ... PROGRAM | refuses MPIRUN PROGRAM" >&2
    exit 2
    ;;
esac
