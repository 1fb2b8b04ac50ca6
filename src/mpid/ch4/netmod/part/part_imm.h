/*
 * part_imm.h: the 32-bit immediate that every write of the RDMA transport carries (pure C,
 * no MPICH headers; unit-tested in unittest/test_part_imm.cpp). 32 bits so that the same
 * layout fits InfiniBand's imm_data and libfabric's remote CQ data (8 bytes here):
 *
 *   bit  31     : kind   0 = data (sender -> receiver), 1 = credit (receiver -> sender)
 *   bits 30..16 : slot   the target process's operation slot (from the RTS or the PLAN)
 *   bits 15..0  : data:   wire message index m (a plan has at most 65536 messages)
 *                 credit: the receiver's iteration number modulo 2^16
 *
 * Operations planned for the timer aggregator (README, "Timer aggregator") split a wire
 * message (a group) into several writes, each a run of the sender's partitions; their data
 * immediates say where the run starts and how long it is, in the sender's partitions:
 *
 *   bits 15..6  : first partition of the run (a timer operation has at most 1024)
 *   bits 5..0   : partitions in the run - 1 (a group, hence a run, holds at most 64)
 */
#ifndef PART_IMM_H_INCLUDED
#define PART_IMM_H_INCLUDED

#include <stdint.h>

#define MPIDI_PART_IMM_SLOTS (1u << 15)         /* operation slots per process */
#define MPIDI_PART_IMM_MSGS  (1u << 16)         /* wire messages per plan */

enum MPIDI_PART_imm_kind {
    MPIDI_PART_IMM_DATA = 0,
    MPIDI_PART_IMM_CREDIT = 1
};

/* Encode; slot < MPIDI_PART_IMM_SLOTS and low < MPIDI_PART_IMM_MSGS are the caller's
 * contract (checked with a return of 0 and *imm untouched otherwise). */
static inline int MPIDI_PART_imm_encode(int kind, uint32_t slot, uint32_t low, uint32_t * imm)
{
    if ((kind != MPIDI_PART_IMM_DATA && kind != MPIDI_PART_IMM_CREDIT) ||
        slot >= MPIDI_PART_IMM_SLOTS || low >= MPIDI_PART_IMM_MSGS)
        return 0;
    *imm = ((uint32_t) kind << 31) | (slot << 16) | low;
    return 1;
}

static inline int MPIDI_PART_imm_kind(uint32_t imm)
{
    return (int) (imm >> 31);
}

static inline uint32_t MPIDI_PART_imm_slot(uint32_t imm)
{
    return (imm >> 16) & (MPIDI_PART_IMM_SLOTS - 1);
}

static inline uint32_t MPIDI_PART_imm_low(uint32_t imm)
{
    return imm & (MPIDI_PART_IMM_MSGS - 1);
}

#define MPIDI_PART_IMM_TIMER_PARTS (1u << 10)    /* sender partitions of a timer operation */
#define MPIDI_PART_IMM_TIMER_RUN   (1u << 6)     /* sender partitions per group */

/* The low 16 bits of a timer write: the run [first, first + count), count 1..64; 0 and
 * *low untouched when out of range. */
static inline int MPIDI_PART_imm_timer_low(uint32_t first, uint32_t count, uint32_t * low)
{
    if (first >= MPIDI_PART_IMM_TIMER_PARTS || count < 1 || count > MPIDI_PART_IMM_TIMER_RUN)
        return 0;
    *low = (first << 6) | (count - 1);
    return 1;
}

static inline uint32_t MPIDI_PART_imm_timer_first(uint32_t low)
{
    return (low >> 6) & (MPIDI_PART_IMM_TIMER_PARTS - 1);
}

static inline uint32_t MPIDI_PART_imm_timer_count(uint32_t low)
{
    return (low & (MPIDI_PART_IMM_TIMER_RUN - 1)) + 1;
}

/* Whether a credit carrying low names iteration iter (compared modulo 2^16). */
static inline int MPIDI_PART_imm_credit_is(uint32_t low, uint32_t iter)
{
    return low == (iter & (MPIDI_PART_IMM_MSGS - 1));
}

#endif /* PART_IMM_H_INCLUDED */
