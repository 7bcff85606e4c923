"""An experiment, run by hand on a GPU machine: ELU's forward vector kernel with other packs per thread and threads
per block, each built from a scratch copy of kernels/elu and timed beside F.elu and a copy in one process.

    VARIANTS="2x256,2x128" python scripts/experiment_elu_variants.py   (packs x threads; prints the ratios)

Writes $OUT/elu_variants.json where OUT is set. Its results: results/2026-12-01-nvidia-h200/elu-variants*.json."""
import json, os, shutil, sys, tempfile, time
from pathlib import Path
import torch, torch.nn.functional as F
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import loader
from kit import timing
VARIANTS = [tuple(map(int, v.split("x"))) for v in os.environ.get("VARIANTS", "2x256,4x256,4x128,8x128,2x512,4x512").split(",")]
SIZES = [1 << 24, 1 << 26, 1 << 28]
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
dev = torch.device("cuda")
res = {"ref": {}, "variants": {}}
xs = {}
for dt in DTYPES:
    for n in SIZES:
        x = torch.randn(n, device=dev, dtype=dt)
        nb = 2 * n * x.element_size()
        res["ref"][f"{dt}-{n}"] = {"torch": timing.benchmark(lambda: F.elu(x), dev, budget=0.15).gbps(nb),
                                   "copy": timing.time_copy(nb, dev, budget=0.15).gbps(nb)}
        del x
for packs, threads in VARIANTS:
    tmp = Path(tempfile.mkdtemp())
    shutil.copytree(ROOT / "kernels" / "elu", tmp / "kernels" / "elu")
    shutil.copytree(ROOT / "kernels" / "common", tmp / "kernels" / "common")
    cu = tmp / "kernels/elu/elu.cu"
    s = cu.read_text()
    s = s.replace("constexpr int kPacks = 2;", f"constexpr int kPacks = {packs};")
    s = s.replace("constexpr int kForwardThreads = 128;", f"constexpr int kForwardThreads = {threads};")
    cu.write_text(s)
    lab = loader.Ops(tmp / "kernels", build_dir=tmp / "build")
    t0 = time.time(); lab.elu(torch.ones(4, device=dev)); print(f"variant packs={packs} threads={threads} built in {time.time()-t0:.1f}s", flush=True)
    op = torch.ops.labkit.elu.default
    out = {}
    for dt in DTYPES:
        for n in SIZES:
            x = torch.randn(n, device=dev, dtype=dt)
            nb = 2 * n * x.element_size()
            torch.testing.assert_close(op(x[:4096], 1.0), F.elu(x[:4096]))
            g = timing.benchmark(lambda: op(x, 1.0), dev, budget=0.15).gbps(nb)
            ref = res["ref"][f"{dt}-{n}"]
            out[f"{dt}-{n}"] = {"gbps": g, "vs_torch": g / ref["torch"], "of_copy": g / ref["copy"]}
            del x
    res["variants"][f"{packs}x{threads}"] = out
    print(f"  packs={packs} threads={threads}: " + "  ".join(
        f"{k.replace('torch.', '')}: {v['vs_torch']:.3f}/{v['of_copy']:.2f}" for k, v in out.items()), flush=True)
if os.environ.get("OUT"):
    Path(os.environ["OUT"], "elu_variants.json").write_text(json.dumps(res, indent=1))
