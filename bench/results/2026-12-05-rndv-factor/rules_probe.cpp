// reads PARTOBS dumps (stdin), prints the observed chooser's pick per rule
extern "C" {
#include "part_ploggp.h"
extern double g_rndv_mult;
}
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include <algorithm>
#include "partobs_dump.h"
int main(int argc, char **argv) {
  const MPIDI_PART_loggp_t *t = MPIDI_PART_loggp_builtin(argc > 1 && std::string(argv[1]) == "tcp" ? MPIDI_PART_LOGGP_TCP : MPIDI_PART_LOGGP_SHM);
  PartObs d;
  while (read_partobs(std::cin, d)) {
    const int n = d.n, nobs = d.nobs, parts = d.parts, k = d.k, early = d.early;
    const long long S = d.bytes;
    const double tau = d.tau;
    std::vector<double> &ready = d.ready, &sent = d.sent;
    MPIDI_PART_problem_t pb{S, parts, n};
    printf("S %lld n %d engine k %d T %d |", S, n, k, (n + k - 1) / k);
    for (double m : {1.0, 1.5, 2.0, 3.0}) {
      g_rndv_mult = m; double pred;
      int kk = MPIDI_PART_ploggp_choose_observed_multi(t, &pb, nobs, ready.data(), early ? nullptr : sent.data(), tau, 0, &pred, nullptr);
      printf(" m%.1f:T%d", m, (n + kk - 1) / kk);
    }
    g_rndv_mult = 1.0;
    // tolerance rule: median prediction per k (same as the chooser), fewest messages within eps
    std::vector<double> adj(n * nobs);
    for (int o = 0; o < nobs; o++) MPIDI_PART_ploggp_adjust_ready(n, &ready[o*n], early ? nullptr : &sent[o*n], &adj[o*n]);
    std::vector<std::pair<int,double>> kp;
    double best = 1e300;
    for (int kk = 1; kk <= n; kk++) {
      std::vector<double> x;
      for (int o = 0; o < nobs; o++) x.push_back(MPIDI_PART_ploggp_predict_observed(t, &pb, &adj[o*n], -1, kk));
      std::sort(x.begin(), x.end());
      double med = nobs % 2 ? x[nobs/2] : (x[nobs/2-1] + x[nobs/2]) / 2;
      kp.push_back({kk, med}); best = std::min(best, med);
    }
    for (double eps : {0.02, 0.05}) {
      int bk = 1; for (auto &p : kp) if (p.second <= best * (1 + eps)) bk = p.first;
      printf(" e%.2f:T%d", eps, (n + bk - 1) / bk);
    }
    printf(" | spread");
    for (int o = 0; o < nobs; o++) { double mx = *std::max_element(&adj[o*n], &adj[o*n]+n); printf(" %.0f", mx); }
    printf("\n");
  }
}
