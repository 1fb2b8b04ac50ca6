/*
 * part_info.h: how the engine reads a number from an info value (pure C, no MPICH headers;
 * unit-tested in unittest/test_part_info.cpp). The info keys mpich_part_aggr_size and
 * mpich_part_thread_partitions take a plain decimal number: digits only (no sign, no
 * blank, no suffix), within a range the key sets; anything else is the caller's
 * MPI_ERR_INFO_VALUE.
 */
#ifndef PART_INFO_H_INCLUDED
#define PART_INFO_H_INCLUDED

#include <stdint.h>

/* 1 and *value = the number when s is a decimal number in lo..hi (0 <= lo, hi <= INT_MAX),
 * else 0 (*value untouched). At most 18 digits are read: longer strings are out of any int
 * range. */
static inline int MPIDI_PART_info_decimal(const char *s, int64_t lo, int64_t hi, int *value)
{
    int64_t x = 0;
    int i;
    for (i = 0; i < 18 && s[i] >= '0' && s[i] <= '9'; ++i)
        x = 10 * x + (s[i] - '0');
    if (i == 0 || s[i] != '\0' || x < lo || x > hi)
        return 0;
    *value = (int) x;
    return 1;
}

#endif /* PART_INFO_H_INCLUDED */
