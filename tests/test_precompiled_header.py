"""The bindings' precompiled header (building/precompiled_header.py): the second build compiles it, a binding's compile
uses it (GCC's -H says so), an op rebuilt with it matches torch, and an edit of a shared header gets a header of its
own rather than the old one."""

import re
import subprocess
from pathlib import Path

import torch
from conftest import NEEDS_PCH, ROOT

from building import precompiled_header
from building.toolchain import safe_cxx
from loader import Ops

pytestmark = NEEDS_PCH


def edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def header_folder(build):
    """The folder a build put first on its include path (its build.ninja's flags)."""
    flags = (build / "build.ninja").read_text()
    found = re.search(r"-I(\S+/pch/[0-9a-f]{16})\b", flags)
    assert found, flags[:2000]
    return found.group(1)


def test_a_binding_compiles_with_the_precompiled_header_and_the_op_is_right(kit_copy):
    lab = Ops(kit_copy / "kernels", build_dir=kit_copy / "build")
    a, b = torch.randn(1000), torch.randn(1000)
    lab.add2(a, b)
    lab.elu(a)  # the second build with the same flags starts the header's compile, where no build has yet
    builds = {p.parent.name: p.parent for p in (kit_copy / "build").glob("*/*/build.ninja")}
    folder = header_folder(builds["add2"])
    # a link in the build folders' folder to the shared header's folder
    assert header_folder(builds["elu"]) == folder and folder.startswith(str(kit_copy / "build"))
    assert Path(folder).resolve().parent == precompiled_header.root().resolve()
    precompiled_header.wait()
    gch = Path(folder).resolve() / "binding.h.gch"
    assert gch.is_file(), (Path(folder) / "compile.log").read_text()

    # GCC's -H lists the headers a compile reads; a precompiled header it uses is marked "!", one it rejects "x"
    flags = precompiled_header._binding_flags(builds["add2"] / "build.ninja")  # this build's, with its paths
    exe = precompiled_header._is_gcc(safe_cxx()[0])
    source = kit_copy / "kernels/add2/add2.cpp"
    r = subprocess.run([exe, *flags, "-H", "-fsyntax-only", str(source)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.splitlines()[0] == f"! {folder}/binding.h.gch", r.stderr[:2000]

    # the binding recompiled with it (an edit of the binding file): the op still adds, and its gradient still flows
    edit(source, "// Shape, dtype and device checks", "// (edited) Shape, dtype and device checks")
    x = a.clone().requires_grad_()
    torch.testing.assert_close(lab.add2(x, b), a + b, rtol=0, atol=0)
    lab.add2(x, b).sum().backward()
    torch.testing.assert_close(x.grad, torch.ones_like(a))


def test_an_edited_shared_header_gets_a_header_folder_of_its_own(tmp_path):
    """The key covers the content of common/: a header compiled from the old binding.h is never used for the new."""
    common = tmp_path / "common"
    common.mkdir()
    for p in (ROOT / "kernels/common").iterdir():
        (common / p.name).write_bytes(p.read_bytes())
    cxx = safe_cxx()[0]
    before = precompiled_header.folder(common, cxx, ["-O3"], False)
    assert before == precompiled_header.folder(ROOT / "kernels/common", cxx, ["-O3"], False)
    edit(common / "cpu_half.h", "#include <cstdint>", "#include <cstdint>  // edited")  # not in the header
    assert precompiled_header.folder(common, cxx, ["-O3"], False) == before
    edit(common / "kit.h", "#include <cstdint>", "#include <cstdint>  // edited")
    after = precompiled_header.folder(common, cxx, ["-O3"], False)
    assert after != before and (after / "binding.h").is_file() and not (after / "binding.h.gch").exists()
    assert precompiled_header.folder(common, cxx, ["-O2"], False) != after  # other flags, another header


def test_a_cuda_build_where_no_gpu_is_visible_goes_without(monkeypatch):
    """A CUDA build without a GPU is a compile check, made a few times at most: no header folder, so no .gch of its
    own to compile; where a GPU is visible, CUDA builds get theirs, as CPU builds do everywhere."""
    cxx = safe_cxx()[0]
    monkeypatch.setattr(precompiled_header, "_gpu_visible", lambda: False)
    assert precompiled_header.folder(ROOT / "kernels/common", cxx, ["-O3"], True) is None
    assert precompiled_header.folder(ROOT / "kernels/common", cxx, ["-O3"], False) is not None
    monkeypatch.setattr(precompiled_header, "_gpu_visible", lambda: True)
    assert precompiled_header.folder(ROOT / "kernels/common", cxx, ["-O3"], True) is not None
