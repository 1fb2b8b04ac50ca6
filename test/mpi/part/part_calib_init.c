/*
 * part_calib_init.c: the LogGP calibration at MPI_Init (MPIR_CVAR_PART_LOGGP_CALIBRATE).
 *
 * Before MPI_Init every process sets the calibration on (unless -off), names the file rank 0
 * saves the table to (MPIR_CVAR_PART_LOGGP_CALIBRATE_FILE, a path of its process manager's
 * pid; rank 0's is broadcast after MPI_Init, so that ranks on other hosts, which have other
 * proxies, read the one written), the PLogGP aggregator, and a layout planned at match
 * (MPIR_CVAR_PART_AGGR_OBSERVE=0). What it asserts:
 * - on: part_loggp_calib_segs is the same on every rank, between the 8 measured sizes and 16,
 *   and part_loggp_calib_us is positive and the same everywhere (rank 0's, broadcast);
 * - the saved file parses with the engine's own parser (part_ploggp.c, compiled in) into
 *   one table of that many segments, named "shm" when the two processes share a node (and
 *   MPIR_CVAR_NOLOCAL is off), else "net", with sizes from 8 B to 1 MiB;
 * - on the tag transport, the wire messages of one iteration, for several geometries and
 *   spreads, are the ones the model chooses with that table (as part_aggr_ploggp does for a
 *   file): the engine plans with the measured table. The test also evaluates the built-in
 *   table and says when both give the same counts everywhere (then this part cannot tell
 *   them apart on this machine, and only the rest is proved);
 * - -off: both pvars are 0 and no file is written; -filewins (MPIR_CVAR_PART_LOGGP_FILE
 *   set too): the file wins, nothing is measured (pvars 0, no file saved);
 * - -budget (MPIR_CVAR_PART_LOGGP_CALIBRATE_MS=1: out of time after 0 or 1 sizes): MPI_Init
 *   succeeds, part_loggp_calib_segs is 0 and part_loggp_calib_us positive and the same on
 *   every rank, no file is saved, and rank 0 alone printed the one line that says so
 *   (every rank's stderr goes to a file of its own during MPI_Init);
 * - every received byte is checked every iteration.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include "mpitest.h"
/* the engine's pure model and parser, compiled into this test (no MPICH header in them) */
#include "../../../src/mpid/ch4/netmod/part/part_ploggp.c"

static int rank, errs = 0;
static MPI_Comm pair;   /* ranks 0 and 1 (the others: MPI_COMM_NULL) */
#include "part_pvar.h"
#include "part_geom.h"

int main(int argc, char **argv)
{
    char path[96], lfile[96];
    char efile[96];
    int off = 0, filewins = 0, budget = 0, provided, saved_err = -1;

    for (int i = 1; i < argc; i++) {
        off |= strcmp(argv[i], "-off") == 0;
        filewins |= strcmp(argv[i], "-filewins") == 0;
        budget |= strcmp(argv[i], "-budget") == 0;
    }
    /* the processes of one launch share their process manager (hydra's proxy) */
    snprintf(path, sizeof(path), "/tmp/part_calib_init.%d.loggp", (int) getppid());
    const char *pr = getenv("PMI_RANK");
    snprintf(lfile, sizeof(lfile), "/tmp/part_calib_init.%d.%s.in.loggp", (int) getpid(),
             pr ? pr : "x");
    if (!off)
        setenv("MPIR_CVAR_PART_LOGGP_CALIBRATE", "1", 1);
    setenv("MPIR_CVAR_PART_LOGGP_CALIBRATE_FILE", path, 1);
    setenv("MPIR_CVAR_PART_AGGREGATOR", "ploggp", 1);
    setenv("MPIR_CVAR_PART_AGGR_OBSERVE", "0", 1);
    if (filewins) {
        FILE *f = fopen(lfile, "w");
        if (f == NULL) {
            fprintf(stderr, "cannot write %s\n", lfile);
            return 1;
        }
        fputs("transport shm\n0 0.2 5.0 5.0 0.5 1.0e-4\ntransport net\n0 5 10 10 5 1e-3\n", f);
        fclose(f);
        setenv("MPIR_CVAR_PART_LOGGP_FILE", lfile, 1);
    }

    /* no time limit unless -budget: a loaded machine took up to 21 s, past the default */
    if (!budget)
        setenv("MPIR_CVAR_PART_LOGGP_CALIBRATE_MS", "0", 0);
    if (budget) {
        setenv("MPIR_CVAR_PART_LOGGP_CALIBRATE_MS", "1", 1);
        snprintf(efile, sizeof(efile), "/tmp/part_calib_init.%d.%s.err", (int) getpid(),
                 pr ? pr : "x");
        fflush(stderr);
        saved_err = dup(2);
        int fd = open(efile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (saved_err < 0 || fd < 0 || dup2(fd, 2) < 0) {
            fprintf(stderr, "cannot send stderr to %s\n", efile);
            return 1;
        }
        close(fd);
    }

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (budget) {       /* stderr back; rank 0 alone said that time ran out */
        fflush(stderr);
        dup2(saved_err, 2);
        close(saved_err);
        char text[1024] = "";
        FILE *f = fopen(efile, "r");
        size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
        text[len] = 0;
        if (f)
            fclose(f);
        unlink(efile);
        /* after 0 or 1 of the 8 sizes: the file's open can take the whole millisecond */
        const char *want = "ran out of MPIR_CVAR_PART_LOGGP_CALIBRATE_MS (1 ms) after ";
        if ((rank == 0) != (strstr(text, want) != NULL) || (rank != 0 && len > 0)) {
            fprintf(stderr, "rank %d: stderr during MPI_Init was \"%s\"; expected %s\n", rank,
                    text, rank == 0 ? "the line saying the calibration ran out of time" :
                    "nothing");
            errs++;
        }
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);        /* the file written */

    unsigned long long segs = pv_read("part_loggp_calib_segs");
    unsigned long long us = pv_read("part_loggp_calib_us");
    int expect = !off && !filewins && !budget;
    if (budget) {
        /* tried, out of time: the built-in table stays */
        unsigned long long lo, hi;
        MPI_Allreduce(&us, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&us, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (segs != 0 || us == 0 || lo != hi) {
            fprintf(stderr, "rank %d: out of time: part_loggp_calib_segs %llu (expected 0), "
                    "part_loggp_calib_us %llu (all ranks %llu..%llu; expected one positive "
                    "value)\n", rank, segs, us, lo, hi);
            errs++;
        }
    }
    if (!expect) {
        if (segs != 0 || (us != 0 && !budget)) {
            fprintf(stderr, "rank %d: no calibration expected, pvars say %llu segments, "
                    "%llu us\n", rank, segs, us);
            errs++;
        }
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "rank %d: %s was written without a calibration\n", rank, path);
            errs++;
        }
        /* the plan works (data checked) */
        if (rank < 2 && part_geom_run(8, 8, 8 * 512, pair) < 1) {
            fprintf(stderr, "rank %d: no wire message\n", rank);
            errs++;
        }
    } else {
        unsigned long long v[2] = { segs, us }, lo[2], hi[2];
        MPI_Allreduce(v, lo, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(v, hi, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (segs < 8 || segs > 16 || us == 0 || lo[0] != hi[0] || lo[1] != hi[1]) {
            fprintf(stderr, "rank %d: part_loggp_calib_segs %llu (all ranks %llu..%llu), "
                    "part_loggp_calib_us %llu (%llu..%llu)\n", rank, segs, lo[0], hi[0], us,
                    lo[1], hi[1]);
            errs++;
        }
        /* which table the calibration replaced: the processes' path */
        int local = part_all_local();
        const char *name = local ? "shm" : "net";
        MPIDI_PART_loggp_t table;
        int line = 0, err = MPIDI_PART_loggp_load(path, name, &table, &line);
        int table_ok = !(err || table.nsegs != (int) segs || table.seg[0].min_bytes != 8 ||
                         table.seg[table.nsegs - 1].min_bytes != 1048576);
        if (!table_ok) {
            fprintf(stderr, "rank %d: %s: table %s: error %d at line %d, %d segments "
                    "(pvar: %llu), sizes %lld..%lld (expected 8..1048576)\n", rank, path, name,
                    err, line, err ? 0 : table.nsegs, segs,
                    err ? 0LL : (long long) table.seg[0].min_bytes,
                    err ? 0LL : (long long) table.seg[table.nsegs - 1].min_bytes);
            errs++;
        } else {
            /* every row has the sender's unhidden time S, measured (MPIC_Isend/MPIC_Wait) */
            for (int i = 0; i < table.nsegs; i++)
                if (!(table.seg[i].S > 0)) {
                    fprintf(stderr, "rank %d: %s: row %lld has no S (%g)\n", rank, path,
                            (long long) table.seg[i].min_bytes, table.seg[i].S);
                    errs++;
                    break;
                }
        }
        if (table_ok && rank < 2 && !rdma_forced()) {
            /* the plans follow the measured table (the tag transport's; the RDMA transport
             * keeps its own tables) */
            const MPIDI_PART_loggp_t *builtin =
                MPIDI_PART_loggp_builtin(local ? MPIDI_PART_LOGGP_SHM : MPIDI_PART_LOGGP_TCP);
            static const struct {
                int spart, rpart, ints;
            } geo[] = { {32, 32, 32 * 256}, {32, 16, 1 << 20}, {8, 12, 24 * 1024},
                        {64, 64, 64 * 4096}, {16, 16, 16 * 2048}, {4, 4, 1 << 18} };
            static const int spreads[] = { 0, 10, 100, 5000 };
            long differ = 0;
            for (int s = 0; s < 4; s++) {
                set_int_cvar("MPIR_CVAR_PART_AGGR_SPREAD_US", spreads[s]);
                for (unsigned c = 0; c < sizeof(geo) / sizeof(geo[0]); c++) {
                    int k, kb;
                    long want = part_geom_expect(&table, geo[c].spart, geo[c].rpart,
                                                 geo[c].ints, spreads[s], &k);
                    differ += want != part_geom_expect(builtin, geo[c].spart, geo[c].rpart,
                                                       geo[c].ints, spreads[s], &kb);
                    long got = part_geom_run(geo[c].spart, geo[c].rpart, geo[c].ints,
                                             pair);
                    if (got != want) {
                        fprintf(stderr, "rank %d: spread %d us, %d -> %d partitions, %d ints: "
                                "%ld wire messages per iteration, the model chose k = %d "
                                "(%ld) with the measured table\n", rank, spreads[s],
                                geo[c].spart, geo[c].rpart, geo[c].ints, got, k, want);
                        errs++;
                    }
                }
            }
            if (rank == 0 && differ == 0)
                printf("note: the measured and the built-in %s tables give the same layouts "
                       "for every problem tried\n", name);
        }
    }

    pv_finalize();
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        unlink(path);
    if (filewins)
        unlink(lfile);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
