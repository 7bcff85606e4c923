"""labkit-aot: the kit's ops compiled ahead of time, into a package pip installs.

    pip install --no-build-isolation ./aot        (or: make aot)
    python -c "import torch; from labkit_aot import ops; print(ops.add2(torch.ones(3), torch.ones(3)))"

It compiles the very files the JIT loader compiles, kernels/<op>/*.cpp (and *.cu in a CUDA build), with the same
flags (-O3, -DLABKIT_WITH_CUDA in a CUDA build, and op.py's CXX_FLAGS / CUDA_FLAGS), through torch's BuildExtension
(ninja; MAX_JOBS), into one library per op that holds only the kernels' registrations (TORCH_LIBRARY_IMPL). The
schemas are defined from Python: each op's op.py ships in the package, and importing labkit_aot defines them, then
loads the libraries (building/prebuilt.py, shipped as labkit_aot/_prebuilt.py).

--no-build-isolation: the build must compile against the torch that will run the ops; an isolated build would
download a torch of its own. It then uses this environment's setuptools, which must build wheels itself (70.1 and
later) or have the `wheel` package beside it. Environment: LABKIT_CUDA=1/0 (default: CUDA where torch has it, a GPU
is visible and nvcc is found, as for the JIT loader), LABKIT_OPS (comma-separated; default: every op folder of
../kernels, building.builds.lesson_ops). Objects, the wheel's staging and the egg-info go to aot/build/.
"""

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
os.chdir(HERE)  # setuptools takes source paths relative to setup.py's folder, and refuses absolute ones
sys.path.insert(0, str(ROOT))
from building import environment, precompiled_header  # noqa: E402  the kit's answers to "build CUDA?" and its cpp_extension with a working CUDA_HOME
from building.builds import lesson_ops, op_flags  # noqa: E402
from building.toolchain import safe_cxx  # noqa: E402

import torch  # noqa: E402

KERNELS = ROOT / "kernels"
OPS = [op for op in os.environ.get("LABKIT_OPS", "").split(",") if op] or list(lesson_ops(KERNELS))
FLAGS = {op: op_flags(KERNELS, op) for op in OPS}  # op.py's own (CXX_FLAGS, CUDA_FLAGS), read without its schemas
CUDA = environment.cuda_build_wanted()
cpp_extension = environment.cpp_extension()

# A compiler that links its own static C++ runtime builds libraries that crash Python at the first failed argument
# check (building/toolchain.py); setuptools compiles and links C++ with $CXX, so point it at a safe one.
cxx, note = safe_cxx()
if note:
    print(f"labkit-aot: {note}", file=sys.stderr)
if cxx:
    os.environ["CXX"] = cxx


COMMON = ["-O3"] + (["-DLABKIT_WITH_CUDA"] if CUDA else [])  # what loader._Op.flags gives the JIT build
# -g0: setuptools compiles with Python's own CFLAGS, -g among them; the JIT build has no debug information, and writing
# it made a CPU build of add2 a third longer (26 s against 19 on 2 cores)
CXX_COMMON = COMMON + ["-g0"]


def extension(op):
    cxx_flags, cuda_flags = FLAGS[op]
    suffixes = (".cpp", ".cc", ".cu") if CUDA else (".cpp", ".cc")
    sources = sorted(os.path.relpath(p, HERE) for p in (KERNELS / op).iterdir() if p.suffix in suffixes)
    kind = cpp_extension.CUDAExtension if CUDA else cpp_extension.CppExtension
    pch = [str(PCH)] if PCH and op in SHARED_FLAGS else []  # the precompiled header (below): first on the path
    return kind(
        f"labkit_aot._{op}",
        sources,
        include_dirs=[*pch, str(KERNELS / "common")],
        extra_compile_args={"cxx": CXX_COMMON + cxx_flags, "nvcc": COMMON + cuda_flags},
    )


# The bindings' headers (binding.h, autograd.h and the torch headers they include) compiled once for every op without
# CXX_FLAGS of its own (building/precompiled_header.py): setuptools builds the ops one after another, so the header is
# compiled from the first such op's build flags, once that op is built, and the ops after it load it. A binding's
# compile is ~19 s on one core, ~10 s of it parsing torch's headers; the header costs ~25 s once and ~2.5 s to load, so
# it pays from three ops on. GCC only; LABKIT_PCH=0 turns it off.
SHARED_FLAGS = [op for op in OPS if not FLAGS[op][0]]
PCH = (
    precompiled_header.own_folder(HERE / "build" / "pch", KERNELS / "common", cxx, CXX_COMMON, CUDA)
    if len(SHARED_FLAGS) >= 3
    else None
)


class BuildExtensionCudaObjects(cpp_extension.BuildExtension):
    """torch's BuildExtension, naming a .cu file's object x.cuda.o. setuptools names an object after its source's
    stem, so add2.cpp and add2.cu would both become add2.o (ninja: "multiple rules generate .../add2.o"); the JIT
    loader (cpp_extension.load) names them the same way as here. After the first op of the precompiled header's flags
    it compiles that header (PCH, above), from the flags ninja compiled that op's binding with."""

    def build_extensions(self):
        names = self.compiler.object_filenames

        def object_filenames(sources, strip_dir=0, output_dir=""):
            objects = names(sources, strip_dir=strip_dir, output_dir=output_dir)
            return [
                o[:-2] + ".cuda.o" if str(s).endswith(".cu") and o.endswith(".o") else o
                for s, o in zip(sources, objects)
            ]

        self.compiler.object_filenames = object_filenames
        super().build_extensions()

    def build_extension(self, ext):
        super().build_extension(ext)
        op = ext.name.split("._", 1)[1]
        gch = PCH / (precompiled_header.HEADER + ".gch") if PCH else None
        if gch and not gch.exists() and op in SHARED_FLAGS[:-1]:  # an op of the header's flags still to come
            made = precompiled_header.compile_now(PCH, Path(self.build_temp) / "build.ninja", KERNELS / "common", cxx)
            print(
                f"labkit-aot: the bindings' precompiled header {'compiled' if made else 'failed'}: {gch}",
                file=sys.stderr,
            )


class BuildPyWithOps(build_py):
    """Also ship what the package needs at import: each op's op.py, and the loader of prebuilt libraries."""

    def run(self):
        super().run()
        package = Path(self.build_lib) / "labkit_aot"
        (package / "op_py").mkdir(parents=True, exist_ok=True)
        for op in OPS:
            shutil.copyfile(KERNELS / op / "op.py", package / "op_py" / f"{op}.py")
        shutil.copyfile(ROOT / "building" / "prebuilt.py", package / "_prebuilt.py")


print(f"labkit-aot: building {', '.join(OPS)} for {'CUDA and CPU' if CUDA else 'CPU'} from {KERNELS}", file=sys.stderr)
Path("build").mkdir(exist_ok=True)
setup(
    packages=["labkit_aot"],
    ext_modules=[extension(op) for op in OPS],
    cmdclass={"build_ext": BuildExtensionCudaObjects, "build_py": BuildPyWithOps},
    install_requires=[f"torch=={torch.__version__.split('+')[0]}"],
    options={"egg_info": {"egg_base": "build"}},  # not beside setup.py
)
