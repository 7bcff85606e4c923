"""Exercise 9: C = A @ B with tiles in shared memory.

C = A @ B for any M, N, K (float32, row-major: A is M x K, B is K x N, C is M x N). The lesson's
matmul_smem_kernel (kernels/matmul/matmul.cu), written by you: a block of 32 x 32 threads computes a 32 x 32 tile of
C, one output per thread. Thread (tx, ty) of block (bx, by) owns C[row][col], row = by * 32 + ty, col = bx * 32 + tx.
For each step k0 = 0, 32, 64, ... < K:
1. load: each thread writes ONE element of the A tile, `As[ty][tx] = A[row][k0 + tx]`, and one of the B tile,
   `Bs[ty][tx] = B[k0 + ty][col]`; 0 where that element is past an edge. tx runs along a row of A and of B, so a warp
   (32 threads of one ty) reads 32 consecutive floats: coalesced.
2. `block_sync()`: no thread reads the tiles before every thread of the block wrote its element;
3. accumulate: `acc += As[ty][k] * Bs[k][tx]` for k = 0 .. 31;
4. `block_sync()`: no thread overwrites the tiles with the next step's elements while a slower one still reads.

Then, if (row, col) is inside C, C[row][col] = acc. Every thread reaches every `block_sync()`: a thread past the edge
loads zeros instead of returning early (its elements of the tiles are someone else's inputs). Write
`matmul_tile_thread` in `ex9_matmul_tile.h` (roughly 10 lines). On the GPU `block_sync()` is `__syncthreads()`. On a
laptop, the CPU runs the same code: a block's 1024 threads as coroutines in a fixed order, thread 0 first until its
`block_sync()` (or its return), then thread 1, ... 1023, then the next round; so without the first barrier thread 0
reads the tiles before anyone else wrote them (they hold NaN), and without the second it overwrites its elements
with the next step's before the others read this step's: a missing barrier fails every run.

Checked against `A.double() @ B.double()` on every device here, on shapes whose M, N and K all differ and are not
multiples of 32 (1 x 1 x 1, 7 x 31 x 33, ..., 100 x 65 x 31), with NaN in the memory after A and B (a read past
the end is caught) and after C (a write past it); for each barrier, on inputs where its absence shows (every time:
the CPU runs thread 0 first, a GPU holds warps 1-31 back). On a GPU also on speed: at least 70% of the lesson's
matmul_smem_kernel (`ops.matmul(a, b, version="smem")`) at 2048 x 2048 x 2048, so a tile loaded with threadIdx.x
walking down a column (correct, but uncoalesced) fails.

In the matmul lesson; grade it with `check("ex9_matmul_tile")`, or `python -m kit.grade ex9_matmul_tile`."""

import torch

from kit.checks import GPU, PAD, begin, devices, gpu_alone, shared_note

NUMBER = 9  # its place in the lessons
TIMES_THE_GPU = True  # a check times the GPU: a class's grading runs it after the others (kit/grade.py)
EDIT = "exercises/ex9_matmul_tile/ex9_matmul_tile.h"  # the file to edit
TILE = 32
# (M, N, K), smallest first: all three different, none a multiple of 32 but the last (1, 2 and 4 steps along k)
SHAPES = [(1, 1, 1), (7, 31, 33), (33, 7, 65), (31, 100, 7), (65, 33, 100), (100, 65, 31), (64, 96, 32)]
ONE_STEP = [(32, 32, 32), (64, 33, 17), (33, 64, 7)]  # K <= 32: one load and one barrier each
STEPS = [(32, 32, 64), (33, 65, 100), (64, 32, 96)]  # K > 32: a tile is overwritten while others may read it
SPEED_SIZE = 2048
SPEED_BAR = 0.7  # of the lesson's matmul_smem_kernel, the same algorithm with the same 32 x 32 tiles

LOADED_HINT = (
    "NaN came out of finite inputs: a thread read an element of a tile before its thread wrote it (the "
    "tiles hold NaN until then). Between loading As, Bs and reading them, every thread must wait at "
    "block_sync(); and no thread may return early (a thread past the edge loads zeros, someone else "
    "needs them)"
)
OVERWRITE_HINT = (
    "right with one step along k (K <= 32), wrong with several: a thread loaded the next step's "
    "elements into the tiles while slower threads still read this step's. After the multiply-adds, "
    "every thread must wait at block_sync() before the loop goes on to the next load (or: is k0 "
    "missing from a load's index, or is its edge guard wrong past the first 32?)"
)
UNWRITTEN_HINT = (
    "elements of C were never stored (they still hold the inf C started with): does every thread whose "
    "(row, col) lies inside C store its output, once, after the loop? compare row and col with M and N"
)
MATCH_HINT = (
    "C[row][col] is the sum over k of A[row][k] * B[k][col] (A is M x K, B is K x N, both row-major): "
    "check which element of A and of B each thread loads into its place of As and Bs, and which places "
    "a multiply-add reads; an element past an edge loads as 0"
)


def placed(t, dev, fill, cols):
    """t's values at the start of a buffer on dev, with `fill` after them: room for a tile's reads past the end."""
    big = torch.full((t.numel() + TILE * (cols + 1) + PAD,), fill, device=dev)
    big[: t.numel()].copy_(t.flatten())
    return big[: t.numel()].view(t.shape), big


def inputs(shape):
    m, n, k = shape
    gen = torch.Generator().manual_seed(m * 1_000_003 + n * 1009 + k)
    return torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)


def run(op, shape, dev, fill):
    """C (on the CPU) and whether the memory after it is untouched, for A and B followed by `fill`."""
    a_cpu, b_cpu = inputs(shape)
    a, _ = placed(a_cpu, dev, fill, shape[2])
    b, _ = placed(b_cpu, dev, fill, shape[1])
    c, cbig = placed(torch.empty(shape[0], shape[1]), dev, float("nan"), shape[1])
    c.fill_(float("inf"))  # unwritten elements stay inf; NaN comes from a tile read before it was written
    op(a, b, out=c, stagger=True)
    after = cbig[c.numel() :].cpu()
    return c.cpu(), bool(after.isnan().all())


def wrong(shape, got):
    """The first (row, col) of C that is off by more than float32's rounding (NaN counts as off), or None."""
    a, b = inputs(shape)
    expected = a.double() @ b.double()
    tol = 4 * shape[2] * 2.0**-24 * (a.double().abs() @ b.double().abs()) + 1e-6
    bad = ~((got.double() - expected).abs() <= tol)
    if not bool(bad.any()):
        return None
    i, j = (int(x) for x in bad.nonzero()[0])
    return i, j, float(expected[i, j]), float(got[i, j])


def describe(shape, found):
    i, j, e, g = found
    return f"M, N, K = {shape}: C[{i}][{j}] should be {e:.6g}, got {g:.6g}"


def grade(ops, kit_root):
    report, op = begin(ops, "ex9_matmul_tile", EDIT)
    if op is None:
        return report
    correct_on_gpu = False
    for dev in devices():
        clean = {s: run(op, s, dev, 0.0) for s in SHAPES}
        failure = next(((s, f) for s in SHAPES for f in [wrong(s, clean[s][0])] if f), None)
        if failure is None:
            report.add(f"matches A @ B on {dev}", True, f"{len(SHAPES)} shapes, {SHAPES[0]} to {SHAPES[-1]}")
        else:
            s, f = failure
            one_step_ok = all(wrong(t, clean[t][0]) is None for t in SHAPES if t[2] <= TILE)
            got = clean[s][0]
            report.add(
                f"matches A @ B on {dev}",
                False,
                "smallest failing: "
                + describe(s, f)
                + (" (never written: C started as inf)" if got[f[0], f[1]].isinf() else ""),
                UNWRITTEN_HINT
                if got[f[0], f[1]].isinf()
                else LOADED_HINT
                if got.isnan().any()
                else OVERWRITE_HINT
                if one_step_ok
                else MATCH_HINT,
            )
        correct_on_gpu = dev == "cuda" and failure is None

        overwritten = next((s for s in SHAPES if not clean[s][1]), None)
        if overwritten is None:
            report.add(f"writes nothing past the end on {dev}", True, "with NaN in the memory after C")
        else:
            report.add(
                f"writes nothing past the end on {dev}",
                False,
                f"M, N, K = {overwritten}: the memory after C was overwritten",
                "only a thread with row < M and col < N stores its output: the edge blocks' tiles hang past "
                "C's last row and column (and c[row * N + col] with col >= N is the next row's element)",
            )

        past = None
        for s in SHAPES:
            got, _ = run(op, s, dev, float("nan"))
            nan = (got.isnan() & ~clean[s][0].isnan()).nonzero()
            if len(nan):
                past = (s, [int(x) for x in nan[0]])
                break
        if past is None:
            report.add(f"reads nothing past the end on {dev}", True, "with NaN in the memory after A and B")
        else:
            s, (i, j) = past
            report.add(
                f"reads nothing past the end on {dev}",
                False,
                f"M, N, K = {s}, A and B followed by NaN in memory: C[{i}][{j}] came out NaN, so a thread "
                f"read past the end of A or B",
                "an element is loaded only when it is inside its matrix, else 0: check both bounds of each "
                "load, the one along k too (which size bounds k in A, and in B?)",
            )

        one = {s: run(op, s, dev, 0.0)[0] for s in ONE_STEP}
        steps = {s: run(op, s, dev, 0.0)[0] for s in STEPS}
        results = {**one, **steps}
        nan = next((s for s, got in results.items() if got.isnan().any()), None)
        bad = {s: f for s, got in results.items() for f in [wrong(s, got)] if f}
        held = "thread 0 first" if dev == "cpu" else "warps 1-31 held back"
        if nan:
            s = nan
            i, j = (int(x) for x in results[s].isnan().nonzero()[0])
            report.add(
                f"waits until the tiles are loaded on {dev}",
                False,
                f"M, N, K = {s} ({held}): C[{i}][{j}] came out NaN",
                LOADED_HINT,
            )
        elif not bad:
            report.add(f"waits until the tiles are loaded on {dev}", True, held)
        else:
            report.skip(f"waits until the tiles are loaded on {dev}", "not checked yet: C is wrong (see above)")
        if not bad:
            report.add(f"waits before overwriting the tiles on {dev}", True, f"{held}, K up to {STEPS[1][2]}")
        elif not nan and not any(s in bad for s in ONE_STEP):
            s = next(s for s in STEPS if s in bad)
            report.add(
                f"waits before overwriting the tiles on {dev}",
                False,
                describe(s, bad[s]) + f" ({held}); right on every input with K <= 32",
                OVERWRITE_HINT,
            )
        else:
            report.skip(
                f"waits before overwriting the tiles on {dev}",
                "not checked yet: C is wrong even with one step along k (see above)",
            )

    if not GPU:
        report.skip("speed against the lesson's smem kernel", "needs a CUDA GPU: none here")
    elif not correct_on_gpu:
        report.skip("speed against the lesson's smem kernel", "not timed: C is wrong on cuda (see above)")
    else:
        speed(report, op, ops)
    return report


def speed(report, op, ops):
    from kit.timing import side_by_side
    from loader import ops as lessons  # the lesson's matmul, the kit's own: the yardstick

    n = SPEED_SIZE
    gen = torch.Generator(device="cuda").manual_seed(0)
    a, b = (torch.randn(n, n, device="cuda", generator=gen) for _ in range(2))
    c = torch.empty(n, n, device="cuda")
    try:
        lessons.matmul(a, b, version="smem")
    except Exception as e:  # the kit's own matmul op failed to build or run: nothing to compare with
        report.skip("speed against the lesson's smem kernel", f"the lesson's matmul did not run: {e}")
        return
    # in turn, so that other work on a shared GPU (a class on one server) slows both alike
    with gpu_alone() as alone:  # and a class graded at once: no other grader's kernels in the time
        t = side_by_side({"lesson": lambda: lessons.matmul(a, b, version="smem"), "ours": lambda: op(a, b, out=c)})
    lesson, ours = t["lesson"].median, t["ours"].median
    tflops = 2 * n**3 / ours / 1e12
    ratio = lesson / ours
    report.add(
        f"speed against the lesson's smem kernel ({n}^3)",
        ratio >= SPEED_BAR,
        f"{ours * 1e3:.2f} ms ({tflops:.1f} TFLOP/s), {ratio:.0%} of matmul_smem_kernel's "
        f"{lesson * 1e3:.2f} ms (bar: {SPEED_BAR:.0%}){shared_note(alone)}",
        "correct but slow: is each tile loaded coalesced? a warp is the 32 threads of one ty: when tx walks "
        "along a row of A and of B, they read 32 consecutive floats (4 memory transactions); walking down a "
        "column, each reads a different row (32 transactions), and the tile is written across one bank of "
        "shared memory",
    )
