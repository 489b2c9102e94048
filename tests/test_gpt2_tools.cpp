// Tests of the decoder's interpretability tools on the random tiny GPT-2 of
// tests/fixtures/gpt2-tiny (2 layers, 2 heads, D = 32, Dk = 16, V = 507): the activation
// cache (StackOptions::cache, `attn model cache`), head ablation (StackOptions::ablate,
// `attn model ablate`, `heads --ablation`), and `entropy` / `probe` on a decoder folder.
//
// Tolerances. The cache records the tensors the pass itself computes, so cache against
// forward() is compared for equality, bit for bit. A quantity recomputed here by another
// route (a head's z as pattern · V, a hand-written tail of the model in double) differs by
// float32 rounding: 1e-5 relative to the tensor's scale (a few ulps of sums of 16 to 128
// terms). transformers' weights (reference.safetensors): 1e-5 absolute, and its activations
// (activations.safetensors, forward hooks): 1e-4 x max abs, as the logits in test_gpt2.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/stats.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/heads.hpp"
#include "attn/model/induction.hpp"
#include "attn/nn/fast_ops.hpp"
#include "gpt2_test_util.hpp"
#include "test_util.hpp"

using attn::Gpt2Model;
using attn::Tensor;

namespace {

// Each (arguments, text the error holds): attn exits 2 with that text in one line.
template <class Cases>
void check_refusals(const Cases& cases) {
    for (const auto& c : cases) {
        const std::string &args = c.first, &needle = c.second;  // clang 14: no structured binding inside CAPTURE
        CAPTURE(args);
        const auto r = attn::test::run_attn(args);
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find(needle) != std::string::npos, r.out);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
}

const std::string kTiny = attn::test::source_path("tests/fixtures/gpt2-tiny");

Gpt2Model tiny() { return Gpt2Model::load(attn::locate_gpt2(kTiny)); }

std::vector<int32_t> reference_ids(const attn::SafeTensors& ref, int k) {
    return attn::test::int64_ids(ref, "ids." + std::to_string(k));
}

double max_abs(const Tensor& t) {
    double m = 0;
    for (float v : t.data) m = std::max(m, std::fabs(static_cast<double>(v)));
    return m;
}
double max_diff(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
    return m;
}
double max_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.numel() == b.numel());
    return max_diff(a.ptr(), b.ptr(), a.data.size());
}

attn::ActivationCache run_cache(const Gpt2Model& m, const std::vector<int32_t>& ids, attn::StackOutput* out = nullptr,
                          std::vector<attn::HeadRef> ablate = {}) {
    attn::ActivationCache c;
    attn::StackOptions o;
    o.cache = &c;
    o.ablate = std::move(ablate);
    const attn::StackOutput r = m.forward(ids, o);
    if (out != nullptr) *out = r;
    return c;
}

// LayerNorm of one row in double, as torch computes it (biased variance).
std::vector<double> layer_norm_d(const std::vector<double>& x, const Tensor& g, const Tensor& b, double eps) {
    const size_t D = x.size();
    double mean = 0, var = 0;
    for (double v : x) mean += v / static_cast<double>(D);
    for (double v : x) var += (v - mean) * (v - mean) / static_cast<double>(D);
    std::vector<double> y(D);
    for (size_t d = 0; d < D; ++d) y[d] = (x[d] - mean) / std::sqrt(var + eps) * g.data[d] + b.data[d];
    return y;
}

}  // namespace

TEST_CASE("gpt2 cache: every activation, the same numbers as forward(), and transformers' attention") {
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const int64_t T = static_cast<int64_t>(ids.size()), D = 32, H = 2, Dk = 16, I = 128, V = 507;
    attn::StackOutput plain_out;
    {
        attn::StackOptions o;
        o.record_residual = true;
        plain_out = m.forward(ids, o);
    }
    attn::StackOutput out;
    const attn::ActivationCache c = run_cache(m, ids, &out);
    // the names, in the order the pass made them
    CHECK(c.order == m.stack.cache_names());
    CHECK(c.order.size() == 2 + 2 * 15 + 2);
    CHECK_THROWS_WITH_AS(c.at("blocks.2.hook_resid_pre"), doctest::Contains("no tensor 'blocks.2.hook_resid_pre'"),
                         attn::InputError);
    // shapes
    CHECK(c.at("blocks.0.attn.hook_q").shape == attn::Shape{1, H, T, Dk});
    CHECK(c.at("blocks.1.attn.hook_z").shape == attn::Shape{1, H, T, Dk});
    CHECK(c.at("blocks.1.attn.hook_attn_scores").shape == attn::Shape{1, H, T, T});
    CHECK(c.at("blocks.0.mlp.hook_pre").shape == attn::Shape{1, T, I});
    CHECK(c.at("blocks.0.hook_resid_mid").shape == attn::Shape{1, T, D});
    CHECK(c.at("logits").shape == attn::Shape{T, V});
    // recording changes nothing: the logits and weights of the plain pass, bit for bit
    CHECK(c.at("logits").data == plain_out.logits.data);
    CHECK(out.logits.data == plain_out.logits.data);
    for (int64_t l = 0; l < 2; ++l) {
        CAPTURE(l);
        const std::string b = "blocks." + std::to_string(l) + ".";
        CHECK(c.at(b + "attn.hook_pattern").data == plain_out.attentions[static_cast<size_t>(l)].data);
        CHECK(c.at(b + "hook_resid_pre").data == plain_out.residual[static_cast<size_t>(l)].data);
        // transformers' attention weights
        const Tensor want = ref.to_float("attention.0." + std::to_string(l));
        CHECK(max_diff(c.at(b + "attn.hook_pattern"), want) <= 1e-5);
        // the residual stream adds up: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out
        const Tensor &pre = c.at(b + "hook_resid_pre"), &mid = c.at(b + "hook_resid_mid"),
                     &post = c.at(b + "hook_resid_post"), &ao = c.at(b + "hook_attn_out"),
                     &mo = c.at(b + "hook_mlp_out");
        for (size_t i = 0; i < pre.data.size(); ++i) {
            CHECK(mid.data[i] == pre.data[i] + ao.data[i]);
            CHECK(post.data[i] == mid.data[i] + mo.data[i]);
        }
        if (l == 0) {
            const Tensor &e = c.at("hook_embed"), &p = c.at("hook_pos_embed");
            for (size_t i = 0; i < pre.data.size(); ++i) CHECK(pre.data[i] == e.data[i] + p.data[i]);
        } else {
            CHECK(c.at("blocks.0.hook_resid_post").data == pre.data);
        }
        // scores: -inf exactly where the causal mask forbids (key j > query i); the pattern is their softmax
        const Tensor& s = c.at(b + "attn.hook_attn_scores");
        const Tensor& w = c.at(b + "attn.hook_pattern");
        const Tensor &v = c.at(b + "attn.hook_v"), &z = c.at(b + "attn.hook_z");
        int bad_mask = 0;
        double worst_softmax = 0, worst_z = 0;
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                const float* row = s.ptr() + (h * T + i) * T;
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < T; ++j) {
                    if ((j > i) != (std::isinf(row[j]) && row[j] < 0)) ++bad_mask;
                    if (j <= i) mx = std::max(mx, static_cast<double>(row[j]));
                }
                for (int64_t j = 0; j <= i; ++j) sum += std::exp(row[j] - mx);
                for (int64_t j = 0; j < T; ++j) {
                    const double p = j <= i ? std::exp(row[j] - mx) / sum : 0.0;
                    worst_softmax =
                        std::max(worst_softmax, std::fabs(p - w.data[static_cast<size_t>((h * T + i) * T + j)]));
                }
                // z = pattern · V, per head
                for (int64_t d = 0; d < Dk; ++d) {
                    double acc = 0;
                    for (int64_t j = 0; j < T; ++j)
                        acc += static_cast<double>(w.data[static_cast<size_t>((h * T + i) * T + j)]) *
                               v.data[static_cast<size_t>((h * T + j) * Dk + d)];
                    worst_z = std::max(worst_z, std::fabs(acc - z.data[static_cast<size_t>((h * T + i) * Dk + d)]));
                }
            }
        CHECK(bad_mask == 0);
        CHECK(worst_softmax <= 1e-6);
        CHECK(worst_z <= 1e-5 * max_abs(v));
        // mlp: hook_post = gelu(hook_pre)
        Tensor g = c.at(b + "mlp.hook_pre");
        attn::nn::activation_forward_fast(g.ptr(), g.ptr(), g.numel(), /*relu=*/false, 1);
        CHECK(g.data == c.at(b + "mlp.hook_post").data);
    }
    CHECK(c.at("blocks.1.hook_resid_post").data == plain_out.residual[2].data);
}

TEST_CASE("gpt2 cache: every activation within 1e-4 of transformers' (forward hooks on GPT2LMHeadModel)") {
    // tests/fixtures/gpt2-tiny/activations.safetensors, made by scripts/make-gpt2-cache-fixture.py:
    // the same names, without the batch axis. Tolerance as for the logits in test_gpt2.cpp:
    // max |attn - transformers| <= 1e-4 x max |transformers| per tensor (float32 in another order).
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/activations.safetensors");
    double worst = 0;
    std::string worst_name;
    int compared = 0;
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        const attn::ActivationCache c = run_cache(m, reference_ids(ref, k));
        for (const std::string& n : c.order) {
            const std::string name = "cache." + std::to_string(k) + "." + n;
            if (!ref.has(name)) continue;  // scores, pattern (test_gpt2.cpp), embeddings, logits
            CAPTURE(name);
            const Tensor want = ref.to_float(name);
            const double rel = max_diff(c.at(n), want) / max_abs(want);
            CHECK(rel <= 1e-4);
            if (rel > worst) worst = rel, worst_name = name;
            ++compared;
        }
    }
    CHECK(compared == 2 * (2 * 12 + 1));  // every tensor the fixture holds: 12 a block and LN_f, two texts
    MESSAGE("max |diff| / max |transformers| over " << compared << " tensors: " << worst << " (" << worst_name << ")");
}

TEST_CASE("gpt2 ablation: zeroing a head's z equals zeroing its columns of c_proj, its mean equals a bias") {
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const int64_t Dk = 16, D = 32, T = static_cast<int64_t>(ids.size());
    const attn::StackOutput clean = m.forward(ids);
    // a copy of the model with head h of layer l cut out of the output projection
    auto cut = [&](Gpt2Model& g, int64_t l, int64_t h) {
        Tensor& W = g.stack.layers[static_cast<size_t>(l)].attention.o_proj.W;  // (D, H*Dk)
        for (int64_t o = 0; o < D; ++o)
            for (int64_t k = h * Dk; k < (h + 1) * Dk; ++k) W.data[static_cast<size_t>(o * D + k)] = 0.0f;
    };
    attn::StackOptions o;
    o.record_attention = false;
    SUBCASE("zero: one head, then every head of layer 1") {
        for (const std::vector<attn::HeadRef>& heads :
             {std::vector<attn::HeadRef>{{0, 1}}, std::vector<attn::HeadRef>{{1, 0}, {1, 1}}}) {
            CAPTURE(heads.size());
            Gpt2Model g = m;
            for (const attn::HeadRef& r : heads) cut(g, r.layer, r.head);
            o.ablate = heads;
            const Tensor a = m.forward(ids, o).logits;
            const Tensor want = g.forward(ids, o).logits;
            CHECK(max_diff(a, want) <= 1e-6 * max_abs(want));
            CHECK(max_diff(a, clean.logits) > 1e-3 * max_abs(want));  // the ablation did something
        }
    }
    SUBCASE("mean: the head's mean z through its columns of W_o, added to b_o") {
        const attn::ActivationCache c = run_cache(m, ids);
        const Tensor& z = c.at("blocks.0.attn.hook_z");  // (1, H, T, Dk), clean: nothing before layer 0 changed
        const int64_t h = 1;
        std::vector<double> mean(static_cast<size_t>(Dk), 0.0);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t d = 0; d < Dk; ++d)
                mean[static_cast<size_t>(d)] +=
                    z.data[static_cast<size_t>((h * T + t) * Dk + d)] / static_cast<double>(T);
        Gpt2Model g = m;
        attn::Linear& op = g.stack.layers[0].attention.o_proj;
        for (int64_t out = 0; out < D; ++out) {
            double add = 0;
            for (int64_t d = 0; d < Dk; ++d)
                add += op.W.data[static_cast<size_t>(out * D + h * Dk + d)] * mean[static_cast<size_t>(d)];
            op.b.data[static_cast<size_t>(out)] += static_cast<float>(add);
        }
        cut(g, 0, h);
        o.ablate = {{0, h}};
        o.ablation = attn::AblationMode::Mean;
        attn::ActivationCache ca;
        o.cache = &ca;
        const Tensor a = m.forward(ids, o).logits;
        o.cache = nullptr;
        o.ablate.clear();
        const Tensor want = g.forward(ids, o).logits;
        CHECK(max_diff(a, want) <= 1e-5 * max_abs(want));
        CHECK(max_diff(a, clean.logits) > 1e-3 * max_abs(want));
        // the cache holds the z that went on: every position of head 1 the same vector
        const Tensor& za = ca.at("blocks.0.attn.hook_z");
        for (int64_t t = 1; t < T; ++t)
            CHECK(std::equal(za.ptr() + (h * T + t) * Dk, za.ptr() + (h * T + t + 1) * Dk, za.ptr() + h * T * Dk));
    }
    SUBCASE("refusals") {
        o.ablate = {{2, 0}};
        CHECK_THROWS_WITH_AS(m.forward(ids, o), doctest::Contains("head 2.0 is outside the model (2 layers x 2 heads)"),
                             attn::InputError);
        o.ablate = {{0, 1}, {0, 1}};
        CHECK_THROWS_WITH_AS(m.forward(ids, o), doctest::Contains("head 0.1 is ablated twice"), attn::InputError);
        CHECK_THROWS_AS(attn::gpt2_loss(clean.logits, {ids[0]}), attn::InputError);
    }
}

TEST_CASE("gpt2 ablation: the loss change of a last-layer head equals a hand computation from the clean cache") {
    // Zero-ablating head h of the last layer removes z_h W_o[:, h]^T from resid_mid; the rest
    // (LN_2, the MLP, LN_f, the tied head, the loss) is written out here in double.
    const Gpt2Model m = tiny();
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const int64_t T = static_cast<int64_t>(ids.size()), D = 32, Dk = 16, I = 128, V = 507, h = 1;
    const attn::ActivationCache c = run_cache(m, ids);
    const attn::StackLayer& L = m.stack.layers[1];
    const double eps = m.config.layer_norm_epsilon;
    const Tensor &mid = c.at("blocks.1.hook_resid_mid"), &z = c.at("blocks.1.attn.hook_z");
    const Tensor& Wo = L.attention.o_proj.W;  // (D, H*Dk)
    double total = 0;
    for (int64_t t = 0; t + 1 < T; ++t) {
        std::vector<double> x(static_cast<size_t>(D));
        for (int64_t d = 0; d < D; ++d) {
            double head = 0;  // the head's contribution to attn_out at (t, d)
            for (int64_t k = 0; k < Dk; ++k)
                head += static_cast<double>(z.data[static_cast<size_t>((h * T + t) * Dk + k)]) *
                        Wo.data[static_cast<size_t>(d * D + h * Dk + k)];
            x[static_cast<size_t>(d)] = mid.data[static_cast<size_t>(t * D + d)] - head;
        }
        const std::vector<double> h2 = layer_norm_d(x, L.ln2_gamma, L.ln2_beta, eps);
        std::vector<double> f(static_cast<size_t>(I));
        for (int64_t i = 0; i < I; ++i) {
            double a = L.fc.b.data[static_cast<size_t>(i)];
            for (int64_t d = 0; d < D; ++d)
                a += L.fc.W.data[static_cast<size_t>(i * D + d)] * h2[static_cast<size_t>(d)];
            f[static_cast<size_t>(i)] = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
        }
        for (int64_t d = 0; d < D; ++d) {
            double a = L.proj.b.data[static_cast<size_t>(d)];
            for (int64_t i = 0; i < I; ++i)
                a += L.proj.W.data[static_cast<size_t>(d * I + i)] * f[static_cast<size_t>(i)];
            x[static_cast<size_t>(d)] += a;
        }
        const std::vector<double> y = layer_norm_d(x, m.stack.lnf_gamma, m.stack.lnf_beta, eps);
        std::vector<double> logit(static_cast<size_t>(V));
        double mx = -INFINITY;
        for (int64_t v = 0; v < V; ++v) {
            double a = 0;
            for (int64_t d = 0; d < D; ++d)
                a += m.stack.tok_emb.data[static_cast<size_t>(v * D + d)] * y[static_cast<size_t>(d)];
            logit[static_cast<size_t>(v)] = a;
            mx = std::max(mx, a);
        }
        double sum = 0;
        for (double a : logit) sum += std::exp(a - mx);
        total += mx + std::log(sum) - logit[static_cast<size_t>(ids[static_cast<size_t>(t + 1)])];
    }
    const double hand = total / static_cast<double>(T - 1);
    const double clean = attn::gpt2_loss(c.at("logits"), ids);
    attn::StackOptions o;
    o.ablate = {{1, h}};
    const double ablated = attn::gpt2_loss(m.forward(ids, o).logits, ids);
    MESSAGE("clean loss " << clean << ", ablated " << ablated << ", by hand " << hand);
    CHECK(std::fabs(ablated - hand) <= 1e-5);
    CHECK(std::fabs(ablated - clean) > 1e-4);  // the head mattered, so the check above means something
}

TEST_CASE("gpt2 cli: model cache writes every activation in each dump format, and refuses what it cannot write") {
    const std::string m = "--model '" + kTiny + "'";
    const std::string text = " --text 'When Mary and John went to the store, John gave a drink to'";
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const attn::ActivationCache want = run_cache(tiny(), ids);
    for (const std::string ext : {"safetensors", "npz", "json"}) {
        CAPTURE(ext);
        const std::string f = attn::test::temp_dir("gpt2-cache") + "/c." + ext;
        const auto r = attn::test::run_attn("model cache " + m + text + " --dump '" + f + "'");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        CHECK(r.out.find("blocks.1.attn.hook_pattern") != std::string::npos);
        CHECK(r.out.find("[1, 2, 33, 33]") != std::string::npos);
        CHECK(r.out.find("logits") != std::string::npos);
        const attn::Dump d = attn::read_dump_any(f);
        // the binary formats keep the order; the JSON reader returns the tensors by name (the text is in order)
        if (ext != "json") CHECK(d.order == want.order);
        else CHECK(d.order.size() == want.order.size());
        CHECK(d.config.at("ids").get<std::vector<int32_t>>() == ids);
        for (const std::string& n : want.order) {
            CAPTURE(n);
            REQUIRE(d.tensors.count(n) == 1);
            CHECK(d.tensors.at(n).shape == want.at(n).shape);
            // bit for bit, the -inf of the scores included (NaN-free: compare as bytes)
            CHECK(std::memcmp(d.tensors.at(n).ptr(), want.at(n).ptr(), want.at(n).data.size() * sizeof(float)) == 0);
        }
    }
    const std::pair<std::string, std::string> bad[] = {
        {"model cache " + m + text, "--dump"},
        {"model cache " + m + text + " --dump /tmp/x.bin", "--dump: "},
        {"model cache " + m + text + " --dump /nonexistent-attn-dir/x.json", "--dump: "},
    };
    check_refusals(bad);
}

TEST_CASE(
    "gpt2 cli: model cache --json prints its result object: every tensor's shape, and recording changes nothing") {
    const std::string dir = attn::test::temp_dir("gpt2-cache-json");
    const std::string args =
        "model cache --model '" + kTiny + "' --text 'When Mary and John went to the store' --dump '" + dir + "/c.npz'";
    const auto r = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' " + args + " --json 2>/dev/null");
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);  // stdout is the document alone, strict JSON
    CHECK(j["format"] == "attn-model-cache");
    CHECK(j["architecture"] == "gpt2");
    CHECK(j["dump_format"] == "npz");
    const attn::Dump d = attn::read_dump_any(dir + "/c.npz");
    REQUIRE(j["tensors"].size() == d.order.size());
    double floats = 0;
    for (size_t k = 0; k < d.order.size(); ++k) {
        CHECK(j["tensors"][k]["name"] == d.order[k]);
        CHECK(j["tensors"][k]["shape"].get<std::vector<int64_t>>() == d.tensors.at(d.order[k]).shape);
        CHECK(!j["tensors"][k]["meaning"].get<std::string>().empty());
        floats += static_cast<double>(d.tensors.at(d.order[k]).numel());
    }
    CHECK(j["floats"].get<double>() == floats);
    CHECK(j["ids"] == d.config.at("ids"));
    CHECK(j["logits_max_abs_diff_vs_plain_forward"].get<double>() == 0.0);  // the same pass, bit for bit
    // to a file: the table stays on stdout; with --dump - both would want stdout
    auto f = attn::test::run_attn(args + " --json '" + dir + "/c.json'");
    CHECK(f.code == 0);
    CHECK(f.out.find("wrote " + dir + "/c.json (attn-model-cache JSON)") != std::string::npos);
    CHECK(nlohmann::json::parse(attn::read_file(dir + "/c.json"))["tensors"] == j["tensors"]);
    f = attn::test::run_attn("model cache --model '" + kTiny + "' --text a --dump - --json");
    CHECK(f.code == 2);
    CHECK(f.out.find("both would write to standard output") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("gpt2 cli: model ablate and heads report the library's losses, bad --heads exits 2") {
    const std::string m = "--model '" + kTiny + "'";
    const std::string text = " --text 'When Mary and John went to the store, John gave a drink to'";
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const Gpt2Model g = tiny();
    auto loss = [&](std::vector<attn::HeadRef> heads, attn::AblationMode mode) {
        attn::StackOptions o;
        o.ablate = std::move(heads);
        o.ablation = mode;
        return attn::gpt2_loss(g.forward(ids, o).logits, ids);
    };
    const double clean = loss({}, attn::AblationMode::Zero);
    SUBCASE("ablate --json, zero and mean") {
        for (const auto mode : {attn::AblationMode::Zero, attn::AblationMode::Mean}) {
            const std::string name = attn::ablation_mode_name(mode);
            CAPTURE(name);
            const auto r =
                attn::test::run_attn("model ablate " + m + text + " --heads 0.1,1.0 --mode " + name + " --json");
            REQUIRE_MESSAGE(r.code == 0, r.out);
            const nlohmann::json j = nlohmann::json::parse(r.out);
            CHECK(j.at("format") == "attn-model-ablate");
            CHECK(nlohmann::ordered_json::parse(r.out).begin().key() == "format");  // the envelope's keys first
            CHECK(j.at("mode") == name);
            CHECK(j["clean"]["loss"].get<double>() == doctest::Approx(clean).epsilon(1e-12));
            const double want = loss({{0, 1}, {1, 0}}, mode);
            CHECK(j["ablated"]["loss"].get<double>() == doctest::Approx(want).epsilon(1e-12));
            CHECK(j["loss_change"].get<double>() == doctest::Approx(want - clean).epsilon(1e-9));
            CHECK(want != clean);
            CHECK(j["clean"]["prob_clean_top"].get<double>() == j["clean"]["top"]["prob"].get<double>());
        }
        const auto t = attn::test::run_attn("model ablate " + m + text + " --heads 1.1");
        REQUIRE_MESSAGE(t.code == 0, t.out);
        CHECK(t.out.find("p(clean top token)") != std::string::npos);
        CHECK(t.out.find("zero: the head's z") != std::string::npos);
    }
    SUBCASE("heads --ablation --json: every head once, sorted by the loss rise, each the library's") {
        const auto r = attn::test::run_attn("model heads " + m + text + " --ablation --json");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        CHECK(j.at("format") == "attn-model-heads");
        CHECK(nlohmann::ordered_json::parse(r.out).begin().key() == "format");
        REQUIRE(j.at("heads").size() == 4);
        double last = INFINITY;
        std::vector<std::pair<int64_t, int64_t>> seen;
        const attn::StackOutput out = g.forward(ids);
        for (const auto& e : j["heads"]) {
            const int64_t l = e["layer"].get<int64_t>(), h = e["head"].get<int64_t>();
            seen.emplace_back(l, h);
            const double rise = e["loss_rise"].get<double>();
            CHECK(rise <= last);
            last = rise;
            CHECK(e["loss"].get<double>() == doctest::Approx(loss({{l, h}}, attn::AblationMode::Zero)).epsilon(1e-12));
            const auto st = attn::head_stats(out.attentions[static_cast<size_t>(l)], attn::Mask::make_causal());
            CHECK(e["entropy"].get<double>() == doctest::Approx(st[static_cast<size_t>(h)].mean_normalized_entropy));
        }
        std::sort(seen.begin(), seen.end());
        CHECK(seen == std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}});
        const auto t = attn::test::run_attn("model heads " + m + text);
        REQUIRE_MESSAGE(t.code == 0, t.out);
        CHECK(t.out.find("entropy") != std::string::npos);
        CHECK(t.out.find("rise") == std::string::npos);
    }
    SUBCASE("refusals: one line, exit 2") {
        const std::pair<std::string, std::string> cases[] = {
            {"model ablate " + m + text + " --heads 1", "--heads: '1' is not a head of this model"},
            {"model ablate " + m + text + " --heads 0.2", "--heads: '0.2' is not a head of this model"},
            {"model ablate " + m + text + " --heads 2.0", "layer in [0, 1] and head in [0, 1]"},
            {"model ablate " + m + text + " --heads 0.1,x.y", "--heads: 'x.y'"},
            {"model ablate " + m + text + " --heads 0.1,", "--heads: '' is not a head"},
            {"model ablate " + m + text + " --heads -1.0", "--heads"},
            {"model ablate " + m + text + " --heads 0.1,0.1", "--heads: 0.1 is named twice"},
            {"model ablate " + m + text + " --heads 0.1 --mode half", "--mode"},
            {"model ablate " + m + " --text a --heads 0.1", "--text: gives 1 token"},
            {"model heads " + m + text + " --mode mean", "--mode: goes with --ablation"},
        };
        check_refusals(cases);
    }
}

TEST_CASE("gpt2 cli: model entropy and probe run on a decoder folder, with the causal mask") {
    const std::string m = "--model '" + kTiny + "'";
    const std::string text = " --text 'When Mary and John went to the store, John gave a drink to'";
    const attn::SafeTensors ref = attn::SafeTensors::load(kTiny + "/reference.safetensors");
    const std::vector<int32_t> ids = reference_ids(ref, 0);
    const Gpt2Model g = tiny();
    const attn::StackOutput out = g.forward(ids);
    SUBCASE("entropy: each row over ln(i + 1); a random GPT-2 is near uniform") {
        const auto r = attn::test::run_attn("model entropy " + m + text + " --json");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        const auto& trained = j["models"][0]["entropy"];
        const auto& random = j["models"][1]["entropy"];
        for (size_t l = 0; l < 2; ++l) {
            const auto st = attn::head_stats(out.attentions[l], attn::Mask::make_causal());
            for (size_t h = 0; h < 2; ++h) {
                CHECK(trained[l][h].get<double>() == doctest::Approx(st[h].mean_normalized_entropy));
                CHECK(random[l][h].get<double>() > 0.95);  // N(0, 0.02^2) weights: scores near 0, rows near uniform
            }
        }
        CHECK(j["row_bound_nats"][3].get<double>() == doctest::Approx(std::log(4.0)));
        // the encoder's keys too: the (H, H) divergences of each layer, 0 on the diagonal
        REQUIRE(j["models"][0]["similarity_js"].size() == 2);
        CHECK(j["models"][0]["similarity_js"][1][0][0].get<double>() == doctest::Approx(0.0));
        CHECK(j["models"][0]["similarity_js"][1][0][1].get<double>() ==
              doctest::Approx(attn::head_similarity(out.attentions[1], attn::Mask::make_causal()).data[1]));
        for (size_t i = 0; i < ids.size(); ++i)
            CHECK(j["row_entropy_nats"][i].get<double>() <= j["row_bound_nats"][i].get<double>() + 1e-6);
        const auto t = attn::test::run_attn("model entropy " + m + text);
        REQUIRE_MESSAGE(t.code == 0, t.out);
        CHECK(t.out.find("ln(i + 1)") != std::string::npos);
    }
    SUBCASE("probe: the weights of the library's probe_heads on the words' tokens") {
        const auto r = attn::test::run_attn("model probe " + m + text + " --from John@2 --to Mary,store,drink --json");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const nlohmann::json j = nlohmann::json::parse(r.out);
        const auto from = j["from_tokens"].get<std::vector<int64_t>>();
        const auto to = j["to_tokens"].get<std::vector<std::vector<int64_t>>>();
        REQUIRE(!from.empty());
        // the second "John" spells the same token(s) as the first, later
        CHECK(from.front() > 5);
        const auto rows = attn::probe_heads(out.attentions, 0, from, to);
        REQUIRE(j["heads"].size() == rows.size());
        for (const auto& e : j["heads"]) {
            const auto it = std::find_if(rows.begin(), rows.end(), [&](const attn::ProbeRow& p) {
                return p.layer == e["layer"].get<int64_t>() && p.head == e["head"].get<int64_t>();
            });
            REQUIRE(it != rows.end());
            for (size_t k = 0; k < 3; ++k) CHECK(e["weight"][k].get<double>() == doctest::Approx(it->weight[k]));
            CHECK(e["weight"][2].get<double>() == 0.0);  // "drink" comes after the query: masked
        }
        const auto t = attn::test::run_attn("model probe " + m + text + " --from John@2 --to Mary,drink");
        REQUIRE_MESSAGE(t.code == 0, t.out);
        CHECK(t.out.find("'drink' comes after the query") != std::string::npos);
        const auto bad = attn::test::run_attn("model probe " + m + text + " --from Bob --to Mary");
        CHECK(bad.code == 2);
        CHECK_MESSAGE(bad.out.find("--from: 'Bob' is not a word of the text") != std::string::npos, bad.out);
        const auto bad2 = attn::test::run_attn("model probe " + m + text + " --from John@3 --to Mary");
        CHECK(bad2.code == 2);
        CHECK_MESSAGE(bad2.out.find("--from: 'John' occurs 2 time(s) in the text, not 3") != std::string::npos,
                      bad2.out);
    }
}

TEST_CASE("gpt2 cli: model induction --ablate reports the loss per copy with the heads removed") {
    const std::string m = "--model '" + kTiny + "'";
    const auto r =
        attn::test::run_attn("model induction " + m + " --length 20 --seed 3 --ablate 1.0,0.1 --mode mean --json");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const auto ids = j.at("ids").get<std::vector<int32_t>>();
    attn::StackOptions o;
    o.ablate = {{1, 0}, {0, 1}};
    o.ablation = attn::AblationMode::Mean;
    const Tensor logits = tiny().forward(ids, o).logits;
    CHECK(j["ablated"]["mode"] == "mean");
    CHECK(j["ablated"]["heads"] == nlohmann::json::parse("[[1, 0], [0, 1]]"));
    CHECK(j["ablated"]["loss_first_copy"].get<double>() ==
          doctest::Approx(attn::next_token_loss(logits, ids, 1, 20)).epsilon(1e-12));
    CHECK(j["ablated"]["loss_second_copy"].get<double>() ==
          doctest::Approx(attn::next_token_loss(logits, ids, 21, 40)).epsilon(1e-12));
    CHECK(j["ablated"]["loss_second_copy"].get<double>() != j["loss_second_copy"].get<double>());
    for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
             {"model induction " + m + " --ablate 1.2", "--ablate: '1.2' is not a head of this model"},
             {"model induction " + m + " --mode mean", "--mode: goes with --ablate"}}) {
        const auto bad = attn::test::run_attn(args);
        CHECK(bad.code == 2);
        CHECK_MESSAGE(bad.out.find(needle) != std::string::npos, bad.out);
    }
}
