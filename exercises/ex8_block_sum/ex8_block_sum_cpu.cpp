// The CPU as a (very slow) GPU: the same grid, one block after another; a block's 8 warps run as 8 threads,
// each warp's 32 lanes in one Lanes. Nothing to edit here.
//
// block_sync() is a real barrier among the block's warps (a warp that returned counts as arrived, as on a GPU).
// The schedule is fixed where it matters: at the start and after every barrier, warp 0 runs alone until it
// reaches the next barrier (or returns); only then do warps 1-7 go on. So without a barrier, warp 0 always
// reads the shared slots before the other warps wrote them (they hold NaN): the race fails every run.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "ex8_block_sum.h"

namespace {
struct Block {
    std::mutex m;
    std::condition_variable cv;
    int running = kEx8Warps, arrived = 0;
    int64_t generation = 0;   // barriers completed
    int64_t warp0_phase = 0;  // barriers warp 0 has reached; the maximum once it returned
};
thread_local Block* tl_block = nullptr;
thread_local int tl_warp = 0;
thread_local int64_t tl_phase = 0;  // barriers this warp has passed

void wait_for_warp0(std::unique_lock<std::mutex>& lock, Block& b) {
    if (tl_warp != 0) b.cv.wait(lock, [&] { return b.warp0_phase > tl_phase; });
}

void release_if_all_arrived(Block& b) {
    if (b.arrived > 0 && b.arrived == b.running) {
        b.arrived = 0;
        b.generation++;
    }
    b.cv.notify_all();
}

void run_warp(Block& b, int warp, int block, int blocks, float* warp_sums, float* out, const float* x,
              int64_t row, int64_t cols) {
    tl_block = &b, tl_warp = warp, tl_phase = 0;
    {
        std::unique_lock<std::mutex> lock(b.m);
        wait_for_warp0(lock, b);
    }
    Lanes v;
    for (int l = 0; l < kWarpSize; l++)
        v.lane[l] = slice_sum_thread(warp * kWarpSize + l, block, blocks, x + row * cols, cols);
    block_finish(v, warp, warp_sums, out, row);
    const std::lock_guard<std::mutex> lock(b.m);
    b.running--;
    if (warp == 0) b.warp0_phase = std::numeric_limits<int64_t>::max();
    release_if_all_arrived(b);
}
}  // namespace

void block_sync() {
    Block& b = *tl_block;
    std::unique_lock<std::mutex> lock(b.m);
    if (tl_warp == 0) b.warp0_phase = tl_phase + 1;
    const int64_t generation = b.generation;
    b.arrived++;
    release_if_all_arrived(b);
    b.cv.wait(lock, [&] { return b.generation != generation; });
    tl_phase++;
    wait_for_warp0(lock, b);
}

void ex8_block_sum_cpu(float* out, const float* x, int64_t rows, int64_t cols) {
    const int blocks = ex8_blocks_per_row(cols);
    for (int64_t row = 0; row < rows; row++) {
        for (int block = 0; block < blocks; block++) {
            float warp_sums[kEx8Warps];  // the block's shared memory, NaN until written
            for (float& s : warp_sums) s = std::numeric_limits<float>::quiet_NaN();
            Block b;
            std::vector<std::thread> warps;
            for (int w = 0; w < kEx8Warps; w++)
                warps.emplace_back(run_warp, std::ref(b), w, block, blocks, warp_sums, out, x, row, cols);
            for (std::thread& w : warps) w.join();
        }
    }
}
