// Exercise 11: the ring's bookkeeping in the Hopper matmul. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex11_wgmma_ring_given.h"  // RingStep

// Step i (counted over every tile the block computes) of a ring of `stages` slots: its slot, the parity of the phase
// of full[slot] that the consumer waits for, and the parity of the phase of empty[slot] that the producer waits for.
KIT_HD inline RingStep ring_step(int64_t i, int stages) {
    const int64_t pass = i / stages;  // how many times this slot was filled before
    return RingStep{int(i % stages), int(pass % 2), int((pass + 1) % 2)};
}
