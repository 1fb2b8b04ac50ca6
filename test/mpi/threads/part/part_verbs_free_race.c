/*
 * part_verbs_free_race.c: MPI_Request_free right after a verbs error completes the request,
 * while another thread is still failing the broken connection (2 processes,
 * MPI_THREAD_MULTIPLE; only on the verbs emulator with MPIR_CVAR_PART_TRANSPORT=verbs,
 * testlist.verbs).
 *
 * The sender arms the emulator (VERBSEMU_FAULT=flush@2: its first data write puts the queue
 * pair in error, so that write and every later one complete as flushed) and readies -parts
 * partitions, each its own write (MPIR_CVAR_PART_AGGREGATOR=none in the test line), so that
 * many flushed completions are still unreaped when the first error is seen. A progress
 * thread loops on MPI_Iprobe while the main thread loops on MPI_Test and frees the request
 * the moment MPI_Test reports the error. When the progress thread is the one that saw the
 * error, it fails the connection's operations and then tells the peer; the main thread's
 * free in between used to leave it the last reference, and the release of that reference
 * (which reaps the operation's outstanding writes through progress) spun forever inside the
 * completion-queue drain it held. The window is a few microseconds and a run is one chance
 * (one fault per process: the emulator counts work requests from the device's opening);
 * with that fix undone, 20 runs by hand did not hit it, so the plain lines exercise the
 * path but do not prove the fix. The -lastref=1 line does: -pause=MS makes the sender's
 * main thread sleep after its MPI_Pready calls, so that the progress thread sees the
 * error first, and the testing aid MPIR_CVAR_PART_VERBS_DEBUG_FAIL_DELAY_US holds that
 * thread between failing the operations and dropping its references, so that the main
 * thread's free lands there; the line fails unless pvar part_verbs_fail_last_ref (that
 * thread dropped the last reference) grew.
 * What it did catch (10 of 10 runs before the fix): the sender's error message came back
 * as "(unknown)()": every one of the hundreds of flushed writes created an MPI error code,
 * which pushed the first one's text out of MPICH's ring of error messages; now only the
 * iteration's first error creates a code.
 *
 * Asserts: MPI_Test on the sender and MPI_Wait on the receiver return MPI_ERR_OTHER with
 * the flush text / "the peer's side failed"; no hang (runtests' time limit); with one queue
 * pair per peer (one VCI, or MPIR_CVAR_PART_VERBS_QPS=1) nothing reached the receive
 * buffer. With several, the fault breaks one queue pair and a write already posted on
 * another may land before the break is seen (allowed: only writes after the error are
 * forbidden), so there every byte must be either untouched or the byte that was sent.
 */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"
#include "mpithreadtest.h"

#define COUNT 64

static volatile int stop_progress = 0;
static MPI_Comm idle;
static int rank, errs = 0;

#include "../../part/part_pvar.h"

static MTEST_THREAD_RETURN_TYPE progress_thread(void *arg)
{
    int flag;
    (void) arg;
    while (!stop_progress)
        MPI_Iprobe(MPI_ANY_SOURCE, 999, idle, &flag, MPI_STATUS_IGNORE);
    return (MTEST_THREAD_RETURN_TYPE) NULL;
}

static int check_error(const char *who, int rc, const char *want)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "%s: succeeded; expected an error containing '%s'\n", who, want);
        return 1;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != MPI_ERR_OTHER || strstr(msg, want) == NULL) {
        fprintf(stderr, "%s: class %d, expected MPI_ERR_OTHER with '%s': %s\n", who, cls, want,
                msg);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int provided, tprovided, parts = 256, pause_ms = 0, lastref = 0;
    MPI_Request req;

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-parts=", 7) == 0)
            parts = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "-pause=", 7) == 0)
            pause_ms = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "-lastref=", 9) == 0)
            lastref = atoi(argv[i] + 9);
    }
    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
        MTest_Finalize(1);
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &idle);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprovided);
    /* queue pairs per peer: MPIR_CVAR_PART_VERBS_QPS, 0 meaning one per VCI (at most 8) */
    int qps = cv_read_int("MPIR_CVAR_PART_VERBS_QPS");
    if (qps == 0) {
        qps = cv_read_int("MPIR_CVAR_CH4_NUM_VCIS");
        qps = qps > 8 ? 8 : qps;
    }

    size_t n = (size_t) parts * COUNT;
    unsigned char *buf = malloc(n);
    if (rank == 0) {
        setenv("VERBSEMU_FAULT", "flush@2", 1); /* read when the device opens */
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char) (i * 7 + 1);
        MTest_Start_thread(progress_thread, NULL);
        unsigned long long last0 = pv_read("part_verbs_fail_last_ref");
        MPI_Psend_init(buf, parts, COUNT, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        for (int p = 0; p < parts; p++)
            MPI_Pready(p, req);
        if (pause_ms > 0)
            usleep(pause_ms * 1000);    /* the progress thread sees the error first */
        int flag = 0, rc = MPI_SUCCESS;
        while (!flag)
            rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        MPI_Request_free(&req); /* at once: the progress thread may still be failing it */
        errs += check_error("sender", rc, "Work Request Flushed Error");
        stop_progress = 1;
        MTest_Join_threads();
        unsigned long long last = pv_read("part_verbs_fail_last_ref") - last0;
        if (lastref && last == 0) {
            fprintf(stderr, "sender: -lastref=1: the free did not land while the progress "
                    "thread was failing the operation (part_verbs_fail_last_ref unchanged)\n");
            errs++;
        }
    } else if (rank == 1) {
        memset(buf, 0x5A, n);
        MPI_Precv_init(buf, parts, COUNT, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        errs += check_error("receiver", MPI_Wait(&req, MPI_STATUS_IGNORE),
                            "the peer's side failed");
        MPI_Request_free(&req);
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == 0x5A)
                continue;
            if (qps > 1 && buf[i] == (unsigned char) (i * 7 + 1))
                continue;
            fprintf(stderr, "receiver: byte %zu is 0x%02x: %s\n", i, buf[i],
                    qps > 1 ? "neither untouched (0x5a) nor the byte sent" :
                    "changed although nothing may have been written (one queue pair)");
            errs++;
            break;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&idle);
    pv_finalize();
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
