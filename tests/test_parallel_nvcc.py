"""nvcc's device steps beside its host steps (building/parallel_nvcc.py): the same object, dependency file and
messages as plain nvcc, and a failure where it fails, for a kernel file of the kit, a compile error, a warning and a
missing header. Needs nvcc, no GPU (the code is compiled for sm_90a, not run)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from building import parallel_nvcc
from building.environment import cpp_extension

ROOT = Path(__file__).resolve().parent.parent
NVCC = Path(cpp_extension().CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc"

pytestmark = pytest.mark.skipif(not NVCC.is_file(), reason="no nvcc here")

FLAGS = ["-O0", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC"]
LOADER = ["--threads", "0"]  # with the loader's flags (loader.py, flags())


def compile_both(tmp_path, source, extra=(), flags=LOADER):
    """(plain, parallel): each a (returncode, output, object bytes or None, dependency file or None)."""
    results = []
    for name, prefix, env in [
        ("plain", [str(NVCC)], {}),
        ("parallel", [sys.executable, parallel_nvcc.__file__, str(NVCC)], {"LABKIT_PARALLEL_NVCC": "1"}),
    ]:
        obj, dep = tmp_path / f"{name}.o", tmp_path / f"{name}.d"
        r = subprocess.run(
            [*prefix, "-MD", "-MF", str(dep), *FLAGS, *flags, *extra, "-c", str(source), "-o", str(obj)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, **env},
        )
        text = dep.read_text().replace(str(obj), "OBJ") if dep.exists() else None
        results.append((r.returncode, r.stdout + r.stderr, obj.read_bytes() if obj.exists() else None, text))
    return results


def test_a_kit_kernel_compiles_to_the_same_object(tmp_path):
    (plain_rc, plain_out, plain_obj, plain_dep), (rc, out, obj, dep) = compile_both(
        tmp_path, ROOT / "kernels/add2/add2.cu", ["-I", str(ROOT / "kernels/common"), "-DLABKIT_WITH_CUDA"]
    )
    assert plain_rc == rc == 0, out
    assert out == plain_out
    assert dep == plain_dep and "cuda_types.cuh" in dep
    # the objects differ only where nvcc names its temporary file (tmpxft_<pid>_...): a few bytes
    assert len(obj) == len(plain_obj)
    assert sum(a != b for a, b in zip(obj, plain_obj)) <= 8


@pytest.mark.parametrize(
    "code, fails",
    [
        ("__global__ void k(float* p) { p[0] = oops; }\n", True),  # cudafe++ and cicc both see it: printed once
        ("__global__ void k(float* p) { int unused; p[0] = 1; }\n", False),  # a warning
        ('#include "not_there.h"\n', True),  # both preprocessors fail
        # the device branch alone fails, in its preprocessor, which may end before cudafe++ has started: nvcc's
        # error and status all the same (the test below fixes that order)
        ("#ifdef __CUDA_ARCH__\n#error on the device side only\n#endif\n", True),
    ],
)
@pytest.mark.parametrize("threads", [[], ["--threads", "0"]])
def test_messages_and_status_are_nvccs(tmp_path, code, fails, threads):
    src = tmp_path / "k.cu"
    src.write_text(code)
    plain, parallel = compile_both(tmp_path, src, flags=threads)
    assert bool(plain[0]) == bool(parallel[0]) == fails  # nvcc's own status is 1, 2 or 255 by case
    # the same messages; where both preprocessors fail, nvcc --threads prints the error of each and then one of its
    # own about the file that was not made, this the first error alone
    assert plain[1].startswith(parallel[1]) and (parallel[1] == plain[1] or threads)


def test_the_wrapper_is_plain_nvcc_without_the_driver_in_the_environment(tmp_path):
    path, env = parallel_nvcc.wrapper(tmp_path / "w", str(NVCC))
    assert set(env) == {"LABKIT_NVCC_DRIVER", "LABKIT_NVCC_PYTHON"}
    text = Path(path).read_text()
    assert str(ROOT) not in text  # the same text for every copy of the kit: one ccache key for a class
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_NVCC_")}
    r = subprocess.run([path, "--version"], capture_output=True, text=True, env=clean)
    assert r.returncode == 0 and "Cuda compilation tools" in r.stdout


def test_a_failed_compile_leaves_no_temporary_files(tmp_path):
    """A device-side error: cicc, running beside cudafe++, fails and leaves its temporary files where TMPDIR says;
    the driver gives its steps a folder of its own, removed when it ends, so nothing stays behind in the student's
    TMPDIR (/tmp) however often a compile fails."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[0] = oops; }\n")
    r = subprocess.run(
        [
            sys.executable,
            parallel_nvcc.__file__,
            str(NVCC),
            *FLAGS,
            *LOADER,
            "-c",
            str(src),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(scratch), "LABKIT_PARALLEL_NVCC": "1"},
    )
    assert r.returncode != 0 and "oops" in r.stdout + r.stderr
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_step_that_never_started_is_passed_over_for_the_one_that_failed(capfd):
    """The report of a compile in which the device branch failed before cudafe++ started (it waits for the host
    preprocessor): the failed step's message and status, not a stop at the step that never ran."""
    steps = [parallel_nvcc._Step(i, line) for i, line in enumerate(["gcc -E a.cu", "cudafe++ a", "cicc a", "ptxas a"])]
    steps[0].result = subprocess.CompletedProcess([], 0, b"", b"")
    steps[2].result = subprocess.CompletedProcess([], 2, b"", b'a.cu(1): error: identifier "oops" is undefined\n')
    assert parallel_nvcc._report(steps) == 2
    assert 'a.cu(1): error: identifier "oops" is undefined' in capfd.readouterr().err
