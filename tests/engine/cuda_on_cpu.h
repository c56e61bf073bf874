// Runs engine/kernels/nlm.cu and volume.cu on the CPU for tests/engine/test_fused_kernel_on_cpu.py
// and test_volume_kernel_on_cpu.py: the CUDA features the kernels use, emulated with one fiber
// per CUDA thread and a barrier per block. Slow, but it checks the kernels' indexing,
// layouts and barriers against the float64 reference where there is no GPU.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <functional>
#include <csetjmp>
#include <ucontext.h>
#include <vector>

using std::max;
using std::min;

struct Dim3 {
    int x = 0, y = 0, z = 0;
};
Dim3 threadIdx, blockIdx, blockDim;
float* emulated_shared_memory;
std::atomic<int>* emulated_block_vote;

// A block's threads as fibers on one OS thread (one OS thread per CUDA thread spent minutes of
// context switches at every barrier on two cores). Each runs up to its next barrier, then the
// next; a phase ends when all have arrived. The phases alternate the threads' order, so that a
// missing barrier shows whichever side of it a thread is on: a reader that runs before its writer
// reads the NaN the shared memory starts with.
class EmulatedBlock {
public:
    void arrive_and_wait() {
        if (_setjmp(fibers_[current_].resume) == 0) _longjmp(scheduler_, 1);
    }

    // Run `body` as threads 0 .. threads - 1 of a one-dimensional block (threadIdx.x).
    void run(int threads, std::function<void()> body) {
        constexpr std::size_t stack_bytes = 256 * 1024;
        body_ = std::move(body);
        fibers_.resize(threads);
        while (stacks_.size() < fibers_.size()) stacks_.emplace_back(new char[stack_bytes]);  // pages touched lazily
        for (int t = 0; t < threads; ++t) {
            Fiber& fiber = fibers_[t];
            fiber.started = fiber.done = false;
            getcontext(&fiber.context);
            fiber.context.uc_stack = {stacks_[t].get(), 0, stack_bytes};
            fiber.context.uc_link = nullptr;  // a fiber ends by jumping back to the scheduler
            makecontext(&fiber.context, reinterpret_cast<void (*)()>(&EmulatedBlock::start), 0);
        }
        running_ = this;
        for (int alive = threads, phase = 0; alive > 0; ++phase)
            for (int i = 0; i < threads; ++i) {
                const int t = phase % 2 == 0 ? i : threads - 1 - i;
                if (fibers_[t].done) continue;
                current_ = t;
                threadIdx = {t, 0, 0};
                // Switches are _setjmp / _longjmp (no system call; swapcontext saves and restores
                // the signal mask, a system call each way, half the tests' time); a fiber's first
                // start is the one swapcontext, onto its own stack.
                if (_setjmp(scheduler_) == 0) {
                    if (fibers_[t].started) _longjmp(fibers_[t].resume, 1);
                    fibers_[t].started = true;
                    swapcontext(&starter_, &fibers_[t].context);
                }
                alive -= fibers_[t].done;
            }
    }

private:
    struct Fiber {
        ucontext_t context;
        std::jmp_buf resume;
        bool started, done;
    };
    static inline EmulatedBlock* running_;
    static void start() {
        running_->body_();
        running_->fibers_[running_->current_].done = true;
        _longjmp(running_->scheduler_, 1);
    }
    std::vector<Fiber> fibers_;
    std::vector<std::unique_ptr<char[]>> stacks_;
    std::jmp_buf scheduler_;
    ucontext_t starter_;  // what a fiber's first start saves; never resumed
    int current_ = 0;
    std::function<void()> body_;
};
EmulatedBlock* emulated_block_barrier;  // the block running: its threads' barrier

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __syncthreads() emulated_block_barrier->arrive_and_wait()
// A barrier that returns whether any thread's predicate was non-zero. Thread 0 clears the vote
// after all have read it; the next call's first barrier orders that before any new vote.
inline int __syncthreads_or(int predicate) {
    emulated_block_barrier->arrive_and_wait();
    if (predicate) emulated_block_vote->store(1);
    emulated_block_barrier->arrive_and_wait();
    const int result = emulated_block_vote->load();
    emulated_block_barrier->arrive_and_wait();
    if (threadIdx.x == 0) emulated_block_vote->store(0);
    return result;
}
template <typename T>
inline T __ldg(const T* pointer) {
    return *pointer;
}
template <typename T>
inline T __ldcg(const T* pointer) {
    return *pointer;
}
// cp.async, done at once (nlm.cu's copy_async and its waits, which it defines for the GPU).
#define CUDA_ON_CPU 1
inline void copy_async(unsigned* destination, const unsigned* source) { *destination = *source; }
inline void copies_issued() {}
template <int PENDING>
inline void copies_wait() {}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline int atomicAdd(int* address, int value) {
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    const int old = *address;
    *address += value;
    return old;
}
inline float __expf(float x) { return std::exp(x); }
inline float exp2_approx(float x) { return std::exp2(x); }
inline float __saturatef(float x) { return std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
// Per-byte |a - b|, and the dot product of four bytes plus c (PTX vabsdiff4, dp4a).
inline unsigned __vabsdiffu4(unsigned a, unsigned b) {
    unsigned result = 0;
    for (int shift = 0; shift < 32; shift += 8) {
        const int x = (a >> shift) & 0xFF, y = (b >> shift) & 0xFF;
        result |= static_cast<unsigned>(x > y ? x - y : y - x) << shift;
    }
    return result;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int shift = 0; shift < 32; shift += 8) c += ((a >> shift) & 0xFF) * ((b >> shift) & 0xFF);
    return c;
}

// Launch `kernel()` over a grid of blocks of `threads` threads, a block at a time, each block
// with `shared_bytes` of shared memory filled with NaN (so that reading what was never written
// shows in the output).
template <typename Kernel>
void launch(int grid_x, int grid_y, int threads, int shared_bytes, Kernel kernel) {
    EmulatedBlock block;
    for (int by = 0; by < grid_y; ++by)
        for (int bx = 0; bx < grid_x; ++bx) {
            std::vector<float> shared(shared_bytes / sizeof(float), std::nanf(""));
            std::atomic<int> vote{0};
            blockIdx = {bx, by, 0};
            emulated_shared_memory = shared.data();
            emulated_block_barrier = &block;
            emulated_block_vote = &vote;
            block.run(threads, kernel);
        }
}
