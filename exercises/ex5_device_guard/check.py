"""Exercise 5: fix the seed's launch.

The kernel is fine; the CUDA binding `ex5_cuda_impl` in `ex5_device_guard.cpp`
launches it on whatever GPU is current, on stream 0, the legacy default stream. Make a's GPU the current one for the
rest of the function (a device guard), and launch on that GPU's current stream (roughly 2 lines).

With one GPU the stream check runs for real (work queued on a side stream must come first) and the guard is read
from the source; with two GPUs both run; without a GPU both are read from the source.

In 03_multi_gpu.ipynb; grade it there with `check("ex5_device_guard")`, or `python -m kit.grade ex5_device_guard`."""

import re

import torch

from kit.checks import GPU, begin, child_ops_source

NUMBER = 5  # its place in the lessons
EDIT = "exercises/ex5_device_guard/ex5_device_guard.cpp"  # the file to edit


STREAM_CHECK = """
    import torch
    {ops}
    n = 1 << 20
    b = torch.ones(n, device="cuda")
    op(b, b); torch.cuda.synchronize()  # a first launch loads the kernel (lazy loading), which may wait for the
                                        # whole GPU and so hide a launch on the wrong stream below
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.zeros(n, device="cuda")
        torch.cuda._sleep(100_000_000)  # ~50 ms of the side stream's time: a is written only after it
        a.fill_(2.0)
        c = op(a, b)
    s.synchronize()
    report(float(c.min()))
"""

DEVICE_CHECK = """
    import torch
    {ops}
    a = torch.ones(1 << 20, device="cuda:1"); b = torch.full((1 << 20,), 2.0, device="cuda:1")
    torch.cuda.set_device(0)
    c = op(a, b)
    torch.cuda.synchronize(1); torch.cuda.synchronize(0)
    report([bool((c == 3).all()), str(c.device)])
"""


def grade(ops, kit_root):
    from kit.devices import run_isolated

    report, op = begin(ops, "ex5_device_guard", EDIT)
    if op is None:
        return report
    a, b = torch.randn(1000), torch.randn(1000)
    report.add("matches a + b on cpu", torch.equal(op(a, b), a + b))
    src = (ops._kernels / "ex5_device_guard" / "ex5_device_guard.cpp").read_text()
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", src[src.find("ex5_cuda_impl") :], flags=re.S)  # code, not comments
    guard = re.search(r"CUDAGuard\s+\w+\s*[\({]\s*(a|b)\.device\(\)", body) or re.search(
        r"OptionalCUDAGuard\s+\w+\s*[\({]\s*device_of\(\s*(a|b)\s*\)", body
    )
    guard_hint = (
        (
            "a guard is there, but not built from an input: the GPU to make current is the one a and b are "
            "on, whichever the caller left current"
        )
        if re.search(r"CUDAGuard", body)
        else (
            "nothing in ex5_cuda_impl makes a's GPU the current one, so ex5_add2_on allocates and launches on "
            "whatever GPU the caller left current; 03_multi_gpu's device-guard section shows the object that "
            "does it until the function returns"
        )
    )
    stream_hint = (
        "the launch still goes on stream 0, the legacy default stream, which does not wait for work "
        "PyTorch queued on the current stream; binding.h has a helper for that current stream"
    )
    if not GPU:
        stream = re.search(r"current_stream\(\)|getCurrentCUDAStream\(", body)
        report.add(
            "launches on the current stream (read from the source: a GPU runs it for real)",
            bool(stream),
            "" if stream else "the launch still passes stream 0",
            stream_hint,
        )
        report.add(
            "takes a device guard from an input (read from the source: a GPU runs it for real)",
            bool(guard),
            "" if guard else "no device guard built from a's (or b's) device in ex5_cuda_impl",
            guard_hint,
        )
        return report
    child_ops = child_ops_source(ops, "ex5_device_guard")
    r = run_isolated(STREAM_CHECK.format(ops=child_ops))
    ok = r.result == 3.0
    report.add(
        "runs on the caller's current stream",
        ok,
        "result ordered after the work queued before it"
        if ok
        else f"the kernel read a before the side stream wrote it (got {r.result}; {r.verdict})",
        stream_hint,
    )
    if torch.cuda.device_count() >= 2:
        r = run_isolated(DEVICE_CHECK.format(ops=child_ops))
        ok = r.result is not None and r.result[0]
        report.add(
            "runs on the inputs' GPU (data on cuda:1, cuda:0 current, in a child process)",
            ok,
            "right result" if ok else f"{r.verdict}; result {r.result}",
            guard_hint,
        )
    else:
        report.add(
            "takes a device guard from an input (read from the source: running it needs two GPUs)",
            bool(guard),
            "" if guard else "no device guard built from a's (or b's) device in ex5_cuda_impl",
            guard_hint,
        )
    return report
