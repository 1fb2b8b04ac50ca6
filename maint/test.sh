#!/bin/sh
# maint/test.sh: run every test of this project against the installed MPICH.
#
#   1. builds and installs first (maint/build.sh: incremental, installs missing packages)
#   2. GoogleTest unit tests of the engine's pure logic (unittest/, CTest); the verbs
#      emulator's own tests (test/verbs-emu/run-tests.sh, with Debian's ibv_rc_pingpong);
#      the RDMA backends' configure options (maint/configure-checks.sh): these three need no
#      libmpi and run beside the build (started once it has assembled _src/); then the verbs
#      backend's device selection and verbose lines on the emulator (maint/verbs-select.sh)
#   3. MPICH's test suite directories part/ and threads/part/ (testlist, testlist.dtp with the
#      datatype-pool pingping tests, and testlist.cvar with this project's engine tests)
#      through MPICH's runtests: once as is (shared memory between the two ranks), once with
#      MPIR_CVAR_NOLOCAL=1 (every message through the network module), then twice with the
#      RDMA transport forced (MPIR_CVAR_PART_TRANSPORT=ofi) over libfabric's shm and
#      tcp;ofi_rxm providers, and once over the verbs backend (MPIR_CVAR_PART_TRANSPORT=verbs)
#      on the verbs emulator (LD_LIBRARY_PATH=test/verbs-emu/build), adding testlist.verbs
#      (error completions, small queues, several queue pairs); testlist.dtp only in the
#      shm and ofi-shm modes; then part_badinput_fatal once more, its message checked
#   4. two hosts: network namespaces joined by a veth pair, hydra launching across them
#      (maint/twohost/run-tests.sh; reported as skipped where namespaces cannot be made)
#   5. the demo, which verifies its data
#   6. a short run of the calibration tool, whose file the demo then reads
#   7. a smoke run of the benchmark suite (bench/run.sh --smoke: our MPICH, a few sizes, data
#      verified), so that the suite cannot rot
# Writes TAP and JUnit files into _results/ and prints "N passed, M failed"; exits non-zero
# on any failure.
#
# Environment: PREFIX, BUILD_DIR as for maint/build.sh; TEST_MODES (default
# "shm nolocal ofi-shm ofi-tcp verbs");
# RESULTS (default _results/); MPITEST_TIMEOUT (seconds per test, default 300).

set -e
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/lib.sh"
. "$top/maint/base.conf"
PREFIX=${PREFIX:-$top/_install}
BUILD_DIR=${BUILD_DIR:-$top/_build}
export PREFIX BUILD_DIR
RESULTS=${RESULTS:-$top/_results}
TEST_MODES=${TEST_MODES:-shm nolocal ofi-shm ofi-tcp verbs}
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
# every step's header says when it starts, so that the log gives each phase's cost
step() { printf '==> %s  [at %s]\n' "$*" "$(elapsed)"; }

# ---- checks that need no MPICH build, beside the build ------------------------------------
# The unit tests, the verbs emulator's own tests and the configure options' checks need only
# Debian's packages and (configure-checks.sh) the assembled source tree, not libmpi. On a
# fresh machine they start once maint/build.sh has assembled _src/ (its "autogen" phase in
# $BUILD_DIR/.part-phases, which build.sh empties after installing the packages) and run
# beside MPICH's configure, which runs one process at a time (160-340 s). After the build
# they took 100-130 s; beside it they slow its configure by 60-90 s, so a cold run gains
# 60-110 s (README, "Time on a 2-core machine"). Their logs are read, and their results
# printed, after the build.
unit_tests() {      # the GoogleTest tests: build (log: unittest-build.log), then ctest's output
    ub=$BUILD_DIR/unittest
    cmake -S "$top/unittest" -B "$ub" -DCMAKE_BUILD_TYPE=Release > "$RESULTS/unittest-build.log" 2>&1 &&
        cmake --build "$ub" -j"$(nproc)" >> "$RESULTS/unittest-build.log" 2>&1 &&
        ( cd "$ub" && ctest --output-on-failure --output-junit "$RESULTS/unittest.junit.xml" )
}
side() {            # side NAME COMMAND...: its output into $RESULTS/NAME.log, its seconds into side-times
    n=$1; shift; t=$(date +%s)
    "$@" > "$RESULTS/$n.log" 2>&1 || true
    echo "$n $(( $(date +%s) - t ))" >> "$RESULTS/side-times"
}
side_checks() {
    for _ in $(seq 1 3600); do
        grep -q '^autogen ' "$BUILD_DIR/.part-phases" 2>/dev/null && break
        sleep 0.5
    done
    side unittest unit_tests
    side verbs-emu "$top/test/verbs-emu/run-tests.sh"
    side configure-checks "$top/maint/configure-checks.sh"
}
# test.sh runs them as "maint/test.sh --side-checks", in a process group of their own, at the
# lowest priority: the build's configure keeps the core it uses and they take what it leaves
if [ "${1:-}" = --side-checks ]; then side_checks; exit 0; fi

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
passed=0
failed=0
failures=""
skipped_groups=""
record() {      # record NAME PASSED FAILED
    passed=$((passed + $2))
    failed=$((failed + $3))
    [ "$3" -eq 0 ] || failures="$failures $1"
}

rm -f "$BUILD_DIR/.part-phases"
step "unit tests, verbs emulator, configure options: started, beside the build"
setsid nice -n 19 "$top/maint/test.sh" --side-checks > "$RESULTS/side-checks.log" 2>&1 &
side=$!
kill_side() { kill -- -"$side" 2>/dev/null || true; }
trap 'kill_side' EXIT
trap 'kill_side; exit 130' INT TERM HUP
"$top/maint/build.sh"        # on failure, set -e exits and the EXIT trap stops the checks
step "build done"
wait "$side" || true
trap - EXIT INT TERM HUP
side_time() { sed -n "s/^$1 //p" "$RESULTS/side-times" 2>/dev/null; }

# ---- unit tests -------------------------------------------------------------------------
step "unit tests (GoogleTest; ran beside the build: $(side_time unittest) s)"
if [ -s "$RESULTS/unittest.log" ]; then       # empty when the build of the tests failed
    tail -3 "$RESULTS/unittest.log"
    n_total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$RESULTS/unittest.log")
    n_fail=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$RESULTS/unittest.log")
    [ -n "$n_total" ] || { n_total=1; n_fail=1; }
    record unittest $((n_total - n_fail)) "$n_fail"
else
    tail -20 "$RESULTS/unittest-build.log" 2>/dev/null || tail -20 "$RESULTS/side-checks.log"
    record unittest-build 0 1
fi

# record_log NAME PATTERN CONTEXT: the "N passed, M failed" line of $RESULTS/NAME.log (a log
# without one counts as a failure) into the totals; prints the log's lines matching PATTERN
# with CONTEXT lines after each
record_log() {
    set -- "$1" "$2" "$3" $(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$RESULTS/$1.log" 2>/dev/null | tail -1)
    [ $# -eq 5 ] || { tail -20 "$RESULTS/$1.log" 2>/dev/null; set -- "$1" "$2" "$3" 0 1; }
    echo "    $4 passed, $5 failed"
    grep -A"$3" -e "$2" "$RESULTS/$1.log" | head -40 || true
    record "$1" "$4" "$5"
}
# run_group NAME SCRIPT: one of this project's TAP-ish check scripts, logged to $RESULTS/NAME.log
run_group() {
    "$2" > "$RESULTS/$1.log" 2>&1 || true
    record_log "$1" '^not ok' 8
}

# ---- the verbs emulator (test/verbs-emu: a test-only libibverbs.so.1) -------------------
step "verbs emulator (test/verbs-emu/run-tests.sh: its own checks and Debian's ibv_rc_pingpong; ran beside the build: $(side_time verbs-emu) s)"
record_log verbs-emu '^not ok' 8

# ---- configure options (maint/configure-checks.sh: MPICH's configure, stopped early) -------
step "configure options of the RDMA backends (maint/configure-checks.sh; ran beside the build: $(side_time configure-checks) s)"
record_log configure-checks '^not ok' 8

# the verbs backend's device selection and verbose lines, on the emulator (needs the
# installed MPICH: its mpichversion)
step "verbs backend selection (maint/verbs-select.sh: device, port, GID, RoCE, auto, mpichversion)"
run_group verbs-select "$top/maint/verbs-select.sh"

# ---- 64-bit iteration numbers stay 64 bits (maint/iter-width.sh: -Wconversion) -----------
step "no implicit narrowing of 64-bit values in the engine (maint/iter-width.sh, about 10 s)"
run_group iter-width "$top/maint/iter-width.sh"

# ---- MPICH's partitioned test directories -----------------------------------------------
tsrc=$top/_src/mpich-$BASE_VERSION/test/mpi
tb=$BUILD_DIR/test-mpi
testsuite_configure "$tb" "$PREFIX" "$RESULTS/testsuite" yes

# show_failures TAPFILE: each failed test's line, its arguments and environment (from the
# JUnit file beside it) and the first lines of its output, so that a failure in CI can be
# diagnosed from CI's log alone
show_failures() {
    awk '/^not ok/ { n++; show = (n <= 10); lines = 0; if (show) print; next }
         /^ok / { show = 0; next }
         show && /^## / && lines < 25 { print "    " $0; lines++ }' "$1" 2>/dev/null |
    while IFS= read -r line; do
        echo "$line"
        case $line in
            "not ok "*) num=${line#not ok }; num=${num%% *}
                grep -o "testcase name=\"$num - [^\"]*" "${1%.tap}.junit.xml" 2>/dev/null |
                    sed 's/^testcase name="/    as: /' ;;
        esac
    done
}

# clean_stale_shm: the shared-memory regions of libfabric's shm provider that test processes
# killed on purpose (part_peer_dies, fatal-error tests) leave in /dev/shm, 16 MiB each (sparse).
# The engine names them after their process (mpich-part.<pid>.<nonce>.<endpoint>), so those
# whose process is gone can be told apart and removed; prints how many.
clean_stale_shm() {
    n=0
    for f in /dev/shm/mpich-part.*; do
        [ -e "$f" ] || continue
        pid=${f#/dev/shm/mpich-part.}
        pid=${pid%%.*}
        if [ ! -d "/proc/$pid" ]; then
            rm -f "$f" && n=$((n + 1))
        fi
    done
    [ "$n" -eq 0 ] || echo "    removed $n shared-memory regions of killed test processes from /dev/shm"
}

tap_count() {   # tap_count TAPFILE [RUNTESTS_LOG] -> "passed failed"
    p=$(grep -c '^ok ' "$1" 2>/dev/null || true)
    f=$(grep -c '^not ok ' "$1" 2>/dev/null || true)
    p=${p:-0} f=${f:-0}
    [ -z "${2:-}" ] || f=$(runtests_failed "$2" "$f")     # maint/lib.sh
    echo "$p $f"
}

# a test that runs into its time limit leaves its ranks' stacks in $RESULTS/stacks/
# (maint/hangwatch.sh, at 80 % of the limit); each mode prints the frames of the new ones
command -v gdb >/dev/null 2>&1 || (need_tool gdb gdb) || echo "    (no gdb: stacks of programs over the limit will hold /proc lines only)"
"$top/maint/hangwatch.sh" "$RESULTS/stacks" $$ "${MPITEST_TIMEOUT:-300}" &
hangwatch=$!
trap 'kill $hangwatch 2>/dev/null || true' EXIT
trap 'kill $hangwatch 2>/dev/null || true; exit 130' INT TERM HUP
show_stacks() {     # show_stacks: the new stack files' engine and MPI frames
    for f in "$RESULTS"/stacks/*.txt; do
        [ -e "$f" ] && [ ! -e "$f.shown" ] || continue
        : > "$f.shown"
        echo "    stacks of a program over the limit: ${f#$top/} ($(head -1 "$f" | cut -c3-80))"
        grep -E '^Thread |^#[0-9]+ .* in (MPIDI_PART|MPID_|MPIR_Wait|MPIR_Test|P?MPI_|main)' "$f" |
            head -24 | sed 's/^/      /'
    done
}

# The test programs are compiled by the first mode and kept for the others
# (MPITEST_CLEANUP=0; runtests deletes each program after its run otherwise, and compiling
# them again cost about 4 minutes per mode).
# A testlist.cvar line that names its own transport (env=MPIR_CVAR_PART_TRANSPORT=...) runs
# the same way in every mode (it overrides the mode's transport; nolocal's MPIR_CVAR_NOLOCAL=1
# only moves MPICH's own messages), so it runs in the first mode only: the others read
# testlist.cvar.rest, testlist.cvar without those lines (44 lines, ~25 s per mode). And the
# RDMA transport carries only contiguous buffers (engine README: "The sender offers the RDMA
# transport only when..."), so in ofi-shm the datatype pool's other types take the shm
# mode's tag path again: ofi-shm reads testlist.dtp.rdma, testlist.dtp without its two
# 1 MiB lines (sendcnt=262144, ~45 s), every other count kept. In the nolocal mode a line
# with env=MPIR_CVAR_NOLOCAL=1 is the shm mode's run of it again (49 lines, ~30 s):
# testlist.cvar.nolocal leaves them out too. The lists are made here, in the test build's
# directories, where runtests looks before the source directory.

# A test that cannot run here (part_large without the memory) says so in this file; each
# mode's lines are printed after its run and gathered in skipped-all.txt.
PART_TEST_SKIP_FILE=$RESULTS/skipped.txt
export PART_TEST_SKIP_FILE
: > "$PART_TEST_SKIP_FILE"
first_mode=${TEST_MODES%% *}
for d in part threads/part; do
    grep -v 'env=MPIR_CVAR_PART_TRANSPORT=' "$tsrc/$d/testlist.cvar" > "$tb/$d/testlist.cvar.rest"
    grep -v 'env=MPIR_CVAR_NOLOCAL=1' "$tb/$d/testlist.cvar.rest" > "$tb/$d/testlist.cvar.nolocal"
done
grep -v 'sendcnt=262144' "$tb/part/testlist.dtp" > "$tb/part/testlist.dtp.rdma"
# part_large's variant B (an hvector buffer) takes the tag path in the RDMA modes, as in shm
# mode (the RDMA transport carries only contiguous buffers): they run A, C and D
sed 's/^part_large 2 /part_large 2 arg=-variants=ACD /' "$tsrc/part/testlist.large" > "$tb/part/testlist.large.rdma"
grep -q 'arg=-variants=ACD' "$tb/part/testlist.large.rdma" || die "testlist.large.rdma: no part_large line to change"

# The test programs are compiled two at a time before the first mode; runtests' own make then
# finds them up to date (compiled one by one inside the first mode they took ~75 s of it). A
# program that does not compile is left to runtests, which reports it as that test's failure.
step "test programs of part/ and threads/part/ (make -j2; a failure is reported by runtests)"
for d in part threads/part; do
    progs=$(cat "$tsrc/$d"/testlist* "$tb/$d"/testlist.dtp 2>/dev/null | awk '/^[A-Za-z_]/ { print $1 }' | sort -u)
    ( cd "$tb/$d" && make -j2 -k $progs ) > "$RESULTS/compile-$(echo "$d" | tr / -).log" 2>&1 ||
        echo "    some programs of $d did not compile (runtests reports them; $RESULTS/compile-*.log)"
done
for mode in $TEST_MODES; do
    cvar=testlist.cvar
    [ "$mode" = "$first_mode" ] || cvar=testlist.cvar.rest
    lists=testlist,testlist.dtp,$cvar,testlist.large
    case $mode in
        shm) envs="" ;;
        nolocal) envs="MPIR_CVAR_NOLOCAL=1"
            case " $TEST_MODES " in *" shm "*) [ "$cvar" = testlist.cvar ] || cvar=testlist.cvar.nolocal ;; esac
            # the datatype pingping sweeps take the same engine path as in shm mode (the
            # tag transport; only UCX's transport below differs): ~150 s for nothing new
            # (and part_large, testlist.large, likewise)
            lists=testlist,$cvar ;;
        ofi-shm) envs="MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm"
            lists=testlist,testlist.dtp.rdma,$cvar,testlist.large.rdma ;;
        ofi-tcp) envs="MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm FI_OFI_RXM_BUFFER_SIZE=1024"
            # FI_OFI_RXM_BUFFER_SIZE: ofi_rxm's buffers for its own eager messages and
            # injects, 16 KiB each by default, which it allocates and touches per endpoint
            # (17 MB, ~0.1 s each here; a test opens up to 4 endpoints per rank): ~0.4 s of
            # each line's ~1.0 s (2026-12-02). The engine sends no rxm messages and injects
            # nothing (only fi_writedata), so its path is the same with 1 KiB buffers; the
            # two-host tests run tcp;ofi_rxm with rxm's defaults.
            # the datatype pingping sweeps over the RDMA transport run in ofi-shm; here
            # they would add ~80 s of TCP round trips to CI's budget and nothing new
            lists=testlist,$cvar,testlist.large.rdma ;;
        verbs)
            # the emulator replaces libibverbs for our ranks only; UCX keeps to shared memory
            # and TCP (its InfiniBand modules would find the emulated device too)
            [ -f "$top/test/verbs-emu/build/libibverbs.so.1" ] || make -C "$top/test/verbs-emu" -j1 >/dev/null
            envs="LD_LIBRARY_PATH=$top/test/verbs-emu/build VERBSEMU_NS=part$$ UCX_TLS=self,sm,tcp MPIR_CVAR_PART_TRANSPORT=verbs"
            # testlist.dtp's datatype pingping sweeps stay out: under the emulator every
            # operation's registration reads /proc/self/maps, so each takes 10-60 s (about
            # 15 minutes in all); the engine's own suite covers the same code
            # part_large (testlist.large) neither: 2.5 GiB is above the emulated port's
            # max_msg_sz, so it would repeat the shm mode's tag run;
            # testlist.verbs's part_rdma_maxmsg tests that decision with 64 KiB
            lists=testlist,$cvar,testlist.verbs ;;
        *) die "unknown test mode '$mode' (shm, nolocal, ofi-shm, ofi-tcp, verbs)" ;;
    esac
    step "MPICH test suite part/ and threads/part/, mode $mode ${envs:+($envs)}"
    ( cd "$tb" && env $envs MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-300} MPITEST_CLEANUP=0 ./runtests -srcdir="$tsrc" \
        -tests=$lists -testdirs=part,threads/part \
        -mpiexec="$PREFIX/bin/mpiexec" -tapfile="$RESULTS/part-$mode.tap" \
        -junitfile="$RESULTS/part-$mode.junit.xml" -xmlfile="$RESULTS/part-$mode.xml" \
        -showprogress ) > "$RESULTS/part-$mode.log" 2>&1 || true
    set -- $(tap_count "$RESULTS/part-$mode.tap" "$RESULTS/part-$mode.log")
    [ "$1" -gt 0 ] || set -- 0 1        # ran nothing: a failure
    # a key runtests does not know (say "-x=1" for "arg=-x=1") is dropped with a line on
    # stderr and the test runs without it: a failure here
    if grep -q 'Unrecognized key' "$RESULTS/part-$mode.log"; then
        echo "    testlist keys runtests does not know (the line ran without them):"
        grep -o 'Unrecognized key .*' "$RESULTS/part-$mode.log" | sort -u | sed 's/^/      /'
        set -- "$1" $(($2 + 1))
    fi
    echo "    $1 passed, $2 failed"
    show_failures "$RESULTS/part-$mode.tap"
    if [ -s "$PART_TEST_SKIP_FILE" ]; then       # reported as passed by runtests
        sed "s/^/    SKIPPED in mode $mode (counted as passed): /" "$PART_TEST_SKIP_FILE"
        cat "$PART_TEST_SKIP_FILE" >> "$RESULTS/skipped-all.txt"
        : > "$PART_TEST_SKIP_FILE"
    fi
    show_stacks
    record "part-$mode" "$1" "$2"
    clean_stale_shm
done

# ---- a fatal bad input's message ----------------------------------------------------------
# runtests checks part_badinput_fatal (testlist.cvar, resultTest=TestErrFatal) by its exit
# status alone; here the same program's output must name the call and the problem.
step "a fatal bad input's message (part_badinput_fatal: MPI_Pready of partition 4 of 4)"
# Up to 3 attempts: once in a loaded run hydra lost the aborting rank's output (empty log,
# exit status 12 as usual); each attempt stays in the log.
( cd "$tb/part" && { [ -x part_badinput_fatal ] || make part_badinput_fatal; } ) \
    > "$RESULTS/badinput-fatal.log" 2>&1 || true
bf_ok=0
for attempt in 1 2 3; do
    rc=0
    ( cd "$tb/part" && timeout 120 "$PREFIX/bin/mpiexec" -n 2 ./part_badinput_fatal ) \
        > "$RESULTS/badinput-fatal.try" 2>&1 || rc=$?
    { echo "attempt $attempt: exit status $rc"; cat "$RESULTS/badinput-fatal.try"; } >> "$RESULTS/badinput-fatal.log"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'Fatal error in internal_Pready' "$RESULTS/badinput-fatal.try" \
       && grep -q 'Invalid partition, value is 4' "$RESULTS/badinput-fatal.try"; then
        bf_ok=1
        [ $attempt -eq 1 ] || echo "    found on attempt $attempt"
        break
    fi
done
if [ $bf_ok -eq 1 ]; then
    record badinput-fatal 1 0
else
    echo "    no attempt printed the message; the log:"
    tail -n 20 "$RESULTS/badinput-fatal.log"
    record badinput-fatal 0 1
fi

# ---- two hosts (maint/twohost: network namespaces joined by a veth, hydra across them) ----
step "two hosts (maint/twohost/run-tests.sh: UCX over TCP and the RDMA transport over tcp;ofi_rxm)"
rc=0
"$top/maint/twohost/run-tests.sh" > "$RESULTS/twohost.log" 2>&1 || rc=$?
if [ $rc -eq 77 ]; then
    echo "    SKIPPED: $(grep -m1 'SKIP' "$RESULTS/twohost.log")"
    skipped_groups="$skipped_groups twohost"
else
    record_log twohost '^not ok\|retried' 0
fi

# ---- the demo ---------------------------------------------------------------------------
step "demo (2 ranks, verifies every byte)"
if "$PREFIX/bin/mpicxx" -std=c++17 -O2 -Wall -Wextra -pthread -o "$BUILD_DIR/part_demo" \
        "$top/examples/part_demo.cpp" > "$RESULTS/demo-build.log" 2>&1 \
   && timeout 300 "$PREFIX/bin/mpiexec" -n 2 "$BUILD_DIR/part_demo" --iters 5 > "$RESULTS/demo.log" 2>&1; then
    record demo 1 0
else
    tail -n 20 "$RESULTS/demo-build.log" "$RESULTS/demo.log" 2>/dev/null || true
    record demo 0 1
fi

# ---- the calibration tool ------------------------------------------------------------------
# A short run over shared memory (3 sizes, 5 rounds): it must locate the protocol switch
# between 4 and 16 KiB (MPICH's shared memory changes protocol at 8256 bytes here) and
# write a file the engine reads (the demo again, with MPIR_CVAR_PART_LOGGP_FILE naming it:
# a file that does not parse fails MPI_Precv_init). Then the same with libfabric RDMA
# writes (-f shm, the RDMA transport's path), appended as table "rdma-shm": it must find
# libfabric shm's step from its inject buffer to a copy by system call between 4096 and
# 4097 bytes, and the demo must run over the RDMA transport with the file. That step shows
# in o_s + o_r on some days and only in the round trip (0.3-0.7 us of 3) on others
# (2026-11-29), so the tool looks for both and this run takes 15 rounds per value (no
# longer: the launch dominates its 3 s). It missed it in 5 of 42 runs on 2026-11-29
# (3 confirmations a few percent short, 2 bisections ended beside it) and in none of 40 since
# it confirms a step of the round trip on 0.25 us and 5 % and bisects again after a miss.
# A step of about 1 us can hide under a busy machine's noise (one run in 15 missed it here
# before the tool confirmed its brackets again, a third of the runs with a busy loop beside
# them; on 2026-11-28 3 attempts in a row missed libfabric shm's, before the tool measured
# a bracket's lower end again before deciding; on 2026-11-29 the MPI run took 3 attempts and
# the RDMA run missed 5 in a row, before the tool measured every lower end below 64 KiB again
# and looked for steps in the round trip), so each calibration gets up to 5 attempts
# (about 2 s each), each from the file as it was before;
# every attempt's output stays in the log, and an attempt beyond the first is reported.
step "calibration tool (tools/part-calibrate, short runs; the engine reads its file)"
cal=$BUILD_DIR/part_calibrate
calfile=$RESULTS/calibrate.loggp
# calibrate LOG PATTERN ARGS...: the tool on 2 ranks writing $calfile until its output
# has a line matching PATTERN, at most 8 attempts, the later ones 10, 20, ... 70 s apart
# (a phase of this VM that makes every round trip 3-4x slower, twice on 2026-11-30 at the
# end of a full run, lasted through 5 attempts within 2.5 minutes and hid MPICH's 8255/8256
# switch in each; minutes later 5 of 5 found it)
calibrate() {
    local log=$RESULTS/$1 pat=$2 attempt
    shift 2
    rm -f "$log" "$calfile.before"
    [ ! -f "$calfile" ] || cp "$calfile" "$calfile.before"
    for attempt in 1 2 3 4 5 6 7 8; do
        [ "$attempt" -eq 1 ] || sleep $(( (attempt - 1) * 10 ))
        [ ! -f "$calfile.before" ] || cp "$calfile.before" "$calfile"
        echo "## attempt $attempt: $*" >> "$log"
        timeout 300 "$PREFIX/bin/mpiexec" -n 2 "$cal" -o "$calfile" "$@" > "$log.try" 2>&1 \
            || { cat "$log.try" >> "$log"; return 1; }
        cat "$log.try" >> "$log"
        if grep -q "$pat" "$log.try"; then
            [ "$attempt" -eq 1 ] || echo "    ${log##*/}: found on attempt $attempt"
            return 0
        fi
    done
    return 1
}
partdir=$top/src/mpid/ch4/netmod/part       # the fit is the engine's (part_loggp_fit.c)
if "$PREFIX/bin/mpicc" -O2 -Wall -Wextra -c -o "$cal-fit.o" "$partdir/part_loggp_fit.c" \
        > "$RESULTS/calibrate-build.log" 2>&1 \
   && "$PREFIX/bin/mpicc" -O2 -Wall -Wextra -c -o "$cal-model.o" "$partdir/part_ploggp.c" \
        >> "$RESULTS/calibrate-build.log" 2>&1 \
   && "$PREFIX/bin/mpicxx" -std=c++17 -O2 -Wall -Wextra -DPART_CALIBRATE_OFI -I"$partdir" \
        -o "$cal" "$top/tools/part-calibrate/part_calibrate.cpp" \
        "$top/tools/part-calibrate/loggp_fit.cpp" "$cal-fit.o" "$cal-model.o" \
        "$top/tools/part-calibrate/ofi_link.cpp" -lfabric -lm >> "$RESULTS/calibrate-build.log" 2>&1 \
   && rm -f "$calfile" \
   && calibrate calibrate.log "^protocol switch between .* bytes (o_s" -t shm -s 1K,4K,16K -r 5 \
   && [ "$(grep -c '^[0-9]' "$calfile")" -ge 5 ] \
   && awk '/^[0-9]/ && NF != 7 { bad = 1 } END { exit bad }' "$calfile" \
   && MPIR_CVAR_PART_LOGGP_FILE="$calfile" timeout 300 "$PREFIX/bin/mpiexec" \
        -n 2 "$BUILD_DIR/part_demo" --iters 2 > "$RESULTS/calibrate-demo.log" 2>&1 \
   && calibrate calibrate-rdma.log "^protocol switch between 4096 and 4097 bytes (" \
        -a -t rdma-shm -f shm -s 1K,4K,16K -r 15 \
   && grep -q "^transport rdma-shm" "$calfile" \
   && [ "$(grep -c '^transport ' "$calfile")" -eq 2 ] \
   && MPIR_CVAR_PART_LOGGP_FILE="$calfile" MPIR_CVAR_PART_TRANSPORT=ofi \
        MPIR_CVAR_PART_OFI_PROVIDER=shm timeout 300 "$PREFIX/bin/mpiexec" \
        -n 2 "$BUILD_DIR/part_demo" --iters 2 > "$RESULTS/calibrate-rdma-demo.log" 2>&1; then
    record calibrate 1 0
else
    # (a log the chain did not reach is missing: tail's status must not end the script;
    # -n: coreutils refuses the obsolete -20 with several files, and printed nothing here)
    tail -n 20 "$RESULTS/calibrate-build.log" "$RESULTS/calibrate.log" \
        "$RESULTS/calibrate-demo.log" "$RESULTS/calibrate-rdma.log" \
        "$RESULTS/calibrate-rdma-demo.log" 2>/dev/null || true
    record calibrate 0 1
fi

# The tool's refusals, before it measures (a few seconds): each bad input stops it with exit
# status 2 and a line that names the input; a file that cannot be written (/dev/full)
# fails the run (status 1) instead of reporting success; -a with a table the file has
# already is refused (the engine would refuse the file); a third rank's run with -f does
# not hang (it took part in a barrier of the two ranks' link setup), nor does one whose
# provider does not open, nor one whose link setup fails on one rank.
step "calibration tool's refusals (bad options, unwritable output, a duplicate table, 3 ranks)"
calbad() {      # calbad WANT_RC PATTERN ARGS...: rc and a line matching PATTERN
    want=$1 pat=$2; shift 2
    rc=0
    out=$(timeout 60 "$PREFIX/bin/mpiexec" -n 2 "$cal" "$@" 2>&1) || rc=$?     # (set -e)
    echo "$ part_calibrate $* -> $rc" >> "$RESULTS/calibrate-refusals.log"
    echo "$out" >> "$RESULTS/calibrate-refusals.log"
    [ "$rc" -eq "$want" ] && echo "$out" | grep -q -- "$pat" && return 0
    echo "    part_calibrate $*: status $rc (expected $want), wanted a line matching '$pat'"
    return 1
}
: > "$RESULTS/calibrate-refusals.log"
printf 'transport shm\n0 1 2 3 4 5e-5\n' > "$BUILD_DIR/dup.loggp"
p=0 f=0
for c in "2|-n 1: not a number|-n 1" "2|-s 8,1073741824M: not a list|-s 8,1073741824M" \
         "2|at most 31 characters|-t abcdefghijabcdefghijabcdefghijab" \
         "2|'-bogus': unknown option|-bogus" "2|'-o': needs a value|-o" \
         "2|x: No such file or directory|-o /nonexistent-dir/x" \
         "1|writing /dev/full failed|-s 1K,4K -R -r 3 -o /dev/full -t shm" \
         "2|has a table of that name already|-s 1K -R -r 3 -a -o $BUILD_DIR/dup.loggp -t shm"; do
    want=${c%%|*} rest=${c#*|}
    pat=${rest%%|*} args=${rest#*|}
    # shellcheck disable=SC2086 # args are words
    if [ -x "$cal" ] && calbad "$want" "$pat" $args; then p=$((p + 1)); else f=$((f + 1)); fi
done
if [ -x "$cal" ] && timeout 60 "$PREFIX/bin/mpiexec" -n 3 "$cal" -s 1K,4K -R -r 3 -f shm \
        >> "$RESULTS/calibrate-refusals.log" 2>&1; then
    p=$((p + 1))
else
    echo "    part_calibrate -f shm with 3 ranks did not finish cleanly in 60 s"
    f=$((f + 1))
fi
# one rank's link setup failing after the provider opened (fi_getname, fi_av_insert; the
# tool's PART_CALIBRATE_DEBUG_FAIL): status 1 and a line on both ranks, no hang (the other
# rank waited in the next exchange for good)
for c in "getname:1|could not name its endpoint" "av_insert:0|could not set up its side"; do
    export PART_CALIBRATE_DEBUG_FAIL="${c%%|*}"
    if [ -x "$cal" ] && calbad 1 "${c#*|}" -s 1K -R -r 3 -f shm; then p=$((p + 1)); else f=$((f + 1)); fi
    unset PART_CALIBRATE_DEBUG_FAIL
done
# a provider that does not open, with 3 ranks: status 1 on every rank, no hang (the third
# rank waited in a barrier for two that had given up)
rc=0
timeout 60 "$PREFIX/bin/mpiexec" -n 3 "$cal" -s 1K -R -r 3 -f no-such-provider \
    >> "$RESULTS/calibrate-refusals.log" 2>&1 || rc=$?
if [ -x "$cal" ] && [ $rc -eq 1 ]; then
    p=$((p + 1))
else
    echo "    part_calibrate -f no-such-provider with 3 ranks: status $rc (expected 1; 124: hung)"
    f=$((f + 1))
fi
echo "    $p passed, $f failed"
record calibrate-refusals "$p" "$f"

# ---- benchmark smoke run ------------------------------------------------------------------
step "benchmark suite smoke run (bench/run.sh --smoke: tiny sweep, data verified)"
if PREFIX="$PREFIX" BENCH_OUT="$RESULTS/bench-smoke" timeout 600 "$top/bench/run.sh" --smoke \
        > "$RESULTS/bench-smoke.log" 2>&1; then
    record bench-smoke 1 0
else
    tail -20 "$RESULTS/bench-smoke.log"
    record bench-smoke 0 1
fi

step "all tests done; results in $RESULTS/"
[ -z "$failures" ] || echo "failed groups:$failures"
[ -z "$skipped_groups" ] || echo "skipped groups (see above why):$skipped_groups"
[ ! -s "$RESULTS/skipped-all.txt" ] ||
    echo "test lines that skipped themselves (counted as passed): $(wc -l < "$RESULTS/skipped-all.txt"), see $RESULTS/skipped-all.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
