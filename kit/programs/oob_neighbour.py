"""A few floats past the end of y, with PyTorch's caching allocator: no error, and the tensor after y changes."""

import torch

from kit.programs import report
from loader import ops

y = torch.zeros(1000, device="cuda")
z = torch.zeros(1000, device="cuda")  # most likely right after y, in the same block of memory the allocator holds
gap = (z.data_ptr() - y.data_ptr()) // 4  # floats from the start of y to the start of z
count = gap + 8 if gap > 0 else 1008
ops.debug_lab("oob_write", y, count=count)
torch.cuda.synchronize()
report(
    {
        "gap": gap,
        "count": count,
        "y_right": bool(torch.equal(y, torch.arange(1000.0, device="cuda"))),
        "z_head": z[:10].tolist(),
    }
)
