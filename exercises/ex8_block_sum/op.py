"""Exercise 8: the sum of each row by blocks that work together. Edit slice_sum_thread and block_finish in
ex8_block_sum.h; grade with kit.grade.check("ex8_block_sum")."""

import torch

SCHEMAS = ["ex8_block_sum(Tensor x, bool stagger=False) -> Tensor"]


def register(lib):
    torch.library.register_fake("labkit::ex8_block_sum", lib=lib)(lambda x, stagger=False: x.new_empty(x.shape[:1]))


def ex8_block_sum(x, *, stagger=False):
    """The sum of each row of x (float32, rows x cols) by your kernel: a tensor of rows. stagger=True holds warps
    1-7 of every block back on the GPU (~50 us), so that a missing barrier shows every time (the CPU always runs
    warp 0 first)."""
    return torch.ops.labkit.ex8_block_sum(x, stagger)
