// Runs engine/kernels/nlm.cu on the CPU for tests/engine/test_fused_kernel_on_cpu.py: the
// CUDA features the kernel uses, emulated with one std::thread per CUDA thread and a
// std::barrier per block. Slow, but it checks the kernel's indexing, layouts and barriers
// against the float64 reference where there is no GPU.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

using std::max;
using std::min;

struct Dim3 {
    int x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx, blockIdx, blockDim;
thread_local float* emulated_shared_memory;
thread_local std::barrier<>* emulated_block_barrier;
thread_local std::atomic<int>* emulated_block_vote;

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

// Launch `kernel(thread)` over a grid of blocks of `threads` threads, a block at a time, each
// block with `shared_bytes` of shared memory filled with NaN (so that reading what was never
// written shows in the output).
template <typename Kernel>
void launch(int grid_x, int grid_y, int threads, int shared_bytes, Kernel kernel) {
    for (int by = 0; by < grid_y; ++by)
        for (int bx = 0; bx < grid_x; ++bx) {
            std::vector<float> shared(shared_bytes / sizeof(float), std::nanf(""));
            std::barrier<> barrier(threads);
            std::atomic<int> vote{0};
            std::vector<std::thread> block;
            for (int t = 0; t < threads; ++t)
                block.emplace_back([&, t] {
                    threadIdx.x = t;
                    blockIdx.x = bx;
                    blockIdx.y = by;
                    emulated_shared_memory = shared.data();
                    emulated_block_barrier = &barrier;
                    emulated_block_vote = &vote;
                    kernel();
                    barrier.arrive_and_drop();
                });
            for (auto& thread : block) thread.join();
        }
}
