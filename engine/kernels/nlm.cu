// NLMeans Studio's fused GPU kernel (DESIGN.md §1, §2). Compiled at run time through
// cupy.RawModule; the patch radius B, search radius A, channels C, the tile's layout (chosen
// by engine/gpu.py, which also sizes the shared memory) and the options are compile-time
// constants given as template arguments, so every loop over a patch or a tile unrolls.
//
// Frames live on the device as planar float32 [C][H][W], each uploaded once and kept while an
// output's temporal window needs it; a kernel gets the window as an array of frame pointers.

#include "common.cuh"

// ---------------------------------------------------------------------------------------
// Input: interleaved (H, W, C) uint8 / uint16 / float32 host frames, uploaded as they are,
// become planar float32 [C][H][W]. Integers are scaled to [0, 1] here, once.
template <typename In>
__global__ void frame_to_planar(const In* __restrict__ source, float* __restrict__ slot,
                                int pixels, int channels, float scale) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixels) return;
    for (int channel = 0; channel < channels; ++channel)
        slot[channel * pixels + index] = static_cast<float>(source[index * channels + channel]) * scale;
}

// ---------------------------------------------------------------------------------------
// The fused filter. One block of 256 threads filters a TH x TW tile of output pixels over the
// whole window; every intermediate stays in shared memory or registers. The exact filter is
// arithmetic-bound (DESIGN.md §4), so the design counts instructions and shared-memory
// accesses per pixel and offset:
//
// - Offsets are visited in groups of K with the same qx and consecutive qy.
// - Pass 1 (vertical): a thread owns one column of the tile and its horizontal halo of B and
//   sweeps down its rows, computing the squared differences of the K offsets of its group and
//   their running vertical sums over [-B, B] in registers. Down a column, offset qy + 1 reads
//   the candidate pixel offset qy read one row later, so a step loads one reference and one
//   new candidate pixel for K differences. SUBGROUPS groups run at once, one per quarter of
//   the block, and write their vertical sums to shared memory.
// - Pass 2 (horizontal): a thread owns SEG pixels of one row of the tile, keeps their
//   numerators and denominator in registers for the whole window, and for each offset of the
//   round sums the vertical sums horizontally (running), weighs and accumulates.
//
// The frame regions (reference Z, candidate Z, and candidate Y when a color transform makes Y
// differ from Z) are loaded into shared memory once per frame, mirrored at the frame's borders.

constexpr int FUSED_THREADS = 256;
constexpr int PASS1_COLUMNS = 64;  // columns a sub-group of pass 1 covers: TW + 2B <= 64
constexpr int SUBGROUPS = FUSED_THREADS / PASS1_COLUMNS;

// Store one output value: float as it is, integers scaled by full_scale, rounded and clamped.
template <typename Out>
__device__ __forceinline__ Out to_output(float value, float full_scale) {
    return static_cast<Out>(fminf(fmaxf(value * full_scale + 0.5f, 0.0f), full_scale));
}
template <>
__device__ __forceinline__ float to_output<float>(float value, float) {
    return value;
}

// Load Z = G Y (or Y when transform is null) of a frame over ROWS x COLS pixels from (top,
// left), mirrored at the frame's borders, into planar shared memory [C][ROWS][STRIDE]. Each
// thread issues the loads of LOAD_BATCH pixels before storing any, so that their latency from
// device memory overlaps (one block per multiprocessor leaves no other warps to hide it).
constexpr int LOAD_BATCH = 8;
template <int C, int ROWS, int COLS, int STRIDE>
__device__ void load_region(const float* __restrict__ frame, const float* __restrict__ transform, float* region,
                            int top, int left, int height, int width) {
    constexpr int PER_THREAD = (ROWS * COLS + FUSED_THREADS - 1) / FUSED_THREADS;
    const int pixels = height * width;
#pragma unroll 1
    for (int batch = 0; batch < PER_THREAD; batch += LOAD_BATCH) {
        float pixel[LOAD_BATCH][C];
#pragma unroll
        for (int b = 0; b < LOAD_BATCH; ++b) {
            const int index = threadIdx.x + (batch + b) * FUSED_THREADS;
            if (index >= ROWS * COLS) break;
            const int row = index / COLS, col = index % COLS;
            const int source = mirror(top + row, height) * width + mirror(left + col, width);
#pragma unroll
            for (int channel = 0; channel < C; ++channel) pixel[b][channel] = __ldg(frame + channel * pixels + source);
        }
#pragma unroll
        for (int b = 0; b < LOAD_BATCH; ++b) {
            const int index = threadIdx.x + (batch + b) * FUSED_THREADS;
            if (index >= ROWS * COLS) break;
            const int row = index / COLS, col = index % COLS;
#pragma unroll
            for (int channel = 0; channel < C; ++channel) {
                float value = pixel[b][channel];
                if (transform != nullptr) {
                    value = 0.0f;
#pragma unroll
                    for (int k = 0; k < C; ++k) value += transform[channel * C + k] * pixel[b][k];
                }
                region[(channel * ROWS + row) * STRIDE + col] = value;
            }
        }
    }
}

// The tile's shared-memory layout; strides come from engine/gpu.py (chosen so that the lanes
// of a pass-2 warp hit distinct banks).
template <int B, int A, int C, int K, int TH, int TW, int ZC_STRIDE, int YC_STRIDE, int VS_STRIDE, bool TRANSFORMED>
struct FusedLayout {
    static constexpr int SEGMENTS = FUSED_THREADS / TH;  // pass 2: threads per row
    static constexpr int SEG = TW / SEGMENTS;             // pass 2: pixels per thread
    static constexpr int GROUP_BLOCKS = (2 * A + 1 + K - 1) / K;  // groups per qx
    static constexpr int GROUPS = (2 * A + 1) * GROUP_BLOCKS;     // groups per frame
    static constexpr int ROUNDS = (GROUPS + SUBGROUPS - 1) / SUBGROUPS;
    static constexpr int EXTRA = GROUP_BLOCKS * K - (2 * A + 1);  // rows of the last group past A
    static constexpr int COLS1 = TW + 2 * B;                      // pass 1 columns
    static constexpr int ZR_ROWS = TH + 2 * B, ZR_STRIDE = COLS1;
    static constexpr int ZC_ROWS = TH + 2 * (A + B) + EXTRA, ZC_COLS = TW + 2 * (A + B);
    static constexpr int YC_ROWS = TH + 2 * A + EXTRA, YC_COLS = TW + 2 * A;
    static constexpr int ZR_SIZE = C * ZR_ROWS * ZR_STRIDE, ZC_SIZE = C * ZC_ROWS * ZC_STRIDE;
    static constexpr int YC_SIZE = TRANSFORMED ? C * YC_ROWS * YC_STRIDE : 0;
    static_assert(COLS1 <= PASS1_COLUMNS && SEG * SEGMENTS == TW && TH * SEGMENTS == FUSED_THREADS, "tile layout");
};

// Pass 1 for one thread: the vertical sums over [-B, B] of the squared differences of K
// offsets (qy, qy + 1, ...) down one column, for the TH rows of the tile. reference and
// candidate point at the column's first row (the candidate at offset qy), target at the
// first offset's first row.
template <int B, int C, int K, int TH, int ZR_ROWS, int ZR_STRIDE, int ZC_ROWS, int ZC_STRIDE, int VS_STRIDE>
__device__ __forceinline__ void vertical_sums(const float* reference, const float* candidate, float* target) {
    constexpr int STEPS = TH + 2 * B, WIDTH = 2 * B + 1;
    float window[K][C];  // window[k]: the candidate pixel of offset qy + k at this step's row
    float ring[K][WIDTH];
    float sum[K];
#pragma unroll
    for (int k = 0; k + 1 < K; ++k)
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            window[k + 1][channel] = candidate[(channel * ZC_ROWS + k) * ZC_STRIDE];
#pragma unroll
    for (int step = 0; step < STEPS; ++step) {
#pragma unroll
        for (int k = 0; k + 1 < K; ++k)
#pragma unroll
            for (int channel = 0; channel < C; ++channel) window[k][channel] = window[k + 1][channel];
        float pixel[C];
#pragma unroll
        for (int channel = 0; channel < C; ++channel) {
            window[K - 1][channel] = candidate[(channel * ZC_ROWS + step + K - 1) * ZC_STRIDE];
            pixel[channel] = reference[(channel * ZR_ROWS + step) * ZR_STRIDE];
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            float difference = 0.0f;
#pragma unroll
            for (int channel = 0; channel < C; ++channel) {
                const float delta = pixel[channel] - window[k][channel];
                difference = fmaf(delta, delta, difference);
            }
            if (step == 0)
                sum[k] = difference;
            else if (step < WIDTH)
                sum[k] += difference;
            else
                sum[k] += difference - ring[k][step % WIDTH];
            ring[k][step % WIDTH] = difference;
            if (step >= 2 * B) target[(k * TH + step - 2 * B) * VS_STRIDE] = sum[k];
        }
    }
}

// Output: interleaved (H, W, C) of type Out (float, or uint8 / uint16 scaled by full_scale).
// MIN_BLOCKS: blocks per multiprocessor the registers must allow (2 where two blocks' shared
// memory fits).
template <int B, int A, int C, int K, int TH, int TW, int ZC_STRIDE, int YC_STRIDE, int VS_STRIDE, bool TRANSFORMED,
          bool EXPONENTIAL, bool CENTER_MAX, typename Out, int MIN_BLOCKS>
__global__ void __launch_bounds__(FUSED_THREADS, MIN_BLOCKS)
nlm_fused(const float* const* __restrict__ frames, int frame_count, int center, int height, int width,
          const float* __restrict__ transform, float scale, Out* __restrict__ output, float full_scale) {
    using L = FusedLayout<B, A, C, K, TH, TW, ZC_STRIDE, YC_STRIDE, VS_STRIDE, TRANSFORMED>;
    constexpr int SEG = L::SEG;
    extern __shared__ float shared[];
    float* z_reference = shared;                  // [C][ZR_ROWS][ZR_STRIDE], tile rows and columns from -B
    float* z_candidate = z_reference + L::ZR_SIZE;  // [C][ZC_ROWS][ZC_STRIDE], from -A - B
    float* y_candidate = z_candidate + L::ZC_SIZE;  // [C][YC_ROWS][YC_STRIDE], from -A (TRANSFORMED)
    float* vertical = y_candidate + L::YC_SIZE;     // [SUBGROUPS * K][TH][VS_STRIDE], columns from -B

    const int tile_top = blockIdx.y * TH, tile_left = blockIdx.x * TW;
    const int thread = threadIdx.x;
    const int subgroup = thread / PASS1_COLUMNS, column = thread % PASS1_COLUMNS;  // pass 1
    const int row = thread / L::SEGMENTS, first = (thread % L::SEGMENTS) * SEG;   // pass 2

    load_region<C, L::ZR_ROWS, L::COLS1, L::ZR_STRIDE>(frames[center], transform, z_reference, tile_top - B,
                                                       tile_left - B, height, width);
    // The thread's own pixels Y(p), for the centre weight's term at the end: loaded now (at
    // clamped coordinates for pixels past the frame), so that their latency hides behind the
    // whole window.
    float own[SEG][C];
    {
        const float* frame = frames[center];
        const int y = min(tile_top + row, height - 1);
#pragma unroll
        for (int i = 0; i < SEG; ++i) {
            const int x = min(tile_left + first + i, width - 1);
#pragma unroll
            for (int channel = 0; channel < C; ++channel)
                own[i][channel] = __ldg(frame + (static_cast<size_t>(channel) * height + y) * width + x);
        }
    }
    float numerator[SEG][C] = {};
    float denominator[SEG] = {}, largest[SEG] = {};

    for (int position = 0; position < frame_count; ++position) {
        const bool same_frame = position == center;
        __syncthreads();  // the previous frame's regions are no longer read
        load_region<C, L::ZC_ROWS, L::ZC_COLS, ZC_STRIDE>(frames[position], transform, z_candidate,
                                                          tile_top - A - B, tile_left - A - B, height, width);
        if (TRANSFORMED)
            load_region<C, L::YC_ROWS, L::YC_COLS, YC_STRIDE>(frames[position], nullptr, y_candidate, tile_top - A,
                                                              tile_left - A, height, width);
        __syncthreads();
#pragma unroll 1
        for (int round = 0; round < L::ROUNDS; ++round) {
            const int group = round * SUBGROUPS + subgroup;
            if (column < L::COLS1 && group < L::GROUPS) {
                const int qx = group / L::GROUP_BLOCKS - A, qy = (group % L::GROUP_BLOCKS) * K - A;
                vertical_sums<B, C, K, TH, L::ZR_ROWS, L::ZR_STRIDE, L::ZC_ROWS, ZC_STRIDE, VS_STRIDE>(
                    z_reference + column, z_candidate + (qy + A) * ZC_STRIDE + column + qx + A,
                    vertical + subgroup * K * TH * VS_STRIDE + column);
            }
            __syncthreads();
#pragma unroll
            for (int pass1 = 0; pass1 < SUBGROUPS; ++pass1) {
                const int group = round * SUBGROUPS + pass1;
                if (group >= L::GROUPS) break;
                const int qx = group / L::GROUP_BLOCKS - A, first_qy = (group % L::GROUP_BLOCKS) * K - A;
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const int qy = first_qy + k;
                    if (qy > A || (same_frame && qx == 0 && qy == 0)) continue;
                    const float* sums = vertical + ((pass1 * K + k) * TH + row) * VS_STRIDE + first;
                    float values[SEG + 2 * B];
#pragma unroll
                    for (int m = 0; m < SEG + 2 * B; ++m) values[m] = sums[m];
                    // The candidate pixels Y(p + q) of this thread's first pixel, and the
                    // distance between channels.
                    const float* pixels =
                        TRANSFORMED ? y_candidate + (row + qy + A) * YC_STRIDE + first + qx + A
                                    : z_candidate + (row + qy + A + B) * ZC_STRIDE + first + qx + A + B;
                    constexpr int CHANNEL_STRIDE = TRANSFORMED ? L::YC_ROWS * YC_STRIDE : L::ZC_ROWS * ZC_STRIDE;
                    // The running sum's steps first, so that the sum's chain is one add per pixel.
                    float step[SEG];
#pragma unroll
                    for (int i = 1; i < SEG; ++i) step[i] = values[i + 2 * B] - values[i - 1];
                    float patch_sum = 0.0f;
#pragma unroll
                    for (int m = 0; m <= 2 * B; ++m) patch_sum += values[m];
#pragma unroll
                    for (int i = 0; i < SEG; ++i) {
                        if (i > 0) patch_sum += step[i];
                        const float weight = weight_of<EXPONENTIAL>(patch_sum, scale);
#pragma unroll
                        for (int channel = 0; channel < C; ++channel)
                            numerator[i][channel] = fmaf(weight, pixels[channel * CHANNEL_STRIDE + i], numerator[i][channel]);
                        denominator[i] += weight;
                        if (CENTER_MAX) largest[i] = fmaxf(largest[i], weight);
                    }
                }
            }
            __syncthreads();  // the vertical sums are read before the next round overwrites them
        }
    }

    const int y = tile_top + row;
    if (y >= height) return;
#pragma unroll
    for (int i = 0; i < SEG; ++i) {
        const int x = tile_left + first + i;
        if (x >= width) break;
        const float center_weight = (CENTER_MAX && largest[i] > 0.0f) ? largest[i] : 1.0f;
        const float inverse = 1.0f / (denominator[i] + center_weight);
        Out* pixel = output + (static_cast<size_t>(y) * width + x) * C;
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            pixel[channel] = to_output<Out>(
                (numerator[i][channel] + center_weight * own[i][channel]) * inverse, full_scale);
    }
}
