/*
 * part_state.c: the per-operation state machine (see part_state.h). Pure logic, no MPICH
 * headers; unit-tested in unittest/test_part_state.cpp.
 */
#include <string.h>
#include "part_state.h"

void MPIDI_PART_st_init(MPIDI_PART_st_t * st, int is_send, int32_t partitions, int32_t * ready)
{
    memset(st, 0, sizeof(*st));
    st->is_send = is_send;
    st->partitions = partitions;
    st->ready = ready;
    st->state = MPIDI_PART_ST_UNPLANNED;
}

int MPIDI_PART_st_all_ready(const MPIDI_PART_st_t * st)
{
    if (!st->is_send || st->ready == NULL || st->partitions <= 0)
        return 0;       /* a zero-partition send has nothing to send: never waited for */
    for (int32_t p = 0; p < st->partitions; p++)
        if (!__atomic_load_n(&st->ready[p], __ATOMIC_ACQUIRE))
            return 0;
    return 1;
}

/* Partitions still unready in each message, from the ready flags. */
static void count_unready(MPIDI_PART_st_t * st)
{
    for (int32_t m = 0; m < st->nmsgs; m++) {
        int32_t first, nparts, unready = 0;
        MPIDI_PART_plan_msg_range(&st->plan, st->partitions, m, &first, &nparts);
        for (int32_t p = first; p < first + nparts; p++)
            unready += !__atomic_load_n(&st->ready[p], __ATOMIC_RELAXED);
        __atomic_store_n(&st->cntr[m], unready, __ATOMIC_RELAXED);
    }
}

static void begin_iteration(MPIDI_PART_st_t * st, int always_armed)
{
    /* the done flags need no reset: they hold iterations (part_state.h) */
    if (st->is_send) {
        memset(st->held, 0, st->nmsgs);
        st->nheld = 0;
        __atomic_store_n(&st->armed, always_armed, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&st->left, st->nmsgs, __ATOMIC_RELAXED);
    __atomic_store_n(&st->running, 1, __ATOMIC_RELEASE);
}

/* EMPTY sender: the iteration runs until every partition is readied. */
static void begin_await_ready(MPIDI_PART_st_t * st)
{
    int32_t unready = 0;
    for (int32_t p = 0; p < st->partitions; p++)
        unready += !__atomic_load_n(&st->ready[p], __ATOMIC_RELAXED);
    st->left = unready;
    __atomic_store_n(&st->running, unready > 0, __ATOMIC_RELEASE);
}

int MPIDI_PART_st_start(MPIDI_PART_st_t * st, int always_armed)
{
    /* atomic: the hook reads it (a receiver whose sender withdrew, part_tag.c) while a
     * lock-free start may run, and so do the counting threads (part_state.h) */
    __atomic_store_n(&st->iter, st->iter + 1, __ATOMIC_RELEASE);     /* MPIDI_PART_st_iter */
    if (st->is_send && st->ready)
        for (int32_t p = 0; p < st->partitions; p++)
            __atomic_store_n(&st->ready[p], 0, __ATOMIC_RELAXED);
    switch (MPIDI_PART_st_get_state(st)) {
        case MPIDI_PART_ST_UNPLANNED:
            st->started_unplanned = 1;
            return MPIDI_PART_START_DEFER;
        case MPIDI_PART_ST_PLANNED:
            if (st->is_send)
                count_unready(st);
            begin_iteration(st, always_armed);
            __atomic_thread_fence(__ATOMIC_RELEASE);
            return MPIDI_PART_START_RUN;
        case MPIDI_PART_ST_EMPTY:
            if (!st->await_ready)
                return MPIDI_PART_START_COMPLETE;
            begin_await_ready(st);
            return MPIDI_PART_START_AWAIT_READY;
        default:
            return MPIDI_PART_START_COMPLETE;
    }
}

int MPIDI_PART_st_plan(MPIDI_PART_st_t * st, const MPIDI_PART_plan_t * plan, int32_t * cntr,
                       uint8_t * held, MPIDI_PART_iter_t * done, int always_armed,
                       int32_t * complete_out)
{
    int n = 0;

    if (MPIDI_PART_st_get_state(st) != MPIDI_PART_ST_UNPLANNED || plan->nmsgs < 0)
        return -1;
    if (plan->nmsgs == 0) {
        st->await_ready = st->is_send && st->partitions > 0;
        if (st->started_unplanned && st->await_ready)
            begin_await_ready(st);
        st->started_unplanned = 0;
        __atomic_store_n(&st->state, MPIDI_PART_ST_EMPTY, __ATOMIC_RELEASE);
        return 0;
    }
    if (plan->gcd < 1 || plan->merge < 1 || st->partitions % plan->gcd != 0)
        return -1;
    st->plan = *plan;
    st->nmsgs = plan->nmsgs;
    st->ppm = MPIDI_PART_plan_parts_per_msg(plan, st->partitions);
    st->ppm_inv = st->ppm > 1 ? MPIDI_PART_div_inv(st->ppm) : 0;
    st->cntr = cntr;
    st->held = held;
    st->done = done;
    /* stamped done in the last iteration that ended (a late caller of it is refused), not
     * in the one under way (started before this plan) nor in a later one */
    MPIDI_PART_iter_t stamp = st->started_unplanned ? st->iter - 1 : st->iter;
    for (int32_t m = 0; m < st->nmsgs; m++)
        __atomic_store_n(&st->done[m], stamp, __ATOMIC_RELAXED);
    if (st->started_unplanned) {
        st->started_unplanned = 0;
        if (st->is_send)
            count_unready(st);
        begin_iteration(st, always_armed);
        if (st->is_send) {
            for (int32_t m = 0; m < st->nmsgs; m++) {
                if (__atomic_load_n(&st->cntr[m], __ATOMIC_RELAXED) == 0) {
                    if (always_armed) {
                        complete_out[n++] = m;
                    } else {
                        st->held[m] = 1;
                        st->nheld++;
                    }
                }
            }
        }
    }
    /* publish: other threads' MPI_Pready calls take the lock-free path from here on */
    __atomic_store_n(&st->state, MPIDI_PART_ST_PLANNED, __ATOMIC_RELEASE);
    return n;
}

int MPIDI_PART_st_unplan(MPIDI_PART_st_t * st)
{
    if (MPIDI_PART_st_get_state(st) != MPIDI_PART_ST_PLANNED || MPIDI_PART_st_is_running(st) ||
        st->started_unplanned)
        return -1;
    __atomic_store_n(&st->state, MPIDI_PART_ST_UNPLANNED, __ATOMIC_RELEASE);
    return 0;
}

int MPIDI_PART_st_fail(MPIDI_PART_st_t * st)
{
    int was_started = st->started_unplanned ||
        __atomic_load_n(&st->running, __ATOMIC_ACQUIRE);
    st->started_unplanned = 0;
    __atomic_store_n(&st->running, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&st->state, MPIDI_PART_ST_FAILED, __ATOMIC_RELEASE);
    return was_started;
}

void MPIDI_PART_st_no_peer(MPIDI_PART_st_t * st)
{
    st->await_ready = 0;
    __atomic_store_n(&st->state, MPIDI_PART_ST_EMPTY, __ATOMIC_RELEASE);
}

int MPIDI_PART_st_ready_unplanned(MPIDI_PART_st_t * st, int32_t p)
{
    if (__atomic_exchange_n(&st->ready[p], 1, __ATOMIC_RELAXED))
        return MPIDI_PART_READY_TWICE;
    if (st->await_ready && __atomic_load_n(&st->running, __ATOMIC_RELAXED) &&
        MPIDI_PART_st_get_state(st) == MPIDI_PART_ST_EMPTY && --st->left == 0) {
        __atomic_store_n(&st->running, 0, __ATOMIC_RELEASE);
        return MPIDI_PART_READY_LAST;
    }
    return 0;
}

int MPIDI_PART_st_hold(MPIDI_PART_st_t * st, int32_t m)
{
    if (__atomic_load_n(&st->armed, __ATOMIC_ACQUIRE))
        return 0;
    st->held[m] = 1;
    st->nheld++;
    return 1;
}

int MPIDI_PART_st_arm(MPIDI_PART_st_t * st, int32_t * out)
{
    int n = 0;
    __atomic_store_n(&st->armed, 1, __ATOMIC_RELEASE);
    if (st->nheld) {
        for (int32_t m = 0; m < st->nmsgs; m++) {
            if (st->held[m]) {
                st->held[m] = 0;
                out[n++] = m;
            }
        }
        st->nheld = 0;
    }
    return n;
}
