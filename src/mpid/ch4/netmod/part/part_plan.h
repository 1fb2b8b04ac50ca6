/*
 * part_plan.h: the wire-message plan of a partitioned operation, as pure logic.
 *
 * No MPICH header here: this file is compiled into libmpi and, unchanged, into the
 * GoogleTest unit tests (unittest/). All sizes are in bytes.
 *
 * The receiver decides the plan. g = gcd(send partitions, receive partitions) wire messages
 * make every user partition on either side fall in exactly one wire message; then k
 * consecutive ones are merged while the merged size stays within the aggregation size
 * (0: no merging), and further when the message count would exceed what a transport can
 * name (max_msgs).
 */
#ifndef PART_PLAN_H_INCLUDED
#define PART_PLAN_H_INCLUDED

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MPIDI_PART_plan {
    int32_t gcd;                /* wire messages before merging */
    int32_t merge;              /* gcd-messages merged into one wire message (k >= 1) */
    int32_t nmsgs;              /* wire messages per iteration: ceil(gcd / merge) */
} MPIDI_PART_plan_t;

/* Return codes of MPIDI_PART_plan_make */
#define MPIDI_PART_PLAN_OK        0
#define MPIDI_PART_PLAN_EINVAL    1     /* a partition count < 1, or a negative size */

int64_t MPIDI_PART_gcd(int64_t a, int64_t b);

/* Make the plan. total_bytes: the whole transfer (equal on both sides); aggr_size: the
 * merging limit (0: none); max_msgs: the most wire messages a plan may have. */
int MPIDI_PART_plan_make(int32_t send_parts, int32_t recv_parts, int64_t total_bytes,
                         int64_t aggr_size, int32_t max_msgs, MPIDI_PART_plan_t * plan);

/* User partitions of a side with local_parts partitions that one full wire message holds. */
static inline int32_t MPIDI_PART_plan_parts_per_msg(const MPIDI_PART_plan_t * plan,
                                                    int32_t local_parts)
{
    return local_parts / plan->gcd * plan->merge;
}

/* The wire message that holds local partition p. */
static inline int32_t MPIDI_PART_plan_msg_of(const MPIDI_PART_plan_t * plan, int32_t local_parts,
                                             int32_t p)
{
    return p / MPIDI_PART_plan_parts_per_msg(plan, local_parts);
}

/* First local partition of wire message m and how many partitions it holds. */
static inline void MPIDI_PART_plan_msg_range(const MPIDI_PART_plan_t * plan, int32_t local_parts,
                                             int32_t m, int32_t * first, int32_t * nparts)
{
    int32_t ppm = MPIDI_PART_plan_parts_per_msg(plan, local_parts);
    *first = m * ppm;
    *nparts = (ppm <= local_parts - *first) ? ppm : local_parts - *first;
}

/* Splitting (the tag transport over UCX's shared memory, README section 3): a wire message
 * of bytes in (split, split_max] travels as ceil(bytes / split) MPI messages of split bytes
 * (the last one shorter), each small enough for the netmod's eager protocol; any other size,
 * or split <= 0, is one MPI message. Returns how many MPI messages carry the wire message
 * (1 for bytes < 0 too). */
int64_t MPIDI_PART_split_count(int64_t bytes, int64_t split, int64_t split_max);

/* Bytes of piece j (0 <= j < MPIDI_PART_split_count) of such a wire message, which starts
 * j * split bytes into it (for one piece: bytes). */
static inline int64_t MPIDI_PART_split_piece(int64_t bytes, int64_t split, int64_t pieces,
                                             int64_t j)
{
    if (pieces <= 1)
        return bytes;
    return (j < pieces - 1) ? split : bytes - split * (pieces - 1);
}

/* Whether UCX may carry eager messages over shared memory under this value of UCX_TLS (NULL
 * or empty: unset, UCX's default, which has it): a list naming such a transport (the
 * aliases sm, shm, mm, or posix, sysv, xpmem) or "all", or an exclusion list (^...) that
 * leaves out none of the aliases. cma and knem alone do not count: they only copy
 * rendezvous data. Over TCP UCX's eager limit is below a split piece. */
int MPIDI_PART_ucx_tls_has_shm(const char *tls);

/* The most MPI messages any plan of an operation needs (the request slots its transport
 * allocates once): nmsgs_max wire messages of total_bytes in all, none above split_max
 * counted as split. A re-plan never has more wire messages than the first plan. */
int64_t MPIDI_PART_split_slots(int32_t nmsgs_max, int64_t total_bytes, int64_t split,
                               int64_t split_max);

/* The VCI index (0..nvcis-1) that carries wire message m. With parts_per_thread > 0 (the
 * user's hint: a thread owns that many consecutive local partitions), messages are mapped by
 * owning thread, so one thread's partitions share a VCI; otherwise round-robin by message. */
int32_t MPIDI_PART_plan_vci(const MPIDI_PART_plan_t * plan, int32_t local_parts, int32_t m,
                            int32_t nvcis, int32_t parts_per_thread);

#ifdef __cplusplus
}
#endif
#endif /* PART_PLAN_H_INCLUDED */
