#!/bin/sh
# maint/build.sh: install missing Debian packages, assemble, configure, build and install
# MPICH with this extension into $PREFIX (default: _install/ in the repository root).
#
# Incremental: autogen.sh regenerates only what changed; configure re-runs only when its
# arguments changed; make rebuilds only what changed (through ccache when present).
#
# Environment:
#   PREFIX          install prefix                     (default: <repo>/_install)
#   BUILD_DIR       build directory                    (default: <repo>/_build)
#   CONFIGURE_ARGS  replaces the default configure options below (the prefix and
#                   --no-recursion are always added)
#   EXTRA_CONFIGURE_ARGS  appended to them
#
# Default options keep a 2-core build near 10 minutes: ch4:ucx (as Debian ships MPICH) on
# Debian's UCX and hwloc, the dataloop datatype engine instead of yaksa, no Fortran, no ROMIO,
# no debug build, and no static libmpi.a (libtool compiled every file of libmpi twice, PIC and
# not; nothing here links MPICH statically). yaksa, Fortran, ROMIO and the static library
# are one CONFIGURE_ARGS away (see README).

set -e
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/lib.sh"
. "$top/maint/base.conf"

PREFIX=${PREFIX:-$top/_install}
BUILD_DIR=${BUILD_DIR:-$top/_build}
DEFAULT_CONFIGURE_ARGS="--with-device=ch4:ucx --with-ucx=/usr --with-hwloc=/usr \
--with-datatype-engine=dataloop --disable-fortran --disable-romio \
--enable-g=none --enable-fast=O2 --enable-threads=multiple --enable-thread-cs=per-vci --with-ch4-max-vcis=16 \
--disable-static"
args="${CONFIGURE_ARGS:-$DEFAULT_CONFIGURE_ARGS} ${EXTRA_CONFIGURE_ARGS:-}"

t_start=$(date +%s)
phase() { echo "$1 $(( $(date +%s) - t_start ))" >> "$BUILD_DIR/.part-phases"; }

# ---- Debian packages -------------------------------------------------------------------
debs="build-essential g++ autoconf automake libtool python3 perl patch xz-utils pkg-config \
libucx-dev libhwloc-dev libibverbs-dev ccache cmake libgtest-dev libfabric-dev libfabric-bin \
ibverbs-utils iproute2 util-linux"
# ibverbs-utils: Debian's unmodified ibv_rc_pingpong, run on the verbs emulator by the tests
# (test/verbs-emu); iproute2, util-linux: the two-host harness (maint/twohost: ip netns, unshare)
# libfabric: the RDMA transport (--enable-part-ofi, auto) in every build; libfabric.pc lists
# its providers' libraries as private link dependencies, needed when ch4:ofi links it
case "$args" in
    *ch4:ofi*) debs="$debs libpsm2-dev libpsm-infinipath1-dev librdmacm-dev" ;;
esac
missing=$(missing_debs $debs)
if [ -n "$missing" ]; then
    step "installing missing Debian packages: $missing"
    apt_install $missing
fi

mkdir -p "$BUILD_DIR"
: > "$BUILD_DIR/.part-phases"

# ---- assemble ---------------------------------------------------------------------------
"$top/autogen.sh"
phase autogen

# ---- configure --------------------------------------------------------------------------
# ccache in its depend mode: a miss costs ~5 % over plain gcc instead of ~32 % (the default
# mode preprocesses every file once more to hash it; measured on 5 of libmpi's files,
# 2026-12-02), which matters on a fresh machine, where every file is a miss; hits work as
# before (the compiler's -MD output names the headers). Compiles without -MD (configure's
# tests) take ccache's usual path.
if command -v ccache >/dev/null 2>&1; then
    export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1 CCACHE_DEPEND=${CCACHE_DEPEND:-1}
    export CC="ccache gcc" CXX="ccache g++"
fi
# --no-recursion: MPICH's configure ends by configuring its test suite (test/mpi and its
# dtpools, ~115 s of a 303 s cold configure here) in the build tree, which nothing here
# builds or runs: test.sh configures the suite against the installed MPICH (maint/lib.sh).
# mpl, json-c and hydra are configured as before (MPICH runs those directly, not as
# subdirectories that --no-recursion skips).
want="$args --prefix=$PREFIX --no-recursion"
if [ ! -f "$BUILD_DIR/Makefile" ] || [ "$(cat "$BUILD_DIR/.part-configure-args" 2>/dev/null)" != "$want" ]; then
    step "configuring in $BUILD_DIR: $want"
    ( cd "$BUILD_DIR" && "$top/_src/mpich-$BASE_VERSION/configure" $want ) > "$BUILD_DIR/configure.out" 2>&1 \
        || { tail -30 "$BUILD_DIR/configure.out"; die "configure failed; see $BUILD_DIR/configure.out and config.log"; }
    grep '^\*\*\* partitioned engine' "$BUILD_DIR/configure.out" || true
    echo "$want" > "$BUILD_DIR/.part-configure-args"
fi
phase configure

# ---- build and install -----------------------------------------------------------------
step "building (make -j$(nproc)); log in $BUILD_DIR/make.out"
make -C "$BUILD_DIR" -j"$(nproc)" > "$BUILD_DIR/make.out" 2>&1 \
    || { grep -E 'error|Error' "$BUILD_DIR/make.out" | head -40; die "build failed; see $BUILD_DIR/make.out"; }
phase make
make -C "$BUILD_DIR" install > "$BUILD_DIR/install.out" 2>&1 \
    || { tail -30 "$BUILD_DIR/install.out"; die "make install failed"; }
phase install
step "installed into $PREFIX"
awk 'BEGIN{p=0} {printf "    %-10s %5d s\n", $1, $2-p; p=$2}' "$BUILD_DIR/.part-phases"
