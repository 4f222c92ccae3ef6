#!/bin/sh
# expect_exit.sh STATUS PATTERN PROGRAM [ARGS...]
# Run PROGRAM under a timeout; pass if it exits with STATUS and its output
# (stdout and stderr together) matches the extended regex PATTERN, and
# also each line of EXPECT_ALSO when that is set (e.g. one rank's report
# and mpirun's).
set -u
want=$1 pattern=$2
shift 2
out=$(timeout 30 "$@" 2>&1)
got=$?
if [ "$got" -ne "$want" ]; then
    printf 'FAIL: %s exited %d, expected %d; output:\n%s\n' "$*" "$got" "$want" "$out"
    exit 1
fi
nl='
'
patterns=$pattern${EXPECT_ALSO:+$nl$EXPECT_ALSO}
set -f
old_ifs=$IFS
IFS=$nl
for p in $patterns; do
    IFS=$old_ifs
    if ! printf '%s\n' "$out" | grep -Eq -- "$p"; then
        printf 'FAIL: output of %s does not match /%s/:\n%s\n' "$*" "$p" "$out"
        exit 1
    fi
done
printf 'ok: %s exited %d and printed /%s/\n' "$*" "$got" "$pattern"
