/*
 * part_peer_dies.c: a peer that dies in the middle of a partitioned iteration ends the job
 * (as MPICH ends it: hydra sees the dead process and kills the rest) instead of leaving the
 * survivor hanging in MPI_Wait or an MPI_Parrived loop (issue 12).
 *
 * The job under test (-child, 2 processes, rank 0 sends, rank 1 receives; 8 partitions of
 * -count ints, default 131072 = 512 KiB, so that the transports cannot buffer a whole
 * partition behind a dead receiver's back):
 * - iteration 0 runs normally: every int of the receive buffer is checked;
 * - iteration 1: rank 0 readies partitions 0-3 (filled with this iteration's values); rank 1
 *   polls MPI_Parrived until they have arrived, checks every int of them and that partitions
 *   4-7 still hold the sentinel, and acknowledges with a point-to-point message. Then
 *   -dies=sender: rank 0 waits 300 ms (rank 1 is in MPI_Wait by then, or with
 *   -wait=parrived polls MPI_Parrived on partition 7) and dies;
 *   -dies=receiver: rank 1 waits 300 ms without MPI calls and dies while rank 0 readies
 *   partitions 4-7 and waits in MPI_Wait (should that return, because a transport buffered
 *   the data, rank 0 goes on waiting for a message rank 1 never sends).
 *   -how=kill dies by raise(SIGKILL), -how=exit by _exit(3); neither calls MPI_Finalize.
 * The survivor must never come back: an MPI_Wait that returns on rank 1, a true
 * MPI_Parrived for a partition never readied or the final MPI_Recv returning on rank 0 is
 * reported as a failure (lines with "FAIL"), and so is a survivor still alive after
 * -watchdog seconds (default 20; an alarm prints it and exits).
 *
 * How it is run and checked: runtests cannot tell a job that ended because a process died
 * from a job that hung until MPIEXEC_TIMEOUT killed it (both make mpiexec exit non-zero, so
 * resultTest=TestErrFatal would pass a hang) and cannot check what the processes printed on
 * the way. So testlist.cvar runs this program as 1 process without -child: it does not
 * initialise MPI, launches `mpiexec -n 2 <itself> -child ...` (the mpiexec next to the
 * hydra_pmi_proxy that started it; PART_PEER_DIES_MPIEXEC overrides), reads everything the
 * job prints and passes (prints " No Errors", exits 0) only when
 *   - the job ended within -deadline seconds (default 45: else it is killed, a hang),
 *   - mpiexec exited non-zero,
 *   - iteration 0 was checked on rank 1 and completed on rank 0, the dying rank announced
 *     its death in iteration 1 and the survivor announced what it then waited in,
 *   - no line says FAIL (data, MPI_Wait returned, watchdog) and hydra did not time out.
 * Otherwise it prints why and the job's whole output, and exits 1. The environment is
 * passed on (the test modes' MPIR_CVAR_* settings), without the outer job's PMI variables.
 * Self-check (by hand): -nocleanup passes -disable-auto-cleanup to the inner mpiexec, so
 * that hydra leaves the survivor running: the test must then fail with the watchdog's
 * message after -watchdog seconds.
 */

#include "mpi.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PARTS    8
#define HALF     (PARTS / 2)
#define TAG      11
#define ACK_TAG  12
#define NEVER_TAG 13
#define SENTINEL (-0x2a2a2a2b)
#define OUT_MAX  (256 * 1024)

extern char **environ;

static int rank = -1, watchdog_s = 20, dies_sender = 1, how_kill = 1, wait_parrived = 0;
static long count = 131072;
static volatile const char *where = "start";

static void say(const char *m)
{
    ssize_t r = write(2, m, strlen(m));
    (void) r;
}

static void on_watchdog(int sig)
{
    char m[300];
    (void) sig;
    snprintf(m, sizeof(m), "part_peer_dies: FAIL rank %d still alive %d s into the test (%s): "
             "the job was not ended\n", rank, watchdog_s, (const char *) where);
    say(m);
    _exit(0);
}

static int val(int it, long i)
{
    return (int) ((i * 2654435761UL + (unsigned long) it * 97 + 13) & 0x3fffffff);
}

static void die(void)
{
    fflush(stdout);
    fflush(stderr);
    if (how_kill)
        raise(SIGKILL);
    _exit(3);
}

/* Check partitions [lo, hi) against iteration it; partitions [hi, top) must hold SENTINEL. */
static int check(const int *buf, int it, int lo, int hi, int top)
{
    for (long i = lo * count; i < top * count; i++) {
        int want = i < hi * count ? val(it, i) : SENTINEL;
        if (buf[i] != want) {
            printf("part_peer_dies: FAIL rank %d iteration %d: buf[%ld] (partition %ld) = %d, "
                   "expected %d\n", rank, it, i, i / count, buf[i], want);
            fflush(stdout);
            return 1;
        }
    }
    return 0;
}

/* ---- the job under test (-child) -------------------------------------------------------- */

static int child(int argc, char **argv)
{
    int size, flag, ack = 0;
    MPI_Request req;

    MPI_Init(&argc, &argv);     /* MPI_ERRORS_ARE_FATAL: an error reported ends the job too */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        printf("part_peer_dies: FAIL the job needs exactly 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    signal(SIGALRM, on_watchdog);
    alarm(watchdog_s);

    int *buf = malloc(PARTS * count * sizeof(int));
    if (buf == NULL) {
        printf("part_peer_dies: FAIL out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < PARTS * count; i++)
        buf[i] = SENTINEL;
    if (rank == 0)
        MPI_Psend_init(buf, PARTS, count, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, PARTS, count, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req);

    /* iteration 0: a normal one */
    where = "iteration 0";
    MPI_Start(&req);
    if (rank == 0) {
        for (int p = PARTS - 1; p >= 0; p--) {
            for (long i = p * count; i < (p + 1) * count; i++)
                buf[i] = val(0, i);
            MPI_Pready(p, req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        printf("part_peer_dies: rank 0 iteration 0 complete\n");
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (check(buf, 0, 0, PARTS, PARTS) == 0)
            printf("part_peer_dies: rank 1 iteration 0 checked (%ld ints)\n", PARTS * count);
        for (long i = 0; i < PARTS * count; i++)
            buf[i] = SENTINEL;
    }
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    /* iteration 1: half of it, then one side dies */
    where = "iteration 1, first half";
    MPI_Start(&req);
    if (rank == 0) {
        for (int p = 0; p < HALF; p++) {
            for (long i = p * count; i < (p + 1) * count; i++)
                buf[i] = val(1, i);
            MPI_Pready(p, req);
        }
        MPI_Recv(&ack, 1, MPI_INT, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (dies_sender) {
            printf("part_peer_dies: rank 0 dies in iteration 1 (%s), partitions %d-%d unreadied\n",
                   how_kill ? "SIGKILL" : "_exit(3)", HALF, PARTS - 1);
            usleep(300 * 1000);
            die();
        }
        for (int p = HALF; p < PARTS; p++) {
            for (long i = p * count; i < (p + 1) * count; i++)
                buf[i] = val(1, i);
            MPI_Pready(p, req);
        }
        printf("part_peer_dies: rank 0 waits in MPI_Wait for iteration 1\n");
        fflush(stdout);
        where = "MPI_Wait of iteration 1 (sender)";
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        printf("part_peer_dies: rank 0 MPI_Wait of iteration 1 returned (data buffered); "
               "waits for a message the receiver never sends\n");
        fflush(stdout);
        where = "MPI_Recv after iteration 1 (sender)";
        MPI_Recv(&ack, 1, MPI_INT, 1, NEVER_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("part_peer_dies: FAIL rank 0 received a message from the dead receiver\n");
    } else {
        for (int p = 0; p < HALF; p++) {
            do {
                MPI_Parrived(req, p, &flag);
            } while (!flag);
        }
        if (check(buf, 1, 0, HALF, PARTS) == 0)
            printf("part_peer_dies: rank 1 iteration 1 partitions 0-%d checked, %d-%d untouched\n",
                   HALF - 1, HALF, PARTS - 1);
        fflush(stdout);
        MPI_Send(&ack, 1, MPI_INT, 0, ACK_TAG, MPI_COMM_WORLD);
        if (!dies_sender) {
            printf("part_peer_dies: rank 1 dies in iteration 1 (%s)\n",
                   how_kill ? "SIGKILL" : "_exit(3)");
            usleep(300 * 1000);
            die();
        }
        if (wait_parrived) {
            printf("part_peer_dies: rank 1 polls MPI_Parrived(%d) of iteration 1\n", PARTS - 1);
            fflush(stdout);
            where = "MPI_Parrived loop of iteration 1 (receiver)";
            do {
                MPI_Parrived(req, PARTS - 1, &flag);
            } while (!flag);
            printf("part_peer_dies: FAIL rank 1 MPI_Parrived(%d) true, though the sender died "
                   "before readying it\n", PARTS - 1);
        } else {
            printf("part_peer_dies: rank 1 waits in MPI_Wait for iteration 1\n");
            fflush(stdout);
            where = "MPI_Wait of iteration 1 (receiver)";
            MPI_Status st;
            int err = MPI_Wait(&req, &st);
            printf("part_peer_dies: FAIL rank 1 MPI_Wait of iteration 1 returned %d (status error "
                   "%d), though the sender died before readying partitions %d-%d\n", err,
                   st.MPI_ERROR, HALF, PARTS - 1);
        }
    }
    fflush(stdout);
    _exit(0);   /* never a clean finalize: the peer is gone */
}

/* ---- the supervisor (default) ----------------------------------------------------------- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The mpiexec that started us: hydra_pmi_proxy's directory holds it. */
static void find_mpiexec(char *path, size_t len)
{
    const char *e = getenv("PART_PEER_DIES_MPIEXEC");
    char exe[PATH_MAX - 16], link[64];
    ssize_t n;

    if (e && *e) {
        snprintf(path, len, "%s", e);
        return;
    }
    snprintf(link, sizeof(link), "/proc/%d/exe", (int) getppid());
    n = readlink(link, exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(path, len, "%s/mpiexec", exe);
            if (access(path, X_OK) == 0)
                return;
        }
    }
    snprintf(path, len, "mpiexec");     /* from PATH */
}

/* The outer job's PMI and hydra variables must not reach the inner mpiexec. */
static void clean_env(void)
{
    const char *pmi_fd = getenv("PMI_FD");
    if (pmi_fd)
        close(atoi(pmi_fd));
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "PMI_", 4) == 0 || strncmp(*e, "MPI_LOCAL", 9) == 0 ||
                strncmp(*e, "HYD", 3) == 0 || strncmp(*e, "MPIEXEC_", 8) == 0) {
                char name[256];
                size_t k = strcspn(*e, "=");
                snprintf(name, sizeof(name), "%.*s", (int) k, *e);
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

static int supervise(int deadline, int nocleanup, char **child_args, int nchild_args)
{
    char mpiexec[PATH_MAX], self[PATH_MAX], timeout[32], *out = malloc(OUT_MAX + 1);
    int fds[2], status = 0, ended = 0, len = 0;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    const char *why = NULL;

    if (n <= 0 || out == NULL || pipe(fds) != 0) {
        printf("part_peer_dies: cannot set up the inner job (%s)\n", strerror(errno));
        free(out);
        return 1;
    }
    self[n] = '\0';
    find_mpiexec(mpiexec, sizeof(mpiexec));

    char *argv[32];
    int a = 0;
    argv[a++] = mpiexec;
    if (nocleanup)
        argv[a++] = "-disable-auto-cleanup";
    argv[a++] = "-n";
    argv[a++] = "2";
    argv[a++] = self;
    argv[a++] = "-child";
    for (int i = 0; i < nchild_args && a < 31; i++)
        argv[a++] = child_args[i];
    argv[a] = NULL;

    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        clean_env();
        /* a backstop behind our own deadline */
        snprintf(timeout, sizeof(timeout), "%d", deadline + 30);
        setenv("MPIEXEC_TIMEOUT", timeout, 1);
        execvp(argv[0], argv);
        printf("part_peer_dies: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        printf("part_peer_dies: fork: %s\n", strerror(errno));
        close(fds[0]);
        free(out);
        return 1;
    }

    /* read everything the job prints until it ends or the deadline passes */
    int open_fd = 1;
    while (!ended) {
        double left = deadline - (now() - t0);
        if (left <= 0)
            break;
        if (open_fd) {
            struct pollfd p = { fds[0], POLLIN, 0 };
            int ms = left > 0.2 ? 200 : (int) (left * 1000) + 1;
            if (poll(&p, 1, ms) > 0) {
                char tmp[4096];
                ssize_t r = read(fds[0], tmp, sizeof(tmp));
                if (r <= 0) {
                    open_fd = 0;
                } else {
                    int keep = (int) (r < OUT_MAX - len ? r : OUT_MAX - len);
                    memcpy(out + len, tmp, keep);
                    len += keep;
                }
            }
        } else {
            usleep(50 * 1000);
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            ended = 1;
    }
    double took = now() - t0;
    if (!ended) {
        /* a hang: hydra ends its job on SIGINT; then make sure */
        kill(pid, SIGINT);
        sleep(3);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    for (ssize_t r; open_fd && (r = read(fds[0], out + len, OUT_MAX - len)) > 0;)
        len += (int) r;     /* whatever is left (the writers are gone now) */
    out[len] = '\0';
    close(fds[0]);

    char want_dies[64], want_wait[80];
    snprintf(want_dies, sizeof(want_dies), "rank %d dies in iteration 1", dies_sender ? 0 : 1);
    if (dies_sender)
        snprintf(want_wait, sizeof(want_wait), "rank 1 %s", wait_parrived ?
                 "polls MPI_Parrived" : "waits in MPI_Wait");
    else
        snprintf(want_wait, sizeof(want_wait), "rank 0 waits in MPI_Wait");

    if (!ended)
        why = "the job did not end within the deadline (a hang; killed)";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        why = "mpiexec exited with status 0: the death went unnoticed";
    else if (strstr(out, "FAIL"))
        why = "a process reported a failure (its FAIL line below)";
    else if (strstr(out, "TIMED OUT"))
        why = "hydra's own timeout ended the job, not the death";
    else if (!strstr(out, "rank 1 iteration 0 checked") ||
             !strstr(out, "rank 0 iteration 0 complete"))
        why = "iteration 0 was not completed and checked on both ranks";
    else if (!strstr(out, "rank 1 iteration 1 partitions 0-3 checked"))
        why = "rank 1 did not check the first half of iteration 1";
    else if (!strstr(out, want_dies))
        why = "the dying rank did not announce its death";
    else if (!strstr(out, want_wait))
        why = "the surviving rank did not announce what it waits in";

    if (why) {
        printf("part_peer_dies: %s (after %.1f s; mpiexec %s %d)\n", why, took,
               WIFSIGNALED(status) ? "killed by signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        printf("part_peer_dies: the job's output:\n%s", out);
        free(out);
        return 1;
    }
    if (getenv("MPITEST_VERBOSE"))
        printf("part_peer_dies: job ended after %.1f s, mpiexec exit status %d; output:\n%s",
               took, WEXITSTATUS(status), out);
    free(out);
    printf(" No Errors\n");
    return 0;
}

int main(int argc, char **argv)
{
    int is_child = 0, deadline = 45, nocleanup = 0, nargs = 0;
    char *child_args[16];

    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int pass = 1;
        if (strcmp(s, "-child") == 0) {
            is_child = 1;
            pass = 0;
        } else if (strcmp(s, "-dies=sender") == 0) {
            dies_sender = 1;
        } else if (strcmp(s, "-dies=receiver") == 0) {
            dies_sender = 0;
        } else if (strcmp(s, "-how=kill") == 0) {
            how_kill = 1;
        } else if (strcmp(s, "-how=exit") == 0) {
            how_kill = 0;
        } else if (strcmp(s, "-wait=parrived") == 0) {
            wait_parrived = 1;
        } else if (strcmp(s, "-wait=wait") == 0) {
            wait_parrived = 0;
        } else if (strncmp(s, "-count=", 7) == 0) {
            count = atol(s + 7);
        } else if (strncmp(s, "-watchdog=", 10) == 0) {
            watchdog_s = atoi(s + 10);
        } else if (strncmp(s, "-deadline=", 10) == 0) {
            deadline = atoi(s + 10);
            pass = 0;
        } else if (strcmp(s, "-nocleanup") == 0) {
            nocleanup = 1;
            pass = 0;
        } else {
            printf("part_peer_dies: unknown argument %s\n", s);
            return 1;
        }
        if (pass && nargs < 16)
            child_args[nargs++] = argv[i];
    }
    if (count < 1 || watchdog_s < 1 || deadline <= watchdog_s) {
        printf("part_peer_dies: need -count >= 1, -watchdog >= 1, -deadline > -watchdog\n");
        return 1;
    }
    if (is_child)
        return child(argc, argv);
    return supervise(deadline, nocleanup, child_args, nargs);
}
