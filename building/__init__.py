"""What the loader (loader.py) stands on: how an op folder becomes a loaded library, and what can go wrong on the way.

    environment.py     what decides a build: CUDA or CPU, torch's cpp_extension (with a working CUDA_HOME), where builds go
    toolchain.py       the compiler check (a CXX with a private static C++ runtime crashes Python; the loader avoids it)
    compile_errors.py  a compiler's output turned into a short error: file, line, message, source line
    watch.py           the edit watch (inotify): has a file of an op changed since its last call?
    compiler_cache.py  one ccache folder that many build folders compile through ($LABKIT_CACHE_DIR): a class's cache
    builds.py          the same kernels built ahead of time (aot/, pip) and with CMake (cmake/), for `make aot|cmake`
    prebuilt.py        loading those prebuilt libraries the way the loader loads its own
    doctor.py          `make doctor`: torch, CUDA toolkit, compiler, GPUs, build cache, each with its fix
    install.py         `make`'s .venv: requirements.txt installed by uv where pip's settings carry over to it, else pip

Nothing here imports loader.py or kit/: imports run one way, kit/ (the lessons' tools) -> loader.py -> building/.
"""

import sys

_said = set()


def say_once(message):
    """Print `[labkit] message` to stderr the first time this process says it (a note about the machine, not a
    result: the compiler the loader avoids, why files are not watched)."""
    if message not in _said:
        _said.add(message)
        print(f"[labkit] {message}", file=sys.stderr)
