/*
 * part_plan.c: wire-message planning (gcd agreement, merging, VCI mapping).
 * Pure logic without MPICH headers; see part_plan.h and the protocol in README.
 */
#include <string.h>
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

int64_t MPIDI_PART_split_count(int64_t bytes, int64_t split, int64_t split_max)
{
    if (split <= 0 || bytes <= split || bytes > split_max)
        return 1;
    return (bytes + split - 1) / split;
}

int64_t MPIDI_PART_split_slots(int32_t nmsgs_max, int64_t total_bytes, int64_t split,
                               int64_t split_max)
{
    if (nmsgs_max < 1)
        return 0;
    if (split <= 0 || split_max <= split || total_bytes <= split)
        return nmsgs_max;
    /* every split message adds at most bytes / split - 1 + 1 pieces: at most one per
     * split bytes of the transfer that split messages hold, and they hold at most
     * min(total, nmsgs_max * split_max) bytes */
    int64_t held = total_bytes;
    if (split_max <= INT64_MAX / nmsgs_max && (int64_t) nmsgs_max * split_max < held)
        held = (int64_t) nmsgs_max *split_max;
    if (held / split > INT64_MAX - nmsgs_max)
        return INT64_MAX;
    return (int64_t) nmsgs_max + held / split;
}

int MPIDI_PART_ucx_tls_has_shm(const char *tls)
{
    if (tls == NULL || *tls == 0)
        return 1;
    /* the transports that carry eager messages in shared memory (sm, shm and mm are UCX's
     * aliases for them); cma and knem only copy rendezvous data */
    int alias = strstr(tls, "sm") || strstr(tls, "shm") || strstr(tls, "mm");
    int posix = strstr(tls, "posix") != NULL, sysv = strstr(tls, "sysv") != NULL;
    if (tls[0] == '^')  /* an exclusion list: shared memory stays unless it all goes */
        return !(alias || (posix && sysv));
    return alias || posix || sysv || strstr(tls, "xpmem") || strstr(tls, "all");
}
