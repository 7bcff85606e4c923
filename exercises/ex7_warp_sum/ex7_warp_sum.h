// Exercise 7: the sum of a warp's 32 values, by shuffles. The task and how it is graded: check.py, beside this file.
#pragma once
#include "ex7_warp_sum_given.h"

// The sum of v over the warp's 32 lanes, in lane 0 (what the other lanes hold afterwards does not matter).
// TODO (roughly 2 lines): five steps, offsets 16, 8, 4, 2, 1, each adding shfl_down(v, offset) to v.
KIT_HD inline Lanes warp_sum(Lanes v) {
    return v;
}
