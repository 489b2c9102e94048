// `attn model induction`, `cache`, `ablate` and `heads`: looking inside a GPT-2-family decoder (the
// shipped data/decoders/macbeth-char without --model; induction: data/decoders/induction-2l).
//   attn model induction [--model DIR] [--length N] [--seed S] [--ablate L.H,... [--mode zero|mean]] [--json]
//   attn model cache     [--model DIR] --text T --dump F [--json [F]]   every activation (TransformerLens names)
//   attn model ablate    [--model DIR] --text T --heads L.H,... [--mode zero|mean] [--json]
//   attn model heads     [--model DIR] --text T [--ablation [--mode zero|mean]] [--json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/stats.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/heads.hpp"
#include "attn/model/induction.hpp"
#include "cmd_model.hpp"
#include "command.hpp"
#include "model_text.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"

namespace attn::cli {
namespace {

struct CircuitOpts : DecoderLoad {
    JsonOut json;  // the running subcommand's, one of these (a JsonOut binds to one option):
    JsonOut json_induction, json_ablate, json_heads, json_cache;
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
struct InductionOpts {
    int64_t length = 0;  // 0: min(50, (n_positions - 1) / 2)
    uint64_t seed = 0;
    std::string ablate;  // heads "L.H,..." to ablate in a second pass ("": none)
    AblationMode mode = AblationMode::Zero;
};

std::vector<HeadRef> parse_heads(const std::string& spec, const Gpt2Config& c, const char* opt = "--heads");
std::string mode_words(AblationMode m);

// A model `attn train --task induction` trained (its config.json's provenance says so) learned
// sequences of T tokens that end in a block of n in [max(2, T/4), T/2] tokens and its repeat, the loss
// scored on the repeat's last max(2, T/4) - 1 next tokens (positions T - max(2, T/4) .. T - 2). The probe
// puts its block at the start (after `s` tokens), so its repeat must reach those positions, and its block
// be no longer than T/2: a shorter block asks what the model never learned (the shipped model's
// second-copy loss at --length 8 is worse than the uniform guess). Refused in one line; other models pass.
void check_trained_length(const LoadedDecoder& l, int64_t n, int64_t s) {
    if (l.model.config.trained_task != "induction") return;  // no provenance, no rule
    const int64_t T = l.model.config.trained_seq;
    if (T < 6) return;
    const int64_t lo = std::max<int64_t>(2, T / 4), first = (T - lo + 1 - s + 1) / 2, last = T / 2;
    if (n >= first && n <= last) return;
    throw InputError(fmt::format("--length: this model was trained on {} tokens ending in a block of {} to {} and "
                                 "its repeat, scored on positions {}..{}; a block of {} puts its repeat at {}..{}, "
                                 "which it never learned: give --length {} to {} (or train one for other lengths: "
                                 "attn train --task induction --seq N --export-gpt2 DIR)",
                                 T, lo, T / 2, T - lo, T - 2, n, s + n, s + 2 * n - 1, first, last));
}

int run_induction(const CircuitOpts& o, const InductionOpts& io) {
    const TextOut text({o.json.claim()});
    CircuitOpts lo = o;
    lo.text = "";
    lo.probe = true;  // the probe starts with <|endoftext|> if the vocabulary has it; --text is not used
    lo.shipped = kInductionDecoder;
    const LoadedDecoder l = load_decoder(lo);
    const int64_t s = static_cast<int64_t>(l.ids.size());  // 1: <|endoftext|> first, 0: none
    const Gpt2Config& c = l.model.config;
    const int64_t most = (c.n_positions - s) / 2;
    const int64_t n = io.length > 0 ? io.length : std::min<int64_t>(50, most);
    if (n < 1 || n > most)
        throw InputError(
            fmt::format("--length: must be in [1, {}] ({}2 x length tokens within the model's {} positions), "
                        "got {}",
                        most, s == 1 ? "1 + " : "", c.n_positions, n));
    check_trained_length(l, n, s);
    const std::vector<HeadRef> ablated =
        io.ablate.empty() ? std::vector<HeadRef>{} : parse_heads(io.ablate, c, "--ablate");
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
    for (const HeadRef& r : ablated)
        ablated_names += fmt::format("{}{}.{}", ablated_names.empty() ? "" : ", ", r.layer, r.head);
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
    text.print("attn model induction: {}\n", l.describe());
    text.print("the probe: {}{} random tokens (seed {}), then the same {} again ({} tokens)\n\n",
               s == 1 ? "<|endoftext|>, " : "", n, io.seed, n, ids.size());
    text.print(
        "next-token loss on the first copy:  {:.3f} nats (a uniform guess over the {} drawn ids scores ln {} = "
        "{:.3f})\n",
        loss_first, hi, hi, std::log(static_cast<double>(hi)));
    text.print("next-token loss on the second copy: {:.3f} nats (lower when the model copies from the first)\n",
               loss_second);
    if (!ablated.empty())
        text.print(
            "with head(s) {} ablated ({}):\n  first copy {:.3f} nats ({:+.3f}), second copy {:.3f} nats ({:+.3f}): "
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
void write_cache_json(const CircuitOpts& o, const CacheOpts& co, const LoadedDecoder& l,
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

int run_cache(const CircuitOpts& o, const CacheOpts& co) {
    const TextOut text({{"--dump -", co.dump == "-"}, o.json.claim()});
    require_json_writable(o.json);
    with_option("--dump", [&] { dump_format_of(co.dump); });
    require_writable("--dump", co.dump);
    const LoadedDecoder l = load_decoder(o);
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
    text.print("attn model cache: {}\n{} tokens: {}\n\n", l.describe(), T, shown);
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

void check_loss_tokens(const LoadedDecoder& l) {
    if (l.ids.size() < 2)
        throw InputError("--text: gives 1 token; a next-token loss needs at least 2 (the first predicts the second)");
}

int run_ablate(const CircuitOpts& o, const AblateOpts& a) {
    const TextOut text({o.json.claim()});
    const LoadedDecoder l = load_decoder(o);
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
    text.print("attn model ablate: {}\n{} tokens; ablated together: {} head(s) {}\n({})\n\n", l.describe(),
               l.ids.size(), heads.size(), names, mode_words(a.mode));
    text.print("{:<28} {:>18} {:>18} {:>10}\n", "", "clean", "ablated", "change");
    text.print("{:<28} {:>18.4f} {:>18.4f} {:>+10.4f}\n", fmt::format("loss (nats, {} predictions)", n_pred),
               clean.loss, abl.loss, abl.loss - clean.loss);
    text.print("{:<28} {:>18} {:>18}\n", "top next token", quoted(token_text(clean.top)), quoted(token_text(abl.top)));
    text.print("{:<28} {:>17.2f}% {:>17.2f}%\n", "its probability", 100.0 * clean.top_prob, 100.0 * abl.top_prob);
    text.print("{:<28} {:>17.2f}% {:>17.2f}% {:>+9.2f}pt\n", "p(clean top token)", 100.0 * clean.clean_top_prob,
               100.0 * abl.clean_top_prob, 100.0 * (abl.clean_top_prob - clean.clean_top_prob));
    text.print("\nloss: the mean cross-entropy of predicting each next token of the text; a rise means the heads "
               "helped.\n");
    return 0;
}

int run_heads(const CircuitOpts& o, const AblateOpts& a) {
    const TextOut text({o.json.claim()});
    const LoadedDecoder l = load_decoder(o);
    const Gpt2Config& c = l.model.config;
    const int64_t L = c.n_layer, H = c.n_head, T = static_cast<int64_t>(l.ids.size());
    if (a.ablation) check_loss_tokens(l);
    else if (T < 2)
        throw InputError("--text: gives 1 token; a head's pattern needs at least 2 (query 0 sees only itself)");
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
            line.show("attn model heads --ablation", static_cast<int64_t>(k), static_cast<int64_t>(rows.size()),
                      "heads");
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
    text.print("attn model heads: {}\n{} tokens\n\n", l.describe(), T);
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
            text.print(" {:>+10.4f} {:>+9.2f}pt", r.abl.loss - clean.loss,
                       100.0 * (r.abl.clean_top_prob - clean.top_prob));
        text.print("\n");
    }
    if (!a.ablation)
        text.print("\n--ablation adds each head's effect on the loss when it is removed (attn model ablate).\n");
    return 0;
}

}  // namespace

ModelRunner add_circuit_subcommands(CLI::App& model) {
    auto o = std::make_shared<CircuitOpts>();
    auto common = [o](CLI::App* s) { add_decoder_text_options(s, *o); };
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
    ind->add_option("--length", io->length,
                    "random tokens before the repeat (default: 50, or what the positions allow)")
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
    ab->add_option("--heads,-H", ao->heads, "the heads to ablate together: LAYER.HEAD,LAYER.HEAD,... (0-based)")
        ->required();
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
    return [o, io, co, ao, ho, ind, ca, ab, hd, hd_mode, ind_mode]() -> std::optional<int> {
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
        return std::nullopt;
    };
}

}  // namespace attn::cli
