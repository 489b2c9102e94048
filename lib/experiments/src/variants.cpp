// attn variants as a library: speed, memory and error of sparse and linear attention
// against full softmax attention (see attn/experiments/variants.hpp).
#include "attn/experiments/variants.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/attention.hpp"
#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"  // median
#include "attn/cpu/flash.hpp"
#include "attn/cpu/linear_attention.hpp"
#include "attn/viz/chart.hpp"
#include "attn/viz/svg.hpp"

namespace attn {

const char* variant_name(Variant v) {
    switch (v) {
        case Variant::Flash: return "flash";
        case Variant::Window: return "window";
        case Variant::Strided: return "strided";
        case Variant::GlobalLocal: return "global-local";
        case Variant::EluPlusOne: return "elu+1";
        case Variant::Favor: return "favor+";
        case Variant::CosFormer: return "cosformer";
    }
    return "?";
}

std::vector<Variant> all_variants() {
    return {Variant::Flash,      Variant::Window, Variant::Strided,  Variant::GlobalLocal,
            Variant::EluPlusOne, Variant::Favor,  Variant::CosFormer};
}

void validate(const VariantsConfig& cfg) {
    if (cfg.lengths.empty()) throw InputError("variants: the list of lengths is empty");
    for (int64_t T : cfg.lengths)
        if (T < 1) throw InputError(fmt::format("variants: every length must be at least 1, got {}", T));
    if (cfg.variants.empty()) throw InputError("variants: the list of variants is empty");
    if (std::set<Variant>(cfg.variants.begin(), cfg.variants.end()).size() != cfg.variants.size())
        throw InputError("variants: a variant is listed twice");
    for (int64_t x : {cfg.heads, cfg.dk, cfg.window, cfg.global + 1, cfg.features, cfg.error_T, cfg.error_heads,
                      cfg.error_window, cfg.flash_sample_queries})
        if (x < 1) throw InputError(fmt::format("variants: every size must be at least 1, got {}", x));
    if (cfg.stride < 0)
        throw InputError(fmt::format("variants: the stride must be 0 (sqrt T) or more, got {}", cfg.stride));
    for (int64_t m : cfg.favor_m)
        if (m < 1)
            throw InputError(fmt::format("variants: every Performer feature count must be at least 1, got {}", m));
    if (cfg.favor_draws < 1) throw InputError("variants: at least one Performer draw");
}

namespace {

bool is_linear(Variant v) { return v == Variant::EluPlusOne || v == Variant::Favor || v == Variant::CosFormer; }

int64_t stride_for(const VariantsConfig& cfg, int64_t T) {
    return cfg.stride > 0 ? cfg.stride : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(double(T)))));
}

// The mask of a softmax kind at length T (window and global widths as given).
Mask mask_for(Variant v, const VariantsConfig& cfg, int64_t T, int64_t window, int64_t global) {
    switch (v) {
        case Variant::Window: return Mask::sliding_window(window, cfg.causal);
        case Variant::Strided: return Mask::strided(stride_for(cfg, T), cfg.causal);
        case Variant::GlobalLocal: return Mask::global_local(global, window, cfg.causal);
        default: return cfg.causal ? Mask::make_causal() : Mask::none();
    }
}

LinearOptions linear_for(Variant v, const VariantsConfig& cfg, int64_t m) {
    LinearOptions o;
    o.map = v == Variant::EluPlusOne ? FeatureMap::EluPlusOne
            : v == Variant::Favor    ? FeatureMap::Favor
                                     : FeatureMap::CosFormer;
    o.causal = cfg.causal;
    o.features = m;
    o.seed = cfg.seed;
    return o;
}

std::string pattern_of(Variant v, const VariantsConfig& cfg, int64_t T, int64_t window, int64_t global, int64_t m) {
    switch (v) {
        case Variant::Window: return fmt::format("w={}", window);
        case Variant::Strided: return fmt::format("s={}", stride_for(cfg, T));
        case Variant::GlobalLocal: return fmt::format("g={},w={}", global, window);
        case Variant::Favor: return fmt::format("m={}", m);
        case Variant::EluPlusOne:
        case Variant::CosFormer: return "-";
        default: return cfg.causal ? "causal" : "full";
    }
}

Tensor randn(Shape s, uint64_t seed, uint64_t stream) {
    Tensor t(std::move(s));
    Rng r(seed, stream);
    for (auto& x : t.data) x = r.normal();
    return t;
}

double proc_status_bytes(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(f, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
            return 1024.0 * std::atof(line.c_str() + n + 1);
    return 0;
}

// What a child sends back.
struct ChildReport {
    int ok = 0;
    double seconds = 0, extra = 0;
};

// One (variant, T) in this process: the median time and the peak over the baseline.
ChildReport time_case(const VariantsConfig& cfg, Variant var, int64_t T, int64_t Tq) {
    const uint64_t stream = static_cast<uint64_t>(T) * 16 + static_cast<uint64_t>(var);
    const Tensor q = randn({1, cfg.heads, Tq, cfg.dk}, cfg.seed, 3 * stream),
                 k = randn({1, cfg.heads, T, cfg.dk}, cfg.seed, 3 * stream + 1),
                 v = randn({1, cfg.heads, T, cfg.dk}, cfg.seed, 3 * stream + 2);
    const Mask mask = mask_for(var, cfg, T, cfg.window, cfg.global);
    const LinearOptions lo = linear_for(var, cfg, cfg.features);
    const double base = proc_status_bytes("VmRSS");
    const auto once = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const Tensor out = is_linear(var) ? linear_attention(q, k, v, lo, cfg.threads)
                                          : attention_flash(q, k, v, mask, {}, cfg.threads);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return s + 0.0 * out.data[0];
    };
    std::vector<double> times;
    double total = 0;
    once();  // warm-up (page faults, the thread pool)
    while (times.empty() || (total < cfg.min_seconds && times.size() < 20)) {
        times.push_back(once());
        total += times.back();
    }
    ChildReport r;
    r.ok = 1;
    r.seconds = median(times);
    // the output [1, H, Tq, Dv] is not the variant's working set
    const double out_bytes = 4.0 * static_cast<double>(cfg.heads * Tq * cfg.dk);
    r.extra = std::max(0.0, proc_status_bytes("VmHWM") - base - out_bytes);
    return r;
}

// time_case in a forked child, so that its peak memory is its own.
ChildReport time_in_child(const VariantsConfig& cfg, Variant var, int64_t T, int64_t Tq, std::string* error) {
    int fds[2];
    if (::pipe(fds) != 0) {
        *error = "pipe() failed";
        return {};
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        *error = "fork() failed";
        ::close(fds[0]);
        ::close(fds[1]);
        return {};
    }
    if (pid == 0) {
        ::close(fds[0]);
        ChildReport r;
        try {
            r = time_case(cfg, var, T, Tq);
        } catch (...) {
            r.ok = 0;
        }
        const ssize_t n = ::write(fds[1], &r, sizeof r);
        ::_exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 1);
    }
    ::close(fds[1]);
    ChildReport r;
    size_t got = 0;
    while (got < sizeof r) {
        const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&r) + got, sizeof r - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (got != sizeof r || !r.ok) {
        *error = WIFSIGNALED(status) ? fmt::format("the run was killed by signal {} (out of memory?)", WTERMSIG(status))
                                     : "the run failed";
        r.ok = 0;
    }
    return r;
}

}  // namespace

std::vector<SpeedRow> run_variant_speed(const VariantsConfig& cfg, const std::function<void(double)>& progress) {
    validate(cfg);
    std::vector<SpeedRow> rows;
    const double n = static_cast<double>(cfg.lengths.size() * cfg.variants.size());
    for (int64_t T : cfg.lengths)
        for (Variant var : cfg.variants) {
            if (progress) progress(static_cast<double>(rows.size()) / n);
            SpeedRow r;
            r.variant = var;
            r.T = T;
            int64_t Tq = T;
            // full flash, and strided (whose stride keys fall in nearly every key block, so it skips few)
            const bool dense_like = var == Variant::Flash || var == Variant::Strided;
            if (dense_like && double(T) * double(T) > cfg.flash_full_limit && cfg.flash_sample_queries < T) {
                Tq = cfg.flash_sample_queries;
                r.extrapolated = true;
                r.sampled_queries = Tq;
            }
            const ChildReport c = time_in_child(cfg, var, T, Tq, &r.error);
            r.ok = c.ok != 0;
            // a causal mask makes later queries cost more: a sample of the first queries would
            // under-count, so a causal flash row scales by the ratio of allowed pairs instead
            const Mask m = mask_for(var, cfg, T, cfg.window, cfg.global);
            double scale = double(T) / double(Tq);
            if (r.extrapolated && cfg.causal)
                scale = attention_flops(1, 1, T, T, 1, 0, m) / attention_flops(1, 1, Tq, T, 1, 0, m);
            r.seconds = c.seconds * scale;
            r.extra_bytes = c.extra;
            if (!is_linear(var)) {
                r.flops = attention_flops(1, cfg.heads, T, T, cfg.dk, cfg.dk, m);
                r.gflops = r.ok && r.seconds > 0 ? r.flops / r.seconds / 1e9 : -1;
                r.model_bytes = -1;
            } else {
                r.model_bytes = linear_attention_workspace_bytes(
                    T, cfg.dk, cfg.dk, linear_for(var, cfg, cfg.features),
                    static_cast<int>(std::min<int64_t>(cfg.heads, cfg.threads > 0 ? cfg.threads : cfg.heads)), false);
            }
            rows.push_back(r);
        }
    if (progress) progress(1.0);
    return rows;
}

std::vector<Crossover> crossovers(const VariantsConfig& cfg, const std::vector<SpeedRow>& speed) {
    std::vector<int64_t> Ts = cfg.lengths;
    std::sort(Ts.begin(), Ts.end());
    Ts.erase(std::unique(Ts.begin(), Ts.end()), Ts.end());
    const auto find = [&](Variant v, int64_t T) -> const SpeedRow* {
        for (const SpeedRow& r : speed)
            if (r.variant == v && r.T == T && r.ok) return &r;
        return nullptr;
    };
    std::vector<Crossover> out;
    for (Variant v : cfg.variants) {
        if (v == Variant::Flash) continue;
        Crossover c;
        c.variant = v;
        for (auto it = Ts.rbegin(); it != Ts.rend(); ++it) {
            const SpeedRow *f = find(Variant::Flash, *it), *x = find(v, *it);
            if (f == nullptr || x == nullptr || x->seconds >= f->seconds) break;
            c.T = *it;
        }
        const SpeedRow *f = find(Variant::Flash, Ts.back()), *x = find(v, Ts.back());
        if (f != nullptr && x != nullptr && x->seconds > 0) c.speedup_at_max = f->seconds / x->seconds;
        out.push_back(c);
    }
    return out;
}

void random_error_inputs(const VariantsConfig& cfg, Tensor& q, Tensor& k, Tensor& v) {
    q = randn({1, cfg.error_heads, cfg.error_T, cfg.dk}, cfg.seed, 0xe0);
    k = randn({1, cfg.error_heads, cfg.error_T, cfg.dk}, cfg.seed, 0xe1);
    v = randn({1, cfg.error_heads, cfg.error_T, cfg.dk}, cfg.seed, 0xe2);
}

namespace {

double rel_error(const Tensor& a, const Tensor& ref) {
    double num = 0, den = 0;
    for (size_t n = 0; n < ref.data.size(); ++n) {
        const double d = double(a.data[n]) - ref.data[n];
        num += d * d;
        den += double(ref.data[n]) * ref.data[n];
    }
    return den > 0 ? std::sqrt(num / den) : 0.0;
}

// mean over rows of KL(p || pref), p and pref (B, H, T, T) attention rows
double mean_kl(const Tensor& p, const Tensor& pref) {
    const int64_t T = p.shape[3], rows = p.numel() / T;
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
        double kl = 0;
        for (int64_t j = 0; j < T; ++j) {
            const double a = p.data[static_cast<size_t>(r * T + j)], b = pref.data[static_cast<size_t>(r * T + j)];
            if (a > 0) kl += a * std::log(a / std::max(b, 1e-300));
        }
        sum += kl;
    }
    return rows > 0 ? sum / double(rows) : 0.0;
}

}  // namespace

std::vector<ErrorRow> variant_errors(const VariantsConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const std::string& source) {
    const int64_t B = q.shape[0], H = q.shape[1], T = q.shape[2];
    AttentionRecord rec;
    const Mask full = cfg.causal ? Mask::make_causal() : Mask::none();
    const Tensor ref = attention_reference(q, k, v, full, {}, &rec);
    const Tensor pref = rec.weights;
    std::vector<ErrorRow> rows;
    for (Variant var : cfg.variants) {
        if (var == Variant::Flash) continue;
        ErrorRow e;
        e.variant = var;
        e.source = source;
        e.pattern = pattern_of(var, cfg, T, cfg.error_window, cfg.error_global, cfg.features);
        if (!is_linear(var)) {
            AttentionRecord r;
            const Tensor out =
                attention_reference(q, k, v, mask_for(var, cfg, T, cfg.error_window, cfg.error_global), {}, &r);
            e.rel_error = rel_error(out, ref);
            e.kl = mean_kl(r.weights, pref);
        } else {
            const LinearOptions lo = linear_for(var, cfg, cfg.features);
            e.rel_error = rel_error(linear_attention(q, k, v, lo, cfg.threads), ref);
            // the rows: the explicit form with V = I (T value dims) gives A_ij / sum_j A_ij
            Tensor eye({B, H, T, T});
            for (int64_t bh = 0; bh < B * H; ++bh)
                for (int64_t j = 0; j < T; ++j) eye.data[static_cast<size_t>((bh * T + j) * T + j)] = 1.0f;
            e.kl = mean_kl(linear_attention_explicit(q, k, eye, lo), pref);
        }
        rows.push_back(e);
    }
    return rows;
}

std::vector<FavorPoint> favor_error_curve(const VariantsConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                                          double* slope) {
    const Tensor ref = attention_reference(q, k, v, cfg.causal ? Mask::make_causal() : Mask::none(), {});
    std::vector<FavorPoint> pts;
    for (int64_t m : cfg.favor_m) {
        FavorPoint p;
        p.m = m;
        for (int d = 0; d < cfg.favor_draws; ++d) {
            LinearOptions lo = linear_for(Variant::Favor, cfg, m);
            lo.draw = static_cast<uint64_t>(d);
            p.rel_error += rel_error(linear_attention(q, k, v, lo, cfg.threads), ref) / cfg.favor_draws;
        }
        pts.push_back(p);
    }
    // least squares of log(err) on log(m)
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(pts.size());
    for (const FavorPoint& p : pts) {
        const double x = std::log(double(p.m)), y = std::log(p.rel_error);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double den = n * sxx - sx * sx;
    if (slope != nullptr) *slope = den != 0 ? (n * sxy - sx * sy) / den : 0.0;
    return pts;
}

void set_variants_size(VariantsConfig& cfg, ExperimentSize size) {
    if (size == ExperimentSize::Quick) {
        cfg.lengths = {256, 1024, 4096};
        cfg.error_T = 256;
        cfg.favor_m = {16, 64, 256, 1024};
        cfg.favor_draws = 2;
        cfg.min_seconds = 0.05;
    } else if (size == ExperimentSize::Default) {
        cfg.lengths = {256, 1024, 4096, 16384};
    }
}

VariantsResult run_variants(const VariantsConfig& cfg, bool timing, const std::function<void(double)>& progress) {
    validate(cfg);
    VariantsResult r;
    if (timing) {
        r.speed = run_variant_speed(cfg, progress);
        r.crossover = crossovers(cfg, r.speed);
    }
    Tensor q, k, v;
    random_error_inputs(cfg, q, k, v);
    r.errors = variant_errors(cfg, q, k, v, fmt::format("random T={}", cfg.error_T));
    const bool has_favor = std::find(cfg.variants.begin(), cfg.variants.end(), Variant::Favor) != cfg.variants.end();
    if (has_favor && !cfg.favor_m.empty())
        for (const double scale : {1.0, cfg.favor_small_scale}) {
            FavorCurve c;
            c.input_scale = scale;
            Tensor qs = q, ks = k;
            for (auto& x : qs.data) x *= static_cast<float>(scale);
            for (auto& x : ks.data) x *= static_cast<float>(scale);
            c.points = favor_error_curve(cfg, qs, ks, v, &c.slope);
            r.favor.push_back(c);
        }
    return r;
}

double time_exponent(const std::vector<SpeedRow>& speed, Variant v) {
    const SpeedRow *a = nullptr, *b = nullptr;  // the two largest timed lengths, b the largest
    for (const SpeedRow& s : speed) {
        if (s.variant != v || !s.ok || s.seconds <= 0) continue;
        if (b == nullptr || s.T > b->T) a = b, b = &s;
        else if (s.T < b->T && (a == nullptr || s.T > a->T)) a = &s;
    }
    if (a == nullptr) return std::nan("");
    return std::log(b->seconds / a->seconds) / std::log(double(b->T) / double(a->T));
}

namespace {

std::string bytes_text(double b) { return b < 0 ? "-" : format_bytes(b); }

std::string seconds_text(double s) {
    if (s < 1e-3) return fmt::format("{:.0f} µs", s * 1e6);
    if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
    return fmt::format("{:.2f} s", s);
}

}  // namespace

std::string variants_table(const VariantsConfig& cfg, const VariantsResult& r) {
    std::string out = fmt::format(
        "Attention past T² (C42, C43): B=1 H={} Dk=Dv={}, {}, {} thread(s), seed {}\n"
        "window w={}, strided s=ceil(sqrt T){}, global-local g={} w={}, favor+ m={}\n\n",
        cfg.heads, cfg.dk, cfg.causal ? "causal" : "non-causal", cfg.threads, cfg.seed, cfg.window,
        cfg.stride > 0 ? fmt::format(" (given: {})", cfg.stride) : std::string(), cfg.global, cfg.window, cfg.features);
    if (!r.speed.empty()) {
        out += fmt::format("{:>7}  {:<13} {:>11} {:>9} {:>10} {:>12} {:>12}\n", "T", "variant", "time", "vs flash",
                           "GFLOP/s", "extra mem", "model mem");
        for (const SpeedRow& s : r.speed) {
            const SpeedRow* f = nullptr;
            for (const SpeedRow& x : r.speed)
                if (x.variant == Variant::Flash && x.T == s.T && x.ok) f = &x;
            if (!s.ok) {
                out += fmt::format("{:>7}  {:<13} failed: {}\n", s.T, variant_name(s.variant), s.error);
                continue;
            }
            out += fmt::format(
                "{:>7}  {:<13} {:>11} {:>9} {:>10} {:>12} {:>12}{}\n", s.T, variant_name(s.variant),
                seconds_text(s.seconds), f != nullptr ? fmt::format("{:.1f}x", f->seconds / s.seconds) : "-",
                s.gflops >= 0 ? fmt::format("{:.1f}", s.gflops) : "-", bytes_text(s.extra_bytes),
                bytes_text(s.model_bytes),
                s.extrapolated ? fmt::format("  (extrapolated from {} queries)", s.sampled_queries) : "");
        }
        out +=
            "\nvs flash: flash time / variant time at the same T. extra mem: measured peak RSS over the baseline\n"
            "(q, k, v allocated) less the output, in a child process; model mem: the analytic working set (linear "
            "kinds).\n";
        out += "\nCrossover (the smallest T of the list from which the variant beats full flash at every larger T):\n";
        for (const Crossover& c : r.crossover)
            out += fmt::format("  {:<13} {:>10}   speed-up at T={}: {:.1f}x\n", variant_name(c.variant),
                               c.T > 0 ? fmt::format("T >= {}", c.T) : "none",
                               *std::max_element(cfg.lengths.begin(), cfg.lengths.end()), c.speedup_at_max);
    }
    if (!r.errors.empty()) {
        out += fmt::format(
            "\nError against softmax attention (rel = ||out - softmax||/||softmax||; KL(variant row || softmax row), "
            "nats)\n");
        out += fmt::format("  {:<20} {:<13} {:<12} {:>10} {:>10}\n", "source", "variant", "pattern", "rel error", "KL");
        for (const ErrorRow& e : r.errors)
            out += fmt::format("  {:<20} {:<13} {:<12} {:>10.4f} {:>10.4f}\n", e.source, variant_name(e.variant),
                               e.pattern, e.rel_error, e.kl);
        out += "  elu+1 and cosformer approximate no softmax (they are other kernels, trained for): their\n"
               "  error says how different they are, not how well they approximate. On random inputs the\n"
               "  softmax rows are nearly flat, so the sparse kinds' error is mostly the mass they drop.\n";
    }
    for (const FavorCurve& c : r.favor) {
        out += fmt::format(
            "\nPerformer (favor+) error vs the number of random features m, q and k x {} (mean over draws):\n",
            c.input_scale);
        for (const FavorPoint& p : c.points) out += fmt::format("  m={:<6} rel error {:.4f}\n", p.m, p.rel_error);
        out += fmt::format("  fitted slope of log(error) vs log(m): {:.3f} (1/sqrt(m) is -0.5)\n", c.slope);
    }
    if (!r.favor.empty())
        out +=
            "  The estimator's variance grows as exp(|q + k|^2 / sqrt(Dk)): with N(0,1) entries at Dk = 64 no m up to\n"
            "  1024 tames it (flat curve); with smaller q, k the error falls as 1/sqrt(m).\n";
    return out;
}

std::string variants_json(const VariantsConfig& cfg, const VariantsResult& r, JsonNonFinite nonfinite) {
    nlohmann::ordered_json j;
    j["format"] = "attn-variants";
    j["version"] = 1;
    std::vector<std::string> names;
    for (Variant v : cfg.variants) names.push_back(variant_name(v));
    j["config"] = {{"lengths", cfg.lengths}, {"variants", names},          {"heads", cfg.heads},
                   {"dk", cfg.dk},           {"window", cfg.window},       {"stride", cfg.stride},
                   {"global", cfg.global},   {"features", cfg.features},   {"causal", cfg.causal},
                   {"threads", cfg.threads}, {"seed", cfg.seed},           {"error_T", cfg.error_T},
                   {"error_window", cfg.error_window}, {"error_global", cfg.error_global}};
    auto sp = nlohmann::ordered_json::array();
    for (const SpeedRow& s : r.speed)
        sp.push_back({{"variant", variant_name(s.variant)}, {"T", s.T}, {"ok", s.ok}, {"error", s.error},
                      {"seconds", s.seconds}, {"flops", s.flops}, {"gflops", s.gflops}, {"extra_bytes", s.extra_bytes},
                      {"model_bytes", s.model_bytes}, {"extrapolated", s.extrapolated},
                      {"sampled_queries", s.sampled_queries}});
    j["speed"] = sp;
    auto cr = nlohmann::ordered_json::array();
    for (const Crossover& c : r.crossover)
        cr.push_back({{"variant", variant_name(c.variant)}, {"T", c.T}, {"speedup_at_max", c.speedup_at_max}});
    j["crossover"] = cr;
    auto er = nlohmann::ordered_json::array();
    for (const ErrorRow& e : r.errors)
        er.push_back({{"variant", variant_name(e.variant)}, {"source", e.source}, {"pattern", e.pattern},
                      {"rel_error", e.rel_error}, {"kl", e.kl}});
    j["errors"] = er;
    auto fv = nlohmann::ordered_json::array();
    for (const FavorCurve& c : r.favor) {
        auto pts = nlohmann::ordered_json::array();
        for (const FavorPoint& p : c.points) pts.push_back({{"m", p.m}, {"rel_error", p.rel_error}});
        fv.push_back({{"input_scale", c.input_scale}, {"points", pts}, {"slope", c.slope}});
    }
    j["favor"] = fv;
    return json_text(j, 2, nonfinite) + "\n";
}

// Two log-log line charts: time per forward and measured extra memory against T, one
// series per variant in the order of --variants (flash dashed, as in the tables' legend).
std::string variants_svg(const VariantsConfig& cfg, const VariantsResult& r) {
    const char* colors[] = {"#000000", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
    SvgDocument svg(1000, 520, "attn variants: time and extra memory vs T, log-log");
    svg.text(
        500, 24,
        fmt::format("Attention past T²: B=1 H={} Dk={}, {}", cfg.heads, cfg.dk, cfg.causal ? "causal" : "non-causal"),
        {.font_size = 16, .bold = true, .anchor = "middle"});
    viz::LineChart time, memory;
    std::vector<double> lengths;
    for (int64_t T : cfg.lengths) lengths.push_back(static_cast<double>(T));
    time.title = "time vs T";
    time.x = {.title = "T (log)", .log = true, .ticks = lengths};
    time.y = {.title = "seconds per forward (log)", .log = true, .label = [](double v) { return seconds_text(v); }};
    memory.title = "measured extra memory vs T";
    memory.x = time.x;
    memory.y = {.title = "extra memory (log)", .log = true, .bytes = true};
    for (const Variant var : cfg.variants) {
        viz::Series st{.label = variant_name(var), .color = colors[static_cast<int>(var) % 7],
                       .dash = var == Variant::Flash ? "6 4" : "", .draw = viz::Draw::LineAndMarkers};
        viz::Series sm = st;
        for (const SpeedRow& s : r.speed)
            if (s.variant == var && s.ok) {
                if (s.seconds > 0) st.x.push_back(double(s.T)), st.y.push_back(s.seconds);
                if (s.extra_bytes > 0) sm.x.push_back(double(s.T)), sm.y.push_back(s.extra_bytes);
            }
        time.series.push_back(st);
        memory.series.push_back(sm);
    }
    viz::line_chart(svg, {20, 40, 490, 510}, time);
    viz::line_chart(svg, {510, 40, 980, 510}, memory);
    return svg.str();
}

}  // namespace attn
