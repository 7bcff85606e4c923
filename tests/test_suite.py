"""The test suite's own machinery (tests/conftest.py), where it does more than set tests up."""

import os
import subprocess
import sys

import conftest
import pytest
from conftest import ROOT


# a pytest of its own on a test file written in tmp_path, with the kit's conftest.py: not a worker of this run's
CHILD_PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "conftest"]


def child_env(**extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]), **extra}
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):  # this run's, not the child's
        env.pop(name, None)
    return env


def test_a_failure_is_logged_as_it_happens(tmp_path):
    """$LABKIT_FAILURE_LOG gets each failure's traceback when it fails: the run below is killed by its own next test,
    before pytest's summary, and the log still holds the first test's assertion."""
    (tmp_path / "test_child.py").write_text(
        "import os, signal\n"
        "def test_fails():\n    assert 6 * 7 == 41, 'the answer is wrong'\n"
        "def test_killed():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    log = tmp_path / "failures.log"
    r = subprocess.run(
        [*CHILD_PYTEST, str(tmp_path / "test_child.py")],
        env=child_env(LABKIT_FAILURE_LOG=str(log)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == -9, r.stdout + r.stderr  # killed: no summary was printed
    text = log.read_text()
    assert "test_child.py::test_fails (call)" in text and "the answer is wrong" in text, text
    assert "test_killed" not in text


def test_a_worker_in_notebook_05_is_topped_up_with_a_short_group_not_the_next_long_one():
    """xdist gives a worker its next group while it still has two tests to run. The worker on notebook 05 (two tests,
    the second minutes long) gets nothing more until the long one is all it has left, then the last, shortest group;
    the class-grading tests, next in line and long, go to the first worker to be free."""
    if conftest.LoadScopeScheduling is None:
        pytest.skip("pytest-xdist is not installed")
    notebook = "tests/test_notebooks.py::test_notebook_{}[05_debugging.ipynb]"
    collection = [
        notebook.format("is_stripped"),
        notebook.format("runs"),
        *(f"tests/test_hub_limits.py::test_{i}" for i in range(3)),
        *(f"tests/test_grade_class.py::test_{i}" for i in range(3)),
        "tests/test_devices.py::test_0",
    ]
    assert conftest.xdist_group(collection[0]) in conftest.MINUTES_LONG
    sched, (first, second) = conftest.offline_schedule(collection, workers=2)

    def groups(worker):
        return {conftest.xdist_group(collection[i]) for i in worker.sent}

    assert groups(first) == {"tests/test_notebooks.py#05_debugging.ipynb"}  # two tests to run: nothing more yet
    assert groups(second) == {"tests/test_hub_limits.py"}
    sched.mark_test_complete(first, 0)  # the first of notebook 05 done, the long one next: the worker needs one more
    assert groups(first) == {"tests/test_notebooks.py#05_debugging.ipynb", "tests/test_devices.py"}
    assert list(sched.workqueue) == ["tests/test_grade_class.py"]  # for the worker that is free first
    for i in range(3):
        sched.mark_test_complete(second, collection.index(f"tests/test_hub_limits.py::test_{i}"))
    assert "tests/test_grade_class.py" in groups(second)


def test_the_test_to_follow_notebook_05_is_one_of_seconds():
    """Tests are sent in the order conftest.py sorts them, and a worker on notebook 05's long test takes the last group
    left to run after it: that is test_layers (its 223 tests take a second), not test_timing (a minute and more), which
    comes last by name, nor a long group."""
    if conftest.LoadScopeScheduling is None:
        pytest.skip("pytest-xdist is not installed")
    by_name = [  # as pytest collects them, file by file
        *(f"tests/test_grade_class.py::test_{i}" for i in range(3)),
        *(f"tests/test_layers.py::test_{i}" for i in range(3)),
        *(f"tests/test_notebooks.py::test_notebook_{t}[05_debugging.ipynb]" for t in ("is_stripped", "runs")),
        *(f"tests/test_timing.py::test_{i}" for i in range(3)),
    ]
    collection = sorted(by_name, key=conftest.group_rank)
    assert collection[-1].startswith("tests/test_layers.py::") and collection[:2] == by_name[6:8]
    sched, (first, second) = conftest.offline_schedule(collection, workers=2)
    sched.mark_test_complete(first, 0)  # notebook 05's first test done: the worker needs one more group
    assert {conftest.xdist_group(collection[i]) for i in first.sent} == {
        "tests/test_notebooks.py#05_debugging.ipynb",
        "tests/test_layers.py",
    }


def test_tests_of_tens_of_gb_take_turns(tmp_path):
    """A test marked big_gpu_memory runs only while no other process on the machine runs one: here this test holds
    their lock while a child pytest reaches such a test, which must wait until the lock is let go."""
    import fcntl
    import time

    (tmp_path / "test_child.py").write_text(
        "import pathlib, pytest\n"
        "def test_first():\n    pathlib.Path('started').write_text('')\n"
        "@pytest.mark.big_gpu_memory\n"
        "def test_big():\n    pathlib.Path('ran').write_text('')\n"
    )
    with open(conftest.BIG_GPU_MEMORY_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        child = subprocess.Popen(
            [*CHILD_PYTEST, "-q", "test_child.py"],
            env=child_env(),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 240
            while not (tmp_path / "started").exists() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (tmp_path / "started").exists(), child.communicate(timeout=60)[0] if child.poll() is not None else ""
            time.sleep(1.0)  # a test that did not wait would have run by now: the child goes on at once
            assert not (tmp_path / "ran").exists(), "the big_gpu_memory test ran while another process held the lock"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    out = child.communicate(timeout=120)[0]
    assert child.returncode == 0 and (tmp_path / "ran").exists(), out
