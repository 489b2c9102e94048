// app/serve_decoder.cpp: the /decoder page's computation (see serve_decoder.hpp).
#include "serve_decoder.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/nn/ops.hpp"
#include "serve_decoder_views.hpp"
#include "serve_lab.hpp"

namespace attn::cli {
namespace {

using nlohmann::json;

struct ServedDecoder {
    std::string dir;
    Gpt2Model model;
    BpeTokenizer tok;
};

// The decoder, loaded once per folder (the server computes one request at a time).
const ServedDecoder& served_decoder(const std::string& dir) {
    static std::mutex m;
    static std::unique_ptr<ServedDecoder> cached;
    std::lock_guard<std::mutex> lock(m);
    if (!cached || cached->dir != dir) {
        try {
            const Gpt2Files files = locate_gpt2(dir);
            const Gpt2Config config = read_gpt2_config(files);
            BpeTokenizer tok = load_gpt2_tokenizer(files, config);
            cached.reset(new ServedDecoder{dir, Gpt2Model::load(files, config), std::move(tok)});
        } catch (const InputError& e) {
            throw LabError("model", fmt::format("model: {} (restart attn serve with --model DIR, a GPT-2 folder)",
                                                e.what()), 404);
        }
    }
    return *cached;
}

// The request's "ablate": [[layer, head], ...], each inside the model, none twice.
std::vector<HeadRef> ablated_heads(const json& r, const Gpt2Config& c) {
    std::vector<HeadRef> heads;
    if (!r.contains("ablate")) return heads;
    const json& a = r["ablate"];
    const std::string rule = fmt::format("ablate: must be a list of at most 64 [layer, head] pairs, layer in [0, {}], "
                                         "head in [0, {}], none twice", c.n_layer - 1, c.n_head - 1);
    if (!a.is_array() || a.size() > 64) throw LabError("ablate", rule);
    for (const json& p : a) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned())
            throw LabError("ablate", rule);
        const HeadRef h{p[0].get<int64_t>(), p[1].get<int64_t>()};
        if (h.layer >= c.n_layer || h.head >= c.n_head || std::find(heads.begin(), heads.end(), h) != heads.end())
            throw LabError("ablate", rule);
        heads.push_back(h);
    }
    return heads;
}

// The top entry of a logits row: the arg max (the lowest id on a tie), as run_figures finds it.
int32_t arg_max(const float* row, int64_t V) { return static_cast<int32_t>(std::max_element(row, row + V) - row); }

// The logit lens: the residual stream after each block, at the last position, read out through
// LN_f and the LM head as if the model ended there: its top token and probability per layer
// (the last layer's is the model's own prediction).
json logit_lens(const ServedDecoder& d, const StackOutput& out, int64_t T) {
    const TransformerStack& st = d.model.stack;
    const int64_t D = d.model.config.n_embd, V = d.model.config.vocab_size;
    const Tensor& head = st.head();  // (V, D)
    json lens = json::array();
    std::vector<float> h(static_cast<size_t>(D)), logits(static_cast<size_t>(V));
    for (size_t l = 1; l < out.residual.size(); ++l) {
        const float* x = out.residual[l].ptr() + (T - 1) * D;
        float mean = 0, rstd = 0;
        nn::layernorm_forward<float>(h.data(), &mean, &rstd, x, st.lnf_gamma.ptr(), st.lnf_beta.ptr(), 1, D,
                                     st.config.eps);
        for (int64_t v = 0; v < V; ++v) {
            double s = 0;
            for (int64_t k = 0; k < D; ++k) s += static_cast<double>(head.ptr()[v * D + k]) * h[static_cast<size_t>(k)];
            logits[static_cast<size_t>(v)] = static_cast<float>(s);
        }
        const std::vector<float> p = softmax_probs(logits.data(), V);
        const int32_t top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        const std::string text = top < d.tok.vocab_size() ? d.tok.token_text(top) : std::string("?");
        lens.push_back({{"layer", l - 1}, {"id", top}, {"text", text}, {"prob", p[static_cast<size_t>(top)]}});
    }
    return lens;
}

// A string for a POSIX shell: single-quoted.
std::string shell_quoted(const std::string& s) {
    std::string out = "'";
    for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// The next token with `ablate`'s heads zeroed (their output before c_proj set to 0), as
// `attn model ablate --heads ... --json` gives it: its top, and the clean top's probability.
json ablated_next(const ServedDecoder& d, const std::vector<int32_t>& ids, const std::vector<HeadRef>& ablate,
                  const float* clean_last, const std::string& model, const std::string& text) {
    const int64_t T = static_cast<int64_t>(ids.size()), V = d.model.config.vocab_size;
    StackOptions ao;
    ao.record_attention = false;
    ao.ablate = ablate;
    ao.ablation = AblationMode::Zero;
    const StackOutput aout = d.model.forward(ids, ao);
    const float* alast = aout.logits.ptr() + (T - 1) * V;
    const std::vector<float> ap = softmax_probs(alast, V);
    const int32_t atop = arg_max(alast, V), ctop = arg_max(clean_last, V);
    const std::string atext = atop < d.tok.vocab_size() ? d.tok.token_text(atop) : std::string("?");
    json hs = json::array();
    std::string names;
    for (const HeadRef& h : ablate) {
        hs.push_back({h.layer, h.head});
        names += fmt::format("{}{}.{}", names.empty() ? "" : ",", h.layer, h.head);
    }
    return {{"heads", hs},
            {"top", {{"id", atop}, {"text", atext}, {"prob", ap[static_cast<size_t>(atop)]}}},
            {"prob_clean_top", ap[static_cast<size_t>(ctop)]},
            {"command",
             fmt::format("attn model ablate{} --text {} --heads {} --json", model, shell_quoted(text), names)}};
}

// The request's fields, checked (lab_decoder's header says what each may be).
struct DecoderRequest {
    std::string text;
    int64_t top = 10, top_k = 0, layer = 0;
    double temperature = 1.0, top_p = 1.0;
    uint64_t seed = 0;
};

DecoderRequest decoder_request(const json& r) {
    if (!r.is_object()) throw LabError("", "the request must be a JSON object");
    static const char* const kFields[] = {"text", "top", "temperature", "top_k", "top_p", "seed", "ablate", "layer"};
    for (const auto& item : r.items())
        if (std::find(std::begin(kFields), std::end(kFields), item.key()) == std::end(kFields))
            throw LabError(printable(item.key()),
                           fmt::format("{}: not a field of this request (fields: text, top, temperature, top_k, top_p, "
                                       "seed, ablate, layer)", printable(item.key())));
    DecoderRequest q;
    if (!r.contains("text") || !r["text"].is_string()) throw LabError("text", "text: must be a string (your prompt)");
    q.text = r["text"].get<std::string>();
    if (q.text.empty()) throw LabError("text", "text: type a prompt");
    if (static_cast<int64_t>(q.text.size()) > kLabMaxTextBytes)
        throw LabError("text", fmt::format("text: at most {} bytes, got {}", kLabMaxTextBytes, q.text.size()), 413);
    auto integer = [&](const char* name, int64_t lo, int64_t hi, int64_t& out) {
        if (!r.contains(name)) return;
        const json& v = r[name];
        if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
            throw LabError(name, fmt::format("{}: must be an integer in [{}, {}], got {}", name, lo, hi, shown(v)));
        out = v.get<int64_t>();
    };
    integer("top", 1, 50, q.top);
    integer("top_k", 0, 1 << 20, q.top_k);
    integer("layer", 0, 1 << 10, q.layer);  // (checked against the model's layers once it is loaded)
    if (r.contains("temperature")) {
        const json& v = r["temperature"];
        const double t = v.is_number() ? v.get<double>() : -1.0;
        if (!(t == 0.0 || (t >= 0.01 && t <= 100.0)))
            throw LabError("temperature", fmt::format("temperature: must be 0 (greedy) or in [0.01, 100], got {}",
                                                      shown(v)));
        q.temperature = t;
    }
    if (r.contains("top_p")) {
        const json& v = r["top_p"];
        const double p = v.is_number() ? v.get<double>() : -1.0;
        if (!(p > 0.0 && p <= 1.0))
            throw LabError("top_p", fmt::format("top_p: must be in (0, 1] (1: every token), got {}", shown(v)));
        q.top_p = p;
    }
    if (r.contains("seed")) {
        const json& v = r["seed"];
        if (!v.is_number_unsigned() || v.get<uint64_t>() > (uint64_t{1} << 53))
            throw LabError("seed", fmt::format("seed: must be an integer in [0, 2^53], got {}", shown(v)));
        q.seed = v.get<uint64_t>();
    }
    return q;
}

// The prompt's ids, checked against the model's vocabulary and positions.
std::vector<int32_t> prompt_ids(const ServedDecoder& d, const std::string& text) {
    std::vector<int32_t> ids;
    try {
        ids = d.tok.encode(text).ids;
    } catch (const InputError& e) {
        throw LabError("text", fmt::format("text: {}", printable(e.what())));
    }
    if (ids.empty()) throw LabError("text", "text: gives no tokens");
    if (static_cast<int64_t>(ids.size()) > d.model.config.n_positions)
        throw LabError("text", fmt::format("text: is {} tokens long, more than the model's {} positions", ids.size(),
                                           d.model.config.n_positions), 413);
    return ids;
}

// The token the Sample button appends: one step of `attn model generate` at the temperature
// and seed when top-k and top-p keep every token (the command repeats it); otherwise the same
// draw from the cut distribution, which no attn command repeats (generate has no top-k or
// top-p): command null.
json sampled(const ServedDecoder& d, const std::vector<int32_t>& ids, const DecoderRequest& q,
             const std::vector<float>& cut, const std::string& model) {
    if (static_cast<int64_t>(ids.size()) >= d.model.config.n_positions) return nullptr;
    auto token_text = [&](int32_t id) { return id < d.tok.vocab_size() ? d.tok.token_text(id) : std::string("?"); };
    if (q.top_k == 0 && q.top_p == 1.0) {
        Gpt2GenerateOptions go;
        go.steps = 1;
        go.temperature = q.temperature;
        go.seed = q.seed;
        const Gpt2Step s = gpt2_generate(d.model, ids, go).at(0);
        return {{"id", s.id}, {"text", token_text(s.id)}, {"prob", s.prob},
                {"command", fmt::format("attn model generate{} --text {} --steps 1 --temperature {} --seed {} --json",
                                        model, shell_quoted(q.text), q.temperature, q.seed)}};
    }
    const int32_t id = q.temperature == 0.0 ? static_cast<int32_t>(std::max_element(cut.begin(), cut.end()) -
                                                                   cut.begin())
                                            : sample_from(cut, q.seed);
    return {{"id", id}, {"text", token_text(id)}, {"prob", cut[static_cast<size_t>(id)]}, {"command", nullptr}};
}

}  // namespace

json lab_decoder(const json& r, const std::string& model_dir) {
    const DecoderRequest q = decoder_request(r);
    const std::string dir = model_dir.empty() ? default_decoder_dir() : model_dir;
    const ServedDecoder& d = served_decoder(dir);
    const std::vector<int32_t> ids = prompt_ids(d, q.text);
    const std::vector<HeadRef> ablate = ablated_heads(r, d.model.config);
    const int64_t L = d.model.config.n_layer;
    if (q.layer >= L)
        throw LabError("layer", fmt::format("layer: must be an integer in [0, {}], got {}", L - 1, q.layer));
    // As `attn model next` computes it (app/cmd_model_generate.cpp, run_next); the cache holds
    // what `attn model cache` dumps (recording changes no number).
    StackOptions fo;
    fo.record_attention = true;
    fo.record_residual = true;
    ActivationCache cache;
    fo.cache = &cache;
    const StackOutput out = d.model.forward(ids, fo);
    const int64_t T = static_cast<int64_t>(ids.size()), V = d.model.config.vocab_size;
    const float* last = out.logits.ptr() + (T - 1) * V;
    const std::vector<float> p = softmax_probs(last, V);
    std::vector<int32_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    const int64_t K = std::min(q.top, V);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int32_t a, int32_t b) { return last[a] != last[b] ? last[a] > last[b] : a < b; });
    auto token_text = [&](int32_t id) { return id < d.tok.vocab_size() ? d.tok.token_text(id) : std::string("?"); };
    json tokens = json::array(), next = json::array();
    for (const int32_t id : ids) tokens.push_back({{"id", id}, {"text", token_text(id)}});
    for (int64_t k = 0; k < K; ++k) {
        const int32_t id = order[static_cast<size_t>(k)];
        next.push_back({{"rank", k + 1}, {"id", id}, {"text", token_text(id)}, {"prob", p[static_cast<size_t>(id)]},
                        {"logit", last[id]}});
    }
    const std::string model = model_dir.empty() ? "" : " --model " + shell_quoted(model_dir);
    // The same entries' probabilities at the temperature (greedy: none), and in the
    // distribution the Sample button draws from (temperature, then top-k, then top-p).
    json tempered = json::array(), cut_probs = json::array();
    const std::vector<float> pt = q.temperature > 0 ? softmax_probs(last, V, q.temperature) : std::vector<float>();
    const std::vector<float> cut = sampling_probs(last, V, q.temperature, q.top_k, q.top_p);
    for (int64_t k = 0; k < K; ++k) {
        const size_t id = static_cast<size_t>(order[static_cast<size_t>(k)]);
        tempered.push_back(pt.empty() ? json(nullptr) : json(pt[id]));
        cut_probs.push_back(cut[id]);
    }
    // Every head's weights of the last query (the one that predicts the next token) over the tokens.
    json attention = json::array();
    for (const Tensor& w : out.attentions) {
        json layer = json::array();
        for (int64_t h = 0; h < w.dim(1); ++h) {
            const float* row = w.ptr() + (h * T + (T - 1)) * T;
            layer.push_back(std::vector<float>(row, row + T));
        }
        attention.push_back(std::move(layer));
    }
    const json ablated = ablate.empty() ? json(nullptr) : ablated_next(d, ids, ablate, last, model, q.text);
    json j = {{"format", "attn-lab-decoder"}, {"version", 1}, {"model", dir}, {"tokens", tokens}, {"next", next},
              {"command", fmt::format("attn model next{} --text {} --top {} --json", model, shell_quoted(q.text), K)},
              {"temperature", q.temperature}, {"top_k", q.top_k}, {"top_p", q.top_p},
              {"next_at_temperature", tempered}, {"next_sampled", cut_probs},
              {"sample", sampled(d, ids, q, cut, model)}, {"layers", L}, {"heads", d.model.config.n_head},
              {"ablated", ablated}, {"attention", attention}, {"lens", logit_lens(d, out, T)},
              {"cache_command", fmt::format("attn model cache{} --text {} --dump - --json-nonfinite null", model,
                                            shell_quoted(q.text))}};
    j.update(decoder_views(cache, L, q.layer));
    return j;
}

}  // namespace attn::cli
