"""Exercise 6: time a GPU function correctly.

Write `time_kernel(fn)` in `ex6_time_kernel.py` (roughly 8 lines): the median GPU time of one call of `fn`.

Checked on a GPU: a spin of about 2 ms, timed with CUDA events, and your figure must be within 15%. Which of
notebook 04's four timing cases would pass?

In 04_timing.ipynb; grade it there with `check("ex6_time_kernel")`, or `python -m kit.grade ex6_time_kernel`."""

import importlib.util
from pathlib import Path

import torch

from kit.checks import GPU, Report, calibrated_sleep_cycles

NUMBER = 6  # its place in the lessons
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
            report.add("time_kernel is written", False, "it still raises NotImplementedError",
                       f"see the TODO in {EDIT}")
            return report
        except Exception:  # noqa: BLE001 - without a GPU, a correct answer fails in torch.cuda.synchronize()
            pass
        report.skip("measures a 2 ms GPU kernel within 15%", "needs a CUDA GPU: none here")
        return report
    from kit.timing import device_time

    cycles = calibrated_sleep_cycles(2e-3)
    spin = lambda: torch.cuda._sleep(cycles)  # noqa: E731
    truth = device_time(spin, flush_l2=False).median
    try:
        got = float(mod.time_kernel(spin))
    except NotImplementedError:
        report.add("measures a 2 ms GPU kernel within 15%", False, "time_kernel is not written yet",
                   f"see the TODO in {EDIT}")
        return report
    ok = abs(got - truth) <= 0.15 * truth
    report.add("measures a 2 ms GPU kernel within 15%", ok,
               f"measured {got * 1e6:.0f} us; CUDA events say {truth * 1e6:.0f} us",
               "the launch returns at once: wait for the GPU (torch.cuda.synchronize()) before reading the clock, "
               "and before starting it")
    return report
