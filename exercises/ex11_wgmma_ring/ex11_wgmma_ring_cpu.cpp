// Exercise 11's CPU model of the Hopper kernels' ring (versions 9-12, kernels/matmul/matmul_hopper.cuh): a producer
// and a consumer, each a loop over the steps, taking turns, each running until it must wait. An mbarrier is the
// count of its completed phases: waiting for the phase of parity p passes when the count's parity is not p (a new
// barrier, count 0, passes a wait for parity 1: the phase before its first counts as completed). The tiles are real:
// the producer copies step i's tiles of A and B into the slot, the consumer multiplies what is in the slot, so a
// wrong wait gives a wrong C as it would on the GPU; the model also says which step went wrong, and how. Nothing to
// edit here.
#include <vector>

#include "ex11_wgmma_ring.h"

namespace {

constexpr int kTile = 8;  // rows, columns and depth of one step's tiles

struct Slot {
    float a[kTile][kTile], b[kTile][kTile];
    int64_t step = -1;  // whose tiles the slot holds (-1: none yet)
    bool read = true;   // whether the consumer has read them
};

// Waiting for the phase of parity `parity` of a barrier that has completed `done` phases.
bool passes(int64_t done, int parity) { return done % 2 != parity; }

}  // namespace

int64_t ex11_wgmma_ring_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int stages,
                            int order, int64_t* step, int64_t* slot) {
    const int64_t tiles_m = (M + kTile - 1) / kTile, tiles_n = (N + kTile - 1) / kTile, steps_k = (K + kTile - 1) / kTile;
    const int64_t total = tiles_m * tiles_n * steps_k;  // the steps of every tile, one after another
    std::vector<Slot> ring(stages);
    std::vector<int64_t> full(stages, 0), empty(stages, 0);  // completed phases
    std::vector<float> acc(kTile * kTile, 0.0f);
    int64_t produced = 0, consumed = 0;
    *step = *slot = -1;
    auto fail = [&](int64_t status, int64_t i, int64_t s) {
        *step = i;
        *slot = s;
        return status;
    };
    while (consumed < total) {
        bool moved = false;
        for (int turn = 0; turn < 2; turn++) {
            const bool producer = (turn == 0) == (order == 0);
            if (producer) {  // the producer: wait until the slot is empty, then copy step i's tiles into it
                for (; produced < total; produced++) {
                    const int64_t i = produced;
                    const RingStep r = ring_step(i, stages);
                    if (r.slot < 0 || r.slot >= stages) return fail(kRingBadSlot, i, r.slot);
                    if (!passes(empty[r.slot], r.empty_parity)) break;
                    Slot& s = ring[r.slot];
                    if (!s.read) return fail(kRingOverwritten, i, r.slot);
                    const int64_t tile = i / steps_k, k0 = (i % steps_k) * kTile;
                    const int64_t row0 = (tile / tiles_n) * kTile, col0 = (tile % tiles_n) * kTile;
                    for (int u = 0; u < kTile; u++) {
                        for (int v = 0; v < kTile; v++) {  // zeros past the edges, as TMA reads them
                            const bool in_a = row0 + u < M && k0 + v < K, in_b = k0 + u < K && col0 + v < N;
                            s.a[u][v] = in_a ? a[(row0 + u) * K + k0 + v] : 0.0f;
                            s.b[u][v] = in_b ? b[(k0 + u) * N + col0 + v] : 0.0f;
                        }
                    }
                    s.step = i;
                    s.read = false;
                    full[r.slot]++;  // TMA's bytes have landed: the phase completes
                    moved = true;
                }
            } else {  // the consumer: wait until the slot is full, multiply its tiles, hand it back
                for (; consumed < total; consumed++) {
                    const int64_t i = consumed;
                    const RingStep r = ring_step(i, stages);
                    if (r.slot < 0 || r.slot >= stages) return fail(kRingBadSlot, i, r.slot);
                    if (!passes(full[r.slot], r.full_parity)) break;
                    Slot& s = ring[r.slot];
                    if (s.step != i) return fail(kRingStale, i, r.slot);
                    for (int u = 0; u < kTile; u++)
                        for (int v = 0; v < kTile; v++)
                            for (int k = 0; k < kTile; k++) acc[u * kTile + v] += s.a[u][k] * s.b[k][v];
                    s.read = true;
                    empty[r.slot]++;  // the release: the producer may refill it
                    moved = true;
                    if (i % steps_k == steps_k - 1) {  // the tile's last step: store it and start the next
                        const int64_t tile = i / steps_k;
                        const int64_t row0 = (tile / tiles_n) * kTile, col0 = (tile % tiles_n) * kTile;
                        for (int u = 0; u < kTile; u++)
                            for (int v = 0; v < kTile; v++)
                                if (row0 + u < M && col0 + v < N) c[(row0 + u) * N + col0 + v] = acc[u * kTile + v];
                        acc.assign(acc.size(), 0.0f);
                    }
                }
            }
        }
        if (!moved) return fail(kRingDeadlock, consumed, ring_step(consumed, stages).slot);
    }
    return kRingOk;
}
