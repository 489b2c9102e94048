// lib/cpu/src/flash_backward/flash_backward_args.hpp: private. What attention_flash_backward()
// (flash_backward.cpp) hands to the per-ISA backward kernels
// (flash_backward_{avx512,avx2,generic}.cpp), prepared once by its pass 0.
//
// Units as in the forward (flash_args.hpp): the kernels recompute the scores in
// log2 units, s2 = s log2(e), and the weights as P = 2^(s2 - L2) with L2 = L log2(e).
// Rows of Q̂, dO, K̂ block copies and the gradient accumulators are padded with
// zeros to a whole number of kPad floats, so the GEMMs whose vector lanes run
// along Dk or Dv need no remainder code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attn/core/mask.hpp"

namespace attn::flash_detail {

// Row padding of the packed operands: 16 floats, one AVX-512 vector, two AVX2 ones.
constexpr int64_t kPad = 16;
inline int64_t padded(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

struct BwdArgs {
    int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dk = 0, Dv = 0;
    int64_t Dkp = 0, Dvp = 0;   // Dk, Dv rounded up to kPad
    const float* qs = nullptr;  // (B, H, Tq, Dkp)  Q̂ * scale (Q̂ = q, or q normalised for cosine)
    const float* kn = nullptr;  // (B, H, Tk, Dk)   K̂ (k, or k normalised for cosine)
    const float* v = nullptr;   // (B, H, Tk, Dv)
    const float* dO = nullptr;  // (B, H, Tq, Dvp)  the upstream gradient
    const float* L2 = nullptr;  // (B, H, Tq)       L log2(e); +inf where L = -inf, so that P = 2^(s2 - L2 - Lo2) = 0
    // (B, H, Tq) 0, or for a row whose |L2| is large (kRefineAbove) the low part of
    // L2 = L2 + Lo2: float32 holds a large L only to half an ulp (2.4e-4 at L = 5000),
    // and every weight P = 2^(s2 - L) of the row would carry that error. Such a row's
    // L2 is refined (refine_item) to its exact row max m2 of the recomputed scores and
    // Lo2 = log2 sum 2^(s2 - m2), so s2 - L2 is exact and Lo2 small.
    const float* Lo2 = nullptr;
    const float* Dr = nullptr;  // (B, H, Tq)       D = rowsum(dO ∘ O)
    // (B, H, Tq) the score of a masked key in log2 units: fill log2(e), except in a
    // row where every key is masked and the fill is finite. There every score is
    // the fill and the weights are uniform, 1/Tk; but L = fill + ln Tk rounds to
    // the fill itself in float when |fill| is large (-1e9), so pass 0 sets this
    // row's masked score to 0 and its L2 to log2(Tk), which gives the same weights.
    const float* F2 = nullptr;
    const Mask* mask = nullptr;
    float fill2 = 0.0f;         // fill log2(e) (-inf stays -inf)
    bool fill_ninf = true;
    bool dropout = false;
    float drop_p = 0.0f;
    uint64_t seed = 0;
    int64_t G = 1;              // chunks of key blocks per (b, h): work items are (b, h, chunk)
    float* dqp = nullptr;       // (G, B, H, Tq, Dkp)  each chunk's share of dS K̂ (dQ̂ / scale)
    float* dk = nullptr;        // (B, H, Tk, Dk)      dK̂ = dSᵀ Q̂ scale
    float* dv = nullptr;        // (B, H, Tk, Dv)      dV = Pdᵀ dO
};

// One backward kernel: work item `item` in [0, B H G) is (b h, chunk g), which
// owns key blocks g, g + G, g + 2G, ... of its head: their dK and dV rows, and
// the chunk's slice g of dqp. `ws` is this thread's workspace, 64-byte aligned.
struct BwdKernel {
    const char* name;  // "avx512", "avx2", "neon", "generic"
    int64_t block_k;   // keys per block
    int64_t block_q;   // queries per block
    size_t (*workspace_floats)(const BwdArgs&);
    void (*run_item)(const BwdArgs&, int64_t item, float* ws);
    // Work item (b h, query block qb), before run_item: when a row of the block has
    // |L2| > kRefineAbove, recomputes the block's scores exactly as run_item does and
    // writes each row's exact max to L2 and the log2 of its sum to Lo2 (see BwdArgs).
    void (*refine_item)(const BwdArgs&, int64_t item, float* ws, float* L2, float* Lo2);
};

// |L2| above which a row's log-sum-exp is refined: float32's half ulp at 32 is 1.9e-6,
// a relative error of 1.3e-6 in every weight, the level of the rest of the arithmetic.
constexpr float kRefineAbove = 32.0f;

// Defined in flash_backward_{generic,avx2,avx512,neon}.cpp; the AVX ones return
// nullptr when this build cannot produce them, the NEON one everywhere but on AArch64.
const BwdKernel* bwd_generic_kernel();
const BwdKernel* bwd_avx2_kernel();
const BwdKernel* bwd_avx512_kernel();
const BwdKernel* bwd_neon_kernel();

}  // namespace attn::flash_detail
