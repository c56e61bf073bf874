// The volume filter of DESIGN.md §6 (engine/filters/volume_gpu.py): each thread filters RUN consecutive
// voxels of one (y, x) column.
//
// A straightforward direct kernel. The thread keeps the RUN + 2 Bz planes of its voxels' patches
// (C (2By+1)(2Bx+1) values each) in registers and, for every offset q of the
// (2Az+1)(2Ay+1)(2Ax+1) window, reads the RUN + 2 Bz candidate planes once through the
// read-only cache, each serving the up to 2 Bz + 1 voxels whose patches hold it; then weighs
// V(p + q). No weight symmetry and no running sums: 2 |patch| C operations per voxel and offset
// where the floor (separable running sums, symmetry) needs about 8; docs/performance.md
// measures it against that floor. Input: the slab mirrored by A + B on every axis, laid out
// (Zp, C, Yp, Xp) (engine/volume/denoise.py); output: (planes, Y, X, C) float32.
#include "common.cuh"

template <int BZ, int BY, int BX, int C, bool EXPONENTIAL, bool CENTER_MAX, int RUN>
__global__ void __launch_bounds__(256) volume_direct(const float* __restrict__ padded, float* __restrict__ out,
                                                     int planes, int rows, int columns, int az, int ay, int ax,
                                                     float scale) {
    constexpr int PZ = 2 * BZ + 1, PY = 2 * BY + 1, PX = 2 * BX + 1, SPAN = RUN + 2 * BZ;
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int first = blockIdx.z * RUN;
    if (x >= columns || y >= rows) return;
    const int count = min(RUN, planes - first);  // voxels of this thread's run
    const long padded_columns = columns + 2 * (ax + BX);
    const long plane = (rows + 2 * (ay + BY)) * padded_columns;  // one channel of one padded plane
    // The first patch's first voxel, p - B, in the padded slab (whose voxel p is at p + A + B).
    const float* corner = padded + ((long)(first + az) * C) * plane + (long)(y + ay) * padded_columns + (x + ax);

    float patches[SPAN][C][PY][PX];  // planes first - Bz .. first + RUN - 1 + Bz of the patches
#pragma unroll
    for (int k = 0; k < SPAN; ++k)
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
            for (int dy = 0; dy < PY; ++dy)
#pragma unroll
                for (int dx = 0; dx < PX; ++dx)
                    patches[k][c][dy][dx] =
                        k < count + 2 * BZ ? __ldg(corner + (k * C + c) * plane + dy * padded_columns + dx) : 0.0f;

    float numerator[RUN][C], denominator[RUN], extreme[RUN];  // extreme: u_min (relative) or the largest weight
#pragma unroll
    for (int j = 0; j < RUN; ++j) {
        denominator[j] = 0.0f;
        extreme[j] = RELATIVE ? 3.402823466e38f : 0.0f;
#pragma unroll
        for (int c = 0; c < C; ++c) numerator[j][c] = 0.0f;
    }
    for (int qz = -az; qz <= az; ++qz) {
        for (int qy = -ay; qy <= ay; ++qy) {
            for (int qx = -ax; qx <= ax; ++qx) {
                if (qz == 0 && qy == 0 && qx == 0) continue;
                const float* candidate = corner + (long)qz * C * plane + qy * padded_columns + qx;
                float sums[RUN], values[RUN][C];
#pragma unroll
                for (int j = 0; j < RUN; ++j) sums[j] = 0.0f;
#pragma unroll
                for (int k = 0; k < SPAN; ++k) {
                    if (k >= count + 2 * BZ) break;
#pragma unroll
                    for (int c = 0; c < C; ++c)
#pragma unroll
                        for (int dy = 0; dy < PY; ++dy)
#pragma unroll
                            for (int dx = 0; dx < PX; ++dx) {
                                const float other = __ldg(candidate + (k * C + c) * plane + dy * padded_columns + dx);
#pragma unroll
                                for (int dz = 0; dz < PZ; ++dz) {  // voxel j = k - dz holds this plane at dz
                                    const int j = k - dz;
                                    if (j < 0 || j >= RUN) continue;
                                    const float d = patches[k][c][dy][dx] - other;
                                    sums[j] = fmaf(d, d, sums[j]);
                                }
                                if (dy == BY && dx == BX && k >= BZ && k - BZ < RUN) values[k - BZ][c] = other;
                            }
                }
#pragma unroll
                for (int j = 0; j < RUN; ++j) {
                    if (j >= count) break;
                    float w;
                    if (RELATIVE) {  // exp(-(u - u_min)), rescaling the sums when u_min falls (online softmax)
                        const float u = sums[j] * scale;
                        if (u < extreme[j]) {
                            const float rescale = __expf(u - extreme[j]);
                            denominator[j] *= rescale;
#pragma unroll
                            for (int c = 0; c < C; ++c) numerator[j][c] *= rescale;
                            extreme[j] = u;
                        }
                        w = __expf(extreme[j] - u);
                    } else {
                        w = weight_of<EXPONENTIAL>(sums[j], scale);
                        if (CENTER_MAX) extreme[j] = fmaxf(extreme[j], w);
                    }
                    denominator[j] += w;
#pragma unroll
                    for (int c = 0; c < C; ++c) numerator[j][c] = fmaf(w, values[j][c], numerator[j][c]);
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < RUN; ++j) {
        if (j >= count) break;
        // The centre: weight 1 (also exp(0), the largest relative weight), or the largest weight.
        const float center = (CENTER_MAX && !RELATIVE && extreme[j] > 0.0f) ? extreme[j] : 1.0f;
        const float inverse = 1.0f / (denominator[j] + center);
        float* target = out + (((long)(first + j) * rows + y) * columns + x) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) target[c] = fmaf(center, patches[j + BZ][c][BY][BX], numerator[j][c]) * inverse;
    }
}
