// The volume filter of DESIGN.md §6 (engine/volume/filter_gpu.py), two kernels: `volume_tiled`
// (below: separable box sums over a tile in shared memory, the faster by far)
// wherever its tile fits, and for the rest (large search windows, many channels with large
// patches) `volume_direct`, in which each thread filters RUN consecutive voxels of one (y, x) column.
//
// volume_direct, a straightforward direct kernel. The thread keeps the RUN + 2 Bz planes of its voxels' patches
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

// ---------------------------------------------------------------------------------------------
// The tiled kernel: the same filter with separable box sums, for the cases whose tile fits
// (engine/volume/filter_gpu.py `tiled_layout`; the others keep `volume_direct` above).
//
// A block of WARPS warps filters TZ planes x WARPS * RY rows x (32 CX - 2 Bx) columns. It first
// copies every padded voxel the tile's windows reach into shared memory, [C][z][y][x], times
// `root` = sqrt(u per unit of patch sum), so that a patch's summed squared difference is u
// itself (in log2 units for exponential weights); the search radii are template arguments, so
// every shared-memory offset below is a constant but the column's. Lane L owns the CX columns
// x0 - Bx + CX L .. (the outer Bx columns on either side are the x halo) and warp w the rows
// y0 + w RY .. + RY - 1 of the block's TZ planes: its TZ x RY x CX voxels' sums stay in
// registers for the whole window, and so do their own patch values (TZ + 2 Bz planes x RY + 2 By
// rows), loaded once. A region row holds its columns by phase (x mod CX, `column_slot`), so that
// a warp's load of one column a lane touches 32 consecutive words: in the plain layout CX = 2
// read every bank twice (2 wavefronts a load, with the shuffles 3.8 shared-memory cycles a voxel
// and offset where 2.1 are needed now).
// Every offset of the window is visited (no weight symmetry: the partner's voxel belongs to
// another thread, and the exchange, at least 3 shared-memory accesses a pair, would leave at best
// 15 % fewer instructions with the shared-memory pipe as busy as the issue; docs/performance.md
// counts it), K = 3 at a time with
// consecutive qy (the candidate rows serve all three), in a sweep over the thread's TZ + 2 Bz
// planes: per plane one shared load per row, column and channel (the candidates), the squared
// differences and their sums over the patch's rows; per output plane the sum over its planes,
// then over its columns, the lanes' neighbours by warp shuffles (2 per lane, row and output
// plane with Bx = 1: one a voxel with CX = 2); the weight, and w V(p + q) into the sums
// (V(p + q) is a loaded candidate). With By = 1 two rows' sums share their middle pair, with
// Bz = 1 two planes' theirs, and with CX = 2 two columns' theirs: about 13.3 instructions a voxel
// and offset (14.2 before the planes were paired and K was 2).
// Each voxel's sums are added in an order that depends on its place in its tile alone, and the
// tiles never move: along y and x they start at the slab's 0, TY, .. (and TX, ..), along z at
// the volume's planes 0, TZ, .. (`phase`, the slab's first plane modulo TZ), so that slabs give
// the same volume as one pass bit for bit (slabs differ in planes only).
// Where the columns left after a slab's whole tiles fit one tile of one column a lane (CX = 1,
// 32 - 2 Bx wide), a second launch of that tile (`first_column`) filters them instead of a
// whole wider tile: 512 columns are 8 tiles of 62 and 16 left, which a 62-wide tile computed
// as 64 columns and a 30-wide one computes as 32 (576 columns computed in all, now 544).
namespace tiled {

// Where column x of a region row lies in shared memory: the row holds its columns by phase,
// x mod CX first, so that a warp's load of the columns CX lane + c (one per lane) reads 32
// consecutive words, whatever c: no bank conflicts (in the plain layout, CX = 2 read every
// bank twice).
template <int CX, int SX>
__device__ __forceinline__ int column_slot(int x) {
    static_assert(SX % CX == 0, "the region's rows hold whole phases");
    return x % CX * (SX / CX) + x / CX;
}

// The patch sums are kept negated, -u, from the squares on (the negations are the FMUL's and
// FFMA's operand signs): then the exponential weight 2^-u is one MUFU of the sum itself, where
// compiled with flush-to-zero, as CuPy compiles (nvcc -ftz=true alike), the negation of u before
// the inline ex2 was a FADD of its own: 1370 instructions a sweep of 3 offsets instead of 1274.
// Negation commutes with rounding, so the weights are bit for bit those of the positive sums.

// sum - ||d||^2 over the channels.
template <int C>
__device__ __forceinline__ float subtract_squares(const float (&d)[C], float sum) {
#pragma unroll
    for (int c = 0; c < C; ++c) sum = fmaf(-d[c], d[c], sum);
    return sum;
}

// -||d||^2.
template <int C>
__device__ __forceinline__ float negated_squares(const float (&d)[C]) {
    float sum = -d[0] * d[0];
#pragma unroll
    for (int c = 1; c < C; ++c) sum = fmaf(-d[c], d[c], sum);
    return sum;
}

// min(max(1 + x, 0), 1) in one FADD.SAT: compiled with flush-to-zero, __saturatef(1.0f + x)
// was two FADDs (1 + x, then a saturating add of 0), a fifteenth of the bisquare weighting's
// instructions. add.sat rounds, then clamps, as the two did.
__device__ __forceinline__ float saturated_one_plus(float x) {
#ifdef CUDA_ON_CPU
    return __saturatef(1.0f + x);
#else
    float result;
    asm("add.sat.ftz.f32 %0, %1, 0f3F800000;" : "=f"(result) : "f"(x));
    return result;
#endif
}

// The voxels' sums: C numerators, the denominator, u_min (relative weights) or the largest weight.
template <int TZ, int RY, int CX, int C>
struct Sums {
    float numerator[TZ][RY][CX][C], denominator[TZ][RY][CX], extreme[TZ][RY][CX];
};

// Weigh output plane t's RY x CX voxels, whose negated patch sums over planes and rows are
// `plane_sums`, for one offset, and add w V(p + q) (`value`) into their sums.
template <int BX, int TZ, int RY, int CX, int C, bool EXPONENTIAL, bool CENTER_MAX>
__device__ __forceinline__ void weigh(int t, const float (&plane_sums)[RY][CX], const float (&value)[RY][CX][C],
                                      Sums<TZ, RY, CX, C>& sums) {
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    constexpr int SPAN = CX + 2 * BX;  // the columns -Bx .. CX - 1 + Bx around the lane's
#pragma unroll
    for (int j = 0; j < RY; ++j) {
        float column[SPAN];  // column e - Bx: lane + floor((e - Bx) / CX), its column (e - Bx) mod CX
#pragma unroll
        for (int e = 0; e < SPAN; ++e) {
            const int offset = e - BX + CX * BX;  // >= 0, so that / and % round down
            const int lanes = offset / CX - BX, own = offset % CX;
            const float sum = plane_sums[j][own];
            column[e] = lanes == 0  ? sum
                        : lanes > 0 ? __shfl_down_sync(0xffffffffu, sum, lanes)
                                    : __shfl_up_sync(0xffffffffu, sum, -lanes);
        }
        float total[CX];
        if (CX == 2 && BX >= 1) {  // both columns hold 1 - Bx .. Bx
            float middle = column[1];
#pragma unroll
            for (int e = 2; e < 2 * BX + 1; ++e) middle += column[e];
            total[0] = column[0] + middle;
            total[CX - 1] = middle + column[SPAN - 1];
        } else {
#pragma unroll
            for (int i = 0; i < CX; ++i) {
                total[i] = column[i];
#pragma unroll
                for (int e = i + 1; e < i + 2 * BX + 1; ++e) total[i] += column[e];
            }
        }
#pragma unroll
        for (int i = 0; i < CX; ++i) {
            const float u = -total[i];  // the sign folds into the instructions that read u
            if (RELATIVE) {
                // 2^-(u - u_min), rescaling the sums when u_min falls (online softmax), in one
                // MUFU: 2^-|u - u_min| is the new voxel's weight, or, where u is the new least,
                // the factor on the sums so far (and the new voxel's weight is 2^0 = 1).
                float& least = sums.extreme[t][j][i];
                const float power = exp2_approx(-fabsf(u - least));
                const bool lower = u < least;
                const float factor = lower ? power : 1.0f, w = lower ? 1.0f : power;
                least = fminf(least, u);
                sums.denominator[t][j][i] = fmaf(sums.denominator[t][j][i], factor, w);
#pragma unroll
                for (int c = 0; c < C; ++c)
                    sums.numerator[t][j][i][c] = fmaf(sums.numerator[t][j][i][c], factor, w * value[j][i][c]);
                continue;
            }
            float w;
            if (EXPONENTIAL) {
                w = exp2_approx(total[i]);  // 2^-u
            } else {
                const float remaining = saturated_one_plus(total[i]);  // 1 - u, clamped to [0, 1]
                w = remaining * remaining;
                if (CENTER_MAX) sums.extreme[t][j][i] = fmaxf(sums.extreme[t][j][i], w);
            }
            sums.denominator[t][j][i] += w;
#pragma unroll
            for (int c = 0; c < C; ++c)
                sums.numerator[t][j][i][c] = fmaf(w, value[j][i][c], sums.numerator[t][j][i][c]);
        }
    }
}

// K offsets (qy, qy + 1, ..) of one (qz, qx): `candidates[i]` points at the first one's first
// candidate of column i (plane 0, row 0, channel 0 of the thread's patches, shifted by q).
template <int BZ, int BY, int BX, int C, bool EXPONENTIAL, bool CENTER_MAX, int TZ, int RY, int CX, int K,
          int PLANE, int ROW, int CHANNEL>
__device__ __forceinline__ void sweep(const float* const (&candidates)[CX],
                                      const float (&own)[TZ + 2 * BZ][RY + 2 * BY][CX][C], Sums<TZ, RY, CX, C>& sums) {
    constexpr int KZ = TZ + 2 * BZ, KY = RY + 2 * BY;
    constexpr bool PAIR_ROWS = BY == 1 && RY % 2 == 0, PAIR_PLANES = BZ == 1 && TZ % 2 == 0;
    float rows_sum[K][KZ][RY][CX];  // per plane: minus the squared differences summed over the patch's rows
    float value[K][TZ][RY][CX][C];  // V(p + q)
    float middle[K][RY][CX];        // PAIR_PLANES: planes t + 1 and t + 2's sums, for output planes t (even), t + 1
#pragma unroll
    for (int k = 0; k < KZ; ++k) {
        float candidate[KY + K - 1][CX][C];
#pragma unroll
        for (int j = 0; j < KY + K - 1; ++j)
#pragma unroll
            for (int i = 0; i < CX; ++i)
#pragma unroll
                for (int c = 0; c < C; ++c) candidate[j][i][c] = candidates[i][c * CHANNEL + k * PLANE + j * ROW];
#pragma unroll
        for (int n = 0; n < K; ++n)
#pragma unroll
            for (int i = 0; i < CX; ++i) {
                float d[KY][C];
#pragma unroll
                for (int j = 0; j < KY; ++j)
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        d[j][c] = own[k][j][i][c] - candidate[j + n][i][c];
                        if (k >= BZ && k < BZ + TZ && j >= BY && j < BY + RY)
                            value[n][k - BZ][j - BY][i][c] = candidate[j + n][i][c];
                    }
                if (PAIR_ROWS) {  // rows j, j + 1 share the squares of rows j + 1, j + 2
#pragma unroll
                    for (int j = 0; j < RY; j += 2) {
                        const float middle = subtract_squares(d[j + 1], negated_squares(d[j + 2]));
                        rows_sum[n][k][j][i] = subtract_squares(d[j], middle);
                        rows_sum[n][k][j + 1][i] = subtract_squares(d[j + 3], middle);
                    }
                } else {
                    float square[KY];
#pragma unroll
                    for (int j = 0; j < KY; ++j) square[j] = negated_squares(d[j]);
#pragma unroll
                    for (int j = 0; j < RY; ++j) {
                        float sum = square[j];
#pragma unroll
                        for (int dy = 1; dy < 2 * BY + 1; ++dy) sum += square[j + dy];
                        rows_sum[n][k][j][i] = sum;
                    }
                }
            }
        if (k < 2 * BZ) continue;
        const int t = k - 2 * BZ;  // this output plane's patch planes are all in
#pragma unroll
        for (int n = 0; n < K; ++n) {
            float plane_sums[RY][CX];
#pragma unroll
            for (int j = 0; j < RY; ++j)
#pragma unroll
                for (int i = 0; i < CX; ++i) {
                    if (PAIR_PLANES && t % 2 == 0) {
                        middle[n][j][i] = rows_sum[n][t + 1][j][i] + rows_sum[n][t + 2][j][i];
                        plane_sums[j][i] = rows_sum[n][t][j][i] + middle[n][j][i];
                    } else if (PAIR_PLANES) {
                        plane_sums[j][i] = middle[n][j][i] + rows_sum[n][t + 2][j][i];
                    } else {
                        float sum = rows_sum[n][t][j][i];
#pragma unroll
                        for (int dz = 1; dz < 2 * BZ + 1; ++dz) sum += rows_sum[n][t + dz][j][i];
                        plane_sums[j][i] = sum;
                    }
                }
            weigh<BX, TZ, RY, CX, C, EXPONENTIAL, CENTER_MAX>(t, plane_sums, value[n][t], sums);
        }
    }
}

}  // namespace tiled

template <int BZ, int BY, int BX, int AZ, int AY, int AX, int C, bool EXPONENTIAL, bool CENTER_MAX, int TZ, int RY,
          int CX, int WARPS, int K>
__global__ void __launch_bounds__(32 * WARPS, 1)
    volume_tiled(const float* __restrict__ padded, float* __restrict__ out, int planes, int rows, int columns,
                 int first_column, int phase, float root) {
    constexpr int KZ = TZ + 2 * BZ, KY = RY + 2 * BY;  // planes and rows of a thread's patches
    constexpr int TY = WARPS * RY, TX = 32 * CX - 2 * BX;  // the block's output rows and columns
    constexpr int PADZ = AZ + BZ, PADY = AY + BY, PADX = AX + BX;
    constexpr int SZ = TZ + 2 * PADZ, SY = TY + 2 * PADY, SX = 32 * CX + 2 * AX;  // the shared region
    constexpr int ROW = SX, PLANE = SY * SX, CHANNEL = SZ * SY * SX;
    constexpr bool RELATIVE = EXPONENTIAL && CENTER_MAX;
    static_assert(K >= 1 && K <= 3, "a sweep takes 1, 2 or 3 offsets");
    extern __shared__ float tile[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // The z tiles start at the volume's planes 0, TZ, 2 TZ, .. (the slab's plane 0 is the
    // volume's plane `phase` mod TZ), so that a slab's voxels are summed as one pass sums them;
    // the x tiles at `first_column` (0, or where the wider tiles of the launch before stopped).
    const int x0 = first_column + blockIdx.x * TX, y0 = blockIdx.y * TY, z0 = blockIdx.z * TZ - phase;

    // The region: padded planes z0 .., rows y0 .., columns x0 .. (clamped into the slab: what
    // lies outside it feeds only voxels outside the slab, which are not written). Warp w copies
    // its rows w, w + WARPS, .. BATCH at a time, all their loads in flight before the first
    // store: with one block a multiprocessor nothing else hides their latency, and a row at a
    // time (a wait a row, 88 a warp for the study's tile) cost 5 % of the kernel. Loads past a
    // batch's last row or the region's last column read that row or column again and store
    // nothing.
    {
        constexpr int REGION_ROWS = C * SZ * SY, LOADS = (SX + 31) / 32, BATCH = 16;
        const int padded_rows = rows + 2 * PADY, padded_columns = columns + 2 * PADX;
        const int padded_planes = planes + 2 * PADZ;
        for (int first = warp; first < REGION_ROWS; first += BATCH * WARPS) {
            float value[BATCH][LOADS];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                const int r = min(first + b * WARPS, REGION_ROWS - 1);
                const int y = r % SY, z = (r / SY) % SZ, c = r / (SY * SZ);
                const float* row = padded + (((long)min(max(z0 + z, 0), padded_planes - 1) * C + c) * padded_rows +
                                             min(y0 + y, padded_rows - 1)) *
                                                padded_columns;
#pragma unroll
                for (int k = 0; k < LOADS; ++k)
                    value[b][k] = __ldg(row + min(x0 + min(lane + 32 * k, SX - 1), padded_columns - 1));
            }
#pragma unroll
            for (int b = 0; b < BATCH; ++b)
#pragma unroll
                for (int k = 0; k < LOADS; ++k) {
                    const int r = first + b * WARPS, x = lane + 32 * k;
                    if (r < REGION_ROWS && x < SX) tile[r * SX + tiled::column_slot<CX, SX>(x)] = root * value[b][k];
                }
        }
    }
    __syncthreads();

    // This thread's columns in the region are AX + CX lane + i (the candidates: + qx); its first
    // patch row, plane w RY + AY, AZ (the candidates: + qy, + qz). Column CX lane + c lies at
    // lane + column_slot(c) for c >= 0.
    const float* home = tile + (AZ * SY + warp * RY + AY) * SX + lane;
    float own[KZ][KY][CX][C];
#pragma unroll
    for (int k = 0; k < KZ; ++k)
#pragma unroll
        for (int j = 0; j < KY; ++j)
#pragma unroll
            for (int i = 0; i < CX; ++i)
#pragma unroll
                for (int c = 0; c < C; ++c)
                    own[k][j][i][c] = home[tiled::column_slot<CX, SX>(AX + i) + c * CHANNEL + k * PLANE + j * ROW];

    tiled::Sums<TZ, RY, CX, C> sums;
#pragma unroll
    for (int t = 0; t < TZ; ++t)
#pragma unroll
        for (int j = 0; j < RY; ++j)
#pragma unroll
            for (int i = 0; i < CX; ++i) {
                sums.denominator[t][j][i] = 0.0f;
                sums.extreme[t][j][i] = RELATIVE ? 3.402823466e38f : 0.0f;
#pragma unroll
                for (int c = 0; c < C; ++c) sums.numerator[t][j][i][c] = 0.0f;
            }

    for (int qz = -AZ; qz <= AZ; ++qz)
        for (int qx = -AX; qx <= AX; ++qx) {
            const bool centre = qz == 0 && qx == 0;  // its qy = 0 is the centre, weighed apart
            const float* shifted[CX];  // column i's candidates for qy = 0
#pragma unroll
            for (int i = 0; i < CX; ++i) shifted[i] = home + qz * PLANE + tiled::column_slot<CX, SX>(AX + i + qx);
            int qy = -AY;
            while (qy <= AY) {
                const float* candidates[CX];
#pragma unroll
                for (int i = 0; i < CX; ++i) candidates[i] = shifted[i] + qy * ROW;
                int n = min(K, AY + 1 - qy);  // the offsets of this sweep: qy .. qy + n - 1, short of the centre
                if (centre && qy <= 0 && qy + n > 0) n = -qy;
                if (n == 0) {
                    qy += 1;  // the centre
                    continue;
                }
                if constexpr (K >= 3) {
                    if (n >= 3) {
                        tiled::sweep<BZ, BY, BX, C, EXPONENTIAL, CENTER_MAX, TZ, RY, CX, 3, PLANE, ROW, CHANNEL>(
                            candidates, own, sums);
                        qy += 3;
                        continue;
                    }
                }
                if (n >= 2) {
                    tiled::sweep<BZ, BY, BX, C, EXPONENTIAL, CENTER_MAX, TZ, RY, CX, 2, PLANE, ROW, CHANNEL>(
                        candidates, own, sums);
                    qy += 2;
                } else {
                    tiled::sweep<BZ, BY, BX, C, EXPONENTIAL, CENTER_MAX, TZ, RY, CX, 1, PLANE, ROW, CHANNEL>(
                        candidates, own, sums);
                    qy += 1;
                }
            }
        }

    const float unscale = 1.0f / root;
#pragma unroll
    for (int i = 0; i < CX; ++i) {
        const int column = CX * lane + i, x = x0 + column - BX;
        if (column < BX || column >= 32 * CX - BX || x >= columns) continue;
#pragma unroll
        for (int t = 0; t < TZ; ++t)
#pragma unroll
            for (int j = 0; j < RY; ++j) {
                const int z = z0 + t, y = y0 + warp * RY + j;
                if (z < 0 || z >= planes || y >= rows) continue;
                // The centre: weight 1 (also 2^0, the largest relative weight), or the largest weight.
                const float extreme = sums.extreme[t][j][i];
                const float center = (CENTER_MAX && !RELATIVE && extreme > 0.0f) ? extreme : 1.0f;
                const float inverse = unscale / (sums.denominator[t][j][i] + center);
                float* target = out + (((long)z * rows + y) * columns + x) * C;
#pragma unroll
                for (int c = 0; c < C; ++c)
                    target[c] = fmaf(center, own[t + BZ][j + BY][i][c], sums.numerator[t][j][i][c]) * inverse;
            }
    }
}
