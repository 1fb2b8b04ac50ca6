// loggp_fit.hpp: the pure part of part_calibrate: one measured size's LogGP values, the
// piecewise fit of g + G*s, L, the protocol-step tests and the parameter-file text
// (src/mpid/ch4/netmod/part/part_ploggp.h's format). The fit itself is the engine's C code
// (src/mpid/ch4/netmod/part/part_loggp_fit.c, also used by the calibration at MPI_Init);
// these are its C++ faces. No MPI here, so the unit tests (unittest/test_loggp_fit.cpp)
// build it on its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "part_loggp_fit.h"

namespace calib {

using Point = MPIDI_PART_calib_pt_t;    // per measured size, all in microseconds

struct Fit {
    double g = 0, G = 0;
};

// o_s + o_r: what a protocol step shows in.
inline double overhead(const Point &p)
{
    return MPIDI_PART_calib_overhead(&p);
}

// What a protocol step shows in (part_loggp_fit.h): the overhead o_s + o_r, or the round
// trip PRTT(1,0,s).
enum class Step { Overhead = MPIDI_PART_CALIB_STEP_OVERHEAD, RoundTrip = MPIDI_PART_CALIB_STEP_RTT };

inline double step_value(const Point &p, Step k)
{
    return MPIDI_PART_calib_step_value(&p, static_cast<int>(k));
}

// Whether a step of that kind is looked for in a bracket up to hi (the round trip: to 64 KiB).
inline bool step_applies(const Point &hi, Step k)
{
    return MPIDI_PART_calib_step_applies(&hi, static_cast<int>(k)) != 0;
}

// Whether that quantity grows enough between two neighbouring listed sizes to look for a
// protocol step between them.
inline bool step_candidate(const Point &lo, const Point &hi, Step k)
{
    return MPIDI_PART_calib_step_candidate(&lo, &hi, static_cast<int>(k)) != 0;
}

// Bisection toward a step: a size whose value is above this belongs to the upper side.
inline double step_split(const Point &lo, const Point &hi, Step k)
{
    return MPIDI_PART_calib_step_split(&lo, &hi, static_cast<int>(k));
}

// Whether a bracket narrowed down to neighbouring sizes is a step, not a slope.
inline bool step_confirmed(const Point &lo, const Point &hi, Step k)
{
    return MPIDI_PART_calib_step_confirmed(&lo, &hi, static_cast<int>(k)) != 0;
}

// Least squares of gall = g + G*s over points [a, b), weighted by 1/gall^2 (relative
// error); g, G >= 0. One point: through the origin.
inline Fit fit(const std::vector<Point> &p, size_t a, size_t b)
{
    Fit f;
    MPIDI_PART_calib_fit(p.data(), a, b, &f.g, &f.G);
    return f;
}

// Pieces: a new one starts where a point misses the current piece's line by more than 30 %
// (and more than 0.2 us). Sets every point's g and G; starts gets each piece's first index.
inline void fit_pieces(std::vector<Point> &p, std::vector<size_t> &starts)
{
    starts.assign(p.size() + 1, 0);
    starts.resize(std::max<size_t>(1, MPIDI_PART_calib_fit_pieces(p.data(), p.size(),
                                                                 starts.data())));
}

// L = PRTT(1)/2 - o_s - o_r - G*s, at least 0 (after fit_pieces).
inline void derive_latency(std::vector<Point> &p)
{
    MPIDI_PART_calib_latency(p.data(), p.size());
}

// The table in part_ploggp.h's format: "transport NAME", a comment, one line per point.
void write_table(FILE *f, const std::string &transport, const std::vector<Point> &p);

}  // namespace calib
