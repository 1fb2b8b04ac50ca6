/*
 * part_race_cts_start.c: MPI_Start on the CTS path racing a progress thread (2 processes,
 * MPI_THREAD_MULTIPLE; the test fails if that level is not provided; review finding C2).
 *
 * C2: on the CTS path (no permanent tag block: MPIR_CVAR_PART_TAG_IDS=0) every receive
 * MPI_Start leases a tag block and sends a CTS to the sender; the old engine decided under
 * its lock which iteration a CTS belonged to, but activated the send request only after
 * the unlock. A CTS handled by another thread inside that window was kept for a "future"
 * iteration, the iteration's messages were held for ever, and both sides hung.
 *
 * Run with env=MPIR_CVAR_PART_TAG_IDS=0. Two operations: A from rank 0 to rank 1 and B from
 * rank 1 to rank 0 (different geometries, small sizes, several partitions each side). On
 * both processes a progress thread calls MPI_Iprobe on an idle communicator and MPI_Test
 * on a receive nobody matches, in a tight loop, for the whole run, so that CTS messages
 * are handled by that thread while the main thread is inside MPI_Start. The main thread
 * runs -iter iterations: start both requests (order varies), optionally after a random
 * spin of a few microseconds, fill and ready the send partitions (MPI_Pready_range over
 * all, two ranges, MPI_Pready in reverse order, or MPI_Pready_list in a scattered order),
 * then complete both (MPI_Wait on each, MPI_Waitall, or MPI_Wait in the other order).
 * What it asserts:
 * - every call returns MPI_SUCCESS;
 * - every iteration the receive buffer holds exactly that iteration's bytes (each byte
 *   compared) and the status counts the whole message, with the right source and tag;
 * - each process's receive operation really is on the CTS path: part_cts_path_ops grows
 *   by exactly 1 on each process (a missing pvar is a failure); with the RDMA transport
 *   forced (MPIR_CVAR_PART_TRANSPORT=ofi or verbs) the per-iteration credit races MPI_Start instead:
 *   part_ofi_ops (part_verbs_ops) grows by 2 (both operations on it) and part_cts_path_ops by 0;
 * - no hang: if the main thread does not move on for 60 s, a watchdog thread reports
 *   where it stopped and calls MPI_Abort.
 *
 * Arguments: -iter=N (a tenth with the RDMA transport forced) -aspart=N -arpart=N
 *            -acount=N (ints of A) -bspart=N -brpart=N
 *            -bcount=N (ints of B; each count a multiple of its partition counts)
 *            -spin=N (max microseconds of the random spin before the starts; 0: none)
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define SENTINEL (-7)

static int rank, errs = 0;
static MPI_Comm comm, pcomm;

/* ---- watchdog ----------------------------------------------------------------------------- */

#define WD_UNIT "iteration"
#include "part_watchdog.h"

/* ---- progress thread ---------------------------------------------------------------------- */

static int prog_quit, prog_errs;
static long prog_polls;

static MTEST_THREAD_RETURN_TYPE progress_thread(void *arg)
{
    int dummy = 0, flag = 0, done = 0, cancelled = 0, err;
    MPI_Request dreq;
    MPI_Status st;
    long n = 0;

    /* nobody sends on pcomm: MPI_Test keeps making progress without completing */
    MPI_Irecv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, 77, pcomm, &dreq);
    while (!__atomic_load_n(&prog_quit, __ATOMIC_ACQUIRE)) {
        err = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, pcomm, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag) {
            fprintf(stderr, "rank %d: progress thread: MPI_Iprobe returned %d, flag %d\n",
                    rank, err, flag);
            prog_errs++;
        }
        err = MPI_Test(&dreq, &done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || done) {
            fprintf(stderr, "rank %d: progress thread: MPI_Test returned %d, flag %d\n", rank,
                    err, done);
            prog_errs++;
            break;
        }
        n++;
    }
    if (!done) {
        MPI_Cancel(&dreq);
        MPI_Wait(&dreq, &st);
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled) {
            fprintf(stderr, "rank %d: progress thread: the idle receive was not cancelled\n",
                    rank);
            prog_errs++;
        }
    }
    prog_polls = n;
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

/* ---- MPI_T ------------------------------------------------------------------------------- */

#include "../../part/part_pvar.h"

/* ---- the operations ---------------------------------------------------------------------- */

static int val(int op, int iter, int i)
{
    return 1 + op * 100000007 + iter * 7919 + i * 3;
}

static unsigned int rnd(unsigned int *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void spin_us(double us)
{
    double t0 = MPI_Wtime();
    while ((MPI_Wtime() - t0) * 1e6 < us);
}

static void check(int err, int iter, const char *what)
{
    if (err != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, s, &len);
        fprintf(stderr, "rank %d: iteration %d: %s returned %s\n", rank, iter, what, s);
        errs++;
    }
}

/* ready all nparts partitions of req, in one of 4 ways */
static void ready_all(MPI_Request req, int nparts, int iter, unsigned int *seed)
{
    int err = MPI_SUCCESS, list[1024];
    switch (iter % 4) {
        case 0:
            err = MPI_Pready_range(0, nparts - 1, req);
            check(err, iter, "MPI_Pready_range(all)");
            break;
        case 1:
            if (nparts > 1) {
                err = MPI_Pready_range(nparts / 2, nparts - 1, req);
                check(err, iter, "MPI_Pready_range(upper half)");
                err = MPI_Pready_range(0, nparts / 2 - 1, req);
                check(err, iter, "MPI_Pready_range(lower half)");
            } else {
                check(MPI_Pready_range(0, 0, req), iter, "MPI_Pready_range(0,0)");
            }
            break;
        case 2:
            for (int p = nparts - 1; p >= 0; p--)
                check(MPI_Pready(p, req), iter, "MPI_Pready");
            break;
        default:
            for (int p = 0; p < nparts; p++)
                list[p] = p;
            for (int p = nparts - 1; p > 0; p--) {
                int j = (int) (rnd(seed) % (unsigned int) (p + 1)), t = list[p];
                list[p] = list[j];
                list[j] = t;
            }
            check(MPI_Pready_list(nparts, list, req), iter, "MPI_Pready_list");
    }
}

int main(int argc, char *argv[])
{
    int size, provided, iters, maxspin;
    int aspart, arpart, acount, bspart, brpart, bcount;
    int sop, rop, ssp, rrp, scount, rcount, tag_s, tag_r;
    int *sbuf, *rbuf;
    MPI_Request sreq, rreq, both[2];
    unsigned long long cts0, cts1, ofi0, ofi1;
    int rdma = rdma_forced();  /* the test modes that force RDMA (ofi-*, verbs) */
    unsigned int seed;

    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided (got %d)\n", provided);
        MTest_Finalize(1);
        return MTestReturnValue(1);
    }
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    iters = MTestArgListGetInt_with_default(head, "iter", 30000);
    aspart = MTestArgListGetInt_with_default(head, "aspart", 8);
    arpart = MTestArgListGetInt_with_default(head, "arpart", 4);
    acount = MTestArgListGetInt_with_default(head, "acount", 48);
    bspart = MTestArgListGetInt_with_default(head, "bspart", 6);
    brpart = MTestArgListGetInt_with_default(head, "brpart", 9);
    bcount = MTestArgListGetInt_with_default(head, "bcount", 36);
    maxspin = MTestArgListGetInt_with_default(head, "spin", 20);
    MTestArgListDestroy(head);
    /* with the RDMA transport forced (test modes ofi-shm, ofi-tcp) an iteration costs a
     * credit and the writes' completions through the peer's progress, which with 4 spinning
     * threads on 2 cores means scheduler time slices (about 4 ms over TCP): a tenth of the
     * iterations keeps those runs within their time limit; on the verbs emulator, whose
     * empty completion-queue polls yield the CPU, a fortieth */
    if (rdma && iters > 3000)
        iters /= rdma_is_verbs() ? 40 : 10;
    if (aspart < 1 || arpart < 1 || bspart < 1 || brpart < 1 || aspart > 1024 ||
        bspart > 1024 || acount % aspart || acount % arpart || bcount % bspart ||
        bcount % brpart) {
        fprintf(stderr, "invalid arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* rank 0 sends A (op 0) and receives B (op 1); rank 1 the other way round */
    sop = rank;
    rop = 1 - rank;
    ssp = rank == 0 ? aspart : bspart;
    scount = rank == 0 ? acount : bcount;
    rrp = rank == 0 ? brpart : arpart;
    rcount = rank == 0 ? bcount : acount;
    tag_s = 10 + sop;
    tag_r = 10 + rop;
    sbuf = malloc(scount * sizeof(int));
    rbuf = malloc(rcount * sizeof(int));
    seed = 2463534242u ^ (unsigned int) (rank * 104729 + 1);

    cts0 = pv_read("part_cts_path_ops");
    ofi0 = pv_read(RDMA_PV("ops"));
    MPI_Psend_init(sbuf, ssp, scount / ssp, MPI_INT, 1 - rank, tag_s, comm, MPI_INFO_NULL,
                   &sreq);
    MPI_Precv_init(rbuf, rrp, rcount / rrp, MPI_INT, 1 - rank, tag_r, comm, MPI_INFO_NULL,
                   &rreq);

    MTest_Start_thread(watchdog, NULL);
    MTest_Start_thread(progress_thread, NULL);

    for (int it = 0; it < iters; it++) {
        MPI_Status st[2];
        int n = -1;

        for (int i = 0; i < rcount; i++)
            rbuf[i] = SENTINEL;
        if (maxspin > 0 && rnd(&seed) % 2)
            spin_us(rnd(&seed) % (unsigned int) maxspin);
        wd_mark(it, "MPI_Start");
        if (it % 2) {
            check(MPI_Start(&rreq), it, "MPI_Start(receive)");
            check(MPI_Start(&sreq), it, "MPI_Start(send)");
        } else {
            check(MPI_Start(&sreq), it, "MPI_Start(send)");
            check(MPI_Start(&rreq), it, "MPI_Start(receive)");
        }
        for (int i = 0; i < scount; i++)
            sbuf[i] = val(sop, it, i);
        wd_mark(it, "MPI_Pready*");
        ready_all(sreq, ssp, it, &seed);
        wd_mark(it, "completion (MPI_Wait / MPI_Waitall)");
        switch (it % 3) {
            case 0:
                check(MPI_Wait(&sreq, MPI_STATUS_IGNORE), it, "MPI_Wait(send)");
                check(MPI_Wait(&rreq, &st[1]), it, "MPI_Wait(receive)");
                break;
            case 1:
                both[0] = sreq;
                both[1] = rreq;
                check(MPI_Waitall(2, both, st), it, "MPI_Waitall");
                break;
            default:
                check(MPI_Wait(&rreq, &st[1]), it, "MPI_Wait(receive)");
                check(MPI_Wait(&sreq, MPI_STATUS_IGNORE), it, "MPI_Wait(send)");
        }
        MPI_Get_count(&st[1], MPI_INT, &n);
        if (n != rcount || st[1].MPI_SOURCE != 1 - rank || st[1].MPI_TAG != tag_r) {
            fprintf(stderr, "rank %d: iteration %d: status count %d source %d tag %d, "
                    "expected %d %d %d\n", rank, it, n, st[1].MPI_SOURCE, st[1].MPI_TAG,
                    rcount, 1 - rank, tag_r);
            errs++;
        }
        for (int i = 0, bad = 0; i < rcount; i++)
            if (rbuf[i] != val(rop, it, i)) {
                if (bad++ < 3 && errs < 30)
                    fprintf(stderr, "rank %d: iteration %d: received[%d] = %d, expected %d\n",
                            rank, it, i, rbuf[i], val(rop, it, i));
                errs++;
            }
    }
    wd_mark(iters, "after the loop");

    __atomic_store_n(&prog_quit, 1, __ATOMIC_RELEASE);
    MPI_Barrier(MPI_COMM_WORLD);
    cts1 = pv_read("part_cts_path_ops");
    ofi1 = pv_read(RDMA_PV("ops"));
    if (rdma) {
        /* the RDMA transport's per-iteration credit plays the CTS's part: both operations
         * of this process are on it, and neither takes the tag transport's CTS path */
        if (ofi1 - ofi0 != 2 || cts1 != cts0) {
            fprintf(stderr, "rank %d: part_ofi_ops grew by %lld (expected 2) and "
                    "part_cts_path_ops by %lld (expected 0) with the RDMA transport forced\n",
                    rank, (long long) (ofi1 - ofi0), (long long) (cts1 - cts0));
            errs++;
        }
    } else if (cts1 - cts0 != 1) {
        fprintf(stderr, "rank %d: part_cts_path_ops grew by %lld, expected 1: the receive is "
                "not on the CTS path (run with MPIR_CVAR_PART_TAG_IDS=0)\n", rank,
                (long long) (cts1 - cts0));
        errs++;
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    wd_stop();
    errs += MTest_Join_threads();
    errs += prog_errs;
    if (prog_polls == 0) {
        fprintf(stderr, "rank %d: the progress thread never polled\n", rank);
        errs++;
    }

    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&pcomm);
    MPI_Comm_free(&comm);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
