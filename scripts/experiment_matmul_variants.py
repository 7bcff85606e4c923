"""An experiment, run by hand on a GPU machine, behind two choices in kernels/matmul/matmul.cu:

1. Which tile shape version 14 ("pipelined", what ops.matmul runs for float32) uses. A build of matmul.cu with
   LABKIT_MATMUL_SWEEP defined runs the shape that $LABKIT_MATMUL_SWEEP_SHAPE names (0-5, matmul.cu's
   launch_pipelined); each is checked against a float64 matmul on awkward shapes and timed beside torch.matmul
   (TF32 off) and versions 6 and 13, side by side in one process.
2. Where the time of a 16-bit product whose sizes TMA cannot read as they are goes (4095 x 4097 x 4093): B's copy
   into padded rows, A read through its residue maps, the kernel on already-padded inputs, and each Hopper version,
   beside the 4096^3 product.
3. Split-K (version 15): into how many ranges of k to cut a long K under a small output (M = N = 512, 1024 at
   K = 8192), and for float32 on which tile shape, timed at forced counts ($LABKIT_MATMUL_SWEEP_SPLITS in the sweep
   build, which both matmul.cu and matmul_hopper.cu then read) beside torch.matmul and the versions that do not split;
   1024^3 with and without a split; the row sweep M = N = 256 ... 2048 at K = 8192 as ops.matmul runs it; and
   16384 x 1024 x 1024 in bfloat16 on each Hopper version.

    python scripts/experiment_matmul_variants.py     (prints; writes results/<date>-<gpu>/matmul-variants-float32.json,
                                                      -unaligned.json and -splitk.json, or into $OUT where it is set)

STEPS="float32", "unaligned" or "splitk" runs one; SIZES="2048,4096,8192" sets the float32 sizes; SHAPES="0,1,2" the
shapes."""

import json
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kit import results, timing  # noqa: E402
from kit.notebook import scratch_variant  # noqa: E402

SHAPE_NAMES = [
    "128x128 k8 (2 blocks/SM)",
    "128x256 k8",
    "256x128 k8",
    "128x128 k16",
    "128x128, 128 threads",
    "128x128 k8 (1 block/SM)",
]
SHAPES = [int(s) for s in os.environ.get("SHAPES", ",".join(map(str, range(len(SHAPE_NAMES))))).split(",")]
# the splitk step's float32 tile shapes besides version 14's (SPLIT_SHAPES=0 leaves them out)
STEP_SPLITS_F32_SHAPES = os.environ.get("SPLIT_SHAPES", "1") == "1"
SIZES = [int(s) for s in os.environ.get("SIZES", "2048,4096,8192").split(",")]
CHECK_SHAPES = [
    (1, 1, 1),
    (127, 129, 257),
    (129, 257, 1000),
    (1000, 1000, 1000),
    (33, 136, 40),
    (130, 260, 12),
    (300, 520, 36),
]


def max_error_ratio(got, a, b):
    """The largest error against a float64 matmul, as a share of tests/test_matmul.py's bound ((2K + 8) eps |A||B|):
    at most 1 is right."""
    ref = a.double() @ b.double()
    eps = 2.0**-24 if a.dtype == torch.float32 else 2.0**-8
    bound = (2 * a.shape[1] + 8) * eps * (a.double().abs() @ b.double().abs()) + 1e-300
    return float(((got.double() - ref).abs() / bound).max())


def sweep_float32(lab, dev, res):
    tf32, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, False
    inputs = {n: (torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)) for n in SIZES}
    out = res["float32"] = {}
    for n, (a, b) in inputs.items():
        fns = {
            "torch": lambda: torch.matmul(a, b),
            "vec": lambda: lab.matmul(a, b, version="vec"),
            "warptile": lambda: lab.matmul(a, b, version="warptile"),
        }
        for shape in SHAPES:
            fns[f"pipelined/{shape}"] = (
                lambda s: (
                    lambda: (
                        os.environ.__setitem__("LABKIT_MATMUL_SWEEP_SHAPE", str(s)),
                        lab.matmul(a, b, version="pipelined"),
                    )
                )
            )(shape)
        times = timing.side_by_side(fns, device=dev, rounds=3, budget=0.6)
        row = out[n] = {
            name: {"tflops": timing.tflops(2 * n**3, t.median), "vs_torch": times["torch"].median / t.median}
            for name, t in times.items()
        }
        print(
            f"float32 {n}^3: " + ", ".join(f"{k} {v['tflops']:.1f} ({v['vs_torch']:.3f}x)" for k, v in row.items()),
            flush=True,
        )
    errors = out["errors"] = {}
    for shape in SHAPES:
        os.environ["LABKIT_MATMUL_SWEEP_SHAPE"] = str(shape)
        worst = 0.0
        for m, n, k in CHECK_SHAPES:
            a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev)
            worst = max(worst, max_error_ratio(lab.matmul(a, b, version="pipelined"), a, b))
        base = torch.randn(300 * 130 + 1, device=dev)  # an unaligned start: the scalar path
        a, b = base[1:].view(300, 130), torch.randn(130, 260, device=dev)
        worst = max(worst, max_error_ratio(lab.matmul(a, b, version="pipelined"), a, b))
        errors[shape] = worst
        print(f"shape {shape} ({SHAPE_NAMES[shape]}): worst error {worst:.3f} of the bound", flush=True)
    for m, n, k in CHECK_SHAPES:
        a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev)
        errors[f"warptile {m}x{n}x{k}"] = max_error_ratio(lab.matmul(a, b, version="warptile"), a, b)
    print("warptile worst error", max(v for k, v in errors.items() if str(k).startswith("warptile")), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = tf32


def unaligned(lab, dev, res):
    """Where a 4095 x 4097 x 4093 bfloat16 product's time goes, against 4096^3."""
    out = res["unaligned"] = {}
    dt = torch.bfloat16
    a4, b4 = torch.randn(4096, 4096, device=dev, dtype=dt), torch.randn(4096, 4096, device=dev, dtype=dt)
    a, b = torch.randn(4095, 4093, device=dev, dtype=dt), torch.randn(4093, 4097, device=dev, dtype=dt)
    # the same values in rows padded to a multiple of 8: slices whose rows TMA reads where they are
    ap = torch.zeros(4095, 4096, device=dev, dtype=dt)
    bp = torch.zeros(4093, 4104, device=dev, dtype=dt)
    ap[:, :4093] = a
    bp[:, :4097] = b
    av, bv = ap[:, :4093], bp[:, :4097]

    def pad_to(m, ld):  # a copy of m in rows ld apart (torch's copy_), as a view of its first columns
        p = torch.empty(m.shape[0], ld, device=dev, dtype=dt)
        p[:, : m.shape[1]].copy_(m)
        return p[:, : m.shape[1]]

    def pad(m):  # rows padded to a multiple of 8, as TMA needs
        return pad_to(m, (m.shape[1] + 7) // 8 * 8)

    # a rows x cols view of a matrix ld wide (TMA reads its rows as they are), holding src or random values: never
    # zeros, which the tensor cores multiply faster than random values (an H200 ran 4096^3 with a B of zeros in 191 us
    # against 207 us), so a row of zeros would not compare with the others
    def padded(rows, cols, ld, src=None):
        wide = torch.randn(rows, ld, device=dev, dtype=dt)
        if src is not None:
            wide[:, :cols] = src
        return wide[:, :cols]

    tall = lambda x, y: lambda: lab.matmul(x, y, version="tall")  # noqa: E731
    persistent = lambda x, y: lambda: lab.matmul(x, y, version="persistent")  # noqa: E731
    fns = {
        "4096^3": lambda: lab.matmul(a4, b4),
        # what ops.matmul does: B copied into padded rows (matmul_pad_rows), then the product, reading A through
        # its eight residue maps (matmul_hopper.cuh's AMaps)
        "unaligned": lambda: lab.matmul(a, b),
        # A as a padded view: against "unaligned", what reading A through its maps costs
        "unaligned, A a padded view": lambda: lab.matmul(av, b),
        "unaligned, padded views": lambda: lab.matmul(av, bv),
        "unaligned, B rows 128-byte aligned": lambda: lab.matmul(av, padded(4093, 4097, 4160, b)),
        "torch pad a": lambda: pad(a),
        "torch pad b": lambda: pad(b),
        "torch 4096^3": lambda: torch.matmul(a4, b4),
        "torch unaligned": lambda: torch.matmul(a, b),
        # which of the three odd sizes costs the kernel time, one at a time; N = 4097 and 4104 leave a narrow last
        # tile column (matmul_hopper.cuh's TileWalk)
        "persistent 4095 x 4096 x 4096": persistent(a4[:4095], b4),
        "persistent 4096 x 4096 x 4093": persistent(a4[:, :4093], b4[:4093]),
        "persistent 4096 x 4097 x 4096": persistent(a4, padded(4096, 4097, 4104)),
        "persistent 4096 x 4104 x 4096": persistent(a4, padded(4096, 4104, 4104)),
        # the same with B's rows 128-byte aligned (4160 apart, as the binding's copy pads them), and 4096^3 so
        # laid out: what the narrow tile column and C's odd rows cost apart from B's row alignment
        "persistent 4096^3, B rows 4160 apart": persistent(a4, padded(4096, 4096, 4160)),
        "persistent 4096 x 4097 x 4096, B rows 4160 apart": persistent(a4, padded(4096, 4097, 4160)),
        "persistent 4096 x 4104 x 4096, B rows 4160 apart": persistent(a4, padded(4096, 4104, 4160)),
        # the binding's copy of B just before the product, as in "unaligned, A a padded view", but by torch
        "torch's copy of B, then the product": lambda: lab.matmul(av, pad_to(b, 4160)),
        "tall 4096^3": tall(a4, b4),
        "tall unaligned, padded views": tall(av, bv),
        "tall 4096 x 4104 x 4096": tall(a4, padded(4096, 4104, 4104)),
    }
    times = timing.side_by_side(fns, device=dev, rounds=3, budget=0.6)
    for name, t in times.items():
        out[name] = {"us": t.median * 1e6}
    out["choice"] = {"4096^3": lab.matmul(a4, b4, which=True), "unaligned": lab.matmul(a, b, which=True)}
    out["error of bound"] = max_error_ratio(lab.matmul(a[:1000], b), a[:1000], b)
    print("unaligned bf16 (us): " + ", ".join(f"{k} {t.median * 1e6:.1f}" for k, t in times.items()), flush=True)
    print("choice", out["choice"], "error", out["error of bound"], flush=True)


def sweep_env(fn, shape=1, splits=None, split_tile=128):
    """fn run with the sweep build's float32 tile shape (1: version 14's, as shipped), split count (None: the rule's)
    and 16-bit split-K tile width (128: as shipped; 256: version 10's tiles) set first."""

    def run():
        os.environ["LABKIT_MATMUL_SWEEP_SHAPE"] = str(shape)
        os.environ["LABKIT_MATMUL_SWEEP_SPLIT_TILE"] = str(split_tile)
        if splits is None:
            os.environ.pop("LABKIT_MATMUL_SWEEP_SPLITS", None)
        else:
            os.environ["LABKIT_MATMUL_SWEEP_SPLITS"] = str(splits)
        return fn()

    return run


def split_k(lab, dev, res):
    """Split-K's count and tile shape, 1024^3 with and without, the row sweep and 16384 x 1024 x 1024."""
    tf32, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, False
    out = res["splitk"] = {}
    mm = lab.matmul

    def run(name, fns, flops):
        times = timing.side_by_side(fns, device=dev, rounds=3, budget=0.4)
        row = out[name] = {
            k: {"us": t.median * 1e6, "vs_torch": times["torch"].median / t.median} for k, t in times.items()
        }
        print(
            f"{name} (us, x torch): " + ", ".join(f"{k} {v['us']:.1f} ({v['vs_torch']:.3f})" for k, v in row.items()),
            flush=True,
        )

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for n in (512, 1024):
            a, b = torch.randn(n, 8192, device=dev, dtype=dtype), torch.randn(8192, n, device=dev, dtype=dtype)
            fns = {"torch": lambda: torch.matmul(a, b), "fast": sweep_env(lambda: mm(a, b))}
            plain = "pipelined" if dtype == torch.float32 else "warpspec"
            fns[plain] = sweep_env(lambda v=plain: mm(a, b, version=v))
            if dtype != torch.float32:
                fns["wide"] = sweep_env(lambda: mm(a, b, version="wide"))
            for splits in (2, 4, 8, 16, 32):
                for shape in (1, 5, 0) if STEP_SPLITS_F32_SHAPES and dtype == torch.float32 else (1,):
                    fns[f"splitk/{splits}/{shape}"] = sweep_env(lambda: mm(a, b, version="splitk"), shape, splits)
                if dtype != torch.float32:  # 16 bits on version 10's 128 x 256 tiles
                    fns[f"splitk/{splits}/256"] = sweep_env(lambda: mm(a, b, version="splitk"), 1, splits, 256)
            errors = {}
            for name, fn in fns.items():
                if name != "torch":
                    errors[name] = max_error_ratio(fn(), a, b)
            run(f"{dtype} {n}x8192x{n}", fns, 2 * n * n * 8192)
            out[f"{dtype} {n}x8192x{n}"]["errors of bound"] = errors
            out[f"{dtype} {n}x8192x{n}"]["fast splits"] = sweep_env(lambda: mm(a, b, splits=True))()
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(1024, 1024, device=dev, dtype=dtype), torch.randn(1024, 1024, device=dev, dtype=dtype)
        plain = "pipelined" if dtype == torch.float32 else "warpspec"
        fns = {"torch": lambda: torch.matmul(a, b), plain: sweep_env(lambda v=plain: mm(a, b, version=v))}
        for splits in (2, 4):
            fns[f"splitk/{splits}"] = sweep_env(lambda: mm(a, b, version="splitk"), 1, splits)
        run(f"{dtype} 1024^3", fns, 2 * 1024**3)
    for dtype in (torch.bfloat16, torch.float32):
        for n in (256, 512, 768, 1024, 1536, 2048):
            a, b = torch.randn(n, 8192, device=dev, dtype=dtype), torch.randn(8192, n, device=dev, dtype=dtype)
            run(
                f"sweep {dtype} {n}x8192x{n}",
                {"torch": lambda: torch.matmul(a, b), "fast": sweep_env(lambda: mm(a, b))},
                2 * n * n * 8192,
            )
            out[f"sweep {dtype} {n}x8192x{n}"]["fast"]["version"] = sweep_env(lambda: mm(a, b, which=True))()
            out[f"sweep {dtype} {n}x8192x{n}"]["fast"]["splits"] = sweep_env(lambda: mm(a, b, splits=True))()
    a, b = (
        torch.randn(16384, 1024, device=dev, dtype=torch.bfloat16),
        torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16),
    )
    fns = {"torch": lambda: torch.matmul(a, b), "fast": sweep_env(lambda: mm(a, b))}
    for v in ("warpspec", "wide", "persistent", "tall"):
        fns[v] = sweep_env(lambda v=v: mm(a, b, version=v))
    run("bfloat16 16384x1024x1024", fns, 2 * 16384 * 1024 * 1024)
    torch.backends.cuda.matmul.allow_tf32 = tf32


def main():
    dev = torch.device("cuda")
    steps = os.environ.get("STEPS", "float32,unaligned,splitk").split(",")
    if "float32" in steps or "splitk" in steps:  # the sweeps need the variant build; unaligned, the op as it ships
        lab, kernels = scratch_variant("matmul", lambda src: "#define LABKIT_MATMUL_SWEEP 1\n" + src)
        hopper = kernels / "matmul" / "matmul_hopper.cu"  # its split count too
        hopper.write_text("#define LABKIT_MATMUL_SWEEP 1\n" + hopper.read_text())
    else:
        from loader import ops as lab
    t0 = time.time()
    lab.matmul(torch.ones(2, 2, device=dev), torch.ones(2, 2, device=dev))  # builds it
    print(f"built in {time.time() - t0:.1f}s", flush=True)
    for step, name in ((sweep_float32, "float32"), (unaligned, "unaligned"), (split_k, "splitk")):
        if name not in steps:
            continue
        res = {
            "device": torch.cuda.get_device_name(),
            "date": time.strftime("%Y-%m-%d"),
            "torch": torch.__version__,
            "shapes": SHAPE_NAMES,
        }
        try:
            step(lab, dev, res)
        except Exception as e:  # one step's failure leaves the other's numbers
            res["error"] = repr(e)
            print(name, "failed:", repr(e), flush=True)
        folder = Path(os.environ["OUT"]) if os.environ.get("OUT") else results.machine_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"matmul-variants-{name}.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
