/*
 * part_same_call.c: a wire message that the transport delivers in a progress call completes
 * its partitioned receive in that same call (2 processes; maint/patches/0009).
 *
 * The engine completes a partitioned request when its wire messages have completed, and
 * they complete inside the netmod's progress. Run before the netmod (as a registered
 * progress hook), the engine only saw a message delivered by one MPI_Test in the next one;
 * run after it, the first MPI_Test that delivers the message also completes the request.
 *
 * Per iteration (after one warm-up iteration that carries the handshake):
 *   rank 1: MPI_Start(recv), barrier on a duplicate communicator, then waits WITHOUT any
 *           MPI call until rank 0 says (through a file, so that rank 1 makes no progress)
 *           that its send completed, sleeps 50 ms more (the bytes reach rank 1's transport),
 *           and calls MPI_Test exactly once: the flag must be true on the tag transport.
 *           With an RDMA transport forced (test modes ofi-*, verbs) only the completion and
 *           the data are checked: a libfabric provider may need several reads of its
 *           completion queue (by hand: 1 call over shm, tcp;ofi_rxm and the verbs emulator).
 *   rank 0: barrier, MPI_Start(send), fill, MPI_Pready on every partition, MPI_Wait, creates
 *           the file, then enters the closing barrier (its progress pushes out data a TCP
 *           transport still buffers).
 * Every byte is checked every iteration, and the status's count.
 *
 * One message whose request the engine armed for direct completion (part_tag.c's
 * direct_arm: one VCI, permanent tags) is completed by the netmod itself, whatever order the
 * progress hooks run in; so -direct=0 lines (MPIR_CVAR_PART_TAG_IDS=0 or several VCIs) check
 * on the tag transport that no iteration was direct (pvar part_direct_iters), which is what
 * makes their single MPI_Test a test of the hook's order, and -direct=1 lines that every
 * measured iteration was. Several wire messages are no test of it: UCX hands over a few
 * messages per progress call (shared memory's poll window starts at 1 and doubles), so a
 * receive of 4 messages completed by the third MPI_Test in any order.
 *
 * Arguments: -parts=N (partitions on both sides, default 1) -count=N (ints per partition,
 *            default 2) -iter=N (default 5) -direct=0|1 (default: not checked).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "mpitest.h"
#include "part_transport.h"

static int rank, errs = 0;
#include "part_pvar.h"

static int val(int it, int i)
{
    return 7 + it * 1000003 + i * 31;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int main(int argc, char *argv[])
{
    int size, parts, count, iters, direct, provided;
    char path[256];
    MPI_Comm ctl;
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "This test requires at least two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MTestArgList *head = MTestArgListCreate(argc, argv);
    parts = MTestArgListGetInt_with_default(head, "parts", 1);
    count = MTestArgListGetInt_with_default(head, "count", 2);
    iters = MTestArgListGetInt_with_default(head, "iter", 5);
    direct = MTestArgListGetInt_with_default(head, "direct", -1);
    MTestArgListDestroy(head);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    unsigned long long direct0 = pv_read("part_direct_iters");

    /* the flag file's name: rank 0's choice, sent to rank 1 */
    if (rank == 0)
        snprintf(path, sizeof(path), "/tmp/part_same_call.%ld.%d", (long) getpid(), rand());
    MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);

    int n = parts * count;
    int *buf = malloc(n * sizeof(int));
    if (rank == 0)
        MPI_Psend_init(buf, parts, count, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else if (rank == 1)
        MPI_Precv_init(buf, parts, count, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);

    for (int it = 0; it <= iters; it++) {
        int measured = it > 0;  /* iteration 0 carries the handshake: waits normally */
        if (rank == 0) {
            MPI_Barrier(ctl);
            MPI_Start(&req);
            for (int i = 0; i < n; i++)
                buf[i] = val(it, i);
            MPI_Pready_range(0, parts - 1, req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (measured) {
                FILE *f = fopen(path, "w");
                if (f == NULL) {
                    fprintf(stderr, "rank 0: cannot create %s\n", path);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                fclose(f);
            }
            MPI_Barrier(ctl);
        } else if (rank == 1) {
            MPI_Status st;
            int flag = 0, tests = 0, got;
            for (int i = 0; i < n; i++)
                buf[i] = -1;
            MPI_Start(&req);
            MPI_Barrier(ctl);
            if (measured) {
                double t0 = MPI_Wtime();
                while (!file_exists(path)) {
                    if (MPI_Wtime() - t0 > 60) {
                        fprintf(stderr, "rank 1 iter %d: rank 0's send did not complete "
                                "within 60 s while rank 1 made no MPI call (on the tag and "
                                "RDMA transports a small send completes without the "
                                "receiver's progress)\n", it);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                    usleep(1000);
                }
                usleep(50000);
                unlink(path);
                while (!flag) {
                    MPI_Test(&req, &flag, &st);
                    tests++;
                    if (!flag && tests > 100000000) {
                        fprintf(stderr, "rank 1 iter %d: no completion in 1e8 MPI_Test\n", it);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
                if (!rdma_forced() && tests != 1) {
                    fprintf(stderr, "rank 1 iter %d: the message was delivered before the "
                            "first MPI_Test, which returned false; completed by call %d\n",
                            it, tests);
                    errs++;
                }
            } else {
                MPI_Wait(&req, &st);
            }
            MPI_Get_count(&st, MPI_INT, &got);
            if (got != n) {
                fprintf(stderr, "rank 1 iter %d: status count %d, expected %d\n", it, got, n);
                errs++;
            }
            for (int i = 0; i < n; i++)
                if (buf[i] != val(it, i)) {
                    if (errs < 10)
                        fprintf(stderr, "rank 1 iter %d: buf[%d] = %d, expected %d\n", it, i,
                                buf[i], val(it, i));
                    errs++;
                }
            MPI_Barrier(ctl);
        } else {
            MPI_Barrier(ctl);
            MPI_Barrier(ctl);
        }
    }
    if (rank == 1 && direct >= 0 && !rdma_forced()) {
        /* iteration 0 (the handshake) may go either way */
        unsigned long long d = pv_read("part_direct_iters") - direct0;
        if (direct ? d < (unsigned long long) iters : d != 0) {
            fprintf(stderr, "rank 1: %llu of %d iterations completed directly; expected %s\n",
                    d, iters + 1, direct ? "every measured one" : "none");
            errs++;
        }
    }
    pv_finalize();
    if (rank < 2)
        MPI_Request_free(&req);
    free(buf);
    MPI_Comm_free(&ctl);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
