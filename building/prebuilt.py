"""Ops built ahead of time (the pip-installed package of aot/, or the CMake libraries of cmake/), loaded the way the JIT
loader loads its own builds: first each op's schemas are defined from its op.py, then its library, which holds only
the kernels (TORCH_LIBRARY_IMPL), is loaded with torch.ops.load_library.

Needs torch and nothing else of the kit: aot/setup.py ships this file inside the installed package.

    ops = Prebuilt({"add2": "build/liblabkit_add2.so"}, {"add2": "kernels/add2/op.py"})
    ops.add2(a, b)

One process holds one build of an op: the JIT loader and a Prebuilt (or two Prebuilts) both defining labkit::add2
would collide, so that is refused with a message.
"""

import importlib.util
import sys
from pathlib import Path

import torch

NAMESPACE = "labkit"
_libraries = []  # torch.library.Library objects: a registration lasts as long as its Library object


class Prebuilt:
    """ops.<name> is the friendly function of that op's op.py; its kernels come from an already built library."""

    def __init__(self, libraries, op_files):
        missing = sorted(set(libraries) - set(op_files))
        if missing:
            raise FileNotFoundError(f"no op.py for {', '.join(missing)}")
        self._libraries = {name: Path(p) for name, p in libraries.items()}
        lib = torch.library.Library(NAMESPACE, "FRAGMENT")
        _libraries.append(lib)
        for name in sorted(libraries):
            mod = _import_op_py(name, Path(op_files[name]))
            for schema in mod.SCHEMAS:
                op_name = schema.split("(")[0]
                if hasattr(getattr(torch.ops, NAMESPACE), op_name):
                    raise RuntimeError(
                        f"{NAMESPACE}::{op_name} is already defined in this process (by the JIT loader, "
                        f"or another build): use one build of an op per process"
                    )
                lib.define(schema)
            mod.register(lib)
            torch.ops.load_library(str(self._libraries[name]))
            self.__dict__[name] = getattr(mod, name)

    def __dir__(self):
        return sorted(self._libraries)

    def __repr__(self):
        return f"<prebuilt ops {', '.join(sorted(self._libraries))}>"

    @classmethod
    def from_cmake(cls, build_dir, kernels_dir):
        """The liblabkit_<op>.so libraries of a CMake build folder, with the op.py files of kernels/."""
        libraries = {
            p.name[len(f"lib{NAMESPACE}_") :].split(".")[0]: p
            for p in sorted(Path(build_dir).glob(f"lib{NAMESPACE}_*.so"))
        }
        return cls(libraries, {name: Path(kernels_dir) / name / "op.py" for name in libraries})

    @classmethod
    def from_package(cls, folder):
        """An installed labkit_aot package: _<op>*.so libraries, and their op.py files as op_py/<op>.py."""
        folder = Path(folder)
        libraries = {p.name[1:].split(".")[0]: p for p in sorted(folder.glob("_*.so"))}
        return cls(libraries, {name: folder / "op_py" / f"{name}.py" for name in libraries})


def _import_op_py(name, path):
    # a module name of its own, registered in sys.modules: torch.compile looks functions' modules up by name
    spec = importlib.util.spec_from_file_location(f"{NAMESPACE}_prebuilt_op_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
