// app/serve_lab.cpp: the computations behind `attn serve` (see serve_lab.hpp).
#include "serve_lab.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/utf8.hpp"
#include "attn/experiments/variance.hpp"
#include "attn/model/bert.hpp"
#include "attn/nn/mha.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/trainer.hpp"
#include "attn/viz/html.hpp"
#include "forward_seeds.hpp"
#include "html_page.hpp"
#include "parse.hpp"

namespace attn::cli {

using nlohmann::json;

std::string printable(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const size_t at = i;
        const char32_t c = utf8_next(s, i);
        const bool bad = (c == 0xFFFD && i - at == 1) || c < 0x20 || c == 0x7F;
        if (bad)
            for (size_t k = at; k < i; ++k) out += fmt::format("\\x{:02X}", static_cast<unsigned char>(s[k]));
        else
            out.append(s.substr(at, i - at));
    }
    return out;
}

std::string shown(const json& v) {
    try {
        return v.dump(-1, ' ', true, json::error_handler_t::replace);
    } catch (...) {
        return "(a value)";
    }
}

std::string lab_error_body(const std::string& field, const std::string& message) noexcept {
    try {
        const json j = {{"format", "attn-lab-error"}, {"version", 1}, {"error", message}, {"field", field}};
        return j.dump(-1, ' ', true, json::error_handler_t::replace);
    } catch (...) {
        return R"({"format": "attn-lab-error", "version": 1, "error": "the request could not be served", "field": ""})";
    }
}

namespace {

// The first byte of s that is not part of valid UTF-8, or npos.
size_t bad_utf8_at(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t at = i;
        if (utf8_next(s, i) == 0xFFFD && i - at == 1) return at;
    }
    return std::string_view::npos;
}

// The request is a JSON text that holds only valid UTF-8 and nests at most kLabMaxJsonDepth
// deep: checked on the raw bytes, before the parser (whose messages quote raw bytes) sees them.
void check_json_bytes(std::string_view body) {
    std::string open;           // the brackets open at this point
    std::string top_key;        // the last key of the top-level object: the field a value belongs to
    bool expect_key = false;
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < body.size() && body[j] != '"') j += body[j] == '\\' ? 2 : 1;
            const std::string_view text = body.substr(i + 1, std::min(j, body.size()) - i - 1);
            const bool key = expect_key && !open.empty() && open.back() == '{';
            const size_t bad = bad_utf8_at(text);
            if (bad != std::string_view::npos) {
                const std::string field = key ? printable(text) : top_key.empty() ? "body" : top_key;
                throw LabError(field, fmt::format("{}: not valid UTF-8 (byte 0x{:02X} at offset {} of the body)", field,
                                                  static_cast<unsigned char>(text[bad]), i + 1 + bad));
            }
            if (key && open.size() == 1) top_key = printable(text);
            expect_key = false;
            i = j;
        } else if (c == '{' || c == '[') {
            open.push_back(c);
            if (open.size() > static_cast<size_t>(kLabMaxJsonDepth))
                throw LabError("body", fmt::format("body: nested deeper than {} levels", kLabMaxJsonDepth));
            expect_key = c == '{';
        } else if (c == '}' || c == ']') {
            if (!open.empty()) open.pop_back();
        } else if (c == ',') {
            expect_key = !open.empty() && open.back() == '{';
        }
    }
}

}  // namespace

json parse_lab_body(std::string_view body) {
    if (body.empty()) return json::object();
    check_json_bytes(body);
    try {
        return json::parse(body);
    } catch (const json::exception& e) {
        throw LabError("body", "body: not valid JSON (" + printable(e.what()) + ")");
    }
}

void check_fields(const json& r, std::initializer_list<const char*> known) {
    if (!r.is_object()) throw LabError("", "the request must be a JSON object");
    for (const auto& item : r.items()) {
        const std::string& key = item.key();
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
            throw LabError(printable(key), fmt::format("{}: not a field of this request (fields: {})", printable(key),
                                                       fmt::join(known, ", ")));
    }
}

namespace {

int64_t get_int(const json& r, const char* field, int64_t fallback, int64_t lo, int64_t hi) {
    if (!r.contains(field)) return fallback;
    const json& v = r[field];
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                    v.get<double>() == std::floor(v.get<double>()) &&
                                                    std::abs(v.get<double>()) < 1e15);
    if (!integral)
        throw LabError(field, fmt::format("{}: must be an integer in [{}, {}], got {}", field, lo, hi, shown(v)));
    const int64_t x = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
        throw LabError(field, fmt::format("{}: must be an integer in [{}, {}], got {}", field, lo, hi, shown(v)));
    if (x < lo || x > hi)
        throw LabError(field, fmt::format("{}: must be an integer in [{}, {}], got {}", field, lo, hi, x));
    return x;
}

double get_number(const json& r, const char* field, double fallback, double lo, double hi) {
    if (!r.contains(field)) return fallback;
    const json& v = r[field];
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
        throw LabError(field, fmt::format("{}: must be a number in [{:g}, {:g}], got {}", field, lo, hi, shown(v)));
    return v.get<double>();
}

std::string get_choice(const json& r, const char* field, const std::string& fallback,
                       std::initializer_list<const char*> choices) {
    if (!r.contains(field)) return fallback;
    const json& v = r[field];
    if (v.is_string())
        for (const char* c : choices)
            if (v.get<std::string>() == c) return c;
    throw LabError(field, fmt::format("{}: must be one of {}, got {}", field, fmt::join(choices, ", "), shown(v)));
}

// Seeds are integers a JavaScript number holds exactly: [0, 2^53].
uint64_t get_seed(const json& r) {
    return static_cast<uint64_t>(get_int(r, "seed", 0, 0, int64_t{1} << 53));
}

// A float for JSON: the value, or null when it is not finite (a masked score).
json number(float x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// Rows r0.. of a (rows, cols) block as nested arrays.
json matrix(const float* p, int64_t rows, int64_t cols) {
    json m = json::array();
    for (int64_t i = 0; i < rows; ++i) {
        json row = json::array();
        for (int64_t j = 0; j < cols; ++j) row.push_back(number(p[i * cols + j]));
        m.push_back(std::move(row));
    }
    return m;
}

// Head h of a (1, H, R, C) tensor, for every head: [H][R][C].
json per_head(const Tensor& t) {
    json heads = json::array();
    const int64_t H = t.shape[1], R = t.shape[2], C = t.shape[3];
    for (int64_t h = 0; h < H; ++h) heads.push_back(matrix(t.ptr() + h * R * C, R, C));
    return heads;
}

// The --scale text of `attn forward` for the playground's scale and temperature:
// the factor is written with 9 significant digits and parsed back, so the lab and
// the command multiply by the same float.
std::string scale_text(const std::string& scale, double tau, double temperature, int64_t d_k) {
    const bool plain = temperature == 1.0;
    if (scale == "sqrt")
        return plain ? "sqrt" : fmt::format("{:.9g}", 1.0 / (std::sqrt(static_cast<double>(d_k)) * temperature));
    if (scale == "none") return plain ? "none" : fmt::format("{:.9g}", 1.0 / temperature);
    if (scale == "inv_dk") return fmt::format("{:.9g}", 1.0 / (static_cast<double>(d_k) * temperature));
    return fmt::format("cosine:{:.9g}", tau * temperature);
}

}  // namespace

LabAttentionRequest parse_attention_request(const json& r) {
    check_fields(r, {"seq", "d_k", "heads", "scale", "tau", "temperature", "mask", "keep", "window", "seed"});
    LabAttentionRequest q;
    q.seq = get_int(r, "seq", 8, 1, kLabMaxSeq);
    q.d_k = get_int(r, "d_k", 8, 1, kLabMaxDk);
    q.heads = get_int(r, "heads", 2, 1, kLabMaxHeads);
    q.scale = get_choice(r, "scale", "sqrt", {"sqrt", "none", "inv_dk", "cosine"});
    q.tau = get_number(r, "tau", 1.0, kLabMinTemperature, kLabMaxTemperature);
    q.temperature = get_number(r, "temperature", 1.0, kLabMinTemperature, kLabMaxTemperature);
    q.mask = get_choice(r, "mask", "none", {"none", "padding", "causal", "window"});
    q.keep = get_int(r, "keep", std::max<int64_t>(q.seq - 2, 1), 0, q.seq);
    q.window = get_int(r, "window", std::min<int64_t>(3, q.seq), 1, q.seq);
    q.seed = get_seed(r);
    return q;
}

json lab_attention(const json& r) {
    const LabAttentionRequest q = parse_attention_request(r);
    const int64_t T = q.seq, dk = q.d_k, H = q.heads, keep = q.keep, window = q.window;
    const std::string &scale = q.scale, &mask_kind = q.mask;
    const double tau = q.tau, temperature = q.temperature;
    const uint64_t seed = q.seed;
    const int64_t D = H * dk;

    // The same layer, input and options as the command below builds (app/cmd_forward.cpp).
    const std::string stext = scale_text(scale, tau, temperature, dk);
    Scale s;
    try {
        s = parse_scale(stext);
    } catch (const InputError& e) {
        throw LabError("temperature", fmt::format("temperature: makes a scale attn refuses ({})", e.what()));
    }
    const std::string mask_spec = mask_kind == "padding" ? fmt::format("pad:{}", keep)
                                  : mask_kind == "none"  ? "none"
                                                         : "causal";
    Mask mask = parse_mask(mask_spec, 1, T);
    if (mask_kind == "window") mask = mask.combined(Mask::sliding_window(window, true));
    std::string command = fmt::format("attn forward --batch 1 --seq {} --d-model {} --heads {}", T, D, H);
    if (stext != "sqrt") command += fmt::format(" --scale {}", stext);
    if (mask_spec != "none") command += fmt::format(" --mask {}", mask_spec);
    if (mask_kind == "window") command += fmt::format(" --window {}", window);
    command += fmt::format(" --seed {} --dump -", seed);

    MhaConfig cfg = MhaConfig{D, H, 0, 0, true, D, D}.resolved();
    cfg.kv_heads = cfg.heads;
    MultiHeadAttention mha(cfg);
    seed_layer(mha, parse_init("torch"), seed);
    const Tensor x = seeded_normal(Shape{1, T, D}, seed, kStreamX);
    AttentionOptions aopt;
    aopt.scale = s;
    aopt.fill = parse_fill("-inf");
    aopt.seed = mix64(seed ^ 0xd20dULL);
    json shapes = json::array();
    TraceFn trace = [&shapes](const TraceEvent& e) {
        shapes.push_back({{"name", e.name}, {"formula", e.formula}, {"shape", shape_str(e.shape)}});
    };
    ForwardRecord rec;
    mha.forward(x, mask, aopt, &rec, &trace, Backend::Reference);

    const MaskRow row = mask.row(0, 0, T);
    json allowed = json::array();
    for (int64_t i = 0; i < T; ++i) {
        json a = json::array();
        for (int64_t j = 0; j < T; ++j) a.push_back(row.allowed(i, j) ? 1 : 0);
        allowed.push_back(std::move(a));
    }
    return {{"format", "attn-lab-attention"},
            {"version", 1},
            {"config",
             {{"seq", T}, {"d_k", dk}, {"heads", H}, {"d_model", D}, {"scale", scale}, {"tau", tau},
              {"temperature", temperature}, {"mask", mask_kind}, {"keep", keep}, {"window", window}, {"seed", seed},
              {"scale_factor", s.factor(dk)}, {"mask_text", mask.describe()}}},
            {"command", command},
            {"shapes", shapes},
            {"q", per_head(rec.Q)},
            {"k", per_head(rec.K)},
            {"v", per_head(rec.V)},
            {"scores", per_head(rec.attn.scores_masked)},
            {"allowed", allowed},
            {"weights", per_head(rec.attn.weights)},
            {"row_sum_error", max_row_sum_error(rec.attn.weights, mask)}};
}

VarianceConfig sqrt_dk_config(const json& r) {
    check_fields(r, {"d_k", "seed"});
    VarianceConfig cfg;
    cfg.d_k = {get_int(r, "d_k", 64, 1, kLabMaxDkVariance)};
    cfg.seed = get_seed(r);
    cfg.samples = kLabVarianceSamples;
    cfg.keys = kLabVarianceKeys;
    cfg.threads = 0;
    return cfg;
}

json lab_sqrt_dk(const json& r) {
    const VarianceConfig cfg = sqrt_dk_config(r);
    const int64_t dk = cfg.d_k[0];
    const std::vector<VarianceRow> rows = run_variance(cfg);

    // A picture of the same distribution: 2048 draws of q.k (their own stream of the
    // seed), in 41 bins over +-4 theory stds, and one softmax row of 16 of them.
    constexpr int64_t kDraws = 2048, kBins = 41, kRow = 16;
    std::vector<double> dots(kDraws);
    Rng rng(cfg.seed, 0x6869737447ULL);  // "histG"
    std::vector<float> q(static_cast<size_t>(dk)), k(static_cast<size_t>(dk));
    for (double& d : dots) {
        for (auto& v : q) v = rng.normal();
        for (auto& v : k) v = rng.normal();
        double s = 0;
        for (int64_t i = 0; i < dk; ++i) s += static_cast<double>(q[i]) * k[i];
        d = s;
    }
    json out_rows = json::array();
    for (const VarianceRow& v : rows) {
        const double unit = v.scaled ? 1.0 : std::sqrt(static_cast<double>(dk));  // theory std of these scores
        std::vector<int64_t> counts(kBins, 0);
        for (double d : dots) {
            const double z = (v.scaled ? d / std::sqrt(static_cast<double>(dk)) : d) / unit;  // in theory stds
            const int64_t b = static_cast<int64_t>(std::floor((z + 4.0) / 8.0 * kBins));
            if (b >= 0 && b < kBins) ++counts[static_cast<size_t>(b)];
        }
        std::vector<float> example(kRow);
        for (int64_t j = 0; j < kRow; ++j) {
            const double dot = dots[static_cast<size_t>(j)];
            example[static_cast<size_t>(j)] =
                static_cast<float>(v.scaled ? dot / std::sqrt(static_cast<double>(dk)) : dot);
        }
        std::vector<float> weights = example;
        softmax_rows(weights.data(), 1, kRow);
        out_rows.push_back({{"scaled", v.scaled}, {"std", v.std}, {"theory_std", v.theory_std},
                            {"mean_max_weight", v.mean_max_weight}, {"onehot_fraction", v.onehot_fraction},
                            {"mean_norm_entropy", v.mean_norm_entropy}, {"mean_jacobian_norm", v.mean_jacobian_norm},
                            {"histogram", {{"lo", -4.0 * unit}, {"hi", 4.0 * unit}, {"counts", counts}}},
                            {"example_scores", example}, {"example_weights", weights}});
    }
    return {{"format", "attn-lab-sqrt-dk"},
            {"version", 1},
            {"config", {{"d_k", dk}, {"samples", cfg.samples}, {"keys", cfg.keys}, {"seed", cfg.seed}}},
            {"command", fmt::format("attn variance --d-k {} --samples {} --keys {} --seed {}", dk, cfg.samples,
                                    cfg.keys, cfg.seed)},
            {"rows", out_rows}};
}

namespace {

// The model, loaded once per folder (the server computes one request at a time).
struct LoadedModel {
    std::string dir;
    ModelFiles files;
    BertConfig config;
    std::optional<WordPieceTokenizer> tokenizer;
    std::optional<BertModel> model;
};

const LoadedModel& loaded_model(const std::string& dir) {
    static std::mutex m;
    static std::unique_ptr<LoadedModel> cached;
    std::lock_guard<std::mutex> lock(m);
    if (!cached || cached->dir != dir) {
        auto lm = std::make_unique<LoadedModel>();
        lm->dir = dir;
        try {
            lm->files = locate_model(dir.empty() ? default_model_dir() : dir);
            lm->config = read_bert_config(lm->files);
            lm->tokenizer.emplace(load_tokenizer(lm->files, lm->config));
            lm->model.emplace(BertModel::load(lm->files));
        } catch (const InputError& e) {
            throw LabError("model", fmt::format("model: {} (fetch it with `attn model fetch`, then restart attn serve)",
                                                e.what()), 404);
        }
        cached = std::move(lm);
    }
    return *cached;
}

}  // namespace

std::string lab_sentence_page(const std::string& text, const std::string& model_dir, const std::string& lang) {
    if (text.empty()) throw LabError("text", "text: type a sentence");
    if (static_cast<int64_t>(text.size()) > kLabMaxTextBytes)
        throw LabError("text", fmt::format("text: at most {} bytes, got {}", kLabMaxTextBytes, text.size()), 413);
    const LoadedModel& lm = loaded_model(model_dir);
    const Encoding enc = lm.tokenizer->encode(text);
    if (static_cast<int64_t>(enc.ids.size()) > kLabMaxTokens || enc.truncated)
        throw LabError("text", fmt::format("text: at most {} tokens, got {}", kLabMaxTokens, enc.full_length), 413);
    BertOptions fopt;
    fopt.record_qkv = true;
    const BertOutput out = lm.model->forward({enc.ids}, fopt);
    AttentionPage page = page_from_model(out.attentions, out.values, enc.tokens, out.mask);
    page.subtitle = text;
    page.source = "all-MiniLM-L6-v2, computed by attn serve";
    page.lang = lang;
    return attention_html(page);
}

LabSentenceRequest parse_sentence_request(const json& r, const std::string& default_lang) {
    check_fields(r, {"text", "lang"});
    if (!r.contains("text") || !r["text"].is_string()) throw LabError("text", "text: must be a string (your sentence)");
    return {r["text"].get<std::string>(), get_choice(r, "lang", default_lang, {"en", "zh"})};
}

json validate_train_request(const json& r) {
    check_fields(r, {"task", "steps", "seed", "head"});
    const std::string task = get_choice(r, "task", "reverse", {"copy", "reverse", "sort", "recall", "distance"});
    return {{"task", task},
            {"steps", get_int(r, "steps", 300, 1, kLabMaxTrainSteps)},
            {"seed", get_seed(r)},
            {"head", get_int(r, "head", 0, 0, 3)}};
}

void run_lab_training(const json& request, const std::atomic<bool>& stop,
                      const std::function<void(const json&)>& emit) {
    const json c = validate_train_request(request);
    const TaskKind kind = task_of(c["task"].get<std::string>());
    TaskOptions to;
    to.seq = task_default_seq(kind);
    to.causal = task_default_causal(kind);
    const Task task(kind, to);
    ModelConfig mc;  // attn train's defaults: 2 layers, D = 64, 4 heads
    mc.vocab = task.vocab();
    mc.max_seq = to.seq;
    mc.causal = to.causal;
    mc = mc.resolved();
    TrainConfig tc;
    tc.steps = c["steps"].get<int64_t>();
    tc.seed = c["seed"].get<uint64_t>();
    tc.threads = 0;
    tc.lr = kTaskLr;
    TrainableStack model(mc);
    init_for_training(model, tc.seed, 1.0);
    const int64_t head = c["head"].get<int64_t>();
    const TaskBatch row = task.batch(1, tc.seed, DataSplit::Eval, 0);
    json tokens = json::array();
    for (int32_t t : row.tokens) tokens.push_back(task.token_text(t));
    const int64_t every = std::max<int64_t>(1, tc.steps / 60);
    // The watched head on eval row 0, after the step just taken (a forward pass only:
    // the next step recomputes everything it needs).
    auto weights_now = [&] {
        model.logits(row.tokens.data(), 1, row.T, 1);
        const Tensor& w = model.attention_weights().back();  // (1, H, T, T) of the last layer
        return matrix(w.ptr() + head * row.T * row.T, row.T, row.T);
    };
    std::string cmd = fmt::format("attn train --task {} --steps {} --seed {}", task.name(), tc.steps, tc.seed);
    emit({{"event", "start"}, {"task", task.name()}, {"steps", tc.steps}, {"seq", row.T}, {"layers", mc.layers},
          {"heads", mc.heads}, {"head", head}, {"tokens", tokens}, {"command", cmd}, {"weights", weights_now()}});
    const auto on_progress = [&](const TrainProgress& p) {
        if (p.step % every != 0 && p.step != p.steps && p.eval == nullptr) return;
        json e = {{"event", "progress"}, {"step", p.step}, {"steps", p.steps}, {"loss", p.loss},
                  {"accuracy", p.accuracy}, {"steps_per_s", p.steps_per_s}, {"weights", weights_now()}};
        if (p.eval != nullptr) e["eval"] = {{"loss", p.eval->eval.loss}, {"accuracy", p.eval->eval.accuracy}};
        emit(e);
    };
    const TrainResult result = train_model(model, task, tc, on_progress, &stop);
    const CurvePoint& last = result.curve.back();
    emit({{"event", "done"}, {"steps_done", result.steps_done}, {"stopped", result.stopped},
          {"diverged", result.diverged}, {"eval", {{"loss", last.eval.loss}, {"accuracy", last.eval.accuracy}}},
          {"weights", weights_now()}});
}

}  // namespace attn::cli
