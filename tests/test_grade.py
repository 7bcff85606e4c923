"""The grader is itself tested: every reference solution passes, every untouched stub fails with a useful message,
and plausible wrong answers each fail on the check meant to catch them."""

import pytest
import torch
from conftest import HAS_CUDA, N_GPUS

from kit import grade
from kit.notebook import touch


class Graded(dict):
    """{exercise: report} for one kit, each exercise graded when first looked up: a run of a few of these tests
    (pytest -k ex12) grades only the exercises they need."""

    def __init__(self, kit=None):
        super().__init__()
        self.kit = kit

    def __missing__(self, exercise):
        report = self[exercise] = grade.check(exercise, kit=self.kit, quiet=True)
        return report


@pytest.fixture(scope="module")
def stubs():
    return Graded()


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A copy of the kit with solutions/ laid over it: (the copy, {exercise: report})."""
    kit = grade.with_solutions(tmp_path_factory.mktemp("solved"))
    return kit, Graded(kit)


@pytest.mark.parametrize("exercise", grade.EXERCISES)
def test_untouched_stub_fails_with_a_message(stubs, exercise):
    report = stubs[exercise]
    failures = [r for r in report.results if r.status == "fail"]
    assert failures, f"the stub of {exercise} was not caught:\n{report}"
    assert all(r.detail and r.hint for r in failures), str(report)
    assert not report.passed


# The exercises whose checks time the GPU (grade.TIMED: their check.py says TIMES_THE_GPU): exercise 6's compares the
# student's host-clock figure with CUDA events, exercise 2's bandwidth with a copy's and exercise 9's speed with the
# lesson's kernel. On a GPU that other processes keep busy, their kernels land in those times unevenly (the GPU
# switches between processes for milliseconds at a time): on the H200 under 16 test workers exercise 6's reference
# solution read 4538 us for a 2000 us spin, and in another run exercise 9's read 37% of the lesson's kernel's speed
# (its bar is 70%). So on a GPU their reference solutions are graded alone, as the timing tests are. A class's
# grading runs them after every other exercise, and each timed part takes the GPU alone (kit/checks.py, gpu_alone).
ALONE = set(grade.TIMED)


@pytest.mark.parametrize(
    "exercise", [pytest.param(e, marks=pytest.mark.exclusive_gpu) if e in ALONE else e for e in grade.EXERCISES]
)
def test_reference_solution_passes(solved, exercise):
    report = solved[1][exercise]
    assert not report.failed, str(report)
    needs_gpu = {"ex6_time_kernel"} | ({"ex2_add2_vec4", "ex9_matmul_tile"} if not HAS_CUDA else set())
    needs_gpu |= set() if HAS_CUDA and torch.cuda.get_device_capability() == (9, 0) else {"ex11_wgmma_ring"}
    if exercise not in needs_gpu:
        assert report.passed, str(report)


# (exercise, file in exercises/, text of the solution, wrong answer, check that must fail, needs)
MUTANTS = [
    (
        "ex1_add2_tail",
        "ex1_add2_tail/ex1_add2_tail.h",
        "if (i < n) c[i]",
        "if (i <= n) c[i]",
        "writes nothing past the end",
        None,
    ),
    ("ex1_add2_tail", "ex1_add2_tail/ex1_add2_tail.h", "if (i < n) c[i]", "if (i < n - 1) c[i]", "matches a + b", None),
    ("ex1_add2_tail", "ex1_add2_tail/ex1_add2_tail.h", "if (i < n) c[i]", "c[i]", "writes nothing past the end", None),
    (
        "ex2_add2_vec4",
        "ex2_add2_vec4/ex2_add2_vec4.h",
        "for (int64_t j = i; j < n; j++)",
        "for (int64_t j = i; j < n - 1; j++)",
        "matches a + b",
        None,
    ),
    (
        "ex2_add2_vec4",
        "ex2_add2_vec4/ex2_add2_vec4.h",
        "if (i + 4 <= n) {",
        "if (i < n) {",
        "writes nothing past the end",
        None,
    ),
    (
        "ex2_add2_vec4",
        "ex2_add2_vec4/ex2_add2_vec4.h",
        "if (i + 4 <= n) {",
        "if (false) {",
        "bandwidth against a copy",
        "cuda",
    ),  # correct, but the tail loop does all the work
    (
        "ex4_elu_backward",
        "ex4_elu_backward/ex4_elu_backward.h",
        "grad_out[i] * alpha * kit_exp(x[i])",
        "grad_out[i] * alpha * kit_expm1(x[i])",
        "gradient matches",
        None,
    ),  # the forward, not its derivative
    (
        "ex4_elu_backward",
        "ex4_elu_backward/ex4_elu_backward.h",
        "x[i] > T(0) ? grad_out[i]",
        "x[i] >= T(0) ? grad_out[i]",
        "gradient matches",
        None,
    ),  # x == 0 in the wrong branch
    (
        "ex5_device_guard",
        "ex5_device_guard/ex5_device_guard.cpp",
        "    const c10::cuda::CUDAGuard guard(a.device());\n",
        "",
        "takes a device guard" if N_GPUS < 2 else "runs on the inputs' GPU",
        None,
    ),
    (
        "ex5_device_guard",
        "ex5_device_guard/ex5_device_guard.cpp",
        "ex5_add2_on(a, b, current_stream())",
        "ex5_add2_on(a, b, /*stream=*/0)",
        "runs on the caller's current stream" if HAS_CUDA else "launches on the current stream",
        None,
    ),
    (
        "ex3_bias_relu",
        "ex3_bias_relu/ex3_bias_relu.cpp",
        "TORCH_CHECK_VALUE(bias.dim() == 1 && bias.size(0) == x.size(1)",
        "TORCH_CHECK_VALUE(true",
        "clear errors on bad input",
        None,
    ),
    (
        "ex3_bias_relu",
        "ex3_bias_relu/ex3_bias_relu_cpu.cpp",
        "bias[c]",
        "bias[r % cols]",
        "matches relu(x + bias) on cpu",
        None,
    ),
    (
        "ex7_warp_sum",
        "ex7_warp_sum/ex7_warp_sum.h",
        "for (int offset = 16;",
        "for (int offset = 8;",
        "matches x.sum()",
        None,
    ),  # lanes 16..31 never reach lane 0
    (
        "ex7_warp_sum",
        "ex7_warp_sum/ex7_warp_sum.h",
        "v += shfl_down(v, offset)",
        "v = shfl_down(v, offset)",
        "matches x.sum()",
        None,
    ),  # each step replaces instead of adding: lane 0 ends with lane 31's value
    (
        "ex8_block_sum",
        "ex8_block_sum/ex8_block_sum.h",
        "i < cols; i +=",
        "i < cols - 1; i +=",
        "matches x.sum(dim=-1)",
        None,
    ),  # the tail: the row's last element is lost
    (
        "ex8_block_sum",
        "ex8_block_sum/ex8_block_sum.h",
        "i < cols; i +=",
        "i <= cols; i +=",
        "reads nothing past the end",
        None,
    ),
    (
        "ex8_block_sum",
        "ex8_block_sum/ex8_block_sum.h",
        "atomic_add(&out[row], total)",
        "atomic_add(&out[0], total)",
        "adds into its own row",
        None,
    ),  # an atomic to the wrong address
    (
        "ex8_block_sum",
        "ex8_block_sum/ex8_block_sum.h",
        "    block_sync();  // every warp's slot written",
        "    //",
        "waits for every warp",
        None,
    ),  # the barrier deleted: a race, caught every time (the CPU runs warp 0 first)
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "        block_sync();  // every element of the tiles written",
        "        //",
        "waits until the tiles are loaded",
        None,
    ),  # thread 0 reads the tiles first: NaN, every time
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "        block_sync();  // every thread done with the tiles",
        "        //",
        "waits before overwriting the tiles",
        None,
    ),  # thread 0 loads step 2 before the others read step 1
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "row < M && k0 + tx < K ?",
        "row < M && k0 + tx < N ?",
        "matches A @ B",
        None,
    ),  # the edge guard against the wrong size: part of a row of A left out when N < K
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "row < M && k0 + tx < K ?",
        "row < M ?",
        "reads nothing past the end",
        None,
    ),  # no guard along k: hidden by B's zeros, but it reads past A's last row
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "k0 + ty < K && col < N ?",
        "k0 + ty <= K && col < N ?",
        "reads nothing past the end",
        None,
    ),  # row K of B: past the end of B (zeros there would hide it)
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "if (row < M && col < N) c[",
        "if (row < M) c[",
        "writes nothing past the end",
        None,
    ),  # the last row's columns >= N land after C
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "k++) acc += As[ty][k] * Bs[k][tx]",
        "k++) acc += As[k][tx] * Bs[ty][k]",
        "matches A @ B",
        None,
    ),  # the tiles' indices swapped
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "b[(k0 + ty) * N + col]",
        "b[(k0 + ty) * K + col]",
        "matches A @ B",
        None,
    ),  # B's rows taken as K long: right only when N == K
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "    float acc = 0.0f;\n",
        "    if (row >= M || col >= N) return;\n    float acc = 0.0f;\n",
        "matches A @ B",
        None,
    ),  # an early return: the tile elements those threads should load are never written
    (
        "ex9_matmul_tile",
        "ex9_matmul_tile/ex9_matmul_tile.h",
        "As[ty][tx] = row < M && k0 + tx < K ? a[row * K + k0 + tx] : 0.0f;\n"
        "        Bs[ty][tx] = k0 + ty < K && col < N ? b[(k0 + ty) * N + col] : 0.0f;",
        "As[tx][ty] = by * kEx9Tile + tx < M && k0 + ty < K ? a[(by * kEx9Tile + tx) * K + k0 + ty] : 0.0f;\n"
        "        Bs[tx][ty] = k0 + tx < K && bx * kEx9Tile + ty < N ? b[(k0 + tx) * N + bx * kEx9Tile + ty] : 0.0f;",
        "speed against the lesson's smem kernel",
        "cuda",
    ),  # correct, but tx walks down a column: uncoalesced
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "j++) acc[i][j] += am[i] * bn[j]",
        "j++) acc[i][j] += am[j] * bn[i]",
        "matches A @ B",
        None,
    ),  # A's and B's registers swapped: a transposed tile
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "am[i] = As[trow * kEx10TM + i][k]",
        "am[i] = As[tcol * kEx10TM + i][k]",
        "matches A @ B",
        None,
    ),  # A's rows picked by the thread's column
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "for (int i = 0; i < kEx10TM; i++)\n            for",
        "for (int i = 0; i < kEx10TM - 1; i++)\n            for",
        "matches A @ B",
        None,
    ),  # part of the tile accumulated
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "for (int k = 0; k < kEx10BK; k++)",
        "for (int k = 0; k < kEx10BK - 1; k++)",
        "matches A @ B",
        None,
    ),  # the step's last k left out
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "if (row < M && col < N) c[",
        "if (row <= M && col <= N) c[",
        "writes nothing past the end",
        None,
    ),  # off by one on the store's guard
    (
        "ex10_matmul_reg",
        "ex10_matmul_reg/ex10_matmul_reg.h",
        "if (row < M && col < N) c[",
        "if (row < M) c[",
        "writes nothing past the end",
        None,
    ),  # no guard on the columns: the last row's run on after C
    (
        "ex6_time_kernel",
        "ex6_time_kernel/ex6_time_kernel.py",
        "        fn()\n        torch.cuda.synchronize()  # the launch",
        "        fn()\n        # the launch",
        "measures a 2 ms GPU kernel",
        "cuda",
    ),  # an unsynchronised timing: only the launch is measured
    # exercise 11: each wrong ring caught by the CPU model, whichever side goes first
    (
        "ex11_wgmma_ring",
        "ex11_wgmma_ring/ex11_wgmma_ring.h",
        "int(pass % 2), int((pass + 1) % 2)",
        "int((pass + 1) % 2), int((pass + 1) % 2)",
        "the ring's model on the CPU, the producer first",
        None,
    ),
    (
        "ex11_wgmma_ring",
        "ex11_wgmma_ring/ex11_wgmma_ring.h",
        "int(pass % 2), int((pass + 1) % 2)",
        "int(pass % 2), int(pass % 2)",
        "the ring's model on the CPU, the consumer first",
        None,
    ),
    (
        "ex11_wgmma_ring",
        "ex11_wgmma_ring/ex11_wgmma_ring.h",
        "RingStep{int(i % stages)",
        "RingStep{int(i % 2)",
        "the ring's model on the CPU, the producer first",
        None,
    ),
    (
        "ex11_wgmma_ring",
        "ex11_wgmma_ring/ex11_wgmma_ring.h",
        "int(pass % 2), int((pass + 1) % 2)",
        "int(i % 2), int((pass + 1) % 2)",
        "the ring's model on the CPU, the consumer first",
        None,
    ),
    # exercise 12: the bilinear sample's edge rules, each broken once
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "    if (y <= T(0)) y = T(0);\n",
        "",
        "bilinear samples at awkward points",
        None,
    ),  # no clamp: y = -1 reads the row before the map, y = -0.5 gets the weights 1.5 and -0.5
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "if (y < T(-1) ||",
        "if (y < T(0) ||",
        "bilinear samples at awkward points",
        None,
    ),  # points between -1 and 0 dropped instead of clamped
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "y > T(H) ||",
        "y >= T(H) ||",
        "bilinear samples at awkward points",
        None,
    ),  # y == H is still on the map
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "return hy * hx * plane[y_low * W + x_low] + hy * lx * plane[y_low * W + x_high] +\n"
        "           ly * hx * plane[y_high * W + x_low] + ly * lx * plane[y_high * W + x_high];",
        "return ly * lx * plane[y_low * W + x_low] + ly * hx * plane[y_low * W + x_high] +\n"
        "           hy * lx * plane[y_high * W + x_low] + hy * hx * plane[y_high * W + x_high];",
        "matches torchvision.ops.roi_align",
        None,
    ),  # the weights of the low and high neighbours swapped
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "if (y_low >= H - 1) {",
        "if (y_low >= H) {",
        "reads nothing outside the map",
        None,
    ),  # off by one: the last row's high neighbour is row H, past the map
    (
        "ex12_bilinear_sample",
        "ex12_bilinear_sample/ex12_bilinear_sample.h",
        "        x_high = x_low + 1;",
        "        x_high = x_low;",
        "bilinear samples at awkward points",
        None,
    ),  # the high neighbour is the low one: no interpolation along x
    # exercise 13: the backward's scatter
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "atomic_add(&plane[n.y_low * W + n.x_low], g * n.hy * n.hx);\n"
        "    atomic_add(&plane[n.y_low * W + n.x_high], g * n.hy * n.lx);\n"
        "    atomic_add(&plane[n.y_high * W + n.x_low], g * n.ly * n.hx);\n"
        "    atomic_add(&plane[n.y_high * W + n.x_high], g * n.ly * n.lx);",
        "atomic_add(&plane[n.y_low * W + n.x_low], g * n.ly * n.hx);\n"
        "    atomic_add(&plane[n.y_low * W + n.x_high], g * n.ly * n.lx);\n"
        "    atomic_add(&plane[n.y_high * W + n.x_low], g * n.hy * n.hx);\n"
        "    atomic_add(&plane[n.y_high * W + n.x_high], g * n.hy * n.lx);",
        "gradient matches torchvision's",
        None,
    ),  # the rows' weights swapped
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "    if (!n.inside) return;  // the forward read nothing there\n",
        "",
        "writes nothing outside grad_input",
        None,
    ),  # a point off the map adds (0) into its pixels -1: before the plane
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "&plane[n.y_low * W + n.x_high]",
        "&plane[n.y_low * W + n.x_low + 1]",
        "writes nothing outside grad_input",
        None,
    ),  # off by one at the last column: an add of 0 past the plane (the right values, a write out of bounds)
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "&plane[n.y_high * W + n.x_low]",
        "&plane[n.y_high * H + n.x_low]",
        "gradient matches torchvision's",
        None,
    ),  # scattered to the wrong pixel: a row taken as H long
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "&plane[n.y_high * W + n.x_high], g * n.ly * n.lx",
        "&plane[n.y_high * W + n.x_high], g * n.ly",
        "gradient matches torchvision's",
        None,
    ),  # a weight missing its x part: the four adds hand back more than g
    (
        "ex13_roi_scatter",
        "ex13_roi_scatter/ex13_roi_scatter.h",
        "atomic_add(&plane[n.y_low * W + n.x_low], g * n.hy * n.hx);",
        "plane[n.y_low * W + n.x_low] += g * n.hy * n.hx;",
        "many boxes over one region on cuda",
        "cuda",
    ),  # a plain += on the GPU: adds lost where threads collide (the CPU runs them one after another)
    # exercise 14: deformable convolution's tap, where it samples and what it reads there
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "const T fy = floor(y), fx = floor(x);",
        "const T fy = T(int64_t(y)), fx = T(int64_t(x));",
        "samples at awkward points",
        None,
    ),  # truncation toward zero: -0.5 lands in row 0's cell, with a negative ly
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "return m * (",
        "return (",
        "samples at awkward points",
        None,
    ),  # the mask forgotten
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "i * s.dilation_h) + dy;  // the grid point, a whole pixel, moved\n"
        "    const T x = T(ox * s.stride_w - s.pad_w + j * s.dilation_w) + dx;",
        "i * s.dilation_h) + dx;  // the grid point, a whole pixel, moved\n"
        "    const T x = T(ox * s.stride_w - s.pad_w + j * s.dilation_w) + dy;",
        "samples at awkward points",
        None,
    ),  # dy and dx swapped
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "if (y <= T(-1) || y >= T(H) || x <= T(-1) || x >= T(W)) return T(0);",
        "if (y < T(0) || y > T(H - 1) || x < T(0) || x > T(W - 1)) return T(0);",
        "samples at awkward points",
        None,
    ),  # only samples between the first and last pixels read anything: those between -1 and 0 (and in the last
    # row) lose the pixels they reach
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "y1 < H && x0 >= 0 ?",
        "y1 <= H && x0 >= 0 ?",
        "reads nothing outside the map",
        None,
    ),  # off by one: the last row's row y0 + 1 = H is read, past the map
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "oy * s.stride_h - s.pad_h + i * s.dilation_h",
        "oy * s.dilation_h - s.pad_h + i * s.stride_h",
        "each tap samples where it should",
        None,
    ),  # the stride and the dilation swapped (along y): right for a 1 x 1 kernel of stride 1, wrong elsewhere
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "ox * s.stride_w - s.pad_w",
        "ox * s.stride_w + s.pad_w",
        "each tap samples where it should",
        None,
    ),  # the padding added instead of subtracted (along x)
    # exercise 15: the slopes of the bilinear value, the offsets' gradient
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "if (y < T(-1) ||",
        "if (y <= T(-1) ||",
        "slopes at awkward points",
        None,
    ),  # the value's test, y <= -1: a sample exactly at y = -1 still reaches row 0, and has a slope
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T fy = floor(y), fx = floor(x);",
        "const T fy = ceil(y) - T(1), fx = ceil(x) - T(1);",
        "slopes at awkward points",
        None,
    ),  # the slope on the wrong side at whole pixels: right between pixels, wrong on them
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T fy = floor(y), fx = floor(x);",
        "const T fy = T(int64_t(y)), fx = T(int64_t(x));",
        "slopes at awkward points",
        None,
    ),  # truncation toward zero: between -1 and 0, the slope of rows 0 and 1
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "return {dy, dx};",
        "return {dx, dy};",
        "slopes at awkward points",
        None,
    ),  # dy and dx swapped
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T dy = lx * (v11 - v01) + (T(1) - lx) * (v10 - v00);",
        "const T dy = lx * (v10 - v00) + (T(1) - lx) * (v11 - v01);",
        "slopes at awkward points",
        None,
    ),  # the columns' weights swapped in dy
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T v10 = pixel(plane, H, W, y0 + 1, x0), v11 = pixel(plane, H, W, y0 + 1, x0 + 1);",
        "const T v10 = plane[(y0 + 1) * W + x0], v11 = plane[(y0 + 1) * W + x0 + 1];",
        "reads nothing outside the map",
        None,
    ),  # the lower row read without pixel(): row H in the last row, past the map
]


@pytest.mark.parametrize(
    "exercise, file, right, wrong, check, needs",
    MUTANTS,
    ids=[f"{m[0]}:{m[4][:24]}:{i}" for i, m in enumerate(MUTANTS)],
)
def test_plausible_wrong_answer_fails_the_check_meant_for_it(solved, exercise, file, right, wrong, check, needs):
    if needs == "cuda" and not HAS_CUDA:
        pytest.skip(
            "this wrong answer is only wrong on a GPU (bandwidth, timing, adds lost without atomics): needs a CUDA GPU"
        )
    kit = solved[0]
    path = kit / "exercises" / file
    original = path.read_text()
    assert right in original, f"{right!r} not in {path}"
    try:
        path.write_text(original.replace(right, wrong, 1))
        touch(path)
        report = grade.check(exercise, kit=kit, quiet=True)
    finally:
        path.write_text(original)
        touch(path)
    failed = [r.check for r in report.results if r.status == "fail"]
    assert any(c.startswith(check) for c in failed), f"expected {check!r} to fail:\n{report}"


def test_a_ring_the_model_finds_wrong_never_runs_on_the_gpu(solved):
    """Exercise 11's kernel with a wrong ring can do worse than deadlock: with slot i % 2 its producer arrives twice in
    one phase of a barrier, and on an H200 the kernel died with "unspecified launch failure", ending CUDA for the
    grading process (a notebook's kernel, or every later exercise of the test worker). So the GPU part runs only for
    a ring the CPU model passes, and says why it did not run."""
    path = solved[0] / "exercises" / "ex11_wgmma_ring" / "ex11_wgmma_ring.h"
    original = path.read_text()
    assert "RingStep{int(i % stages)" in original
    try:
        path.write_text(original.replace("RingStep{int(i % stages)", "RingStep{int(i % 2)", 1))
        touch(path)
        report = grade.check("ex11_wgmma_ring", kit=solved[0], quiet=True)
    finally:
        path.write_text(original)
        touch(path)
    gpu = [r for r in report.results if r.check.startswith("the lesson's wgmma kernel")]
    assert len(gpu) == 1 and gpu[0].status == "skip", str(report)
    assert "the CPU model above found the ring wrong" in gpu[0].detail, str(report)
    if HAS_CUDA:
        assert float(torch.ones(4, device="cuda").sum()) == 4.0  # CUDA still works in this process


# (exercise, file in exercises/, text of the solution, wrong answer, words the hint must hold): a hint names the
# mistake actually made
HINTED = [
    ("ex7_warp_sum", "ex7_warp_sum/ex7_warp_sum.h", "offset > 0;", "offset > 1;", "one step early"),
    ("ex7_warp_sum", "ex7_warp_sum/ex7_warp_sum.h", "for (int offset = 16;", "for (int offset = 8;", "lanes 0..15"),
    ("ex8_block_sum", "ex8_block_sum/ex8_block_sum.h", "i < cols; i +=", "i < cols - 1; i +=", "last element"),
    (
        "ex4_elu_backward",
        "ex4_elu_backward/ex4_elu_backward.h",
        "x[i] > T(0) ? grad_out[i]",
        "x[i] >= T(0) ? grad_out[i]",
        "x == 0",
    ),
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "const T fy = floor(y), fx = floor(x);",
        "const T fy = T(int64_t(y)), fx = T(int64_t(x));",
        "floor(y), not int64_t(y)",
    ),
    ("ex14_deform_sample", "ex14_deform_sample/ex14_deform_sample.h", "return m * (", "return (", "mask is left out"),
    (
        "ex14_deform_sample",
        "ex14_deform_sample/ex14_deform_sample.h",
        "oy * s.stride_h - s.pad_h + i * s.dilation_h",
        "oy * s.dilation_h - s.pad_h + i * s.stride_h",
        "the stride and the dilation are swapped",
    ),
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "if (y < T(-1) ||",
        "if (y <= T(-1) ||",
        "still reaches row 0",
    ),
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T fy = floor(y), fx = floor(x);",
        "const T fy = ceil(y) - T(1), fx = ceil(x) - T(1);",
        "the side of the larger coordinate",
    ),
    (
        "ex15_deform_offset_grad",
        "ex15_deform_offset_grad/ex15_deform_offset_grad.h",
        "const T dy = lx * (v11 - v01) + (T(1) - lx) * (v10 - v00);",
        "const T dy = lx * (v10 - v00) + (T(1) - lx) * (v11 - v01);",
        "the weights are swapped",
    ),
]


@pytest.mark.parametrize("exercise, file, right, wrong, words", HINTED, ids=[f"{h[0]}:{h[4]}" for h in HINTED])
def test_a_hint_names_the_mistake_made(solved, exercise, file, right, wrong, words):
    path = solved[0] / "exercises" / file
    original = path.read_text()
    assert right in original, f"{right!r} not in {path}"
    try:
        path.write_text(original.replace(right, wrong, 1))
        touch(path)
        report = grade.check(exercise, kit=solved[0], quiet=True)
    finally:
        path.write_text(original)
        touch(path)
    hints = [r.hint for r in report.results if r.status == "fail"]
    assert any(words in h for h in hints), f"expected a hint with {words!r}:\n{report}"


def test_grades_a_class_and_writes_json(tmp_path):
    import json
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    solved = grade.with_solutions(tmp_path / "solved")
    for student, source in [("alice", solved), ("bob", ROOT)]:
        for part in ("kernels", "exercises"):
            shutil.copytree(
                source / part, tmp_path / "class" / student / part, ignore=shutil.ignore_patterns("__pycache__")
            )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.grade",
            "ex6_time_kernel",
            "ex1_add2_tail",
            "--jobs",
            "2",
            "--class",
            str(tmp_path / "class"),
            "--json",
            str(tmp_path / "grades.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    book = json.loads((tmp_path / "grades.json").read_text())
    assert [x["exercise"] for x in book["alice"]] == ["ex1_add2_tail", "ex6_time_kernel"]  # teaching order
    assert book["alice"][0]["passed"] is True
    assert book["bob"][0]["failed"] is True and book["bob"][1]["failed"] is True
    assert "bob: 0/2" in r.stdout and ("alice: 1/2" in r.stdout or "alice: 2/2" in r.stdout), r.stdout  # ex6: GPU
