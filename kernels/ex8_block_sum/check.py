"""Exercise 8: the sum of each row, by blocks that work together.

Each row gets several blocks of 256 threads. Write in `ex8_block_sum.h` (a) `slice_sum_thread` (roughly 3 lines):
one thread's grid-stride loop over its row, and (b) `block_finish` (roughly 7 lines): each warp's sum into shared
memory, a barrier (`block_sync()`), warp 0 adds the 8 slots and `atomic_add`s the total into its row's result. On a
laptop, the CPU runs the same code: a block's 8 warps as 8 threads with a real barrier, warp 0 first.

Checked against `x.double().sum(dim=-1)` on every device here: on awkward row lengths (1, 255, 257, 1025, 4099,
...), on several rows at once (each block must add into its own row), with NaN in the memory right after x (a
thread that reads past the end is caught), and with warps 1-7 held back (a missing barrier is caught every time).

In the reductions lesson; grade it with `check("ex8_block_sum")`, or `python -m kit.grade ex8_block_sum`."""

import torch

from kit.checks import Report, devices, load_op, padded

NUMBER = 8  # its place in the lessons
EDIT = "kernels/ex8_block_sum/ex8_block_sum.h"  # the file to edit
LENGTHS = [1, 31, 255, 256, 257, 1000, 1023, 1024, 1025, 2049, 4099, 8191, 8193, 100003]  # one row each
ROWS = [(3, 1000), (7, 257), (4, 4099), (2, 10000)]
PAST_END = [(1, 257), (1, 4099), (3, 1000)]
RACE = [(1, 1024), (1, 8192), (2, 4099)]
RACE_HINT = ("NaN came out of finite inputs: warp 0 read a slot of warp_sums before its warp wrote it (the slots "
             "hold NaN until then). Between writing warp_sums[warp] and reading the slots, every warp must wait "
             "at block_sync()")


def run(op, x, dev, fill):
    """op on x (CPU, rows x cols) placed at the start of a buffer on dev, followed by `fill` in memory."""
    view, _ = padded(x.numel(), dev, fill)
    view.copy_(x.flatten())
    return op(view.view(x.shape), stagger=True).cpu()


def bad_rows(got, x):
    """The rows whose sum is off by more than float32's rounding (NaN counts as off)."""
    tol = 1e-5 * x.double().abs().sum(-1) + 1e-6
    return (~((got.double() - x.double().sum(-1)).abs() <= tol)).nonzero().flatten().tolist()


def inputs(shapes):
    for rows, cols in shapes:
        yield torch.randn(rows, cols, generator=torch.Generator().manual_seed(rows * 100003 + cols))


def describe(x, got, row):
    return (f"x of shape {tuple(x.shape)}: out[{row}] should be {float(x.double().sum(-1)[row]):.6g}, "
            f"got {float(got[row]):.6g}")


def grade(ops, kit_root):
    report = Report("ex8_block_sum", EDIT)
    op = load_op(ops, "ex8_block_sum", report)
    if op is None:
        return report
    for dev in devices():
        failure = next(((x, got, bad[0]) for x in inputs([(1, n) for n in LENGTHS])
                        for got in [run(op, x, dev, 0.0)] for bad in [bad_rows(got, x)] if bad), None)
        if failure is None:
            report.add(f"matches x.sum(dim=-1) on {dev}", True, f"rows of {LENGTHS[0]} to {LENGTHS[-1]} elements")
        else:
            x, got, row = failure
            report.add(f"matches x.sum(dim=-1) on {dev}", False, "smallest failing: " + describe(x, got, row),
                       RACE_HINT if got.isnan().any() else
                       "every element of the row must be added by exactly one thread: thread t of block b starts at "
                       "b * 256 + t and steps by blocks * 256 while i < cols; is the first or the last one missed?")

        failure = next(((x, got, bad[0]) for x in inputs(ROWS)
                        for got in [run(op, x, dev, 0.0)] for bad in [bad_rows(got, x)] if bad), None)
        if failure is None:
            report.add(f"adds into its own row on {dev}", True, f"{len(ROWS)} inputs of several rows")
        else:
            x, got, row = failure
            into_row0 = abs(float(got[0]) - float(x.double().sum())) <= 1e-5 * float(x.abs().sum()) + 1e-6
            report.add(f"adds into its own row on {dev}", False, describe(x, got, row),
                       RACE_HINT if got.isnan().any() else
                       "all rows were added into out[0]: each block adds its total into out[row]" if into_row0 else
                       "each block must add its total into its own row's out[row], once")

        failure = None
        for x in inputs(PAST_END):
            clean, sentinel = run(op, x, dev, 0.0), run(op, x, dev, float("nan"))
            past = (sentinel.isnan() & ~clean.isnan()).nonzero().flatten().tolist()
            if past:
                failure = (x, past[0])
                break
        if failure is None:
            report.add(f"reads nothing past the end on {dev}", True, "with NaN in the memory after x")
        else:
            x, row = failure
            report.add(f"reads nothing past the end on {dev}", False,
                       f"x of shape {tuple(x.shape)} followed by NaN in memory: out[{row}] came out NaN, so a thread "
                       f"read past x's last element",
                       "the loop must stop while i < cols: element cols is the next row's first, or past the tensor")

        results = [(x, run(op, x, dev, 0.0)) for x in inputs(RACE)]
        raced = next(((x, got) for x, got in results if got.isnan().any()), None)
        if raced:
            x, got = raced
            report.add(f"waits for every warp on {dev}", False,
                       describe(x, got, int(got.isnan().nonzero()[0][0])) + " (with warps 1-7 held back)", RACE_HINT)
        elif all(not bad_rows(got, x) for x, got in results):
            report.add(f"waits for every warp on {dev}", True, "with warps 1-7 held back")
        else:
            report.skip(f"waits for every warp on {dev}", "not checked yet: the sums are wrong (see above)")
    return report
