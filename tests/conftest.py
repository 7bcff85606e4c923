"""Shared test setup: the repo on sys.path, the `cuda` and `gpu2` markers (skipped, with the reason, where
the hardware is missing), helpers to run a copy of the kit in a subprocess, and a log of failures as they happen
($LABKIT_FAILURE_LOG)."""

import os

# torch.compile compiles its C++ and Triton code in the process that calls it: by default it starts a pool of compile
# processes, one a core (up to 32), in every process that compiles, each pytest worker and each child a test starts,
# beside the other workers' builds. Set before torch is imported; the children inherit it.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import collections  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess
import sys
import tempfile
import types
import zlib
from pathlib import Path

import pytest
import torch

# Each pytest-xdist worker gets its share of the cores for torch's CPU threads (torch.compile's generated CPU code
# runs on as many). By default every worker, and every notebook kernel or child pytest it starts, runs a thread a core:
# 16 workers on 16 cores ran 256 OpenMP threads, which spin while they wait for each other. On the H200 (16 workers) a
# thread each took the parallel part from 393 s to 345 s (the tests' times, summed: 4934 s to 4184 s). The children
# inherit OMP_NUM_THREADS; this process's own threads are set here.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _workers > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // _workers)))
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The suite compiles through one compiler cache (building/compiler_cache.py), as a class does: the many copies of the
# kit that tests build (a student's kit, an op edited in a copy, a notebook's scratch variant, a grader's copy) then
# compile each unedited file once, and take it from the cache after. Its folder is in the kit's own build folder, so
# a fresh clone starts with an empty one. A LABKIT_CACHE_DIR already set is used as it is; LABKIT_TEST_CACHE=0 (or no
# ccache) compiles everything afresh. The tests of the cache itself name caches of their own.
if "LABKIT_CACHE_DIR" not in os.environ and os.environ.get("LABKIT_TEST_CACHE") == "0":
    os.environ["LABKIT_CACHE_DIR"] = ""  # no cache at all, not the user's own either
if "LABKIT_CACHE_DIR" not in os.environ:
    from building import compiler_cache

    if compiler_cache.ccache() is not None:
        suite_cache = ROOT / ".build" / "test-compiler-cache"
        os.environ["LABKIT_CACHE_DIR"] = str(suite_cache)
        # and one folder of precompiled headers for every build, those of the tests that name a compiler cache of
        # their own included: each would otherwise compile the header again for its few builds, or go without
        os.environ.setdefault("LABKIT_PCH_DIR", str(suite_cache / "pch"))
        # Paths are hashed as the kit hashes them for a class (CCACHE_BASEDIR is the kit of the op built): relative
        # to the build folder inside that kit, outside it absolute. The tests' copies of the kit then share entries
        # whatever folder each lies in: torch's headers, in this checkout's .venv, keep one absolute path for every
        # copy. (A base above this checkout and the temporary folder made those paths relative too, so that only
        # copies at the same depth shared: in a cold run of the suite on 2 cores, 77 of its 260 cached compiles
        # hit; 86 with the kit's own base.)

HAS_CUDA = torch.cuda.is_available()
N_GPUS = torch.cuda.device_count() if HAS_CUDA else 0

# LABKIT_PREBUILT: run the op tests against ops built ahead of time instead of the JIT loader's (tests/test_builds.py):
# a CMake build folder, or the name of an installed package with an `ops` (labkit_aot). Tests that edit a copy of the
# kit (kit_copy) test the JIT loader itself and are skipped then.
PREBUILT = os.environ.get("LABKIT_PREBUILT")
if PREBUILT:
    import importlib

    import loader
    from building.prebuilt import Prebuilt

    loader.ops = (
        Prebuilt.from_cmake(PREBUILT, ROOT / "kernels")
        if os.path.isdir(PREBUILT)
        else importlib.import_module(PREBUILT).ops
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU")
    config.addinivalue_line("markers", "gpu2: needs two CUDA GPUs")
    config.addinivalue_line(
        "markers",
        "exclusive_gpu: times the GPU, so no other test may use it meanwhile "
        "(run apart from a parallel run: scripts/gpu_session.sh)",
    )
    config.addinivalue_line(
        "markers",
        "big_gpu_memory: takes tens of GB of GPU memory, so runs while no other such test does (big_gpu_memory_turn)",
    )


def pytest_runtest_logreport(report):
    """Where $LABKIT_FAILURE_LOG names a file, each failure's traceback is added to it as the failure happens, not in
    the summary at the end: a run stopped at its time limit (scripts/gpu_session.sh's steps on a device machine, whose
    calls end at 10 minutes) still says why its tests failed. Written by the process that reports (xdist's controller,
    not its workers, which report the same failure to it)."""
    path = os.environ.get("LABKIT_FAILURE_LOG")
    if path and report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(path, "a") as f:
            f.write(f"== {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")


def pytest_report_header(config):
    if PREBUILT:
        import loader

        return [f"labkit ops: prebuilt, from {', '.join(map(str, loader.ops._libraries.values()))}"]
    return []


# Under pytest-xdist (scripts/gpu_session.sh, make test where it is installed) tests are sent to the workers by the
# group of each: a group's tests run on one worker, in the order they are written. A file is one group (what --dist
# loadfile does: its tests may build on one another), but in these files no test relies on another's effects, so
# a group is one value of a parameter (the [id] of a build way, a notebook), one test function with all its
# parameters ("name"), the tests of one exercise ("exercise": the exercise its [id] begins with, else the test's
# name), or one of n shares of the file's tests for a number n; each worker sets up the module fixtures of its groups
# itself. Without this the longest file sets the time of the whole run: test_builds, which compiles every op several
# ways, would take nearly all of it on one worker. (xdist's own --dist loadgroup reads marks but cannot rename the
# tests under pytest 9, so it ran every test apart: the groups are made here, from the test's id, by a scheduler of
# the kit's own.) The op files are split too: test_builds runs all of them again in a child pytest for each prebuilt
# library, the longest part of the suite on a GPU machine, where that child spreads them over workers of its own;
# test_call_path's torch.compile tests take minutes each there (compiling C++ for the CPU beside every other worker).
# test_grade goes by exercise: the tests of one exercise grade the same copy of it, which its worker then builds once.
# In four shares, an exercise's tests went to several workers, each of which built its own copy of the exercise, and
# where two did so at once the compiler cache could not serve the second: on the 2-core machine one exercise was
# compiled three times, ~11 s of a core each.
XDIST_SPLIT = {
    "test_builds.py": "id",
    "test_notebooks.py": "id",
    "test_grade.py": "exercise",
    "test_call_path.py": "name",
    "test_matmul.py": 3,
    **{f"test_{op}.py": 2 for op in ("add2", "elu", "sum", "roi_align", "nms")},
}


def xdist_group(nodeid):
    """The group of a test, from its id ('tests/test_builds.py::test_x[aot-cpu]')."""
    path = nodeid.split("::", 1)[0]
    split = XDIST_SPLIT.get(path.rsplit("/", 1)[-1])
    if split is None:
        return path
    if isinstance(split, int):
        return f"{path}#{zlib.crc32(nodeid.encode()) % split}"
    name = nodeid.split("::", 1)[1].split("[", 1)[0]
    if split == "name":
        return f"{path}#{name}"
    if split == "exercise":
        exercise = re.search(r"\[(ex\d+_[a-z0-9_]+)", nodeid)
        return f"{path}#{exercise.group(1) if exercise else name}"
    param = re.search(r"\[(.*)\]$", nodeid)
    return f"{path}#{param.group(1) if param else ''}"


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:
    LoadScopeScheduling = None
HAS_XDIST = LoadScopeScheduling is not None  # a child pytest may spread its tests too (tests/test_builds.py)

if LoadScopeScheduling is not None:

    class GroupScheduling(LoadScopeScheduling):
        """--dist loadscope whose scopes are the groups of xdist_group: whole groups to the workers, as collected."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the groups in collection order: the longest first (below)

        def _split_scope(self, nodeid):
            return xdist_group(nodeid)

        def _reschedule(self, node):
            """xdist tops a worker up with the next group as soon as it has two tests or fewer left (a worker runs a
            test only once it knows the one after). A worker in a group whose tests take minutes (notebook 05's: two
            tests, the second one long) gets nothing more while it has a test to run after the current one, and then
            the last group left, one of SECONDS_GROUPS, not the next long one, which would wait minutes behind it: on
            the H200 the class-grading tests (95 s) sat queued behind notebook 05 (238 s) and that worker ended 55 s
            after any other."""
            queue, assigned = self.workqueue, self.assigned_work.get(node, {})
            if any(scope in MINUTES_LONG and not all(tests.values()) for scope, tests in assigned.items()):
                if not node.shutting_down and self._pending_of(assigned) >= 2:
                    return
                if len(queue) > 1:
                    queue.move_to_end(next(reversed(queue)), last=False)  # the last group goes first
            super()._reschedule(node)

    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") in ("loadgroup", "loadscope"):
            return GroupScheduling(config, log)
        return None

    class OfflineWorker:
        """What the scheduler asks of an xdist worker: the tests sent to it, by index in its collection."""

        shutting_down = False

        def __init__(self, name):
            self.gateway = types.SimpleNamespace(id=name)
            self.sent = []

        def send_runtest_some(self, indexes):
            self.sent += indexes

        def shutdown(self):
            self.shutting_down = True

    def offline_schedule(collection, workers):
        """The kit's scheduler without a pytest-xdist session (tests/test_suite.py, scripts/replay_test_schedule.py),
        once it has sent the first groups to `workers` OfflineWorkers that collected `collection` (test ids, in order);
        sched.mark_test_complete(worker, index) then tells it a test ended."""
        sched = GroupScheduling.__new__(GroupScheduling)
        sched.numnodes, sched.collection, sched.log = workers, None, lambda *args: None
        sched.workqueue, sched.assigned_work, sched.registered_collections = collections.OrderedDict(), {}, {}
        sched.config = types.SimpleNamespace(option=types.SimpleNamespace(loadscopereorder=False))
        nodes = [OfflineWorker(f"gw{i}") for i in range(workers)]
        for worker in nodes:
            sched.add_node(worker)
            sched.add_node_collection(worker, collection)
        sched.schedule()
        return sched, nodes


# The groups that take minutes, by the last runs' --durations: sent to the workers first, so that none of them starts
# near the end and runs on alone once every other group is done (xdist's own order is the most tests first). On the
# 2-core machine the builds of every op and the class's tests; on a GPU machine also the CUDA builds, each op's
# torch.compile tests, which compile C++ for the CPU beside every other worker's builds, and the debugging lesson's GPU
# cases (120 s there: sent out last, they ended a run with most workers idle), and the graded exercises (their four
# shares 171-429 s in all on an H100, the more where the compiler cache is cold: sent after the class's tests, a share
# was the last to end; sent before them, a replay of that run's durations, scripts/replay_test_schedule.py, ends 33 s
# sooner, 262 s against 295). test_timing (77-93 s there) is left out: its CPU tests time sleeps, which the builds at the start of a 2-core run would stretch.
LONG_GROUPS = (
    "tests/test_builds.py#aot-cuda",
    "tests/test_builds.py#aot-cpu",
    "tests/test_notebooks.py#05_debugging.ipynb",
    "tests/test_builds.py#cmake-cuda",
    "tests/test_builds.py#cmake-cpu",
    "tests/test_compiler_cache.py",
    "tests/test_loader.py",
    "tests/test_debugging.py",
    "tests/test_call_path.py",
    "tests/test_hub.py",
    "tests/test_browser.py",
    "tests/test_grade.py",
    "tests/test_grade_class.py",
    "tests/test_matmul.py",
    "tests/test_elu.py",
    "tests/test_nms.py",
    "tests/test_roi_align.py",
    "tests/test_sum.py",
    "tests/test_add2.py",
)


# The first five hold single tests that take minutes (a build of every op, its child pytest, notebook 05).
MINUTES_LONG = LONG_GROUPS[:5]

# Groups that take seconds on either machine (at most 18 s on an H100 machine, 8 s on the 2-core one), collected
# last and the shortest last: the last group left is what a worker of MINUTES_LONG takes to run after its long test
# (GroupScheduling._reschedule). Collected by name, test_timing.py came last: on an H100 (2026-12-06) its 77-91 s
# waited behind notebook 05 in both runs of the suite, and that worker ended 47-76 s after every other.
SECONDS_GROUPS = (
    "tests/test_suite.py",
    "tests/test_nvcc_flags.py",
    "tests/test_parallel_nvcc.py",
    "tests/test_devices.py",
    "tests/test_hub_private.py",
    "tests/test_hub_limits.py",
    "tests/test_layers.py",
)


def group_rank(nodeid):
    """Where a test's group is sent: by its place in LONG_GROUPS (a file named there stands for every share of it),
    then the groups named nowhere, then SECONDS_GROUPS."""
    group = xdist_group(nodeid)
    for name in (group, group.split("#", 1)[0]):
        if name in LONG_GROUPS:
            return LONG_GROUPS.index(name)
        if name in SECONDS_GROUPS:
            return len(LONG_GROUPS) + 1 + SECONDS_GROUPS.index(name)
    return len(LONG_GROUPS)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: group_rank(item.nodeid))  # stable: each group's tests stay in the order written
    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False here")
    no_gpu2 = pytest.mark.skip(reason=f"needs two CUDA GPUs: {N_GPUS} visible here")
    jit_only = pytest.mark.skip(reason="tests the JIT loader (edits a copy of the kit); LABKIT_PREBUILT is set")
    for item in items:
        if PREBUILT and "kit_copy" in getattr(item, "fixturenames", ()):
            item.add_marker(jit_only)
        if "cuda" in item.keywords and not HAS_CUDA:
            item.add_marker(no_gpu)
        if "gpu2" in item.keywords and N_GPUS < 2:
            item.add_marker(no_gpu2)


DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])


def _pch_applies():
    from building import precompiled_header
    from building.toolchain import safe_cxx

    return precompiled_header.enabled() and precompiled_header._is_gcc(safe_cxx()[0]) is not None


# the bindings' precompiled header (building/precompiled_header.py, and the AOT and CMake builds' own) is GCC's
NEEDS_PCH = pytest.mark.skipif(
    not _pch_applies(), reason="the bindings' precompiled header is for GCC, and LABKIT_PCH=0 turns it off"
)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request):
    return request.param


# The tests past 2^31 elements and nms's 20 GB mask each take 9 to 26 GB of the GPU, and PyTorch's caching allocator
# keeps what a process freed for that process. In a parallel run (16 workers, and the child runs of every op's tests
# that tests/test_builds.py starts for each prebuilt library) several of them ran at once and their workers kept the
# memory after: on an 80 GB H100 other workers' tests then failed with CUDA's out of memory, in creating a stream. So
# such a test waits for its turn, a lock every process on the machine shares (a file in the temporary folder, which the
# children inherit), checks the free memory it needs only then, and gives its cache back before it lets go.
BIG_GPU_MEMORY_LOCK = Path(tempfile.gettempdir()) / "labkit-big-gpu-memory.lock"


@pytest.fixture(autouse=True)
def big_gpu_memory_turn(request):
    if request.node.get_closest_marker("big_gpu_memory") is None:
        yield
        return
    with open(BIG_GPU_MEMORY_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            gc.collect()  # the test's tensors, where a failure's traceback still held them
            torch.cuda.empty_cache()
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def kit_copy(tmp_path):
    """A copy of kernels/ (and a build folder of its own) that a test may edit freely."""
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "build").mkdir()
    return tmp_path


def run_python(code, env=None, timeout=600, cwd=ROOT):
    """Run `code` in a fresh Python with the repo importable; returns the CompletedProcess."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd
    )


def assert_sanitizer_clean(check, code, done):
    """Run `code` in a child under compute-sanitizer's `check` (memcheck, racecheck): it must print `done` (it ran to
    the end), the tool must reach its summary of zero, and report nothing of the program's own."""
    if PREBUILT:  # the child imports the JIT loader's ops: it would check the JIT build again, not the prebuilt one
        pytest.skip("compute-sanitizer's child runs the JIT build, which the JIT run of these tests checks")
    from kit import sanitizers

    r, lines = sanitizers.sanitize(check, code)
    assert done in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])
    text = "\n".join(lines)
    assert "ERROR SUMMARY: 0 errors" in text or (check == "racecheck" and "RACECHECK SUMMARY: 0 hazards" in text), text
    assert not [ln for ln in sanitizers.findings(lines) if "COMPUTE-SANITIZER" not in ln and "SUMMARY" not in ln], text
