// loggp_fit.hpp: the pure part of part_calibrate: one measured size's LogGP values, the
// piecewise fit of g + G*s, L, the protocol-step tests and the parameter-file text
// (src/mpid/ch4/netmod/part/part_ploggp.h's format). No MPI here, so the unit tests
// (unittest/test_loggp_fit.cpp) build it on its own.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace calib {

struct Point {                  // per measured size, all in microseconds
    int64_t s = 0;
    double prtt1 = 0, prttn = 0, prttnd = 0, gall = 0, os = 0, orr = 0, L = 0;
    double g = 0, G = 0;        // from the fitted piece
};

struct Fit {
    double g = 0, G = 0;
};

// o_s + o_r: what a protocol step shows in.
double overhead(const Point &p);

// Whether the overhead between two neighbouring listed sizes grows enough to look for a
// protocol step between them (more than doubles, and by more than 1 us).
bool step_candidate(const Point &lo, const Point &hi);

// Whether a bracket narrowed down to neighbouring sizes is a step (the overhead jumps by half
// or more across it), not a slope.
bool step_confirmed(const Point &lo, const Point &hi);

// Least squares of gall = g + G*s over points [a, b), weighted by 1/gall^2 (relative
// error); g, G >= 0. One point: through the origin.
Fit fit(const std::vector<Point> &p, size_t a, size_t b);

// Pieces: a new one starts where a point misses the current piece's line by more than 30 %
// (and more than 0.2 us). Sets every point's g and G; starts gets each piece's first index.
void fit_pieces(std::vector<Point> &p, std::vector<size_t> &starts);

// L = PRTT(1)/2 - o_s - o_r - G*s, at least 0 (after fit_pieces).
void derive_latency(std::vector<Point> &p);

// The table in part_ploggp.h's format: "transport NAME", a comment, one line per point.
void write_table(FILE *f, const std::string &transport, const std::vector<Point> &p);

}  // namespace calib
