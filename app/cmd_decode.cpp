// `attn decode`: incremental decoding with a KV cache (attn/nn/kv_cache.hpp).
// A random causal decoder (--layers blocks of attention + feed-forward) reads T
// random token vectors one at a time; each step appends the token's K and V to
// every layer's cache and attends over the cache. Every step is checked
// against the full causal forward pass over the tokens so far, and the cache's
// bytes are reported as T grows, with what grouped-query attention would keep.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "attn/attn.hpp"
#include "command.hpp"
#include "html_page.hpp"
#include "options.hpp"
#include "parse.hpp"

namespace attn::cli {
namespace {

struct DecodeOpts {
    int64_t batch = 1, steps = 8, d_model = 16, heads = 4, layers = 2, d_k = 0, d_v = 0, d_ff = 0;
    std::string init = "torch";
    uint64_t seed = 0;
    bool trace = false, no_bias = false, yes = false;
    JsonOut json;
    HtmlOpts html;
};

// --html: every step's weights, as the step computed them, gathered into a page. The step's trace
// hands over each layer's q and the cache's K and V; the same reference attention over them gives
// the step's weights (B, H, 1, t + 1): row t of batch row 0's (T, T) causal matrix, per layer and head.
struct StepWeights {
    AttentionPage page;
    Tensor q, K;
    int64_t t = 0;
    StepWeights(int64_t L, int64_t H, int64_t T) {
        page.layers = L, page.heads = H, page.tq = page.tk = T;
        page.weights.assign(static_cast<size_t>(L * H * T * T), 0.0f);
        page.scores.assign(page.weights.size(), -std::numeric_limits<float>::infinity());
        page.allowed.resize(static_cast<size_t>(T * T));
        for (int64_t i = 0; i < T; ++i) {
            page.q_tokens.push_back(fmt::format("x{}", i));
            for (int64_t j = 0; j < T; ++j) page.allowed[static_cast<size_t>(i * T + j)] = j <= i;
        }
        page.k_tokens = page.q_tokens;
    }
    void take(const TraceEvent& e, const AttentionOptions& opt) {
        if (e.name[0] == 'q') q = *e.value;
        if (e.name[0] == 'K') K = *e.value;
        if (e.name[0] != 'V') return;
        AttentionRecord rec;
        (void)attention_reference(q, K, *e.value, Mask::none(), opt, &rec);  // (B, H, 1, t + 1)
        const int64_t l = std::stoll(e.name.substr(1)), H = page.heads, T = page.tq, n = rec.weights.dim(3);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t j = 0; j < n; ++j) {
                const auto at = static_cast<size_t>(((l * H + h) * T + t) * T + j);
                page.weights[at] = rec.weights.data[static_cast<size_t>(h * n + j)];
                page.scores[at] = rec.scores_masked.data[static_cast<size_t>(h * n + j)];
            }
    }
};

// Row t of x (B, T, D) as (B, 1, D).
Tensor token(const Tensor& x, int64_t t) {
    const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
    Tensor out(Shape{B, 1, D});
    for (int64_t b = 0; b < B; ++b)
        std::copy(x.ptr() + (b * T + t) * D, x.ptr() + (b * T + t + 1) * D, out.ptr() + b * D);
    return out;
}

// The FLOPs (an exponential counted as kFlopsPerExp) above which a run needs --yes: 2e11
// is tens of seconds here, the default run about 1e5.
constexpr double kDecodeBudget = 2e11;

// Refuses, naming the option to lower, a run that would not fit in memory or that is
// above the work budget (without --yes): the weights, the cache at the end and the full
// pass's (B, H, T, T) scores per layer; the work of checking every step by a full pass.
void check_decode_budget(const DecodeOpts& o, const DecoderConfig& cfg) {
    const double T = static_cast<double>(o.steps), B = static_cast<double>(o.batch);
    const double weights = static_cast<double>(cfg.layers) *
                           (static_cast<double>(cfg.d_model) * cfg.heads * (2.0 * cfg.d_k + 2.0 * cfg.d_v) +
                            2.0 * static_cast<double>(cfg.d_model) * cfg.d_ff);
    // Blame the size furthest above its default among those the larger term grows with.
    const double cache_and_scores = kv_cache_bytes(cfg.layers, o.batch, cfg.heads, o.steps, cfg.d_k, cfg.d_v) +
                                    4.0 * 8.0 * B * cfg.heads * T * T + 4.0 * 8.0 * B * T * (cfg.d_model + cfg.d_ff);
    const auto blame = [](std::initializer_list<std::pair<double, const char*>> over_default) {
        return std::max(over_default, [](const auto& a, const auto& b) { return a.first < b.first; }).second;
    };
    const char* mem_opt = 4.0 * weights > cache_and_scores
                              ? blame({{double(cfg.layers) / 2, "--layers"}, {double(cfg.d_model) / 16, "--d-model"},
                                       {double(cfg.d_ff) / 64, "--d-ff"}, {double(cfg.heads) / 4, "--heads"}})
                              : blame({{T / 8, "--steps"}, {B, "--batch"}, {double(cfg.heads) / 4, "--heads"},
                                       {double(cfg.layers) / 2, "--layers"}});
    require_fits_in_memory(mem_opt,
                           4.0 * weights + kv_cache_bytes(cfg.layers, o.batch, cfg.heads, o.steps, cfg.d_k, cfg.d_v) +
                               4.0 * 8.0 * B * cfg.heads * T * T + 4.0 * 8.0 * B * T * (cfg.d_model + cfg.d_ff),
                           fmt::format("{} steps of a {}-layer decoder", o.steps, cfg.layers));
    // Work: step t runs the full causal pass over t + 1 tokens to check the cached step, so the
    // projections and feed-forward cost sum_t (t + 1) and the scores sum_t (t + 1)^2, per layer.
    const double tokens = T * (T + 1) / 2, pairs = T * (T + 1) * (2 * T + 1) / 6;
    const double per_token =
        2.0 * cfg.d_model * cfg.heads * (2.0 * cfg.d_k + 2.0 * cfg.d_v) + 4.0 * cfg.d_model * cfg.d_ff;
    const double work = static_cast<double>(cfg.layers) * B *
                        (tokens * per_token + pairs * cfg.heads * (2.0 * (cfg.d_k + cfg.d_v) + kFlopsPerExp));
    const char* work_opt = blame({{T / 8, "--steps"}, {double(cfg.layers) / 2, "--layers"}, {B, "--batch"},
                                  {double(cfg.heads) / 4, "--heads"}});
    if (work > kDecodeBudget && !o.yes)
        throw InputError(
            fmt::format("{}: {} steps of a {}-layer decoder would take about {:.1e} FLOPs (each step is "
                        "checked by a full pass over the tokens so far), above the budget of {:.0e}; lower "
                        "--steps, --layers, --batch or the widths, or add --yes",
                        work_opt, o.steps, cfg.layers, work, kDecodeBudget));
}

// The attn-decode JSON record: the config, each step's cache shapes and differences, and the cache
// bytes at the last length for every grouped-query layout.
void write_decode_json(const DecodeOpts& o, const DecoderConfig& cfg, const nlohmann::ordered_json& steps,
                       double worst_all, bool equal, const std::vector<int64_t>& kv_heads) {
    nlohmann::ordered_json gqa = nlohmann::ordered_json::array();
    for (int64_t h : kv_heads)
        gqa.push_back(
            {{"kv_heads", h}, {"bytes", kv_cache_bytes(cfg.layers, o.batch, h, o.steps, cfg.d_k, cfg.d_v)}});
    const nlohmann::ordered_json j = {
        {"format", "attn-decode"},
        {"version", 1},
        {"config", {{"batch", o.batch}, {"d_model", cfg.d_model}, {"heads", cfg.heads}, {"d_k", cfg.d_k},
                    {"d_v", cfg.d_v}, {"layers", cfg.layers}, {"d_ff", cfg.d_ff}, {"bias", cfg.bias},
                    {"init", o.init}, {"seed", o.seed}}},
        {"bytes_formula", "layers * B * H_kv * T * (d_k + d_v) * 4 (float32)"},
        {"steps", steps},
        {"max_abs_diff", worst_all},
        {"equal_to_full_pass", equal},
        {"bytes_at_T_by_kv_heads", gqa}};
    write_json(o.json, j, "attn-decode", 1);
}

// The verdict and the cache bytes of every grouped-query layout, on the terminal.
void print_decode_summary(const DecodeOpts& o, const DecoderConfig& cfg, double worst_all, bool equal,
                          const std::vector<int64_t>& kv_heads) {
    fmt::print("\nevery step equals the full causal pass over the tokens so far: max |diff| = {:.1e} ({})\n",
               worst_all, equal ? "float32 rounding" : "NOT EQUAL: a bug");
    fmt::print(
        "cache bytes = layers x B x H_kv x T x (Dk + Dv) x 4 = {} x {} x H_kv x {} x ({} + {}) x 4; at T = {}:\n",
        cfg.layers, o.batch, o.steps, cfg.d_k, cfg.d_v, o.steps);
    for (int64_t h : kv_heads)
        fmt::print("  H_kv = {:>3}{:<28} {}\n", h,
                   h == cfg.heads ? " (multi-head, this run)"
                   : h == 1       ? " (multi-query)"
                                  : fmt::format(" (grouped, {} per group)", cfg.heads / h),
                   format_bytes(kv_cache_bytes(cfg.layers, o.batch, h, o.steps, cfg.d_k, cfg.d_v)));
}

int run_decode(const DecodeOpts& o) {
    if (o.trace && o.json.to_stdout())
        throw InputError(
            "--trace: cannot be combined with --json to stdout (both write to standard output); give --json FILE");
    require_json_writable(o.json);
    check_html(o.html);
    DecoderConfig cfg;
    cfg.d_model = o.d_model;
    cfg.heads = o.heads;
    cfg.layers = o.layers;
    cfg.d_k = o.d_k;
    cfg.d_v = o.d_v;
    cfg.d_ff = o.d_ff;
    cfg.bias = !o.no_bias;
    cfg = with_option("--heads", [&] { return cfg.resolved(); });
    const InitSpec init = parse_init(o.init);  // its errors name --init
    check_decode_budget(o, cfg);
    const CausalDecoder dec(cfg, init, o.seed);
    Tensor x(Shape{o.batch, o.steps, cfg.d_model});
    Rng xrng(o.seed, 1);
    for (float& v : x.data) v = xrng.normal();
    const AttentionOptions opt;

    if (!o.json.to_stdout())
        fmt::print(
            "attn decode: B={} D={} H={} Dk={} Dv={} layers={} d_ff={}; {} tokens, one at a time, each attending "
            "to the cache\n",
            o.batch, cfg.d_model, cfg.heads, cfg.d_k, cfg.d_v, cfg.layers, cfg.d_ff, o.steps);
    std::optional<StepWeights> seen;
    if (!o.html.file.empty()) seen.emplace(cfg.layers, cfg.heads, o.steps);
    TraceFn trace = [&](const TraceEvent& e) {
        if (seen) seen->take(e, opt);
        if (o.trace) fmt::print("    {:>6} = {:<44} {}\n", e.name, e.formula, shape_str(e.shape));
    };
    KvCache cache = dec.make_cache(o.batch);
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    double worst_all = 0, scale = 0;  // largest |diff| and largest |value| of the full pass
    if (!o.json.to_stdout() && !o.trace)
        fmt::print("\n{:>5} {:>16} {:>12}   {}\n", "step", "cache K per layer", "cache bytes",
                   "max |step - full causal pass| per layer");
    for (int64_t t = 0; t < o.steps; ++t) {
        if (o.trace) fmt::print("\n  step {}: token x_{} (B, 1, D)\n", t, t);
        std::vector<Tensor> step_out, full_out;
        if (seen) seen->t = t;
        (void)dec.step(token(x, t), cache, opt, &step_out, o.trace || seen ? &trace : nullptr);
        // the full causal pass over tokens 0..t: its last row is what the step must equal
        Tensor prefix(Shape{o.batch, t + 1, cfg.d_model});
        for (int64_t b = 0; b < o.batch; ++b)
            std::copy(x.ptr() + b * o.steps * cfg.d_model, x.ptr() + (b * o.steps + t + 1) * cfg.d_model,
                      prefix.ptr() + b * (t + 1) * cfg.d_model);
        (void)dec.forward(prefix, opt, &full_out);
        std::vector<double> diff;
        for (int64_t l = 0; l < cfg.layers; ++l) {
            const Tensor want = token(full_out[static_cast<size_t>(l)], t);
            double d = 0;
            for (size_t k = 0; k < want.data.size(); ++k) {
                d = std::max(d,
                             static_cast<double>(std::fabs(step_out[static_cast<size_t>(l)].data[k] - want.data[k])));
                scale = std::max(scale, static_cast<double>(std::fabs(want.data[k])));
            }
            diff.push_back(d);
            worst_all = std::max(worst_all, d);
        }
        const Shape ks{o.batch, cfg.heads, cache.length(), cfg.d_k};
        if (o.json.given())
            steps.push_back({{"step", t},
                             {"cache_k_shape", ks},
                             {"cache_v_shape", Shape{o.batch, cfg.heads, cache.length(), cfg.d_v}},
                             {"cache_bytes", cache.bytes()},
                             {"max_abs_diff_per_layer", diff}});
        if (o.json.to_stdout()) {
        } else if (o.trace) {
            fmt::print("    cache: K {} and V {} per layer, {} in all; |step - full pass| per layer: {:.1e}\n",
                       shape_str(ks), shape_str({o.batch, cfg.heads, cache.length(), cfg.d_v}),
                       format_bytes(cache.bytes()), fmt::join(diff, ", "));
        } else {
            fmt::print("{:>5} {:>16} {:>12}   {:.1e}\n", t, shape_str(ks), format_bytes(cache.bytes()),
                       fmt::join(diff, "  "));
        }
    }
    // What grouped-query attention would keep: H_kv key/value heads shared by H / H_kv query heads each.
    std::vector<int64_t> kv_heads;
    for (int64_t h = cfg.heads; h >= 1; --h)
        if (cfg.heads % h == 0) kv_heads.push_back(h);
    // Equal up to float32 rounding: the step computes the same sums grouped differently (one
    // token's GEMV instead of the sequence's GEMM), a few ulps of values up to `scale`.
    const bool equal = worst_all <= 1e-5 * std::max(1.0, scale);
    if (o.json.given()) write_decode_json(o, cfg, steps, worst_all, equal, kv_heads);
    if (!o.json.to_stdout()) print_decode_summary(o, cfg, worst_all, equal, kv_heads);
    if (seen) {
        seen->page.title = fmt::format("Attention of a random {}-layer decoder, one token at a time", cfg.layers);
        seen->page.subtitle =
            fmt::format("batch row 0 of {}; row t holds step t's weights over the cache (t + 1 keys)", o.batch);
        seen->page.source = "attn decode";
        seen->page.shapes = {{"q (per step, layer)", shape_str({o.batch, cfg.heads, 1, cfg.d_k})},
                             {"K cache at the end (per layer)", shape_str({o.batch, cfg.heads, o.steps, cfg.d_k})},
                             {"weights (per step, layer)", fmt::format("[{}, {}, 1, t + 1]", o.batch, cfg.heads)}};
        write_html_page(o.html, std::move(seen->page), TextOut({o.json.claim()}));
    }
    return equal ? 0 : 1;
}

const Command decode_cmd{
    "decode", "Decode one token at a time with a KV cache; every step checked against the full causal pass", 15,
    [](CLI::App& sub) -> Runner {
        auto o = std::make_shared<DecodeOpts>();
        deprecated_alias(sub, "-b", "--batch", o->batch)->check(integer_in(1, 4096));
        sub.add_option("--batch,-B", o->batch, "B, sequences decoded side by side")
            ->capture_default_str()
            ->check(integer_in(1, 4096));
        deprecated_alias(sub, "-t", "--steps", o->steps)->check(integer_in(1, 1024));
        sub.add_option("--steps", o->steps,
                       "T, tokens to decode (each step is checked with a full pass over the tokens so far)")
            ->capture_default_str()
            ->check(integer_in(1, 1024));
        sub.add_option("--d-model,-d", o->d_model, "D, model width")
            ->capture_default_str()
            ->check(integer_in(1, 65536));
        sub.add_option("--heads,-H", o->heads, "H, heads per layer")->capture_default_str()->check(integer_in(1, 4096));
        sub.add_option("--layers", o->layers, "decoder blocks (attention + feed-forward)")
            ->capture_default_str()
            ->check(integer_in(1, 256));
        sub.add_option("--d-k", o->d_k, "Dk per head (default D/H)")->check(integer_in(1, 65536));
        sub.add_option("--d-v", o->d_v, "Dv per head (default Dk)")->check(integer_in(1, 65536));
        sub.add_option("--d-ff", o->d_ff, "feed-forward width (default 4 D)")->check(integer_in(1, 262144));
        sub.add_flag("--no-bias", o->no_bias, "projections without bias");
        sub.add_flag("--yes", o->yes, fmt::format("run even above the work budget of {:.0e} FLOPs", kDecodeBudget));
        sub.add_option("--init", o->init, fmt::format("weight initialiser: {}", kInitNames))->capture_default_str();
        sub.add_option("--seed", o->seed, "seed of the weights and the token vectors")
            ->capture_default_str()
            ->check(seed_validator());
        sub.add_flag("--trace", o->trace,
                     "print each step's q, the cache's K and V (growing), and the output, with shapes");
        add_json(sub, o->json, "attn-decode");
        add_html_options(sub, o->html);
        return [o] { return run_decode(*o); };
    }};

}  // namespace
}  // namespace attn::cli
