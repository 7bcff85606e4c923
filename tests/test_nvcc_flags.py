"""The loader's nvcc flags on the real nvcc: -D_GLIBCXX_BITS_SPECFUN_H leaves <cmath>'s special functions out of a
kernel file (and with them the std::min and std::numeric_limits they bring along), changes no device code, and a
kernel file that uses std::min without <algorithm> gets an error that says which header to include. Needs nvcc, no
GPU (the code is compiled for sm_90a, not run)."""

import subprocess
from pathlib import Path

import pytest
import torch

from building.compile_errors import CompileError
from building.environment import cpp_extension
from loader import NO_SPECIAL_MATH, Ops

ROOT = Path(__file__).resolve().parent.parent
NVCC = Path(cpp_extension().CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc"

pytestmark = pytest.mark.skipif(not NVCC.is_file(), reason="no nvcc here")

ARCH = ["-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC"]


@pytest.fixture(scope="module")
def loader_flags():
    """nvcc's flags as the loader gives them to add2 (its own, without the CUDA switch)."""
    flags = Ops(ROOT / "kernels").add2.flags(cuda=True, nvcc=True)
    assert NO_SPECIAL_MATH in flags, flags
    return [f for f in flags if f != "-DLABKIT_WITH_CUDA"]


@pytest.fixture(scope="module")
def flags_with_special_math(loader_flags):
    """The same, less the define: <cmath> as any other C++17 build has it."""
    return [f for f in loader_flags if f != NO_SPECIAL_MATH]


def nvcc(tmp_path, code, flags, name="k.cu"):
    src = tmp_path / name
    src.write_text(code)
    obj = tmp_path / (name + ".o")
    r = subprocess.run([str(NVCC), *flags, *ARCH, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr, obj


def test_the_special_functions_are_left_out(tmp_path, loader_flags, flags_with_special_math):
    code = "#include <cmath>\ndouble zeta(double x) { return std::riemann_zeta(x); }\n"
    rc, out, _ = nvcc(tmp_path, code, flags_with_special_math)
    assert rc == 0, out  # C++17 declares them
    rc, out, _ = nvcc(tmp_path, code, loader_flags)
    assert rc != 0 and "riemann_zeta" in out, out


def fatbin(obj):
    r = subprocess.run(
        ["objcopy", "-O", "binary", "--only-section=.nv_fatbin", str(obj), "/dev/stdout"], capture_output=True
    )
    assert r.returncode == 0 and r.stdout, r.stderr
    return r.stdout


@pytest.mark.skipif(not any(Path(p, "objcopy").is_file() for p in ("/usr/bin", "/bin")), reason="no objcopy")
@pytest.mark.parametrize("kernel", ["add2/add2.cu", "deform_conv2d/deform_conv2d.cu"])
def test_the_device_code_is_the_same_either_way(tmp_path, loader_flags, flags_with_special_math, kernel):
    src = ROOT / "kernels" / kernel
    include = ["-I", str(ROOT / "kernels/common"), "-I", str(src.parent), "-DLABKIT_WITH_CUDA"]
    built = []
    for name, flags in [("with", flags_with_special_math), ("without", loader_flags)]:
        (tmp_path / name).mkdir()
        rc, out, obj = nvcc(tmp_path / name, src.read_text(), [*flags, *include], src.name)
        assert rc == 0, (name, out)
        built.append(fatbin(obj))
    assert built[0] == built[1]


LAUNCHER = """{include}#include <cstdint>
__global__ void fill(float* out, int64_t n) {{ int64_t i = blockIdx.x * 256 + threadIdx.x; if (i < n) out[i] = 1; }}
void fill_cuda(float* out, int64_t n) {{
    const int64_t blocks = std::min<int64_t>((n + 255) / 256, 4096);
    fill<<<blocks, 256>>>(out, n);
}}
"""


def test_std_min_with_algorithm_compiles(tmp_path, loader_flags):
    rc, out, _ = nvcc(tmp_path, LAUNCHER.format(include="#include <algorithm>\n"), loader_flags)
    assert rc == 0, out


def test_std_min_without_algorithm_names_the_header(tmp_path, loader_flags):
    rc, out, _ = nvcc(tmp_path, LAUNCHER.format(include=""), loader_flags)
    assert rc != 0
    error = CompileError.from_build_output("fill", out, tmp_path)
    line = (
        LAUNCHER.format(include="")
        .splitlines()
        .index("    const int64_t blocks = std::min<int64_t>((n + 255) / 256, 4096);")
        + 1
    )
    assert error.file == str(tmp_path / "k.cu") and error.line == line, (error.file, error.line)
    assert 'has no member "min"' in error.message
    assert "#include <algorithm>" in str(error), str(error)


def test_other_errors_get_no_header_hint(tmp_path, loader_flags):
    rc, out, _ = nvcc(
        tmp_path, LAUNCHER.format(include="#include <algorithm>\n").replace("blocks, 256", "oops"), loader_flags
    )
    assert rc != 0
    assert "hint" not in str(CompileError.from_build_output("fill", out, tmp_path))


def test_the_cpu_build_is_untouched():
    """g++ compiles the binding and the CPU kernels with everything of its standard library: no such define."""
    assert NO_SPECIAL_MATH not in Ops(ROOT / "kernels").add2.flags(cuda=torch.cuda.is_available())
