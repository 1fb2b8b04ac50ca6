#!/bin/sh
# maint/twohost/twohost.sh: two "hosts" on one machine out of network namespaces, and hydra's
# mpiexec launching across them through its ssh launcher (with maint/twohost/fake-ssh).
#
#   twohost.sh up        create namespaces ${TWOHOST_PREFIX}A and ${TWOHOST_PREFIX}B (default
#                        parthostA, parthostB) joined by a veth pair named $TWOHOST_IFACE
#                        (default twh0) on both sides, 10.213.47.1/24 and 10.213.47.2/24,
#                        loopback up, no other interface and no route out of the /24.
#                        Prints "twohost: SKIP: <reason>" and exits 77 when namespaces cannot
#                        be made (not root, no CAP_SYS_ADMIN/CAP_NET_ADMIN, no ip/unshare).
#   twohost.sh down      kill what still runs in them and delete them (idempotent)
#   twohost.sh reap      kill what still runs in them (between two runs)
#   twohost.sh status    show both hosts' interfaces
#   twohost.sh run [mpiexec args...]
#                        mpiexec (inside host A) -hosts parthostA,parthostB -launcher ssh
#                        -launcher-exec fake-ssh, with UCX and libfabric's tcp provider held
#                        to the veth (UCX_TLS=tcp,self UCX_NET_DEVICES=twh0 FI_TCP_IFACE=twh0;
#                        set them yourself to override); e.g. run -n 2 ./a.out
#   twohost.sh exec A|B COMMAND...   run a command on host A or B (e.g. `exec B ip addr`)
#
# Environment: PREFIX (MPICH installation, default <repo>/_install), TWOHOST_PREFIX,
# TWOHOST_IFACE, TWOHOST_STATE (state directory, default /tmp/twohost-$TWOHOST_PREFIX).
# Everything stays inside the two namespaces: the only addresses are 10.213.47.1 and .2
# on the veth, plus each namespace's own loopback.

set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PREFIX=${PREFIX:-$top/_install}
TWOHOST_PREFIX=${TWOHOST_PREFIX:-parthost}
TWOHOST_IFACE=${TWOHOST_IFACE:-twh0}
TWOHOST_STATE=${TWOHOST_STATE:-/tmp/twohost-$TWOHOST_PREFIX}
export TWOHOST_PREFIX TWOHOST_IFACE TWOHOST_STATE
NET=10.213.47
NS_A=${TWOHOST_PREFIX}A
NS_B=${TWOHOST_PREFIX}B
HOST_A=$NS_A
HOST_B=$NS_B
IP_A=$NET.1
IP_B=$NET.2

skip() { echo "twohost: SKIP: $*"; exit 77; }
die() { echo "twohost: error: $*" >&2; exit 1; }
ns_exists() { ip netns list 2>/dev/null | grep -q "^$1\( \|\$\)"; }

ns_kill() {     # end what still runs in namespace $1 (processes started there by us)
    ns_exists "$1" || return 0
    pids=$(ip netns pids "$1" 2>/dev/null)
    [ -n "$pids" ] || return 0
    kill -TERM $pids 2>/dev/null
    i=0
    while [ $i -lt 20 ] && [ -n "$(ip netns pids "$1" 2>/dev/null)" ]; do
        sleep 0.1
        i=$((i + 1))
    done
    pids=$(ip netns pids "$1" 2>/dev/null)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
    return 0
}

do_down() {
    for ns in "$NS_A" "$NS_B"; do
        ns_kill "$ns"
        if ns_exists "$ns"; then
            ip netns delete "$ns" || echo "twohost: could not delete namespace $ns" >&2
        fi
    done
    rm -rf "$TWOHOST_STATE"
    return 0
}

do_up() {
    command -v ip > /dev/null 2>&1 || skip "the ip command (iproute2) is missing"
    command -v unshare > /dev/null 2>&1 || skip "the unshare command (util-linux) is missing"
    [ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    do_down
    err=$(ip netns add "$NS_A" 2>&1) || { do_down; skip "cannot create a network namespace: $err"; }
    err=$(ip netns add "$NS_B" 2>&1) || { do_down; skip "cannot create a network namespace: $err"; }
    # the veth is created inside A with its peer inside B: nothing appears in the root namespace
    err=$( { ip -n "$NS_A" link add "$TWOHOST_IFACE" type veth peer name "$TWOHOST_IFACE" netns "$NS_B" &&
             ip -n "$NS_A" addr add "$IP_A/24" dev "$TWOHOST_IFACE" &&
             ip -n "$NS_B" addr add "$IP_B/24" dev "$TWOHOST_IFACE" &&
             ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
             { ip netns exec "$NS_A" sysctl -qw "net.ipv6.conf.$TWOHOST_IFACE.disable_ipv6=1" || :; } &&
             { ip netns exec "$NS_B" sysctl -qw "net.ipv6.conf.$TWOHOST_IFACE.disable_ipv6=1" || :; } &&
             ip -n "$NS_A" link set "$TWOHOST_IFACE" up &&
             ip -n "$NS_B" link set "$TWOHOST_IFACE" up; } 2>&1) \
        || { do_down; skip "cannot set up the veth pair: $err"; }
    err=$(unshare --uts --mount true 2>&1) || { do_down; skip "unshare --uts --mount fails: $err"; }
    mkdir -p "$TWOHOST_STATE" || { do_down; die "cannot create $TWOHOST_STATE"; }
    printf '%s %s %s\n' "$NS_A" "$IP_A" "$HOST_A" "$NS_B" "$IP_B" "$HOST_B" > "$TWOHOST_STATE/map"
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n%s\t%s\n' \
        "$IP_A" "$HOST_A" "$IP_B" "$HOST_B" > "$TWOHOST_STATE/hosts"
    # wait (bounded) until the link is up on both sides (veth carrier, DAD is not used for v4)
    i=0
    while [ $i -lt 50 ]; do
        ip -n "$NS_A" link show "$TWOHOST_IFACE" | grep -q 'state UP' &&
            ip -n "$NS_B" link show "$TWOHOST_IFACE" | grep -q 'state UP' && break
        sleep 0.1
        i=$((i + 1))
    done
    echo "twohost: up: $HOST_A ($NS_A, $IP_A) <-> $HOST_B ($NS_B, $IP_B) over $TWOHOST_IFACE"
}

need_up() {
    ns_exists "$NS_A" && ns_exists "$NS_B" && [ -r "$TWOHOST_STATE/map" ] \
        || die "the two hosts are not up (run: $0 up)"
}

do_run() {
    need_up
    [ -x "$PREFIX/bin/mpiexec" ] || die "no $PREFIX/bin/mpiexec (PREFIX=...)"
    # both proxies through fake-ssh (hydra would fork the one of its own host directly)
    HYDRA_LAUNCHER_AUTOFORK=0
    UCX_TLS=${UCX_TLS:-tcp,self}
    UCX_NET_DEVICES=${UCX_NET_DEVICES:-$TWOHOST_IFACE}
    FI_TCP_IFACE=${FI_TCP_IFACE:-$TWOHOST_IFACE}
    export HYDRA_LAUNCHER_AUTOFORK UCX_TLS UCX_NET_DEVICES FI_TCP_IFACE
    exec "$here/fake-ssh" --exec "$HOST_A" "$PREFIX/bin/mpiexec" \
        -hosts "$HOST_A,$HOST_B" -launcher ssh -launcher-exec "$here/fake-ssh" \
        -genv UCX_TLS "$UCX_TLS" -genv UCX_NET_DEVICES "$UCX_NET_DEVICES" \
        -genv FI_TCP_IFACE "$FI_TCP_IFACE" "$@"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
    up) do_up ;;
    down) do_down ;;
    reap) ns_kill "$NS_A"; ns_kill "$NS_B" ;;
    status)
        for ns in "$NS_A" "$NS_B"; do
            if ns_exists "$ns"; then echo "== $ns"; ip -n "$ns" -br addr; else echo "== $ns: absent"; fi
        done ;;
    run) do_run "$@" ;;
    exec)
        need_up
        case ${1:-} in
            A|a) h=$HOST_A ;;
            B|b) h=$HOST_B ;;
            *) die "usage: $0 exec A|B COMMAND..." ;;
        esac
        shift
        exec "$here/fake-ssh" --exec "$h" "$@" ;;
    *) echo "usage: $0 up|down|reap|status|run [mpiexec args...]|exec A|B COMMAND..." >&2; exit 2 ;;
esac
