/*
 * part_rdma_errors.c: a transport that cannot be had gives a clear error from
 * MPI_Psend_init and MPI_Precv_init, never a crash or a hang, and the job goes on
 * (2 processes). What is wrong comes from the environment, named by -expect:
 *   -expect=provider  MPIR_CVAR_PART_TRANSPORT=ofi with MPIR_CVAR_PART_OFI_PROVIDER naming a
 *                     provider libfabric does not have: class MPI_ERR_OTHER, and the
 *                     message names that provider
 *   -expect=library   MPIR_CVAR_PART_TRANSPORT=ofi with MPIR_CVAR_PART_OFI_LIBRARY naming a
 *                     library that cannot be loaded, or one that is not libfabric:
 *                     MPI_ERR_OTHER, and the message names that library
 *   -expect=value     MPIR_CVAR_PART_TRANSPORT=<not a transport>: class MPI_ERR_ARG, and
 *                     the message names the value
 *   -expect=verbs     MPIR_CVAR_PART_TRANSPORT=verbs in a build without it, or with no
 *                     verbs device (VERBSEMU_NDEV=0 under the emulator): MPI_ERR_OTHER,
 *                     the message says "verbs"
 *   -expect=verbs-device  forced verbs, MPIR_CVAR_PART_VERBS_DEVICE naming no device: the
 *                     message names it
 *   -expect=verbs-port    forced verbs, MPIR_CVAR_PART_VERBS_PORT naming no active port: the
 *                     message says so
 *   -expect=verbs-gid     forced verbs, MPIR_CVAR_PART_VERBS_GID_INDEX beyond the port's GID
 *                     table: the message names the CVAR
 * Both init calls are tried on both ranks (MPI_ERRORS_RETURN on the communicator), twice
 * (the failure is not remembered wrongly), then point-to-point traffic checks that the job
 * is intact (every byte checked).
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

static int errs = 0;

static void check(const char *call, int rc, int want_class, const char *want_text,
                  MPI_Request req)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "%s succeeded; expected class %d\n", call, want_class);
        errs++;
        if (req != MPI_REQUEST_NULL)
            MPI_Request_free(&req);
        return;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != want_class) {
        fprintf(stderr, "%s: class %d, expected %d (%s)\n", call, cls, want_class, msg);
        errs++;
    }
    if (strstr(msg, want_text) == NULL) {
        fprintf(stderr, "%s: message does not name '%s': %s\n", call, want_text, msg);
        errs++;
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *expect = "provider";
    char text[256];
    int want_class = MPI_ERR_OTHER;

    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-expect=", 8) == 0)
            expect = argv[i] + 8;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(expect, "provider") == 0) {
        const char *p = getenv("MPIR_CVAR_PART_OFI_PROVIDER");
        snprintf(text, sizeof(text), "%s", p ? p : "(unset)");
    } else if (strcmp(expect, "library") == 0) {
        const char *p = getenv("MPIR_CVAR_PART_OFI_LIBRARY");
        snprintf(text, sizeof(text), "%s", p ? p : "(unset)");
    } else if (strcmp(expect, "value") == 0) {
        const char *p = getenv("MPIR_CVAR_PART_TRANSPORT");
        snprintf(text, sizeof(text), "%s", p ? p : "(unset)");
        want_class = MPI_ERR_ARG;
    } else if (strcmp(expect, "verbs") == 0) {
        snprintf(text, sizeof(text), "verbs");
    } else if (strcmp(expect, "verbs-device") == 0) {
        const char *p = getenv("MPIR_CVAR_PART_VERBS_DEVICE");
        snprintf(text, sizeof(text), "no verbs device named %s", p ? p : "(unset)");
    } else if (strcmp(expect, "verbs-port") == 0) {
        snprintf(text, sizeof(text), "has no active port of that number");
    } else if (strcmp(expect, "verbs-gid") == 0) {
        snprintf(text, sizeof(text), "ibv_query_gid (MPIR_CVAR_PART_VERBS_GID_INDEX)");
    } else {
        fprintf(stderr, "unknown -expect=%s\n", expect);
        errs++;
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char buf[64];
    int peer = (rank + 1) % size;
    for (int round = 0; round < 2; round++) {
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_Psend_init(buf, 4, 16, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &req);
        check("MPI_Psend_init", rc, want_class, text, req);
        req = MPI_REQUEST_NULL;
        rc = MPI_Precv_init(buf, 4, 16, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        check("MPI_Precv_init", rc, want_class, text, req);
    }

    /* the job is intact */
    int out[100], in[100];
    for (int i = 0; i < 100; i++)
        out[i] = rank * 1000 + i;
    MPI_Sendrecv(out, 100, MPI_INT, peer, 9, in, 100, MPI_INT, (rank + size - 1) % size, 9,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 100; i++) {
        if (in[i] != ((rank + size - 1) % size) * 1000 + i) {
            fprintf(stderr, "point-to-point after the errors: element %d is %d\n", i, in[i]);
            errs++;
            break;
        }
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
