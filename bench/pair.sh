# bench/pair.sh, sourced by startup.sh and oneshot.sh: build_pair NAME builds bench/NAME.cpp
# against this project's MPICH ($PREFIX) and Debian's stock MPICH 4.0.2 into
# _bench/NAME/NAME-ours and NAME-stock, and sets $out to that directory.
build_pair() {
    local t
    out=$top/_bench/$1
    mkdir -p "$out"
    for t in mpicxx.mpich mpiexec.mpich; do
        command -v $t >/dev/null || { echo "$1.sh: $t missing: apt-get install libmpich-dev mpich" >&2; exit 1; }
    done
    "$PREFIX/bin/mpicxx" -std=c++17 -O2 -o "$out/$1-ours" "$top/bench/$1.cpp"
    mpicxx.mpich -std=c++17 -O2 -o "$out/$1-stock" "$top/bench/$1.cpp"
}
