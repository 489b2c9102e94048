// `attn train`: train a tiny Transformer on a toy task and watch the loss fall.
// The task (attn/train/tasks.hpp), the model (attn/nn/trainable_stack.hpp) and the loop
// (attn/train/trainer.hpp) are the library's; this file binds flags, checks
// them all before the first step, and shows the run: a progress line, the
// curve as a table and a sparkline, an SVG plot, a JSON record, the per-head
// attention entropies, a checkpoint, an attn-dump of the trained attention.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <functional>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"
#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/guards.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/train/induction.hpp"
#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/trainer.hpp"
#include "attn/viz/chart.hpp"
#include "attn/viz/svg.hpp"
#include "command.hpp"
#include "export_gpt2.hpp"
#include "html_page.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"
#include "train_induction.hpp"

namespace attn::cli {
namespace {

constexpr int64_t kMaxBatch = 65536;
constexpr int64_t kMaxSteps = 100000000;
constexpr int64_t kMaxWidth = 65536;  // d_model, d_k, d_v, d_ff
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kDumpRows = 4;      // batch rows in --dump (the first rows of eval batch 0)

enum class Arch { Task, Decoder, Encoder };
const char* arch_name(Arch a) { return a == Arch::Task ? "task" : a == Arch::Decoder ? "decoder" : "encoder"; }

struct TrainOpts {
    std::string task, corpus, load, save, svg, dump, export_gpt2;
    JsonOut json;
    int64_t seq = 0, symbols = 16, distance = 4, queries = 1;
    int64_t layers = 2, d_model = 64, heads = 4, d_k = 0, d_v = 0, d_ff = 0;
    std::string scale = "sqrt", init = "torch";
    double dropout = 0, qk_gain = 1, emb_std = 1;
    PosKind pos = PosKind::Learned;
    Activation act = Activation::Gelu;
    Arch arch = Arch::Task;
    TrainConfig tc;
    int64_t layer = -1;  // --dump: which layer is "weights" (-1: the last)
    HtmlOpts html;       // --html: the trained attention on the --dump rows as a page
    bool list_tasks = false, ascii = false, quiet = false;
    bool attention_only = false;                 // --attention-only (task induction: always)
    InductionObserver* induction = nullptr;      // task induction: scores at every evaluation
    // given on the command line (the checkpoint's values are taken otherwise)
    std::map<std::string, bool> given;
};

// data/macbeth.txt, found where every data file is (attn/io/data_files.hpp); the
// relative name when none has it (the refusal then names it).
std::string default_corpus() { return find_data("macbeth.txt").value_or("data/macbeth.txt"); }

// ---- Ctrl-C: the first SIGINT asks the loop to stop after the step in progress
// (SA_RESETHAND puts the default action back, so a second one ends attn at once).
// The handler is removed before any file is written, so write_file_atomic's own
// handler (which removes its temp file on INT, TERM, HUP) installs as usual.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_sigint(int) { g_stop.store(true); }

class StopOnSigint {
public:
    StopOnSigint() {
        struct sigaction old {};
        if (::sigaction(SIGINT, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;  // ignored: leave it so
        struct sigaction sa {};
        sa.sa_handler = on_sigint;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        installed_ = ::sigaction(SIGINT, &sa, nullptr) == 0;
    }
    ~StopOnSigint() { release(); }
    void release() {
        if (!installed_) return;
        struct sigaction cur {};
        if (::sigaction(SIGINT, nullptr, &cur) == 0 && cur.sa_handler == on_sigint) {
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            ::sigaction(SIGINT, &dfl, nullptr);
        }
        installed_ = false;
    }

private:
    bool installed_ = false;
};

// ---- text output

std::string pct(double f) { return fmt::format("{:.1f}%", 100 * f); }


// Unicode block sparkline, or ASCII when asked (--ascii), when TERM is dumb, or
// when the locale names a character set other than UTF-8.
bool unicode_ok(bool ascii_flag) {
    if (ascii_flag) return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::string(term) == "dumb") return false;
    for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* v = std::getenv(var);
        if (v == nullptr || v[0] == '\0') continue;
        std::string s(v);
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
        return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
    }
    return true;
}

// Means of `v` over at most `cols` equal buckets.
std::vector<double> buckets(const std::vector<float>& v, size_t cols) {
    std::vector<double> out;
    if (v.empty()) return out;
    const size_t n = std::min(cols, v.size());
    for (size_t c = 0; c < n; ++c) {
        const size_t lo = c * v.size() / n, hi = (c + 1) * v.size() / n;
        double s = 0;
        size_t k = 0;
        for (size_t i = lo; i < hi; ++i)
            if (std::isfinite(v[i])) {
                s += v[i];
                ++k;
            }
        out.push_back(k ? s / static_cast<double>(k) : std::nan(""));
    }
    return out;
}

// One character per value: 8 levels between the smallest and the largest.
std::string sparkline(const std::vector<double>& v, bool unicode) {
    static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static constexpr char kAscii[] = "_.-:=+*#";
    double lo = INFINITY, hi = -INFINITY;
    for (double x : v)
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    std::string s;
    for (double x : v) {
        if (!std::isfinite(x)) {
            s += unicode ? " " : "?";
            continue;
        }
        const int level = hi > lo ? std::clamp(static_cast<int>((x - lo) / (hi - lo) * 7.999), 0, 7) : 0;
        s += unicode ? std::string(kBlocks[level]) : std::string(1, kAscii[level]);
    }
    return s;
}

void print_curve_table(std::FILE* out, const TrainResult& r, bool exact) {
    const auto& c = r.curve;
    const size_t max_rows = 30;
    const size_t every = c.size() > max_rows ? (c.size() + max_rows - 1) / max_rows : 1;
    fmt::print(out, "\n{:>8}  {:>9}  {:>10}  {:>9}  {:>9}  {:>8}{}  {:>8}\n", "step", "lr", "train loss", "train acc",
               "eval loss", "eval acc", exact ? "     exact" : "", "time");
    for (size_t i = 0; i < c.size(); ++i) {
        if (i % every != 0 && i + 1 != c.size()) continue;
        const CurvePoint& p = c[i];
        const bool trained = i == 0 ? p.step > 0 : p.step > c[i - 1].step;
        fmt::print(out, "{:>8}  {:>9}  {:>10}  {:>9}  {:>9.4f}  {:>8}{}  {:>8}\n", p.step,
                   trained ? fmt::format("{:.2e}", p.lr) : "-",
                   trained ? fmt::format("{:.4f}", p.train_loss) : "-", trained ? pct(p.train_accuracy) : "-",
                   p.eval.loss, pct(p.eval.accuracy), exact ? fmt::format("  {:>8}", pct(p.eval.exact)) : "",
                   seconds_text(p.seconds));
    }
    if (every > 1) fmt::print(out, "(every {}th point of {}; --json has all of them)\n", every, c.size());
}

// ---- the SVG plot: training loss per step (bucketed), eval loss and eval accuracy
// (right axis). Evaluations are points in time: with fewer than 6 of them (say only at
// the start and the end) they are drawn as markers, not joined into a ramp that
// nothing measured.
std::string curve_svg(const TrainResult& r, const std::string& title, const std::string& model_line,
                      const std::string& train_line) {
    const double W = 860, H = 480;
    SvgDocument doc(W, H, title);
    doc.text(W / 2, 24, title, {.font_size = 15, .bold = true, .anchor = "middle"});
    doc.text(W / 2, 44, model_line, {.fill = "#555", .font_size = 10.5, .anchor = "middle"});
    doc.text(W / 2, 60, train_line, {.fill = "#555", .font_size = 10.5, .anchor = "middle"});
    const double steps = std::max<double>(1, static_cast<double>(r.steps_done));
    viz::LineChart chart;
    chart.x = {.title = "step", .min = 0, .max = steps};
    chart.y = {.title = "cross-entropy loss (nats)", .zero = true};
    chart.y2 = {.title = "eval accuracy", .min = 0, .max = 1,
                .label = [](double v) { return fmt::format("{:.0f}%", 100 * v); }, .color = "#d62728"};
    // training loss, the mean of each of at most 300 buckets of steps, at the bucket's middle
    viz::Series train{.label = "training loss (batch mean)", .color = "#9ecae1", .width = 1.5, .draw = viz::Draw::Line};
    const auto b = buckets(r.step_loss, 300);
    for (size_t i = 0; i < b.size(); ++i) {
        train.x.push_back((static_cast<double>(i) + 0.5) * steps / static_cast<double>(b.size()));
        train.y.push_back(b[i]);
    }
    const viz::Draw sparse = r.curve.size() >= 6 ? viz::Draw::LineAndMarkers : viz::Draw::Markers;
    viz::Series eval{.label = "eval loss (held-out batches)", .color = "#1f77b4", .width = 2, .draw = sparse};
    viz::Series acc{.label = "eval accuracy (right axis)", .color = "#d62728", .dash = "5 3", .width = 1.5,
                    .draw = sparse, .right_axis = true};
    for (const auto& p : r.curve) {
        eval.x.push_back(static_cast<double>(p.step)), eval.y.push_back(p.eval.loss);
        acc.x.push_back(static_cast<double>(p.step)), acc.y.push_back(p.eval.accuracy);
    }
    chart.series = {train, eval, acc};
    viz::line_chart(doc, {10, 72, W - 10, H - 8}, chart);
    return doc.str();
}

// ---- the run

struct HeadEntropy {
    int64_t layer, head;
    HeadStats s;
};

std::vector<HeadEntropy> head_entropies(TrainableStack& model, const TaskBatch& b, int threads) {
    model.evaluate(b.tokens.data(), b.targets.data(), b.B, b.T, threads);
    const Mask mask = model.config().causal ? Mask::make_causal() : Mask::none();
    std::vector<HeadEntropy> out;
    const auto& weights = model.attention_weights();
    for (size_t l = 0; l < weights.size(); ++l) {
        const auto stats = head_stats(weights[l], mask);
        for (size_t h = 0; h < stats.size(); ++h)
            out.push_back({static_cast<int64_t>(l), static_cast<int64_t>(h), stats[h]});
    }
    return out;
}

// --scale of attn train: parse_scale's spellings, plus cosine-learned[:TAU] (the cosine
// scale with its temperature learned per layer, starting from TAU).
Scale parse_train_scale(const std::string& text, bool& learned) {
    constexpr std::string_view kLearned = "cosine-learned";
    learned = text == kLearned || text.starts_with(std::string(kLearned) + ":");
    if (!learned) return parse_scale(text);
    const std::string as_fixed = "cosine" + text.substr(kLearned.size());
    try {
        return parse_scale(as_fixed);
    } catch (const InputError&) {
        throw InputError(
            fmt::format("--scale: cosine-learned:TAU needs a starting temperature TAU in [{:g}, {:g}], got '{}'",
                        kMinScale, kMaxScale, text));
    }
}

// tau = exp(log_tau) of every layer of a model with a learned cosine temperature, in layer order.
std::vector<double> learned_taus(TrainableStack& model) {
    std::vector<double> taus;
    for (const Param& p : model.params())
        if (p.name.ends_with(".attn.log_tau")) taus.push_back(std::exp(static_cast<double>(p.value->data[0])));
    return taus;
}

nlohmann::json eval_json(const EvalStats& e) {
    nlohmann::json j = {{"loss", e.loss}, {"accuracy", e.accuracy}, {"tokens", e.tokens}};
    if (e.exact >= 0) j["exact_match"] = e.exact;
    return j;
}

// Throws InputError naming the option when a task option does not fit the task.
// The text of task chars: --corpus, else the default.
std::string corpus_path(const TrainOpts& o) { return o.corpus.empty() ? default_corpus() : o.corpus; }

Task make_task(const TrainOpts& o, TaskKind kind, bool causal, int64_t seq) {
    TaskOptions to;
    to.seq = seq;
    to.symbols = o.symbols;
    to.distance = o.distance;
    to.queries = o.queries;
    to.causal = causal;
    if (kind == TaskKind::Distance && (o.distance < 1 || o.distance > seq - 1))
        throw InputError(fmt::format("--distance: must be in [1, --seq - 1] = [1, {}], got {}", seq - 1, o.distance));
    if (!o.corpus.empty() && kind != TaskKind::Chars)
        throw InputError(
            fmt::format("--corpus: acts on task chars only (task {} makes its own data)", task_name(kind)));
    if (kind == TaskKind::Chars) {
        if (!causal)
            throw InputError("--arch: task chars needs a decoder (an encoder would see the character it must predict)");
        const std::string path = corpus_path(o);
        to.corpus = with_option("--corpus", [&] { return read_file(path); });
        return with_option("--corpus", [&] { return Task(kind, to); });
    }
    return with_option("--seq", [&] { return Task(kind, to); });
}

// Task induction's own defaults, where the option is not given: 64 symbols (few repeats inside
// a row), 2 heads, 1500 steps, an evaluation every 25 (the phase change near step 250 on 2 cores).
void apply_induction_defaults(TrainOpts& o, TaskKind kind) {
    if (kind != TaskKind::Induction || !o.load.empty()) return;
    if (!o.given["--symbols"]) o.symbols = 64;
    if (!o.given["--heads"]) o.heads = 2;
    if (!o.given["--steps"]) o.tc.steps = 1500;
    if (!o.given["--eval-every"]) o.tc.eval_every = 25;
}

int list_tasks() {
    fmt::print("Tasks of attn train (--task NAME), generated on the fly from --seed:\n\n");
    for (TaskKind k : all_tasks()) {
        fmt::print("  {:<9} {}{}\n", task_name(k), task_summary(k), k == TaskKind::Recall ? " (--queries N)" : "");
        TaskOptions to;
        to.seq = task_default_seq(k);
        to.causal = task_default_causal(k);
        TrainOpts defaults;  // the task's own defaults (induction: 64 symbols)
        apply_induction_defaults(defaults, k);
        to.symbols = defaults.symbols;
        std::string vocab;
        if (k == TaskKind::Chars) {
            vocab = "one id per distinct byte of --corpus";
            try {
                to.corpus = read_file(default_corpus());
                vocab += fmt::format(" ({}: {})", default_corpus(), Task(k, to).vocab());
            } catch (const InputError&) {
                // no corpus at the default place: the rule alone
            }
        } else {
            const Task t(k, to);
            vocab = fmt::format("{} with --symbols {}; {} scored token{} per row", t.vocab(), to.symbols,
                                t.scored_per_row(), t.scored_per_row() == 1 ? "" : "s");
        }
        fmt::print("  {:<9} default: {}, --seq {}; vocabulary {}\n\n", "",
                   task_default_causal(k) ? "decoder" : "encoder", task_default_seq(k), vocab);
    }
    fmt::print("Layouts (--arch): a decoder sees the prompt then the answer, and predicts each answer token from the\n"
               "tokens before it; an encoder sees the prompt then [MASK]s and fills them in. chars is decoder-only.\n");
    return 0;
}

// --load FILE: the checkpoint, which fixes the model (the model's options are refused beside
// it); the task and its sizes recorded in its metadata fill the options not given.
std::optional<Checkpoint> load_for_train(TrainOpts& o) {
    auto given = [&](const char* name) { return o.given[name]; };
    std::optional<Checkpoint> loaded;
    std::map<std::string, std::string> meta;
    if (!o.load.empty()) {
        for (const char* opt : {"--layers", "--d-model", "--heads", "--d-k", "--d-v", "--d-ff", "--scale", "--init",
                                "--dropout", "--pos", "--act", "--arch", "--qk-gain", "--emb-std", "--attention-only"})
            if (given(opt))
                throw InputError(
                    fmt::format("{}: cannot be combined with --load (the checkpoint fixes the model)", opt));
        loaded.emplace(with_option("--load", [&] { return load_checkpoint(o.load); }));
        meta = loaded->metadata;
    }
    // the task sizes it was trained with, where the options do not say otherwise
    namespace key = checkpoint_keys;
    for (const auto& [k, v, opt] : {std::tuple{key::seq, &o.seq, "--seq"},
                                    {key::symbols, &o.symbols, "--symbols"},
                                    {key::distance, &o.distance, "--distance"},
                                    {key::queries, &o.queries, "--queries"}})
        if (const auto n = with_option(fmt::format("--load: '{}'", o.load),
                                       [&meta, name = k] { return metadata_size(meta, name); });
            n && !given(opt))
            *v = *n;
    return loaded;
}

// The model: the checkpoint's (which must fit the task), or one built from the options.
ModelConfig train_model_config(const TrainOpts& o, const std::optional<Checkpoint>& loaded, const Task& task,
                               int64_t seq, bool causal) {
    ModelConfig mc;
    if (loaded) {
        mc = loaded->model.config();
        if (mc.vocab != task.vocab())
            throw InputError(
                fmt::format("--load: '{}' has a vocabulary of {} tokens, task {} with these options has {} "
                            "(give the --symbols it was trained with)",
                            o.load, mc.vocab, task.name(), task.vocab()));
        if (mc.max_seq < seq)
            throw InputError(
                fmt::format("--seq: the model of '{}' takes at most {} positions, got {}", o.load, mc.max_seq, seq));
    } else {
        mc.vocab = task.vocab();
        mc.max_seq = seq;
        mc.d_model = o.d_model;
        mc.heads = o.heads;
        mc.d_k = o.d_k;
        mc.d_v = o.d_v;
        mc.layers = o.layers;
        mc.d_ff = o.d_ff;
        mc.causal = causal;
        mc.scale = parse_train_scale(o.scale, mc.learn_temperature);
        mc.dropout = static_cast<float>(o.dropout);
        mc.pos = o.pos;
        mc.act = o.act;
        mc.init = parse_init(o.init);
        mc.qk_init_gain = static_cast<float>(o.qk_gain);
        mc.mlp = !(o.attention_only || task.kind() == TaskKind::Induction);
        // the model's rules (ModelConfig::validate), its errors naming the flag
        mc = with_fields({{"d_model", "--d-model"}, {"heads", "--heads"}, {"d_k", "--d-k"}, {"d_v", "--d-v"},
                          {"d_ff", "--d-ff"}, {"layers", "--layers"}, {"scale", "--scale"}, {"dropout", "--dropout"},
                          {"qk_init_gain", "--qk-gain"}},
                         "--d-model", [&] { return mc.resolved(); });
    }
    return mc;
}

// The files a run writes, checked before the first step: each writable, no two the same,
// at most one of them on standard output (the checkpoint never).
void check_train_outputs(TrainOpts& o) {
    if (!o.dump.empty()) with_option("--dump", [&] { dump_format_of(o.dump); });
    for (const auto& [opt, path] : {std::pair{"--save", &o.save}, {"--svg", &o.svg}, {"--dump", &o.dump}})
        if (!path->empty()) require_writable(opt, *path);
    require_json_writable(o.json);
    const std::string json_file = o.json.to_stdout() || !o.json.given() ? std::string() : o.json.file;
    check_html(o.html);
    require_distinct_outputs({{"--save", &o.save}, {"--json", &json_file}, {"--svg", &o.svg}, {"--dump", &o.dump},
                              {"--html", &o.html.file}});
    if (!o.export_gpt2.empty())
        check_outside_gpt2_export(o.export_gpt2, {{"--save", &o.save}, {"--json", &json_file}, {"--svg", &o.svg},
                                                  {"--dump", &o.dump}, {"--html", &o.html.file}});
    if (o.save == "-") throw InputError("--save: the checkpoint is a binary file; give a file name, not -");
    if (o.svg == "-" && o.json.to_stdout())
        throw InputError("--svg: only one of --json and --svg can be - (standard output)");
    if (o.dump == "-" && (o.json.to_stdout() || o.svg == "-"))
        throw InputError("--dump: only one of --json, --svg and --dump can be - (standard output)");

}

// The model to train: the checkpoint's, or a new one initialised from --seed.
TrainableStack build_train_model(const TrainOpts& o, std::optional<Checkpoint>& loaded, const ModelConfig& mc) {
    const TrainConfig& tc = o.tc;
    TrainableStack model = loaded ? std::move(loaded->model) : TrainableStack(mc);
    if (!loaded) init_for_training(model, tc.seed, o.emb_std);
    return model;
}

// Training, with the progress line (app/progress.hpp: on a terminal, the step, loss, rate and
// ETA redrawn in place) and a line at each evaluation; Ctrl-C stops it after the step in progress.
TrainResult train_with_progress(const TrainOpts& o, TrainableStack& model, const Task& task, std::FILE* out,
                                bool tty) {
    const TrainConfig& tc = o.tc;
    TrainResult result;
    {
        g_stop.store(false);
        StopOnSigint sigint;
        // the line is on stderr: drawn when both the report's stream and stderr are a terminal
        ProgressLine line({tty && stderr_is_tty() && !o.quiet, {}, {}, /*elapsed=*/false});
        auto on_progress = [&](const TrainProgress& p) {
            if (o.induction && p.eval) o.induction->observe(model, *p.eval);
            if (o.quiet) return;
            if (p.eval != nullptr) {
                const CurvePoint& c = *p.eval;
                line.clear();
                fmt::print(out,
                           "step {:>7}/{}  train loss {:.4f} acc {:>6}  eval loss {:.4f} acc {:>6}{}  {:.1f} steps/s\n",
                           c.step, p.steps, c.train_loss, pct(c.train_accuracy), c.eval.loss, pct(c.eval.accuracy),
                           c.eval.exact >= 0 ? fmt::format(" exact {:>6}", pct(c.eval.exact)) : "", p.steps_per_s);
                std::fflush(out);
            } else {
                line.show(fmt::format("training: loss {:.4f}, acc {}", p.loss, pct(p.accuracy)), p.step, p.steps,
                          "steps");
            }
        };
        result = train_model(model, task, tc, on_progress, &g_stop);
        sigint.release();  // before any file is written (see StopOnSigint)
    }
    if (result.stopped)
        fmt::print(stderr, "attn train: stopped by Ctrl-C after step {} of {}\n", result.steps_done, tc.steps);
    if (result.diverged)
        fmt::print(stderr,
                   "attn train: the loss or the gradient became infinite or NaN at step {}; training ended there "
                   "(the model is kept as it was before that step): lower --lr or keep --clip\n",
                   result.steps_done + 1);
    return result;
}

// What the trained model does: the curve, sparklines, the final scores, learned
// temperatures, and each head's attention entropy on eval batch 0.
void print_trained(std::FILE* out, const TrainOpts& o, TrainableStack& model, const Task& task,
                   const TrainResult& result, const std::vector<HeadEntropy>& entropies) {
    const ModelConfig mc = model.config();
    const CurvePoint& last = result.curve.back();
    const bool unicode = unicode_ok(o.ascii);
    print_curve_table(out, result, task.has_exact_match());
    if (result.step_loss.size() > 1) {
        const auto b = buckets(result.step_loss, 60);
        const size_t per = (result.step_loss.size() + b.size() - 1) / b.size();
        fmt::print(out, "\ntraining loss  {:.3f} {} {:.3f}   (mean of each {} step{}, first to last)\n",
                   b.front(), sparkline(b, unicode), b.back(), per, per == 1 ? "" : "s");
    }
    if (result.curve.size() > 1) {
        std::vector<double> acc;
        for (const auto& p : result.curve) acc.push_back(p.eval.accuracy);
        fmt::print(out, "eval accuracy  {:>5} {} {:>5}   (each evaluation)\n", pct(acc.front()),
                   sparkline(acc, unicode), pct(acc.back()));
    }
    fmt::print(out,
               "\nfinal: eval loss {:.4f}, accuracy {} (chance {}){} after {} steps; {} of training, {:.1f} steps/s\n",
               last.eval.loss, pct(last.eval.accuracy), pct(task.chance_accuracy()),
               last.eval.exact >= 0 ? fmt::format(", exact match {}", pct(last.eval.exact)) : "", result.steps_done,
               seconds_text(result.train_seconds), result.steps_per_s());
    if (mc.learn_temperature) {
        const auto taus = learned_taus(model);
        fmt::print(out, "learned cosine temperature tau per layer (from {:g}):", mc.scale.value);
        for (size_t l = 0; l < taus.size(); ++l) fmt::print(out, " {}", fmt::format("{:.4g}", taus[l]));
        fmt::print(out, "\n");
    }
    fmt::print(
        out,
        "\nper-head attention entropy on eval batch 0 (nats; in brackets: of uniform, 1 = uniform, 0 = one key)\n");
    fmt::print(out, "{:>7}", "layer");
    for (int64_t h = 0; h < mc.heads; ++h) fmt::print(out, "  {:>14}", fmt::format("head {}", h));
    fmt::print(out, "\n");
    for (int64_t l = 0; l < mc.layers; ++l) {
        fmt::print(out, "{:>7}", l);
        for (const auto& e : entropies)
            if (e.layer == l)
                fmt::print(out, "  {:>14}",
                           fmt::format("{:.3f} ({:.2f})", e.s.mean_entropy_nats, e.s.mean_normalized_entropy));
        fmt::print(out, "\n");
    }
}

// --dump: the first rows of eval batch 0 (a row does not depend on B) with the tokens,
// targets, predictions, the mask, and every layer's attention weights.
Dump train_dump(const TrainOpts& o, TrainableStack& model, const Task& task, const TrainResult& result, bool causal,
                int threads, int64_t& layer, int64_t& rows) {
    const TrainConfig& tc = o.tc;
    const ModelConfig mc = model.config();
    const int64_t seq = task.seq();
    // The first rows of eval batch 0 (a row does not depend on B), every layer's weights.
    const TaskBatch db = task.batch(std::min(tc.batch, kDumpRows), tc.seed, DataSplit::Eval, 0);
    const Tensor logits = model.logits(db.tokens.data(), db.B, db.T, threads);
    const auto pred = argmax_rows(logits.ptr(), db.B * db.T, task.vocab());
    const auto& weights = model.attention_weights();
    layer = o.layer >= 0 ? o.layer : mc.layers - 1;
    Dump d;
    d.seed = tc.seed;
    nlohmann::json labels = nlohmann::json::array();
    for (int64_t b = 0; b < db.B; ++b) {
        nlohmann::json row = nlohmann::json::array();
        for (int64_t t = 0; t < db.T; ++t) row.push_back(task.token_text(db.tokens[static_cast<size_t>(b * db.T + t)]));
        labels.push_back(row);
    }
    d.config = {{"source", "attn train"}, {"task", task.name()}, {"seq", seq}, {"batch", db.B},
                {"layers", mc.layers}, {"layer", layer}, {"d_model", mc.d_model}, {"heads", mc.heads},
                {"d_k", mc.d_k}, {"d_v", mc.d_v}, {"causal", causal}, {"scale", scale_name(mc.scale)},
                {"steps", result.steps_done}, {"tokens", labels}};
    auto put = [&](const std::string& name, Tensor t) {
        d.order.push_back(name);
        d.tensors[name] = std::move(t);
    };
    auto ids = [&](const std::vector<int32_t>& v) {
        Tensor t(Shape{db.B, db.T});
        std::transform(v.begin(), v.end(), t.data.begin(), [](int32_t x) { return static_cast<float>(x); });
        return t;
    };
    put("tokens", ids(db.tokens));
    put("targets", ids(db.targets));
    put("predictions", ids(pred));
    // the mask the model ran with, 1 where a query may attend (the library's causal rule)
    const Mask mask = causal ? Mask::make_causal() : Mask::none();
    const MaskRow row = mask.row(0, 0, seq);
    Tensor m(Shape{1, seq, seq});
    for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 0; j < seq; ++j) m.data[static_cast<size_t>(i * seq + j)] = row.allowed(i, j) ? 1.0f : 0.0f;
    put("mask", m);
    put("weights", weights[static_cast<size_t>(layer)]);
    for (size_t l = 0; l < weights.size(); ++l) put(fmt::format("weights_layer{}", l), weights[l]);
    rows = db.B;
    return d;
}

// --dump and --html: the trained attention on the first eval rows, as a file and as a page (every layer, row 0).
void write_train_dump(const TrainOpts& o, TrainableStack& model, const Task& task, const TrainResult& result,
                      bool causal, int threads, std::FILE* out) {
    int64_t layer = 0, rows = 0;
    const Dump d = train_dump(o, model, task, result, causal, threads, layer, rows);
    if (!o.dump.empty()) {
        with_option("--dump", [&] { write_dump_file(o.dump, d); });
        if (o.dump != "-" && !o.quiet)
            fmt::print(out, "wrote {} (attention of layer {} on {} eval rows: attn view {})\n", o.dump, layer, rows,
                       o.dump);
    }
    if (o.html.file.empty()) return;
    AttentionPage page = page_from_dump(d, "attn train", 0);
    page.title = fmt::format("Attention of a {} trained {} steps on task {}", causal ? "decoder" : "encoder",
                             result.steps_done, task.name());
    page.subtitle =
        fmt::format("eval row 0 of {}; {} layers x {} heads; T = {}", rows, page.layers, page.heads, page.tq);
    write_html_page(o.html, std::move(page), TextOut({{"--json, --svg or --dump -", out != stdout}}), o.quiet);
}

// The attn-train document: task, model, training settings, result, curve, per-step loss,
// head entropies (and the learned temperatures).
nlohmann::json train_json(const TrainOpts& o, TrainableStack& model, const Task& task, TaskKind kind, bool causal,
                          bool loaded, int threads, const TrainResult& result,
                          const std::vector<HeadEntropy>& entropies) {
    const TrainConfig& tc = o.tc;
    const ModelConfig mc = model.config();
    const int64_t seq = task.seq();
    const CurvePoint& last = result.curve.back();
    nlohmann::json j;
    j["format"] = "attn-train";
    j["version"] = 1;
    j["task"] = {{"name", task.name()},  {"seq", seq},
                 {"symbols", o.symbols}, {"distance", o.distance},
                 {"queries", o.queries}, {"vocab", task.vocab()},
                 {"causal", causal},     {"chance_accuracy", task.chance_accuracy()}};
    if (kind == TaskKind::Chars) j["task"]["corpus"] = corpus_path(o);
    j["model"] = nlohmann::json::parse(config_to_json(mc));
    j["model"]["parameters"] = model.num_params();
    if (loaded) j["model"]["loaded_from"] = o.load;
    j["training"] = {{"optimizer", optimizer_name(tc.optimizer)},
                     {"lr", tc.lr},
                     {"schedule", lr_schedule_name(tc.schedule)},
                     {"warmup", tc.warmup},
                     {"weight_decay", tc.weight_decay},
                     {"clip", tc.clip},
                     {"batch", tc.batch},
                     {"steps", tc.steps},
                     {"seed", tc.seed},
                     {"threads", threads},
                     {"eval_every", tc.eval_every},
                     {"eval_batches", tc.eval_batches}};
    if (tc.optimizer == OptimizerKind::Sgd) j["training"]["momentum"] = tc.momentum;
    j["result"] = {{"steps_done", result.steps_done}, {"stopped", result.stopped}, {"diverged", result.diverged},
                   {"train_seconds", result.train_seconds}, {"steps_per_s", result.steps_per_s()},
                   {"final", eval_json(last.eval)}};
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& p : result.curve)
        curve.push_back({{"step", p.step}, {"lr", p.lr}, {"train_loss", p.train_loss},
                         {"train_accuracy", p.train_accuracy}, {"grad_norm", p.grad_norm},
                         {"eval", eval_json(p.eval)}, {"seconds", p.seconds}});
    j["curve"] = curve;
    j["step_loss"] = result.step_loss;
    nlohmann::json ent = nlohmann::json::array();
    for (const auto& e : entropies)
        ent.push_back({{"layer", e.layer}, {"head", e.head}, {"mean_entropy_nats", e.s.mean_entropy_nats},
                       {"mean_normalized_entropy", e.s.mean_normalized_entropy},
                       {"mean_max_weight", e.s.mean_max_weight}, {"mean_effective_keys", e.s.mean_effective_keys},
                       {"rows", e.s.rows}});
    j["head_entropy"] = ent;
    if (mc.learn_temperature) j["learned_tau"] = learned_taus(model);
    return j;
}

// --export-gpt2: the model as a GPT-2 folder, with the run's record, command and commit.
void write_gpt2_folder(const TrainOpts& o, TrainableStack& model, const Task& task,
                       std::map<std::string, std::string> provenance, std::FILE* out) {
    provenance["attn.command"] = command_line();
    provenance["attn.commit"] = build_commit();
    export_gpt2(o.export_gpt2, model, task, provenance);
    if (!o.quiet)
        fmt::print(out, "wrote {}/ (a GPT-2 folder: attn model next --model {} --text ...; transformers' "
                        "GPT2LMHeadModel reads it too)\n",
                   o.export_gpt2, o.export_gpt2);
}

int run_train(TrainOpts o) {
    if (o.list_tasks) return list_tasks();
    auto given = [&](const char* name) { return o.given[name]; };

    // ---- check everything before the first step
    std::optional<Checkpoint> loaded = load_for_train(o);
    const bool task_from_file = o.task.empty() && loaded && loaded->metadata.count(checkpoint_keys::task);
    if (task_from_file) o.task = loaded->metadata.at(checkpoint_keys::task);
    if (o.task.empty())
        throw InputError(
            "--task: required (one of copy, reverse, sort, recall, distance, chars, induction; --list-tasks says what "
            "each is)");
    const TaskKind kind =
        with_option(task_from_file ? fmt::format("--load: '{}': metadata attn.task", o.load) : "--task",
                    [&] { return task_of(o.task); });
    if (given("--queries") && kind != TaskKind::Recall)
        throw InputError("--queries: acts on task recall only");
    apply_induction_defaults(o, kind);
    const int64_t seq = o.seq > 0 ? o.seq : task_default_seq(kind);
    if (seq > kMaxTaskSeq) throw InputError(fmt::format("--seq: must be at most {}, got {}", kMaxTaskSeq, seq));
    const bool causal = loaded ? loaded->model.config().causal
                        : o.arch == Arch::Task ? task_default_causal(kind)
                                               : o.arch == Arch::Decoder;
    const Task task = make_task(o, kind, causal, seq);

    TrainConfig& tc = o.tc;
    if (tc.steps == 0 && !loaded)
        throw InputError("--steps: must be at least 1 (0 only with --load, to inspect a saved model)");
    // the training settings: the library's rules (TrainConfig::validate), its errors naming the flag
    with_fields({{"steps", "--steps"}, {"batch", "--batch"}, {"lr", "--lr"}, {"weight_decay", "--weight-decay"},
                 {"momentum", "--momentum"}, {"clip", "--clip"}, {"warmup", "--warmup"}, {"eval_every", "--eval-every"},
                 {"eval_batches", "--eval-batches"}},
                "train", [&] { tc.validate(); });
    // the command's own guard against typos (the library trains at any finite rate, divergence included)
    if (tc.lr > 10) throw InputError(fmt::format("--lr: must be at most 10, got {}", tc.lr));
    if (tc.weight_decay > 10)
        throw InputError(fmt::format("--weight-decay: must be at most 10, got {}", tc.weight_decay));
    if (given("--momentum") && tc.optimizer != OptimizerKind::Sgd)
        throw InputError("--momentum: acts with --optimizer sgd only (AdamW has its own moments)");
    with_fields({{"emb_std", "--emb-std"}}, "--emb-std", [&] { check_emb_std(o.emb_std); });

    ModelConfig mc = train_model_config(o, loaded, task, seq, causal);
    // memory: the activations the backward pass keeps and the weights four times over (lib/train)
    require_fits_in_memory("--batch", training_memory_bytes(mc, tc.batch, seq),
                           fmt::format("B={}, T={}, D={}, {} layers", tc.batch, seq, mc.d_model, mc.layers));
    if (o.layer >= mc.layers)
        throw InputError(
            fmt::format("--layer: must be in 0..{} ({} layers), got {}", mc.layers - 1, mc.layers, o.layer));
    check_train_outputs(o);
    if (!o.export_gpt2.empty()) check_gpt2_export(mc, task, o.export_gpt2);

    // ---- build the model
    TrainableStack model = build_train_model(o, loaded, mc);
    mc = model.config();
    const bool to_stdout = o.json.to_stdout() || o.svg == "-" || o.dump == "-";
    std::FILE* out = to_stdout ? stderr : stdout;
    const bool tty = isatty(fileno(out)) != 0;
    const int threads = resolve_threads(tc.threads);
    const std::string model_line = fmt::format(
        "{} {} layer{}, D={} H={} Dk={} Dv={} {}, scale {}{}, {} positions, {}, dropout {:g}, {}{} parameters",
        causal ? "decoder" : "encoder", mc.layers, mc.layers == 1 ? "" : "s", mc.d_model, mc.heads, mc.d_k, mc.d_v,
        mc.mlp ? fmt::format("d_ff={}", mc.d_ff) : "attention only", scale_name(mc.scale),
        mc.learn_temperature ? " (temperature learned per layer)" : "", pos_kind_name(mc.pos), activation_name(mc.act),
        mc.dropout, loaded ? "" : fmt::format("embeddings N(0, {:g}^2), ", o.emb_std), model.num_params());
    const std::string train_line = fmt::format(
        "{} lr {:g} ({}{}), clip {:g}, weight decay {:g}, B={}, {} steps, {} thread{}, seed {}",
        optimizer_name(tc.optimizer), tc.lr, lr_schedule_name(tc.schedule),
        tc.warmup > 0 ? fmt::format(", {} warmup", tc.warmup) : "", tc.clip, tc.weight_decay, tc.batch, tc.steps,
        threads, threads == 1 ? "" : "s", tc.seed);
    if (!o.quiet) {
        fmt::print(out,
                   "attn train: task {} (T={}, vocabulary {}, chance accuracy {}){}\n{}  model: {}\n  training: {}\n",
                   task.name(), seq, task.vocab(), pct(task.chance_accuracy()),
                   loaded ? fmt::format(", model from {}", o.load) : "",
                   kind == TaskKind::Chars ? fmt::format("  text: {}\n", corpus_path(o)) : "", model_line, train_line);
        std::fflush(out);
    }

    // ---- train
    std::optional<InductionObserver> induction;
    if (kind == TaskKind::Induction) o.induction = &induction.emplace(task, tc.seed, threads);
    const TrainResult result = train_with_progress(o, model, task, out, tty);
    const auto ind = induction_report(o.induction, model, task, tc, threads, out, o.quiet, unicode_ok(o.ascii));

    // ---- what the trained model does
    const TaskBatch eval0 = task.batch(tc.batch, tc.seed, DataSplit::Eval, 0);
    const auto entropies = head_entropies(model, eval0, threads);
    const CurvePoint& last = result.curve.back();
    if (!o.quiet) print_trained(out, o, model, task, result, entropies);

    // ---- files: the checkpoint first (a run stopped by Ctrl-C keeps its model), each held back until all
    // are written: one that fails removes the others (a device or standard output is written at once)
    OutputBatch batch;
    const TrainingRecord record{task.name(), seq,         o.symbols, o.distance,         o.queries,
                                result.steps_done, tc.seed, last.eval.loss, last.eval.accuracy};
    if (!o.save.empty()) {
        with_option("--save", [&] { save_checkpoint(o.save, model, training_metadata(record)); });
        if (!o.quiet) fmt::print(out, "\nwrote {} ({} parameters, safetensors)\n", o.save, model.num_params());
    }
    if (!o.export_gpt2.empty()) write_gpt2_folder(o, model, task, training_metadata(record), out);
    if (!o.svg.empty()) {
        const std::string title = fmt::format("attn train: task {}, {}", task.name(), causal ? "decoder" : "encoder");
        with_option("--svg", [&] {
            write_file_atomic(
                o.svg, ind ? induction_svg(*ind, title, model_line) : curve_svg(result, title, model_line, train_line));
        });
        if (o.svg != "-" && !o.quiet) fmt::print(out, "wrote {} (loss curve)\n", o.svg);
    }
    if (!o.dump.empty() || !o.html.file.empty()) write_train_dump(o, model, task, result, causal, threads, out);
    if (o.json.given()) {
        auto j = train_json(o, model, task, kind, causal, loaded.has_value(), threads, result, entropies);
        if (ind) j["induction"] = induction_json(*ind);
        write_json(o.json, j, "attn-train", 1);
        if (!o.json.to_stdout() && !o.quiet) fmt::print(out, "wrote {} (attn-train JSON)\n", o.json.path());
    }
    batch.commit();
    return 0;
}

// The options of `attn train` that pick the task and shape the model (--list-tasks .. --act); `track`
// records the ones whose presence run_train asks about.
void add_task_and_model_options(CLI::App& sub, TrainOpts& o, const std::function<CLI::Option*(CLI::Option*)>& track) {
    sub.add_flag("--list-tasks", o.list_tasks, "Describe every task and exit");
    track(sub.add_option("--task", o.task,
                         "copy | reverse | sort | recall | distance | chars | induction (--list-tasks)"));
    track(deprecated_alias(sub, "-t", "--seq", o.seq)->check(integer_in(1, kMaxTaskSeq)));
    track(sub.add_option("--seq,-T", o.seq, "T, tokens per row (default: per task, --list-tasks)")
              ->check(integer_in(1, kMaxTaskSeq)));
    track(sub.add_option("--symbols", o.symbols, "alphabet size of the symbol tasks (recall: the values)")
              ->capture_default_str()
              ->check(integer_in(2, kMaxSymbols)));
    track(sub.add_option("--distance", o.distance, "d of the distance task")
              ->capture_default_str()
              ->check(integer_in(1, kMaxTaskSeq)));
    track(sub.add_option("--queries", o.queries, "keys asked per row of the recall task (each one scored)")
              ->capture_default_str()
              ->check(integer_in(1, kMaxTaskSeq)));
    sub.add_option("--corpus", o.corpus, "text of the chars task (default data/macbeth.txt)");
    track(sub.add_option("--arch", o.arch, "decoder (causal) | encoder (bidirectional); default: the task's")
              ->transform(one_of({Arch::Decoder, Arch::Encoder}, arch_name)));
    track(sub.add_option("--layers", o.layers, "N, Transformer blocks")
              ->capture_default_str()
              ->check(integer_in(1, kMaxLayers)));
    track(sub.add_option("--d-model,-d", o.d_model, "D, model width")
              ->capture_default_str()
              ->check(integer_in(1, kMaxWidth)));
    track(sub.add_option("--heads,-H", o.heads, "H, heads per block")
              ->capture_default_str()
              ->check(integer_in(1, kMaxHeads)));
    track(sub.add_option("--d-k", o.d_k, "Dk per head (default D/H)")->check(integer_in(1, kMaxWidth)));
    track(sub.add_option("--d-v", o.d_v, "Dv per head (default Dk)")->check(integer_in(1, kMaxWidth)));
    track(sub.add_option("--d-ff", o.d_ff, "hidden width of the MLP (default 4 D)")
              ->check(integer_in(1, kMaxWidth)));
    track(sub.add_option("--scale", o.scale,
                         fmt::format("sqrt (1/sqrt(Dk)) | none | NUMBER | cosine | cosine:TAU | cosine-learned | "
                                     "cosine-learned:TAU; NUMBER, TAU in [{:g}, {:g}]; cosine scores are "
                                     "cos(q, k)/TAU (TAU 1 by default); cosine-learned trains TAU, one per layer, "
                                     "from that start (as log TAU)",
                                     kMinScale, kMaxScale))
              ->capture_default_str());
    track(sub.add_option("--dropout", o.dropout, "attention-weight dropout P in [0, 1), training steps only")
              ->capture_default_str());
    track(sub.add_option("--init", o.init,
                         fmt::format("initialiser of every Linear: {} (embeddings: --emb-std)", kInitNames))
              ->capture_default_str());
    track(sub.add_option("--emb-std", o.emb_std,
                         "std of the token and position embeddings at init (nn.Embedding: 1; GPT-2: 0.02)")
              ->capture_default_str());
    track(sub.add_option("--qk-gain", o.qk_gain, "q_proj and k_proj weights times this after init (C36)")
              ->capture_default_str());
    track(sub.add_option("--pos", o.pos, "positions: learned | sinusoidal")
              ->default_str("learned")
              ->transform(one_of({PosKind::Learned, PosKind::Sinusoidal}, pos_kind_name)));
    track(sub.add_flag("--attention-only", o.attention_only,
                       "blocks without the MLP (task induction: always, the 2-layer attention-only decoder)"));
    track(sub.add_option("--act", o.act, "MLP activation: gelu | relu")
              ->default_str("gelu")
              ->transform(one_of({Activation::Gelu, Activation::Relu}, activation_name)));
}

const Command train_cmd{
    "train",
    "Train a tiny Transformer on a toy task (copy, reverse, sort, recall, distance, chars, induction) and watch it "
    "learn",
    45, [](CLI::App& sub) -> Runner {
        auto o = std::make_shared<TrainOpts>();
        TrainConfig& tc = o->tc;
        tc.threads = 0;
        tc.lr = kTaskLr;
        sub.footer(
            "Each step draws a fresh batch of the task from --seed, runs forward and backward through the model,\n"
            "clips the gradient norm and takes an optimiser step. Every --eval-every steps (and at the end) the\n"
            "model is scored on --eval-batches held-out batches (another seed stream). Accuracy counts the scored\n"
            "tokens only (copy/reverse/sort also report exact match of whole answers). Same --seed, same curve at\n"
            "any --threads.\n"
            "Ctrl-C stops after the step in progress: the table so far is printed and --save still writes the model;\n"
            "a second Ctrl-C ends attn at once.\n"
            "Inspect a saved model: attn train --load FILE --steps 0 --dump out.json, then attn view out.json.\n"
            "Examples (README, section Training, has their figures):\n"
            "  attn train --task distance --distance 3 --layers 1 --steps 400 --lr 3e-3 --svg loss.svg\n"
            "  attn train --task recall --batch 64 --steps 1500 --threads 2 --svg recall.svg   (100% in ~20 s)\n"
            "  attn train --task chars --seq 64 --steps 3000 --save macbeth.safetensors\n");
        std::map<std::string, CLI::Option*> opts;
        auto track = [&](CLI::Option* opt) {
            opts[opt->get_name()] = opt;
            return opt;
        };
        add_task_and_model_options(sub, *o, track);
        sub.add_option("--optimizer", tc.optimizer, "adamw | sgd (with --momentum)")
            ->default_str("adamw")
            ->transform(one_of({OptimizerKind::AdamW, OptimizerKind::Sgd}, optimizer_name));
        track(sub.add_option("--lr", tc.lr, "peak learning rate, in (0, 10]")->capture_default_str());
        sub.add_option("--schedule", tc.schedule, "constant | cosine (to lr/10 at the last step); both after --warmup")
            ->default_str("constant")
            ->transform(one_of({LrSchedule::Constant, LrSchedule::Cosine}, lr_schedule_name));
        sub.add_option("--warmup", tc.warmup, "steps of linear warmup")
            ->capture_default_str()
            ->check(integer_in(0, kMaxSteps));
        track(sub.add_option("--weight-decay", tc.weight_decay, "on matrices and embeddings (AdamW: decoupled)")
                  ->capture_default_str());
        track(sub.add_option("--momentum", tc.momentum, "SGD momentum in [0, 1) (default 0.9)"));
        sub.add_option("--clip", tc.clip, "max global gradient norm (0: no clipping)")->capture_default_str();
        track(sub.add_option("--steps", tc.steps, "training steps (0 only with --load; task induction: 1500)")
                  ->capture_default_str()
                  ->check(integer_in(0, kMaxSteps)));
        deprecated_alias(sub, "-b", "--batch", tc.batch)->check(integer_in(1, kMaxBatch));
        sub.add_option("--batch,-B", tc.batch, "B, rows per step")
            ->capture_default_str()
            ->check(integer_in(1, kMaxBatch));
        sub.add_option("--seed", tc.seed, "seed of the data, the initial weights and dropout")
            ->capture_default_str()
            ->check(seed_validator());
        sub.add_option("--threads", tc.threads, "worker threads (0: every core); same numbers at any count")
            ->capture_default_str()
            ->check(integer_in(0, 4096));
        track(sub.add_option("--eval-every", tc.eval_every,
                             "steps between evaluations (0: only at the end; task induction: 25)")
                  ->capture_default_str()
                  ->check(integer_in(0, kMaxSteps)));
        sub.add_option("--eval-batches", tc.eval_batches, "held-out batches per evaluation")
            ->capture_default_str()
            ->check(integer_in(1, 4096));
        sub.add_option("--save,-o,--output", o->save,
                       "write the trained model to FILE (safetensors; also after Ctrl-C)");
        sub.add_option(
            "--export-gpt2", o->export_gpt2,
            "also write the trained model as a GPT-2 folder DIR (config.json, model.safetensors, vocab.json, "
            "merges.txt) for attn model and transformers; decoder, learned positions, GELU, tasks chars, "
            "induction, distance");
        sub.add_option("--load", o->load, "start from a model saved with --save (its task options are the defaults)");
        add_json(sub, o->json, "attn-train: the config, curve and per-head entropies");
        sub.add_option("--svg", o->svg, "write a plot of the loss and accuracy curves to FILE");
        sub.add_option(
            "--dump", o->dump,
            "write the trained attention on the first 4 rows of eval batch 0 as an attn-dump (attn view FILE)");
        sub.add_option("--layer", o->layer, "the layer --dump shows as \"weights\" (default: the last)")
            ->check(integer_in(0, kMaxLayers));
        add_html_options(sub, o->html);  // --html FILE: the --dump rows' attention, every layer, as a page
        sub.add_flag("--ascii", o->ascii, "ASCII sparklines (_.-:=+*#) instead of Unicode blocks");
        sub.add_flag("--quiet,-q", o->quiet, "print nothing but errors (files are still written)");
        return [o, opts] {
            for (const auto& [name, opt] : opts) o->given[name] = opt->count() > 0;
            return run_train(*o);
        };
    }};

}  // namespace
}  // namespace attn::cli
