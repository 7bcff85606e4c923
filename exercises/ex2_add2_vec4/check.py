"""Exercise 2: 16-byte loads with a correct tail.

add2 waits on memory, not on arithmetic. One float per load means four load instructions where one would do: an
`f4` (16 bytes) is the widest load a thread can issue. So thread p handles elements 4p .. 4p+3 with one `f4` load of
a, one of b and one `f4` store. When n is not a multiple of 4, the last pack is only partly inside the tensors: those
elements must be added one by one, and nothing past n touched. Write `add2_vec4_thread` in `ex2_add2_vec4.h`
(roughly 8 lines).

Checked against `a + b` on sizes around multiples of 4 and of the block, with sentinel memory after the output; on a
GPU also on bandwidth: at least 90% of a copy's at 2^26 (a correct kernel that moves one float per load is told how
slow it is).

In 01_add2.ipynb; grade it there with `check("ex2_add2_vec4")`, or `python -m kit.grade ex2_add2_vec4`."""

import torch

from kit.checks import GPU, begin, gpu_alone, grade_add2_like, shared_note

NUMBER = 2  # its place in the lessons
TIMES_THE_GPU = True  # a check times the GPU: a class's grading runs it after the others (kit/grade.py)
EDIT = "exercises/ex2_add2_vec4/ex2_add2_vec4.h"  # the file to edit


def grade(ops, kit_root):
    report, op = begin(ops, "ex2_add2_vec4", EDIT)
    if op is None:
        return report
    grade_add2_like(
        report,
        lambda a, b, out: op(a, b, out=out),
        [1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 4099, (1 << 20) + 3],
        "an element below n is wrong or was never written: when is a pack whole, and does the "
        "partial last pack add each of its n % 4 leftover elements?",
        "the last pack may be partial: an f4 store there writes past n",
    )
    if not GPU:
        report.skip("bandwidth against a copy", "needs a CUDA GPU: none here")
        return report
    from kit.timing import side_by_side

    def medians(n, **timing_args):  # seconds: our op and a copy on the same n floats, timed in turn; and a note
        a, b, out = (torch.randn(n, device="cuda") for _ in range(3))
        with gpu_alone() as alone:  # a class graded at once: no other grader's kernels in the time
            t = side_by_side({"ours": lambda: op(a, b, out=out), "copy": lambda: out.copy_(a)}, **timing_args)
        return t["ours"].median, t["copy"].median, shared_note(alone)

    # A correct answer can still be hopelessly slow (a tail loop that runs from i to n makes the kernel quadratic:
    # minutes per call at 2^26). So first a few calls at 2^20, and 2^26 only if those are within reach of a copy.
    ours, copy, note = medians(1 << 20, rounds=1, warmup=0, reps=3)
    if ours > 20 * copy:
        report.add(
            "bandwidth against a copy (n = 2^26)",
            False,
            f"far too slow to measure at 2^26: at n = 2^20 one call takes {ours * 1e6:.0f} us, "
            f"{ours / copy:.0f} times a copy's {copy * 1e6:.0f} us",
            "does a thread loop over more than its own pack? only the last, partial pack needs a loop",
        )
        return report
    n = 1 << 26
    ours, copy, note = medians(n)
    gbs, copy_gbs = 12 * n / ours / 1e9, 8 * n / copy / 1e9
    ratio = gbs / copy_gbs
    report.add(
        "bandwidth against a copy (n = 2^26)",
        ratio >= 0.9,
        f"{gbs:.0f} GB/s, {ratio:.0%} of a copy's {copy_gbs:.0f} GB/s (bar: 90%){note}",
        "correct but slow: is every whole pack moved with one f4 load of a, one of b and one f4 store?",
    )
    return report
