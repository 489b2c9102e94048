// lib/nn/src/gemm_dispatch.cpp: which fp32 GEMM the fast training ops use (fast_ops.hpp:
// GemmPath), chosen once from what the CPU has (attn/cpu/gemm.hpp, under ATTN_ISA) and
// changeable for tests and benchmarks.
#include <atomic>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/cpu/features.hpp"
#include "attn/nn/fast_ops.hpp"
#include "gemm.hpp"

namespace attn::nn {

namespace {
Isa family(GemmPath p) {
    switch (p) {
        case GemmPath::Avx2: return Isa::avx2;
        case GemmPath::Avx512: return Isa::avx512;
        case GemmPath::Neon: return Isa::neon;
        case GemmPath::Generic:
        case GemmPath::Eigen: break;
    }
    return Isa::generic;  // the plain C++ kernel (for Generic; Eigen has no family)
}

bool available(GemmPath p) { return p == GemmPath::Eigen || attn::gemm::available(family(p)); }

std::atomic<int>& current() {
    static std::atomic<int> p{static_cast<int>(best_gemm_path())};
    return p;
}
}  // namespace

const char* gemm_path_name(GemmPath p) {
    switch (p) {
        case GemmPath::Eigen: return "eigen";
        case GemmPath::Avx2: return "avx2";
        case GemmPath::Avx512: return "avx512";
        case GemmPath::Neon: return "neon";
        case GemmPath::Generic: return "generic";
    }
    return "?";
}

bool gemm_path_available(GemmPath p) { return available(p); }

GemmPath best_gemm_path() {
    if (available(GemmPath::Avx512)) return GemmPath::Avx512;
    if (available(GemmPath::Avx2)) return GemmPath::Avx2;
    if (available(GemmPath::Neon)) return GemmPath::Neon;
    return GemmPath::Eigen;
}

GemmPath gemm_path() { return static_cast<GemmPath>(current().load(std::memory_order_relaxed)); }

void set_gemm_path(GemmPath p) {
    if (!available(p))
        throw InputError(std::string("gemm path: this CPU or build has no ") + gemm_path_name(p) + " kernel");
    current().store(static_cast<int>(p), std::memory_order_relaxed);
}

namespace detail {
GemmFn float_gemm() {
    // looked up once: what the CPU has and the ATTN_ISA cap do not change while it runs
    static const GemmFn avx2 = attn::gemm::strided(Isa::avx2), avx512 = attn::gemm::strided(Isa::avx512),
                        neon = attn::gemm::strided(Isa::neon), generic = attn::gemm::strided(Isa::generic);
    switch (gemm_path()) {
        case GemmPath::Avx512: return avx512;
        case GemmPath::Avx2: return avx2;
        case GemmPath::Neon: return neon;
        case GemmPath::Generic: return generic;
        case GemmPath::Eigen: break;
    }
    return nullptr;
}
}  // namespace detail

}  // namespace attn::nn
