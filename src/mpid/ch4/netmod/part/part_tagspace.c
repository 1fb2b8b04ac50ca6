/*
 * part_tagspace.c: buddy allocation of aligned tag blocks (see part_tagspace.h).
 * Pure logic without MPICH headers.
 */
#include <stdlib.h>
#include <string.h>
#include "part_tagspace.h"

/* Room for one more free block of order k. */
static int reserve(MPIDI_PART_tagspace_t * ts, int32_t k)
{
    if (ts->nfree[k] < ts->cap[k])
        return 0;
    int32_t ncap = ts->cap[k] ? 2 * ts->cap[k] : 8;
    int64_t *p = realloc(ts->free[k], sizeof(int64_t) * ncap);
    if (p == NULL)
        return -1;
    ts->free[k] = p;
    ts->cap[k] = ncap;
    return 0;
}

/* Room for one more free block at every order from lo to hi: after this, a split or a
 * merge cannot fail half-way. */
static int reserve_range(MPIDI_PART_tagspace_t * ts, int32_t lo, int32_t hi)
{
    for (int32_t k = lo; k <= hi; k++)
        if (reserve(ts, k) != 0)
            return -1;
    return 0;
}

static void push(MPIDI_PART_tagspace_t * ts, int32_t k, int64_t base)
{
    ts->free[k][ts->nfree[k]++] = base;
}

/* Remove base from order k's free list; 1 if it was there. */
static int take(MPIDI_PART_tagspace_t * ts, int32_t k, int64_t base)
{
    for (int32_t i = 0; i < ts->nfree[k]; i++) {
        if (ts->free[k][i] == base) {
            ts->free[k][i] = ts->free[k][--ts->nfree[k]];
            return 1;
        }
    }
    return 0;
}

int MPIDI_PART_tagspace_init(MPIDI_PART_tagspace_t * ts, int32_t bits)
{
    memset(ts, 0, sizeof(*ts));
    if (bits < 1 || bits > 40)
        return -1;
    ts->bits = bits;
    ts->nfree = calloc(bits + 1, sizeof(int32_t));
    ts->cap = calloc(bits + 1, sizeof(int32_t));
    ts->free = calloc(bits + 1, sizeof(int64_t *));
    if (ts->nfree == NULL || ts->cap == NULL || ts->free == NULL || reserve(ts, bits) != 0) {
        MPIDI_PART_tagspace_destroy(ts);
        return -1;
    }
    push(ts, bits, 0);
    return 0;
}

void MPIDI_PART_tagspace_destroy(MPIDI_PART_tagspace_t * ts)
{
    if (ts->free)
        for (int32_t k = 0; k <= ts->bits; k++)
            free(ts->free[k]);
    free(ts->free);
    free(ts->nfree);
    free(ts->cap);
    memset(ts, 0, sizeof(*ts));
}

int32_t MPIDI_PART_tagspace_order(int32_t n)
{
    int32_t k = 0;
    while (k < 31 && ((int64_t) 1 << k) < n)
        k++;
    return k;
}

int64_t MPIDI_PART_tagspace_alloc(MPIDI_PART_tagspace_t * ts, int32_t order)
{
    if (order < 0 || order > ts->bits)
        return -1;
    int32_t j = order;
    while (j <= ts->bits && ts->nfree[j] == 0)
        j++;
    if (j > ts->bits)
        return -1;
    if (reserve_range(ts, order, j - 1) != 0)
        return -1;
    int64_t base = ts->free[j][--ts->nfree[j]];
    /* split down to the wanted order: keep the lower half, free the upper */
    while (j > order) {
        j--;
        push(ts, j, base + ((int64_t) 1 << j));
    }
    ts->in_use += (int64_t) 1 << order;
    ts->blocks++;
    return base;
}

void MPIDI_PART_tagspace_free(MPIDI_PART_tagspace_t * ts, int64_t base, int32_t order)
{
    ts->in_use -= (int64_t) 1 << order;
    ts->blocks--;
    while (order < ts->bits) {
        int64_t buddy = base ^ ((int64_t) 1 << order);
        if (!take(ts, order, buddy))
            break;
        base = base < buddy ? base : buddy;
        order++;
    }
    if (reserve(ts, order) != 0) {
        /* no memory for the list entry: the block stays unusable (counted as held) */
        ts->in_use += (int64_t) 1 << order;
        return;
    }
    push(ts, order, base);
}
