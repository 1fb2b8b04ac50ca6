#!/bin/bash
# callgrind.sh LIB...: instructions (Ir) per false MPI_Parrived, counted by valgrind's
# callgrind from PMPI_Parrived in (inclusive) over mtpoll with one polling thread
# (../2026-12-06-parrived-threads/mtpoll.cpp: every counted call answers false; 20000 calls x
# 5 iterations). Deterministic, unlike the times: the length of each build's path, not its
# speed. LIB is a copy of our libmpi in /tmp/libLIB (as for ab.sh) or "stock" (Debian's
# libmpich12). The mtpoll binaries are the ones ../2026-12-06-parrived-threads/ab.sh builds.
b=${MTPOLL_BUILD:-/tmp/mtpoll-build}
d=$(mktemp -d)
for lib in "$@"; do
    if [ "$lib" = stock ]; then
        set -- mpiexec.mpich -n 2; exe=$b/stock; ld=
    else
        set -- /work/main/_install/bin/mpiexec -n 2; exe=$b/ours; ld=/tmp/lib$lib
    fi
    LD_LIBRARY_PATH=$ld timeout 600 "$@" valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" \
        --toggle-collect=PMPI_Parrived "$exe" 1 20000 5 > "$d/out" 2>&1 || { tail "$d/out"; exit 1; }
    f=$(ls -S "$d"/cg.* | head -1)
    callgrind_annotate --tree=calling --inclusive=yes "$f" 2>/dev/null |
        awk -v lib=$lib '/ > .*PMPI_Parrived \(/ {
            ir = $1; gsub(/,/, "", ir); n = $0; sub(/.*\(/, "", n); sub(/x\).*/, "", n); gsub(/,/, "", n)
            printf "%-6s %d calls, %.1f Ir per false MPI_Parrived\n", lib, n, ir / n }'
    rm -f "$d"/cg.*
done
rm -rf "$d"
