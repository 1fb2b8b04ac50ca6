/*
 * part_badinput.c: bad input to the partitioned calls (2 processes; issue 12). Completes
 * part_errors.c, which covers out-of-range MPI_Pready*, a partition readied twice, inactive
 * and receive requests, MPI_PROC_NULL, the info key and size mismatches.
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD (the handler of MPI_Pready* and MPI_Parrived),
 * MPI_COMM_SELF and every communicator used. Every error is checked by its CLASS and by its
 * MESSAGE: MPI_Error_string must name the problem (a substring such as the argument's name,
 * looked for in the lines of the error stack below its first line, leaving out the lines
 * that only echo the call, "MPI_Psend_init(buf=..., partitions=...) failed"). Every receive
 * buffer has guard bytes before and after it; they are checked when the buffer is freed
 * and no process may crash or hang (every wait has a deadline that aborts with a message).
 * What it asserts:
 * - MPI_Psend_init / MPI_Precv_init: partitions -1 and INT_MIN -> MPI_ERR_ARG naming
 *   "partitions"; count -1 -> MPI_ERR_COUNT ("count"); MPI_COMM_NULL -> MPI_ERR_COMM
 *   ("communicator"); peer = size and -5 -> MPI_ERR_RANK ("rank"); tag -3 and MPI_TAG_UB + 1
 *   -> MPI_ERR_TAG ("tag"); a NULL request pointer -> MPI_ERR_ARG ("request"); MPI_ANY_SOURCE
 *   and MPI_ANY_TAG in MPI_Precv_init (and MPI_Psend_init) -> MPI_ERR_RANK / MPI_ERR_TAG (not
 *   allowed for partitioned communication; MPICH's binding checks them as for a send); an
 *   uncommitted derived datatype -> MPI_ERR_TYPE ("committed"); a datatype committed and
 *   freed before the call (the handle is then MPI_DATATYPE_NULL) -> MPI_ERR_TYPE
 *   ("datatype"). Each failing init returns no request and sends nothing: afterwards a
 *   correct pair on the same tag transfers correct data.
 * - Sizes beyond what the engine can represent, called symmetrically (each process both a
 *   Psend_init to and a Precv_init from the other, so nothing waits for a peer):
 *   (a) partitions INT_MAX/2, count 8, MPI_INT: 2^33 elements > INT_MAX but 34 GB fits
 *   MPI_Aint, and the buffer exists (an untouched MAP_NORESERVE mapping), so this is legal
 *   MPI and may succeed (or fail cleanly with a message); either way no crash, no hang, the
 *   resident size grows by less than 512 MiB, and the requests free cleanly without a
 *   start; (b) count 2^62+1 of MPI_INT x 4 partitions (2^64+16 bytes) and (c) count 2^31 of
 *   a 2^30-double contiguous type x 2 partitions (2^65 bytes) must fail with MPI_ERR_COUNT
 *   and a message saying the size overflows (the engine checks partitions x count x size
 *   and x extent; before it did, the byte count wrapped around in 64 bits, to 16 and 0).
 * - MPI_Pready_list: a duplicate entry ({0,2,0}: the second 0 -> MPI_ERR_ARG "already marked
 *   ready", the iteration completes once 1 and 3 are readied); a duplicate in the middle
 *   ({1,1,3}, then 0, 2 and 3 readied: 3 may then be reported as readied twice, both answers
 *   are accepted); out-of-range entries ({0,-1}, {1,4}, {INT_MIN}) -> MPI_ERR_ARG
 *   ("partition") and ready nothing (a following MPI_Pready_range(0,3) succeeds); length 0
 *   (with an array and with NULL) succeeds and readies nothing (MPI_Test stays false);
 *   length -1 -> MPI_ERR_ARG ("length"). Run in the first iteration (before the plan) and
 *   in a later one (planned).
 * - MPI_Pready_range: low > high -> MPI_ERR_ARG ("range"); low -1, high = partitions,
 *   (INT_MIN, INT_MAX) -> MPI_ERR_ARG ("partition"); none of them readies anything.
 * - MPI_Parrived: partition -1, partitions and INT_MIN on an active receive -> MPI_ERR_ARG
 *   ("partition"); a NULL flag pointer -> MPI_ERR_ARG ("flag") on an active request, an
 *   inactive one and MPI_REQUEST_NULL.
 * - MPI_Startall with one partitioned request twice, {a, a} and {a, b, a} (first iteration
 *   and a later one) -> MPI_ERR_REQUEST ("twice") and nothing started: MPI_Startall({a, b})
 *   then succeeds and completes with correct data on both, and so do the next iterations
 *   (MPI_Start, MPI_Startall of one request).
 * - A buffer at an address whose low 32 bits are all ones (2 partitions of one byte, a
 *   fixed mapping): MPI_Start and MPI_Startall start it and the bytes arrive (MPICH's
 *   MPID_Startall took it for an MPI_PROC_NULL persistent request and skipped it).
 * - Wrong request kinds: MPI_Pready/_range/_list on an active MPI_Isend request and on an
 *   MPI_Send_init request (inactive and active) -> MPI_ERR_REQUEST ("partitioned send
 *   request"); MPI_Parrived on an MPI_Irecv request, an MPI_Recv_init request (inactive,
 *   active) and an MPI_Isend request -> MPI_ERR_REQUEST ("partitioned receive request");
 *   the point-to-point transfers still complete with correct data.
 * - A derived datatype freed after MPI_Psend_init / MPI_Precv_init while the requests live:
 *   every iteration transfers correct data (a strided vector: the holes of the receive
 *   buffer stay untouched).
 * - A communicator freed while partitioned operations on it live (one pair freed during an
 *   active iteration, one pair never started before the free): all iterations complete
 *   with correct data and MPI_Request_free succeeds.
 * - Finally no user-visible message is left on the communicator.
 * Argument -v prints every error's class and message (rank 0).
 */

#define _GNU_SOURCE     /* strcasestr */
#include "mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include "mpitest.h"

/* Under AddressSanitizer (maint/sanitize.sh) the resident-size bound below is not checked:
 * ASan writes the shadow (1 byte per 8) of every large heap block when it maps it, so the
 * sender's untouched per-partition flags (4 bytes x INT_MAX/2) alone raise the peak resident
 * size by 512 MiB. The normal builds check the bound. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_BOUND_CHECKED 0
#endif
#endif
#ifndef RSS_BOUND_CHECKED
#define RSS_BOUND_CHECKED 1
#endif

static int rank, size, errs = 0, verbose = 0;     /* -v: print every error's message */
static MPI_Comm comm;

/* ---- helpers ---------------------------------------------------------------------------- */

static void pair_sync(void)
{
    int peer = 1 - rank, a = 0, b;
    MPI_Sendrecv(&a, 1, MPI_INT, peer, 999, &b, 1, MPI_INT, peer, 999, comm, MPI_STATUS_IGNORE);
}

static const char *class_name(int cls)
{
    static char s[MPI_MAX_ERROR_STRING];
    int len;
    switch (cls) {
        case MPI_SUCCESS:
            return "MPI_SUCCESS";
        case MPI_ERR_ARG:
            return "MPI_ERR_ARG";
        case MPI_ERR_REQUEST:
            return "MPI_ERR_REQUEST";
        case MPI_ERR_COUNT:
            return "MPI_ERR_COUNT";
        case MPI_ERR_TYPE:
            return "MPI_ERR_TYPE";
        case MPI_ERR_COMM:
            return "MPI_ERR_COMM";
        case MPI_ERR_RANK:
            return "MPI_ERR_RANK";
        case MPI_ERR_TAG:
            return "MPI_ERR_TAG";
        case MPI_ERR_OTHER:
            return "MPI_ERR_OTHER";
        case MPI_ERR_BUFFER:
            return "MPI_ERR_BUFFER";
        case MPI_ERR_TRUNCATE:
            return "MPI_ERR_TRUNCATE";
    }
    MPI_Error_string(cls, s, &len);
    return s;
}

static int err_class(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

/* The part of the error string that names the problem: the lines below the first (the class
 * text and "error stack:"), without those that echo the failed call ("...) failed"). A
 * string without a stack is taken whole. Returns 1 if any '|'-separated needle is found
 * (case-insensitively). */
static int msg_names(int err, const char *needles, char *msg)
{
    int len;
    char text[MPI_MAX_ERROR_STRING + 1], body[MPI_MAX_ERROR_STRING + 1] = "", alt[128];

    msg[0] = '\0';
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
        return 0;
    text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = '\0';
    strcpy(msg, text);
    char *nl = strchr(text, '\n');
    if (nl == NULL) {
        strcpy(body, text);
    } else {
        for (char *line = nl + 1; line && *line;) {
            char *end = strchr(line, '\n');
            if (end)
                *end = '\0';
            size_t n = strlen(line);
            while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\r'))
                n--;
            if (!(n >= 7 && strncmp(line + n - 7, ") failed", 7) == 0) &&
                !(n >= 6 && strncmp(line + n - 6, "failed", 6) == 0 && strchr(line, '(')))
                strncat(body, line, sizeof(body) - strlen(body) - 2), strcat(body, "\n");
            line = end ? end + 1 : NULL;
        }
    }
    for (const char *p = needles; *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t) (bar - p) : strlen(p);
        if (n >= sizeof(alt))
            n = sizeof(alt) - 1;
        memcpy(alt, p, n);
        alt[n] = '\0';
        if (n > 0 && strcasestr(body, alt))
            return 1;
        p += n + (bar ? 1 : 0);
    }
    return 0;
}

/* err must be of class cls and its message must name one of needles (NULL: no check). */
static void expect(int err, int cls, const char *needles, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int c = err_class(err);
    if (c != cls) {
        fprintf(stderr, "rank %d: %s returned class %s, expected %s\n", rank, what,
                class_name(c), class_name(cls));
        if (err != MPI_SUCCESS) {
            msg_names(err, "", msg);
            fprintf(stderr, "rank %d:   its message: %s\n", rank, msg);
        }
        errs++;
        return;
    }
    if (err != MPI_SUCCESS && needles && !msg_names(err, needles, msg)) {
        fprintf(stderr, "rank %d: %s: message does not name the problem (\"%s\"): %s\n", rank,
                what, needles, msg);
        errs++;
    } else if (verbose && err != MPI_SUCCESS && rank == 0) {
        msg_names(err, "", msg);
        printf("%s -> %s: %s\n", what, class_name(c), msg);
    }
}

/* err must be one of classes[] (terminated by -1) and its message must name needles */
static void expect_any(int err, const int *classes, const char *needles, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int c = err_class(err), ok = 0;
    for (int i = 0; classes[i] >= 0; i++)
        ok |= (c == classes[i]);
    if (!ok) {
        char list[200] = "";
        for (int i = 0; classes[i] >= 0; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), " %s",
                     class_name(classes[i]));
        fprintf(stderr, "rank %d: %s returned class %s, expected one of%s\n", rank, what,
                class_name(c), list);
        errs++;
        return;
    }
    if (err != MPI_SUCCESS && !msg_names(err, needles, msg)) {
        fprintf(stderr, "rank %d: %s: message does not name the problem (\"%s\"): %s\n", rank,
                what, needles, msg);
        errs++;
    } else if (verbose && rank == 0) {
        msg_names(err, "", msg);
        printf("%s -> %s: %s\n", what, class_name(c), msg);
    }
}

/* MPI_Wait with a deadline: a hang becomes a failure with a message */
static int wait_deadline(MPI_Request * req, MPI_Status * st, double secs, const char *what)
{
    int flag = 0, err;
    double t0 = MPI_Wtime();
    for (;;) {
        err = MPI_Test(req, &flag, st);
        if (err != MPI_SUCCESS || flag)
            return err;
        if (MPI_Wtime() - t0 > secs) {
            fprintf(stderr, "rank %d: %s: not complete after %.0f s (hang)\n", rank, what, secs);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static int val(int tag, int iter, int i)
{
    return 1 + tag * 10007 + iter * 101 + i;
}

static void fill(int *buf, int n, int tag, int iter)
{
    for (int i = 0; i < n; i++)
        buf[i] = val(tag, iter, i);
}

static void check(const int *buf, int n, int tag, int iter, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (buf[i] != val(tag, iter, i)) {
            if (bad < 5)
                fprintf(stderr, "rank %d: %s iter %d: buf[%d] = %d, expected %d\n", rank, what,
                        iter, i, buf[i], val(tag, iter, i));
            bad++;
        }
    errs += bad;
}

/* ---- guarded buffers: GUARD bytes of 0xA5 before and after the user's bytes ------------- */

#define GUARD 256
#define GUARD_BYTE 0xA5
#define MAX_GBUFS 64

static struct {
    unsigned char *base;
    size_t n;
    const char *what;
} gbufs[MAX_GBUFS];

static void *galloc(size_t n, const char *what)
{
    unsigned char *base = malloc(n + 2 * GUARD);
    if (base == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(base, GUARD_BYTE, GUARD);
    memset(base + GUARD, 0, n);
    memset(base + GUARD + n, GUARD_BYTE, GUARD);
    for (int i = 0; i < MAX_GBUFS; i++)
        if (gbufs[i].base == NULL) {
            gbufs[i].base = base;
            gbufs[i].n = n;
            gbufs[i].what = what;
            return base + GUARD;
        }
    fprintf(stderr, "rank %d: too many guarded buffers\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return NULL;
}

static void gcheck_slot(int i)
{
    unsigned char *b = gbufs[i].base;
    for (size_t k = 0; k < GUARD; k++) {
        if (b[k] != GUARD_BYTE) {
            fprintf(stderr, "rank %d: %s: guard byte %d before the buffer overwritten\n", rank,
                    gbufs[i].what, (int) (GUARD - k));
            errs++;
            break;
        }
    }
    for (size_t k = 0; k < GUARD; k++) {
        if (b[GUARD + gbufs[i].n + k] != GUARD_BYTE) {
            fprintf(stderr, "rank %d: %s: guard byte %d after the buffer overwritten\n", rank,
                    gbufs[i].what, (int) k);
            errs++;
            break;
        }
    }
}

static void gfree(void *p)
{
    for (int i = 0; i < MAX_GBUFS; i++)
        if (gbufs[i].base && gbufs[i].base + GUARD == (unsigned char *) p) {
            gcheck_slot(i);
            free(gbufs[i].base);
            gbufs[i].base = NULL;
            return;
        }
    fprintf(stderr, "rank %d: gfree of an unknown buffer\n", rank);
    errs++;
}

static void gcheck_all(void)
{
    for (int i = 0; i < MAX_GBUFS; i++)
        if (gbufs[i].base)
            gcheck_slot(i);
}

/* A partitioned init that was expected to fail: it must not have returned a request. If it
 * did succeed (already counted as a failure), free what it returned. */
static void no_request(int err, MPI_Request * req, const char *what)
{
    if (err == MPI_SUCCESS) {
        if (*req != MPI_REQUEST_NULL)
            MPI_Request_free(req);
    } else if (*req != MPI_REQUEST_NULL && *req != (MPI_Request) 0x7eadbeef) {
        fprintf(stderr, "rank %d: %s failed but wrote a request handle 0x%x\n", rank, what,
                (unsigned) *req);
        errs++;
    }
}

/* After failing inits on tag: a correct pair on the same tag (the other geometry) gets the
 * right data, so nothing of the failed calls reached the peer. */
static void verify_tag(int tag, const char *what)
{
    int *sbuf = galloc(48 * sizeof(int), "verify send buffer");
    int *rbuf = galloc(48 * sizeof(int), "verify receive buffer");
    MPI_Request sreq, rreq;
    char w[200];

    expect(MPI_Psend_init(sbuf, 3, 16, MPI_INT, 1 - rank, tag, comm, MPI_INFO_NULL, &sreq),
           MPI_SUCCESS, NULL, "MPI_Psend_init (verification)");
    expect(MPI_Precv_init(rbuf, 6, 8, MPI_INT, 1 - rank, tag, comm, MPI_INFO_NULL, &rreq),
           MPI_SUCCESS, NULL, "MPI_Precv_init (verification)");
    for (int it = 0; it < 2; it++) {
        fill(sbuf, 48, tag, it);
        memset(rbuf, 0, 48 * sizeof(int));
        MPI_Start(&rreq);
        MPI_Start(&sreq);
        MPI_Pready_range(0, 2, sreq);
        snprintf(w, sizeof(w), "verification transfer on tag %d after %s", tag, what);
        expect(wait_deadline(&sreq, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        expect(wait_deadline(&rreq, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        check(rbuf, 48, tag, it, w);
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    gfree(sbuf);
    gfree(rbuf);
    pair_sync();
}

/* ---- bad arguments to MPI_Psend_init / MPI_Precv_init ------------------------------------ */

/* both calls of one process with the given arguments; expect class cls, message needles */
static void both_inits(void *buf, int parts, MPI_Count count, MPI_Datatype dt, int peer,
                       int tag, MPI_Comm c, MPI_Request * reqp, int cls, const char *needles,
                       const char *what)
{
    char w[256];
    MPI_Request req;
    int err;

    req = (MPI_Request) 0x7eadbeef;
    snprintf(w, sizeof(w), "MPI_Psend_init with %s", what);
    err = MPI_Psend_init(buf, parts, count, dt, peer, tag, c, MPI_INFO_NULL,
                         reqp ? &req : NULL);
    expect(err, cls, needles, w);
    no_request(err, &req, w);

    req = (MPI_Request) 0x7eadbeef;
    snprintf(w, sizeof(w), "MPI_Precv_init with %s", what);
    err = MPI_Precv_init(buf, parts, count, dt, peer, tag, c, MPI_INFO_NULL,
                         reqp ? &req : NULL);
    expect(err, cls, needles, w);
    no_request(err, &req, w);
}

static void init_errors(void)
{
    const int tag = 10;
    int peer = 1 - rank, *tag_ub, flag = 0;
    int *buf = galloc(64 * sizeof(int), "init-error buffer");
    MPI_Request dummy;
    MPI_Datatype vec, freed;

    both_inits(buf, -1, 8, MPI_INT, peer, tag, comm, &dummy, MPI_ERR_ARG, "partitions",
               "partitions = -1");
    both_inits(buf, INT_MIN, 8, MPI_INT, peer, tag, comm, &dummy, MPI_ERR_ARG, "partitions",
               "partitions = INT_MIN");
    both_inits(buf, 4, -1, MPI_INT, peer, tag, comm, &dummy, MPI_ERR_COUNT, "count",
               "count = -1");
    both_inits(buf, 4, 8, MPI_INT, peer, tag, MPI_COMM_NULL, &dummy, MPI_ERR_COMM,
               "communicator", "MPI_COMM_NULL");
    both_inits(buf, 4, 8, MPI_INT, size, tag, comm, &dummy, MPI_ERR_RANK, "rank",
               "peer rank = size");
    both_inits(buf, 4, 8, MPI_INT, -5, tag, comm, &dummy, MPI_ERR_RANK, "rank",
               "peer rank = -5");
    both_inits(buf, 4, 8, MPI_INT, peer, -3, comm, &dummy, MPI_ERR_TAG, "tag", "tag = -3");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && *tag_ub < INT_MAX)
        both_inits(buf, 4, 8, MPI_INT, peer, *tag_ub + 1, comm, &dummy, MPI_ERR_TAG, "tag",
                   "tag = MPI_TAG_UB + 1");
    both_inits(buf, 4, 8, MPI_INT, peer, tag, comm, NULL, MPI_ERR_ARG, "request",
               "a NULL request pointer");
    /* not allowed for partitioned communication (MPI 4.0 section 4.2.2: "MPI_ANY_SOURCE and
     * MPI_ANY_TAG are not permitted"); MPICH's binding checks source and tag as for a send */
    both_inits(buf, 4, 8, MPI_INT, MPI_ANY_SOURCE, tag, comm, &dummy, MPI_ERR_RANK, "rank",
               "MPI_ANY_SOURCE");
    both_inits(buf, 4, 8, MPI_INT, peer, MPI_ANY_TAG, comm, &dummy, MPI_ERR_TAG, "tag",
               "MPI_ANY_TAG");

    /* an uncommitted derived datatype */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    both_inits(buf, 4, 2, vec, peer, tag, comm, &dummy, MPI_ERR_TYPE, "commit",
               "an uncommitted derived datatype");
    MPI_Type_free(&vec);

    /* committed, then freed before the call: the handle is MPI_DATATYPE_NULL now */
    MPI_Type_contiguous(2, MPI_INT, &freed);
    MPI_Type_commit(&freed);
    MPI_Type_free(&freed);
    both_inits(buf, 4, 2, freed, peer, tag, comm, &dummy, MPI_ERR_TYPE, "datatype",
               "a datatype freed before the call (MPI_DATATYPE_NULL)");

    gfree(buf);
    pair_sync();
    verify_tag(tag, "failed MPI_Psend_init/MPI_Precv_init calls");
}

/* ---- sizes the engine cannot represent -------------------------------------------------- */

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Psend_init to the peer and Precv_init from it with the same arguments (symmetric). With
 * must_fail, both must fail with one of the classes and a message naming the problem;
 * otherwise success is allowed too (then the requests are freed without a start). */
static void huge_pair(void *buf, int parts, MPI_Count count, MPI_Datatype dt, int tag,
                      int must_fail, const char *what)
{
    static const int classes[] = { MPI_ERR_COUNT, -1 };     /* **partoverflow */
    static const int classes_ok[] = { MPI_SUCCESS, MPI_ERR_COUNT, MPI_ERR_ARG, MPI_ERR_OTHER,
        -1
    };
    const char *needles = "overflow";
    MPI_Request sreq = MPI_REQUEST_NULL, rreq = MPI_REQUEST_NULL;
    char w[256];
    long rss0 = max_rss_kib(), grown;
    int serr, rerr;

    serr = MPI_Psend_init(buf, parts, count, dt, 1 - rank, tag, comm, MPI_INFO_NULL, &sreq);
    snprintf(w, sizeof(w), "MPI_Psend_init with %s", what);
    expect_any(serr, must_fail ? classes : classes_ok, needles, w);
    rerr = MPI_Precv_init(buf, parts, count, dt, 1 - rank, tag, comm, MPI_INFO_NULL, &rreq);
    snprintf(w, sizeof(w), "MPI_Precv_init with %s", what);
    expect_any(rerr, must_fail ? classes : classes_ok, needles, w);

    /* let the handshake (if any) run, then free without a start */
    pair_sync();
    if (serr == MPI_SUCCESS && sreq != MPI_REQUEST_NULL)
        expect(MPI_Request_free(&sreq), MPI_SUCCESS, NULL, "MPI_Request_free (huge send)");
    if (rerr == MPI_SUCCESS && rreq != MPI_REQUEST_NULL)
        expect(MPI_Request_free(&rreq), MPI_SUCCESS, NULL, "MPI_Request_free (huge receive)");
    pair_sync();
    grown = max_rss_kib() - rss0;
    if (RSS_BOUND_CHECKED && grown > 512 * 1024) {
        fprintf(stderr, "rank %d: %s: resident size grew by %ld MiB\n", rank, what,
                grown / 1024);
        errs++;
    }
}

static void overflow(void)
{
    int *buf = galloc(64 * sizeof(int), "overflow buffer");
    MPI_Datatype big;

    /* (a) 2^33 elements of MPI_INT: beyond int, within MPI_Aint. The 34 GB buffer really
     * exists (address space only, never touched), so the call is legal MPI. */
    size_t abytes = (size_t) (INT_MAX / 2) * 8 * sizeof(int);
    void *abuf = mmap(NULL, abytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (abuf != MAP_FAILED) {
        huge_pair(abuf, INT_MAX / 2, 8, MPI_INT, 20, 0,
                  "partitions = INT_MAX/2, count = 8, MPI_INT (34 GB)");
        munmap(abuf, abytes);
    } else {
        pair_sync();    /* no 34 GB of address space here: the case is skipped */
    }
    /* (b) 4 x (2^62 + 1) x 4 bytes = 2^64 + 16 bytes: wraps to 16 in 64 bits */
    huge_pair(buf, 4, ((MPI_Count) 1 << 62) + 1, MPI_INT, 21, 1,
              "partitions = 4, count = 2^62 + 1, MPI_INT (2^64 + 16 bytes)");
    /* (c) a contiguous type of 2^30 doubles (8 GiB), count 2^31, 2 partitions: 2^65 bytes
     * (wraps to 0 in 64 bits) */
    MPI_Type_contiguous(1 << 30, MPI_DOUBLE, &big);
    MPI_Type_commit(&big);
    huge_pair(buf, 2, (MPI_Count) 1 << 31, big, 22, 1,
              "partitions = 2, count = 2^31 of an 8 GiB type (2^65 bytes)");
    MPI_Type_free(&big);
    gfree(buf);

    verify_tag(20, "the INT_MAX/2-partition requests");
    verify_tag(21, "the count 2^62 + 1 requests");
    verify_tag(22, "the 8 GiB-type requests");
}

/* ---- MPI_Pready_list / MPI_Pready_range / MPI_Parrived errors --------------------------- */

#define NP 4            /* partitions */
#define PC 8            /* ints per partition */
#define NITER 6

static void pready_errors(void)
{
    const int tag = 30;
    int *buf, flag, err;
    MPI_Request req;
    char w[200];

    if (rank == 0) {
        buf = galloc(NP * PC * sizeof(int), "pready send buffer");
        MPI_Psend_init(buf, NP, PC, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        for (int it = 0; it < NITER; it++) {
            fill(buf, NP * PC, tag, it);
            MPI_Start(&req);
            switch (it) {
                case 0:
                case 4:{
                        /* a duplicate at the end of the list: 0 and 2 readied, error on the
                         * second 0; then 1 and 3 complete the iteration */
                        int l[3] = { 0, 2, 0 }, rest[2] = { 1, 3 };
                        snprintf(w, sizeof(w), "MPI_Pready_list({0,2,0}) (iteration %d)", it);
                        expect(MPI_Pready_list(3, l, req), MPI_ERR_ARG,
                               "already marked ready|twice", w);
                        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                        if (flag) {
                            fprintf(stderr, "send complete with partitions 1 and 3 unready\n");
                            errs++;
                            MPI_Abort(MPI_COMM_WORLD, 1);
                        }
                        expect(MPI_Pready_list(2, rest, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_list({1,3}) after the duplicate");
                        break;
                    }
                case 1:
                case 5:{
                        /* a duplicate in the middle: the engine may or may not have readied
                         * the entry after it (MPI leaves the state after an error open) */
                        int l[3] = { 1, 1, 3 }, rest[2] = { 0, 2 };
                        snprintf(w, sizeof(w), "MPI_Pready_list({1,1,3}) (iteration %d)", it);
                        expect(MPI_Pready_list(3, l, req), MPI_ERR_ARG,
                               "already marked ready|twice", w);
                        expect(MPI_Pready_list(2, rest, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_list({0,2}) after the duplicate");
                        err = MPI_Pready(3, req);
                        if (err_class(err) == MPI_ERR_ARG)
                            expect(err, MPI_ERR_ARG, "already marked ready|twice",
                                   "MPI_Pready(3) after MPI_Pready_list({1,1,3})");
                        else
                            expect(err, MPI_SUCCESS, NULL,
                                   "MPI_Pready(3) after MPI_Pready_list({1,1,3})");
                        break;
                    }
                case 2:{
                        /* out-of-range entries: an error, nothing readied */
                        int l1[2] = { 0, -1 }, l2[2] = { 1, NP }, l3[1] = { INT_MIN };
                        expect(MPI_Pready_list(2, l1, req), MPI_ERR_ARG, "partition",
                               "MPI_Pready_list({0,-1})");
                        expect(MPI_Pready_list(2, l2, req), MPI_ERR_ARG, "partition",
                               "MPI_Pready_list({1,partitions})");
                        expect(MPI_Pready_list(1, l3, req), MPI_ERR_ARG, "partition",
                               "MPI_Pready_list({INT_MIN})");
                        /* bad ranges: an error, nothing readied */
                        expect(MPI_Pready_range(2, 1, req), MPI_ERR_ARG, "range",
                               "MPI_Pready_range(2, 1) (low > high)");
                        expect(MPI_Pready_range(-1, 2, req), MPI_ERR_ARG, "partition",
                               "MPI_Pready_range(-1, 2)");
                        expect(MPI_Pready_range(0, NP, req), MPI_ERR_ARG, "partition",
                               "MPI_Pready_range(0, partitions)");
                        expect(MPI_Pready_range(INT_MIN, INT_MAX, req), MPI_ERR_ARG,
                               "partition", "MPI_Pready_range(INT_MIN, INT_MAX)");
                        expect(MPI_Pready_range(NP - 1, 0, req), MPI_ERR_ARG, "range",
                               "MPI_Pready_range(partitions - 1, 0)");
                        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                        if (flag) {
                            fprintf(stderr, "send complete after erroneous calls only\n");
                            errs++;
                            MPI_Abort(MPI_COMM_WORLD, 1);
                        }
                        expect(MPI_Pready_range(0, NP - 1, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_range(0, 3) after erroneous lists and ranges "
                               "(MPI_ERR_ARG here: an erroneous call readied a partition)");
                        break;
                    }
                case 3:{
                        /* length 0 succeeds and readies nothing; length -1 fails */
                        int l[1] = { 0 };
                        expect(MPI_Pready_list(0, l, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_list(0, array)");
                        expect(MPI_Pready_list(0, NULL, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_list(0, NULL)");
                        expect(MPI_Pready_list(-1, l, req), MPI_ERR_ARG, "length",
                               "MPI_Pready_list(-1, array)");
                        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                        if (flag) {
                            fprintf(stderr, "send complete after MPI_Pready_list of length "
                                    "0 and -1 only\n");
                            errs++;
                            MPI_Abort(MPI_COMM_WORLD, 1);
                        }
                        expect(MPI_Pready_range(0, NP - 1, req), MPI_SUCCESS, NULL,
                               "MPI_Pready_range(0, 3) after lists of length 0 and -1");
                        break;
                    }
            }
            snprintf(w, sizeof(w), "MPI_Wait (send, iteration %d)", it);
            expect(wait_deadline(&req, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        }
        MPI_Request_free(&req);
        gfree(buf);
    } else {
        buf = galloc(NP * PC * sizeof(int), "pready receive buffer");
        MPI_Precv_init(buf, NP, PC, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        expect(MPI_Parrived(req, 0, NULL), MPI_ERR_ARG, "flag",
               "MPI_Parrived(inactive request, 0, NULL)");
        for (int it = 0; it < NITER; it++) {
            memset(buf, 0, NP * PC * sizeof(int));
            MPI_Start(&req);
            if (it == 0 || it == 3) {
                expect(MPI_Parrived(req, -1, &flag), MPI_ERR_ARG, "partition",
                       "MPI_Parrived(-1)");
                expect(MPI_Parrived(req, NP, &flag), MPI_ERR_ARG, "partition",
                       "MPI_Parrived(partitions)");
                expect(MPI_Parrived(req, INT_MIN, &flag), MPI_ERR_ARG, "partition",
                       "MPI_Parrived(INT_MIN)");
                expect(MPI_Parrived(req, 0, NULL), MPI_ERR_ARG, "flag",
                       "MPI_Parrived(active request, 0, NULL)");
            }
            snprintf(w, sizeof(w), "MPI_Wait (receive, iteration %d)", it);
            expect(wait_deadline(&req, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
            snprintf(w, sizeof(w), "data after the sender's erroneous MPI_Pready* calls");
            check(buf, NP * PC, tag, it, w);
        }
        MPI_Request_free(&req);
        gfree(buf);
    }
    pair_sync();
}

/* ---- MPI_Startall with one request twice ------------------------------------------------ */

/* MPI_Startall naming the same partitioned request twice -> MPI_ERR_REQUEST naming the
 * request "twice", and nothing starts (maint/patches/0013: MPICH's binding checks each
 * entry for "active" before any starts, which a duplicate passes). Arrays {a, a} and
 * {a, b, a} with b a second operation of the pair, in the first iteration (before the plan)
 * and in a later one. Proof that nothing started: MPI_Startall({a, b}) then succeeds (an
 * active entry would fail the binding's check), and the iteration it starts completes with
 * correct data on both; other iterations use MPI_Start and MPI_Startall of one request. */
static void startall_twice(void)
{
    const int tag = 50, n = NP * PC;
    char w[200];
    int *buf = galloc(n * sizeof(int), "startall buffer");
    int *bufb = galloc(n * sizeof(int), "startall buffer b");
    MPI_Request req, reqb, arr[3];

    if (rank == 0) {
        MPI_Psend_init(buf, NP, PC, MPI_INT, 1, tag, comm, MPI_INFO_NULL, &req);
        MPI_Psend_init(bufb, NP, PC, MPI_INT, 1, tag + 1, comm, MPI_INFO_NULL, &reqb);
    } else {
        MPI_Precv_init(buf, NP, PC, MPI_INT, 0, tag, comm, MPI_INFO_NULL, &req);
        MPI_Precv_init(bufb, NP, PC, MPI_INT, 0, tag + 1, comm, MPI_INFO_NULL, &reqb);
    }
    for (int it = 0; it < 6; it++) {
        int twice = it == 0 || it == 3;
        if (rank == 0) {
            fill(buf, n, tag, it);
            fill(bufb, n, tag + 1, it);
        } else {
            memset(buf, 0, n * sizeof(int));
            memset(bufb, 0, n * sizeof(int));
        }
        if (twice) {
            arr[0] = arr[1] = req;
            snprintf(w, sizeof(w), "MPI_Startall({a, a}) (iteration %d)", it);
            expect(MPI_Startall(2, arr), MPI_ERR_REQUEST, "twice", w);
            arr[0] = arr[2] = req;
            arr[1] = reqb;
            snprintf(w, sizeof(w), "MPI_Startall({a, b, a}) (iteration %d)", it);
            expect(MPI_Startall(3, arr), MPI_ERR_REQUEST, "twice", w);
            arr[0] = req;
            arr[1] = reqb;
            snprintf(w, sizeof(w), "MPI_Startall({a, b}) after the refused ones (iteration %d)",
                     it);
            expect(MPI_Startall(2, arr), MPI_SUCCESS, NULL, w);
        } else if (it == 4) {
            arr[0] = req;
            expect(MPI_Startall(1, arr), MPI_SUCCESS, NULL, "MPI_Startall of one request");
        } else {
            expect(MPI_Start(&req), MPI_SUCCESS, NULL, "MPI_Start");
        }
        if (rank == 0) {
            expect(MPI_Pready_range(0, NP - 1, req), MPI_SUCCESS, NULL,
                   "MPI_Pready_range after MPI_Startall");
            if (twice)
                expect(MPI_Pready_range(0, NP - 1, reqb), MPI_SUCCESS, NULL,
                       "MPI_Pready_range of b after MPI_Startall");
        }
        snprintf(w, sizeof(w), "MPI_Wait after MPI_Startall (iteration %d)", it);
        expect(wait_deadline(&req, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        if (twice) {
            snprintf(w, sizeof(w), "MPI_Wait of b after MPI_Startall (iteration %d)", it);
            expect(wait_deadline(&reqb, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        }
        if (rank == 1) {
            check(buf, n, tag, it, "data after MPI_Startall with one request twice");
            if (twice)
                check(bufb, n, tag + 1, it, "data of b after MPI_Startall with one request twice");
        }
    }
    MPI_Request_free(&req);
    MPI_Request_free(&reqb);
    gfree(bufb);
    gfree(buf);
    pair_sync();
}

/* ---- a buffer at an address whose low 32 bits are all ones ------------------------------ */

/* MPICH's MPID_Startall (which MPI_Start calls too) reads the persistent point-to-point
 * field "rank" of every request before it looks at its kind, and skips the request when
 * it is MPI_PROC_NULL (-1); for a partitioned request those bytes are the low half of the
 * buffer's address, so a buffer at 0x....ffffffff was never started (the send's MPI_Pready
 * then failed: inactive; the receive completed at once with nothing). 2 partitions of one
 * byte at such an address (a fixed mapping), 3 iterations (MPI_Start, MPI_Startall, and
 * MPI_Start), the byte checked each time. */
static void low_half_ones(void)
{
    const int tag = 60;
    char w[200];
    char *map = MAP_FAILED, *p = NULL;
    /* an address in user space whose low 32 bits are all ones, in two free pages */
    for (uintptr_t hi = 0x7e00; hi > 0x7000 && map == MAP_FAILED; hi -= 0x40) {
        uintptr_t want = (hi << 32) | 0xffffffffu;
        map = mmap((void *) (want - 4095), 8192, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (map != MAP_FAILED && map != (char *) (want - 4095)) {
            munmap(map, 8192);  /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
            map = MAP_FAILED;
        }
        p = (char *) want;
    }
    if (map == MAP_FAILED) {
        fprintf(stderr, "rank %d: no mapping at an address ending in 0xffffffff\n", rank);
        errs++;
        pair_sync();
        return;
    }
    MPI_Request req;
    int err = rank == 0 ?
        MPI_Psend_init(p, 2, 1, MPI_BYTE, 1, tag, comm, MPI_INFO_NULL, &req) :
        MPI_Precv_init(p, 2, 1, MPI_BYTE, 0, tag, comm, MPI_INFO_NULL, &req);
    expect(err, MPI_SUCCESS, NULL, "init with a buffer at 0x....ffffffff");
    for (int it = 0; it < 3; it++) {
        p[0] = rank == 0 ? (char) ('a' + it) : 0;
        p[1] = rank == 0 ? (char) ('A' + it) : 0;
        snprintf(w, sizeof(w), "%s of a request whose buffer is at %p (iteration %d)",
                 it == 1 ? "MPI_Startall" : "MPI_Start", (void *) p, it);
        expect(it == 1 ? MPI_Startall(1, &req) : MPI_Start(&req), MPI_SUCCESS, NULL, w);
        if (rank == 0)
            expect(MPI_Pready_range(0, 1, req), MPI_SUCCESS, NULL, w);
        expect(wait_deadline(&req, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        if (rank == 1 && (p[0] != (char) ('a' + it) || p[1] != (char) ('A' + it))) {
            fprintf(stderr, "rank 1: %s: received %d %d, expected %d %d\n", w, p[0], p[1],
                    'a' + it, 'A' + it);
            errs++;
        }
    }
    MPI_Request_free(&req);
    munmap(map, 8192);
    pair_sync();
}

/* ---- requests of the wrong kind --------------------------------------------------------- */

static void wrong_kind(void)
{
    const int tag = 40;
    int peer = 1 - rank, flag, l[1] = { 0 };
    int sbuf[16], *rbuf = galloc(16 * sizeof(int), "wrong-kind receive buffer");
    MPI_Request sreq, rreq;

    /* MPI_Isend / MPI_Irecv (both directions) */
    fill(sbuf, 16, tag, 0);
    MPI_Irecv(rbuf, 16, MPI_INT, peer, tag, comm, &rreq);
    MPI_Isend(sbuf, 16, MPI_INT, peer, tag, comm, &sreq);
    expect(MPI_Pready(0, sreq), MPI_ERR_REQUEST, "partitioned send request",
           "MPI_Pready on an MPI_Isend request");
    expect(MPI_Pready_range(0, 0, sreq), MPI_ERR_REQUEST, "partitioned send request",
           "MPI_Pready_range on an MPI_Isend request");
    expect(MPI_Pready_list(1, l, sreq), MPI_ERR_REQUEST, "partitioned send request",
           "MPI_Pready_list on an MPI_Isend request");
    expect(MPI_Parrived(sreq, 0, &flag), MPI_ERR_REQUEST, "partitioned receive request",
           "MPI_Parrived on an MPI_Isend request");
    expect(MPI_Parrived(rreq, 0, &flag), MPI_ERR_REQUEST, "partitioned receive request",
           "MPI_Parrived on an MPI_Irecv request");
    expect(MPI_Pready(0, rreq), MPI_ERR_REQUEST, "partitioned send request",
           "MPI_Pready on an MPI_Irecv request");
    expect(wait_deadline(&sreq, MPI_STATUS_IGNORE, 20.0, "MPI_Isend"), MPI_SUCCESS, NULL,
           "MPI_Wait (MPI_Isend after wrong-kind calls)");
    expect(wait_deadline(&rreq, MPI_STATUS_IGNORE, 20.0, "MPI_Irecv"), MPI_SUCCESS, NULL,
           "MPI_Wait (MPI_Irecv after wrong-kind calls)");
    check(rbuf, 16, tag, 0, "MPI_Irecv after wrong-kind calls");

    /* MPI_Send_init / MPI_Recv_init, inactive and active */
    MPI_Send_init(sbuf, 16, MPI_INT, peer, tag + 1, comm, &sreq);
    MPI_Recv_init(rbuf, 16, MPI_INT, peer, tag + 1, comm, &rreq);
    expect(MPI_Pready(0, sreq), MPI_ERR_REQUEST, "partitioned send request",
           "MPI_Pready on an inactive MPI_Send_init request");
    expect(MPI_Parrived(rreq, 0, &flag), MPI_ERR_REQUEST, "partitioned receive request",
           "MPI_Parrived on an inactive MPI_Recv_init request");
    for (int it = 1; it <= 2; it++) {
        fill(sbuf, 16, tag + 1, it);
        memset(rbuf, 0, 16 * sizeof(int));
        MPI_Start(&rreq);
        MPI_Start(&sreq);
        expect(MPI_Pready(0, sreq), MPI_ERR_REQUEST, "partitioned send request",
               "MPI_Pready on an active MPI_Send_init request");
        expect(MPI_Pready_list(1, l, sreq), MPI_ERR_REQUEST, "partitioned send request",
               "MPI_Pready_list on an active MPI_Send_init request");
        expect(MPI_Parrived(rreq, 0, &flag), MPI_ERR_REQUEST, "partitioned receive request",
               "MPI_Parrived on an active MPI_Recv_init request");
        expect(wait_deadline(&sreq, MPI_STATUS_IGNORE, 20.0, "MPI_Send_init"), MPI_SUCCESS,
               NULL, "MPI_Wait (MPI_Send_init request)");
        expect(wait_deadline(&rreq, MPI_STATUS_IGNORE, 20.0, "MPI_Recv_init"), MPI_SUCCESS,
               NULL, "MPI_Wait (MPI_Recv_init request)");
        check(rbuf, 16, tag + 1, it, "MPI_Recv_init after wrong-kind calls");
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    gfree(rbuf);
    pair_sync();
}

/* ---- a derived datatype freed after init ------------------------------------------------ */

/* vector of 3 blocks of 2 ints with stride 3: 6 ints in an extent of 8, 1 hole per block */
#define VBLK 3
#define VSTRIDE 3
#define VEXT ((VBLK - 1) * VSTRIDE + 2)

static void type_freed_after_init(void)
{
    const int tag = 50, parts = 4, cnt = 2, n = parts * cnt * VEXT;
    MPI_Datatype vec;
    MPI_Request req;
    int *buf = galloc(n * sizeof(int), rank == 0 ? "vector send" : "vector receive");
    char w[120];

    MPI_Type_vector(VBLK, 2, VSTRIDE, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (rank == 0)
        MPI_Psend_init(buf, parts, cnt, vec, 1, tag, comm, MPI_INFO_NULL, &req);
    else
        MPI_Precv_init(buf, parts, cnt, vec, 0, tag, comm, MPI_INFO_NULL, &req);
    MPI_Type_free(&vec);        /* legal: the request keeps its own reference */

    for (int it = 0; it < 3; it++) {
        if (rank == 0) {
            fill(buf, n, tag, it);
            MPI_Start(&req);
            for (int p = parts - 1; p >= 0; p--)
                MPI_Pready(p, req);
        } else {
            for (int i = 0; i < n; i++)
                buf[i] = -9;
            MPI_Start(&req);
        }
        snprintf(w, sizeof(w), "MPI_Wait (datatype freed after init, iteration %d)", it);
        expect(wait_deadline(&req, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        if (rank == 1) {
            int bad = 0;
            for (int i = 0; i < n; i++) {
                int in_block = (i % VEXT) % VSTRIDE < 2;
                int want = in_block ? val(tag, it, i) : -9;
                if (buf[i] != want && bad++ < 5)
                    fprintf(stderr, "rank 1: datatype freed after init, iter %d: buf[%d] = "
                            "%d, expected %d\n", it, i, buf[i], want);
            }
            errs += bad;
        }
    }
    expect(MPI_Request_free(&req), MPI_SUCCESS, NULL,
           "MPI_Request_free (datatype freed after init)");
    gfree(buf);
    pair_sync();
}

/* ---- a communicator freed while operations on it live ----------------------------------- */

static void comm_freed_live(void)
{
    const int tag = 60, n = 3 * 20;
    MPI_Comm c;
    MPI_Request a, b;   /* a: started before the free; b: never started before it */
    int *abuf = galloc(n * sizeof(int), "freed-comm buffer a");
    int *bbuf = galloc(n * sizeof(int), "freed-comm buffer b");
    char w[120];

    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (rank == 0) {
        MPI_Psend_init(abuf, 3, 20, MPI_INT, 1, tag, c, MPI_INFO_NULL, &a);
        MPI_Psend_init(bbuf, 5, 12, MPI_INT, 1, tag + 1, c, MPI_INFO_NULL, &b);
        fill(abuf, n, tag, 0);
    } else {
        MPI_Precv_init(abuf, 2, 30, MPI_INT, 0, tag, c, MPI_INFO_NULL, &a);
        MPI_Precv_init(bbuf, 1, 60, MPI_INT, 0, tag + 1, c, MPI_INFO_NULL, &b);
        memset(abuf, 0, n * sizeof(int));
    }
    MPI_Start(&a);
    expect(MPI_Comm_free(&c), MPI_SUCCESS, NULL,
           "MPI_Comm_free with live partitioned requests (one active)");
    if (rank == 0)
        MPI_Pready_range(0, 2, a);
    expect(wait_deadline(&a, MPI_STATUS_IGNORE, 20.0, "freed comm"), MPI_SUCCESS, NULL,
           "MPI_Wait (iteration active across MPI_Comm_free)");
    if (rank == 1)
        check(abuf, n, tag, 0, "iteration active across MPI_Comm_free");

    for (int it = 1; it < 4; it++) {
        if (rank == 0) {
            fill(abuf, n, tag, it);
            fill(bbuf, n, tag + 1, it);
        } else {
            memset(abuf, 0, n * sizeof(int));
            memset(bbuf, 0, n * sizeof(int));
        }
        MPI_Start(&b);
        MPI_Start(&a);
        if (rank == 0) {
            for (int p = 0; p < 5; p++)
                MPI_Pready(p, b);
            MPI_Pready_range(0, 2, a);
        }
        snprintf(w, sizeof(w), "MPI_Wait on a freed communicator (iteration %d)", it);
        expect(wait_deadline(&a, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        expect(wait_deadline(&b, MPI_STATUS_IGNORE, 20.0, w), MPI_SUCCESS, NULL, w);
        if (rank == 1) {
            check(abuf, n, tag, it, "operation a on a freed communicator");
            check(bbuf, n, tag + 1, it, "operation b (first start after MPI_Comm_free)");
        }
    }
    expect(MPI_Request_free(&a), MPI_SUCCESS, NULL, "MPI_Request_free after MPI_Comm_free");
    expect(MPI_Request_free(&b), MPI_SUCCESS, NULL, "MPI_Request_free after MPI_Comm_free");
    gfree(abuf);
    gfree(bbuf);
    pair_sync();
}

/* ---- end: no stray user-visible message ------------------------------------------------- */

static void no_stray(void)
{
    int flag;
    MPI_Status st;
    double t0 = MPI_Wtime();

    pair_sync();
    while (MPI_Wtime() - t0 < 0.2) {
        flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
        if (flag && st.MPI_TAG == 999)
            break;      /* the peer's closing pair_sync */
        if (flag) {
            fprintf(stderr, "rank %d: stray user-visible message (source %d tag %d)\n", rank,
                    st.MPI_SOURCE, st.MPI_TAG);
            errs++;
            break;
        }
    }
    pair_sync();
}

int main(int argc, char *argv[])
{
    MTest_Init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        verbose |= (strcmp(argv[i], "-v") == 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "This test requires exactly two processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    init_errors();
    pready_errors();
    startall_twice();
    low_half_ones();
    wrong_kind();
    type_freed_after_init();
    comm_freed_live();
    overflow();
    no_stray();

    /* last: MPI_REQUEST_NULL with a NULL flag (an implementation that writes the flag
     * before checking it crashes here) */
    expect(MPI_Parrived(MPI_REQUEST_NULL, 0, NULL), MPI_ERR_ARG, "flag",
           "MPI_Parrived(MPI_REQUEST_NULL, 0, NULL)");
    gcheck_all();

    MPI_Comm_free(&comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
