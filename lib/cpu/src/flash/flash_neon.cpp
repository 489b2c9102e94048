// lib/cpu/src/flash/flash_neon.cpp: the float32 flash kernel for AArch64 NEON (Advanced SIMD,
// 4 lanes), and the bf16 path: the same kernel on operands rounded to bf16 values (as
// flash_bf16_avx2.cpp does on AVX2; Armv8.6's BFDOT is not assumed). NEON is part of every AArch64 CPU, so no target
// pragma is needed; the file compiles to nothing but a null entry elsewhere, and flash.cpp chooses it at run time on
// aarch64 unless ATTN_ISA=generic.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "flash_args.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "flash_kernel.hpp"
#include "flash_neon_traits.hpp"

namespace attn::flash_detail {
namespace {

// Block sizes: 32 vector registers. The AVX2 kernel's blocks, in 4-lane vectors:
// NV = 8 (32 queries), one register tile over the whole block (NT = 8), RS = RP = 2:
// 16 accumulators + 8 loaded vectors + 1 broadcast = 25 registers, no spills, and
// 16 FMAs per 8 loads + 2 broadcasts. BK = 64 keys as in the x86 kernels.
using KNeon = FlashF32<Neon, 8, 8, 2, 2, 64>;
const Kernel kNeon{"neon", KNeon::BQ, &KNeon::workspace_floats, &KNeon::run_item};

struct NeonRound : Neon {
    // to the nearest bf16 value, ties to even (as to_bf16), on the float's bits
    static V round_bf16(V x) {
        const uint32x4_t u = vreinterpretq_u32_f32(x);
        const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
        const uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fff), lsb));
        return vreinterpretq_f32_u32(vandq_u32(r, vdupq_n_u32(0xffff0000u)));
    }
};
using KNeonRound = FlashF32<NeonRound, 8, 8, 2, 2, 64, false, true>;
const Kernel kNeonRound{"neon", KNeonRound::BQ, &KNeonRound::workspace_floats, &KNeonRound::run_item};

}  // namespace

const Kernel* neon_kernel() { return &kNeon; }
const Kernel* neon_rounded_kernel() { return &kNeonRound; }

}  // namespace attn::flash_detail

#else
namespace attn::flash_detail {
const Kernel* neon_kernel() { return nullptr; }
const Kernel* neon_rounded_kernel() { return nullptr; }
}  // namespace attn::flash_detail
#endif
