"""debug_lab: the kernels of the debugging lesson (05_debugging.ipynb). Two are wrong on purpose (an out-of-bounds
write, a shared-memory race): run those in a child process (kit.devices.run_isolated), never in a session you want
to keep. The kernels are in debug_lab.cu (GPU) and debug_lab_cpu.cpp (CPU); debug_lab.cpp binds them.
"""

import torch

SCHEMAS = [
    "debug_printf(Tensor x) -> ()",
    "debug_oob_write(Tensor(a!) y, int count) -> ()",
    "debug_block_reverse(Tensor x, bool race=False) -> Tensor",
]

# -lineinfo: nvcc keeps a map from machine code back to source lines, so compute-sanitizer (and ncu) name the line
# of a bad access. It changes no instruction. The loader appends these flags after -O3 (loader._Op.flags).
CUDA_FLAGS = ["-lineinfo"]
# None for the host compiler: 05_debugging.ipynb adds -g1 -fsanitize=address to a scratch copy's CXX_FLAGS.
CXX_FLAGS = []

LESSONS = ("printf", "oob_write", "smem_race", "smem_reverse")


def register(lib):
    """Shapes for PyTorch's compiler (fake tensors); the lesson ops have no gradient."""
    torch.library.register_fake("labkit::debug_block_reverse", lib=lib)(lambda x, race=False: x.new_empty(x.shape))
    torch.library.register_fake("labkit::debug_printf", lib=lib)(lambda x: None)
    torch.library.register_fake("labkit::debug_oob_write", lib=lib)(lambda y, count: None)


def debug_lab(lesson, x, *, count=None):
    """Run one of the lesson's kernels on x (float32):
    "printf"        print each element of x from the kernel (at most 1024); the GPU prints at the next sync
    "oob_write"     write 0, 1, ..., count-1 into x, in place. count > x.numel() writes past the end: THE BUG
    "smem_race"     return x reversed within each block of 256, through shared memory, with no barrier: THE BUG
    "smem_reverse"  the same, with __syncthreads(): right
    """
    if lesson not in LESSONS:
        raise ValueError(f"debug_lab: lesson must be one of {', '.join(map(repr, LESSONS))}, got {lesson!r}")
    if (count is not None) != (lesson == "oob_write"):
        raise ValueError('debug_lab: count= goes with lesson "oob_write", and only with it')
    if lesson == "printf":
        return torch.ops.labkit.debug_printf(x)
    if lesson == "oob_write":
        return torch.ops.labkit.debug_oob_write(x, count)
    return torch.ops.labkit.debug_block_reverse(x, lesson == "smem_race")
