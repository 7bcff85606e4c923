"""Exercise 11: the ring's bookkeeping in the Hopper matmul. Edit ring_step in ex11_wgmma_ring.h; grade with
kit.grade.check("ex11_wgmma_ring")."""

import torch

SCHEMAS = ["ex11_wgmma_ring(Tensor a, Tensor b, int stages=4, int order=0) -> (Tensor, Tensor)"]
ARCH_SPECIFIC = True  # the GPU half is the lesson's wgmma kernel: sm_90a where TORCH_CUDA_ARCH_LIST is unset


def register(lib):
    torch.library.register_fake("labkit::ex11_wgmma_ring", lib=lib)(
        lambda a, b, stages=4, order=0: (a.new_empty((a.shape[0], b.shape[1])), a.new_empty(3, dtype=torch.long))
    )


def ex11_wgmma_ring(a, b, *, stages=4, order=0):
    """a @ b through the ring, with ring_step deciding every slot and wait: (c, status). On the CPU (float32) a model
    of the ring with `stages` slots, the producer first (order=0) or the consumer (order=1); status is [what went
    wrong, at which step, in which slot] (0: nothing; 1: deadlock; 2: a slot read before its tiles landed; 3: a slot
    refilled before it was read; 4: a slot outside the ring; -1: no step). On a Hopper GPU (bfloat16) the lesson's
    version 9 kernel; status[0] is 1 if a wait never ended (a deadlock)."""
    return torch.ops.labkit.ex11_wgmma_ring(a, b, stages, order)
