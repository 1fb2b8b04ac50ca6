/*
 * part_timer.c: the timer aggregator's decisions (see part_timer.h). Pure logic, no MPICH
 * headers, no clock; unit-tested in unittest/test_part_timer.cpp.
 */
#include <string.h>
#include "part_timer.h"

void MPIDI_PART_tgroup_init(MPIDI_PART_tgroup_t * g, int32_t nparts, uint8_t * state,
                            double timeout)
{
    g->nparts = nparts;
    g->state = state;
    g->timeout = timeout;
    g->run_cap = 0;
    MPIDI_PART_tgroup_reset(g);
}

void MPIDI_PART_tgroup_reset(MPIDI_PART_tgroup_t * g)
{
    if (g->nparts > 0)
        memset(g->state, MPIDI_PART_TG_IDLE, (size_t) g->nparts);
    g->nready = 0;
    g->nsent = 0;
    g->pending = 0;
    g->lo = g->nparts;
    g->deadline = 0;
    g->hurry = 0;
    g->first = 0;
    g->spread = -1;
}

int MPIDI_PART_tgroup_due(const MPIDI_PART_tgroup_t * g, double now)
{
    return g->pending > 0 && g->timeout >= 0 && now >= g->deadline;
}

/* Fire: one run per maximal stretch of ready-unsent partitions. The scan covers only
 * their span (from g->lo until all `pending` are found): the last MPI_Pready of a hurried
 * group of 64 fires one partition after scanning one or two, not 64. */
static int32_t fire(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs)
{
    int32_t nruns = 0, left = g->pending;
    g->pending = 0;
    for (int32_t p = g->lo; left > 0 && p < g->nparts;) {
        if (g->state[p] != MPIDI_PART_TG_READY) {
            p++;
            continue;
        }
        int32_t q = p;
        while (q < g->nparts && g->state[q] == MPIDI_PART_TG_READY)
            g->state[q++] = MPIDI_PART_TG_SENT;
        runs[nruns].first = p;
        runs[nruns].count = q - p;
        nruns++;
        g->nsent += q - p;
        left -= q - p;
        p = q;
    }
    g->lo = g->nparts;
    return nruns;
}

/* Fire only the maximal stretches of ready-unsent partitions that are at least min_len
 * long; shorter ones keep waiting (under the deadline of the oldest that waited, which may
 * now be earlier than their own: they go no later than before). */
static int32_t fire_long(MPIDI_PART_tgroup_t * g, int32_t min_len, MPIDI_PART_run_t * runs)
{
    int32_t nruns = 0, left = g->pending, lo = g->nparts;
    for (int32_t p = g->lo; left > 0 && p < g->nparts;) {
        if (g->state[p] != MPIDI_PART_TG_READY) {
            p++;
            continue;
        }
        int32_t q = p;
        while (q < g->nparts && g->state[q] == MPIDI_PART_TG_READY)
            q++;
        left -= q - p;
        if (q - p >= min_len) {
            for (int32_t i = p; i < q; i++)
                g->state[i] = MPIDI_PART_TG_SENT;
            runs[nruns].first = p;
            runs[nruns].count = q - p;
            nruns++;
            g->nsent += q - p;
            g->pending -= q - p;
        } else if (p < lo) {
            lo = p;
        }
        p = q;
    }
    g->lo = lo;
    return nruns;
}

int32_t MPIDI_PART_tgroup_tick(MPIDI_PART_tgroup_t * g, double now, MPIDI_PART_run_t * runs)
{
    return MPIDI_PART_tgroup_due(g, now) ? fire(g, runs) : 0;
}

int32_t MPIDI_PART_tgroup_ready(MPIDI_PART_tgroup_t * g, int32_t p, double now,
                                MPIDI_PART_run_t * runs)
{
    if (p < 0 || p >= g->nparts)
        return MPIDI_PART_TG_EINVAL;
    if (g->state[p] != MPIDI_PART_TG_IDLE)
        return MPIDI_PART_TG_ETWICE;
    if (now < 0 && MPIDI_PART_tgroup_timed(g))
        return MPIDI_PART_TG_ETIME;
    if (g->pending++ == 0)
        g->deadline = now + g->timeout;
    if (g->nready++ == 0)
        g->first = now;
    if (g->nready == g->nparts && now >= 0)
        g->spread = now - g->first;     /* untimed: MPIDI_PART_tgroup_end */
    g->state[p] = MPIDI_PART_TG_READY;
    if (p < g->lo)
        g->lo = p;
    /* the group is complete (everything waiting goes now), or the deadline passed
     * unnoticed (no tick since): this call fires, p included */
    if (g->nready == g->nparts || MPIDI_PART_tgroup_due(g, now))
        return fire(g, runs);
    return 0;
}

int32_t MPIDI_PART_tgroup_flush(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs)
{
    return g->pending > 0 ? fire(g, runs) : 0;
}

int32_t MPIDI_PART_tgroup_hurry(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs)
{
    g->hurry = 1;
    return MPIDI_PART_tgroup_call_end(g, runs);
}

/* Hurried: what waits goes once it is at least as much as what is still to come, so the
 * runs halve towards the group's last partition (k/2, k/4, .., 1, 1 for k readied one by
 * one): log2(k) + 1 writes, and at the last MPI_Pready only the run before it may still
 * be in flight. With a run cap, a stretch of ready partitions also goes once it is that
 * long (runs of the cap, then halving); shorter stretches wait, so that partitions two
 * threads ready in turn (0, 4, 1, 5, ..) do not go one by one. */
int32_t MPIDI_PART_tgroup_call_end(MPIDI_PART_tgroup_t * g, MPIDI_PART_run_t * runs)
{
    if (!g->hurry || g->pending == 0)
        return 0;
    if (g->pending >= g->nparts - g->nready)
        return fire(g, runs);
    if (g->run_cap >= 2 && g->pending >= g->run_cap)
        return fire_long(g, g->run_cap, runs);
    return 0;
}

/* The k-th smallest of v[0..n) (0-based; v is reordered). */
static double kth(double *v, int32_t n, int32_t k)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double x = v[i];
                v[i++] = v[j];
                v[j--] = x;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

double MPIDI_PART_timer_adapt(double *spreads, int32_t n, double base, double cap,
                              double window)
{
    if (n <= 0)
        return base;
    if (cap < 0.5 * window)
        cap = 0.5 * window;
    double med = kth(spreads, n, (n - 1) / 2);
    if (n % 2 == 0)     /* the mean of the two middle ones */
        med = 0.5 * (med + kth(spreads, n, n / 2));
    if (med > cap)
        med = cap;
    return med < base ? base : med;
}

double MPIDI_PART_timer_default_timeout(const MPIDI_PART_loggp_t * t, double msg_cost,
                                        int64_t part_bytes)
{
    const MPIDI_PART_loggp_seg_t *P = MPIDI_PART_loggp_lookup(t, part_bytes < 0 ? 0 : part_bytes);
    const double c = msg_cost >= 0 ? msg_cost : P->o_s + P->o_r;
    const double us = (P->g > P->o_s ? P->g : P->o_s) + P->o_r + c;
    return us < MPIDI_PART_TIMER_MAX_US ? us : MPIDI_PART_TIMER_MAX_US;
}
