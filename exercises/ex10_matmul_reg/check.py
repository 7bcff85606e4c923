"""Exercise 10: the register-blocked inner loop of a matmul (the lesson's matmul_reg2d_kernel).

C = A @ B for any M, N, K (float32, row-major: A is M x K, B is K x N, C is M x N). The lesson's
matmul_reg2d_kernel (kernels/matmul/matmul.cu): a block of 256 threads computes a 128 x 128 tile of C, each thread an
8 x 8 tile of it, in 64 accumulators `acc[i][j]` that live in registers. Thread t is (trow, tcol) = (t / 16, t % 16):
its outputs are rows trow * 8 + i and columns tcol * 8 + j of the block's tile. Each step along k the block loads a
128 x 8 tile of A (`As[r][k] = A[block's row r][k0 + k]`) and an 8 x 128 tile of B (`Bs[k][col] = B[k0 + k][block's
column col]`) into shared memory, zeros past the edges. Given: that loading, the barriers around it and the loop over
the steps. Write in `ex10_matmul_reg.h`:
- (a) `outer_products` (roughly 7 lines): one step. For each k = 0 .. 7 of the tiles, read the thread's 8 values of
  A and 8 of B from shared memory into registers (two small arrays), then their outer product, `acc[i][j] += a_i *
  b_j`: 64 multiply-adds from 16 values read from shared memory (exercise 9's smem kernel reads 2 per multiply-add).
- (b) `store_outputs` (roughly 5 lines): after the last step, the thread's 8 x 8 outputs into C, element (i, j) at
  C[row0 + i][col0 + j] (row0, col0: the thread's first row and column of C), each only if it is inside C (the edge
  blocks' tiles hang past C's last row and column).

The loops have constant bounds (kEx10TM, ...): the compiler unrolls them, so `acc[i][j]` stays in registers. On a
laptop the CPU runs the same functions: one block at a time, each step's loading by all 256 threads, then each
thread's `outer_products`, then each thread's `store_outputs`.

Checked against `A.double() @ B.double()` on every device here, on shapes whose M, N and K all differ and are not
multiples of the tile (1 x 1 x 1, 7 x 31 x 33, ..., 129 x 200 x 31, 200 x 129 x 17: several blocks each way), with
NaN in the memory after C (a store past the edge is caught).

In the matmul lesson; grade it with `check("ex10_matmul_reg")`, or `python -m kit.grade ex10_matmul_reg`."""

import torch

from kit.checks import PAD, begin, devices

NUMBER = 10  # its place in the lessons
EDIT = "exercises/ex10_matmul_reg/ex10_matmul_reg.h"  # the file to edit
TILE, TM, TN = 128, 8, 8
# (M, N, K), smallest first: all three different; the last two have several blocks of C each way
SHAPES = [(1, 1, 1), (7, 31, 33), (33, 65, 100), (100, 7, 65), (128, 64, 24), (129, 200, 31), (200, 129, 17)]

UNWRITTEN_HINT = (
    "store_outputs: elements of C were never stored (they still hold the inf C started with): every "
    "element of the thread's 8 x 8 tile that lies inside C is stored (compare with M and N)"
)
MATCH_HINT = (
    "outer_products: for each k, the thread's 8 values of A come from its own rows of As and its 8 values "
    "of B from its own columns of Bs (which of trow and tcol picks which?), and every acc[i][j] gets the "
    "product of A's i-th value and B's j-th; store_outputs: acc[i][j] belongs at C[row0 + i][col0 + j]"
)


def inputs(shape):
    m, n, k = shape
    gen = torch.Generator().manual_seed(m * 1_000_003 + n * 1009 + k)
    return torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)


def run(op, shape, dev):
    """C (on the CPU) and the first element after it that was overwritten (None if none), C inside a buffer of NaN
    with room for a whole tile past its end; C itself starts as inf (an element never stored stays inf)."""
    m, n, _ = shape
    a, b = (t.to(dev) for t in inputs(shape))
    big = torch.full((m * n + TILE * (n + 1) + PAD,), float("nan"), device=dev)
    c = big[: m * n].view(m, n)
    c.fill_(float("inf"))
    op(a, b, out=c)
    after = (~big[m * n :].isnan()).nonzero()
    return c.cpu(), int(after[0]) if len(after) else None


def wrong(shape, got):
    """Where C is off by more than float32's rounding (NaN counts as off): a boolean M x N tensor."""
    a, b = inputs(shape)
    tol = 4 * shape[2] * 2.0**-24 * (a.double().abs() @ b.double().abs()) + 1e-6
    return ~((got.double() - a.double() @ b.double()).abs() <= tol)


def diagnosis(bad, got):
    """A hint from where C is wrong: never stored, or always the same row or column of the threads' 8 x 8 tiles."""
    rows, cols = bad.nonzero().unbind(1)
    if bool(got[bad].isinf().all()):
        return UNWRITTEN_HINT
    for what, idx, size, loop in (("row", rows, TM, "i"), ("column", cols, TN, "j")):
        wrong_at = set((idx % size).tolist())
        if len(wrong_at) < size and bad.shape[0 if what == "row" else 1] >= size:
            which = ", ".join(str(x) for x in sorted(wrong_at))
            return (
                f"only {what}s {which} of each thread's 8 x 8 tile are wrong (the others are right): does a loop "
                f"over {loop} stop early, or start late?"
            )
    return MATCH_HINT


def grade(ops, kit_root):
    report, op = begin(ops, "ex10_matmul_reg", EDIT)
    if op is None:
        return report
    for dev in devices():
        results = {s: run(op, s, dev) for s in SHAPES}
        failure = next(((s, bad) for s in SHAPES for bad in [wrong(s, results[s][0])] if bad.any()), None)
        if failure is None:
            report.add(f"matches A @ B on {dev}", True, f"{len(SHAPES)} shapes, {SHAPES[0]} to {SHAPES[-1]}")
        else:
            s, bad = failure
            got = results[s][0]
            i, j = (int(x) for x in bad.nonzero()[0])
            a, b = inputs(s)
            expected = float((a.double() @ b.double())[i, j])
            report.add(
                f"matches A @ B on {dev}",
                False,
                f"smallest failing: M, N, K = {s}: C[{i}][{j}] should be {expected:.6g}, got "
                f"{float(got[i, j]):.6g}" + (" (never stored: C started as inf)" if got[i, j].isinf() else ""),
                diagnosis(bad, got),
            )

        overwritten = next(((s, results[s][1]) for s in SHAPES if results[s][1] is not None), None)
        if overwritten is None:
            report.add(f"writes nothing past the end on {dev}", True, "with NaN in the memory after C")
        else:
            s, at = overwritten
            report.add(
                f"writes nothing past the end on {dev}",
                False,
                f"M, N, K = {s}: element {at} of the memory after C was overwritten",
                "store an element only if it is inside C: row0 + i < M and col0 + j < N (an edge block's "
                "tile hangs past C's last row and column; c[row * N + col] with col >= N is the next row's)",
            )
    return report
