// Masks from files and cross-attention against PyTorch's nn.MultiheadAttention
// (tests/fixtures/golden_masks, tests/fixtures/golden_cross: scripts/make-golden.py
// with Debian's python3-torch 1.13), through `attn forward --input F --mask-file M`
// and through the library; per-head masks in the reference and the tiled kernel;
// the rules of --mask-file, --tk, --kdim, --vdim, and .npy / .safetensors --input.
//
// Tolerance: as test_golden.cpp, max |attn - torch| / max |torch| <= 1e-5 per tensor:
// float32 on both sides, dot products of at most 16 terms summed in other orders.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "parse.hpp"
#include "test_util.hpp"

using namespace attn;

namespace {

double normwise_rel(const Tensor& a, const Tensor& ref) {
    double scale = 0;
    for (float v : ref.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    return max_abs_diff(a, ref) / std::max(scale, 1e-30);
}

std::vector<std::string> fixtures(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(test::source_path(dir))) {
        const std::string f = e.path().filename().string();
        if (f.size() > 5 && f.ends_with(".json") && f.find(".mask.") == std::string::npos)
            names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE(
    "mask files: attn forward --mask-file matches nn.MultiheadAttention (bool, additive, per head, npy and json)") {
    const auto names = fixtures("tests/fixtures/golden_masks");
    REQUIRE(names.size() >= 7);
    const std::string dir = test::temp_dir("maskfile");
    for (const std::string& name : names) {
        const std::string base = test::source_path("tests/fixtures/golden_masks/" + name);
        const Dump fx = read_dump_file(base + ".json");
        const std::string mask_file = test::source_path("tests/fixtures/golden_masks/" +
                                                        fx.config["mask_file"].get<std::string>());
        for (const char* impl : {"reference", "flash"}) {
            const std::string out = dir + "/" + name + "-" + impl + ".json";
            const test::CliResult r = test::run_attn("forward --input " + base + ".json --mask-file " + mask_file +
                                                     " --impl " + impl + " --dump " + out);
            INFO(name << " " << impl << ": " << r.out);
            REQUIRE(r.code == 0);
            const Dump d = read_dump_file(out);
            const double err_out = normwise_rel(d.tensors.at("out"), fx.tensors.at("out"));
            CHECK(err_out <= 1e-5);
            if (std::string(impl) == "reference") {
                const double err_w = normwise_rel(d.tensors.at("weights"), fx.tensors.at("weights"));
                CHECK(err_w <= 1e-5);
            }
            // a per-head mask is dumped per head
            const bool per_head = name.rfind("perhead", 0) == 0;
            CHECK(d.tensors.at("mask").rank() == (per_head ? 4 : 3));
            CHECK(d.tensors.count("additive_mask") == (name.find("additive") != std::string::npos ? 1u : 0u));
            // the dump fed back with --input runs the same layer with the same (per-head, additive) mask
            const std::string again = dir + "/" + name + "-" + impl + "-again.json";
            const test::CliResult r2 =
                test::run_attn("forward --input " + out + " --impl " + impl + " --dump " + again);
            INFO(r2.out);
            REQUIRE(r2.code == 0);
            CHECK(read_dump_file(again).tensors.at("out").data == d.tensors.at("out").data);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("mask files: the check can fail: another mask gives other numbers") {
    // perhead_bool's mask read for every head (head 0's slice) must not match PyTorch's per-head result
    const std::string base = test::source_path("tests/fixtures/golden_masks/perhead_bool");
    const Dump fx = read_dump_file(base + ".json");
    const NpyArray m = read_npy_file(base + ".mask.npy");
    REQUIRE(m.values.rank() == 4);
    const int64_t B = m.values.dim(0), H = m.values.dim(1), T = m.values.dim(2);
    std::vector<uint8_t> per_head(m.values.data.begin(), m.values.data.end()), head0;
    for (int64_t b = 0; b < B; ++b)
        head0.insert(head0.end(), per_head.begin() + b * H * T * T, per_head.begin() + (b * H + 1) * T * T);
    MultiHeadAttention mha(MhaConfig{fx.config["d_model"].get<int64_t>(), H});
    for (const auto& [name, t] : {std::pair<const char*, Tensor*>{"W_q", &mha.q_proj.W}, {"W_k", &mha.k_proj.W},
                                   {"W_v", &mha.v_proj.W}, {"W_o", &mha.o_proj.W}, {"b_q", &mha.q_proj.b},
                                   {"b_k", &mha.k_proj.b}, {"b_v", &mha.v_proj.b}, {"b_o", &mha.o_proj.b}})
        *t = fx.tensors.at(name);
    const Tensor good = mha.forward(fx.tensors.at("x"), Mask::custom_heads(B, H, T, T, per_head), {});
    const Tensor bad = mha.forward(fx.tensors.at("x"), Mask::custom(B, T, T, head0), {});
    CHECK(normwise_rel(good, fx.tensors.at("out")) <= 1e-5);
    CHECK(normwise_rel(bad, fx.tensors.at("out")) > 1e-3);
    // the per-head mask in the tiled kernel and the reference, element by element (same rounding class: 1e-5 rel)
    const Tensor q = test::randn({B, H, T, 4}, 1), k = test::randn({B, H, T, 4}, 2), v = test::randn({B, H, T, 4}, 3);
    const Mask ph = Mask::custom_heads(B, H, T, T, per_head);
    CHECK(normwise_rel(attention_flash(q, k, v, ph, {}), attention_reference(q, k, v, ph, {})) <= 1e-5);
    CHECK_THROWS_AS(ph.check(B, T, T), ShapeError);  // a one-row-per-batch reader (CUDA) refuses it
}

TEST_CASE("cross-attention: MultiHeadAttention with kdim/vdim and attn forward --input match nn.MultiheadAttention") {
    const auto names = fixtures("tests/fixtures/golden_cross");
    REQUIRE(names.size() >= 3);
    const std::string dir = test::temp_dir("cross");
    for (const std::string& name : names) {
        const std::string path = test::source_path("tests/fixtures/golden_cross/" + name + ".json");
        const Dump fx = read_dump_file(path);
        const auto& c = fx.config;
        const int64_t B = c["batch"].get<int64_t>(), Tk = c["tk"].get<int64_t>();
        MultiHeadAttention mha(MhaConfig{c["d_model"].get<int64_t>(), c["heads"].get<int64_t>(), 0, 0, true,
                                         c["kdim"].get<int64_t>(), c["vdim"].get<int64_t>()});
        CHECK(mha.k_proj.W.shape == fx.tensors.at("W_k").shape);
        CHECK(mha.v_proj.W.shape == fx.tensors.at("W_v").shape);
        for (const auto& [wname, t] : {std::pair<const char*, Tensor*>{"W_q", &mha.q_proj.W}, {"W_k", &mha.k_proj.W},
                                        {"W_v", &mha.v_proj.W}, {"W_o", &mha.o_proj.W}, {"b_q", &mha.q_proj.b},
                                        {"b_k", &mha.k_proj.b}, {"b_v", &mha.v_proj.b}, {"b_o", &mha.o_proj.b}})
            *t = fx.tensors.at(wname);
        const std::string spec = c["mask"].get<std::string>();
        const Mask mask = cli::parse_mask(spec, B, Tk);  // key padding over the Tk keys
        const Tensor& kv = fx.tensors.at("x_kv");
        const Tensor& val = fx.tensors.count("x_v") ? fx.tensors.at("x_v") : kv;
        ForwardRecord rec;
        const Tensor out = mha.forward(fx.tensors.at("x"), kv, val, mask, {}, &rec);
        INFO(name);
        CHECK(rec.attn.weights.shape == Shape{B, c["heads"].get<int64_t>(), c["seq"].get<int64_t>(), Tk});
        CHECK(normwise_rel(out, fx.tensors.at("out")) <= 1e-5);
        CHECK(normwise_rel(rec.attn.weights, fx.tensors.at("weights")) <= 1e-5);
        // the CLI: x_kv (and x_v) and the key padding over Tk come from the file
        const std::string dump = dir + "/" + name + ".json";
        const test::CliResult r = test::run_attn("forward --input " + path + " --trace --dump " + dump);
        INFO(r.out);
        REQUIRE(r.code == 0);
        CHECK(r.out.find("x_kv = key/value input (another sequence)") != std::string::npos);
        CHECK(r.out.find(fmt::format("[{}, {}, {}]", B, Tk, c["kdim"].get<int64_t>())) != std::string::npos);
        const Dump d = read_dump_file(dump);
        CHECK(normwise_rel(d.tensors.at("out"), fx.tensors.at("out")) <= 1e-5);
        CHECK(d.tensors.at("x_kv").shape == kv.shape);
        CHECK(d.config["tk"].get<int64_t>() == Tk);
    }
    std::filesystem::remove_all(dir);
}

namespace {

// Head h of a (B, H, T, d) tensor as (B, 1, T, d).
Tensor head_of(const Tensor& t, int64_t h) {
    const int64_t B = t.dim(0), H = t.dim(1), T = t.dim(2), d = t.dim(3);
    Tensor out(Shape{B, 1, T, d});
    for (int64_t b = 0; b < B; ++b)
        std::copy(t.ptr() + (b * H + h) * T * d, t.ptr() + (b * H + h + 1) * T * d, out.ptr() + b * T * d);
    return out;
}

}  // namespace

TEST_CASE("per-head masks: forward and backward equal running each head alone with its own mask (reference, flash)") {
    // An independent check of the per-head row selection: head h with the per-head mask must give what
    // head h alone (H = 1) gives with that head's slice as an ordinary [B, Tq, Tk] mask, to float rounding.
    const int64_t B = 2, H = 3, Tq = 5, Tk = 7, D = 4;
    Rng r(17, 0);
    std::vector<uint8_t> allowed(static_cast<size_t>(B * H * Tq * Tk));
    std::vector<float> add(allowed.size());
    for (size_t k = 0; k < allowed.size(); ++k) {
        allowed[k] = (k % static_cast<size_t>(Tk)) == 0 || r.uniform() < 0.6;  // key 0 always allowed
        add[k] = r.normal();
    }
    const Mask per_head = Mask::custom_heads(B, H, Tq, Tk, allowed).combined(Mask::additive_heads(B, H, Tq, Tk, add));
    const Tensor q = test::randn({B, H, Tq, D}, 4, 0), k = test::randn({B, H, Tk, D}, 4, 1),
                 v = test::randn({B, H, Tk, D}, 4, 2);
    const Tensor dout = test::randn({B, H, Tq, D}, 4, 3);
    for (const Backend be : {Backend::Reference, Backend::Flash}) {
        CAPTURE(backend_info(be).name);
        const Tensor out = attention(be, q, k, v, per_head, {});
        const AttentionGrads g = attention_backward(be, q, k, v, per_head, {}, dout);
        for (int64_t h = 0; h < H; ++h) {
            std::vector<uint8_t> a_h;
            std::vector<float> add_h;
            for (int64_t b = 0; b < B; ++b) {
                const size_t at = static_cast<size_t>((b * H + h) * Tq * Tk), n = static_cast<size_t>(Tq * Tk);
                a_h.insert(a_h.end(), allowed.begin() + static_cast<std::ptrdiff_t>(at),
                           allowed.begin() + static_cast<std::ptrdiff_t>(at + n));
                add_h.insert(add_h.end(), add.begin() + static_cast<std::ptrdiff_t>(at),
                             add.begin() + static_cast<std::ptrdiff_t>(at + n));
            }
            const Mask m_h = Mask::custom(B, Tq, Tk, a_h).combined(Mask::additive_mask(B, Tq, Tk, add_h));
            const Tensor qh = head_of(q, h), kh = head_of(k, h), vh = head_of(v, h), dh = head_of(dout, h);
            const AttentionGrads gh = attention_backward(be, qh, kh, vh, m_h, {}, dh);
            CHECK(normwise_rel(head_of(out, h), attention(be, qh, kh, vh, m_h, {})) <= 1e-6);
            CHECK(normwise_rel(head_of(g.dq, h), gh.dq) <= 1e-6);
            CHECK(normwise_rel(head_of(g.dk, h), gh.dk) <= 1e-6);
            CHECK(normwise_rel(head_of(g.dv, h), gh.dv) <= 1e-6);
        }
    }
    // and the flash kernel against the reference with the per-head mask, element by element
    const AttentionGrads gr = attention_backward(Backend::Reference, q, k, v, per_head, {}, dout);
    const AttentionGrads gf = attention_backward(Backend::Flash, q, k, v, per_head, {}, dout);
    CHECK(normwise_rel(gf.dq, gr.dq) <= 1e-5);
    CHECK(normwise_rel(gf.dk, gr.dk) <= 1e-5);
    CHECK(normwise_rel(gf.dv, gr.dv) <= 1e-5);
    // the cost counts each head's own pairs
    double pairs = 0;
    for (uint8_t a : allowed) pairs += a;
    CHECK(attention_flops(B, H, Tq, Tk, D, D, per_head) == pairs * 2.0 * (D + D));
}
