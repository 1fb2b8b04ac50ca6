#!/bin/bash
# maint/sanitize.sh: memory and thread checkers (issue 12). Builds MPICH with this extension
# under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included) into a prefix
# of its own and runs the engine's tests against it; optionally runs valgrind's helgrind over
# the threaded engine tests on the normal (sanitizer-free) install, or ThreadSanitizer on a
# build of its own. See README, "Memory and thread checkers".
#
#   maint/sanitize.sh [asan] [unit] [helgrind] [tsan] [handles]   (no argument: asan unit)
#
#   asan      maint/build.sh with CONFIGURE_ARGS = the default options, --enable-g=dbg,asan,ubsan
#             --enable-fast=O1 (MPICH's own sanitizer switches: they also go into the mpicc
#             wrapper, so the test programs are instrumented and link libasan first), into
#             BUILD_DIR/PREFIX; then MPICH's test directories part/ and threads/part/
#             (testlist, testlist.dtp, testlist.cvar) through runtests, once with the default
#             (tag) transport and once with MPIR_CVAR_PART_TRANSPORT=ofi over libfabric's shm
#             provider when the build has the RDMA transport. ASan/LSan reports go to files
#             (log_path), one per process; UBSan's reach the test output (GCC's libubsan
#             ignores log_path) and so fail the test; all are classified afterwards.
#   unit      the GoogleTest unit tests of the engine's pure logic with -DPART_SANITIZE=ON
#   helgrind  valgrind --tool=helgrind over threads/part's engine tests (reduced sizes) on
#             HG_PREFIX (default: the normal install, _install/, used read-only); reports are
#             classified as the engine's or MPICH/UCX/libc internals. Informational: helgrind
#             does not understand C11 atomics, so it never fails the run by itself.
#   tsan      a ThreadSanitizer build (TSAN_BUILD_DIR/TSAN_PREFIX) and threads/part's
#             testlist.cvar under it; a report with a frame in the engine fails the run.
#   handles   MPICH's own handle check: the default build plus --enable-g=handlealloc
#             (HC_BUILD_DIR/HC_PREFIX), under which MPI_Finalize prints every kind of MPI
#             object (requests, communicators, datatypes, ...) still allocated; part/ and
#             threads/part/ (testlist, testlist.cvar) in SAN_MODES. Such a line is output
#             other than " No Errors", so runtests fails that test; the lines are counted.
#             Leaked internal requests (a wire message's request the engine never freed)
#             show nowhere else.
#
# Exits non-zero when a test fails (an ASan error aborts its process; an unsuppressed leak
# makes it exit non-zero) or when any sanitizer report names a file of ours (src/mpid/ch4/netmod/part,
# src/mpi/part, or this project's test programs test/mpi/{,threads/}part/part_*.c).
# maint/sanitize.supp holds the suppressions (only MPICH's, UCX's and libraries' own reports).
#
# It builds from _src/ like maint/build.sh. While someone else builds or edits in this checkout,
# run it from a copy of the repository (its own _src/): see README.
#
# Environment: PREFIX (default _install-asan), BUILD_DIR (default _build-asan), RESULTS
# (default _results-asan), SAN_MODES (default "tag ofi-shm"), SAN_TESTLISTS (default
# "testlist,testlist.dtp,testlist.cvar"), MPITEST_TIMEOUT (default 300) and
# MPITEST_TIMEOUT_MULTIPLIER (default 3: ASan runs slower), SAN_SLOW_UNWIND (1: full
# allocation stacks), HG_PREFIX (default _install), HG_BUILD_DIR (its build directory, for
# the engine's symbols; default _build), HG_TIMEOUT (seconds per helgrind run), TSAN_PREFIX
# and TSAN_BUILD_DIR (default _install-tsan, _build-tsan).

set -e
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/lib.sh"
. "$top/maint/base.conf"

PREFIX=${PREFIX:-$top/_install-asan}
BUILD_DIR=${BUILD_DIR:-$top/_build-asan}
RESULTS=${RESULTS:-$top/_results-asan}
HG_PREFIX=${HG_PREFIX:-$top/_install}
HG_BUILD_DIR=${HG_BUILD_DIR:-$top/_build}
TSAN_PREFIX=${TSAN_PREFIX:-$top/_install-tsan}
TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-$top/_build-tsan}
HC_PREFIX=${HC_PREFIX:-$top/_install-handles}
HC_BUILD_DIR=${HC_BUILD_DIR:-$top/_build-handles}
SAN_MODES=${SAN_MODES:-tag ofi-shm}
SAN_TESTLISTS=${SAN_TESTLISTS:-testlist,testlist.dtp,testlist.cvar}
SUPP=$top/maint/sanitize.supp
tsrc=$top/_src/mpich-$BASE_VERSION/test/mpi

steps="$*"
[ -n "$steps" ] || steps="asan unit"
for s in $steps; do
    case $s in asan|unit|helgrind|tsan|handles) ;;
        *) die "unknown step '$s' (asan, unit, helgrind, tsan, handles)" ;; esac
done

t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
mkdir -p "$RESULTS"
failed=0
failures=""
fail() { failed=$((failed + 1)); failures="$failures $1"; }

# UCX's memory hooks patch malloc/mmap, which ASan owns: off. Set for every step.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no

# ---- suppressions: maint/sanitize.supp split by tool (each tool refuses the others' types) --
split_supp() {
    grep -E '^leak:' "$SUPP" > "$RESULTS/lsan.supp" || true
    grep -E '^(interceptor_name|interceptor_via_fun|interceptor_via_lib|odr_violation):' \
        "$SUPP" > "$RESULTS/asan.supp" || true
    grep -E '^(race|race_top|mutex|thread|deadlock|called_from_lib|signal):' "$SUPP" > "$RESULTS/tsan.supp" || true
    grep -vE '^(#|$|leak:|interceptor_name:|interceptor_via_fun:|interceptor_via_lib:|odr_violation:|race:|race_top:|mutex:|thread:|deadlock:|called_from_lib:|signal:)' \
        "$SUPP" > "$RESULTS/ubsan.supp" || true
}

# ---- classification of sanitizer reports ---------------------------------------------------
# classify_reports DIR OUT: one line per report (leak records count one each) in OUT:
#   "<ours|foreign> <kind> <log file> <first frame naming a source file>"
# A report is ours when any frame names one of our files.
ours_re='src/mpid/ch4/netmod/part/|src/mpi/part/|test/mpi/(threads/)?part/part_[a-z0-9_]*\.c'
classify_reports() {
    : > "$2"
    find "$1" -name 'san.*' -type f | LC_ALL=C sort | while read -r f; do
        awk -v file="${f#$1/}" -v ours="$ours_re" -v out="$2" '
            function flush() {
                if (kind == "") return
                printf "%s %s %s %s\n", (is_ours ? "ours" : "foreign"), kind, file, (where == "" ? "-" : where) >> out
                kind = ""; where = ""; is_ours = 0
            }
            /ERROR: AddressSanitizer:/  { flush(); kind = "asan:" $3 }
            /^(Direct|Indirect) leak of/ { flush(); kind = "leak:" tolower($1) }
            / runtime error: /           { flush(); kind = "ubsan"; where = $1
                                           sub(/.*mpich-[0-9.]*\//, "", where); sub(/:$/, "", where) }
            /ThreadSanitizer:|ERROR: LeakSanitizer: [^d]/ { flush(); kind = "other" }
            kind != "" && /#[0-9]+ 0x/ {
                if ($0 ~ ours) is_ours = 1
                # the first frame outside the sanitizer runtime: function@file:line or @library
                if (where == "" && $0 !~ /libsanitizer|__interceptor_|__asan_|__ubsan_|__lsan_/) {
                    loc = $NF; sub(/.*\//, "", loc); sub(/\)$/, "", loc)
                    where = (($3 == "in") ? $4 : "?") "@" loc
                }
            }
            kind == "ubsan" && $0 ~ ours { is_ours = 1 }
            END { flush() }' "$f"
    done
}

# write_wrap FILE: the program wrapper (MPITEST_PROGRAM_WRAPPER) that runs each process of a
# test: its sanitizer logs go to a directory under SAN_DIR named after the test line (program,
# arguments, MPIR_CVAR_* settings); SAN_ASAN_OPTIONS, SAN_UBSAN_OPTIONS and SAN_TSAN_OPTIONS,
# those that are set, become the sanitizers' options; a non-zero exit is noted in its "exit".
write_wrap() {
    cat > "$1" <<'WRAP'
#!/bin/sh
# written by maint/sanitize.sh: runs one process of a test, its sanitizer logs in a directory
# named after the test line (program, arguments, MPIR_CVAR_* settings)
id=$( (echo "$*"; env | grep '^MPIR_CVAR_' | LC_ALL=C sort) | cksum | cut -d' ' -f1)
d=$SAN_DIR/$(basename "$1")-$id
mkdir -p "$d"
[ -f "$d/test" ] || { echo "$*"; env | grep '^MPIR_CVAR_' | LC_ALL=C sort; } > "$d/test"
q=""
case " $SAN_SMALL_QUARANTINE " in *" $(basename "$1") "*) q=":quarantine_size_mb=16" ;; esac
[ -z "$SAN_ASAN_OPTIONS" ] || export ASAN_OPTIONS="$SAN_ASAN_OPTIONS$q:log_path=$d/san"
[ -z "$SAN_UBSAN_OPTIONS" ] || export UBSAN_OPTIONS="$SAN_UBSAN_OPTIONS:log_path=$d/san"
[ -z "$SAN_TSAN_OPTIONS" ] || export TSAN_OPTIONS="$SAN_TSAN_OPTIONS:log_path=$d/san"
"$@"
rc=$?
[ $rc -eq 0 ] || echo "a process exited with $rc" >> "$d/exit"
exit $rc
WRAP
    chmod +x "$1"
}

# ---- the sanitizer build and MPICH's test directories ---------------------------------------
run_asan() {
    step "ASan + UBSan build into $PREFIX (build directory $BUILD_DIR)"
    # configure's and the test suite's own probes must not fail on leaks
    ASAN_OPTIONS=detect_leaks=0 BUILD_DIR="$BUILD_DIR" PREFIX="$PREFIX" \
    CONFIGURE_ARGS="--with-device=ch4:ucx --with-ucx=/usr --with-hwloc=/usr \
--with-datatype-engine=dataloop --disable-fortran --disable-romio \
--enable-g=dbg,asan,ubsan --enable-fast=O1 --enable-threads=multiple \
--enable-thread-cs=per-vci --with-ch4-max-vcis=16" \
        "$top/maint/build.sh"
    step "build done after $(elapsed)"
    "$PREFIX/bin/mpichversion" | sed -n 's/^MPICH Custom Information:[[:space:]]*/    /p'

    tb=$BUILD_DIR/test-mpi
    testsuite_configure "$tb" "$PREFIX" "$RESULTS/testsuite" yes ASAN_OPTIONS=detect_leaks=0
    # runtests builds each program before running it; build them all first (the log shows
    # compiler errors, and the timings do not include compiling)
    step "building the test programs of part/ and threads/part/"
    for d in part threads/part; do
        ASAN_OPTIONS=detect_leaks=0 make -C "$tb/$d" -j"$(nproc)" > "$RESULTS/build-$(echo $d | tr / -).log" 2>&1 \
            || { tail -20 "$RESULTS/build-$(echo $d | tr / -).log"; die "building test/mpi/$d failed"; }
    done

    split_supp
    for mode in $SAN_MODES; do
        case $mode in
            tag) envs="" ;;
            ofi-shm)
                if ! "$PREFIX/bin/mpichversion" | grep -q 'rdma over libfabric'; then
                    step "mode ofi-shm skipped: $PREFIX has no RDMA transport"
                    continue
                fi
                envs="MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm"
                # libfabric 1.17's shm provider names its region /dev/shm/<pid>:<n>:<n>; one left
                # by a process that died (killed, aborted) makes fi_enable fail with EBUSY in a
                # later process that gets the same pid. Not removed here (they may be someone
                # else's); only counted, so that such a failure can be told from ours.
                stale=0
                for f in /dev/shm/[0-9]*:[0-9]*:[0-9]*; do
                    [ -e "$f" ] || continue
                    pid=${f#/dev/shm/}; pid=${pid%%:*}
                    kill -0 "$pid" 2>/dev/null || stale=$((stale + 1))
                done
                [ $stale -eq 0 ] || echo "    note: $stale libfabric shm regions of dead processes in /dev/shm" \
                    "(a test whose pid matches one fails in fi_enable with 'Device or resource busy')" ;;
            nolocal) envs="MPIR_CVAR_NOLOCAL=1" ;;
            *) die "unknown mode '$mode' (tag, ofi-shm, nolocal)" ;;
        esac
        sd=$RESULTS/san-$mode
        rm -rf "$sd"
        mkdir -p "$sd"
        # Reports go into files (log_path), so that a report that does not stop the program
        # (UBSan recovers) is still seen; runtests' output checks stay as they are. The wrapper
        # (MPITEST_PROGRAM_WRAPPER) gives every test line a directory of its own,
        # <program>-<checksum of arguments and MPIR_CVAR_* settings>, with the line in "test";
        # mpiexec's own reports go to hydra/.
        # detect_leaks=1: a leak makes the process exit non-zero and its test fail.
        # Allocation stacks use the fast (frame-pointer) unwinder: it stops inside UCX and
        # libfabric (no frame pointers) but names their function. SAN_SLOW_UNWIND=1 walks the
        # full stacks (fast_unwind_on_malloc=0; about 10 times slower: pingping takes minutes).
        # part_soak checks that VmRSS stays flat between its rounds 500 and 1500; ASan's
        # quarantine of freed blocks (256 MiB by default) fills meanwhile and fails that check,
        # so SAN_SMALL_QUARANTINE's programs (default part_soak) run with 16 MiB.
        # verify_asan_link_order=0: harmless here (the programs link libasan first); needed when
        # an uninstrumented program loads this libmpi.
        aopt="detect_leaks=1:verify_asan_link_order=0:malloc_context_size=40"
        aopt="$aopt:fast_unwind_on_malloc=$([ "${SAN_SLOW_UNWIND:-0}" = 1 ] && echo 0 || echo 1)"
        aopt="$aopt:suppressions=$RESULTS/asan.supp"
        uopt="print_stacktrace=1:suppressions=$RESULTS/ubsan.supp"
        mkdir -p "$sd/hydra"
        write_wrap "$RESULTS/san-wrap"
        step "MPICH test suite part/ and threads/part/ under ASan+UBSan, mode $mode ${envs:+($envs)}"
        t1=$(date +%s)
        ( cd "$tb" && env $envs SAN_DIR="$sd" SAN_ASAN_OPTIONS="$aopt" SAN_UBSAN_OPTIONS="$uopt" \
            SAN_SMALL_QUARANTINE="${SAN_SMALL_QUARANTINE-part_soak}" \
            ASAN_OPTIONS="$aopt:log_path=$sd/hydra/san" UBSAN_OPTIONS="$uopt:log_path=$sd/hydra/san" \
            LSAN_OPTIONS="suppressions=$RESULTS/lsan.supp:print_suppressions=0" \
            MPITEST_PROGRAM_WRAPPER="$RESULTS/san-wrap" \
            PART_PEER_DIES_MPIEXEC="$PREFIX/bin/mpiexec" \
            MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-300} MPITEST_TIMEOUT_MULTIPLIER=${MPITEST_TIMEOUT_MULTIPLIER:-3} \
            ./runtests -srcdir="$tsrc" -tests="$SAN_TESTLISTS" -testdirs=part,threads/part \
            -mpiexec="$PREFIX/bin/mpiexec" -tapfile="$RESULTS/part-$mode.tap" \
            -junitfile="$RESULTS/part-$mode.junit.xml" -xmlfile="$RESULTS/part-$mode.xml" \
            -showprogress ) > "$RESULTS/part-$mode.log" 2>&1 || true
        p=$(grep -c '^ok ' "$RESULTS/part-$mode.tap" 2>/dev/null || true)
        f=$(grep -c '^not ok ' "$RESULTS/part-$mode.tap" 2>/dev/null || true)
        p=${p:-0} f=${f:-0}
        f=$(runtests_failed "$RESULTS/part-$mode.log" "$f")
        [ "$p" -gt 0 ] || f=$((f + 1))              # ran nothing: a failure
        echo "    $p passed, $f failed ($(( $(date +%s) - t1 )) s)"
        grep '^not ok' "$RESULTS/part-$mode.tap" | head -20 || true
        [ "$f" -eq 0 ] || fail "tests-$mode"

        # GCC's libubsan ignores log_path: its reports reach the test output (and fail the test
        # as unexpected output); runtests keeps a failed test's output in the TAP file (## lines)
        awk -v dir="$sd/tap-output" '
            /^(not )?ok / { n++; name = $0; sub(/ [0-9]+ # .*/, "", name); sub(/.*\//, "", name)
                            f = sprintf("%s/%03d-%s/san.output", dir, n, name); next }
            /^## / && f != "" { if (!(f in made)) { made[f] = 1; system("mkdir -p \"" substr(f, 1, length(f) - 11) "\"") }
                                sub(/^## /, ""); print >> f; close(f) }' "$RESULTS/part-$mode.tap"
        classify_reports "$sd" "$RESULTS/reports-$mode.txt"
        n_ours=$(grep -c '^ours ' "$RESULTS/reports-$mode.txt" || true)
        n_foreign=$(grep -c '^foreign ' "$RESULTS/reports-$mode.txt" || true)
        echo "    sanitizer reports: ${n_ours:-0} naming our files, ${n_foreign:-0} others" \
             "(logs in $sd, list in $RESULTS/reports-$mode.txt)"
        if [ "${n_foreign:-0}" -gt 0 ]; then
            echo "    others (count, kind, first frame outside the sanitizer):"
            awk '$1 == "foreign" {print $2, $4}' "$RESULTS/reports-$mode.txt" | sort | uniq -c | sort -rn \
                | head -20 | sed 's/^/    /'
        fi
        if [ "${n_ours:-0}" -gt 0 ]; then
            echo "    OURS (count, kind, first frame outside the sanitizer):"
            awk '$1 == "ours" {print $2, $4}' "$RESULTS/reports-$mode.txt" | sort | uniq -c | sort -rn \
                | head -40 | sed 's/^/    /'
            echo "    in: $(awk '$1 == "ours" {n = split($3, a, "/"); print a[n - 1]}' "$RESULTS/reports-$mode.txt" \
                | sed 's/^[0-9]*-//; s/-[0-9]*$//' | sort -u | tr '\n' ' ')"
            fail "reports-$mode"
        fi
    done
}

# ---- unit tests with -DPART_SANITIZE=ON ------------------------------------------------------
run_unit() {
    step "unit tests (GoogleTest) with ASan + UBSan"
    ub=$BUILD_DIR/unittest
    if cmake -S "$top/unittest" -B "$ub" -DCMAKE_BUILD_TYPE=Debug -DPART_SANITIZE=ON \
            > "$RESULTS/unittest-build.log" 2>&1 \
       && cmake --build "$ub" -j"$(nproc)" >> "$RESULTS/unittest-build.log" 2>&1; then
        if ( cd "$ub" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                ctest --output-on-failure ) > "$RESULTS/unittest.log" 2>&1; then
            grep 'tests passed' "$RESULTS/unittest.log" | sed 's/^/    /'
            grep -q 'runtime error\|Sanitizer' "$RESULTS/unittest.log" && fail unittest-reports
        else
            tail -20 "$RESULTS/unittest.log"
            fail unittest
        fi
        true
    else
        tail -20 "$RESULTS/unittest-build.log"
        fail unittest-build
    fi
}

# ---- helgrind over the threaded engine tests --------------------------------------------------
# Reduced sizes: helgrind runs a program 50 to 100 times slower. Each line: [VAR=value ...]
# program [arguments] (the CTS-path race needs MPIR_CVAR_PART_TAG_IDS=0, as in testlist.cvar).
hg_tests="part_thread_stress -spart=16 -rpart=8 -count=64 -iter=20
part_thread_stress -spart=16 -rpart=16 -hint=1 -noise=5 -iter=20
part_wait_parrived -iter=20
MPIR_CVAR_PART_TAG_IDS=0 part_race_cts_start -iter=200
part_race_mismatch -rounds=40 -iter=2
part_race_free_rts -rounds=200 -iter=5"
# classify_helgrind ENGINE_SYMS LOG...: one line per helgrind error:
#   <owner> <race|lock-order|api> <access> | <other thread's access> | <on what> [notes]
# The access is the first frame of each stack outside valgrind and the thread wrappers. The
# owner is the engine when either access is in one of the engine's files (part_*.[ch]; needs
# -g) or in a function only the engine's objects define (ENGINE_SYMS, from nm); test when it
# is in the test program; otherwise MPICH (libmpi, MPICH's headers inlined anywhere), UCX, libc.
# Notes: "atomic" when an access is an MPL atomic (helgrind does not model C11 atomics: such a
# race is a false positive unless the other access is a plain one to the same field),
# "engine-in-stack" when the engine called the code that raced.
classify_helgrind() {
    syms=$1; shift
    awk -v syms="$syms" '
        BEGIN { while ((getline l < syms) > 0) eng[l] = 1
                engf = "^part_(aggr|core|init|match|ofi|plan|ploggp|state|tag|tagspace|timer|vci|mpit|rdma|verbs|ch4|impl|imm)\\.[ch]:"
                testf = "^(part_(thread_stress|wait_parrived|race_[a-z_]+|barrier)|mtest[a-z_]*|parrived_wait)\\.[ch]:"
                libcf = "^(pthread_[a-z_]+|clone|clone3|write|read|futex[a-z_-]*|lowlevellock|libc[a-z_-]*|ioctl|poll|syscall|sysdep[a-z_-]*)\\.[cSh]:" }
        function owner(fn, loc) {
            if (loc ~ engf || fn in eng) return "engine"
            if (loc ~ testf) return "test"
            if (loc ~ libcf || loc ~ /^(libc|libpthread|ld-linux)/) return "libc"
            if (loc ~ /^lib(ucs|ucp|uct|ucm)/) return "ucx"
            if (loc ~ /^libfabric/) return "libfabric"
            if (loc ~ /^libmpi/ || loc ~ /\.[ch]:[0-9]+$/) return "mpich"
            return "test"
        }
        function frame(line,   fn, loc) {
            fn = line; sub(/^(at|by) 0x[0-9A-Fa-f]+: /, "", fn); loc = fn
            sub(/ \(.*$/, "", fn); sub(/^[^(]*\(/, "", loc); sub(/\)$/, "", loc)
            sub(/^in /, "", loc); sub(/.*\//, "", loc)
            if (nstack <= 2 && owner(fn, loc) == "engine") via = 1
            if (loc ~ /vgpreload/ || fn ~ /^(mythread_wrapper|start_thread|clone|__clone)$/) return
            if (nstack == 1 && f1 == "") { f1 = fn "@" loc; o1 = owner(fn, loc); if (fn ~ /^MPL_atomic/) at = 1 }
            if (nstack == 2 && f2 == "") { f2 = fn "@" loc; o2 = owner(fn, loc); if (fn ~ /^MPL_atomic/) at = 1 }
        }
        function flush(   o) {
            if (kind != "") {
                o = (o1 == "engine" || o2 == "engine") ? "engine" : (o1 == "test" || o2 == "test") ? "test" : (o1 == "" ? "other" : o1)
                printf "%s %s %s | %s | %s%s%s\n", o, kind, (f1 == "" ? "-" : f1), (f2 == "" ? "-" : f2),
                    (what == "" ? "-" : what), (at ? " atomic" : ""), (via && o != "engine" ? " engine-in-stack" : "")
            }
            kind = ""; via = 0; at = 0; f1 = ""; f2 = ""; o1 = ""; o2 = ""; what = ""; nstack = 0
        }
        { sub(/^==[0-9]+== */, "") }
        /^--------------------|^---Thread-Announcement/ { flush(); next }
        /^Possible data race/ { flush(); kind = "race"; nstack = 1; next }
        /^Thread #[0-9]+: lock order/ { flush(); kind = "lock-order"; nstack = 1; next }
        /^Thread #[0-9]+[:'"'"' ]/ && !/was created|main thread|root thread/ { flush(); kind = "api"; nstack = 1; next }
        kind == "" { next }
        /^This conflicts with|^Required order was established|^followed by a later acquisition/ { nstack = 2; next }
        /^but before|^Lock at .* was first observed/ { nstack = 4; next }
        /^(at|by) 0x/ { frame($0); next }
        /inside data symbol "/ { w = $0; sub(/.*data symbol "/, "", w); sub(/".*/, "", w); what = "data:" w; nstack = 4; next }
        /bytes inside a block of size/ { w = $0; sub(/.*block of size /, "block:", w); sub(/ alloc.d.*/, "", w); what = w; nstack = 3; next }
        /is on thread #[0-9]+.s stack|is in a .* segment/ { what = "stack/segment"; nstack = 4; next }
        END { flush() }' "$@"
}

run_helgrind() {
    need_tool valgrind valgrind
    [ -x "$HG_PREFIX/bin/mpiexec" ] || die "no MPICH install at $HG_PREFIX (HG_PREFIX)"
    hb=$BUILD_DIR/test-mpi-helgrind
    hd=$RESULTS/helgrind
    rm -rf "$hd"
    mkdir -p "$hb" "$hd"
    # the engine's functions: defined in its objects of the build HG_PREFIX was installed from,
    # and in no other object of libmpi (MPICH's static inline helpers get copies in every object)
    for o in "$HG_BUILD_DIR"/src/mpid/ch4/netmod/part/*.o "$HG_BUILD_DIR"/src/mpi/part/*.o; do
        [ -f "$o" ] && nm --defined-only "$o" | awk '$2 ~ /^[tTwW]$/ {print $3}'
    done | sort -u > "$hd/engine-symbols.all"
    if [ -d "$HG_BUILD_DIR/src" ]; then
        find "$HG_BUILD_DIR/src" -name 'lib_libmpi_la-*.o' ! -path '*/.libs/*' ! -path '*/netmod/part/*' \
            ! -path '*/src/mpi/part/*' -print0 | xargs -0 -r nm --defined-only 2>/dev/null \
            | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u > "$hd/other-symbols"
        comm -23 "$hd/engine-symbols.all" "$hd/other-symbols" > "$hd/engine-symbols"
    else
        : > "$hd/engine-symbols"
    fi
    [ -s "$hd/engine-symbols" ] || echo "    note: no engine objects under $HG_BUILD_DIR (HG_BUILD_DIR):" \
        "reports are attributed by the MPIDI_PART_ prefix and file names only"
    testsuite_configure "$hb" "$HG_PREFIX" "$RESULTS/helgrind" no
    progs=$(echo "$hg_tests" | awk '{for (i = 1; i <= NF; i++) if ($i !~ /=/) {print $i; break}}' | sort -u)
    make -C "$hb/threads/part" $progs > "$RESULTS/helgrind-progs.log" 2>&1 \
        || { tail -20 "$RESULTS/helgrind-progs.log"; die "building the threaded tests failed"; }
    step "helgrind over threads/part on $HG_PREFIX (valgrind $(valgrind --version | sed 's/valgrind-//'))"
    i=0
    hg_fail=0
    while read -r line; do
        set -- $line
        envs=""
        while [ $# -gt 0 ] && [ "${1#*=}" != "$1" ]; do envs="$envs $1"; shift; done
        prog=$1; shift; args="$*"
        i=$((i + 1))
        t1=$(date +%s)
        rc=0
        ( cd "$hb/threads/part" && env $envs timeout ${HG_TIMEOUT:-1800} "$HG_PREFIX/bin/mpiexec" -n 2 \
            valgrind --tool=helgrind --log-file="$hd/hg.$i.$prog.%p" --num-callers=30 \
            --error-limit=no ./"$prog" $args ) < /dev/null > "$hd/out.$i.$prog" 2>&1 || rc=$?
        if grep -q '^ *No Errors' "$hd/out.$i.$prog" && [ $rc -eq 0 ]; then res=passed
        else res="FAILED (exit $rc)"; hg_fail=$((hg_fail + 1)); fi
        classify_helgrind "$hd/engine-symbols" "$hd"/hg.$i.$prog.* > "$hd/errors.$i.$prog"
        echo "    ${envs:+$envs }$prog $args: $res; helgrind errors: $(grep -c '^engine ' "$hd/errors.$i.$prog") in" \
             "the engine, $(grep -c '^test ' "$hd/errors.$i.$prog") in the test," \
             "$(grep -vc '^engine \|^test ' "$hd/errors.$i.$prog") in MPICH/UCX/libc ($(( $(date +%s) - t1 )) s)"
    done <<< "$hg_tests"
    cat "$hd"/errors.* | sort | uniq -c | sort -k2,2 -k1,1nr > "$RESULTS/helgrind-summary.txt"
    echo "    distinct errors (count, owner, kind, access | other thread's access | on what):"
    sed 's/^/    /' "$RESULTS/helgrind-summary.txt" | head -${HG_SHOW:-60}
    echo "    full list: $RESULTS/helgrind-summary.txt; logs: $hd/"
    [ $hg_fail -eq 0 ] || fail helgrind-runs
}

# ---- ThreadSanitizer over the threaded engine tests -------------------------------------------
# classify_tsan DIR: one line per ThreadSanitizer report in DIR/**/san.*:
#   <owner> <kind> <access> | <other access> | <file> [engine-in-stack]
# The owner is the code of the racing accesses (frame #0 of each access stack): engine when
# either is in the engine's files, test when in a test program, else mpich (MPICH's sources,
# its headers included) or other. engine-in-stack: the engine called the code that raced.
classify_tsan() {
    find "$1" -name 'san.*' -type f | LC_ALL=C sort | while read -r f; do
        awk -v file="${f#$1/}" -v bdir="$2" '
            function where(line) {
                if (line ~ /src\/mpid\/ch4\/netmod\/part\/|src\/mpi\/part\//) return "engine"
                if (line ~ /test\/mpi\/(threads\/)?part\//) return "test"
                if (line ~ /mpich-[0-9.]*\/(src|modules)\//) return "mpich"
                return "other"
            }
            # the source line of a frame ("path:line[:col]", relative to the build directory)
            function srcline(pl,   p, n, i, l, q) {
                if (pl in cache) return cache[pl]
                n = split(pl, q, ":"); p = q[1]; if (p !~ /^\//) p = bdir "/" p
                l = ""; for (i = 1; i <= q[2] && (getline l < p) > 0; i++) ;
                close(p); cache[pl] = (i > q[2]) ? l : ""; return cache[pl]
            }
            # MPICH'"'"'s recursive critical-section macros read the lock'"'"'s owner field unlocked
            # (mpidu_thread_fallback.h, MPIDUI_THREAD_CS_ENTER_REC): a race inside one of them
            # is MPICH'"'"'s, whichever file the macro was expanded in. The engine'"'"'s try-lock of a
            # VCI (part_impl.h, MPIDI_PART_vci_try_progress) sets and clears the owner as those
            # macros do, under the mutex (its lines name lock->owner): the same race
            function csmacro(pl) { return srcline(pl) ~ /MPID_THREAD_CS_(ENTER|EXIT|YIELD)|MPIDI_PROGRESS\(|lock->owner/ }
            function flush(   o) {
                if (kind == "") return
                if (o1 == "engine" && csmacro(p1)) o1 = "mpich-cs"
                if (o2 == "engine" && csmacro(p2)) o2 = "mpich-cs"
                o = (o1 == "engine" || o2 == "engine") ? "engine" : (o1 == "test" || o2 == "test") ? "test" : (o1 == "" ? "other" : o1)
                if (o == "mpich" && (csmacro(p1) || csmacro(p2))) o = "mpich-cs"
                printf "%s %s %s | %s | %s%s\n", o, kind, (a1 == "" ? "-" : a1), (a2 == "" ? "-" : a2), file,
                    (via && o != "engine" ? " engine-in-stack" : "")
                kind = ""; via = 0; a1 = a2 = o1 = o2 = p1 = p2 = ""; st = 0
            }
            /WARNING: ThreadSanitizer: / { flush(); kind = $0; sub(/.*ThreadSanitizer: /, "", kind)
                                           sub(/ \(pid=.*/, "", kind); gsub(/ /, "-", kind); next }
            /^SUMMARY: ThreadSanitizer|^==================$/ { flush(); next }
            kind == "" { next }
            /^  [A-Z]/ { st = ($0 ~ /^  (Read|Write|Atomic read|Atomic write) of size/) ? 1 : ($0 ~ /^  Previous /) ? 2 : 3; next }
            /^ +#[0-9]+ / && st >= 1 && st <= 2 {
                w = where($0); if (w == "engine") via = 1
                loc = $0; sub(/ \([^)]*\)$/, "", loc); n = split(loc, x, " "); fn = x[2]; pl = x[n]
                loc = pl; sub(/.*\//, "", loc)
                if (st == 1 && a1 == "") { a1 = fn "@" loc; o1 = w; p1 = pl }
                if (st == 2 && a2 == "") { a2 = fn "@" loc; o2 = w; p2 = pl }
            }
            END { flush() }' "$f"
    done
}

run_tsan() {
    split_supp
    step "ThreadSanitizer build into $TSAN_PREFIX (build directory $TSAN_BUILD_DIR)"
    # MPICH 4.0.2 has no MPICHLIB_LDFLAGS: LDFLAGS links libmpi (and hydra) with libtsan
    BUILD_DIR="$TSAN_BUILD_DIR" PREFIX="$TSAN_PREFIX" \
    CONFIGURE_ARGS="--with-device=ch4:ucx --with-ucx=/usr --with-hwloc=/usr \
--with-datatype-engine=dataloop --disable-fortran --disable-romio \
--enable-g=dbg --enable-fast=O1 --enable-threads=multiple \
--enable-thread-cs=per-vci --with-ch4-max-vcis=16 MPICHLIB_CFLAGS=-fsanitize=thread LDFLAGS=-fsanitize=thread" \
        "$top/maint/build.sh"
    tb=$TSAN_BUILD_DIR/test-mpi
    testsuite_configure "$tb" "$TSAN_PREFIX" "$RESULTS/tsan" no CFLAGS="-g -O1 -fsanitize=thread" \
        LDFLAGS=-fsanitize=thread
    make -C "$tb/threads/part" -j"$(nproc)" > "$RESULTS/tsan-progs.log" 2>&1 \
        || { tail -20 "$RESULTS/tsan-progs.log"; die "building threads/part failed"; }
    sd=$RESULTS/tsan
    rm -rf "$sd"
    mkdir -p "$sd/hydra"
    write_wrap "$RESULTS/tsan-wrap"
    # exitcode=0: a report does not fail the test by itself (MPICH's and UCX's own reports would
    # fail every test); reports are classified below and any in the engine fails the run.
    # UCX is not instrumented: synchronisation inside it is invisible to TSan.
    topt="exitcode=0:halt_on_error=0:history_size=4:second_deadlock_stack=1"
    [ -s "$RESULTS/tsan.supp" ] && topt="$topt:suppressions=$RESULTS/tsan.supp"
    step "threads/part under ThreadSanitizer (testlist.cvar)"
    t1=$(date +%s)
    # stacks of a test program at 80 % of its time limit (maint/hangwatch.sh)
    "$top/maint/hangwatch.sh" "$RESULTS/tsan-stacks" $$ &
    hangwatch=$!
    ( cd "$tb" && SAN_DIR="$sd" SAN_TSAN_OPTIONS="$topt" TSAN_OPTIONS="$topt:log_path=$sd/hydra/san" \
        MPITEST_PROGRAM_WRAPPER="$RESULTS/tsan-wrap" \
        MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-300} MPITEST_TIMEOUT_MULTIPLIER=${MPITEST_TIMEOUT_MULTIPLIER:-3} \
        ./runtests -srcdir="$tsrc" -tests=testlist.cvar -testdirs=threads/part \
        -mpiexec="$TSAN_PREFIX/bin/mpiexec" -tapfile="$RESULTS/tsan.tap" -showprogress ) \
        > "$RESULTS/tsan.log" 2>&1 || true
    kill $hangwatch 2>/dev/null || true
    ls "$RESULTS"/tsan-stacks/*.txt 2>/dev/null | sed 's/^/    stacks of a program near its time limit: /'
    p=$(grep -c '^ok ' "$RESULTS/tsan.tap" 2>/dev/null || true)
    f=$(grep -c '^not ok ' "$RESULTS/tsan.tap" 2>/dev/null || true)
    p=${p:-0} f=${f:-0}
    f=$(runtests_failed "$RESULTS/tsan.log" "$f")
    [ "$p" -gt 0 ] || f=$((f + 1))
    echo "    $p passed, $f failed ($(( $(date +%s) - t1 )) s)"
    grep '^not ok' "$RESULTS/tsan.tap" | head -20 || true
    [ "$f" -eq 0 ] || fail tsan-tests
    classify_tsan "$sd" "$TSAN_BUILD_DIR" > "$RESULTS/tsan-reports.txt"
    echo "    ThreadSanitizer reports: $(grep -c '^engine ' "$RESULTS/tsan-reports.txt") in the engine," \
         "$(grep -c '^test ' "$RESULTS/tsan-reports.txt") in the tests, $(grep -vc '^engine \|^test ' "$RESULTS/tsan-reports.txt") elsewhere"
    echo "    distinct (count, owner, kind, access | other access [engine-in-stack]):"
    awk '{sub(/ \| [^|]*$/, " " ($NF == "engine-in-stack" ? $NF : "")); print}' "$RESULTS/tsan-reports.txt" \
        | sort | uniq -c | sort -k2,2 -k1,1nr | head -40 | sed 's/^/    /'
    grep '^engine ' "$RESULTS/tsan-reports.txt" | awk '{print "    engine report in " $(NF)}' | sort -u | head -10
    grep -q '^engine ' "$RESULTS/tsan-reports.txt" && fail tsan-engine-reports
    true
}

# ---- MPICH's handle check ------------------------------------------------------------------
run_handles() {
    step "MPICH build with --enable-g=handlealloc into $HC_PREFIX (build directory $HC_BUILD_DIR)"
    BUILD_DIR="$HC_BUILD_DIR" PREFIX="$HC_PREFIX" EXTRA_CONFIGURE_ARGS="--enable-g=handlealloc" \
        "$top/maint/build.sh"
    step "build done after $(elapsed)"
    tb=$HC_BUILD_DIR/test-mpi
    testsuite_configure "$tb" "$HC_PREFIX" "$RESULTS/handles-testsuite" no
    for mode in $SAN_MODES; do
        case $mode in
            tag) envs="" ;;
            ofi-shm) envs="MPIR_CVAR_PART_TRANSPORT=ofi MPIR_CVAR_PART_OFI_PROVIDER=shm" ;;
            nolocal) envs="MPIR_CVAR_NOLOCAL=1" ;;
            *) die "unknown mode '$mode' (tag, ofi-shm, nolocal)" ;;
        esac
        step "MPICH test suite part/ and threads/part/ with the handle check, mode $mode ${envs:+($envs)}"
        t1=$(date +%s)
        ( cd "$tb" && env $envs MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-300} MPITEST_CLEANUP=0 \
            ./runtests -srcdir="$tsrc" -tests=testlist,testlist.cvar -testdirs=part,threads/part \
            -mpiexec="$HC_PREFIX/bin/mpiexec" -tapfile="$RESULTS/handles-$mode.tap" \
            -showprogress ) > "$RESULTS/handles-$mode.log" 2>&1 || true
        p=$(grep -c '^ok ' "$RESULTS/handles-$mode.tap" 2>/dev/null || true)
        f=$(grep -c '^not ok ' "$RESULTS/handles-$mode.tap" 2>/dev/null || true)
        n=$(grep -c 'handles are still allocated' "$RESULTS/handles-$mode.tap" 2>/dev/null || true)
        p=${p:-0} f=${f:-0} n=${n:-0}
        [ "$p" -gt 0 ] || f=$((f + 1))              # ran nothing: a failure
        echo "    $p passed, $f failed ($(( $(date +%s) - t1 )) s); $n lines of handles still allocated"
        grep '^not ok' "$RESULTS/handles-$mode.tap" | head -20 || true
        grep 'handles are still allocated' "$RESULTS/handles-$mode.tap" | sed 's/^## */    /' \
            | sort | uniq -c | head -20 || true
        [ "$f" -eq 0 ] || fail "handles-$mode"
    done
}

for s in $steps; do
    case $s in
        handles) run_handles ;;
        asan) run_asan ;;
        unit) run_unit ;;
        helgrind) run_helgrind ;;
        tsan) run_tsan ;;
    esac
done

step "done after $(elapsed); results in $RESULTS/"
[ -z "$failures" ] || echo "failed:$failures"
[ "$failed" -eq 0 ]
