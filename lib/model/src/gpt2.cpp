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
#include "attn/core/numeric_error.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/induction.hpp"

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

}  // namespace

// config.json's object -> the checked config; errors name `what` (the file)
static Gpt2Config gpt2_config_from(const nlohmann::json& j, const std::string& what);

std::string folder_model_type(const std::string& dir) { return read_folder_config(dir).model_type; }

FolderConfig read_folder_config(const std::string& dir) {
    std::error_code ec;
    const fs::path cfg = fs::path(dir) / "config.json";
    if (!fs::is_regular_file(cfg, ec)) return {};
    const nlohmann::json j = read_config_json(cfg.string());
    FolderConfig f;
    if (j.contains("model_type") && j["model_type"].is_string()) f.model_type = j["model_type"].get<std::string>();
    if (f.model_type == "gpt2") f.gpt2 = gpt2_config_from(j, cfg.string());
    return f;
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
    // what is wrong with a file named: missing, or there but a folder, a FIFO, a device
    auto refuse = [&](const std::string& name, const std::string& why) {
        return InputError(fmt::format("the model folder '{}' {}: {} {} (a GPT-2 folder holds config.json, "
                                      "model.safetensors, and vocab.json + merges.txt or tokenizer.json)",
                                      dir, why == "is missing" ? "is incomplete" : "is broken", name, why));
    };
    for (const std::string* p : {&f.config, &f.weights})
        if (const std::string why = file_kind_problem(*p); !why.empty())
            throw refuse(fs::path(*p).filename().string(), why);
    // vocab.json + merges.txt when both are there, else tokenizer.json
    const std::string vocab_why = file_kind_problem(f.vocab), merges_why = file_kind_problem(f.merges);
    const bool vocab = vocab_why.empty(), merges = merges_why.empty();
    if (!(vocab && merges)) {
        if (const std::string why = file_kind_problem(tokenizer); !why.empty()) {
            // one that is there but is no file is named for what it is, before any that is missing
            for (const auto& [name, w] :
                 {std::pair{"vocab.json", vocab_why}, {"merges.txt", merges_why}, {"tokenizer.json", why}})
                if (!w.empty() && w != "is missing") throw refuse(name, w);
            if (vocab || merges) throw refuse(vocab ? "merges.txt" : "vocab.json", "is missing");
            throw refuse("the tokenizer (vocab.json + merges.txt, or tokenizer.json)", "is missing");
        }
        f.vocab = f.tokenizer_json = tokenizer;
        f.merges.clear();
    }
    return f;
}

Gpt2Config read_gpt2_config(const Gpt2Files& files) {
    return gpt2_config_from(read_config_json(files.config), files.config);
}

namespace {

// attn train --export-gpt2's provenance: {"attn": {"attn.task": "induction", "attn.task.seq": "24", ...}}
void read_provenance(const nlohmann::json& j, Gpt2Config& c) {
    const auto attn = j.find("attn");
    if (attn == j.end() || !attn->is_object()) return;
    const auto task = attn->find("attn.task"), seq = attn->find("attn.task.seq");
    if (task != attn->end() && task->is_string()) c.trained_task = task->get<std::string>();
    if (seq != attn->end() && seq->is_string()) {
        try {
            c.trained_seq = std::stoll(seq->get<std::string>());
        } catch (const std::exception&) {
            c.trained_seq = 0;  // no length, no rule
        }
    }
}

}  // namespace

static Gpt2Config gpt2_config_from(const nlohmann::json& j, const std::string& what) {
    const std::string type =
        j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
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
            throw InputError(fmt::format(
                "{}: \"layer_norm_epsilon\" must be a positive number below 1 that a float can hold", what));
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
    read_provenance(j, c);
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
        throw InputError(
            fmt::format("{}: has {} tokens but {} says vocab_size is {} (the embedding has that many rows)",
                        files.vocab, tok.vocab_size(), files.config, config.vocab_size));
    return tok;
}

// (in, out) Conv1D weight -> (out, in) nn.Linear weight, columns [c0, c0 + out) of the Conv1D.
static Tensor conv1d_to_linear(const Tensor& w, int64_t c0, int64_t out) {
    const int64_t in = w.dim(0), ld = w.dim(1);
    Tensor t({out, in});
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)
            t.data[static_cast<size_t>(o * in + i)] = w.data[static_cast<size_t>(i * ld + c0 + o)];
    return t;
}

static Tensor slice(const Tensor& b, int64_t c0, int64_t n) {
    Tensor t({n});
    std::copy(b.data.begin() + c0, b.data.begin() + c0 + n, t.data.begin());
    return t;
}

Gpt2Model Gpt2Model::load(const Gpt2Files& files) { return load(files, read_gpt2_config(files)); }

StackConfig gpt2_stack_config(const Gpt2Config& c) {
    return StackConfig{.vocab = c.vocab_size, .positions = c.n_positions, .d_model = c.n_embd, .heads = c.n_head,
                       .layers = c.n_layer, .d_ff = c.n_inner, .causal = true, .norm = NormPlace::Pre,
                       .act = c.activation == "gelu" ? MlpActivation::GeluErf : MlpActivation::GeluTanh,
                       .eps = c.layer_norm_epsilon, .scale = c.scale_attn_weights, .tied_head = c.tie_word_embeddings};
}

Gpt2Model Gpt2Model::load(const Gpt2Files& files, const Gpt2Config& config) {
    Gpt2Model m;
    m.files = files;
    m.config = config;
    const Gpt2Config& c = m.config;
    m.stack = TransformerStack(gpt2_stack_config(c));
    TransformerStack& s = m.stack;
    const SafeTensors st = SafeTensors::load(files.weights);
    const std::string pre = st.has("transformer.wte.weight") ? "transformer." : "";
    const int64_t D = c.n_embd, I = c.n_inner, V = c.vocab_size;
    std::set<std::string> used;
    auto get = [&](const std::string& name, const Shape& shape) {
        const std::string full = (name == "lm_head.weight" ? "" : pre) + name;
        if (!st.has(full))
            throw InputError(fmt::format("{}: has no tensor '{}' (a GPT-2 with {} layers needs it)", files.weights,
                                         full, c.n_layer));
        Tensor t = st.to_float(full, shape);
        check_weight_values(t, files.weights, full);
        used.insert(full);
        return t;
    };
    s.tok_emb = get("wte.weight", {V, D});
    s.pos_emb = get("wpe.weight", {c.n_positions, D});
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = fmt::format("h.{}.", l);
        StackLayer& L = s.layers[static_cast<size_t>(l)];
        L.ln1_gamma = get(p + "ln_1.weight", {D});
        L.ln1_beta = get(p + "ln_1.bias", {D});
        const Tensor c_attn = get(p + "attn.c_attn.weight", {D, 3 * D});  // Conv1D: [in, out]
        const Tensor c_attn_b = get(p + "attn.c_attn.bias", {3 * D});
        const Tensor c_proj = get(p + "attn.c_proj.weight", {D, D});
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
    }
    s.lnf_gamma = get("ln_f.weight", {D});
    s.lnf_beta = get("ln_f.bias", {D});
    // tied (transformers' default): a stored lm_head.weight is replaced by wte on load, as there
    if (!c.tie_word_embeddings) s.lm_head = get("lm_head.weight", {V, D});
    else if (st.has("lm_head.weight")) (void)get("lm_head.weight", {V, D});
    for (const std::string& name : st.names()) {
        if (used.count(name) != 0) continue;
        // the causal-mask buffers older transformers saved: a constant, not a weight
        const bool buffer = name.rfind(pre + "h.", 0) == 0 &&
                            (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
        if (!buffer)
            throw InputError(fmt::format("{}: tensor '{}' is not part of a GPT2LMHeadModel with {} layers{}",
                                         files.weights, name, c.n_layer,
                                         pre.empty() ? "" : " (names prefixed \"transformer.\")"));
    }
    return m;
}

Gpt2Model Gpt2Model::random(const Gpt2Config& c, uint64_t seed) {
    Gpt2Model m;
    m.config = c;
    m.stack = TransformerStack(gpt2_stack_config(c));  // biases 0, LayerNorm gamma 1 beta 0
    TransformerStack& s = m.stack;
    uint64_t stream = 0;
    auto normal = [&](Tensor& t, double sd) {
        Rng rng(seed, ++stream);
        for (float& v : t.data) v = static_cast<float>(sd) * rng.normal();
    };
    const double sd = 0.02, sd_proj = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
    normal(s.tok_emb, sd);
    normal(s.pos_emb, sd);
    for (StackLayer& L : s.layers) {
        for (Linear* lin : {&L.attention.q_proj, &L.attention.k_proj, &L.attention.v_proj}) normal(lin->W, sd);
        normal(L.attention.o_proj.W, sd_proj);
        normal(L.fc.W, sd);
        normal(L.proj.W, sd_proj);
    }
    if (!c.tie_word_embeddings) normal(s.lm_head, sd);
    return m;
}

double gpt2_loss(const Tensor& logits, const std::vector<int32_t>& ids) {
    if (ids.size() < 2) throw InputError("a next-token loss needs at least 2 tokens (the first predicts the second)");
    const double loss = next_token_loss(logits, ids, 0, static_cast<int64_t>(ids.size()) - 1);
    if (!std::isfinite(loss))
        throw NumericError(fmt::format("the next-token loss came out {} (the model's weights overflow float32 in the "
                                       "forward pass)", loss));
    return loss;
}

void check_finite_logits(const float* logits, int64_t V, std::string_view where) {
    const float* bad = std::find_if(logits, logits + V, [](float v) { return !std::isfinite(v); });
    if (bad != logits + V)
        throw NumericError(fmt::format("the model's logits {} hold {} at token id {} (its weights overflow float32 in "
                                       "the forward pass); no result is printed",
                                       where, *bad, bad - logits));
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
        throw InputError(
            fmt::format("{} prompt tokens + {} steps = {} positions, more than the model's {} (n_positions)",
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
        check_finite_logits(logits.ptr(), V, fmt::format("at step {}", s + 1));
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
