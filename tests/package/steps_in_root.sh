#!/bin/sh
# steps_in_root.sh DIR — install, select, swap, unswap and remove Cadence's
# Debian packages.  Run only by run_package_test.sh, chrooted into a
# throwaway overlay root: it calls dpkg and update-alternatives for real.
# DIR holds the two .debs, hello.c and hello.mpich (built by mpicc.mpich).
set -u

dir=$1
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
prefix=/usr/lib/$multiarch/cadence
devgroup=mpi-$multiarch
status=0
fail() {
    echo "FAIL: $*"
    status=1
}
ok() { echo "ok: $*"; }

# run LOG COMMAND...: under a timeout, output to LOG; a failure shows LOG.
run() {
    log=$1
    shift
    if ! timeout 180 "$@" >"$log" 2>&1; then
        fail "$* failed:"
        sed 's/^/    /' "$log"
        return 1
    fi
}
current() { update-alternatives --query "$1" 2>/dev/null | sed -n 's/^Value: //p'; }
alternatives_of() { update-alternatives --list "$1" 2>/dev/null | sort | tr '\n' ' '; }
# The file the loader would map for SONAME in PROGRAM (no LD_LIBRARY_PATH here).
resolves() { ldd "$2" | sed -n "s/^[[:space:]]*$1 => \\([^ ]*\\) .*/\\1/p"; }
# The library version string hello printed (the first line of a one-process
# run; rank 0's line among the ranks' interleaved output of an mpirun).
first_line() { head -n 1 "$1"; }
version_in() { grep -m 1 -E '^(Cadence MPI|MPICH Version)' "$1"; }
# cadence_report LOG N: each of ranks 0..N-1 printed Cadence's transport
# report (CADENCE_TRANSPORT_REPORT=1, at MPI_Finalize): Cadence's library
# ran in every process, and they were one job.
cadence_report() {
    r=0
    while [ "$r" -lt "$2" ]; do
        grep -q "^cadence: rank $r: sent " "$1" || return 1
        r=$((r + 1))
    done
}
# cadence_job OUT WHAT: OUT, hello's output from mpirun -n 2, shows one job
# of two ranks on Cadence's library.
cadence_job() {
    if grep -q '^Hello from rank 1 of 2' "$1" && version_in "$1" | grep -q '^Cadence MPI'; then
        ok "$2: $(version_in "$1")"
    else
        fail "$2 printed:"
        cat "$1"
    fi
}

cd /tmp || exit 1
cp "$dir/hello.c" "$dir/hello.mpich" /tmp/
deb=$(ls "$dir"/cadence-mpi_*.deb)
swapdeb=$(ls "$dir"/cadence-mpi-swap_*.deb)

# A machine that has Cadence's packages installed: take them out of this
# root first, so the steps start from Debian's MPI packages alone.
for pkg in cadence-mpi-swap cadence-mpi; do
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q ' installed$'; then
        run purge.log dpkg --purge "$pkg" || exit 1
    fi
done

# ---- before: what Debian's packages chose ----
# snapshot: per group, the selected alternative and all alternatives.
snapshot() {
    for g in mpi mpirun "$devgroup"; do
        echo "$g: $(current "$g") $(update-alternatives --query "$g" | sed -n "s/^Status: //p") [$(alternatives_of "$g")]"
    done
}
snapshot >before.txt
run mpich0.out ./hello.mpich && case "$(first_line mpich0.out)" in
    MPICH*) ok "before: hello.mpich runs on MPICH" ;;
    *) fail "before: hello.mpich printed '$(first_line mpich0.out)', not MPICH's version" ;;
esac

# ---- install: registered in Debian's groups, nothing selected ----
run dpkg-i.log dpkg -i "$deb" || { echo "cannot go on"; exit 1; }
if [ ! -x "$prefix/bin/mpirun" ] || [ ! -f "$prefix/include/mpi.h" ]; then
    fail "$prefix is not populated"
fi
if ! objdump -p "$prefix/lib/libmpich.so.12" 2>/dev/null | grep -q 'SONAME *libmpich\.so\.12$'; then
    fail "the package's libmpich.so.12 is not a library with that SONAME ($(ls -l "$prefix/lib/libmpich.so.12"))"
fi
for pair in mpi:/usr/bin/mpicc.cadence mpirun:/usr/bin/mpirun.cadence "$devgroup:$prefix/include"; do
    g=${pair%%:*} alt=${pair#*:}
    line=$(update-alternatives --query "$g" | grep -A1 "^Alternative: $alt\$" | sed -n 's/^Priority: //p')
    if [ -z "$line" ]; then
        fail "install: $alt is not an alternative of group $g"
    elif [ "$line" -gt 40 ]; then
        fail "install: $alt has priority $line, above Debian's MPICH (40)"
    else
        ok "install: $g offers $alt (priority $line)"
    fi
done
# Installing never takes a group over from Debian's MPICH or Open MPI.
for g in mpi mpirun "$devgroup"; do
    was=$(sed -n "s/^$g: \([^ ]*\) .*/\1/p" before.txt)
    [ -z "$was" ] || [ "$(current "$g")" = "$was" ] ||
        fail "install: group $g switched from $was to $(current "$g")"
done

# ---- select: update-alternatives --set, as a user would ----
for pair in mpi:/usr/bin/mpicc.cadence mpirun:/usr/bin/mpirun.cadence "$devgroup:$prefix/include"; do
    update-alternatives --set "${pair%%:*}" "${pair#*:}" >/dev/null || fail "update-alternatives --set $pair failed"
done
for pair in /usr/bin/mpicc:"$prefix/bin/mpicc" /usr/bin/mpirun:"$prefix/bin/mpirun" \
    /usr/bin/mpiexec:"$prefix/bin/mpirun" "/usr/include/$multiarch/mpi/mpi.h:$prefix/include/mpi.h" \
    "/usr/lib/$multiarch/libmpi.so:$prefix/lib/libmpi.so.12.0.0" \
    "/usr/lib/$multiarch/pkgconfig/mpi.pc:$prefix/lib/pkgconfig/mpi.pc"; do
    link=${pair%%:*} target=${pair#*:}
    [ "$(readlink -f "$link")" = "$(readlink -f "$target")" ] ||
        fail "select: $link leads to $(readlink -f "$link"), not $target"
done
[ $status -eq 0 ] && ok "select: mpicc, mpirun, mpiexec, mpi.h, libmpi.so, mpi.pc lead to $prefix"
# pkg-config mpi (Debian's mpi.pc alternative) gives Cadence's flags.
flags=$(pkg-config --cflags --libs mpi 2>&1)
case "$flags" in
    *"-I$prefix/include"*"-L$prefix/lib"*) ok "select: pkg-config mpi: $flags" ;;
    *) fail "select: pkg-config mpi gives '$flags'" ;;
esac
# Compile with the system mpicc: the wrapper reached through the
# alternative's links must find its own tree.
mpicc=/usr/bin/mpicc
/usr/bin/mpicc --showme:incdirs 2>/dev/null | grep -qx "$prefix/include" ||
    fail "/usr/bin/mpicc does not resolve its links (it answers '$(/usr/bin/mpicc --showme:incdirs 2>&1)')"
run cc.log "$mpicc" hello.c -o hello.cadence &&
    run hello.out /usr/bin/mpirun --timeout 60 -n 2 ./hello.cadence &&
    cadence_job hello.out "select: $mpicc, then /usr/bin/mpirun -n 2"
# Linked through pkg-config alone, run through /usr/bin/mpiexec.
# shellcheck disable=SC2046
run pc.log gcc hello.c -o hello.pc $(pkg-config --cflags --libs mpi) &&
    run hello-pc.out /usr/bin/mpiexec --timeout 60 -n 2 ./hello.pc &&
    cadence_job hello-pc.out "select: gcc \$(pkg-config --cflags --libs mpi), then /usr/bin/mpiexec -n 2"
# A user raises the priority: --install again with a higher number (and the
# same slaves), then auto mode picks Cadence.
update-alternatives --install /usr/bin/mpirun mpirun /usr/bin/mpirun.cadence 60 \
    --slave /usr/bin/mpiexec mpiexec /usr/bin/mpiexec.cadence >/dev/null &&
    update-alternatives --auto mpirun >/dev/null
if [ "$(current mpirun)" = /usr/bin/mpirun.cadence ] && [ "$(readlink -f /usr/bin/mpiexec)" = "$prefix/bin/mpirun" ]; then
    ok "select: priority 60 + --auto picks Cadence's mpirun and mpiexec"
else
    fail "select: raising the priority left mpirun at $(current mpirun)"
fi

# ---- swap: MPICH-built programs load Cadence, no LD_LIBRARY_PATH ----
run dpkg-swap.log dpkg -i "$swapdeb" || { echo "cannot go on"; exit 1; }
got=$(ldconfig -p | sed -n 's/^[[:space:]]*libmpich\.so\.12 (.*) => //p' | head -n 1)
if [ "$(readlink -f "$got")" = "$(readlink -f "$prefix/lib/libmpich.so.12")" ]; then
    ok "swap: ldconfig offers $got first for libmpich.so.12"
else
    fail "swap: ldconfig offers '$got' first for libmpich.so.12"
fi
# runs_on_cadence PROGRAM: its libmpich.so.12 is Cadence's.
runs_on_cadence() {
    r=$(resolves libmpich.so.12 "$1")
    [ "$(readlink -f "$r")" = "$(readlink -f "$prefix/lib/libmpich.so.12")" ] &&
        [ "$(readlink -f "$(resolves libmpi.so.12 "$1")")" = "$(readlink -f "$prefix/lib/libmpi.so.12")" ]
}
runs_on_cadence ./hello.mpich || fail "swap: hello.mpich resolves libmpich.so.12 to $(resolves libmpich.so.12 ./hello.mpich)"
run swap.out /usr/bin/mpirun --timeout 60 -n 2 ./hello.mpich &&
    cadence_job swap.out "swap: hello.mpich (built by mpicc.mpich), /usr/bin/mpirun -n 2"
if [ -x /usr/bin/NPmpich2 ]; then
    runs_on_cadence /usr/bin/NPmpich2 ||
        fail "swap: NPmpich2 resolves libmpich.so.12 to $(resolves libmpich.so.12 /usr/bin/NPmpich2)"
    run np.log env CADENCE_TRANSPORT_REPORT=1 /usr/bin/mpirun --timeout 60 -n 2 \
        /usr/bin/NPmpich2 -u 4096 -n 20 -p 0 -o np.out &&
        if [ "$(wc -l <np.out)" -ge 10 ] && grep -q '^ *4096 ' np.out && cadence_report np.log 2; then
            ok "swap: Debian's NPmpich2 ran 2 ranks on Cadence ($(wc -l <np.out) sizes, up to 4096 bytes; $(grep -c '^cadence: rank' np.log) Cadence transport reports)"
        else
            fail "swap: NPmpich2 wrote:"
            cat np.out np.log
        fi
else
    echo "NOTE: /usr/bin/NPmpich2 not installed (netpipe-mpich2; tools/setup-deps.sh): not run"
fi
scalapack=/usr/lib/$multiarch/scalapack/mpich-tests
if [ -x "$scalapack/xdlu" ]; then
    runs_on_cadence "$scalapack/xdlu" ||
        fail "swap: xdlu resolves libmpich.so.12 to $(resolves libmpich.so.12 "$scalapack/xdlu")"
    mkdir -p /tmp/scalapack && cp "$scalapack/LU.dat" /tmp/scalapack/
    (cd /tmp/scalapack &&
        run /tmp/xdlu.out env CADENCE_TRANSPORT_REPORT=1 /usr/bin/mpirun --timeout 150 -n 4 "$scalapack/xdlu") &&
        # One summary: the 4 ranks were one job (MPICH's library under
        # Cadence's mpirun would run 4 one-process jobs, 4 summaries).
        if [ "$(grep -Ec '^ +[1-9][0-9]* tests completed and passed residual checks' xdlu.out)" -eq 1 ] &&
            grep -Eq '^ +0 tests completed and failed' xdlu.out && cadence_report xdlu.out 4; then
            ok "swap: Debian's ScaLAPACK xdlu on 4 ranks: $(grep -E 'completed and passed' xdlu.out | xargs)"
        else
            fail "swap: ScaLAPACK xdlu printed:"
            tail -n 20 xdlu.out
        fi
else
    echo "NOTE: $scalapack/xdlu not installed (scalapack-mpi-test; tools/setup-deps.sh): not run"
fi

# ---- remove the swap: MPICH answers again ----
run dpkg-r-swap.log dpkg -r cadence-mpi-swap
[ ! -e /etc/ld.so.conf.d/00-cadence-mpi-swap.conf ] || fail "unswap: the ld.so.conf.d entry is still there"
case "$(resolves libmpich.so.12 ./hello.mpich)" in
    "$prefix"/*) fail "unswap: hello.mpich still resolves libmpich.so.12 in $prefix" ;;
esac
run mpich1.out ./hello.mpich && case "$(first_line mpich1.out)" in
    MPICH*) ok "unswap: hello.mpich runs on MPICH again" ;;
    *) fail "unswap: hello.mpich printed '$(first_line mpich1.out)'" ;;
esac

# ---- remove: the groups are as Debian's packages left them ----
run dpkg-r.log dpkg -r cadence-mpi
[ ! -e "$prefix" ] || fail "remove: $prefix is still there: $(find "$prefix" | head -5)"
for w in mpicc mpirun mpiexec; do
    [ ! -e "/usr/bin/$w.cadence" ] || fail "remove: /usr/bin/$w.cadence is still there"
done
snapshot >after.txt
diff before.txt after.txt >/dev/null ||
    { fail "remove: the alternatives differ from before the install:"; diff before.txt after.txt; }
[ $status -eq 0 ] && ok "remove: mpi, mpirun and $devgroup are back to Debian's choices"
exit $status
