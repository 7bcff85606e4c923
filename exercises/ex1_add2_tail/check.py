"""Exercise 1: add2 for any size.

The launch gives every element a thread: `cdiv(n, 256)` blocks of 256 threads. When n is not a multiple of 256, the
last block has threads with no element (the "tail"), and they must do nothing: a thread that writes `c[i]` for
`i >= n` overwrites whatever lies after `c` in memory, silently. Write `add2_tail_thread` in `ex1_add2_tail.h`
(roughly 2 lines). On a laptop, the CPU runs the same function for every thread of the same grid, one after
another, so the same bugs show.

Checked against `a + b` on awkward sizes (1, 3, 255, 256, 257, ...), on every device here, with sentinel memory
after the output: a thread that writes past the end is caught.

In 01_add2.ipynb; grade it there with `check("ex1_add2_tail")`, or `python -m kit.grade ex1_add2_tail`."""

from kit.checks import begin, grade_add2_like

NUMBER = 1  # its place in the lessons
EDIT = "exercises/ex1_add2_tail/ex1_add2_tail.h"  # the file to edit


def grade(ops, kit_root):
    report, op = begin(ops, "ex1_add2_tail", EDIT)
    if op is None:
        return report
    grade_add2_like(
        report,
        lambda a, b, out: op(a, b, out=out),
        [1, 3, 255, 256, 257, 1000, 1023, 1025, 4099],
        "an element below n is wrong or was never written: does every thread that has an element "
        "write it? look at the last one",
        "the last block has threads with i >= n: they must not write (compare i with n: < or <=?)",
    )
    return report
