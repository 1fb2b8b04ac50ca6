#!/bin/bash
# bench/startup.sh [LAUNCHES]: what starting an MPI program costs with this project's MPICH
# against Debian's stock MPICH 4.0.2: LAUNCHES (default 10) launches of `mpiexec -n 2
# startup` each, alternately ours then stock, timed from the outside (wall clock of the
# whole launch: loading the library and its dependencies, MPI_Init, one message each way,
# MPI_Finalize), with MPI_Init's and MPI_Finalize's own times from inside rank 0. Prints
# the medians and their ratio. Needs libmpich-dev (bench/run.sh installs it).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$top/_install}
n=${1:-10}
. "$top/bench/pair.sh"
build_pair startup

launch() {      # launch MPIEXEC BINARY: "wall_ms init_ms finalize_ms"
    local s e line
    s=$(date +%s%N)
    line=$(timeout 60 "$1" -n 2 "$2" </dev/null | grep '^init_ms')
    e=$(date +%s%N)
    [ -n "$line" ] || { echo "startup.sh: $2 failed" >&2; exit 1; }
    echo "$(( (e - s) / 1000 ))" "$line" | awk '{printf "%.2f %s %s\n", $1 / 1000, $3, $5}'
}
: > "$out/ours.txt"
: > "$out/stock.txt"
for i in $(seq 1 "$n"); do
    launch "$PREFIX/bin/mpiexec" "$out/startup-ours" >> "$out/ours.txt"
    launch mpiexec.mpich "$out/startup-stock" >> "$out/stock.txt"
done
median() { sort -n -k"$2" "$1" | awk -v c="$2" '{v[NR] = $c} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-8s %10s %10s %12s   (medians of %d launches, ms)\n' library launch MPI_Init MPI_Finalize "$n"
for lib in ours stock; do
    printf '%-8s %10s %10s %12s\n' $lib "$(median "$out/$lib.txt" 1)" "$(median "$out/$lib.txt" 2)" "$(median "$out/$lib.txt" 3)"
done
echo "launch ratio ours/stock: $(awk -v a="$(median "$out/ours.txt" 1)" -v b="$(median "$out/stock.txt" 1)" 'BEGIN {printf "%.2f", a / b}')"
