#!/usr/bin/env bash
# maint/configure-checks.sh: the configure options of the partitioned engine's RDMA backends
# do what --help says, checked by running MPICH's configure (from _src/, which autogen.sh
# assembles) in scratch directories, each only as far as the engine's own fragment
# (src/mpid/ch4/netmod/part/subconfigure.m4):
#   --enable-part-verbs=yes without libibverbs   configure stops with a clear message
#   --enable-part-verbs=maybe                    configure stops, naming the bad value
#   --enable-part-verbs=no                       the engine is configured without verbs
#   --enable-part-verbs (auto) without libibverbs  the same, configure goes on
# libibverbs is hidden from configure by its cache variable for the header check
# (ac_cv_header_infiniband_verbs_h=no), as on a machine without libibverbs-dev. A run that
# should go on is stopped once the engine's fragment has said what it decided ("ch4
# partitioned engine's RDMA backends decided (ofi: .., verbs: ..)", the last line of its
# PREREQ part, which runs before MPICH's subconfigures of mpl, json-c and yaksa): about
# 35 s each, the two run side by side. Waiting for the body's "RUNNING CONFIGURE FOR ch4
# partitioned engine" line instead, after those subconfigures, took 60-350 s each; the
# body only acts on the PREREQ's decisions.
# Prints TAP-ish lines and "N passed, M failed"; exits non-zero on a failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/base.conf"
src=$top/_src/mpich-$BASE_VERSION/configure
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -- -$p 2>/dev/null; done; wait; rm -rf "$tmp"' EXIT

n=0 pass=0 fail=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
indent() { sed 's/^/#   /'; }
[ -x "$src" ] || { nok "MPICH's configure at $src (run autogen.sh first)"; echo "0 passed, 1 failed"; exit 1; }

base="--with-device=ch4:ucx --with-ucx=/usr --with-hwloc=/usr --disable-fortran --disable-romio --prefix=$tmp/prefix"
notice="ch4 partitioned engine's RDMA backends decided"

# start NAME ARGS...: configure in $tmp/NAME as its own process group (setsid), output in
# $tmp/NAME.out, its exit status in $tmp/NAME.rc when it ends
start() {
    local name=$1; shift
    mkdir -p "$tmp/$name"
    ( cd "$tmp/$name" && { setsid "$src" $base "$@" >"$tmp/$name.out" 2>&1 &
      echo $! >"$tmp/$name.pid"; wait $!; echo $? >"$tmp/$name.rc"; } ) &
    while [ ! -s "$tmp/$name.pid" ]; do sleep 0.05; done
    pids="$pids $(cat "$tmp/$name.pid")"
}
# wait_for NAME STOP-AT-NOTICE: wait for the end (or, when asked, for the engine's notice,
# then stop that configure); at most 10 minutes
wait_for() {
    local name=$1 stop=$2
    for _ in $(seq 1 1200); do
        [ -f "$tmp/$name.rc" ] && return 0
        if [ "$stop" = yes ] && grep -q "$notice" "$tmp/$name.out" 2>/dev/null; then
            kill -- -"$(cat "$tmp/$name.pid")" 2>/dev/null
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# ---- yes without libibverbs, and a bad value: configure stops -----------------------------
start yes-nolib --enable-part-verbs=yes ac_cv_header_infiniband_verbs_h=no
start bad-value --enable-part-verbs=maybe
# expect_stop NAME WHAT MESSAGE: configure NAME ended with a non-zero status and printed
# MESSAGE (a fixed string)
expect_stop() {
    wait_for "$1" no
    if [ "$(cat "$tmp/$1.rc" 2>/dev/null)" != 0 ] && grep -qF -- "$3" "$tmp/$1.out"; then
        ok "$2: configure fails with a clear message"
    else
        nok "$2 must fail configure with: $3"; tail -5 "$tmp/$1.out" | indent
    fi
}
expect_stop yes-nolib "--enable-part-verbs=yes without libibverbs (names what is missing and the Debian package)" \
    'configure: error: --enable-part-verbs=yes, but libibverbs was not found (header infiniband/verbs.h and library -libverbs; on Debian: apt-get install libibverbs-dev'
expect_stop bad-value "--enable-part-verbs=maybe (names the values it takes)" \
    "configure: error: --enable-part-verbs takes yes, no or auto, not 'maybe'"

# ---- no, and auto without libibverbs: configured without verbs ----------------------------
start no --enable-part-verbs=no
start auto-nolib ac_cv_header_infiniband_verbs_h=no
for name in no auto-nolib; do
    what="--enable-part-verbs=no"
    [ $name = auto-nolib ] && what="--enable-part-verbs (auto) without libibverbs"
    if ! wait_for $name yes; then
        nok "$what: configure did not reach the engine's fragment in 10 minutes"; continue
    fi
    if grep -q "$notice (ofi: [a-z]*, verbs: no)" "$tmp/$name.out" &&
       ! grep -q 'configure: error' "$tmp/$name.out"; then
        ok "$what: configure goes on, the engine configured without verbs ($(grep -o "$notice.*" "$tmp/$name.out"))"
    else
        nok "$what: the engine must be configured without verbs"; tail -5 "$tmp/$name.out" | indent
    fi
done
# "no" builds nothing of it: part_verbs.c is compiled only under BUILD_CH4_PART_VERBS, and
# the code that calls it only under MPIDI_CH4_PART_VERBS (defined only when verbs is built)
mk=$top/src/mpid/ch4/netmod/part/Makefile.mk
if awk '/^if BUILD_CH4_PART_VERBS/{v=1} /^endif/{v=0} /part_verbs\.c/{ if (!v) bad=1; seen=1 } END{exit !(seen && !bad)}' "$mk" &&
   ! grep -l 'MPIDI_PART_verbs_' "$top"/src/mpid/ch4/netmod/part/*.c | grep -v part_verbs.c |
     xargs -r grep -L 'ifdef MPIDI_CH4_PART_VERBS' | grep -q .; then
    ok "Makefile.mk compiles part_verbs.c only under BUILD_CH4_PART_VERBS; its callers guard on MPIDI_CH4_PART_VERBS"
else
    nok "part_verbs.c must be built only with verbs"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
