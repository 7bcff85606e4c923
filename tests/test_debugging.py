"""The debugging lesson (05_debugging.ipynb): printf reaches Python, the broken kernels of kernels/debug_lab/ fail only
in their child process and are named to the line by the tools (AddressSanitizer here, compute-sanitizer on a GPU),
the right kernels match PyTorch, register and shared-memory counts, what --use_fast_math does to ELU."""

import json
import os
import re
import types

import pytest
import torch
from conftest import ROOT

from kit import debugging, fast_math, resources, results, sanitizers
from kit.debugging import CPU_OOB_LINE, OOB_LINE, RACE_READ_LINE, RACE_WRITE_LINE, line_of, oob_run, printed, where
from kit.resources import can_compile_cuda, tool
from kit.sanitizers import asan_oob, asan_report, asan_runtime
from loader import ops

FAR = 1000 + (1 << 28)  # a GiB past the end of a 1000-float tensor: out of the memory the process owns


def _lines(text, prefix):
    return [ln for ln in text.splitlines() if ln.startswith(prefix)]


# -- printf ----------------------------------------------------------------------------------------------------------


def test_printf_from_the_cpu_kernel_reaches_python(capsys):
    x = torch.tensor([0.5, -2.0, 3.25, 1e-3])
    ops.debug_lab("printf", x)  # built (and its status line printed) before the capture
    capsys.readouterr()
    with printed() as out:
        ops.debug_lab("printf", x)
    expected = [f"cpu: x[{i}] = {v:g}" for i, v in enumerate(x.tolist())]
    assert _lines(out.text, "cpu:") == expected
    assert _lines(capsys.readouterr().out, "cpu:") == expected, "printed() prints what it caught with Python"


def test_printed_puts_fd_1_back_even_when_the_block_raises():
    before = os.fstat(1)
    with pytest.raises(ValueError):
        with printed(echo=False) as out:
            os.write(1, b"written below Python\n")
            raise ValueError("in the block")
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    assert out.text == "written below Python\n"


@pytest.mark.cuda
def test_printf_from_the_gpu_reaches_python():
    x = torch.arange(40, dtype=torch.float32, device="cuda") / 4  # two blocks of 32 threads
    ops.debug_lab("printf", x)
    torch.cuda.synchronize()
    with printed(echo=False) as out:
        ops.debug_lab("printf", x)
    expected = {f"block {i // 32} thread {i % 32}: x[{i}] = {v:g}" for i, v in enumerate(x.tolist())}
    got = _lines(out.text, "block ")
    assert len(got) == len(expected) and set(got) == expected


@pytest.mark.cuda
def test_printf_in_a_child_process_comes_back_as_its_stdout():
    r = debugging.printf_run()
    assert r.verdict == "ran to the end", r.stderr
    expected = {f"block 0 thread {i}: x[{i}] = {i / 2:g}" for i in range(6)}
    assert set(_lines(r.stdout, "block ")) == expected


# -- the right kernels, against PyTorch ------------------------------------------------------------------------------


def test_block_reverse_matches_torch_flip(device):
    x = torch.randn(256 * 37, device=device)
    torch.testing.assert_close(ops.debug_lab("smem_reverse", x), x.view(-1, 256).flip(1).reshape(-1), rtol=0, atol=0)


def test_oob_write_within_bounds_writes_arange(device):
    y = torch.zeros(1000, device=device)
    ops.debug_lab("oob_write", y, count=1000)
    assert torch.equal(y, torch.arange(1000, dtype=torch.float32, device=device))
    y = torch.zeros(1000, device=device)
    ops.debug_lab("oob_write", y, count=10)
    assert torch.equal(y[:10], torch.arange(10, dtype=torch.float32, device=device)) and not y[10:].any()


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ops.debug_lab("printf", torch.zeros(3, dtype=torch.float64)), TypeError, "x must be float32"),
        (lambda: ops.debug_lab("printf", torch.zeros(1025)), ValueError, "at most 1024 elements"),
        (lambda: ops.debug_lab("oob_write", torch.zeros(10), count=-1), ValueError, "count must be >= 0"),
        (lambda: ops.debug_lab("oob_write", torch.zeros(10, 2).t(), count=1), ValueError, "y must be contiguous"),
        (lambda: ops.debug_lab("smem_reverse", torch.zeros(300)), ValueError, "multiple of 256"),
        (lambda: ops.debug_lab("smem_race", torch.zeros(256)), RuntimeError, "a GPU lesson"),
        (lambda: ops.debug_lab("oob_write", torch.zeros(10)), ValueError, 'count= goes with lesson "oob_write"'),
        (lambda: ops.debug_lab("segfault", torch.zeros(10)), ValueError, "lesson must be one of"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- the broken kernels, in child processes --------------------------------------------------------------------------


def test_a_few_floats_past_the_end_on_the_cpu_go_unnoticed():
    """One float past a 4000-byte buffer lands in the allocator's padding: no error, no crash. The bug is silent."""
    r, step = oob_run("cpu", 1001)
    assert r.verdict == "ran to the end" and step == "done", r.stderr
    assert r.result == {"error": None, "head": [0.0, 1.0, 2.0, 3.0]}


def test_far_past_the_end_on_the_cpu_kills_the_child_at_the_write_and_not_us():
    r, step = oob_run("cpu", FAR)
    assert r.verdict == "crashed (signal 11)", (r.returncode, r.stderr[-2000:])
    assert step == "launch", "on the CPU the fault stops the process at the bad write itself"
    assert torch.equal(ops.add2(torch.ones(3), torch.ones(3)), torch.full((3,), 2.0)), "this process is fine"


@pytest.mark.skipif(asan_runtime() is None, reason="no AddressSanitizer runtime (libasan.so) for the C++ compiler")
def test_address_sanitizer_names_the_line_of_the_cpu_out_of_bounds_write():
    r = asan_oob(n=1000, count=1001)
    assert r.returncode != 0 and "not caught" not in r.stdout, r.stdout[-2000:]
    report = asan_report(r.stderr)
    text = "\n".join(report)
    assert "AddressSanitizer: heap-buffer-overflow" in report[0], r.stderr[-3000:]
    assert "WRITE of size 4" in text
    assert f"debug_lab_cpu.cpp:{line_of(CPU_OOB_LINE[1], CPU_OOB_LINE[0])}" in text, text
    assert re.search(r"0 bytes (to the right of|after) 4000-byte region", text), text


@pytest.mark.cuda
def test_far_past_the_end_on_the_gpu_is_reported_at_a_later_call_and_sticks():
    r, step = oob_run("cuda", FAR)
    assert r.result is not None, r.stderr[-3000:]
    assert step in ("next call", "wait"), f"the error surfaced at {step!r}: launches are asynchronous"
    assert "illegal memory access" in r.result["error"], r.result["error"]
    assert r.result["sticky"] is True, "after it, every CUDA call of that process fails"


@pytest.mark.cuda
def test_cuda_launch_blocking_reports_it_at_the_launch():
    r, step = oob_run("cuda", FAR, env={"CUDA_LAUNCH_BLOCKING": "1"})
    assert r.result is not None, r.stderr[-3000:]
    assert step == "launch", f"the error surfaced at {step!r}"
    assert "oob_write_kernel failed to launch" in r.result["error"], r.result["error"]


@pytest.mark.cuda
def test_a_few_floats_past_the_end_on_the_gpu_change_the_next_tensor_silently():
    r = debugging.oob_into_a_neighbour()
    assert r.verdict == "ran to the end", r.stderr[-3000:]
    res = r.result
    assert res["y_right"]
    if res["gap"] > 0:  # z was allocated after y: the 8 floats past the gap were written into z
        assert res["z_head"][:8] == [float(res["gap"] + k) for k in range(8)], res


@pytest.mark.cuda
def test_race_and_barrier_on_the_gpu():
    """The racy kernel may or may not be wrong on a given run (that is the point); the right one always matches."""
    r = debugging.race_run()
    assert r.verdict == "ran to the end", r.stderr[-3000:]
    assert r.result["reverse_wrong"] == [0] * 20


_no_sanitizer = pytest.mark.skipif(tool("compute-sanitizer") is None, reason="no compute-sanitizer here")


@pytest.mark.cuda
@_no_sanitizer
def test_memcheck_names_the_line_of_the_out_of_bounds_write():
    r, lines = sanitizers.sanitize("memcheck", sanitizers.MEMCHECK_PROGRAM)
    text = "\n".join(lines)
    assert "Invalid __global__ write of size 4 bytes" in text, (text, r.stderr[-2000:])
    assert where(OOB_LINE) in text, text
    assert "oob_write_kernel" in text


@pytest.mark.cuda
@_no_sanitizer
def test_memcheck_misses_it_inside_pytorchs_cached_blocks():
    """With PyTorch's caching allocator, the write past the tensor is still inside memory CUDA handed out: memcheck
    sees nothing. Hence PYTORCH_NO_CUDA_MEMORY_CACHING=1 in sanitize()."""
    r, lines = sanitizers.sanitize("memcheck", sanitizers.MEMCHECK_PROGRAM, caching=True)
    text = "\n".join(lines)
    assert "ERROR SUMMARY" in text, (text, r.stderr[-2000:])  # memcheck did run to its summary
    assert "Invalid __global__ write" not in text, text


@pytest.mark.cuda
@_no_sanitizer
def test_racecheck_names_both_lines_of_the_race_and_not_the_right_kernel():
    r, lines = sanitizers.sanitize("racecheck", sanitizers.RACECHECK_PROGRAM)
    text = "\n".join(lines)
    assert where(RACE_WRITE_LINE) in text and where(RACE_READ_LINE) in text, (text, r.stderr[-2000:])
    assert "smem_race_kernel" in text and "smem_reverse_kernel" not in text, text


# -- registers, spills, shared memory: no GPU needed -----------------------------------------------------------------

_no_nvcc = pytest.mark.skipif(can_compile_cuda() is not None, reason=f"cannot compile CUDA here: {can_compile_cuda()}")


def _ptxas_entries(text):
    """ptxas -v output, per kernel: {kernel: the lines about it}."""
    entries, name = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^(']+)", line)
        if m:
            name = m.group(1)
            entries[name] = ""
        elif name:
            entries[name] += line + "\n"
    return entries


@_no_nvcc
def test_ptxas_reports_registers_spills_shared_memory_and_barriers():
    entries = _ptxas_entries(resources.ptxas_report())
    assert set(entries) == {"printf_kernel", "oob_write_kernel", "smem_race_kernel", "smem_reverse_kernel"}
    for name, text in entries.items():
        assert "0 bytes spill stores, 0 bytes spill loads" in text, (name, text)
        assert re.search(r"Used \d+ registers", text), (name, text)
    for name in ("smem_race_kernel", "smem_reverse_kernel"):
        assert "1024 bytes smem" in entries[name], "the 256-float tile"
    assert "used 1 barriers" in entries["smem_reverse_kernel"]
    assert "used 0 barriers" in entries["smem_race_kernel"], "the race: no barrier at all"


@_no_nvcc
@pytest.mark.skipif(tool("cuobjdump") is None, reason="no cuobjdump (CUDA toolkit, or Triton's copy)")
def test_cuobjdump_reads_the_same_counts_from_the_built_library():
    so = resources.cuda_build_of("debug_lab")
    assert "-lineinfo" in (so.parent / "build.ninja").read_text(), "op.py's CUDA_FLAGS reach nvcc"
    rows = {r["kernel"].split("(")[0]: r for r in resources.resource_usage(so)}
    assert set(rows) == {"printf_kernel", "oob_write_kernel", "smem_race_kernel", "smem_reverse_kernel"}
    assert all(r["local"] == 0 for r in rows.values()), "no kernel spills registers to local memory"
    # the 256-float tile, as declared: for sm_90 cuobjdump counts the driver's 1 KB per block in too (2048)
    assert rows["smem_race_kernel"]["shared"] == 1024 and rows["smem_reverse_kernel"]["shared"] == 1024
    assert rows["oob_write_kernel"]["shared"] == 0
    assert rows["printf_kernel"]["stack"] > 0, "printf's arguments go through a stack buffer"


# -- --use_fast_math -------------------------------------------------------------------------------------------------

_no_elu = pytest.mark.skipif(not (ROOT / "kernels" / "elu").is_dir(), reason="kernels/elu is not in this branch yet")


@_no_elu
@_no_nvcc
def test_fast_math_flushes_subnormals_in_elus_code():
    """No GPU needed: --use_fast_math makes nvcc emit .ftz (flush subnormals to zero) on most float instructions."""
    cu = ROOT / "kernels" / "elu" / "elu.cu"
    default, fast = resources.ptx_counts(cu), resources.ptx_counts(cu, ("--use_fast_math",))
    assert fast[".ftz (flush subnormals)"] > 2 * default[".ftz (flush subnormals)"], (default, fast)


@pytest.mark.cuda
@_no_elu
def test_fast_math_changes_elus_results_and_the_default_build_does_not():
    rows = {(r["build"], r["kernel"]): r for r in fast_math.fast_math_effect()}
    assert rows[("default", "ops.elu forward (expm1f)")]["differ"] == 0, "the default build is bit-identical to F.elu"
    fast = rows[("--use_fast_math", "ops.elu forward (expm1f)")]
    assert fast["differ"] > 0, "subnormal inputs are flushed to zero under --use_fast_math"
    import torch.nn.functional as F

    x = torch.tensor([-1e-40], device="cuda")
    assert F.elu(x).item() != 0.0, "F.elu keeps the subnormal"


# -- the recording -----------------------------------------------------------------------------------------------------


def test_sanitizer_findings_drop_the_notes_on_pytorchs_own_failing_calls():
    lines = [
        "========= COMPUTE-SANITIZER",
        '========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to x.',
        "=========     Saved host backtrace up to driver entry point at error",
        "========= Invalid __global__ write of size 4 bytes",
        "=========     at oob_write_kernel(float *, long)+0x70 in debug_lab.cu:31",
        "========= ERROR SUMMARY: 2 errors",
    ]
    assert sanitizers.findings(lines) == [lines[0]] + lines[3:]


def test_recorded_is_the_newest_recording(tmp_path, monkeypatch):
    for date, gpu in (("2026-11-30", "old"), ("2026-12-02", "new"), ("2026-12-01", "middle")):
        (tmp_path / "results" / f"{date}-{gpu}").mkdir(parents=True)
        (tmp_path / "results" / f"{date}-{gpu}" / "debug.json").write_text(json.dumps({"date": date, "gpu": gpu}))
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    assert results.recorded("debug.json")["gpu"] == "new"
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "nothing"))
    assert results.recorded("debug.json") is None


H100_LIKE = types.SimpleNamespace(
    major=9, minor=0, warp_size=32, max_threads_per_multi_processor=2048, shared_memory_per_multiprocessor=233472
)


@pytest.mark.parametrize(
    "registers, shared, threads, blocks, occupancy, limited_by",
    [
        # 256 threads of 24 registers, no shared memory: 8 blocks fill the SM's 64 warps (the threads limit)
        (24, 0, 256, 8, 1.0, ["threads"]),
        # 128 registers a thread: a warp takes 4096 of the SM's 65536, so 16 warps fit, 2 blocks of 8
        (128, 0, 256, 2, 0.25, ["registers"]),
        # 162 registers round up to 5376 a warp (units of 256): 12 warps fit, one block of 8
        (162, 9216, 256, 1, 0.125, ["registers"]),
        # 48 KB of shared memory a block (+1 KB reserved): 4 blocks of 228 KB
        (16, 48 * 1024, 128, 4, 0.25, ["shared memory"]),
        # tiny blocks: 32 resident blocks at most on sm_90, whatever else would fit
        (16, 0, 32, 32, 0.5, ["blocks per SM"]),
    ],
)
def test_theoretical_occupancy_follows_the_occupancy_calculator(
    registers, shared, threads, blocks, occupancy, limited_by
):
    got = resources.theoretical_occupancy(registers, shared, threads, H100_LIKE)
    assert got == {"blocks_per_sm": blocks, "occupancy": occupancy, "limited_by": limited_by}


def test_a_child_past_its_time_limit_is_killed_and_says_where_it_was():
    """A child that hangs (a tool stuck under load, a wait that never ends) is killed at its limit, and what it printed
    until then comes back with the verdict, not a TimeoutExpired with no output."""
    from kit.devices import run_isolated

    r = run_isolated("import time\nprint('step: waiting', flush=True)\ntime.sleep(60)", timeout=3)
    assert r.verdict == "ran past its 3 s limit and was killed", r
    assert "step: waiting" in r.stdout and r.result is None
