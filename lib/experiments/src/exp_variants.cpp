// attn experiment variants (C42, C43): sparse masks in the tiled kernel and linear attention
// against full flash attention, for time, extra memory and error against softmax attention;
// the registry's form of `attn variants` on random inputs (the measurements are
// attn/experiments/variants.hpp's run_variants; MiniLM's heads are `attn variants`' alone,
// the model being above this module).
//
// Verdicts, from the timings:
//   C42  each sparse kind listed (window, strided, global-local) at least 1.25x faster than full
//        flash at the largest T (a margin over the timings' noise): all supported, some
//        qualified, none not supported;
//   C43  each linear kind listed (elu+1, favor+, cosformer) with time ~ T^e, e < 1.5 between the
//        two largest T (O(n) is 1, flash's O(n^2) is 2): all supported, some qualified, none not.
// Timings depend on the machine and its load: the verdicts are of this run, not of a seed.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/experiments/experiment.hpp"
#include "attn/experiments/variants.hpp"

namespace attn {
namespace {

constexpr double kLinearExponent = 1.5;  // below: closer to O(n) than to O(n^2)
constexpr double kFaster = 1.25;         // a speed-up counted as faster: beyond the timings' noise

bool is_sparse(Variant v) { return v == Variant::Window || v == Variant::Strided || v == Variant::GlobalLocal; }
bool is_linear_kind(Variant v) { return v == Variant::EluPlusOne || v == Variant::Favor || v == Variant::CosFormer; }

VerdictKind share_verdict(int good, int of) {
    return good == of ? VerdictKind::Supported : good > 0 ? VerdictKind::Qualified : VerdictKind::NotSupported;
}

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

void add_tables(const VariantsConfig& cfg, const VariantsResult& r, ExperimentResult& out) {
    if (!r.speed.empty()) {
        ExperimentTable t;
        t.title = fmt::format("time of one forward, B=1 H={} d_k=d_v={}, {}", cfg.heads, cfg.dk,
                              cfg.causal ? "causal" : "non-causal");
        t.columns = {"T", "variant", "seconds", "flash / variant", "GFLOP/s", "extra bytes", "model bytes",
                     "extrapolated from queries"};
        for (const SpeedRow& s : r.speed) {
            const SpeedRow* f = nullptr;
            for (const SpeedRow& x : r.speed)
                if (x.variant == Variant::Flash && x.T == s.T && x.ok) f = &x;
            if (!s.ok) {
                t.rows.push_back({s.T, variant_name(s.variant), nullptr, nullptr, nullptr, nullptr, nullptr, s.error});
                continue;
            }
            t.rows.push_back(
                {s.T, variant_name(s.variant), s.seconds,
                 f != nullptr && s.seconds > 0 ? nlohmann::json(f->seconds / s.seconds) : nlohmann::json(nullptr),
                 s.gflops >= 0 ? nlohmann::json(s.gflops) : nlohmann::json(nullptr), s.extra_bytes,
                 s.model_bytes >= 0 ? nlohmann::json(s.model_bytes) : nlohmann::json(nullptr),
                 s.extrapolated ? nlohmann::json(s.sampled_queries) : nlohmann::json(nullptr)});
        }
        out.tables.push_back(std::move(t));
        ExperimentTable c;
        c.title = "crossover: the smallest T from which the variant beats full flash at every larger T";
        c.columns = {"variant", "from T", "speed-up at the largest T", "time exponent"};
        c.rows.push_back({"flash", nullptr, 1.0, number_or_null(time_exponent(r.speed, Variant::Flash))});
        for (const Crossover& x : r.crossover)
            c.rows.push_back({variant_name(x.variant), x.T > 0 ? nlohmann::json(x.T) : nlohmann::json(nullptr),
                              x.speedup_at_max, number_or_null(time_exponent(r.speed, x.variant))});
        out.tables.push_back(std::move(c));
    }
    if (!r.errors.empty()) {
        ExperimentTable e;
        e.title =
            "error against softmax attention: rel = |out - softmax| / |softmax|, KL(variant row || softmax row) in "
            "nats";
        e.columns = {"source", "variant", "pattern", "rel error", "KL"};
        for (const ErrorRow& x : r.errors)
            e.rows.push_back({x.source, variant_name(x.variant), x.pattern, x.rel_error, x.kl});
        out.tables.push_back(std::move(e));
    }
    for (const FavorCurve& fc : r.favor) {
        ExperimentTable p;
        p.title = fmt::format("favor+ error against m, q and k x {}: fitted slope of log(error) vs log(m) {:.3f} "
                              "(1/sqrt(m) is -0.5)",
                              fc.input_scale, fc.slope);
        p.columns = {"m", "rel error"};
        for (const FavorPoint& pt : fc.points) p.rows.push_back({pt.m, pt.rel_error});
        out.tables.push_back(std::move(p));
    }
}

void add_curves(const VariantsConfig& cfg, const VariantsResult& r, ExperimentResult& out) {
    for (const Variant v : cfg.variants) {
        ExperimentCurve t{"seconds per forward, vs T", variant_name(v), "T", {}, {}};
        ExperimentCurve m{"extra memory bytes, vs T", variant_name(v), "T", {}, {}};
        for (const SpeedRow& s : r.speed)
            if (s.variant == v && s.ok) {
                if (s.seconds > 0) t.x.push_back(double(s.T)), t.y.push_back(s.seconds);
                if (s.extra_bytes > 0) m.x.push_back(double(s.T)), m.y.push_back(s.extra_bytes);
            }
        if (!t.x.empty()) out.curves.push_back(std::move(t));
        if (!m.x.empty()) out.curves.push_back(std::move(m));
    }
    for (const FavorCurve& fc : r.favor) {
        ExperimentCurve c{"favor+ rel error, vs m", fmt::format("q, k x {}", fc.input_scale), "m", {}, {}};
        for (const FavorPoint& p : fc.points) c.x.push_back(double(p.m)), c.y.push_back(p.rel_error);
        out.curves.push_back(std::move(c));
    }
}

void add_verdicts(const VariantsConfig& cfg, const VariantsResult& r, ExperimentResult& out) {
    const int64_t top = *std::max_element(cfg.lengths.begin(), cfg.lengths.end());
    const double flash_e = time_exponent(r.speed, Variant::Flash);
    int sparse = 0, sparse_fast = 0, linear = 0, linear_ok = 0;
    std::string sparse_fig, linear_fig;
    for (const Crossover& c : r.crossover) {
        const double e = time_exponent(r.speed, c.variant);
        const std::string item =
            fmt::format("{} {:.1f}x (time ~ T^{:.2f})", variant_name(c.variant), c.speedup_at_max, e);
        if (is_sparse(c.variant)) {
            ++sparse;
            sparse_fast += c.speedup_at_max >= kFaster ? 1 : 0;
            sparse_fig += (sparse_fig.empty() ? "" : ", ") + item;
        } else if (is_linear_kind(c.variant)) {
            ++linear;
            linear_ok += std::isfinite(e) && e < kLinearExponent ? 1 : 0;
            linear_fig += (linear_fig.empty() ? "" : ", ") + item;
        }
    }
    const std::string flash_fig = fmt::format("flash ~ T^{:.2f}", flash_e);
    if (sparse > 0)
        out.verdicts.push_back(
            {"C42", "long inputs can use sparse patterns: a local window, strides, global plus local",
             share_verdict(sparse_fast, sparse),
             fmt::format("flash time / variant time at T={}: {} ({}); {} of {} at least {}x faster than full flash",
                         top, sparse_fig, flash_fig, sparse_fast, sparse, kFaster)});
    if (linear > 0)
        out.verdicts.push_back(
            {"C43", "kernel-based linear attention runs in O(n)", share_verdict(linear_ok, linear),
             fmt::format("flash time / variant time at T={}: {} ({}); {} of {} grow as T^e with e < {} between the "
                         "two largest T",
                         top, linear_fig, flash_fig, linear_ok, linear, kLinearExponent)});
}

ExperimentResult run_experiment(const ExperimentConfig& c, const ExperimentProgress& progress) {
    VariantsConfig v;
    set_variants_size(v, c.size);
    v.seed = c.seed;
    v.threads = c.threads;
    const VariantsResult r = run_variants(v, true, [&](double f) {
        if (progress) progress(fmt::format("variants: timing {:.0f}%", 100 * f));
    });
    ExperimentResult out = variants_result(v, r);
    if (c.seeds > 1)
        out.notes.push_back(fmt::format("One run from seed {}: the timings repeat until a minimum time and report "
                                        "the median, so further seeds are not drawn.",
                                        c.seed));
    return out;
}

}  // namespace

ExperimentResult variants_result(const VariantsConfig& cfg, const VariantsResult& r) {
    ExperimentResult out;
    out.name = "variants";
    add_tables(cfg, r, out);
    add_curves(cfg, r, out);
    if (!r.speed.empty()) add_verdicts(cfg, r, out);
    out.notes.push_back("Each timing runs in a child process (B = 1, random N(0, 1) q, k, v); its extra memory is "
                        "the child's peak over its baseline. Full flash and strided above 4096 x 4096 pairs are timed "
                        "on a sample of queries and scaled (the table says from how many).");
    out.notes.push_back("In the tiled kernel strided attention skips few key blocks (its stride keys fall in nearly "
                        "every block), so it costs about what full flash costs.");
    out.notes.push_back("elu+1 and cosformer approximate no softmax (they are other kernels, trained for): their error "
                        "says how different they are. On random inputs softmax rows are nearly flat, so the sparse "
                        "kinds' error is mostly the mass they drop.");
    return out;
}

ExperimentInfo experiment_variants() {
    return {"variants",
            {"C42", "C43"},
            "sparse masks and linear attention against full flash: time, extra memory, crossover T, error vs softmax",
            run_experiment};
}

}  // namespace attn
