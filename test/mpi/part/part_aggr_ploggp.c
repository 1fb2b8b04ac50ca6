/*
 * part_aggr_ploggp.c: the PLogGP aggregator (MPIR_CVAR_PART_AGGREGATOR=ploggp) decides the
 * wire layout (2 processes).
 *
 * Before MPI_Init each process writes a LogGP parameter file (two tables, "shm" and "net",
 * with a large per-message overhead so that the model's choice differs between spreads)
 * and sets MPIR_CVAR_PART_AGGREGATOR=ploggp and MPIR_CVAR_PART_LOGGP_FILE to it. What it
 * asserts, for several geometries (send/receive partitions, bytes) and spreads
 * (MPIR_CVAR_PART_AGGR_SPREAD_US written with MPI_T on both processes):
 * - the wire messages of one iteration (part_wire_msgs_recvd / part_wire_msgs_sent deltas
 *   over the iterations) equal ceil(g / k), with k the merge factor the model itself
 *   chooses for that problem: the test compiles the engine's pure model (part_ploggp.c) and
 *   evaluates MPIDI_PART_ploggp_choose on the same table (the "shm" table for a peer on the
 *   same node, "net" with MPIR_CVAR_NOLOCAL=1; with the RDMA transport forced, "rdma-shm"
 *   over libfabric's shm provider and "rdma-net" over tcp;ofi_rxm or verbs, tables of
 *   their own), so it checks that the plan uses the model, not the model (the unit tests do
 *   that), and the table of the path that carries the messages: with the RDMA transport
 *   some geometry and spread must give a different count under the tag transport's table
 *   (so the test would notice an RDMA operation planned with it);
 * - some geometry and spread gives more than one wire message (so the test would notice a
 *   plan that ignores the model and merges everything);
 * - a positive MPIR_CVAR_PART_AGGR_SIZE overrides the model; MPIR_CVAR_PART_AGGREGATOR=none
 *   (via -none on the command line, set before MPI_Init) never merges;
 * - -tagonly: the file holds only "shm" and "net"; an RDMA operation must then be planned
 *   with the engine's built-in RDMA table (MPIDI_PART_loggp_builtin), not with those;
 * - -badfile: a parameter file with a malformed line 3 makes MPI_Precv_init fail with
 *   MPI_ERR_OTHER and a message naming the file, the line and the fault in words; no
 *   request is created; -fifo: the "file" is a FIFO nobody writes (opening it for reading
 *   would block: MPI_Precv_init hung), -empty: an empty file; both fail the same way at
 *   line 0 with their reason;
 * - every received byte is checked every iteration.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mpitest.h"
/* the engine's pure model, compiled into this test (no MPICH header in it) */
#include "../../../src/mpid/ch4/netmod/part/part_ploggp.c"

static int rank, errs = 0;
#include "part_pvar.h"
#include "part_geom.h"

static const char *table_text =
    "transport shm\n"
    "0      0.2  5.0  5.0  0.5  1.0e-4\n"
    "65536  1.0  20.0 20.0 2.0  1.0e-4\n"
    "transport net\n"
    "0      5.0  10.0 10.0 5.0  1.0e-3\n"
    "65536  20.0 40.0 40.0 20.0 5.0e-4\n"
    "transport rdma-shm\n"
    "0      0.1  0.5  0.5  0.2  1.0e-4\n"
    "4097   0.1  2.0  2.0  0.5  1.0e-4\n"
    "transport rdma-net\n"
    "0      2.0  1.0  1.0  1.0  1.0e-3\n"
    "65536  5.0  4.0  4.0  4.0  5.0e-4\n";

int main(int argc, char **argv)
{
    char path[64];
    int badfile = 0, none = 0, tagonly = 0, provided;
    const char *want_line = "line 3", *want_why = "not six or seven numbers";

    for (int i = 1; i < argc; i++) {
        badfile |= strcmp(argv[i], "-badfile") == 0;
        if (strcmp(argv[i], "-fifo") == 0) {
            badfile = 2;
            want_line = "line 0";
            want_why = "is not a regular file";
        }
        if (strcmp(argv[i], "-empty") == 0) {
            badfile = 3;
            want_line = "line 0";
            want_why = "no table with a segment";
        }
        tagonly |= strcmp(argv[i], "-tagonly") == 0;
        none |= strcmp(argv[i], "-none") == 0;
    }
    /* the parameter file, per process (hydra's PMI_RANK tells which) */
    const char *pr = getenv("PMI_RANK");
    snprintf(path, sizeof(path), "/tmp/part_aggr_ploggp.%d.%s.loggp", (int) getpid(),
             pr ? pr : "x");
    FILE *f = NULL;
    if (badfile == 2) {
        if (mkfifo(path, 0600) != 0) {
            fprintf(stderr, "cannot make the FIFO %s\n", path);
            return 1;
        }
    } else if ((f = fopen(path, "w")) == NULL) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    if (badfile >= 2)
        ;       /* nothing to write */
    else if (badfile)
        fputs("transport shm\n0 0.2 5.0 5.0 0.5 1.0e-4\n65536 1.0 twenty 20 2 1e-4\n", f);
    else if (tagonly)   /* the text up to the first RDMA table */
        fwrite(table_text, 1, strstr(table_text, "transport rdma-") - table_text, f);
    else
        fputs(table_text, f);
    if (f)
        fclose(f);
    setenv("MPIR_CVAR_PART_AGGREGATOR", none ? "none" : "ploggp", 1);
    setenv("MPIR_CVAR_PART_LOGGP_FILE", path, 1);
    /* the layout planned at match for the assumed spread, on every transport (the default
     * observes an iteration first, or uses the timer on RDMA: part_replan tests that) */
    setenv("MPIR_CVAR_PART_AGGR_OBSERVE", "0", 1);

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    if (badfile) {
        if (rank == 1) {
            int buf[64], rc, cls, len;
            char msg[MPI_MAX_ERROR_STRING];
            MPI_Request req = MPI_REQUEST_NULL;
            rc = MPI_Precv_init(buf, 4, 16, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            MPI_Error_class(rc, &cls);
            MPI_Error_string(rc, msg, &len);
            if (cls != MPI_ERR_OTHER || strstr(msg, path) == NULL ||
                strstr(msg, want_line) == NULL || strstr(msg, want_why) == NULL) {
                fprintf(stderr, "bad file: class %d (expected MPI_ERR_OTHER), message '%s' "
                        "(expected the path %s, %s and '%s')\n", cls, msg, path, want_line,
                        want_why);
                errs++;
            }
            if (req != MPI_REQUEST_NULL) {
                fprintf(stderr, "bad file: a request was created\n");
                errs++;
            }
        }
    } else {
        /* which table the engine uses for this peer */
        int local = part_all_local();
        const char *prov = getenv("MPIR_CVAR_PART_OFI_PROVIDER");
        const char *tag_name = local ? "shm" : "net";
        const char *name = !rdma_forced() ? tag_name :
            (!rdma_is_verbs() && prov && strcmp(prov, "shm") == 0) ? "rdma-shm" : "rdma-net";
        MPIDI_PART_loggp_t table, tag_table;
        int line;
        if (MPIDI_PART_loggp_parse(table_text, name, &table, &line) ||
            MPIDI_PART_loggp_parse(table_text, tag_name, &tag_table, &line)) {
            fprintf(stderr, "the test's own table does not parse (line %d)\n", line);
            errs++;
        }
        if (tagonly && rdma_forced())
            table = *MPIDI_PART_loggp_builtin(strcmp(name, "rdma-shm") == 0 ?
                                              MPIDI_PART_LOGGP_RDMA_SHM :
                                              MPIDI_PART_LOGGP_RDMA_TCP);
        long differ = 0;        /* problems where the tag transport's table says otherwise */
        static const struct {
            int spart, rpart, ints;
        } geo[] = { {32, 32, 32 * 256}, {32, 16, 1 << 20}, {8, 12, 24 * 1024}, {1, 1, 100},
                    {64, 64, 64 * 4096} };
        static const int spreads[] = { 0, 100, 5000 };
        long most = 0;
        for (int s = 0; s < 3; s++) {
            set_int_cvar("MPIR_CVAR_PART_AGGR_SPREAD_US", spreads[s]);
            for (unsigned c = 0; c < sizeof(geo) / sizeof(geo[0]); c++) {
                int k, k_tag, g = (int) gcd64(geo[c].spart, geo[c].rpart);
                long want = part_geom_expect(&table, geo[c].spart, geo[c].rpart, geo[c].ints,
                                             spreads[s], &k);
                long want_tag = part_geom_expect(&tag_table, geo[c].spart, geo[c].rpart,
                                                 geo[c].ints, spreads[s], &k_tag);
                if (none) {
                    k = k_tag = 1;
                    want = want_tag = g;
                }
                differ += want != want_tag;
                long got = part_geom_run(geo[c].spart, geo[c].rpart, geo[c].ints,
                                         MPI_COMM_WORLD);
                if (got != want) {
                    fprintf(stderr, "rank %d: spread %d us, %d -> %d partitions, %d ints: %ld "
                            "wire messages per iteration, the model chose k = %d (%ld)\n",
                            rank, spreads[s], geo[c].spart, geo[c].rpart, geo[c].ints, got, k,
                            want);
                    errs++;
                }
                if (got > most)
                    most = got;
            }
        }
        if (rdma_forced() && !none && differ == 0) {
            fprintf(stderr, "rank %d: table %s gives the counts of table %s everywhere: the "
                    "test cannot tell which one the engine read\n", rank, name, tag_name);
            errs++;
        }
        if (most < 2) {
            fprintf(stderr, "rank %d: the model never split a transfer: the test proves "
                    "nothing (table or spreads too small)\n", rank);
            errs++;
        }
        /* a positive AGGR_SIZE overrides the model (ploggp) or is ignored (none) */
        set_int_cvar("MPIR_CVAR_PART_AGGR_SIZE", 4096);
        long got = part_geom_run(32, 32, 32 * 256, MPI_COMM_WORLD);  /* 1 KiB gcd-messages */
        long want = none ? 32 : 8;
        if (got != want) {
            fprintf(stderr, "rank %d: AGGR_SIZE 4096 with aggregator %s: %ld wire messages, "
                    "expected %ld\n", rank, none ? "none" : "ploggp", got, want);
            errs++;
        }
        set_int_cvar("MPIR_CVAR_PART_AGGR_SIZE", 0);
    }

    pv_finalize();
    unlink(path);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
