"""Exercise 11: the ring's bookkeeping in the Hopper matmul.

Versions 9-12 of the matmul lesson (`kernels/matmul/matmul_hopper.cuh`) split a block into a producer, which asks
TMA for the tiles of A and B of each step of k, and consumers, which multiply them, over a ring of `stages` slots of
shared memory. Both walk the same steps i = 0, 1, 2, ... (counted over every tile the block computes); step i uses
one slot, and each slot has two mbarriers:
- `full[slot]`: the producer's copy of step i completes one of its phases; the consumer waits for that phase before
  it reads the slot;
- `empty[slot]`: the consumer's release after reading completes one of its phases; the producer waits for the phase
  that frees the slot before it refills it.
A barrier's phases alternate in parity, 0, 1, 0, ...; `mbarrier.try_wait.parity` waits for the phase of a given
parity to complete, and a new barrier counts the phase *before* its first (parity 1) as completed.

Write `ring_step(i, stages)` in `ex11_wgmma_ring.h` (roughly 3 lines): step i's slot, the parity of the phase of
`full[slot]` that the consumer waits for, and the parity of the phase of `empty[slot]` that the producer waits for.
Think about the pass: how many times has this slot been filled before step i, and which fill (and which release)
is step i's?

Checked on the CPU by a model of the ring (the producer and the consumer as two loops taking turns, each barrier a
count of its completed phases, real tiles in the slots), for 1 to 5 slots, the producer first and the consumer first,
on shapes of one step to many tiles: C must match `a.double() @ b.double()`, and the model says which step went
wrong and how (a deadlock, a slot read before its tiles landed, a slot refilled before it was read). On a Hopper GPU,
once the model passes, also by the lesson's version 9 kernel itself, in bfloat16, run with your `ring_step` (a wait
that never ends gives up after about a second and is reported as a deadlock).

In the matmul lesson (notebook 07, section 8); grade it with `check("ex11_wgmma_ring")`, or
`python -m kit.grade ex11_wgmma_ring`."""

import torch

from kit.checks import GPU, begin

NUMBER = 11  # its place in the lessons
EDIT = "exercises/ex11_wgmma_ring/ex11_wgmma_ring.h"  # the file to edit
# (M, N, K): one step; one tile of several steps; several tiles (the ring's passes go on across tiles); edges
SHAPES = [(8, 8, 8), (8, 8, 64), (24, 16, 40), (17, 9, 70), (33, 40, 100)]
STAGES = [1, 2, 3, 4, 5]
GPU_SHAPES = [(128, 128, 64), (129, 136, 72), (300, 264, 1000), (1000, 1000, 1000)]
WHAT = {
    1: "deadlock",
    2: "read a slot before its tiles landed",
    3: "refilled a slot before the consumer read it",
    4: "a slot outside the ring",
}


def hint(status, step, slot, stages):
    """What the model's finding says about the answer."""
    if status == 4:
        return f"step {step} got slot {slot}, but the ring has slots 0 to {stages - 1}: steps go round the ring"
    if status == 1:
        return (
            f"deadlock at step {step} (slot {slot}): each side waited for a phase that the other never completes. "
            f"On its first pass over the ring the producer must not wait at all: which parity does a new "
            f"barrier count as already completed?"
        )
    if status == 2:
        return (
            f"the consumer read slot {slot} at step {step} before step {step}'s tiles landed: the phase of full "
            f"it waited for had already completed (an earlier fill, or the one a new barrier counts as done). "
            f"Which fill of this slot is step {step}'s, and what is that phase's parity?"
        )
    if status == 3:
        return (
            f"the producer refilled slot {slot} at step {step} while it still held tiles the consumer had not "
            f"read: it waited for a phase of empty that had already completed, or the slot came round too soon"
        )
    return ""


def close(got, a, b):
    ref = a.double() @ b.double()
    return bool(((got.double() - ref).abs() <= 1e-4 * (a.double().abs() @ b.double().abs()) + 1e-6).all())


def grade(ops, kit_root):
    report, op = begin(ops, "ex11_wgmma_ring", EDIT)
    if op is None:
        return report
    gen = torch.Generator().manual_seed(11)
    for order, who in ((0, "the producer first"), (1, "the consumer first")):
        failure = None
        for stages in STAGES:
            for m, n, k in SHAPES:
                a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
                c, status = op(a, b, stages=stages, order=order)
                code, step, slot = (int(x) for x in status)
                if code != 0 or not close(c, a, b):
                    failure = (stages, (m, n, k), code, step, slot)
                    break
            if failure:
                break
        name = f"the ring's model on the CPU, {who}"
        if failure is None:
            report.add(name, True, f"{len(STAGES)} ring sizes x {len(SHAPES)} shapes")
        else:
            stages, mnk, code, step, slot = failure
            what = WHAT.get(code, "C is wrong")
            report.add(
                name,
                False,
                f"{stages} slots, M x N x K = {mnk}: {what}" + (f" at step {step}, slot {slot}" if code else ""),
                hint(code, step, slot, stages) or "every step must read the tiles of its own step",
            )
    if not report.passed:
        # A ring the model finds wrong can do worse than deadlock on the GPU: a producer that reuses a slot too soon
        # arrives twice in one phase of its full barrier, which the hardware does not allow, and the kernel dies
        # with "unspecified launch failure", taking CUDA down for the rest of this Python process (measured on an
        # H200 with slot i % 2 instead of i % stages). So the GPU runs only a ring the model passes.
        report.skip(
            "the lesson's wgmma kernel with your ring, on the GPU",
            "not run: the CPU model above found the ring wrong, and a wrong ring can crash the kernel, and with it "
            "CUDA in this Python process; fix what the model says first",
        )
        return report
    if not GPU or torch.cuda.get_device_capability() != (9, 0):
        report.skip(
            "the lesson's wgmma kernel with your ring, on the GPU",
            "needs a Hopper GPU (compute capability 9.0): none here. The CPU model above checks the same "
            "function; notebook 07, section 8, shows what version 9 does on an H200, recorded",
        )
        return report
    gen = torch.Generator(device="cuda").manual_seed(11)
    for m, n, k in GPU_SHAPES:
        a = torch.randn(m, k, device="cuda", generator=gen).bfloat16()
        b = torch.randn(k, n, device="cuda", generator=gen).bfloat16()
        c, status = op(a, b)
        stuck = int(status[0]) == 1
        ref = a.double() @ b.double()
        ok = not stuck and bool(((c.double() - ref).abs() <= 2e-2 * (a.double().abs() @ b.double().abs())).all())
        if not ok:
            report.add(
                "the lesson's wgmma kernel with your ring, on the GPU",
                False,
                f"M x N x K = {(m, n, k)}: " + ("a wait never ended (deadlock)" if stuck else "C is wrong"),
                "the CPU model passes but the GPU does not: the GPU's producer runs further ahead; check "
                "the parity the producer waits for on later passes",
            )
            return report
    report.add(
        "the lesson's wgmma kernel with your ring, on the GPU",
        True,
        f"bfloat16, {len(GPU_SHAPES)} shapes, against float64",
    )
    return report
