"""What a call of an op costs and what it sees: every kind of edit is seen by the very next call (made within a
millisecond), the fast path stats no file, the fallback without a watch still sees edits, and torch.compile may be
an op's first user. (What a call costs in microseconds is measured by `make bench`, not asserted here.)"""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import run_python

from building import watch
from loader import Ops

A, B = torch.arange(1.0, 6.0), torch.full((5,), 2.0)
KERNEL = "load(a[i]) + load(b[i])"  # the add in kernels/add2/add2_cpu.cpp


def _rewrite_in_place(path, old, new):
    """An in-place write that keeps the size (an editor writing over the same inode; the mtime may not move much)."""
    assert len(old) == len(new)
    with open(path, "r+") as f:
        text = f.read()
        f.seek(text.index(old))
        f.write(new)


def _truncate_and_write(path, old, new):
    text = Path(path).read_text()
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def _atomic_save(path, old, new):
    """What JupyterLab's save does (jupyter_server's atomic writing): write a temporary file, rename it over."""
    path = Path(path)
    tmp = path.with_name(f".~{path.name}")
    tmp.write_text(path.read_text().replace(old, new))
    os.replace(tmp, path)


def _sed(path, old, new):
    subprocess.run(["sed", "-i", f"s/{old}/{new}/", str(path)], check=True)


@pytest.fixture
def lab(kit_copy):
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    assert torch.equal(lab.add2(A, B), A + B)  # the cold build
    return lab, kit_copy / "kernels"


def test_every_kind_of_edit_is_seen_by_the_next_call(lab):
    lab, kernels = lab
    if lab._watch is None:
        pytest.skip("no inotify watch here: " + str(watch.why_not_watched(kernels)))
    cpu = kernels / "add2" / "add2_cpu.cpp"
    steps = [
        ("in-place write, same size", lambda: _rewrite_in_place(cpu, "+ load(b", "- load(b"), A - B),
        ("truncate and write", lambda: _truncate_and_write(cpu, "- load(b[i])", "* load(b[i])"), A * B),
        (
            "JupyterLab's save: temporary file renamed over",
            lambda: _atomic_save(cpu, "* load(b[i])", "+ 3 * load(b[i])"),
            A + 3 * B,
        ),
        ("sed -i", lambda: _sed(cpu, "+ 3 \\* load", "+ 4 * load"), A + 4 * B),
        (
            "a header of kernels/common/",
            lambda: _truncate_and_write(
                kernels / "common" / "cpu_half.h",
                "inline float load(float x) { return x; }",
                "inline float load(float x) { return -x; }",
            ),
            -A - 4 * B,
        ),
    ]
    for what, edit_fn, expected in steps:
        edit_fn()
        got = lab.add2(A, B)  # the very next statement after the edit: well within a millisecond of it
        assert torch.equal(got, expected), f"{what}: the call after the edit ran the old code: {got} != {expected}"

    # a new file and a deleted one: the CPU kernel moves to a file of another name, with new code
    text = cpu.read_text().replace("load(a[i]) + 4 * load(b[i])", "load(a[i]) + 5 * load(b[i])")
    (kernels / "add2" / "add2_cpu_v2.cpp").write_text(text)
    cpu.unlink()
    assert torch.equal(lab.add2(A, B), -A - 5 * B), "a new file and a deleted one were not seen"


def test_the_fast_path_stats_no_file(lab, monkeypatch):
    """Between edits a call asks the watch (one epoll_wait), never the file system."""
    lab, kernels = lab
    if lab._watch is None:
        pytest.skip("no inotify watch here: " + str(watch.why_not_watched(kernels)))
    lab.add2(A, B)
    stats = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda *a, **k: stats.append(a) or real_stat(*a, **k))
    for _ in range(100):
        lab.add2(A, B)
    assert stats == [], f"{len(stats)} stats in 100 calls without an edit"
    _truncate_and_write(kernels / "add2" / "add2_cpu.cpp", KERNEL, "load(a[i]) - load(b[i])")
    assert torch.equal(lab.add2(A, B), A - B)
    assert stats, "after an edit the call must look at the files"


def test_edits_of_one_op_leave_the_others_alone(lab):
    lab, kernels = lab
    if lab._watch is None:
        pytest.skip("no inotify watch here")
    lab.add2(A, B)
    (kernels / "elu" / "notes.txt").write_text("not a source file")
    assert lab.elu.op.stale is True  # never built yet: its first call builds it
    assert lab.add2.op.stale is False
    lab.add2(A, B)
    assert lab.add2.op.stale is False, "an event in elu/ must not mark add2 stale"


def test_without_a_watch_every_call_checks_the_files(kit_copy, monkeypatch):
    """LABKIT_WATCH=0 (or no inotify, a network file system, a forked child): the loader stats the files every call."""
    monkeypatch.setenv("LABKIT_WATCH", "0")
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    assert torch.equal(lab.add2(A, B), A + B)
    assert lab._watch is None
    _atomic_save(kit_copy / "kernels/add2/add2_cpu.cpp", KERNEL, "load(a[i]) - load(b[i])")
    assert torch.equal(lab.add2(A, B), A - B)


def test_a_forked_child_stops_watching_and_still_sees_edits(lab):
    """A child shares its parent's inotify queue: it must not read it (the parent would miss events), so it checks
    files instead. The parent keeps its watch, and sees its own edits after the child's."""
    lab, kernels = lab
    if lab._watch is None:
        pytest.skip("no inotify watch here")
    cpu = kernels / "add2" / "add2_cpu.cpp"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        ok = False
        try:
            _truncate_and_write(cpu, KERNEL, "load(a[i]) * load(b[i])")
            ok = lab._watch is None and torch.equal(lab.add2(A, B), A * B)
        finally:
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1", "the forked child did not see its edit, or kept reading the parent's watch"
    assert lab._watch is not None
    assert torch.equal(lab.add2(A, B), A * B), "the parent missed the edit made while its child ran"


def test_a_network_file_system_is_not_watched(tmp_path, monkeypatch):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 0:21 / / rw - ext4 /dev/vda rw\n40 22 0:35 / /home/class rw,relatime - nfs4 server:/home rw\n"
    )
    real = Path.read_text
    monkeypatch.setattr(
        Path,
        "read_text",
        lambda self, *a, **k: real(mountinfo if str(self) == "/proc/self/mountinfo" else self, *a, **k),
    )
    assert watch.filesystem_type("/home/class/alice/kernels") == "nfs4"
    assert watch.filesystem_type("/tmp") == "ext4"
    assert "network filesystem (nfs4)" in watch.why_not_watched("/home/class/alice/kernels")


def test_torch_compile_may_be_an_ops_first_user(kit_copy):
    """A fresh process whose first use of each op is inside torch.compile(fullgraph=True), forward and backward: the ops
    of a copy of the kit with an empty build folder, so that they are built there too. (Laid out as the other tests'
    copies, whose compiles it shares through the suite's compiler cache.)"""
    code = textwrap.dedent(f"""
        import torch, torch.nn.functional as F
        from loader import Ops
        ops = Ops({str(kit_copy / "kernels")!r}, build_dir={str(kit_copy / "build")!r})
        x = torch.randn(1000, dtype=torch.float64, requires_grad=True)
        y = torch.randn(1000, dtype=torch.float64)

        @torch.compile(fullgraph=True)
        def f(x, y):
            return ops.elu(ops.add2(x, y), 0.5) * 2

        out = f(x, y)
        out.sum().backward()
        ref_x = x.detach().clone().requires_grad_()
        ref = F.elu(ref_x + y, 0.5) * 2
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(x.grad, ref_x.grad)
        print("compiled first use: OK")
    """)
    r = run_python(code, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compiled first use: OK" in r.stdout


def test_a_compiled_function_keeps_working_after_an_edit(lab):
    lab, kernels = lab
    f = torch.compile(lambda a, b: lab.add2(a, b) * 2, fullgraph=True)
    assert torch.equal(f(A, B), 2 * (A + B))
    _atomic_save(kernels / "add2" / "add2_cpu.cpp", KERNEL, "load(a[i]) - load(b[i])")
    assert torch.equal(lab.add2(A, B), A - B)  # the eager call rebuilds and registers the new kernel ...
    assert torch.equal(f(A, B), 2 * (A - B))  # ... which the compiled graph calls from then on
