#!/bin/sh
# maint/hangwatch.sh DIR SECONDS: while it runs, every test program (a descendant of hydra's
# pmi proxy, past any wrapper script) that has run for SECONDS or more gets its threads'
# stacks written once into DIR/<program>.<pid>.txt (gdb; /proc's wchan and syscall lines where gdb cannot attach).
# test.sh and sanitize.sh start it beside runtests, below runtests' own time limit, so that a
# test stopped for running too long leaves the place where each rank waited, in CI too.
# Runs until killed.

dir=$1
limit=$2
[ -n "$dir" ] && [ -n "$limit" ] || { echo "usage: $0 DIR SECONDS" >&2; exit 2; }
mkdir -p "$dir"

dump() {        # dump PID FILE
    {
        echo "# $(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null)"
        echo "# running $(ps -o etimes= -p "$1" | tr -d ' ') s; environment's MPIR_/UCX_/FI_ settings:"
        tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | grep -E '^(MPIR_|UCX_|FI_|MPITEST)' | sed 's/^/#   /'
        if command -v gdb >/dev/null 2>&1; then
            timeout 60 gdb -p "$1" -batch -nx -ex 'set pagination off' \
                -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP\|^warning:'
        fi
        for t in /proc/"$1"/task/*; do
            echo "# task ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
        done
    } > "$2" 2>&1
}

descendants() {     # descendants PID: its children, theirs, and so on
    for c in $(pgrep -P "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}

while :; do
    sleep 10
    for proxy in $(pgrep -x hydra_pmi_proxy 2>/dev/null); do
        for pid in $(descendants "$proxy"); do
            name=$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)" 2>/dev/null)
            case $name in ""|sh|dash|bash|env|timeout) continue ;; esac    # a test wrapper
            t=$(ps -o etimes= -p "$pid" 2>/dev/null | tr -d ' ')
            [ -n "$t" ] && [ "$t" -ge "$limit" ] || continue
            f=$dir/$name.$pid.txt
            [ -e "$f" ] || dump "$pid" "$f"
        done
    done
done
