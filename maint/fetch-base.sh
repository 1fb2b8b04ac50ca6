#!/bin/sh
# maint/fetch-base.sh: print the path of MPICH's base source (a tarball or a tree).
#
# MPICH_SRC, when set, is used as it is (a tree, or a tarball; a tarball whose sha256 is not
# the pinned one is accepted only when it holds the pinned version). Otherwise the orig
# tarball of Debian's source package is taken from the cache, or fetched with
# `apt-get source` (a deb-src entry is added when the machine has none), checked against
# the pinned sha256 and cached in ${MPICH_PART_CACHE:-~/.cache/mpich-part}.

set -e
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/base.conf"
. "$top/maint/lib.sh"
exec 3>&1 1>&2       # progress goes to stderr, the answer to stdout

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ -n "${MPICH_SRC:-}" ]; then
    [ -e "$MPICH_SRC" ] || die "MPICH_SRC=$MPICH_SRC does not exist"
    if [ -f "$MPICH_SRC" ] && [ "$(sha "$MPICH_SRC")" != "$BASE_SHA256" ]; then
        step "note: $MPICH_SRC is not Debian's pinned orig tarball; it must hold MPICH $BASE_VERSION"
    fi
    echo "$(cd "$(dirname "$MPICH_SRC")" && pwd)/$(basename "$MPICH_SRC")" >&3
    exit 0
fi

cache=${MPICH_PART_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpich-part}
mkdir -p "$cache"
if [ -f "$cache/$BASE_ORIG" ] && [ "$(sha "$cache/$BASE_ORIG")" = "$BASE_SHA256" ]; then
    step "using cached $cache/$BASE_ORIG"
    echo "$cache/$BASE_ORIG" >&3
    exit 0
fi

command -v apt-get >/dev/null 2>&1 \
    || die "no apt-get here: download MPICH $BASE_VERSION and set MPICH_SRC=/path/to/it"

# A deb-src entry, derived from the machine's own deb entries when it has none.
if ! grep -rqs '^[[:space:]]*\(deb-src\|Types:.*deb-src\)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    . /etc/os-release
    uri=$(grep -rhs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' \
          | grep -v security | head -1)
    [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | head -1)
    [ -n "$uri" ] || die "cannot find a Debian mirror in /etc/apt to derive a deb-src entry from"
    step "adding a deb-src entry for $VERSION_CODENAME ($uri)"
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$uri" "$VERSION_CODENAME" | as_root tee /etc/apt/sources.list.d/mpich-part-src.sources >/dev/null
    apt_updated=no
fi
[ $apt_updated = yes ] || as_root apt-get update -q >/dev/null || die "apt-get update failed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step "fetching Debian's $BASE_PKG source package"
( cd "$tmp" && apt-get source --download-only -q "$BASE_PKG" >/dev/null 2>&1 ) \
    || die "apt-get source $BASE_PKG failed (no network?); set MPICH_SRC=/path/to/mpich-$BASE_VERSION"
[ -f "$tmp/$BASE_ORIG" ] || die "Debian's $BASE_PKG source package has no $BASE_ORIG (a newer version?); set MPICH_SRC"
got=$(sha "$tmp/$BASE_ORIG")
[ "$got" = "$BASE_SHA256" ] || die "$BASE_ORIG has sha256 $got, expected $BASE_SHA256"
mv "$tmp/$BASE_ORIG" "$cache/$BASE_ORIG"
step "cached $cache/$BASE_ORIG (sha256 verified)"
echo "$cache/$BASE_ORIG" >&3
