// lib/cpu/src/gemm/gemm_neon_traits.hpp: private. The NEON (AArch64 Advanced SIMD) traits of the
// GEMM kernels (gemm_kernel.hpp): the flash kernels' (flash_neon_traits.hpp: one float32x4_t
// per vector, load, store, set1, fmadd = vfmaq_f32) plus lane masks and a prefetch. Include
// only on __aarch64__, after <arm_neon.h>, flash_kernel.hpp, flash_neon_traits.hpp and
// gemm_kernel.hpp (F32Strip, BufferMasks: NEON has no masked load or store).
#pragma once

namespace attn::gemm {
namespace {

// F32Strip: the strip operands; BufferMasks: lane counts as masks (gemm_kernel.hpp)
struct Neon : BufferMasks<F32Strip<flash_detail::Neon>> {};

}  // namespace
}  // namespace attn::gemm
