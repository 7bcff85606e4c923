"""What the hub starts for each student (Spawner.cmd): gives the student a copy of the kit on their first start,
limits each of their processes' memory, then becomes their JupyterLab (jupyterhub-singleuser, with the hub's
arguments). It runs as the student: as their own Unix user where each has one, with their own $HOME, which it makes
readable by the student alone (0700).

    $HOME/kit/           the student's copy of the kit: the hand-out (the kit's committed files without
                         solutions/, tests/ and hub/: hub/classroom.py); made once, never overwritten: it holds
                         their work
    $HOME/grades/        their grade report, written there by `make grade-class`
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hub import classroom  # noqa: E402 (hub/classroom.py, beside this file)


def hand_out(home, handout=None):
    """$HOME/kit, copied from the hand-out on the first start (into a temporary name, then renamed, so a start killed
    half way leaves no half kit); returns it. The hand-out is the folder the hub made when it started
    (LABKIT_HANDOUT: the kit's committed files, hub/classroom.py); without one (an image with this kit in it), made
    here from the kit the same way."""
    kit = home / "kit"
    if not kit.exists():
        part = home / ".kit.partial"
        shutil.rmtree(part, ignore_errors=True)
        handout = handout or os.environ.get("LABKIT_HANDOUT")
        if handout:
            shutil.copytree(handout, part, symlinks=True)
        else:
            classroom.make_handout(part)
        part.rename(kit)
    return kit


def private_home(home):
    """The student's home, readable by them alone (0700): where each student is a Unix user, no classmate can read
    their work or their grade report."""
    home.chmod(0o700)


def limit_memory(limit):
    if limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing kernel writes no core file into the home


def main(args):
    private_home(Path.home())
    kit = hand_out(Path.home())
    os.environ["LABKIT_BUILD_DIR"] = str(kit / ".build")
    os.environ["PYTHONPATH"] = str(kit)  # `import loader` is the student's own loader, wherever a notebook is
    limit_memory(int(os.environ.get("MEM_LIMIT") or 0))
    os.chdir(Path.home())
    os.execv(sys.executable, [sys.executable, "-m", "jupyterhub.singleuser", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
