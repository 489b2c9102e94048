// lib/cpu/src/cpu_info.cpp: cpu_info(), the processor's name and the
// vector/tile extensions that decide which kernel runs (attn/cpu/features.hpp).
// Read from CPUID (not /proc/cpuinfo), so it works wherever x86 CPUID does (on AArch64
// the one flag is asimd, which every such CPU has, and the model is empty); the
// flags say what the CPU has, not what the OS lets a process use (AMX also needs
// the kernel's permission: attn/cpu/flash.hpp flash_bf16_path() says what runs).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attn/cpu/features.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace attn {

CpuInfo cpu_info() {
    CpuInfo info;
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    // brand string: leaves 0x80000002..4, 16 bytes each
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) != 0 && a >= 0x80000004u) {
        char brand[49] = {};
        for (unsigned leaf = 0; leaf < 3; ++leaf) {
            unsigned r[4] = {};
            __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
            std::memcpy(brand + 16 * leaf, r, 16);
        }
        info.model = brand;
        const size_t first = info.model.find_first_not_of(' ');
        info.model = first == std::string::npos ? "" : info.model.substr(first);
        while (!info.model.empty() && info.model.back() == ' ') info.model.pop_back();
    }
    unsigned c1 = 0, d1 = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) != 0) c1 = c, d1 = d;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) b7 = b, c7 = c, d7 = d;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) != 0) a71 = a;
    (void)d1;
    (void)c7;
    const auto bit = [](unsigned reg, int n) { return ((reg >> n) & 1u) != 0; };
    struct Flag {
        const char* name;
        bool has;
    };
    const Flag flags[] = {{"fma", bit(c1, 12)},         {"avx2", bit(b7, 5)},          {"avx512f", bit(b7, 16)},
                          {"avx512_bf16", bit(a71, 5)}, {"avx512_fp16", bit(d7, 23)},  {"amx_bf16", bit(d7, 22)},
                          {"amx_tile", bit(d7, 24)},    {"amx_int8", bit(d7, 25)}};
    for (const Flag& f : flags)
        if (f.has) info.flags.emplace_back(f.name);
#elif defined(__aarch64__)
    info.flags.emplace_back("asimd");  // NEON: part of every AArch64 CPU (the neon kernels)
#endif
    return info;
}

}  // namespace attn
