#!/usr/bin/env bash
# maint/verbs-select.sh: what the verbs backend says about itself, on the verbs emulator
# (test/verbs-emu): the verbose lines (MPIR_CVAR_DEBUG_SUMMARY=1) of MPIR_CVAR_PART_TRANSPORT=auto
# with and without a device, of a forced verbs transport on the device, port and GID the
# CVARs name (and on a RoCE port), the error of a forced transport without a device, and
# that mpichversion names the transports this build has. Each run is the demo
# (examples/part_demo.cpp), which checks every byte it receives.
# Prints TAP-ish "ok"/"not ok" lines and "N passed, M failed"; exits non-zero on a failure.
# Environment: PREFIX (default _install), BUILD_DIR (default _build).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$top/_install}
BUILD_DIR=${BUILD_DIR:-$top/_build}
emu=$top/test/verbs-emu/build
tmp=$(mktemp -d)
export VERBSEMU_NS="select.$$"
trap 'rm -rf "$tmp"; rm -f "/dev/shm/verbsemu.$VERBSEMU_NS"' EXIT

n=0 pass=0 fail=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
indent() { sed 's/^/#   /'; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

# ---- what the build has -------------------------------------------------------------------
conf=$(find "$BUILD_DIR" -maxdepth 3 -name mpichconf.h -path '*include*' | head -1)
ver=$("$PREFIX/bin/mpichversion" 2>&1)
if [ -z "$conf" ]; then
    nok "mpichconf.h of the build not found under $BUILD_DIR"; finish
fi
if grep -q '^#define MPIDI_CH4_PART_VERBS 1' "$conf"; then built=yes; else built=no; fi
if [ $built = yes ] && echo "$ver" | grep -q 'partitioned engine (transports: tag.*rdma over verbs'; then
    ok "mpichversion names the verbs backend this build has"
elif [ $built = no ] && echo "$ver" | grep -q 'partitioned engine (transports: tag' &&
     ! echo "$ver" | grep -q 'rdma over verbs'; then
    ok "mpichversion: partitioned engine without verbs, as built (--enable-part-verbs found no libibverbs or was no)"
else
    nok "mpichversion says what was built (MPIDI_CH4_PART_VERBS: $built)"; echo "$ver" | indent
fi
if [ $built = no ]; then
    echo "# this build has no verbs backend: the emulator runs below are not applicable"
    finish
fi
[ -f "$emu/libibverbs.so.1" ] || make -C "$top/test/verbs-emu" -j1 >/dev/null 2>&1 ||
    { nok "build the verbs emulator"; finish; }

# ---- the demo, on the emulator -------------------------------------------------------------
demo=$tmp/part_demo
if ! "$PREFIX/bin/mpicxx" -std=c++17 -O2 -pthread -o "$demo" "$top/examples/part_demo.cpp" >"$tmp/cc" 2>&1; then
    nok "build examples/part_demo.cpp"; indent <"$tmp/cc"; finish
fi

# run NAME ENV... : the demo with the emulator and the verbose level; output in $tmp/NAME
run() {
    local name=$1; shift
    env LD_LIBRARY_PATH="$emu" UCX_TLS=self,sm,tcp MPIR_CVAR_DEBUG_SUMMARY=1 "$@" \
        timeout 120 "$PREFIX/bin/mpiexec" -n 2 "$demo" --iters 2 --warmup 1 --sizes 64K \
        --threads 2 --parts-per-thread 4 --modes partitioned --timeout 30 >"$tmp/$name" 2>&1
}
# check NAME WANT-EXIT DESCRIPTION PATTERN... : exit status and every pattern (grep -E)
check() {
    local name=$1 want=$2 what=$3 rc=$4; shift 4
    local bad=""
    if [ "$want" = 0 ] && [ "$rc" -ne 0 ]; then bad="exit $rc"; fi
    if [ "$want" = 0 ] && ! grep -q 'part_demo: all data verified' "$tmp/$name"; then bad="$bad; data not verified"; fi
    if [ "$want" != 0 ] && { [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; }; then bad="exit $rc (a clean failure expected)"; fi
    for p in "$@"; do
        grep -Eq -- "$p" "$tmp/$name" || bad="$bad; no line matching '$p'"
    done
    if [ -z "$bad" ]; then ok "$what"; else nok "$what: $bad"; indent <"$tmp/$name"; fi
}

run auto-nodev MPIR_CVAR_PART_TRANSPORT=auto VERBSEMU_NDEV=0; rc=$?
check auto-nodev 0 "auto without a verbs device: the data verifies and the verbose line says why verbs is not used" $rc \
    'auto uses the tag transport.*verbs is unavailable: no verbs device \(ibv_get_device_list: 0 devices\)'
run auto-dev MPIR_CVAR_PART_TRANSPORT=auto; rc=$?
check auto-dev 0 "auto with a verbs device: the verbose line names the device that is up and says auto keeps the tag transport; the data verifies" $rc \
    'auto uses the tag transport.*verbs device emu0 port 1 is up'
# (the rank lines are not anchored at a line's start: a rank's stderr line can land right after
# part of a line that the other rank's fully buffered stdout flushed, as in one CI run)
run forced-emu2 MPIR_CVAR_PART_TRANSPORT=verbs VERBSEMU_NDEV=3 MPIR_CVAR_PART_VERBS_DEVICE=emu2 \
    MPIR_CVAR_PART_VERBS_PORT=1 MPIR_CVAR_PART_VERBS_QPS=2; rc=$?
check forced-emu2 0 "forced verbs on MPIR_CVAR_PART_VERBS_DEVICE=emu2 of 3 devices, port 1, 2 queue pairs: both ranks name it, LID routing on InfiniBand" $rc \
    '\[0\] partitioned engine: RDMA transport over verbs device emu2 port 1 \(LID [1-9][0-9]*, LID routing, 2 queue pairs per peer, send depth 256, receive depth 512\)' \
    '\[1\] partitioned engine: RDMA transport over verbs device emu2 port 1 \(LID [1-9][0-9]*, LID routing, 2 queue pairs per peer, send depth 256, receive depth 512\)'
run forced-gid MPIR_CVAR_PART_TRANSPORT=verbs MPIR_CVAR_PART_VERBS_GID_INDEX=0; rc=$?
check forced-gid 0 "forced verbs with MPIR_CVAR_PART_VERBS_GID_INDEX=0 on InfiniBand: GID routing (a GRH on every address)" $rc \
    'RDMA transport over verbs device emu0 port 1 \(LID [1-9][0-9]*, GID routing'
run forced-roce MPIR_CVAR_PART_TRANSPORT=verbs VERBSEMU_LINK=ethernet; rc=$?
check forced-roce 0 "forced verbs on a RoCE port (VERBSEMU_LINK=ethernet, no GID index set): LID 0, GID routing chosen from the link layer" $rc \
    'RDMA transport over verbs device emu0 port 1 \(LID 0, GID routing'
run forced-nodev MPIR_CVAR_PART_TRANSPORT=verbs VERBSEMU_NDEV=0; rc=$?
check forced-nodev 1 "forced verbs without a device: the verbose line says so and MPI_Psend_init/MPI_Precv_init fail with the reason (no hang, no crash)" $rc \
    'RDMA transport over verbs unavailable \(no verbs device \(ibv_get_device_list: 0 devices\)\)' \
    'RDMA transport over InfiniBand verbs \(MPIR_CVAR_PART_TRANSPORT=verbs\) could not start: no verbs device'
finish
