// The CPU as a (very slow) GPU: the same grid, one warp at a time, each warp's 32 lanes in one Lanes.
// Nothing to edit here.
#include "ex7_warp_sum.h"

void ex7_warp_sum_cpu(float* out, const float* x, int64_t n) {
    const int64_t warps = cdiv(n, kEx7Threads) * (kEx7Threads / kWarpSize);
    for (int64_t w = 0; w < warps; w++) {
        Lanes v;
        for (int l = 0; l < kWarpSize; l++) {
            const int64_t i = w * kWarpSize + l;
            v.lane[l] = i < n ? x[i] : 0.0f;
        }
        atomic_add(out, lane0(warp_sum(v)));
    }
}
