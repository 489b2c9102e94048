// attn experiment NAME: the source's claims about training, measured (issue "Training
// experiments"). The experiments are in the library (attn/experiments/experiment.hpp);
// this file binds the flags, shows the progress line, prints the tables, notes and
// verdicts, and writes --json / --svg.
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>

#include <fmt/core.h>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/features.hpp"
#include "attn/experiments/experiment.hpp"
#include "attn/io/dump.hpp"
#include "command.hpp"
#include "options.hpp"
#include "progress.hpp"

namespace {

struct ExperimentOpts {
    std::string name;
    bool list = false, quick = false, full = false;
    int seeds = 3;
    uint64_t seed = 0;
    int threads = 0;
    std::string svg, store;
    attn::cli::JsonOut json;
};

std::string names_list() {
    std::string s;
    for (const auto& e : attn::experiments()) s += (s.empty() ? "" : ", ") + e.name;
    return s;
}

// A cell as text: null "-", integers as they are, fractions of columns that hold
// shares (accuracy, rows, share) as percentages, other numbers with 4 significant digits.
std::string cell_text(const nlohmann::json& v, const std::string& column) {
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    if (v.is_number()) {
        const double d = v.get<double>();
        if (!std::isfinite(d)) return d != d ? "nan" : d > 0 ? "inf" : "-inf";
        const bool share = column.find("acc") != std::string::npos || column.find("rows") != std::string::npos ||
                           column.find("share") != std::string::npos;
        if (share && d >= 0 && d <= 1) return fmt::format("{:.1f}%", 100 * d);
        if (d == std::floor(d) && std::abs(d) < 1e9) return fmt::format("{:.0f}", d);
        if (d != 0 && (std::abs(d) < 1e-3 || std::abs(d) >= 1e5)) return fmt::format("{:.2e}", d);
        return fmt::format("{:.4g}", d);
    }
    return v.dump();
}

std::string table_text(const attn::ExperimentTable& t) {
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> width(t.columns.size(), 0);
    for (size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].size();
    for (const auto& row : t.rows) {
        std::vector<std::string> r;
        for (size_t c = 0; c < t.columns.size(); ++c) {
            r.push_back(c < row.size() ? cell_text(row[c], t.columns[c]) : "");
            width[c] = std::max(width[c], r.back().size());
        }
        cells.push_back(std::move(r));
    }
    std::string out = t.title + "\n";
    auto line = [&](const std::vector<std::string>& r) {
        std::string s;
        for (size_t c = 0; c < r.size(); ++c)
            s += fmt::format("{}{:>{}}", c ? "  " : "  ", r[c], width[c]);
        return s + "\n";
    };
    out += line(t.columns);
    for (const auto& r : cells) out += line(r);
    return out;
}

// --store FILE: each seed trained on its own (what the tour judges: one verdict a seed),
// written with where it was made as stored evidence (attn-evidence JSON).
int store_evidence(const ExperimentOpts& o, const attn::ExperimentInfo& info, const attn::ExperimentConfig& cfg) {
    using namespace attn;
    if (o.store == "-")
        throw InputError("--store: give a file name (the stored runs are a file the tour reads), not -");
    cli::require_writable("--store", o.store);
    StoredEvidence ev;
    ev.experiment = info.name;
    ev.size = cfg.size;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    ev.made = {fmt::format("attn experiment {} --{} --seeds {} --seed {} --store FILE", info.name,
                           experiment_size_name(cfg.size), cfg.seeds, cfg.seed),
               cli::build_commit(), cli::compiler_name(), cpu_info().model, std::string(isa_name(isa_in_use())), date};
    fmt::print("attn experiment {}: {} size, seeds {} to {}, each trained on its own\n", info.name,
               experiment_size_name(cfg.size), cfg.seed, cfg.seed + static_cast<uint64_t>(cfg.seeds) - 1);
    for (int i = 0; i < cfg.seeds; ++i) {
        ExperimentConfig one = cfg;
        one.seeds = 1;
        one.seed = cfg.seed + static_cast<uint64_t>(i);
        cli::ProgressLine line({cli::stderr_is_tty(), {}, std::chrono::seconds(5)});
        auto progress = [&](const std::string& text) { line.show(fmt::format("seed {}: {}", one.seed, text)); };
        ExperimentResult r = info.run(one, progress);
        line.clear();
        for (const auto& v : r.verdicts)
            fmt::print("seed {}: {} {}: {}\n", one.seed, v.claim, verdict_name(v.kind), v.figures);
        ev.seeds.push_back(one.seed);
        ev.runs.push_back(std::move(r));
    }
    cli::with_option("--store", [&] {
        write_file_atomic(o.store, json_text(evidence_json(ev), 2, JsonNonFinite::string) + "\n");
    });
    fmt::print("wrote {} (attn-evidence JSON: {} runs, made on {} with the {} kernels)\n", o.store, ev.runs.size(),
               ev.made.processor, ev.made.kernels);
    return 0;
}

int run_experiment_cmd(const ExperimentOpts& o) {
    using namespace attn;
    if (o.list && o.json.given()) {  // the same list as JSON: attn-experiment-list
        cli::require_json_writable(o.json);
        nlohmann::json list = nlohmann::json::array();
        for (const auto& e : experiments())
            list.push_back({{"name", e.name}, {"claims", e.claims}, {"summary", e.summary}});
        cli::write_json(o.json, nlohmann::json{{"experiments", list}}, "attn-experiment-list", 1);
        return 0;
    }
    if (o.list) {
        for (const auto& e : experiments()) {
            std::string claims;
            for (const auto& c : e.claims) claims += (claims.empty() ? "" : ", ") + c;
            fmt::print("{:<10} {:<20} {}\n", e.name, claims, e.summary);
        }
        return 0;
    }
    if (o.name.empty()) throw InputError("NAME: give an experiment (" + names_list() + ") or --list");
    const ExperimentInfo* info = find_experiment(o.name);
    if (info == nullptr) throw InputError("NAME: unknown experiment '" + o.name + "' (one of " + names_list() + ")");
    ExperimentConfig cfg;
    cfg.size = o.quick ? ExperimentSize::Quick : o.full ? ExperimentSize::Full : ExperimentSize::Default;
    cfg.seeds = o.seeds;
    cfg.seed = o.seed;
    cfg.threads = resolve_threads(o.threads);
    cli::require_json_writable(o.json);
    if (!o.svg.empty()) cli::require_writable("--svg", o.svg);
    const cli::TextOut text({o.json.claim(), {"--svg -", o.svg == "-"}});

    if (!o.store.empty()) return store_evidence(o, *info, cfg);

    ExperimentResult r;
    {
        // a line that redraws on a terminal; in a log, a plain line every 5 s
        cli::ProgressLine line({cli::stderr_is_tty(), {}, std::chrono::seconds(5)});
        const auto t0 = std::chrono::steady_clock::now();
        auto progress = [&](const std::string& text) { line.show(text); };
        r = info->run(cfg, progress);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        line.clear();
    }
    if (o.json.given()) cli::write_json(o.json, experiment_json(r, cfg), "attn-experiment", 1);
    if (!o.svg.empty()) cli::with_option("--svg", [&] { write_file_atomic(o.svg, experiment_svg(r)); });

    std::string claims;
    for (const auto& c : info->claims) claims += (claims.empty() ? "" : ", ") + c;
    text.print("attn experiment {} ({}): {} size, {} seed{} from {}, {} thread{}, {:.1f} s\n\n", r.name, claims,
               experiment_size_name(cfg.size), cfg.seeds, cfg.seeds == 1 ? "" : "s", cfg.seed, cfg.threads,
               cfg.threads == 1 ? "" : "s", r.seconds);
    for (const auto& t : r.tables) text.print("{}\n", table_text(t));
    for (const auto& n : r.notes) text.print("note: {}\n", n);
    if (!r.notes.empty()) text.print("\n");
    text.print("{}", verdict_lines(r));
    if (o.json.given() && !o.json.to_stdout()) text.print("wrote {} (attn-experiment JSON)\n", o.json.path());
    if (!o.svg.empty() && o.svg != "-") text.print("wrote {} (SVG)\n", o.svg);
    return 0;
}

attn::cli::Command experiment_cmd{
    "experiment", "Experiments: the source's claims measured over seeds (training runs, q·k statistics, variants)", 65,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto o = std::make_shared<ExperimentOpts>();
        sub.footer(
            "Each experiment trains tiny models (variance and variants: draws random inputs) over several seeds and\n"
            "prints a table, notes and one verdict per claim of the source (supported / qualified / not supported)\n"
            "with the figures it rests on.\n"
            "Sizes: --quick (seconds, the tests), the default (minutes: docs/experiments/ records what each\n"
            "took, and on which machine), --full (a closer look).\n"
            "Same --seed and --seeds: the same numbers at any --threads. attn experiment --list names them.");
        sub.add_option("NAME", o->name, "The experiment (attn experiment --list)");
        auto* list = sub.add_flag("--list", o->list,
                                  "List the experiments, their claim ids and what they measure (with --json: as JSON)");
        auto* q = sub.add_flag("--quick", o->quick, "The quick size (a few seconds; what the tests run)");
        auto* f = sub.add_flag("--full", o->full, "The full size (minutes)");
        q->excludes(f);
        list->excludes(q)->excludes(f);
        sub.add_option("--seeds", o->seeds, "Runs per cell, seeds --seed, --seed + 1, ...")
            ->capture_default_str()
            ->check(attn::cli::integer_in(1, 64));
        sub.add_option("--seed", o->seed, "First seed")->capture_default_str()->check(attn::cli::seed_validator());
        sub.add_option("--threads", o->threads, "Worker threads (0 = every core)")
            ->capture_default_str()
            ->check(attn::cli::integer_in(0, 1024));
        auto* json = attn::cli::add_json(sub, o->json, "attn-experiment");
        sub.add_option("--svg", o->svg, "Write the curves as SVG to FILE (- for stdout)");
        sub.add_option("--store,-o,--output", o->store,
                       "Train each seed on its own and write the runs with the command, commit, compiler, processor, "
                       "kernels and date to FILE: stored evidence the tour cites (data/evidence/NAME-SIZE.json)")
            ->excludes(sub.get_option("--svg"))
            ->excludes(json)
            ->excludes(list);
        return [o] { return run_experiment_cmd(*o); };
    }};

}  // namespace
