// lib/cpu/src/flash/flash_args.hpp: private. What the public attention_flash() in flash.cpp
// hands to the per-ISA kernels (flash_avx512.cpp, flash_avx2.cpp, flash_generic.cpp),
// and the entry points each of those files exports.
//
// Units: scores inside the kernels are in log2 units. Q is pre-multiplied by
// scale * log2(e), the additive mask and the fill by log2(e), so that
// softmax(x) = 2^(x2 - max x2) / sum and the exp is a bare exp2. Ordering and
// equality of scores are unchanged, so the mask rules carry over exactly.
#pragma once

#include <cstdint>
#include <cstddef>

#include "attn/core/mask.hpp"

namespace attn::flash_detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Args {
    const float* q = nullptr;  // (B, H, Tq, Dk); RoPE: already rotated (flash.cpp)
    const float* k = nullptr;  // (B, Hkv, Tk, Dk); RoPE: already rotated
    const float* v = nullptr;  // (B, Hkv, Tk, Dv)
    float* out = nullptr;      // (B, H, Tq, Dv)
    float* lse = nullptr;      // (B, H, Tq) or nullptr: the row log-sum-exp, natural log, for the backward
    int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dk = 0, Dv = 0;
    int64_t Hkv = 0;           // heads of k and v: query head h reads kv head h / (H / Hkv)
    const float* alibi2 = nullptr;  // [H] ALiBi slopes * log2(e), or nullptr: no ALiBi
    int64_t qpos0 = 0;         // position of query 0 (ALiBi's distance; RoPE is applied before)
    float softcap = 0.0f;      // c > 0: scaled scores s -> c tanh(s / c) (natural units); 0: off
    const Mask* mask = nullptr;  // checked for these sizes; a kernel reads batch row b as mask->row(b, Tk)
    float qscale = 1.0f;       // scale factor * log2(e), applied to q
    bool cosine = false;       // normalise q and k rows before the product
    float fill2 = 0.0f;        // fill * log2(e) (-inf stays -inf)
    bool fill_ninf = true;     // fill == -inf: fully masked blocks can be skipped
    bool dropout = false;      // train mode and p > 0
    float drop_p = 0.0f;
    uint64_t seed = 0;
    // bf16 variant only: K as bf16 (B, H, Tk, Dk2) with Dk2 = Dk rounded up to
    // even, and V as bf16 pairs along keys (B, H, ceil(Tk/2), Dv, 2).
    const uint16_t* kb = nullptr;
    const uint16_t* vb = nullptr;
};

// A kernel processes work item `item` of kernel_items(): one (b, h, query block).
// `ws` is this thread's workspace of kernel_workspace_floats() floats, 64-byte aligned.
struct Kernel {
    const char* name;        // "avx512", "avx2", "neon", "generic", "avx512-bf16"
    int64_t block_q;         // queries per block
    size_t (*workspace_floats)(const Args&);
    void (*run_item)(const Args&, int64_t item, float* ws);
    // A variant with larger query blocks for long key sequences (or nullptr):
    // each K/V block fetched from L3/DRAM then serves 4x more queries.
    const Kernel* long_keys = nullptr;
    // A variant with smaller query blocks (or nullptr), which "auto" takes when every
    // query fits one of its blocks: a short sequence then computes fewer idle lanes.
    const Kernel* short_queries = nullptr;
};

// "auto" switches to Kernel::long_keys when one head's K and V (float32) exceed
// this many bytes: 4 MiB, four times the 1 MiB L2 per core here, where the small
// blocks measured slower (T=16384: 85 vs 92 GFLOP per CPU-second) while at
// T <= 4096 (2 MiB) the larger blocks bring nothing and waste more on causal
// diagonals (89 vs 93).
constexpr double kLongKeysBytes = 4.0 * 1024 * 1024;

// What this CPU has (flash.cpp; __builtin_cpu_supports): AVX-512 F/DQ/BW/VL, AVX2 with FMA;
// on AArch64, NEON (always there). Each under the ATTN_ISA cap (attn/cpu/features.hpp).
bool cpu_avx512();
bool cpu_avx2();
bool cpu_neon();

// Defined in flash_generic.cpp / flash_avx2.cpp / flash_avx512.cpp / flash_neon.cpp /
// flash_bf16.cpp. The AVX ones return nullptr when this build cannot produce them (a
// build for another architecture), the NEON one everywhere but on AArch64.
const Kernel* generic_kernel();
const Kernel* avx2_kernel();
const Kernel* avx512_kernel();
const Kernel* neon_kernel();
const Kernel* avx512_bf16_kernel();
// bf16 operands with float32 arithmetic where the CPU has no bf16 dot product
// (flash_bf16_avx512f.cpp, flash_bf16_avx2.cpp, flash_neon.cpp, flash_generic.cpp): the
// float32 kernel on values rounded to bf16 (FlashF32's ROUND); K and V come as float32
// copies rounded by the caller (Args::k, Args::v), not in the pair layout of
// avx512_bf16_kernel.
const Kernel* avx512_rounded_kernel();
const Kernel* avx2_rounded_kernel();
const Kernel* neon_rounded_kernel();
const Kernel* generic_rounded_kernel();

// flash_amx.cpp: the bf16 forward on AMX tiles (same Args, K and V packed by the
// kernel itself; kb and vb unused). amx_bf16_usable(): the CPU has AMX-TILE and
// AMX-BF16, the OS enabled the tile state and granted it to this process (asked
// once); false in builds without the kernel (then run_amx_bf16 does nothing).
bool amx_bf16_usable();
void run_amx_bf16(const Args& a, int threads);

}  // namespace attn::flash_detail

namespace attn::flash_detail {
// float -> bfloat16 bits, round to nearest even (the conversion vcvtne2ps2bf16 does).
inline uint16_t to_bf16(float x) {
    uint32_t u;
    __builtin_memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
// x rounded to the nearest bf16 value, as a float.
inline float bf16_value(float x) {
    const uint32_t u = static_cast<uint32_t>(to_bf16(x)) << 16;
    float r;
    __builtin_memcpy(&r, &u, 4);
    return r;
}
}  // namespace attn::flash_detail
