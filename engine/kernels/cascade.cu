// The paper's pass cascade (DESIGN.md §2) on the GPU: one kernel per pass, launched once per
// search offset, every intermediate plane in device memory. This is the readable baseline the
// fused kernel (nlm.cu) is measured against; it follows engine/video/filters/cascade.py step by step.
//
// Frames are planar float32 [C][H][W]. For search radius A and patch radius B, the weights of
// an offset are computed over the frame extended by A on each side, (H + 2A) x (W + 2A), so that
// within the centre frame the weight of pixel p - q is at hand for the symmetric accumulation;
// the squared differences cover B more on each side, the horizontal sums B more rows.
// Grid index (i, j) of a plane is frame pixel (i - margin, j - margin) for its margin.

#include "common.cuh"

// Z = G Y per pixel (the distances' color space), planar in, planar out.
template <int C>
__global__ void transform_colors(const float* __restrict__ frame, const float* __restrict__ transform,
                                 float* __restrict__ z, int pixels) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixels) return;
    float pixel[C];
#pragma unroll
    for (int channel = 0; channel < C; ++channel) pixel[channel] = frame[channel * pixels + index];
#pragma unroll
    for (int row = 0; row < C; ++row) {
        float value = 0.0f;
#pragma unroll
        for (int k = 0; k < C; ++k) value += transform[row * C + k] * pixel[k];
        z[row * pixels + index] = value;
    }
}

// Pass 1: ||Z_reference(p) - Z_candidate(p + q)||^2 over the plane of margin A + B.
template <int C>
__global__ void squared_difference(const float* __restrict__ reference, const float* __restrict__ candidate,
                                   float* __restrict__ difference, int height, int width, int margin, int qy,
                                   int qx) {
    const int rows = height + 2 * margin, cols = width + 2 * margin;
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= rows || j >= cols) return;
    const int y = i - margin, x = j - margin, pixels = height * width;
    const int here = mirror(y, height) * width + mirror(x, width);
    const int there = mirror(y + qy, height) * width + mirror(x + qx, width);
    float sum = 0.0f;
#pragma unroll
    for (int channel = 0; channel < C; ++channel) {
        const float delta = reference[channel * pixels + here] - candidate[channel * pixels + there];
        sum = fmaf(delta, delta, sum);
    }
    difference[i * cols + j] = sum;
}

// Pass 2: the sum of 2B + 1 horizontal neighbours; the plane gets 2B narrower.
template <int B>
__global__ void horizontal_box_sum(const float* __restrict__ source, float* __restrict__ target, int rows,
                                   int target_cols) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= rows || j >= target_cols) return;
    const float* row = source + i * (target_cols + 2 * B) + j;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * B; ++k) sum += row[k];
    target[i * target_cols + j] = sum;
}

// Pass 3: the sum of 2B + 1 vertical neighbours, then the weight g(D) with u = sum * scale, or
// with RELATIVE u itself (see accumulate); the plane gets 2B shorter.
template <int B, bool EXPONENTIAL, bool RELATIVE>
__global__ void vertical_box_sum_weight(const float* __restrict__ source, float* __restrict__ weights,
                                        int target_rows, int cols, float scale) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= target_rows || j >= cols) return;
    const float* column = source + i * cols + j;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * B; ++k) sum += column[k * cols];
    weights[i * cols + j] = RELATIVE ? fmaxf(sum, 0.0f) * scale : weight_of<EXPONENTIAL>(sum, scale);
}

// Pass 4: add w(p, q) Y(p + q) to the numerator and w to the denominator (and the running
// largest weight); with SYMMETRIC (the centre frame), also w(p - q, q) Y(p - q), the weight
// computed for pixel p - q, which is the weight of offset -q at p. RELATIVE (exponential
// weights with the largest weight as the centre's, DESIGN.md §1): `weights` holds u, `largest`
// the smallest u of the pixel's window so far, u_min; the weights are exp(-(u - u_min)), and the
// sums are rescaled by exp(-(u_min - u)) where a new u is the smallest, as online softmax does.
template <int C, bool SYMMETRIC, bool RELATIVE>
__global__ void accumulate(const float* __restrict__ weights, const float* __restrict__ frame,
                           float* __restrict__ numerator, float* __restrict__ denominator,
                           float* __restrict__ largest, int height, int width, int margin, int qy, int qx) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y >= height || x >= width) return;
    const int cols = width + 2 * margin, pixels = height * width, index = y * width + x;
    float weight = weights[(y + margin) * cols + x + margin];
    const int there = mirror(y + qy, height) * width + mirror(x + qx, width);
    float mirrored = 0.0f;
    int back = 0;
    if (SYMMETRIC) {
        mirrored = weights[(y + margin - qy) * cols + x + margin - qx];
        back = mirror(y - qy, height) * width + mirror(x - qx, width);
    }
    float rescale = 1.0f;  // of the sums so far
    if (RELATIVE) {
        const float shift = largest[index];
        const float low = SYMMETRIC ? fminf(shift, fminf(weight, mirrored)) : fminf(shift, weight);
        rescale = __expf(low - shift);
        weight = __expf(low - weight);
        mirrored = SYMMETRIC ? __expf(low - mirrored) : 0.0f;
        largest[index] = low;
    } else {
        largest[index] = fmaxf(largest[index], SYMMETRIC ? fmaxf(weight, mirrored) : weight);
    }
#pragma unroll
    for (int channel = 0; channel < C; ++channel) {
        float sum = numerator[channel * pixels + index] * rescale + weight * frame[channel * pixels + there];
        if (SYMMETRIC) sum += mirrored * frame[channel * pixels + back];
        numerator[channel * pixels + index] = sum;
    }
    denominator[index] = denominator[index] * rescale + weight + mirrored;
}

// Pass 5: X = (numerator + c Y) / (denominator + c), c the centre weight (1, or with CENTER_MAX
// the largest other weight where one is above 0; relative weights' largest is 1, so their
// CENTER_MAX is false); planar in, interleaved (H, W, C) out.
template <int C, bool CENTER_MAX>
__global__ void normalise(const float* __restrict__ numerator, const float* __restrict__ denominator,
                          const float* __restrict__ largest, const float* __restrict__ frame,
                          float* __restrict__ output, int pixels) {
    const int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixels) return;
    const float center_weight = (CENTER_MAX && largest[index] > 0.0f) ? largest[index] : 1.0f;
    const float inverse = 1.0f / (denominator[index] + center_weight);
#pragma unroll
    for (int channel = 0; channel < C; ++channel)
        output[index * C + channel] =
            (numerator[channel * pixels + index] + center_weight * frame[channel * pixels + index]) * inverse;
}
