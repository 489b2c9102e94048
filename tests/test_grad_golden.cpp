// Gradient parity: attn's backward passes against PyTorch autograd, float32
// results committed in tests/fixtures/grad (made by scripts/make-grad-golden.py).
// Each fixture is one self-attention MHA layer, an upstream gradient dout and
// every gradient autograd computed for L = sum(out * dout).
//
// Tolerance: max |attn - torch| / max |torch| <= 1e-5 per tensor, the norm-wise
// (max-norm) relative error test_golden.cpp uses for the forward, for the same
// reason: both sides are float32 (eps 1.2e-7), the sums run over at most D·T = 48
// terms in different orders, moving each result by a few eps of the terms' size
// (~1e-6 of the tensor's scale); element-wise relative error would blow up on
// entries that cancel to nearly 0. One exception in the scale: db_k is exactly 0
// in exact arithmetic (softmax ignores the constant q·b_k added to a whole score
// row) except under the cosine scale, so both sides hold rounding noise only; a
// bias gradient is measured against max(|db|, |dW|) of its own projection, the
// same rows of dK summed with and without the O(1) weights x.
// Every backend with a backward pass runs the same fixtures.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "golden.hpp"
#include "parse.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

std::vector<std::string> grad_golden_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(test::source_path("tests/fixtures/grad")))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float v : t.data) m = std::max(m, static_cast<double>(std::fabs(v)));
    return m;
}

struct GradGolden {
    Dump dump;
    MultiHeadAttention mha;
    Mask mask;
    AttentionOptions opt;
};

GradGolden load_grad_golden(const std::string& name) {
    Dump d = read_dump_file(test::source_path("tests/fixtures/grad/" + name + ".json"));
    const auto& c = d.config;
    const int64_t B = c["batch"].get<int64_t>(), T = c["seq"].get<int64_t>();
    MultiHeadAttention mha = test::golden_layer(d);
    AttentionOptions opt;
    opt.scale = cli::parse_scale(c["scale"].get<std::string>());
    opt.fill = cli::parse_fill(c["fill"].get<std::string>());
    opt.dropout = c["dropout"].get<float>();
    opt.train = c["train"].get<bool>();
    opt.seed = c["dropout_seed"].get<uint64_t>();
    Mask mask = cli::parse_mask(c["mask"].get<std::string>(), B, T);
    if (auto it = d.tensors.find("mask_allowed"); it != d.tensors.end()) {
        std::vector<uint8_t> allowed(it->second.data.size());
        for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = it->second.data[i] != 0.0f ? 1 : 0;
        mask = mask.combined(Mask::custom(B, T, T, std::move(allowed)));
    }
    if (auto it = d.tensors.find("mask_additive"); it != d.tensors.end())
        mask = mask.combined(Mask::additive_mask(B, T, T, it->second.data));
    return GradGolden{std::move(d), std::move(mha), std::move(mask), opt};
}

}  // namespace

TEST_CASE("grad golden: every gradient matches PyTorch autograd within 1e-5 relative, on every backward backend") {
    const auto names = grad_golden_names();
    REQUIRE(names.size() >= 11);
    for (const BackendInfo& row : backends()) {
        if (row.backward == nullptr) continue;  // listed by test_backward: "<name> has no backward pass"
        SUBCASE(row.name) {
            std::string why;
            if (!row.available(&why)) {
                test::skip(std::string(row.name) + ": " + why);
                continue;
            }
            for (const std::string& name : names) {
                CAPTURE(name);
                const GradGolden g = load_grad_golden(name);
                const Dump& d = g.dump;
                ForwardRecord fwd;
                g.mha.forward(d.tensors.at("x"), g.mask, g.opt, &fwd);
                MhaBackwardRecord brec;
                const MhaGrads gr =
                    g.mha.backward(fwd, d.tensors.at("dout"), g.mask, g.opt, &brec, nullptr, row.id);
                std::vector<std::pair<std::string, const Tensor*>> got = {
                    {"out", &fwd.out},   {"d_out_heads", &brec.d_head_out},
                    {"dQ", &brec.dQ},    {"dK", &brec.dK},     {"dV", &brec.dV},     {"dx", &gr.dx},
                    {"dW_q", &gr.dW_q},  {"dW_k", &gr.dW_k},   {"dW_v", &gr.dW_v},   {"dW_o", &gr.dW_o}};
                if (g.mha.config().bias)
                    for (auto [n, t] : {std::pair{"db_q", &gr.db_q}, {"db_k", &gr.db_k}, {"db_v", &gr.db_v},
                                        {"db_o", &gr.db_o}})
                        got.emplace_back(n, t);
                if (row.backward_records) {
                    got.emplace_back("d_weights", &brec.attn.d_weights);
                    got.emplace_back("d_scores", &brec.attn.d_scores);
                }
                for (const auto& entry : got) {
                    const auto& t = entry.first;  // clang 14: no structured binding inside INFO
                    const auto& mine = entry.second;
                    const Tensor& ref = d.tensors.at(t);
                    REQUIRE(mine->shape == ref.shape);
                    double scale = max_abs(ref);
                    if (t.starts_with("db_")) scale = std::max(scale, max_abs(d.tensors.at("dW_" + t.substr(3))));
                    const double err = max_abs_diff(*mine, ref) / std::max(scale, 1e-30);
                    INFO(name << " " << t << ": max |attn - torch| / max |torch| = " << err);
                    CHECK(err <= 1e-5);
                }
            }
        }
    }
}

TEST_CASE("grad golden: the Python dropout mask is attn's, bit for bit") {
    // scripts/make-grad-golden.py re-implements counter_uniform; the fixtures carry its keep mask
    int checked = 0;
    for (const std::string& name : grad_golden_names()) {
        const GradGolden g = load_grad_golden(name);
        auto it = g.dump.tensors.find("keep");
        if (it == g.dump.tensors.end()) continue;
        const Tensor& keep = it->second;
        for (size_t i = 0; i < keep.data.size(); ++i) {
            const bool kept = !dropout_drops(g.opt.seed, i, g.opt.dropout);
            if (kept != (keep.data[i] != 0.0f)) FAIL(name << ": element " << i << " differs");
        }
        ++checked;
    }
    CHECK(checked >= 2);
}
