// replay.cpp: the observed chooser's prediction per message count for PARTOBS dumps (stdin)
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
    std::vector<double> ready(n), sent(n), adj(n);
    std::getline(std::cin, line); { std::istringstream r(line.substr(1)); for (int j = 0; j < n; j++) r >> ready[j]; }
    std::getline(std::cin, line); { std::istringstream r(line.substr(1)); for (int j = 0; j < n; j++) r >> sent[j]; }
    MPIDI_PART_problem_t pb{S, parts, n};
    MPIDI_PART_ploggp_adjust_ready(n, ready.data(), sent.data(), adj.data());
    double mx = 0; for (double a : adj) mx = a > mx ? a : mx;
    printf("S %lld engine T %d adjusted spread %.0f |", S, (n + k - 1) / k, mx);
    for (int kk : {n, (n + 1) / 2, (n + 2) / 3, n / 4, n / 8, 1}) {
      double x = MPIDI_PART_ploggp_predict_observed(t, &pb, adj.data(), -1, kk);
      printf(" T%d:%.0f", (n + kk - 1) / kk, x);
    }
    printf("\n");
  }
}
