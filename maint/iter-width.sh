#!/usr/bin/env bash
# maint/iter-width.sh: no 64-bit value is narrowed without a cast in the partitioned engine.
# Iteration numbers are 64 bits (MPIDI_PART_iter_t, part_state.h) so that they never wrap;
# one stored in a 32-bit variable or field by mistake (an implicit conversion: C accepts it
# silently) would wrap after 2^32 iterations again, and the suite cannot run that many. So
# every engine source compiled into libmpi is compiled once more, syntax only, with
# MPICH's own flags (taken from the build's Makefile) and -Wconversion, and any warning
# "conversion from" a 64-bit type (the typedef, uint64_t, int64_t, size_t, MPI_Aint, long)
# to a narrower one in an engine file fails the check. A deliberate narrowing (an immediate's low bits, a slot
# carried in a 64-bit field) is written as a cast, which the warning respects.
# Needs a configured build (BUILD_DIR, default <repo>/_build). Prints TAP-ish lines and
# "N passed, M failed"; exits non-zero on a failure. About 30 s.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/base.conf"
BUILD_DIR=${BUILD_DIR:-$top/_build}
part=${PART_SRC:-$top/_src/mpich-$BASE_VERSION/src/mpid/ch4/netmod/part}

n=0 pass=0 fail=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

# the compile line make would run for one engine object, without its output options
cmd=$(cd "$BUILD_DIR" && make -n src/mpid/ch4/netmod/part/lib_libmpi_la-part_core.lo \
          -W "$part/part_core.c" 2>/dev/null | grep -o 'gcc .*' | head -1 |
          sed 's/ -MT .*//; s/ -c .*//')
if [ -z "$cmd" ]; then
    nok "the compile line of part_core.c from $BUILD_DIR's Makefile (build first)"
    finish
fi
ok "the compile line of part_core.c from $BUILD_DIR's Makefile"

# the engine's sources that libmpi compiles (Makefile.mk), as the build copied them
srcs=$(sed -n 's|.*src/mpid/ch4/netmod/part/\(part_[a-z_]*\.c\).*|\1|p' "$part/Makefile.mk" | sort -u)
[ -n "$srcs" ] || { nok "engine sources listed in $part/Makefile.mk"; finish; }
narrow='conversion from .\(MPIDI_PART_iter_t\|uint64_t\|long unsigned int\|long long unsigned int\|size_t\|int64_t\|long int\|long long int\|MPI_Aint\)[^-]*to .\(uint32_t\|int32_t\|int\|unsigned int\|short\|uint16_t\|int16_t\|uint8_t\|int8_t\)'
for f in $srcs; do
    out=$(cd "$BUILD_DIR" && $cmd -Wconversion -fsyntax-only "$part/$f" 2>&1)
    if [ $? -ne 0 ] && ! grep -q 'warning' <<< "$out"; then
        nok "$f compiles"
        sed 's/^/#   /' <<< "$out" | head -20
        continue
    fi
    bad=$(grep -A2 "^$part/[^:]*:[0-9]*:[0-9]*: warning: $narrow" <<< "$out")
    if [ -n "$bad" ]; then
        nok "$f: no implicit narrowing of a 64-bit value"
        sed 's/^/#   /' <<< "$bad" | head -30
    else
        ok "$f: no implicit narrowing of a 64-bit value"
    fi
done
finish
