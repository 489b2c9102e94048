// attn/cpu/features.hpp: what the running CPU can execute, for the run-time kernel
// choice of every module (the flash kernels, the training GEMMs, the encoder's GEMM,
// the FMA peak probe). One definition, so a kernel is never chosen by a weaker test
// than the one it was compiled for, and one switch that caps the choice:
//
//   ATTN_ISA=generic|neon|avx2|avx512|amx   the widest kernel family any module may pick
//
// Unset (or empty) means no cap: each module takes the widest family this CPU has.
// A cap above what the CPU has changes nothing (ATTN_ISA=avx512 on an AVX2-only CPU
// still runs the AVX2 kernels). The families are in one order, narrowest first:
// generic < neon < avx2 < avx512 < amx. neon (AArch64's 4-lane Advanced SIMD) is the
// only one an Arm CPU has besides generic, so there every cap but generic leaves it on;
// on x86, ATTN_ISA=neon allows no x86 family and so runs the generic kernels. The cap governs
// the kernels chosen at run time; code the compiler vectorised for the build's target (Eigen,
// with -march=native) is not affected: build the `avx2` preset to run the whole program as an AVX2 CPU would.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Kernel families, narrowest first (x86 and Arm in one order, see above): a module
// tests `isa_in_use() >= Isa::avx512`, which no Arm CPU passes.
enum class Isa { generic = 0, neon = 1, avx2 = 2, avx512 = 3, amx = 4 };

std::string_view isa_name(Isa isa);

// The cap from ATTN_ISA, read once per process. Throws attn::InputError naming the
// variable and its allowed values when the value is none of them (the CLI checks it
// before any work, so the error is its usual one line with exit code 2).
Isa isa_cap();

// AVX-512 F, DQ, BW and VL (what the AVX-512 kernels are compiled with), under the cap.
bool cpu_has_avx512();

// AVX2 with FMA, under the cap.
bool cpu_has_avx2();

// NEON (Advanced SIMD, with FMA), under the cap: every AArch64 CPU; false elsewhere.
bool cpu_has_neon();

// AVX-512 with the BF16 dot product (vdpbf16ps), under the avx512 cap.
bool cpu_has_avx512_bf16();

// AMX-TILE and AMX-BF16, enabled by the OS and granted to this process (Linux:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once on the first call),
// under the amx cap. Without the grant the first tile instruction kills the process,
// so a tile kernel runs only where this says true.
bool cpu_amx_bf16_usable();

// The widest family this process will run: the widest the CPU has at or below the cap.
Isa isa_in_use();

// One line for `attn --version` and benchmark headers: the family in use, the cap when
// one is set, and what the hardware has, e.g. "avx512 (ATTN_ISA=avx512; CPU: amx)";
// on an Arm CPU "neon", or "generic (ATTN_ISA=generic; CPU: neon)".
std::string cpu_kernel_summary();

// The processor, so that figures from different machines are never mixed up
// (cpu_info.cpp): model is CPUID's brand string (empty off x86); flags are those
// of the vector and tile extensions the kernels choose between that this CPU
// reports, in /proc/cpuinfo's spelling (avx2, fma, avx512f, avx512_bf16,
// avx512_fp16, amx_tile, amx_bf16, amx_int8), from CPUID, whatever the cap; on
// AArch64 "asimd" (NEON, which every AArch64 CPU has).
struct CpuInfo {
    std::string model;
    std::vector<std::string> flags;
};
CpuInfo cpu_info();

}  // namespace attn
