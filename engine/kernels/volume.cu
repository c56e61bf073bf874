// The volume filter of DESIGN.md §6, one thread per output voxel (engine/volume_gpu.py).
//
// A straightforward direct kernel: each thread keeps its own patch (C (2Bz+1)(2By+1)(2Bx+1)
// values) in registers and, for every offset q of the (2Az+1)(2Ay+1)(2Ax+1) window, sums the
// squared differences to the patch at p + q read through the read-only cache, then weighs
// V(p + q). No weight symmetry and no running sums: about 3 |patch| C operations per voxel and
// offset, where the floor (separable running sums, symmetry) is about 8; docs/performance.md
// measures it against that floor. Input: the slab mirrored by A + B on every axis, laid out
// (Zp, C, Yp, Xp) (engine/volume.py); output: (planes, Y, X, C) float32.
#include "common.cuh"

template <int BZ, int BY, int BX, int C, bool EXPONENTIAL, bool CENTER_MAX>
__global__ void __launch_bounds__(256) volume_direct(const float* __restrict__ padded, float* __restrict__ out,
                                                     int planes, int rows, int columns, int az, int ay, int ax,
                                                     float scale) {
    constexpr int PZ = 2 * BZ + 1, PY = 2 * BY + 1, PX = 2 * BX + 1;
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z;
    if (x >= columns || y >= rows) return;
    const long padded_columns = columns + 2 * (ax + BX);
    const long plane = (rows + 2 * (ay + BY)) * padded_columns;  // one channel of one padded plane
    // The patch's first voxel, p - B, in the padded slab (whose voxel p is at p + A + B).
    const float* corner = padded + ((long)(z + az) * C) * plane + (long)(y + ay) * padded_columns + (x + ax);

    float patch[C][PZ][PY][PX];
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
        for (int dz = 0; dz < PZ; ++dz)
#pragma unroll
            for (int dy = 0; dy < PY; ++dy)
#pragma unroll
                for (int dx = 0; dx < PX; ++dx)
                    patch[c][dz][dy][dx] = __ldg(corner + (dz * C + c) * plane + dy * padded_columns + dx);

    float numerator[C], denominator = 0.0f;
    float extreme = RELATIVE ? 3.402823466e38f : 0.0f;  // u_min (relative weights) or the largest weight
#pragma unroll
    for (int c = 0; c < C; ++c) numerator[c] = 0.0f;
    for (int qz = -az; qz <= az; ++qz) {
        for (int qy = -ay; qy <= ay; ++qy) {
            for (int qx = -ax; qx <= ax; ++qx) {
                if (qz == 0 && qy == 0 && qx == 0) continue;
                const float* candidate = corner + (long)qz * C * plane + qy * padded_columns + qx;
                float sum = 0.0f;
#pragma unroll
                for (int c = 0; c < C; ++c)
#pragma unroll
                    for (int dz = 0; dz < PZ; ++dz)
#pragma unroll
                        for (int dy = 0; dy < PY; ++dy)
#pragma unroll
                            for (int dx = 0; dx < PX; ++dx) {
                                const float d = patch[c][dz][dy][dx] -
                                                __ldg(candidate + (dz * C + c) * plane + dy * padded_columns + dx);
                                sum = fmaf(d, d, sum);
                            }
                float w;
                if (RELATIVE) {  // exp(-(u - u_min)), rescaling the sums when u_min falls (online softmax)
                    const float u = sum * scale;
                    if (u < extreme) {
                        const float rescale = __expf(u - extreme);
                        denominator *= rescale;
#pragma unroll
                        for (int c = 0; c < C; ++c) numerator[c] *= rescale;
                        extreme = u;
                    }
                    w = __expf(extreme - u);
                } else {
                    w = weight_of<EXPONENTIAL>(sum, scale);
                    if (CENTER_MAX) extreme = fmaxf(extreme, w);
                }
                const float* value = candidate + BZ * C * plane + BY * padded_columns + BX;
                denominator += w;
#pragma unroll
                for (int c = 0; c < C; ++c) numerator[c] = fmaf(w, __ldg(value + c * plane), numerator[c]);
            }
        }
    }
    // The centre: weight 1 (also exp(0), the largest relative weight), or the largest weight.
    const float center = (CENTER_MAX && !RELATIVE && extreme > 0.0f) ? extreme : 1.0f;
    const float inverse = 1.0f / (denominator + center);
    float* target = out + (((long)z * rows + y) * columns + x) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) target[c] = fmaf(center, patch[c][BZ][BY][BX], numerator[c]) * inverse;
}
