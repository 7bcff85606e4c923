// nms_cpu.cpp: non-maximum suppression on the CPU, for every dtype the kit knows.
//
// torchvision's loop: walk the boxes by decreasing score; a box not yet suppressed is kept, and suppresses every
// later box it overlaps by more than the threshold. O(n * kept) overlap tests, each a handful of flops: 10,000
// boxes of which 1,000 are kept is ~10 M tests, a few ms. The 16-bit types are computed in float, rounded where
// torchvision's CUDA kernel rounds (nms.h).
#include <type_traits>
#include <vector>

#include "cpu_half.h"
#include "nms.h"

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// What r() is for each dtype: no rounding for float and double, a round trip through the 16-bit type otherwise.
struct NoRound {
    template <typename A>
    A operator()(A v) const {
        return v;
    }
};
template <typename T>
struct Round16 {
    float operator()(float v) const {
        T t;
        store(&t, v);
        return load(t);
    }
};
template <typename T>
using round_t = std::conditional_t<sizeof(T) == 2, Round16<T>, NoRound>;

template <typename T>
static int64_t nms_loop(int64_t* keep, const T* boxes, const int64_t* order, int64_t n, double iou_threshold) {
    using A = acc_t<T>;
    const round_t<T> r;
    std::vector<Box4<A>> box(n);  // in score order: the inner loop reads them one after another
    std::vector<A> area(n);
    for (int64_t i = 0; i < n; i++) {
        const T* b = boxes + order[i] * 4;
        box[i] = {load(b[0]), load(b[1]), load(b[2]), load(b[3])};
        area[i] = box_area(box[i], r);
    }
    std::vector<uint8_t> suppressed(n, 0);
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (suppressed[i]) continue;
        keep[count++] = order[i];
        for (int64_t j = i + 1; j < n; j++) {
            // compared with the threshold as a double, as torchvision's CPU kernel does (its CUDA kernel: as a float)
            if (!suppressed[j] && overlaps(box[i], area[i], box[j], area[j], iou_threshold, r)) suppressed[j] = 1;
        }
    }
    return count;
}

int64_t nms_cpu(DType dtype, int64_t* keep, const void* boxes, const int64_t* order, int64_t n, double iou_threshold) {
    switch (dtype) {
        case DType::f64: return nms_loop(keep, static_cast<const double*>(boxes), order, n, iou_threshold);
        case DType::f16: return nms_loop(keep, static_cast<const half_t*>(boxes), order, n, iou_threshold);
        case DType::bf16: return nms_loop(keep, static_cast<const bf16_t*>(boxes), order, n, iou_threshold);
        case DType::f32:
        default: return nms_loop(keep, static_cast<const float*>(boxes), order, n, iou_threshold);
    }
}
