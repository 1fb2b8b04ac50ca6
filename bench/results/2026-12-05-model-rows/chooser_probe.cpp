#include "part_ploggp.h"
#include <cstdio>
#include <vector>
static int32_t ch(const MPIDI_PART_loggp_t *t, MPIDI_PART_problem_t pb, std::vector<double> r, std::vector<double> *s, double tau) {
    return MPIDI_PART_ploggp_choose_observed_multi(t, &pb, 1, r.data(), s ? s->data() : nullptr, tau, pb.ngcd, nullptr, nullptr);
}
int main() {
    auto shm = MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_SHM), tcp = MPIDI_PART_loggp_builtin(MPIDI_PART_LOGGP_TCP);
    std::vector<double> s4 = {1.55, 46.41, 13.55, 0.76};
    printf("4x1MiB(4M) k=%d\n", ch(shm, {4<<20, 4, 4}, {0, -2044.7, -1838.6, 209.93}, &s4, 2.14e6));
    std::vector<double> s1 = {1.87, 40.05, 1.81, 5.41};
    printf("4x256K(1M) k=%d\n", ch(shm, {1<<20, 4, 4}, {0, -346.54, 276.30, -283.40}, &s1, 2.14e6));
    std::vector<double> s6 = {55.16, 58.03, 72.74, 76.16};
    printf("4x16K(64K) k=%d\n", ch(shm, {64<<10, 4, 4}, {0, -63.83, -142.55, -225.44}, &s6, 2.14e6));
    std::vector<double> ready(128), sent(128, 7.35); const int order[4] = {0, 2, 1, 3};
    for (int j = 0; j < 128; j++) ready[j] = (31 * 8.0 + 7.35 + 7.0) * order[j / 32] + 8.0 * (j % 32);
    printf("t107 k=%d k_raw=%d\n", ch(tcp, {128*1024,128,128}, ready, &sent, 2.14e6), ch(tcp, {128*1024,128,128}, ready, nullptr, 2.14e6));
    std::vector<double> r2(64), s2(64, 2.0); for (int j = 0; j < 64; j++) r2[j] = 2.05 * j;
    printf("t111 k=%d\n", ch(shm, {64*256,64,64}, r2, &s2, 0.5));
    // synthetic 4x32 bursts, threads 20 us apart, partitions 0.5 us apart, for totals
    for (long S : {128L*128, 1024L*128, 64L<<10, 1L<<20, 4L<<20}) {
        std::vector<double> r(128); for (int j = 0; j < 128; j++) r[j] = 20.0 * (j/32) + 0.5 * (j%32);
        printf("4x32 burst S=%ld k=%d\n", S, ch(shm, {S,128,128}, r, nullptr, 2.14e6));
    }
}
