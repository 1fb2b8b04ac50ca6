/*
 * part_aggr_timer.c: the timer aggregator (MPIR_CVAR_PART_AGGREGATOR=timer) on the RDMA
 * transport (2 processes).
 *
 * The receiver's plan makes each wire message a group (the model's choice, or as many
 * gcd-messages as fit -aggr bytes, which sets MPIR_CVAR_PART_AGGR_SIZE); per iteration the
 * sender sends a group as one write when all its partitions are readied within the deadline
 * (MPIR_CVAR_PART_AGGR_TIMEOUT_US) of its first, and otherwise, once the deadline passed, the
 * ready ones as runs and the later ones alone. Iteration 0 readies everything at once and
 * checks only the data (an iteration started before the receiver's PLAN arrived does not use
 * the timer); the others cycle through three patterns (four with "tail"):
 *
 *   together  every partition readied at once: by one MPI_Pready_range, or every other
 *             time by one MPI_Pready_list in reverse order that names the first of them
 *             again at its end (it must fail with MPI_ERR_ARG, the others readied)
 *   early     only the sender partitions of the first gcd-message readied; the receiver must
 *             see MPI_Parrived become true for its partitions of that gcd-message (within
 *             10 s) while every other partition stays false, with their bytes already right;
 *             then the rest is readied
 *   laggard   every partition but the last readied; the receiver must see every partition
 *             outside the last gcd-message arrive (within 10 s), the last one not; then the
 *             last is readied. Every other laggard iteration the laggard is partition 0
 *             instead (its group waits while every other group is whole). With the timer
 *             and a deadline of 100 ms or more, the receiver's go must come within half the
 *             deadline: once one group of the operation is left incomplete, it hurries
 *             (part_timer.h, MPIDI_PART_timer_hurry): what waits in it goes at once, not at
 *             the deadline
 *   tail      (timer, -aggr known groups, spart == rpart, deadline >= 100 ms, a last group
 *             of 2 or more) every group but the last readied in one call, then the last
 *             group's partitions one per call: the hurried group sends in halving runs, so
 *             the receiver must see the first run (half of the group) arrive within half
 *             the deadline, every later partition not yet; then the rest is readied
 *
 * With the RDMA transport forced (MPIR_CVAR_PART_TRANSPORT=ofi or verbs), the sender checks
 * the writes of each iteration (pvars: the backend's writes, part_timer_runs, and
 * part_wire_msgs_sent for the number of groups G):
 *   timeout >= 100000 us  together: G writes, no run; early: group 0 in two runs (the
 *                         first gcd-message at its deadline, then the rest, readied
 *                         together), the others whole; laggard: G + 1 writes (2 runs) when
 *                         the last group holds two partitions or more; tail: G - 1
 *                         whole groups and the halving runs (k/2, k/4, .., 1, 1 for a
 *                         last group of k); with -aggr, the exact counts;
 *   timeout 0             one write per partition in every pattern;
 *   default (-1)          between G and the partition count.
 * Without it (the tag transport: "timer" is "ploggp" there), early and laggard become
 * "together" and only the data is checked. Every iteration checks every byte.
 *
 * -paced=US (timer, default deadline, -aggr, spart == rpart): every iteration after the
 * first readies the partitions one per call, US microseconds apart (more than the default
 * deadline of small partitions, 1-2 us from the built-in shared-memory table; the groups'
 * spread under MPIR_CVAR_PART_AGGR_SPREAD_US). At the default deadline each group would go
 * in several runs; from the third iteration the deadline adapts to the spread the sender
 * observed (part_timer.h, MPIDI_PART_timer_adapt), so the best of those iterations must
 * have G - 1 whole groups and the last one's halving runs, or fewer writes, and the pvar
 * part_timer_deadline_ns must lie between (k - 1) x US and the cap (the larger of
 * MPIR_CVAR_PART_AGGR_SPREAD_US and half of an iteration's first-to-last MPI_Pready).
 *
 * Without -aggr and with spart == rpart the model sizes the groups: there must be one group
 * or groups of a power of two partitions (aligned on the blocks threads ready together).
 *
 * -infoaggr=NAME: both sides pass the info key mpich_part_aggregator=NAME, which decides
 * instead of MPIR_CVAR_PART_AGGREGATOR (the receiver's; testlist runs it against a CVAR
 * of "none", so with "timer" the write counts above fail unless the key is honoured).
 *
 * -runcap=N: the run cap the engine gives a hurried group on this path, in partitions
 * (part_timer.h, MPIDI_PART_timer_run_cap: the most partitions one write holds below the
 * path's protocol step; libfabric shm's is 4 KiB in the built-in rdma-shm table, so 2 for
 * partitions of 2 KiB). "tail" and "paced" then expect runs of N before the halving ones,
 * and the first run of the tail to be N partitions, not half the group.
 *
 * -badtimeout=1 instead: MPIR_CVAR_PART_AGGR_TIMEOUT_US of -2 and 2000001 (written with MPI_T)
 * make MPI_Precv_init fail with MPI_ERR_ARG and a message naming the variable.
 *
 * Arguments: -spart=N -rpart=N -count=N (ints in the whole buffer) -aggr=BYTES -iter=N
 *            -paced=US -runcap=N -badtimeout=1
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs;
#include "part_pvar.h"

enum { TOGETHER = 0, EARLY, LAGGARD, TAIL, PACED };
static const char *pname[] = { "together", "early", "laggard", "tail", "paced" };
static int npat = 3;    /* patterns cycled through: 4 when "tail" applies */

/* The hurried last group's runs (part_timer.h, MPIDI_PART_tgroup_hurry) for n partitions
 * readied one per call: what waits goes once it is at least what is still to come, or
 * once it is cap partitions (cap >= 2; -runcap). Returns how many runs; *first: the
 * length of the first. */
static int halving_runs(int n, int cap, int *first)
{
    int runs = 0, pend = 0;
    *first = 0;
    for (int i = 0; i < n; i++) {
        pend++;
        if (pend >= n - (i + 1) || (cap >= 2 && pend >= cap)) {
            if (runs++ == 0)
                *first = i + 1;
            pend = 0;
        }
    }
    return runs;
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int pattern(int iter, int index)
{
    return 3 + iter * 1000033 + index * 11 + (index >> 4);
}

static int set_cvar_int(const char *name, int value)
{
    int idx, count;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cvar %s not found\n", rank, name);
        return 1;
    }
    int err = MPI_T_cvar_write(h, &value);
    MPI_T_cvar_handle_free(&h);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: writing %s=%d failed\n", rank, name, value);
        return 1;
    }
    return 0;
}

/* Receiver: poll until partitions [lo, hi) arrived (10 s), then check that the others have
 * not and that the arrived bytes are right. */
static void expect_arrived(MPI_Request req, int rpart, int lo, int hi, const int *buf,
                           int rcount, int it)
{
    double t0 = MPI_Wtime();
    for (int p = lo; p < hi; p++) {
        int flag = 0;
        while (!flag && MPI_Wtime() - t0 < 10.0)
            MPI_Parrived(req, p, &flag);
        if (!flag) {
            fprintf(stderr, "iter %d (%s): partition %d not arrived after 10 s\n", it,
                    pname[it % npat], p);
            errs++;
            return;
        }
    }
    for (int p = 0; p < rpart; p++) {
        int flag = 0;
        if (p >= lo && p < hi)
            continue;
        MPI_Parrived(req, p, &flag);
        if (flag) {
            fprintf(stderr, "iter %d (%s): partition %d reported arrived before it was "
                    "readied\n", it, pname[it % npat], p);
            errs++;
        }
    }
    for (int i = lo * rcount; i < hi * rcount; i++)
        if (buf[i] != pattern(it, i)) {
            fprintf(stderr, "iter %d (%s): int %d is %d before completion, expected %d\n", it,
                    pname[it % npat], i, buf[i], pattern(it, i));
            errs++;
            return;
        }
}

static void check(int it, const char *what, long long got, long long want)
{
    if (got != want) {
        fprintf(stderr, "iter %d (%s): %s = %lld, expected %lld\n", it, pname[it % npat], what,
                got, want);
        errs++;
    }
}

/* MPI_Precv_init with an out-of-range deadline: MPI_ERR_ARG naming the variable. */
static void bad_timeout(void)
{
    const int values[] = { -2, 2000001 };
    int buf[4];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 2; i++) {
        MPI_Request req = MPI_REQUEST_NULL;
        char msg[MPI_MAX_ERROR_STRING];
        int cls = MPI_SUCCESS, len = 0;
        errs += set_cvar_int("MPIR_CVAR_PART_AGGR_TIMEOUT_US", values[i]);
        int err = MPI_Precv_init(buf, 4, 1, MPI_INT, 1 - rank, 9, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &req);
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        if (cls != MPI_ERR_ARG || strstr(msg, "MPIR_CVAR_PART_AGGR_TIMEOUT_US") == NULL) {
            fprintf(stderr, "rank %d: timeout %d: class %d, message \"%s\"; expected "
                    "MPI_ERR_ARG naming MPIR_CVAR_PART_AGGR_TIMEOUT_US\n", rank, values[i], cls,
                    msg);
            errs++;
        }
        if (req != MPI_REQUEST_NULL) {
            fprintf(stderr, "rank %d: a request was returned with the error\n", rank);
            errs++;
        }
    }
    errs += set_cvar_int("MPIR_CVAR_PART_AGGR_TIMEOUT_US", -1);
}

int main(int argc, char *argv[])
{
    int size, provided;
    MPI_Comm ctl;
    MPI_Request req = MPI_REQUEST_NULL;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    int spart = MTestArgListGetInt_with_default(head, "spart", 32);
    int rpart = MTestArgListGetInt_with_default(head, "rpart", 32);
    int count = MTestArgListGetInt_with_default(head, "count", 32 * 64);
    int aggr = MTestArgListGetInt_with_default(head, "aggr", 0);
    int iters = MTestArgListGetInt_with_default(head, "iter", 9);
    int badtimeout = MTestArgListGetInt_with_default(head, "badtimeout", 0);
    int paced_us = MTestArgListGetInt_with_default(head, "paced", 0);
    int runcap = MTestArgListGetInt_with_default(head, "runcap", 0);
    char infoaggr[32];
    snprintf(infoaggr, sizeof(infoaggr), "%s",
             MTestArgListGetString_with_default(head, "infoaggr", ""));
    MTestArgListDestroy(head);
    if (count % spart || count % rpart) {
        fprintf(stderr, "count %d must be a multiple of spart %d and rpart %d\n", count, spart,
                rpart);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *agg = getenv("MPIR_CVAR_PART_AGGREGATOR");
    const char *tos = getenv("MPIR_CVAR_PART_AGGR_TIMEOUT_US");
    int timeout = tos ? atoi(tos) : -1;
    if (infoaggr[0])
        agg = infoaggr; /* the info key decides instead of the CVAR */
    int timer = rdma_forced() && agg && strcmp(agg, "timer") == 0;
    MPI_Info info = MPI_INFO_NULL;
    if (infoaggr[0]) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_aggregator", infoaggr);
    }

    int g = gcd(spart, rpart), s1 = spart / g, r1 = rpart / g;
    long bytes = (long) count * sizeof(int);
    int k = 0;  /* gcd-messages per group with -aggr (as part_aggr.c sizes them); 0: model */
    if (aggr > 0) {
        long per = bytes / g;
        k = per * g <= aggr ? g : (per < aggr ? (int) (aggr / per) : 1);
    }

    /* "tail" (the hurried last group): with the group size known (-aggr), one sender
     * partition per gcd-message (spart == rpart), a long deadline and a last group of 2 or
     * more partitions */
    int tail_groups = 0, tail_last = 0, tail_first = 0, tail_runs = 0;
    if (timer && k > 0 && spart == rpart && timeout >= 100000) {
        tail_groups = (spart + k - 1) / k;
        tail_last = spart - (tail_groups - 1) * k;
        if (tail_groups >= 2 && tail_last >= 2) {
            tail_runs = halving_runs(tail_last, runcap, &tail_first);
            npat = 4;
        }
    }

    /* "paced" (-paced=US, the default deadline): every partition readied alone, US apart;
     * from the third iteration on the deadline has adapted to the groups' spread (their
     * median, part_timer.h, MPIDI_PART_timer_adapt; under MPIR_CVAR_PART_AGGR_SPREAD_US):
     * every group but the last goes whole and the last in halving runs */
    int paced = timer && paced_us > 0 && k > 0 && spart == rpart && timeout < 0;
    int paced_k_groups = 0, paced_runs = 0, paced_first = 0;
    long long paced_best = -1, paced_groups = 0;
    double paced_window = 0;    /* the longest first-to-last MPI_Pready of an iteration (s) */
    if (paced) {
        paced_k_groups = (spart + k - 1) / k;
        paced_runs = halving_runs(spart - (paced_k_groups - 1) * k, runcap, &paced_first);
    }

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (badtimeout) {
        bad_timeout();
        MPI_T_finalize();
        MTest_Finalize(errs);
        return MTestReturnValue(errs);
    }
    errs += set_cvar_int("MPIR_CVAR_PART_AGGR_SIZE", aggr);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    int *buf = malloc(bytes);

    if (rank == 0) {
        MPI_Psend_init(buf, spart, count / spart, MPI_INT, 1, 7, MPI_COMM_WORLD, info,
                       &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0, pat = timer && it > 0 ? it % npat : TOGETHER;
            if (paced && it > 0)
                pat = PACED;
            for (int i = 0; i < count; i++)
                buf[i] = pattern(it, i);
            unsigned long long w0 = pv_read(RDMA_PV("writes")), r0 = pv_read("part_timer_runs");
            unsigned long long m0 = pv_read("part_wire_msgs_sent");
            MPI_Start(&req);
            MPI_Recv(&dummy, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
            if (pat == TOGETHER && (it / npat) % 2) {
                /* every partition in one MPI_Pready_list, last first, then the first again:
                 * the call readies them all (one lock and one clock read for the call on a
                 * timer operation) and fails on the repeat with MPI_ERR_ARG */
                int *list = malloc((spart + 1) * sizeof(int));
                for (int p = 0; p < spart; p++)
                    list[p] = spart - 1 - p;
                list[spart] = spart - 1;
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
                int err = MPI_Pready_list(spart + 1, list, req), cls = MPI_SUCCESS;
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
                MPI_Error_class(err, &cls);
                if (cls != MPI_ERR_ARG) {
                    fprintf(stderr, "iter %d: MPI_Pready_list with partition %d twice: class "
                            "%d, expected MPI_ERR_ARG\n", it, spart - 1, cls);
                    errs++;
                }
                free(list);
            } else if (pat == TOGETHER) {
                MPI_Pready_range(0, spart - 1, req);
            } else if (pat == PACED) {
                double first = MPI_Wtime();
                for (int p = 0; p < spart; p++) {
                    double t0 = MPI_Wtime();
                    while (p > 0 && MPI_Wtime() - t0 < paced_us * 1e-6);
                    MPI_Pready(p, req);
                }
                double window = MPI_Wtime() - first;    /* >= the engine's window */
                if (window > paced_window)
                    paced_window = window;
            } else if (pat == EARLY) {
                MPI_Pready_range(0, s1 - 1, req);
                MPI_Recv(&dummy, 1, MPI_INT, 1, 1, ctl, MPI_STATUS_IGNORE);
                MPI_Pready_range(s1, spart - 1, req);
            } else if (pat == TAIL) {
                /* every group but the last in one call, then the last group's partitions
                 * one per call: its first run must go when it is half, not at the deadline */
                int base = spart - tail_last;
                MPI_Pready_range(0, base - 1, req);
                double t0 = MPI_Wtime();
                for (int i = 0; i < tail_first; i++)
                    MPI_Pready(base + i, req);
                MPI_Recv(&dummy, 1, MPI_INT, 1, 3, ctl, MPI_STATUS_IGNORE);
                double waited = MPI_Wtime() - t0;
                MTestPrintfMsg(1, "iter %d tail: first run of %d after %.3f ms\n", it,
                               tail_first, waited * 1e3);
                if (waited > timeout * 0.5e-6) {
                    fprintf(stderr, "iter %d (tail): the last group's first %d partitions "
                            "arrived after %.0f ms, not at once (deadline %d ms)\n", it,
                            tail_first, waited * 1e3, timeout / 1000);
                    errs++;
                }
                for (int i = tail_first; i < tail_last; i++)
                    MPI_Pready(base + i, req);
            } else {
                int first = (it / npat) % 2;    /* the laggard: partition 0, else the last */
                double t0 = MPI_Wtime();
                MPI_Pready_range(first, spart - 2 + first, req);
                MPI_Recv(&dummy, 1, MPI_INT, 1, 2, ctl, MPI_STATUS_IGNORE);
                double waited = MPI_Wtime() - t0;
                MTestPrintfMsg(1, "iter %d laggard %d: go after %.3f ms\n", it,
                               first ? 0 : spart - 1, waited * 1e3);
                MPI_Pready(first ? 0 : spart - 1, req);
                /* one partition left: what waits goes at once, not at the deadline */
                if (timer && it > 0 && timeout >= 100000 && waited > timeout * 0.5e-6) {
                    fprintf(stderr, "iter %d (laggard %d): the other partitions arrived after "
                            "%.0f ms, not at once (deadline %d ms)\n", it,
                            first ? 0 : spart - 1, waited * 1e3, timeout / 1000);
                    errs++;
                }
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (!timer || it == 0)
                continue;       /* iteration 0 may start before the PLAN: no timer there */
            long long G = (long long) (pv_read("part_wire_msgs_sent") - m0);
            long long w = (long long) (pv_read(RDMA_PV("writes")) - w0);
            long long r = (long long) (pv_read("part_timer_runs") - r0);
            MTestPrintfMsg(1, "iter %d %s: groups %lld writes %lld runs %lld\n", it,
                           pname[pat], G, w, r);
            if (G < 1 || G >= spart) {
                fprintf(stderr, "iter %d: %lld groups for %d partitions: the timer needs "
                        "groups of 2 or more\n", it, G, spart);
                errs++;
                continue;
            }
            if (!k && spart == rpart) {
                /* the model sized the groups: k = spart (one group) or a power of two, so
                 * that groups stay on the blocks threads ready together (part_ploggp.h,
                 * MPIDI_PART_ploggp_choose_aligned; 31 + 1 of 32 before) */
                long long kg = (spart + G - 1) / G;
                if (G != (spart + kg - 1) / kg || (kg != spart && (kg & (kg - 1)) != 0)) {
                    fprintf(stderr, "iter %d: %lld groups for %d partitions: not one group "
                            "or groups of a power of two\n", it, G, spart);
                    errs++;
                }
            }
            int ppg = k ? k * s1 : 0;   /* partitions per full group, when known */
            int last = k ? spart - (int) (G - 1) * ppg : 0;
            if (pat == PACED) {
                /* checked at the end: the best iteration from the third on (the second
                 * is the first with the timer, still at the default deadline) */
                if (it >= 2 && (paced_best < 0 || w < paced_best))
                    paced_best = w;
                paced_groups = G;
            } else if (timeout == 0) {
                check(it, "writes (one per partition)", w, spart);
                check(it, "runs", r, spart);
            } else if (timeout >= 100000) {
                if (pat == TOGETHER) {
                    check(it, "writes", w, G);
                    check(it, "runs", r, 0);
                } else if (pat == EARLY) {
                    check(it, "writes - runs (the other groups, whole)", w - r, G - 1);
                    if (ppg)
                        check(it, "runs (the first gcd-message, then the rest of its group)",
                              r, ppg > s1 ? 2 : 1);
                    else if (r < 1) {
                        fprintf(stderr, "iter %d: no run in the early pattern\n", it);
                        errs++;
                    }
                } else if (pat == TAIL) {
                    check(it, "groups", G, tail_groups);
                    check(it, "writes (the others whole, then the halving runs)", w,
                          tail_groups - 1 + tail_runs);
                    check(it, "runs", r, tail_runs);
                } else if (!k || last >= 2 || (it / npat) % 2) {
                    /* the laggard's group: the others as one run, then the laggard */
                    check(it, "writes", w, G + 1);
                    check(it, "runs", r, 2);
                }
            } else if (w < G || w > spart) {
                fprintf(stderr, "iter %d: %lld writes outside [%lld, %d]\n", it, w, G, spart);
                errs++;
            }
        }
        if (paced) {
            /* the deadline it chose: the median spread of groups of k partitions readied
             * paced_us apart, so at least (k - 1) x paced_us, and at most the cap: the
             * larger of MPIR_CVAR_PART_AGGR_SPREAD_US (100 us by default) and half the
             * operation's first-to-last MPI_Pready of the iteration before */
            const char *sp = getenv("MPIR_CVAR_PART_AGGR_SPREAD_US");
            long long dl = (long long) pv_read("part_timer_deadline_ns");
            long long lo = (long long) (k - 1) * paced_us * 1000;
            long long hi = (sp ? atoi(sp) : 100) * 1000LL;
            if (hi < (long long) (paced_window * 0.5e9) + 1)
                hi = (long long) (paced_window * 0.5e9) + 1;
            MTestPrintfMsg(1, "paced: part_timer_deadline_ns %lld (expected %lld..%lld)\n", dl,
                           lo, hi);
            if (dl < lo || dl > hi) {
                fprintf(stderr, "paced: part_timer_deadline_ns = %lld, expected %lld..%lld\n",
                        dl, lo, hi);
                errs++;
            }
            long long want = paced_groups - 1 + paced_runs;
            MTestPrintfMsg(1, "paced: best writes %lld (groups %lld, wanted <= %lld)\n",
                           paced_best, paced_groups, want);
            if (paced_groups != paced_k_groups || paced_best < 0 || paced_best > want) {
                fprintf(stderr, "paced (%d us between readies): best iteration %lld writes "
                        "for %lld groups (%d expected), expected at most %lld: the default "
                        "deadline did not adapt to the readies' spread\n", paced_us,
                        paced_best, paced_groups, paced_k_groups, want);
                errs++;
            }
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        int rcount = count / rpart;
        MPI_Precv_init(buf, rpart, rcount, MPI_INT, 0, 7, MPI_COMM_WORLD, info, &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0, pat = timer && it > 0 ? it % npat : TOGETHER;
            if (paced && it > 0)
                pat = PACED;
            memset(buf, 0, bytes);
            MPI_Start(&req);
            MPI_Send(&dummy, 1, MPI_INT, 0, 0, ctl);
            if (pat == EARLY) {
                expect_arrived(req, rpart, 0, r1, buf, rcount, it);
                MPI_Send(&dummy, 1, MPI_INT, 0, 1, ctl);
            } else if (pat == LAGGARD) {
                if ((it / npat) % 2)    /* partition 0 is the laggard */
                    expect_arrived(req, rpart, r1, rpart, buf, rcount, it);
                else
                    expect_arrived(req, rpart, 0, rpart - r1, buf, rcount, it);
                MPI_Send(&dummy, 1, MPI_INT, 0, 2, ctl);
            } else if (pat == TAIL) {
                expect_arrived(req, rpart, 0, rpart - tail_last + tail_first, buf, rcount, it);
                MPI_Send(&dummy, 1, MPI_INT, 0, 3, ctl);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++)
                if (buf[i] != pattern(it, i)) {
                    fprintf(stderr, "iter %d: int %d is %d, expected %d\n", it, i, buf[i],
                            pattern(it, i));
                    errs++;
                    break;
                }
        }
        MPI_Request_free(&req);
    }

    free(buf);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Comm_free(&ctl);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
