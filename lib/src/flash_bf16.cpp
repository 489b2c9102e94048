// lib/src/flash_bf16.cpp: the bf16 flash kernel (AVX-512 BF16). Not written yet.
#include "flash_args.hpp"
namespace attn::flash_detail {
const Kernel* avx512_bf16_kernel() { return nullptr; }
}  // namespace attn::flash_detail
