/*
 * part_mpit_cycle.c: tuning the engine through MPI_T survives MPI_T_init_thread/MPI_T_finalize
 * cycles while MPI is initialized (2 processes; regression test for maint/patches/0006).
 *
 * What it asserts:
 * - Three balanced MPI_T_init_thread / MPI_T_finalize cycles after MPI_Init, each writing
 *   MPIR_CVAR_PART_AGGR_SIZE and reading it back in the same cycle.
 * - After them, a communicator can still be created (MPI_Comm_dup read a freed string CVAR and
 *   crashed with ch4:ofi in stock 4.0.2), the string CVAR MPIR_CVAR_BCAST_INTRANODE_TREE_TYPE
 *   still reads the value it had before the cycles, and a fresh MPI_T_init_thread still finds
 *   the engine's CVAR with the last value written and its performance variables.
 * - The value written in the last cycle is the one the engine uses: with AGGR_SIZE 0 written
 *   last, a 16 x 16 partition transfer takes 16 wire messages per iteration (pvar deltas on
 *   both sides), and every received byte is checked.
 */

#include "mpi.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "mpitest.h"

#define NPART 16
#define COUNT 256       /* ints per partition */
#define ITERS 3

static int rank;

static int cvar_rw(const char *name, int *write_val, int *read_val)
{
    int idx, cnt, err;
    MPI_T_cvar_handle h;

    err = MPI_T_cvar_get_index(name, &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cvar %s not found (err %d)\n", rank, name, err);
        return 1;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    if (write_val)
        err = MPI_T_cvar_write(h, write_val);
    if (err == MPI_SUCCESS && read_val)
        err = MPI_T_cvar_read(h, read_val);
    MPI_T_cvar_handle_free(&h);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cvar %s read/write failed (err %d)\n", rank, name, err);
        return 1;
    }
    return 0;
}

static int cvar_read_string(const char *name, char *out, int len)
{
    int idx, cnt, err;
    MPI_T_cvar_handle h;

    out[0] = '\0';
    err = MPI_T_cvar_get_index(name, &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cvar %s not found (err %d)\n", rank, name, err);
        return 1;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt);
    if (cnt > len) {
        fprintf(stderr, "rank %d: cvar %s needs %d bytes\n", rank, name, cnt);
        err = MPI_ERR_OTHER;
    } else {
        err = MPI_T_cvar_read(h, out);
    }
    MPI_T_cvar_handle_free(&h);
    return err != MPI_SUCCESS;
}

static int pvar_read(const char *name, unsigned long long *v)
{
    int idx, cnt, err;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;

    err = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx);
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar %s not found (err %d)\n", rank, name, err);
        return 1;
    }
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &cnt);
    err = MPI_T_pvar_read(s, h, v);
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    return err != MPI_SUCCESS;
}

static int transfer(MPI_Comm comm)
{
    static int buf[NPART * COUNT];
    int errs = 0, peer = 1 - rank;
    MPI_Request req;

    if (rank == 0)
        MPI_Psend_init(buf, NPART, COUNT, MPI_INT, peer, 7, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, NPART, COUNT, MPI_INT, peer, 7, comm, MPI_INFO_NULL, &req);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < NPART * COUNT; i++)
            buf[i] = rank == 0 ? it * 1000003 + i : -1;
        MPI_Start(&req);
        if (rank == 0)
            for (int p = NPART - 1; p >= 0; p--)
                MPI_Pready(p, req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1)
            for (int i = 0; i < NPART * COUNT; i++)
                if (buf[i] != it * 1000003 + i) {
                    if (errs++ < 5)
                        fprintf(stderr, "iter %d: buf[%d] = %d, expected %d\n", it, i, buf[i],
                                it * 1000003 + i);
                }
    }
    MPI_Request_free(&req);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, provided, got = -1;
    int values[3] = { 4096, 1 << 20, 0 };
    char tree_before[1024], tree_after[1024];
    unsigned long long before = 0, after = 0;
    const char *pv = NULL;
    MPI_Comm comm;

    /* this test checks the layouts of MPIR_CVAR_PART_AGGR_SIZE (0: one wire message per
     * gcd-message, every iteration): the "size" aggregator, not the default's re-plan */
    setenv("MPIR_CVAR_PART_AGGREGATOR", "size", 0);
    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    for (int c = 0; c < 3; c++) {
        MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
        if (c == 0)
            errs += cvar_read_string("MPIR_CVAR_BCAST_INTRANODE_TREE_TYPE", tree_before,
                                     sizeof(tree_before));
        errs += cvar_rw("MPIR_CVAR_PART_AGGR_SIZE", &values[c], &got);
        if (got != values[c]) {
            fprintf(stderr, "rank %d cycle %d: AGGR_SIZE reads %d after writing %d\n", rank, c,
                    got, values[c]);
            errs++;
        }
        MPI_T_finalize();
    }

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    errs += cvar_rw("MPIR_CVAR_PART_AGGR_SIZE", NULL, &got);
    if (got != values[2]) {
        fprintf(stderr, "rank %d: AGGR_SIZE reads %d after the cycles, expected %d\n", rank, got,
                values[2]);
        errs++;
    }
    errs += cvar_read_string("MPIR_CVAR_BCAST_INTRANODE_TREE_TYPE", tree_after,
                             sizeof(tree_after));
    if (strcmp(tree_before, tree_after) != 0 || tree_after[0] == '\0') {
        fprintf(stderr, "rank %d: MPIR_CVAR_BCAST_INTRANODE_TREE_TYPE was '%s', now '%s'\n",
                rank, tree_before, tree_after);
        errs++;
    }

    pv = rank == 0 ? "part_wire_msgs_sent" : "part_wire_msgs_recvd";
    errs += pvar_read(pv, &before);
    if (rank < 2)
        errs += transfer(comm);
    errs += pvar_read(pv, &after);
    if (rank < 2 && after - before != (unsigned long long) ITERS * NPART) {
        fprintf(stderr, "rank %d: %s grew by %llu, expected %d\n", rank, pv, after - before,
                ITERS * NPART);
        errs++;
    }
    MPI_T_finalize();

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
