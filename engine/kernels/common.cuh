// Device functions both kernel files share (nlm.cu, cascade.cu): the border rule, the weight
// of DESIGN.md §1 and 2^x.
#pragma once

// Mirror a coordinate into [0, size) without repeating the edge (np.pad mode="reflect"), then
// clamp: every coordinate a filtered pixel needs mirrors exactly; the clamp only keeps the
// pixels no output reads (partial edge tiles, the corners of extended planes) inside the frame.
__device__ __forceinline__ int mirror(int coordinate, int size) {
    coordinate = coordinate < 0 ? -coordinate : coordinate;
    coordinate = coordinate >= size ? 2 * (size - 1) - coordinate : coordinate;
    return min(max(coordinate, 0), size - 1);
}

// min(max(a b + c, 0), 1), rounded then clamped, in one FFMA.SAT: the kernels compile with
// flush-to-zero (CuPy's NVRTC), and in that mode the CUDA 13.0 compiler issued
// __saturatef(fmaf(a, b, c)) as an FFMA and a saturating FADD of zero, one instruction more a
// bisquare weight (docs/performance.md, tenth session's video kernels).
__device__ __forceinline__ float saturated_fma(float a, float b, float c) {
#ifdef CUDA_ON_CPU
    return __saturatef(fmaf(a, b, c));
#else
    float result;
    asm("fma.rn.ftz.sat.f32 %0, %1, %2, %3;" : "=f"(result) : "f"(a), "f"(b), "f"(c));
    return result;
#endif
}

// g(D) of a patch's summed squared difference, with u = patch_sum * scale (scale from
// NLMParams.patch_sum_scale): Tukey's bisquare (1 - u)^2 for u <= 1, else 0; or exp(-u). A sum
// run along rows (a column added, another taken away) can round to -1e-7 between equal patches,
// which a tiny h made exp(+4500): u is taken from max(patch_sum, 0) (the bisquare saturates).
template <bool EXPONENTIAL>
__device__ __forceinline__ float weight_of(float patch_sum, float scale) {
    if (EXPONENTIAL) return __expf(-fmaxf(patch_sum, 0.0f) * scale);
    const float remaining = saturated_fma(patch_sum, -scale, 1.0f);  // 1 - u <= 1 already
    return remaining * remaining;
}

// 2^x in one MUFU.EX2 (ex2.approx.ftz: about 2 ulp, 0 below 2^-126), as __expf uses it; the
// relative exponential weights are kept in log2 units so that no multiply precedes it.
// tests/engine/cuda_on_cpu.h defines it for the CPU.
#ifndef CUDA_ON_CPU
__device__ __forceinline__ float exp2_approx(float x) {
    float result;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x));
    return result;
}
#endif
