#!/bin/bash
# ab.sh ROUNDS: mtpoll (ns per false MPI_Parrived with T = 1, 2, 4 polling threads) for
# copies of our libmpi and stock MPICH (Debian's libmpich12), alternating within each round.
# The builds are libmpi.so.12 copies in /tmp/libX, each run with the same binary through
# LD_LIBRARY_PATH (LIBS="A E stock" by default; README.md says which commit each is).
# Made with: git checkout REV && maint/build.sh && cp -L _install/lib/libmpi.so.12 /tmp/libX/
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
b=${MTPOLL_BUILD:-/tmp/mtpoll-build}
mkdir -p "$b"
"$top/_install/bin/mpicxx" -O2 -std=c++17 -pthread "$here/mtpoll.cpp" -o "$b/ours"
mpicxx.mpich -O2 -std=c++17 -pthread "$here/mtpoll.cpp" -o "$b/stock"
for r in $(seq ${1:-6}); do
    for T in 1 2 4; do
        for lib in ${LIBS:-A E stock}; do
            if [ $lib = stock ]; then
                x=$(timeout 120 mpiexec.mpich -n 2 "$b/stock" $T 50000 30 2>&1 | tail -1)
            else
                x=$(LD_LIBRARY_PATH=/tmp/lib$lib timeout 120 "$top/_install/bin/mpiexec" -n 2 "$b/ours" $T 50000 30 2>&1 | tail -1)
            fi
            echo "round $r $lib $x"
        done
    done
done
