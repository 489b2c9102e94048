// lib/cpu/src/features.cpp: the public face of the AMX check, for modules above
// lib/cpu (the encoder's GEMM); the check itself is flash_amx.cpp's.
#include "attn/cpu/features.hpp"

#include "flash_args.hpp"

namespace attn {

bool cpu_amx_bf16_usable() { return flash_detail::amx_bf16_usable(); }

}  // namespace attn
