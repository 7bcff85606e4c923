"""The loader: cheap import, live rebuild of only what changed, short compile errors, build locks, CUDA compiles."""

import fcntl
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from conftest import HAS_CUDA, ROOT, run_python

import loader
from building.compile_errors import CompileError
from kit.notebook import edit, scratch_variant
from loader import Ops, ops


def test_import_compiles_nothing_and_is_cheap(tmp_path):
    code = textwrap.dedent("""
        import time, json
        t0 = time.perf_counter(); import torch; t1 = time.perf_counter()
        from loader import ops; t2 = time.perf_counter()
        print(json.dumps({"torch": t1 - t0, "loader": t2 - t1, "ops": dir(ops)}))
    """)
    r = run_python(code, env={"LABKIT_BUILD_DIR": str(tmp_path / "b")})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "add2" in out["ops"]
    assert not (tmp_path / "b").exists(), "importing the loader must not build anything"
    assert out["loader"] < 0.5, f"`from loader import ops` took {out['loader']:.2f} s beyond import torch"


def test_unknown_op_lists_the_ops():
    with pytest.raises(AttributeError, match="no op 'add3'.*ops here: .*add2"):
        ops.add3


def test_the_lessons_ops_list_no_exercise():
    assert "add2" in dir(ops)
    assert not [name for name in dir(ops) if (ROOT / "exercises" / name).is_dir()], dir(ops)


def test_the_exercises_ops_see_an_edit_of_the_shared_headers(tmp_path):
    """The exercises' ops share kernels/common/, outside their folder: their watch covers it too."""
    import shutil

    from building import watch

    shutil.copytree(ROOT / "kernels" / "common", tmp_path / "kernels" / "common")
    shutil.copytree(ROOT / "exercises" / "ex1_add2_tail", tmp_path / "exercises" / "ex1_add2_tail")
    w = watch.start(tmp_path / "exercises", tmp_path / "kernels" / "common")
    if w is None:
        pytest.skip("files cannot be watched here (the loader says why)")
    with open(tmp_path / "kernels" / "common" / "kit.h", "a") as f:
        f.write("\n")
    assert "common" in w.take()
    w.close()


def _compiled(capsys):
    line = [ln for ln in capsys.readouterr().out.splitlines() if "[labkit]" in ln][-1]
    m = re.search(r"compiled (.*)$", line)
    return sorted(m.group(1).split(", ")) if m else []


def test_live_rebuild_recompiles_only_the_edited_file(kit_copy, capsys):
    """Edit a kernel of a copy of the kit; the next call in this process runs the new code."""
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    a, b = torch.ones(5), torch.full((5,), 2.0)
    assert torch.equal(lab.add2(a, b), a + b)
    cold = ["add2.cpp", "add2.cu", "add2_cpu.cpp"] if loader.cuda_build_wanted() else ["add2.cpp", "add2_cpu.cpp"]
    assert _compiled(capsys) == cold

    edit(kit_copy / "kernels/add2/add2_cpu.cpp", "load(a[i]) + load(b[i])", "load(a[i]) + 10 * load(b[i])")
    t0 = time.perf_counter()
    assert torch.equal(lab.add2(a, b), a + 10 * b)
    rebuild = time.perf_counter() - t0
    assert _compiled(capsys) == ["add2_cpu.cpp"], "only the edited kernel file may be recompiled"
    print(f"CPU kernel edit -> new result in {rebuild:.2f} s", file=sys.stderr)

    # a header: cpp_extension.load alone misses these and silently runs the old code
    edit(
        kit_copy / "kernels/common/cpu_half.h",
        "inline float load(float x) { return x; }",
        "inline float load(float x) { return -x; }",
    )
    assert torch.equal(lab.add2(a, b), -a - 10 * b)
    assert _compiled(capsys) == ["add2_cpu.cpp"]

    # nothing changed: no build at all, same result
    assert torch.equal(lab.add2(a, b), -a - 10 * b)
    assert "[labkit]" not in capsys.readouterr().out

    # the kit's own ops.add2 shares the operator name; calling it takes the op back
    assert torch.equal(ops.add2(a, b), a + b)
    assert torch.equal(lab.add2(a, b), -a - 10 * b)
    assert torch.equal(ops.add2(a, b), a + b)


def test_editing_op_py_reloads_the_python_face(kit_copy):
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    a = torch.ones(3)
    lab.add2(a, a)
    edit(
        kit_copy / "kernels/add2/op.py",
        "            return labkit.add2.default(a, b)",
        "            return labkit.add2.default(a, b) * 100",
    )
    assert torch.equal(lab.add2(a, a), 200 * a)
    ops.add2(a, a)  # take the op back for the other tests


def test_compile_error_is_short_and_precise(kit_copy):
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    a = torch.ones(4)
    lab.add2(a, a)
    edit(kit_copy / "kernels/add2/add2_cpu.cpp", "load(a[i]) + load(b[i])", "load(a[i]) + load(b[i]) + oops")
    with pytest.raises(CompileError) as info:
        lab.add2(a, a)
    e = info.value
    assert Path(e.file).name == "add2_cpu.cpp" and e.line == 10
    assert "oops" in e.message and "was not declared" in e.message
    assert "oops" in e.source_line
    assert e.log.exists() and "FAILED" in e.log.read_text()
    msg = str(e)
    assert msg.startswith("add2 failed to compile: add2_cpu.cpp:10: error:")
    assert len(msg.splitlines()) == 3 and "-isystem" not in msg, msg
    # calling again without a fix raises again: the old kernel must not run silently
    with pytest.raises(CompileError):
        lab.add2(a, a)
    # other ops (here: the kit's own) keep working meanwhile
    assert torch.equal(ops.add2(a, a), 2 * a)
    edit(kit_copy / "kernels/add2/add2_cpu.cpp", " + oops", "")
    assert torch.equal(lab.add2(a, a), 2 * a)
    ops.add2(a, a)


def _build_in_subprocess(kit, extra="", env=None):
    code = textwrap.dedent(f"""
        import torch
        from loader import Ops
        lab = Ops({str(kit / "kernels")!r}, build_dir={str(kit / "build")!r})
        {extra}
        a = torch.arange(4.0)
        print("result", lab.add2(a, a).tolist(), flush=True)
    """)
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def _lock_path(kit):
    return next((kit / "build").glob("*/add2.buildlock"), None)


def test_stale_lock_of_a_killed_build_is_recovered(kit_copy):
    """A build killed half way (SIGKILL: no cleanup runs) must not make the next load wait forever."""
    p = _build_in_subprocess(kit_copy)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until the build is under way: our lock is held
        lock = _lock_path(kit_copy)
        if lock and lock.exists():
            with open(lock) as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f, fcntl.LOCK_UN)
                except BlockingIOError:
                    break
        time.sleep(0.05)
    time.sleep(1.0)  # let the compilers start
    os.killpg(p.pid, signal.SIGKILL)  # the Python process, ninja and the compilers, as a killed Jupyter kernel
    p.wait()
    # what torch < 2.14 leaves behind after such a kill: a `lock` file in the build folder
    build_dir = next((kit_copy / "build").glob("*/add2"))
    (build_dir / "lock").touch()
    q = _build_in_subprocess(kit_copy)
    out, _ = q.communicate(timeout=300)
    assert q.returncode == 0, out
    assert "result [0.0, 2.0, 4.0, 6.0]" in out


def test_a_live_build_is_waited_for_with_a_message(kit_copy):
    """Another process holds the op's build lock: the loader says whom it waits for, waits, then builds."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import fcntl, os, time, pathlib
        from loader import Ops
        op = Ops({str(kit_copy / "kernels")!r}, build_dir={str(kit_copy / "build")!r}).add2
        d = op.build_dir(); d.mkdir(parents=True)
        f = open(d.parent / "add2.buildlock", "a+"); fcntl.flock(f, fcntl.LOCK_EX)
        f.write(str(os.getpid())); f.flush(); print("holding", flush=True); time.sleep(300)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout.readline().strip() == "holding"
    p = _build_in_subprocess(kit_copy)
    seen = []
    for line in p.stdout:  # the builder must say it waits, and keep waiting while the holder lives
        seen.append(line)
        if "waiting for process" in line:
            break
    time.sleep(1.0)
    assert p.poll() is None, "the builder did not wait for the lock: " + "".join(seen)
    holder.kill()  # the holder dies: its lock goes with it, and the waiting build proceeds
    holder.wait()
    out = "".join(seen) + p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    assert f"waiting for process {holder.pid}, which is building add2 now" in out
    assert "the other build finished after" in out
    assert "result [0.0, 2.0, 4.0, 6.0]" in out


def test_two_processes_loading_at_once_both_succeed(kit_copy):
    procs = [_build_in_subprocess(kit_copy) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
        assert "result [0.0, 2.0, 4.0, 6.0]" in out


def _can_compile_cuda():
    if not torch.version.cuda:
        return "torch is a CPU-only build"
    from building.doctor import nvcc_version

    nvcc, ver = nvcc_version(loader.cpp_extension().CUDA_HOME)
    if not nvcc or not ver:
        return "no nvcc"
    if ver.split(".")[0] != torch.version.cuda.split(".")[0]:
        return f"nvcc {ver} does not match torch's CUDA {torch.version.cuda}"
    return None


OP_NAMES = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/op.py"))
EXERCISE_OPS = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/op.py"))


# Where nvcc and a CUDA torch exist (with or without a GPU), every op's CUDA build must compile: on a machine without a
# GPU for sm_90a, Hopper's own target, so that the wgmma kernels compile too. One op (add2) goes through the loader
# end to end (compile, link, the library); the others' files are compiled with the very commands it used, read from
# its build.ninja, with each op's own flags. The bindings all parse torch's headers (~12 of the ~20 s a binding takes
# on 2 cores), so they are checked as one translation unit, each op's in a namespace of its own: the headers are
# parsed once, not once an op.
CUDA_HERE = pytest.mark.skipif(
    _can_compile_cuda() is not None, reason=f"cannot compile CUDA here: {_can_compile_cuda()}"
)


def _op_front(op):
    return getattr(ops, op) if op in OP_NAMES else getattr(Ops(loader.EXERCISES, common=loader.COMMON), op)


@pytest.fixture(scope="module")
def cuda_build(tmp_path_factory):
    """add2's CUDA build by the loader in a child (its build folder), and its build.ninja's variables."""
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST") or ("" if HAS_CUDA else "9.0a")
    r = run_python(
        "import loader; print(loader.build('add2', cuda=True))",
        env={
            "LABKIT_BUILD_DIR": str(tmp_path_factory.mktemp("cuda")),
            **({"TORCH_CUDA_ARCH_LIST": arch} if arch else {}),
        },
    )
    assert r.returncode == 0, r.stdout + r.stderr
    build_dir = Path(r.stdout.strip().splitlines()[-1])
    return build_dir, dict(re.findall(r"^(\w+) = (.*)$", (build_dir / "build.ninja").read_text(), re.M))


def _command(ninja, compiler, flags, op, nvcc):
    """add2's compile command from its build.ninja, for `op`: its extension name and its own flags in add2's place."""
    base = shlex.split(ninja[flags])
    add2 = ops.add2.flags(cuda=True, nvcc=nvcc)
    assert base[len(base) - len(add2) :] == add2, (base, add2)  # the loader's flags end the list
    base = [f.replace("labkit_add2", f"labkit_{op}") for f in base[: len(base) - len(add2)]]
    return shlex.split(ninja[compiler]) + base + _op_front(op).flags(cuda=True, nvcc=nvcc)


@CUDA_HERE
def test_a_cuda_build_compiles_and_links_through_the_loader(cuda_build):
    build_dir, _ = cuda_build
    assert list(build_dir.glob("*.cuda.o")), "no .cu file was compiled"
    assert (build_dir / "labkit_add2.so").exists()


@CUDA_HERE
@pytest.mark.parametrize("op", OP_NAMES + EXERCISE_OPS)
def test_every_kernel_file_compiles_for_cuda(op, cuda_build, tmp_path):
    """Each .cu file with nvcc as the loader runs it, and each torch-free .cpp with the CUDA build's flags."""
    _, ninja = cuda_build
    folder = Path(_op_front(op).op.folder)
    for source in sorted(folder.glob("*.cu")):
        cmd = _command(ninja, "nvcc", "cuda_cflags", op, nvcc=True) + shlex.split(ninja.get("cuda_post_cflags", ""))
        r = subprocess.run([*cmd, "-c", str(source), "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
        assert r.returncode == 0, f"{source}:\n{r.stdout}{r.stderr}"
    for source in sorted(folder.glob("*.cpp")):
        if '"binding.h"' not in source.read_text():  # a kernel file; bindings: the test below
            r = subprocess.run(
                [*_command(ninja, "cxx", "cflags", op, nvcc=False), "-fsyntax-only", str(source)],
                capture_output=True,
                text=True,
            )
            assert r.returncode == 0, f"{source}:\n{r.stdout}{r.stderr}"


@CUDA_HERE
def test_every_binding_compiles_for_cuda(cuda_build, tmp_path):
    """Every op's binding files (those that include binding.h) with the CUDA build's flags, as one translation unit:
    first every system header any of them reaches and kernels/common's headers, then each op's files inside a
    namespace of its own (their includes of what is already in are then skipped)."""
    _, ninja = cuda_build
    folders = [Path(_op_front(op).op.folder) for op in OP_NAMES + EXERCISE_OPS]
    headers = sorted(
        {
            line.strip()
            for folder in folders + [ROOT / "kernels" / "common", ROOT / "kernels" / "matmul"]
            for path in [*folder.glob("*.h"), *folder.glob("*.cpp")]
            for line in path.read_text().splitlines()
            if re.match(r"\s*#include <", line)
        }
    )
    shared = [f'#include "{h.name}"' for h in sorted((ROOT / "kernels" / "common").glob("*.h"))]  # several ops' own
    unit = [*headers, *shared]
    count = 0
    for folder in folders:
        bindings = [p for p in sorted(folder.glob("*.cpp")) if '"binding.h"' in p.read_text()]
        count += len(bindings)
        unit += [f"namespace labkit_check_{folder.name} {{"] + [f'#include "{p}"' for p in bindings] + ["}"]
    assert count >= len(folders) - 2, "fewer bindings than ops"  # ex3 (CPU alone) and ex6 (Python) have none
    (tmp_path / "bindings.cpp").write_text("\n".join(unit) + "\n")
    cmd = _command(ninja, "cxx", "cflags", "add2", nvcc=False)  # no op has CXX_FLAGS of its own
    r = subprocess.run([*cmd, "-fsyntax-only", str(tmp_path / "bindings.cpp")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr[-6000:]


@pytest.mark.skipif(_can_compile_cuda() is not None, reason=f"cannot compile CUDA here: {_can_compile_cuda()}")
def test_nvcc_error_is_short_and_precise(kit_copy):
    edit(kit_copy / "kernels/add2/add2.cu", "c[i] = a[i] + b[i];", "c[i] = a[i] + b[i] + oops;")
    r = run_python(
        textwrap.dedent(f"""
        import loader
        try:
            loader.build("add2", cuda=True, kernels_dir={str(kit_copy / "kernels")!r}, build_dir={str(kit_copy / "build")!r})
        except loader.CompileError as e:
            print("FILE", e.file, "LINE", e.line); print(e)
    """),
        env={"TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST") or "9.0"},
    )
    assert "FILE" in r.stdout, r.stdout + r.stderr
    assert re.search(r"FILE \S*add2\.cu LINE \d+", r.stdout)
    assert 'identifier "oops" is undefined' in r.stdout
    assert "c[i] = a[i] + b[i] + oops;" in r.stdout


def test_doctor_runs():
    r = subprocess.run(
        [sys.executable, "-m", "loader", "doctor"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert r.returncode in (0, 1), r.stderr
    assert f"torch {torch.__version__}" in r.stdout
    assert "build cache:" in r.stdout and "ops build for:" in r.stdout
    if HAS_CUDA:
        assert "GPU 0:" in r.stdout and "compute capability" in r.stdout


def test_a_compiler_with_a_private_cxx_runtime_is_detected_and_avoided(tmp_path):
    """Such a CXX (the GPU machine presets one) builds ops that crash Python at the first failed check."""
    from building.toolchain import links_shared_cxx_runtime

    wrapper = tmp_path / "g++-static"
    wrapper.write_text('#!/bin/sh\nexec g++ -static-libstdc++ "$@"\n')
    wrapper.chmod(0o755)
    assert links_shared_cxx_runtime("c++") is True
    assert links_shared_cxx_runtime(str(wrapper)) is False
    r = run_python(
        textwrap.dedent("""
        import torch
        from loader import ops
        try:
            ops.add2(torch.ones(3), torch.ones(4))
        except ValueError as e:
            print("caught:", e)
    """),
        env={"CXX": str(wrapper), "LABKIT_BUILD_DIR": str(tmp_path / "b"), "LABKIT_CUDA": "0"},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "links a private static C++ runtime" in r.stderr
    assert "caught: add2: a and b must have the same shape" in r.stdout


def test_op_flags_from_op_py_reach_the_compiler(kit_copy):
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    a = torch.ones(3)
    lab.add2(a, a)
    with open(kit_copy / "kernels/add2/op.py", "a") as f:
        f.write('\nCXX_FLAGS = ["-DLABKIT_TEST_FLAG=1"]\n')
    edit(
        kit_copy / "kernels/add2/add2_cpu.cpp",
        "load(a[i]) + load(b[i])",
        "load(a[i]) + LABKIT_TEST_FLAG * 7 * load(b[i])",
    )
    assert torch.equal(lab.add2(a, a), 8 * a)
    assert "-DLABKIT_TEST_FLAG=1" in next((kit_copy / "build").glob("*/add2/build.ninja")).read_text()
    ops.add2(a, a)


def test_kernel_files_compile_as_cpp17_unless_the_op_says_otherwise(kit_copy):
    """nvcc gets -O0 --threads 0 -std=c++17 (a kernel file includes no torch header, and C++17's standard library
    parses faster than the C++20 newer torch asks for its headers); an op.py's own -std= replaces ours. g++ gets no
    -std from us: the binding includes torch, and cpp_extension picks the standard torch needs."""
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    lab.add2(torch.ones(3), torch.ones(3))
    nvcc = lab.add2.flags(cuda=True, nvcc=True)
    assert nvcc[:4] == ["-O0", "--threads", "0", "-std=c++17"], nvcc
    assert not any(f.startswith("-std=") for f in lab.add2.flags(cuda=True))
    with open(kit_copy / "kernels/add2/op.py", "a") as f:
        f.write('\nCUDA_FLAGS = ["-std=c++20"]\n')
    lab.add2.refresh()
    assert [f for f in lab.add2.flags(cuda=True, nvcc=True) if f.startswith("-std=")] == ["-std=c++20"]


def test_scratch_variant_rewrites_the_copy_and_refuses_a_variant_that_changes_nothing():
    """The experiment scripts' variants: the copy's .cu is the transformed text, the kit's own is untouched."""
    mine = (ROOT / "kernels/add2/add2.cu").read_text()
    lab, kernels = scratch_variant("add2", lambda src: src + "\n// a variant\n")
    assert (kernels / "add2/add2.cu").read_text() == mine + "\n// a variant\n"
    assert (ROOT / "kernels/add2/add2.cu").read_text() == mine
    assert lab._kernels == kernels.resolve()
    with pytest.raises(ValueError, match="changed nothing"):
        scratch_variant("add2", lambda src: src)
    _, kernels = scratch_variant("add2", lambda src: src, changes=False)
    assert (kernels / "add2/add2.cu").read_text() == mine


def test_a_compile_error_shows_in_ipython_without_the_loaders_frames(capsys):
    """In a notebook the student sees file, line, message and source line; plain Python keeps the full traceback."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    # without a history: an enabled one starts a thread that outlives the test in this worker, which sets
    # environment variables (PYTEST_CURRENT_TEST) at every test while other threads may read them
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    error = CompileError(
        "add2",
        "/k/add2/add2_cpu.cpp",
        10,
        "'oops' was not declared in this scope",
        "    for (int64_t i = 0; i < n; i++) store(&c[i], load(a[i]) + oops);",
        Path("/b/log"),
    )
    try:
        raise error
    except CompileError:
        shell.showtraceback()
    finally:
        InteractiveShell.clear_instance()
    out = capsys.readouterr().out
    assert "add2_cpu.cpp:10: error: 'oops' was not declared" in out and "+ oops);" in out
    assert "Traceback" not in out and "loader.py" not in out and "test_loader.py" not in out, out


def test_an_op_loads_the_ops_its_binding_uses_first():
    """deform_conv2d's op.py names USES = ["matmul"] (on the GPU its binding calls labkit::matmul through the
    dispatcher): its first call in a fresh process loads matmul before it, though nothing there called ops.matmul."""
    code = textwrap.dedent(
        """
        import torch
        from loader import ops
        assert not hasattr(torch.ops.labkit, "matmul")
        ops.deform_conv2d(torch.randn(1, 2, 4, 4), torch.zeros(1, 18, 4, 4), torch.randn(3, 2, 3, 3), padding=1)
        print(torch.ops.labkit.matmul.default(torch.ones(2, 3), torch.ones(3, 1)).tolist())
        """
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[[3.0], [3.0]]" in r.stdout, r.stdout[-2000:]
