"""Choosing the GPU: guarded ops are right on every GPU whatever GPU is current; the unguarded launch and
its cudaSetDevice fix are characterised (in child processes); isolation, renumbering, per-device sync, archs."""

import os
import subprocess
import sys
import time

import pytest
import torch
from conftest import N_GPUS, ROOT

from kit.devices import run_isolated, unguarded_case
from loader import ops


def test_run_isolated_survives_a_crash_and_reports():
    crash = run_isolated("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert crash.verdict == "crashed (signal 11)"
    raised = run_isolated("raise RuntimeError('CUDA error: an illegal memory access was encountered')")
    assert raised.returncode == 1 and raised.verdict.startswith("illegal memory access")
    fine = run_isolated("report({'x': 41 + 1})")
    assert fine.verdict == "ran to the end" and fine.result == {"x": 42}


def test_lesson_versions_have_no_cpu_path():
    for version in ("unguarded", "set_device"):
        with pytest.raises(RuntimeError, match="lessons about choosing a GPU and have no CPU version"):
            ops.add2(torch.ones(3), torch.ones(3), version=version)


@pytest.mark.cuda
def test_guarded_ops_right_on_every_gpu_whatever_is_current():
    for data in range(N_GPUS):
        for current in range(N_GPUS):
            with torch.cuda.device(current):
                a = torch.randn(100_003, device=f"cuda:{data}")
                b = torch.randn(100_003, device=f"cuda:{data}")
                c = ops.add2(a, b)
                assert c.device == a.device
                assert torch.equal(c, a + b), f"data on cuda:{data}, cuda:{current} current"
                assert torch.cuda.current_device() == current, "the guard must restore the current device"


@pytest.mark.cuda
def test_unguarded_on_the_current_gpu_is_right():
    """With one GPU (or the data on the current one) the missing guard does no harm: why the bug hides."""
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    assert torch.equal(ops.add2(a, b, version="unguarded"), a + b)
    assert torch.equal(ops.add2(a, b, version="set_device"), a + b)


@pytest.mark.gpu2
def test_unguarded_launch_on_two_gpus_is_characterised(capsys):
    """The wrong-GPU bug: data on cuda:1, cuda:0 current. Outcome depends on the hardware and on whether peer access
    was enabled; whichever it is, the child reports it and the guarded op in the same situation is right."""
    cold = unguarded_case("unguarded", data=1, current=0)
    warm = unguarded_case("unguarded", data=1, current=0, peer_copy_first=True)
    with capsys.disabled():
        for name, r in [("no peer access", cold), ("after a cross-device copy", warm)]:
            print(f"\nunguarded add2, data on cuda:1, cuda:0 current, {name}: {r.verdict}; result {r.result}")
    for r in (cold, warm):
        assert r.verdict != "ran to the end" or r.result is not None
        if r.result is not None:
            assert r.result["device_of_c"] == "cuda:1"  # allocated right, computed wrong (or remotely)
    guarded = unguarded_case("fast", data=1, current=0)
    assert guarded.verdict == "ran to the end" and guarded.result["correct"], guarded.stderr
    assert guarded.result["current_device_after"] == 0


@pytest.mark.gpu2
def test_set_device_fix_is_right_but_leaks_the_current_device():
    r = unguarded_case("set_device", data=1, current=0)
    assert r.verdict == "ran to the end", r.stderr
    assert r.result["correct"]
    assert r.result["current_device_after"] == 1, "cudaSetDevice in the launcher changes the caller's GPU"


@pytest.mark.cuda
def test_cuda_visible_devices_renumbers():
    last = N_GPUS - 1
    uuid = str(torch.cuda.get_device_properties(last).uuid)
    r = run_isolated(
        "import torch; report([torch.cuda.device_count(), str(torch.cuda.get_device_properties(0).uuid)])",
        env={"CUDA_VISIBLE_DEVICES": str(last)},
    )
    assert r.verdict == "ran to the end", r.stderr
    assert r.result == [1, uuid], "with CUDA_VISIBLE_DEVICES=k, physical GPU k is cuda:0"


@pytest.mark.gpu2
def test_synchronize_waits_only_for_the_current_device():
    cycles = int(torch.cuda.get_device_properties(1).clock_rate * 1000 * 0.2)  # ~0.2 s of spinning
    with torch.cuda.device(0):
        with torch.cuda.device(1):
            torch.cuda._sleep(cycles)
        t0 = time.perf_counter()
        torch.cuda.synchronize()  # waits for cuda:0 only
        t_current = time.perf_counter() - t0
        torch.cuda.synchronize(1)
        t_dev1 = time.perf_counter() - t0
    assert t_current < 0.05 < t_dev1, (t_current, t_dev1)


@pytest.mark.cuda
def test_builds_for_every_visible_gpu_architecture(tmp_path):
    """With TORCH_CUDA_ARCH_LIST unset, each visible GPU's architecture is compiled (and no others)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CUDA_ARCH_LIST"}
    env.update(PYTHONPATH=str(ROOT), LABKIT_BUILD_DIR=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-c", "import loader; print(loader.build('add2'))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    ninja = (tmp_path.glob("*/add2/build.ninja").__next__()).read_text()
    caps = {torch.cuda.get_device_capability(i) for i in range(N_GPUS)}
    for major, minor in caps:
        assert f"code=sm_{major}{minor}" in ninja
    import re

    assert len(set(re.findall(r"code=sm_(\d+)", ninja))) == len(caps), "only the GPUs present"
