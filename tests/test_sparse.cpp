// tests/test_sparse.cpp: the sparse masks (sliding window, strided, global + local:
// Mask::sliding_window, strided, global_local) against a predicate written here from
// their definitions; the tiled forward and backward with them against the reference,
// element by element, for every kernel this CPU runs; the tile tests the kernels
// skip by (MaskRow::any_allowed, key_begin/key_end, query_begin/query_end) never
// reject an allowed pair; the FLOP count counts only the allowed pairs.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/io/dump.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cpu/flash_backward.hpp"
#include "test_util.hpp"

using namespace attn;
using attn::test::randn;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The definitions, written out once more on (i, j): the truth for the masks.
using Pred = std::function<bool(int64_t, int64_t)>;

struct Kind {
    std::string name;
    Mask mask;
    Pred pred;
};

std::vector<Kind> kinds() {
    std::vector<Kind> ks;
    for (int64_t w : {1, 4, 7, 33}) {
        ks.push_back({fmt::format("window-causal {}", w), Mask::sliding_window(w, true),
                      [w](int64_t i, int64_t j) { return j <= i && j > i - w; }});
        ks.push_back({fmt::format("window {}", w), Mask::sliding_window(w, false),
                      [w](int64_t i, int64_t j) { return std::abs(i - j) <= w / 2; }});
    }
    for (int64_t s : {1, 3, 16, 40}) {
        const auto strided = [s](int64_t i, int64_t j) { return std::abs(i - j) < s || (i - j) % s == 0; };
        ks.push_back({fmt::format("strided {}", s), Mask::strided(s, false), strided});
        ks.push_back({fmt::format("strided-causal {}", s), Mask::strided(s, true),
                      [strided](int64_t i, int64_t j) { return j <= i && strided(i, j); }});
    }
    for (const std::pair<int64_t, int64_t>& gw : {std::pair<int64_t, int64_t>{1, 4}, {3, 0}, {5, 20}, {70, 8}}) {
        const int64_t g = gw.first, w = gw.second;  // no structured binding: clang 14 cannot capture one
        const auto gl = [g, w](int64_t i, int64_t j) { return i < g || j < g || std::abs(i - j) <= w / 2; };
        ks.push_back({fmt::format("global-local {},{}", g, w), Mask::global_local(g, w, false), gl});
        ks.push_back({fmt::format("global-local-causal {},{}", g, w), Mask::global_local(g, w, true),
                      [gl](int64_t i, int64_t j) { return j <= i && gl(i, j); }});
    }
    return ks;
}

// The same mask as a dense boolean [1, Tq, Tk] built from the predicate.
Mask dense_of(const Pred& p, int64_t Tq, int64_t Tk) {
    std::vector<uint8_t> a(static_cast<size_t>(Tq * Tk));
    for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = 0; j < Tk; ++j) a[static_cast<size_t>(i * Tk + j)] = p(i, j) ? 1 : 0;
    return Mask::custom(1, Tq, Tk, a);
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float x : t.data) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}

// |got - ref| <= rtol (|ref| + scale) element by element; scale = max|v| for an
// output, max over the three reference gradients for a gradient. The same rule
// and tolerance as tests/test_flash.cpp and test_flash_backward.cpp (1e-5: the
// tiled side sums in another order and uses a polynomial exp2, ~1e-6 per weight;
// a wrong mask element changes an output by ~1e-1).
int64_t count_bad(const Tensor& got, const Tensor& ref, double scale, double rtol, double* worst) {
    REQUIRE(got.shape == ref.shape);
    int64_t bad = 0;
    for (size_t n = 0; n < ref.data.size(); ++n) {
        const double e = std::fabs(double(got.data[n]) - ref.data[n]) / (std::fabs(ref.data[n]) + scale + 1e-30);
        if (!(e <= rtol)) ++bad;
        *worst = std::max(*worst, std::isnan(e) ? INFINITY : e);
    }
    return bad;
}

}  // namespace

TEST_CASE("sparse: every kind's MaskRow rule is its definition, and its counts and skip tests agree") {
    for (const Kind& kd : kinds())
        for (const int64_t T : {1, 9, 130}) {
            const MaskRow row = kd.mask.row(0, T);
            for (int64_t i = 0; i < T; ++i) {
                int64_t n = 0;
                for (int64_t j = 0; j < T; ++j) {
                    const bool want = kd.pred(i, j);
                    n += want ? 1 : 0;
                    if (row.allowed(i, j) != want) {
                        INFO(kd.name << " T " << T << " i " << i << " j " << j << " want " << want);
                        CHECK(row.allowed(i, j) == want);
                    }
                    // no allowed pair outside the ranges the kernels loop over
                    if (want) {
                        CHECK(j >= row.key_begin(i));
                        CHECK(j < row.key_end(i));
                        CHECK(i >= row.query_begin(j));
                        CHECK(i < row.query_end(j, T));
                    }
                }
                INFO(kd.name << " T " << T << " i " << i);
                CHECK(row.allowed_count(i) == n);
            }
            // any_allowed is exact on tiles, tile_all_allowed never claims a masked pair
            Rng r(static_cast<uint64_t>(T) * 7 + kd.name.size());
            for (int t = 0; t < 300; ++t) {
                const int64_t i_lo = static_cast<int64_t>(r.uniform() * T),
                              j_lo = static_cast<int64_t>(r.uniform() * T);
                const int64_t i_hi = std::min<int64_t>(T - 1, i_lo + static_cast<int64_t>(r.uniform() * 40));
                const int64_t j_hi = std::min<int64_t>(T - 1, j_lo + static_cast<int64_t>(r.uniform() * 40));
                bool any = false, all = true;
                for (int64_t i = i_lo; i <= i_hi; ++i)
                    for (int64_t j = j_lo; j <= j_hi; ++j) {
                        any = any || kd.pred(i, j);
                        all = all && kd.pred(i, j);
                    }
                INFO(kd.name << " tile [" << i_lo << ", " << i_hi << "] x [" << j_lo << ", " << j_hi << "]");
                CHECK(row.any_allowed(i_lo, i_hi, j_lo, j_hi) == any);
                if (row.tile_all_allowed(i_lo, i_hi, j_lo, j_hi)) CHECK(all);
            }
        }
}

TEST_CASE("sparse: the FLOP count counts only the allowed pairs") {
    for (const Kind& kd : kinds()) {
        const int64_t T = 100;
        double pairs = 0;
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) pairs += kd.pred(i, j) ? 1 : 0;
        INFO(kd.name);
        CHECK(attention_flops(2, 3, T, T, 8, 4, kd.mask) == pairs * 2 * 3 * 2.0 * (8 + 4));
    }
    // at length: a causal window of 256 over 65536 tokens is 256/65536·2 of the causal count, in closed form
    const int64_t T = 65536, w = 256;
    const double want = static_cast<double>(w * (w + 1) / 2 + (T - w) * w);
    CHECK(attention_flops(1, 1, T, T, 1, 0, Mask::sliding_window(w, true)) == want * 2.0);
}

TEST_CASE("sparse: the reference with a sparse mask is the reference with its dense copy, bit for bit") {
    const Tensor q = randn({2, 2, 50, 8}, 1), k = randn({2, 2, 50, 8}, 2), v = randn({2, 2, 50, 6}, 3);
    for (const Kind& kd : kinds()) {
        const Tensor a = attention_reference(q, k, v, kd.mask, {}),
                     b = attention_reference(q, k, v, dense_of(kd.pred, 50, 50), {});
        INFO(kd.name);
        CHECK(a.data == b.data);
    }
}

TEST_CASE("sparse: the tiled forward and backward match the reference for every kind, kernel and fill") {
    // T not a multiple of any block and above the 128-key / 256-query blocks, so blocks are
    // skipped before, inside and after the band; Tq != Tk for the rectangular case.
    struct Case {
        int64_t B, H, Tq, Tk, Dk, Dv;
    };
    const std::vector<Case> cases = {{1, 2, 300, 300, 16, 8}, {2, 1, 77, 77, 5, 3}, {1, 1, 520, 520, 32, 32}};
    uint64_t seed = 10;
    for (const Case& c : cases) {
        const Tensor q = randn({c.B, c.H, c.Tq, c.Dk}, seed++), k = randn({c.B, c.H, c.Tk, c.Dk}, seed++),
                     v = randn({c.B, c.H, c.Tk, c.Dv}, seed++), dout = randn({c.B, c.H, c.Tq, c.Dv}, seed++);
        for (const Kind& kd : kinds())
            for (float fill : {kNegInf, -1e9f, 0.0f}) {
                AttentionOptions opt;
                opt.fill = fill;
                const Tensor ref = attention_reference(q, k, v, kd.mask, opt);
                for (const std::string& kern : flash_kernels()) {
                    double worst = 0;
                    const int64_t bad =
                        count_bad(attention_flash_with(kern, q, k, v, kd.mask, opt, 2), ref, max_abs(v), 1e-5, &worst);
                    INFO("forward " << kern << " " << kd.name << " T " << c.Tq << " fill " << fill << " worst "
                                    << worst);
                    CHECK(bad == 0);
                }
                const AttentionGrads gref = attention_backward_reference(q, k, v, kd.mask, opt, dout);
                const double gs = std::max({max_abs(gref.dq), max_abs(gref.dk), max_abs(gref.dv)});
                for (const std::string& kern : flash_backward_kernels()) {
                    Tensor lse;
                    const Tensor out = attention_flash_with("auto", q, k, v, kd.mask, opt, 2, &lse);
                    const AttentionGrads g = attention_flash_backward(q, k, v, out, lse, kd.mask, opt, dout, 2, kern);
                    double worst = 0;
                    const int64_t bad = count_bad(g.dq, gref.dq, gs, 1e-5, &worst) +
                                        count_bad(g.dk, gref.dk, gs, 1e-5, &worst) +
                                        count_bad(g.dv, gref.dv, gs, 1e-5, &worst);
                    INFO("backward " << kern << " " << kd.name << " T " << c.Tq << " fill " << fill << " worst "
                                     << worst);
                    CHECK(bad == 0);
                }
            }
    }
}

TEST_CASE("sparse: a sparse mask combines with key padding, not with another sparse mask, and bad sizes throw") {
    const Mask m = Mask::sliding_window(4, true).combined(Mask::key_padding({5}));
    const MaskRow row = m.row(0, 10);
    for (int64_t i = 0; i < 10; ++i)
        for (int64_t j = 0; j < 10; ++j) CHECK(row.allowed(i, j) == (j <= i && j > i - 4 && j < 5));
    CHECK(m.describe() == "causal + sliding window 4 + key padding (lengths 5)");
    CHECK_THROWS_AS(Mask::sliding_window(4, false).combined(Mask::strided(3, false)), InputError);
    CHECK_THROWS_AS(Mask::sliding_window(0, false), InputError);
    CHECK_THROWS_AS(Mask::strided(0, true), InputError);
    CHECK_THROWS_AS(Mask::global_local(-1, 4, false), InputError);
    CHECK_FALSE(Mask::strided(2, false).is_none());
}

TEST_CASE("attn forward --window: the sliding window on top of the mask, in the trace and the dump") {
    using attn::test::run_attn;
    // causal: the query and the W-1 keys before it; the trace names the window
    const auto r = run_attn("forward --seq 8 --heads 2 --d-model 8 --mask causal --window 3 --trace");
    CHECK(r.code == 0);
    CHECK(r.out.find("window") != std::string::npos);
    // the mask in the dump is the causal window, and the tiled kernel gives the same output
    const std::string pid = std::to_string(static_cast<long>(::getpid()));
    const std::string ref = "/tmp/attn_window_ref_" + pid + ".json", fl = "/tmp/attn_window_flash_" + pid + ".json";
    REQUIRE(run_attn("forward --batch 1 --seq 8 --heads 2 --d-model 8 --mask causal --window 3 --dump " + ref).code ==
            0);
    REQUIRE(
        run_attn("forward --batch 1 --seq 8 --heads 2 --d-model 8 --mask causal --window 3 --impl flash --dump " + fl)
            .code == 0);
    const attn::Dump d = attn::read_dump_file(ref), f = attn::read_dump_file(fl);
    CHECK(d.config["window"] == 3);
    const attn::Tensor& m = d.tensors.at("mask");
    REQUIRE(m.numel() == 64);
    int wrong = 0;
    for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 8; ++k) {
            const bool want = k <= i && i - k < 3;
            wrong += m.data[static_cast<size_t>(i * 8 + k)] != (want ? 1.0f : 0.0f);
        }
    CHECK(wrong == 0);
    // same inputs and weights (same seed): the outputs agree to float32 rounding (sums of 3 terms)
    const attn::Tensor& a = d.tensors.at("out");
    const attn::Tensor& b = f.tensors.at("out");
    REQUIRE(a.numel() == b.numel());
    double diff = 0;
    for (size_t i = 0; i < a.data.size(); ++i) diff = std::max(diff, double(std::fabs(a.data[i] - b.data[i])));
    CHECK(diff < 1e-5);
    std::remove(ref.c_str());
    std::remove(fl.c_str());
    // refusals name the option
    const auto bad = run_attn("forward --seq 8 --window 0");
    CHECK(bad.code == 2);
    CHECK(bad.out.find("--window") != std::string::npos);
    const auto two = run_attn("forward --seq 8 --mask strided:2 --window 3");
    CHECK(two.code == 2);
    CHECK(two.out.find("--window") != std::string::npos);
}
