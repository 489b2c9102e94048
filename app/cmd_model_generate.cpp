// `attn model next` and `generate`: a GPT-2-family decoder's predictions after a prompt, from a local
// folder (config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json; the shipped
// data/decoders/macbeth-char without --model), run in C++ (attn/model/gpt2.hpp).
//   attn model next     [--model DIR] --text T [--top K] [--bos] [--json]
//   attn model generate [--model DIR] --text T [--steps N] [--temperature X --seed S] [--json [--attention]]
#include <algorithm>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/stats.hpp"
#include "attn/core/utf8.hpp"
#include "attn/model/gpt2.hpp"
#include "cmd_model.hpp"
#include "command.hpp"
#include "memory.hpp"
#include "model_text.hpp"
#include "options.hpp"

namespace attn::cli {

void add_decoder_text_options(CLI::App* s, DecoderLoad& o) {
    s->add_option("--model", o.model,
                  "a GPT-2-family folder as Hugging Face writes it: config.json, model.safetensors (float32, "
                  "float16 or bfloat16), vocab.json + merges.txt or tokenizer.json (default: "
                  "data/decoders/macbeth-char, the character-level decoder attn ships)");
    allow_empty(s->add_option("--text", o.text,
                              "the prompt (bytes that are not UTF-8 read as U+FFFD; <|endoftext|> typed in it is "
                              "that one token)")
                    ->required()
                    ->transform(valid_utf8()));
    s->add_flag("--bos", o.bos, "start with <|endoftext|>, the token GPT-2 saw between documents");
}

namespace {

struct DecoderTextOpts : DecoderLoad {
    JsonOut json;                      // the running subcommand's, one of these:
    JsonOut json_next, json_generate;  // (a JsonOut binds to one option)
};
struct NextOpts {
    int64_t top = 10;
};
struct GenerateOpts {
    int64_t steps = 20;
    double temperature = 0.0;
    uint64_t seed = 0;
    bool attention = false;
};

int run_next(const DecoderTextOpts& o, const NextOpts& n) {
    const TextOut text({o.json.claim()});
    const LoadedDecoder l = load_decoder(o);
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
    text.print("attn model next: {}\n", l.describe());
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

int run_generate(const DecoderTextOpts& o, const GenerateOpts& g) {
    const TextOut text({o.json.claim()});
    if (!(g.temperature == 0.0 || (g.temperature >= 0.01 && g.temperature <= 100.0)))
        throw InputError(fmt::format("--temperature: must be 0 (greedy) or in [0.01, 100], got {}", g.temperature));
    const LoadedDecoder l = load_decoder(o);
    const Gpt2Config& c = l.model.config;
    if (static_cast<int64_t>(l.ids.size()) + g.steps > c.n_positions)
        throw InputError(
            fmt::format("--steps: {} prompt tokens + {} steps are more than the model's {} positions "
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
    const std::string how = g.temperature == 0.0
                                ? std::string("greedy (the most likely token each step)")
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
    text.print("attn model generate: {}\n", l.describe());
    text.print("{} steps, {}; the KV cache holds each token's keys and values, so a step runs one query\n", g.steps,
               how);
    text.print("prompt ({} tokens): {}\n\n", l.ids.size(), quoted(decoded(l.ids)));
    text.print("{:>5} {:>7} {:>8}  {}\n", "step", "id", "prob", "token");
    for (size_t s = 0; s < steps.size(); ++s)
        text.print("{:>5} {:>7} {:>7.2f}%  {}\n", s + 1, steps[s].id, 100.0 * steps[s].prob,
                   quoted(token_text(steps[s].id)));
    text.print("\ntext: {}\n", quoted(decoded(all)));
    text.print("KV cache at the end: {} tokens x {} layers x {} heads x (Dk + Dv = {}) floats = {:.0f} bytes\n",
               all.size() - 1, c.n_layer, c.n_head, 2 * l.model.head_dim(), cache_bytes);
    return 0;
}

}  // namespace

ModelRunner add_generate_subcommands(CLI::App& model) {
    auto o = std::make_shared<DecoderTextOpts>();
    auto no = std::make_shared<NextOpts>();
    auto go = std::make_shared<GenerateOpts>();
    auto common = [o](CLI::App* s) { add_decoder_text_options(s, *o); };
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
    return [o, no, go, nx, gen]() -> std::optional<int> {
        if (nx->parsed()) {
            o->json = o->json_next;
            return run_next(*o, *no);
        }
        if (gen->parsed()) {
            o->json = o->json_generate;
            if (go->attention && !o->json.given())
                throw InputError("--attention: goes with --json (the weights are written there)");
            return run_generate(*o, *go);
        }
        return std::nullopt;
    };
}

}  // namespace attn::cli
