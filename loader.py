"""The kit's loader: `from loader import ops`, then `ops.add2(a, b)`.

Each folder of kernels/ is one operator. Its first call compiles it with torch.utils.cpp_extension.load (ninja) and
registers it as a PyTorch operator (torch.ops.labkit.*); after any edit to a file of the folder, the next call
rebuilds what changed and runs the new code, in the same process. The exercises' ops are folders of exercises/, which
the grader loads as an Ops of their own with kernels/common/ (kit.checks.exercise_ops): `ops` lists the lessons' ops
alone.

What this adds to cpp_extension.load, and why:
- Live rebuild without a full recompile. load() renames the module on every change (name_v1, ...), which
  changes a flag of every file and recompiles them all (16 s for a 1 s kernel edit). We keep the name,
  let ninja rebuild only what changed, and load the new library under a fresh file name (dlopen would
  return the old one for a path it has seen). Header edits count too: ninja tracks them, load() does not.
- Registered ops that survive reloads: the schemas are defined once from Python (kernels/<op>/op.py);
  the C++ side only registers implementations, which a later library may override. A library that
  defined the schema again would abort the process.
- CPU-only builds of the same folder where there is no GPU or no CUDA toolkit (.cu files left out,
  LABKIT_WITH_CUDA undefined).
- Short compile errors (building/compile_errors.py) and no hang on a lock left by a killed build.
"""

import fcntl
import importlib.util
import itertools
import os
import shutil
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

from building import compiler_cache, precompiled_header, say_once, watch
from building.compile_errors import CompileError, LoadError
from building.environment import (
    COMMON,
    EXERCISES,
    KERNELS,
    ROOT,
    arch_specific_targets,
    build_root,  # noqa: F401
    cpp_extension,
    cuda_build_wanted,
    torch_uses_lock_file,
)
from building.toolchain import fast_linker, safe_cxx

# True only while Dynamo traces a call, the one time the edit check (an epoll_wait, which Dynamo cannot trace) must
# not run. is_dynamo_compiling is one Python frame that returns False (0.02 us); is_compiling costs two (0.07 us)
is_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)

NAMESPACE = "labkit"
SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".py"}
# nvcc's define that leaves libstdc++'s C++17 special math functions out of a kernel file (_Op.flags says why)
NO_SPECIAL_MATH = "-D_GLIBCXX_BITS_SPECFUN_H"

_lib = None  # the torch.library.Library holding every schema; defined once per process
_defined = {}  # op schema name -> schema string
_registered = set()  # op folders whose op.py register() has run
_active = {}  # op name -> the _Op whose kernels are registered now (a kit copy may share the name)
_lock = threading.Lock()


class Ops:
    """`ops.<folder>` is the op of kernels/<folder>/: call it like a function; it builds on first use and rebuilds
    when a file of its folder (or of common/) changes. Another folder of op folders (exercises/, a scratch copy)
    gets an Ops of its own; `common` is the folder of shared headers, kernels_dir/common unless given."""

    def __init__(self, kernels_dir=KERNELS, build_dir=None, common=None):
        self._kernels = Path(kernels_dir).resolve()
        self._common = Path(common).resolve() if common else self._kernels / "common"
        self._build_dir = Path(build_dir) if build_dir else None
        self._ops = {}
        self._watch = None  # building.watch.Watch once an op was first used; None where watching cannot work
        self._watch_started = False
        for name in self.__dir__():  # plain attributes from the start: torch.compile finds them without __getattr__
            self._add(name)

    def _add(self, name):
        op = self._ops[name] = _Op(name, self._kernels / name, self._common, self._build_dir, self)
        self.__dict__[name] = op.front
        return op.front

    def __getattr__(self, name):  # an op folder made after this object
        if name.startswith("_"):
            raise AttributeError(name)
        with _lock:
            if name not in self._ops:
                if not (self._kernels / name / "op.py").is_file():
                    raise AttributeError(
                        f"no op {name!r}: expected a folder {self._kernels / name} with an op.py; "
                        "ops here: " + ", ".join(self.__dir__())
                    )
                self._add(name)
        return self._ops[name].front

    def __dir__(self):
        return sorted(p.parent.name for p in self._kernels.glob("*/op.py"))

    def _take_events(self):
        """Start watching on first use; mark the ops whose folders changed since the last look as stale."""
        if not self._watch_started:
            self._watch_started = True
            self._watch = watch.start(self._kernels, self._common)
            if self._watch is not None:
                self._watch.on_close.append(self._stop_watching)
        if self._watch is None:
            return
        touched = self._watch.take()
        if touched & {"common", "*"}:
            touched = set(self._ops)
        for name in touched & set(self._ops):
            self._ops[name].stale = True

    def _stop_watching(self):  # a forked child: check files on every call from now on
        self._watch = None
        for op in self._ops.values():
            op.stale, op._pending = True, watch.always


def _constant_for_compile(fn):
    """torch.compiler.assume_constant_result(fn): torch.compile calls fn while it traces, instead of tracing it. That
    decorator imports torch._dynamo (~1 s) and only sets this attribute, so without torch._dynamo loaded we set it
    ourselves (tests/test_loader.py's compile-first test fails if that ever stops working)."""
    if "torch._dynamo" in sys.modules:
        return torch.compiler.assume_constant_result(fn)
    fn._dynamo_marked_constant = True
    return fn


def _front(op):
    """What `ops.<name>` is: a plain function (a call costs less than a method's) that checks for edits, then calls
    the friendly function of op.py. The whole per-call cost of the kit is this check: one epoll_wait(0), ~0.3 us,
    which says whether any file changed (building/watch.py). `help(ops.<name>)` shows the friendly function."""

    def call(*args, **kwargs):
        if is_compiling():
            op._ready()
        elif op.stale or op._pending(0):
            op.refresh()
        return op._fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = op.name
    call.__doc__ = f"The op of {op.folder}: builds on first call. help() shows its signature once built."
    call.op = op  # the machinery: op.refresh(), op.flags(cuda), op.build_dir(), op.sources(cuda)
    call.refresh, call.flags, call.build_dir, call.sources = op.refresh, op.flags, op.build_dir, op.sources
    return call


class _Op:
    """One op folder: its Python face (op.py), its build, and the library loaded for it."""

    __slots__ = (
        "name",
        "folder",
        "common",
        "_build_parent",
        "_owner",
        "stale",
        "_pending",
        "_built",
        "_failed",
        "_py_sig",
        "_fn",
        "_mod",
        "_loads",
        "_dirs",
        "_files",
        "_ready",
        "_so",
        "front",
        "__weakref__",
    )

    def __init__(self, name, folder, common, build_dir, owner=None):
        self.name, self.folder, self.common = name, folder, common
        self._build_parent = build_dir
        self._owner = owner
        self.stale = True  # a file may have changed since the last check: check before the next call
        self._pending = watch.always  # the watch's epoll: a non-empty list when some file changed
        self._built = None  # signature of the sources behind the library loaded now
        self._failed = None  # (signature, error) of the last failed build, re-raised until a file changes
        self._py_sig = None
        self._fn = self._mod = None
        self._loads = 0
        self._dirs = self._files = None

        def ready():  # torch.compile runs this once while it traces a call, so the op exists before the graph does
            self.refresh()
            return True

        self._ready = _constant_for_compile(ready)
        self.front = _front(self)

    def __repr__(self):
        return f"<op {self.name} from {self.folder}>"

    # -- what changed ------------------------------------------------------------------------------

    def _signature(self):
        """mtimes and sizes of the op's sources and of common/, plus what decides the kind of build.
        The folders are listed again only when they change."""
        dirs = (os.stat(self.folder).st_mtime_ns, os.stat(self.common).st_mtime_ns)
        if dirs != self._dirs:
            self._files = sorted(
                str(p) for d in (self.folder, self.common) for p in d.iterdir() if p.suffix in SOURCE_SUFFIXES
            )
            self._dirs = dirs
        try:
            stats = tuple((st.st_mtime_ns, st.st_size) for st in map(os.stat, self._files))
        except FileNotFoundError:  # a file went between the folder listing and now
            self._dirs = None
            return self._signature()
        return dirs, stats, cuda_build_wanted(), os.environ.get("TORCH_CUDA_ARCH_LIST")

    def refresh(self):
        """Rebuild and reload if a file of the op changed since the last build. Where the files are watched
        (building/watch.py), that is asked of the watch first, and the files are statted only after an event."""
        owner = self._owner
        if owner is not None:
            owner._take_events()
            if not self.stale and owner._watch is not None:
                return  # the events were about other ops
        watching = owner is not None and owner._watch is not None
        sig = self._signature()
        if sig == self._built and _active.get(self.name) is self:
            self.stale = not watching
            return
        with _lock:
            if self._failed and self._failed[0] == sig:
                raise self._failed[1].again()
            self._load_python()
        kit = owner if owner is not None else ops
        for name in getattr(self._mod, "USES", ()):  # ops whose kernels this op's binding calls: loaded first
            getattr(kit, name)  # (an Ops adds a folder made after it on first sight)
            kit._ops[name].refresh()
        with _lock:
            if sig == self._built:  # only another copy of the kit took over the op: take it back
                self._load_library(self._so, rebuilt=False)
            else:
                try:
                    self._build(sig)
                except Exception as e:
                    if hasattr(e, "again"):
                        self._failed = (sig, e)
                    raise
        self.stale = not watching
        self._pending = owner._watch.pending if watching else watch.always

    def _load_python(self):
        path = self.folder / "op.py"
        sig = path.stat().st_mtime_ns
        if sig == self._py_sig:
            return
        # a module name of its own per kit folder (a scratch copy of the kit has its own op.py)
        mod_name = f"{NAMESPACE}_op_{self.name}" + (
            "" if self.folder.parent in (KERNELS, EXERCISES) else f"_{id(self)}"
        )
        spec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # torch.compile looks functions' modules up by name
        spec.loader.exec_module(mod)
        global _lib
        if _lib is None:
            _lib = torch.library.Library(NAMESPACE, "FRAGMENT")
        for schema in mod.SCHEMAS:
            op_name = schema.split("(")[0]
            if op_name not in _defined:
                _lib.define(schema)
                _defined[op_name] = schema
            elif _defined[op_name] != schema:
                print(
                    f"[labkit] {self.name}: the schema of {op_name} changed in op.py; a schema is defined once per "
                    f"process, so restart the Python kernel to use the new one",
                    file=sys.stderr,
                )
        if self.name not in _registered:
            mod.register(_lib)
            _registered.add(self.name)
        self._fn = getattr(mod, self.name)
        self._mod, self._py_sig = mod, sig
        self.front.__doc__, self.front.__wrapped__ = self._fn.__doc__, self._fn  # help(ops.<name>) shows these

    # -- build and load ----------------------------------------------------------------------------

    def build_dir(self, cuda=None):
        cuda = cuda_build_wanted() if cuda is None else cuda
        kind = (
            f"torch{torch.__version__}-py{sys.version_info.major}{sys.version_info.minor}-{'cuda' if cuda else 'cpu'}"
        )
        return (self._build_parent or build_root()) / kind / self.name

    def sources(self, cuda):
        suffixes = (".cpp", ".cc", ".cu") if cuda else (".cpp", ".cc")
        return sorted(str(p) for p in self.folder.iterdir() if p.suffix in suffixes)

    def flags(self, cuda, nvcc=False):
        """Compiler flags: -O3 (cpp_extension adds no -O for g++), the switch for the CUDA paths, and the op's own
        from op.py (CXX_FLAGS for the host compiler, CUDA_FLAGS for nvcc; e.g. CUDA_FLAGS = ["-lineinfo"]).
        For nvcc, -O is the host code's level only (a .cu file's launchers: a few integer ops before each launch;
        the device code is the same at any -O), so it gets -O0, and --threads 0, which runs nvcc's two preprocessors
        at once (its device steps run beside its host steps through building/parallel_nvcc.py). And -std=c++17: a
        kernel file includes no torch header, so it need not take the C++20 that newer torch asks for its own
        headers; C++17's standard library is lighter to parse twice (cudafe++ and the host compile). And
        -D_GLIBCXX_BITS_SPECFUN_H: in C++17 libstdc++'s <cmath>, which every .cu file gets through cuda_runtime.h,
        includes the special functions (std::riemann_zeta ...: templates that cudafe++, cicc and the host compile
        each parse, and with them <algorithm>'s core and <limits>); their include guard, defined first, leaves them out
        (a third of nvcc's time on a small kernel file), so a kernel file includes <algorithm> for std::min and
        std::max, and <limits>, itself, as it would under C++14 or libc++ (building/compile_errors.py says so where
        one is missing). Each choice shortens an edit's rebuild: scripts/experiment_edit_time.py measures them
        (results/*/edit_time.json). An op.py with ARCH_SPECIFIC = True also gets the targets of
        building.environment.arch_specific_targets (sm_90a for a Hopper GPU where TORCH_CUDA_ARCH_LIST is unset)."""
        own = list(getattr(self._mod, "CUDA_FLAGS" if nvcc else "CXX_FLAGS", []) if self._mod else [])
        if nvcc and cuda and getattr(self._mod, "ARCH_SPECIFIC", False):
            own += arch_specific_targets()
        switch = ["-DLABKIT_WITH_CUDA"] if cuda else []
        if not nvcc:
            return ["-O3"] + switch + own
        std = [] if any(f.startswith("-std=") for f in own) else ["-std=c++17"]  # an op's own -std= wins
        return ["-O0", "--threads", "0"] + std + [NO_SPECIAL_MATH] + switch + own

    def _build(self, sig):
        cuda = sig[2]
        build_dir = self.build_dir(cuda)
        build_dir.mkdir(parents=True, exist_ok=True)
        ext = f"{NAMESPACE}_{self.name}"
        ninja_log = build_dir / ".ninja_log"
        log_start = ninja_log.stat().st_size if ninja_log.exists() else 0
        t0 = time.perf_counter()
        cxx, note = safe_cxx()
        if note:
            say_once(f"{note} (make doctor)")
        if cxx is None and note:
            raise RuntimeError(f"{self.name}: {note}; install g++ or set CXX to a working C++ compiler")
        cache_env = compiler_cache.build_environment(cxx, kit=self.folder.resolve().parent.parent)
        # the bindings' precompiled header, first on the include path (building/precompiled_header.py); an op.py
        # with compiler flags of its own goes without
        own_flags = getattr(self._mod, "CXX_FLAGS", []) if self._mod else []
        pch = (
            None if own_flags else precompiled_header.folder(self.common, cxx, self.flags(cuda), cuda, build_dir.parent)
        )
        with _build_lock(build_dir, self.name), _environ(**{"CXX": cxx, **cache_env}):
            # load() keeps a per-process version per name and renames the module when sources change;
            # forgetting it keeps the name (and every file's flags) fixed, so ninja rebuilds only what changed
            cpp_extension().JIT_EXTENSION_VERSIONER.entries.pop(ext, None)
            try:
                so = cpp_extension().load(
                    name=ext,
                    sources=self.sources(cuda),
                    extra_cflags=self.flags(cuda),
                    extra_cuda_cflags=self.flags(cuda, nvcc=True),
                    extra_include_paths=[str(p) for p in (pch, self.common) if p],
                    extra_ldflags=[f for f in [fast_linker(cxx)] if f],
                    build_directory=str(build_dir),
                    with_cuda=cuda,
                    is_python_module=False,
                    verbose=False,
                )
            except RuntimeError as e:
                raise CompileError.from_build_output(self.name, str(e), build_dir) from None
            except OSError as e:
                raise LoadError.from_os_error(self.name, e) from None
        if pch:
            precompiled_header.after_build(pch, build_dir / "build.ninja", self.common, cxx)
        written = _ninja_outputs_since(ninja_log, log_start)
        compiled = [
            Path(s).name
            for s in self.sources(cuda)
            if Path(s).stem + (".cuda.o" if s.endswith(".cu") else ".o") in written
        ]
        self._load_library(Path(so), rebuilt=True)
        self._built, self._failed, self._so = sig, None, Path(so)
        what = ("built" if self._loads == 1 else "rebuilt") if compiled else "loaded"
        detail = f": compiled {', '.join(compiled)}" if compiled else " (up to date)"
        print(
            f"[labkit] {self.name}: {what} for {'CUDA' if cuda else 'CPU'} in {time.perf_counter() - t0:.1f} s{detail}"
        )

    def _load_library(self, so, rebuilt):
        """dlopen returns the library it already has for a path it has seen, old code and all. So a path
        is loaded once per process: load() loads a new build's file the first time, later ones load a copy."""
        if rebuilt and str(so) not in _loaded_paths:
            _loaded_paths.add(str(so))  # load() has just loaded it
        else:
            copies = so.parent / "loaded"
            copies.mkdir(exist_ok=True)
            _remove_dead_copies(copies)
            # a name never used before: overwriting a library this process has mapped would crash it
            copy = copies / f"{so.stem}.{os.getpid()}.{next(_copy_numbers)}{so.suffix}"
            shutil.copy2(so, copy)
            with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
                warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
                torch.ops.load_library(str(copy))
        self._loads += 1
        before = _active.get(self.name)
        if before is not None and before is not self:
            before.stale = True  # its next call must load its own library again
        _active[self.name] = self


_loaded_paths = set()
_copy_numbers = itertools.count()


@contextmanager
def _environ(**values):
    """Set environment variables (None: leave as is) for the duration of a build."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _ninja_outputs_since(log, start):
    """The files ninja wrote since byte `start` of its log: objects (x.o from x.cpp, x.cuda.o from x.cu) and the .so."""
    if not log.exists():
        return []
    new = log.read_bytes()[start:].decode(errors="replace").splitlines()
    return {ln.split("\t")[3] for ln in new if ln.count("\t") >= 4}


def _remove_dead_copies(folder):
    for p in folder.glob("*.so"):
        try:
            pid = int(p.suffixes[-3].lstrip("."))
            os.kill(pid, 0)
        except ProcessLookupError:
            p.unlink(missing_ok=True)
        except (ValueError, IndexError, PermissionError):
            pass


@contextmanager
def _build_lock(build_dir, name):
    """One build of an op at a time, across processes, with an OS lock that dies with its holder.

    Older torch (before 2.14) guards its build folder with a plain `lock` file that a killed build leaves
    behind, and every later load then waits forever, silently. We hold our own flock around torch's: so a
    `lock` file we find while holding it belongs to a build that died, and is removed."""
    path = build_dir.parent / f"{name}.buildlock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "?"
            print(f"[labkit] {name}: waiting for process {holder}, which is building {name} now ...", flush=True)
            t0 = time.perf_counter()
            fcntl.flock(f, fcntl.LOCK_EX)
            print(f"[labkit] {name}: the other build finished after {time.perf_counter() - t0:.1f} s", flush=True)
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        stale = build_dir / "lock"
        if stale.exists() and torch_uses_lock_file():
            print(f"[labkit] {name}: removed the lock file {stale} left by a build that was killed", flush=True)
            stale.unlink()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(name, cuda=None, kernels_dir=KERNELS, build_dir=None, common=None):
    """Build (and load) one op now, CUDA or CPU; returns its build folder. For tests and `make` targets."""
    common = Path(common or Path(kernels_dir) / "common")
    op = _Op(name, Path(kernels_dir) / name, common, build_dir and Path(build_dir))
    with _environ(LABKIT_CUDA=None if cuda is None else ("1" if cuda else "0")):
        op.refresh()
    return op.build_dir(cuda)


ops = Ops()

if __name__ == "__main__":
    if sys.argv[1:] == ["doctor"]:
        from building.doctor import main

        sys.exit(main())
    print("usage: python -m loader doctor", file=sys.stderr)
    sys.exit(2)
