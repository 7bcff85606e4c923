// matmul_ring.h: the bookkeeping of the warp-specialized Hopper kernels' ring of shared-memory slots (versions 9-12,
// matmul_hopper.cuh), apart from the kernels so that a CPU model of the ring can run it too (exercise 11).
//
// A block's producer and consumers walk the same sequence of steps i = 0, 1, 2, ... (one 64-deep step of k each,
// counted over all the tiles the block computes). Step i uses slot i % stages. Each slot has two mbarriers: "full"
// (the producer's arrival and TMA's bytes complete one of its phases per fill) and "empty" (the consumers' releases
// complete one of its phases per use). A barrier's phases alternate in parity (0, 1, 0, ...), and a waiter names the
// parity of the phase it waits for; a new barrier counts the phase before its first, of parity 1, as completed.
#pragma once
#include <cstdint>

#include "kit.h"

struct RingStep {
    int slot;          // the slot of the ring that step i fills and reads
    int full_parity;   // the consumer waits for this phase of full[slot]: the fill of step i
    int empty_parity;  // the producer waits for this phase of empty[slot] before refilling it: the use of step i - stages
};

// Pass p = i / stages over the ring fills each slot for the p-th time, which completes full[slot]'s phase p (parity
// p % 2); the producer waits for the release of pass p - 1, empty[slot]'s phase p - 1 (parity (p + 1) % 2), which
// for p = 0 is the phase a new barrier counts as completed: the first pass does not wait.
KIT_HD inline RingStep matmul_ring_step(int64_t i, int stages) {
    const int64_t pass = i / stages;
    return RingStep{int(i % stages), int(pass % 2), int((pass + 1) % 2)};
}
