// attn variants: attention past T² (C42, C43): sparse masks in the tiled kernel and
// linear attention, for time, memory and error against softmax attention, on random
// inputs and on MiniLM's heads over real text. The work is in the library
// (attn/experiments/variants.hpp, run_variants: the code `attn experiment variants` runs);
// this file binds flags, loads the model for the MiniLM rows and prints the table, then the
// registry's verdicts on this run (variants_result). --json stays the "attn-variants" document.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include <fmt/core.h>

#include "attn/core/errors.hpp"
#include "attn/experiments/variants.hpp"
#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/tokenizer.hpp"
#include "command.hpp"
#include "memory.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"

namespace {

using namespace attn;
using namespace attn::cli;

struct VariantsOpts {
    VariantsConfig cfg;
    std::string t, variants, favor_m;
    bool quick = false, no_speed = false, no_model = false, yes = false;
    JsonOut json;
    std::string svg, model, corpus;  // corpus: empty is data/macbeth.txt where the data files are
    int64_t corpus_chars = 2400;
};

std::vector<Variant> parse_variants(const std::string& text) {
    std::vector<Variant> out;
    for (const std::string& w : parse_word_list("--variants", text)) {
        bool found = false;
        for (Variant v : all_variants())
            if (w == variant_name(v)) {
                if (std::ranges::find(out, v) != out.end())
                    throw InputError(fmt::format("--variants: '{}' is listed twice", w));
                out.push_back(v);
                found = true;
            }
        if (!found) {
            std::string names;
            for (Variant v : all_variants()) names += fmt::format("{}{}", names.empty() ? "" : ", ", variant_name(v));
            throw InputError(fmt::format("--variants: every item must be one of {}, got '{}'", names, w));
        }
    }
    return out;
}

// MiniLM's per-layer Q, K, V over the first `chars` characters of the corpus; the error
// rows are averaged over the layers. Returns false (and says why on `why`) when the
// model or the corpus is not there.
bool minilm_errors(const VariantsOpts& o, const VariantsConfig& cfg, const std::optional<std::string>& corpus,
                   std::vector<ErrorRow>& rows, std::string& why) {
    if (!corpus) {
        why = fmt::format("no corpus at {} (--corpus)", o.corpus.empty() ? "data/macbeth.txt" : o.corpus);
        return false;
    }
    const std::string text = corpus->substr(0, static_cast<size_t>(o.corpus_chars));
    ModelFiles files;
    try {
        files = locate_model(o.model.empty() ? default_model_dir() : o.model);
    } catch (const InputError& e) {
        why = e.what();
        return false;
    }
    const BertConfig bc = read_bert_config(files);
    const WordPieceTokenizer tok = load_tokenizer(files, bc);
    const Encoding enc = tok.encode(text);  // cut to the model's maximum length
    const BertModel model = BertModel::load(files);
    BertOptions bo;
    bo.record_attention = false;
    bo.record_qkv = true;
    bo.threads = cfg.threads;
    const BertOutput out = model.forward({enc.ids}, bo);
    const int64_t L = static_cast<int64_t>(out.queries.size());
    std::vector<ErrorRow> sum;
    for (int64_t l = 0; l < L; ++l) {
        const auto r = variant_errors(cfg, out.queries[static_cast<size_t>(l)], out.keys[static_cast<size_t>(l)],
                                      out.values[static_cast<size_t>(l)], "");
        if (sum.empty()) sum = r;
        else
            for (size_t i = 0; i < r.size(); ++i) {
                sum[i].rel_error += r[i].rel_error;
                sum[i].kl += r[i].kl;
            }
    }
    for (ErrorRow& e : sum) {
        e.rel_error /= static_cast<double>(L);
        e.kl /= static_cast<double>(L);
        e.source = fmt::format("MiniLM T={} ({} layers)", enc.ids.size(), L);
        rows.push_back(e);
    }
    return true;
}

// The timing runs' work (multiply-adds counted as 2 FLOPs, an exponential as
// kFlopsPerExp) above which they need --yes: 2e12 is a few minutes on two cores.
constexpr double kVariantsBudget = 2e12;

// Refuses, from the sizes alone, timing runs whose inputs cannot fit in memory, or whose work
// exceeds kVariantsBudget without --yes. Each run (one T, one variant) holds q, k, v and the output,
// 16 H T Dk bytes, in a child; it repeats up to 20 times until cfg.min_seconds.
void check_budget(const VariantsOpts& o) {
    const VariantsConfig& c = o.cfg;
    const double H = static_cast<double>(c.heads), Dk = static_cast<double>(c.dk);
    double work = 0, peak = 0;
    int64_t peak_T = 0;
    for (const int64_t T : c.lengths) {
        const double t = static_cast<double>(T);
        if (16.0 * H * t * Dk > peak) peak = 16.0 * H * t * Dk, peak_T = T;
        for (const Variant v : c.variants) {
            // pairs (query, key) a softmax variant scores, or the linear variants' feature width
            const double sampled = t * t > c.flash_full_limit ? std::min(t, double(c.flash_sample_queries)) : t;
            const double stride = c.stride > 0 ? double(c.stride) : std::ceil(std::sqrt(t));
            double pairs = 0, feat = 0;
            switch (v) {
                case Variant::Flash: pairs = sampled * t; break;
                case Variant::Window: pairs = t * std::min(t, double(c.window + 1)); break;
                case Variant::Strided: pairs = sampled * std::min(t, 2.0 * stride + t / stride); break;
                case Variant::GlobalLocal: pairs = t * std::min(t, double(c.window + 1 + 2 * c.global)); break;
                case Variant::Favor: feat = double(c.features); break;
                default: feat = Dk; break;
            }
            work += H * (pairs * (4.0 * Dk + kFlopsPerExp) + t * feat * (4.0 * Dk + kFlopsPerExp));
        }
    }
    // the work first: it does not depend on the machine
    if (work > kVariantsBudget && !o.yes)
        throw InputError(
            fmt::format("--seq: the timing runs would take at least {:.1e} FLOPs (exponentials counted as {:g}), "
                        "above the budget of {:.0e}; lower --seq, --heads or --d-k, add --no-speed, or add --yes",
                        work, kFlopsPerExp, kVariantsBudget));
    require_fits_in_memory(
        "--seq", kProgramBytes + peak,
        fmt::format("q, k, v and the output of the timing run at T={}, H={}, Dk={}", peak_T, c.heads, c.dk));
}

int run_variants_cmd(VariantsOpts& o) {
    VariantsConfig& cfg = o.cfg;
    if (o.quick) set_variants_size(cfg, ExperimentSize::Quick);
    if (!o.t.empty()) cfg.lengths = parse_int_list("--seq", o.t, 1, 1 << 22);
    if (!o.favor_m.empty()) cfg.favor_m = parse_int_list("--favor-m", o.favor_m, 1, 1 << 16);
    if (!o.variants.empty()) cfg.variants = parse_variants(o.variants);
    with_option("--seq", [&] { validate(cfg); });
    if (!o.svg.empty()) require_writable("--svg", o.svg);
    require_json_writable(o.json);
    if (!o.no_speed) check_budget(o);
    // The corpus is read before any work: a regular file, or a one-line refusal (a FIFO, a folder or a
    // device is never read); a missing one skips the MiniLM rows with a note.
    std::optional<std::string> corpus;
    const std::string corpus_path = o.corpus.empty() ? find_data("macbeth.txt").value_or("data/macbeth.txt") : o.corpus;
    if (!o.no_model && ::access(corpus_path.c_str(), F_OK) == 0)
        corpus = with_option("--corpus", [&] { return read_file(corpus_path); });
    const TextOut text({o.json.claim(), {"--svg -", o.svg == "-"}});

    VariantsResult r;
    {
        ProgressLine line;
        r = run_variants(cfg, !o.no_speed, [&](double f) {
            line.show("attn variants: timing", static_cast<int64_t>(std::lround(100 * f)), 100, "%");
        });
        line.clear();
    }
    std::string note;
    if (!o.no_model && !minilm_errors(o, cfg, corpus, r.errors, note)) note = "MiniLM rows skipped: " + note;

    if (!o.svg.empty()) with_option("--svg", [&] { write_file_atomic(o.svg, variants_svg(cfg, r)); });
    if (o.json.given()) write_json_text(o.json, variants_json(cfg, r, o.json.nonfinite));
    if (!o.json.to_stdout()) {  // the table, then `attn experiment variants`' verdicts on this run
        std::string s = variants_table(cfg, r);
        const std::string verdicts = verdict_lines(variants_result(cfg, r));
        if (!verdicts.empty()) s += "\n" + verdicts;
        std::fwrite(s.data(), 1, s.size(), text.file());
    }
    if (!note.empty()) fmt::print(stderr, "attn variants: {}\n", note);
    // a timing run that failed (its child ran out of memory, or crashed) is in the table; the exit says so too
    const auto failed = std::ranges::count_if(r.speed, [](const SpeedRow& s) { return !s.ok; });
    if (failed > 0) {
        fmt::print(stderr, "attn: error: {} of {} timing runs failed (see the table)\n", failed, r.speed.size());
        return 1;
    }
    return 0;
}

attn::cli::Command variants_cmd{
    "variants", "Attention past T²: sparse windows and linear attention, time, memory, error vs softmax (C42, C43)", 45,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto o = std::make_shared<VariantsOpts>();
        sub.footer(
            "Times each variant's forward (B=1, random N(0,1) q, k, v) in a child process and measures its extra\n"
            "peak memory; full flash and strided above T=4096 are timed on 1024 queries and scaled (the table says "
            "so).\n"
            "Then the error against softmax attention on random inputs and on MiniLM's heads over the first\n"
            "characters of --corpus (skipped with a note when the model is absent), and Performer's error vs m.\n"
            "Variants: flash, window, strided, global-local, elu+1, favor+, cosformer.");
        VariantsConfig& c = o->cfg;
        sub.add_option("--seq,-T", o->t, "Comma-separated sequence lengths (default 256,1024,4096,16384,65536)");
        deprecated_alias(sub, "--t", "--seq", o->t);
        sub.add_flag("--quick", o->quick, "T in 256,1024,4096, smaller error runs");
        sub.add_option("--variants", o->variants, "Comma-separated subset of the variants (default: all)");
        sub.add_option("--heads,-H", c.heads, "Heads H")->capture_default_str()->check(integer_in(1, 256));
        sub.add_option("--d-k", c.dk, "Dk = Dv")->capture_default_str()->check(integer_in(1, 1024));
        deprecated_alias(sub, "--dk", "--d-k", c.dk)->check(integer_in(1, 1024));
        sub.add_option("--window", c.window, "window and global-local: width w (timing)")
            ->capture_default_str()
            ->check(integer_in(1));
        sub.add_option("--stride", c.stride, "strided: s (0: ceil(sqrt(T)))")
            ->capture_default_str()
            ->check(integer_in(0));
        sub.add_option("--global", c.global, "global-local: global tokens g")
            ->capture_default_str()
            ->check(integer_in(0));
        sub.add_option("--features", c.features, "favor+: random features m")
            ->capture_default_str()
            ->check(integer_in(1, 1 << 16));
        sub.add_flag("--causal", c.causal, "Causal forms (masks with j <= i, prefix-sum linear attention)");
        sub.add_option("--error-t", c.error_T, "T of the random-input error rows")
            ->capture_default_str()
            ->check(integer_in(2, 4096));
        sub.add_option("--error-window", c.error_window, "window width of the sparse error rows")
            ->capture_default_str()
            ->check(integer_in(1));
        sub.add_option("--favor-m", o->favor_m, "Performer feature counts for the error curve (default 16,...,1024)");
        sub.add_option("--threads", c.threads, "Worker threads (0 = every core)")
            ->capture_default_str()
            ->check(integer_in(0, 1024));
        c.seed = 0;  // the one default of every command (docs/cli.md)
        sub.add_option("--seed", c.seed, "Random seed")->capture_default_str()->check(seed_validator());
        sub.add_flag("--no-speed", o->no_speed, "Skip the timing, report the errors only");
        sub.add_flag("--yes", o->yes, "Time even when the runs would exceed the work budget (2e12 FLOPs)");
        sub.add_flag("--no-model", o->no_model, "Skip the MiniLM rows");
        sub.add_option("--model", o->model,
                       "model folder (default: $ATTN_MODEL_DIR, else data/models/all-MiniLM-L6-v2)");
        sub.add_option("--corpus", o->corpus,
                       "text for the MiniLM rows (default: data/macbeth.txt, found as every data file is)");
        add_json(sub, o->json, "attn-variants");
        sub.add_option("--svg", o->svg, "Also write time and memory vs T (log-log) to this SVG file (- for stdout)");
        return [o] { return run_variants_cmd(*o); };
    }};

}  // namespace
