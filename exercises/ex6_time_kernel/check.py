"""Exercise 6: time a GPU function correctly.

Write `time_kernel(fn)` in `ex6_time_kernel.py` (roughly 8 lines): the median time, in seconds, that one call of
`fn` (a function that launches GPU work and returns at once, as every CUDA launch does) takes on the GPU. Use the
host clock (`time.perf_counter`) or CUDA events, your choice; remember what the seed's four timing cases showed.

Checked on a GPU: a spin of about 2 ms, timed with CUDA events, and your figure must be within 15% (five times in
turn, the median pair counts). Which of
notebook 04's four timing cases would pass?

In 04_timing.ipynb; grade it there with `check("ex6_time_kernel")`, or `python -m kit.grade ex6_time_kernel`."""

import importlib.util
from pathlib import Path

import torch

from kit.checks import GPU, Report, calibrated_sleep_cycles, gpu_alone, shared_note

NUMBER = 6  # its place in the lessons
TIMES_THE_GPU = True  # a check times the GPU: a class's grading runs it after the others (kit/grade.py)
EDIT = "exercises/ex6_time_kernel/ex6_time_kernel.py"  # the file to edit


def grade(ops, kit_root):
    report = Report("ex6_time_kernel", EDIT)
    path = Path(kit_root) / EDIT
    spec = importlib.util.spec_from_file_location("labkit_ex6", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - a student's file can raise anything
        report.add(f"{EDIT} imports", False, f"{type(e).__name__}: {e}")
        return report
    if not GPU:
        try:
            mod.time_kernel(lambda: None, reps=1)
        except NotImplementedError:
            report.add(
                "time_kernel is written", False, "it still raises NotImplementedError", f"see the TODO in {EDIT}"
            )
            return report
        except Exception:  # noqa: BLE001 - without a GPU, a correct answer fails in torch.cuda.synchronize()
            pass
        report.skip("measures a 2 ms GPU kernel within 15%", "needs a CUDA GPU: none here")
        return report
    from kit.timing import device_time

    # Side by side: the GPU's own time and your figure in turn, five times, and the pair whose ratio is the median.
    # Where other processes share the GPU (a class graded at once waits for other graders, not for students' work),
    # a busy moment lengthens both figures of a pair, and a burst that lands on one of them moves one ratio of five
    pairs = []
    with gpu_alone() as alone:
        cycles = calibrated_sleep_cycles(2e-3)
        spin = lambda: torch.cuda._sleep(cycles)  # noqa: E731
        try:
            for _ in range(5):
                truth = device_time(spin, flush_l2=False).median
                pairs.append((float(mod.time_kernel(spin)), truth))
        except NotImplementedError:
            pairs = []
    if pairs:
        got, truth = sorted(pairs, key=lambda pair: pair[0] / pair[1])[len(pairs) // 2]
    else:
        report.add(
            "measures a 2 ms GPU kernel within 15%", False, "time_kernel is not written yet", f"see the TODO in {EDIT}"
        )
        return report
    ok = abs(got - truth) <= 0.15 * truth
    report.add(
        "measures a 2 ms GPU kernel within 15%",
        ok,
        f"measured {got * 1e6:.0f} us; CUDA events say {truth * 1e6:.0f} us{shared_note(alone)}",
        "far below the GPU's time: that is the launch, which returns at once; when does the clock stop, "
        "and has the GPU finished by then?"
        if got < 0.5 * truth
        else "above the GPU's time: what else does your figure hold? work queued before the call, or more than "
        "one call; is the GPU idle when the clock starts?"
        if got > truth
        else "a little below the GPU's time: does the clock stop only once the GPU work is done, on every repetition?",
    )
    return report
