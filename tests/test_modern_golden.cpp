// tests/test_modern_golden.cpp: grouped-query attention, RoPE, ALiBi and the logit
// softcap against a current PyTorch (tests/fixtures/modern/*.json, made by
// scripts/make-modern-golden.py: F.scaled_dot_product_attention(enable_gqa=True),
// RoPE written in torch, ALiBi as a float attn_mask, the softcap by hand). The
// reference and the tiled kernel both, every fixture in the folder.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attn/core/attention.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/io/dump.hpp"
#include "parse.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

std::vector<std::string> modern_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(test::source_path("tests/fixtures/modern")))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Worst |got - want| / (|want| + max|v|) (an output is a weighted mean of v: tests/test_flash.cpp).
double worst_scaled(const Tensor& got, const Tensor& want, const Tensor& v) {
    double vm = 0, w = 0;
    for (float x : v.data) vm = std::max(vm, double(std::fabs(x)));
    for (int64_t n = 0; n < got.numel(); ++n) {
        const double e = std::fabs(double(got.data[n]) - want.data[n]) / (std::fabs(double(want.data[n])) + vm);
        w = std::max(w, std::isnan(e) ? INFINITY : e);
    }
    return w;
}

}  // namespace

TEST_CASE("reference and flash match PyTorch's GQA, RoPE, ALiBi and softcap fixtures") {
    // Tolerance 2e-6 of (|out| + max|v|): the fixtures are float64 results of the float32
    // inputs rounded once; attn computes in float32, whose rounding of the scores (up to
    // ~10 in size here), of RoPE's rotation and of the softmax sums was measured at most
    // 1.7e-7 (reference 1.2e-7, flash 1.6e-7 on the AVX-512 machine): a 10x margin.
    const std::vector<std::string> names = modern_names();
    REQUIRE(names.size() >= 10);
    int with_gqa = 0, with_rope = 0, with_alibi = 0, with_cap = 0;
    double worst_ref = 0, worst_flash = 0;
    for (const std::string& name : names) {
        const Dump d = read_dump_file(test::source_path("tests/fixtures/modern/" + name + ".json"));
        const auto& c = d.config;
        const Tensor& q = d.tensors.at("q");
        const Tensor& k = d.tensors.at("k");
        const Tensor& v = d.tensors.at("v");
        const Tensor& want = d.tensors.at("out");
        const int64_t B = c["batch"].get<int64_t>(), Tq = c["seq_q"].get<int64_t>(), Tk = c["seq_k"].get<int64_t>();
        const std::string spec = c["mask"].get<std::string>();
        REQUIRE((Tq == Tk || spec == "none"));
        const Mask mask = cli::parse_mask(spec, B, Tk);
        AttentionOptions opt;
        opt.scale = cli::parse_scale(c["scale"].get<std::string>());
        if (c["rope"].is_number()) {
            opt.rope = true;
            opt.rope_base = c["rope"].get<float>();
        }
        opt.alibi = c["alibi"].get<bool>();
        opt.softcap = c["softcap"].get<float>();
        opt.query_offset = c["query_offset"].get<int64_t>();
        with_gqa += c["kv_heads"].get<int64_t>() != c["heads"].get<int64_t>();
        with_rope += opt.rope;
        with_alibi += opt.alibi;
        with_cap += opt.softcap > 0;
        REQUIRE(k.dim(1) == c["kv_heads"].get<int64_t>());
        const double er = worst_scaled(attention_reference(q, k, v, mask, opt), want, v);
        const double ef = worst_scaled(attention_flash(q, k, v, mask, opt, 2), want, v);
        worst_ref = std::max(worst_ref, er);
        worst_flash = std::max(worst_flash, ef);
        INFO(name << ": reference " << er << ", flash " << ef);
        CHECK(er <= 2e-6);
        CHECK(ef <= 2e-6);
    }
    // the folder covers every option
    CHECK(with_gqa >= 3);
    CHECK(with_rope >= 3);
    CHECK(with_alibi >= 3);
    CHECK(with_cap >= 2);
    MESSAGE("worst scaled error against PyTorch: reference " << worst_ref << ", flash " << worst_flash);
}
