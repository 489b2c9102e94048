// packed_linear.cpp: the stack's projections on transposed, packed or bf16 weights (see
// attn/nn/packed_linear.hpp).
#include "attn/nn/packed_linear.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/nn/fast_ops.hpp"
#include "gemm.hpp"

namespace attn {

void apply_activation(float* y, const float* x, int64_t n, MlpActivation a) {
    switch (a) {
        case MlpActivation::None:
            if (y != x) std::copy(x, x + n, y);
            return;
        case MlpActivation::GeluErf: return nn::gelu_erf_forward_fast(y, x, n, 1);
        case MlpActivation::GeluTanh: return nn::activation_forward_fast(y, x, n, /*relu=*/false, 1);
        case MlpActivation::Relu: return nn::activation_forward_fast(y, x, n, /*relu=*/true, 1);
    }
}

// float -> bfloat16 bits, round to nearest even (what vcvtneps2bf16 does; weights are finite)
static uint32_t bf16_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

PackedWeightBf16 PackedWeightBf16::pack(const Tensor& Wt) {
    PackedWeightBf16 p;
    p.n_in = Wt.dim(0);
    p.n_out = Wt.dim(1);
    p.kp = (p.n_in + 31) / 32 * 16;  // pairs, whole AMX tiles of 32 k (zeros past n_in)
    const int64_t strips = (p.n_out + 31) / 32;
    p.pairs.assign(static_cast<size_t>(strips * p.kp * 32), 0u);
    for (int64_t k = 0; k < p.n_in; ++k)
        for (int64_t j = 0; j < p.n_out; ++j)
            p.pairs[static_cast<size_t>(((j / 32) * p.kp + k / 2) * 32 + j % 32)] |=
                bf16_bits(Wt.data[static_cast<size_t>(k * p.n_out + j)]) << (16 * (k % 2));
    return p;
}

bool gemm_bf16_available() { return true; }  // the widened pairs run on every family, generic included

// The projections' work split: pieces of 96 rows x 128 columns of out (N, n_out), shared by
// the threads; fn(r0, r1, c0, c1) computes one, then the activation runs on it while it is in
// cache. Each element is computed the same way whatever piece holds it, so any split and
// thread count give the same numbers. Pieces go down a column first: consecutive pieces use
// the same 128 columns of the weight (192 KiB at 384 inputs, 768 KiB at 1536), which stay in
// L2 while the rows go by; across a row first, the whole weight (2.4 MB for the feed-forward)
// came in again for every 96 rows. At batch 32 (736 rows) that was 8% of the encoder's time.
template <class Fn>
static void gemm_pieces(float* out, int64_t N, int64_t n_out, int threads, MlpActivation act, Fn&& fn) {
    constexpr int64_t kRowPiece = 96, kColPiece = 128;
    const int64_t rp = (N + kRowPiece - 1) / kRowPiece, cp = (n_out + kColPiece - 1) / kColPiece;
    parallel_for(rp * cp, threads, [&](int64_t t, int) {
        const int64_t r0 = (t % rp) * kRowPiece, r1 = std::min(N, r0 + kRowPiece);
        const int64_t c0 = (t / rp) * kColPiece, c1 = std::min(n_out, c0 + kColPiece);
        fn(r0, r1, c0, c1);
        if (act != MlpActivation::None)
            for (int64_t r = r0; r < r1; ++r) {
                float* row = out + r * n_out + c0;
                apply_activation(row, row, c1 - c0, act);
            }
    });
}

std::string gemm_kernel_name(GemmChoice which, bool bf16, bool amx, const std::string& who) {
    if (bf16)
        return amx && cpu_amx_bf16_usable() ? "amx-bf16"
               : gemm::bf16_dot_available() ? "avx512-bf16"
                                            : fmt::format("{}-widened-bf16", isa_name(gemm::best()));
    require_gemm_choice(which, who);
    const std::optional<Isa> isa = nn::detail::gemm_family(which);
    return isa ? std::string(isa_name(*isa)) : "eigen";
}

bool gemm_bf16(float* out, const float* x, const PackedWeightBf16& w, const float* b, int64_t N, int threads,
               MlpActivation act, bool amx, std::vector<uint16_t>* scratch) {
    if (w.pairs.empty()) return false;
    amx = amx && cpu_amx_bf16_usable();
    const bool dot = gemm::bf16_dot_available();  // vdpbf16ps; else the pairs widened by shifts
    const gemm::StripsPairsFn widened = gemm::strips_widened(gemm::best());
    // x rounded to bf16 pairs once (rows padded to whole 32-row AMX blocks: zeros past N,
    // the only rows not overwritten), then the pieces
    std::vector<uint16_t> own;
    std::vector<uint16_t>& xb = scratch != nullptr ? *scratch : own;
    const int64_t rows_padded = (N + 31) / 32 * 32, row = 2 * w.kp;
    xb.resize(static_cast<size_t>(rows_padded * row));
    std::fill(xb.begin() + N * row, xb.end(), uint16_t{0});
    constexpr int64_t kRowPiece = 96;
    parallel_for((N + kRowPiece - 1) / kRowPiece, threads, [&](int64_t t, int) {
        const int64_t r0 = t * kRowPiece, r1 = std::min(N, r0 + kRowPiece);
        if (dot)
            gemm::rows_to_bf16(xb.data() + r0 * row, x + r0 * w.n_in, r1 - r0, w.n_in, w.kp);
        else
            gemm::rows_to_bf16_widened(xb.data() + r0 * row, x + r0 * w.n_in, r1 - r0, w.n_in, w.kp);
    });
    const auto* xp = reinterpret_cast<const uint32_t*>(xb.data());
    gemm_pieces(out, N, w.n_out, threads, act, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        if (amx)
            gemm::strips_amx(out, xp, w.pairs.data(), b, w.kp, w.n_out, N, r0, r1, c0, c1);
        else if (dot)
            gemm::strips_bf16(out, xp, w.pairs.data(), b, w.kp, w.n_out, r0, r1, c0, c1);
        else
            widened(out, xp, w.pairs.data(), b, w.kp, w.n_out, r0, r1, c0, c1);
    });
    return true;
}

PackedWeight PackedWeight::pack(const Tensor& Wt) {
    PackedWeight p;
    p.n_in = Wt.dim(0);
    p.n_out = Wt.dim(1);
    p.strips = Tensor({(p.n_out + gemm::kStrip - 1) / gemm::kStrip, p.n_in, gemm::kStrip});
    gemm::pack_strips(p.strips.ptr(), Wt.ptr(), p.n_in, p.n_out);
    return p;
}

// The packed kernel of a choice (lib/nn's one dispatcher: gemm.hpp), null where it does not run
// here (or for Eigen).
static gemm::StripsFn strips_kernel(GemmChoice which) {
    const std::optional<Isa> isa = nn::detail::gemm_family(which);
    return isa ? gemm::strips(*isa) : nullptr;
}

bool gemm_packed_available(GemmChoice which) { return strips_kernel(which) != nullptr; }

bool gemm_packed(float* out, const float* x, const PackedWeight& w, const float* b, int64_t N, int threads,
                 MlpActivation act, GemmChoice which) {
    const gemm::StripsFn kernel = strips_kernel(which);
    if (w.strips.data.empty() || kernel == nullptr) return false;
    gemm_pieces(out, N, w.n_out, threads, act, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        kernel(out, x, w.strips.ptr(), b, w.n_in, w.n_out, r0, r1, c0, c1);
    });
    return true;
}

void gemm_wt(float* out, const float* x, const float* Wt, const float* b, int64_t N, int64_t n_in, int64_t n_out,
             int threads, MlpActivation act) {
    // out (N, n_out) = x (N, n_in) . Wt (n_in, n_out) + b, in blocks of 128 output columns;
    // with an activation, each block goes through it right after its bias, while it is in cache
    using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Strided = Eigen::OuterStride<>;
    constexpr int64_t kBlock = 128;
    const int64_t blocks = (n_out + kBlock - 1) / kBlock;
    parallel_for(blocks, threads, [&](int64_t blk, int) {
        const int64_t c0 = blk * kBlock, cw = std::min(kBlock, n_out - c0);
        Eigen::Map<const MatRM> xm(x, N, n_in);
        Eigen::Map<const MatRM, 0, Strided> wm(Wt + c0, n_in, cw, Strided(n_out));
        Eigen::Map<MatRM, 0, Strided> ym(out + c0, N, cw, Strided(n_out));
        ym.noalias() = xm * wm;
        if (b != nullptr) ym.rowwise() += Eigen::Map<const Eigen::Matrix<float, 1, Eigen::Dynamic>>(b + c0, cw);
        if (act != MlpActivation::None)
            for (int64_t r = 0; r < N; ++r) {
                float* row = out + r * n_out + c0;
                apply_activation(row, row, cw, act);
            }
    });
}

}  // namespace attn
