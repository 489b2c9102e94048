// lib/cuda/gpu/common.cuh: device helpers every kernel shares: the masked score and the
// dropout decision, written to give the same answer as the CPU code bit for bit (the
// mask rule itself is attn::MaskRow's, the same code on both sides).
#pragma once

#include <cstdint>

#include "cuda_internal.hpp"

namespace attn::cuda_detail {

// attn::mix64 (lib/core/src/rng.cpp), re-implemented on the device: splitmix64's finaliser.
__host__ __device__ inline uint64_t mix64_dev(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// attn::counter_uniform: top 24 bits of two mixing rounds, times 2^-24 (exact in float).
__host__ __device__ inline float counter_uniform_dev(uint64_t seed, uint64_t index) {
    const uint64_t h = mix64_dev(mix64_dev(seed) ^ (index * 0xd1b54a32d192ed03ULL));
    return static_cast<float>(h >> 40) * 5.9604644775390625e-08f;  // 2^-24
}

// attn::dropout_drops: element `flat` of the (B, H, Tq, Tk) weights is dropped iff this.
__device__ inline bool dropout_drops_dev(uint64_t seed, uint64_t flat, float p) {
    return p > 0.0f && counter_uniform_dev(seed, flat) < p;
}

// The row max of a softmax: fmaxf skips a NaN, so a row of NaN scores would pass for a fully
// masked row (weights 0). Here a NaN wins, so its row is NaN, as on the CPU and in PyTorch.
__device__ inline float max_nan(float a, float b) { return isnan(a) ? a : isnan(b) ? b : fmaxf(a, b); }

// The score the softmax sees for raw dot product `raw` of query i and key j, under
// the mask row m of their batch row (reference passes 2 and 3):
// scaled = raw * scale + additive; masked_fill(~allowed, fill).
__device__ inline float masked_score(const AttnArgs& a, const MaskRow& m, float raw, int64_t i, int64_t j) {
    const float scaled = raw * a.scale + m.additive_at(i, j);
    return m.allowed(i, j) ? scaled : a.fill;
}

// Keys [0, end) that can matter for queries up to q_hi under the mask row m. With
// fill = -inf a masked key adds exactly 0 to the softmax, so the flash kernels stop
// at the last key the causal mask or the padding allows; with a finite fill every
// masked key still carries exp(fill - max) and all Tk keys are visited.
__device__ inline int64_t key_end(const AttnArgs& a, const MaskRow& m, int64_t q_hi) {
    return a.fill == -INFINITY ? m.key_end(q_hi) : a.Tk;
}

}  // namespace attn::cuda_detail
