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

/* Room for one more free block at every order from lo to hi: after this, a split cannot
 * fail half-way. */
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

static int cmp_base(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

/* Merge every pair of free buddies, from the smallest order up (the frees since the last
 * merge did not look for their buddies). A pair whose merge finds no memory for the larger
 * order's list stays as it is: free, only not merged, and the next failed allocation tries
 * again. */
static void coalesce(MPIDI_PART_tagspace_t * ts)
{
    int32_t skipped = 0;

    for (int32_t k = 0; k < ts->bits; k++) {
        int32_t n = ts->nfree[k], kept = 0;
        int64_t size = (int64_t) 1 << k;
        int64_t *f = ts->free[k];
        if (n < 2)
            continue;
        qsort(f, n, sizeof(int64_t), cmp_base);
        for (int32_t i = 0; i < n; i++) {
            int pair = i + 1 < n && (f[i] & size) == 0 && f[i + 1] == f[i] + size;
            if (pair && reserve(ts, k + 1) == 0) {
                push(ts, k + 1, f[i]);
                i++;
            } else {
                skipped |= pair;
                f[kept++] = f[i];
            }
        }
        ts->nfree[k] = kept;
    }
    ts->unmerged = skipped;
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

/* The smallest order >= order with a free block, or -1. */
static int32_t first_free(const MPIDI_PART_tagspace_t * ts, int32_t order)
{
    for (int32_t j = order; j <= ts->bits; j++)
        if (ts->nfree[j] > 0)
            return j;
    return -1;
}

int64_t MPIDI_PART_tagspace_alloc(MPIDI_PART_tagspace_t * ts, int32_t order)
{
    if (order < 0 || order > ts->bits)
        return -1;
    int32_t j = first_free(ts, order);
    if (j < 0 && ts->unmerged) {
        coalesce(ts);
        j = first_free(ts, order);
    }
    if (j < 0)
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

/* The block goes on its order's list as it is: buddies are merged only when an allocation
 * finds no block large enough (coalesce). A program that takes and gives back small blocks
 * (a request per message) then pays no walk through every order, each time, to merge
 * a block up to the whole space and to split it down again. */
void MPIDI_PART_tagspace_free(MPIDI_PART_tagspace_t * ts, int64_t base, int32_t order)
{
    ts->in_use -= (int64_t) 1 << order;
    ts->blocks--;
    if (reserve(ts, order) != 0) {
        /* no memory for the list entry: the block stays unusable (counted as held) */
        ts->in_use += (int64_t) 1 << order;
        return;
    }
    push(ts, order, base);
    ts->unmerged = 1;
}
