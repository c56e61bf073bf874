// NLMeans Studio's GPU kernels (DESIGN.md §1, §2). Compiled at run time through
// cupy.RawModule; PATCH_RADIUS (B), SEARCH_RADIUS (A), CHANNELS (C) and the options are
// compile-time constants given as template arguments, so every loop over a patch unrolls.
//
// Frames live on the device as planar float32 [C][H][W], each uploaded once and kept while an
// output's temporal window needs it; a kernel gets the window as an array of frame pointers.

// Mirror a coordinate into [0, size) without repeating the edge (np.pad mode="reflect"),
// then clamp: coordinates a filtered pixel needs mirror exactly; the clamp only keeps the
// pixels of partial edge tiles, whose outputs are never written, inside the frame.
__device__ __forceinline__ int mirror(int coordinate, int size) {
    coordinate = coordinate < 0 ? -coordinate : coordinate;
    coordinate = coordinate >= size ? 2 * (size - 1) - coordinate : coordinate;
    return min(max(coordinate, 0), size - 1);
}

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
// The fused filter: one block per TILE_HEIGHT x TILE_WIDTH output pixels, every offset of the
// window in one launch; each thread owns PIXELS_PER_THREAD pixels of one column (2, or 1 where
// the larger tile's shared memory would not fit), whose
// numerators and denominator stay in registers for the whole window. Per offset the squared
// difference, the horizontal and the vertical box sums (running sums over short segments) and
// the weights go through shared memory only. Within the centre frame each weight serves +q
// and -q: the distances are computed over the tile and the tile shifted by -q, so only half of
// the spatial offsets are visited.

constexpr int TILE_WIDTH = 32;
constexpr int THREADS_Y = 16;
constexpr int SEGMENT = 4;  // outputs per running box sum

// Store one output value: float as it is, integers scaled by full_scale, rounded and clamped.
template <typename Out>
__device__ __forceinline__ Out to_output(float value, float full_scale) {
    return static_cast<Out>(fminf(fmaxf(value * full_scale + 0.5f, 0.0f), full_scale));
}
template <>
__device__ __forceinline__ float to_output<float>(float value, float) {
    return value;
}

// Load Z = G Y (or Y when transform is null) of a frame over rows x cols pixels from (top,
// left), mirrored at the frame's borders, into planar shared memory [C][rows][cols].
template <int C>
__device__ void load_region(const float* __restrict__ frame, const float* __restrict__ transform,
                            float* region, int top, int left, int rows, int cols, int height, int width) {
    int pixels = height * width;
    for (int index = threadIdx.y * blockDim.x + threadIdx.x; index < rows * cols; index += blockDim.x * blockDim.y) {
        int row = index / cols, col = index % cols;
        int source = mirror(top + row, height) * width + mirror(left + col, width);
        float pixel[C];
#pragma unroll
        for (int channel = 0; channel < C; ++channel) pixel[channel] = __ldg(frame + channel * pixels + source);
#pragma unroll
        for (int channel = 0; channel < C; ++channel) {
            float value = pixel[channel];
            if (transform != nullptr) {
                value = 0.0f;
#pragma unroll
                for (int k = 0; k < C; ++k) value += transform[channel * C + k] * pixel[k];
            }
            region[(channel * rows + row) * cols + col] = value;
        }
    }
}

template <bool EXPONENTIAL>
__device__ __forceinline__ float weight_of(float u) {
    if (EXPONENTIAL) return __expf(-u);
    float remaining = fmaxf(1.0f - u, 0.0f);
    return remaining * remaining;
}

// Output: interleaved (H, W, C) of type Out (float, or uint8 / uint16 scaled by full_scale).
// MIN_BLOCKS: blocks per multiprocessor the registers must allow (2 where two blocks' shared
// memory fits: the barriers of one block then overlap the other's work).
template <int B, int A, int C, bool EXPONENTIAL, bool CENTER_MAX, typename Out, int PIXELS_PER_THREAD, int MIN_BLOCKS>
__global__ void __launch_bounds__(TILE_WIDTH * THREADS_Y, MIN_BLOCKS)
nlm_fused(const float* const* __restrict__ frames, int frame_count, int center, int height, int width,
          const float* __restrict__ transform, float scale, Out* __restrict__ output, float full_scale) {
    constexpr int THREADS = TILE_WIDTH * THREADS_Y;
    constexpr int TILE_HEIGHT = THREADS_Y * PIXELS_PER_THREAD;
    constexpr int PAD = A + B;
    constexpr int Z_ROWS = TILE_HEIGHT + 2 * PAD, Z_COLS = TILE_WIDTH + 2 * PAD;
    constexpr int Y_ROWS = TILE_HEIGHT + 2 * A, Y_COLS = TILE_WIDTH + 2 * A;
    // Distances are computed over a fixed region per frame, so that each thread keeps the
    // reference pixels of its elements in registers for all offsets: for the centre frame the
    // union over the half window of the tile and the tile shifted by -q (rows from -A, columns
    // from -A to A), for other frames the tile; both with a halo of B. D_STRIDE is odd so that
    // threads walking down a column hit distinct banks.
    constexpr int D_ROWS = TILE_HEIGHT + A + 2 * B, D_COLS = TILE_WIDTH + 2 * A + 2 * B;
    constexpr int D_STRIDE = D_COLS | 1;
    constexpr int ELEMENTS = (D_ROWS * D_COLS + THREADS - 1) / THREADS;
    extern __shared__ float shared[];
    float* z_reference = shared;                              // [C][Z_ROWS][Z_COLS]
    float* z_other = z_reference + C * Z_ROWS * Z_COLS;       // [C][Z_ROWS][Z_COLS]
    float* y_other = z_other + C * Z_ROWS * Z_COLS;           // [C][Y_ROWS][Y_COLS]
    float* difference = y_other + C * Y_ROWS * Y_COLS;        // [D_ROWS][D_STRIDE], then the weights
    float* horizontal = difference + D_ROWS * D_STRIDE;       // [D_ROWS][D_STRIDE]

    const int tile_top = blockIdx.y * TILE_HEIGHT, tile_left = blockIdx.x * TILE_WIDTH;
    const int tx = threadIdx.x;
    const int thread = threadIdx.y * blockDim.x + tx;

    load_region<C>(frames[center], transform, z_reference, tile_top - PAD, tile_left - PAD, Z_ROWS, Z_COLS, height,
                   width);

    float numerator[PIXELS_PER_THREAD][C] = {};
    float denominator[PIXELS_PER_THREAD] = {}, largest[PIXELS_PER_THREAD] = {};
    float own[PIXELS_PER_THREAD][C];
    float reference[ELEMENTS][C];
    int element_row[ELEMENTS], element_col[ELEMENTS];  // region coordinates, per frame (no division per offset)

    for (int position = 0; position < frame_count; ++position) {
        const bool same_frame = position == center;
        const float* frame = frames[position];
        // The fixed region of this frame, tile-relative: origin and size.
        const int origin_row = same_frame ? -A - B : -B, origin_col = same_frame ? -A - B : -B;
        const int region_rows = TILE_HEIGHT + 2 * B + (same_frame ? A : 0);
        const int region_cols = TILE_WIDTH + 2 * B + (same_frame ? 2 * A : 0);
        __syncthreads();  // the previous frame's regions are no longer read
        if (!same_frame)
            load_region<C>(frame, transform, z_other, tile_top - PAD, tile_left - PAD, Z_ROWS, Z_COLS, height, width);
        load_region<C>(frame, nullptr, y_other, tile_top - A, tile_left - A, Y_ROWS, Y_COLS, height, width);
        const float* z_candidate = same_frame ? z_reference : z_other;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < ELEMENTS; ++k) {
            const int element = thread + k * THREADS;
            element_row[k] = element / region_cols;  // region_rows or more: no element
            element_col[k] = element % region_cols;
            const int row = min(element_row[k], region_rows - 1), col = element_col[k];
#pragma unroll
            for (int channel = 0; channel < C; ++channel)
                reference[k][channel] =
                    z_reference[(channel * Z_ROWS + PAD + origin_row + row) * Z_COLS + PAD + origin_col + col];
        }
        if (same_frame) {
#pragma unroll
            for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
                const int ty = threadIdx.y + i * THREADS_Y;
#pragma unroll
                for (int channel = 0; channel < C; ++channel)
                    own[i][channel] = y_other[(channel * Y_ROWS + ty + A) * Y_COLS + tx + A];
            }
        }

        for (int qy = -A; qy <= A; ++qy) {
            for (int qx = -A; qx <= A; ++qx) {
                if (same_frame && !(qy > 0 || (qy == 0 && qx > 0))) continue;
                // Distances are needed over the tile, and for the centre frame also over the
                // tile shifted by -q: rows [top, top + rows), columns [left, left + cols).
                const int top = same_frame ? min(0, -qy) : 0, left = same_frame ? min(0, -qx) : 0;
                const int rows = TILE_HEIGHT + (same_frame ? abs(qy) : 0);
                const int cols = TILE_WIDTH + (same_frame ? abs(qx) : 0);
                // 1. squared color difference over the part of the fixed region this offset
                //    needs (its rows and columns with a halo of B).
#pragma unroll
                for (int k = 0; k < ELEMENTS; ++k) {
                    const int row = element_row[k], col = element_col[k];
                    const int r = origin_row + row, c = origin_col + col;  // tile-relative
                    if (row < region_rows && r >= top - B && r < top + rows + B && c >= left - B && c < left + cols + B) {
                        float sum = 0.0f;
#pragma unroll
                        for (int channel = 0; channel < C; ++channel) {
                            float delta = reference[k][channel] -
                                          z_candidate[(channel * Z_ROWS + PAD + r + qy) * Z_COLS + PAD + c + qx];
                            sum = fmaf(delta, delta, sum);
                        }
                        difference[row * D_STRIDE + col] = sum;
                    }
                }
                __syncthreads();
                const int first_row = top - B - origin_row, first_col = left - origin_col;  // in the fixed region
                // 2. horizontal box sums over [-B, B], running along segments of a row; threads
                //    next to each other take rows next to each other. Work items are laid out on
                //    the largest region, so that indices divide by compile-time constants.
                constexpr int ROW_SEGMENTS = (TILE_WIDTH + A + SEGMENT - 1) / SEGMENT;
                for (int index = thread; index < D_ROWS * ROW_SEGMENTS; index += THREADS) {
                    const int item_row = index % D_ROWS, segment = index / D_ROWS;
                    if (item_row >= rows + 2 * B || segment * SEGMENT >= cols) continue;
                    const int row = first_row + item_row;
                    const int first = first_col + segment * SEGMENT;
                    const float* source = difference + row * D_STRIDE - B;
                    float* target = horizontal + row * D_STRIDE;
                    float sum = 0.0f;
#pragma unroll
                    for (int k = 0; k <= 2 * B; ++k) sum += source[first + k];
                    target[first] = sum;
#pragma unroll
                    for (int col = first + 1; col < first + SEGMENT; ++col) {
                        if (col >= first_col + cols) break;
                        sum += source[col + 2 * B] - source[col - 1];
                        target[col] = sum;
                    }
                }
                __syncthreads();
                // 3. vertical box sums over [-B, B], running along segments of a column, then the
                //    weight g(D), stored over the differences.
                constexpr int ITEM_COLS = TILE_WIDTH + A, COLUMN_SEGMENTS = (TILE_HEIGHT + A + SEGMENT - 1) / SEGMENT;
                for (int index = thread; index < ITEM_COLS * COLUMN_SEGMENTS; index += THREADS) {
                    const int item_col = index % ITEM_COLS, segment = index / ITEM_COLS;
                    if (item_col >= cols || segment * SEGMENT >= rows) continue;
                    const int col = first_col + item_col, first = first_row + B + segment * SEGMENT;
                    const float* source = horizontal + col - B * D_STRIDE;
                    float sum = 0.0f;
#pragma unroll
                    for (int k = 0; k <= 2 * B; ++k) sum += source[(first + k) * D_STRIDE];
                    difference[first * D_STRIDE + col] = weight_of<EXPONENTIAL>(sum * scale);
#pragma unroll
                    for (int row = first + 1; row < first + SEGMENT; ++row) {
                        if (row >= first_row + B + rows) break;
                        sum += source[(row + 2 * B) * D_STRIDE] - source[(row - 1) * D_STRIDE];
                        difference[row * D_STRIDE + col] = weight_of<EXPONENTIAL>(sum * scale);
                    }
                }
                __syncthreads();
                // 4. accumulate w Y(p + q) and, within the centre frame, w(p - q, q) Y(p - q).
#pragma unroll
                for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
                    const int ty = threadIdx.y + i * THREADS_Y;
                    float weight = difference[(ty - origin_row) * D_STRIDE + tx - origin_col];
#pragma unroll
                    for (int channel = 0; channel < C; ++channel)
                        numerator[i][channel] = fmaf(
                            weight, y_other[(channel * Y_ROWS + ty + A + qy) * Y_COLS + tx + A + qx], numerator[i][channel]);
                    denominator[i] += weight;
                    if (CENTER_MAX) largest[i] = fmaxf(largest[i], weight);
                    if (same_frame) {
                        float mirrored = difference[(ty - qy - origin_row) * D_STRIDE + tx - qx - origin_col];
#pragma unroll
                        for (int channel = 0; channel < C; ++channel)
                            numerator[i][channel] = fmaf(mirrored,
                                                         y_other[(channel * Y_ROWS + ty + A - qy) * Y_COLS + tx + A - qx],
                                                         numerator[i][channel]);
                        denominator[i] += mirrored;
                        if (CENTER_MAX) largest[i] = fmaxf(largest[i], mirrored);
                    }
                }
                __syncthreads();  // the weights are read before the next offset overwrites them
            }
        }
    }

#pragma unroll
    for (int i = 0; i < PIXELS_PER_THREAD; ++i) {
        const int y = tile_top + threadIdx.y + i * THREADS_Y, x = tile_left + tx;
        if (y >= height || x >= width) continue;
        const float center_weight = (CENTER_MAX && largest[i] > 0.0f) ? largest[i] : 1.0f;
        const float inverse = 1.0f / (denominator[i] + center_weight);
        Out* pixel = output + (static_cast<size_t>(y) * width + x) * C;
#pragma unroll
        for (int channel = 0; channel < C; ++channel)
            pixel[channel] = to_output<Out>((numerator[i][channel] + center_weight * own[i][channel]) * inverse, full_scale);
    }
}
