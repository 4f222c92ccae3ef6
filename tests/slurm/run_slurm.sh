#!/bin/bash
# run_slurm.sh HELLO T_WIREUP T_LAUNCH — Cadence under Slurm's srun --mpi=pmix.
# Starts a private one-node Slurm cluster (slurmctld + slurmd from Debian's
# slurm-wlm, generated slurm.conf on 127.0.0.1, free ports, MpiDefault=pmix),
# runs Cadence programs with srun -n 2, and stops the cluster again.
# Skips (exit 77) with the reason only when Slurm is not installed or the
# daemons cannot be run by this user.
set -uo pipefail
hello=$1 wireup=$2 launch=$3
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
dir=$(mktemp -d)
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
    echo "--- slurmd log" >&2; tail -20 "$dir/slurmd.log" >&2
    exit 1
}

read -r ctld_port d_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<CONF
ClusterName=cadence-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
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
NodeName=cadence-node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i >"$dir/ctld.out" 2>&1 &
pids+=($!)
slurmd -D -N cadence-node >"$dir/d.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq 150); do
    state=$(timeout 5 sinfo -h -o %t 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.2
done
[ "$state" = idle ] || fail "the Slurm node did not become idle (state '$state')"
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
