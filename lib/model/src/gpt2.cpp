// gpt2.cpp: loading and running a GPT-2 decoder (see attn/model/gpt2.hpp for the shapes).
#include "attn/model/gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/induction.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/fast_ops.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_config_json(const std::string& path) {
    nlohmann::json j = parse_json_relaxed(read_file(path), path);
    if (!j.is_object()) throw InputError(path + ": not a JSON object");
    return j;
}

int64_t json_int(const nlohmann::json& j, const char* key, const std::string& what, int64_t lo, int64_t hi) {
    if (!j.contains(key) || !j[key].is_number_integer())
        throw InputError(fmt::format("{}: needs an integer \"{}\"", what, key));
    const int64_t v = j[key].get<int64_t>();
    if (v < lo || v > hi) throw InputError(fmt::format("{}: \"{}\" = {} is outside [{}, {}]", what, key, v, lo, hi));
    return v;
}

bool json_bool(const nlohmann::json& j, const char* key, bool dflt, const std::string& what) {
    if (!j.contains(key) || j[key].is_null()) return dflt;
    if (!j[key].is_boolean()) throw InputError(fmt::format("{}: \"{}\" must be true or false", what, key));
    return j[key].get<bool>();
}

// ids (T) -> checked against the model's sizes
void check_ids(const std::vector<int32_t>& ids, int64_t first_pos, const Gpt2Config& c, const std::string& vocab) {
    if (first_pos + static_cast<int64_t>(ids.size()) > c.n_positions)
        throw InputError(fmt::format("{} tokens are more than the model's {} positions (n_positions)",
                                     first_pos + static_cast<int64_t>(ids.size()), c.n_positions));
    for (int32_t id : ids)
        if (id < 0 || id >= c.vocab_size)
            throw InputError(fmt::format("token id {} is outside the vocabulary of {} (0..{})", id, vocab, c.vocab_size - 1));
}

}  // namespace

std::string folder_model_type(const std::string& dir) {
    std::error_code ec;
    const fs::path cfg = fs::path(dir) / "config.json";
    if (!fs::is_regular_file(cfg, ec)) return "";
    const nlohmann::json j = read_config_json(cfg.string());
    if (j.contains("model_type") && j["model_type"].is_string()) return j["model_type"].get<std::string>();
    return "";
}

Gpt2Files locate_gpt2(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("no model folder at '{}'", dir));
    Gpt2Files f;
    f.dir = dir;
    const fs::path d(dir);
    f.config = (d / "config.json").string();
    f.weights = (d / "model.safetensors").string();
    f.vocab = (d / "vocab.json").string();
    f.merges = (d / "merges.txt").string();
    const std::string tokenizer = (d / "tokenizer.json").string();
    auto missing = [&](const std::string& name) {
        return InputError(fmt::format("the model folder '{}' is incomplete: {} is missing (a GPT-2 folder holds "
                                      "config.json, model.safetensors, and vocab.json + merges.txt or tokenizer.json)",
                                      dir, name));
    };
    for (const std::string* p : {&f.config, &f.weights})
        if (!fs::is_regular_file(*p, ec)) throw missing(fs::path(*p).filename().string());
    // vocab.json + merges.txt when both are there, else tokenizer.json
    const bool vocab = fs::is_regular_file(f.vocab, ec), merges = fs::is_regular_file(f.merges, ec);
    if (!(vocab && merges)) {
        if (!fs::is_regular_file(tokenizer, ec)) {
            if (vocab || merges) throw missing(vocab ? "merges.txt" : "vocab.json");
            throw missing("the tokenizer (vocab.json + merges.txt, or tokenizer.json)");
        }
        f.vocab = f.tokenizer_json = tokenizer;
        f.merges.clear();
    }
    return f;
}

Gpt2Config read_gpt2_config(const Gpt2Files& files) {
    const std::string& what = files.config;
    const nlohmann::json j = read_config_json(what);
    const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
    if (type != "gpt2")
        throw InputError(fmt::format("{}: model_type is {}, not \"gpt2\" (the decoder architecture attn reads)", what,
                                     type.empty() ? std::string("missing") : "\"" + type + "\""));
    Gpt2Config c;
    c.vocab_size = json_int(j, "vocab_size", what, 1, 10'000'000);
    c.n_positions = json_int(j, "n_positions", what, 1, 1 << 20);
    c.n_embd = json_int(j, "n_embd", what, 1, 65536);
    c.n_layer = json_int(j, "n_layer", what, 1, 1000);
    c.n_head = json_int(j, "n_head", what, 1, 1024);
    if (c.n_embd % c.n_head != 0)
        throw InputError(fmt::format("{}: n_embd {} is not divisible by n_head {}", what, c.n_embd, c.n_head));
    c.n_inner = 4 * c.n_embd;
    if (j.contains("n_inner") && !j["n_inner"].is_null()) c.n_inner = json_int(j, "n_inner", what, 1, 1 << 20);
    if (j.contains("layer_norm_epsilon")) {
        // as a float, the type LayerNorm adds it in (see read_bert_config)
        const float eps = j["layer_norm_epsilon"].is_number() ? j["layer_norm_epsilon"].get<float>() : NAN;
        if (!(eps > 0.0f && eps < 1.0f))
            throw InputError(fmt::format("{}: \"layer_norm_epsilon\" must be a positive number below 1 that a float can hold",
                                         what));
        c.layer_norm_epsilon = eps;
    }
    if (j.contains("activation_function")) {
        const auto& a = j["activation_function"];
        const std::string act = a.is_string() ? a.get<std::string>() : "";
        if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast" && act != "gelu")
            throw InputError(fmt::format("{}: \"activation_function\" {} is not one attn implements (gelu_new, "
                                         "gelu_pytorch_tanh, gelu_fast: the tanh form; gelu: the erf form)",
                                         what, a.dump()));
        c.activation = act;
    }
    c.scale_attn_weights = json_bool(j, "scale_attn_weights", true, what);
    c.tie_word_embeddings = json_bool(j, "tie_word_embeddings", true, what);
    if (json_bool(j, "scale_attn_by_inverse_layer_idx", false, what))
        throw InputError(what + ": \"scale_attn_by_inverse_layer_idx\" is true, which attn does not implement");
    if (json_bool(j, "add_cross_attention", false, what))
        throw InputError(what + ": \"add_cross_attention\" is true: an encoder-decoder GPT-2, which attn does not run");
    return c;
}

BpeTokenizer load_gpt2_tokenizer(const Gpt2Files& files, const Gpt2Config& config) {
    BpeTokenizer tok = files.tokenizer_json.empty() ? BpeTokenizer::load(files.vocab, files.merges)
                                                    : BpeTokenizer::load_tokenizer_json(files.tokenizer_json);
    // transformers' GPT2TokenizerFast adds <|endoftext|> after a vocabulary that lacks it, so its
    // tokenizer.json may hold that one token past the embedding: accepted, and refused by forward()
    // (by id, one line) only when a text types it
    const bool eos_past = !files.tokenizer_json.empty() && tok.eos_id() == config.vocab_size &&
                          tok.vocab_size() == config.vocab_size + 1;
    if (tok.vocab_size() > config.vocab_size && !eos_past)
        throw InputError(fmt::format("{}: has {} tokens but {} says vocab_size is {} (the embedding has that many rows)",
                                     files.vocab, tok.vocab_size(), files.config, config.vocab_size));
    return tok;
}

// (in, out) Conv1D weight -> (out, in) nn.Linear weight, columns [c0, c0 + out) of the Conv1D.
static Tensor conv1d_to_linear(const Tensor& w, int64_t c0, int64_t out) {
    const int64_t in = w.dim(0), ld = w.dim(1);
    Tensor t({out, in});
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) t.data[static_cast<size_t>(o * in + i)] = w.data[static_cast<size_t>(i * ld + c0 + o)];
    return t;
}

static Tensor slice(const Tensor& b, int64_t c0, int64_t n) {
    Tensor t({n});
    std::copy(b.data.begin() + c0, b.data.begin() + c0 + n, t.data.begin());
    return t;
}

Gpt2Model Gpt2Model::load(const Gpt2Files& files) { return load(files, read_gpt2_config(files)); }

Gpt2Model Gpt2Model::load(const Gpt2Files& files, const Gpt2Config& config) {
    Gpt2Model m;
    m.files = files;
    m.config = config;
    const Gpt2Config& c = m.config;
    const SafeTensors st = SafeTensors::load(files.weights);
    const std::string pre = st.has("transformer.wte.weight") ? "transformer." : "";
    const int64_t D = c.n_embd, I = c.n_inner, V = c.vocab_size;
    std::set<std::string> used;
    auto get = [&](const std::string& name, const Shape& shape) {
        const std::string full = (name == "lm_head.weight" ? "" : pre) + name;
        if (!st.has(full))
            throw InputError(fmt::format("{}: has no tensor '{}' (a GPT-2 with {} layers needs it)", files.weights, full,
                                         c.n_layer));
        Tensor t = st.to_float(full, shape);
        const auto bad = std::find_if(t.data.begin(), t.data.end(), [](float v) { return !std::isfinite(v); });
        if (bad != t.data.end())
            throw InputError(fmt::format("{}: tensor '{}' holds the non-finite value {} at flat index {}", files.weights,
                                         full, *bad, bad - t.data.begin()));
        used.insert(full);
        return t;
    };
    m.wte = get("wte.weight", {V, D});
    m.wpe = get("wpe.weight", {c.n_positions, D});
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = fmt::format("h.{}.", l);
        Gpt2Layer L;
        L.ln1_gamma = get(p + "ln_1.weight", {D});
        L.ln1_beta = get(p + "ln_1.bias", {D});
        const Tensor c_attn = get(p + "attn.c_attn.weight", {D, 3 * D});  // Conv1D: [in, out]
        const Tensor c_attn_b = get(p + "attn.c_attn.bias", {3 * D});
        const Tensor c_proj = get(p + "attn.c_proj.weight", {D, D});
        L.attention = MultiHeadAttention(MhaConfig{D, c.n_head, 0, 0, true});
        L.attention.q_proj.W = conv1d_to_linear(c_attn, 0, D);
        L.attention.k_proj.W = conv1d_to_linear(c_attn, D, D);
        L.attention.v_proj.W = conv1d_to_linear(c_attn, 2 * D, D);
        L.attention.q_proj.b = slice(c_attn_b, 0, D);
        L.attention.k_proj.b = slice(c_attn_b, D, D);
        L.attention.v_proj.b = slice(c_attn_b, 2 * D, D);
        L.attention.o_proj.W = conv1d_to_linear(c_proj, 0, D);
        L.attention.o_proj.b = get(p + "attn.c_proj.bias", {D});
        L.ln2_gamma = get(p + "ln_2.weight", {D});
        L.ln2_beta = get(p + "ln_2.bias", {D});
        L.fc.W = conv1d_to_linear(get(p + "mlp.c_fc.weight", {D, I}), 0, I);
        L.fc.b = get(p + "mlp.c_fc.bias", {I});
        L.proj.W = conv1d_to_linear(get(p + "mlp.c_proj.weight", {I, D}), 0, D);
        L.proj.b = get(p + "mlp.c_proj.bias", {D});
        m.layers.push_back(std::move(L));
    }
    m.lnf_gamma = get("ln_f.weight", {D});
    m.lnf_beta = get("ln_f.bias", {D});
    // tied (transformers' default): a stored lm_head.weight is replaced by wte on load, as there
    if (!c.tie_word_embeddings) m.lm_head = get("lm_head.weight", {V, D});
    else if (st.has("lm_head.weight")) (void)get("lm_head.weight", {V, D});
    for (const std::string& name : st.names()) {
        if (used.count(name) != 0) continue;
        // the causal-mask buffers older transformers saved: a constant, not a weight
        const bool buffer = name.rfind(pre + "h.", 0) == 0 &&
                            (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
        if (!buffer)
            throw InputError(fmt::format("{}: tensor '{}' is not part of a GPT2LMHeadModel with {} layers{}", files.weights,
                                         name, c.n_layer, pre.empty() ? "" : " (names prefixed \"transformer.\")"));
    }
    return m;
}

namespace {

// rows of x (rows, D) -> LayerNorm (lib/nn's) into a fresh (1, rows, D) tensor
Tensor layer_norm(const Tensor& x, const Tensor& g, const Tensor& b, float eps) {
    Tensor h(x.shape);
    const int64_t D = g.numel(), N = x.numel() / D;
    std::vector<float> mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    nn::layernorm_forward_fast(h.ptr(), mean.data(), rstd.data(), x.ptr(), g.ptr(), b.ptr(), N, D, 1, eps);
    return h;
}

// f in place through the configured GELU of lib/nn: "gelu" the erf form, the others the tanh form
void gelu_in_place(Tensor& f, const Gpt2Config& c) {
    if (c.activation == "gelu") nn::gelu_erf_forward_fast(f.ptr(), f.ptr(), f.numel(), 1);
    else nn::activation_forward_fast(f.ptr(), f.ptr(), f.numel(), /*relu=*/false, 1);
}

// x (1, T, D) += the feed-forward of LN_2(x)
void mlp_residual(Tensor& x, const Gpt2Layer& L, const Gpt2Config& c) {
    const Tensor h = layer_norm(x, L.ln2_gamma, L.ln2_beta, c.layer_norm_epsilon);
    Tensor f = L.fc.forward(h);  // (1, T, I)
    gelu_in_place(f, c);
    const Tensor o = L.proj.forward(f);  // (1, T, D)
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += o.data[i];
}

AttentionOptions attention_options(const Gpt2Config& c) {
    AttentionOptions opt;
    if (!c.scale_attn_weights) opt.scale.kind = ScaleKind::None;
    return opt;
}

}  // namespace

const Tensor& Gpt2Cache::at(const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end()) throw InputError(fmt::format("the activation cache has no tensor '{}'", name));
    return it->second;
}

void Gpt2Cache::put(const std::string& name, Tensor t) {
    if (tensors.find(name) == tensors.end()) order.push_back(name);
    tensors[name] = std::move(t);
}

std::vector<std::string> gpt2_cache_names(int64_t n_layer) {
    std::vector<std::string> n{"hook_embed", "hook_pos_embed"};
    for (int64_t l = 0; l < n_layer; ++l)
        for (const char* s : {"hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
                              "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out",
                              "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out",
                              "hook_resid_post"})
            n.push_back(fmt::format("blocks.{}.{}", l, s));
    n.push_back("ln_final.hook_normalized");
    n.push_back("logits");
    return n;
}

const char* ablation_mode_name(AblationMode m) { return m == AblationMode::Mean ? "mean" : "zero"; }

namespace {

// z (1, H, T, Dk): head h's slice replaced, in place, as `mode` says.
void ablate_head(Tensor& z, int64_t h, AblationMode mode) {
    const int64_t T = z.dim(2), Dk = z.dim(3);
    float* zh = z.ptr() + h * T * Dk;  // (T, Dk)
    if (mode == AblationMode::Zero) {
        std::fill(zh, zh + T * Dk, 0.0f);
        return;
    }
    for (int64_t d = 0; d < Dk; ++d) {
        double sum = 0;
        for (int64_t t = 0; t < T; ++t) sum += zh[t * Dk + d];
        const float mean = static_cast<float>(sum / static_cast<double>(T));
        for (int64_t t = 0; t < T; ++t) zh[t * Dk + d] = mean;
    }
}

}  // namespace

Gpt2Output Gpt2Model::forward(const std::vector<int32_t>& ids, const Gpt2Options& opt) const {
    // ids (T) -> logits (T, V), attentions L x (1, H, T, T)
    const Gpt2Config& c = config;
    if (ids.empty()) throw InputError("a GPT-2 forward pass needs at least one token");
    check_ids(ids, 0, c, files.vocab.empty() ? "the model" : files.vocab);
    const int64_t T = static_cast<int64_t>(ids.size()), D = c.n_embd, V = c.vocab_size, H = c.n_head;
    // the ablated heads, per layer
    std::vector<std::vector<int64_t>> ablated(static_cast<size_t>(c.n_layer));
    for (size_t k = 0; k < opt.ablate.size(); ++k) {
        const HeadRef& r = opt.ablate[k];
        if (r.layer < 0 || r.layer >= c.n_layer || r.head < 0 || r.head >= H)
            throw InputError(fmt::format("head {}.{} is outside the model ({} layers x {} heads)", r.layer, r.head,
                                         c.n_layer, H));
        if (std::find(opt.ablate.begin(), opt.ablate.begin() + static_cast<std::ptrdiff_t>(k), r) !=
            opt.ablate.begin() + static_cast<std::ptrdiff_t>(k))
            throw InputError(fmt::format("head {}.{} is ablated twice", r.layer, r.head));
        ablated[static_cast<size_t>(r.layer)].push_back(r.head);
    }
    Gpt2Cache* cache = opt.cache;
    auto keep = [&](int64_t l, const char* name, const Tensor& t) {
        if (cache != nullptr) cache->put(l < 0 ? std::string(name) : fmt::format("blocks.{}.{}", l, name), t);
    };
    Gpt2Output out;
    // x = wte[ids] + wpe[t]   (1, T, D)
    Tensor x({1, T, D});
    for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d)
            x.data[static_cast<size_t>(t * D + d)] = wte.data[static_cast<size_t>(ids[static_cast<size_t>(t)] * D + d)] +
                                                     wpe.data[static_cast<size_t>(t * D + d)];
    if (cache != nullptr) {
        Tensor e({1, T, D}), p({1, T, D});
        for (int64_t t = 0; t < T; ++t) {
            std::copy_n(wte.ptr() + ids[static_cast<size_t>(t)] * D, D, e.ptr() + t * D);
            std::copy_n(wpe.ptr() + t * D, D, p.ptr() + t * D);
        }
        keep(-1, "hook_embed", e);
        keep(-1, "hook_pos_embed", p);
    }
    const Mask causal = Mask::make_causal();
    const AttentionOptions aopt = attention_options(c);
    const bool record = opt.record_attention || cache != nullptr;
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const Gpt2Layer& L = layers[static_cast<size_t>(l)];
        const MultiHeadAttention& mha = L.attention;
        if (opt.record_residual) out.residual.push_back(x);
        keep(l, "hook_resid_pre", x);
        // x = x + c_proj(merge(z)),  z = attention(LN_1(x)) per head: MultiHeadAttention::forward's
        // steps written out, so that z can be read and replaced before the projection
        const Tensor h = layer_norm(x, L.ln1_gamma, L.ln1_beta, c.layer_norm_epsilon);
        keep(l, "ln1.hook_normalized", h);
        const Tensor q = split_heads(mha.q_proj.forward(h), H);  // (1, H, T, Dk)
        const Tensor k = split_heads(mha.k_proj.forward(h), H);  // (1, H, T, Dk)
        const Tensor v = split_heads(mha.v_proj.forward(h), H);  // (1, H, T, Dk)
        AttentionRecord rec;
        Tensor z = attention(Backend::Reference, q, k, v, causal, aopt, record ? &rec : nullptr, 1);  // (1, H, T, Dk)
        for (int64_t head : ablated[static_cast<size_t>(l)]) ablate_head(z, head, opt.ablation);
        const Tensor a = mha.o_proj.forward(merge_heads(z));  // (1, T, D)
        for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += a.data[i];
        if (cache != nullptr) {
            keep(l, "attn.hook_q", q);
            keep(l, "attn.hook_k", k);
            keep(l, "attn.hook_v", v);
            keep(l, "attn.hook_attn_scores", rec.scores_masked);
            keep(l, "attn.hook_pattern", rec.weights);
            keep(l, "attn.hook_z", z);
            keep(l, "hook_attn_out", a);
            keep(l, "hook_resid_mid", x);
        }
        if (opt.record_attention) out.attentions.push_back(std::move(rec.weights));
        // x = x + c_proj(gelu(c_fc(LN_2(x))))
        const Tensor h2 = layer_norm(x, L.ln2_gamma, L.ln2_beta, c.layer_norm_epsilon);
        Tensor f = L.fc.forward(h2);  // (1, T, I)
        keep(l, "ln2.hook_normalized", h2);
        keep(l, "mlp.hook_pre", f);
        gelu_in_place(f, c);
        keep(l, "mlp.hook_post", f);
        const Tensor o = L.proj.forward(f);  // (1, T, D)
        for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += o.data[i];
        keep(l, "hook_mlp_out", o);
        keep(l, "hook_resid_post", x);
    }
    if (opt.record_residual) out.residual.push_back(x);
    // logits = LN_f(x) head^T   (T, V)
    const Tensor y = layer_norm(x, lnf_gamma, lnf_beta, c.layer_norm_epsilon);
    keep(-1, "ln_final.hook_normalized", y);
    out.logits = Tensor({T, V});
    linear_forward(out.logits.ptr(), y.ptr(), head().ptr(), nullptr, T, D, V);
    keep(-1, "logits", out.logits);
    return out;
}

Gpt2Model Gpt2Model::random(const Gpt2Config& c, uint64_t seed) {
    Gpt2Model m;
    m.config = c;
    const int64_t D = c.n_embd, I = c.n_inner, V = c.vocab_size;
    uint64_t stream = 0;
    auto normal = [&](Shape s, double sd) {
        Tensor t(std::move(s));
        Rng rng(seed, ++stream);
        for (float& v : t.data) v = static_cast<float>(sd) * rng.normal();
        return t;
    };
    const double sd = 0.02, sd_proj = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
    m.wte = normal({V, D}, sd);
    m.wpe = normal({c.n_positions, D}, sd);
    for (int64_t l = 0; l < c.n_layer; ++l) {
        Gpt2Layer L;
        L.ln1_gamma = Tensor({D}, 1.0f);
        L.ln1_beta = Tensor({D});
        L.attention = MultiHeadAttention(MhaConfig{D, c.n_head, 0, 0, true});
        for (Linear* lin : {&L.attention.q_proj, &L.attention.k_proj, &L.attention.v_proj}) {
            lin->W = normal({D, D}, sd);
            lin->b = Tensor({D});
        }
        L.attention.o_proj.W = normal({D, D}, sd_proj);
        L.attention.o_proj.b = Tensor({D});
        L.ln2_gamma = Tensor({D}, 1.0f);
        L.ln2_beta = Tensor({D});
        L.fc.W = normal({I, D}, sd);
        L.fc.b = Tensor({I});
        L.proj.W = normal({D, I}, sd_proj);
        L.proj.b = Tensor({D});
        m.layers.push_back(std::move(L));
    }
    m.lnf_gamma = Tensor({D}, 1.0f);
    m.lnf_beta = Tensor({D});
    if (!c.tie_word_embeddings) m.lm_head = normal({V, D}, sd);
    return m;
}

double gpt2_loss(const Tensor& logits, const std::vector<int32_t>& ids) {
    if (ids.size() < 2) throw InputError("a next-token loss needs at least 2 tokens (the first predicts the second)");
    return next_token_loss(logits, ids, 0, static_cast<int64_t>(ids.size()) - 1);
}

KvCache Gpt2Model::make_cache() const { return KvCache(config.n_layer, 1, config.n_head, head_dim(), head_dim()); }

Tensor Gpt2Model::step(int32_t id, KvCache& cache, std::vector<Tensor>* attentions) const {
    // one token at position p = cache.length(): x (1, 1, D) -> logits (V)
    const Gpt2Config& c = config;
    const int64_t p = cache.length(), D = c.n_embd, V = c.vocab_size, H = c.n_head;
    check_ids({id}, p, c, files.vocab.empty() ? "the model" : files.vocab);
    Tensor x({1, 1, D});
    for (int64_t d = 0; d < D; ++d)
        x.data[static_cast<size_t>(d)] =
            wte.data[static_cast<size_t>(id * D + d)] + wpe.data[static_cast<size_t>(p * D + d)];
    const AttentionOptions aopt = attention_options(c);
    if (attentions != nullptr) attentions->clear();
    for (size_t l = 0; l < layers.size(); ++l) {
        const Gpt2Layer& L = layers[l];
        const MultiHeadAttention& mha = L.attention;
        const Tensor h = layer_norm(x, L.ln1_gamma, L.ln1_beta, c.layer_norm_epsilon);
        const Tensor q = split_heads(mha.q_proj.forward(h), H);  // (1, H, 1, Dk)
        cache.append(static_cast<int64_t>(l), split_heads(mha.k_proj.forward(h), H), split_heads(mha.v_proj.forward(h), H));
        // the one query sees every cached key: no mask needed (attn/nn/kv_cache.hpp)
        AttentionRecord rec;
        const Tensor head_out = attention(Backend::Reference, q, cache.keys(static_cast<int64_t>(l)),
                                          cache.values(static_cast<int64_t>(l)), Mask::none(), aopt,
                                          attentions != nullptr ? &rec : nullptr, 1);  // (1, H, 1, Dk)
        if (attentions != nullptr) attentions->push_back(std::move(rec.weights));
        const Tensor a = mha.o_proj.forward(merge_heads(head_out));  // (1, 1, D)
        for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += a.data[i];
        mlp_residual(x, L, c);
    }
    const Tensor y = layer_norm(x, lnf_gamma, lnf_beta, c.layer_norm_epsilon);
    Tensor logits({V});
    linear_forward(logits.ptr(), y.ptr(), head().ptr(), nullptr, 1, D, V);
    return logits;
}

std::vector<float> softmax_probs(const float* logits, int64_t V, double temperature) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, static_cast<double>(logits[i]) / temperature);
    std::vector<double> e(static_cast<size_t>(V));
    double sum = 0;
    for (int64_t i = 0; i < V; ++i) sum += e[static_cast<size_t>(i)] = std::exp(logits[i] / temperature - mx);
    std::vector<float> p(static_cast<size_t>(V));
    for (int64_t i = 0; i < V; ++i) p[static_cast<size_t>(i)] = static_cast<float>(e[static_cast<size_t>(i)] / sum);
    return p;
}

std::vector<Gpt2Step> gpt2_generate(const Gpt2Model& m, const std::vector<int32_t>& prompt,
                                    const Gpt2GenerateOptions& opt) {
    if (prompt.empty()) throw InputError("generation needs a prompt of at least one token");
    if (opt.steps < 0) throw InputError(fmt::format("steps must be >= 0, got {}", opt.steps));
    // a temperature near 0 would overflow logits / T: below 0.01 use greedy decoding
    if (!(opt.temperature == 0.0 || (opt.temperature >= 0.01 && opt.temperature <= 100.0)))
        throw InputError(fmt::format("temperature must be 0 (greedy) or in [0.01, 100], got {}", opt.temperature));
    const int64_t total = static_cast<int64_t>(prompt.size()) + opt.steps;
    if (total > m.config.n_positions)
        throw InputError(fmt::format("{} prompt tokens + {} steps = {} positions, more than the model's {} (n_positions)",
                                     prompt.size(), opt.steps, total, m.config.n_positions));
    const int64_t V = m.config.vocab_size;
    KvCache cache = m.make_cache();
    Tensor logits;
    std::vector<Tensor> att;  // the attention of the query whose logits choose the next token
    std::vector<Tensor>* rec = opt.record_attention ? &att : nullptr;
    for (int32_t id : prompt) logits = m.step(id, cache, rec);  // prefill, one token at a time
    std::vector<Gpt2Step> out;
    for (int64_t s = 0; s < opt.steps; ++s) {
        Gpt2Step st;
        const bool greedy = opt.temperature == 0.0;
        const std::vector<float> p = softmax_probs(logits.ptr(), V, greedy ? 1.0 : opt.temperature);
        if (greedy) {
            st.id = static_cast<int32_t>(std::max_element(logits.ptr(), logits.ptr() + V) - logits.ptr());
        } else {
            // inverse CDF of one uniform draw; the last token with p > 0 catches rounding
            Rng rng(opt.seed, static_cast<uint64_t>(s));
            const double u = rng.uniform_double();
            double acc = 0;
            st.id = -1;
            for (int64_t i = 0; i < V; ++i) {
                if (p[static_cast<size_t>(i)] <= 0.0f) continue;
                st.id = static_cast<int32_t>(i);
                acc += p[static_cast<size_t>(i)];
                if (u < acc) break;
            }
        }
        st.prob = p[static_cast<size_t>(st.id)];
        st.attentions = std::move(att);
        if (s + 1 < opt.steps) logits = m.step(st.id, cache, rec);
        out.push_back(std::move(st));
    }
    return out;
}

}  // namespace attn
