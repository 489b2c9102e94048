// The tour on one screen (sheet.hpp): every number measured when the sheet is made.
#include "sheet.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "attn/core/utf8.hpp"
#include "lesson.hpp"
#include "ops.hpp"

namespace attn::lessons {
namespace {

// The number of the lesson `slug` (from the registry, never typed); 0 if there is none.
int lesson_number(std::string_view slug) {
    const Lesson* l = find_lesson(slug);
    return l == nullptr ? 0 : l->number;
}

// The std of every entry of t.
double std_of(const Tensor& t) {
    double m = 0, m2 = 0;
    for (float x : t.data) m += x, m2 += double(x) * x;
    const double n = double(t.numel());
    return std::sqrt(std::max(0.0, (m2 - m * m / n) / (n - 1)));
}

// A row's largest weight, averaged over the rows of w ([.., T, T]).
double mean_max_weight(const Tensor& w) {
    const int64_t n = w.dim(w.rank() - 1), rows = w.numel() / n;
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s += *std::max_element(w.ptr() + r * n, w.ptr() + (r + 1) * n);
    return s / double(rows);
}

nlohmann::json shapes_part(uint64_t seed) {
    MhaConfig cfg;
    cfg.d_model = 64;
    cfg.heads = 4;
    cfg = cfg.resolved();
    const int64_t B = 2, T = 6;
    MultiHeadAttention mha(cfg);
    Rng rng(seed, 0x5ee7);
    mha.init(InitSpec{}, rng);
    const Tensor x = randn({B, T, cfg.d_model}, rng);
    ForwardRecord rec;
    mha.forward(x, Mask::none(), AttentionOptions{}, &rec);
    nlohmann::json shapes = nlohmann::json::array();
    const auto add = [&](const char* name, const char* symbolic, const Shape& s) {
        shapes.push_back({{"name", name}, {"symbolic", symbolic}, {"shape", s}});
    };
    add("x", "[B, T, D]", rec.x.shape);
    add("Q, K, V", "[B, H, T, Dk]", rec.Q.shape);
    add("scores, weights", "[B, H, T, T]", rec.attn.weights.shape);
    add("weights · V", "[B, H, T, Dk]", rec.head_out.shape);
    add("merged heads", "[B, T, H·Dk]", rec.merged.shape);
    add("out = merged · W_oᵀ", "[B, T, D]", rec.out.shape);
    return {{"layer", {{"B", B}, {"T", T}, {"D", cfg.d_model}, {"H", cfg.heads}, {"Dk", cfg.d_k}}}, {"shapes", shapes}};
}

nlohmann::json scale_part(uint64_t seed) {
    const int64_t Dk = 64, T = 256;
    Rng rng(seed, 0x5ca1e);
    const Tensor q = randn({1, 1, T, Dk}, rng), k = randn({1, 1, T, Dk}, rng);
    AttentionRecord raw, scaled;
    AttentionOptions none;
    none.scale = Scale{ScaleKind::None, 1.0f};
    attention_reference(q, k, k, Mask::none(), none, &raw);
    attention_reference(q, k, k, Mask::none(), AttentionOptions{}, &scaled);
    return {{"dk", Dk},
            {"rows", T},
            {"std_unscaled", std_of(raw.scores_scaled)},
            {"std_scaled", std_of(scaled.scores_scaled)},
            {"max_weight_unscaled", mean_max_weight(raw.weights)},
            {"max_weight_scaled", mean_max_weight(scaled.weights)}};
}

nlohmann::json mask_part(uint64_t seed) {
    const int64_t B = 2, T = 6, Dk = 8;
    Rng rng(seed, 0x3a5c);
    const Tensor q = randn({B, 2, T, Dk}, rng), k = randn({B, 2, T, Dk}, rng), v = randn({B, 2, T, Dk}, rng);
    const Mask both = Mask::make_causal().combined(Mask::key_padding({6, 4}));
    AttentionRecord rec;
    attention_reference(q, k, v, both, AttentionOptions{}, &rec);
    double hidden = 0, sum_err = 0;
    for (int64_t b = 0; b < B; ++b) {
        const MaskRow row = both.row(b, T);
        for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < T; ++i) {
                double s = 0;
                for (int64_t j = 0; j < T; ++j) {
                    const double w = rec.weights.at({b, h, i, j});
                    s += w;
                    if (!row.allowed(i, j)) hidden = std::max(hidden, w);
                }
                sum_err = std::max(sum_err, std::fabs(s - 1));
            }
    }
    return {{"lengths", {6, 4}}, {"hidden_weight_max", hidden}, {"row_sum_error_max", sum_err}};
}

}  // namespace

nlohmann::json sheet_record(uint64_t seed, Lang lang) {
    const auto tr = [lang](std::string_view s) { return std::string(translate(lang, s)); };
    nlohmann::json r = shapes_part(seed);
    r["seed"] = seed;
    r["formula"] = "out = softmax(Q·Kᵀ / √Dk + M) · V";
    r["scale"] = scale_part(seed);
    r["mask"] = mask_part(seed);
    r["mask"]["rule"] = tr("before softmax, add −∞ to the score of every key a query may not see: causal hides "
                           "keys after the query, padding hides the keys past a sequence's length (shape "
                           "[B, 1, 1, T] against [B, H, T, T] scores)");
    struct Bug {
        const char *id, *text, *lesson;
    };
    const Bug bugs[] = {
        {"no-scale", "scores not divided by √Dk: rows turn one-hot", "why-sqrt-dk"},
        {"softmax-query-axis", "softmax over queries (dim −2), not keys", "softmax"},
        {"mask-after-softmax", "weights zeroed after softmax: rows sum < 1", "masks"},
        {"split-no-transpose", "heads by reshape alone, no transpose(1, 2)", "multi-head"},
        {"weight-not-transposed", "x·W, not x·Wᵀ (nn.Linear keeps [out, in])", "qkv"},
    };
    r["bugs"] = nlohmann::json::array();
    for (const Bug& b : bugs)
        r["bugs"].push_back({{"id", b.id}, {"text", tr(b.text)}, {"lesson", lesson_number(b.lesson)}});
    const std::pair<const char*, std::string> commands[] = {
        {"a first sitting, from the lookup to positions", "attn tour --core"},
        {"one idea, one lesson", "attn lessons; attn lesson NAME"},
        {"every step's shape on your sizes", "attn forward --trace"},
        {"why √Dk, measured", "attn variance"},
        {"the source's claims and their verdicts", "attn claims"},
        {"write a step yourself", "attn exercise --list"},
        {"find the bug in your own attention", "attn check FILE"},
        {"one token at a time with a KV cache", "attn decode"},
        {"turn the knobs in a browser", "attn serve"},
    };
    r["commands"] = nlohmann::json::array();
    for (const auto& [idea, command] : commands) r["commands"].push_back({{"idea", tr(idea)}, {"command", command}});
    return r;
}

std::string sheet_text(const nlohmann::json& r, Lang lang, int width, bool color) {
    const auto tr = [lang](std::string_view s) { return std::string(translate(lang, s)); };
    const auto bold = [color](const std::string& s) { return color ? "\x1b[1m" + s + "\x1b[0m" : s; };
    const auto pad = [](const std::string& v, int w) {
        return v + std::string(static_cast<size_t>(std::max(0, w - display_width(v))), ' ');
    };
    // a labelled paragraph: the label in a 10-column margin, the text wrapped beside it
    const auto item = [&](std::string_view label, const std::string& text) {
        std::string out;
        const auto lines = wrap_text_lines(text, width - 10);
        for (size_t i = 0; i < lines.size(); ++i)
            out += (i == 0 ? bold(pad(std::string(label), 10)) : std::string(10, ' ')) + lines[i] + "\n";
        return out;
    };
    const auto& L = r["layer"];
    const auto& s = r["scale"];
    const auto& m = r["mask"];
    std::string out = bold(format_in(lang, "attn sheet: attention on one screen (numbers measured at seed {})",
                                     r["seed"].get<uint64_t>())) + "\n\n";
    out += item(tr("formula"),
                format_in(lang, "{}, per head; Q = x·W_qᵀ + b_q, K and V alike; the heads merged, then · W_oᵀ + b_o.",
                          r["formula"].get<std::string>()));
    out += item(tr("shapes"), format_in(lang, "of a live layer with B = {}, T = {}, D = {}, H = {}, Dk = D / H = {}:",
                                        L["B"].get<int>(), L["T"].get<int>(), L["D"].get<int>(), L["H"].get<int>(),
                                        L["Dk"].get<int>()));
    for (const auto& sh : r["shapes"])
        out += std::string(12, ' ') + pad(tr(sh["name"].get<std::string>()), 22) +
               pad(sh["symbolic"].get<std::string>(), 16) + shape_str(sh["shape"].get<Shape>()) + "\n";
    out += item(tr("scale"),
                format_in(lang, "divide the scores by √Dk. Random q, k at Dk = {}: the std of q·k is {:.2f} unscaled, "
                                "{:.2f} scaled; a row's largest weight {:.2f} unscaled, {:.2f} scaled (mean of {} "
                                "rows).",
                          s["dk"].get<int>(), s["std_unscaled"].get<double>(), s["std_scaled"].get<double>(),
                          s["max_weight_unscaled"].get<double>(), s["max_weight_scaled"].get<double>(),
                          s["rows"].get<int>()));
    out += item(tr("mask"), format_in(lang, "{}. Measured: the largest weight on a hidden key is {}; rows sum to 1 "
                                            "within {:.1e}.",
                                      m["rule"].get<std::string>(), m["hidden_weight_max"].get<double>(),
                                      m["row_sum_error_max"].get<double>()));
    // the columns as wide as their widest cell, and two spaces
    const auto widest = [](const nlohmann::json& rows, const char* key) {
        int w = 0;
        for (const auto& x : rows) w = std::max(w, display_width(x[key].get<std::string>()));
        return w + 2;
    };
    out += "\n" + bold(tr("Five common bugs (`attn check FILE` finds them in your own tensors):")) + "\n";
    const int id_w = widest(r["bugs"], "id"), bug_w = widest(r["bugs"], "text");
    for (const auto& b : r["bugs"])
        out += "  " + pad(b["id"].get<std::string>(), id_w) + pad(b["text"].get<std::string>(), bug_w) +
               format_in(lang, "lesson {}", b["lesson"].get<int>()) + "\n";
    out += "\n" + bold(tr("The command for each idea:")) + "\n";
    const int idea_w = widest(r["commands"], "idea");
    for (const auto& c : r["commands"])
        out += "  " + pad(c["idea"].get<std::string>(), idea_w) + c["command"].get<std::string>() + "\n";
    return out;
}

}  // namespace attn::lessons
