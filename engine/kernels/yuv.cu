// Y'CbCr planes <-> interleaved RGB on the GPU: media/yuv_kernels.py's arithmetic, operation for
// operation, so that a frame converted here equals one converted on the CPU sample for sample.
// Compiled with --fmad=false (gpu/device.py): a fused multiply-add rounds once where NumPy rounds
// twice. The sampling, siting and filters are media/yuv.py's; `coefficients` is
// YuvLayout.coefficients(): luma offset, luma scale, chroma offset, chroma scale, Kr, Kb, top.
//
// Planes are contiguous, one after the other in one buffer: luma (height x width), then Cb and Cr
// (chroma_rows x chroma_columns each).

struct Coefficients {
    double luma_offset, luma_scale, chroma_offset, chroma_scale, kr, kb, top;
};

__device__ __forceinline__ Coefficients loaded(const double* given) {
    return {given[0], given[1], given[2], given[3], given[4], given[5], given[6]};
}

// Chroma at luma column x of chroma row `row`, a sample every 2^across columns: co-sited on a
// sample's column, interpolated linearly between the two beside the others (the last repeated at
// the right edge).
template <typename Sample>
__device__ __forceinline__ double chroma_across(const Sample* plane, int columns, int row, int x, int across) {
    const Sample* samples = plane + static_cast<long long>(row) * columns;
    if (!across) return samples[x];
    const int column = x >> across;
    const double part = static_cast<double>(x & ((1 << across) - 1)) / (1 << across);
    if (part != 0.0) {
        return (1 - part) * static_cast<double>(samples[column]) +
               part * static_cast<double>(samples[min(column + 1, columns - 1)]);
    }
    return samples[column];
}

__device__ __forceinline__ double clipped_unit(double value) { return fmin(fmax(value, 0.0), 1.0); }

struct Sampled {
    double value, pb, pr;  // Y' 0..1, Pb and Pr -0.5..0.5, nothing clipped
};

// The pixel's Y', Pb and Pr from the planes (one buffer: luma, Cb, Cr), its chroma interpolated at
// its site.
template <typename Sample>
__device__ __forceinline__ Sampled sampled(const Sample* planes, int height, int width, int across, int down,
                                           const Coefficients& c, long long pixel) {
    const int y = static_cast<int>(pixel / width), x = static_cast<int>(pixel % width);
    const int chroma_rows = (height + (1 << down) - 1) >> down, chroma_columns = (width + (1 << across) - 1) >> across;
    const Sample* luma = planes;
    const Sample* blue = luma + static_cast<long long>(height) * width;
    const Sample* red = blue + static_cast<long long>(chroma_rows) * chroma_columns;
    const int near = y >> down;  // 4:2:0: 3/4 of the nearer chroma row, 1/4 of the next one on this side
    const int other = y % 2 == 0 ? max(near - 1, 0) : min(near + 1, chroma_rows - 1);
    double cb = chroma_across(blue, chroma_columns, near, x, across);
    double cr = chroma_across(red, chroma_columns, near, x, across);
    if (down) {
        cb = 0.75 * cb + 0.25 * chroma_across(blue, chroma_columns, other, x, across);
        cr = 0.75 * cr + 0.25 * chroma_across(red, chroma_columns, other, x, across);
    }
    return {(luma[pixel] - c.luma_offset) / c.luma_scale, (cb - c.chroma_offset) / c.chroma_scale,
            (cr - c.chroma_offset) / c.chroma_scale};
}

// One thread per pixel: the planes -> RGB (height x width x 3) at full_scale, rounded (halves to
// even, as np.rint) and clipped.
template <typename Sample, typename Pixel>
__global__ void yuv_to_rgb(const Sample* planes, Pixel* rgb, int height, int width, int across, int down,
                           const double* coefficients, double full_scale) {
    const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (pixel >= static_cast<long long>(height) * width) return;
    const Coefficients c = loaded(coefficients);
    const Sampled s = sampled(planes, height, width, across, down, c, pixel);
    const double r = s.value + 2 * (1 - c.kr) * s.pr;
    const double b = s.value + 2 * (1 - c.kb) * s.pb;
    const double g = (s.value - c.kr * r - c.kb * b) / (1 - c.kr - c.kb);
    rgb[3 * pixel + 0] = static_cast<Pixel>(rint(clipped_unit(r) * full_scale));
    rgb[3 * pixel + 1] = static_cast<Pixel>(rint(clipped_unit(g) * full_scale));
    rgb[3 * pixel + 2] = static_cast<Pixel>(rint(clipped_unit(b) * full_scale));
}

// Pb and Pr are centred on 0.5 in the luma/chroma filter's planes (media/yuv.py's CHROMA_CENTRE).
#define CHROMA_CENTRE 0.5

// One thread per pixel: the planes -> Y' (height x width) and (Pb + 0.5, Pr + 0.5, 0) (height x
// width x 3), float32 and unclipped: the luma/chroma filter's planes, past the range kept.
template <typename Sample>
__global__ void yuv_to_ycbcr(const Sample* planes, float* luma, float* chroma, int height, int width, int across,
                             int down, const double* coefficients) {
    const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (pixel >= static_cast<long long>(height) * width) return;
    const Sampled s = sampled(planes, height, width, across, down, loaded(coefficients), pixel);
    luma[pixel] = static_cast<float>(s.value);
    chroma[3 * pixel + 0] = static_cast<float>(s.pb + CHROMA_CENTRE);
    chroma[3 * pixel + 1] = static_cast<float>(s.pr + CHROMA_CENTRE);
    chroma[3 * pixel + 2] = 0.0f;
}

__device__ __forceinline__ double clamped_sample(double value, double top) { return fmin(fmax(rint(value), 0.0), top); }

// One thread per pixel: RGB (times `scale`: 0..1) -> the luma plane's samples, and Pb, Pr
// (-0.5..0.5) at every pixel into `differences` (two height x width float32 planes).
template <typename Pixel, typename Sample>
__global__ void rgb_to_luma(const Pixel* rgb, double scale, Sample* luma, float* differences, long long pixels,
                            const double* coefficients) {
    const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (pixel >= pixels) return;
    const Coefficients c = loaded(coefficients);
    const double r = rgb[3 * pixel] * scale, g = rgb[3 * pixel + 1] * scale, b = rgb[3 * pixel + 2] * scale;
    const double value = c.kr * r + (1 - c.kr - c.kb) * g + c.kb * b;
    luma[pixel] = static_cast<Sample>(clamped_sample(value * c.luma_scale + c.luma_offset, c.top));
    differences[pixel] = static_cast<float>((b - value) / (2 * (1 - c.kb)));
    differences[pixels + pixel] = static_cast<float>((r - value) / (2 * (1 - c.kr)));
}

// One thread per pixel: yuv_to_ycbcr's Y' and chroma -> the luma plane's samples, and Pb, Pr into
// `differences` (two height x width float32 planes), as rgb_to_luma gives them.
template <typename Sample>
__global__ void ycbcr_to_luma(const float* values, const float* chroma, Sample* luma, float* differences,
                              long long pixels, const double* coefficients) {
    const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (pixel >= pixels) return;
    const Coefficients c = loaded(coefficients);
    luma[pixel] = static_cast<Sample>(clamped_sample(values[pixel] * c.luma_scale + c.luma_offset, c.top));
    differences[pixel] = static_cast<float>(chroma[3 * pixel] - CHROMA_CENTRE);
    differences[pixels + pixel] = static_cast<float>(chroma[3 * pixel + 1] - CHROMA_CENTRE);
}

// The down filters that undo the up filters (media/yuv_kernels.py's COSITED_DOWN,
// COSITED_QUARTER_DOWN, CENTERED_DOWN and CENTERED_LAST_DOWN), as float32 like theirs.
__device__ const float COSITED_DOWN[5] = {-1.0f / 8, 2.0f / 8, 6.0f / 8, 2.0f / 8, -1.0f / 8};
__device__ const float COSITED_QUARTER_DOWN[9] = {-117.0f / 1024, -44.0f / 1024, 136.0f / 1024, 328.0f / 1024,
                                                  418.0f / 1024,  328.0f / 1024, 136.0f / 1024, -44.0f / 1024,
                                                  -117.0f / 1024};
__device__ const float CENTERED_DOWN[4] = {-1.0f / 4, 3.0f / 4, 3.0f / 4, -1.0f / 4};
__device__ const float CENTERED_LAST_DOWN[2] = {-1.0f / 2, 3.0f / 2};
__device__ const float NOT_SUBSAMPLED[1] = {1.0f};

// The vertical filter's sum at column x, as media/yuv_kernels.py sums a row (float32 products).
__device__ __forceinline__ double filtered_down(const float* difference, int height, int width, const float* taps,
                                               int count, int first, int x) {
    double sum = 0.0;
    for (int i = 0; i < count; ++i) {
        const int y = min(max(first + i, 0), height - 1);
        sum += taps[i] * difference[static_cast<long long>(y) * width + x];
    }
    return sum;
}

// One thread per chroma sample of Cb and Cr (blockIdx.y: which): the difference filtered with
// the separable down taps at its site -> the plane's samples.
template <typename Sample>
__global__ void decimated_chroma(const float* differences, Sample* chroma, int height, int width, int across,
                                 int down, const double* coefficients) {
    const int rows = (height + (1 << down) - 1) >> down, columns = (width + (1 << across) - 1) >> across;
    const long long site = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (site >= static_cast<long long>(rows) * columns) return;
    const int cy = static_cast<int>(site / columns), cx = static_cast<int>(site % columns);
    const Coefficients c = loaded(coefficients);
    const float* difference = differences + blockIdx.y * static_cast<long long>(height) * width;
    const float* vertical = down ? CENTERED_DOWN : NOT_SUBSAMPLED;
    int taps = down ? 4 : 1, first = down ? 2 * cy - 1 : cy;
    if (down && 2 * cy + 1 == height) {  // a 4:2:0 frame of odd height: half a pair left
        vertical = CENTERED_LAST_DOWN;
        taps = 2;
        first = 2 * cy - 1;
    }
    const float* horizontal = across == 2 ? COSITED_QUARTER_DOWN : across ? COSITED_DOWN : NOT_SUBSAMPLED;
    const int horizontal_taps = across == 2 ? 9 : across ? 5 : 1;
    const int start = (cx << across) - horizontal_taps / 2;
    double total = 0.0;
    for (int j = 0; j < horizontal_taps; ++j) {
        const int x = min(max(start + j, 0), width - 1);
        total += horizontal[j] * filtered_down(difference, height, width, vertical, taps, first, x);
    }
    chroma[blockIdx.y * static_cast<long long>(rows) * columns + site] =
        static_cast<Sample>(clamped_sample(total * c.chroma_scale + c.chroma_offset, c.top));
}
