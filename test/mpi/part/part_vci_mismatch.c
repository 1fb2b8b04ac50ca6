/*
 * part_vci_mismatch.c: the two processes run with different VCI settings (2 processes;
 * review finding C10: the VCI count chosen by the receiver was used as is on the sender,
 * and messages went to VCIs the peer does not poll).
 *
 * The test sets MPIR_CVAR_CH4_NUM_VCIS (-v0=N on rank 0, -v1=N on rank 1) and
 * MPIR_CVAR_PART_VCIS (-p0=N, -p1=N) itself before MPI_Init, per process (hydra's PMI_RANK
 * tells which; it checks with MPI_T that the value took effect). Different NUM_VCIS per rank
 * do not get through MPI_Init on MPICH 4.0.2's ch4:ucx (its init exchanges an n x n table of
 * per-VCI addresses assuming equal counts; the hello below reports it), so the test list
 * runs equal NUM_VCIS with different MPIR_CVAR_PART_VCIS, which the engine must agree on. What it asserts, for several geometries (equal and different
 * partition counts, many small wire messages, one large, a thread hint on one side):
 * - Operations in both directions at once (rank 0 -> 1 and rank 1 -> 0) complete, -iter
 *   iterations each, alternately polled with MPI_Parrived (each partition's bytes checked as
 *   soon as it is reported) and completed with MPI_Wait only; every byte is checked.
 * A transfer that does not complete within 20 s is reported and aborts the job (the lines
 * with MPIR_CVAR_CH4_GLOBAL_PROGRESS=0 make a message on an unpolled VCI hang for good).
 */

#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int rank, errs = 0;

static int val(int c, int dir, int it, int i)
{
    return 1 + c * 10000019 + dir * 5000011 + it * 7919 + i;
}

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

typedef struct {
    int spart, rpart, total, shint, rhint;
} geo_t;

static void run_case(int c, const geo_t * g, int iters)
{
    int peer = 1 - rank;
    /* this process sends with (spart, shint) and receives with (rpart, rhint) */
    int *sbuf = malloc(g->total * sizeof(int)), *rbuf = malloc(g->total * sizeof(int));
    MPI_Info sinfo = MPI_INFO_NULL, rinfo = MPI_INFO_NULL;
    MPI_Request req[2];
    char v[32];

    if (g->shint) {
        MPI_Info_create(&sinfo);
        snprintf(v, sizeof(v), "%d", g->shint);
        MPI_Info_set(sinfo, "mpich_part_thread_partitions", v);
    }
    if (g->rhint) {
        MPI_Info_create(&rinfo);
        snprintf(v, sizeof(v), "%d", g->rhint);
        MPI_Info_set(rinfo, "mpich_part_thread_partitions", v);
    }
    MPI_Psend_init(sbuf, g->spart, g->total / g->spart, MPI_INT, peer, c, MPI_COMM_WORLD, sinfo,
                   &req[0]);
    MPI_Precv_init(rbuf, g->rpart, g->total / g->rpart, MPI_INT, peer, c, MPI_COMM_WORLD, rinfo,
                   &req[1]);
    for (int it = 0; it < iters; it++) {
        int sc = g->total / g->spart, rc = g->total / g->rpart;
        memset(rbuf, 0, g->total * sizeof(int));
        MPI_Startall(2, req);
        for (int q = 0; q < g->spart; q++) {
            int p = (q * 7 + it) % g->spart;    /* every partition once: 7 is coprime */
            if (g->spart % 7 == 0)
                p = q;
            for (int i = p * sc; i < (p + 1) * sc; i++)
                sbuf[i] = val(c, rank, it, i);
            MPI_Pready(p, req[0]);
        }
        if (it % 2 == 0) {
            char *seen = calloc(g->rpart, 1);
            int left = g->rpart;
            double t0 = MPI_Wtime();
            while (left > 0) {
                for (int p = 0; p < g->rpart; p++) {
                    int flag = 0;
                    if (seen[p])
                        continue;
                    if (MPI_Parrived(req[1], p, &flag) != MPI_SUCCESS) {
                        fprintf(stderr, "rank %d: MPI_Parrived failed\n", rank);
                        errs++;
                        flag = 1;
                    }
                    if (!flag)
                        continue;
                    seen[p] = 1;
                    left--;
                    for (int i = p * rc; i < (p + 1) * rc; i++)
                        if (rbuf[i] != val(c, peer, it, i)) {
                            if (errs < 10)
                                fprintf(stderr, "rank %d case %d iter %d: arrived partition %d:"
                                        " rbuf[%d] = %d, expected %d\n", rank, c, it, p, i,
                                        rbuf[i], val(c, peer, it, i));
                            errs++;
                        }
                }
                if (left > 0 && MPI_Wtime() - t0 > 20.0) {
                    fprintf(stderr, "rank %d case %d (%d x %d) iter %d: %d partitions not "
                            "arrived after 20 s\n", rank, c, g->spart, g->rpart, it, left);
                    fflush(stderr);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            free(seen);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        } else {
            int flag = 0;
            double t0 = MPI_Wtime();
            while (!flag) {
                MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
                if (!flag && MPI_Wtime() - t0 > 20.0) {
                    fprintf(stderr, "rank %d case %d (%d x %d) iter %d: not complete after "
                            "20 s\n", rank, c, g->spart, g->rpart, it);
                    fflush(stderr);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        for (int i = 0; i < g->total; i++)
            if (rbuf[i] != val(c, peer, it, i)) {
                if (errs < 10)
                    fprintf(stderr, "rank %d case %d (%d x %d) iter %d: rbuf[%d] = %d, "
                            "expected %d\n", rank, c, g->spart, g->rpart, it, i, rbuf[i],
                            val(c, peer, it, i));
                errs++;
            }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    if (sinfo != MPI_INFO_NULL)
        MPI_Info_free(&sinfo);
    if (rinfo != MPI_INFO_NULL)
        MPI_Info_free(&rinfo);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char *argv[])
{
    static const geo_t geos[] = {
        {8, 8, 4096, 0, 0}, {16, 4, 8192, 0, 0}, {4, 16, 8192, 0, 0}, {32, 32, 2048, 0, 0},
        {6, 9, 3600, 0, 0}, {64, 64, 65536, 0, 0}, {1, 1, 262144, 0, 0}, {16, 16, 8192, 4, 0},
        {16, 8, 8192, 0, 2}
    };
    const int ngeo = (int) (sizeof(geos) / sizeof(geos[0]));
    int v[2] = { 4, 1 }, pv[2] = { -1, -1 }, myv, iters = 4, provided, size;
    const char *pr = getenv("PMI_RANK");

    /* arguments first: the environment must be set before MPI_Init */
    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "-v0=", 4) == 0)
            v[0] = atoi(argv[a] + 4);
        else if (strncmp(argv[a], "-v1=", 4) == 0)
            v[1] = atoi(argv[a] + 4);
        else if (strncmp(argv[a], "-p0=", 4) == 0)
            pv[0] = atoi(argv[a] + 4);
        else if (strncmp(argv[a], "-p1=", 4) == 0)
            pv[1] = atoi(argv[a] + 4);
        else if (strncmp(argv[a], "-iter=", 6) == 0)
            iters = atoi(argv[a] + 6);
    }
    myv = -1;
    if (pr && (atoi(pr) == 0 || atoi(pr) == 1)) {
        char s[16];
        myv = v[atoi(pr)];
        snprintf(s, sizeof(s), "%d", myv);
        setenv("MPIR_CVAR_CH4_NUM_VCIS", s, 1);
        if (pv[atoi(pr)] >= 0) {
            snprintf(s, sizeof(s), "%d", pv[atoi(pr)]);
            setenv("MPIR_CVAR_PART_VCIS", s, 1);
        }
    }

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (myv < 0) {
        fprintf(stderr, "rank %d: PMI_RANK not set: cannot give the ranks different "
                "MPIR_CVAR_CH4_NUM_VCIS\n", rank);
        errs++;
    } else if (cvar_int("MPIR_CVAR_CH4_NUM_VCIS") != myv) {
        fprintf(stderr, "rank %d: MPIR_CVAR_CH4_NUM_VCIS reads %d, set %d\n", rank,
                cvar_int("MPIR_CVAR_CH4_NUM_VCIS"), myv);
        errs++;
    }
    MTestPrintfMsg(1, "rank %d: MPIR_CVAR_CH4_NUM_VCIS=%d\n", rank, myv);

    /* both processes got through MPI_Init (a point-to-point hello with a deadline) */
    {
        int out = myv, in = -1, flag = 0;
        MPI_Request hello[2];
        double t0 = MPI_Wtime();
        MPI_Irecv(&in, 1, MPI_INT, 1 - rank, 77, MPI_COMM_WORLD, &hello[0]);
        MPI_Isend(&out, 1, MPI_INT, 1 - rank, 77, MPI_COMM_WORLD, &hello[1]);
        while (!flag) {
            MPI_Testall(2, hello, &flag, MPI_STATUSES_IGNORE);
            if (!flag && MPI_Wtime() - t0 > 20.0) {
                fprintf(stderr, "rank %d (MPIR_CVAR_CH4_NUM_VCIS=%d): no message from rank %d "
                        "within 20 s: its MPI_Init did not return (ch4:ucx exchanges per-VCI "
                        "addresses at init assuming equal VCI counts)\n", rank, myv, 1 - rank);
                fflush(stderr);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        MTestPrintfMsg(1, "rank %d: the peer runs with %d VCIs\n", rank, in);
    }

    for (int c = 0; c < ngeo; c++) {
        geo_t g = geos[c];     /* both directions: spart x rpart */
        run_case(c, &g, iters);
    }

    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
