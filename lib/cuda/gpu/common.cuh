// lib/cuda/gpu/common.cuh: device helpers every kernel shares: the mask rules and the
// dropout decision, written to give the same answer as the CPU code bit for bit.
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

// attn::Mask::allowed for batch row b, query i, key j (causal AND padding AND dense).
__device__ inline bool mask_allowed(const MaskArgs& m, int64_t Tk, int64_t b, int64_t i, int64_t j) {
    if (m.causal && j > i) return false;
    if (m.key_len != nullptr && j >= m.key_len[b]) return false;
    if (m.dense != nullptr && !m.dense[((m.Bm == 1 ? 0 : b) * m.Tqm + (m.Tqm == 1 ? 0 : i)) * Tk + j]) return false;
    return true;
}

// attn::Mask::additive_at
__device__ inline float mask_additive(const MaskArgs& m, int64_t Tk, int64_t b, int64_t i, int64_t j) {
    if (m.additive == nullptr) return 0.0f;
    return m.additive[((m.Ba == 1 ? 0 : b) * m.Tqa + (m.Tqa == 1 ? 0 : i)) * Tk + j];
}

// The score the softmax sees for raw dot product `raw` (reference passes 2 and 3):
// scaled = raw * scale + additive; masked_fill(~allowed, fill).
__device__ inline float masked_score(const AttnArgs& a, float raw, int64_t b, int64_t i, int64_t j) {
    const float scaled = raw * a.scale + mask_additive(a.mask, a.Tk, b, i, j);
    return mask_allowed(a.mask, a.Tk, b, i, j) ? scaled : a.fill;
}

// Keys [0, end) that can matter for queries [q_lo, q_hi] of batch row b. With
// fill = -inf a masked key adds exactly 0 to the softmax, so the flash kernels stop
// at the last key the causal mask or the padding allows; with a finite fill every
// masked key still carries exp(fill - max) and all Tk keys are visited.
__device__ inline int64_t key_end(const AttnArgs& a, int64_t b, int64_t q_hi) {
    int64_t end = a.Tk;
    if (a.fill == -INFINITY) {
        if (a.mask.causal) end = end < q_hi + 1 ? end : q_hi + 1;
        if (a.mask.key_len != nullptr) end = end < a.mask.key_len[b] ? end : a.mask.key_len[b];
    }
    return end < 0 ? 0 : end;
}

// True when every (query in [q_lo, q_hi], key in [k_lo, k_hi]) pair is allowed and
// unshifted, so a tile can skip the per-element mask work.
__device__ inline bool tile_all_allowed(const AttnArgs& a, int64_t b, int64_t q_lo, int64_t k_hi) {
    if (a.mask.dense != nullptr || a.mask.additive != nullptr) return false;
    if (k_hi >= a.Tk) return false;
    if (a.mask.causal && k_hi > q_lo) return false;
    if (a.mask.key_len != nullptr && k_hi >= a.mask.key_len[b]) return false;
    return true;
}

}  // namespace attn::cuda_detail
