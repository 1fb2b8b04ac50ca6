/*
 * part_vci.c: wire messages spread over VCIs (2 processes; run with and without
 * MPIR_CVAR_CH4_NUM_VCIS > 1, which needs a --enable-thread-cs=per-vci build).
 *
 * What it asserts, for several geometries and thread hints:
 * - The wire messages of an operation go to V = min(MPIR_CVAR_CH4_NUM_VCIS,
 *   MPIR_CVAR_PART_VCIS when > 0, wire messages) VCIs. Message m's VCI is m mod V
 *   (round-robin), or, with the info key mpich_part_thread_partitions = t on the sender
 *   (else on the receiver), (first partition of m on that side / t) mod V, so that one
 *   thread's partitions share a VCI. The pvar part_vci_spread_msgs counts the messages
 *   placed on a VCI other than 0: its delta over the iterations equals iters times the number
 *   of messages with VCI != 0 under that rule, on the sender (sent) and on the receiver
 *   (posted). With one VCI the delta is 0.
 * - MPI_Parrived polling (which progresses only the partition's VCI) and MPI_Wait (whose
 *   progress covers the request's VCI; the engine moves the others) both complete. Run with
 *   MPIR_CVAR_CH4_GLOBAL_PROGRESS=0 this proves the messages really travel on the VCIs the
 *   engine polls (the pvar only counts the engine's choice): otherwise MPI_Parrived spins
 *   forever and the test times out.
 * - Every received byte is checked in every iteration.
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

#define ITERS 4

static int rank;

static int cvar_int(const char *name)
{
    int idx, cnt, v = -1;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS)
        return -1;
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    return v;
}

static unsigned long long spread_count(void)
{
    static MPI_T_pvar_session s;
    static MPI_T_pvar_handle h;
    static int ready;
    unsigned long long v = 0;
    if (!ready) {
        int idx, cnt;
        if (MPI_T_pvar_get_index("part_vci_spread_msgs", MPI_T_PVAR_CLASS_COUNTER, &idx) !=
            MPI_SUCCESS) {
            fprintf(stderr, "rank %d: pvar part_vci_spread_msgs not found\n", rank);
            return ~0ULL;
        }
        MPI_T_pvar_session_create(&s);
        MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &cnt);
        ready = 1;
    }
    MPI_T_pvar_read(s, h, &v);
    return v;
}

static long long gcd(long long a, long long b)
{
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* one case: spart x rpart partitions of `count` ints in total, thread hints (0: none) */
static int run_case(MPI_Comm comm, int nvcis, int part_vcis, int spart, int rpart, int total,
                    int shint, int rhint)
{
    int errs = 0, peer = 1 - rank;
    int parts = rank == 0 ? spart : rpart, hint = rank == 0 ? shint : rhint;
    int *buf = malloc(sizeof(int) * total);
    MPI_Info info = MPI_INFO_NULL;
    MPI_Request req;

    /* the expected mapping (AGGR_SIZE is 0: g messages of total/g ints) */
    int g = (int) gcd(spart, rpart);
    int v = nvcis;
    if (part_vcis > 0 && part_vcis < v)
        v = part_vcis;
    if (g < v)
        v = g;
    int map_parts = shint ? spart : rpart, ppt = shint ? shint : rhint, expect = 0;
    for (int m = 0; m < g && v > 1; m++) {
        int first = m * (map_parts / g);
        int vci = ppt ? (first / ppt) % v : m % v;
        expect += vci != 0;
    }

    if (hint) {
        char str[16];
        snprintf(str, sizeof(str), "%d", hint);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpich_part_thread_partitions", str);
    }
    unsigned long long before = spread_count();
    if (rank == 0)
        MPI_Psend_init(buf, spart, total / spart, MPI_INT, peer, 3, comm, info, &req);
    else
        MPI_Precv_init(buf, rpart, total / rpart, MPI_INT, peer, 3, comm, info, &req);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < total; i++)
            buf[i] = rank == 0 ? (it + 1) * 7919 + i : -1;
        MPI_Start(&req);
        if (rank == 0) {
            for (int p = parts - 1; p >= 0; p--)
                MPI_Pready(p, req);
        } else if (it % 2) {
            /* poll every partition with MPI_Parrived before waiting */
            for (int p = 0; p < parts; p++) {
                int flag = 0;
                while (!flag)
                    MPI_Parrived(req, p, &flag);
                int per = total / rpart;
                for (int i = p * per; i < (p + 1) * per; i++)
                    if (buf[i] != (it + 1) * 7919 + i) {
                        if (errs++ < 5)
                            fprintf(stderr, "partition %d arrived but buf[%d] = %d\n", p, i,
                                    buf[i]);
                    }
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1)
            for (int i = 0; i < total; i++)
                if (buf[i] != (it + 1) * 7919 + i) {
                    if (errs++ < 5)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                                (it + 1) * 7919 + i);
                }
    }
    MPI_Request_free(&req);
    unsigned long long delta = spread_count() - before;
    if (delta != (unsigned long long) ITERS * expect) {
        fprintf(stderr, "rank %d: %dx%d parts, hints %d/%d, %d VCIs: part_vci_spread_msgs grew "
                "by %llu, expected %d\n", rank, spart, rpart, shint, rhint, v, delta,
                ITERS * expect);
        errs++;
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    free(buf);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, provided, zero = 0, idx, cnt;
    MPI_Comm comm;
    MPI_T_cvar_handle h;

    /* this test checks the layouts of MPIR_CVAR_PART_AGGR_SIZE (0: one wire message per
     * gcd-message, every iteration): the "size" aggregator, not the default's re-plan */
    setenv("MPIR_CVAR_PART_AGGREGATOR", "size", 0);
    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    int nvcis = cvar_int("MPIR_CVAR_CH4_NUM_VCIS");
    int part_vcis = cvar_int("MPIR_CVAR_PART_VCIS");
    if (nvcis < 1)
        nvcis = 1;
    /* one wire message per gcd-partition */
    if (MPI_T_cvar_get_index("MPIR_CVAR_PART_AGGR_SIZE", &idx) == MPI_SUCCESS) {
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
        MPI_T_cvar_write(h, &zero);
        MPI_T_cvar_handle_free(&h);
    } else {
        fprintf(stderr, "MPIR_CVAR_PART_AGGR_SIZE not found\n");
        errs++;
    }
    if (rank == 0)
        MTestPrintfMsg(1, "NUM_VCIS %d, PART_VCIS %d\n", nvcis, part_vcis);

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rank < 2) {
        errs += run_case(comm, nvcis, part_vcis, 8, 8, 8 * 512, 0, 0);
        errs += run_case(comm, nvcis, part_vcis, 16, 8, 16 * 64, 0, 0);
        errs += run_case(comm, nvcis, part_vcis, 8, 8, 8 * 512, 4, 0);
        errs += run_case(comm, nvcis, part_vcis, 16, 8, 16 * 64, 0, 2);
        errs += run_case(comm, nvcis, part_vcis, 16, 16, 16 * 1024, 2, 8);
        errs += run_case(comm, nvcis, part_vcis, 3, 2, 6 * 100, 0, 0);
    }
    MPI_Comm_free(&comm);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
