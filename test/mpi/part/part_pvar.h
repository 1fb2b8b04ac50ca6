/*
 * part_pvar.h: the engine's MPI_T performance variables (and integer control variables:
 * cv_read_int) by name, for this project's tests; also progress_for (progress for a while,
 * touching no partitioned request), which pv_settle's callers and others need.
 * Include it after the test's own `static int rank, errs;` (a missing pvar, one of another
 * type, or a failed read is reported on stderr and counted in errs). Call MPI_T_init_thread
 * first and pv_finalize at the end (it frees the session, then MPI_T_finalize).
 */
#ifndef PART_PVAR_H_INCLUDED
#define PART_PVAR_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "part_transport.h"

static MPI_T_pvar_session pv_session = MPI_T_PVAR_SESSION_NULL;

/* The value of the pvar `name` (MPI_UNSIGNED_LONG_LONG, no object binding). A missing pvar,
 * or one of another type, is a test failure (counted in errs), reported once. */
static inline unsigned long long pv_read(const char *name)
{
    static struct {
        const char *name;
        int idx, cont;
    } cache[16];
    static int ncache = 0;
    int idx = -2, cont = 1, cnt, err;
    unsigned long long v = 0;
    MPI_T_pvar_handle h;

    for (int c = 0; c < ncache; c++)
        if (strcmp(cache[c].name, name) == 0) {
            idx = cache[c].idx;
            cont = cache[c].cont;
        }
    if (idx == -2) {
        int n = 0;
        idx = -1;
        MPI_T_pvar_get_num(&n);
        for (int i = 0; i < n && idx < 0; i++) {
            char nm[256], desc[2048];
            int nl = sizeof(nm), dl = sizeof(desc), verb, cls, bind, ro, at;
            MPI_Datatype dt;
            MPI_T_enum et;
            if (MPI_T_pvar_get_info(i, nm, &nl, &verb, &cls, &dt, &et, desc, &dl, &bind, &ro,
                                    &cont, &at) != MPI_SUCCESS || strcmp(nm, name) != 0)
                continue;
            idx = i;
            if (dt != MPI_UNSIGNED_LONG_LONG || bind != MPI_T_BIND_NO_OBJECT) {
                fprintf(stderr, "rank %d: pvar %s: not MPI_UNSIGNED_LONG_LONG without binding\n",
                        rank, name);
                errs++;
                idx = -1;
            }
        }
        if (idx < 0) {
            fprintf(stderr, "rank %d: pvar %s missing\n", rank, name);
            errs++;
        }
        if (ncache < 16) {
            cache[ncache].name = name;
            cache[ncache].cont = cont;
            cache[ncache++].idx = idx;
        }
    }
    if (idx < 0)
        return 0;
    if (pv_session == MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_create(&pv_session);
    err = MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &h, &cnt);
    if (err == MPI_SUCCESS) {
        if (!cont)
            MPI_T_pvar_start(pv_session, h);
        err = MPI_T_pvar_read(pv_session, h, &v);
        MPI_T_pvar_handle_free(pv_session, &h);
    }
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: pvar %s: read failed (err %d)\n", rank, name, err);
        errs++;
    }
    return v;
}

/* Read the pvar until it equals want, making progress meanwhile (operations kept for a
 * peer's message go away when it arrives); gives up after secs seconds. Returns the value. */
static inline unsigned long long pv_settle(const char *name, unsigned long long want, double secs)
{
    double t0 = MPI_Wtime();
    unsigned long long v = pv_read(name);
    while (v != want && MPI_Wtime() - t0 < secs) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        v = pv_read(name);
    }
    return v;
}

/* Make progress for secs seconds without touching any partitioned request (MPI_Iprobe on
 * a tag no test sends): what is in flight arrives, what waits on a peer goes. */
static inline void progress_for(double secs)
{
    double t0 = MPI_Wtime();
    int flag;
    while (MPI_Wtime() - t0 < secs)
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* The end of the test's MPI_T use: the session pv_read made, then MPI_T_finalize. */
static inline void pv_finalize(void)
{
    if (pv_session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&pv_session);
    MPI_T_finalize();
}

/* The value of the integer control variable `name` (MPI_T), or -1 (reported, counted). */
static inline int cv_read_int(const char *name)
{
    int idx, count, v = -1;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: control variable %s missing\n", rank, name);
        errs++;
        return -1;
    }
    if (count != 1 || MPI_T_cvar_read(h, &v) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: control variable %s not one integer\n", rank, name);
        errs++;
        v = -1;
    }
    MPI_T_cvar_handle_free(&h);
    return v;
}

#endif /* PART_PVAR_H_INCLUDED */
