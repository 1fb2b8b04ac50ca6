/*
 * part_plan.h: the wire-message plan of a partitioned operation, as pure logic.
 *
 * No MPICH header here: this file is compiled into libmpi and, unchanged, into the
 * GoogleTest unit tests (unittest/). All sizes are in bytes.
 *
 * The receiver decides the plan. g = gcd(send partitions, receive partitions) wire messages
 * make every user partition on either side fall in exactly one wire message; then k
 * consecutive ones are merged while the merged size stays within the aggregation size
 * (0: no merging), and further when the message count would not fit the tag space.
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
 * merging limit (0: none); max_msgs: the most wire messages the tag layout can name. */
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

/* The VCI index (0..nvcis-1) that carries wire message m. With parts_per_thread > 0 (the
 * user's hint: a thread owns that many consecutive local partitions), messages are mapped by
 * owning thread, so one thread's partitions share a VCI; otherwise round-robin by message. */
int32_t MPIDI_PART_plan_vci(const MPIDI_PART_plan_t * plan, int32_t local_parts, int32_t m,
                            int32_t nvcis, int32_t parts_per_thread);

/* ---- internal tag layout ---------------------------------------------------------------
 * Data messages travel on the collective context with tag  flag_bit | id << msg_bits | m ,
 * where flag_bit lies above every user and collective tag. id names the receive operation
 * (unique among the receiver's live operations), m the wire message. */
typedef struct MPIDI_PART_tag_layout {
    int32_t flag_bit;           /* the reserved bit (MPIR_TAG_COLL_BIT in MPICH) */
    int32_t id_bits;            /* bits for the operation id */
    int32_t msg_bits;           /* bits for the wire-message index */
} MPIDI_PART_tag_layout_t;

/* Split the free_bits below flag_bit between ids and message indices: msg_bits first
 * (at most wanted_msg_bits), the rest for ids. Returns 0, or 1 when free_bits < 2. */
int MPIDI_PART_tag_layout_make(int32_t flag_bit, int32_t free_bits, int32_t wanted_msg_bits,
                               MPIDI_PART_tag_layout_t * layout);

static inline int32_t MPIDI_PART_tag_encode(const MPIDI_PART_tag_layout_t * l, int32_t id, int32_t m)
{
    return l->flag_bit | (id << l->msg_bits) | m;
}

static inline void MPIDI_PART_tag_decode(const MPIDI_PART_tag_layout_t * l, int32_t tag,
                                         int32_t * id, int32_t * m)
{
    *m = tag & ((1 << l->msg_bits) - 1);
    *id = (tag & ~l->flag_bit) >> l->msg_bits;
}

#ifdef __cplusplus
}
#endif
#endif /* PART_PLAN_H_INCLUDED */
