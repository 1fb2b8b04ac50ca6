#!/bin/sh
# maint/hangwatch.sh DIR ROOT [LIMIT]: while process ROOT lives, every test program below it
# (a descendant of a hydra pmi proxy that descends from ROOT, past any wrapper script) that
# has run for 80 % of its time limit gets its threads' stacks written once into
# DIR/<program>.<pid>.txt (gdb; /proc's wchan and syscall lines where gdb cannot attach).
# The limit is the program's MPIEXEC_TIMEOUT (runtests sets it per test, from the testlist's
# timeLimit or MPITEST_TIMEOUT; hydra passes it on to the ranks), else LIMIT (default 300).
# test.sh and sanitize.sh start it beside runtests, so that a test stopped for running too
# long leaves the place where each rank waited, in CI too. Other jobs on the machine are
# not looked at. Ends with ROOT.

dir=$1
root=$2
default_limit=${3:-300}
[ -n "$dir" ] && [ -n "$root" ] || { echo "usage: $0 DIR ROOT-PID [LIMIT]" >&2; exit 2; }
mkdir -p "$dir"

dump() {        # dump PID FILE
    {
        echo "# $(tr '\0' ' ' 2>/dev/null < "/proc/$1/cmdline")"
        echo "# running $(ps -o etimes= -p "$1" | tr -d ' ') s; environment's MPIR_/UCX_/FI_ settings:"
        tr '\0' '\n' 2>/dev/null < "/proc/$1/environ" | grep -E '^(MPIR_|UCX_|FI_|MPITEST|MPIEXEC_TIMEOUT)' | sed 's/^/#   /'
        if command -v gdb >/dev/null 2>&1; then
            timeout 60 gdb -p "$1" -batch -nx -ex 'set pagination off' \
                -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP\|^warning:'
        fi
        for t in /proc/"$1"/task/*; do
            echo "# task ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
        done
    } > "$2" 2>&1
}

# check PID: a test program (not a wrapper) past 80 % of its limit gets its stacks dumped
check() {
    name=$(basename "$(readlink "/proc/$1/exe" 2>/dev/null)" 2>/dev/null)
    case $name in ""|sh|dash|bash|env|timeout|hydra_pmi_proxy) return ;; esac
    t=$(ps -o etimes= -p "$1" 2>/dev/null | tr -d ' ')
    [ -n "$t" ] || return
    # (2> before <: the program may end before the redirection opens its file)
    limit=$(tr '\0' '\n' 2>/dev/null < "/proc/$1/environ" | sed -n 's/^MPIEXEC_TIMEOUT=\([0-9][0-9]*\)$/\1/p')
    limit=${limit:-$default_limit}
    [ $((t * 5)) -ge $((limit * 4)) ] || return
    f=$dir/$name.$1.txt
    [ -e "$f" ] || dump "$1" "$f"
}

# walk PID UNDER-PROXY: PID's descendants; those below a hydra pmi proxy are checked
walk() {
    for c in $(pgrep -P "$1" 2>/dev/null); do
        if [ "$2" = 1 ]; then
            check "$c"
            walk "$c" 1
        elif [ "$(cat "/proc/$c/comm" 2>/dev/null)" = hydra_pmi_proxy ]; then
            walk "$c" 1
        else
            walk "$c" 0
        fi
    done
}

while kill -0 "$root" 2>/dev/null; do
    sleep 5
    walk "$root" 0
done
