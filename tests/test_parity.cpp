// Parity of every backend with the readable reference, in the manner of ggml's
// test-backend-ops: one table of cases, each named by its vars() string and run
// as a SUBCASE, every backend of the table (attn/nn/backend.hpp) compared with
// attention_reference element by element and by normalised MSE, and every golden
// PyTorch fixture sent through every backend. A backend that cannot run here is
// reported as skipped (ctest shows it), never as passed.
//
// Tolerances, per the precision of a backend's products:
//   fp32  |got - ref| <= 1e-5·max|v| + 1e-5·|ref|, NMSE <= 1e-10. An output is a
//         convex combination of the values; float32 summation in another order
//         (tiles, online rescaling, exp2 instead of exp) moves it by a few ulps per
//         term, ~Tk·6e-8 of max|v| at worst: 1e-5 covers Tk up to ~160 with margin.
//   bf16  3e-2·max|v| + 3e-2·|ref|, NMSE <= 1e-3. Q, K, V and the weights are
//         rounded to 8-bit mantissas (relative 2^-9 each): a score of size s moves
//         by ~s·4e-3, a weight by that times its size, and the rounded weights and
//         values add 2·2^-9 more; with scores of order 3 that is ~1e-2 of max|v|.
//   fp16  1e-2·max|v| + 1e-2·|ref|, NMSE <= 1e-4 (10-bit mantissas, 4x finer).
// Non-finite outputs must sit at the same positions with the same value (NaN,
// +inf or -inf) on both sides.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compare.hpp"
#include "golden.hpp"

using namespace attn;

namespace {

enum class MaskKind { None, Causal, Pad, CausalPad, Dense, DenseBroadcast, PadBool, Additive };

const char* mask_name(MaskKind m) {
    switch (m) {
        case MaskKind::None: return "none";
        case MaskKind::Causal: return "causal";
        case MaskKind::Pad: return "pad";
        case MaskKind::CausalPad: return "causal+pad";
        case MaskKind::Dense: return "dense";
        case MaskKind::DenseBroadcast: return "dense[1,Tq,Tk]";
        case MaskKind::PadBool: return "padbool[B,1,Tk]";
        case MaskKind::Additive: return "additive";
    }
    return "?";
}

struct Case {
    int64_t B, H, Tq, Tk, Dk, Dv;
    MaskKind mask = MaskKind::None;
    Scale scale{};  // 1/sqrt(Dk)
    float fill = -INFINITY;
    float dropout = 0.0f;  // > 0: training mode
    bool nan_key = false;  // a NaN in one key: it must spread to exactly the rows that see it

    std::string vars() const {
        return fmt::format("B={},H={},Tq={},Tk={},Dk={},Dv={},mask={},scale={},fill={},dropout={}{}", B, H, Tq, Tk, Dk,
                           Dv, mask_name(mask), scale_name(scale), fill, dropout, nan_key ? ",nan_key" : "");
    }

    AttentionOptions options() const {
        AttentionOptions o;
        o.scale = scale;
        o.fill = fill;
        o.dropout = dropout;
        o.train = dropout > 0.0f;
        o.seed = 1234;
        return o;
    }

    // Padding lengths run from Tk down, the last batch row 0 keys (a fully masked
    // row: zeros with -inf, uniform with a finite fill). Dense and additive masks are
    // seeded random patterns with some fully masked rows.
    Mask make_mask() const {
        std::vector<int64_t> lengths;
        for (int64_t b = 0; b < B; ++b) lengths.push_back(b == B - 1 && B > 1 ? 0 : Tk - b * Tk / (2 * B));
        Rng rng(77, static_cast<uint64_t>(Tq * 1000 + Tk));
        auto pattern = [&](int64_t batch, int64_t queries) {
            std::vector<uint8_t> a(static_cast<size_t>(batch * queries * Tk));
            for (size_t i = 0; i < a.size(); ++i) a[i] = rng.uniform() < 0.7f ? 1 : 0;
            for (int64_t j = 0; j < Tk; ++j) a[static_cast<size_t>(j)] = 0;  // query 0 of batch 0 sees nothing
            return a;
        };
        switch (mask) {
            case MaskKind::None: return Mask::none();
            case MaskKind::Causal: return Mask::make_causal();
            case MaskKind::Pad: return Mask::key_padding(lengths);
            case MaskKind::CausalPad: return Mask::make_causal().combined(Mask::key_padding(lengths));
            case MaskKind::Dense: return Mask::custom(B, Tq, Tk, pattern(B, Tq));
            case MaskKind::DenseBroadcast: return Mask::custom(1, Tq, Tk, pattern(1, Tq));
            case MaskKind::PadBool: return Mask::key_padding_bool(B, Tk, pattern(B, 1));
            case MaskKind::Additive: {
                // ALiBi-like finite biases, with -inf on a random fifth of the entries
                std::vector<float> add(static_cast<size_t>(B * Tq * Tk));
                for (int64_t x = 0; x < B * Tq * Tk; ++x)
                    add[static_cast<size_t>(x)] = rng.uniform() < 0.2f
                                                      ? -INFINITY
                                                      : -0.25f * static_cast<float>(std::abs(x % Tk - (x / Tk) % Tq));
                return Mask::additive_mask(B, Tq, Tk, std::move(add));
            }
        }
        return Mask::none();
    }
};

Scale scale_of(ScaleKind kind, float value = 1.0f) {
    Scale s;
    s.kind = kind;
    s.value = value;
    return s;
}

// The case table: shapes that are not multiples of any tile (odd T, Tq != Tk,
// Dk != Dv, one query, one key), every mask kind, every scale kind, both fills,
// dropout, a NaN input.
std::vector<Case> cases() {
    std::vector<Case> cs;
    for (MaskKind m : {MaskKind::None, MaskKind::Causal, MaskKind::Pad, MaskKind::CausalPad, MaskKind::Dense,
                       MaskKind::DenseBroadcast, MaskKind::PadBool, MaskKind::Additive}) {
        cs.push_back({2, 3, 37, 37, 16, 16, m});
        cs.push_back({2, 2, 70, 131, 24, 40, m});  // Tq != Tk, Dk != Dv, past one 64/128 tile
        Case finite{2, 2, 33, 65, 8, 8, m};
        finite.fill = -1e9f;
        cs.push_back(finite);
    }
    cs.push_back({1, 1, 1, 1, 4, 4});  // one query, one key
    cs.push_back({1, 2, 1, 200, 64, 64, MaskKind::Pad});
    cs.push_back({3, 1, 129, 129, 64, 32, MaskKind::Causal});
    cs.push_back({1, 1, 5, 300, 3, 5});
    for (const Scale& s : {scale_of(ScaleKind::None), scale_of(ScaleKind::Constant, 0.1f),
                           scale_of(ScaleKind::Cosine, 0.1f), scale_of(ScaleKind::Cosine, 1.0f)}) {
        Case c{2, 2, 40, 50, 16, 16, MaskKind::CausalPad};
        c.scale = s;
        cs.push_back(c);
    }
    for (float p : {0.1f, 0.5f}) {
        Case c{2, 2, 45, 45, 16, 16, MaskKind::Causal};
        c.dropout = p;
        cs.push_back(c);
    }
    Case nan{2, 1, 20, 20, 8, 8, MaskKind::Pad};
    nan.nan_key = true;
    cs.push_back(nan);
    return cs;
}

// The element bound's absolute part per precision, in units of max|v| (see the header).
test::Tolerance tolerance(Precision p, double vmax) {
    switch (p) {
        case Precision::F32: return {1e-5 * vmax, 1e-5, 1e-10};
        case Precision::BF16: return {3e-2 * vmax, 3e-2, 1e-3};
        case Precision::F16: return {1e-2 * vmax, 1e-2, 1e-4};
    }
    return {0, 0, 0};
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float x : t.data)
        if (std::isfinite(x)) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}

// Every case of the table, and every golden fixture, through backend b.
void check_backend(Backend b) {
    const BackendInfo& row = backend_info(b);
    std::string why;
    if (!row.available(&why)) {
        test::skip(std::string(row.name) + ": " + why);
        return;
    }
    int64_t checked = 0;
    for (const Case& c : cases()) {
        SUBCASE(c.vars().c_str()) {
            Tensor q = test::randn({c.B, c.H, c.Tq, c.Dk}, 1), k = test::randn({c.B, c.H, c.Tk, c.Dk}, 2),
                   v = test::randn({c.B, c.H, c.Tk, c.Dv}, 3);
            if (c.nan_key) k.at({0, 0, 3, 1}) = NAN;  // key 3 of batch row 0, inside its padding length
            const Mask mask = c.make_mask();
            const AttentionOptions opt = c.options();
            const Tensor ref = attention_reference(q, k, v, mask, opt);
            const Tensor got = attention(b, q, k, v, mask, opt);
            const std::string err = test::compare(got, ref, tolerance(row.precision, max_abs(v)));
            CHECK_MESSAGE(err.empty(), std::string(row.name) << " on " << c.vars() << ": " << err);
            if (c.nan_key) {  // the NaN reached the reference's output, so the comparison above covered it
                bool any_nan = false;
                for (float x : ref.data) any_nan = any_nan || std::isnan(x);
                CHECK(any_nan);
            }
            ++checked;
        }
    }
    for (const std::string& name : test::golden_names()) {
        SUBCASE(("golden " + name).c_str()) {
            const test::Golden g = test::load_golden(name);
            const Tensor& x = g.dump.tensors.at("x");
            ForwardRecord rec;
            g.mha.forward(x, g.mask, g.opt, &rec, nullptr, b);
            // head_out against PyTorch's, with the backend's tolerance on the values' scale
            const std::string err =
                test::compare(rec.head_out, g.dump.tensors.at("head_out"), tolerance(row.precision, max_abs(rec.V)));
            CHECK_MESSAGE(err.empty(), std::string(row.name) << " on golden " << name << ": " << err);
            const std::string err_out = test::compare(rec.out, g.dump.tensors.at("out"),
                                                      tolerance(row.precision, max_abs(g.dump.tensors.at("out"))));
            CHECK_MESSAGE(err_out.empty(), std::string(row.name) << " on golden " << name << " (out): " << err_out);
            ++checked;
        }
    }
    CHECK(checked > 0);
}

}  // namespace

TEST_CASE("parity: the case table covers every mask kind, scale kind, both fills, dropout and NaN") {
    const auto cs = cases();
    bool masks[8] = {}, scales[4] = {}, finite_fill = false, dropout = false, nan = false, tq_ne_tk = false,
         dk_ne_dv = false;
    for (const Case& c : cs) {
        masks[static_cast<int>(c.mask)] = true;
        scales[static_cast<int>(c.scale.kind)] = true;
        finite_fill |= std::isfinite(c.fill);
        dropout |= c.dropout > 0;
        nan |= c.nan_key;
        tq_ne_tk |= c.Tq != c.Tk;
        dk_ne_dv |= c.Dk != c.Dv;
        const Mask m = c.make_mask();
        CHECK_NOTHROW(m.check(c.B, c.Tq, c.Tk));
    }
    for (bool m : masks) CHECK(m);
    for (bool s : scales) CHECK(s);
    CHECK((finite_fill && dropout && nan && tq_ne_tk && dk_ne_dv));
    CHECK(test::golden_names().size() >= 9);
}

// One test case per row of the backend table, so ctest lists each backend as
// passed or skipped. test_backend.cpp pins the table at 7 rows: a new backend
// adds a row there and a line here.
TEST_CASE("parity: reference against itself (the harness can pass)") { check_backend(Backend::Reference); }
TEST_CASE("parity: flash matches the reference") { check_backend(Backend::Flash); }
TEST_CASE("parity: flash-bf16 matches the reference within bf16 rounding") { check_backend(Backend::FlashBf16); }
TEST_CASE("parity: cuda-naive matches the reference") { check_backend(Backend::CudaNaive); }
TEST_CASE("parity: cuda-flash matches the reference") { check_backend(Backend::CudaFlash); }
TEST_CASE("parity: cuda-flash-f16 matches the reference within fp16 rounding") { check_backend(Backend::CudaFlashF16); }
TEST_CASE("parity: cuda-flash-bf16 matches the reference within bf16 rounding") {
    check_backend(Backend::CudaFlashBf16);
}

TEST_CASE("parity: every CPU flash kernel (ISA variant) of this machine matches the reference") {
    for (const std::string& kernel : flash_kernels()) {
        for (const Case& c : cases()) {
            SUBCASE((kernel + " " + c.vars()).c_str()) {
                Tensor q = test::randn({c.B, c.H, c.Tq, c.Dk}, 4), k = test::randn({c.B, c.H, c.Tk, c.Dk}, 5),
                       v = test::randn({c.B, c.H, c.Tk, c.Dv}, 6);
                if (c.nan_key) k.at({0, 0, 3, 1}) = NAN;
                const Mask mask = c.make_mask();
                const AttentionOptions opt = c.options();
                const std::string err = test::compare(attention_flash_with(kernel, q, k, v, mask, opt),
                                                      attention_reference(q, k, v, mask, opt),
                                                      tolerance(Precision::F32, max_abs(v)));
                CHECK_MESSAGE(err.empty(), kernel << " on " << c.vars() << ": " << err);
            }
        }
    }
}

TEST_CASE("parity: the comparison fails where it must") {
    const Tensor ref = test::randn({1, 1, 4, 8}, 9);
    Tensor got = ref;
    const test::Tolerance t = tolerance(Precision::F32, max_abs(ref));
    CHECK(test::compare(got, ref, t).empty());
    got.data[5] += 1e-3f;  // far beyond 1e-5 of max|v|
    CHECK(!test::compare(got, ref, t).empty());
    got = ref;
    got.data[2] = NAN;  // NaN where the reference has a number
    CHECK(test::compare(got, ref, t).find("non-finite") != std::string::npos);
    Tensor ref_inf = ref;
    ref_inf.data[1] = -INFINITY;
    got = ref_inf;
    got.data[1] = INFINITY;  // the wrong infinity
    CHECK(!test::compare(got, ref_inf, t).empty());
}
