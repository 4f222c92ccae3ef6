#!/bin/sh
# expect_exit.sh STATUS PATTERN PROGRAM [ARGS...]
# Run PROGRAM under a timeout; pass if it exits with STATUS and its output
# (stdout and stderr together) matches the extended regex PATTERN.
set -u
want=$1 pattern=$2
shift 2
out=$(timeout 30 "$@" 2>&1)
got=$?
if [ "$got" -ne "$want" ]; then
    printf 'FAIL: %s exited %d, expected %d; output:\n%s\n' "$*" "$got" "$want" "$out"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    printf 'FAIL: output of %s does not match /%s/:\n%s\n' "$*" "$pattern" "$out"
    exit 1
fi
printf 'ok: %s exited %d and printed /%s/\n' "$*" "$got" "$pattern"
