"""Exercise 6 (end of 04_timing.ipynb), solution: host timing, synchronised before and after each call."""

import statistics
import time

import torch


def time_kernel(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()  # nothing queued earlier may count
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()  # the launch returned at once: wait for the GPU work itself
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
