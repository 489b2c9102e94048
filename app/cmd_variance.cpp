// attn variance: the experiment behind "q·k has std √Dk" (C14-C17), with live numbers.
// Draws q and k, takes q·k for each Dk, and shows the spread and what softmax
// does with rows of such scores, unscaled and scaled by 1/√Dk. The work is in
// the library (attn/experiments/variance.hpp); this file binds flags and prints. The
// verdicts under the table are `attn experiment variance`'s (variance_result), judged on
// this run; --json stays the "attn-variance" document it has always been.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>

#include <fmt/core.h>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/experiments/variance.hpp"
#include "command.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "parse.hpp"

namespace {

struct VarianceOpts {
    attn::VarianceConfig cfg;  // all but d_k, which comes from `dk`
    std::string dk = "1,16,64,512";
    bool csv = false, yes = false;
    attn::cli::JsonOut json;
    std::string svg;
};

// The multiply-adds of a run above which it needs --yes: samples x Dk for each
// Dk (each q.k), plus 2 Dk^2 per sample with --source projected (the two
// projections). The default run is 6e7; 1e11 is minutes on one core.
constexpr double kVarianceBudget = 1e11;

int run_variance_cmd(const VarianceOpts& o) {
    // ---- validate everything before drawing anything (CLI11 checked the single numbers)
    attn::VarianceConfig cfg = o.cfg;
    cfg.d_k = attn::cli::parse_int_list("--d-k", o.dk);
    const int64_t max_dk = attn::variance_max_dk(cfg.source);
    for (int64_t d : cfg.d_k)
        if (d > max_dk)
            throw attn::InputError(fmt::format("--d-k: Dk must be at most {} for source {}, got {}", max_dk,
                                               attn::variance_source_name(cfg.source), d));
    if (cfg.samples < cfg.keys)
        throw attn::InputError(fmt::format("--samples: must be at least --keys ({}) so one softmax row forms, got {}",
                                           cfg.keys, cfg.samples));
    double work = 0;
    for (int64_t d : cfg.d_k)
        work += static_cast<double>(cfg.samples) * static_cast<double>(d) *
                (cfg.source == attn::VarianceSource::Projected ? 1.0 + 2.0 * static_cast<double>(d) : 1.0);
    if (work > kVarianceBudget && !o.yes)
        throw attn::InputError(fmt::format("--samples: the run would take about {:.1e} multiply-adds, above the budget "
                                           "of {:.0e} (see --help); lower --samples or --d-k, or add --yes",
                                           work, kVarianceBudget));
    if (!o.svg.empty()) attn::cli::require_writable("--svg", o.svg);
    attn::cli::require_json_writable(o.json);
    // JSON or CSV replace the table on stdout; --svg - takes stdout and sends the table to stderr.
    const attn::cli::TextOut text({o.json.claim(), {"--csv", o.csv}, {"--svg -", o.svg == "-"}});

    std::vector<attn::VarianceRow> rows;
    {
        // "attn variance: 42% (about 12 s left)", on a terminal once the run has taken a second
        attn::cli::ProgressLine progress({attn::cli::stderr_is_tty(), std::chrono::seconds(1), {}, false});
        const auto t0 = std::chrono::steady_clock::now();
        rows = attn::run_variance(cfg, [&](double f) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            progress.show(
                f > 0 ? fmt::format("attn variance: {:3.0f}% (about {:.0f} s left)", 100 * f, elapsed * (1 - f) / f)
                      : fmt::format("attn variance: {:3.0f}%", 100 * f));
        });
    }
    if (!o.svg.empty())
        attn::cli::with_option("--svg", [&] { attn::write_file_atomic(o.svg, attn::variance_svg(cfg, rows)); });
    if (o.json.given()) attn::cli::write_json_text(o.json, attn::variance_json(cfg, rows, o.json.nonfinite));
    if (o.json.to_stdout()) return 0;
    std::string report = o.csv ? attn::variance_csv(rows) : attn::variance_table(cfg, rows);
    // the verdicts of `attn experiment variance`, judged on this run, as it prints them
    const std::string verdicts = o.csv ? "" : attn::verdict_lines(attn::variance_result(cfg, {rows}));
    if (!verdicts.empty()) report += "\n" + verdicts;
    std::fwrite(report.data(), 1, report.size(), o.csv ? stdout : text.file());
    return 0;
}

attn::cli::Command variance_cmd{
    "variance", "Why scale by 1/√Dk: the std of q·k, softmax saturation and gradient vs Dk (C14-C17)", 40,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto o = std::make_shared<VarianceOpts>();
        sub.footer(
            "Draws q and k, takes q·k for each Dk and reports mean, std (theory √Dk), range, percentiles, and\n"
            "for rows of T scores: softmax max weight, normalised entropy, one-hot fraction and the norm of\n"
            "the softmax Jacobian, unscaled and scaled by 1/√Dk. Same --seed, same numbers at any --threads.\n" +
            fmt::format(
                "Budget: a run of more than {:.0e} multiply-adds (--samples x each --d-k, and 2 Dk^2 more per sample\n"
                "with --source projected) is refused unless --yes is given.\n",
                kVarianceBudget));
        attn::VarianceConfig& cfg = o->cfg;
        sub.add_option("--d-k", o->dk, "Comma-separated list of Dk values")->capture_default_str();
        attn::cli::deprecated_alias(sub, "--dk", "--d-k", o->dk);
        sub.add_option("--samples", cfg.samples, "Dot products per Dk")
            ->capture_default_str()
            ->check(attn::cli::integer_in(1, attn::kVarianceMaxSamples));
        sub.add_option("--keys", cfg.keys, "T: scores per softmax row (>= 2)")
            ->capture_default_str()
            ->check(attn::cli::integer_in(2, attn::kVarianceMaxKeys));
        sub.add_option("--source", cfg.source,
                       "normal: N(0,1); uniform: U(-√3,√3); projected: nn.Linear(Dk,Dk) torch init of x ~ N(0,I)")
            ->default_str(attn::variance_source_name(cfg.source))
            ->transform(attn::cli::one_of(
                {attn::VarianceSource::Normal, attn::VarianceSource::Uniform, attn::VarianceSource::Projected},
                attn::variance_source_name));
        sub.add_option("--seed", cfg.seed, "Random seed")->capture_default_str()->check(attn::cli::seed_validator());
        sub.add_option("--threads", cfg.threads, "Worker threads (0 = every core)")
            ->capture_default_str()
            ->check(attn::cli::integer_in(0, attn::kVarianceMaxThreads));
        auto* j = attn::cli::add_json(sub, o->json, "attn-variance");
        auto* c = sub.add_flag("--csv", o->csv, "Print CSV");
        j->excludes(c);
        sub.add_option("--svg", o->svg,
                       "Also write a plot (std vs Dk, max weight vs Dk) to this SVG file (- for stdout: the table goes "
                       "to stderr)");
        sub.add_flag("--yes", o->yes,
                     fmt::format("Run even above the budget of {:.0e} multiply-adds", kVarianceBudget));
        return [o] { return run_variance_cmd(*o); };
    }};

}  // namespace
