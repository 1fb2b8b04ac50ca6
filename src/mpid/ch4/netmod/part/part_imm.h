/*
 * part_imm.h: the 32-bit immediate that every write of the RDMA transport carries (pure C,
 * no MPICH headers; unit-tested in unittest/test_part_imm.cpp). 32 bits so that the same
 * layout fits InfiniBand's imm_data and libfabric's remote CQ data (8 bytes here):
 *
 *   bit  31     : kind   0 = data (sender -> receiver), 1 = credit (receiver -> sender)
 *   bits 30..16 : slot   the target process's operation slot (from the RTS or the PLAN)
 *   bits 15..0  : data:   wire message index m (a plan has at most 65536 messages)
 *                 credit: the receiver's iteration number modulo 2^16
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

/* Whether a credit carrying low names iteration iter (compared modulo 2^16). */
static inline int MPIDI_PART_imm_credit_is(uint32_t low, uint32_t iter)
{
    return low == (iter & (MPIDI_PART_IMM_MSGS - 1));
}

#endif /* PART_IMM_H_INCLUDED */
