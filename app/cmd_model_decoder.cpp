// `attn model next`, `generate`, `induction` and (on a GPT-2 folder) `attention`: a GPT-2-family decoder from a local folder
// (config.json, model.safetensors, vocab.json, merges.txt), run in C++ (attn/model/gpt2.hpp).
#include "cmd_model_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/utf8.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/model/gpt2.hpp"
#include "attn/model/induction.hpp"
#include "attn/viz/heatmap.hpp"
#include "command.hpp"
#include "options.hpp"

namespace attn::cli {
namespace {

struct DecoderOpts {
    std::string model, text;
    bool bos = false;
    bool probe = false;  // load() for a probe of its own: no --text, <|endoftext|> first when the vocabulary has it
    const char* shipped = kMacbethDecoder;  // the shipped decoder read without --model
    JsonOut json;                                   // the running subcommand's, one of these:
    JsonOut json_next, json_generate, json_induction;  // (a JsonOut binds to one option)
};
struct NextOpts {
    int64_t top = 10;
};
struct InductionOpts {
    int64_t length = 0;  // 0: min(50, (n_positions - 1) / 2)
    uint64_t seed = 0;
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
    Gpt2Model model = with_option("--model", [&] { return Gpt2Model::load(files); });
    return {files, std::move(model), std::move(tok), std::move(ids)};
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
    const Gpt2Options fo{false, false};
    const Gpt2Output out = l.model.forward(l.ids, fo);
    const int64_t T = static_cast<int64_t>(l.ids.size()), V = l.model.config.vocab_size;
    const float* last = out.logits.ptr() + (T - 1) * V;
    const std::vector<float> p = softmax_probs(last, V);
    std::vector<int32_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    const int64_t K = std::min(n.top, V);
    std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
        return last[a] != last[b] ? last[a] > last[b] : a < b;
    });
    auto token_text = [&](int32_t id) { return id < l.tok.vocab_size() ? l.tok.token_text(id) : std::string("?"); };
    if (o.json.given()) {
        nlohmann::ordered_json j;
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
        nlohmann::ordered_json j;
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
    int32_t hi = static_cast<int32_t>(l.tok.vocab_size());
    if (l.tok.eos_id() == hi - 1) --hi;  // not the separator itself
    const std::vector<int32_t> ids = repeated_random_tokens(n, 0, hi, io.seed, l.tok.eos_id());
    const Gpt2Output out = l.model.forward(ids);
    // first copy at s..s+n-1, second at s+n..s+2n-1; the second copy's first token cannot be predicted
    const double loss_first = n >= 2 ? next_token_loss(out.logits, ids, s, s + n - 1) : NAN;
    const double loss_second = n >= 2 ? next_token_loss(out.logits, ids, s + n, s + 2 * n - 1) : NAN;
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
        nlohmann::ordered_json j;
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
        write_json(o.json, j, "attn-model-induction", 1);
        if (o.json.to_stdout()) return 0;
    }
    text.print("attn model induction: {}\n", describe(l));
    text.print("the probe: {}{} random tokens (seed {}), then the same {} again ({} tokens)\n\n",
               s == 1 ? "<|endoftext|>, " : "", n, io.seed, n, ids.size());
    text.print("next-token loss on the first copy:  {:.3f} nats (a uniform guess over the {} drawn ids scores ln {} = {:.3f})\n",
               loss_first, hi, hi, std::log(static_cast<double>(hi)));
    text.print("next-token loss on the second copy: {:.3f} nats (lower when the model copies from the first)\n\n",
               loss_second);
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

}  // namespace

bool is_decoder_folder(const std::string& dir) { return folder_model_type(dir) == "gpt2"; }

int run_decoder_attention(const DecoderAttentionArgs& a) {
    const TextOut text({{"--svg -", a.svg == "-"}, {"--dump -", a.dump == "-"}});
    if (a.head >= 0 && a.layer < 0) throw InputError("--head: needs --layer too (a head belongs to a layer)");
    if (!a.svg.empty()) require_writable("--svg", a.svg);
    if (!a.dump.empty()) require_writable("--dump", a.dump);
    DecoderOpts o;
    o.model = a.model;
    o.text = a.text;
    const Loaded l = load(o);
    const Gpt2Config& c = l.model.config;
    const int64_t L = c.n_layer, H = c.n_head, T = static_cast<int64_t>(l.ids.size());
    for (const auto& [opt, v, n, what] : {std::tuple{"--layer", a.layer, L, "layers"}, {"--head", a.head, H, "heads"}})
        if (v < -1 || v >= n)
            throw InputError(fmt::format("{}: must be in [0, {}] (the model has {} {}), got {}", opt, n - 1, n, what, v));
    const Gpt2Output out = l.model.forward(l.ids);
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
                const float* w = out.attentions[static_cast<size_t>(l2)].ptr() + h * T * T;
                double first = 0, prev = 0, self = 0;
                for (int64_t i = 1; i < T; ++i) {
                    first += w[i * T];
                    prev += w[i * T + i - 1];
                    self += w[i * T + i];
                }
                const double n = static_cast<double>(T - 1);
                text.print("{:>6} {:>5} {:>6.0f}% {:>6.0f}% {:>6.0f}%\n", l2, h, 100 * first / n, 100 * prev / n,
                           100 * self / n);
            }
    }
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
    return 0;
}

std::function<std::optional<int>()> add_decoder_subcommands(CLI::App& model) {
    auto o = std::make_shared<DecoderOpts>();
    auto no = std::make_shared<NextOpts>();
    auto go = std::make_shared<GenerateOpts>();
    auto common = [o](CLI::App* s) {
        s->add_option("--model", o->model,
                      "a GPT-2-family folder as Hugging Face writes it: config.json, model.safetensors (float32, "
                      "float16 or bfloat16), vocab.json, merges.txt (default: data/decoders/macbeth-char, the "
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
    auto io = std::make_shared<InductionOpts>();
    CLI::App* ind = model.add_subcommand(
        "induction", "look for previous-token and induction heads with repeated random tokens (GPT-2 folders)");
    ind->add_option("--model", o->model,
                    "a GPT-2-family folder (as for next; default: data/decoders/induction-2l, the attention-only "
                    "decoder attn ships)");
    ind->add_option("--length", io->length, "random tokens before the repeat (default: 50, or what the positions allow)")
        ->check(integer_in(1, 1000000));
    ind->add_option("--seed", io->seed, "seed of the random tokens")->capture_default_str()->check(seed_validator());
    add_json(*ind, o->json_induction, "attn-model-induction: the loss per copy and each head's scores");
    return [o, no, go, io, nx, gen, ind]() -> std::optional<int> {
        if (ind->parsed()) {
            o->json = o->json_induction;
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

}  // namespace attn::cli
