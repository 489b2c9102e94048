// Tests of the CUDA backend (attn/cuda/cuda.hpp).
//
// Part 1 runs in every build: the contract that
// asking for CUDA where there is none is an InputError with a one-line message.
// Part 2 (only with ATTN_CUDA) is the parity suite: every CUDA kernel against the
// CPU reference, element by element and by normalised MSE, on a grid of shapes,
// masks and options. Without a GPU each of its cases is skipped, saying why.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/cuda/cuda.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "compare.hpp"
#include "test_util.hpp"

// ---------------------------------------------------------------------------
// Part 1: every build
TEST_CASE("cuda: without a usable GPU every call is an InputError with the reason on one line") {
    std::string why;
    if (attn::cuda_available(&why)) {
        attn::test::skip("a GPU is usable here: the no-GPU contract is checked on machines without one");
        return;
    }
    CHECK(!why.empty());
    CHECK(why.find('\n') == std::string::npos);
    if (!attn::cuda_compiled()) CHECK(why.find("cmake --preset cuda") != std::string::npos);
    const attn::Tensor q(attn::Shape{1, 1, 2, 4}, 0.5f);
    try {
        (void)attn::attention_cuda(q, q, q, attn::Mask::none(), attn::AttentionOptions{}, attn::CudaKernel::Flash);
        FAIL("attention_cuda returned without a GPU");
    } catch (const attn::InputError& e) {
        CHECK(std::string(e.what()) == why);  // the reason alone: the caller adds its own context
    }
    CHECK_THROWS_AS(attn::cuda_device_name(), attn::InputError);
    CHECK_THROWS_AS(attn::bench_attention_cuda(q, q, q, attn::Mask::none(), attn::AttentionOptions{},
                                               attn::CudaKernel::Naive),
                    attn::InputError);
    CHECK_THROWS_AS(attn::compare_cuda_to_cpu(q, q, q, attn::Mask::none(), attn::AttentionOptions{},
                                              attn::CudaKernel::Naive),
                    attn::InputError);
}

#ifdef ATTN_CUDA
// ---------------------------------------------------------------------------
// Part 2: parity with the CPU reference (CUDA builds only)
namespace attn::cuda_detail {  // test hooks of lib/cuda (cuda_internal.hpp)
void force_tiled_gemm(bool on);
void set_flash_mma_warps(int warps);
}

namespace {

// True when a GPU is usable; otherwise skips the test case and returns false.
bool gpu_or_skip() {
    std::string why;
    if (attn::cuda_available(&why)) return true;
    attn::test::skip(why);
    return false;
}

attn::Tensor random_tensor(attn::Shape s, uint64_t seed) {
    attn::Rng rng(seed);
    attn::Tensor t(std::move(s));
    for (auto& x : t.data) x = rng.normal();
    return t;
}

// Round every value to fp16 (11 significant bits) or bf16 (8), nearest even, so the
// CPU reference sees exactly the inputs the tensor-core kernels compute with.
// (Values here are far from fp16's overflow; its subnormals are treated as normal,
// an error below 1e-7.)
void round_inputs(attn::Tensor& t, attn::CudaKernel k) {
    if (k != attn::CudaKernel::FlashF16 && k != attn::CudaKernel::FlashBf16) return;
    const int drop = k == attn::CudaKernel::FlashF16 ? 13 : 16;  // low mantissa bits removed
    for (auto& x : t.data) {
        if (!std::isfinite(x)) continue;
        uint32_t b;
        std::memcpy(&b, &x, 4);
        const uint32_t half = (1u << (drop - 1)) - 1 + ((b >> drop) & 1u);
        b = (b + half) & ~((1u << drop) - 1);
        std::memcpy(&x, &b, 4);
    }
}

// Tolerances, |gpu - cpu| <= tol + eps·|cpu| element by element, and NMSE bounds:
//  * naive, flash (float32): same inputs, same float32 arithmetic in another order
//    (dot products of <= 256 terms, exp, a sum of <= 300 weights): 1e-5 + 1e-4·|ref|,
//    plus the float32 conditioning of the scores (conditioning_term below). Still fails
//    any wrong mask, scale or dropout, which moves outputs by > 1e-2.
//    On an H200 the largest |gpu - cpu| on this grid was 3.8e-5 (Dk 256, unscaled,
//    max |score| 66); there the CPU reference itself is 1.7e-5 from float64 and the
//    GPU's 6e-7: the term is for the reference's rounding as much as the GPU's.
//  * fp16 / bf16: the reference gets the same rounded inputs (round_inputs), so the
//    only extra error is P = exp(S - m) rounded to 16 bits before P·V: relative
//    2^-11 (fp16) or 2^-8 (bf16) per weight, times |v| <= ~4: 2e-3 resp. 1.5e-2.
attn::test::Tolerance tolerance(attn::CudaKernel k) {
    switch (k) {
        case attn::CudaKernel::FlashF16: return {2e-3, 2e-3, 1e-5};
        case attn::CudaKernel::FlashBf16: return {1.5e-2, 1e-2, 1e-3};
        default: return {1e-5, 1e-4, 1e-10};
    }
}

// A score s of a Dk-term dot product carries a float32 rounding error of up to about
// |s|·√Dk·2^-24 on either side; exp(s - max) turns that into a relative error of the
// weight, and the output (a weighted mean of v) moves by up to that times max|v|. At
// max |score| 66, Dk 256, max|v| 4 this is 2.5e-4; at the default scale (|s| < 5), < 2e-5.
// `rec` is the reference's record of the case (its scaled scores).
double conditioning_term(const attn::AttentionRecord& rec, const attn::Tensor& q, const attn::Tensor& v) {
    double smax = 0, vmax = 0;
    for (float x : rec.scores_scaled.data)
        if (std::isfinite(x)) smax = std::max(smax, double(std::fabs(x)));
    for (float x : v.data) vmax = std::max(vmax, double(std::fabs(x)));
    return smax * std::sqrt(double(q.dim(3))) * std::ldexp(1.0, -24) * vmax;
}

struct Case {
    const char* name;
    int64_t B, H, Tq, Tk, Dk, Dv;
};

// Shapes: degenerate, odd sizes that cross no tile boundary or several, Tq != Tk,
// Dk != Dv, every head-size class of the kernels (32, 64, 128, 256).
const Case kShapes[] = {
    {"1x1", 1, 1, 1, 1, 1, 1},         {"tiny odd", 2, 3, 7, 5, 4, 6},
    {"Tq<Tk", 2, 2, 33, 65, 16, 16},   {"one tile", 1, 2, 64, 64, 64, 64},
    {"ragged", 2, 1, 100, 130, 32, 48}, {"Dk 5 Dv 7", 1, 2, 17, 150, 5, 7},
    {"Tq>Tk", 1, 1, 131, 67, 128, 128}, {"Dk 256", 1, 1, 40, 70, 256, 200},
};

bool kernel_supports(attn::CudaKernel k, const Case& c) {
    const int64_t d = std::max(c.Dk, c.Dv);
    if (k == attn::CudaKernel::Flash) return d <= 256;
    if (k == attn::CudaKernel::FlashF16 || k == attn::CudaKernel::FlashBf16) return d <= 128;
    return true;
}

// Masks for batch B over (Tq, Tk): none, causal, key padding (one row of length 0:
// fully masked), causal + padding, a random boolean mask, an additive mask.
std::vector<std::pair<std::string, attn::Mask>> masks_for(const Case& c) {
    std::vector<std::pair<std::string, attn::Mask>> m;
    m.emplace_back("none", attn::Mask::none());
    m.emplace_back("causal", attn::Mask::make_causal());
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < c.B; ++b) lens.push_back(b == 0 ? c.Tk : (b == 1 ? 0 : c.Tk / 2));
    if (c.B == 1) lens[0] = (c.Tk + 1) / 2;
    m.emplace_back("padding", attn::Mask::key_padding(lens));
    m.emplace_back("causal+padding", attn::Mask::make_causal().combined(attn::Mask::key_padding(lens)));
    attn::Rng rng(99);
    std::vector<uint8_t> allowed(static_cast<size_t>(c.B * c.Tq * c.Tk));
    for (auto& a : allowed) a = rng.uniform() < 0.7f ? 1 : 0;
    m.emplace_back("dense", attn::Mask::custom(c.B, c.Tq, c.Tk, allowed));
    std::vector<float> add(static_cast<size_t>(c.Tq * c.Tk));
    for (auto& a : add) a = rng.uniform(-2.0f, 2.0f);
    m.emplace_back("additive (broadcast over batch)", attn::Mask::additive_mask(1, c.Tq, c.Tk, add));
    return m;
}

struct OptCase {
    const char* name;
    attn::AttentionOptions opt;
};

std::vector<OptCase> options_grid() {
    std::vector<OptCase> o;
    o.push_back({"default", attn::AttentionOptions{}});
    attn::AttentionOptions finite;
    finite.fill = -1e9f;  // fully masked rows become uniform, as PyTorch
    o.push_back({"fill -1e9", finite});
    attn::AttentionOptions zero_fill;
    zero_fill.fill = 0.0f;  // masked keys still take part with score 0
    o.push_back({"fill 0", zero_fill});
    attn::AttentionOptions drop;
    drop.train = true;
    drop.dropout = 0.3f;
    drop.seed = 1234;
    o.push_back({"dropout 0.3", drop});
    attn::AttentionOptions cosine;
    cosine.scale = attn::Scale{attn::ScaleKind::Cosine};
    o.push_back({"cosine", cosine});
    attn::AttentionOptions noscale;
    noscale.scale = attn::Scale{attn::ScaleKind::None};
    o.push_back({"scale none", noscale});
    return o;
}

void parity_for(attn::CudaKernel kernel) {
    const attn::test::Tolerance tol = tolerance(kernel);
    int checked = 0;
    double worst_abs = 0, worst_share = 0;  // largest |diff|, largest |diff| / bound
    for (const Case& c : kShapes) {
        if (!kernel_supports(kernel, c)) continue;
        attn::Tensor q = random_tensor({c.B, c.H, c.Tq, c.Dk}, 1);
        attn::Tensor k = random_tensor({c.B, c.H, c.Tk, c.Dk}, 2);
        attn::Tensor v = random_tensor({c.B, c.H, c.Tk, c.Dv}, 3);
        round_inputs(q, kernel);
        round_inputs(k, kernel);
        round_inputs(v, kernel);
        for (const auto& [mname, mask] : masks_for(c)) {
            for (const OptCase& oc : options_grid()) {
                attn::AttentionRecord rec;
                const attn::Tensor ref = attn::attention_reference(q, k, v, mask, oc.opt, &rec);
                const attn::Tensor got = attn::attention_cuda(q, k, v, mask, oc.opt, kernel);
                attn::test::Tolerance t = tol;
                t.abs += conditioning_term(rec, q, v);
                t.nmse *= (t.abs / tol.abs) * (t.abs / tol.abs);  // a mean of squared errors: the bound squared
                const std::string err = attn::test::compare(got, ref, t);
                INFO(std::string(attn::cuda_kernel_name(kernel)) << ", shape " << std::string(c.name) << " (B " << c.B
                                                                 << " H " << c.H << " Tq " << c.Tq << " Tk " << c.Tk
                                                                 << " Dk " << c.Dk << " Dv " << c.Dv << "), mask "
                                                                 << mname << ", " << std::string(oc.name));
                CHECK_MESSAGE(err.empty(), err);
                ++checked;
                for (size_t n = 0; n < ref.data.size(); ++n) {
                    const double r = ref.data[n], d = std::fabs(double(got.data[n]) - r);
                    if (!std::isfinite(r) || !std::isfinite(d)) continue;
                    worst_abs = std::max(worst_abs, d);
                    worst_share = std::max(worst_share, d / (t.abs + t.rel * std::fabs(r)));
                }
            }
        }
    }
    CHECK(checked > 100);
    // the figures behind the tolerances, measured (docs/cuda.md quotes them)
    MESSAGE(std::string(attn::cuda_kernel_name(kernel)) << ": " << checked << " cases, worst |gpu - cpu| " << worst_abs
                                           << ", worst use of the bound " << 100.0 * worst_share << "%");
}

}  // namespace

TEST_CASE("cuda parity: cuda-naive matches the CPU reference on the grid") {
    if (!gpu_or_skip()) return;
    parity_for(attn::CudaKernel::Naive);
}

TEST_CASE("cuda parity: cuda-naive on the tiled GEMM kernel (the path without cuBLAS) matches too") {
    if (!gpu_or_skip()) return;
    struct Forced {
        Forced() { attn::cuda_detail::force_tiled_gemm(true); }
        ~Forced() { attn::cuda_detail::force_tiled_gemm(false); }
    } forced;
    parity_for(attn::CudaKernel::Naive);
}

TEST_CASE("cuda parity: cuda-flash (float32) matches the CPU reference on the grid") {
    if (!gpu_or_skip()) return;
    parity_for(attn::CudaKernel::Flash);
}

TEST_CASE("cuda parity: cuda-flash-f16 matches the CPU reference on fp16-rounded inputs") {
    if (!gpu_or_skip()) return;
    parity_for(attn::CudaKernel::FlashF16);
}

TEST_CASE("cuda parity: cuda-flash-bf16 matches the CPU reference on bf16-rounded inputs") {
    if (!gpu_or_skip()) return;
    parity_for(attn::CudaKernel::FlashBf16);
}

TEST_CASE("cuda parity: the 8-warp (128-row) tensor-core variants match too") {
    if (!gpu_or_skip()) return;
    struct Warps8 {
        Warps8() { attn::cuda_detail::set_flash_mma_warps(8); }
        ~Warps8() { attn::cuda_detail::set_flash_mma_warps(4); }
    } w8;
    parity_for(attn::CudaKernel::FlashF16);
    parity_for(attn::CudaKernel::FlashBf16);
}

TEST_CASE("cuda parity: the naive path's record equals the reference's, intermediate by intermediate") {
    if (!gpu_or_skip()) return;
    const attn::Tensor q = random_tensor({2, 2, 9, 11}, 5), k = random_tensor({2, 2, 11, 11}, 6),
                       v = random_tensor({2, 2, 11, 3}, 7);
    // -inf fill: masked scores are -inf on both sides (non-finite entries must agree);
    // one batch row fully masked (length 0): weights all zero
    const attn::Mask mask = attn::Mask::make_causal().combined(attn::Mask::key_padding({11, 0}));
    attn::AttentionOptions opt;
    opt.train = true;
    opt.dropout = 0.25f;
    opt.seed = 42;
    attn::AttentionRecord rc, rg;
    const attn::Tensor out_c = attn::attention_reference(q, k, v, mask, opt, &rc);
    const attn::Tensor out_g = attn::attention_cuda(q, k, v, mask, opt, attn::CudaKernel::Naive, &rg);
    const attn::test::Tolerance t = tolerance(attn::CudaKernel::Naive);
    CHECK_MESSAGE(attn::test::compare(rg.scores_raw, rc.scores_raw, t).empty(), "scores_raw");
    CHECK_MESSAGE(attn::test::compare(rg.scores_scaled, rc.scores_scaled, t).empty(), "scores_scaled");
    CHECK_MESSAGE(attn::test::compare(rg.scores_masked, rc.scores_masked, t).empty(), "scores_masked");
    CHECK_MESSAGE(attn::test::compare(rg.weights, rc.weights, t).empty(), "weights");
    CHECK_MESSAGE(attn::test::compare(rg.weights_dropped, rc.weights_dropped, t).empty(), "weights_dropped");
    CHECK_MESSAGE(attn::test::compare(out_g, out_c, t).empty(), "output");
    // dropout: the GPU drops exactly the weights the CPU drops (same counter hash)
    int64_t dropped = 0;
    for (size_t x = 0; x < rc.weights.data.size(); ++x) {
        if (rc.weights.data[x] == 0.0f) continue;
        const bool cpu_drop = rc.weights_dropped.data[x] == 0.0f, gpu_drop = rg.weights_dropped.data[x] == 0.0f;
        CHECK(cpu_drop == gpu_drop);
        dropped += cpu_drop ? 1 : 0;
    }
    CHECK(dropped > 0);
}

TEST_CASE("cuda parity: NaN in one key spreads to exactly the rows that may attend to it") {
    if (!gpu_or_skip()) return;
    attn::Tensor q = random_tensor({2, 1, 20, 8}, 8), k = random_tensor({2, 1, 20, 8}, 9),
                 v = random_tensor({2, 1, 20, 8}, 10);
    k.at({0, 0, 3, 2}) = NAN;  // key 3 of batch row 0
    k.at({1, 0, 3, 2}) = NAN;  // key 3 of batch row 1 (masked away there by length 2)
    for (attn::CudaKernel kern : attn::all_cuda_kernels()) {
        for (const attn::Mask& mask :
             {attn::Mask::none(), attn::Mask::make_causal(), attn::Mask::key_padding({20, 2})}) {
            const attn::Tensor ref = attn::attention_reference(q, k, v, mask, attn::AttentionOptions{});
            const attn::Tensor got = attn::attention_cuda(q, k, v, mask, attn::AttentionOptions{}, kern);
            int64_t nan_rows = 0;
            for (float x : ref.data) nan_rows += std::isnan(x) ? 1 : 0;
            CHECK(nan_rows > 0);
            attn::test::Tolerance t = tolerance(kern);
            t.abs *= 50;  // inputs are not rounded here; only the NaN pattern is the point
            t.rel *= 50;
            t.nmse = 1;
            INFO(std::string(attn::cuda_kernel_name(kern)) << ", mask " << mask.describe());
            const std::string err = attn::test::compare(got, ref, t);
            CHECK_MESSAGE(err.empty(), err);
        }
    }
}

TEST_CASE("cuda parity: a query of NaN gives a NaN row, not the zeros of a fully masked row") {
    if (!gpu_or_skip()) return;
    attn::Tensor q = random_tensor({1, 2, 20, 8}, 14);
    const attn::Tensor k = random_tensor({1, 2, 20, 8}, 15), v = random_tensor({1, 2, 20, 8}, 16);
    for (int64_t d = 0; d < 8; ++d) q.at({0, 1, 5, d}) = NAN;
    for (attn::CudaKernel kern : attn::all_cuda_kernels()) {
        for (const attn::Mask& mask : {attn::Mask::none(), attn::Mask::make_causal()}) {
            const attn::Tensor got = attn::attention_cuda(q, k, v, mask, attn::AttentionOptions{}, kern);
            INFO(std::string(attn::cuda_kernel_name(kern)) << ", mask " << mask.describe());
            for (int64_t h = 0; h < 2; ++h)
                for (int64_t i = 0; i < 20; ++i)
                    for (int64_t e = 0; e < 8; ++e) CHECK(std::isnan(got.at({0, h, i, e})) == (h == 1 && i == 5));
        }
    }
}

TEST_CASE("cuda parity: compare_cuda_to_cpu reports a small difference, and flash refuses to record") {
    if (!gpu_or_skip()) return;
    const attn::Tensor q = random_tensor({1, 2, 50, 32}, 11), k = random_tensor({1, 2, 60, 32}, 12),
                       v = random_tensor({1, 2, 60, 32}, 13);
    const attn::CudaComparison c = attn::compare_cuda_to_cpu(q, k, v, attn::Mask::make_causal(),
                                                             attn::AttentionOptions{}, attn::CudaKernel::Flash);
    CHECK(c.max_abs_diff < 1e-4);
    CHECK(c.max_abs_diff > 0.0);  // different summation order: exact equality would be a surprise
    CHECK(c.nonfinite_mismatches == 0);
    CHECK(c.nmse < 1e-10);
    CHECK(!c.device.empty());
    attn::AttentionRecord rec;
    CHECK_THROWS_AS(attn::attention_cuda(q, k, v, attn::Mask::none(), attn::AttentionOptions{},
                                         attn::CudaKernel::Flash, &rec),
                    attn::InputError);
    // bad shapes are the same ShapeError as on the CPU
    const attn::Tensor k_bad = random_tensor({1, 2, 60, 31}, 14);
    CHECK_THROWS_AS(attn::attention_cuda(q, k_bad, v, attn::Mask::none(), attn::AttentionOptions{},
                                         attn::CudaKernel::Naive),
                    attn::ShapeError);
    // head sizes beyond a kernel's limit: an InputError naming the kernel
    const attn::Tensor big = random_tensor({1, 1, 4, 300}, 15);
    CHECK_THROWS_AS(attn::attention_cuda(big, big, big, attn::Mask::none(), attn::AttentionOptions{},
                                         attn::CudaKernel::Flash),
                    attn::InputError);
}

TEST_CASE("cuda parity: benchmark timing is positive and the FLOP count matches the shape") {
    if (!gpu_or_skip()) return;
    const attn::Tensor q = random_tensor({1, 4, 256, 64}, 16);
    for (attn::CudaKernel kern : attn::all_cuda_kernels()) {
        const attn::CudaBenchResult r =
            attn::bench_attention_cuda(q, q, q, attn::Mask::none(), attn::AttentionOptions{}, kern, 3, 1);
        CHECK(r.reps == 3);
        CHECK(r.min_ms > 0.0);
        CHECK(r.min_ms <= r.mean_ms);
        CHECK(r.mean_ms <= r.max_ms);
        CHECK(r.min_ms <= r.median_ms);
        CHECK(r.median_ms <= r.max_ms);
        CHECK(r.flops == doctest::Approx(4.0 * 256 * 256 * 2 * 128));
    }
}
#endif  // ATTN_CUDA
