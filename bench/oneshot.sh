#!/bin/bash
# bench/oneshot.sh [ROUNDS [ITERATIONS [PARTITIONS [INTS]]]]: a partitioned operation created,
# run once and freed per message (bench/oneshot.cpp), this project's MPICH against Debian's
# stock MPICH 4.0.2, ROUNDS (default 6) launches each, alternately, both ranks bound to a
# core each (unbound, this 2-core VM gave stock 0.8 or 2.3 us per message from launch to
# launch). Prints each round and the ratio of the means. Needs libmpich-dev (bench/run.sh
# installs it).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$top/_install}
rounds=${1:-6}
args=("${@:2}")
. "$top/bench/pair.sh"
build_pair oneshot

run() {     # run MPIEXEC BINARY: microseconds per iteration
    local line
    line=$(timeout 300 "$1" -bind-to core -n 2 "$2" "${args[@]}" </dev/null | grep '^us_per_iter') \
        || { echo "oneshot.sh: $2 failed" >&2; exit 1; }
    echo "${line#us_per_iter }"
}
: > "$out/rounds.txt"
printf '%-6s %10s %10s %7s   (us per message; oneshot arguments: %s)\n' round ours stock ratio "${args[*]:-10000 1 8}"
for r in $(seq 1 "$rounds"); do
    a=$(run "$PREFIX/bin/mpiexec" "$out/oneshot-ours")
    b=$(run mpiexec.mpich "$out/oneshot-stock")
    echo "$a $b" >> "$out/rounds.txt"
    printf '%-6s %10s %10s %7s\n' "$r" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}')"
done
awk '{a += $1; b += $2} END {printf "means: ours %.3f us, stock %.3f us, ratio %.2f\n", a / NR, b / NR, a / b}' "$out/rounds.txt"
