// `attn lessons`, `attn lesson NAME`, `attn tour`: the guided tour of attention.
// The lessons themselves live in lessons/ (one file each), the tour runner in
// lessons/tour.hpp; this file maps the options, handles --step pauses and prints
// the text, the --json records and --svg.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "attn/viz/heatmap.hpp"
#include "command.hpp"
#include "lang_option.hpp"
#include "lesson.hpp"
#include "options.hpp"
#include "pipeline.hpp"
#include "progress.hpp"
#include "tour_html.hpp"
#include "scorecard.hpp"
#include "sheet.hpp"
#include "tour.hpp"

namespace {

using attn::lessons::Lang;
using attn::lessons::Lesson;
using attn::lessons::format_in;
using attn::lessons::translate;

using attn::cli::add_lang_option;
using attn::cli::resolve_lang;

struct StopTour {};  // the reader typed q at a pause

struct RunFlags {
    uint64_t seed = 0;
    bool no_color = false, step = false, quote = false, no_ask = false;
    attn::cli::JsonOut json;  // to stdout: the record replaces the text; to a file: both
    std::string svg, html;
    std::string name;
    std::string lang, from_text, to_text;
    Lang language = Lang::en;  // resolve_lang(lang), set when the command runs
    int from = 1, to = 0;  // to: 0 = the last lesson
    bool core = false, advanced = false;  // the tour's core lessons only / the advanced part only
};

// The lessons of one part of the tour and their reading time.
struct PartTime {
    std::vector<int> numbers;
    int minutes = 0;
};
PartTime part_time(const std::vector<Lesson>& lessons, attn::lessons::Part part) {
    PartTime t;
    for (const auto& l : lessons)
        if (l.part == part) t.numbers.push_back(l.number), t.minutes += l.minutes;
    return t;
}
// The progress callback of RunOptions: on a terminal, "lesson 5/21 · <what it does>"
// with a spinner while a lesson trains (app/progress.hpp); nothing elsewhere.
std::function<void(std::string_view)> lesson_progress(attn::cli::ProgressLine& line, const Lesson& lesson, int index,
                                                      int count, Lang lang) {
    if (!line.on()) return nullptr;
    const std::string head = format_in(lang, "lesson {} ({}/{})", lesson.number, index, count);
    return [&line, head](std::string_view what) {
        if (what.empty()) line.clear();
        else line.show(head + " \u00b7 " + std::string(what));
    };
}

void add_common(CLI::App& sub, RunFlags& f) {
    sub.add_option("--seed", f.seed, "Seed for every random tensor the lessons draw")
        ->capture_default_str()
        ->check(attn::cli::seed_validator());
    attn::cli::add_json(sub, f.json, "attn-lesson or attn-tour, every figure");
    sub.add_flag("--no-color", f.no_color, "No ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
    sub.add_flag("--quote", f.quote,
                 "Print each claim's text (from the claim summary) beside the first check or verdict on it");
    sub.add_flag("--step", f.step,
                 "Pause between sections until Enter is pressed (only when stdin and stdout are a TTY)");
    sub.add_flag("--no-ask", f.no_ask,
                 "Print each prediction question without waiting for a guess "
                 "(the default when stdin or stdout is not a TTY)");
    add_lang_option(sub, f.lang);
}

bool truecolor_terminal() {
    const char* ct = std::getenv("COLORTERM");
    if (ct == nullptr) return false;
    const std::string s = ct;
    return s == "truecolor" || s == "24bit";
}

// The terminal's width when stdout is one (tables may use it), else 0.
int terminal_columns() {
    if (!attn::cli::stdout_is_tty()) return 0;
    winsize ws{};
    if (ioctl(fileno(stdout), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
    return 0;
}

attn::lessons::RunOptions make_options(const RunFlags& f, bool& pausing) {
    attn::lessons::RunOptions opt;
    // prose wraps at 80 (or a narrower terminal); tables and heatmaps may use a wider one
    const int cols = terminal_columns();
    opt.width = cols > 0 ? std::min(cols, 80) : 80;
    opt.table_width = cols > 0 ? cols : 80;
    opt.seed = f.seed;
    opt.json = f.json.to_stdout();  // no text; the record is kept either way
    opt.quote = f.quote;
    opt.lang = f.language;
    opt.color = !opt.json && attn::cli::stdout_color(f.no_color);
    opt.truecolor = opt.color && truecolor_terminal();
    // Piped output never waits: pauses need a person at a terminal on both ends.
    pausing = f.step && !opt.json && attn::cli::stdout_is_tty() && isatty(fileno(stdin)) != 0;
    if (pausing) {
        const std::string prompt(translate(f.language, "[Enter: next section, q + Enter: stop]"));
        opt.pause = [&pausing, prompt] {
            if (!pausing) return;
            std::cout << "\n  " << prompt << " " << std::flush;
            std::string line;
            if (!std::getline(std::cin, line)) {
                pausing = false;  // stdin closed: go on without waiting
                return;
            }
            if (!line.empty() && (line[0] == 'q' || line[0] == 'Q')) throw StopTour{};
        };
    }
    // Predictions wait for a guess only with a person at a terminal on both ends.
    if (!f.no_ask && !opt.json && attn::cli::stdout_is_tty() && isatty(fileno(stdin)) != 0)
        opt.ask = []() -> std::optional<std::string> {
            std::string line;
            if (!std::getline(std::cin, line)) return std::nullopt;
            return line;
        };
    return opt;
}

std::string lesson_names() {
    std::string s;
    for (const auto& l : attn::lessons::all_lessons()) s += (s.empty() ? "" : ", ") + l.slug;
    return s;
}

const Lesson& lookup(const std::string& name, Lang lang) {
    const Lesson* l = attn::lessons::find_lesson(name);
    if (l == nullptr && !name.empty()) {  // a prefix of several names: list them
        std::string matches;
        for (const auto& x : attn::lessons::all_lessons())
            if (x.slug.compare(0, name.size(), name) == 0) matches += (matches.empty() ? "" : ", ") + x.slug;
        if (matches.find(',') != std::string::npos)
            throw attn::InputError(
                fmt::format("lesson: '{}' is the start of several lessons: {}; give more of the name", name, matches));
    }
    if (l == nullptr)
        throw attn::InputError(format_in(
            lang, "lesson: no lesson '{}'; give a number (1-{}) or a name: {}", name,
            attn::lessons::all_lessons().empty() ? 0 : attn::lessons::all_lessons().back().number, lesson_names()));
    return *l;
}

int report_failures(int failed, Lang lang) {
    if (failed == 0) return 0;
    std::cout.flush();
    fmt::print(stderr, "attn: {}\n",
               failed == 1 ? format_in(lang, "{} check failed (a ✗ line is a bug in attn: please report it)", failed)
                           : format_in(lang, "{} checks failed (a ✗ line is a bug in attn: please report it)", failed));
    return 1;
}

// ------------------------------------------------------------ attn lessons

// `attn lessons --svg FILE`: the block, each step with the lessons that explain it.
void write_pipeline(const std::string& file, Lang lang, const std::vector<Lesson>& lessons) {
    const auto& steps = attn::lessons::pipeline_steps();
    std::vector<std::string> notes(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
        std::vector<int> numbers;
        for (const auto& l : lessons) {
            const auto ls = attn::lessons::lesson_steps(l.slug);
            if (std::find(ls.begin(), ls.end(), steps[i].id) != ls.end()) numbers.push_back(l.number);
        }
        if (!numbers.empty()) notes[i] = attn::lessons::number_ranges(numbers);
    }
    const std::string svg = attn::lessons::pipeline_svg(
        {}, translate(lang, "The Transformer block, step by step; under each step, the lessons that explain it"), lang,
        notes);
    attn::cli::with_option("--svg", [&] { attn::write_file_atomic(file, svg); });
}

int run_list(const attn::cli::JsonOut& json, Lang lang, const std::string& svg = "") {
    const auto lessons = attn::lessons::all_lessons();
    attn::cli::require_json_writable(json);
    if (!svg.empty()) attn::cli::require_writable("--svg", svg);
    const attn::cli::TextOut text({json.claim(), {"--svg -", svg == "-"}});
    if (!svg.empty()) write_pipeline(svg, lang, lessons);
    std::ostream& out = text.stream();
    if (json.given()) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& l : lessons)
            arr.push_back({{"number", l.number}, {"name", l.slug}, {"title", translate(lang, l.title)},
                           {"summary", translate(lang, l.summary)},
                           {"claims", l.claims}, {"heatmaps", l.heatmaps},
                           {"part", attn::lessons::part_name(l.part)}, {"minutes", l.minutes}});
        std::cout.flush();
        attn::cli::write_json(json, nlohmann::json{{"lessons", arr}}, "attn-lessons", 1);
        if (json.to_stdout()) return 0;
    }
    // 80 columns: the title and the summary wrap under themselves (Chinese between ideographs)
    const auto wrapped = [](std::string_view text, size_t indent) {
        std::string out;
        for (const std::string& line : attn::lessons::wrap_text_lines(text, 80 - static_cast<int>(indent)))
            out += (out.empty() ? "" : std::string(indent, ' ')) + line + "\n";
        return out;
    };
    out << translate(lang, "The lessons of `attn tour`, in order. Run one with `attn lesson NUMBER|NAME`.") << "\n";
    const PartTime core = part_time(lessons, attn::lessons::Part::core);
    const PartTime adv = part_time(lessons, attn::lessons::Part::advanced);
    out << wrapped(format_in(lang, "* the core ({} lessons, ~{} min: `attn tour --core`); the others are the advanced "
                                         "part ({} lessons, ~{} min: `attn tour --advanced`).",
                                   core.numbers.size(), core.minutes, adv.numbers.size(), adv.minutes),
                         2)
              << "\n";
    for (const auto& l : lessons) {
        const std::string head =
            fmt::format("{:>3}{} {:<14} ", l.number, l.part == attn::lessons::Part::core ? "*" : " ", l.slug);
        const size_t indent = static_cast<size_t>(std::max(20, attn::display_width(head)));
        out << head
                  << wrapped(format_in(lang, "{}  [{}, ~{} min]", translate(lang, l.title),
                                       attn::lessons::claims_text(l.claims), l.minutes),
                             indent);
        out << std::string(indent, ' ') << wrapped(translate(lang, l.summary), indent);
    }
    return 0;
}

const attn::cli::Command list_cmd{
    "lessons", "List the lessons of the tour, with the claims each covers", 2, [](CLI::App& sub) -> attn::cli::Runner {
        auto json = std::make_shared<attn::cli::JsonOut>();
        auto lang = std::make_shared<std::string>();
        auto svg = std::make_shared<std::string>();
        attn::cli::add_json(sub, *json, "attn-lessons");
        add_lang_option(sub, *lang);
        sub.add_option("--svg", *svg,
                       "Also draw the Transformer block, each step with the lessons that explain it, to this SVG file "
                       "(- for stdout)");
        return [json, lang, svg] { return run_list(*json, resolve_lang(*lang), *svg); };
    }};

// ------------------------------------------------------------- attn lesson

int run_one(RunFlags& f) {
    f.language = resolve_lang(f.lang);
    if (f.name.empty()) {  // `attn lesson` alone: which one? the list, then the one-line refusal
        run_list(attn::cli::JsonOut{}, f.language);
        std::cout.flush();
        throw attn::InputError(format_in(f.language, "lesson: which lesson? give its number or name (the list above)"));
    }
    const Lesson& lesson = lookup(f.name, f.language);
    if (!f.html.empty()) {  // the lesson as a page, as `attn tour --html` writes each lesson
        if (f.json.given() || !f.svg.empty())
            throw attn::InputError("--html: holds the record and the figures; drop --json and --svg");
        bool pausing = false;
        return report_failures(attn::cli::run_tour_html(f.html, make_options(f, pausing), lesson.number, lesson.number),
                               f.language);
    }
    if (!f.svg.empty() && !lesson.heatmaps) {
        std::string with;
        for (const auto& l : attn::lessons::all_lessons())
            if (l.heatmaps) with += (with.empty() ? "" : ", ") + l.slug;
        throw attn::InputError(format_in(f.language, "--svg: lesson '{}' draws no heatmap (lessons with heatmaps: {})",
                                         lesson.slug, with));
    }
    if (!f.svg.empty()) attn::cli::require_writable("--svg", f.svg);  // before the lesson runs, not after
    attn::cli::require_json_writable(f.json);
    // --json has stdout for the record (and the lesson prints no text); --svg - takes it for the SVG
    // and sends the lesson's text to stderr.
    const attn::cli::TextOut text({f.json.claim(), {"--svg -", f.svg == "-"}});
    bool pausing = false;
    auto opt = make_options(f, pausing);
    if (!text.on_stdout()) {
        opt.color = false;
        opt.pause = nullptr;
        opt.ask = nullptr;
    }
    attn::cli::ProgressLine progress;
    opt.progress = lesson_progress(progress, lesson, lesson.number,
                                   static_cast<int>(attn::lessons::all_lessons().size()), f.language);
    attn::lessons::LessonResult r;
    try {
        r = attn::lessons::run_lesson(lesson, opt, text.stream());
    } catch (const StopTour&) {
        std::cout << "\n";
        return 0;
    }
    if (!f.svg.empty() && r.panels.empty())
        throw attn::InputError(
            format_in(f.language, "--svg: lesson '{}' drew no heatmap this time, so no SVG was written", lesson.slug));
    if (!f.svg.empty()) {
        attn::SvgOptions so;
        so.title = format_in(f.language, "attn lesson {} ({}): attention weights", lesson.number,
                             translate(f.language, lesson.title));
        so.subtitle = format_in(f.language, "each panel: rows are queries, columns are keys; seed {}", f.seed);
        attn::cli::with_option("--svg", [&] { attn::write_file_atomic(f.svg, attn::heatmap_svg(r.panels, so)); });
        if (!f.json.to_stdout() && f.svg != "-")
            text.stream() << "  "
                          << (r.panels.size() == 1
                                  ? format_in(f.language, "wrote {} ({} heatmap)", f.svg, r.panels.size())
                                  : format_in(f.language, "wrote {} ({} heatmaps)", f.svg, r.panels.size()))
                          << "\n";
    }
    if (f.json.given()) {
        std::cout.flush();
        attn::cli::write_json(f.json, r.record, "attn-lesson", 1);
    }
    return report_failures(r.failed, f.language);
}

const attn::cli::Command lesson_cmd{
    "lesson", "Run one lesson (by number or name), computing every number live", 3,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<RunFlags>();
        sub.add_option("name", f->name, "Lesson number or name (alone, `attn lesson` lists them)");
        add_common(sub, *f);
        sub.add_option("--svg", f->svg,
                       "Also write the lesson's heatmaps to this SVG file (- for stdout: the text goes to stderr)");
        sub.add_option(
            "--html", f->html,
            "Write the lesson as one self-contained page (text, figures, checks, the --json record) to FILE");
        return [f] { return run_one(*f); };
    }};

// --------------------------------------------------------------- attn tour

// The tour's opening length line: the whole tour and its core, or the part this run reads.
void print_tour_length(const RunFlags& f, const std::vector<Lesson>& lessons, const std::vector<Lesson>& chosen,
                       int last) {
    const bool whole = chosen.size() == lessons.size();
    int minutes = 0;
    std::vector<int> numbers;
    for (const auto& l : chosen) minutes += l.minutes, numbers.push_back(l.number);
    const PartTime core = part_time(lessons, attn::lessons::Part::core);
    const std::string length =
        whole ? format_in(f.language,
                          "The whole tour is {} lessons, about {} minutes of reading. For a first "
                          "sitting, `attn tour --core` reads the {} core lessons ({}) in about {} "
                          "minutes; `attn tour --advanced` is the rest.",
                          chosen.size(), minutes, core.numbers.size(), attn::lessons::number_ranges(core.numbers),
                          core.minutes)
        : f.core && f.from == 1 && f.to == last
            ? format_in(f.language,
                        "The core of the tour: lessons {}, about {} minutes of reading. "
                        "`attn tour --advanced` goes on with the rest.",
                        attn::lessons::number_ranges(numbers), minutes)
        : f.advanced && f.from == 1 && f.to == last
            ? format_in(f.language, "The advanced part of the tour: lessons {}, about {} minutes of reading.",
                        attn::lessons::number_ranges(numbers), minutes)
            : format_in(f.language, "This part of the tour: lessons {}, about {} minutes of reading.",
                        attn::lessons::number_ranges(numbers), minutes);
    std::cout << "\n";
    for (const std::string& line : attn::lessons::wrap_text_lines(length, 80)) std::cout << line << "\n";
}

// The tour's closing line and its scorecard (of all 44 claims, or of those the lessons read test).
void print_tour_end(Lang lang, int ran, int measured, int identities, int failed,
                    const std::vector<attn::lessons::ClaimScore>& scores, bool whole,
                    const attn::lessons::TourTotals& totals) {
    // the plural forms are separate texts (a translation may need no plural)
    std::cout << "\n"
              << (ran == 1 ? format_in(lang, "Tour done: {} lesson; {} measured, {} identities shown, {} failed.", ran,
                                       measured, identities, failed)
                           : format_in(lang, "Tour done: {} lessons; {} measured, {} identities shown, {} failed.", ran,
                                       measured, identities, failed))
              << "\n";
    if (const std::string p = attn::lessons::predictions_summary(totals, lang); !p.empty())
        for (const std::string& line : attn::lessons::wrap_text_lines(p, 80)) std::cout << line << "\n";
    std::cout << "\n";
    const std::string head =
        whole ? format_in(lang, "Scorecard of the {} claims (`attn claims` gives each one's reason and command; "
                                      "`attn claims ID` one in full):",
                          scores.size())
              : format_in(lang, "Scorecard of the {} claims these lessons test (`attn claims` scores all of them):",
                          scores.size());
    for (const std::string& line : attn::lessons::wrap_text_lines(head, 80)) std::cout << line << "\n";
    std::cout << attn::lessons::scorecard_short(scores, lang, 80);
}

int run_tour(RunFlags& f) {
    f.language = resolve_lang(f.lang);
    const auto lessons = attn::lessons::all_lessons();
    const int last = lessons.empty() ? 0 : lessons.back().number;  // sorted by number
    // --from and --to are checked here, after --lang, so the error is in the run's language
    auto lesson_number = [&](const std::string& opt, const std::string& text, int64_t min) {
        int64_t n = 0;
        const std::string why = attn::cli::read_integer(text, min, last, n);
        if (!why.empty())
            throw attn::InputError(
                f.language == Lang::en
                    ? opt + ": " + why
                    : format_in(f.language, "{}: must be a lesson number in [{}, {}], got '{}'", opt, min, last, text));
        return static_cast<int>(n);
    };
    if (!f.from_text.empty()) f.from = lesson_number("--from", f.from_text, 1);
    f.to = f.to_text.empty() ? last : lesson_number("--to", f.to_text, f.from);
    if (f.core && f.advanced)
        throw attn::InputError(format_in(f.language, "--core: and --advanced: are the two parts of the tour; give one "
                                                     "(or neither, for the whole tour)"));
    // the lessons this run reads: --from..--to, of one part when --core or --advanced
    const std::vector<Lesson> chosen = attn::lessons::tour_lessons(f.from, f.to, f.core, f.advanced);
    if (chosen.empty())
        throw attn::InputError(format_in(f.language, "--from/--to: lessons {} to {} hold no lesson that {} takes",
                                         f.from, f.to, f.core ? "--core" : "--advanced"));
    bool pausing = false;
    auto opt = make_options(f, pausing);
    if (!f.html.empty()) {
        if (f.json.given()) throw attn::InputError("--html: and --json: both hold the record; pick one");
        return report_failures(attn::cli::run_tour_html(f.html, opt, f.from, f.to, f.core, f.advanced), f.language);
    }
    attn::cli::require_json_writable(f.json);
    if (!f.json.to_stdout())
        std::cout << translate(f.language,
                               "attn tour: how attention works, shown with live numbers. Claim ids (C1..C44)\n"
                               "refer to the summary of the two source articles. Two kinds of check close\n"
                               "each claim, both computed from the numbers just printed:\n"
                               "  ✓ measured: a result that correct code could still have got otherwise\n"
                               "    (data, training, an approximation such as finite differences);\n"
                               "  ≡ identity: it follows from the definitions or a theorem, shown as a\n"
                               "    demonstration; a different algorithm that is exact in exact arithmetic\n"
                               "    (tiling, reordering, a cache) agreeing with the reference is ≡ too.\n"
                               "    An identity fails only if attn has a bug.\n"
                               "Every claim's verdict follows one written rule (docs/claims.md): supported,\n"
                               "imprecise, qualified, not supported, inconclusive (the evidence cannot\n"
                               "tell), ○ not measured, or error of the source (flagged with a !). A failed\n"
                               "check never leaves a claim supported; `attn claims ID` gives the reasoning.\n"
                               "The tour ends with the scorecard of all 44 claims.\n");
    if (!f.json.to_stdout()) print_tour_length(f, lessons, chosen, last);
    attn::cli::ProgressLine progress;
    attn::lessons::TourResult t;
    try {
        t = attn::lessons::run_tour(
            chosen, opt, std::cout, [&](const Lesson& lesson, int index, attn::lessons::RunOptions& o) {
                o.progress = lesson_progress(progress, lesson, index, static_cast<int>(chosen.size()), f.language);
            });
    } catch (const StopTour&) {
        std::cout << "\n";
        return 0;
    }
    if (f.json.given()) {
        std::cout.flush();
        attn::cli::write_json(f.json, attn::lessons::tour_record(t, f.seed, f.language), "attn-tour", 1);
    }
    if (!f.json.to_stdout()) {
        print_tour_end(f.language, t.totals.ran, t.totals.measured, t.totals.identities, t.totals.failed, t.scores,
                       t.whole, t.totals);
        // a tour read to the end of its part closes with the sheet (`attn sheet`)
        if (f.from == 1 && f.to == last)
            std::cout << "\n"
                      << attn::lessons::sheet_text(attn::lessons::sheet_record(f.seed, f.language), f.language, 80,
                                                   opt.color);
    }
    return report_failures(t.totals.failed, f.language);
}

const attn::cli::Command tour_cmd{
    "tour", "The guided tour: every lesson in order (start here)", 1, [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<RunFlags>();
        add_common(sub, *f);
        sub.add_option("--from", f->from_text, "Start at this lesson number (1 to the last lesson's)")->type_name("N");
        sub.add_option(
            "--html", f->html,
            "Write the tour as one self-contained page (lessons, figures, checks, the --json record) to FILE");
        sub.add_option("--to", f->to_text,
                       "Stop after this lesson number (--from to the last lesson's; default: the last)")
            ->type_name("N");
        sub.add_flag("--core", f->core,
                     "Only the core lessons: what a first sitting needs, under an hour (`attn lessons` marks them *)");
        sub.add_flag("--advanced", f->advanced, "Only the advanced part: the lessons --core leaves out");
        return [f] { return run_tour(*f); };
    }};

}  // namespace
