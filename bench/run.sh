#!/bin/bash
# bench/run.sh: build partbench against this project's MPICH and against Debian's stock
# MPICH 4.0.2, run both alternately (ours, stock, ours, stock ... per configuration), and
# write CSV, PNG plots and a markdown summary into _bench/ (repository root).
#
#   bench/run.sh            default sweep (< 15 min on 2 cores)
#   bench/run.sh --full     larger sweep (sizes up to 64 MiB, 100 ms compute, more iterations)
#   bench/run.sh --smoke    our MPICH only, tiny sweep, every byte verified, ~20 s; exits
#                           non-zero on any verification failure or error (for the test command)
#   HOSTS=a,b bench/run.sh --ib   seed 000's table on a real InfiniBand pair: verbs and tag
#                           transports against stock, one rank per host (mpiexec -hosts a,b)
# The verbs-emu-* rows run the verbs backend on the verbs emulator: correctness only; their
# timings are NOT hardware timings (report.py prints them apart, in no ratio).
#   options: --rounds K     repeat the whole alternation K times (default 2, smoke 1; per
#                           point report.py keeps the round whose mean is the lower median,
#                           i.e. the faster of two)
#            --only LIST    run only these configurations (names as printed), e.g. pipe-1x1,halo
#            --stock        with --smoke: also run the smoke sweep on stock MPICH
#            --no-stock     skip stock MPICH (run ours only)
#            --no-install   never apt-get install anything (fail instead)
# In a configuration, --ours-only runs our library alone (rows comparing our own settings
# in one launch), --ours-env=VAR=VALUE sets VAR for our library's runs only (the vci4-*
# configurations run ours with MPIR_CVAR_CH4_NUM_VCIS=4; stock MPICH has one VCI), and
# --env=VAR=VALUE sets it for both libraries (the tcp-* configurations: MPIR_CVAR_NOLOCAL=1
# UCX_TLS=tcp,self). With UCX_TLS given, the launch also gets UCX_LOG_LEVEL=info and fails
# unless every UCX endpoint it reports uses only the transports listed in UCX_TLS.
# Environment: PREFIX (default <repo>/_install), STOCK_MPICXX (mpicxx.mpich),
#   STOCK_MPIEXEC (mpiexec.mpich), BENCH_OUT (default <repo>/_bench, or _bench/smoke),
#   RUN_TIMEOUT (seconds per launch, default 300), INSTALL_WAIT (seconds to wait for an
#   install in flux, default 900), BUDGET (seconds; default sweep 780: once used up, rounds
#   after the first are cut short, so the default sweep stays under 15 minutes; 0 = none).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
here=$top/bench
PREFIX=${PREFIX:-$top/_install}
STOCK_MPICXX=${STOCK_MPICXX:-mpicxx.mpich}
STOCK_MPIEXEC=${STOCK_MPIEXEC:-mpiexec.mpich}
PY=/usr/bin/python3
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
BUDGET=${BUDGET:-}
INSTALL_WAIT=${INSTALL_WAIT:-900}

mode=default
rounds=""
only=""
use_stock=1
smoke_stock=0
may_install=1
while [ $# -gt 0 ]; do
    case $1 in
        --full) mode=full ;;
        --ib) mode=ib ;;
        --smoke) mode=smoke ;;
        --rounds) rounds=$2; shift ;;
        --only) only=$2; shift ;;
        --stock) smoke_stock=1 ;;
        --no-stock) use_stock=0 ;;
        --no-install) may_install=0 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$mode" = smoke ] && use_stock=$smoke_stock
[ -n "$rounds" ] || { [ "$mode" = smoke ] && rounds=1 || rounds=2; }
# time budget for the default sweep: rounds after the first stop early when it runs out
[ -n "$BUDGET" ] || { [ "$mode" = default ] && BUDGET=780 || BUDGET=0; }

if [ "$mode" = smoke ]; then
    OUT=${BENCH_OUT:-$top/_bench/smoke}
else
    OUT=${BENCH_OUT:-$top/_bench}
fi
t_start=$(date +%s)
say() { printf '[bench %4ss] %s\n' "$(( $(date +%s) - t_start ))" "$*"; }
die() { say "ERROR: $*" >&2; exit 3; }

# ---- packages ------------------------------------------------------------------------------
apt_updated=0
need_pkg() {    # need_pkg PACKAGE CHECK-COMMAND...
    local pkg=$1; shift
    "$@" > /dev/null 2>&1 && return 0
    [ "$may_install" = 1 ] || die "$pkg is missing (and --no-install was given)"
    say "installing $pkg (apt-get)"
    if [ $apt_updated = 0 ]; then
        timeout 300 apt-get update > "$OUT/apt.log" 2>&1 || true
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y "$pkg" >> "$OUT/apt.log" 2>&1 \
        || die "apt-get install $pkg failed (see $OUT/apt.log)"
}

mkdir -p "$OUT/build" "$OUT/logs"
if [ "$use_stock" = 1 ]; then
    need_pkg libmpich-dev command -v "$STOCK_MPICXX"
    command -v "$STOCK_MPIEXEC" > /dev/null || die "$STOCK_MPIEXEC not found"
fi
if [ "$mode" != smoke ]; then
    need_pkg python3-matplotlib $PY -c "import matplotlib"
fi

# ---- our install (may be rebuilt by someone else right now: wait for it) -------------------
install_ok() {
    [ -x "$PREFIX/bin/mpicxx" ] && [ -x "$PREFIX/bin/mpiexec" ] && [ -e "$PREFIX/lib/libmpi.so" ] \
        && "$PREFIX/bin/mpichversion" > /dev/null 2>&1
}
wait_install() {
    local waited=0
    while ! install_ok; do
        [ $waited -ge "$INSTALL_WAIT" ] && die "no usable MPICH install in $PREFIX after ${waited}s"
        [ $waited = 0 ] && say "waiting for the install in $PREFIX (missing or being rebuilt)"
        sleep 15; waited=$((waited + 15))
    done
}
wait_install

# ---- build ------------------------------------------------------------------------------------
CXXFLAGS="-O3 -std=c++17 -Wall -Wextra -ffp-contract=off -pthread"
srcs="$here/partbench.cpp $here/variants.cpp $here/halo.cpp $here/parrived.cpp $here/common.cpp"
build() {       # build LABEL MPICXX LIBRARY-FILE   (skipped when nothing changed)
    local exe=$OUT/build/partbench-$1 stamp
    stamp=$(cat $srcs "$here/common.hpp" "$here/partbench.hpp" "$3" 2>/dev/null \
            | sha256sum | cut -c1-16)-$(echo "$2 $CXXFLAGS" | sha256sum | cut -c1-8)
    if [ -x "$exe" ] && [ "$(cat "$exe.stamp" 2>/dev/null)" = "$stamp" ]; then
        say "$exe is up to date"
        return 0
    fi
    say "building $exe with $2"
    if ! $2 $CXXFLAGS $srcs -o "$exe.tmp" > "$OUT/logs/build-$1.log" 2>&1; then
        cat "$OUT/logs/build-$1.log" >&2
        return 1
    fi
    mv -f "$exe.tmp" "$exe"
    echo "$stamp" > "$exe.stamp"
}
tries=0
until build ours "$PREFIX/bin/mpicxx" "$PREFIX/lib/libmpi.so"; do
    tries=$((tries + 1)); [ $tries -ge 3 ] && die "building against $PREFIX failed"
    sleep 30; wait_install
done
if [ "$use_stock" = 1 ]; then
    build stock "$(command -v "$STOCK_MPICXX")" /usr/lib/x86_64-linux-gnu/libmpich.so \
        || die "building against stock MPICH failed"
    # the stock binary must not pick up our library, nor ours the stock one
    ldd "$OUT/build/partbench-stock" | grep -q "$PREFIX" && die "stock binary links $PREFIX"
fi
ldd "$OUT/build/partbench-ours" | grep -q "$PREFIX/lib/libmpi" \
    || say "WARNING: the ours binary does not resolve libmpi from $PREFIX/lib (see ldd)"

# ---- configurations ---------------------------------------------------------------------------
# UCX over TCP for both libraries: MPIR_CVAR_NOLOCAL=1 sends rank-to-rank traffic through the
# netmod (UCX) instead of MPICH's shared memory, UCX_TLS=tcp,self keeps UCX off its own
# shared-memory transports (sysv, posix, cma); ucx_check verifies the transports in the log
tcp_env="--env=MPIR_CVAR_NOLOCAL=1 --env=UCX_TLS=tcp,self"
# the transport dimension: our library with the RDMA transport over libfabric forced, over
# its shm provider (same host) and over tcp;ofi_rxm (with tcp_env, so that stock MPICH and
# our handshake go through UCX over TCP); compare with the tag-transport rows of the same
# geometry (pipe-*, tcp-*, earlybird, overhead-*) of the same run
rdma_shm="--ours-env=MPIR_CVAR_PART_TRANSPORT=ofi --ours-env=MPIR_CVAR_PART_OFI_PROVIDER=shm"
rdma_tcp="--ours-env=MPIR_CVAR_PART_TRANSPORT=ofi --ours-env=MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm $tcp_env"
# The verbs backend on the verbs emulator (test/verbs-emu): correctness only (data verified);
# its timings are the emulator's (a system call per write), not an HCA's, and report.py
# leaves them out of every ratio. On real InfiniBand: --ib (below).
verbs_emu="--ours-env=LD_LIBRARY_PATH=$top/test/verbs-emu/build --ours-env=VERBSEMU_NS=bench$$ --ours-env=MPIR_CVAR_PART_TRANSPORT=verbs --ours-env=UCX_TLS=self,sm,tcp --variants part"
verbs_hw="--ours-env=MPIR_CVAR_PART_TRANSPORT=verbs"
# Aggregators. The default is ploggp (the model, re-planned once from an observed iteration
# on the tag transport, split by the timer's deadline on RDMA): every row without an
# aggregator option runs it. ploggp-* rows ask for it explicitly (the same thing since it
# became the default); static-ploggp-* rows plan once at match for the assumed spread
# (MPIR_CVAR_PART_AGGR_OBSERVE=0, seed 000's PLogGP); none-* rows never merge (the engine
# before aggregation).
# agg-<aggregator>-<N>: seed 000's overhead comparison (4 threads, N partitions in all, 1 ms
# compute, one late thread with 1 % and 4 % noise) under no merging, a fixed
# MPIR_CVAR_PART_AGGR_SIZE of 64 KiB and the PLogGP model, each against stock in its own launch
ploggp="--ours-env=MPIR_CVAR_PART_AGGREGATOR=ploggp"
static_ploggp="--ours-env=MPIR_CVAR_PART_AGGREGATOR=ploggp --ours-env=MPIR_CVAR_PART_AGGR_OBSERVE=0"
none="--ours-env=MPIR_CVAR_PART_AGGREGATOR=none"
# agg-rdma-<aggregator>-<N>: the same pattern on the RDMA transport over shm, where the timer
# aggregator applies (seed 000's perceived-bandwidth comparison: 1 ms compute, one late
# thread with 1 % and 4 % noise; wire_sent_per_iter counts writes there)
timer="--ours-env=MPIR_CVAR_PART_AGGREGATOR=timer"
# (agg-rdma-fixed-*: MPIR_CVAR_PART_AGGREGATOR=size with 64 KiB, a fixed merge whose groups
# always go whole; under the default the same size would make timer groups)
size="--ours-env=MPIR_CVAR_PART_AGGREGATOR=size"
# agg-rdma-burst-*: the same with seed 000's ready pattern (--ready burst: a thread computes,
# then readies all its partitions back to back; the default spreads them over the compute)
# ab-rdma-*: the timer against no aggregation in ONE process, iteration by iteration (the
# info key mpich_part_aggregator per operation: variants part:none,part:timer), so that this
# VM's fast and slow phases hit both alike; --ours-only: no stock launch (report_aggr.py,
# "Timer against none in one process"); ab-rdma-tcp-burst-*: the same over tcp;ofi_rxm
# ab-default-*: the default (no CVAR, no key) against fixed AGGR_SIZE values in ONE process
# (variants part:size=N: the info key mpich_part_aggr_size per operation), for issue 11's
# "within 5 % of the best fixed AGGR_SIZE" (bench/ab_default.py prints the ratios);
# ab-observe-4x32: the default (one observed iteration) against three (variant
# part:observe=4: MPIR_CVAR_PART_AGGR_OBSERVE written through MPI_T around MPI_Precv_init)
# name|option split per launch|values|partbench options
# Every value of the split option is its own launch, run for ours and then for stock, so the
# two libraries alternate at a fine grain and share the machine's conditions.
if [ "$mode" = smoke ]; then
    configs="pipe-1x1|--sizes|8,64K|--pattern pipelined --threads 1 --theta 1
pipe-4x8|--sizes|1K,1M|--pattern pipelined --threads 4 --theta 8
aggr-4x32|--sizes|1K|--pattern aggr --aggr 0,1024,65536
earlybird|--sizes|1M|--pattern earlybird --gamma 100
earlybird-gauss|--sizes|1M|--pattern earlybird --gamma 0 --compute-us 300 --noise-model gaussian --noise 20
overhead|--sizes|64K|--pattern overhead --noise 4
halo|--grids|16|--pattern halo --theta 2
vci-4x8|--sizes|64K|--pattern pipelined --threads 4 --theta 8 --variants part --thread-hint --ours-env=MPIR_CVAR_CH4_NUM_VCIS=4
parrived|--theta|1,4|--pattern parrived --sizes 64
tcp-1x1|--sizes|8|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $tcp_env
rdma-shm-4x8|--sizes|1K,1M|--pattern pipelined --threads 4 --theta 8 $rdma_shm
rdma-tcp-1x1|--sizes|8,64K|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $rdma_tcp
verbs-emu-4x8|--sizes|1K,1M|--pattern pipelined --threads 4 --theta 8 $verbs_emu"
    xfail="corrupt-pipe|--sizes|64K|--pattern pipelined --variants part,p2p-single --corrupt
corrupt-halo|--grids|16|--pattern halo --variants part --theta 2 --corrupt"
    common="--smoke"
elif [ "$mode" = full ]; then
    all_sizes=8,64,512,1K,4K,16K,64K,256K,1M,4M,16M,64M
    big_sizes=64K,256K,1M,4M,16M,64M
    configs="pipe-1x1|--sizes|$all_sizes|--pattern pipelined --threads 1 --theta 1
pipe-4x1|--sizes|$all_sizes|--pattern pipelined --threads 4 --theta 1
pipe-4x32|--sizes|$all_sizes|--pattern pipelined --threads 4 --theta 32
aggr-4x32|--sizes|8,64,512,1K,4K,16K,64K,256K,1M,4M|--pattern aggr --aggr 0,512,1024,4096,16384,65536
vci4-4x32|--sizes|$all_sizes|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --thread-hint --ours-env=MPIR_CVAR_CH4_NUM_VCIS=4
vci4-rr-4x32|--sizes|$all_sizes|--pattern pipelined --threads 4 --theta 32 --variants part --ours-env=MPIR_CVAR_CH4_NUM_VCIS=4
earlybird|--sizes|$big_sizes|--pattern earlybird --gamma 10,100,1000 --variants part,p2p-single,p2p-many,rma-single-passive,rma-many-active
earlybird-4x4|--sizes|$big_sizes|--pattern earlybird --theta 4 --gamma 100,1000
overhead-1ms-single|--sizes|$big_sizes|--pattern overhead --compute-us 1000 --noise-model single --noise 1,4
overhead-1ms-uniform|--sizes|$big_sizes|--pattern overhead --compute-us 1000 --noise-model uniform --noise 1,4
overhead-1ms-gauss|--sizes|$big_sizes|--pattern overhead --compute-us 1000 --noise-model gaussian --noise 1,4
overhead-100ms-single|--sizes|$big_sizes|--pattern overhead --compute-us 100000 --noise-model single --noise 1,4 --iters 20 --attempts 3
halo|--grids|32,64,128|--pattern halo
halo-4x4|--grids|32,64,128|--pattern halo --theta 4
parrived|--theta|1,32|--pattern parrived --sizes 4K
tcp-1x1|--sizes|8,64,512,4K,64K|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $tcp_env
tcp-1x32|--sizes|4K,128K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single --aggr 0 $tcp_env
tcp-4x32|--sizes|1K,128K,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $tcp_env
rdma-shm-1x1|--sizes|$all_sizes|--pattern pipelined --threads 1 --theta 1 $rdma_shm
rdma-shm-4x32|--sizes|$all_sizes|--pattern pipelined --threads 4 --theta 32 $rdma_shm
rdma-shm-earlybird|--sizes|$big_sizes|--pattern earlybird --gamma 10,100,1000 $rdma_shm
rdma-shm-overhead-1ms-single|--sizes|$big_sizes|--pattern overhead --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm
rdma-tcp-1x1|--sizes|8,64,512,4K,64K|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $rdma_tcp
rdma-tcp-1x32|--sizes|4K,128K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single --aggr 0 $rdma_tcp
rdma-tcp-4x32|--sizes|1K,128K,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $rdma_tcp
verbs-emu-1x1|--sizes|8,64K,4M|--pattern pipelined --threads 1 --theta 1 $verbs_emu
verbs-emu-4x32|--sizes|1K,1M|--pattern pipelined --threads 4 --theta 32 $verbs_emu"
    xfail=""
    common="--full"
elif [ "$mode" = ib ]; then
    # seed 000's table on a real InfiniBand pair (HOSTS=a,b): the overhead pattern at 4, 32
    # and 128 partitions (1 ms compute, one late thread, 1 % and 4 % noise) with its
    # perceived bandwidth, and 1x1 / 4x32 pipelines, each over verbs (ib-verbs-*) and over
    # the tag transport (ib-tag-*), against stock MPICH in the same launch
    configs="ib-verbs-overhead-4|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 1 --compute-us 1000 --noise-model single --noise 1,4 $verbs_hw
ib-verbs-overhead-32|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 8 --compute-us 1000 --noise-model single --noise 1,4 $verbs_hw
ib-verbs-overhead-128|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 32 --compute-us 1000 --noise-model single --noise 1,4 $verbs_hw
ib-tag-overhead-4|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 1 --compute-us 1000 --noise-model single --noise 1,4
ib-tag-overhead-32|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 8 --compute-us 1000 --noise-model single --noise 1,4
ib-tag-overhead-128|--sizes|64K,1M,4M,16M|--pattern overhead --threads 4 --theta 32 --compute-us 1000 --noise-model single --noise 1,4
ib-verbs-1x1|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 1 --theta 1 $verbs_hw
ib-tag-1x1|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 1 --theta 1
ib-verbs-4x32|--sizes|1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 $verbs_hw
ib-tag-4x32|--sizes|1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32"
    xfail=""
    common=""
else
    configs="pipe-1x1|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 1 --theta 1
pipe-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32
aggr-4x32|--sizes|8,1K,64K,1M,4M|--pattern aggr --aggr 0,1024,16384,65536
vci4-4x32|--sizes|1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --thread-hint --ours-env=MPIR_CVAR_CH4_NUM_VCIS=4
earlybird|--sizes|64K,1M,4M|--pattern earlybird --gamma 100,1000
overhead-1ms-single|--sizes|64K,1M,4M|--pattern overhead --compute-us 1000 --noise-model single --noise 1,4
overhead-1ms-uniform|--sizes|64K,1M,4M|--pattern overhead --compute-us 1000 --noise-model uniform --noise 4
overhead-1ms-gauss|--sizes|64K,1M,4M|--pattern overhead --compute-us 1000 --noise-model gaussian --noise 4
halo|--grids|32,64|--pattern halo
parrived|--theta|1,32|--pattern parrived --sizes 4K
tcp-1x1|--sizes|8,4K|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $tcp_env
tcp-1x32|--sizes|4K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single --aggr 0 $tcp_env
tcp-4x32|--sizes|128K|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $tcp_env
ploggp-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $ploggp
ploggp-tcp-1x32|--sizes|4K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single --aggr 0 $ploggp $tcp_env
ploggp-tcp-4x32|--sizes|128K|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $ploggp $tcp_env
none-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $none
ab-default-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 --variants part,part:size=1024,part:size=16384,part:size=65536,part:size=262144,part:size=1048576 --ours-only
ab-default-tcp-4x32|--sizes|1K,128K|--pattern pipelined --threads 4 --theta 32 --variants part,part:size=1024,part:size=16384,part:size=65536,part:size=262144 --ours-only $tcp_env
ab-observe-4x32|--sizes|1K,64K,1M|--pattern pipelined --threads 4 --theta 32 --variants part,part:observe=4 --ours-only
static-ploggp-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $static_ploggp
none-tcp-1x32|--sizes|4K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single,p2p-many --aggr 0 $none $tcp_env
none-tcp-4x32|--sizes|128K|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single,p2p-many --aggr 0 $none $tcp_env
agg-none-4|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 0 $none
agg-fixed-4|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 65536
agg-ploggp-4|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 0 $ploggp
agg-none-32|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 $none
agg-fixed-32|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 65536
agg-ploggp-32|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 $ploggp
agg-none-128|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 $none
agg-fixed-128|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 65536
agg-ploggp-128|--sizes|8K,64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 $ploggp
agg-rdma-none-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $none
agg-rdma-ploggp-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $ploggp
agg-rdma-timer-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer
agg-rdma-none-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $none
agg-rdma-ploggp-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $ploggp
agg-rdma-timer-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer
agg-rdma-none-4|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $none
agg-rdma-fixed-4|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 65536 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $size
agg-rdma-ploggp-4|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $ploggp
agg-rdma-timer-4|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 1 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer
agg-rdma-fixed-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 65536 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $size
agg-rdma-fixed-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 65536 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $size
agg-rdma-timer100-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer --ours-env=MPIR_CVAR_PART_AGGR_TIMEOUT_US=100
agg-rdma-timer100-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer --ours-env=MPIR_CVAR_PART_AGGR_TIMEOUT_US=100
agg-rdma-timer500-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer --ours-env=MPIR_CVAR_PART_AGGR_TIMEOUT_US=500
agg-rdma-timer500-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm $timer --ours-env=MPIR_CVAR_PART_AGGR_TIMEOUT_US=500
agg-rdma-burst-none-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $none
agg-rdma-burst-ploggp-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $ploggp
agg-rdma-burst-timer-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $timer
agg-rdma-burst-none-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $none
agg-rdma-burst-ploggp-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $ploggp
agg-rdma-burst-timer-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm $timer
ab-rdma-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm --ours-only
ab-rdma-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm --ours-only
ab-rdma-burst-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm --ours-only
ab-rdma-burst-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_shm --ours-only
ab-rdma-tcp-burst-32|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 8 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_tcp --ours-only
ab-rdma-tcp-burst-128|--sizes|64K,1M,4M|--pattern overhead --threads 4 --theta 32 --variants part:none,part:timer --aggr 0 --compute-us 1000 --noise-model single --noise 1,4 --ready burst $rdma_tcp --ours-only
rdma-shm-1x1|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 1 --theta 1 $rdma_shm
rdma-shm-4x32|--sizes|8,1K,64K,1M,4M|--pattern pipelined --threads 4 --theta 32 $rdma_shm
rdma-shm-earlybird|--sizes|64K,1M,4M|--pattern earlybird --gamma 100,1000 $rdma_shm
rdma-shm-overhead-1ms-single|--sizes|64K,1M,4M|--pattern overhead --compute-us 1000 --noise-model single --noise 1,4 $rdma_shm
rdma-tcp-1x1|--sizes|8,4K|--pattern pipelined --threads 1 --theta 1 --variants part,p2p-single --aggr 0 $rdma_tcp
rdma-tcp-1x32|--sizes|4K|--pattern pipelined --threads 1 --theta 32 --variants part,p2p-single --aggr 0 $rdma_tcp
rdma-tcp-4x32|--sizes|128K|--pattern pipelined --threads 4 --theta 32 --variants part,p2p-single --aggr 0 $rdma_tcp"
    xfail=""
    common=""
fi
pick() { printf '%s\n' "$1" | awk -F'|' -v only=",$only," 'NF && (only == ",," || index(only, "," $1 ","))'; }
configs=$(pick "$configs")
xfail=$(pick "$xfail")
[ -n "$configs$xfail" ] || die "no configuration selected"

libs="ours"
[ "$use_stock" = 1 ] && libs="ours stock"
nlib=$(echo $libs | wc -w)
count_launches() { printf '%s\n' "$1" | awk -F'|' -v nlib="${2:-1}" \
    'NF { n += split($3, a, ",") * ($4 ~ /(^| )--ours-only( |$)/ ? 1 : nlib) } END { print n + 0 }'; }
nl=$(count_launches "$configs" "$nlib")
nx=$(count_launches "$xfail")
total=$(( nl * rounds + nx ))
[ "$mode" = smoke ] && total=$((total + 3))     # idle-tax, pready-cost, thread-ops
rm -f "$OUT/results.csv" "$OUT/meta.txt" "$OUT"/logs/run-*.log
{
    echo "started: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "other busy processes at start: $(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 20 { printf "%s(%s%%) ", $2, $1 }')"
} > "$OUT/run-info.txt"
say "mode $mode: $(printf '%s\n' "$configs" | grep -c .) configurations, $total launches ($nlib libraries x $rounds round(s), one launch per size)$( [ "$nx" -gt 0 ] && echo ", $nx of them self-tests"); output in $OUT"
say "machine: $(uname -srm), $(nproc) cores; NOTE: 4 threads per rank x 2 ranks oversubscribe $(nproc) cores, so multi-threaded timings include OS scheduling and other jobs on the machine"

launch() {      # launch LIB NAME ROUND TAG OPTIONS...   -> exit status of the run; sets $log
    local lib=$1 name=$2 round=$3 tag=$4; shift 4
    local exe=$OUT/build/partbench-$lib mpiexec
    if [ "$lib" = ours ]; then mpiexec=$PREFIX/bin/mpiexec; else mpiexec=$(command -v "$STOCK_MPIEXEC"); fi
    log=$OUT/logs/run-$name-$tag-$lib-r$round.log
    rm -f "$OUT/partial.csv"
    # --ours-env=VAR=VALUE: an environment variable for our library only (e.g. VCIs: stock
    # MPICH is built with one VCI and aborts when asked for more); --env=VAR=VALUE: for both
    # (UCX_TLS=...: UCX also logs its endpoints' transports, checked by ucx_check)
    local genv="" a args=""
    ucx_tls=""
    for a in "$@"; do
        case $a in
            --ours-env=*) a=${a#--ours-env=}
                          [ "$lib" = ours ] && genv="$genv -genv ${a%%=*} ${a#*=}" ;;
            --ours-only) ;;
            --env=*) a=${a#--env=}
                     genv="$genv -genv ${a%%=*} ${a#*=}"
                     [ "${a%%=*}" = UCX_TLS ] && ucx_tls=${a#*=} ;;
            *) args="$args $a" ;;
        esac
    done
    [ -n "$ucx_tls" ] && genv="$genv -genv UCX_LOG_LEVEL info"
    # HOSTS=a,b: one rank per host (the --ib table; also any other sweep across two hosts)
    [ -n "${HOSTS:-}" ] && genv="$genv -hosts $HOSTS -ppn 1"
    # shellcheck disable=SC2086
    timeout -k 10 "$RUN_TIMEOUT" "$mpiexec" $genv -n 2 "$exe" --lib "$lib" --config "$name" \
        --round "$round" --csv "$OUT/partial.csv" --meta "$OUT/meta.txt" \
        --timeout $((RUN_TIMEOUT - 15)) $common $args < /dev/null > "$log" 2>&1
    local rc=$?
    grep -E '^  (ours|stock)' "$log" | sed 's/^  /      /' | cut -c1-200
    # MPICH 4.0.2's ch4:ucx MPI_Finalize can hang over TCP (both libraries); partbench then
    # exits after --finalize-grace with the run's status (every result already written)
    # (the process manager may then report an error: the run's own status, printed by rank 0
    # before MPI_Finalize, is what counts)
    if grep -q 'NOTE: MPI_Finalize has not returned' "$log"; then
        finalize_hangs=$((finalize_hangs + 1))
        finalize_list="$finalize_list $lib:$name:$tag"
        local st
        st=$(sed -n 's/^partbench: every result written; run status \([0-9]*\)$/\1/p' "$log" | tail -1)
        say "    note: MPI_Finalize hung (ch4:ucx finalize race) and was cut short after the results were written (exit $rc, run status ${st:-unknown})"
        [ -n "$st" ] && rc=$st
    fi
    return "$rc"
}
ucx_check() {   # ucx_check LOG TLS-LIST: every UCX endpoint in LOG uses only transports of
                # TLS-LIST (e.g. tcp,self; names, not aliases such as sm), and one endpoint
                # (the peer's) uses a non-self one; and MPICH must see the other rank as remote
                # (MPI_COMM_TYPE_SHARED of size 1, as MPIR_CVAR_NOLOCAL=1 makes it), else it
                # would send through its own shared memory, not UCX; prints what it saw and
                # appends it to meta.txt
    local eps tls t bad="" peer=""
    if ! grep -q 'ranks in MPI_COMM_TYPE_SHARED: 1 of 2' "$1"; then
        say "    UCX check FAILED: MPICH sees both ranks as local ($(grep -o 'ranks in MPI_COMM_TYPE_SHARED: [0-9]* of 2' "$1")), so its shared memory, not UCX, carries the data (MPIR_CVAR_NOLOCAL=1 missing?)"
        return 1
    fi
    eps=$(grep -oE 'ep_cfg\[[0-9]+\]: .*' "$1" | sort -u)
    if [ -z "$eps" ]; then
        say "    UCX check FAILED: no 'ep_cfg' lines in $1 (UCX_LOG_LEVEL=info): did UCX run?"
        return 1
    fi
    tls=$(printf '%s\n' "$eps" | grep -oE '[A-Za-z0-9_]+/[A-Za-z0-9_.:-]+' | sort -u | tr '\n' ' ')
    for t in $tls; do
        case ",$2," in *",${t%%/*},"*) ;; *) bad="$bad $t" ;; esac
        [ "${t%%/*}" != self ] && peer="$peer $t"
    done
    echo "ucx_transports (UCX_LOG_LEVEL=info, UCX_TLS=$2): $tls-> $([ -z "$bad" ] && [ -n "$peer" ] && echo ok || echo FAILED)" >> "$OUT/meta.txt"
    if [ -n "$bad" ] || [ -z "$peer" ]; then
        say "    UCX check FAILED: endpoints use${bad:- no peer transport}, not only $2"
        printf '%s\n' "$eps" | sed 's/^/      /'
        return 1
    fi
    say "    UCX endpoints use only $2 (seen: $tls)"
    return 0
}
keep_rows() {   # append the launch's rows to results.csv
    [ -s "$OUT/partial.csv" ] || return 0
    if [ -s "$OUT/results.csv" ]; then
        tail -n +2 "$OUT/partial.csv" >> "$OUT/results.csv"
    else
        cat "$OUT/partial.csv" > "$OUT/results.csv"
    fi
    rm -f "$OUT/partial.csv"
}

k=0
finalize_hangs=0
finalize_list=""
fails=0
passed=0
failed_list=""
for round in $(seq 1 "$rounds"); do
    while IFS='|' read -r name splitopt values opts; do
        [ -n "$name" ] || continue
        case $name in
            verbs-emu-*) say "$name: the verbs backend on the verbs emulator, for correctness only: its timings are NOT hardware timings (numbers for verbs come only from an HCA: bench/run.sh --ib)" ;;
        esac
        for value in ${values//,/ }; do
            if [ "$round" -gt 1 ] && [ "$BUDGET" -gt 0 ] && [ $(( $(date +%s) - t_start )) -ge "$BUDGET" ]; then
                [ -z "${budget_note:-}" ] && say "time budget of ${BUDGET}s used up: the rest of round $round is skipped (those points keep round 1)"
                budget_note=1
                continue
            fi
            for lib in $libs; do
                case " $opts " in *" --ours-only "*) [ "$lib" = ours ] || continue ;; esac
                k=$((k + 1))
                say "[$k/$total] $lib $name $splitopt $value (round $round)"
                [ "$lib" = ours ] && wait_install
                # shellcheck disable=SC2086
                launch "$lib" "$name" "$round" "$value" $opts $splitopt "$value"
                rc=$?
                if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
                    say "    $lib $name $value exited with $rc (crash, timeout or install in flux): retrying once in 20 s"
                    tail -5 "$log" | sed 's/^/      /'
                    sleep 20
                    [ "$lib" = ours ] && wait_install
                    # shellcheck disable=SC2086
                    launch "$lib" "$name" "$round" "$value" $opts $splitopt "$value"
                    rc=$?
                fi
                if [ $rc -eq 0 ] && [ -n "$ucx_tls" ]; then
                    ucx_check "$log" "$ucx_tls" || rc=4
                fi
                if [ $rc -eq 0 ] || [ $rc -eq 2 ]; then keep_rows; fi
                if [ $rc -eq 0 ]; then
                    passed=$((passed + 1))
                else
                    fails=$((fails + 1))
                    failed_list="$failed_list $lib:$name:$value"
                    say "    FAILED: $lib $name $value (exit $rc; log $log)"
                    grep -E 'VERIFICATION|FATAL|TIMEOUT|Abort|error' "$log" | head -5 | sed 's/^/      /'
                fi
            done
        done
    done <<EOF
$configs
EOF
done

# The separate small benchmarks, built and run briefly in the smoke run so that they cannot
# rot (every message and byte checked; run by hand for results):
#   smoke_tool NAME SOURCE DESCRIPTION RESULT_REGEX ENV... -- ARGS...
# builds bench/SOURCE with common.cpp, runs it on 2 ranks with ENV, and passes when it exits
# 0 and prints a line matching RESULT_REGEX (that line is shown).
smoke_tool() {
    local name=$1 src=$2 what=$3 result=$4 envs=() log
    shift 4
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    k=$((k + 1))
    say "[$k/$total] ours $name (bench/$src, $what)"
    log=$OUT/logs/$name.log
    if "$PREFIX/bin/mpicxx" $CXXFLAGS "$here/$src" "$here/common.cpp" -o "$OUT/build/$name" > "$log" 2>&1 &&
        env "${envs[@]}" timeout 120 "$PREFIX/bin/mpiexec" -n 2 "$OUT/build/$name" "$@" \
            < /dev/null >> "$log" 2>&1 && grep -q "$result" "$log"; then
        passed=$((passed + 1))
        say "    $(grep "$result" "$log" | tr -s ' ')"
    else
        fails=$((fails + 1))
        failed_list="$failed_list ours:$name"
        say "    FAILED: $name (log $log)"
        tail -5 "$log" | sed 's/^/      /'
    fi
}
if [ "$mode" = smoke ]; then
    # idle_tax.cpp: a live idle partitioned operation against an unrelated ping-pong
    # (bench/results/2026-11-27-idle-tax)
    smoke_tool idle-tax idle_tax.cpp "RDMA over tcp;ofi_rxm, 2 rounds" "^median live/freed" \
        MPIR_CVAR_PART_TRANSPORT=ofi "MPIR_CVAR_PART_OFI_PROVIDER=tcp;ofi_rxm" -- \
        --rounds 2 --pingpongs 500
    # pready_cost.cpp: what the sender's MPI_Pready* calls cost per aggregator
    # (bench/results/2026-11-27-timer-calls); MPI_Pready_range over chunks, so the timer's
    # batched path runs
    smoke_tool pready-cost pready_cost.cpp "RDMA over shm, none and timer" "^  timer " \
        MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm -- \
        --iters 60 --warmup 10 --chunk 8
    # thread_ops.cpp: threads each driving its own operation (bench/results/
    # 2026-12-01-thread-ops); 3 threads per rank over shm, every byte checked
    smoke_tool thread-ops thread_ops.cpp "RDMA over shm, 3 threads, one operation each" \
        "^thread_ops: " MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm -- \
        --threads 3 --iters 60 --warmup 10
fi

# self-tests: a spoiled byte must be caught (exit 2 and a VERIFICATION FAILED message)
while IFS='|' read -r name splitopt values opts; do
    [ -n "$name" ] || continue
    k=$((k + 1))
    say "[$k/$total] ours $name (self-test: must report a verification failure)"
    # shellcheck disable=SC2086
    launch ours "$name" 1 "$values" $opts $splitopt "$values"
    rc=$?
    rm -f "$OUT/partial.csv"
    if [ $rc -eq 2 ] && grep -q "VERIFICATION FAILED" "$log"; then
        passed=$((passed + 1))
        say "    ok: the corruption was detected"
    else
        fails=$((fails + 1))
        failed_list="$failed_list ours:$name"
        say "    FAILED: the injected corruption was not detected (exit $rc)"
    fi
done <<EOF
$xfail
EOF

elapsed=$(( $(date +%s) - t_start ))
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/run-info.txt"
echo "elapsed: ${elapsed} s (build included)" >> "$OUT/run-info.txt"
[ $finalize_hangs -gt 0 ] && echo "MPI_Finalize hangs cut short after the measurements (ch4:ucx finalize race):$finalize_list" >> "$OUT/run-info.txt"
say "runs done after ${elapsed}s: $passed passed, $fails failed${failed_list:+ (}${failed_list# }${failed_list:+)}"

if [ "$mode" != smoke ] && [ -s "$OUT/results.csv" ]; then
    say "report: plots and summary"
    $PY "$here/report.py" --out "$OUT" --elapsed "$elapsed" --mode "$mode" \
        > "$OUT/logs/report.log" 2>&1 || { cat "$OUT/logs/report.log"; die "report.py failed"; }
    cat "$OUT/logs/report.log"
    say "CSV $OUT/results.csv, plots $OUT/plots/, summary $OUT/summary.md"
fi
echo "bench: $passed passed, $fails failed"
[ $fails -eq 0 ] || exit 1
exit 0
