# maint/lib.sh: shell helpers shared by autogen.sh, configure and the maint/ scripts.
# Sourced, never run. Expects $top (the repository root).

step() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a command as root (directly, or through sudo when there is one).
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "'$*' needs root and there is no sudo; install it by hand"
    fi
}

# need_tool CMD DEBIAN-PACKAGE: install the package when CMD is missing.
need_tool() {
    command -v "$1" >/dev/null 2>&1 && return 0
    step "installing Debian package $2 (for $1)"
    apt_install "$2"
}

apt_updated=no
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "missing: $*; this machine has no apt-get, install them by hand"
    if [ $apt_updated = no ]; then
        as_root apt-get update -q >/dev/null || die "apt-get update failed"
        apt_updated=yes
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
        >/dev/null || die "apt-get install $* failed"
}

# Debian packages that are not installed yet, of the ones given.
missing_debs() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || printf '%s ' "$p"
    done
}

# The files this repository lays over MPICH's tree (paths relative to $top).
overlay_files() {
    ( cd "$top" && find src test confdb -type f \
        ! -name '*.o' ! -name '*.lo' ! -name '*~' ! -path '*/.deps/*' ! -path '*/.libs/*' \
        2>/dev/null | LC_ALL=C sort )
}

# Everything whose change means MPICH's build system must be regenerated: the patch
# series, the overlaid build-system files, error texts, and every CVAR block.
regen_inputs() {
    cat "$top/maint/patches/series" "$top"/maint/patches/*.patch
    overlay_files | while read -r f; do
        case $f in
            *.m4|*.mk|*.am|*.ac|*errnames.txt) echo "$f"; cat "$top/$f" ;;
            *.c|*.h) grep -q 'MPI_T_CVAR_INFO_BLOCK' "$top/$f" && { echo "$f"; \
                     sed -n '/BEGIN_MPI_T_CVAR_INFO_BLOCK/,/END_MPI_T_CVAR_INFO_BLOCK/p' "$top/$f"; } ;;
        esac
    done
}

# runtests_failed LOG F: the failures of a runtests run whose TAP file counts F, or runtests'
# own count ("N tests failed out of M" in LOG) when higher: a program that does not build is
# counted there without a TAP line.
runtests_failed() {
    rf_n=$(sed -n 's/^\([0-9][0-9]*\) tests failed out of [0-9]*$/\1/p' "$1" 2>/dev/null | tail -1)
    if [ -n "$rf_n" ] && [ "$rf_n" -gt "$2" ]; then echo "$rf_n"; else echo "$2"; fi
}

# testsuite_configure TB PREFIX LOGBASE DTPOOLS [VAR=value ...]: MPICH's test suite configured
# in TB against the MPICH installed in PREFIX, with its helper libraries built (and the
# datatype pools when DTPOOLS is yes). Done again only when PREFIX's libmpi or the test suite's
# configure script changed. Logs: LOGBASE-configure.log, LOGBASE-util.log. The VAR=value
# settings go into the environment of configure and make (sanitizer options, CFLAGS).
testsuite_configure() {
    ts_tb=$1 ts_prefix=$2 ts_log=$3 ts_dtp=$4
    shift 4
    ts_src=$top/_src/mpich-$BASE_VERSION/test/mpi
    ts_stamp=$(cat "$ts_prefix/lib/libmpi.so" "$ts_src/configure" 2>/dev/null | sha256sum | cut -c1-16)
    [ "$(cat "$ts_tb/.part-stamp" 2>/dev/null)" != "$ts_stamp" ] || return 0
    step "configuring MPICH's test suite in $ts_tb (against $ts_prefix${*:+; $*})"
    rm -rf "$ts_tb"
    mkdir -p "$ts_tb"
    # configure --no-create, then config.status makes only what part/ and threads/part/ use
    # (of its 183 files: 103 s -> 58 s here, 2026-12-02, with the same part/testlist.dtp,
    # Makefiles, runtests and mpitestconf.h). gentests writes the datatype-pool testlists of
    # every directory (the seeds run on across them), so those directories must exist.
    ( cd "$ts_tb" && env "$@" "$ts_src/configure" --no-create --with-mpi="$ts_prefix" \
        --enable-threads=multiple --disable-spawn --disable-ft-tests --disable-perftest \
        && mkdir -p attr coll cxx/attr cxx/datatype pt2pt rma part threads/part \
        && ./config.status runtests checktests Makefile include/mpitestconf.h util/Makefile \
            part/Makefile threads/part/Makefile gentests libtool depfiles \
        && chmod a+x runtests checktests ) > "$ts_log-configure.log" 2>&1 \
        || { tail -20 "$ts_log-configure.log"; die "configuring the test suite failed"; }
    env "$@" make -C "$ts_tb/util" libmtest_single.la libmtest_thread.la > "$ts_log-util.log" 2>&1 \
        || die "building the test suite's helper libraries failed (see $ts_log-util.log)"
    if [ "$ts_dtp" = yes ]; then
        env "$@" make -C "$ts_tb/dtpools" >> "$ts_log-util.log" 2>&1 \
            || die "building the test suite's datatype pools failed (see $ts_log-util.log)"
    fi
    echo "$ts_stamp" > "$ts_tb/.part-stamp"
}
