// lib/nn/src/gemm_dispatch.cpp: lib/nn's one GEMM dispatcher (attn/nn/gemm_choice.hpp): the list
// of choices, the kernel family each runs here (attn/cpu/gemm.hpp, under ATTN_ISA), and the
// training ops' process-wide choice (attn/nn/fast_ops.hpp), changeable for tests and benchmarks.
#include "attn/nn/gemm_choice.hpp"

#include <atomic>
#include <string>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/cpu/features.hpp"
#include "attn/nn/fast_ops.hpp"
#include "gemm.hpp"

namespace attn {

const std::vector<GemmChoice>& gemm_choices() {
    static const std::vector<GemmChoice> all = {GemmChoice::Best, GemmChoice::Avx512,  GemmChoice::Avx2,
                                                GemmChoice::Neon, GemmChoice::Generic, GemmChoice::Eigen};
    return all;
}

const char* gemm_choice_name(GemmChoice g) {
    switch (g) {
        case GemmChoice::Best: return "best";
        case GemmChoice::Avx512: return "avx512";
        case GemmChoice::Avx2: return "avx2";
        case GemmChoice::Neon: return "neon";
        case GemmChoice::Generic: return "generic";
        case GemmChoice::Eigen: return "eigen";
    }
    return "?";
}

std::optional<GemmChoice> find_gemm_choice(std::string_view name) {
    for (const GemmChoice g : gemm_choices())
        if (name == gemm_choice_name(g)) return g;
    return std::nullopt;
}

std::string gemm_choice_names() {
    const std::vector<GemmChoice>& all = gemm_choices();
    std::string s;
    for (size_t i = 0; i < all.size(); ++i)
        s += std::string(i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + gemm_choice_name(all[i]);
    return s;
}

namespace nn::detail {
std::optional<Isa> gemm_family(GemmChoice g) {
    switch (g) {
        case GemmChoice::Best: {
            // the widest SIMD family; none (Eigen) on a CPU without one, where Eigen's GEMM
            // outruns the plain C++ kernel
            const Isa best = gemm::best();
            return best == Isa::generic ? std::nullopt : std::optional<Isa>(best);
        }
        case GemmChoice::Avx512: return Isa::avx512;
        case GemmChoice::Avx2: return Isa::avx2;
        case GemmChoice::Neon: return Isa::neon;
        case GemmChoice::Generic: return Isa::generic;
        case GemmChoice::Eigen: break;
    }
    return std::nullopt;
}
}  // namespace nn::detail

bool gemm_choice_available(GemmChoice g) {
    const std::optional<Isa> isa = nn::detail::gemm_family(g);
    return !isa || gemm::available(*isa);
}

GemmChoice resolve_gemm_choice(GemmChoice g) {
    if (g != GemmChoice::Best) return g;
    const std::optional<Isa> isa = nn::detail::gemm_family(g);
    if (!isa) return GemmChoice::Eigen;
    switch (*isa) {
        case Isa::avx512: return GemmChoice::Avx512;
        case Isa::avx2: return GemmChoice::Avx2;
        case Isa::neon: return GemmChoice::Neon;
        default: return GemmChoice::Generic;
    }
}

void require_gemm_choice(GemmChoice g, const std::string& who) {
    if (gemm_choice_available(g)) return;
    const Isa isa = nn::detail::gemm_family(g).value_or(Isa::generic);
    throw InputError(fmt::format("{}: the {} GEMM does not run on this CPU{} (use best or eigen)", who,
                                 gemm_choice_name(g),
                                 isa_cap() < isa ? fmt::format(" under ATTN_ISA={}", isa_name(isa_cap())) : ""));
}

namespace nn {

namespace {
std::atomic<int>& current() {
    static std::atomic<int> g{static_cast<int>(resolve_gemm_choice(GemmChoice::Best))};
    return g;
}
}  // namespace

GemmChoice training_gemm() { return static_cast<GemmChoice>(current().load(std::memory_order_relaxed)); }

void set_training_gemm(GemmChoice g) {
    require_gemm_choice(g, "training GEMM");
    current().store(static_cast<int>(resolve_gemm_choice(g)), std::memory_order_relaxed);
}

gemm::StridedFn training_gemm_kernel() {
    // looked up once: what the CPU has and the ATTN_ISA cap do not change while it runs
    static const gemm::StridedFn avx2 = gemm::strided(Isa::avx2), avx512 = gemm::strided(Isa::avx512),
                                 neon = gemm::strided(Isa::neon), generic = gemm::strided(Isa::generic);
    switch (training_gemm()) {
        case GemmChoice::Avx512: return avx512;
        case GemmChoice::Avx2: return avx2;
        case GemmChoice::Neon: return neon;
        case GemmChoice::Generic: return generic;
        case GemmChoice::Best:  // never stored: set_training_gemm resolves it
        case GemmChoice::Eigen: break;
    }
    return nullptr;
}

}  // namespace nn

}  // namespace attn
