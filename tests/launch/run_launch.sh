#!/bin/bash
# run_launch.sh CASE MPIRUN T_LAUNCH T_WIREUP — one launcher behaviour.
# Every case runs mpirun under `timeout` (a hang fails), then checks that no
# process of the case is left (each case marks its ranks with a unique
# environment token), that mpirun removed its PMIx directory (TMPDIR is
# private to the case) and that no new /dev/shm/cadence.* file remains.
set -uo pipefail
case_name=$1 mpirun=$2 prog=$3 wireup=$4
build=${CADENCE_BUILD_ROOT:?}
src=${CADENCE_SOURCE_ROOT:?}
work=$(mktemp -d)
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
export CDN_LAUNCH_TOKEN=$case_name.$$.$RANDOM
shm_before=$(ls /dev/shm | grep '^cadence\.' | sort)

fail() { echo "FAIL [$case_name]: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# run ARGS...: mpirun's output in $out, exit code in $rc, milliseconds in $ms
run() {
    local t0
    t0=$(date +%s%N)
    out=$(timeout -k 5 60 "$mpirun" "$@" 2>&1 </dev/null)
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ $rc -ne 124 ] || [[ $out == *"--timeout"* ]] || fail "mpirun $* hung (killed by timeout(1)): $out"
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit code $1, got $rc; output:
$out"; }
expect_out() { grep -qE -- "$1" <<<"$out" || fail "output lacks /$1/:
$out"; }
expect_fast() {  # the job must end promptly once a rank failed
    [ "$ms" -lt $(( $1 * 1000 )) ] || fail "took $ms ms, more than $1 s"
}

# start_waiting_job: a 2-rank job in the background ($mp: timeout(1) running
# mpirun), once both ranks wait in a loop reporting SIGTERM/SIGINT
start_waiting_job() {
    timeout -k 5 60 "$mpirun" -n 2 "$prog" term >"$work/out" 2>&1 </dev/null &
    mp=$!
    for _ in $(seq 100); do
        [ "$(grep -c waiting "$work/out")" -eq 2 ] && break
        sleep 0.1
    done
    [ "$(grep -c waiting "$work/out")" -eq 2 ] || fail "ranks did not start: $(cat "$work/out")"
}

leftovers() {
    local pids=()
    for e in /proc/[0-9]*/environ; do
        if grep -qzx "CDN_LAUNCH_TOKEN=$CDN_LAUNCH_TOKEN" "$e" 2>/dev/null; then
            local p=${e#/proc/}; p=${p%/environ}
            [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] && pids+=("$p")
        fi
    done
    echo "${pids[@]}"
}

check_clean() {
    sleep 0.2
    local left
    left=$(leftovers)
    if [ -n "$left" ]; then
        ps -o pid,ppid,stat,cmd -p ${left// /,} >&2
        kill -9 $left 2>/dev/null
        fail "processes left behind: $left"
    fi
    [ -z "$(ls -A "$TMPDIR")" ] || fail "files left in TMPDIR: $(ls -A "$TMPDIR")"
    local shm_after
    shm_after=$(ls /dev/shm | grep '^cadence\.' | sort)
    [ "$shm_before" = "$shm_after" ] || fail "shared-memory files left: $(comm -13 <(echo "$shm_before") <(echo "$shm_after"))"
    ok "no process, PMIx directory or shared-memory file left"
}
trap 'rm -rf "$work"' EXIT

case $case_name in
hello)
    run -n 2 "$prog" ok 2
    expect_rc 0
    [ "$(grep -c 'of 2 ok' <<<"$out")" -eq 2 ] || fail "expected two ranks: $out"
    expect_out '^rank 0 of 2 ok$'; expect_out '^rank 1 of 2 ok$'
    "$build/tools/mpicc" "$src/examples/hello.c" -o "$work/hello" || fail "mpicc hello.c"
    run -n 2 "$work/hello"
    expect_rc 0; expect_out '^Hello from rank 1 of 2'
    ok "mpirun -n 2 runs a 2-rank job" ;;
wireup)
    run -n 3 "$wireup"
    expect_rc 0
    for r in 0 1 2; do
        expect_out "^rank $r size 3 appnum 0 local $r/3 universe 3 launched 1 modex ok$"
    done
    ok "job facts and modex through PMIx" ;;
mpmd)
    run -n 1 "$wireup" : -n 2 "$wireup"
    expect_rc 0
    expect_out '^rank 0 size 3 appnum 0 '; expect_out '^rank 1 size 3 appnum 1 '
    expect_out '^rank 2 size 3 appnum 1 '
    run -n 1 "$prog" ok 3 : -np 2 "$prog" ok 3
    expect_rc 0; [ "$(grep -c 'of 3 ok' <<<"$out")" -eq 3 ] || fail "MPMD: $out"
    ok "MPMD with ':' sets app numbers" ;;
mpiexec-name)
    mpirun=$(dirname "$mpirun")/mpiexec
    [ -x "$mpirun" ] || fail "no mpiexec next to mpirun"
    run -n 2 "$prog" ok 2
    expect_rc 0; expect_out '^rank 1 of 2 ok$'
    ok "mpiexec is mpirun" ;;
oversubscribe)
    run -n 8 "$prog" ok 8
    expect_rc 0
    [ "$(grep -c 'of 8 ok' <<<"$out")" -eq 8 ] || fail "expected 8 ranks: $out"
    ok "8 ranks on $(nproc) cores" ;;
exit-codes)
    run -n 3 "$prog" exit-after-finalize 1 5
    expect_rc 5
    grep -q 'ending the job' <<<"$out" && fail "a non-zero exit after MPI_Finalize must not kill the job: $out"
    run -n 2 true; expect_rc 0
    run -n 2 false; expect_rc 1; expect_out 'rank [01] \(pid [0-9]+\) exited with status 1'
    ok "exit codes: 0 only when all ranks exit 0" ;;
abort)
    run -n 3 "$prog" abort 1 7
    expect_rc 7
    expect_out 'MPI_Abort was called by rank 1 with error code 7'
    expect_out '^mpirun: rank 1 \(pid [0-9]+\) aborted the job \(exit code 7\)'
    expect_fast 5
    ok "MPI_Abort ends the job with its code in $ms ms" ;;
killed-rank)
    run -n 3 "$prog" kill 1 9
    expect_rc 137
    pid=$(sed -n 's/^rank 1 pid \([0-9]*\) raising 9$/\1/p' <<<"$out")
    [ -n "$pid" ] || fail "rank 1 did not report its pid: $out"
    expect_out "^mpirun: rank 1 \(pid $pid\) killed by signal 9 \(Killed\)"
    expect_fast 5
    run -n 2 "$prog" kill 0 11
    expect_rc 139; expect_out 'rank 0 \(pid [0-9]+\) killed by signal 11 \(Segmentation fault\)'
    ok "a killed rank ends the job, named with its pid, in $ms ms" ;;
exit-without-finalize)
    run -n 3 "$prog" exit 2 3
    expect_rc 3
    expect_out '^mpirun: rank 2 \(pid [0-9]+\) exited with status 3 without calling MPI_Finalize'
    expect_fast 5
    run -n 2 "$prog" exit 0 0
    [ "$rc" -ne 0 ] || fail "exit(0) without MPI_Finalize must fail the job"
    ok "exit without MPI_Finalize ends the job" ;;
timeout)
    run --timeout 1.5 -n 2 "$prog" hang
    expect_rc 124
    expect_out 'ran longer than --timeout 1.5 s'
    expect_fast 8
    MPIEXEC_TIMEOUT=1 run -n 2 "$prog" hang
    expect_rc 124
    ok "--timeout ends a hung job" ;;
signal-forward)
    start_waiting_job
    kill -TERM $(pgrep -P $mp)   # the mpirun under timeout(1)
    wait $mp; rc=$?
    out=$(cat "$work/out")
    expect_rc 143
    expect_out '^rank 0 got signal 15$'; expect_out '^rank 1 got signal 15$'
    expect_out 'received signal 15'
    ok "SIGTERM is forwarded to every rank" ;;
mpirun-killed)
    start_waiting_job
    kill -KILL $(pgrep -P $mp)   # mpirun cannot clean up: the kernel ends its ranks
    wait $mp
    sleep 0.5
    # what only mpirun would have removed is the test's to clean
    rm -rf "$TMPDIR"/cadence-mpirun.*
    ok "ranks die with a SIGKILLed mpirun" ;;
stdio-lines)
    run -l -n 4 "$prog" lines 200
    expect_rc 0
    bad=$(grep -vE '^\[([0-3])\] (r\1-[0-9]+-[0-9]+\.){20}end$' <<<"$out" | head -3)
    [ -z "$bad" ] || fail "interleaved or untagged lines: $bad"
    [ "$(wc -l <<<"$out")" -eq 800 ] || fail "expected 800 lines, got $(wc -l <<<"$out")"
    ok "800 lines, whole and tagged with their rank" ;;
stdin)
    out=$(printf 'one\ntwo\nthree\n' | timeout 60 "$mpirun" -n 2 "$prog" stdin 2>&1); rc=$?
    expect_rc 0
    expect_out '^stdin: 3 lines 14 bytes$'
    grep -q 'read stdin' <<<"$out" && fail "stdin reached a rank other than 0: $out"
    out=$(timeout 60 "$mpirun" -n 2 "$prog" stdin 2>&1 <&-); rc=$?
    expect_rc 0; expect_out '^stdin: 0 lines 0 bytes$'
    ok "stdin goes to rank 0 only" ;;
env)
    export OUTER=outer
    run -x OUTER -x SET=direct -genv BAR bar -n 1 "$prog" env OUTER SET BAR BAZ : -env BAZ baz -n 1 "$prog" env OUTER SET BAR BAZ
    expect_rc 0
    expect_out '^rank 0 OUTER=outer$'; expect_out '^rank 0 SET=direct$'; expect_out '^rank 0 BAR=bar$'
    expect_out '^rank 0 BAZ=\(unset\)$'; expect_out '^rank 1 BAZ=baz$'
    run -genvnone -genv ONLY yes -n 1 "$prog" env ONLY OUTER
    expect_rc 0; expect_out '^rank 0 ONLY=yes$'; expect_out '^rank 0 OUTER=\(unset\)$'
    ok "-x, -genv, -env and -genvnone" ;;
wdir)
    mkdir -p "$work/wd"
    run -wdir "$work/wd" -n 2 "$prog" cwd
    expect_rc 0; expect_out "^rank 1 cwd $work/wd$"
    cp "$prog" "$work/wd/prog_copy"
    run -n 1 -wdir "$work/wd" ./prog_copy cwd
    expect_rc 0; expect_out "^rank 0 cwd $work/wd$"
    run -wdir "$work/none" -n 1 "$prog" cwd
    expect_rc 2; expect_out 'not a directory'
    ok "-wdir" ;;
binding)
    all=$(nproc)
    run -v -n 1 "$prog" bind
    cores=$(sed -n 's/^mpirun: \([0-9]*\) cores, .*/\1/p' <<<"$out")
    [ -n "$cores" ] || fail "mpirun -v did not report the cores: $out"
    run -n 1 --bind-to none "$prog" bind
    expect_rc 0; expect_out "^rank 0 cpus $all$"
    if [ "$cores" -ge 2 ]; then
        run -n 2 "$prog" bind
        expect_rc 0
        per=$(( all / cores ))
        expect_out "^rank 0 cpus $per$"; expect_out "^rank 1 cpus $per$"
        run -n 2 --bind-to hwthread "$prog" bind
        expect_rc 0; expect_out '^rank 1 cpus 1$'
    fi
    run -n $((cores * 2 + 1)) "$prog" bind
    expect_rc 0; expect_out "^rank 0 cpus $all$"
    run -n 2 -v --map-by numa "$prog" bind
    expect_rc 0
    ok "binding: core by default, none when oversubscribed ($cores cores, $all cpus)" ;;
bad-command-line)
    run --no-such-option -n 1 "$prog" ok 1; expect_rc 2; expect_out 'unknown option --no-such-option'
    run --host no-such-node.example -n 1 "$prog" ok 1; expect_rc 2
    expect_out "host 'no-such-node.example' is not this node"
    run --host localhost:2,"$(hostname)" -n 2 "$prog" ok 2; expect_rc 0
    run -n 1; expect_rc 2; expect_out 'no program to run'
    run -n 1 "$work/absent"; expect_rc 2; expect_out "cannot run '$work/absent'"
    run -n 0 "$prog"; expect_rc 2; expect_out 'not a positive number'
    run --bind-to socks -n 1 "$prog"; expect_rc 2; expect_out 'expected core, hwthread or none'
    run --version; expect_rc 0; expect_out 'Cadence MPI'
    run --help; expect_rc 0; expect_out '^Usage: mpirun'
    ok "bad command lines get a clear message and exit code 2" ;;
install)
    DESTDIR=$work/dest meson install -C "$build" --no-rebuild --quiet >/dev/null || fail "meson install"
    prefix=$work/dest$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
    [ -x "$prefix/bin/mpirun" ] && [ -x "$prefix/bin/mpiexec" ] || fail "mpirun/mpiexec not installed"
    "$prefix/bin/mpicc" "$src/examples/hello.c" -o "$work/hello" || fail "installed mpicc"
    mpirun=$prefix/bin/mpirun run -n 2 "$work/hello"
    expect_rc 0; expect_out '^Hello from rank 1 of 2'
    mpirun=$prefix/bin/mpiexec run -n 2 "$work/hello"
    expect_rc 0; expect_out '^Hello from rank 0 of 2'
    ok "installed mpirun and mpiexec run an installed-mpicc program" ;;
other-launcher)
    # A Cadence program started by another MPI's launcher.
    command -v mpiexec.mpich >/dev/null || { echo "SKIP: mpiexec.mpich not installed (tools/setup-deps.sh installs MPICH)"; exit 77; }
    foreign() { out=$(timeout -k 5 60 "$@" 2>&1 </dev/null); rc=$?; }
    foreign mpiexec.mpich -n 2 "$prog" ok 2
    [ "$rc" -ne 0 ] || fail "mpiexec.mpich -n 2 must fail: $out"
    [ "$(grep -c "MPI_Init: started by MPICH's mpiexec (Hydra) or another PMI-1/PMI-2 launcher (PMI_SIZE=2), which Cadence cannot join.*start it with Cadence's mpirun" <<<"$out")" -eq 2 ] ||
        fail "each process must say once which launcher to use: $out"
    grep -q 'of 1 ok' <<<"$out" && fail "a process ran as a singleton: $out"
    CADENCE_ALLOW_SINGLETON=1 foreign mpiexec.mpich -n 2 "$prog" ok 1
    expect_rc 0; [ "$(grep -c '^rank 0 of 1 ok$' <<<"$out")" -eq 2 ] || fail "CADENCE_ALLOW_SINGLETON=1: $out"
    foreign mpiexec.mpich -n 1 "$prog" ok 1
    expect_rc 0; expect_out '^rank 0 of 1 ok$'
    # Open MPI's mpirun without a PMIx server (only its own variables)
    out=$(env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 timeout 30 "$prog" ok 2 2>&1); rc=$?
    [ "$rc" -ne 0 ] || fail "OMPI_COMM_WORLD_SIZE=2 without PMIx must fail: $out"
    expect_out "started by Open MPI's mpirun \(OMPI_COMM_WORLD_SIZE=2\)"
    if command -v mpirun.openmpi >/dev/null; then
        # Open MPI's mpirun is a PMIx server: Cadence joins it as one job
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            foreign mpirun.openmpi --oversubscribe --timeout 30 -n 2 "$prog" ok 2
        expect_rc 0; expect_out '^rank 0 of 2 ok$'; expect_out '^rank 1 of 2 ok$'
        rm -rf "$TMPDIR"/ompi.*
        ok "mpiexec.mpich -n 2 fails naming Cadence's mpirun; mpirun.openmpi -n 2 runs a 2-rank job"
    else
        ok "mpiexec.mpich -n 2 fails naming Cadence's mpirun (mpirun.openmpi not installed: not tried)"
    fi ;;
foreign-binary)
    # A program built against MPICH, started by Cadence's mpirun.
    command -v mpicc.mpich >/dev/null || { echo "SKIP: mpicc.mpich not installed (tools/setup-deps.sh installs MPICH)"; exit 77; }
    mpicc.mpich -D_GNU_SOURCE "$src/tests/launch/t_launch.c" -o "$work/t_mpich" || fail "mpicc.mpich t_launch.c"
    unset LD_LIBRARY_PATH  # meson test points it at the build tree: libmpich.so.12 would be Cadence's
    run --timeout 30 -n 2 "$work/t_mpich" ok 2
    [ "$rc" -ne 0 ] || fail "an MPICH program must not pass as singletons: $out"
    expect_out "^mpirun: rank [01] \(pid [0-9]+\) never connected: is it linked against another MPI\? ldd shows libmpich\.so\.12 => /[^ ]*libmpich\.so\.12; ending the job$"
    [ "$(grep -c 'never connected' <<<"$out")" -eq 1 ] || fail "one report expected: $out"
    # still running as a singleton: reported once it has not connected for a while
    run --timeout 30 -n 2 "$work/t_mpich" term
    [ "$rc" -eq 1 ] || fail "expected exit code 1, got $rc: $out"
    expect_out 'never connected: is it linked against another MPI\? ldd shows libmpich'
    expect_fast 10
    if command -v mpicc.openmpi >/dev/null; then
        mpicc.openmpi "$src/examples/hello.c" -o "$work/hello_ompi" || fail "mpicc.openmpi hello.c"
        run --timeout 30 -n 2 "$work/hello_ompi"
        [ "$rc" -ne 0 ] || fail "an Open MPI program must not pass as singletons: $out"
        expect_out 'never connected: is it linked against another MPI\? ldd shows libmpi\.so\.40 => '
        rm -rf "$TMPDIR"/ompi.*  # Open MPI's session directory, left by its killed singleton
    fi
    # the same binary on Cadence's libmpich.so.12 connects: a real 2-rank job
    run -x LD_LIBRARY_PATH="$build" --timeout 30 -n 2 "$work/t_mpich" ok 2
    expect_rc 0; expect_out '^rank 1 of 2 ok$'
    # programs without MPI never connect, and are fine
    run -n 2 hostname; expect_rc 0
    run -n 2 sleep 2.5; expect_rc 0
    run -n 2 sh -c 'exit 3'; expect_rc 3
    grep -q 'never connected' <<<"$out" && fail "a program without MPI was reported: $out"
    ok "an MPICH binary under Cadence's mpirun is reported (ldd), non-MPI programs are not" ;;
*)
    fail "unknown case" ;;
esac
check_clean
