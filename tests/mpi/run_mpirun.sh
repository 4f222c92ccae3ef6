#!/bin/sh
# run_mpirun.sh TRANSPORT MPIRUN [MPIRUN ARGS...] — run a test job and check
# which transport carried its messages.
#
# Every rank is asked (CADENCE_TRANSPORT_REPORT=1) to print at MPI_Finalize
#     cadence: rank R: sent shm A, tcp B, self C
# for the transports it opened.  The test passes when mpirun exits 0, each
# of the job's ranks (mpirun's -n) reported, TRANSPORT carried more than
# zero messages in all and every other transport none.  A one-rank job has
# no peer: no transport may carry a message (self may, or nothing at all),
# whatever TRANSPORT says.
# mpirun's failure status is passed on as it is (so expect_exit.sh can wrap
# this script); a wrong transport exits 1, and so does a CADENCE_TEST_EXPECT
# (below) that no line of stderr matches.
set -u
want=$1
shift
n="" prev=""
for a in "$@"; do
    case $prev in -n | -np) n=$a; break ;; esac
    prev=$a
done
case $n in
'' | *[!0-9]*) echo "run_mpirun.sh: no rank count (-n N) in: $*" >&2; exit 2 ;;
esac
[ "$n" -eq 1 ] && want=self

err=$(mktemp "${TMPDIR:-/tmp}/cadence-run.XXXXXX") || exit 1
trap 'rm -f "$err"' EXIT
CADENCE_TRANSPORT_REPORT=1 "$@" 2>"$err"
rc=$?
cat "$err" >&2
if [ $rc -ne 0 ]; then
    echo "run_mpirun.sh: mpirun exited with status $rc" >&2
    exit $rc
fi
awk -v want="$want" -v n="$n" '
    /^cadence: rank [0-9]+: sent / {
        r = $3
        sub(/:$/, "", r)
        if (!(r in seen))
            ranks++
        seen[r] = 1
        line = $0
        sub(/^cadence: rank [0-9]+: sent /, "", line)
        k = split(line, parts, ",")
        for (i = 1; i <= k; i++)
            if (split(parts[i], f, " ") == 2)
                sent[f[1]] += f[2]
    }
    END {
        summary = ""
        for (t in sent)
            summary = summary " " t " " sent[t]
        bad = 0
        if (ranks != n) {
            printf "FAIL: %d of %d ranks printed a transport report\n", ranks, n
            bad = 1
        }
        if (want != "self" && sent[want] + 0 == 0) {
            printf "FAIL: %s carried no message (sent:%s)\n", want, summary
            bad = 1
        }
        for (t in sent)
            if (t != want && t != "self" && sent[t] > 0) {
                printf "FAIL: %s carried %d messages; only %s should have (sent:%s)\n",
                    t, sent[t], want, summary
                bad = 1
            }
        if (!bad && want == "self")
            printf "ok: one rank, no transport used (sent:%s)\n", summary
        else if (!bad)
            printf "ok: %d ranks, messages over %s (sent:%s)\n", n, want, summary
        exit bad
    }' "$err" || exit 1
# CADENCE_TEST_EXPECT: an extended regular expression some line of the
# job's stderr must match (a path a test must have taken, from a report
# line such as the shm transport's split-copy counts).
if [ -n "${CADENCE_TEST_EXPECT:-}" ] && ! grep -Eq -- "$CADENCE_TEST_EXPECT" "$err"; then
    echo "FAIL: no line of the job's stderr matches: $CADENCE_TEST_EXPECT"
    exit 1
fi
