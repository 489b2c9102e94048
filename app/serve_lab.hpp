// app/serve_lab.hpp: what `attn serve` computes, as functions from a JSON request
// to a JSON answer, with no HTTP in sight (app/cmd_serve.cpp does the serving).
//
// Every number comes from the library, run as the terminal commands run it:
//   attention  the playground: a multi-head self-attention layer of T tokens,
//              built and run exactly as `attn forward --batch 1 ...` (the answer
//              names that command, so a learner can get the same numbers there);
//   sqrt_dk    the variance experiment at one Dk (attn/experiments/variance.hpp):
//              std of q.k, softmax saturation and the gradient through softmax,
//              unscaled and scaled, with a histogram of the scores;
//   sentence   MiniLM's heads on a text, as `attn model attention --html` draws them;
//   train      a tiny training run (attn/train), streamed step by step.
//
// Limits: every size is bounded (kLab* below), so one request is bounded in work
// too; a value out of bounds is a LabError naming the field, which the server
// answers with HTTP 400 and {"error": ..., "field": ...}.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "attn/experiments/variance.hpp"

namespace attn::cli {

// A request the lab refuses: `field` is the JSON field ("seq"), the message says the rule.
struct LabError : std::runtime_error {
    LabError(std::string field, const std::string& message, int status = 400)
        : std::runtime_error(message), field(std::move(field)), status(status) {}
    std::string field;
    int status;
};

// Bytes of a request as text for a message: valid UTF-8 kept, every other byte and every
// control character written \xNN, so no message carries a raw request byte.
std::string printable(std::string_view s);

// A request must be a JSON object whose fields are all in `known`: a typo ("heds") is a
// LabError naming it, with the list of fields, never ignored.
void check_fields(const nlohmann::json& r, std::initializer_list<const char*> known);

// A JSON value as text for a message (ASCII, bytes that are not UTF-8 replaced); never throws.
std::string shown(const nlohmann::json& v);

// The JSON body of every refusal the lab sends: {"format": "attn-lab-error", "version": 1,
// "error": message, "field": field}, as ASCII (bytes that are not UTF-8 replaced); never throws.
std::string lab_error_body(const std::string& field, const std::string& message) noexcept;

// The deepest nesting a request body may have: a lab request is one flat object.
inline constexpr int kLabMaxJsonDepth = 64;

// The body of a request as JSON, checked before it is parsed: every string valid UTF-8
// (a LabError naming the key, or the field whose value holds the bad byte), nesting at most
// kLabMaxJsonDepth deep, then parsed (a LabError on field "body" when it is not JSON). An
// empty body is {}.
nlohmann::json parse_lab_body(std::string_view body);

inline constexpr int64_t kLabMaxSeq = 64, kLabMaxDk = 128, kLabMaxHeads = 8;
inline constexpr int64_t kLabMaxDkVariance = 4096, kLabVarianceSamples = 32768, kLabVarianceKeys = 64;
// A request body is at most this many bytes (413 past it): the one limit the server, its
// messages and docs/commands/serve.md state.
inline constexpr size_t kLabMaxBodyBytes = 16 * 1024;
inline constexpr int64_t kLabMaxTextBytes = 600, kLabMaxTokens = 128;
inline constexpr int64_t kLabMaxTrainSteps = 2000;
inline constexpr double kLabMinTemperature = 0.05, kLabMaxTemperature = 20.0;

// The playground. Fields (all optional): seq (T, 1..64, default 8), d_k (1..128,
// default 8), heads (1..8, default 2), scale ("sqrt" | "none" | "inv_dk" |
// "cosine"), tau (cosine's temperature, default 1), temperature (divides the
// scores; default 1), mask ("none" | "padding" | "causal" | "window"), keep
// (padding: keys kept, 0..T, default T-2), window (1..T, default 3), seed.
// Answer: "attn-lab-attention" with config, the equivalent `attn forward` command,
// the shapes in the order the forward pass makes them, and per head Q, K, V
// (T x Dk), the scaled scores (masked ones null), the mask and the weights (T x T).
nlohmann::json lab_attention(const nlohmann::json& request);

// The playground's request, checked (LabError naming the field), defaults filled in.
struct LabAttentionRequest {
    int64_t seq = 8, d_k = 8, heads = 2, keep = 6, window = 3;
    std::string scale = "sqrt", mask = "none";
    double tau = 1.0, temperature = 1.0;
    uint64_t seed = 0;
};
LabAttentionRequest parse_attention_request(const nlohmann::json& request);

// Why sqrt(Dk): fields d_k (1..4096, default 64), seed. Answer "attn-lab-sqrt-dk":
// for scaled = false and true, the std of q.k (and theory), the mean max weight,
// the one-hot share (rows whose max weight > 0.99), the mean norm of softmax's
// Jacobian, and a 41-bin histogram of the scores.
nlohmann::json lab_sqrt_dk(const nlohmann::json& request);
// Its request, checked, as the experiment's configuration.
VarianceConfig sqrt_dk_config(const nlohmann::json& request);

// The model's heads on `text` as a whole page (attn/viz/html.hpp); `model_dir`
// "" means the default folder. A LabError (field "text" or "model") when the text
// is too long or the model is not there (its message says how to fetch it).
std::string lab_sentence_page(const std::string& text, const std::string& model_dir, const std::string& lang);

// The sentence page's request: text (a string) and lang ("en" or "zh", default
// `default_lang`); the text's own limits are lab_sentence_page's.
struct LabSentenceRequest {
    std::string text, lang;
};
LabSentenceRequest parse_sentence_request(const nlohmann::json& request, const std::string& default_lang);

// A training run: fields task (copy, reverse, sort, recall, distance; default
// reverse), steps (1..2000, default 300), seed, head (which head of the last layer
// to watch, default 0). validate_train_request throws LabError; run_lab_training
// calls emit with one JSON event every `every` steps ("progress": step, loss,
// accuracy, and the watched head's weights on eval row 0 with its tokens) and a
// last "done" event; it stops early once `stop` is true.
nlohmann::json validate_train_request(const nlohmann::json& request);
void run_lab_training(const nlohmann::json& request, const std::atomic<bool>& stop,
                      const std::function<void(const nlohmann::json&)>& emit);

}  // namespace attn::cli
