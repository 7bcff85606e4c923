"""What the hub starts for each student (Spawner.cmd): gives the student a copy of the kit on their first start,
limits each of their processes' memory, then becomes their JupyterLab (jupyterhub-singleuser, with the hub's
arguments). It runs as the student: as their own Unix user where each has one, with their own $HOME.

    $HOME/kit/           the student's copy of the kit, without solutions/ (and without the kit's tests, which
                         type the solutions in); made once, never overwritten: it holds their work
    $HOME/kit/.build/    their build folder (LABKIT_BUILD_DIR): never shared with another student

The memory limit is Spawner.mem_limit (JupyterHub passes it as MEM_LIMIT, in bytes), set here as RLIMIT_DATA on the
server and everything it starts (kernels, compilers): a process that allocates past it gets an allocation error
(torch: "can't allocate memory"), in that student's kernel only. RLIMIT_DATA counts a process's private writable
memory, not its address space (which CUDA reserves by the terabyte, so RLIMIT_AS would break CUDA); that it leaves
CUDA's mappings alone is not tried on a GPU yet. It is a limit per process, not per student: a limit for all of a
student's processes together takes a cgroup (SystemdSpawner's mem_limit, or Kubernetes: README "Run a class")."""

import os
import resource
import shutil
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent  # the instructor's kit, which this file is part of
NOT_HANDED_OUT = (
    "solutions",
    "tests",
    "hub",
    ".git",
    ".venv",
    ".build",
    ".hub",
    "__pycache__",
    ".ipynb_checkpoints",
    ".pytest_cache",
    "*.egg-info",
)


def hand_out(home):
    """$HOME/kit, copied from the instructor's kit on the first start (into a temporary name, then renamed, so a
    start killed half way leaves no half kit); returns it."""
    kit = home / "kit"
    if not kit.exists():
        part = home / ".kit.partial"
        shutil.rmtree(part, ignore_errors=True)
        shutil.copytree(KIT, part, ignore=shutil.ignore_patterns(*NOT_HANDED_OUT), symlinks=True)
        part.rename(kit)
    return kit


def limit_memory(limit):
    if limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing kernel writes no core file into the home


def main(args):
    kit = hand_out(Path.home())
    os.environ["LABKIT_BUILD_DIR"] = str(kit / ".build")
    os.environ["PYTHONPATH"] = str(kit)  # `import loader` is the student's own loader, wherever a notebook is
    limit_memory(int(os.environ.get("MEM_LIMIT") or 0))
    os.chdir(Path.home())
    os.execv(sys.executable, [sys.executable, "-m", "jupyterhub.singleuser", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
