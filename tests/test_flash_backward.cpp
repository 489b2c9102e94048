// tests/test_flash_backward.cpp: the tiled backward (attn/cpu/flash_backward.hpp)
// against the readable reference backward (attn/core/attention_backward.hpp),
// element by element, for every kernel this CPU runs; the log-sum-exp the forward
// saves for it; bit-identical gradients at any thread count; O(T) scratch.
#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cpu/flash_backward.hpp"
#include "attn/nn/backend.hpp"
#include "test_util.hpp"

using namespace attn;
using attn::test::randn;
using attn::test::mask_grid;
using attn::test::rising_keys;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Tolerance: |flash - ref| <= rtol (|ref| + M) for every element of dq, dk, dv,
// M the largest |element| of the three reference gradients, rtol = 1e-5. The
// worst scaled error over this file's grid is 2.5e-6 here (AVX-512 Zen 4; run
// with ATTN_TEST_PRINT_WORST=1 to print every case's), and on a failure it is
// printed. Why relative to M and not to each element alone: every gradient
// element is a sum over Tq or Tk terms of mixed signs (dS sums to 0 over each
// row), so an element may cancel to ~0 while the rounding of its terms stays at
// the size of the terms; and a whole tensor may be ~0 (one key: dq = dk = 0 up
// to rounding) while dv is not. The two sides differ in
// summation order (tiles, FMA, a sum of G chunk shares for dQ) and in P: the
// flash side recomputes P = 2^(s2 - L2) with a polynomial exp2 (relative error
// < 2e-7) from L saved in float (rounding ~ 1e-7 |L|; a row with |L2| > 32 gets its
// L recomputed exactly, see the large-score test below), so each weight differs by
// ~1e-6 relative at these sizes (|s| <~ 10: cosine with tau 0.1), and a gradient
// element, a weighted sum, by ~1e-6 of the tensor's scale; 1e-5 leaves 10x room
// while a wrong mask, scale, dropout decision or tile edge gives errors of
// order 1e-1 to 1.
struct Worst {
    double scaled = 0;
    int64_t bad = 0;
};
double max_abs(const Tensor& t) {
    double m = 0;
    for (float x : t.data) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}
Worst compare_grad(const Tensor& got, const Tensor& ref, double rmax, double rtol) {
    Worst w;
    REQUIRE(got.shape == ref.shape);
    for (int64_t n = 0; n < ref.numel(); ++n) {
        const double g = got.data[static_cast<size_t>(n)], r = ref.data[static_cast<size_t>(n)];
        const double e = std::fabs(g - r) / (std::fabs(r) + rmax + 1e-30);
        if (!(e <= rtol)) ++w.bad;  // NaN counts as bad
        w.scaled = std::max(w.scaled, std::isnan(e) ? INFINITY : e);
    }
    return w;
}

void check_grads(const AttentionGrads& got, const AttentionGrads& ref, const std::string& what, double rtol = 1e-5) {
    const double m = std::max({max_abs(ref.dq), max_abs(ref.dk), max_abs(ref.dv)});
    const Worst q = compare_grad(got.dq, ref.dq, m, rtol), k = compare_grad(got.dk, ref.dk, m, rtol),
                v = compare_grad(got.dv, ref.dv, m, rtol);
    if (std::getenv("ATTN_TEST_PRINT_WORST") != nullptr)
        MESSAGE(what << " worst " << q.scaled << " " << k.scaled << " " << v.scaled);
    INFO(what << ": worst scaled error dq " << q.scaled << ", dk " << k.scaled << ", dv " << v.scaled
              << " (tolerance " << rtol << ")");
    CHECK(q.bad == 0);
    CHECK(k.bad == 0);
    CHECK(v.bad == 0);
}

AttentionGrads flash_grads(const std::string& kern, const Tensor& q, const Tensor& k, const Tensor& v, const Mask& m,
                           const AttentionOptions& opt, const Tensor& dout, int threads,
                           FlashBackwardStats* stats = nullptr) {
    Tensor lse;
    const Tensor out = attention_flash_with("auto", q, k, v, m, opt, threads, &lse);
    return attention_flash_backward(q, k, v, out, lse, m, opt, dout, threads, kern, stats);
}

struct Case {
    int64_t B, H, Tq, Tk, Dk, Dv;
};

std::string name_of(const Case& c) {
    return fmt::format("B{} H{} Tq{} Tk{} Dk{} Dv{}", c.B, c.H, c.Tq, c.Tk, c.Dk, c.Dv);
}

// Every mask kind of the forward's tests; batch row 1 of "pad" has no keys at all
// (every row fully masked).
std::vector<std::pair<std::string, Mask>> masks_for(const Case& c, uint64_t seed) {
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? (c.Tk + 1) / 2 : (b == 1 ? 0 : c.Tk));
    return mask_grid(c.B, c.Tq, c.Tk, lengths, seed);
}

}  // namespace

TEST_CASE("flash backward matches the reference backward over shapes, masks, fills and scales for every kernel") {
    // Tq != Tk, Dk != Dv, T not a multiple of any block (32/64 keys, 64 queries),
    // B H below and above the thread count, several key chunks per head.
    const std::vector<Case> shapes = {{1, 1, 1, 1, 4, 4},     {2, 3, 7, 9, 5, 3},      {1, 2, 65, 130, 64, 64},
                                      {3, 1, 100, 37, 16, 24}, {2, 1, 129, 200, 17, 33}};
    uint64_t seed = 1;
    for (const std::string& kern : flash_backward_kernels())
        for (const Case& c : shapes) {
            const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                         v = randn({c.B, c.H, c.Tk, c.Dv}, seed++), dout = randn({c.B, c.H, c.Tq, c.Dv}, seed++);
            for (const auto& [mname, m] : masks_for(c, seed++))
                for (int sc = 0; sc < 3; ++sc)
                    for (float fill : {kNegInf, -1e9f, 0.0f}) {
                        if (fill != kNegInf && sc != 0) continue;  // the finite fills once per mask
                        AttentionOptions opt;
                        opt.fill = fill;
                        if (sc == 1) opt.scale = Scale{ScaleKind::Constant, 0.3f};
                        if (sc == 2) opt.scale = Scale{ScaleKind::Cosine, 0.1f};
                        const std::string what = kern + " " + name_of(c) + " " + mname + " scale " +
                                                 scale_name(opt.scale) + " fill " + std::to_string(fill);
                        check_grads(flash_grads(kern, q, k, v, m, opt, dout, 2),
                                    attention_backward_reference(q, k, v, m, opt, dout), what);
                    }
        }
}

TEST_CASE("flash backward: fully masked rows give zero gradients with fill -inf") {
    const Tensor q = randn({3, 2, 70, 16}, 11), k = randn({3, 2, 150, 16}, 12), v = randn({3, 2, 150, 8}, 13),
                 dout = randn({3, 2, 70, 8}, 14);
    const Mask pad = Mask::key_padding({150, 0, 3});  // batch row 1: every key is padding
    for (const std::string& kern : flash_backward_kernels()) {
        const AttentionGrads g = flash_grads(kern, q, k, v, pad, AttentionOptions{}, dout, 2);
        for (int64_t n = 2 * 70 * 16; n < 4 * 70 * 16; ++n) CHECK(g.dq.data[static_cast<size_t>(n)] == 0.0f);
        for (int64_t n = 2 * 150 * 16; n < 4 * 150 * 16; ++n) CHECK(g.dk.data[static_cast<size_t>(n)] == 0.0f);
        for (int64_t n = 2 * 150 * 8; n < 4 * 150 * 8; ++n) CHECK(g.dv.data[static_cast<size_t>(n)] == 0.0f);
        check_grads(g, attention_backward_reference(q, k, v, pad, AttentionOptions{}, dout), kern + " fully masked");
    }
}

// A query of NaN: its row of weights is NaN, so in the reference's backward its dq row and
// the dk and dv rows of every key it sees are NaN, and the other heads are untouched. Each
// kernel gives the same NaN pattern and the reference's values elsewhere. One exception, under
// the causal mask: the reference's materialised weights are NaN on the masked keys too
// (exp(-inf - NaN), as torch.softmax gives), so its dk and dv rows of keys after the query are
// NaN; the flash kernels never visit those keys and leave them finite. Not compared there.
TEST_CASE("flash backward: a query of NaN gives the reference's NaN gradients and values elsewhere") {
    const int64_t T = 70, Dk = 8, Dv = 6, bad = 23;  // query 23 of head 1
    Tensor q = randn({1, 2, T, Dk}, 15);
    const Tensor k = randn({1, 2, T, Dk}, 16), v = randn({1, 2, T, Dv}, 17), dout = randn({1, 2, T, Dv}, 18);
    for (int64_t d = 0; d < Dk; ++d) q.data[static_cast<size_t>((T + bad) * Dk + d)] = std::nanf("");
    for (const bool causal : {false, true}) {
        const Mask m = causal ? Mask::make_causal() : Mask{};
        const AttentionGrads want = attention_backward_reference(q, k, v, m, AttentionOptions{}, dout);
        int64_t nan_dq = 0, nan_dv = 0;
        for (float x : want.dq.data) nan_dq += std::isnan(x) ? 1 : 0;
        for (float x : want.dv.data) nan_dv += std::isnan(x) ? 1 : 0;
        CHECK(nan_dq == Dk);
        CHECK(nan_dv == T * Dv);
        for (const std::string& kern : flash_backward_kernels()) {
            const AttentionGrads g = flash_grads(kern, q, k, v, m, AttentionOptions{}, dout, 2);
            INFO(kern << " causal " << causal);
            int wrong = 0;
            for (const auto& [got, ref, D] :
                 {std::tuple{&g.dq, &want.dq, Dk}, {&g.dk, &want.dk, Dk}, {&g.dv, &want.dv, Dv}})
                for (size_t e = 0; e < ref->data.size(); ++e) {
                    const auto row = static_cast<int64_t>(e) / D;  // (h, t)
                    if (causal && got != &g.dq && row > T + bad) continue;  // a key after the query (above)
                    const float a = got->data[e], b = ref->data[e];
                    wrong += std::isnan(b) ? (std::isnan(a) ? 0 : 1)
                                           : (std::abs(a - b) <= 1e-4f * (1 + std::abs(b)) ? 0 : 1);
                }
            CHECK(wrong == 0);
        }
    }
}

// As the forward's test of scores rising along the keys (test_flash.cpp): the log-sum-exp
// saved with a lazy reference point gives the reference's gradients.
TEST_CASE("flash backward: scores rising or falling along the keys give the reference gradients") {
    const int64_t Tq = 150, Tk = 333, Dk = 8;
    Tensor q = randn({1, 2, Tq, Dk}, 51);
    const Tensor v = randn({1, 2, Tk, 6}, 53), dout = randn({1, 2, Tq, 6}, 54);
    for (int64_t n = 0; n < 2 * Tq; ++n) q.data[static_cast<size_t>(n * Dk)] = 1.0f;
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 1.0f};
    for (float rate : {0.02f, 0.5f, -0.5f}) {
        const Tensor kr = rising_keys(Tk, Dk, rate, 52);
        for (bool causal : {false, true}) {
            const Mask m = causal ? Mask::make_causal() : Mask{};
            const AttentionGrads want = attention_backward_reference(q, kr, v, m, opt, dout);
            for (const std::string& kern : flash_backward_kernels())
                check_grads(flash_grads(kern, q, kr, v, m, opt, dout, 2), want,
                            kern + " rate " + std::to_string(rate) + (causal ? " causal" : ""));
        }
    }
}

TEST_CASE("flash backward: dropout drops what the forward dropped, with every mask kind") {
    const Case c{2, 2, 45, 77, 12, 10};
    const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, 21), k = randn({c.B, c.H, c.Tk, c.Dk}, 22),
                 v = randn({c.B, c.H, c.Tk, c.Dv}, 23), dout = randn({c.B, c.H, c.Tq, c.Dv}, 24);
    for (const std::string& kern : flash_backward_kernels())
        for (const auto& [mname, m] : masks_for(c, 25))
            for (float fill : {kNegInf, -1e9f}) {
                AttentionOptions opt;
                opt.dropout = 0.3f;
                opt.seed = 99;
                opt.train = true;
                opt.fill = fill;
                const AttentionGrads ref = attention_backward_reference(q, k, v, m, opt, dout);
                check_grads(flash_grads(kern, q, k, v, m, opt, dout, 2), ref, kern + " train " + mname);
                opt.scale = Scale{ScaleKind::Cosine, 0.5f};
                check_grads(flash_grads(kern, q, k, v, m, opt, dout, 2),
                            attention_backward_reference(q, k, v, m, opt, dout), kern + " train cosine " + mname);
            }
}

TEST_CASE("flash backward: bit-identical gradients at 1, 2 and 3 threads") {
    // B H = 1 (16 key chunks, fewer heads than threads) and B H = 8 (more heads than threads)
    const std::vector<Case> shapes = {{1, 1, 300, 1100, 16, 8}, {2, 4, 100, 130, 8, 12}};
    uint64_t seed = 40;
    for (const std::string& kern : flash_backward_kernels())
        for (const Case& c : shapes) {
            const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                         v = randn({c.B, c.H, c.Tk, c.Dv}, seed++), dout = randn({c.B, c.H, c.Tq, c.Dv}, seed++);
            AttentionOptions opt;
            opt.dropout = 0.2f, opt.train = true, opt.seed = 7;
            const Mask m = Mask::make_causal();
            FlashBackwardStats st;
            const AttentionGrads g1 = flash_grads(kern, q, k, v, m, opt, dout, 1, &st);
            INFO(kern << " " << name_of(c) << ": " << st.key_chunks << " key chunks per head");
            if (c.B * c.H == 1) CHECK(st.key_chunks > 1);  // the dQ shares really are summed
            for (int t : {2, 3}) {
                const AttentionGrads gt = flash_grads(kern, q, k, v, m, opt, dout, t);
                CHECK(gt.dq.data == g1.dq.data);
                CHECK(gt.dk.data == g1.dk.data);
                CHECK(gt.dv.data == g1.dv.data);
            }
            check_grads(g1, attention_backward_reference(q, k, v, m, opt, dout), kern + " " + name_of(c));
        }
}

TEST_CASE("flash backward: its scratch grows linearly in T and is far below one (T, T) matrix") {
    // The kernel allocates its scratch once; FlashBackwardStats reports that allocation's size.
    // With B H = 16 there is one key chunk per head at every T, with B H = 1 sixteen once
    // T >= 16 blocks: either way the scratch must double (not quadruple) when T doubles.
    for (const std::string& kern : flash_backward_kernels())
        for (const auto& shape : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 16, 128, 16},
                                          {1, 1, 1024, 8}}) {
            // plain variables: clang 14 refuses structured bindings inside INFO
            const int64_t B = std::get<0>(shape), H = std::get<1>(shape), T0 = std::get<2>(shape),
                          D = std::get<3>(shape);
            std::vector<double> bytes;
            for (int64_t T : {T0, 2 * T0, 4 * T0}) {
                const Tensor q = randn({B, H, T, D}, 1), k = randn({B, H, T, D}, 2), v = randn({B, H, T, D}, 3),
                             dout = randn({B, H, T, D}, 4);
                FlashBackwardStats st;
                flash_grads(kern, q, k, v, Mask::make_causal(), AttentionOptions{}, dout, 2, &st);
                bytes.push_back(static_cast<double>(st.scratch_bytes));
                INFO(kern << " B" << B << " H" << H << " T" << T << ": " << st.scratch_bytes << " bytes");
                CHECK(st.scratch_bytes > 0);
                // below the reference's one (T, T) float matrix per head
                CHECK(static_cast<double>(st.scratch_bytes) < 4.0 * static_cast<double>(B * H * T) * T);
            }
            INFO(kern << " B" << B << " H" << H << ": " << bytes[0] << ", " << bytes[1] << ", " << bytes[2]
                      << " bytes");
            CHECK(bytes[1] <= 2.05 * bytes[0]);
            CHECK(bytes[2] <= 2.05 * bytes[1]);
        }
}

TEST_CASE("flash forward: the saved log-sum-exp is ln sum exp of the reference's masked scores") {
    const Tensor q = randn({3, 2, 70, 16}, 31), k = randn({3, 2, 150, 16}, 32), v = randn({3, 2, 150, 8}, 33);
    const Mask pad = Mask::make_causal().combined(Mask::key_padding({150, 0, 40}));
    for (const std::string& kern : flash_kernels())
        for (float fill : {kNegInf, -1e9f}) {
            AttentionOptions opt;
            opt.fill = fill;
            opt.scale = Scale{ScaleKind::Constant, 0.7f};
            Tensor lse;
            const Tensor out = attention_flash_with(kern, q, k, v, pad, opt, 2, &lse);
            CHECK(out.data == attention_flash_with(kern, q, k, v, pad, opt, 2).data);  // asking changes nothing
            REQUIRE(lse.shape == Shape{3, 2, 70});
            AttentionRecord rec;
            attention_reference(q, k, v, pad, opt, &rec);
            for (int64_t r = 0; r < 3 * 2 * 70; ++r) {
                const float* s = rec.scores_masked.ptr() + r * 150;
                double mx = -INFINITY;
                for (int j = 0; j < 150; ++j) mx = std::max(mx, static_cast<double>(s[j]));
                double want = mx;
                if (std::isfinite(mx)) {
                    double sum = 0;
                    for (int j = 0; j < 150; ++j) sum += std::exp(s[j] - mx);
                    want = mx + std::log(sum);
                }
                const double got = lse.data[static_cast<size_t>(r)];
                INFO(kern << " fill " << fill << " row " << r << ": got " << got << ", want " << want);
                // float rounding of m + log2(l) and of the scores: ~1e-7 of |L|
                if (std::isinf(want)) CHECK(got == want);
                else CHECK(std::fabs(got - want) <= 1e-5 * (1.0 + std::fabs(want)));
            }
        }
}

TEST_CASE("flash backward through the backend table, and its refusals") {
    const Tensor q = randn({1, 2, 20, 8}, 1), k = randn({1, 2, 25, 8}, 2), v = randn({1, 2, 25, 6}, 3),
                 dout = randn({1, 2, 20, 6}, 4);
    const Mask m = Mask::make_causal();
    check_grads(attention_backward(Backend::Flash, q, k, v, m, AttentionOptions{}, dout, nullptr, 2),
                attention_backward_reference(q, k, v, m, AttentionOptions{}, dout), "Backend::Flash");
    const bool bf16_has_backward = backend_info(Backend::FlashBf16).backward != nullptr;
    CHECK(!bf16_has_backward);  // no bf16 backward: the table says so
    Tensor lse;
    const Tensor out = attention_flash_with("auto", q, k, v, m, AttentionOptions{}, 1, &lse);
    CHECK_THROWS_AS(attention_flash_backward(q, k, v, out, lse, m, {}, randn({1, 2, 20, 5}, 5)), ShapeError);
    CHECK_THROWS_AS(attention_flash_backward(q, k, v, out, randn({1, 2, 21}, 6), m, {}, dout), ShapeError);
    CHECK_THROWS_AS(attention_flash_backward(q, k, v, randn({1, 2, 20, 7}, 7), lse, m, {}, dout), ShapeError);
    CHECK_THROWS_AS(attention_flash_backward(q, k, v, out, lse, m, {}, dout, 1, "nope"), InputError);
    // empty sizes: no keys (dq = 0), no queries (dk = dv = 0)
    const Tensor k0({1, 2, 0, 8}), v0({1, 2, 0, 6});
    const AttentionGrads g0 = attention_flash_backward(q, k0, v0, Mask{}, {}, dout, 2);
    CHECK(g0.dq.data == std::vector<float>(g0.dq.data.size(), 0.0f));
    const Tensor q0({1, 2, 0, 8}), d0({1, 2, 0, 6});
    const AttentionGrads g1 = attention_flash_backward(q0, k, v, Mask{}, {}, d0, 2);
    CHECK(g1.dk.data == std::vector<float>(g1.dk.data.size(), 0.0f));
    CHECK(g1.dv.data == std::vector<float>(g1.dv.data.size(), 0.0f));
}

namespace {
bool has_bwd_kernel(const std::string& name) {
    const std::vector<std::string> ks = flash_backward_kernels();
    return std::find(ks.begin(), ks.end(), name) != ks.end();
}
}  // namespace

// The tests above run every kernel of flash_backward_kernels(), which lists only
// those this CPU can run; these report a missing instruction set as a skip.
TEST_CASE("flash backward: a CPU with AVX-512 runs the avx512 kernel, so the tests above cover it") {
#if defined(__x86_64__) && defined(__GNUC__)
    if (attn::isa_cap() >= attn::Isa::avx512 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        CHECK(flash_backward_kernels().front() == "avx512");
        return;
    }
#endif
    attn::test::skip(
        "no AVX-512 (F, DQ, BW, VL) here, or ATTN_ISA below avx512: the avx512 backward kernel is not tested");
}

TEST_CASE("flash backward: a CPU with AVX2 and FMA runs the avx2 kernel, so the tests above cover it") {
#if defined(__x86_64__) && defined(__GNUC__)
    if (attn::isa_cap() >= attn::Isa::avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        CHECK(has_bwd_kernel("avx2"));
        CHECK(has_bwd_kernel("generic"));
        return;
    }
#endif
    attn::test::skip("no AVX2 with FMA here, or ATTN_ISA=generic: the avx2 backward kernel is not tested");
}

TEST_CASE("flash backward: an AArch64 CPU runs the neon kernel, so the tests above cover it") {
#if defined(__aarch64__)
    if (attn::isa_cap() >= attn::Isa::neon) {
        CHECK(flash_backward_kernels().front() == "neon");
        CHECK(has_bwd_kernel("generic"));
        return;
    }
#endif
    attn::test::skip("not an AArch64 CPU, or ATTN_ISA=generic: the neon backward kernel is not tested");
}

namespace {

// ||got - want|| / ||want|| over all elements, want in float64.
double normwise(const Tensor& got, const std::vector<double>& want) {
    double num = 0, den = 0;
    for (size_t n = 0; n < want.size(); ++n) {
        const double d = static_cast<double>(got.data[n]) - want[n];
        num += d * d;
        den += want[n] * want[n];
    }
    return std::sqrt(num) / std::sqrt(den);
}

}  // namespace

TEST_CASE("flash backward: dV keeps float32 precision at large scores (max |score| 300 to 15000), every kernel") {
    // Scores of thousands (scale none, q and k of norm ~100) make every row nearly one-hot,
    // and L = m + ln l of thousands: float32 holds it to half an ulp, 2.4e-4 at 5000, and
    // each weight 2^(s2 - L2) would carry that error (1.6e-4 normwise in dV before the
    // rows' L was refined). The float64 backward of the same float32 inputs is the truth;
    // the flash dV must be within 4x of the reference's float32 error at every size.
    const int64_t B = 1, H = 1, T = 64, Dk = 16;
    const Tensor v = randn({B, H, T, Dk}, 91), dout = randn({B, H, T, Dk}, 92);
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::None};
    const Mask mask = Mask::none();
    for (const float gain : {4.0f, 8.0f, 16.0f, 28.0f}) {
        Tensor q = randn({B, H, T, Dk}, 93), k = randn({B, H, T, Dk}, 94);
        for (float& x : q.data) x *= gain;
        for (float& x : k.data) x *= gain;
        double max_score = 0;
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) {
                double s = 0;
                for (int64_t d = 0; d < Dk; ++d) s += double(q.data[size_t(i * Dk + d)]) * k.data[size_t(j * Dk + d)];
                max_score = std::max(max_score, std::fabs(s));
            }
        // float64 truth from the same float32 inputs
        auto to_d = [](const Tensor& t) { return std::vector<double>(t.data.begin(), t.data.end()); };
        const std::vector<double> qd = to_d(q), kd = to_d(k), vd = to_d(v), dod = to_d(dout);
        std::vector<double> dq64(qd.size()), dk64(kd.size()), dv64(vd.size());
        AttentionSizes n;
        n.B = B, n.H = H, n.Hkv = H, n.Tq = T, n.Tk = T, n.Dk = Dk, n.Dv = Dk;
        attention_backward_reference<double>(dq64.data(), dk64.data(), dv64.data(), qd.data(), kd.data(), vd.data(),
                                             dod.data(), n, mask, opt);
        const double ref_err = normwise(attention_backward_reference(q, k, v, mask, opt, dout).dv, dv64);
        for (const std::string& kern : flash_backward_kernels()) {
            const double flash_err = normwise(flash_grads(kern, q, k, v, mask, opt, dout, 2).dv, dv64);
            INFO(kern << ": max |score| " << max_score << ", normwise dV error: flash " << flash_err << ", reference "
                      << ref_err);
            if (std::getenv("ATTN_TEST_PRINT_WORST") != nullptr)
                MESSAGE(kern << " max|s| " << max_score << " flash " << flash_err << " reference " << ref_err);
            CHECK(flash_err <= 4.0 * std::max(ref_err, 1e-8));
        }
        if (gain == 28.0f) CHECK(max_score >= 5000);
    }
}
