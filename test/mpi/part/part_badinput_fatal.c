/*
 * part_badinput_fatal.c: one erroneous partitioned call under MPI_ERRORS_ARE_FATAL ends the
 * job (2 processes; issue 12, "Bad input").
 *
 * Rank 0 starts a partitioned send of 4 partitions to rank 1 and calls MPI_Pready(4), out of
 * range, with MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD (the handler MPI_Pready reports to) and
 * on MPI_COMM_SELF. The job must end there: MPICH prints "Abort(...) ... Fatal error in
 * internal_Pready: Invalid argument, ... Invalid partition, value is 4", and mpiexec kills
 * rank 1 (blocked in MPI_Wait for data that never comes) and exits non-zero.
 *
 * How runtests checks it: testlist.cvar declares the test with resultTest=TestErrFatal,
 * MPICH's way (errhan/errfatal) of declaring a job that must abort: it passes only when
 * mpiexec exits non-zero and ignores the output. runtests cannot look for the message, and
 * a timeout or a crash also exits non-zero; so every outcome other than the clean abort is
 * turned into exit status 0 (= the test fails) with a message on stderr:
 * - MPI_Pready returns: rank 0 says so, completes the transfer, both processes finalize
 *   and exit 0;
 * - a crash in the call (SIGSEGV, SIGBUS, SIGFPE, SIGILL): the signal handler says so and
 *   exits 0 (SIGABRT is left alone: MPIR_CVAR_COREDUMP_ON_ABORT makes MPICH's own abort
 *   path use it);
 * - a hang: an alarm says so after 20 s (rank 0) or 30 s (rank 1) and exits 0. timeLimit
 *   must stay above these (60).
 * The message itself is checked by maint/test.sh, which runs the program once more after the
 * test suite (mpiexec -n 2 ./part_badinput_fatal) and looks for "Fatal error in
 * internal_Pready" and "Invalid partition, value is 4" in its output.
 */

#include "mpi.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

static void say(const char *m)
{
    ssize_t r = write(2, m, strlen(m));
    (void) r;
}

static void on_alarm(int sig)
{
    (void) sig;
    say("part_badinput_fatal: the job did not end within the watchdog's time after the "
        "erroneous MPI_Pready under MPI_ERRORS_ARE_FATAL (hang)\n");
    _exit(0);   /* exit 0 makes TestErrFatal report the failure */
}

static void on_crash(int sig)
{
    char m[200];
    snprintf(m, sizeof(m), "part_badinput_fatal: rank 0 crashed with signal %d in the "
             "erroneous MPI_Pready instead of ending through the error handler\n", sig);
    say(m);
    _exit(0);
}

int main(int argc, char *argv[])
{
    int rank, size, buf[32];
    MPI_Request req;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);

    for (int i = 0; i < 32; i++)
        buf[i] = rank == 0 ? i : -1;
    if (rank == 0)
        MPI_Psend_init(buf, 4, 8, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, 4, 8, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    MPI_Barrier(MPI_COMM_WORLD);        /* both started: rank 1 is a live peer */

    signal(SIGALRM, on_alarm);
    if (rank == 0) {
        signal(SIGSEGV, on_crash);
        signal(SIGBUS, on_crash);
        signal(SIGFPE, on_crash);
        signal(SIGILL, on_crash);
        alarm(20);
        int err = MPI_Pready(4, req);   /* out of range: the job ends here */
        alarm(0);
        int cls = -1;
        MPI_Error_class(err, &cls);
        fprintf(stderr, "part_badinput_fatal: MPI_Pready(4) on a 4-partition request returned "
                "(error %d, class %d) under MPI_ERRORS_ARE_FATAL instead of ending the job\n",
                err, cls);
        MPI_Pready_range(0, 3, req);
    } else {
        alarm(30);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    alarm(0);
    MPI_Request_free(&req);
    MPI_Finalize();
    return 0;   /* reaching here is the failure: TestErrFatal needs a non-zero exit */
}
