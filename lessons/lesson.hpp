// lessons/lesson.hpp: what a lesson is, how it talks, and how it registers.
//
// A lesson is a function that narrates one concept of the source material
// (its claims C1–C44, as the README lists them) and computes every number it
// shows with the attn library. It speaks only through a LessonContext:
//
//   ctx.section("Two scores");                      a heading (the tour may pause here)
//   ctx.para("Softmax turns scores into ...");     prose, word-wrapped
//   ctx.shape("Q", q, "x·W_qᵀ + b_q");            a tensor's shape, for every tensor made
//   ctx.table("softmax", t);                       an aligned table (numbers stay numbers in --json)
//   ctx.check(ok, "C12", "...");                   ✓ or ✗: a measured result, computed from live numbers
//   ctx.identity(ok, "C2", "...");                 ≡ or ✗: an identity (true by construction or a
//                                                  theorem), shown as a demonstration
//   ctx.not_supported("C10", "...");               a source claim the numbers contradict
//   ctx.qualified("C36", "...");                   a claim that holds only with a stated qualification
//   ctx.inconclusive("C33", "...");                a claim whose evidence disagrees between seeds
//   ctx.unmeasured("C41", "...");                  a claim attn cannot measure, named honestly
//   ctx.source_error("C29", "...", "...");         an error in the source's own text or code, quoted
//   ctx.figure("max_weight", 0.953);               a figure for the --json record
//   ctx.heatmap("w", panel);                       a terminal heatmap (and an SVG panel)
//   ctx.predict("std256", "...?", live_value);     the reader guesses a number before the lesson shows it
//   ctx.exercise("scores");                        the closing line naming the step's `attn exercise`
//
// Languages (catalogue.hpp): every text above is English and is looked up in
// the message catalogue when RunOptions::lang is zh. A text built from numbers
// is written as a template through ctx.f, so the template is what is looked up:
//   ctx.check(ok, "C3", ctx.f("weights sum to 1 (|sum-1| = {})", e2(err)));
// never fmt::format(...) passed to the context (that text, numbers and all,
// would be looked up, missed, and printed in English).
//
// In text mode everything prints as it happens; in JSON mode nothing prints
// and the same figures are collected into record(). A lesson file registers
// itself with a file-scope RegisterLesson object, so adding lessons/NN_name.cpp
// adds a lesson (lessons/CMakeLists.txt links the library whole-archive so
// these registrations are never dropped by the linker). Its number NN is read
// from the file name, the one place it is written: the files' order is the tour's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "attn/experiments/experiment.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "catalogue.hpp"

namespace attn::lessons {

// What a check shows; the tour counts the two kinds apart.
enum class CheckKind {
    measured,  // an empirical result that could have come out otherwise (a ✓ line)
    identity,  // true by construction or by a theorem, shown as a demonstration (a ≡ line)
};
const char* check_kind_name(CheckKind kind);  // "measured", "identity"

struct RunOptions {
    uint64_t seed = 0;
    bool json = false;       // collect a record, print nothing
    bool color = false;      // ANSI colour in text mode
    bool truecolor = false;
    int width = 80;          // prose wraps here
    // Tables and heatmaps fit in this many columns (the terminal's width when
    // the CLI knows it); 0: `width`. A wider table wraps its headers, then
    // splits into column groups.
    int table_width = 0;
    // Print each cited claim's text (claim_text) once per lesson, before the
    // first check or verdict that cites it (the CLI's --quote).
    bool quote = false;
    // Called at each section after the first when non-empty (the CLI's --step).
    std::function<void()> pause;
    // Called with what a long computation does when it starts (a training run), and with
    // an empty text when it ends: the CLI draws its progress line (stderr, a terminal
    // only). The output itself never changes.
    std::function<void(std::string_view)> progress;
    // The language of every text (catalogue.hpp); numbers and --json figures do not change.
    Lang lang = Lang::en;
    // Predictions (LessonContext::predict). When set, a question waits for the reader: the context
    // prints the question and a prompt, then ask() returns the line typed (nullopt: no more input).
    // The CLI sets it only when stdin and stdout are a terminal and neither --no-ask nor --json is
    // given; unset, the question is printed and the lesson goes on at once.
    std::function<std::optional<std::string>()> ask;
    // false: questions are not printed at all (a test compares such a run with the usual one).
    bool show_predictions = true;
};

// How a guess is judged against the live number (LessonContext::predict): relative (the
// default) for a size, absolute for a number near 0 or bounded (a weight, a sum of weights).
struct Closeness {
    double abs_tol = 0;  // > 0: absolute; |guess - live| <= abs_tol is close, <= 4 abs_tol near
    static Closeness relative() { return {}; }
    static Closeness absolute(double tol) { return {tol}; }
};
// A guess judged: "close" (within 10%, or abs_tol), "near" (within a factor of 2, or 4 abs_tol),
// "far"; the relative error (|g - a| / |a|; infinite for a = 0 and g != 0) and the absolute one.
struct GuessJudgement {
    std::string verdict;  // "close", "near", "far"
    double rel_error = 0, abs_error = 0;
};
GuessJudgement judge_guess(double guess, double actual, Closeness rule);
// A typed answer as a number: "16", "0.25", "1e6", "4k", "2.5M", "1G", "1/3", "1,048,576";
// nullopt when it is not one.
std::optional<double> parse_guess(std::string_view text);
// The live number as the feedback prints it: an integer whole, else 4 significant digits.
std::string guess_number(double x);

// An aligned table. Cells are JSON values: strings print as they are,
// numbers through the column's fmt spec (default "{:.4g}"), so the --json
// record keeps real numbers.
struct Table {
    std::vector<std::string> columns;
    std::vector<std::string> formats;  // per column, may be shorter than columns
    std::vector<std::vector<nlohmann::json>> rows;
    void add(std::vector<nlohmann::json> row) { rows.push_back(std::move(row)); }
};

struct SeedVerdict;  // below: an experiment's verdict at one evidence seed

class LessonContext {
public:
    LessonContext(std::ostream& out, RunOptions opt, int lesson_number);

    uint64_t seed() const { return opt_.seed; }
    // An independent generator per use: same seed and stream, same numbers.
    Rng rng(uint64_t stream) const { return Rng(opt_.seed, stream); }
    Lang lang() const { return opt_.lang; }

    // The text in the run's language (catalogue.hpp); every method below applies
    // it to the texts it is given, so a lesson calls it only for a text it uses
    // otherwise (a heatmap title, a table cell).
    std::string tr(std::string_view english);
    // fmt::format with the TEMPLATE looked up first: ctx.f("max weight {} < {}", a, b);
    // the zh template orders its arguments with {0}, {1}. A translated template
    // that fmt rejects falls back to the English one (and is recorded as a miss).
    template <class... A>
    std::string f(std::string_view english_template, const A&... args) {
        return format_translated(english_template, fmt::make_format_args(args...));
    }
    // f() with arguments known only at run time (a Verdict's plain line).
    std::string fv(std::string_view english_template, const std::vector<std::string>& args);

    void section(std::string_view title);
    void para(std::string_view text);
    // Lines printed as they are, indented (a formula, an error message, code).
    void code(std::string_view text);
    void shape(std::string_view name, const Tensor& t, std::string_view how = "");
    void shape(std::string_view name, const Shape& s, std::string_view how = "");
    void table(std::string_view key, const Table& t);
    // Returns ok. claim: one id or several ("C25,C27"). check() without a
    // kind is a measured result; identity() is check(..., CheckKind::identity).
    bool check(bool ok, std::string_view claim, std::string_view text);
    bool check(bool ok, std::string_view claim, std::string_view text, CheckKind kind);
    bool identity(bool ok, std::string_view claim, std::string_view text);
    // Verdicts on a claim of the source. not_supported: the numbers contradict
    // it. qualified: its direction holds, but only with the qualification or
    // correction the text states (with numbers). unmeasured: attn cannot measure it.
    void not_supported(std::string_view claim, std::string_view text);
    void qualified(std::string_view claim, std::string_view text);
    void unmeasured(std::string_view claim, std::string_view text);
    // Evidence that disagrees with itself (training runs whose seeds reach different
    // verdicts): the claim is neither supported nor refused by it.
    void inconclusive(std::string_view claim, std::string_view text);
    // Runs experiment `e` live at its quick size once per evidence seed (evidence_seeds():
    // fixed, whatever the lesson's seed, so a verdict is the claim's and not the tour's
    // --seed) and prints its verdict on `claim`: the same verdict on every seed -> that
    // verdict (supported -> a measured check), seeds that disagree -> inconclusive.
    // `otherwise` is the ○ line when it reaches none. Runs are cached per (experiment,
    // seed) for the process, so lessons judging two claims of one experiment train once.
    void experiment_claim(const ExperimentInfo& e, std::string_view claim, std::string_view otherwise);
    // The same judgement from a stored run instead of live quick ones, for a claim whose
    // answer needs more training than a reading allows: data/evidence/`file` (found by
    // attn/io/data_files.hpp; made by `attn experiment NAME --full --seeds 5 --store FILE`),
    // one run a seed; its `which`-th verdict on `claim` (an experiment may judge a claim
    // once per optimiser) at every stored seed. The lesson says where the run was made and
    // how to rerun it. Without a readable file it says why and falls back to experiment_claim.
    void stored_claim(const ExperimentInfo& e, std::string_view claim, std::string_view file, size_t which,
                      std::string_view otherwise);
    // A flaw in the source's own text or code: what it says (in our words, never as a
    // quotation) and what is wrong with it. error: the claim itself is wrong (it decides
    // the claim's verdict, "error of the source"); slip: the claim stands but the
    // source's code or an aside contradicts it; imprecise: a loose word, not a wrong fact.
    enum class SourceFlag { error, slip, imprecise };
    void source_error(std::string_view claim, std::string_view quote, std::string_view text,
                      SourceFlag flag = SourceFlag::error);
    void figure(std::string_view key, nlohmann::json value);
    // vmin >= vmax: the colour range of the panel's own values. in_svg: also a
    // panel of the lesson's --svg picture (whose colour scale is weights, 0..1).
    void heatmap(std::string_view key, const HeatmapPanel& panel, double vmin = 0.0, double vmax = 1.0,
                 bool in_svg = true);
    // Asks the reader to guess a number before the lesson shows it. `actual` is the live
    // number the lesson computed and shows next (never a typed constant), in the unit the
    // question names. With RunOptions::ask it waits: a number typed is judged (judge_guess)
    // and the live number shown beside it; Enter skips. Without it the question is printed
    // and the lesson goes on. The record lists every question with its live number (and the
    // guess, when one was typed). `id`: a short key, unique in the lesson.
    void predict(std::string_view id, std::string_view question, double actual,
                 Closeness rule = Closeness::relative());
    // The lesson's closing line naming the exercise of the step it teaches ("Your turn:
    // `attn exercise NAME` ..."), or of its two steps; the record lists the names.
    void exercise(std::string_view name, std::string_view second = {});
    // The pipeline map (pipeline.hpp) as a terminal picture: the stages from x to the output
    // with their shapes and the lessons that explain each (lesson 1 opens with it).
    void pipeline_map();
    // A long computation starts (what it does, in English: translated here) / ends:
    // RunOptions::progress, when set. Prints nothing.
    void busy(std::string_view what);
    void idle();

    int passed() const { return passed_; }  // measured + identities that held
    int failed() const { return failed_; }
    int unsupported() const { return unsupported_; }
    int measured() const { return measured_; }        // measured checks that held
    int identities() const { return identities_; }    // identities shown (and holding)
    int qualified_count() const { return qualified_; }
    int inconclusive_count() const { return inconclusive_; }
    int unmeasured_count() const { return unmeasured_; }
    int source_errors() const { return source_errors_; }
    int predictions() const { return predictions_; }
    int answered() const { return answered_; }
    int close_guesses() const { return close_; }
    int near_guesses() const { return near_; }
    int table_width() const { return opt_.table_width > 0 ? opt_.table_width : opt_.width; }
    const std::vector<HeatmapPanel>& panels() const { return panels_; }
    nlohmann::json& record() { return record_; }

private:
    std::string format_translated(std::string_view english_template, fmt::format_args args);
    // How experiment_claim and stored_claim print a verdict: the task sentence, the evidence
    // table over the seeds (means and ranges), then the verdict in plain words, or the seeds
    // grouped by verdict when they disagree (or fewer than `nseeds` of them reached one).
    // `stored`: the stored run the verdicts come from (nullptr: live quick runs). Throws
    // std::logic_error for a verdict without a task (Verdict::task).
    void readable_verdict(std::string_view claim, const std::string& command,
                          const std::vector<const SeedVerdict*>& per, size_t nseeds,
                          const StoredEvidence* stored = nullptr, std::string_view stored_file = {});
    // A training verdict's line: supported -> a measured check, qualified / not supported -> those
    // verdicts; the record keeps the command that reruns it.
    void verdict_line(VerdictKind kind, std::string_view claim, const std::string& said, std::string_view command);
    // tr(), except that a text this context produced through f() passes as it is
    std::string text(std::string_view s);
    std::set<std::string> produced_;  // f()'s results in a language other than en
    bool framed_ = false;  // a training verdict's framing (how its table reads) was said in this lesson
    void print(std::string_view s);
    std::string paint(std::string_view s, const char* ansi) const;
    std::ostream& out_;
    RunOptions opt_;
    int number_;
    int sections_ = 0;
    bool after_block_ = false;  // last output was prose or a table: a line item starts with a blank line
    void line_item();
    void verdict_paragraph(int& count, const char* key, std::string_view claim, const std::string& label,
                           std::string_view text_en);
    int passed_ = 0, failed_ = 0, unsupported_ = 0;
    int measured_ = 0, identities_ = 0, qualified_ = 0, unmeasured_ = 0, source_errors_ = 0, inconclusive_ = 0;
    int predictions_ = 0, answered_ = 0, close_ = 0, near_ = 0, far_ = 0;
    bool input_done_ = false;  // ask() reached the end of input: later questions do not wait
    void print_table(const Table& t, int avail);
    std::set<std::string> shown_shapes_;  // shape lines printed so far
    std::set<std::string> quoted_;        // claim ids whose text --quote printed
    void quote_claims(std::string_view claims);
    std::vector<HeatmapPanel> panels_;
    nlohmann::json record_;
};

// Which part of the tour a lesson belongs to: the core (what a first sitting needs:
// `attn tour --core`, under an hour) or the advanced part (`attn tour --advanced`).
enum class Part { core, advanced };
const char* part_name(Part part);  // "core", "advanced"

// The reading time of a lesson's text: its words at kReadingWordsPerMinute, rounded, at
// least 1. A lesson declares its minutes (Lesson::minutes) so the header can show them
// before it runs; tests/test_tour.cpp holds each declaration to this rule on the
// lesson's own English text.
constexpr int kReadingWordsPerMinute = 150;
int reading_minutes(std::string_view text);

struct Lesson {
    std::string slug;      // "softmax", used by `attn lesson softmax`
    std::string title;
    std::string summary;   // one line for `attn lessons`
    std::vector<std::string> claims;  // {"C12", "C13"}
    bool heatmaps = false; // draws heatmaps (so `--svg` applies)
    std::function<void(LessonContext&)> run;
    Part part = Part::advanced;
    int minutes = 0;       // reading time (reading_minutes of its English text at seed 0)
    int number = 0;        // set by RegisterLesson from the file name: 4 for lessons/04_softmax.cpp
};

// Every registered lesson, sorted by number. Throws std::logic_error if two
// lessons share a number or a slug, or a lesson's file name starts with no
// number (programming errors a test catches).
std::vector<Lesson> all_lessons();
// By number ("4"), slug ("softmax") or a unique slug prefix; nullptr if none.
const Lesson* find_lesson(std::string_view name);

// In a lesson file:  const RegisterLesson reg{{"softmax", "Softmax and saturation", "...", {"C12"}, false, run}};
// (inside the file's own namespace, attn::lessons::lessonNN: lessons/ compiles in unity batches)
struct RegisterLesson {
    // __builtin_FILE() rather than std::source_location: clang 14 with libstdc++ 12
    // (the asan-clang preset) has no std::source_location; both give the caller's file.
    explicit RegisterLesson(Lesson lesson, const char* file = __builtin_FILE());
};

// The seeds every training verdict of the tour rests on (0, 1, 2).
const std::vector<uint64_t>& evidence_seeds();
// Where the training verdicts' runs come from. live: trained in the process (the tour: you
// watch them train). stored: read from data/evidence/NAME-quick.json, the same quick runs on the
// same seeds stored with the machine that made them (`attn experiment NAME --quick --seeds 3
// --store FILE`; a test trains them again and requires the same verdicts), so `attn claims`
// prints the scorecard in seconds; an experiment with no stored file, or without the seed, is
// trained live. Set once, before the first evidence_run; the default is live.
enum class EvidenceSource { live, stored };
void set_evidence_source(EvidenceSource s);
EvidenceSource evidence_source();
// The stored quick runs' file of experiment `name` ("scale-quick.json", under data/evidence/).
std::string quick_evidence_file(std::string_view name);
// Experiment `e` at its quick size with one seed, run (or read, see EvidenceSource) once per
// process (cached); `progress` hears the run's own progress lines when it trains.
const ExperimentResult& evidence_run(const ExperimentInfo& e, uint64_t seed, const ExperimentProgress& progress = {});
// The verdicts of `e` on `claim` at each evidence seed; index: the verdict's rank
// among the experiment's verdicts on that claim.
struct SeedVerdict {
    uint64_t seed = 0;
    size_t index = 0;
    Verdict verdict;
};
std::vector<SeedVerdict> seed_verdicts(const ExperimentInfo& e, std::string_view claim);
// data/evidence/`file` read once per process (attn/experiments/experiment.hpp's
// evidence_from_json); nullptr when it is not found or does not read, with the reason in
// *why.
const StoredEvidence* stored_evidence(std::string_view file, std::string* why = nullptr);

struct LessonResult {
    int passed = 0, failed = 0, not_supported = 0;  // passed = measured + identities
    int measured = 0, identities = 0, qualified = 0, unmeasured = 0, source_errors = 0, inconclusive = 0;
    int predictions = 0, answered = 0, close = 0, near = 0;  // questions asked, guesses typed, judged close / near
    nlohmann::json record;              // the --json record
    std::vector<HeatmapPanel> panels;   // for --svg
};

// Runs one lesson: prints it (text mode) to `out` or collects its record.
LessonResult run_lesson(const Lesson& lesson, const RunOptions& opt, std::ostream& out);

// ------------------------------------------------------------ number text
// Short number formats shared by the lessons.
std::string g3(double x);                 // 3 significant digits: "0.953", "2.6e+10"
std::string g4(double x);
std::string e2(double x);                 // "1.2e-07"
std::string list(const std::vector<float>& v, int decimals = 3);   // "[0.047, 0.953]"
std::string list(const std::vector<double>& v, int decimals = 3);
std::string claims_text(const std::vector<std::string>& claims);   // "C1–C4" or "C11"
// Sorted numbers with runs of three or more joined: {1, 2, 3, 5} -> "1–3, 5"; prefix before
// each ("C": "C1–C3, C5").
std::string number_ranges(const std::vector<int>& numbers, std::string_view prefix = "");
// `text` wrapped greedily at `width` display columns, as the lessons' prose is
// (wide characters count 2; Chinese breaks between ideographs, never before
// closing or after opening punctuation); at least one line.
std::vector<std::string> wrap_text_lines(std::string_view text, int width);
// The text of source claim "C10" in the English of the claim summary
// (lessons/claims.cpp); empty for an id it does not know.
std::string_view claim_text(std::string_view id);

}  // namespace attn::lessons
