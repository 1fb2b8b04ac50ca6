/*
 * part_earlybird.c: early-bird delivery of partitioned wire messages (2 processes).
 *
 * What it asserts:
 * - The receiver decides the wire layout: g = gcd(spart, rpart) gcd-messages, merged k at a
 *   time when MPIR_CVAR_PART_AGGR_SIZE (set here with MPI_T before MPI_Precv_init, on both
 *   processes) is > 0 and the gcd-message size S is below it: k = min(g, AGGR / S), k = g
 *   when S == 0, otherwise k = 1.
 * - A wire message leaves as soon as all user partitions inside it are readied, without the
 *   rest of the operation being readied: the sender readies exactly the send partitions of
 *   the first wire message, tells the receiver on a duplicate communicator, and the receiver
 *   must then see MPI_Parrived(p) become true (within 10 s) for the receive partitions of
 *   that wire message, and false for every other partition.
 * - MPI_Parrived is never true before the wire message holding the partition arrived: after
 *   MPI_Start and before the sender readies anything, and, when k > 1, after the sender
 *   readied all but the last gcd-message of the first wire message, the receiver polls
 *   every partition for a while (-quiet_ms) and none may be reported.
 * - The bytes of the partitions reported as arrived are already correct at that point, and
 *   after the sender readies the rest and both sides complete, every byte is correct.
 *
 * Arguments: -spart=N -rpart=N -count=N (ints in the whole buffer) -aggr=BYTES
 *            -iter=N -quiet_ms=N (how long the receiver polls expecting nothing).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank;

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
    return 1 + iter * 1000003 + index * 7 + (index >> 3);
}

static int set_aggr(int value)
{
    int idx, count, err;
    MPI_T_cvar_handle h;

    err = MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPIR_CVAR_PART_AGGR_SIZE not found (err %d)\n", rank, err);
        return 1;
    }
    err = MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_T_cvar_handle_alloc failed (%d)\n", rank, err);
        return 1;
    }
    err = MPI_T_cvar_write(h, &value);
    MPI_T_cvar_handle_free(&h);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_T_cvar_write(AGGR_SIZE=%d) failed (%d)\n", rank, value, err);
        return 1;
    }
    return 0;
}

/* Poll MPI_Parrived on every partition for ms milliseconds; all must stay false */
static int expect_nothing(MPI_Request req, int rpart, int ms, int it, const char *when)
{
    double t0 = MPI_Wtime();
    int flag;
    while (MPI_Wtime() - t0 < ms * 1e-3) {
        for (int p = 0; p < rpart; p++) {
            MPI_Parrived(req, p, &flag);
            if (flag) {
                fprintf(stderr, "iter %d: MPI_Parrived(%d) true %s\n", it, p, when);
                return 1;
            }
        }
    }
    return 0;
}

/* Poll MPI_Parrived(p) until true; 0 on success, 1 on timeout */
static int wait_arrived(MPI_Request req, int p, double limit)
{
    double t0 = MPI_Wtime();
    int flag = 0;
    while (!flag) {
        MPI_Parrived(req, p, &flag);
        if (!flag && MPI_Wtime() - t0 > limit)
            return 1;
    }
    return 0;
}

int main(int argc, char *argv[])
{
    int errs = 0, size, provided;
    int spart, rpart, count, aggr, iters, quiet_ms;
    MPI_Comm ctl;
    MPI_Request req = MPI_REQUEST_NULL;
    int *buf;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MTestArgList *head = MTestArgListCreate(argc, argv);
    spart = MTestArgListGetInt_with_default(head, "spart", 8);
    rpart = MTestArgListGetInt_with_default(head, "rpart", 8);
    count = MTestArgListGetInt_with_default(head, "count", 1024);
    aggr = MTestArgListGetInt_with_default(head, "aggr", 0);
    iters = MTestArgListGetInt_with_default(head, "iter", 4);
    quiet_ms = MTestArgListGetInt_with_default(head, "quiet_ms", 200);
    MTestArgListDestroy(head);

    if (count % spart || count % rpart) {
        fprintf(stderr, "count %d must be a multiple of spart %d and rpart %d\n",
                count, spart, rpart);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* the wire layout the receiver must choose */
    int g = gcd(spart, rpart);
    long bytes = (long) count * sizeof(int);
    long S = bytes / g;
    int k = 1;
    if (aggr > 0 && S < aggr) {
        k = (S == 0) ? g : (int) ((long) aggr / S);
        if (k > g)
            k = g;
    }
    int sp_per_unit = spart / g, rp_per_unit = rpart / g;
    int first_wire_sparts = k * sp_per_unit;    /* send partitions in wire message 0 */
    int first_wire_rparts = k * rp_per_unit;    /* receive partitions in wire message 0 */
    if (rank == 0)
        MTestPrintfMsg(1, "spart %d rpart %d bytes %ld aggr %d: g %d k %d\n",
                       spart, rpart, bytes, aggr, g, k);

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    errs += set_aggr(aggr);

    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    buf = malloc(bytes > 0 ? bytes : 1);

    if (rank == 0) {
        int scount = count / spart;
        MPI_Psend_init(buf, spart, scount, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0;
            for (int i = 0; i < count; i++)
                buf[i] = pattern(it, i);
            MPI_Start(&req);
            /* the receiver first checks that nothing arrives before any MPI_Pready */
            MPI_Recv(&dummy, 1, MPI_INT, 1, 0, ctl, MPI_STATUS_IGNORE);
            if (k > 1) {
                /* all but the last gcd-message of wire message 0 */
                for (int p = 0; p < (k - 1) * sp_per_unit; p++)
                    MPI_Pready(p, req);
                MPI_Send(&dummy, 1, MPI_INT, 1, 1, ctl);
                MPI_Recv(&dummy, 1, MPI_INT, 1, 2, ctl, MPI_STATUS_IGNORE);
            }
            for (int p = (k - 1) * sp_per_unit; p < first_wire_sparts; p++)
                MPI_Pready(p, req);
            MPI_Send(&dummy, 1, MPI_INT, 1, 3, ctl);
            /* wait for the receiver to have seen the first wire message */
            MPI_Recv(&dummy, 1, MPI_INT, 1, 4, ctl, MPI_STATUS_IGNORE);
            for (int p = first_wire_sparts; p < spart; p++)
                MPI_Pready(p, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
    } else if (rank == 1) {
        int rcount = count / rpart;
        MPI_Precv_init(buf, rpart, rcount, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int it = 0; it < iters; it++) {
            int dummy = 0, flag;
            memset(buf, 0, bytes);
            MPI_Start(&req);
            errs += expect_nothing(req, rpart, quiet_ms / 4, it, "before any MPI_Pready");
            MPI_Send(&dummy, 1, MPI_INT, 0, 0, ctl);
            if (k > 1) {
                MPI_Recv(&dummy, 1, MPI_INT, 0, 1, ctl, MPI_STATUS_IGNORE);
                /* wire message 0 is incomplete: nothing may be reported as arrived */
                errs += expect_nothing(req, rpart, quiet_ms, it,
                                       "while the first wire message misses its last "
                                       "gcd-message");
                MPI_Send(&dummy, 1, MPI_INT, 0, 2, ctl);
            }
            MPI_Recv(&dummy, 1, MPI_INT, 0, 3, ctl, MPI_STATUS_IGNORE);
            /* the first wire message must arrive without the rest being readied */
            if (wait_arrived(req, 0, 10.0)) {
                fprintf(stderr, "iter %d: MPI_Parrived(0) still false 10 s after the sender "
                        "readied the %d partition(s) of the first wire message\n",
                        it, first_wire_sparts);
                errs++;
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            for (int p = 0; p < rpart; p++) {
                MPI_Parrived(req, p, &flag);
                if (p < first_wire_rparts && !flag) {
                    fprintf(stderr, "iter %d: MPI_Parrived(%d) false though it belongs to the "
                            "arrived first wire message (%d receive partitions)\n",
                            it, p, first_wire_rparts);
                    errs++;
                } else if (p >= first_wire_rparts && flag) {
                    fprintf(stderr, "iter %d: MPI_Parrived(%d) true though its partitions "
                            "were not readied\n", it, p);
                    errs++;
                }
            }
            /* data of the arrived partitions is already in place */
            for (int i = 0; i < first_wire_rparts * rcount; i++) {
                if (buf[i] != pattern(it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: early buf[%d] = %d, expected %d\n",
                                it, i, buf[i], pattern(it, i));
                    errs++;
                }
            }
            MPI_Send(&dummy, 1, MPI_INT, 0, 4, ctl);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int p = 0; p < rpart; p++) {
                MPI_Parrived(req, p, &flag);    /* inactive request: flag = true */
                if (!flag) {
                    fprintf(stderr, "iter %d: MPI_Parrived(%d) false after completion\n", it, p);
                    errs++;
                }
            }
            for (int i = 0; i < count; i++) {
                if (buf[i] != pattern(it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n",
                                it, i, buf[i], pattern(it, i));
                    errs++;
                }
            }
        }
        MPI_Request_free(&req);
    }

    free(buf);
    MPI_Comm_free(&ctl);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
