#!/bin/bash
# alternate the current engine (new) and the 2026-11-29 engine (old, /tmp/wt1129/_install)
for i in 1 2 3; do
  for lib in $( [ $((i % 2)) = 1 ] && echo "new old" || echo "old new"); do
    if [ $lib = old ]; then P=/tmp/wt1129/_install; else P=/work/main/_install; fi
    PREFIX=$P BENCH_OUT=/tmp/t$lib$i bench/run.sh --only ab-rdma-burst-32,ab-rdma-burst-128,ab-rdma-32,ab-rdma-128 --rounds 3 > /tmp/t$lib$i.log 2>&1
    echo "$i $lib rc=$? $(tail -1 /tmp/t$lib$i.log)"
  done
done
