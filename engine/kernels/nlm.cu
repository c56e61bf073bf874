// NLMeans Studio's fused GPU kernel (DESIGN.md §1, §2). Compiled at run time through
// cupy.RawModule; the patch radius B, search radius A, channels C, the tile's layout (chosen
// by engine/video/filters/fused_layout.py, which also sizes the shared memory) and the options are compile-time
// constants given as template arguments, so every loop over a patch or a tile unrolls.
//
// Frames live on the device as planar float32 [C][H][W], each uploaded once and kept while an
// output's temporal window needs it; a kernel gets the window as an array of frame pointers.
// 8-bit frames also keep their bytes packed, one 32-bit word per pixel [H][W], for the
// distances (see PackedSpace). Why a second copy: the kernel is bound by instructions, not by
// memory (docs/performance.md, v5 and v6), and on the packed bytes a squared difference of all
// C channels is two integer instructions (VABSDIFF4, IDP4A) against 3C float ones, from one
// shared load instead of C. The distances are then exact integers, so this path is more exact
// than the float one, not less. Only 8-bit frames without a color transform take it: Z = G Y
// is not an integer, and 16-bit channels do not fit four to a word.

#include "common.cuh"

// ---------------------------------------------------------------------------------------
// Input: interleaved (H, W, C) uint8 / uint16 / float32 host frames, uploaded as they are,
// become planar float32 [C][H][W]. Integers are scaled to [0, 1] here, once. For 8-bit frames
// `packed` (else null) also gets each pixel's bytes in one word, channel c in byte c.
template <typename In>
__global__ void frame_to_planar(const In* __restrict__ source, float* __restrict__ slot,
                                unsigned* __restrict__ packed, int pixels, int channels, float scale) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixels) return;
    unsigned word = 0;
    for (int channel = 0; channel < channels; ++channel) {
        const In value = source[index * channels + channel];
        slot[channel * pixels + index] = static_cast<float>(value) * scale;
        if (packed != nullptr) word |= static_cast<unsigned>(value) << (8 * channel);
    }
    if (packed != nullptr) packed[index] = word;
}

// ---------------------------------------------------------------------------------------
// The fused filter. One block of 256 threads filters a TH x TW tile of output pixels over the
// whole window; every intermediate stays in shared memory or registers. The exact filter is
// arithmetic-bound (DESIGN.md §4), so the design counts instructions and shared-memory
// accesses per pixel and offset:
//
// - Offsets are visited in groups of K with the same qx and consecutive qy, and the groups in
//   sets of QX_SPAN with consecutive qx and the same qy, a set per round where that costs no
//   extra round (FusedLayout).
// - Pass 1 (vertical): a thread owns one column of the tile and its horizontal halo of B and
//   sweeps down its rows, computing the squared differences of the K offsets of its group and
//   their running vertical sums over [-B, B] in registers. Down a column, offset qy + 1 reads
//   the candidate pixel offset qy read one row later, so a step loads one reference and one
//   new candidate pixel for K differences. SUBGROUPS groups run at once, one per quarter of
//   the block, and write their vertical sums to shared memory.
// - Pass 2 (horizontal): a thread owns SEG pixels of one row of the tile, keeps their
//   numerators and denominator in registers for the whole window, and for each offset of the
//   round sums the vertical sums horizontally (running), weighs and accumulates. A row of
//   candidates Y, loaded once, serves the set's QX_SPAN offsets with that qy.
// - The centre weight 1 is the offset (0, 0) of the centre frame, visited like any other
//   (g(0) = 1 for both weightings); only the largest-weight option treats it apart.
// - No symmetric accumulation. The cascade (cascade.cu, DESIGN.md §2 step 4) computes each
//   weight once for +q and -q and adds it to both pixels p and p + q, halving the offsets. Here
//   every frame, the centre one included, visits its whole window: the weight w(p - q, p) that
//   the trick reuses belongs to the tile shifted by -q, whose distances the column sweep of
//   pass 1 does not compute (it would need 64 + A pass-1 columns per group), and it would save
//   a sixth of pass 1 at d = 1 but nothing of pass 2, now the larger part of the work
//   (docs/performance.md, "How v5 works" and "Next steps"). The cascade's accumulation pass
//   adds into device-memory planes, where a second, translated add is cheap; here each pixel's
//   sums live in the registers of the thread that owns it, out of reach of the pixel p - q.
// - Exponential weights with the largest-weight option are relative (DESIGN.md §1; with the
//   centre weight 1 the centre's u = 0 is the window's least from the start, and exp(-u) is
//   exact): each pixel weighs 2^(s - u), in log2 units, for a shift s of its own, 0 at first,
//   and tracks its largest weight 2^highest. Pass 2 stays branch-free; after each round the
//   thread settles its pixels: where a pixel's largest weight left [2^SETTLED_ABOVE,
//   2^SETTLED_BELOW], s moves to its smallest u and its sums are rescaled (online softmax, per
//   round). Where a weight of the round passed 2^REDO_ABOVE (u fell so far below s that the
//   earlier rounds weigh under 2^-48 of it, and this round's sums may hold inf) or, in its
//   first round with offsets, all stayed under 2^REDO_BELOW (some may have underflowed), the
//   pixel drops its sums and the block runs the round again, with that pixel's s at the round's
//   smallest u and the other pixels weighing 0. At moderate h none of this happens and s stays
//   0; where a first round's every u passes 66 (h below about 4 levels at noise sigma 25, 1.7
//   at sigma 10) it runs twice.
//
// The frame regions (reference Z, candidate Z, and candidate Y where Z is not Y itself) are
// loaded into shared memory once per frame, mirrored at the frame's borders. For packed 8-bit
// frames the words arrive by cp.async, the next frame's while the current one is filtered, and
// Y is unpacked from the candidate words in shared memory.
//
// The grid is one block per tile, except for the last `split` tiles (engine/video/filters/fused_layout.py chooses
// them so that the grid's last wave of blocks, which would otherwise run a few whole tiles
// while most multiprocessors wait, runs short pieces): each of those is split into pieces, one
// block per frame of the window and part of its rounds, which write their partial sums to
// `partials`; the last of a tile's blocks to finish adds them up, in piece order, and writes
// the output.
//
// The kernel is these steps, a helper each (all inlined; FusedLayout, their template argument L,
// holds the tile's constants): block_work (the tile, frames and rounds of a block),
// load_reference and load_own (the reference region and the pixels' own values), then for each
// frame load_candidates, and for each round vertical_pass (pass 1), horizontal_pass (pass 2)
// and end_round (the settle, and the redo); after the window gather_pieces (split tiles),
// normalise and store_tile. A thread's sums live in one Sums.

constexpr int FUSED_THREADS = 256;
// Relative weights' bounds on a pixel's largest weight, log2 (see above): sums stay far below 2^128.
constexpr float SETTLED_ABOVE = -32.0f, SETTLED_BELOW = 16.0f, REDO_ABOVE = 64.0f, REDO_BELOW = -96.0f;
constexpr float NONE_SEEN = -3.402823466e38f;  // -FLT_MAX: a pixel's highest before any offset
constexpr int PASS1_COLUMNS = 64;  // columns a sub-group of pass 1 covers: TW + 2B <= 64
constexpr int SUBGROUPS = FUSED_THREADS / PASS1_COLUMNS;

// The distance space Z, in which pass 1 measures squared differences: planar float32 channels
// (Y itself, or G Y with a color transform), summed in float. Pass 1 stores its vertical sums
// as float (to_float) for pass 2, which is the same for every space.
template <int C>
struct FloatSpace {
    using Element = float;  // of the shared regions
    using Sum = float;      // of the squared differences and their running sums in pass 1
    static constexpr int PLANES = C;
    struct Pixel {
        float channel[C];
    };
    template <int PLANE_STRIDE>
    static __device__ __forceinline__ Pixel load(const float* pixel) {
        Pixel result;
#pragma unroll
        for (int channel = 0; channel < C; ++channel) result.channel[channel] = pixel[channel * PLANE_STRIDE];
        return result;
    }
    static __device__ __forceinline__ float squared_difference(const Pixel& a, const Pixel& b) {
        float sum = 0.0f;
#pragma unroll
        for (int channel = 0; channel < C; ++channel) {
            const float delta = a.channel[channel] - b.channel[channel];
            sum = fmaf(delta, delta, sum);
        }
        return sum;
    }
    static __device__ __forceinline__ float to_float(float sum) { return sum; }
};

// 8-bit frames without a transform: a pixel's bytes packed in one word (channel c in byte c).
// A squared difference is |a - b| per byte, then a dot product of four bytes: two integer
// instructions instead of 3C float ones (the kernel is instruction-bound, so this is where the
// time goes), and exact, where float differences of values scaled by 1/255 round. Vertical sums are exact in int32 and in the
// float pass 2 gets ((2B + 1) * 3 * 255^2 < 2^24); the weight's scale is for byte units (1/255^2
// of the float scale), so patch sums agree with the float path's up to its rounding.
struct PackedSpace {
    using Element = unsigned;
    using Sum = int;
    static constexpr int PLANES = 1;
    struct Pixel {
        unsigned word;
    };
    template <int PLANE_STRIDE>
    static __device__ __forceinline__ Pixel load(const unsigned* pixel) {
        return {*pixel};
    }
    static __device__ __forceinline__ int squared_difference(const Pixel& a, const Pixel& b) {
        const unsigned difference = __vabsdiffu4(a.word, b.word);
        return static_cast<int>(__dp4a(difference, difference, 0u));
    }
    static __device__ __forceinline__ float to_float(int sum) { return __int2float_rn(sum); }
};

template <int C, bool PACKED>
struct DistanceSpaceOf {
    using type = FloatSpace<C>;
};
template <int C>
struct DistanceSpaceOf<C, true> {
    using type = PackedSpace;
};
template <int C, bool PACKED>
using DistanceSpace = typename DistanceSpaceOf<C, PACKED>::type;

// Store one output value: float as it is, integers scaled by full_scale, rounded and clamped.
template <typename Out>
__device__ __forceinline__ Out to_output(float value, float full_scale) {
    return static_cast<Out>(fminf(fmaxf(value * full_scale + 0.5f, 0.0f), full_scale));
}
template <>
__device__ __forceinline__ float to_output<float>(float value, float) {
    return value;
}

// Counts for loops that unroll: body(Count<N>{}, valid) runs with a compile-time bound N and the
// count `valid` of it that is real: FULL, or LAST where `last`. With SPECIALISE, each count
// gets a copy of the body, where valid is a constant and its loops are straight code; else one
// copy checks valid at run time.
template <int N>
struct Count {
    static constexpr int value = N;
};
template <int FULL, int LAST, bool SPECIALISE, class Body>
__device__ __forceinline__ void with_count(bool last, Body&& body) {
    if constexpr (FULL == LAST) {
        body(Count<FULL>{}, FULL);
    } else if constexpr (SPECIALISE) {
        if (last)
            body(Count<LAST>{}, LAST);
        else
            body(Count<FULL>{}, FULL);
    } else {
        body(Count<FULL>{}, last ? LAST : FULL);
    }
}

// Load a frame's ROWS x COLS pixels from (top, left), mirrored at the frame's borders, into
// planar shared memory [C][ROWS][STRIDE], transformed by `transform` (Z = G Y) unless it is
// null (packed regions arrive by copy_region_async instead). Each thread issues the loads of
// LOAD_BATCH pixels before storing any, so that their latency from device memory overlaps
// (one block per multiprocessor leaves no other warps to hide it).
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

// Asynchronous copies from device to shared memory (cp.async): they need no registers, so a
// frame's packed region can be on its way while the previous frame is filtered.
// tests/engine/cuda_on_cpu.h defines them for the CPU.
#ifndef CUDA_ON_CPU
__device__ __forceinline__ void copy_async(unsigned* destination, const unsigned* source) {
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(destination));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(address), "l"(source));
}
__device__ __forceinline__ void copies_issued() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait for all but the last `pending` groups of copies this thread issued.
template <int PENDING>
__device__ __forceinline__ void copies_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}
#endif

// Start copying a frame's packed ROWS x COLS words from (top, left), mirrored at the frame's
// borders, into shared memory [ROWS][STRIDE], as one group of copies.
template <int ROWS, int COLS, int STRIDE>
__device__ void copy_region_async(const unsigned* __restrict__ frame, unsigned* region, int top, int left, int height,
                                  int width) {
    for (int index = threadIdx.x; index < ROWS * COLS; index += FUSED_THREADS) {
        const int row = index / COLS, col = index % COLS;
        copy_async(region + row * STRIDE + col, frame + mirror(top + row, height) * width + mirror(left + col, width));
    }
    copies_issued();
}

// Channel `channel` of a packed word, as frame_to_planar scales 8-bit values: byte / 255.
__device__ __forceinline__ float unpacked(unsigned word, int channel) {
    return static_cast<float>((word >> (8 * channel)) & 0xFFu) * (1.0f / 255.0f);
}

// Packed words -> float planes [C][ROWS][STRIDE] (bytes / 255, as frame_to_planar scales them),
// from a packed region whose rows and columns start OFFSET earlier: the candidates Y of the
// packed path come from the candidate region in shared memory, not from device memory again.
template <int C, int ROWS, int COLS, int STRIDE, int OFFSET, int PACKED_STRIDE>
__device__ void unpack_region(const unsigned* packed, float* region) {
    for (int index = threadIdx.x; index < ROWS * COLS; index += FUSED_THREADS) {
        const int row = index / COLS, col = index % COLS;
        const unsigned word = packed[(row + OFFSET) * PACKED_STRIDE + col + OFFSET];
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            region[(channel * ROWS + row) * STRIDE + col] = unpacked(word, channel);
    }
}

// The tile's shared-memory layout; strides come from engine/video/filters/fused_layout.py (chosen so that the lanes
// of a pass-2 warp hit distinct banks). Pass 2 reads the candidates Y from the Z region where
// Z is Y itself, else (OTHER_Z: a color transform or a guide; or PACKED) from a region of their own.
// The kernel's helpers take it as their template argument L: it also names the kernel's B, A, C,
// K, TH, TW and strides (its template arguments of those names), its distance space and options.
template <int PATCH_RADIUS, int SEARCH_RADIUS, int CHANNELS, int GROUP, int TILE_HEIGHT, int TILE_WIDTH,
          int Z_STRIDE, int Y_STRIDE, int V_STRIDE, bool OTHER_DISTANCES, bool PACKED_DISTANCES>
struct FusedLayout {
    static constexpr int B = PATCH_RADIUS, A = SEARCH_RADIUS, C = CHANNELS, K = GROUP;
    static constexpr int TH = TILE_HEIGHT, TW = TILE_WIDTH;
    static constexpr int ZC_STRIDE = Z_STRIDE, YC_STRIDE = Y_STRIDE, VS_STRIDE = V_STRIDE;
    static constexpr bool OTHER_Z = OTHER_DISTANCES, PACKED = PACKED_DISTANCES;
    using Space = DistanceSpace<C, PACKED>;
    using Element = typename Space::Element;  // of the Z regions
    static constexpr bool OWN_Y = OTHER_Z || PACKED;
    static constexpr int PLANES = Space::PLANES;  // of the Z regions
    static constexpr int SEGMENTS = FUSED_THREADS / TH;  // pass 2: threads per row
    static constexpr int SEG = TW / SEGMENTS;             // pass 2: pixels per thread
    static constexpr int GROUP_BLOCKS = (2 * A + 1 + K - 1) / K;  // groups per qx
    // A set: QX_SPAN groups with consecutive qx and the same qy, run in the same round, so that
    // pass 2 loads each row of candidates Y once for all of them. The last set's qx may pass A;
    // those groups do nothing. A set fills a round where that needs no more rounds than single
    // groups (on the H100, sets of 2 measured slower than both at A = 2, 3 and 5).
    static constexpr int rounds_with(int span) {
        return (((2 * A + 1 + span - 1) / span) * GROUP_BLOCKS * span + SUBGROUPS - 1) / SUBGROUPS;
    }
    static constexpr int QX_SPAN = rounds_with(SUBGROUPS) <= rounds_with(1) ? SUBGROUPS : 1;
    static constexpr int QX_SETS = (2 * A + 1 + QX_SPAN - 1) / QX_SPAN;  // sets per qy block
    static constexpr int GROUPS = QX_SETS * GROUP_BLOCKS * QX_SPAN;      // groups per frame
    static constexpr int ROUNDS = rounds_with(QX_SPAN);
    // The offset of a set's first group (qx) and of its qy block's first row (qy).
    static __device__ __forceinline__ int set_qx(int set) { return (set / GROUP_BLOCKS) * QX_SPAN - A; }
    static __device__ __forceinline__ int set_qy(int set) { return (set % GROUP_BLOCKS) * K - A; }
    static constexpr int EXTRA = GROUP_BLOCKS * K - (2 * A + 1);  // rows of the last group past A
    static constexpr int LAST_ROWS = K - EXTRA;                             // of the last qy block in the window
    static constexpr int LAST_SPAN = 2 * A + 1 - (QX_SETS - 1) * QX_SPAN;  // groups of the last set in the window
    // Pass 2 as straight code for each count of rows and groups (with_count) where that makes
    // at most two copies of it; more copies measured slower on the H100 (A = 3 and 5: four).
    static constexpr bool SPECIALISE = (LAST_ROWS == K || LAST_SPAN == QX_SPAN);
    static constexpr int COLS1 = TW + 2 * B;                      // pass 1 columns
    static constexpr int ZR_ROWS = TH + 2 * B, ZR_STRIDE = COLS1;
    static constexpr int ZC_ROWS = TH + 2 * (A + B) + EXTRA, ZC_COLS = TW + 2 * (A + B);
    static constexpr int YC_ROWS = TH + 2 * A, YC_COLS = TW + 2 * A;  // pass 2 reads no row past A
    static constexpr int ZR_SIZE = PLANES * ZR_ROWS * ZR_STRIDE, ZC_SIZE = PLANES * ZC_ROWS * ZC_STRIDE;
    static constexpr int ZC_BUFFERS = PACKED ? 2 : 1;  // the next frame's packed region arrives meanwhile
    static constexpr int YC_SIZE = OWN_Y ? C * YC_ROWS * YC_STRIDE : 0;
    static_assert(COLS1 <= PASS1_COLUMNS && SEG * SEGMENTS == TW && TH * SEGMENTS == FUSED_THREADS, "tile layout");
};

// Pass 1 for one thread: the vertical sums over [-B, B] of the squared differences of K
// offsets (qy, qy + 1, ...) down one column, for the TH rows of the tile. reference and
// candidate point at the column's first row (the candidate at offset qy), target at the
// first offset's first row.
template <class Space, int B, int K, int TH, int ZR_ROWS, int ZR_STRIDE, int ZC_ROWS, int ZC_STRIDE, int VS_STRIDE>
__device__ __forceinline__ void vertical_sums(const typename Space::Element* reference,
                                              const typename Space::Element* candidate, float* target) {
    using Sum = typename Space::Sum;
    constexpr int STEPS = TH + 2 * B, WIDTH = 2 * B + 1;
    typename Space::Pixel window[K];  // window[k]: the candidate pixel of offset qy + k at this step's row
    Sum ring[K][WIDTH];
    Sum sum[K];
#pragma unroll
    for (int k = 0; k + 1 < K; ++k) window[k + 1] = Space::template load<ZC_ROWS * ZC_STRIDE>(candidate + k * ZC_STRIDE);
#pragma unroll
    for (int step = 0; step < STEPS; ++step) {
#pragma unroll
        for (int k = 0; k + 1 < K; ++k) window[k] = window[k + 1];
        window[K - 1] = Space::template load<ZC_ROWS * ZC_STRIDE>(candidate + (step + K - 1) * ZC_STRIDE);
        const auto pixel = Space::template load<ZR_ROWS * ZR_STRIDE>(reference + step * ZR_STRIDE);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const Sum difference = Space::squared_difference(pixel, window[k]);
            if (step == 0)
                sum[k] = difference;
            else if (step < WIDTH)
                sum[k] += difference;
            else
                sum[k] += difference - ring[k][step % WIDTH];
            ring[k][step % WIDTH] = difference;
            if (step >= 2 * B) target[(k * TH + step - 2 * B) * VS_STRIDE] = Space::to_float(sum[k]);
        }
    }
}

// What a block filters: its tile, and the frames (positions in the window) and rounds it
// visits: all of them, or one piece of a split tile (one frame, one of `parts` parts of its rounds).
struct BlockWork {
    bool split;
    int pieces, split_index, piece;  // of a split tile
    int tile_top, tile_left, first_position, end_position, first_round, end_round;
};
template <class L>
__device__ __forceinline__ BlockWork block_work(int frame_count, int tiles_x, int whole_tiles, int parts) {
    BlockWork work;
    const int block = blockIdx.x;
    work.split = block >= whole_tiles;
    work.pieces = frame_count * parts;
    work.split_index = work.split ? (block - whole_tiles) / work.pieces : 0;
    work.piece = work.split ? (block - whole_tiles) % work.pieces : 0;
    const int tile = work.split ? whole_tiles + work.split_index : block;
    work.first_position = work.split ? work.piece / parts : 0;
    work.end_position = work.split ? work.first_position + 1 : frame_count;
    const int part = work.piece % parts;  // 0 of 1 for whole tiles
    work.first_round = work.split ? part * L::ROUNDS / parts : 0;
    work.end_round = work.split ? (part + 1) * L::ROUNDS / parts : L::ROUNDS;
    work.tile_top = (tile / tiles_x) * L::TH, work.tile_left = (tile % tiles_x) * L::TW;
    return work;
}

// The block's regions in shared memory (FusedLayout's sizes).
template <class L>
struct Regions {
    using Element = typename L::Element;
    Element* z_reference;   // [PLANES][ZR_ROWS][ZR_STRIDE], rows and columns from -B
    Element* z_candidates;  // [ZC_BUFFERS][PLANES][ZC_ROWS][ZC_STRIDE], from -A - B
    float* y_candidate;     // [C][YC_ROWS][YC_STRIDE], from -A (OWN_Y)
    float* vertical;        // [SUBGROUPS * K][TH][VS_STRIDE], columns from -B
    __device__ __forceinline__ explicit Regions(float* shared)
        : z_reference(reinterpret_cast<Element*>(shared)),
          z_candidates(z_reference + L::ZR_SIZE),
          y_candidate(reinterpret_cast<float*>(z_candidates + L::ZC_BUFFERS * L::ZC_SIZE)),
          vertical(y_candidate + L::YC_SIZE) {}
};

// The packed path's candidate region of the frame at `position`, copied asynchronously into buffer `buffer`.
template <class L>
__device__ __forceinline__ void copy_candidates(const Regions<L>& regions, const unsigned* const* packed, int position,
                                                int buffer, const BlockWork& work, int height, int width) {
    if constexpr (L::PACKED)
        copy_region_async<L::ZC_ROWS, L::ZC_COLS, L::ZC_STRIDE>(
            packed[position], regions.z_candidates + buffer * L::ZC_SIZE, work.tile_top - L::A - L::B,
            work.tile_left - L::A - L::B, height, width);
}

// The reference region, and the first frame's candidates: for packed frames both copies are
// on their way at once.
template <class L>
__device__ __forceinline__ void load_reference(const Regions<L>& regions, const float* const* z_frames,
                                               const unsigned* const* packed, const float* transform, int center,
                                               const BlockWork& work, int height, int width) {
    if constexpr (L::PACKED)
        copy_region_async<L::ZR_ROWS, L::COLS1, L::ZR_STRIDE>(packed[center], regions.z_reference,
                                                              work.tile_top - L::B, work.tile_left - L::B, height,
                                                              width);
    copy_candidates(regions, packed, work.first_position, 0, work, height, width);
    if constexpr (!L::PACKED)
        load_region<L::C, L::ZR_ROWS, L::COLS1, L::ZR_STRIDE>(z_frames[center], transform, regions.z_reference,
                                                              work.tile_top - L::B, work.tile_left - L::B, height,
                                                              width);
}

// The thread's own pixels Y(p), for the largest-weight centre's term at the end. Float frames:
// loaded before the window (at clamped coordinates for pixels past the frame), so that their
// latency hides behind it; packed ones: read from the reference region after it (own_unpacked).
template <class L>
__device__ __forceinline__ void load_own(const float* frame, int row, int first, int tile_top, int tile_left,
                                         int height, int width, float (&own)[L::SEG][L::C]) {
    const int y = min(tile_top + row, height - 1);
#pragma unroll
    for (int i = 0; i < L::SEG; ++i) {
        const int x = min(tile_left + first + i, width - 1);
#pragma unroll
        for (int channel = 0; channel < L::C; ++channel)
            own[i][channel] = __ldg(frame + (static_cast<size_t>(channel) * height + y) * width + x);
    }
}
template <class L>
__device__ __forceinline__ void own_unpacked(const unsigned* z_reference, int row, int first,
                                             float (&own)[L::SEG][L::C]) {
#pragma unroll
    for (int i = 0; i < L::SEG; ++i) {
        const unsigned word = z_reference[(row + L::B) * L::ZR_STRIDE + first + i + L::B];
#pragma unroll
        for (int channel = 0; channel < L::C; ++channel) own[i][channel] = unpacked(word, channel);
    }
}

// A frame's regions: its candidates Z (packed: the copies issued a frame earlier; the next
// frame's go on while this one is filtered) and, where Z is not Y, its candidates Y. Returns
// the frame's candidate Z region.
template <class L>
__device__ __forceinline__ typename L::Element* load_candidates(const Regions<L>& regions,
                                                                const float* const* frames,
                                                                const float* const* z_frames,
                                                                const unsigned* const* packed,
                                                                const float* transform, int position,
                                                                const BlockWork& work, int height, int width) {
    constexpr int A = L::A, B = L::B;
    const int buffer = L::PACKED ? (position - work.first_position) % 2 : 0;
    typename L::Element* z_candidate = regions.z_candidates + buffer * L::ZC_SIZE;
    __syncthreads();  // the previous frame's regions are no longer read
    if constexpr (L::PACKED) {
        if (position + 1 < work.end_position) {
            copy_candidates(regions, packed, position + 1, 1 - buffer, work, height, width);
            copies_wait<1>();
        } else {
            copies_wait<0>();
        }
    } else {
        load_region<L::C, L::ZC_ROWS, L::ZC_COLS, L::ZC_STRIDE>(z_frames[position], transform, z_candidate,
                                                                work.tile_top - A - B, work.tile_left - A - B,
                                                                height, width);
    }
    if (L::OTHER_Z)
        load_region<L::C, L::YC_ROWS, L::YC_COLS, L::YC_STRIDE>(frames[position], nullptr, regions.y_candidate,
                                                                work.tile_top - A, work.tile_left - A, height,
                                                                width);
    __syncthreads();
    if constexpr (L::PACKED) {
        unpack_region<L::C, L::YC_ROWS, L::YC_COLS, L::YC_STRIDE, B, L::ZC_STRIDE>(z_candidate, regions.y_candidate);
        __syncthreads();
    }
    return z_candidate;
}

// Pass 1 of a round: each sub-group's group of K offsets, its vertical sums into `vertical`
// (the groups past the window, and the columns past the tile's, do nothing).
template <class L>
__device__ __forceinline__ void vertical_pass(const Regions<L>& regions, const typename L::Element* z_candidate,
                                              int round, int subgroup, int column) {
    constexpr int A = L::A;
    const int group = round * SUBGROUPS + subgroup;
    const int qx = L::set_qx(group / L::QX_SPAN) + group % L::QX_SPAN, qy = L::set_qy(group / L::QX_SPAN);
    if (column < L::COLS1 && group < L::GROUPS && qx <= A) {
        vertical_sums<typename L::Space, L::B, L::K, L::TH, L::ZR_ROWS, L::ZR_STRIDE, L::ZC_ROWS, L::ZC_STRIDE,
                      L::VS_STRIDE>(regions.z_reference + column,
                                    z_candidate + (qy + A) * L::ZC_STRIDE + column + qx + A,
                                    regions.vertical + subgroup * L::K * L::TH * L::VS_STRIDE + column);
    }
}

// A thread's SEG pixels' sums, in registers for the whole window: their C numerators and
// denominator; the largest weight (CENTER_MAX with absolute weights); and, for relative
// weights, each pixel's shift s and largest weight's exponent (log2 units), and the shifts of
// pixels sitting a redo out.
// The members are declared in the reverse of the order the kernel once declared them as
// separate arrays: in this order the compiler numbers their registers as it did then, and the
// kernel compiles to the same machine code (nvcc 13.0, sm_90); in the other order, ptxas
// assigned registers differently (more for some instances, fewer for others).
template <int SEG, int C>
struct Sums {
    unsigned sitting_out;                       // a bit per pixel
    float kept[SEG], highest[SEG], shift[SEG];  // kept: the shifts of pixels sitting a redo out
    float largest[SEG], denominator[SEG], numerator[SEG][C];

    __device__ __forceinline__ Sums() : sitting_out(0), largest{}, denominator{}, numerator{} {
#pragma unroll
        for (int i = 0; i < SEG; ++i) shift[i] = 0.0f, highest[i] = NONE_SEEN;
    }

    // Pass 2's step for pixel i: its weight times the candidates y[.][column].
    template <bool LARGEST, int N>
    __device__ __forceinline__ void add(int i, float weight, const float (&y)[C][N], int column) {
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            numerator[i][channel] = fmaf(weight, y[channel][column], numerator[i][channel]);
        denominator[i] += weight;
        if (LARGEST) largest[i] = fmaxf(largest[i], weight);
    }

    // Having seen an offset, outside the settled bounds.
    static __device__ __forceinline__ bool unsettled(float exponent) {
        return exponent > SETTLED_BELOW || (exponent < SETTLED_ABOVE && exponent > NONE_SEEN);
    }

    // Relative weights, after a round's pass 2 (or its redo): rebase or drop each pixel as the
    // header says; returns the pixels dropped, a bit each.
    __device__ __forceinline__ unsigned settle() {
#pragma unroll
        for (int i = 0; i < SEG; ++i)
            if (sitting_out >> i & 1u) shift[i] = kept[i];
        sitting_out = 0;
        bool settled = true;
#pragma unroll
        for (int i = 0; i < SEG; ++i) settled = settled && !unsettled(highest[i]);
        unsigned dropped = 0;
        if (settled) return dropped;
#pragma unroll
        for (int i = 0; i < SEG; ++i) {
            const float exponent = highest[i];
            const bool drop = exponent > REDO_ABOVE || (exponent < REDO_BELOW && exponent > NONE_SEEN);
            if (!drop && !unsettled(exponent)) continue;
            const float factor = exp2_approx(-exponent);  // dropped sums may hold inf: set, not scaled
#pragma unroll
            for (int channel = 0; channel < C; ++channel)
                numerator[i][channel] = drop ? 0.0f : numerator[i][channel] * factor;
            denominator[i] = drop ? 0.0f : denominator[i] * factor;
            shift[i] -= exponent;
            highest[i] = drop ? NONE_SEEN : 0.0f;
            if (drop) dropped |= 1u << i;
        }
        return dropped;
    }

    // For a redo: the pixels not dropped weigh 2^-FLT_MAX = 0 until the next settle.
    __device__ __forceinline__ void sit_out(unsigned dropped) {
#pragma unroll
        for (int i = 0; i < SEG; ++i) {
            if (dropped >> i & 1u) continue;
            kept[i] = shift[i];
            shift[i] = NONE_SEEN;
            sitting_out |= 1u << i;
        }
    }
};

// Pass 2 of a round, set by set and row by row: the candidates Y of one row, SEG + QX_SPAN - 1
// pixels from the thread's first pixel shifted by the set's first qx, serve its groups. The last
// qy block and the last set have fewer rows and groups in the window: see FusedLayout::SPECIALISE.
// `centre_qx`: the qx of the offset (0, 0) in this frame, past the window in the others.
template <class L, bool EXPONENTIAL, bool CENTER_MAX>
__device__ __forceinline__ void horizontal_pass(const Regions<L>& regions, const typename L::Element* z_candidate,
                                                int round, int row, int first, bool same_frame, int centre_qx,
                                                float scale, float log2_scale, Sums<L::SEG, L::C>& sums) {
    constexpr int A = L::A, B = L::B, C = L::C, K = L::K, SEG = L::SEG, TH = L::TH;
    constexpr int ZC_STRIDE = L::ZC_STRIDE, YC_STRIDE = L::YC_STRIDE, VS_STRIDE = L::VS_STRIDE;
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    constexpr int CHANNEL_STRIDE = L::OWN_Y ? L::YC_ROWS * YC_STRIDE : L::ZC_ROWS * ZC_STRIDE;
#pragma unroll
    for (int set_in_round = 0; set_in_round < SUBGROUPS / L::QX_SPAN; ++set_in_round) {
        const int set = round * (SUBGROUPS / L::QX_SPAN) + set_in_round;
        if (set * L::QX_SPAN >= L::GROUPS) break;
        const int first_qx = L::set_qx(set), first_qy = L::set_qy(set);
        const bool last_rows = set % L::GROUP_BLOCKS == L::GROUP_BLOCKS - 1;
        const bool last_set = set / L::GROUP_BLOCKS == L::QX_SETS - 1;
        with_count<K, L::LAST_ROWS, L::SPECIALISE>(last_rows, [&](auto rows, int valid_rows) {
            with_count<L::QX_SPAN, L::LAST_SPAN, L::SPECIALISE>(last_set, [&](auto span, int valid_span) {
                constexpr int ROWS = decltype(rows)::value, SPAN = decltype(span)::value;
#pragma unroll
                for (int k = 0; k < ROWS; ++k) {
                    if (k >= valid_rows) break;
                    const int qy = first_qy + k;
                    const float* pixels = L::OWN_Y ? regions.y_candidate + (row + qy + A) * YC_STRIDE + first +
                                                         first_qx + A
                                                   : reinterpret_cast<const float*>(z_candidate) +
                                                         (row + qy + A + B) * ZC_STRIDE + first + first_qx + A + B;
                    float y[C][SEG + SPAN - 1];  // pixel i serves group m's pixel i - m
#pragma unroll
                    for (int i = 0; i < SEG + SPAN - 1; ++i) {
                        if (i >= SEG && i - SEG + 1 >= valid_span) break;
#pragma unroll
                        for (int channel = 0; channel < C; ++channel)
                            y[channel][i] = pixels[channel * CHANNEL_STRIDE + i];
                    }
#pragma unroll
                    for (int m = 0; m < SPAN; ++m) {
                        if (m >= valid_span) break;
                        // The offset (0, 0) is the centre weight's. Relative weights test
                        // it without same_frame, which holds for all of a frame's rounds:
                        // with the settle after each round, the compiler made a copy of
                        // the rounds loop for each value of it.
                        if (RELATIVE ? qy == 0 && first_qx + m == centre_qx
                                     : CENTER_MAX && same_frame && first_qx + m == 0 && qy == 0)
                            continue;
                        // The thread's SEG patch sums, running along its row over the offset's
                        // vertical sums (from the first pixel's column -B), weighed, and w Y(p + q)
                        // added. Inline, not a function of its own: with one, the compiler kept
                        // both copies of with_count's bisquare / centre-max body whole (up to 15 %
                        // more instructions).
                        const int pass1 = set_in_round * L::QX_SPAN + m;
                        const float* sums_of_row = regions.vertical + ((pass1 * K + k) * TH + row) * VS_STRIDE + first;
                        float values[SEG + 2 * B];
#pragma unroll
                        for (int n = 0; n < SEG + 2 * B; ++n) values[n] = sums_of_row[n];
                        // The running sum's steps first, so that the sum's chain is one add per pixel.
                        // Its rounding leaves equal patches -1e-7 apart: u is taken from max(sum, 0).
                        float step[SEG];
#pragma unroll
                        for (int i = 1; i < SEG; ++i) step[i] = values[i + 2 * B] - values[i - 1];
                        float patch_sum = 0.0f;
#pragma unroll
                        for (int n = 0; n <= 2 * B; ++n) patch_sum += values[n];
                        if constexpr (!RELATIVE) {
#pragma unroll
                            for (int i = 0; i < SEG; ++i) {
                                if (i > 0) patch_sum += step[i];
                                // exp(-u) as 2^(patch_sum * -log2_scale): one FMUL before
                                // the MUFU, where __expf(-patch_sum * scale) multiplies twice.
                                sums.template add<CENTER_MAX>(i,
                                                              EXPONENTIAL ? exp2_approx(fmaxf(patch_sum, 0.0f) * -log2_scale)
                                                                          : weight_of<false>(patch_sum, scale),
                                                              y, m + i);
                            }
                        } else {
#pragma unroll
                            for (int i = 0; i < SEG; ++i) {
                                if (i > 0) patch_sum += step[i];
                                const float exponent = fmaf(-fmaxf(patch_sum, 0.0f), log2_scale, sums.shift[i]);  // s - u
                                sums.template add<false>(i, exp2_approx(exponent), y, m + i);
                                sums.highest[i] = fmaxf(sums.highest[i], exponent);
                            }
                        }
                    }
                }
            });
        });
    }
}

// After a round's pass 2. The vertical sums are read before the next round overwrites them.
// Relative weights: the thread settles its pixels, and the block runs the round again where a
// thread dropped pixels (pass 1 gives the same sums), once: a second drop would mean u finer
// than float32 resolves, far below the h where DESIGN.md asks for exactness; those pixels then
// keep no weight of the round. Returns whether the round runs again.
template <bool RELATIVE, int SEG, int C>
__device__ __forceinline__ bool end_round(bool redone, Sums<SEG, C>& sums) {
    if constexpr (RELATIVE) {
        const unsigned dropped = sums.settle();
        redone = __syncthreads_or(!redone && dropped != 0);
        if (redone) sums.sit_out(dropped);
        return redone;
    } else {
        __syncthreads();
        return false;
    }
}

// A piece of a split tile: its partial sums out; the tile's last block to arrive reads them all
// back, in piece order (relative weights: the largest weight's exponent in the largest's place,
// and each piece's sums rescaled to the smaller shift as they are added; a piece that saw no
// offset has no shift, -NONE_SEEN). Returns whether this block is that last one, which goes on
// to write the output.
template <class L, bool RELATIVE>
__device__ __forceinline__ bool gather_pieces(Sums<L::SEG, L::C>& sums, const BlockWork& work, float* partials,
                                              int* arrivals, float* shared) {
    constexpr int C = L::C, SEG = L::SEG;
    constexpr int PARTIAL_VALUES = C + 2 + RELATIVE;  // of a split tile's pixel: numerators, denominator, largest, s
    constexpr int VALUES = SEG * PARTIAL_VALUES;
    const int thread = threadIdx.x;
    const int pieces = work.pieces;
    float* tile_partials = partials + static_cast<size_t>(work.split_index) * pieces * VALUES * FUSED_THREADS;
    float* mine = tile_partials + static_cast<size_t>(work.piece) * VALUES * FUSED_THREADS + thread;
#pragma unroll
    for (int i = 0; i < SEG; ++i) {
        float* values = mine + i * PARTIAL_VALUES * FUSED_THREADS;
#pragma unroll
        for (int channel = 0; channel < C; ++channel) values[channel * FUSED_THREADS] = sums.numerator[i][channel];
        values[C * FUSED_THREADS] = sums.denominator[i];
        values[(C + 1) * FUSED_THREADS] = RELATIVE ? sums.highest[i] : sums.largest[i];
        if constexpr (RELATIVE)
            values[(C + 2) * FUSED_THREADS] = sums.highest[i] > NONE_SEEN ? sums.shift[i] : -NONE_SEEN;
    }
    __threadfence();
    __syncthreads();
    int* last = reinterpret_cast<int*>(shared);  // the regions are no longer read
    if (thread == 0) *last = atomicAdd(arrivals + work.split_index, 1) == pieces - 1;
    __syncthreads();
    if (!*last) return false;
    __threadfence();
    if (thread == 0) arrivals[work.split_index] = 0;  // for the next launch
#pragma unroll
    for (int i = 0; i < SEG; ++i) {
#pragma unroll
        for (int channel = 0; channel < C; ++channel) sums.numerator[i][channel] = 0.0f;
        sums.denominator[i] = sums.largest[i] = 0.0f;
        sums.shift[i] = -NONE_SEEN;
        sums.highest[i] = NONE_SEEN;
    }
    for (int other = 0; other < pieces; ++other) {
        const float* theirs = tile_partials + static_cast<size_t>(other) * VALUES * FUSED_THREADS + thread;
#pragma unroll
        for (int i = 0; i < SEG; ++i) {
            const float* values = theirs + i * PARTIAL_VALUES * FUSED_THREADS;
            float factor = 1.0f;  // of their sums
            if constexpr (RELATIVE) {  // both to the smaller shift: factors <= 1
                const float their_shift = __ldcg(values + (C + 2) * FUSED_THREADS);
                const float low = fminf(sums.shift[i], their_shift);
                const float my_factor = exp2_approx(low - sums.shift[i]);
#pragma unroll
                for (int channel = 0; channel < C; ++channel) sums.numerator[i][channel] *= my_factor;
                sums.denominator[i] *= my_factor;
                factor = exp2_approx(low - their_shift);
                const float their_highest = __ldcg(values + (C + 1) * FUSED_THREADS) + (low - their_shift);
                sums.highest[i] = fmaxf(sums.highest[i] + (low - sums.shift[i]), their_highest);
                sums.shift[i] = low;
            } else {
                sums.largest[i] = fmaxf(sums.largest[i], __ldcg(values + (C + 1) * FUSED_THREADS));
            }
#pragma unroll
            for (int channel = 0; channel < C; ++channel)
                sums.numerator[i][channel] += factor * __ldcg(values + channel * FUSED_THREADS);
            sums.denominator[i] += factor * __ldcg(values + C * FUSED_THREADS);
        }
    }
    return true;
}

// Normalise into shared memory, `tile_output` [TH][TW * C] (the regions are no longer read; the
// barrier also keeps the split tiles' flag until all have read it), adding the largest-weight
// centre's term (CENTER_MAX): the largest other weight, or 1 where there is none (or, bisquare,
// all weigh 0).
template <class L, bool CENTER_MAX, bool RELATIVE, typename Out>
__device__ __forceinline__ void normalise(Sums<L::SEG, L::C>& sums, const float (&own)[L::SEG][L::C],
                                          Out* tile_output, int row, int first, float full_scale) {
    constexpr int C = L::C;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < L::SEG; ++i) {
        if constexpr (CENTER_MAX) {
            const float center_weight = RELATIVE ? (sums.highest[i] > NONE_SEEN ? exp2_approx(sums.highest[i]) : 1.0f)
                                                 : (sums.largest[i] > 0.0f ? sums.largest[i] : 1.0f);
            sums.denominator[i] += center_weight;
#pragma unroll
            for (int channel = 0; channel < C; ++channel)
                sums.numerator[i][channel] += center_weight * own[i][channel];
        }
        const float inverse = 1.0f / sums.denominator[i];
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            tile_output[(row * L::TW + first + i) * C + channel] =
                to_output<Out>(sums.numerator[i][channel] * inverse, full_scale);
    }
}

// Store the normalised tile row by row: a thread's own pixels lie 7 * C values apart from its
// neighbours', so storing them directly would touch a 32-byte sector per lane and value and
// multiply the traffic to L2 by about eight.
template <class L, typename Out>
__device__ __forceinline__ void store_tile(const Out* tile_output, Out* output, int tile_top, int tile_left,
                                           int height, int width) {
    constexpr int TH = L::TH, TW = L::TW, C = L::C;
    __syncthreads();
    const int rows = min(TH, height - tile_top), values = min(TW, width - tile_left) * C;
    for (int index = threadIdx.x; index < TH * TW * C; index += FUSED_THREADS) {
        const int tile_row = index / (TW * C), value = index % (TW * C);
        if (tile_row < rows && value < values)
            output[(static_cast<size_t>(tile_top + tile_row) * width + tile_left) * C + value] = tile_output[index];
    }
}

// Output: interleaved (H, W, C) of type Out (float, or uint8 / uint16 scaled by full_scale).
// PACKED: the distances come from `packed`, the 8-bit frames' words (else null), and `scale`
// is for byte units. Tiles are numbered row by row, tiles_x to a row; blocks from whole_tiles
// on filter one piece of a split tile each: one frame, and the rounds of one of `parts` parts
// of them, with `partials` ([split][frame_count * parts][values][256] floats) and `arrivals`
// ([split] counters, zero between launches; null where nothing is split). MIN_BLOCKS: blocks
// per multiprocessor the registers must allow (2 where two blocks' shared memory fits).
// GUIDED (KNLMeansCL's rclip; docs/design-luma-chroma.md): the distance space is Z = G X of
// `guides`, another clip's frames of the window (planar float32, as `frames`), while the
// candidates Y and a pixel's own values come from `frames`: Y takes its own region, as with a
// transform. Never with PACKED. The last template argument and the last parameter, so that
// the unguided kernels' names and code stay as they were (`guides` is null for them).
// engine/video/filters/fused_gpu.py's fused_kernel_name writes the template instance.
template <int B, int A, int C, int K, int TH, int TW, int ZC_STRIDE, int YC_STRIDE, int VS_STRIDE, bool TRANSFORMED,
          bool PACKED, bool EXPONENTIAL, bool CENTER_MAX, typename Out, int MIN_BLOCKS, bool GUIDED = false>
__global__ void __launch_bounds__(FUSED_THREADS, MIN_BLOCKS)
nlm_fused(const float* const* __restrict__ frames, const unsigned* const* __restrict__ packed, int frame_count,
          int center, int height, int width, const float* __restrict__ transform, float scale, Out* __restrict__ output,
          float full_scale, int tiles_x, int whole_tiles, int parts, float* __restrict__ partials,
          int* __restrict__ arrivals, const float* const* __restrict__ guides) {
    static_assert(!(GUIDED && PACKED), "distances on a guide are taken on its float planes");
    using L = FusedLayout<B, A, C, K, TH, TW, ZC_STRIDE, YC_STRIDE, VS_STRIDE, TRANSFORMED || GUIDED, PACKED>;
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    const float* const* z_frames = GUIDED ? guides : frames;  // the distance space's frames, before G
    extern __shared__ float shared[];
    const Regions<L> regions(shared);
    const BlockWork work = block_work<L>(frame_count, tiles_x, whole_tiles, parts);
    const int thread = threadIdx.x;
    const int subgroup = thread / PASS1_COLUMNS, column = thread % PASS1_COLUMNS;  // pass 1
    const int row = thread / L::SEGMENTS, first = (thread % L::SEGMENTS) * L::SEG;   // pass 2

    load_reference(regions, z_frames, packed, transform, center, work, height, width);
    // The centre weight: 1 (g(0)) comes with the offset (0, 0) of the centre frame, which the
    // window visits like any other. The largest weight (CENTER_MAX) replaces that offset, and
    // needs the thread's own pixels Y(p) for its term at the end.
    float own[L::SEG][C];
    if constexpr (CENTER_MAX && !PACKED)
        load_own<L>(frames[center], row, first, work.tile_top, work.tile_left, height, width, own);
    Sums<L::SEG, C> sums;
    const float log2_scale = scale * 1.44269504f;

    for (int position = work.first_position; position < work.end_position; ++position) {
        const bool same_frame = position == center;
        const int centre_qx = same_frame ? 0 : 2 * A + 1;  // of the offset (0, 0); past the window elsewhere
        const auto* z_candidate =
            load_candidates(regions, frames, z_frames, packed, transform, position, work, height, width);
        bool redone = false;  // relative weights: this round ran once already
#pragma unroll 1
        for (int round = work.first_round; round < work.end_round; round += !redone) {
            vertical_pass(regions, z_candidate, round, subgroup, column);
            __syncthreads();
            horizontal_pass<L, EXPONENTIAL, CENTER_MAX>(regions, z_candidate, round, row, first, same_frame,
                                                        centre_qx, scale, log2_scale, sums);
            redone = end_round<RELATIVE>(redone, sums);
        }
    }

    if constexpr (CENTER_MAX && PACKED) own_unpacked<L>(regions.z_reference, row, first, own);
    if (work.split && !gather_pieces<L, RELATIVE>(sums, work, partials, arrivals, shared)) return;
    Out* tile_output = reinterpret_cast<Out*>(shared);  // [TH][TW * C]: the regions are no longer read
    static_assert(TH * TW * C * sizeof(Out) <= SUBGROUPS * K * TH * VS_STRIDE * sizeof(float), "output tile fits");
    normalise<L, CENTER_MAX, RELATIVE>(sums, own, tile_output, row, first, full_scale);
    store_tile<L>(tile_output, output, work.tile_top, work.tile_left, height, width);
}
