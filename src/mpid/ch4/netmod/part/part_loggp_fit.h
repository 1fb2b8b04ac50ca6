/*
 * part_loggp_fit.h: the LogGP fit of a calibration, as pure logic: one measured size's
 * values, the piecewise least squares of g + G*s, L, the protocol-step tests and the table
 * they give (in part_ploggp.h's text format, which MPIDI_PART_loggp_parse reads).
 *
 * No MPICH header here: compiled into libmpi (the calibration at MPI_Init, part_calib.c),
 * into tools/part-calibrate (loggp_fit.hpp wraps it) and into the GoogleTest unit tests
 * (unittest/test_loggp_fit.cpp). The measurement method is tools/part-calibrate's
 * (Netgauge's parametrised round trip; part_calibrate.cpp's header has the formulas).
 */
#ifndef PART_LOGGP_FIT_H_INCLUDED
#define PART_LOGGP_FIT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One measured size, all in microseconds. */
typedef struct MPIDI_PART_calib_pt {
    int64_t s;                  /* bytes */
    double prtt1, prttn, prttnd;        /* PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s) */
    double gall;                /* (PRTT(n,0,s) - PRTT(1,0,s)) / (n - 1) */
    double os, orr, L;          /* o_s, o_r, L */
    double g, G;                /* from the fitted piece that holds s */
    double S;                   /* the sender's unhidden time: MPI_Isend, a gap of 2 PRTT(1,0,s)
                                 * without MPI calls, MPI_Wait; the two calls' time (median).
                                 * 0: not measured (libfabric writes) */
} MPIDI_PART_calib_pt_t;

/* o_s + o_r: what a protocol step shows in. */
double MPIDI_PART_calib_overhead(const MPIDI_PART_calib_pt_t * p);

/* What a protocol step shows in. The per-message overhead o_s + o_r: MPICH's shared memory
 * at 8256 bytes (a stream's cost per message doubles, a single round trip hardly moves).
 * The round trip PRTT(1,0,s): libfabric shm at 4097 bytes (the copy by system call adds
 * about 0.7 us, a quarter, to a round trip; the overheads do not move). */
enum {
    MPIDI_PART_CALIB_STEP_OVERHEAD = 1,
    MPIDI_PART_CALIB_STEP_RTT = 2
};

/* The quantity a step of that kind shows in: o_s + o_r, or PRTT(1,0,s). */
double MPIDI_PART_calib_step_value(const MPIDI_PART_calib_pt_t * p, int kind);

/* Whether a step of that kind is looked for in a bracket up to hi: the overhead always, the
 * round trip only up to 64 KiB. */
int MPIDI_PART_calib_step_applies(const MPIDI_PART_calib_pt_t * hi, int kind);

/* Whether that quantity grows enough between two neighbouring listed sizes to look for a
 * protocol step between them: the overhead more than doubles and by more than 1 us; the
 * round trip (both sizes at most 64 KiB) by a fifth or more and by 0.5 us or more. */
int MPIDI_PART_calib_step_candidate(const MPIDI_PART_calib_pt_t * lo,
                                    const MPIDI_PART_calib_pt_t * hi, int kind);

/* Bisection toward a step: a size whose value is above this belongs to the step's upper
 * side. The overhead: the geometric mean of the ends; the round trip, whose step can sit
 * at the lower end of a bracket with a slope above it: 1.06 x the lower end's. */
double MPIDI_PART_calib_step_split(const MPIDI_PART_calib_pt_t * lo,
                                   const MPIDI_PART_calib_pt_t * hi, int kind);

/* Whether a bracket narrowed down to neighbouring sizes is a step, not a slope: the overhead
 * jumps by half or more across it, the round trip by 10 % and 0.25 us or more. */
int MPIDI_PART_calib_step_confirmed(const MPIDI_PART_calib_pt_t * lo,
                                    const MPIDI_PART_calib_pt_t * hi, int kind);

/* Least squares of gall = g + G*s over points [a, b), weighted by 1/gall^2 (relative
 * error); g, G >= 0. One point: through the origin. */
void MPIDI_PART_calib_fit(const MPIDI_PART_calib_pt_t * p, size_t a, size_t b, double *g,
                          double *G);

/* Pieces: a new one starts where a point misses the current piece's line by more than 30 %
 * (and more than 0.2 us). Sets every point's g and G; starts[] (room for n) gets each
 * piece's first index; returns the number of pieces (0 when n is 0). */
size_t MPIDI_PART_calib_fit_pieces(MPIDI_PART_calib_pt_t * p, size_t n, size_t * starts);

/* L = PRTT(1)/2 - o_s - o_r - G*s, at least 0 (after the fit). */
void MPIDI_PART_calib_latency(MPIDI_PART_calib_pt_t * p, size_t n);

/* The parameter-file text of n fitted points (MPIDI_PART_loggp_parse reads it back): the
 * header "transport name", a comment, one line per point (with S as a seventh number when
 * every point has S > 0). Returns 0, or -1 when a write failed. */
int MPIDI_PART_calib_write(FILE * f, const char *name, const MPIDI_PART_calib_pt_t * p,
                           size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PART_LOGGP_FIT_H_INCLUDED */
