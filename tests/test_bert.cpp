// Tests of the BERT encoder: its pieces (LayerNorm, GELU), determinism,
// padding invariance with and without the key-padding mask, bad input, and
// parity with sentence-transformers on the fixture sentences
// (tests/fixtures/model/encoder.json, made by scripts/make-model-fixtures.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/model/bert.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/core/rng.hpp"
#include "test_util.hpp"

using attn::BertModel;
using attn::Tensor;

namespace {

const std::string kModelDir = std::string(ATTN_SOURCE_DIR) + "/data/models/all-MiniLM-L6-v2";

const BertModel& real_model() {
    static const BertModel m = BertModel::load(attn::locate_model(kModelDir));
    return m;
}

// A small random BERT: quick, and padding invariance holds for any weights.
attn::BertConfig small_config() {
    attn::BertConfig c;
    c.vocab_size = 50;
    c.hidden = 32;
    c.layers = 2;
    c.heads = 4;
    c.intermediate = 64;
    c.max_position = 40;
    return c;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

// Largest |a - b| between the real-token rows of sentence b of a batch output
// and the same sentence run alone.
double max_token_diff(const attn::BertOutput& batch, int64_t b, const attn::BertOutput& alone) {
    const int64_t T = batch.hidden.dim(1), D = batch.hidden.dim(2), len = alone.lengths[0];
    double worst = 0;
    for (int64_t t = 0; t < len; ++t)
        for (int64_t d = 0; d < D; ++d)
            worst = std::max(worst,
                             static_cast<double>(std::fabs(batch.hidden.data[static_cast<size_t>((b * T + t) * D + d)] -
                                                           alone.hidden.data[static_cast<size_t>(t * D + d)])));
    return worst;
}

void check_padding_invariance(const BertModel& m, const std::vector<std::vector<int32_t>>& batch, double tol) {
    attn::BertOptions masked;
    const attn::BertOutput together = m.forward(batch, masked);
    attn::BertOptions unmasked;
    unmasked.key_padding_mask = false;
    const attn::BertOutput together_nomask = m.forward(batch, unmasked);
    double worst = 0, worst_nomask = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
        const attn::BertOutput alone = m.forward({batch[b]}, masked);
        worst = std::max(worst, max_token_diff(together, static_cast<int64_t>(b), alone));
        worst_nomask = std::max(worst_nomask, max_token_diff(together_nomask, static_cast<int64_t>(b), alone));
        // the padded keys of a padded row get exactly zero weight in every layer and head
        for (const Tensor& w : together.attentions) {
            const int64_t H = w.dim(1), T = w.dim(2);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t i = 0; i < T; ++i)
                    for (int64_t j = alone.lengths[0]; j < T; ++j)
                        REQUIRE(w.data[static_cast<size_t>(((static_cast<int64_t>(b) * H + h) * T + i) * T + j)] ==
                                0.0f);
        }
    }
    MESSAGE("padding invariance: max |batch - alone| = " << worst << " with the key mask, " << worst_nomask
                                                         << " without");
    CHECK(worst <= tol);
    CHECK(worst_nomask > 1e-3);  // without the mask, padding leaks into the real tokens
}

}  // namespace

TEST_CASE("bert: LayerNorm (lib/nn's, in place, BERT's eps 1e-12) normalises each row, then scales and shifts") {
    std::vector<float> x{1, 2, 3, 4, 10, 10, 10, 10};
    const float g[4] = {1, 1, 2, 2}, b[4] = {0, 0, 0, 1};
    float mean[2], rstd[2];
    attn::nn::layernorm_forward_fast(x.data(), mean, rstd, x.data(), g, b, 2, 4, 1, 1e-12f);
    const float s = 1.0f / std::sqrt(1.25f);  // var of 1..4 is 1.25
    CHECK(x[0] == doctest::Approx(-1.5f * s));
    CHECK(x[3] == doctest::Approx(2 * 1.5f * s + 1));
    CHECK(x[4] == 0.0f);  // a constant row has no variance: all (x - mean) = 0
    CHECK(x[7] == 1.0f);
}

TEST_CASE("bert: the encoder's erf GELU (lib/nn's) agrees with std::erf to float rounding") {
    std::vector<float> x;
    for (float v = -10; v <= 10; v += 0.01f) x.push_back(v);
    std::vector<float> y = x;
    attn::nn::gelu_erf_forward_fast(y.data(), y.data(), static_cast<int64_t>(y.size()), 1);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double ref = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
        worst = std::max(worst, std::fabs(y[i] - ref) / std::max(1.0, std::fabs(ref)));
    }
    // ~1e-6 relative: a few float ulps (the erf is Eigen's rational approximation for float)
    CHECK(worst < 2e-6);
}

TEST_CASE("bert: a random model is deterministic per seed and independent of --threads") {
    const BertModel a = BertModel::random(small_config(), 7);
    const BertModel b = BertModel::random(small_config(), 7);
    const BertModel c = BertModel::random(small_config(), 8);
    CHECK(a.stack.tok_emb.data == b.stack.tok_emb.data);
    CHECK(a.stack.tok_emb.data != c.stack.tok_emb.data);
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 3}};
    attn::BertOptions one, four;
    four.threads = 4;
    const attn::BertOutput o1 = a.forward(ids, one), o4 = a.forward(ids, four);
    CHECK(o1.hidden.data == o4.hidden.data);
    CHECK(o1.sentence.data == o4.sentence.data);
    REQUIRE(o1.attentions.size() == 2);
    CHECK(o1.attentions[0].shape == attn::Shape{3, 4, 6, 6});
    for (int64_t b = 0; b < 3; ++b) {  // sentence vectors have unit length
        double ss = 0;
        for (int64_t d = 0; d < 32; ++d) ss += std::pow(o1.sentence.data[static_cast<size_t>(b * 32 + d)], 2);
        CHECK(ss == doctest::Approx(1.0).epsilon(1e-5));
    }
}

// Largest |a - b| over two tensors of the same shape.
double largest_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape == b.shape);
    double worst = 0;
    for (size_t k = 0; k < a.data.size(); ++k)
        worst = std::max(worst, static_cast<double>(std::fabs(a.data[k] - b.data[k])));
    return worst;
}

TEST_CASE("bert: the fused bias + GELU of gemm_wt equals the GEMM followed by the erf GELU") {
    // 300 output columns: two whole 128-column blocks and a partial one of 44
    const int64_t N = 7, n_in = 33, n_out = 300;
    std::vector<float> x(static_cast<size_t>(N * n_in)), wt(static_cast<size_t>(n_in * n_out)),
        b(static_cast<size_t>(n_out));
    attn::Rng rng(5, 1);
    for (float& v : x) v = rng.normal();
    for (float& v : wt) v = 0.3f * rng.normal();
    for (float& v : b) v = rng.normal();
    std::vector<float> fused(static_cast<size_t>(N * n_out)), apart(fused.size()), fused4(fused.size());
    attn::gemm_wt(fused.data(), x.data(), wt.data(), b.data(), N, n_in, n_out, 1, attn::MlpActivation::GeluErf);
    attn::gemm_wt(fused4.data(), x.data(), wt.data(), b.data(), N, n_in, n_out, 4, attn::MlpActivation::GeluErf);
    attn::gemm_wt(apart.data(), x.data(), wt.data(), b.data(), N, n_in, n_out, 1);
    attn::nn::gelu_erf_forward_fast(apart.data(), apart.data(), N * n_out, 1);
    CHECK(fused == fused4);  // the same for any thread count
    double worst = 0;
    for (size_t k = 0; k < fused.size(); ++k)
        worst = std::max(worst, std::fabs(static_cast<double>(fused[k]) - apart[k]) /
                                    std::max(1.0, std::fabs(static_cast<double>(apart[k]))));
    // the same products; the row kernels give each element the same bits wherever it lies, but
    // without them (ATTN_ISA=generic) the GELU of a block's row may take Eigen's scalar erf for a
    // tail where the whole-array pass took its vector one: both within a few ulps of erf (see the
    // test above)
    CHECK(worst <= 4e-7);
}

namespace {
// Random operands of a linear layer's GEMM, x (N, n_in) and wt (n_in, n_out) ~ N(0, 1) and
// N(0, 0.1^2), b (n_out) ~ N(0, 1), from Rng(seed, n_out)
struct GemmOperands {
    Tensor x, wt, b;
};
GemmOperands gemm_operands(uint64_t seed, int64_t N, int64_t n_in, int64_t n_out) {
    GemmOperands o{Tensor({N, n_in}), Tensor({n_in, n_out}), Tensor({n_out})};
    attn::Rng rng(seed, static_cast<uint64_t>(n_out));
    for (float& v : o.x.data) v = rng.normal();
    for (float& v : o.wt.data) v = 0.1f * rng.normal();
    for (float& v : o.b.data) v = rng.normal();
    return o;
}
}  // namespace

namespace {
// Every packed float32 GEMM, the fused-multiply-add ones (the same bits) before the generic one.
const attn::GemmChoice kPackedGemms[] = {attn::GemmChoice::Avx512, attn::GemmChoice::Avx2, attn::GemmChoice::Neon,
                                       attn::GemmChoice::Generic};
// The float32 GEMM GemmChoice::Best runs here: the widest packed kernel, else Eigen.
std::string best_gemm_name() {
    if (attn::gemm_packed_available(attn::GemmChoice::Avx512)) return "avx512";
    if (attn::gemm_packed_available(attn::GemmChoice::Avx2)) return "avx2";
    if (attn::gemm_packed_available(attn::GemmChoice::Best)) return "neon";  // AArch64
    return "eigen";
}
}  // namespace

TEST_CASE(
    "bert: each packed GEMM (AVX-512, AVX2, NEON, generic) matches Eigen's gemm_wt element by element, the FMA ones "
    "each other bit for bit") {
    // shapes with row tails (not a multiple of the 12-row or 6-row tile or the 96-row piece)
    // and column tails (not a multiple of the 32-column strip, nor of its 16-column half)
    int ran = 0;
    std::vector<Tensor> first;  // the first kernel's outputs, per shape and gelu
    for (const attn::GemmChoice which : kPackedGemms) {
        if (!attn::gemm_packed_available(which)) {
            attn::test::skip(std::string("the ") + attn::gemm_choice_name(which) +
                             " GEMM: this CPU (or ATTN_ISA) does not run it");
            continue;
        }
        ++ran;
        const std::string kernel = attn::gemm_choice_name(which);
        CAPTURE(kernel);
        size_t case_no = 0;
        for (const auto& dims :
             std::vector<std::array<int64_t, 3>>{{7, 33, 300}, {101, 64, 96}, {200, 384, 1152}, {13, 20, 40}}) {
            const int64_t N = dims[0], n_in = dims[1], n_out = dims[2];
            CAPTURE(N);
            CAPTURE(n_out);
            const auto [x, wt, b] = gemm_operands(9, N, n_in, n_out);
            const attn::PackedWeight pw = attn::PackedWeight::pack(wt);
            for (const bool gelu : {false, true}) {
                const attn::MlpActivation act = gelu ? attn::MlpActivation::GeluErf : attn::MlpActivation::None;
                Tensor ref({N, n_out}), got({N, n_out}), got3({N, n_out});
                attn::gemm_wt(ref.ptr(), x.ptr(), wt.ptr(), b.ptr(), N, n_in, n_out, 1, act);
                REQUIRE(attn::gemm_packed(got.ptr(), x.ptr(), pw, b.ptr(), N, 1, act, which));
                REQUIRE(attn::gemm_packed(got3.ptr(), x.ptr(), pw, b.ptr(), N, 3, act, which));
                CHECK(got.data == got3.data);  // any thread count, the same numbers
                // every kernel sums b + x(i,0) w(0,j) + ... in ascending k with one FMA per term
                // (the generic one: a multiply, then an add): AVX2, AVX-512 and NEON give the same bits
                if (which != attn::GemmChoice::Generic) {
                    if (ran == 1) first.push_back(got);
                    else CHECK(got.data == first[case_no].data);
                }
                ++case_no;
                // both sum n_in products in float32, in different orders: within
                // (n_in + 1) * 2^-24 * sum_k |x_k w_k| (+ |b|), a forward-error bound of either order
                // (the + 1 covers the generic kernel's rounded products)
                double worst = 0;
                for (int64_t i = 0; i < N; ++i)
                    for (int64_t j = 0; j < n_out; ++j) {
                        double mag = std::fabs(b.data[static_cast<size_t>(j)]);
                        for (int64_t k = 0; k < n_in; ++k)
                            mag += std::fabs(static_cast<double>(x.data[static_cast<size_t>(i * n_in + k)]) *
                                             wt.data[static_cast<size_t>(k * n_out + j)]);
                        const size_t e = static_cast<size_t>(i * n_out + j);
                        worst = std::max(worst, std::fabs(static_cast<double>(got.data[e]) - ref.data[e]) /
                                                    (static_cast<double>(n_in + 1) * 0x1p-24 * mag + 1e-30));
                    }
                MESSAGE(std::string(attn::gemm_choice_name(which))
                        << " packed GEMM vs Eigen, N=" << N << " n_out=" << n_out << std::string(gelu ? " +GELU" : "")
                        << ": worst |diff| / (n_in 2^-24 sum|x w|) = " << worst);
                CHECK(worst <= 1.0);
            }
        }
    }
    CHECK(ran >= 1);  // the generic kernel at least
}

namespace {
// float -> the float of its bfloat16 rounding (nearest even), as vcvtneps2bf16
float bf16_round(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
}
}  // namespace

TEST_CASE(
    "bert: the bf16 GEMM (AMX tiles, AVX-512 BF16 or widened pairs) against double sums of the bf16-rounded operands") {
    REQUIRE(attn::gemm_bf16_available());  // every CPU: the widened pairs at least
    attn::BertOptions amx_opt;
    amx_opt.bf16_weights = true;
    const bool have_amx = attn::bert_gemm_path(amx_opt) == "amx-bf16";
    if (!have_amx)
        MESSAGE("no usable AMX here: only the " << attn::bert_gemm_path(amx_opt)
                                                << " kernel is tested (the AMX one is skipped)");
    // row tails (not whole 12-row tiles, 32-row AMX blocks or 96-row pieces), column tails
    // (not whole 32-column strips), k tails (n_in not a multiple of 32, odd)
    for (const auto& dims :
         std::vector<std::array<int64_t, 3>>{{7, 33, 300}, {101, 64, 96}, {200, 384, 1152}, {45, 1536, 40}}) {
        const int64_t N = dims[0], n_in = dims[1], n_out = dims[2];
        CAPTURE(N);
        CAPTURE(n_in);
        CAPTURE(n_out);
        const auto [x, wt, b] = gemm_operands(21, N, n_in, n_out);
        const attn::PackedWeightBf16 pw = attn::PackedWeightBf16::pack(wt);
        for (const bool amx : {false, true}) {
            if (amx && !have_amx) continue;
            CAPTURE(amx);
            Tensor got({N, n_out}), got3({N, n_out});
            REQUIRE(attn::gemm_bf16(got.ptr(), x.ptr(), pw, b.ptr(), N, 1, attn::MlpActivation::None, amx));
            REQUIRE(attn::gemm_bf16(got3.ptr(), x.ptr(), pw, b.ptr(), N, 3, attn::MlpActivation::None, amx));
            CHECK(got.data == got3.data);  // any thread count, the same numbers
            // the products of bf16 numbers are exact in float32; the kernels only reorder and
            // round the float32 sum of n_in of them (+ b): within (n_in + 1) 2^-24 sum|x w| (+|b|)
            double worst = 0;
            for (int64_t i = 0; i < N; ++i)
                for (int64_t j = 0; j < n_out; ++j) {
                    double ref = b.data[static_cast<size_t>(j)], mag = std::fabs(ref);
                    for (int64_t k = 0; k < n_in; ++k) {
                        const double t = static_cast<double>(bf16_round(x.data[static_cast<size_t>(i * n_in + k)])) *
                                         bf16_round(wt.data[static_cast<size_t>(k * n_out + j)]);
                        ref += t;
                        mag += std::fabs(t);
                    }
                    const double err = std::fabs(got.data[static_cast<size_t>(i * n_out + j)] - ref);
                    worst = std::max(worst, err / (static_cast<double>(n_in + 1) * 0x1p-24 * mag + 1e-30));
                }
            MESSAGE("bf16 GEMM (" << std::string(amx ? "AMX" : attn::bert_gemm_path(amx_opt)) << "), N=" << N
                                  << " n_in=" << n_in << " n_out=" << n_out
                                  << ": worst |diff| / ((n_in + 1) 2^-24 sum|x w|) = " << worst);
            CHECK(worst <= 1.0);
        }
    }
}

TEST_CASE("bert: bf16 weights stay close to float32 and give the same numbers at any thread count") {
    BertModel m = BertModel::random(small_config(), 19);
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 15, 16, 17, 18, 3}};
    attn::BertOptions f32, h, h3;
    f32.record_attention = false;
    h = f32;
    h.bf16_weights = true;
    h3 = h;
    h3.threads = 3;
    REQUIRE(attn::gemm_bf16_available());  // every CPU: the widened pairs at least
    CHECK_THROWS_AS(m.forward(ids, h), attn::InputError);  // prepare_bf16() not called yet
    m.prepare_bf16();
    const attn::BertOutput a = m.forward(ids, f32), b = m.forward(ids, h), b3 = m.forward(ids, h3);
    CHECK(b.gemm_path == attn::bert_gemm_path(h));
    CHECK(b.sentence.data == b3.sentence.data);
    double min_cos = 1;
    for (int64_t s = 0; s < 3; ++s) {
        double dot = 0;
        for (int64_t d = 0; d < a.sentence.dim(1); ++d)
            dot += static_cast<double>(a.sentence.data[static_cast<size_t>(s * a.sentence.dim(1) + d)]) *
                   b.sentence.data[static_cast<size_t>(s * a.sentence.dim(1) + d)];
        min_cos = std::min(min_cos, dot);
    }
    MESSAGE("bf16 weights (" << b.gemm_path << ") vs float32, random 2-layer model: sentence 1 - cosine <= "
                             << 1 - min_cos << ", max |diff| " << largest_diff(a.sentence, b.sentence));
    // inputs and weights carry a relative error of 2^-9 each; LayerNorm renormalises every
    // layer, so unit sentence vectors stay within a few 1e-3 (cosine 1 - O(1e-5))
    CHECK(min_cos >= 0.9995);
    CHECK(min_cos < 1.0);  // bf16 did run: the numbers are not float32's
}

TEST_CASE("bert: the fast path (flash + packed GEMM) against the readable one (reference + Eigen), random weights") {
    const BertModel m = BertModel::random(small_config(), 13);
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 15, 16, 17, 18, 3}};
    attn::BertOptions readable, fast;
    readable.record_attention = false;
    readable.attention = attn::BatchAttention::Reference;
    readable.gemm = attn::GemmChoice::Eigen;
    fast.record_attention = false;
    fast.threads = 2;
    const attn::BertOutput r = m.forward(ids, readable), f = m.forward(ids, fast);
    CHECK(r.gemm_path == "eigen");
    CHECK(f.gemm_path == best_gemm_name());
    const double dh = largest_diff(r.hidden, f.hidden);
    MESSAGE("fast vs readable path, random weights: hidden " << dh);
    CHECK(dh <= 1e-5);  // LayerNorm keeps hidden states O(1); 2 layers of float32 reordering
    // each packed kernel the CPU has: within the same bound of the readable path, and the
    // AVX2 and AVX-512 ones the same bits (both sum each element in ascending k with FMAs)
    std::vector<attn::BertOutput> kernels;
    for (const attn::GemmChoice which : kPackedGemms) {
        attn::BertOptions o = fast;
        o.gemm = which;
        if (!attn::gemm_packed_available(which)) {
            CHECK_THROWS_AS(m.forward(ids, o), attn::InputError);  // refused, not quietly run on Eigen
            attn::test::skip(std::string("the ") + attn::gemm_choice_name(which) + " GEMM: not on this CPU");
            continue;
        }
        const attn::BertOutput k = m.forward(ids, o);
        CHECK(k.gemm_path == attn::gemm_choice_name(which));
        CHECK(largest_diff(r.hidden, k.hidden) <= 1e-5);
        if (which != attn::GemmChoice::Generic) kernels.push_back(k);  // the FMA kernels
    }
    if (kernels.size() == 2) {
        CHECK(kernels[0].hidden.data == kernels[1].hidden.data);
        CHECK(kernels[0].sentence.data == kernels[1].sentence.data);
    }
}

TEST_CASE("bert: skip_padding runs the real tokens only and changes no real number") {
    const BertModel m = BertModel::random(small_config(), 17);
    // 4 + 3 + 10 real tokens of 3 x 10 padded positions
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 15, 16, 17, 18, 3}};
    for (const bool packed : {true, false}) {
        attn::BertOptions all, skip, skip3;
        all.record_attention = false;
        all.gemm = packed ? attn::GemmChoice::Best : attn::GemmChoice::Eigen;
        skip = all;
        skip.skip_padding = true;
        skip3 = skip;
        skip3.threads = 3;
        const attn::BertOutput a = m.forward(ids, all), s = m.forward(ids, skip), s3 = m.forward(ids, skip3);
        INFO("GEMM " << s.gemm_path);
        REQUIRE(s.hidden.shape == a.hidden.shape);
        CHECK(s.hidden.data == s3.hidden.data);  // any thread count
        CHECK(s.sentence.data == s3.sentence.data);
        const int64_t T = a.hidden.dim(1), D = a.hidden.dim(2);
        double worst_real = 0, worst_pad = 0;
        for (int64_t b = 0; b < 3; ++b)
            for (int64_t t = 0; t < T; ++t)
                for (int64_t d = 0; d < D; ++d) {
                    const size_t e = static_cast<size_t>((b * T + t) * D + d);
                    if (t < s.lengths[static_cast<size_t>(b)])
                        worst_real =
                            std::max(worst_real, static_cast<double>(std::fabs(s.hidden.data[e] - a.hidden.data[e])));
                    else
                        worst_pad = std::max(worst_pad, static_cast<double>(std::fabs(s.hidden.data[e])));
                }
        const double ds = largest_diff(a.sentence, s.sentence);
        MESSAGE("skip_padding vs every row, GEMM " << s.gemm_path << ": real rows " << worst_real << ", sentences "
                                                   << ds);
        CHECK(worst_pad == 0.0);  // padded rows are not computed: zeros
        if (s.gemm_path != "eigen") {
            // each output element of the packed GEMM is b + sum_k x w in ascending k, whatever
            // rows share its call, and masked keys add exact zeros: the same bits
            CHECK(worst_real == 0.0);
            CHECK(ds == 0.0);
        } else {
            // Eigen may block the sum over k differently for another row count: float32 reordering
            CHECK(worst_real <= 1e-5);
            CHECK(ds <= 1e-6);
        }
    }
    // recording needs every row: skip_padding is then ignored
    attn::BertOptions rec, rec_skip;
    rec_skip.skip_padding = true;
    const attn::BertOutput r = m.forward(ids, rec), rs = m.forward(ids, rec_skip);
    CHECK(r.hidden.data == rs.hidden.data);
    CHECK(r.attentions.size() == rs.attentions.size());
}

TEST_CASE("bert: without recording, the flash attention path gives the reference path's numbers, any thread count") {
    const BertModel m = BertModel::random(small_config(), 11);
    // rows of different lengths: padded keys are masked in both paths
    const std::vector<std::vector<int32_t>> ids{{2, 5, 9, 3}, {2, 7, 3}, {2, 11, 12, 13, 14, 15, 16, 17, 18, 3}};
    attn::BertOptions ref, fast, fast4;
    ref.record_attention = false;
    ref.attention = attn::BatchAttention::Reference;
    fast.record_attention = false;
    fast4 = fast;
    fast4.threads = 4;
    const attn::BertOutput r = m.forward(ids, ref), f = m.forward(ids, fast), f4 = m.forward(ids, fast4);
    CHECK(r.attention_path == "reference");
    CHECK(f.attention_path == "flash");
    CHECK(f.attentions.empty());
    CHECK(f.hidden.data == f4.hidden.data);  // deterministic at any thread count
    CHECK(f.sentence.data == f4.sentence.data);
    // recording forces the reference path, whatever was asked
    attn::BertOptions rec;
    CHECK(BertModel::attention_backend(rec) == attn::Backend::Reference);
    CHECK(m.forward(ids, rec).attention_path == "reference");
    const double dh = largest_diff(r.hidden, f.hidden), ds = largest_diff(r.sentence, f.sentence);
    MESSAGE("flash vs reference path, random weights: hidden " << dh << ", sentence " << ds);
    // flash is within 1e-5 (|ref| + max|v|) of the reference per attention output (its own tests);
    // LayerNorm keeps the hidden states O(1), so a few 1e-6 after 2 layers
    CHECK(dh <= 1e-5);
    CHECK(ds <= 1e-5);
}

TEST_CASE("bert: padding invariance, random weights: equal with the key mask, not without") {
    const BertModel m = BertModel::random(small_config(), 3);
    // tolerance 1e-5: the batch and the lone run do the same arithmetic on the
    // real tokens, except that GEMMs over T rows vs len rows may block differently
    check_padding_invariance(m, {{2, 5, 6, 7, 8, 9, 10, 3}, {2, 5, 3}, {2, 30, 31, 32, 3}}, 1e-5);
}

TEST_CASE("bert: bad input is an InputError") {
    const BertModel m = BertModel::random(small_config(), 1);
    CHECK_THROWS_AS(m.forward({}), attn::InputError);
    CHECK_THROWS_AS(m.forward({{}}), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward({{2, 50, 3}}), doctest::Contains("outside the vocabulary"), attn::InputError);
    CHECK_THROWS_WITH_AS(m.forward({std::vector<int32_t>(41, 5)}), doctest::Contains("positions"), attn::InputError);
    // a folder the user names: what is missing, never attn's own fetch command (that is for the default folder)
    CHECK_THROWS_WITH_AS(attn::locate_model("/nonexistent/model"), "no model folder at '/nonexistent/model'",
                         attn::InputError);
    const std::string tmp = std::filesystem::temp_directory_path() / "attn-test-incomplete-model";
    std::filesystem::create_directories(tmp);
    std::ofstream(tmp + "/config.json") << "{}";
    CHECK_THROWS_WITH_AS(attn::locate_model(tmp), doctest::Contains("model.safetensors is missing (the model's save"),
                         attn::InputError);
    std::ofstream(tmp + "/model.safetensors") << "x";
    CHECK_THROWS_WITH_AS(attn::locate_model(tmp),
                         doctest::Contains("the tokenizer (vocab.txt or tokenizer.json) is missing"), attn::InputError);
    std::filesystem::remove_all(tmp);
}

TEST_CASE("bert: sentence embeddings match sentence-transformers within 1e-4 (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/encoder.json");
    const BertModel& m = real_model();
    const auto tok = attn::WordPieceTokenizer::load(kModelDir + "/vocab.txt", m.config.max_len);
    std::vector<std::vector<int32_t>> batch;
    for (const auto& s : fx["sentences"]) {
        const auto enc = tok.encode(s["text"].get<std::string>());
        CHECK(enc.ids == s["ids"].get<std::vector<int32_t>>());
        batch.push_back(enc.ids);
    }
    attn::BertOptions opt;
    opt.record_attention = false;
    const attn::BertOutput out = m.forward(batch, opt);  // one padded batch, as sentence-transformers ran it
    double worst = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
        const auto ref = fx["sentences"][b]["embedding"].get<std::vector<float>>();
        REQUIRE(ref.size() == 384);
        for (size_t d = 0; d < ref.size(); ++d)
            worst = std::max(worst, static_cast<double>(std::fabs(out.sentence.data[b * 384 + d] - ref[d])));
    }
    MESSAGE("sentence embedding parity: max abs error " << worst << " over " << batch.size() << " sentences");
    CHECK(worst <= 1e-4);
}

TEST_CASE("bert: attention weights and last hidden state match transformers' BertModel (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/encoder.json");
    const nlohmann::json& a = fx["attention"];
    const BertModel& m = real_model();
    const attn::BertOutput out = m.forward({a["ids"].get<std::vector<int32_t>>()});
    double worst_w = 0, worst_h = 0;
    for (const auto& [layer, w] : a["layers"].items()) {
        const Tensor& got = out.attentions[static_cast<size_t>(std::stoi(layer))];
        const auto ref = w.get<std::vector<float>>();
        REQUIRE(ref.size() == got.data.size());
        for (size_t k = 0; k < ref.size(); ++k)
            worst_w = std::max(worst_w, static_cast<double>(std::fabs(got.data[k] - ref[k])));
    }
    const auto hid = a["last_hidden"].get<std::vector<float>>();
    REQUIRE(hid.size() == out.hidden.data.size());
    for (size_t k = 0; k < hid.size(); ++k)
        worst_h = std::max(worst_h, static_cast<double>(std::fabs(out.hidden.data[k] - hid[k])));
    MESSAGE("attention parity: max abs " << worst_w << "; last hidden state: max abs " << worst_h);
    // weights are probabilities in [0, 1]: 1e-5 is ~100 float ulps of accumulated reordering over 6 layers
    CHECK(worst_w <= 1e-5);
    // hidden states are O(1)-O(10) before pooling: 1e-4 absolute
    CHECK(worst_h <= 1e-4);
}

TEST_CASE(
    "bert: the fast path (flash + packed GEMM) matches the readable one on the real model (skipped without the "
    "model)") {
    if (!attn::test::model_or_skip()) return;
    const nlohmann::json fx = read_json(std::string(ATTN_SOURCE_DIR) + "/tests/fixtures/model/encoder.json");
    const BertModel& m = real_model();
    const auto tok = attn::WordPieceTokenizer::load(kModelDir + "/vocab.txt", m.config.max_len);
    std::vector<std::vector<int32_t>> batch;
    for (const auto& s : fx["sentences"]) batch.push_back(tok.encode(s["text"].get<std::string>()).ids);
    attn::BertOptions ref, fast, fast2;
    ref.record_attention = false;
    ref.attention = attn::BatchAttention::Reference;
    ref.gemm = attn::GemmChoice::Eigen;  // attention_reference and Eigen's GEMM: the readable path
    fast.record_attention = false;
    fast2 = fast;
    fast2.threads = 2;
    const attn::BertOutput r = m.forward(batch, ref), f = m.forward(batch, fast), f2 = m.forward(batch, fast2);
    REQUIRE(f.attention_path == "flash");
    REQUIRE(r.gemm_path == "eigen");
    CHECK(f.hidden.data == f2.hidden.data);
    const double dh = largest_diff(r.hidden, f.hidden), ds = largest_diff(r.sentence, f.sentence);
    MESSAGE("fast vs readable path, MiniLM: last hidden " << dh << ", sentence embedding " << ds);
    // the same bounds as the parity with transformers (hidden states O(1)-O(10): 1e-4 absolute)
    // and with sentence-transformers (unit vectors: 1e-5 here, 1e-4 there)
    CHECK(dh <= 1e-4);
    CHECK(ds <= 1e-5);
    // the same for each packed kernel this CPU has, forced (ATTN_ISA=avx2 runs the AVX2 one);
    // AVX2 and AVX-512 sum each element in the same order with FMAs: the same bits
    std::vector<Tensor> sentences;
    for (const attn::GemmChoice which : kPackedGemms) {
        if (!attn::gemm_packed_available(which)) {
            attn::test::skip(std::string("the ") + attn::gemm_choice_name(which) + " GEMM: not on this CPU");
            continue;
        }
        attn::BertOptions o = fast;
        o.gemm = which;
        const attn::BertOutput k = m.forward(batch, o);
        REQUIRE(k.gemm_path == attn::gemm_choice_name(which));
        const double kh = largest_diff(r.hidden, k.hidden), ks = largest_diff(r.sentence, k.sentence);
        MESSAGE(k.gemm_path << " GEMM vs readable path, MiniLM: last hidden " << kh << ", sentence embedding " << ks);
        CHECK(kh <= 1e-4);
        CHECK(ks <= 1e-5);
        if (which != attn::GemmChoice::Generic) sentences.push_back(k.sentence);
    }
    if (sentences.size() == 2) CHECK(sentences[0].data == sentences[1].data);
}

TEST_CASE(
    "attn model bench: JSON names the attention path and the processor, and bad values exit 2 (skipped without the "
    "model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string m = " --model " + kModelDir;
    const std::string file = (std::filesystem::temp_directory_path() / "attn-test-bench-lines.txt").string();
    std::ofstream(file) << "First line here.\n\n   \nA second, rather longer line of the little file.\n";
    using attn::test::run_attn;
    attn::test::CliResult r = run_attn("model bench --batch 1,3 --reps 2 --warmup 0 --json --file " + file + m);
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["format"] == "attn-model-bench");
    CHECK(j["attention_path"] == "flash");
    CHECK(j["gemm_path"] == best_gemm_name());
    CHECK(j["machine"]["cpu_model"].is_string());
    CHECK(j["padding"] == "skip");
    REQUIRE(j["runs"].size() == 2);
    const auto& b3 = j["runs"][1];
    CHECK(b3["batch"] == 3);
    // blank lines skipped; lines cycled: first, second, first
    CHECK(b3["texts"] == std::vector<std::string>{"First line here.",
                                                  "A second, rather longer line of the little file.",
                                                  "First line here."});
    CHECK(b3["tokens_real"].get<int64_t>() < 3 * b3["tokens_padded"].get<int64_t>());  // padding exercised
    CHECK(b3["sentences_per_s"].get<double>() > 0);
    CHECK(b3["times_ms"].size() == 2);
    r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --attention reference --gemm eigen --json" + m);
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["attention_path"] == "reference");
    CHECK(nlohmann::json::parse(r.out)["gemm_path"] == "eigen");
    // each packed kernel asked for by name: run where the CPU has it, refused in one line
    // (exit 2) where it does not, also when ATTN_ISA caps it, never quietly run on Eigen
    for (const attn::GemmChoice which : kPackedGemms) {
        const std::string k = attn::gemm_choice_name(which);
        r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --json --gemm " + k + m);
        if (attn::gemm_packed_available(which)) {
            REQUIRE(r.code == 0);
            CHECK(nlohmann::json::parse(r.out)["gemm_path"] == k);
        } else {
            CHECK(r.code == 2);
        }
    }
    r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --gemm avx512" + m, "ATTN_ISA=avx2");
    CHECK(r.code == 2);
    CHECK(r.out.find("--gemm") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --gemm sse" + m);
    CHECK(r.code == 2);
    if (attn::gemm_packed_available(attn::GemmChoice::Avx2)) {
        r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --json" + m, "ATTN_ISA=avx2");
        REQUIRE(r.code == 0);
        CHECK(nlohmann::json::parse(r.out)["gemm_path"] == "avx2");
    }
    r = run_attn("model bench --batch 2 --reps 1 --warmup 0 --padding compute --json" + m);
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["padding"] == "compute");
    {
        r = run_attn("model bench --batch 3 --reps 1 --warmup 0 --weights bf16 --json" + m);
        REQUIRE(r.code == 0);
        const nlohmann::json jb = nlohmann::json::parse(r.out);
        CHECK(jb["weights"] == "bf16");
        CHECK(jb["gemm_path"].get<std::string>().find("bf16") != std::string::npos);
        const double cos = jb["runs"][0]["bf16_vs_fp32"]["min_cosine"].get<double>();
        CHECK(cos > 0.999);
        CHECK(cos < 1.0);
        // a CPU without AVX-512 runs them too: the AVX2 and generic widened pairs
        for (const std::string isa : {"avx2", "generic"}) {
            r = run_attn("model bench --batch 1 --reps 1 --warmup 0 --weights bf16 --json" + m, "ATTN_ISA=" + isa);
            REQUIRE(r.code == 0);
            CHECK(nlohmann::json::parse(r.out)["gemm_path"] == isa + "-widened-bf16");
        }
    }
    r = run_attn("model bench --batch 2 --reps 1 --warmup 0" + m);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("attention flash") != std::string::npos);
    CHECK(r.out.find("sentences/s") != std::string::npos);
    std::ofstream(file) << "\n  \n";
    for (const std::string& bad : std::vector<std::string>{
             "model bench --file " + file, "model bench --file /nonexistent/lines.txt", "model bench --attention fast",
             "model bench --gemm mkl", "model bench --padding none", "model bench --weights fp16",
             "model bench --warmup -1", "model bench --warmup 101", "model bench --reps 10001"}) {
        CAPTURE(bad);
        r = run_attn(bad + m);
        CHECK(r.code == 2);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    r = run_attn("model bench --file " + file + m);
    CHECK(r.out.find("--file") != std::string::npos);
    CHECK(r.out.find("no non-blank line") != std::string::npos);
    std::filesystem::remove(file);
}

TEST_CASE("bert: padding invariance on the real model (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const BertModel& m = real_model();
    const auto tok = attn::WordPieceTokenizer::load(kModelDir + "/vocab.txt", m.config.max_len);
    std::vector<std::vector<int32_t>> batch;
    for (const char* s : {"The animal didn't cross the street because it was too tired", "Short.",
                          "A man is playing a guitar."})
        batch.push_back(tok.encode(s).ids);
    check_padding_invariance(m, batch, 1e-5);
}

using attn::test::run_attn;

TEST_CASE("attn model: a missing or incomplete model folder is exit 2, naming what is missing") {
    attn::test::CliResult r = run_attn("model entropy --text hello --model /nonexistent/model");
    CHECK(r.code == 2);
    CHECK(r.out == "attn: error: --model: no model folder at '/nonexistent/model'\n");
    const std::string tmp = std::filesystem::temp_directory_path() / "attn-test-cli-incomplete";
    std::filesystem::create_directories(tmp);
    std::ofstream(tmp + "/config.json") << "{}";
    std::ofstream(tmp + "/vocab.txt") << "[PAD]\n";
    r = run_attn("model probe --from it --to animal --model " + tmp);
    CHECK(r.code == 2);
    CHECK(r.out.find("model.safetensors is missing") != std::string::npos);
    std::ofstream(tmp + "/model.safetensors") << "garbage!";
    std::ofstream(tmp + "/config.json") << R"({"vocab_size": 4, "hidden_size": 4, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8, "type_vocab_size": 2})";
    std::ofstream(tmp + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
    r = run_attn("model attention --text hello --model " + tmp);  // corrupt weights: one line, exit 2
    CHECK(r.code == 2);
    CHECK(r.out.find("model.safetensors: not a valid safetensors file") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    std::filesystem::remove_all(tmp);
}

TEST_CASE("attn model: entropy table, probe ranking and bad input on the real model (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string m = " --model " + kModelDir;
    const std::string text = "--text \"The animal didn't cross the street because it was too tired\"";
    attn::test::CliResult r = run_attn("model entropy " + text + m);
    REQUIRE(r.code == 0);
    for (const char* row : {"\n0     |", "\n5     |"}) CHECK(r.out.find(row) != std::string::npos);
    r = run_attn("model entropy --json " + text + m);
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const auto trained = j["models"][0]["entropy"].get<std::vector<std::vector<double>>>();
    const auto random = j["models"][1]["entropy"].get<std::vector<std::vector<double>>>();
    REQUIRE(trained.size() == 6);
    REQUIRE(trained[0].size() == 12);
    double mt = 0, mr = 0;
    for (int l = 0; l < 6; ++l)
        for (int h = 0; h < 12; ++h) mt += trained[l][h] / 72, mr += random[l][h] / 72;
    MESSAGE("mean normalised entropy: trained " << mt << ", random " << mr);
    CHECK(mr > 0.95);       // random init: near-uniform heads
    CHECK(mt < mr - 0.2);   // trained heads are sharper
    r = run_attn("model probe --from it --to animal,street --json" + m);
    REQUIRE(r.code == 0);
    const nlohmann::json p = nlohmann::json::parse(r.out);
    CHECK(p["heads"].size() == 72);
    const double top = p["heads"][0]["weight"][0].get<double>();
    CHECK(top >= p["heads"][71]["weight"][0].get<double>());
    CHECK(top > 0.5);  // some head puts most of "it"'s weight on "animal" (C34)
    for (const char* bad : {"model attention --text hi --layer 6",
                            "model attention --text hi --layer 0 --head 12", "model probe --from dog --to animal",
                            "model probe --from it --to animal,", "model entropy --text hi --dup-threshold 0"}) {
        CAPTURE(bad);
        r = run_attn(std::string(bad) + m);
        CHECK(r.code == 2);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    const std::string dump = (std::filesystem::temp_directory_path() / "attn-test-model-dump.json").string();
    const std::string svg = (std::filesystem::temp_directory_path() / "attn-test-model.svg").string();
    r = run_attn("model attention --text \"it was tired\" --layer 1 --dump " + dump + " --svg " + svg + m);
    REQUIRE(r.code == 0);
    const attn::Dump d = attn::read_dump_file(dump);
    const auto toks = d.config["tokens"].get<std::vector<std::string>>();
    CHECK(toks == std::vector<std::string>{"[CLS]", "it", "was", "tired", "[SEP]"});
    CHECK(d.tensors.at("attention").shape == attn::Shape{6, 1, 12, 5, 5});
    CHECK(attn::read_file(svg).find("<svg") != std::string::npos);
    std::filesystem::remove(dump);
    std::filesystem::remove(svg);
    std::string long_text(300 * 5, ' ');
    for (size_t i = 0; i < long_text.size(); i += 5) long_text.replace(i, 4, "word");
    r = run_attn("model entropy --text \"" + long_text + "\"" + m);
    CHECK(r.code == 2);
    CHECK(r.out.find("more than the model's maximum of 256") != std::string::npos);
}
