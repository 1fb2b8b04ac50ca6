#!/usr/bin/env bash
# run-tests.sh: builds the verbs emulator (test/verbs-emu) and runs its acceptance tests:
# symbol versions, that unmodified binaries load it, our own two-process test program, and
# Debian's unmodified ibv_rc_pingpong over it. Prints TAP-ish ok/not ok lines and a final
# "N passed, M failed"; exits non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2
LIB="$here/build"
tmp=$(mktemp -d)
export VERBSEMU_NS="runtests.$$"
export VERBSEMU_CHECK_LEAKS=1
unset VERBSEMU_FAULT VERBSEMU_NDEV VERBSEMU_HOLD_US
trap 'rm -rf "$tmp"; rm -f "/dev/shm/verbsemu.$VERBSEMU_NS"' EXIT

n=0 pass=0 fail=0 skipped=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n - # SKIP $*"; }
summary() {
  [ "$skipped" -gt 0 ] && echo "# $skipped skipped"
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}
indent() { sed 's/^/#   /'; }

# ---- build ----
if make -j1 >"$tmp/build.log" 2>&1; then
  if grep -qiE 'warning|error' "$tmp/build.log"; then
    nok "build is warning-clean (-Wall -Wextra)"; indent <"$tmp/build.log"
  else
    ok "build (make -j1): build/libibverbs.so.1, emu_test, verbsemu-stat; warning-clean"
  fi
else
  nok "build"; indent <"$tmp/build.log"; summary
fi

# ---- exported symbol versions ----
objdump -T "$LIB/libibverbs.so.1" | awk '$NF ~ /^ibv_|^_ibv_|^mbps_|^mult_/ {print $(NF-1), $NF}' | sort -u >"$tmp/exports"
want_ok=1
for s in "IBVERBS_1.1 ibv_reg_mr" "IBVERBS_1.8 ibv_reg_mr_iova2" "IBVERBS_1.11 _ibv_query_gid_ex" \
         "IBVERBS_1.0 ibv_create_comp_channel" "IBVERBS_1.1 ibv_modify_qp" "IBVERBS_1.6 ibv_qp_to_qp_ex"; do
  grep -qx "$s" "$tmp/exports" || { echo "# missing export: $s"; want_ok=0; }
done
[ $want_ok = 1 ] && ok "exports carry the rdma-core symbol versions ($(wc -l <"$tmp/exports") symbols)" ||
  nok "exports carry the rdma-core symbol versions"

# Every versioned libibverbs symbol an unmodified binary needs must be provided.
needs_ok() { # binary
  objdump -T "$1" | awk '/\*UND\*/ && $(NF-1) ~ /IBVERBS_/ {v=$(NF-1); gsub(/[()]/, "", v); print v, $NF}' |
    sort -u >"$tmp/needs"
  comm -23 "$tmp/needs" "$tmp/exports" >"$tmp/missing"
  [ ! -s "$tmp/missing" ]
}
if needs_ok "$LIB/emu_test"; then ok "every IBVERBS_x symbol emu_test needs is exported"
else nok "every IBVERBS_x symbol emu_test needs is exported"; indent <"$tmp/missing"; fi

# ---- the emulator is what gets loaded ----
if LD_LIBRARY_PATH="$LIB" ldd "$LIB/emu_test" | grep -q "libibverbs.so.1 => $LIB/libibverbs.so.1" &&
   LD_LIBRARY_PATH="$LIB" LD_DEBUG=libs "$LIB/emu_test" none 2>&1 | grep -q "calling init: $LIB/libibverbs.so.1"; then
  ok "ldd and LD_DEBUG=libs: emu_test (linked with -libverbs) loads build/libibverbs.so.1"
else
  nok "ldd and LD_DEBUG=libs: emu_test loads build/libibverbs.so.1"
fi

# ---- our two-process test program ----
LD_LIBRARY_PATH="$LIB" timeout 900 "$LIB/emu_test" >"$tmp/emu.out" 2>"$tmp/emu.err"
emu_rc=$?
while IFS= read -r line; do
  case "$line" in
    "ok "*) ok "emu_test: ${line#ok * - }" ;;
    "not ok "*) nok "emu_test: ${line#not ok * - }" ;;
  esac
done <"$tmp/emu.out"
if [ $emu_rc -ne 0 ] || grep -q '^not ok' "$tmp/emu.out"; then
  echo "# emu_test exit status $emu_rc; its stderr:"; indent <"$tmp/emu.err"
fi
grep -q '^# emu_test:' "$tmp/emu.out" && ok "emu_test ran to completion (status $emu_rc)" ||
  nok "emu_test ran to completion (status $emu_rc)"

# ---- Debian's unmodified ibv_rc_pingpong ----
PP=$(command -v ibv_rc_pingpong)
if [ -z "$PP" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "# installing ibverbs-utils for ibv_rc_pingpong"
  { apt-get install -y ibverbs-utils || { apt-get update && apt-get install -y ibverbs-utils; }; } >"$tmp/apt.log" 2>&1
  PP=$(command -v ibv_rc_pingpong)
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}
wait_listen() { # port
  for _ in $(seq 1 100); do
    if command -v ss >/dev/null; then
      ss -ltn "sport = :$1" 2>/dev/null | grep -q LISTEN && return 0
    fi
    sleep 0.1
  done
  return 0
}

pingpong() { # description, extra args... (binary: $PPBIN, default ibv_rc_pingpong)
  local what=$1; shift
  local bin=${PPBIN:-$PP}
  local port crc src try
  # free_port's port is free only when asked: another process may bind it before the server
  # does ("Couldn't listen to port"); then the pair runs again on a new port (3 tries)
  for try in 1 2 3; do
    port=$(free_port)
    LD_LIBRARY_PATH="$LIB" timeout 120 "$bin" -d emu0 -p "$port" "$@" >"$tmp/srv" 2>&1 &
    local spid=$!
    wait_listen "$port"
    LD_LIBRARY_PATH="$LIB" timeout 120 "$bin" -d emu0 -p "$port" "$@" localhost >"$tmp/cli" 2>&1
    crc=$?
    wait $spid
    src=$?
    grep -q "Couldn't listen to port" "$tmp/srv" || break
  done
  if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q 'bytes in' "$tmp/srv" && grep -q 'bytes in' "$tmp/cli"; then
    ok "$(basename "$bin") $* (server+client exit 0): $what"
    { sed 's/^/server: /' "$tmp/srv"; sed 's/^/client: /' "$tmp/cli"; } | grep -E 'bytes in|iters in' | indent
  else
    nok "$(basename "$bin") $* : $what (server $src, client $crc)"
    { sed 's/^/server: /' "$tmp/srv"; sed 's/^/client: /' "$tmp/cli"; } | indent
  fi
}

if [ -z "$PP" ]; then
  skip "ibv_rc_pingpong not available (install Debian package ibverbs-utils) - pingpong tests not run"
else
  if needs_ok "$PP"; then ok "every IBVERBS_x symbol $PP needs is exported"
  else nok "every IBVERBS_x symbol $PP needs is exported"; indent <"$tmp/missing"; fi
  if LD_LIBRARY_PATH="$LIB" ldd "$PP" | grep -q "libibverbs.so.1 => $LIB/libibverbs.so.1"; then
    ok "ldd: $PP resolves libibverbs.so.1 to the emulator"
  else
    nok "ldd: $PP resolves libibverbs.so.1 to the emulator"
  fi
  pingpong "defaults (4096 B x 1000) with GID addressing" -g 0
  pingpong "LID-only addressing" -n 200
  pingpong "1-byte messages" -g 0 -s 1 -n 500
  pingpong "64 KiB messages, mtu 2048, data checked" -g 0 -s 65536 -n 100 -m 2048 -c
  pingpong "rx depth 4" -g 0 -r 4 -n 300
  pingpong "completion events (-e)" -g 0 -e -n 500
  pingpong "events, 1 MiB messages, data checked" -g 0 -e -s 1048576 -n 20 -c
  SRQPP=$(command -v ibv_srq_pingpong)
  if [ -n "$SRQPP" ]; then
    # its loop counts completions over all QPs, so it can destroy a QP whose last send
    # completion it never read (legal verbs; one run of 16 QPs left 4 such): objects only
    VERBSEMU_CHECK_LEAKS=objects PPBIN=$SRQPP pingpong "16 QPs sharing one SRQ" -g 0
    VERBSEMU_CHECK_LEAKS=objects PPBIN=$SRQPP pingpong "4 QPs sharing one SRQ, events" -g 0 -q 4 -e -n 300
  fi
  # A RoCE port (link layer Ethernet, LID 0): GID addressing works, LID-only addressing is
  # refused at RTR as real RoCE hardware refuses it.
  VERBSEMU_LINK=ethernet pingpong "RoCE port (VERBSEMU_LINK=ethernet), GID addressing" -g 0 -n 200
  port=$(free_port)
  # (ibv_rc_pingpong does not clean up on that error path: no leak check here)
  VERBSEMU_CHECK_LEAKS=0 VERBSEMU_LINK=ethernet LD_LIBRARY_PATH="$LIB" timeout 60 "$PP" -d emu0 -p "$port" -n 10 >"$tmp/srv" 2>&1 &
  spid=$!
  wait_listen "$port"
  VERBSEMU_CHECK_LEAKS=0 VERBSEMU_LINK=ethernet LD_LIBRARY_PATH="$LIB" timeout 60 "$PP" -d emu0 -p "$port" -n 10 localhost >"$tmp/cli" 2>&1
  crc=$?
  wait $spid
  src=$?
  if [ $crc -ne 0 ] && [ $crc -ne 124 ] && [ $src -ne 0 ] && [ $src -ne 124 ] &&
     cat "$tmp/srv" "$tmp/cli" | grep -q 'Failed to modify QP to RTR'; then
    ok "RoCE port without -g: ibv_rc_pingpong fails at RTR (an address without GRH), client exit $crc, server $src"
  else
    nok "RoCE port without -g: ibv_rc_pingpong must fail at RTR (client exit $crc, server $src)"
    { sed 's/^/server: /' "$tmp/srv"; sed 's/^/client: /' "$tmp/cli"; } | indent
  fi
  # No device: the program must fail cleanly, not crash.
  VERBSEMU_NDEV=0 LD_LIBRARY_PATH="$LIB" timeout 20 "$PP" -d emu0 -p "$(free_port)" localhost >"$tmp/nodev" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep -qi 'not found\|no ib devices' "$tmp/nodev"; then
    ok "VERBSEMU_NDEV=0: ibv_rc_pingpong reports the missing device and exits 1"
  else
    nok "VERBSEMU_NDEV=0: ibv_rc_pingpong reports the missing device (exit $rc)"; indent <"$tmp/nodev"
  fi
fi

# ---- libraries loaded beside libibverbs ----
# Debian's libfabric links librdmacm and libefa, bound at load time (BIND_NOW): a process
# that links libfabric (as libmpi does with the RDMA transport) only starts under the
# emulator if every symbol they bind exists (src/compat.cpp). (libfabric keeps the device
# context its efa provider opened to probe until exit: not checked for leaks here.)
FI_INFO=$(command -v fi_info || true)
if [ -z "$FI_INFO" ]; then
  skip "fi_info (libfabric-bin) not installed: libfabric under the emulator not checked"
elif VERBSEMU_CHECK_LEAKS=0 LD_LIBRARY_PATH="$LIB" timeout 30 "$FI_INFO" -p tcp >"$tmp/fi" 2>&1 && grep -q 'provider: tcp' "$tmp/fi"; then
  ok "fi_info (libfabric, librdmacm, libefa) starts and lists its tcp provider under the emulator"
else
  nok "fi_info starts under the emulator"; indent <"$tmp/fi"
fi

# ---- nothing left behind ----
if "$LIB/verbsemu-stat" >"$tmp/stat" 2>&1; then
  ok "registry empty after all tests (verbsemu-stat)"
else
  nok "registry empty after all tests (verbsemu-stat)"; indent <"$tmp/stat"
fi

summary
