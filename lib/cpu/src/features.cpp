// lib/cpu/src/features.cpp: the CPU feature tests and the ATTN_ISA cap (features.hpp).
// The AMX check itself is flash_amx.cpp's: compiled there above the target pragma (it runs on
// any CPU), under the same compiler and OS guard as the AMX kernels.
#include "attn/cpu/features.hpp"

#include <cstdlib>
#include <string>

#include "attn/core/errors.hpp"
#include "flash/flash_args.hpp"

namespace attn {

namespace {

bool hw_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

bool hw_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool hw_neon() {
#if defined(__aarch64__)
    return true;  // Advanced SIMD with FMA is part of the AArch64 base architecture
#else
    return false;
#endif
}

bool hw_avx512_bf16() {
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
    return hw_avx512() && __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

bool hw_has(Isa family) {
    switch (family) {
        case Isa::generic: return true;
        case Isa::neon: return hw_neon();
        case Isa::avx2: return hw_avx2();
        case Isa::avx512: return hw_avx512();
        case Isa::amx: return hw_avx512() && flash_detail::amx_bf16_usable();
    }
    return false;
}

// The widest family the hardware offers at or below `cap`.
Isa widest_upto(Isa cap) {
    for (Isa i : {Isa::amx, Isa::avx512, Isa::avx2, Isa::neon})
        if (static_cast<int>(i) <= static_cast<int>(cap) && hw_has(i)) return i;
    return Isa::generic;
}

// What the hardware offers, before the cap.
Isa hw_isa() { return widest_upto(Isa::amx); }

Isa parse_cap() {
    const char* env = std::getenv("ATTN_ISA");
    if (env == nullptr || env[0] == '\0') return Isa::amx;
    const std::string v = env;
    for (Isa i : {Isa::generic, Isa::neon, Isa::avx2, Isa::avx512, Isa::amx})
        if (v == isa_name(i)) return i;
    std::string shown;
    for (char c : v.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    throw InputError("ATTN_ISA: '" + shown + "' is not a kernel family: use generic, neon, avx2, avx512 or amx");
}

bool allowed(Isa family) { return static_cast<int>(isa_cap()) >= static_cast<int>(family); }

}  // namespace

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::generic: return "generic";
        case Isa::neon: return "neon";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
        case Isa::amx: return "amx";
    }
    return "generic";
}

Isa isa_cap() {
    static const Isa cap = parse_cap();  // a throw leaves it unset: the next call throws again
    return cap;
}

bool cpu_has_avx512() { return allowed(Isa::avx512) && hw_avx512(); }
bool cpu_has_avx2() { return allowed(Isa::avx2) && hw_avx2(); }
bool cpu_has_neon() { return allowed(Isa::neon) && hw_neon(); }
bool cpu_has_avx512_bf16() { return allowed(Isa::avx512) && hw_avx512_bf16(); }
bool cpu_amx_bf16_usable() { return allowed(Isa::amx) && flash_detail::amx_bf16_usable(); }

Isa isa_in_use() { return widest_upto(isa_cap()); }

std::string cpu_kernel_summary() {
    std::string s(isa_name(isa_in_use()));
    if (const char* env = std::getenv("ATTN_ISA"); env != nullptr && env[0] != '\0')
        s += " (ATTN_ISA=" + std::string(isa_name(isa_cap())) + "; CPU: " + std::string(isa_name(hw_isa())) + ")";
    return s;
}

}  // namespace attn
