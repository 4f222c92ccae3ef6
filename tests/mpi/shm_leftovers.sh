#!/bin/sh
# shm_leftovers.sh MPIRUN [ARGS...]: run a job in which mpirun reports a
# rank killed ("rank N (pid P) killed by signal 9"), then check that the
# killed rank left nothing under /dev/shm named after its pid: libfabric's
# shm provider names its regions "PID:UID:N", and mpirun removes them
# (tools/mpirun/mpirun.c, remove_leftovers).  A region left behind made a
# later process that got the same pid fail MPI_Init.
set -u
out=$(timeout 60 "$@" 2>&1)
pids=$(printf '%s\n' "$out" | sed -n 's/.*rank [0-9]* (pid \([0-9]*\)) killed by signal 9.*/\1/p')
if [ -z "$pids" ]; then
    printf 'FAIL: no rank was reported killed; output:\n%s\n' "$out"
    exit 1
fi
for p in $pids; do
    left=$(ls /dev/shm 2>/dev/null | grep -E "^$p:" || true)
    if [ -n "$left" ]; then
        printf 'FAIL: killed rank (pid %s) left /dev/shm/%s\n' "$p" "$left"
        exit 1
    fi
done
printf 'ok: killed rank(s) %s left nothing under /dev/shm\n' "$pids"
