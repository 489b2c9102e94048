// tests/test_flash.cpp: attention_flash against attention_reference, element by element.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/cpu/features.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/core/rng.hpp"
#include "compare.hpp"
#include "test_util.hpp"

using namespace attn;
using attn::test::randn;
using attn::test::mask_grid;
using attn::test::rising_keys;

namespace {

// The truth: attention_reference (Eigen GEMMs, std::exp softmax).
Tensor naive(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask, const AttentionOptions& opt) {
    return attention_reference(q, k, v, mask, opt);
}

// Tolerance: |flash - ref| <= 1e-5 * (|ref| + max|v|) for float32. Flash sums in
// another order (blocks, FMA) and uses a polynomial exp2 (rel. error < 2e-7), so
// each weight differs by ~1e-6 relative; an output element is a weighted mean of
// v, so its error is bounded relative to max|v|, not to itself (it may cancel to ~0).
void check_close(const Tensor& got, const Tensor& ref, const Tensor& v, double rtol, const std::string& what) {
    REQUIRE(got.shape == ref.shape);
    double vmax = 0;
    for (float x : v.data) vmax = std::max(vmax, double(std::fabs(x)));
    int64_t bad = 0;
    double worst = 0;
    for (int64_t n = 0; n < got.numel(); ++n) {
        const double g = got.data[n], r = ref.data[n];
        const double err = std::fabs(g - r) / (std::fabs(r) + vmax);
        if (!(err <= rtol)) ++bad;  // NaN counts as bad
        worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    }
    INFO(what << ": worst scaled error " << worst << ", tolerance " << rtol);
    CHECK(bad == 0);
}

struct Case {
    int64_t B, H, Tq, Tk, Dk, Dv;
};

}  // namespace

TEST_CASE("flash matches the reference on a grid of shapes and masks and scales for every kernel") {
    const std::vector<Case> shapes = {{1, 1, 1, 1, 4, 4},    {2, 3, 7, 7, 5, 3},     {1, 2, 65, 65, 64, 64},
                                      {2, 1, 100, 37, 16, 24}, {1, 1, 33, 130, 64, 8}, {1, 2, 129, 200, 17, 33},
                                      {1, 1, 300, 280, 16, 16}};  // > 256 queries: several blocks of every kernel
    uint64_t seed = 1;
    for (const std::string& kern : flash_kernels())
        for (const Case& c : shapes) {
            const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                         v = randn({c.B, c.H, c.Tk, c.Dv}, seed++);
            std::vector<int64_t> lengths;
            for (int64_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? c.Tk : (c.Tk + 1) / 2);
            for (const auto& [mname, m] : mask_grid(c.B, c.Tq, c.Tk, lengths, seed++))
                for (int sc = 0; sc < 3; ++sc) {
                    AttentionOptions opt;
                    if (sc == 1) opt.scale = Scale{ScaleKind::Constant, 0.3f};
                    if (sc == 2) opt.scale = Scale{ScaleKind::Cosine, 0.1f};
                    const std::string what = kern + " B" + std::to_string(c.B) + " H" + std::to_string(c.H) + " Tq" +
                                             std::to_string(c.Tq) + " Tk" + std::to_string(c.Tk) + " Dk" +
                                             std::to_string(c.Dk) + " Dv" + std::to_string(c.Dv) + " " + mname +
                                             " scale" + std::to_string(sc);
                    check_close(attention_flash_with(kern, q, k, v, m, opt, 2), naive(q, k, v, m, opt), v, 1e-5, what);
                }
        }
}

TEST_CASE("flash: fully masked rows with fill -inf give zeros and with a finite fill uniform weights over all keys") {
    for (const std::string& kern : flash_kernels())
        for (float fill : {-std::numeric_limits<float>::infinity(), -1e9f, 0.0f}) {
            const Tensor q = randn({3, 2, 70, 16}, 11), k = randn({3, 2, 150, 16}, 12), v = randn({3, 2, 150, 8}, 13);
            const Mask pad = Mask::key_padding({150, 0, 3});  // batch row 1: every key is padding
            for (bool causal : {false, true}) {
                const Mask m = causal ? Mask::make_causal().combined(pad) : pad;
                AttentionOptions opt;
                opt.fill = fill;
                const Tensor got = attention_flash_with(kern, q, k, v, m, opt, 2);
                INFO(kern << " fill " << fill << " causal " << causal);
                check_close(got, naive(q, k, v, m, opt), v, 1e-5, "fully masked");
                if (std::isinf(fill))  // batch row 1 is exactly zero
                    for (int64_t n = 2 * 70 * 8; n < 4 * 70 * 8; ++n) CHECK(got.data[n] == 0.0f);
            }
        }
}

// One key per score from 0 down to about -190 nats (-275 in log2 units) below the row's
// largest: the weights run down through float32's subnormal range to 0. Every kernel agrees
// with the reference, and the caller's floating-point controls (x86: MXCSR's control bits;
// the AVX2 kernels set flush-to-zero during a call) are as they were. MXCSR's low six bits
// are sticky exception flags that any arithmetic may raise, so they are left out.
TEST_CASE("flash: weights down to the subnormal range match the reference and leave MXCSR as it was") {
    const int64_t T = 200;
    Tensor q({1, 1, 3, 1}), k({1, 1, T, 1}), v = randn({1, 1, T, 4}, 31);
    for (int64_t i = 0; i < 3; ++i) q.data[i] = 1.0f + 0.25f * static_cast<float>(i);
    for (int64_t j = 0; j < T; ++j) k.data[j] = -0.95f * static_cast<float>((j * 37) % T);  // keys in shuffled order
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 1.0f};
    for (const std::string& kern : flash_kernels()) {
#if defined(__x86_64__)
        const unsigned before = _mm_getcsr() & ~0x3fu;
#endif
        const Tensor got = attention_flash_with(kern, q, k, v, Mask{}, opt, 1);
        INFO(kern);
        check_close(got, naive(q, k, v, Mask{}, opt), v, 1e-5, "subnormal weights");
#if defined(__x86_64__)
        CHECK((_mm_getcsr() & ~0x3fu) == before);
#endif
    }
}

// Scores that climb (or fall) steadily along the keys, by `rate` nats a key: the kernels'
// online softmax moves its reference point only when a block's maximum rises more than a
// margin above it, so slow rises (several blocks between moves), fast ones (every block)
// and falls (odd query blocks sweep the keys last to first, so they see a rise) all run
// (keys from test_util.hpp's rising_keys).

TEST_CASE("flash: scores rising or falling along the keys (the softmax's reference point moving) match the reference") {
    const int64_t Tq = 150, Tk = 333, Dk = 8;
    Tensor q = randn({1, 2, Tq, Dk}, 41);
    for (int64_t n = 0; n < 2 * Tq; ++n) q.data[static_cast<size_t>(n * Dk)] = 1.0f;  // q . k ~ rate j
    const Tensor v = randn({1, 2, Tk, 6}, 42);
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 1.0f};
    for (float rate : {0.02f, 0.06f, 0.5f, -0.5f}) {
        const Tensor k = rising_keys(Tk, Dk, rate, 43);
        for (bool causal : {false, true}) {
            const Mask m = causal ? Mask::make_causal() : Mask{};
            for (const std::string& kern : flash_kernels()) {
                INFO(kern << " rate " << rate << " causal " << causal);
                check_close(attention_flash_with(kern, q, k, v, m, opt, 2), naive(q, k, v, m, opt), v, 1e-5, "rising");
            }
        }
    }
}

namespace {

// The NaN tests below: the rows (flat index n / Dv over batch, heads and queries) of an output
// of width Dv whose every element is NaN, with -1 for a row where only some are; and the
// tolerance elsewhere. compare() (compare.hpp) then asks each kernel for NaN at exactly the
// reference's NaN and |got - ref| <= 1e-4 (1 + |ref|) at the other elements; the normalised MSE
// is left unbounded, as the loops these replaced did.
std::vector<int64_t> nan_rows(const Tensor& t, int64_t Dv) {
    std::vector<int64_t> rows;
    for (int64_t r = 0; r * Dv < t.numel(); ++r) {
        int64_t nans = 0;
        for (int64_t e = 0; e < Dv; ++e) nans += std::isnan(t.data[static_cast<size_t>(r * Dv + e)]) ? 1 : 0;
        if (nans > 0) rows.push_back(nans == Dv ? r : -1);
    }
    return rows;
}
constexpr test::Tolerance kNanCaseTol{1e-4, 1e-4, 1.0};

}  // namespace

// NaN scores in two query rows (from an additive mask) make those rows' outputs NaN, as in
// the reference, and leave every other row as the reference has it. The online softmax's
// bookkeeping is per lane, so a NaN must not reach other rows, nor stop their reference
// points from moving: row 6 alone has scores rising about 140 log2 units per 64 keys (past
// float32's range unless its point moves), and rows 30 and 54 sit in the lanes of row 6 in
// another vector of its group on AVX2 (8 lanes) and AVX-512 (16), their NaN on the last key
// of a block, where it stays in the block's maximum.
TEST_CASE("flash: NaN scores give NaN output rows and leave the other rows as the reference has them") {
    const int64_t Tq = 100, Tk = 200, Dk = 8, Dv = 5, rising_row = 6;
    Tensor q = randn({1, 2, Tq, Dk}, 61);
    for (int64_t n = 0; n < 2 * Tq; ++n) q.data[static_cast<size_t>(n * Dk)] = n % Tq == rising_row ? 1.0f : 0.0f;
    const Tensor k = rising_keys(Tk, Dk, 3.0f, 62), v = randn({1, 2, Tk, Dv}, 63);
    std::vector<float> add(static_cast<size_t>(Tq * Tk), 0.0f);
    for (int64_t r : {30, 54}) add[static_cast<size_t>(r * Tk + 127)] = std::numeric_limits<float>::quiet_NaN();
    const Mask m = Mask::additive_mask(1, Tq, Tk, add);
    AttentionOptions opt;
    opt.scale = Scale{ScaleKind::Constant, 0.5f};
    const Tensor want = naive(q, k, v, m, opt);
    CHECK(nan_rows(want, Dv) == std::vector<int64_t>{30, 54, Tq + 30, Tq + 54});
    for (const std::string& kern : flash_kernels()) {
        INFO(kern);
        const std::string err = test::compare(attention_flash_with(kern, q, k, v, m, opt, 2), want, kNanCaseTol);
        CHECK_MESSAGE(err.empty(), err);
    }
}

// A query of NaN: every score of its row is NaN. The reference, every kernel and every bf16 path
// give that row NaN (as PyTorch does), not the zeros of a fully masked row, and the other rows
// their values.
TEST_CASE("flash: a query of NaN gives a NaN output row on every kernel, as in the reference") {
    const int64_t Tq = 40, Tk = 70, Dk = 8, Dv = 5;
    Tensor q = randn({1, 2, Tq, Dk}, 64);
    const Tensor k = randn({1, 2, Tk, Dk}, 65), v = randn({1, 2, Tk, Dv}, 66);
    for (int64_t d = 0; d < Dk; ++d) q.data[static_cast<size_t>((Tq + 17) * Dk + d)] = std::nanf("");
    for (const bool causal : {false, true}) {
        const Mask m = causal ? Mask::make_causal() : Mask{};
        const Tensor want = naive(q, k, v, m, AttentionOptions{});
        CHECK(nan_rows(want, Dv) == std::vector<int64_t>{Tq + 17});
        for (const std::string& kern : flash_kernels()) {
            INFO(kern << " causal " << causal);
            const std::string err =
                test::compare(attention_flash_with(kern, q, k, v, m, AttentionOptions{}, 2), want, kNanCaseTol);
            CHECK_MESSAGE(err.empty(), err);
        }
        for (const std::string& path : flash_bf16_paths()) {  // bf16 precision: tolerance 2e-2 as above
            INFO("bf16 " << path << " causal " << causal);
            const std::string err = test::compare(attention_flash_bf16_with(path, q, k, v, m, AttentionOptions{}, 2),
                                                  want, test::Tolerance{2e-2, 2e-2, 1.0});
            CHECK_MESSAGE(err.empty(), err);
        }
    }
}

TEST_CASE("flash: dropout in train mode matches the reference decisions and eval mode ignores it") {
    const Tensor q = randn({2, 2, 45, 12}, 21), k = randn({2, 2, 77, 12}, 22), v = randn({2, 2, 77, 10}, 23);
    const Mask m = Mask::make_causal();
    for (const std::string& kern : flash_kernels()) {
        AttentionOptions opt;
        opt.dropout = 0.3f;
        opt.seed = 99;
        opt.train = true;
        check_close(attention_flash_with(kern, q, k, v, m, opt, 2), naive(q, k, v, m, opt), v, 1e-5, kern + " train");
        // The same numbers whatever the thread count (decisions are per element, not per thread).
        CHECK(attention_flash_with(kern, q, k, v, m, opt, 1).data ==
              attention_flash_with(kern, q, k, v, m, opt, 2).data);
        opt.train = false;
        AttentionOptions plain;
        check_close(attention_flash_with(kern, q, k, v, m, opt, 2), naive(q, k, v, m, plain), v, 1e-5, kern + " eval");
    }
}

TEST_CASE("flash: bad shapes and options are InputErrors") {
    const Tensor q = randn({1, 2, 4, 8}, 1), k = randn({1, 2, 5, 8}, 2), v = randn({1, 2, 5, 3}, 3);
    const Tensor kbad = randn({1, 2, 5, 7}, 4), vbad = randn({1, 2, 6, 3}, 5);
    CHECK_THROWS_AS(attention_flash(q, kbad, v, Mask{}, {}), ShapeError);
    CHECK_THROWS_AS(attention_flash(q, k, vbad, Mask{}, {}), ShapeError);
    CHECK_THROWS_AS(attention_flash(q, k, v, Mask::key_padding({1, 2}), {}), ShapeError);
    CHECK_THROWS_AS(attention_flash_with("nope", q, k, v, Mask{}, {}), InputError);
    AttentionOptions opt;
    opt.dropout = 1.0f;
    CHECK_THROWS_AS(attention_flash(q, k, v, Mask{}, opt), InputError);
}

TEST_CASE("flash-bf16 runs on every CPU: the generic path under ATTN_ISA=generic") {
    // attn with the generic kernels only (the cap is read once per process: a child)
    const attn::test::CliResult r =
        attn::test::run_attn("forward --impl flash-bf16 --seq 4", "ATTN_ISA=generic");
    REQUIRE(r.code == 0);
    const attn::test::CliResult v = attn::test::run_attn("--version", "ATTN_ISA=generic");
    REQUIRE(v.code == 0);
    CHECK(v.out.find("flash-bf16 generic") != std::string::npos);
    const std::vector<std::string> paths = flash_bf16_paths();
    REQUIRE(!paths.empty());
    CHECK(paths.back() == "generic");
}

TEST_CASE("flash-bf16 matches the reference within bf16 precision") {
    REQUIRE(flash_bf16_supported());  // the generic path at least
    // Tolerance: Q, K, V and P are rounded to bf16 (8 significant bits, relative
    // error <= 2^-9 each). A score q.k/sqrt(Dk) of N(0,1) data then moves by ~1e-2
    // at most, a weight by ~1% relative, and an output (a weighted mean of v) by
    // ~1% of max|v| (cosine with tau = 0.1 multiplies scores, and their error, by
    // 10). The bound 2e-2 (scaled as in check_close) is twice that; the measured
    // worst over these cases is 5.5e-3 (cosine, tau 0.1). float32 flash passes 1e-5.
    // The last shape's K and V exceed 4 MiB per head: the long-keys bf16 variant.
    const std::vector<Case> shapes = {{1, 1, 1, 1, 4, 4}, {2, 3, 7, 9, 5, 3}, {1, 2, 65, 130, 64, 64},
                                      {1, 1, 100, 37, 17, 33}, {1, 1, 300, 8300, 64, 64}};
    uint64_t seed = 500;
    for (const Case& c : shapes) {
        const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                     v = randn({c.B, c.H, c.Tk, c.Dv}, seed++);
        for (int variant = 0; variant < 5; ++variant) {
            Mask m;
            AttentionOptions opt;
            if (variant == 1) m = Mask::make_causal();
            if (variant == 2) {
                std::vector<int64_t> lengths;
                for (int64_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? 0 : c.Tk / 2 + 1);
                m = Mask::key_padding(lengths);
                opt.fill = -1e9f;
            }
            if (variant == 3) opt.scale = Scale{ScaleKind::Cosine, 0.1f};
            if (variant == 4) m = Mask::make_causal(), opt.train = true, opt.dropout = 0.2f, opt.seed = 5;
            const std::string what = "bf16 Tq" + std::to_string(c.Tq) + " Tk" + std::to_string(c.Tk) + " Dk" +
                                     std::to_string(c.Dk) + " variant " + std::to_string(variant);
            check_close(attention_flash_bf16(q, k, v, m, opt, 2), naive(q, k, v, m, opt), v, 2e-2, what);
        }
    }
}

namespace {

// One bf16 path against the reference on the mask grid of the float32 test, plus
// a fully masked batch row with a finite fill and causal dropout; shapes chosen
// for the AMX tiles' edges: Dk 128 (several 32-dim chunks), Dk 17 and Dv 48 / 33
// (zero-padded to 32), Tq not a multiple of the 32-query block, Tk not a
// multiple of the 64-key block, and more than 4 MiB of K and V per head.
// Tolerance 2e-2 (scaled as in check_close), justified in the test above: bf16
// keeps 8 significant bits, so Q, K, V and P each carry a relative error <= 2^-9.
// Also: the same numbers at 1 and 2 threads.
void check_bf16_path(const std::string& path) {
    const std::vector<Case> shapes = {{1, 1, 1, 1, 4, 4},      {2, 3, 7, 9, 5, 3},      {1, 2, 65, 130, 64, 64},
                                      {2, 1, 100, 37, 17, 33}, {1, 2, 33, 200, 128, 48}, {1, 1, 300, 8300, 64, 64}};
    uint64_t seed = 900;
    double worst_case = 0;
    for (const Case& c : shapes) {
        const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                     v = randn({c.B, c.H, c.Tk, c.Dv}, seed++);
        std::vector<std::pair<std::string, Mask>> masks;
        masks.push_back({"none", Mask::none()});
        masks.push_back({"causal", Mask::make_causal()});
        std::vector<int64_t> lengths;
        for (int64_t b = 0; b < c.B; ++b) lengths.push_back(b == 0 ? c.Tk : (c.Tk + 1) / 2);
        const Mask pad = Mask::key_padding(lengths);
        masks.push_back({"causal+pad", Mask::make_causal().combined(pad)});
        Rng r(seed++);
        std::vector<uint8_t> dense(static_cast<size_t>(c.B * c.Tq * c.Tk));
        for (auto& x : dense) x = r.uniform() < 0.7f;
        masks.push_back({"dense", Mask::custom(c.B, c.Tq, c.Tk, dense)});
        std::vector<float> add(static_cast<size_t>(c.Tq * c.Tk));
        for (auto& x : add) x = r.normal();
        masks.push_back({"additive+causal", Mask::additive_mask(1, c.Tq, c.Tk, add).combined(Mask::make_causal())});
        // the sparse patterns: a band (blocks before it skipped too) and strided + global tokens inside a block
        masks.push_back({"sliding window 40", Mask::sliding_window(40, false)});
        masks.push_back({"strided 7 causal", Mask::strided(7, true)});
        masks.push_back({"global 3 window 20", Mask::global_local(3, 20, false)});
        // per-head boolean and additive parts: each head must read its own rows
        std::vector<uint8_t> heads_allowed(static_cast<size_t>(c.B * c.H * c.Tq * c.Tk));
        std::vector<float> heads_add(heads_allowed.size());
        for (size_t n = 0; n < heads_allowed.size(); ++n)
            heads_allowed[n] = r.uniform() < 0.7f, heads_add[n] = r.normal();
        masks.push_back(
            {"per-head dense+additive", Mask::custom_heads(c.B, c.H, c.Tq, c.Tk, heads_allowed)
                                            .combined(Mask::additive_heads(c.B, c.H, c.Tq, c.Tk, heads_add))});
        for (int variant = 0; variant < static_cast<int>(masks.size()) + 3; ++variant) {
            Mask m;
            AttentionOptions opt;
            std::string name;
            if (variant < static_cast<int>(masks.size())) {
                m = masks[static_cast<size_t>(variant)].second;
                name = masks[static_cast<size_t>(variant)].first;
            } else if (variant == static_cast<int>(masks.size())) {
                std::vector<int64_t> zero_first;  // batch row 0: every key padding, finite fill
                for (int64_t b = 0; b < c.B; ++b) zero_first.push_back(b == 0 ? 0 : c.Tk / 2 + 1);
                m = Mask::key_padding(zero_first);
                opt.fill = -1e9f;
                name = "fully masked row, fill -1e9";
            } else if (variant == static_cast<int>(masks.size()) + 1) {
                opt.scale = Scale{ScaleKind::Cosine, 0.1f};
                name = "cosine tau 0.1";
            } else {
                m = Mask::make_causal(), opt.train = true, opt.dropout = 0.2f, opt.seed = 5;
                name = "causal dropout 0.2";
            }
            const std::string what = path + " B" + std::to_string(c.B) + " H" + std::to_string(c.H) + " Tq" +
                                     std::to_string(c.Tq) + " Tk" + std::to_string(c.Tk) + " Dk" +
                                     std::to_string(c.Dk) + " Dv" + std::to_string(c.Dv) + " " + name;
            const Tensor got = attention_flash_bf16_with(path, q, k, v, m, opt, 2);
            const Tensor ref = naive(q, k, v, m, opt);
            check_close(got, ref, v, 2e-2, what);
            double vmax = 0;
            for (float x : v.data) vmax = std::max(vmax, double(std::fabs(x)));
            for (int64_t n = 0; n < got.numel(); ++n)
                worst_case = std::max(worst_case,
                                      std::fabs(double(got.data[n]) - ref.data[n]) / (std::fabs(ref.data[n]) + vmax));
            if (c.Tk <= 200) {
                const bool same_at_1_thread = attention_flash_bf16_with(path, q, k, v, m, opt, 1).data == got.data;
                INFO(what);
                CHECK(same_at_1_thread);
            }
        }
    }
    MESSAGE("bf16 path " << path << ": worst scaled error " << worst_case << " (tolerance 2e-2)");
}

}  // namespace

TEST_CASE("flash-bf16 on the AMX tile path matches the reference within bf16 precision") {
    const std::vector<std::string> paths = flash_bf16_paths();
    if (std::find(paths.begin(), paths.end(), "amx") == paths.end()) {
        attn::test::skip(
            "no AMX here (CPU, OS permission or build: GCC >= 12 on x86-64 Linux): the tile kernel is not tested");
        return;
    }
    CHECK(flash_bf16_path() == "amx");
    check_bf16_path("amx");
}

// Later keys scoring far above the first ones: key j is scaled by 1 + 6 j / Tk, so the
// row max grows by tens (in log2 units) over the key blocks. The AMX kernel computes P
// against its reference point without a max pass and redoes a row whose weights would
// pass 2^16 (flash_amx.cpp, softmax): this takes that path many times. Tolerance 2e-2 as above.
TEST_CASE("flash-bf16 paths: rows whose max keeps growing along the keys") {
    const std::vector<std::string> paths = flash_bf16_paths();
    REQUIRE(!paths.empty());  // the generic path at least
    const int64_t B = 1, H = 2, Tq = 70, Tk = 1000, D = 64;
    const Tensor q = randn({B, H, Tq, D}, 31);
    Tensor k = randn({B, H, Tk, D}, 32);
    const Tensor v = randn({B, H, Tk, D}, 33);
    for (int64_t bh = 0; bh < B * H; ++bh)
        for (int64_t j = 0; j < Tk; ++j)
            for (int64_t d = 0; d < D; ++d)
                k.data[static_cast<size_t>((bh * Tk + j) * D + d)] *= 1.0f + 6.0f * float(j) / float(Tk);
    for (const std::string& path : paths)
        for (const bool causal : {false, true}) {
            const Mask m = causal ? Mask::make_causal() : Mask::none();
            const Tensor got = attention_flash_bf16_with(path, q, k, v, m, {}, 2);
            check_close(got, naive(q, k, v, m, {}), v, 2e-2,
                        path + (causal ? " causal" : " no mask") + " growing keys");
            const bool same_at_1_thread = attention_flash_bf16_with(path, q, k, v, m, {}, 1).data == got.data;
            CHECK(same_at_1_thread);
        }
}

// Each path by name: the vdpbf16ps kernel, and those that run the float32 kernel of a family
// (AVX-512, AVX2, NEON, generic) on operands rounded to bf16 values, for CPUs without a bf16
// instruction. A path this CPU (or ATTN_ISA) lacks is reported as skipped.
void check_bf16_path_if_here(const std::string& path, const std::string& needs) {
    const std::vector<std::string> paths = flash_bf16_paths();
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
        attn::test::skip("no " + needs + " here (CPU, ATTN_ISA or build): the bf16 path '" + path + "' is not tested");
        return;
    }
    check_bf16_path(path);
}

TEST_CASE("flash-bf16 on the AVX-512 BF16 path matches the reference within bf16 precision") {
    check_bf16_path_if_here("avx512-bf16", "AVX-512 BF16");
}

TEST_CASE(
    "flash-bf16 on the AVX-512 path (float32 on bf16-rounded operands) matches the reference within bf16 precision") {
    check_bf16_path_if_here("avx512", "AVX-512");
}

TEST_CASE(
    "flash-bf16 on the AVX2 path (float32 on bf16-rounded operands) matches the reference within bf16 precision") {
    check_bf16_path_if_here("avx2", "AVX2 with FMA");
}

TEST_CASE(
    "flash-bf16 on the NEON path (float32 on bf16-rounded operands) matches the reference within bf16 precision") {
    check_bf16_path_if_here("neon", "AArch64 NEON");
}

TEST_CASE(
    "flash-bf16 on the generic path (float32 on bf16-rounded operands) matches the reference within bf16 precision") {
    check_bf16_path_if_here("generic", "the plain C++ kernel");
}

TEST_CASE("flash-bf16 paths: the list, the path taken and an unknown path") {
    const std::vector<std::string> paths = flash_bf16_paths();
    CHECK(flash_bf16_supported());
    REQUIRE(!paths.empty());
    CHECK(flash_bf16_path() == paths.front());
    CHECK(paths.back() == "generic");
    const Tensor q = randn({1, 1, 2, 2}, 1);
    CHECK_THROWS_AS(attention_flash_bf16_with("nope", q, q, q, Mask{}, {}), InputError);
}

TEST_CASE("flash: empty sizes give empty or zero outputs like the reference") {
    for (const std::string& kern : flash_kernels()) {
        const Tensor q = randn({1, 2, 3, 4}, 1), k0({1, 2, 0, 4}), v0({1, 2, 0, 5});
        const Tensor out = attention_flash_with(kern, q, k0, v0, Mask{}, {}, 2);  // no keys: zero rows
        CHECK(out.shape == Shape{1, 2, 3, 5});
        CHECK(out.data == attention_reference(q, k0, v0, Mask{}, {}).data);
        const Tensor q0({1, 2, 0, 4}), k = randn({1, 2, 6, 4}, 2), v = randn({1, 2, 6, 5}, 3);
        CHECK(attention_flash_with(kern, q0, k, v, Mask{}, {}, 2).shape == Shape{1, 2, 0, 5});
    }
}

namespace {

// The CPU's instructions, asked here and not through the library's dispatch, under
// the ATTN_ISA cap (a run forced to a narrower family must not expect the wider one).
bool cpu_offers_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
    return attn::isa_cap() >= attn::Isa::avx512 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}
bool cpu_offers_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
    return attn::isa_cap() >= attn::Isa::avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool cpu_offers_neon() {
#if defined(__aarch64__)
    return attn::isa_cap() >= attn::Isa::neon;  // every AArch64 CPU has NEON
#else
    return false;
#endif
}

bool has_kernel(const std::string& name) {
    const std::vector<std::string> ks = flash_kernels();
    return std::find(ks.begin(), ks.end(), name) != ks.end();
}

}  // namespace

// The tests above run every kernel of flash_kernels(), which lists only those this CPU
// can run: without AVX-512 or AVX2 they pass without those kernels. These two report
// that as a skip, and check that a CPU with the instructions is given the kernels.
TEST_CASE("flash: a CPU with AVX-512 runs the avx512 kernels, so the tests above cover them") {
    if (!cpu_offers_avx512()) {
        attn::test::skip(
            "no AVX-512 (F, DQ, BW, VL) here, or ATTN_ISA below avx512: the avx512 kernels are not tested");
        return;
    }
    CHECK(flash_kernels().front() == "avx512");
    CHECK(has_kernel("avx512-long"));
    CHECK(has_kernel("avx512-short"));
}

TEST_CASE("flash: a CPU with AVX2 and FMA runs the avx2 kernel, so the tests above cover it") {
    if (!cpu_offers_avx2_fma()) {
        attn::test::skip("no AVX2 with FMA here, or ATTN_ISA=generic: the avx2 kernel is not tested");
        return;
    }
    CHECK(has_kernel("avx2"));
}

TEST_CASE("flash: an AArch64 CPU runs the neon kernel, so the tests above cover it") {
    if (!cpu_offers_neon()) {
        attn::test::skip("not an AArch64 CPU, or ATTN_ISA=generic: the neon kernel is not tested");
        return;
    }
    CHECK(flash_kernels().front() == "neon");
    CHECK(has_kernel("generic"));
    CHECK(flash_bf16_path() == "neon");  // the bf16 path: the neon kernel on rounded operands
}
