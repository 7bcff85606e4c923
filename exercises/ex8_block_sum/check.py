"""Exercise 8: the sum of each row, by blocks that work together.

Row r of x (rows x cols) gets `blocks` blocks of 256 threads (several when the row is long). Write in
`ex8_block_sum.h`:
- (a) `slice_sum_thread` (roughly 3 lines): one thread's grid-stride loop. Thread t of block b of its row adds the
  elements b * 256 + t, then one grid (blocks * 256) further each time, while they are inside the row.
- (b) `block_finish` (roughly 7 lines): the block's 256 sums become one. Each warp adds its 32 (`warp_sum`, as in
  exercise 7, given) and writes that into its slot of shared memory; warp 0 adds the 8 slots and adds the block's
  total into the row's result with `atomic_add` (several blocks add into each row). Warp 0 must not read a slot
  before its warp wrote it: between the writes and the reads, every warp of the block waits at `block_sync()`.

`block_finish` is warp code (cpu_warp.h): `Lanes` is one value per lane; plain values (float, int) are the same in
every lane; `atomic_add` adds once per warp. On the GPU `block_sync()` is `__syncthreads()`. On a laptop the CPU runs
the same code: a block's 8 warps as 8 threads with a real barrier, warp 0 first until it reaches the barrier, so a
missing barrier fails every time.

Checked against `x.double().sum(dim=-1)` on every device here: on awkward row lengths (1, 255, 257, 1025, 4099,
...), on several rows at once (each block must add into its own row), with NaN in the memory right after x (a
thread that reads past the end is caught), and with warps 1-7 held back (a missing barrier is caught every time).

In the reductions lesson; grade it with `check("ex8_block_sum")`, or `python -m kit.grade ex8_block_sum`."""

import torch

from kit.checks import begin, devices, padded

NUMBER = 8  # its place in the lessons
EDIT = "exercises/ex8_block_sum/ex8_block_sum.h"  # the file to edit
LENGTHS = [1, 31, 255, 256, 257, 1000, 1023, 1024, 1025, 2049, 4099, 8191, 8193, 100003]  # one row each
ROWS = [(3, 1000), (7, 257), (4, 4099), (2, 10000)]
PAST_END = [(1, 257), (1, 4099), (3, 1000)]
RACE = [(1, 1024), (1, 8192), (2, 4099)]
RACE_HINT = (
    "NaN came out of finite inputs: warp 0 read a slot of warp_sums before its warp wrote it (the slots "
    "hold NaN until then). Between writing warp_sums[warp] and reading the slots, every warp must wait "
    "at block_sync()"
)


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
    return (
        f"x of shape {tuple(x.shape)}: out[{row}] should be {float(x.double().sum(-1)[row]):.6g}, "
        f"got {float(got[row]):.6g}"
    )


DIAGNOSE_COLS = 3000  # the row the hint is chosen on: 3 blocks, each thread's loop 4 elements long


def slice_diagnosis(op, dev):
    """The hint for the mistake op's loop or finish makes, told from its sum of one row of DIAGNOSE_COLS elements:
    each known mistake adds each element a known number of times."""
    x = torch.randn(DIAGNOSE_COLS, generator=torch.Generator().manual_seed(8)).double()
    got = float(op(x.float().view(1, -1).to(dev)).cpu()[0])
    i = torch.arange(DIAGNOSE_COLS)
    blocks, block = 3, 256
    wrong = [
        (i < DIAGNOSE_COLS - 1, "the row's last element was left out: look at where the loop stops"),
        (i >= 1, "the row's first element was left out: look at where thread 0 of block 0 starts"),
        (i < blocks * block, "each thread added only its first element: the loop must go on along the row"),
        (
            (i // block + 1).clamp(max=blocks),
            "some elements were added more than once: after its element, a "
            "thread's next one lies past every block of the row, not one",
        ),
        (
            i % block < 32,
            "only warp 0's sums reached the total: every warp's sum goes into its slot, and warp 0 adds all 8 slots",
        ),
    ]
    tol = 1e-5 * float(x.abs().sum()) + 1e-6
    return next(
        (hint for weight, hint in wrong if abs(got - float((x * weight).sum())) <= tol),
        "every element of the row must be added by exactly one thread: which element does thread t of block "
        "b take first, and how far along the row is its next one?",
    )


def grade(ops, kit_root):
    report, op = begin(ops, "ex8_block_sum", EDIT)
    if op is None:
        return report
    for dev in devices():
        failure = next(
            (
                (x, got, bad[0])
                for x in inputs([(1, n) for n in LENGTHS])
                for got in [run(op, x, dev, 0.0)]
                for bad in [bad_rows(got, x)]
                if bad
            ),
            None,
        )
        if failure is None:
            report.add(f"matches x.sum(dim=-1) on {dev}", True, f"rows of {LENGTHS[0]} to {LENGTHS[-1]} elements")
        else:
            x, got, row = failure
            report.add(
                f"matches x.sum(dim=-1) on {dev}",
                False,
                "smallest failing: " + describe(x, got, row),
                RACE_HINT if got.isnan().any() else slice_diagnosis(op, dev),
            )

        failure = next(
            (
                (x, got, bad[0])
                for x in inputs(ROWS)
                for got in [run(op, x, dev, 0.0)]
                for bad in [bad_rows(got, x)]
                if bad
            ),
            None,
        )
        if failure is None:
            report.add(f"adds into its own row on {dev}", True, f"{len(ROWS)} inputs of several rows")
        else:
            x, got, row = failure
            into_row0 = abs(float(got[0]) - float(x.double().sum())) <= 1e-5 * float(x.abs().sum()) + 1e-6
            report.add(
                f"adds into its own row on {dev}",
                False,
                describe(x, got, row),
                RACE_HINT
                if got.isnan().any()
                else "all rows were added into out[0]: each block adds its total into out[row]"
                if into_row0
                else "each block must add its total into its own row's out[row], once",
            )

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
            report.add(
                f"reads nothing past the end on {dev}",
                False,
                f"x of shape {tuple(x.shape)} followed by NaN in memory: out[{row}] came out NaN, so a thread "
                f"read past x's last element",
                "look at where the loop stops: the row's elements are 0 .. cols - 1; element cols is the next "
                "row's first, or past the tensor",
            )

        results = [(x, run(op, x, dev, 0.0)) for x in inputs(RACE)]
        raced = next(((x, got) for x, got in results if got.isnan().any()), None)
        if raced:
            x, got = raced
            report.add(
                f"waits for every warp on {dev}",
                False,
                describe(x, got, int(got.isnan().nonzero()[0][0])) + " (with warps 1-7 held back)",
                RACE_HINT,
            )
        elif all(not bad_rows(got, x) for x, got in results):
            report.add(f"waits for every warp on {dev}", True, "with warps 1-7 held back")
        else:
            report.skip(f"waits for every warp on {dev}", "not checked yet: the sums are wrong (see above)")
    return report
