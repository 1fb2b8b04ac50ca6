#!/bin/bash
# ab.sh N: pipelined 4 threads x 32 partitions at 128 B and 1 KiB in all (bench/run.sh's
# pipe-4x32 sizes 8 and 1K), default settings, ours and stock MPICH alternating launch by
# launch (the order swapping every round), N rounds; prints one line per launch:
# round lib bytes T(part) T(p2p-single) [us, means over the launch's timed iterations].
# Uses the binaries bench/run.sh built (_bench/build/partbench-{ours,stock}).
B=${BENCH_BUILD:-/work/main/_bench/build}
run() {
    if [ $1 = stock ]; then shift; timeout 300 mpiexec.mpich -n 2 $B/partbench-stock --lib stock "$@"
    else shift; timeout 300 /work/main/_install/bin/mpiexec -n 2 $B/partbench-ours --lib ours "$@"; fi 2>&1; }
for r in $(seq ${1:-10}); do
    order=$( [ $((r % 2)) = 1 ] && echo "ours stock" || echo "stock ours")
    for lib in $order; do
        run $lib --pattern pipelined --threads 4 --theta 32 --sizes 8,1K --variants part,p2p-single |
            python3 -c "
import re, sys
v = {}
for l in sys.stdin:
    m = re.search(r'\s(part|p2p-single)\s+N=.*?(\d+)(B|KiB)\s.*?([\d.]+) us \+-', l)
    if m: v[(m.group(2) + m.group(3), m.group(1))] = float(m.group(4))
for b in ('128B', '1KiB'):
    print('$r $lib', b, v.get((b, 'part')), v.get((b, 'p2p-single')))"
    done
done
