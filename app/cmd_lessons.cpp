// `attn lessons`, `attn lesson NAME`, `attn tour`: the guided tour of attention.
// The lessons themselves live in lessons/ (one file each); this file lists,
// selects and runs them, handles --step pauses, --json records and --svg.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/io/dump.hpp"
#include "attn/core/errors.hpp"
#include "attn/viz/heatmap.hpp"
#include "command.hpp"
#include "lesson.hpp"
#include "options.hpp"

namespace {

using attn::lessons::Lesson;

struct StopTour {};  // the reader typed q at a pause

struct RunFlags {
    uint64_t seed = 0;
    bool json = false, no_color = false, step = false, quote = false;
    attn::JsonNonFinite json_nonfinite = attn::JsonNonFinite::literal;
    std::string svg;
    std::string name;
    int from = 1;
};

void add_common(CLI::App& sub, RunFlags& f) {
    sub.add_option("--seed", f.seed, "Seed for every random tensor the lessons draw")
        ->capture_default_str()
        ->check(attn::cli::seed_validator());
    attn::cli::add_json_nonfinite(
        sub, f.json_nonfinite, sub.add_flag("--json", f.json, "Print a machine-readable record of every figure instead of the text"));
    sub.add_flag("--no-color", f.no_color, "No ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
    sub.add_flag("--quote", f.quote, "Print each claim's text (from the claim summary) beside the first check or verdict on it");
    sub.add_flag("--step", f.step, "Pause between sections until Enter is pressed (only when stdin and stdout are a TTY)");
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
    opt.json = f.json;
    opt.quote = f.quote;
    opt.color = !f.json && attn::cli::stdout_color(f.no_color);
    opt.truecolor = opt.color && truecolor_terminal();
    // Piped output never waits: pauses need a person at a terminal on both ends.
    pausing = f.step && !f.json && attn::cli::stdout_is_tty() && isatty(fileno(stdin)) != 0;
    if (pausing) {
        opt.pause = [&pausing] {
            if (!pausing) return;
            std::cout << "\n  [Enter: next section, q + Enter: stop] " << std::flush;
            std::string line;
            if (!std::getline(std::cin, line)) {
                pausing = false;  // stdin closed: go on without waiting
                return;
            }
            if (!line.empty() && (line[0] == 'q' || line[0] == 'Q')) throw StopTour{};
        };
    }
    return opt;
}

std::string lesson_names() {
    std::string s;
    for (const auto& l : attn::lessons::all_lessons()) s += (s.empty() ? "" : ", ") + l.slug;
    return s;
}

const Lesson& lookup(const std::string& name) {
    const Lesson* l = attn::lessons::find_lesson(name);
    if (l == nullptr)
        throw attn::InputError(fmt::format("lesson: no lesson '{}'; give a number (1-{}) or a name: {}", name,
                                           attn::lessons::all_lessons().empty() ? 0 : attn::lessons::all_lessons().back().number,
                                           lesson_names()));
    return *l;
}

int report_failures(int failed) {
    if (failed == 0) return 0;
    std::cout.flush();
    fmt::print(stderr, "attn: {} check{} failed (a ✗ line is a bug in attn: please report it)\n", failed,
               failed == 1 ? "" : "s");
    return 1;
}

// ------------------------------------------------------------ attn lessons

int run_list(bool json) {
    const auto lessons = attn::lessons::all_lessons();
    if (json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& l : lessons)
            arr.push_back({{"number", l.number}, {"name", l.slug}, {"title", l.title}, {"summary", l.summary},
                           {"claims", l.claims}, {"heatmaps", l.heatmaps}});
        std::cout << nlohmann::json{{"format", "attn-lessons"}, {"lessons", arr}}.dump(2) << "\n";
        return 0;
    }
    std::cout << "The lessons of `attn tour`, in order. Run one with `attn lesson NUMBER|NAME`.\n\n";
    // 80 columns: the title and the summary wrap under themselves
    const auto wrapped = [](const std::string& text, size_t indent) {
        std::string out, line;
        std::istringstream words(text);
        std::string w;
        while (words >> w) {
            if (!line.empty() && indent + static_cast<size_t>(attn::display_width(line + " " + w)) > 80) {
                out += line + "\n" + std::string(indent, ' ');
                line.clear();
            }
            line += (line.empty() ? "" : " ") + w;
        }
        return out + line + "\n";
    };
    for (const auto& l : lessons) {
        const std::string head = fmt::format("{:>3}  {:<14} ", l.number, l.slug);
        const size_t indent = static_cast<size_t>(std::max(20, attn::display_width(head)));
        std::cout << head << wrapped(fmt::format("{}  [{}]", l.title, attn::lessons::claims_text(l.claims)), indent);
        std::cout << std::string(indent, ' ') << wrapped(l.summary, indent);
    }
    return 0;
}

const attn::cli::Command list_cmd{
    "lessons", "List the lessons of the tour, with the claims each covers", 2, [](CLI::App& sub) -> attn::cli::Runner {
        auto json = std::make_shared<bool>(false);
        sub.add_flag("--json", *json, "Print the list as JSON");
        return [json] { return run_list(*json); };
    }};

// ------------------------------------------------------------- attn lesson

int run_one(const RunFlags& f) {
    const Lesson& lesson = lookup(f.name);
    if (!f.svg.empty() && !lesson.heatmaps) {
        std::string with;
        for (const auto& l : attn::lessons::all_lessons())
            if (l.heatmaps) with += (with.empty() ? "" : ", ") + l.slug;
        throw attn::InputError(fmt::format("--svg: lesson '{}' draws no heatmap (lessons with heatmaps: {})", lesson.slug, with));
    }
    if (!f.svg.empty()) attn::cli::require_writable("--svg", f.svg);  // before the lesson runs, not after
    // --json has stdout for the record (and the lesson prints no text); --svg - takes it for the SVG
    // and sends the lesson's text to stderr.
    const attn::cli::TextOut text({{"--json", f.json}, {"--svg -", f.svg == "-"}});
    bool pausing = false;
    auto opt = make_options(f, pausing);
    if (!text.on_stdout()) {
        opt.color = false;
        opt.pause = nullptr;
    }
    attn::lessons::LessonResult r;
    try {
        r = attn::lessons::run_lesson(lesson, opt, text.stream());
    } catch (const StopTour&) {
        std::cout << "\n";
        return 0;
    }
    if (!f.svg.empty() && r.panels.empty())
        throw attn::InputError(fmt::format("--svg: lesson '{}' drew no heatmap this time, so no SVG was written", lesson.slug));
    if (!f.svg.empty()) {
        attn::SvgOptions so;
        so.title = fmt::format("attn lesson {} ({}): attention weights", lesson.number, lesson.title);
        so.subtitle = fmt::format("each panel: rows are queries, columns are keys; seed {}", f.seed);
        attn::cli::with_option("--svg", [&] { attn::write_file_atomic(f.svg, attn::heatmap_svg(r.panels, so)); });
        if (!f.json && f.svg != "-") text.stream() << fmt::format("  wrote {} ({} heatmap{})\n", f.svg, r.panels.size(), r.panels.size() == 1 ? "" : "s");
    }
    if (f.json) std::cout << attn::json_text(r.record, 2, f.json_nonfinite) << "\n";
    return report_failures(r.failed);
}

const attn::cli::Command lesson_cmd{
    "lesson", "Run one lesson (by number or name), computing every number live", 3,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<RunFlags>();
        sub.add_option("name", f->name, "Lesson number or name (see `attn lessons`)")->required();
        add_common(sub, *f);
        sub.add_option("--svg", f->svg, "Also write the lesson's heatmaps to this SVG file (- for stdout: the text goes to stderr)");
        return [f] { return run_one(*f); };
    }};

// --------------------------------------------------------------- attn tour

int run_tour(const RunFlags& f) {
    const auto lessons = attn::lessons::all_lessons();
    bool pausing = false;
    const auto opt = make_options(f, pausing);
    int passed = 0, failed = 0, unsupported = 0, ran = 0;
    int measured = 0, identities = 0, qualified = 0, unmeasured = 0, source_errors = 0;
    nlohmann::json records = nlohmann::json::array();
    if (!f.json)
        std::cout << "attn tour: how attention works, shown with live numbers. Claim ids (C1..C44)\n"
                     "refer to the summary of the two source articles. Two kinds of check close\n"
                     "each claim, both computed from the numbers just printed:\n"
                     "  ✓ measured: an empirical result that could have come out otherwise;\n"
                     "  ≡ identity: true by construction or by a theorem, shown as a demonstration\n"
                     "    (it fails only if attn has a bug).\n"
                     "A claim the numbers contradict is reported as not supported, one that holds\n"
                     "only with a caveat as qualified, one attn cannot measure as ○ not measured,\n"
                     "and an error in the source's own text or code is flagged with a !.\n";
    try {
        for (const auto& lesson : lessons) {
            if (lesson.number < f.from) continue;
            if (ran > 0 && opt.pause) opt.pause();
            const auto r = attn::lessons::run_lesson(lesson, opt, std::cout);
            passed += r.passed;
            failed += r.failed;
            unsupported += r.not_supported;
            measured += r.measured;
            identities += r.identities;
            qualified += r.qualified;
            unmeasured += r.unmeasured;
            source_errors += r.source_errors;
            ++ran;
            if (f.json) records.push_back(r.record);
        }
    } catch (const StopTour&) {
        std::cout << "\n";
        return 0;
    }
    if (f.json) {
        const nlohmann::json tour{{"format", "attn-tour"},        {"seed", f.seed},
                                  {"lessons", records},           {"passed", passed},
                                  {"failed", failed},             {"not_supported", unsupported},
                                  {"measured", measured},         {"identities", identities},
                                  {"qualified", qualified},       {"unmeasured", unmeasured},
                                  {"source_errors", source_errors}};
        std::cout << attn::json_text(tour, 2, f.json_nonfinite) << "\n";
    } else {
        std::cout << fmt::format("\nTour done: {} lesson{}; {} measured, {} identities shown, {} failed.\n"
                                 "Claims: {} not supported by the numbers, {} qualified, {} not measured here;\n"
                                 "{} error{} of the source flagged.\n",
                                 ran, ran == 1 ? "" : "s", measured, identities, failed, unsupported, qualified, unmeasured, source_errors,
                                 source_errors == 1 ? "" : "s");
    }
    return report_failures(failed);
}

const attn::cli::Command tour_cmd{
    "tour", "The guided tour: every lesson in order (start here)", 1, [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<RunFlags>();
        add_common(sub, *f);
        const int last = attn::lessons::all_lessons().back().number;  // sorted by number
        sub.add_option("--from", f->from, "Start at this lesson number")->default_val(1)->check(attn::cli::integer_in(1, last));
        return [f] { return run_tour(*f); };
    }};

}  // namespace
