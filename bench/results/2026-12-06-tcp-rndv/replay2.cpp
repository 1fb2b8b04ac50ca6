// replay2.cpp: the observed chooser's pick (MPIDI_PART_ploggp_choose_observed_multi) for each
// PARTOBS dump on stdin; built against a part_ploggp.c with xfix.patch, XFIX=1 takes the
// transfer out of the timeline's o_s and o_r past the rendezvous switch.
extern "C" {
#include "part_ploggp.h"
}
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
int main(int argc, char **argv) {
  const MPIDI_PART_loggp_t *t = MPIDI_PART_loggp_builtin(argc > 1 && std::string(argv[1]) == "tcp" ? MPIDI_PART_LOGGP_TCP : MPIDI_PART_LOGGP_SHM);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream is(line); std::string tag; is >> tag;
    if (tag != "PARTOBS") continue;
    int n, nobs, parts, k, early; long long S; double tau;
    is >> n >> nobs >> S >> parts >> k >> early >> tau;
    std::vector<double> ready(n * nobs), sent(n * nobs);
    for (int o = 0; o < nobs; o++) {
      std::getline(std::cin, line); { std::istringstream r(line.substr(1)); for (int j = 0; j < n; j++) r >> ready[o*n+j]; }
      std::getline(std::cin, line); { std::istringstream r(line.substr(1)); for (int j = 0; j < n; j++) r >> sent[o*n+j]; }
    }
    MPIDI_PART_problem_t pb{S, parts, n};
    int kk = MPIDI_PART_ploggp_choose_observed_multi(t, &pb, nobs, ready.data(), early ? nullptr : sent.data(), tau, 0, nullptr, nullptr);
    printf("bytes %lld n %d nobs %d engine T %d replay T %d\n", S, n, nobs, (n + k - 1) / k, (n + kk - 1) / kk);
  }
}
