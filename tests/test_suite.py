"""The test suite's own machinery (tests/conftest.py), where it does more than set tests up."""

import os
import subprocess
import sys

from conftest import ROOT


def test_a_failure_is_logged_as_it_happens(tmp_path):
    """$LABKIT_FAILURE_LOG gets each failure's traceback when it fails: the run below is killed by its own next test,
    before pytest's summary, and the log still holds the first test's assertion."""
    (tmp_path / "test_child.py").write_text(
        "import os, signal\n"
        "def test_fails():\n    assert 6 * 7 == 41, 'the answer is wrong'\n"
        "def test_killed():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    log = tmp_path / "failures.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
        "LABKIT_FAILURE_LOG": str(log),
    }
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):  # this run's, not the child's
        env.pop(name, None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "conftest", str(tmp_path / "test_child.py")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == -9, r.stdout + r.stderr  # killed: no summary was printed
    text = log.read_text()
    assert "test_child.py::test_fails (call)" in text and "the answer is wrong" in text, text
    assert "test_killed" not in text
