#!/bin/sh
# maint/twohost/run-tests.sh: partitioned-engine tests with one rank on each of two namespace
# "hosts" (maint/twohost/twohost.sh), launched by hydra through its ssh launcher.
#
# Brings the hosts up (or prints "twohost: SKIP: <reason>" and exits 77), runs every test
# below in two modes, prints "ok - MODE/NAME" or "not ok - MODE/NAME" per test (with the end
# of its log on failure) and "N passed, M failed" last; exits 1 on any failure. The hosts
# are always torn down.
#
# Modes:  ucx      the tag transport over UCX, UCX_TLS=tcp,self on the veth
#         ofi-tcp  the RDMA transport forced, over libfabric's "tcp;ofi_rxm" on the veth
#                  (MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm)
# Tests:  hostcheck (maint/twohost/hostcheck.c: different hosts, no shared memory, bytes on
#         the veth), part/part_earlybird, part/part_sweep -n=100, part/part_vci with
#         MPIR_CVAR_CH4_NUM_VCIS=4, part/part_aggr_bounds, threads/part/part_thread_stress
#         -spart=64 -rpart=32, part/part_direct (direct completion over TCP; none under
#         the RDMA transport), threads/part/part_wait_parrived with one wire message per
#         iteration (direct completion while 3 threads poll MPI_Parrived), and the demo
#         (examples/part_demo.cpp --iters 5).
# MPICH's test programs are compiled into $TWOHOST_WORK from _src/ against the helper
# libraries of the test suite in $TESTMPI_DIR (default <repo>/_build/test-mpi, configured by
# maint/test.sh); without them those tests are skipped.
#
# Environment: PREFIX (default <repo>/_install), TESTMPI_DIR, TWOHOST_MODES (default
# "ucx ofi-tcp"), TWOHOST_TIMEOUT (seconds per test, default 60), TWOHOST_GRACE (seconds a
# job may still run after its program printed its success line, default 10), TWOHOST_RETRIES
# (how often a job that hung after success is run again, default 0: such a hang fails),
# TWOHOST_WORK (logs and built programs, default /tmp/twohost-work), and those of twohost.sh.

set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PREFIX=${PREFIX:-$top/_install}
TESTMPI_DIR=${TESTMPI_DIR:-$top/_build/test-mpi}
TWOHOST_MODES=${TWOHOST_MODES:-ucx ofi-tcp}
TWOHOST_TIMEOUT=${TWOHOST_TIMEOUT:-60}
TWOHOST_GRACE=${TWOHOST_GRACE:-10}
TWOHOST_RETRIES=${TWOHOST_RETRIES:-0}
TWOHOST_WORK=${TWOHOST_WORK:-/tmp/twohost-work}
export PREFIX
th=$here/twohost.sh
t0=$(date +%s)

"$th" up
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "twohost: bringing the hosts up failed (status $rc)"; "$th" down; exit 1; }
cleanup() { "$th" down > /dev/null 2>&1; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM HUP

rm -rf "$TWOHOST_WORK"
mkdir -p "$TWOHOST_WORK/logs" || exit 1
passed=0 failed=0 skipped=0 hung=0

# ---- programs ---------------------------------------------------------------------------
build_log=$TWOHOST_WORK/logs/build.log
hostcheck=$TWOHOST_WORK/hostcheck
demo=$TWOHOST_WORK/part_demo
"$PREFIX/bin/mpicc" -O2 -o "$hostcheck" "$here/hostcheck.c" >> "$build_log" 2>&1 || hostcheck=
"$PREFIX/bin/mpicxx" -std=c++17 -O2 -pthread -o "$demo" "$top/examples/part_demo.cpp" \
    >> "$build_log" 2>&1 || demo=

# The MPICH test programs are compiled here from the assembled tree's sources against the
# helper libraries of the configured test suite (not made inside it: MPICH's runtests
# deletes its programs after running them, and may be running there right now).
. "$top/maint/base.conf"
tsrc=$top/_src/mpich-$BASE_VERSION/test/mpi
testprog() {    # testprog DIR/NAME -> path of the compiled program, or nothing
    src=$tsrc/$1.c
    out=$TWOHOST_WORK/$(basename "$1")
    case $1 in
        threads/*) flags="-DMTEST_USE_THREAD" lib=libmtest_thread.a ;;
        *) flags="" lib=libmtest_single.a ;;
    esac
    if [ ! -f "$src" ] || [ ! -f "$TESTMPI_DIR/include/mpitestconf.h" ] \
       || [ ! -f "$TESTMPI_DIR/util/.libs/$lib" ]; then
        echo "no $src, or $TESTMPI_DIR not configured and its util/ not built (maint/test.sh)" \
            >> "$build_log"
        return 0
    fi
    # shellcheck disable=SC2086
    "$PREFIX/bin/mpicc" -O2 -DHAVE_CONFIG_H $flags -I"$TESTMPI_DIR/include" -I"$tsrc/include" \
        -I"$tsrc/dtpools/include" -o "$out" "$src" "$TESTMPI_DIR/dtpools/src/.libs/libdtpools.a" \
        "$TESTMPI_DIR/util/.libs/$lib" -lpthread >> "$build_log" 2>&1 && echo "$out"
}

# ---- one test ---------------------------------------------------------------------------
# What a program prints when all its checks passed (MPICH's mtest, the demo, hostcheck).
success_re='^ No Errors$|^part_demo: all data verified|^hostcheck: all checks passed'

# run_once LOG ENV... -- MPIEXEC ARGS: runs the job, stops it at the timeout or when it still
# runs $TWOHOST_GRACE s after the program reported success; sets rc and how ("" or "timeout"
# or "hung-after-success").
run_once() {
    log=$1
    shift
    MPIEXEC_TIMEOUT=$((TWOHOST_TIMEOUT + 10)) "$th" run "$@" > "$log" 2>&1 &
    pid=$!              # mpiexec itself (twohost.sh and fake-ssh exec into it)
    how="" n=0 since=""
    while kill -0 "$pid" 2> /dev/null; do
        sleep 0.5
        n=$((n + 1))
        if [ -z "$since" ] && grep -Eq "$success_re" "$log"; then since=$n; fi
        if [ -n "$since" ] && [ $((n - since)) -ge $((TWOHOST_GRACE * 2)) ]; then
            how="hung-after-success"
        elif [ $n -ge $((TWOHOST_TIMEOUT * 2)) ]; then
            how=timeout
        fi
        if [ -n "$how" ]; then
            kill -TERM "$pid" 2> /dev/null
            sleep 1
            kill -KILL "$pid" 2> /dev/null
            break
        fi
    done
    wait "$pid"
    rc=$?
    "$th" reap
    [ -z "$how" ] || rc=124
}

# run_test NAME NPROCS "ENV=VALUE ..." PROGRAM [ARGS...]   (an empty PROGRAM: skipped)
run_test() {
    name=$1 np=$2 envs=$3 prog=$4
    shift 4
    if [ -z "$prog" ]; then
        echo "ok - $name # SKIP not built (see $build_log)"
        skipped=$((skipped + 1))
        return
    fi
    base=$TWOHOST_WORK/logs/$(echo "$name" | tr '/' '_')
    genv=
    for e in $envs; do
        genv="$genv -genv ${e%%=*} ${e#*=}"
    done
    ts=$(date +%s)
    note=""
    attempt=0
    while :; do
        log=$base.log
        # shellcheck disable=SC2086
        run_once "$log" $genv -n "$np" "$prog" "$@"
        # A job that hangs after its success line (MPI_Finalize over UCX's tcp transport did,
        # until maint/patches/0011) fails, unless TWOHOST_RETRIES allows running it again.
        if [ "$how" = hung-after-success ] && [ $attempt -lt "$TWOHOST_RETRIES" ]; then
            attempt=$((attempt + 1))
            mv "$log" "$base.hung$attempt.log"
            note="$note; run $attempt hung after reporting success (MPI_Finalize?), retried"
            hung=$((hung + 1))
            continue
        fi
        break
    done
    dt=$(( $(date +%s) - ts ))
    if [ $rc -eq 0 ] && grep -Eq "$success_re" "$log"; then
        echo "ok - $name (${dt} s$note)"
        passed=$((passed + 1))
    else
        case $how in
            timeout) why="timeout after ${TWOHOST_TIMEOUT} s" ;;
            hung-after-success) why="hung after reporting success (MPI_Finalize?)" ;;
            *) if [ $rc -eq 0 ]; then why="no success line in its output"; else why="status $rc"; fi ;;
        esac
        echo "not ok - $name ($why, ${dt} s$note; log $log)"
        tail -15 "$log" | sed 's/^/#   /'
        failed=$((failed + 1))
    fi
    # the evidence: host names, shared-memory peers, bytes on the veth; UCX's transports
    # (UCX_LOG_LEVEL=info) and the RDMA transport's provider (MPIR_CVAR_DEBUG_SUMMARY=1)
    grep -h '^rank [0-9]* of [0-9]* on' "$log" | sed 's/^/#   /'
    grep -h 'ep_cfg\[0\]' "$log" | sed 's/^.*\[\([^]]*\)\].*ep_cfg/[\1] ep_cfg/; s/^/#   /'
    grep -hi 'partitioned engine: RDMA' "$log" | sort -u | head -4 | sed 's/^/#   /'
}

p_early=$(testprog part/part_earlybird)
p_sweep=$(testprog part/part_sweep)
p_vci=$(testprog part/part_vci)
p_aggr=$(testprog part/part_aggr_bounds)
p_stress=$(testprog threads/part/part_thread_stress)
p_direct=$(testprog part/part_direct)
p_wait=$(testprog threads/part/part_wait_parrived)

for mode in $TWOHOST_MODES; do
    case $mode in
        ucx) menv= ;;
        ofi-tcp) menv="MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm" ;;
        *) echo "twohost: unknown mode $mode (ucx, ofi-tcp)"; exit 1 ;;
    esac
    echo "# mode $mode${menv:+: $menv}"
    run_test "$mode/hostcheck" 2 "$menv UCX_LOG_LEVEL=info" "$hostcheck"
    run_test "$mode/part_earlybird" 2 "$menv" "$p_early"
    run_test "$mode/part_sweep" 2 "$menv" "$p_sweep" -n=100
    run_test "$mode/part_vci" 2 "$menv MPIR_CVAR_CH4_NUM_VCIS=4" "$p_vci"
    run_test "$mode/part_aggr_bounds" 2 "$menv" "$p_aggr"
    run_test "$mode/part_thread_stress" 2 "$menv" "$p_stress" -spart=64 -rpart=32
    run_test "$mode/part_direct" 2 "$menv" "$p_direct"
    run_test "$mode/part_wait_parrived" 2 "$menv MPIR_CVAR_PART_AGGR_SIZE=1048576" "$p_wait" \
        -iter=400
    run_test "$mode/demo" 2 "$menv MPIR_CVAR_DEBUG_SUMMARY=1" "$demo" --iters 5
done

echo "# two hosts: $(( $(date +%s) - t0 )) s in all; logs in $TWOHOST_WORK/logs"
[ $skipped -eq 0 ] || echo "# $skipped skipped"
[ $hung -eq 0 ] || echo "# $hung run(s) hung after reporting success and were retried (logs *.hung*.log)"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ] && exit 0
exit 1
