/*
 * part_plan.c: wire-message planning (gcd agreement, merging, VCI mapping).
 * Pure logic without MPICH headers; see part_plan.h and the protocol in README.
 */
#include "part_plan.h"

int64_t MPIDI_PART_gcd(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int MPIDI_PART_plan_make(int32_t send_parts, int32_t recv_parts, int64_t total_bytes,
                         int64_t aggr_size, int32_t max_msgs, MPIDI_PART_plan_t * plan)
{
    if (send_parts < 1 || recv_parts < 1 || total_bytes < 0 || aggr_size < 0 || max_msgs < 1)
        return MPIDI_PART_PLAN_EINVAL;

    int32_t g = (int32_t) MPIDI_PART_gcd(send_parts, recv_parts);
    int64_t msg_bytes = total_bytes / g;        /* every gcd-message has this size */
    int32_t k = 1;
    if (aggr_size > 0 && msg_bytes < aggr_size) {
        int64_t fit = (msg_bytes == 0) ? g : aggr_size / msg_bytes;
        k = (int32_t) (fit < g ? fit : g);
    }
    /* never more messages than the transport can name */
    int32_t min_k = (int32_t) ((g + (int64_t) max_msgs - 1) / max_msgs);
    if (k < min_k)
        k = min_k;

    plan->gcd = g;
    plan->merge = k;
    plan->nmsgs = (int32_t) ((g + (int64_t) k - 1) / k);
    return MPIDI_PART_PLAN_OK;
}

int32_t MPIDI_PART_plan_vci(const MPIDI_PART_plan_t * plan, int32_t local_parts, int32_t m,
                            int32_t nvcis, int32_t parts_per_thread)
{
    if (nvcis <= 1)
        return 0;
    if (parts_per_thread > 0) {
        int32_t first, nparts;
        MPIDI_PART_plan_msg_range(plan, local_parts, m, &first, &nparts);
        return (first / parts_per_thread) % nvcis;
    }
    return m % nvcis;
}
