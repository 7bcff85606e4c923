// The CPU as a (very slow) GPU: the same grid of 32 x 32 blocks, one block after another. Nothing to edit here.
//
// A block's 1024 threads run as 1024 coroutines (ucontext: each its own stack, switched by swapcontext) on this
// one CPU thread. The schedule is fixed: in each round thread 0 runs until it reaches block_sync() (or returns),
// then thread 1, and so on to thread 1023; when the round is over every thread has arrived at the barrier (a
// thread that returned counts as arrived, as on a GPU) and the next round begins. So a missing barrier fails
// every run, the same way:
//   - without the barrier between loading the tiles and reading them, thread 0 reads the tiles before any other
//     thread wrote its element: they hold NaN (as below), and C[0][0] comes out NaN;
//   - without the barrier between reading the tiles and loading the next step's, thread 0 writes its elements of
//     step 2's tiles (As[0][0], Bs[0][0]) before threads 1 .. 1023 read step 1's: row 0 and column 0 of the
//     block's tile of C come out wrong (when K > 32, so that there is a step 2).
// Coroutines rather than OS threads: 1024 threads per block would be slow to start and to switch between, and
// the order of a real scheduler is not fixed. Switching a coroutine costs well under a microsecond.
#if defined(__APPLE__) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 600  // macOS declares the (deprecated, still working) ucontext calls only with this
#endif
#include <ucontext.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "ex9_matmul_tile.h"

namespace {
constexpr int kThreads = kEx9Tile * kEx9Tile;
constexpr size_t kStackBytes = 64 * 1024;  // per thread: room for a printf while debugging

struct Block {
    ucontext_t scheduler;
    std::vector<ucontext_t> threads = std::vector<ucontext_t>(kThreads);
    std::vector<char> done = std::vector<char>(kThreads);
    std::unique_ptr<char[]> stacks{new char[kThreads * kStackBytes]};  // untouched pages cost nothing
    int current = 0;
    // the block's work
    int64_t bx = 0, by = 0;
    float As[kEx9Tile][kEx9Tile], Bs[kEx9Tile][kEx9Tile];  // its shared memory
    float* c = nullptr;
    const float *a = nullptr, *b = nullptr;
    int64_t M = 0, N = 0, K = 0;
};
thread_local Block* tl_block = nullptr;

void thread_main() {
    Block& blk = *tl_block;
    const int t = blk.current;
    matmul_tile_thread(t % kEx9Tile, t / kEx9Tile, blk.bx, blk.by, blk.As, blk.Bs, blk.c, blk.a, blk.b, blk.M, blk.N,
                       blk.K);
    blk.done[t] = 1;  // returning resumes the scheduler (uc_link)
}

void run_block(Block& blk) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (auto& row : blk.As)
        for (float& v : row) v = nan;  // shared memory: NaN until a thread writes it
    for (auto& row : blk.Bs)
        for (float& v : row) v = nan;
    for (int t = 0; t < kThreads; t++) {
        ucontext_t& ctx = blk.threads[t];
        getcontext(&ctx);
        ctx.uc_stack.ss_sp = blk.stacks.get() + t * kStackBytes;
        ctx.uc_stack.ss_size = kStackBytes;
        ctx.uc_link = &blk.scheduler;
        makecontext(&ctx, thread_main, 0);
        blk.done[t] = 0;
    }
    for (int live = kThreads; live > 0;) {  // one round: every live thread, in order, up to its next barrier
        for (int t = 0; t < kThreads; t++) {
            if (blk.done[t]) continue;
            blk.current = t;
            swapcontext(&blk.scheduler, &blk.threads[t]);
            live -= blk.done[t];
        }
    }
}
}  // namespace

void block_sync() {  // this thread has arrived: back to the scheduler, which resumes it next round
    Block& blk = *tl_block;
    swapcontext(&blk.threads[blk.current], &blk.scheduler);
}

void ex9_matmul_tile_cpu(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K) {
    auto blk = std::make_unique<Block>();
    blk->c = c, blk->a = a, blk->b = b, blk->M = M, blk->N = N, blk->K = K;
    Block* const outer = tl_block;
    tl_block = blk.get();
    for (int64_t by = 0; by < cdiv(M, kEx9Tile); by++) {
        for (int64_t bx = 0; bx < cdiv(N, kEx9Tile); bx++) {
            blk->bx = bx, blk->by = by;
            run_block(*blk);
        }
    }
    tl_block = outer;
}
