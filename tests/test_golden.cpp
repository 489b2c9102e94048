// Golden parity: attn's multi-head attention against PyTorch float32 results
// committed in tests/fixtures/golden (made by scripts/make-golden.py).
//
// Tolerance: max |attn - torch| / max |torch| <= 1e-5 per tensor (norm-wise
// relative error). Both sides are float32 (eps = 1.2e-7); the dot products run
// over at most 64 terms, and the two libraries sum them in different orders,
// which moves each result by a few eps of the terms' magnitude: ~1e-6 of the
// tensor's scale. Element-wise relative error is not used because entries that
// cancel to nearly 0 would make any rounding look huge.
#include <doctest/doctest.h>

#include <cmath>

#include "parse.hpp"
#include "test_util.hpp"

using namespace attn;

static double normwise_rel(const Tensor& a, const Tensor& ref) {
    double scale = 0;
    for (float v : ref.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    return max_abs_diff(a, ref) / std::max(scale, 1e-30);
}

// A fixture's mask, written as `attn forward --mask` takes it.
static Mask fixture_mask(const nlohmann::json& c) {
    return cli::parse_mask(c["mask"].get<std::string>(), c["batch"].get<int64_t>(), c["seq"].get<int64_t>());
}

// The layer a fixture describes, with its weights (and biases, when it has them).
static MultiHeadAttention load_mha(const Dump& d) {
    const auto& c = d.config;
    MultiHeadAttention mha(MhaConfig{c["d_model"].get<int64_t>(), c["heads"].get<int64_t>(), c["d_k"].get<int64_t>(),
                                     c["d_v"].get<int64_t>(), c["bias"].get<bool>()});
    mha.q_proj.W = d.tensors.at("W_q");
    mha.k_proj.W = d.tensors.at("W_k");
    mha.v_proj.W = d.tensors.at("W_v");
    mha.o_proj.W = d.tensors.at("W_o");
    if (mha.config().bias) {
        mha.q_proj.b = d.tensors.at("b_q");
        mha.k_proj.b = d.tensors.at("b_k");
        mha.v_proj.b = d.tensors.at("b_v");
        mha.o_proj.b = d.tensors.at("b_o");
    }
    return mha;
}

TEST_CASE("golden: multi-head attention matches PyTorch within 1e-5 relative") {
    const char* cases[] = {"source_example",       "causal_3heads",        "pad_dk_ne_dv",
                           "causal_pad_fill_1e9",  "fully_masked_row_1e9", "scale_const_no_bias",
                           "scale_none",           "cosine_tau",           "wide_8heads"};
    for (const char* name : cases) {
        SUBCASE(name) {
            const Dump d = read_dump_file(test::source_path(std::string("tests/fixtures/golden/") + name + ".json"));
            const auto& c = d.config;
            const MultiHeadAttention mha = load_mha(d);
            AttentionOptions opt;
            opt.scale = cli::parse_scale(c["scale"].get<std::string>());
            opt.fill = cli::parse_fill(c["fill"].get<std::string>());
            const Mask mask = fixture_mask(c);
            ForwardRecord rec;
            mha.forward(d.tensors.at("x"), mask, opt, &rec);
            const std::pair<const char*, const Tensor*> outputs[] = {
                {"Q", &rec.Q},           {"K", &rec.K},           {"V", &rec.V},  {"weights", &rec.attn.weights},
                {"head_out", &rec.head_out}, {"merged", &rec.merged}, {"out", &rec.out}};
            for (const auto& [t, got_ptr] : outputs) {
                const Tensor& got = *got_ptr;
                const double err = normwise_rel(got, d.tensors.at(t));
                INFO(name << " tensor " << t << " rel err " << err);
                CHECK(err <= 1e-5);
            }
        }
    }
}

TEST_CASE("golden: the flash path matches the same PyTorch results") {
    const Dump d = read_dump_file(test::source_path("tests/fixtures/golden/pad_dk_ne_dv.json"));
    const auto& c = d.config;
    const MultiHeadAttention mha = load_mha(d);
    const Mask mask = fixture_mask(c);
    const Tensor out = mha.forward(d.tensors.at("x"), mask, AttentionOptions{}, nullptr, nullptr, Backend::Flash);
    CHECK(normwise_rel(out, d.tensors.at("out")) <= 1e-5);
}
