#!/bin/bash
# run_slurm.sh HELLO T_WIREUP T_LAUNCH — Cadence under Slurm's srun --mpi=pmix.
# Starts a private one-node Slurm cluster (slurmctld + slurmd from Debian's
# slurm-wlm, generated slurm.conf on 127.0.0.1, free ports, MpiDefault=pmix),
# runs Cadence programs with srun -n 2, and stops the cluster again.
#
# run_slurm.sh --multihost 'PROGRAM [ARGS]' ... — the same cluster on two
# "hosts": inside a private network namespace, a bridge (10.77.0.1, where
# slurmctld and srun run) and two network + UTS namespaces joined to it by
# veth pairs (node1 10.77.0.11, node2 10.77.0.12), each with its own
# hostname and slurmd.  Each PROGRAM runs as `srun --mpi=pmix -N 2 -n 4`:
# two ranks per host, shared memory within a host, TCP between them.
#
# Skips (exit 77) with the reason only when Slurm is not installed, the
# daemons cannot be run by this user, or (multi-host) network namespaces
# or veth pairs cannot be made here.
set -uo pipefail
multihost=0
if [ "${1:-}" = --multihost ]; then
    multihost=1
    shift
elif [ "${1:-}" = --multihost-inner ]; then
    multihost=2
    shift
else
    hello=$1 wireup=$2 launch=$3
fi
for tool in slurmctld slurmd srun sinfo; do
    if ! command -v "$tool" >/dev/null && ! [ -x "/usr/sbin/$tool" ]; then
        echo "SKIP: $tool not found: install Debian's slurm-wlm (tools/setup-deps.sh does)"
        exit 77
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: slurmd must run as root to start job steps (running as $(id -un))"
    exit 77
fi
PATH=$PATH:/usr/sbin
if [ $multihost = 1 ]; then
    # everything below happens in a network namespace of our own: the
    # machine's interfaces are never touched
    if ! unshare -n true 2>/dev/null; then
        echo "SKIP: cannot create a network namespace here (unshare -n: not permitted)"
        exit 77
    fi
    exec unshare -n -- "$0" --multihost-inner "$@"
fi
# multi-host: each host gets a /tmp of its own (Slurm's PMIx plugin keeps
# per-step directories there), so the cluster's files live elsewhere
[ $multihost = 2 ] && dir=$(mktemp -d /var/tmp/cadence-slurm.XXXXXX) || dir=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    echo "--- slurmctld log" >&2; tail -20 "$dir/slurmctld.log" >&2
    for f in "$dir"/slurmd*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done
    exit 1
}

[ $multihost = 2 ] && ip link set lo up
read -r ctld_port d_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
ctld_addr=127.0.0.1
holders=()
if [ $multihost = 2 ]; then
    # the bridge, and one set of namespaces (network, UTS, mount) per host, kept
    # alive by a sleeping holder process; slurmd is started inside it
    ctld_addr=10.77.0.1
    if ! ip link add cdnbr0 type bridge 2>/dev/null; then
        echo "SKIP: cannot create a bridge in a private network namespace"
        exit 77
    fi
    ip addr add $ctld_addr/24 dev cdnbr0 && ip link set cdnbr0 up
    # a fresh /tmp per host, with the build and source trees put back when
    # they live under /tmp (a clean clone there must still find its programs)
    keep=""
    for d in "${CADENCE_BUILD_ROOT:-}" "${CADENCE_SOURCE_ROOT:-}"; do
        case "$d" in /tmp/?*) keep="$keep $(realpath "$d")" ;; esac
    done
    orig=$dir/orig-tmp
    mkdir -p "$orig"
    for i in 1 2; do
        unshare -n -u -m sh -c 'mount --bind /tmp "$1" && mount -t tmpfs tmpfs /tmp || exit 1
            o=$1; shift
            for d in "$@"; do mkdir -p "$d" && mount --bind "$o/${d#/tmp/}" "$d" || exit 1; done
            exec sleep 100000' sh "$orig" $keep &
        holders[$i]=$!
        pids+=($!)
    done
    sleep 0.2
    for i in 1 2; do
        if ! ip link add cdnv$i type veth peer name eth0 netns "${holders[$i]}" 2>/dev/null; then
            echo "SKIP: cannot create veth pairs into a network namespace"
            exit 77
        fi
        ip link set cdnv$i master cdnbr0 up
        nsenter -t "${holders[$i]}" -n -u -m sh -c "hostname node$i && ip link set lo up &&
            ip addr add 10.77.0.1$i/24 dev eth0 && ip link set eth0 up" || fail "setting up node$i"
    done
    # CADENCE_TEST_NETEM (e.g. "loss 1%"): a lossy link, the bridge's end
    # of each host's veth pair under tc netem; where netem is missing (no
    # sch_netem module) the test skips saying so.
    if [ -n "${CADENCE_TEST_NETEM:-}" ]; then
        for i in 1 2; do
            # shellcheck disable=SC2086
            if ! err=$(tc qdisc add dev cdnv$i root netem $CADENCE_TEST_NETEM 2>&1); then
                echo "SKIP: tc netem is not available here (tc qdisc add ... netem $CADENCE_TEST_NETEM: $err; the sch_netem module is missing)"
                exit 77
            fi
        done
        echo "ok: netem $CADENCE_TEST_NETEM on both hosts' links"
    fi
fi
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<CONF
ClusterName=cadence-test
SlurmctldHost=$host($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
CONF
if [ $multihost = 2 ]; then
    cat >>"$dir/slurm.conf" <<CONF
NodeName=node1 NodeAddr=10.77.0.11 NodeHostname=node1 CPUs=2 State=UNKNOWN
NodeName=node2 NodeAddr=10.77.0.12 NodeHostname=node2 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:2
CONF
else
    cat >>"$dir/slurm.conf" <<CONF
NodeName=cadence-node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
CONF
fi
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i >"$dir/ctld.out" 2>&1 &
pids+=($!)
if [ $multihost = 2 ]; then
    for i in 1 2; do
        mkdir -p "$dir/spool/node$i"
        nsenter -t "${holders[$i]}" -n -u -m slurmd -D -N node$i >"$dir/d$i.out" 2>&1 &
        pids+=($!)
    done
    want="idle idle"
else
    mkdir -p "$dir/spool/cadence-node"
    slurmd -D -N cadence-node >"$dir/d.out" 2>&1 &
    pids+=($!)
    want=idle
fi
state=
for _ in $(seq 150); do
    state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
    [ "$state" = "$want" ] && break
    sleep 0.2
done
[ "$state" = "$want" ] || fail "the Slurm nodes did not become idle (states '$state')"
if [ $multihost = 2 ]; then
    echo "ok: two-host Slurm cluster up (node1 10.77.0.11, node2 10.77.0.12, own hostnames)"
    for prog in "$@"; do
        out=$(CADENCE_TRANSPORT_REPORT=1 timeout 120 srun --mpi=pmix -N 2 -n 4 $prog 2>&1) ||
            fail "srun -N 2 -n 4 $prog: $out"
        printf '%s\n' "$out"
        # between the hosts: the transport named last in CADENCE_TRANSPORTS
        # (tcp by default) carried messages
        between=${CADENCE_TRANSPORTS:-shm,tcp}
        between=${between##*,}
        printf '%s\n' "$out" | grep -Eq "^cadence: rank [0-9]+: sent .*$between [1-9]" ||
            fail "srun -N 2 -n 4 $prog: no rank sent a message over $between"
        hosts=$(timeout 30 srun -N 2 -n 4 hostname 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
        echo "ok: srun --mpi=pmix -N 2 -n 4 $prog (ranks per host: $hosts; between them: $between)"
    done
    exit 0
fi
echo "ok: one-node Slurm cluster up (slurmctld :$ctld_port, slurmd :$d_port)"

out=$(timeout 60 srun --mpi=pmix -n 2 "$hello" 2>&1) || fail "srun hello: $out"
grep -q '^Hello from rank 0 of 2' <<<"$out" && grep -q '^Hello from rank 1 of 2' <<<"$out" ||
    fail "srun -n 2 hello: $out"
echo "ok: srun --mpi=pmix -n 2 hello"

out=$(timeout 60 srun -n 2 "$wireup" 2>&1) || fail "srun t_wireup: $out"
for r in 0 1; do
    grep -q "^rank $r size 2 appnum 0 local $r/2 universe 2 launched 1 modex ok$" <<<"$out" ||
        fail "rank $r's job facts or modex under Slurm: $out"
done
echo "ok: job facts and modex from Slurm's PMIx server (MpiDefault=pmix)"

out=$(timeout 60 srun -n 2 "$launch" abort 1 7 2>&1); rc=$?
[ $rc -eq 7 ] || fail "MPI_Abort(7) under srun exited $rc: $out"
grep -q 'MPI_Abort was called by rank 1 with error code 7' <<<"$out" || fail "abort message: $out"
echo "ok: MPI_Abort ends the Slurm step with its code"
