// `attn model next`, `generate`, `induction`, `cache`, `ablate`, `heads` and (on a GPT-2 folder) `attention`,
// `entropy`, `probe`: a GPT-2-family decoder from a local folder (config.json, model.safetensors,
// vocab.json + merges.txt or tokenizer.json), run in C++ (attn/model/gpt2.hpp).
#include "cmd_model_decoder.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/stats.hpp"
#include "attn/core/utf8.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/heads.hpp"
#include "attn/model/induction.hpp"
#include "attn/viz/heatmap.hpp"
#include "command.hpp"
#include "options.hpp"
#include "progress.hpp"

namespace attn::cli {
namespace {

struct DecoderOpts {
    std::string model, text;
    bool bos = false;
    bool probe = false;  // load() for a probe of its own: no --text, <|endoftext|> first when the vocabulary has it
    const char* shipped = kMacbethDecoder;  // the shipped decoder read without --model
    JsonOut json;                                   // the running subcommand's, one of these:
    JsonOut json_next, json_generate, json_induction;  // (a JsonOut binds to one option)
    JsonOut json_ablate, json_heads, json_cache;
};
struct CacheOpts {
    std::string dump;
    JsonNonFinite json_nonfinite = JsonNonFinite::string;  // add_json_nonfinite's default
};
struct AblateOpts {
    std::string heads;
    AblationMode mode = AblationMode::Zero;
    bool ablation = false;  // `heads`: each head ablated alone
};
struct NextOpts {
    int64_t top = 10;
};
struct InductionOpts {
    int64_t length = 0;  // 0: min(50, (n_positions - 1) / 2)
    uint64_t seed = 0;
    std::string ablate;  // heads "L.H,..." to ablate in a second pass ("": none)
    AblationMode mode = AblationMode::Zero;
};
struct GenerateOpts {
    int64_t steps = 20;
    double temperature = 0.0;
    uint64_t seed = 0;
    bool attention = false;
};

// The folder, model and prompt, each checked (the folder before the weights load).
struct Loaded {
    Gpt2Files files;
    Gpt2Model model;
    BpeTokenizer tok;
    std::vector<int32_t> ids;
};

Loaded load(const DecoderOpts& o) {
    const std::string dir = o.model.empty() ? default_decoder_dir(o.shipped) : o.model;
    const Gpt2Files files = with_option("--model", [&] { return locate_gpt2(dir); });
    const Gpt2Config config = with_option("--model", [&] { return read_gpt2_config(files); });
    BpeTokenizer tok = with_option("--model", [&] { return load_gpt2_tokenizer(files, config); });
    std::vector<int32_t> ids;
    if (o.probe) {
        if (tok.eos_id() >= 0) ids.push_back(tok.eos_id());
    } else if (o.bos) {
        if (tok.eos_id() < 0) throw InputError("--bos: the vocabulary has no <|endoftext|> token");
        ids.push_back(tok.eos_id());
    }
    // a text too long to fit is refused before the merges run (their cost grows with a word's length)
    const int64_t most = config.n_positions * tok.max_token_bytes();
    if (static_cast<int64_t>(o.text.size()) > most)
        throw InputError(fmt::format("--text: is {} bytes long, more than the model's {} positions can hold (a token "
                                     "stands for at most {} bytes)",
                                     o.text.size(), config.n_positions, tok.max_token_bytes()));
    const BpeEncoding enc = with_option("--text", [&] { return tok.encode(o.text); });
    ids.insert(ids.end(), enc.ids.begin(), enc.ids.end());
    if (ids.empty() && !o.probe) throw InputError("--text: gives no tokens; the model needs at least one (or pass --bos)");
    if (static_cast<int64_t>(ids.size()) > config.n_positions)
        throw InputError(fmt::format("--text: is {} tokens long, more than the model's {} positions (n_positions)",
                                     ids.size(), config.n_positions));
    Gpt2Model model = with_option("--model", [&] { return Gpt2Model::load(files, config); });
    return {files, std::move(model), std::move(tok), std::move(ids)};
}

// Where one head of a causal layer puts its weight: on the first token (a common "sink"), the
// previous token and the query itself, each the mean over the queries i >= 1 (query 0 sees
// only itself). weights (1, H, T, T), T >= 2.
struct HeadShares {
    double first = 0, prev = 0, self = 0;
};
HeadShares head_shares(const Tensor& w, int64_t h) {
    const int64_t T = w.dim(3);
    const float* p = w.ptr() + h * T * T;
    HeadShares s;
    for (int64_t i = 1; i < T; ++i) {
        s.first += p[i * T];
        s.prev += p[i * T + i - 1];
        s.self += p[i * T + i];
    }
    const double n = static_cast<double>(T - 1);
    return {s.first / n, s.prev / n, s.self / n};
}

// load() for a command that takes only --model and --text.
Loaded load_text(const std::string& model, const std::string& text) {
    DecoderOpts o;
    o.model = model;
    o.text = text;
    return load(o);
}

// A token as a quoted, escaped string: "\n" and control characters visible, one line.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string describe(const Loaded& l) {
    const Gpt2Config& c = l.model.config;
    return fmt::format("{} (GPT-2: {} layers x {} heads, d_model {}, vocabulary {}, {} positions)", l.files.dir, c.n_layer,
                       c.n_head, c.n_embd, c.vocab_size, c.n_positions);
}

int run_next(const DecoderOpts& o, const NextOpts& n) {
    const TextOut text({o.json.claim()});
    const Loaded l = load(o);
    StackOptions fo;
    fo.record_attention = false;
    const StackOutput out = l.model.forward(l.ids, fo);
    const int64_t T = static_cast<int64_t>(l.ids.size()), V = l.model.config.vocab_size;
    const float* last = out.logits.ptr() + (T - 1) * V;
    check_finite_logits(last, V, "after the text");
    const std::vector<float> p = softmax_probs(last, V);
    std::vector<int32_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    const int64_t K = std::min(n.top, V);
    std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
        return last[a] != last[b] ? last[a] > last[b] : a < b;
    });
    auto token_text = [&](int32_t id) { return id < l.tok.vocab_size() ? l.tok.token_text(id) : std::string("?"); };
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-next"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        nlohmann::ordered_json toks = nlohmann::ordered_json::array();
        for (int32_t id : l.ids) toks.push_back({{"id", id}, {"text", token_text(id)}});
        j["tokens"] = toks;
        nlohmann::ordered_json next = nlohmann::ordered_json::array();
        for (int64_t k = 0; k < K; ++k) {
            const int32_t id = order[static_cast<size_t>(k)];
            next.push_back({{"rank", k + 1}, {"id", id}, {"text", token_text(id)}, {"prob", p[static_cast<size_t>(id)]},
                            {"logit", last[id]}});
        }
        j["next"] = next;
        write_json(o.json, j, "attn-model-next", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model next: {}\n", describe(l));
    std::string shown;
    for (int32_t id : l.ids) shown += (shown.empty() ? "" : " ") + quoted(token_text(id));
    text.print("{} tokens: {}\n\n", T, shown);
    text.print("the {} most likely next tokens (softmax of the last position's logits):\n", K);
    text.print("{:>5} {:>7} {:>8} {:>9}  {}\n", "rank", "id", "prob", "logit", "token");
    for (int64_t k = 0; k < K; ++k) {
        const int32_t id = order[static_cast<size_t>(k)];
        text.print("{:>5} {:>7} {:>7.2f}% {:>9.4f}  {}\n", k + 1, id, 100.0 * p[static_cast<size_t>(id)], last[id],
                   quoted(token_text(id)));
    }
    return 0;
}

int run_generate(const DecoderOpts& o, const GenerateOpts& g) {
    const TextOut text({o.json.claim()});
    if (!(g.temperature == 0.0 || (g.temperature >= 0.01 && g.temperature <= 100.0)))
        throw InputError(fmt::format("--temperature: must be 0 (greedy) or in [0.01, 100], got {}", g.temperature));
    const Loaded l = load(o);
    const Gpt2Config& c = l.model.config;
    if (static_cast<int64_t>(l.ids.size()) + g.steps > c.n_positions)
        throw InputError(fmt::format("--steps: {} prompt tokens + {} steps are more than the model's {} positions "
                                     "(n_positions); at most {} steps here",
                                     l.ids.size(), g.steps, c.n_positions, c.n_positions - static_cast<int64_t>(l.ids.size())));
    Gpt2GenerateOptions go;
    go.steps = g.steps;
    go.temperature = g.temperature;
    go.seed = g.seed;
    go.record_attention = g.attention;
    const std::vector<Gpt2Step> steps = gpt2_generate(l.model, l.ids, go);
    std::vector<int32_t> all = l.ids;
    for (const Gpt2Step& s : steps) all.push_back(s.id);
    auto decoded = [&](const std::vector<int32_t>& ids) {
        std::vector<int32_t> known;
        for (int32_t id : ids)
            if (id < l.tok.vocab_size()) known.push_back(id);
        return utf8_encode(utf8_decode(l.tok.decode(known)));
    };
    auto token_text = [&](int32_t id) { return id < l.tok.vocab_size() ? l.tok.token_text(id) : std::string("?"); };
    const double cache_bytes = kv_cache_bytes(c.n_layer, 1, c.n_head, static_cast<int64_t>(all.size()) - 1,
                                              l.model.head_dim(), l.model.head_dim());
    const std::string how = g.temperature == 0.0 ? std::string("greedy (the most likely token each step)")
                                                  : fmt::format("sampled at temperature {} with seed {}", g.temperature, g.seed);
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-generate"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["decoding"] = g.temperature == 0.0 ? "greedy" : "sample";
        j["temperature"] = g.temperature;
        j["seed"] = g.seed;
        j["prompt_ids"] = l.ids;
        nlohmann::ordered_json arr = nlohmann::ordered_json::array();
        for (const Gpt2Step& s : steps) {
            nlohmann::ordered_json r = {{"id", s.id}, {"text", token_text(s.id)}, {"prob", s.prob}};
            if (g.attention) {
                // per layer, per head: the weights of the query that chose this token over the tokens before it
                nlohmann::ordered_json layers = nlohmann::ordered_json::array();
                for (const Tensor& a : s.attentions) {
                    const int64_t H = a.dim(1), Tk = a.dim(3);
                    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
                    for (int64_t h = 0; h < H; ++h)
                        heads.push_back(std::vector<float>(a.ptr() + h * Tk, a.ptr() + (h + 1) * Tk));
                    layers.push_back(heads);
                }
                r["attention"] = layers;
            }
            arr.push_back(r);
        }
        j["steps"] = arr;
        j["text"] = decoded(all);
        j["kv_cache_bytes"] = cache_bytes;
        write_json(o.json, j, "attn-model-generate", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model generate: {}\n", describe(l));
    text.print("{} steps, {}; the KV cache holds each token's keys and values, so a step runs one query\n", g.steps, how);
    text.print("prompt ({} tokens): {}\n\n", l.ids.size(), quoted(decoded(l.ids)));
    text.print("{:>5} {:>7} {:>8}  {}\n", "step", "id", "prob", "token");
    for (size_t s = 0; s < steps.size(); ++s)
        text.print("{:>5} {:>7} {:>7.2f}%  {}\n", s + 1, steps[s].id, 100.0 * steps[s].prob, quoted(token_text(steps[s].id)));
    text.print("\ntext: {}\n", quoted(decoded(all)));
    text.print("KV cache at the end: {} tokens x {} layers x {} heads x (Dk + Dv = {}) floats = {:.0f} bytes\n",
               all.size() - 1, c.n_layer, c.n_head, 2 * l.model.head_dim(), cache_bytes);
    return 0;
}

std::vector<HeadRef> parse_heads(const std::string& spec, const Gpt2Config& c, const char* opt = "--heads");
std::string mode_words(AblationMode m);

// A model `attn train --task induction` trained (its config.json's provenance says so) learned
// sequences of T tokens that end in a block of n in [max(2, T/4), T/2] tokens and its repeat, the loss
// scored on the repeat's last max(2, T/4) - 1 next tokens (positions T - max(2, T/4) .. T - 2). The probe
// puts its block at the start (after `s` tokens), so its repeat must reach those positions, and its block
// be no longer than T/2: a shorter block asks what the model never learned (the shipped model's
// second-copy loss at --length 8 is worse than the uniform guess). Refused in one line; other models pass.
void check_trained_length(const Loaded& l, int64_t n, int64_t s) {
    nlohmann::json attn_meta;
    try {
        attn_meta = nlohmann::json::parse(read_file(l.files.config)).value("attn", nlohmann::json::object());
    } catch (const std::exception&) {
        return;  // the loader read this file already; no provenance, no rule
    }
    if (!attn_meta.is_object() || attn_meta.value("attn.task", "") != "induction") return;
    int64_t T = 0;
    try {
        T = std::stoll(attn_meta.value("attn.task.seq", "0"));
    } catch (const std::exception&) {
        return;
    }
    if (T < 6) return;
    const int64_t lo = std::max<int64_t>(2, T / 4), first = (T - lo + 1 - s + 1) / 2, last = T / 2;
    if (n >= first && n <= last) return;
    throw InputError(fmt::format("--length: this model was trained on {} tokens ending in a block of {} to {} and "
                                 "its repeat, scored on positions {}..{}; a block of {} puts its repeat at {}..{}, "
                                 "which it never learned: give --length {} to {} (or train one for other lengths: "
                                 "attn train --task induction --seq N --export-gpt2 DIR)",
                                 T, lo, T / 2, T - lo, T - 2, n, s + n, s + 2 * n - 1, first, last));
}

int run_induction(const DecoderOpts& o, const InductionOpts& io) {
    const TextOut text({o.json.claim()});
    DecoderOpts lo = o;
    lo.text = "";
    lo.probe = true;  // the probe starts with <|endoftext|> if the vocabulary has it; --text is not used
    lo.shipped = kInductionDecoder;
    const Loaded l = load(lo);
    const int64_t s = static_cast<int64_t>(l.ids.size());  // 1: <|endoftext|> first, 0: none
    const Gpt2Config& c = l.model.config;
    const int64_t most = (c.n_positions - s) / 2;
    const int64_t n = io.length > 0 ? io.length : std::min<int64_t>(50, most);
    if (n < 1 || n > most)
        throw InputError(fmt::format("--length: must be in [1, {}] ({}2 x length tokens within the model's {} positions), "
                                     "got {}",
                                     most, s == 1 ? "1 + " : "", c.n_positions, n));
    check_trained_length(l, n, s);
    const std::vector<HeadRef> ablated = io.ablate.empty() ? std::vector<HeadRef>{} : parse_heads(io.ablate, c, "--ablate");
    int32_t hi = static_cast<int32_t>(l.tok.vocab_size());
    if (l.tok.eos_id() == hi - 1) --hi;  // not the separator itself
    const std::vector<int32_t> ids = repeated_random_tokens(n, 0, hi, io.seed, l.tok.eos_id());
    const StackOutput out = l.model.forward(ids);
    // first copy at s..s+n-1, second at s+n..s+2n-1; the second copy's first token cannot be predicted
    const double loss_first = n >= 2 ? next_token_loss(out.logits, ids, s, s + n - 1) : NAN;
    const double loss_second = n >= 2 ? next_token_loss(out.logits, ids, s + n, s + 2 * n - 1) : NAN;
    // the same probe with the heads of --ablate removed
    double abl_first = NAN, abl_second = NAN;
    if (!ablated.empty()) {
        StackOptions fo;
        fo.record_attention = false;
        fo.ablate = ablated;
        fo.ablation = io.mode;
        const Tensor lg = l.model.forward(ids, fo).logits;
        abl_first = n >= 2 ? next_token_loss(lg, ids, s, s + n - 1) : NAN;
        abl_second = n >= 2 ? next_token_loss(lg, ids, s + n, s + 2 * n - 1) : NAN;
    }
    std::string ablated_names;
    for (const HeadRef& r : ablated) ablated_names += fmt::format("{}{}.{}", ablated_names.empty() ? "" : ", ", r.layer, r.head);
    std::vector<std::vector<double>> prev, prefix;
    for (const Tensor& w : out.attentions) {
        prev.push_back(previous_token_scores(w));
        prefix.push_back(prefix_matching_scores(w, s, n));
    }
    auto best = [&](const std::vector<std::vector<double>>& s) {
        std::pair<int64_t, int64_t> b{0, 0};
        for (size_t l2 = 0; l2 < s.size(); ++l2)
            for (size_t h = 0; h < s[l2].size(); ++h)
                if (s[l2][h] > s[static_cast<size_t>(b.first)][static_cast<size_t>(b.second)])
                    b = {static_cast<int64_t>(l2), static_cast<int64_t>(h)};
        return b;
    };
    const auto bp = best(prev), bi = best(prefix);
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-induction"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["length"] = n;
        j["seed"] = io.seed;
        j["ids"] = ids;
        j["loss_first_copy"] = loss_first;
        j["loss_second_copy"] = loss_second;
        j["previous_token"] = prev;
        j["prefix_matching"] = prefix;
        j["top_previous_token_head"] = {bp.first, bp.second};
        j["top_prefix_matching_head"] = {bi.first, bi.second};
        if (!ablated.empty()) {
            nlohmann::ordered_json hs = nlohmann::ordered_json::array();
            for (const HeadRef& r : ablated) hs.push_back({r.layer, r.head});
            j["ablated"] = {{"heads", hs},
                            {"mode", ablation_mode_name(io.mode)},
                            {"loss_first_copy", abl_first},
                            {"loss_second_copy", abl_second}};
        }
        write_json(o.json, j, "attn-model-induction", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model induction: {}\n", describe(l));
    text.print("the probe: {}{} random tokens (seed {}), then the same {} again ({} tokens)\n\n",
               s == 1 ? "<|endoftext|>, " : "", n, io.seed, n, ids.size());
    text.print("next-token loss on the first copy:  {:.3f} nats (a uniform guess over the {} drawn ids scores ln {} = {:.3f})\n",
               loss_first, hi, hi, std::log(static_cast<double>(hi)));
    text.print("next-token loss on the second copy: {:.3f} nats (lower when the model copies from the first)\n",
               loss_second);
    if (!ablated.empty())
        text.print("with head(s) {} ablated ({}):\n  first copy {:.3f} nats ({:+.3f}), second copy {:.3f} nats ({:+.3f}): "
                   "a rise on the second copy that the first does not share is the copying those heads did\n",
                   ablated_names, mode_words(io.mode), abl_first, abl_first - loss_first, abl_second,
                   abl_second - loss_second);
    text.print("\n");
    text.print("per head: previous-token score (weight on the token just before) and prefix-matching score\n"
               "(weight from a repeated token to the one after its first occurrence: the token to copy)\n");
    text.print("{:>6} {:>5} {:>10} {:>10}\n", "layer", "head", "prev-tok", "prefix");
    for (size_t l2 = 0; l2 < prev.size(); ++l2)
        for (size_t h = 0; h < prev[l2].size(); ++h)
            text.print("{:>6} {:>5} {:>10.3f} {:>10.3f}\n", l2, h, prev[l2][h], prefix[l2][h]);
    text.print("\nmost previous-token-like head: {}.{} ({:.3f}); most prefix-matching head: {}.{} ({:.3f})\n", bp.first,
               bp.second, prev[static_cast<size_t>(bp.first)][static_cast<size_t>(bp.second)], bi.first, bi.second,
               prefix[static_cast<size_t>(bi.first)][static_cast<size_t>(bi.second)]);
    return 0;
}

// What each cached tensor holds, by the part of its name after "blocks.l." (docs/decoder.md).
const char* cache_meaning(const std::string& name) {
    static const std::pair<const char*, const char*> kMeaning[] = {
        {"hook_embed", "wte[ids]: the token embeddings"},
        {"hook_pos_embed", "wpe[t]: the position embeddings"},
        {"hook_resid_pre", "residual stream entering the block"},
        {"ln1.hook_normalized", "LN_1(resid_pre)"},
        {"attn.hook_q", "queries, per head"},
        {"attn.hook_k", "keys, per head"},
        {"attn.hook_v", "values, per head"},
        {"attn.hook_attn_scores", "Q K^T / sqrt(Dk); -inf above the diagonal (causal)"},
        {"attn.hook_pattern", "softmax of the scores: the attention weights"},
        {"attn.hook_z", "each head's output, weights V (before c_proj)"},
        {"hook_attn_out", "merged z through c_proj"},
        {"hook_resid_mid", "resid_pre + attn_out"},
        {"ln2.hook_normalized", "LN_2(resid_mid)"},
        {"mlp.hook_pre", "c_fc output, before GELU"},
        {"mlp.hook_post", "after GELU"},
        {"hook_mlp_out", "the MLP's c_proj output"},
        {"hook_resid_post", "resid_mid + mlp_out (= next block's resid_pre)"},
        {"ln_final.hook_normalized", "LN_f(last resid_post)"},
        {"logits", "LN_f output times wte^T"},
    };
    std::string key = name;
    if (key.rfind("blocks.", 0) == 0) key = key.substr(key.find('.', 7) + 1);
    for (const auto& [k, v] : kMeaning)
        if (key == k) return v;
    return "";
}

// --json of `attn model cache`: what was recorded (each tensor's name, shape and meaning), where it
// went, and the check that recording changed nothing: the cached logits against a plain forward pass.
void write_cache_json(const DecoderOpts& o, const CacheOpts& co, const Loaded& l,
                      const std::vector<std::string>& tokens, const Dump& d, double floats, const TextOut& text) {
    const Gpt2Config& c = l.model.config;
    StackOptions plain;
    plain.record_attention = false;
    const Tensor logits = l.model.forward(l.ids, plain).logits;
    const Tensor& cached = d.tensors.at("logits");
    double diff = 0;
    for (int64_t k = 0; k < logits.numel(); ++k)
        diff = std::max(diff, static_cast<double>(std::abs(logits.data[static_cast<size_t>(k)] -
                                                           cached.data[static_cast<size_t>(k)])));
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const std::string& n : d.order)
        tensors.push_back({{"name", n}, {"shape", d.tensors.at(n).shape}, {"meaning", cache_meaning(n)}});
    nlohmann::ordered_json j = {{"format", "attn-model-cache"}, {"version", 1}};  // the envelope's keys first
    j["model"] = l.files.dir;
    j["architecture"] = "gpt2";
    j["text"] = o.text;
    j["tokens"] = tokens;
    j["ids"] = l.ids;
    j["layers"] = c.n_layer;
    j["heads"] = c.n_head;
    j["d_model"] = c.n_embd;
    j["d_head"] = l.model.head_dim();
    j["tensors"] = tensors;
    j["floats"] = floats;
    j["dump"] = co.dump;
    j["dump_format"] = dump_format_name(dump_format_of(co.dump));
    j["logits_max_abs_diff_vs_plain_forward"] = diff;
    write_json(o.json, j, "attn-model-cache", 1);
    if (!o.json.to_stdout()) text.print("wrote {} (attn-model-cache JSON)\n", o.json.path());
}

int run_cache(const DecoderOpts& o, const CacheOpts& co) {
    const TextOut text({{"--dump -", co.dump == "-"}, o.json.claim()});
    require_json_writable(o.json);
    with_option("--dump", [&] { dump_format_of(co.dump); });
    require_writable("--dump", co.dump);
    const Loaded l = load(o);
    const Gpt2Config& c = l.model.config;
    const int64_t T = static_cast<int64_t>(l.ids.size()), D = c.n_embd, H = c.n_head, I = c.n_inner, V = c.vocab_size;
    // floats the cache holds: per block 7 of (T, D), q k v z of (H, T, Dk), scores and pattern (H, T, T),
    // hook_pre and hook_post (T, I); the embeddings, LN_f and the logits
    const double floats = static_cast<double>(c.n_layer) * static_cast<double>(11 * T * D + 2 * H * T * T + 2 * T * I) +
                          static_cast<double>(3 * T * D + T * V);
    const double per_float = dump_format_of(co.dump) == DumpFormat::json ? 4 + 2 * kJsonBytesPerFloat : 4 + 4;
    require_fits_in_memory("--text", floats * per_float + 4.0 * static_cast<double>(l.model.stack.tok_emb.numel()),
                           fmt::format("every activation of {} tokens in {} layers", T, c.n_layer));
    ActivationCache cache;
    StackOptions fo;
    fo.record_attention = false;
    fo.cache = &cache;
    (void)l.model.forward(l.ids, fo);
    std::vector<std::string> tokens;
    for (int32_t id : l.ids) tokens.push_back(l.tok.token_text(id));
    std::string shown;
    for (const std::string& t : tokens) shown += (shown.empty() ? "" : " ") + quoted(t);
    text.print("attn model cache: {}\n{} tokens: {}\n\n", describe(l), T, shown);
    text.print("every activation of one forward pass, named as TransformerLens names them (T = {} tokens, D = {}, "
               "H = {} heads of Dk = {}, I = {}, V = {}):\n",
               T, D, H, l.model.head_dim(), I, V);
    size_t width = 0;
    for (const std::string& n : cache.order) width = std::max(width, n.size());
    Dump d;
    double total = 0;
    for (const std::string& n : cache.order) {
        const Tensor& t = cache.tensors.at(n);
        text.print("  {:<{}}  {:<18} {}\n", n, width, shape_str(t.shape), cache_meaning(n));
        total += static_cast<double>(t.numel());
    }
    d.config = {{"model", l.files.dir},
                {"architecture", "gpt2"},
                {"text", o.text},
                {"tokens", tokens},
                {"ids", l.ids},
                {"layers", c.n_layer},
                {"heads", H},
                {"d_model", D},
                {"d_head", l.model.head_dim()},
                {"names", "TransformerLens hook names; q, k, v, z are (1, H, T, Dk), scores and pattern (1, H, T, T) "
                          "with row i = query token i; attn_scores hold -inf where the causal mask forbids"}};
    d.order = cache.order;
    d.tensors = std::move(cache.tensors);
    with_option("--dump", [&] { write_dump_file(co.dump, d, co.json_nonfinite); });
    if (co.dump != "-")
        text.print("\nwrote {} ({} tensors, {:.0f} floats, {})\n", co.dump, d.order.size(), total,
                   dump_format_name(dump_format_of(co.dump)));
    if (o.json.given()) write_cache_json(o, co, l, tokens, d, total, text);
    return 0;
}

// --heads "L.H,L.H,...": each head once, inside the model; errors name `opt`.
std::vector<HeadRef> parse_heads(const std::string& spec, const Gpt2Config& c, const char* opt) {
    const std::string rule = fmt::format("a comma-separated list of LAYER.HEAD, layer in [0, {}] and head in [0, {}], "
                                         "each head once",
                                         c.n_layer - 1, c.n_head - 1);
    std::vector<HeadRef> out;
    for (std::string_view item : split_commas(spec)) {
        const size_t dot = item.find('.');
        int64_t layer = 0, head = 0;
        if (item.empty() || dot == std::string_view::npos ||
            !read_integer(item.substr(0, dot), 0, c.n_layer - 1, layer).empty() ||
            !read_integer(item.substr(dot + 1), 0, c.n_head - 1, head).empty())
            throw InputError(fmt::format("{}: '{}' is not a head of this model ({})", opt, item, rule));
        const HeadRef r{layer, head};
        if (std::find(out.begin(), out.end(), r) != out.end())
            throw InputError(fmt::format("{}: {}.{} is named twice ({})", opt, layer, head, rule));
        out.push_back(r);
    }
    return out;
}

// The next-token view of one run: the loss over the text and the last position's prediction.
struct RunFigures {
    double loss = 0;
    int32_t top = 0;           // the most likely next token after the text
    float top_prob = 0;        // its probability
    float clean_top_prob = 0;  // the probability of the clean run's top token
};
RunFigures run_figures(const Tensor& logits, const std::vector<int32_t>& ids, int32_t clean_top) {
    const int64_t T = logits.dim(0), V = logits.dim(1);
    const float* last = logits.ptr() + (T - 1) * V;
    const std::vector<float> p = softmax_probs(last, V);
    RunFigures f;
    f.loss = gpt2_loss(logits, ids);
    f.top = static_cast<int32_t>(std::max_element(last, last + V) - last);
    f.top_prob = p[static_cast<size_t>(f.top)];
    f.clean_top_prob = p[static_cast<size_t>(clean_top < 0 ? f.top : clean_top)];
    return f;
}

std::string mode_words(AblationMode m) {
    return m == AblationMode::Zero ? "zero: the head's z (its output before c_proj) set to 0 at every position"
                                   : "mean: the head's z replaced by its mean over this text's positions";
}

void check_loss_tokens(const Loaded& l) {
    if (l.ids.size() < 2)
        throw InputError("--text: gives 1 token; a next-token loss needs at least 2 (the first predicts the second)");
}

int run_ablate(const DecoderOpts& o, const AblateOpts& a) {
    const TextOut text({o.json.claim()});
    const Loaded l = load(o);
    const std::vector<HeadRef> heads = parse_heads(a.heads, l.model.config);
    check_loss_tokens(l);
    StackOptions fo;
    fo.record_attention = false;
    const RunFigures clean = run_figures(l.model.forward(l.ids, fo).logits, l.ids, -1);
    fo.ablate = heads;
    fo.ablation = a.mode;
    const RunFigures abl = run_figures(l.model.forward(l.ids, fo).logits, l.ids, clean.top);
    auto token_text = [&](int32_t id) { return id < l.tok.vocab_size() ? l.tok.token_text(id) : std::string("?"); };
    const int64_t n_pred = static_cast<int64_t>(l.ids.size()) - 1;
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-ablate"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["ids"] = l.ids;
        nlohmann::ordered_json hs = nlohmann::ordered_json::array();
        for (const HeadRef& r : heads) hs.push_back({r.layer, r.head});
        j["heads"] = hs;
        j["mode"] = ablation_mode_name(a.mode);
        j["loss"] = "mean next-token cross-entropy, nats, over the text's T - 1 predictions";
        auto side = [&](const RunFigures& f) {
            return nlohmann::ordered_json{{"loss", f.loss},
                                          {"top", {{"id", f.top}, {"text", token_text(f.top)}, {"prob", f.top_prob}}},
                                          {"prob_clean_top", f.clean_top_prob}};
        };
        j["clean"] = side(clean);
        j["ablated"] = side(abl);
        j["loss_change"] = abl.loss - clean.loss;
        write_json(o.json, j, "attn-model-ablate", 1);
        if (o.json.to_stdout()) return 0;
    }
    std::string names;
    for (const HeadRef& r : heads) names += fmt::format("{}{}.{}", names.empty() ? "" : ", ", r.layer, r.head);
    text.print("attn model ablate: {}\n{} tokens; ablated together: {} head(s) {}\n({})\n\n", describe(l), l.ids.size(),
               heads.size(), names, mode_words(a.mode));
    text.print("{:<28} {:>18} {:>18} {:>10}\n", "", "clean", "ablated", "change");
    text.print("{:<28} {:>18.4f} {:>18.4f} {:>+10.4f}\n", fmt::format("loss (nats, {} predictions)", n_pred), clean.loss,
               abl.loss, abl.loss - clean.loss);
    text.print("{:<28} {:>18} {:>18}\n", "top next token", quoted(token_text(clean.top)), quoted(token_text(abl.top)));
    text.print("{:<28} {:>17.2f}% {:>17.2f}%\n", "its probability", 100.0 * clean.top_prob, 100.0 * abl.top_prob);
    text.print("{:<28} {:>17.2f}% {:>17.2f}% {:>+9.2f}pt\n", "p(clean top token)", 100.0 * clean.clean_top_prob,
               100.0 * abl.clean_top_prob, 100.0 * (abl.clean_top_prob - clean.clean_top_prob));
    text.print("\nloss: the mean cross-entropy of predicting each next token of the text; a rise means the heads "
               "helped.\n");
    return 0;
}

int run_heads(const DecoderOpts& o, const AblateOpts& a) {
    const TextOut text({o.json.claim()});
    const Loaded l = load(o);
    const Gpt2Config& c = l.model.config;
    const int64_t L = c.n_layer, H = c.n_head, T = static_cast<int64_t>(l.ids.size());
    if (a.ablation) check_loss_tokens(l);
    else if (T < 2) throw InputError("--text: gives 1 token; a head's pattern needs at least 2 (query 0 sees only itself)");
    const StackOutput out = l.model.forward(l.ids);
    const Mask causal = Mask::make_causal();
    struct Row {
        int64_t layer = 0, head = 0;
        HeadShares shares;
        double entropy = 0;  // mean normalised entropy of the rows i >= 1
        RunFigures abl;
    };
    std::vector<Row> rows;
    for (int64_t l2 = 0; l2 < L; ++l2) {
        const Tensor& w = out.attentions[static_cast<size_t>(l2)];
        const std::vector<HeadStats> st = head_stats(w, causal);
        for (int64_t h = 0; h < H; ++h)
            rows.push_back({l2, h, head_shares(w, h), st[static_cast<size_t>(h)].mean_normalized_entropy, {}});
    }
    RunFigures clean;
    if (a.ablation) {
        clean = run_figures(out.logits, l.ids, -1);
        ProgressLine line({stderr_is_tty(), std::chrono::milliseconds(500)});
        StackOptions fo;
        fo.record_attention = false;
        fo.ablation = a.mode;
        for (size_t k = 0; k < rows.size(); ++k) {
            line.show("attn model heads --ablation", static_cast<int64_t>(k), static_cast<int64_t>(rows.size()), "heads");
            fo.ablate = {{rows[k].layer, rows[k].head}};
            rows[k].abl = run_figures(l.model.forward(l.ids, fo).logits, l.ids, clean.top);
        }
        line.clear();
        std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.abl.loss > y.abl.loss; });
    }
    auto token_text = [&](int32_t id) { return id < l.tok.vocab_size() ? l.tok.token_text(id) : std::string("?"); };
    if (o.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-heads"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["ids"] = l.ids;
        j["shares"] = "mean weight over the queries i >= 1 on the first token, the previous token and the query itself";
        j["entropy"] = "mean over the rows i >= 1 of each row's entropy / ln(i + 1): 1 uniform over the tokens it may "
                       "see, 0 all on one";
        if (a.ablation) {
            j["mode"] = ablation_mode_name(a.mode);
            j["clean"] = {{"loss", clean.loss},
                          {"top", {{"id", clean.top}, {"text", token_text(clean.top)}, {"prob", clean.top_prob}}}};
        }
        nlohmann::ordered_json arr = nlohmann::ordered_json::array();
        for (const Row& r : rows) {
            nlohmann::ordered_json e = {{"layer", r.layer},        {"head", r.head},          {"first", r.shares.first},
                                        {"prev", r.shares.prev},   {"self", r.shares.self},   {"entropy", r.entropy}};
            if (a.ablation) {
                e["loss"] = r.abl.loss;
                e["loss_rise"] = r.abl.loss - clean.loss;
                e["prob_clean_top"] = r.abl.clean_top_prob;
                e["prob_change"] = r.abl.clean_top_prob - clean.top_prob;
                e["top"] = r.abl.top;
            }
            arr.push_back(e);
        }
        j["heads"] = arr;
        write_json(o.json, j, "attn-model-heads", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model heads: {}\n{} tokens\n\n", describe(l), T);
    text.print("first, prev, self: the mean weight a head puts on the first token, the previous token and the query\n"
               "itself (over the queries after the first); entropy: each row's entropy over the ln(i + 1) that its\n"
               "i + 1 visible tokens allow, averaged (1 = uniform, 0 = all on one token)\n");
    if (a.ablation)
        text.print("\neach head ablated alone ({}); clean loss {:.4f} nats over {} predictions, clean top next token "
                   "{} at {:.2f}%.\nrise: the ablated loss minus the clean one; dp(top): the change of that token's "
                   "probability. Sorted by rise.\n",
                   mode_words(a.mode), clean.loss, T - 1, quoted(token_text(clean.top)), 100.0 * clean.top_prob);
    text.print("\n{:>6} {:>5} {:>7} {:>7} {:>7} {:>8}", "layer", "head", "first", "prev", "self", "entropy");
    if (a.ablation) text.print(" {:>10} {:>10}", "rise", "dp(top)");
    text.print("\n");
    for (const Row& r : rows) {
        text.print("{:>6} {:>5} {:>6.0f}% {:>6.0f}% {:>6.0f}% {:>8.3f}", r.layer, r.head, 100 * r.shares.first,
                   100 * r.shares.prev, 100 * r.shares.self, r.entropy);
        if (a.ablation)
            text.print(" {:>+10.4f} {:>+9.2f}pt", r.abl.loss - clean.loss, 100.0 * (r.abl.clean_top_prob - clean.top_prob));
        text.print("\n");
    }
    if (!a.ablation) text.print("\n--ablation adds each head's effect on the loss when it is removed (attn model ablate).\n");
    return 0;
}

}  // namespace

bool is_decoder_folder(const std::string& dir) { return folder_model_type(dir) == "gpt2"; }

// --json of `attn model attention` on a decoder: the tokens, each head's shares (first token,
// previous token, itself; null for a one-token text) and the picked weights.
static void write_decoder_attention_json(const DecoderAttentionArgs& a, const Loaded& l,
                                         const std::vector<std::string>& tokens, const StackOutput& out,
                                         const TextOut& text) {
    const int64_t L = l.model.config.n_layer, H = l.model.config.n_head;
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t l2 = 0; l2 < L; ++l2)
        for (int64_t h = 0; h < H; ++h) {
            nlohmann::json row = {{"layer", l2}, {"head", h}};
            if (tokens.size() >= 2) {
                const HeadShares sh = head_shares(out.attentions[static_cast<size_t>(l2)], h);
                row.update({{"first", sh.first}, {"prev", sh.prev}, {"self", sh.self}});
            }
            heads.push_back(row);
        }
    const nlohmann::json j = {{"model", l.files.dir}, {"architecture", "gpt2"}, {"text", a.text}, {"tokens", tokens},
                              {"ids", l.ids}, {"layers", L}, {"heads", H}, {"head_shares", heads},
                              {"weights", picked_weights_json(out.attentions, a.layer, a.head)}};
    write_json(a.json, j, "attn-model-attention", 1);
    if (!a.json.to_stdout()) text.print("wrote {} (attn-model-attention JSON)\n", a.json.path());
}

// --html on a decoder: the page of every layer's weights, the values' norms (hook_v) for the
// norm-based view, and each head's note in the decoder's words (first token, previous, itself).
void write_decoder_page(const DecoderAttentionArgs& a, const Loaded& l, const StackOutput& out,
                        const ActivationCache& cache, const std::vector<std::string>& tokens, const TextOut& text) {
    const int64_t L = l.model.config.n_layer, H = l.model.config.n_head, T = static_cast<int64_t>(l.ids.size());
    std::vector<Tensor> values;
    for (int64_t l2 = 0; l2 < L; ++l2) values.push_back(cache.at(fmt::format("blocks.{}.attn.hook_v", l2)));
    AttentionPage page = page_from_model(out.attentions, values, tokens, Mask::make_causal());
    for (int64_t l2 = 0; l2 < L && T >= 2; ++l2)
        for (int64_t h = 0; h < H; ++h) {
            std::string& note = page.head_notes[static_cast<size_t>(l2 * H + h)];
            const size_t like = note.find("; like head");  // the near-duplicate heads stay; [CLS] and [SEP] go
            const HeadShares sh = head_shares(out.attentions[static_cast<size_t>(l2)], h);
            note = fmt::format("first {:.0f}% prev {:.0f}% self {:.0f}%", 100 * sh.first, 100 * sh.prev,
                               100 * sh.self) +
                   (like == std::string::npos ? std::string() : note.substr(like));
        }
    page.title = fmt::format("GPT-2 decoder attention weights (causal): {} layers x {} heads", L, H);
    page.subtitle = a.text;
    page.source = l.files.dir;
    write_html_page(a.html, std::move(page), text);
}

int run_decoder_attention(const DecoderAttentionArgs& a) {
    const TextOut text({{"--svg -", a.svg == "-"}, {"--dump -", a.dump == "-"}, a.json.claim()});
    require_json_writable(a.json);
    if (a.head >= 0 && a.layer < 0) throw InputError("--head: needs --layer too (a head belongs to a layer)");
    if (!a.svg.empty()) require_writable("--svg", a.svg);
    if (!a.dump.empty()) require_writable("--dump", a.dump);
    check_html(a.html);
    const Loaded l = load_text(a.model, a.text);
    const Gpt2Config& c = l.model.config;
    const int64_t L = c.n_layer, H = c.n_head, T = static_cast<int64_t>(l.ids.size());
    for (const auto& [opt, v, n, what] : {std::tuple{"--layer", a.layer, L, "layers"}, {"--head", a.head, H, "heads"}})
        if (v < -1 || v >= n)
            throw InputError(fmt::format("{}: must be in [0, {}] (the model has {} {}), got {}", opt, n - 1, n, what, v));
    ActivationCache cache;  // with --html: the values, for the page's norm-based view
    StackOptions fo;
    if (!a.html.file.empty()) fo.cache = &cache;
    const StackOutput out = l.model.forward(l.ids, fo);
    std::vector<std::string> tokens;
    for (int32_t id : l.ids) tokens.push_back(l.tok.token_text(id));
    std::string shown;
    for (const std::string& t : tokens) shown += (shown.empty() ? "" : " ") + quoted(t);
    text.print("attn model attention: {}\n{} tokens: {}\n", describe(l), T, shown);
    // per head: mean over queries i >= 1 (query 0 sees only itself under the causal mask)
    if (T >= 2) {
        text.print("\nweight each head puts on the first token (a common 'sink'), the previous token and the query "
                   "itself,\nmean over the queries after the first (the causal mask leaves query 0 only itself):\n");
        text.print("{:>6} {:>5} {:>7} {:>7} {:>7}\n", "layer", "head", "first", "prev", "self");
        for (int64_t l2 = 0; l2 < L; ++l2)
            for (int64_t h = 0; h < H; ++h) {
                const HeadShares sh = head_shares(out.attentions[static_cast<size_t>(l2)], h);
                text.print("{:>6} {:>5} {:>6.0f}% {:>6.0f}% {:>6.0f}%\n", l2, h, 100 * sh.first, 100 * sh.prev,
                           100 * sh.self);
            }
    }
    if (a.json.given()) write_decoder_attention_json(a, l, tokens, out, text);
    if (a.layer >= 0) {
        HeatmapStyle style;
        style.color = text.color(a.no_color);
        const Tensor& w = out.attentions[static_cast<size_t>(a.layer)];  // (1, H, T, T)
        text.print("\nrows: query tokens; columns: the keys each row spreads its weight over (each row sums to 1; "
                   "above the diagonal the causal mask leaves 0)\n");
        for (int64_t h = 0; h < H; ++h)
            if (a.head < 0 || a.head == h)
                text.print("\n{}", render_heatmap(make_panel(fmt::format("layer {}, head {}", a.layer, h),
                                                              w.ptr() + h * T * T, T, T, tokens, tokens),
                                                   style));
    } else {
        text.print("\nPick a head for its heatmap: --layer L --head H (L in 0..{}, H in 0..{}); --svg FILE draws them.\n",
                   L - 1, H - 1);
    }
    if (!a.svg.empty()) {
        std::vector<HeatmapPanel> panels;
        for (int64_t l2 = 0; l2 < L; ++l2)
            for (int64_t h = 0; h < H; ++h)
                if ((a.layer < 0 || a.layer == l2) && (a.head < 0 || a.head == h))
                    panels.push_back(make_panel(fmt::format("layer {} head {}", l2, h),
                                                out.attentions[static_cast<size_t>(l2)].ptr() + h * T * T, T, T, tokens,
                                                tokens));
        SvgOptions so;
        so.title = "GPT-2 decoder attention weights (rows: queries, columns: keys; causal)";
        so.subtitle = a.text;
        with_option("--svg", [&] { write_file_atomic(a.svg, heatmap_svg(panels, so)); });
        if (a.svg != "-") text.print("wrote {} ({} heatmaps)\n", a.svg, panels.size());
    }
    if (!a.dump.empty()) {
        Dump d;
        d.config = {{"model", l.files.dir}, {"architecture", "gpt2"}, {"text", a.text}, {"tokens", tokens},
                    {"ids", l.ids}, {"layers", L}, {"heads", H},
                    {"layout", "attention is [layers, B, H, T, T]: row i of a head = query token i (causal)"}};
        Tensor all({L, 1, H, T, T});
        for (int64_t l2 = 0; l2 < L; ++l2)
            std::copy(out.attentions[static_cast<size_t>(l2)].data.begin(),
                      out.attentions[static_cast<size_t>(l2)].data.end(), all.ptr() + l2 * H * T * T);
        d.tensors["attention"] = std::move(all);
        d.order.push_back("attention");
        with_option("--dump", [&] { write_dump_file(a.dump, d, a.json_nonfinite); });
        if (a.dump != "-") text.print("wrote {} (attention [{}, 1, {}, {}, {}] and the tokens)\n", a.dump, L, H, T, T);
    }
    if (!a.html.file.empty()) write_decoder_page(a, l, out, cache, tokens, text);
    return 0;
}

int run_decoder_entropy(const DecoderEntropyArgs& a) {
    const TextOut text({a.json.claim()});
    require_json_writable(a.json);
    const Loaded l = load_text(a.model, a.text);
    const Gpt2Config& c = l.model.config;
    const int64_t L = c.n_layer, H = c.n_head, T = static_cast<int64_t>(l.ids.size());
    if (T < 2) throw InputError("--text: gives 1 token; under the causal mask its only row has one key and no entropy");
    const Gpt2Model random = Gpt2Model::random(c, a.seed);
    const Mask causal = Mask::make_causal();
    const StackOutput ot = l.model.forward(l.ids), orand = random.forward(l.ids);
    const HeadFigures ft = head_figures(ot.attentions, causal), fr = head_figures(orand.attentions, causal);
    // the trained model's rows, mean over every head, against their bound ln(i + 1)
    std::vector<double> row_nats(static_cast<size_t>(T), 0.0);
    for (const Tensor& w : ot.attentions)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                const RowStats r = row_stats(w.ptr() + (h * T + i) * T, T, i + 1);
                row_nats[static_cast<size_t>(i)] += r.entropy_nats / static_cast<double>(L * H);
            }
    const double pairs = static_cast<double>(H * (H - 1) / 2);
    std::vector<std::string> tokens;
    for (int32_t id : l.ids) tokens.push_back(l.tok.token_text(id));
    if (a.json.given()) {
        auto side = [&](const HeadFigures& f, const char* name) {
            nlohmann::ordered_json j = {{"name", name}, {"entropy", f.entropy}};
            nlohmann::ordered_json sims = nlohmann::ordered_json::array(), dups = nlohmann::ordered_json::array();
            for (const Tensor& s : f.similarity) {
                std::vector<std::vector<float>> rows;  // (H, H), as the encoder's document holds it
                for (int64_t h = 0; h < H; ++h) rows.emplace_back(s.data.begin() + h * H, s.data.begin() + (h + 1) * H);
                sims.push_back(rows);
                nlohmann::ordered_json d = nlohmann::ordered_json::array();
                for (const HeadPair& q : near_duplicate_heads(s, a.dup)) d.push_back({{"a", q.a}, {"b", q.b}, {"js", q.js}});
                dups.push_back(d);
            }
            j["similarity_js"] = sims;
            j["near_duplicates"] = dups;
            return j;
        };
        nlohmann::ordered_json j = {{"format", "attn-model-entropy"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["text"] = a.text;
        j["tokens"] = tokens;
        j["entropy"] = "mean over the rows i >= 1 of entropy(row i) / ln(i + 1), per [layer][head]: the causal mask "
                       "lets row i see i + 1 tokens; 1 uniform over them, 0 one-hot";
        j["row_entropy_nats"] = row_nats;
        std::vector<double> bound;
        for (int64_t i = 0; i < T; ++i) bound.push_back(std::log(static_cast<double>(i + 1)));
        j["row_bound_nats"] = bound;
        j["dup_threshold_nats"] = a.dup;
        j["random_seed"] = a.seed;
        j["models"] = {side(ft, "trained"), side(fr, "random")};
        write_json(a.json, j, "attn-model-entropy", 1);
        if (a.json.to_stdout()) return 0;
    }
    std::string shown;
    for (const std::string& t : tokens) shown += (shown.empty() ? "" : " ") + quoted(t);
    text.print("attn model entropy: {}\n{} tokens: {}\n\n", describe(l), T, shown);
    text.print("The causal mask lets query i see only the i + 1 tokens up to itself, so row i's entropy is at most\n"
               "ln(i + 1) nats: a later row can spread further. Each row's entropy is divided by its own ln(i + 1)\n"
               "(row 0, one token and no choice, is left out), then averaged over the rows: x100 below,\n"
               "100 = uniform over the tokens a row may see, 0 = all on one token.\n\n");
    std::string hdr;
    for (int64_t h = 0; h < H; ++h) hdr += fmt::format(" h{:<2}", h);
    text.print("random: a GPT-2 of the same config as transformers initialises it (N(0, 0.02^2) weights, seed {})\n\n",
               a.seed);
    text.print("{:<6}|{:<{}}|{:<{}}|\n", "", " trained", 4 * H + 6, " random", 4 * H + 6);
    text.print("{:<6}|{} mean |{} mean |\n", "layer", hdr, hdr);
    auto row = [&](const std::vector<double>& e) {
        std::string s;
        for (double v : e) s += fmt::format(" {:3.0f}", 100 * v);
        return s + fmt::format("  {:3.0f} ", 100 * std::accumulate(e.begin(), e.end(), 0.0) / static_cast<double>(e.size()));
    };
    for (int64_t l2 = 0; l2 < L; ++l2)
        text.print("{:<6}|{}|{}|\n", l2, row(ft.entropy[static_cast<size_t>(l2)]), row(fr.entropy[static_cast<size_t>(l2)]));
    text.print("\nthe trained model's rows, mean over all {} heads: entropy in nats against the bound ln(i + 1)\n",
               L * H);
    text.print("{:>6} {:>9} {:>9} {:>7}\n", "query", "entropy", "ln(i+1)", "ratio");
    const int64_t shown_rows = std::min<int64_t>(T, 12);
    for (int64_t k = 0; k < shown_rows; ++k) {
        const int64_t i = shown_rows == T ? k : k * (T - 1) / (shown_rows - 1);  // spread over the text when long
        const double b = std::log(static_cast<double>(i + 1));
        text.print("{:>6} {:>9.3f} {:>9.3f} {:>7}\n", i, row_nats[static_cast<size_t>(i)], b,
                   i == 0 ? std::string("-") : fmt::format("{:.2f}", row_nats[static_cast<size_t>(i)] / b));
    }
    text.print("\nhead-to-head similarity: mean Jensen-Shannon divergence between two heads' rows (nats, 0 = identical,\n"
               "ln 2 = 0.69 = disjoint); pairs under --dup-threshold {} are flagged as near-duplicates\n\n",
               a.dup);
    text.print("{:<6} {:>10} {:>10}   {}\n", "layer", "trained", "random", "trained near-duplicate pairs (heads a~b: JS)");
    for (int64_t l2 = 0; l2 < L; ++l2) {
        const auto dt = near_duplicate_heads(ft.similarity[static_cast<size_t>(l2)], a.dup);
        const auto dr = near_duplicate_heads(fr.similarity[static_cast<size_t>(l2)], a.dup);
        std::string list;
        for (size_t k = 0; k < dt.size() && k < 6; ++k) list += fmt::format("{}~{}: {:.3f}  ", dt[k].a, dt[k].b, dt[k].js);
        if (dt.size() > 6) list += fmt::format("(+{} more)", dt.size() - 6);
        text.print("{:<6} {:>4}/{:<5} {:>4}/{:<5}   {}\n", l2, dt.size(), pairs, dr.size(), pairs, list);
    }
    text.print("\nA random decoder's heads spread near-uniformly over what the mask lets them see; trained heads are\n"
               "sharper where they have learned to look (the previous token, the first token, a matching one).\n");
    return 0;
}

// The positions of the tokens that spell the n-th whole-word occurrence of `word` in the text the
// tokens decode to (a word boundary: a byte that is not an ASCII letter or digit, nor part of a
// multi-byte character, or either end). Errors name no option.
std::vector<int64_t> find_bpe_word(const std::vector<std::string>& tokens, const std::string& word, int n) {
    if (word.empty()) throw InputError("names no word");
    std::string all;
    std::vector<size_t> start;
    for (const std::string& t : tokens) {
        start.push_back(all.size());
        all += t;
    }
    auto word_byte = [](unsigned char ch) { return std::isalnum(ch) != 0 || ch >= 0x80; };
    int seen = 0;
    for (size_t at = all.find(word); at != std::string::npos; at = all.find(word, at + 1)) {
        const size_t end = at + word.size();
        const bool left = at == 0 || !word_byte(static_cast<unsigned char>(all[at - 1])) ||
                          !word_byte(static_cast<unsigned char>(word.front()));
        const bool right = end == all.size() || !word_byte(static_cast<unsigned char>(all[end])) ||
                           !word_byte(static_cast<unsigned char>(word.back()));
        if (!left || !right || ++seen != n) continue;
        std::vector<int64_t> pos;
        for (size_t t = 0; t < tokens.size(); ++t)
            if (start[t] < end && start[t] + tokens[t].size() > at) pos.push_back(static_cast<int64_t>(t));
        return pos;
    }
    if (seen > 0) throw InputError(fmt::format("'{}' occurs {} time(s) in the text, not {}", word, seen, n));
    std::string list;
    for (size_t t = 0; t < tokens.size() && t < 30; ++t) list += (t ? " " : "") + quoted(tokens[t]);
    throw InputError(fmt::format("'{}' is not a word of the text (its tokens: {})", word, list));
}

int run_decoder_probe(const DecoderProbeArgs& a) {
    const TextOut text({a.json.claim()});
    require_json_writable(a.json);
    const Loaded l = load_text(a.model, a.text);
    std::vector<std::string> tokens;
    for (int32_t id : l.ids) tokens.push_back(l.tok.token_text(id));
    const std::vector<int64_t> from = with_option("--from", [&] { return find_bpe_word(tokens, a.from, a.from_n); });
    std::vector<std::vector<int64_t>> groups;
    for (const auto& [w, n] : a.to_words)
        groups.push_back(with_option("--to", [&, &w = w, &n = n] { return find_bpe_word(tokens, w, n); }));
    const StackOutput out = l.model.forward(l.ids);
    const ProbeRanking ranked = rank_probe(probe_heads(out.attentions, 0, from, groups));
    const size_t C = a.to.size();
    // under the causal mask a query sees only the tokens up to itself
    std::vector<bool> after(C, false);
    for (size_t k = 0; k < C; ++k) after[k] = groups[k].front() > from.front();
    if (a.json.given()) {
        nlohmann::ordered_json j = {{"format", "attn-model-probe"}, {"version", 1}};  // the envelope's keys first
        j["model"] = l.files.dir;
        j["text"] = a.text;
        j["tokens"] = tokens;
        j["from"] = a.from;
        j["from_tokens"] = from;
        j["to"] = a.to;
        j["to_tokens"] = groups;
        j["causal"] = "a query attends only to the tokens up to itself: a candidate after it gets 0";
        add_probe_json(j, ranked);
        write_json(a.json, j, "attn-model-probe", 1);
        if (a.json.to_stdout()) return 0;
    }
    std::string shown;
    for (const std::string& t : tokens) shown += (shown.empty() ? "" : " ") + quoted(t);
    auto positions = [](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
    text.print("attn model probe: {}\n{} tokens: {}\n", describe(l), tokens.size(), shown);
    text.print("query '{}' (token {}); candidates:", a.from, positions(from));
    for (size_t k = 0; k < C; ++k) text.print(" '{}' (token {})", a.to[k], positions(groups[k]));
    text.print("\nweight = attention from the query to the candidate's tokens (a decoder: each query sees only the "
               "tokens up to itself);\nheads ranked by the weight on '{}'\n\n", a.to[0]);
    print_probe_ranking(text, a.to, ranked, a.top, after);
    return 0;
}

std::function<std::optional<int>()> add_decoder_subcommands(CLI::App& model) {
    auto o = std::make_shared<DecoderOpts>();
    auto no = std::make_shared<NextOpts>();
    auto go = std::make_shared<GenerateOpts>();
    auto common = [o](CLI::App* s) {
        s->add_option("--model", o->model,
                      "a GPT-2-family folder as Hugging Face writes it: config.json, model.safetensors (float32, "
                      "float16 or bfloat16), vocab.json + merges.txt or tokenizer.json (default: data/decoders/macbeth-char, the "
                      "character-level decoder attn ships)");
        allow_empty(s->add_option("--text", o->text,
                                  "the prompt (bytes that are not UTF-8 read as U+FFFD; <|endoftext|> typed in it is "
                                  "that one token)")
                        ->required()
                        ->transform(valid_utf8()));
        s->add_flag("--bos", o->bos, "start with <|endoftext|>, the token GPT-2 saw between documents");
    };
    CLI::App* nx = model.add_subcommand("next", "a decoder's next-token probabilities after a prompt (GPT-2 folders)");
    common(nx);
    nx->add_option("--top", no->top, "how many of the most likely tokens to list")
        ->capture_default_str()
        ->check(integer_in(1, 1000000));
    add_json(*nx, o->json_next, "attn-model-next: the prompt's tokens and the most likely next tokens");
    CLI::App* gen = model.add_subcommand(
        "generate", "continue a prompt with a decoder, token by token through the KV cache (GPT-2 folders)");
    common(gen);
    gen->add_option("--steps", go->steps, "tokens to add")->capture_default_str()->check(integer_in(0, 1000000));
    gen->add_option("--temperature", go->temperature,
                    "0: greedy (the most likely token); above 0: draw from softmax(logits / temperature)")
        ->capture_default_str();
    gen->add_option("--seed", go->seed, "seed of the draws (same seed, same tokens)")
        ->capture_default_str()
        ->check(seed_validator());
    gen->add_flag("--attention", go->attention,
                  "with --json: each step's attention weights (per layer and head, the query that chose the token)");
    add_json(*gen, o->json_generate, "attn-model-generate: the tokens chosen, step by step");
    auto add_mode = [](CLI::App* s, AblationMode& mode) {
        return s->add_option("--mode", mode,
                             "zero: a head's z (its output before c_proj) set to 0; mean: z replaced by its mean over "
                             "this text's positions")
            ->transform(one_of<AblationMode>({AblationMode::Zero, AblationMode::Mean}, ablation_mode_name))
            ->default_str("zero");
    };
    auto io = std::make_shared<InductionOpts>();
    CLI::App* ind = model.add_subcommand(
        "induction", "look for previous-token and induction heads with repeated random tokens (GPT-2 folders)");
    ind->add_option("--model", o->model,
                    "a GPT-2-family folder (as for next; default: data/decoders/induction-2l, the attention-only "
                    "decoder attn ships)");
    ind->add_option("--length", io->length, "random tokens before the repeat (default: 50, or what the positions allow)")
        ->check(integer_in(1, 1000000));
    ind->add_option("--seed", io->seed, "seed of the random tokens")->capture_default_str()->check(seed_validator());
    ind->add_option("--ablate", io->ablate,
                    "heads LAYER.HEAD,... to remove in a second pass: the loss per copy with them gone");
    const CLI::Option* ind_mode = add_mode(ind, io->mode);
    add_json(*ind, o->json_induction, "attn-model-induction: the loss per copy and each head's scores");
    auto co = std::make_shared<CacheOpts>();
    CLI::App* ca = model.add_subcommand(
        "cache", "every activation of one forward pass, under TransformerLens's names, to a dump file (GPT-2 folders)");
    common(ca);
    add_json_nonfinite(*ca, co->json_nonfinite,
                       ca->add_option("--dump,-o,--output", co->dump,
                                      "the file: .safetensors, .npz or .json (- for JSON on stdout: the table goes to "
                                      "stderr)")
                           ->required());
    add_json_result(*ca, o->json_cache,
                    "attn-model-cache: each tensor's name, shape and meaning, and the cached logits' largest "
                    "difference from a plain forward pass");
    auto ao = std::make_shared<AblateOpts>();
    CLI::App* ab = model.add_subcommand(
        "ablate", "remove heads together and compare the loss and the next-token prediction with the clean run "
                  "(GPT-2 folders)");
    common(ab);
    ab->add_option("--heads,-H", ao->heads, "the heads to ablate together: LAYER.HEAD,LAYER.HEAD,... (0-based)")->required();
    add_mode(ab, ao->mode);
    add_json(*ab, o->json_ablate, "attn-model-ablate: the loss and the prediction, clean and ablated");
    auto ho = std::make_shared<AblateOpts>();
    CLI::App* hd = model.add_subcommand(
        "heads", "a table of every head: where its weight goes, its entropy, and with --ablation the loss each "
                 "one's removal costs (GPT-2 folders)");
    common(hd);
    hd->add_flag("--ablation", ho->ablation, "ablate each head alone and sort the heads by the loss rise");
    const CLI::Option* hd_mode = add_mode(hd, ho->mode);
    add_json(*hd, o->json_heads, "attn-model-heads: every head's pattern shares, entropy and ablation effect");
    return [o, no, go, io, co, ao, ho, nx, gen, ind, ca, ab, hd, hd_mode, ind_mode]() -> std::optional<int> {
        if (ca->parsed()) {
            o->json = o->json_cache;
            return run_cache(*o, *co);
        }
        if (ab->parsed()) {
            o->json = o->json_ablate;
            return run_ablate(*o, *ao);
        }
        if (hd->parsed()) {
            o->json = o->json_heads;
            if (hd_mode->count() > 0 && !ho->ablation)
                throw InputError("--mode: goes with --ablation (it says how each head is removed)");
            return run_heads(*o, *ho);
        }
        if (ind->parsed()) {
            o->json = o->json_induction;
            if (ind_mode->count() > 0 && io->ablate.empty())
                throw InputError("--mode: goes with --ablate (it says how each head is removed)");
            return run_induction(*o, *io);
        }
        if (nx->parsed()) {
            o->json = o->json_next;
            return run_next(*o, *no);
        }
        if (gen->parsed()) {
            o->json = o->json_generate;
            if (go->attention && !o->json.given()) throw InputError("--attention: goes with --json (the weights are written there)");
            return run_generate(*o, *go);
        }
        return std::nullopt;
    };
}

void add_probe_json(nlohmann::ordered_json& j, const ProbeRanking& r) {
    nlohmann::ordered_json hr = nlohmann::ordered_json::array();
    for (const ProbeRow& row : r.rows) hr.push_back({{"layer", row.layer}, {"head", row.head}, {"weight", row.weight}});
    j["heads"] = hr;
    j["mean_weight"] = r.mean_weight;
    j["heads_preferring"] = r.heads_preferring;
}

namespace {
// A label of at most `w` code points, padded on the left to w columns.
std::string label(const std::string& s, size_t w) {
    std::u32string u = utf8_decode(s);
    if (u.size() > w) u = u.substr(0, w - 1) + U"…";
    return std::string(w - u.size(), ' ') + utf8_encode(u);
}
}  // namespace

void print_probe_ranking(const TextOut& text, const std::vector<std::string>& to, const ProbeRanking& r, int64_t top,
                         const std::vector<bool>& after) {
    text.print("{:>4} {:>5} {:>4}", "rank", "layer", "head");
    for (const std::string& t : to) text.print(" {}", label(t, 9));
    text.print("   prefers\n");
    const size_t n_shown = top > 0 ? std::min<size_t>(r.rows.size(), static_cast<size_t>(top)) : r.rows.size();
    for (size_t k = 0; k < n_shown; ++k) {
        const ProbeRow& row = r.rows[k];
        text.print("{:>4} {:>5} {:>4}", k + 1, row.layer, row.head);
        for (double v : row.weight) text.print(" {:9.3f}", v);
        text.print("   {}\n", to[preferred_candidate(row)]);
    }
    if (n_shown < r.rows.size()) text.print(" ... {} more heads (--top 0 shows all)\n", r.rows.size() - n_shown);
    text.print("\n");
    for (size_t k = 0; k < to.size(); ++k) {
        text.print("'{}': mean weight {:.3f} over all {} heads; the preferred candidate of {} heads\n", to[k],
                   r.mean_weight[k], r.rows.size(), r.heads_preferring[k]);
        if (k < after.size() && after[k])
            text.print("  note: '{}' comes after the query, so the causal mask gives it no weight\n", to[k]);
    }
}

}  // namespace attn::cli
