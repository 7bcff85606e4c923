"""The ahead-of-time package (aot/) and the CMake libraries (cmake/) build from the same kernels/<op>/ files as the JIT
loader and pass the same op tests: tests/test_<op>.py, run by a child pytest whose `ops` are the prebuilt ones
(conftest.py, LABKIT_PREBUILT). Each build goes to a tmp folder, in child processes: this process holds the JIT
loader's ops, and a second library for labkit::add2 loaded here would replace their kernels.
CPU-only builds everywhere; CUDA builds where there is a GPU (and, compiled only, where there is nvcc but no GPU)."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import HAS_CUDA, HAS_XDIST, NEEDS_PCH, ROOT

from kit import build_ways as builds
from kit.resources import can_compile_cuda, resource_usage, tool
from building.builds import _program
from building.toolchain import elf_needed

OPS = builds.DEFAULT_OPS  # every op folder of kernels/
OP_TESTS = [str(p) for p in (ROOT / "tests" / f"test_{op}.py" for op in OPS) if p.is_file()]


@pytest.fixture(
    scope="module",
    params=[
        ("aot", False),
        ("cmake", False),
        pytest.param(("aot", True), marks=pytest.mark.cuda),
        pytest.param(("cmake", True), marks=pytest.mark.cuda),
    ],
    ids=lambda p: f"{p[0]}-{'cuda' if p[1] else 'cpu'}",
)
def built(request, tmp_path_factory):
    way, cuda = request.param
    if way == "cmake" and not (shutil.which("cmake") or shutil.which("cmake", path=os.path.dirname(sys.executable))):
        pytest.skip("cmake not found (install it, or pip install cmake)")
    src = builds.checkout(tmp_path_factory.mktemp(f"{way}-{'cuda' if cuda else 'cpu'}"), OPS)
    return builds.build(way, src, OPS, cuda)


def _pytest_child(built, *args):
    env = {
        **os.environ,
        **built.env,
        "PYTHONPATH": os.pathsep.join(filter(None, [built.env.get("PYTHONPATH"), str(ROOT)])),
    }
    env.pop("PYTEST_ADDOPTS", None)  # the parent's -k or -x would select in the child's run, not this one's
    if not built.cuda:  # a CPU-only build has no CUDA kernels: the child sees no GPU, so its CUDA tests skip
        env["CUDA_VISIBLE_DEVICES"] = ""
    # on a machine of many cores the child spreads its files over a few workers of its own (pytest-xdist): its run of
    # every op's tests is the longest group of the parallel suite there; on a few cores it runs them in turn
    workers = min(4, (os.cpu_count() or 1) // 4)  # each holds a CUDA context: 8 each ran the H200 out of memory
    xdist = ["-n", str(workers), "--dist", "loadgroup"] if workers > 1 and HAS_XDIST else []
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-x", *xdist, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )


def test_every_op_folder_is_built_and_no_build_way_lists_its_ops(tmp_path):
    """A new kernels/<op>/ with an op.py joins the AOT and CMake builds with no edit elsewhere; common/ does not, nor
    does any exercise (they live in exercises/)."""
    from building.builds import lesson_ops

    for folder, files in (("new_op", ["op.py"]), ("common", ["kit.h"])):
        (tmp_path / folder).mkdir()
        for name in files:
            (tmp_path / folder / name).write_text("")
    assert lesson_ops(tmp_path) == ("new_op",)
    assert {"add2", "elu", "sum", "matmul"} <= set(OPS)
    assert not {p.name for p in (ROOT / "exercises").iterdir()} & set(OPS)
    for path in ("building/builds.py", "aot/setup.py", "cmake/CMakeLists.txt"):
        text = (ROOT / path).read_text()
        assert not re.search(r"""["'](add2|elu|sum|matmul)["']|LABKIT_OPS "[a-z]""", text), f"{path} names ops"


def test_each_op_has_its_own_library(built):
    assert set(built.libraries) == set(OPS), built.log[-3000:]
    for op, so in built.libraries.items():
        needed = elf_needed(so)
        assert "libtorch_cpu.so" in needed and "libc10.so" in needed
        # the CUDA runtime where the build compiled CUDA and the op has kernels in it (an op with only a CPU kernel
        # links none: nothing of it calls the runtime)
        has_cu = any((built.src / "kernels" / op).glob("*.cu"))
        assert any(n.startswith("libcudart") for n in needed) == (built.cuda and has_cu), (op, needed)
        assert not any(n.startswith("libpython") for n in needed), "the op libraries must not need Python"
        # the shared C++ runtime, as torch's: a library with its own static copy crashes at its first exception (the
        # GPU image's g++ did that to the CMake CUDA build through nvcc's implicit link libraries)
        assert any(n.startswith(("libstdc++", "libc++")) for n in needed), needed


def _ninja_deps(build_dir):
    """{object: [the files its compile read]}, from ninja's record of the last build in build_dir (ninja -t deps)."""
    out = subprocess.run(
        [_program("ninja"), "-t", "deps"], cwd=build_dir, capture_output=True, text=True, check=True
    ).stdout
    records = {}
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = records.setdefault(line.split(": #deps", 1)[0], [])
        elif line.strip():
            current.append(line.strip())
    return records


@NEEDS_PCH
def test_the_bindings_read_their_headers_precompiled(built):
    """A build of every op compiles the bindings' headers once (cmake/CMakeLists.txt's LABKIT_PCH, aot/setup.py's PCH),
    and the bindings load them instead of parsing torch's headers each: ninja's record of what a binding's compile read
    has no torch header in it (CMake), or not even kernels/common/binding.h (setuptools, whose record leaves out the
    system headers; ops are built one after another, the header after the first, and only the last op's record is
    kept)."""
    if built.way == "aot":
        deps = _ninja_deps(next(built.src.glob("aot/build/temp.*")))
        last = OPS[-1]
        binding = [files for obj, files in deps.items() if obj.endswith(f"/{last}/{last}.o")]
        assert binding and any(f.endswith(f"{last}.cpp") for f in binding[0]), deps
        assert not [f for f in binding[0] if f.endswith("common/binding.h")], binding[0]
    else:
        deps = _ninja_deps(built.src / "cmake-build")
        bindings = {obj: files for obj, files in deps.items() if re.search(r"/(\w+)/\1\.cpp\.o$", obj)}
        assert set(OPS) == {re.search(r"/(\w+)/\1\.cpp\.o$", obj).group(1) for obj in bindings}, list(deps)
        for obj, files in bindings.items():
            assert not [f for f in files if "/torch/include/" in f], (obj, len(files))


def test_prebuilt_ops_pass_the_op_tests(built):
    """The JIT build's own op tests (tests/test_<op>.py: against a + b, F.elu, torch.sum, torch.matmul ...), run on
    the prebuilt libraries. But for torch.compile's on the CPU: they compile C++ for the CPU (inductor), which took
    1.5 to 2 minutes each on the GPU machine beside the other tests, the longest part of these runs; what they test
    of an op (its schema and fake kernel from op.py, its C++ gradient traced) is the same source in every build way,
    and torch.compile's tests on the GPU still run here for a CUDA build."""
    r = _pytest_child(built, *OP_TESTS, "-k", "not torch_compile or cuda")
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    # the child really ran on this build's libraries (its header names them), and ran tests
    assert f"labkit ops: prebuilt, from {built.libraries[OPS[0]]}" in r.stdout, r.stdout[:2000]
    assert " passed" in summary and "failed" not in summary, summary
    if built.cuda:
        assert "needs a CUDA GPU" not in r.stdout, "the CUDA tests were skipped in a CUDA build's run"


def test_the_package_works_without_the_repository(built, tmp_path):
    """An installed labkit_aot needs torch and nothing of the kit (the CMake libraries are loaded with the kit's
    op.py files, by building/prebuilt.py, in the op tests above)."""
    if built.way != "aot":
        pytest.skip("only the AOT package is meant to stand alone")
    code = (
        "import sys, torch; from labkit_aot import ops; a = torch.randn(1000); "
        "assert torch.equal(ops.add2(a, a), a + a); "
        "assert not [m for m in sys.modules if m == 'loader' or m.startswith('kit')]; print('ok', ops)"
    )
    env = {**os.environ, "PYTHONPATH": built.env["PYTHONPATH"]}
    if not built.cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok <prebuilt ops" in r.stdout, r.stdout + r.stderr


def test_a_kernel_edit_recompiles_that_file_only(built):
    """After a one-line edit of a CPU kernel file, ninja recompiles that file (and links): not the binding, whose
    torch headers cost seconds."""
    op = OPS[0]
    log = (
        next(built.src.glob("aot/build/temp.*/.ninja_log"))
        if built.way == "aot"
        else built.src / "cmake-build" / ".ninja_log"
    )
    before = len(log.read_text().splitlines())
    if built.way == "aot":
        builds.touch_kernel(built.src / "kernels", op, cuda=False)
        again = builds.build_aot(built.src, OPS, built.cuda)
        assert set(again.libraries) == set(OPS)
    else:
        builds.rebuild_cmake(built, op, cuda_file=False)
    new = [ln.split("\t")[3] for ln in log.read_text().splitlines()[before:] if ln.count("\t") >= 4]
    objects = [o for o in new if o.endswith(".o")]
    assert objects and all(o.split("/")[-1].startswith(f"{op}_cpu.") for o in objects), new


@pytest.mark.skipif(HAS_CUDA, reason="the CUDA builds are tested in full where there is a GPU")
@pytest.mark.skipif(can_compile_cuda() is not None, reason=f"cannot compile CUDA here: {can_compile_cuda()}")
@pytest.mark.parametrize("way", ["aot", "cmake"])
def test_cuda_builds_compile_without_a_gpu(way, tmp_path, monkeypatch):
    """Where there is nvcc but no GPU, the CUDA configurations still compile (for sm_90) and link against CUDA: what
    the GPU machine will build, checked before it runs there."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", os.environ.get("TORCH_CUDA_ARCH_LIST") or "9.0")
    src = builds.checkout(tmp_path, ("add2",))
    built = builds.build(way, src, ("add2",), cuda=True)
    so = built.libraries["add2"]
    assert any(n.startswith("libcudart") for n in elf_needed(so))
    if tool("cuobjdump"):
        kernels = {row["kernel"].split("(")[0] for row in resource_usage(so)}
        assert {"add2_kernel", "add2_vec_kernel<float>", "add2_scalar_kernel<float>"} <= kernels, kernels
