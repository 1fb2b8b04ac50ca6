#!/bin/sh
# autogen.sh: assemble the MPICH source tree this extension is built from.
#
#   1. Obtain MPICH's orig tarball from Debian's source package (apt-get source), check it
#      against the sha256 pinned in maint/base.conf and cache it outside the work tree
#      (MPICH_SRC=/path/to/tree-or-tarball overrides the download).
#   2. Extract it into _src/, lay this repository's files (src/, test/, confdb/) over it and
#      apply maint/patches/series in order.
#   3. Regenerate MPICH's build system with MPICH's own autogen.sh (the parts this tree changes).
#
# A second run reuses everything it can: it needs no network, re-extracts only when the
# patch series changed, and regenerates only when a build-system input changed.
#
# Options:  --force   re-extract and regenerate from scratch
#           --sync    only lay changed files over the assembled tree (no regeneration)

set -e
top=$(cd "$(dirname "$0")" && pwd)
. "$top/maint/base.conf"
. "$top/maint/lib.sh"

force=no
sync_only=no
for a in "$@"; do
    case $a in
        --force) force=yes ;;
        --sync) sync_only=yes ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) die "unknown option '$a' (see ./autogen.sh --help)" ;;
    esac
done

srcroot=$top/_src
tree=$srcroot/mpich-$BASE_VERSION
mkdir -p "$srcroot"

# ---- 1. the base -----------------------------------------------------------------------
series_hash=$( (echo "$BASE_SHA256 ${MPICH_SRC:-}"; cat "$top/maint/patches/series" \
                "$top"/maint/patches/*.patch) | sha256sum | cut -c1-16)
if [ $force = yes ] || [ "$(cat "$tree/.part-base" 2>/dev/null)" != "$series_hash" ]; then
    step "extracting MPICH $BASE_VERSION into _src/"
    rm -rf "$tree" "$srcroot/.extract"
    mkdir -p "$srcroot/.extract"
    base=$("$top/maint/fetch-base.sh")
    if [ -d "$base" ]; then
        cp -a "$base" "$srcroot/.extract/mpich-$BASE_VERSION"
    else
        tar -C "$srcroot/.extract" -xf "$base"
    fi
    [ -f "$srcroot/.extract/mpich-$BASE_VERSION/maint/version.m4" ] \
        || die "$base does not hold an mpich-$BASE_VERSION source tree"
    mv "$srcroot/.extract/mpich-$BASE_VERSION" "$tree"
    rmdir "$srcroot/.extract"

    # ---- patch series, in order; a patch that does not apply stops the run ----
    while read -r p; do
        case $p in ''|'#'*) continue ;; esac
        [ -f "$top/maint/patches/$p" ] || die "maint/patches/series names '$p', which does not exist"
        step "applying maint/patches/$p"
        if ! patch -d "$tree" -p1 --forward --no-backup-if-mismatch -s < "$top/maint/patches/$p"; then
            die "maint/patches/$p does not apply to MPICH $BASE_VERSION; fix the patch (see maint/README)"
        fi
    done < "$top/maint/patches/series"
    rm -f "$tree/.part-regen"
    echo "$series_hash" > "$tree/.part-base"
fi

# ---- 2. the overlay --------------------------------------------------------------------
step "laying this repository's files over _src/"
overlay_files | while read -r f; do
    if ! cmp -s "$top/$f" "$tree/$f"; then
        mkdir -p "$(dirname "$tree/$f")"
        cp "$top/$f" "$tree/$f"
    fi
done

[ $sync_only = yes ] && exit 0

# ---- 3. regeneration -------------------------------------------------------------------
regen_hash=$(regen_inputs | sha256sum | cut -c1-16)
if [ "$(cat "$tree/.part-regen" 2>/dev/null)" = "$regen_hash" ] && [ $force = no ]; then
    step "build system is up to date (no build-system input changed)"
    exit 0
fi
need_tool autoconf autoconf
need_tool automake automake
need_tool libtoolize libtool
need_tool python3 python3
# Only the build systems the patch series and the overlay change are regenerated: MPICH's
# top level (Makefile.mk, subconfigure.m4, the bindings, CVARs and error messages) and the
# test suite (test/mpi). Hydra (with its copies of mpl and hwloc), modules/hwloc and
# modules/json-c keep the configure scripts the release tarball ships: nothing here changes
# them, and their autoreconf runs were ~100 of MPICH's autogen's ~235 s (2026-12-02, side by
# side on one tree: 133 s without them).
step "regenerating MPICH's build system (MPICH's autogen.sh -quick, without hydra, hwloc, json-c; about 2 minutes)"
t0=$(date +%s)
( cd "$tree" && ./autogen.sh -quick -without-hydra -without-hwloc -without-json ) > "$srcroot/autogen.log" 2>&1 \
    || { tail -30 "$srcroot/autogen.log"; die "MPICH's autogen.sh failed; full log in _src/autogen.log"; }
echo "$regen_hash" > "$tree/.part-regen"
step "regenerated in $(( $(date +%s) - t0 )) s"
