// attn/experiments/experiment.hpp: `attn experiment NAME`, the source's claims about
// training turned into measurements (issue "Training experiments").
//
// An experiment trains tiny models (attn/train) over several seeds and reports
// tables, curves and one verdict per claim it tests, with the figures the verdict
// rests on. Every experiment has three sizes: Quick (the test suite and the tour,
// a few seconds), Default (<= 60 s on 2 threads) and Full (a closer look).
//
// Each experiment lives in its own source file lib/experiments/src/exp_<name>.cpp
// and is listed once in the registry (experiments()), in the order.
// Results are deterministic for a (seed, seeds, size): same numbers at any thread
// count (the trainer's guarantee), only the times differ.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

enum class ExperimentSize { Quick, Default, Full };
const char* experiment_size_name(ExperimentSize s);  // "quick", "default", "full"

struct ExperimentConfig {
    ExperimentSize size = ExperimentSize::Default;
    int seeds = 3;          // independent runs per cell; seeds seed, seed + 1, ...
    uint64_t seed = 0;
    int threads = 2;        // 0: every core
};

// Inconclusive: the measurement cannot tell (a difference below what it resolves, a figure
// that came out NaN): an absence of evidence, never evidence against the claim.
enum class VerdictKind { Supported, Qualified, NotSupported, Inconclusive };
// "supported", "qualified", "not supported", "inconclusive"
const char* verdict_name(VerdictKind v);

// One claim of CLAIMS.md, judged by the numbers.
// A printed table; cells keep numbers as numbers (JSON) and null for "not applicable".
struct ExperimentTable {
    std::string title;
    std::vector<std::string> columns;
    std::vector<std::vector<nlohmann::json>> rows;
    // The title as a fmt template, "{}" for each of title_args (numbers, formatted), so
    // the tour translates the words and never the numbers.
    std::string title_template{};
    std::vector<std::string> title_args{};
};

struct Verdict {
    std::string claim;      // "C13"
    std::string statement;  // the claim in a few words ("unscaled scores are almost untrainable")
    VerdictKind kind = VerdictKind::Qualified;
    std::string figures;    // the measured numbers the verdict rests on, one line
    // The readable form the tour prints (empty task: the tour prints `figures`):
    //   task     one sentence naming the task and the metric, no figures (the catalogue
    //            translates it whole);
    //   evidence a small table, one condition per row: the metric, and whether the target
    //            was reached (string cells are words the catalogue translates);
    //   plain    the verdict in plain words: a fmt template, "{}" for each of plain_args
    //            (numbers, formatted), so a translation reorders the words, never the numbers.
    std::string task{};
    ExperimentTable evidence{};
    std::string plain{};
    std::vector<std::string> plain_args{};
};

// One line of the SVG; lines with the same panel share a plot.
struct ExperimentCurve {
    std::string panel;      // "eval accuracy"
    std::string label;      // legend ("1/sqrt(d_k), adam")
    std::string x_label;    // "step"
    std::vector<double> x, y;
};

struct ExperimentResult {
    std::string name;
    std::vector<ExperimentTable> tables;
    std::vector<Verdict> verdicts;
    std::vector<ExperimentCurve> curves;
    std::vector<std::string> notes;  // caveats, e.g. what differs between Adam and SGD
    double seconds = 0;              // wall time of the run
};

// One status line while the experiment runs ("scale: cell 3/24, seed 1, step 200, acc 0.41").
using ExperimentProgress = std::function<void(const std::string& line)>;

struct ExperimentInfo {
    std::string name;                 // "scale"
    std::vector<std::string> claims;  // {"C13", "C18", "C20", "C19"}
    std::string summary;              // one line for `attn experiment --list`
    std::function<ExperimentResult(const ExperimentConfig&, const ExperimentProgress&)> run;
};

// One factory per experiment, each in lib/experiments/src/exp_<name>.cpp.
ExperimentInfo experiment_scale();      // C13, C18, C20, C19
ExperimentInfo experiment_lock_in();    // C13
ExperimentInfo experiment_dk_floor();   // C10
ExperimentInfo experiment_init();       // C36, C9
ExperimentInfo experiment_overfit();    // C37
ExperimentInfo experiment_dropout();    // C38
ExperimentInfo experiment_heads();      // C32, C33
ExperimentInfo experiment_distance();   // C1, C4
ExperimentInfo experiment_stability();  // C39
ExperimentInfo experiment_memory();     // C40
ExperimentInfo experiment_length();     // C44, C42, C43 (issue 13)
ExperimentInfo experiment_variance();   // C14, C15, C16, C17 (also `attn variance`)
ExperimentInfo experiment_variants();   // C42, C43 (also `attn variants`)

// The registry, in the order (scale, lock-in, dk-floor, init, overfit,
// dropout, heads, distance, stability, memory), then length (issue 13), then the two
// that measure random inputs rather than training (variance, variants). Whatever counts
// or lists the experiments reads it here.
const std::vector<ExperimentInfo>& experiments();
// nullptr when no experiment has that name.
const ExperimentInfo* find_experiment(const std::string& name);

// One line a verdict, "C14 supported: the statement. the figures\n", as `attn experiment`
// prints them (and `attn variance`, `attn variants` under their tables); empty for none.
std::string verdict_lines(const ExperimentResult& r);

// format "attn-experiment", version 1: name, size, seeds, seed, threads, tables,
// verdicts (claim, statement, verdict, figures; and task, evidence, plain,
// plain_args for a readable verdict), curves, notes, seconds.
nlohmann::json experiment_json(const ExperimentResult& r, const ExperimentConfig& cfg);
// The name, tables and verdicts of an "attn-experiment" document back (curves and
// notes are not read). Throws attn::InputError naming the field that is missing or
// of the wrong kind.
ExperimentResult experiment_from_json(const nlohmann::json& j);

// Stored evidence: an experiment run once per seed at one size, kept in data/evidence/
// with where it was made, so the tour can cite a run too long to train while it reads
// ("attn experiment heads --full --seeds 5 --store FILE" makes one).
struct EvidenceProvenance {
    std::string command;    // the command line that made it
    std::string commit;     // attn's commit
    std::string compiler;   // "GCC 12.2.0"
    std::string processor;  // CPUID's brand string
    std::string kernels;    // the kernel family in use ("avx512")
    std::string date;       // UTC, ISO 8601
};
struct StoredEvidence {
    std::string experiment;              // "heads"
    ExperimentSize size = ExperimentSize::Full;
    std::vector<uint64_t> seeds;         // runs[i] was trained with seed seeds[i] alone
    std::vector<ExperimentResult> runs;
    EvidenceProvenance made;
};
// format "attn-evidence", version 1: experiment, size, seeds, made {command, commit,
// compiler, processor, kernels, date}, runs (one "attn-experiment" document a seed,
// without its curves, threads and seconds).
nlohmann::json evidence_json(const StoredEvidence& e);
// Reads it back, checking every field (one run per seed, each of that experiment).
// Throws attn::InputError naming the field.
StoredEvidence evidence_from_json(const nlohmann::json& j);
// The curves, one plot per panel (attn/viz/svg.hpp).
std::string experiment_svg(const ExperimentResult& r);

}  // namespace attn
