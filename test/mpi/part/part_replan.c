/*
 * part_replan.c: the default aggregator (ploggp, no CVAR set) adapts the wire layout to the
 * MPI_Pready times it sees (2 processes; engine README, section 4c).
 *
 * What it asserts, every iteration, on every transport:
 * - every byte of the receive buffer after MPI_Wait (a pattern per iteration);
 * - -pattern=early: the sender readies partition 0, and the receiver must see
 *   MPI_Parrived(0) become true (within 10 s) while the other partitions are not readied,
 *   and false for every other partition; its bytes are already right then;
 * - -pattern=blocks: the sender readies the partitions block by block (B blocks, a thread's
 *   share each, one MPI_Pready_range per block), waiting after each block until the
 *   receiver has seen the whole block arrive (within 10 s) and none of the later blocks;
 * - -pattern=burst: the sender readies every partition back to back.
 * On the tag transport (the default; the test modes shm and nolocal), also:
 * - iterations 1 to R send one wire message per partition (part_wire_msgs_sent on the
 *   sender): nothing is merged before the last observed iteration R (the value of
 *   MPIR_CVAR_PART_AGGR_OBSERVE, read through MPI_T; at least 2; 0: no re-plan, and only
 *   the data checks apply, with -pattern=burst: the layout planned at match may merge
 *   partition 0 with later ones, which -pattern=early and -pattern=blocks wait on) has
 *   ended;
 * - from iteration R + 1 every iteration sends the same number of wire messages: burst fewer
 *   than the partitions (run with a large MPIR_CVAR_PART_AGGR_TIMEOUT_US, so that a
 *   descheduled sender does not look like a gap), early exactly the partitions (partition 0
 *   is never merged with a later one), blocks at least B (no message spans two blocks) and
 *   fewer than the partitions (a block readied by one call merges, although the receiver
 *   watches partitions arrive: section 4c's EARLY rule keeps only separate calls apart);
 * - part_replans is 1 on both processes (one re-plan each).
 * With the RDMA transport forced (ofi-* and verbs modes) ploggp's groups are split by the
 * timer's deadline instead: part_replans stays 0, and the early-bird checks above hold;
 * -pattern=burst sends fewer wire messages than partitions every iteration (here 1: the
 * partitions readied back to back make whole groups before the deadline).
 *
 * Arguments: -parts=N (both sides) -count=N (ints per partition) -iters=N (default R + 3)
 *            -pattern=burst|early|blocks -blocks=B
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs;
#include "part_pvar.h"

static int pattern(int iter, int index)
{
    return 7 + iter * 1000033 + index * 13;
}

/* Poll MPI_Parrived on partitions [lo, hi) until all are true; 1 on timeout. */
static int wait_arrived(MPI_Request req, int lo, int hi, double limit)
{
    double t0 = MPI_Wtime();
    for (int p = lo; p < hi; p++) {
        int flag = 0;
        while (!flag) {
            MPI_Parrived(req, p, &flag);
            if (!flag && MPI_Wtime() - t0 > limit)
                return 1;
        }
    }
    return 0;
}

/* Receiver: partitions [lo, hi) have arrived, [hi, parts) have not been readied (iteration
 * it, counted from 0). */
static void check_prefix(MPI_Request req, const int *buf, int lo, int hi, int parts, int count,
                         int it)
{
    if (wait_arrived(req, lo, hi, 10.0)) {
        fprintf(stderr, "iter %d: partitions %d..%d not all arrived 10 s after the sender "
                "readied them (held back for later partitions?)\n", it + 1, lo, hi - 1);
        errs++;
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int p = hi; p < parts; p++) {
        int flag;
        MPI_Parrived(req, p, &flag);
        if (flag) {
            fprintf(stderr, "iter %d: MPI_Parrived(%d) true before it was readied\n", it + 1, p);
            errs++;
        }
    }
    for (int i = lo * count; i < hi * count; i++) {
        if (buf[i] != pattern(it, i)) {
            if (errs < 10)
                fprintf(stderr, "iter %d: early buf[%d] = %d, expected %d\n", it + 1, i, buf[i],
                        pattern(it, i));
            errs++;
        }
    }
}

int main(int argc, char *argv[])
{
    int size, provided, parts, count, iters, nblocks;
    char pat[16];
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
    parts = MTestArgListGetInt_with_default(head, "parts", 64);
    count = MTestArgListGetInt_with_default(head, "count", 16);
    iters = MTestArgListGetInt_with_default(head, "iters", 0);
    nblocks = MTestArgListGetInt_with_default(head, "blocks", 4);
    snprintf(pat, sizeof(pat), "%s", MTestArgListGetString_with_default(head, "pattern", "burst"));
    MTestArgListDestroy(head);
    int burst = strcmp(pat, "burst") == 0, early = strcmp(pat, "early") == 0;
    int blocks = strcmp(pat, "blocks") == 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    /* the last observed iteration (1-based): the re-plan's comes after it; 0: no
     * observation, no re-plan (the layout planned at match stays: only the data and the
     * early-bird checks apply) */
    int observed = cv_read_int("MPIR_CVAR_PART_AGGR_OBSERVE");
    int observing = observed != 0;
    if (observed < 2)
        observed = 2;
    if (iters == 0)
        iters = observed + 3;
    if (!(burst || early || blocks) || parts < 2 || parts % nblocks || iters < observed + 1 ||
        (!observing && !burst)) {
        fprintf(stderr, "bad arguments: -pattern=burst|early|blocks, parts %d divisible by "
                "blocks %d, iters %d > %d observed iterations (MPIR_CVAR_PART_AGGR_OBSERVE=0: "
                "burst only)\n", parts, nblocks, iters, observed);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int per_block = parts / nblocks;
    int tag = !rdma_forced() && observing;      /* the tag transport (auto) re-plans */

    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    size_t bytes = (size_t) parts * count * sizeof(int);
    int *buf = malloc(bytes);

    if (rank == 0) {
        unsigned long long first = 0;   /* wire messages of the re-plan's iteration */
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0;
            for (size_t i = 0; i < bytes / sizeof(int); i++)
                buf[i] = pattern(it, (int) i);
            unsigned long long before = pv_read("part_wire_msgs_sent");
            MPI_Start(&req);
            if (burst) {
                for (int p = 0; p < parts; p++)
                    MPI_Pready(p, req);
            } else if (early) {
                MPI_Pready(0, req);
                MPI_Send(&dummy, 1, MPI_INT, 1, 1, ctl);
                MPI_Recv(&dummy, 1, MPI_INT, 1, 2, ctl, MPI_STATUS_IGNORE);
                for (int p = 1; p < parts; p++)
                    MPI_Pready(p, req);
            } else {
                for (int b = 0; b < nblocks; b++) {
                    MPI_Pready_range(b * per_block, (b + 1) * per_block - 1, req);
                    MPI_Send(&b, 1, MPI_INT, 1, 1, ctl);
                    MPI_Recv(&dummy, 1, MPI_INT, 1, 2, ctl, MPI_STATUS_IGNORE);
                }
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            unsigned long long nm = pv_read("part_wire_msgs_sent") - before;
            MTestPrintfMsg(1, "iter %d: %llu wire messages\n", it + 1, nm);
            if (rdma_forced() && burst && nm >= (unsigned long long) parts) {
                fprintf(stderr, "iter %d (burst, RDMA): %llu wire messages for %d partitions "
                        "readied back to back: the timer's groups were not merged\n", it + 1,
                        nm, parts);
                errs++;
            }
            if (!tag)
                continue;
            if (it < observed && nm != (unsigned long long) parts) {
                fprintf(stderr, "iter %d: %llu wire messages, expected %d (nothing merged "
                        "before the observed iteration ends)\n", it + 1, nm, parts);
                errs++;
            } else if (it == observed) {
                first = nm;
                if ((burst && nm >= (unsigned long long) parts) ||
                    (early && nm != (unsigned long long) parts) ||
                    (blocks && (nm < (unsigned long long) nblocks ||
                                nm >= (unsigned long long) parts))) {
                    fprintf(stderr, "iter %d (%s): %llu wire messages for %d partitions%s\n",
                            it + 1, pat, nm, parts, burst ? ": partitions readied together were "
                            "not merged" : early ? ": partition 0 was merged with later "
                            "ones" : ": a message spans two blocks, or no block was merged");
                    errs++;
                }
            } else if (it > observed && nm != first) {
                fprintf(stderr, "iter %d: %llu wire messages, iteration %d had %llu (one "
                        "re-plan only)\n", it + 1, nm, observed + 1, first);
                errs++;
            }
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0;
            memset(buf, 0, bytes);
            MPI_Start(&req);
            if (early) {
                MPI_Recv(&dummy, 1, MPI_INT, 0, 1, ctl, MPI_STATUS_IGNORE);
                check_prefix(req, buf, 0, 1, parts, count, it);
                MPI_Send(&dummy, 1, MPI_INT, 0, 2, ctl);
            } else if (blocks) {
                for (int b = 0; b < nblocks; b++) {
                    MPI_Recv(&dummy, 1, MPI_INT, 0, 1, ctl, MPI_STATUS_IGNORE);
                    check_prefix(req, buf, b * per_block, (b + 1) * per_block, parts, count, it);
                    MPI_Send(&dummy, 1, MPI_INT, 0, 2, ctl);
                }
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (size_t i = 0; i < bytes / sizeof(int); i++) {
                if (buf[i] != pattern(it, (int) i)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: buf[%zu] = %d, expected %d\n", it + 1, i,
                                buf[i], pattern(it, (int) i));
                    errs++;
                }
            }
        }
        MPI_Request_free(&req);
    }

    if (rank < 2) {
        unsigned long long replans = pv_read("part_replans");
        if (replans != (tag ? 1ULL : 0ULL)) {
            fprintf(stderr, "rank %d: part_replans = %llu, expected %d\n", rank, replans, tag);
            errs++;
        }
    }
    free(buf);
    MPI_Comm_free(&ctl);
    pv_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
