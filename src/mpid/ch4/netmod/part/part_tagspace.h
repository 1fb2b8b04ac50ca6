/*
 * part_tagspace.h: the engine's wire-message tags, handed out by need.
 *
 * No MPICH header here (unit-tested in unittest/test_part_tagspace.cpp). The engine's data
 * messages travel on a private context of the communicator (part_impl.h), so the whole
 * tag range [0, 2^bits) is the engine's. A receive operation whose plan has n wire messages
 * holds a block of 2^ceil(log2 n) consecutive tags, aligned to its size (a buddy
 * allocator): message m of the operation travels with tag base + m. Small plans take small
 * blocks, so the number of operations that can hold tags follows the plans actually used.
 */
#ifndef PART_TAGSPACE_H_INCLUDED
#define PART_TAGSPACE_H_INCLUDED

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MPIDI_PART_tagspace {
    int32_t bits;               /* the space holds 2^bits tags */
    int32_t *nfree;             /* per order k (block of 2^k tags): free blocks */
    int32_t *cap;
    int64_t **free;             /* per order: the free blocks' bases */
    int32_t unmerged;           /* 1: a block was freed (or a merge skipped) since the last
                                 * merge of buddies */
    int64_t in_use;             /* tags held */
    int32_t blocks;             /* blocks held */
} MPIDI_PART_tagspace_t;

/* 0, or -1 on a bad size (bits outside 1..40) or no memory. */
int MPIDI_PART_tagspace_init(MPIDI_PART_tagspace_t * ts, int32_t bits);
void MPIDI_PART_tagspace_destroy(MPIDI_PART_tagspace_t * ts);

/* The block order for n messages: the smallest k with 2^k >= n. */
int32_t MPIDI_PART_tagspace_order(int32_t n);

/* A free block of 2^order tags: its base, or -1 when none is free (or no memory). */
int64_t MPIDI_PART_tagspace_alloc(MPIDI_PART_tagspace_t * ts, int32_t order);

/* Return a block taken by MPIDI_PART_tagspace_alloc. It is merged with its free buddies
 * when an allocation finds no free block large enough. */
void MPIDI_PART_tagspace_free(MPIDI_PART_tagspace_t * ts, int64_t base, int32_t order);

#ifdef __cplusplus
}
#endif
#endif /* PART_TAGSPACE_H_INCLUDED */
