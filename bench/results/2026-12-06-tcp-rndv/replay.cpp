// replay.cpp: replays PARTOBS dumps (stdin) through the observed chooser. Per record: the
// engine's pick, the pick of the part_ploggp.c it is linked with (choose_observed_multi),
// and for one-sample records the adjusted spread and the prediction for several message
// counts (predict_observed). Linked with a part_ploggp.c carrying sfix.patch, XFIX=1
// and SFIX=1|2 switch its variants on. Usage: replay shm|tcp < dump
extern "C" {
#include "part_ploggp.h"
}
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
#include "../2026-12-05-rndv-factor/partobs_dump.h"

int main(int argc, char **argv) {
  const bool tcp = argc > 1 && std::string(argv[1]) == "tcp";
  const MPIDI_PART_loggp_t *t = MPIDI_PART_loggp_builtin(tcp ? MPIDI_PART_LOGGP_TCP : MPIDI_PART_LOGGP_SHM);
  PartObs d;
  while (read_partobs(std::cin, d)) {
    const int n = d.n;
    MPIDI_PART_problem_t pb{d.bytes, d.parts, n};
    int kk = MPIDI_PART_ploggp_choose_observed_multi(t, &pb, d.nobs, d.ready.data(),
                                                     d.early ? nullptr : d.sent.data(), d.tau, 0,
                                                     nullptr, nullptr);
    printf("bytes %lld n %d nobs %d engine T %d replay T %d", d.bytes, n, d.nobs,
           (n + d.k - 1) / d.k, (n + kk - 1) / kk);
    if (d.nobs == 1) {
      std::vector<double> adj(n);
      MPIDI_PART_ploggp_adjust_ready(n, d.ready.data(), d.early ? nullptr : d.sent.data(), adj.data());
      double mx = 0;
      for (double a : adj) mx = a > mx ? a : mx;
      printf(" | adjusted spread %.0f |", mx);
      for (int k : {n, (n + 1) / 2, (n + 2) / 3, n / 4, n / 8, 1})
        if (k >= 1)
          printf(" T%d:%.0f", (n + k - 1) / k, MPIDI_PART_ploggp_predict_observed(t, &pb, adj.data(), -1, k));
    }
    printf("\n");
  }
}
