"""Exercise 6 (end of 04_timing.ipynb): time GPU work correctly.

Write time_kernel(fn): the median time, in seconds, that one call of fn (a function that launches GPU work and
returns at once, as every CUDA launch does) takes on the GPU. Use the host clock (time.perf_counter) or CUDA
events, your choice; remember what the seed's four timing cases showed.
Grade it with `from kit.grade import check; check("ex6_time_kernel")` (needs a GPU).
"""
import time

import torch


def time_kernel(fn, reps=20):
    # TODO (roughly 8 lines): warm up once; then, reps times, time one call of fn so that the time covers the
    # GPU work and nothing that was queued before it; return the median.
    raise NotImplementedError("exercise 6: write time_kernel (see the docstring)")
