// attn/cpu/features.hpp: what the running CPU can execute, for the run-time kernel
// choice of every module (the flash kernels, the training GEMMs). One definition, so
// a kernel is never chosen by a weaker test than the one it was compiled for.
#pragma once

namespace attn {

// AVX-512 F, DQ, BW and VL (what the AVX-512 kernels are compiled with).
inline bool cpu_has_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

// AVX2 with FMA.
inline bool cpu_has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

// AMX-TILE and AMX-BF16, enabled by the OS and granted to this process (Linux:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once on the first call).
// Without the grant the first tile instruction kills the process, so a tile kernel
// runs only where this says true. Defined in src/features.cpp.
bool cpu_amx_bf16_usable();

}  // namespace attn
