// partobs_dump.h: reads one PARTOBS record (probe.patch's dump of an observed re-plan) from
// a stream: the header line "PARTOBS n nobs bytes partitions k early tau", then per sample
// an "R" line (ready times) and an "S" line (send times). Used by rules_probe.cpp and
// ../2026-12-06-tcp-rndv/replay.cpp.
#pragma once
#include <istream>
#include <sstream>
#include <string>
#include <vector>

struct PartObs {
  int n = 0, nobs = 0, parts = 0, k = 0, early = 0;
  long long bytes = 0;
  double tau = 0;
  std::vector<double> ready, sent;  // nobs x n each
};

// The next record in in; false at the end.
inline bool read_partobs(std::istream &in, PartObs &d) {
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    std::string tag;
    is >> tag;
    if (tag != "PARTOBS") continue;
    is >> d.n >> d.nobs >> d.bytes >> d.parts >> d.k >> d.early >> d.tau;
    d.ready.assign((size_t)d.n * d.nobs, 0.0);
    d.sent.assign((size_t)d.n * d.nobs, 0.0);
    for (int o = 0; o < d.nobs; o++)
      for (std::vector<double> *v : {&d.ready, &d.sent}) {
        std::getline(in, line);
        std::istringstream r(line.substr(1));
        for (int j = 0; j < d.n; j++) r >> (*v)[(size_t)o * d.n + j];
      }
    return true;
  }
  return false;
}
