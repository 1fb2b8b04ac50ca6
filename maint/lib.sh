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
