// Tests of how the tour reads: every line of every lesson fits 80 display
// columns (East Asian wide characters count 2), checks carry their kind
// (measured or identity) in text and JSON, and every SVG the program writes
// holds its texts inside its canvas (the text extents estimated here, by a
// rule of this file: 0.6 em a character, 0.66 bold, 1 em wide ones).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/viz/svg.hpp"
#include "i18n_required.hpp"
#include "latin_words.hpp"
#include "lesson.hpp"
#include "pipeline.hpp"
#include "svg_test_util.hpp"
#include "test_util.hpp"
#include "whole_tour.hpp"

namespace {

// The lines of `text` wider than `limit` display columns, each with its width.
std::vector<std::string> wide_lines(const std::string& text, int limit) {
    std::vector<std::string> bad;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (attn::display_width(line) > limit) bad.push_back(std::to_string(attn::display_width(line)) + ": " + line);
    return bad;
}

std::string text_of(const attn::lessons::Lesson& l, uint64_t seed = 0,
                    attn::lessons::Lang lang = attn::lessons::Lang::en) {
    attn::lessons::RunOptions opt;
    opt.seed = seed;
    opt.lang = lang;
    std::ostringstream out;
    attn::lessons::run_lesson(l, opt, out);
    return out.str();
}

}  // namespace

TEST_CASE("display_width counts East Asian wide characters as 2 (the rule the width tests use)") {
    CHECK(attn::display_width("abc") == 3);
    CHECK(attn::display_width("√Dk·ᵀ") == 5);
    CHECK(attn::display_width("软检索") == 6);
}

TEST_CASE("every lesson's text fits 80 display columns (seeds 0 and 1, the real-heads lesson below)" *
          ATTN_WHOLE_TOUR) {
    for (const auto& lesson : attn::lessons::all_lessons()) {
        if (lesson.slug == "real-heads") continue;
        for (uint64_t seed : {0ULL, 1ULL}) {
            CAPTURE(lesson.slug);
            CAPTURE(seed);
            const auto bad = wide_lines(attn::test::lesson_run(lesson, seed).text, 80);
            std::string shown;
            for (const auto& b : bad) shown += "\n  " + b;
            CHECK_MESSAGE(bad.empty(), (std::to_string(bad.size()) + " lines wider than 80 columns:" + shown));
        }
    }
}

// The lines that break the Chinese line-breaking rules: one that starts with
// closing punctuation or ends with opening punctuation.
std::vector<std::string> badly_broken(const std::string& text) {
    static const std::u32string no_start = U"。，；：！？）」』、", no_end = U"（「『";
    std::vector<std::string> bad;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::u32string u = attn::utf8_decode(line);
        while (!u.empty() && u.front() == U' ') u.erase(0, 1);
        while (!u.empty() && u.back() == U' ') u.pop_back();
        if (!u.empty() &&
            (no_start.find(u.front()) != std::u32string::npos || no_end.find(u.back()) != std::u32string::npos))
            bad.push_back(line);
    }
    return bad;
}

TEST_CASE(
    "every lesson's Chinese text fits 80 display columns and breaks by the punctuation rules (the translated lessons)" *
    ATTN_WHOLE_TOUR) {
    const std::set<int> required(attn::test::kRequiredZh.begin(), attn::test::kRequiredZh.end());
    int ran = 0, expected = 0;
    for (const auto& lesson : attn::lessons::all_lessons()) {
        if (required.count(lesson.number) == 0) continue;
        ++expected;  // real-heads has its own test below (it needs the model)
        if (lesson.slug == "real-heads") continue;
        for (uint64_t seed : {0ULL, 1ULL}) {
            CAPTURE(lesson.slug);
            CAPTURE(seed);
            const std::string& text = attn::test::lesson_run(lesson, seed, attn::lessons::Lang::zh).text;
            CHECK(attn::display_width(text) > static_cast<int>(attn::utf8_decode(text).size()));  // it is Chinese
            const auto bad = wide_lines(text, 80);
            std::string shown;
            for (const auto& b : bad) shown += "\n  " + b;
            CHECK_MESSAGE(bad.empty(), (std::to_string(bad.size()) + " lines wider than 80 columns:" + shown));
            const auto broken = badly_broken(text);
            shown.clear();
            for (const auto& b : broken) shown += "\n  " + b;
            CHECK_MESSAGE(broken.empty(), (std::to_string(broken.size()) + " lines broken against the rules:" + shown));
        }
        ++ran;
    }
    CHECK(expected == static_cast<int>(required.size()) - 1);  // every required part but the framing is a lesson
    CHECK(ran == expected - (required.count(15) ? 1 : 0));     // and each ran, real-heads aside
}

TEST_CASE("the real-heads lesson fits 80 columns on the pretrained model (skipped without it)") {
    if (!attn::test::model_or_skip()) return;
    const auto* l = attn::lessons::find_lesson("real-heads");
    REQUIRE(l != nullptr);
    const auto bad = wide_lines(text_of(*l), 80);
    std::string shown;
    for (const auto& b : bad) shown += "\n  " + b;
    CHECK_MESSAGE(bad.empty(), (std::to_string(bad.size()) + " lines wider than 80 columns:" + shown));
}

TEST_CASE("a table wider than the page wraps its headers, then splits into column groups") {
    attn::lessons::Table t;
    t.columns = {"row", "a rather long first header", "another long header here", "third long header text",
                 "and a fourth header", "the fifth column"};
    t.add({"first", 1.5, 2.5, 3.5, 4.5, 5.5});
    t.add({"second row label", 123456789.0, 2.0, 3.0, 4.0, 5.0});
    for (int width : {80, 40}) {
        CAPTURE(width);
        attn::lessons::RunOptions opt;
        opt.width = width;
        std::ostringstream out;
        attn::lessons::LessonContext ctx(out, opt, 1);
        ctx.table("wide", t);
        CHECK(wide_lines(out.str(), width).empty());
        // every cell is still printed (in some group)
        for (const char* cell : {"second row label", "1.235e+08", "5.5", "4.5"})
            CHECK(out.str().find(cell) != std::string::npos);
    }
    // a terminal wider than the prose: tables may use it
    attn::lessons::RunOptions wide;
    wide.table_width = 200;
    std::ostringstream out;
    attn::lessons::LessonContext ctx(out, wide, 1);
    ctx.table("wide", t);
    CHECK(out.str().find("a rather long first header") != std::string::npos);  // one line, not wrapped
}

TEST_CASE("checks carry their kind: ✓ measured and ≡ identity in text, \"kind\" in JSON, counted apart") {
    attn::lessons::RunOptions opt;
    std::ostringstream out;
    attn::lessons::LessonContext ctx(out, opt, 1);
    ctx.check(true, "C1", "a measured result");
    ctx.identity(true, "C2", "an identity");
    ctx.check(true, "C3", "an identity too", attn::lessons::CheckKind::identity);
    ctx.qualified("C10", "holds with a caveat (0.5)");
    ctx.source_error("C29", "a quoted sentence", "what is wrong with it");
    ctx.unmeasured("C41", "not measurable here");
    CHECK(ctx.passed() == 3);
    CHECK(ctx.measured() == 1);
    CHECK(ctx.identities() == 2);
    CHECK(ctx.qualified_count() == 1);
    CHECK(ctx.source_errors() == 1);
    CHECK(ctx.unmeasured_count() == 1);
    const std::string s = out.str();
    CHECK(s.find("\u2713 C1 a measured result") != std::string::npos);
    CHECK(s.find("\u2261 C2 an identity") != std::string::npos);
    CHECK(s.find("claim C10 qualified:") != std::string::npos);
    // the claim in our words, never inside quotation marks
    CHECK(s.find("quoted") != std::string::npos);  // (the line may wrap inside the phrase)
    CHECK(s.find("(in our words)") != std::string::npos);
    CHECK(s.find("\u201ca quoted sentence") == std::string::npos);
    const auto& checks = ctx.record()["checks"];
    REQUIRE(checks.size() == 3);
    CHECK(checks[0]["kind"] == "measured");
    CHECK(checks[1]["kind"] == "identity");
    CHECK(checks[2]["kind"] == "identity");
    CHECK(ctx.record()["qualified"].size() == 1);
    CHECK(ctx.record()["source_errors"][0]["quote"] == "a quoted sentence");
}

TEST_CASE(
    "the tour's verdicts: C36 qualified, C10 not supported by dk-floor, C20 measured by training, both kinds of check" *
    ATTN_WHOLE_TOUR) {
    std::set<std::string> qualified, unmeasured, unsupported, checked, inconclusive, flags;
    int measured = 0, identities = 0, source_errors = 0;
    for (const auto& lesson : attn::lessons::all_lessons()) {
        const auto& r = attn::test::lesson_run(lesson, 0, attn::lessons::Lang::en, /*json=*/true).result;
        measured += r.measured;
        identities += r.identities;
        source_errors += r.source_errors;
        CHECK(r.measured + r.identities == r.passed);
        for (const auto& c : r.record["checks"]) {
            CHECK((c["kind"] == "measured" || c["kind"] == "identity"));
            checked.insert(c["claim"].get<std::string>());
        }
        for (const auto& q : r.record["qualified"]) {
            qualified.insert(q["claim"].get<std::string>());
            CHECK(q["text"].get<std::string>().find_first_of("0123456789") != std::string::npos);  // with numbers
        }
        for (const auto& u : r.record["unmeasured"]) unmeasured.insert(u["claim"].get<std::string>());
        for (const auto& n : r.record["not_supported"]) unsupported.insert(n["claim"].get<std::string>());
        for (const auto& n : r.record["inconclusive"]) inconclusive.insert(n["claim"].get<std::string>());
        for (const auto& e : r.record["source_errors"])
            flags.insert(e["claim"].get<std::string>() + " " + e["severity"].get<std::string>());
    }
    CHECK(qualified.count("C10") == 1);
    CHECK(qualified.count("C36") == 1);
    // C20 (a fixed 1/10 trains slightly worse): lesson 6 runs attn experiment scale --quick, whose
    // verdict may be any of the three, but it is a verdict now, not "not measured"
    CHECK(unmeasured.count("C20") == 0);
    CHECK(checked.count("C20") + qualified.count("C20") + unsupported.count("C20") + inconclusive.count("C20") >= 1);
    // C10's "not below 64": lesson 5 runs attn experiment dk-floor, whose knee sits below 64
    CHECK(unsupported.count("C10") == 1);
    CHECK(unsupported.count("C36") == 0);
    CHECK(measured > 20);
    CHECK(identities > 30);
    // the source's flaws: C39's log_softmax is an error of the claim; C27's smoke-test code, C29's
    // score shapes and C22's bmm "wrong shape" are slips beside sound claims; C43's "exponential
    // kernel" is imprecise (the word names ELU, the activation, not the kernel)
    // C39 twice: its log_softmax cure, and the second article's "long sequences overflow the dot product"
    CHECK(source_errors == 2);
    CHECK(flags.count("C39 error") == 1);
    CHECK(flags.count("C27 slip") == 1);
    CHECK(flags.count("C29 slip") == 1);
    CHECK(flags.count("C22 slip") == 1);
    CHECK(flags.count("C43 imprecise") == 1);
}

// ------------------------------------------------------------------ SVG fit

namespace {

struct Box {
    double x0, y0, x1, y1;
};

using attn::test::svg_attr;
using attn::test::xml_unescape;

// This file's own estimate of a text element's box (see the header comment).
Box text_box(const std::string& tag, const std::string& content) {
    const double x = svg_attr(tag, "x", 0), y = svg_attr(tag, "y", 0), em = svg_attr(tag, "font-size", 12);
    const bool bold = tag.find("font-weight=\"bold\"") != std::string::npos;
    std::string anchor;
    if (tag.find("text-anchor=\"middle\"") != std::string::npos) anchor = "middle";
    if (tag.find("text-anchor=\"end\"") != std::string::npos) anchor = "end";
    double rot = 0;
    std::smatch m;
    if (std::regex_search(tag, m, std::regex("rotate\\(([-0-9.]+)"))) rot = std::stod(m[1].str());
    const std::string text = xml_unescape(content);
    double len = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t s = i;
        attn::utf8_next(text, i);
        len += attn::display_width(text.substr(s, i - s)) >= 2 ? 1.0 : bold ? 0.66 : 0.6;
    }
    const double w = len * em, left = anchor == "middle" ? -w / 2 : anchor == "end" ? -w : 0;
    const double pi = std::acos(-1.0), c = std::cos(rot * pi / 180), sn = std::sin(rot * pi / 180);
    Box b{1e300, 1e300, -1e300, -1e300};
    for (double px : {left, left + w})
        for (double py : {-0.8 * em, 0.25 * em}) {
            const double rx = x + px * c - py * sn, ry = y + px * sn + py * c;
            b = {std::min(b.x0, rx), std::min(b.y0, ry), std::max(b.x1, rx), std::max(b.y1, ry)};
        }
    return b;
}

// Every text element of an SVG document lies inside its viewBox; returns the offenders.
std::vector<std::string> texts_outside(const std::string& svg, int* count) {
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, std::regex("viewBox=\"([-0-9.]+) ([-0-9.]+) ([-0-9.]+) ([-0-9.]+)\"")));
    const double vx = std::stod(m[1].str()), vy = std::stod(m[2].str());
    const double vw = std::stod(m[3].str()), vh = std::stod(m[4].str());
    std::vector<std::string> bad;
    const std::regex text_re("<text([^>]*)>([^<]*)</text>");
    *count = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text_re); it != std::sregex_iterator(); ++it) {
        ++*count;
        const Box b = text_box((*it)[1].str(), (*it)[2].str());
        const double eps = 0.5;
        if (b.x0 < vx - eps || b.y0 < vy - eps || b.x1 > vx + vw + eps || b.y1 > vy + vh + eps)
            bad.push_back(fmt::format(
                "\"{}\" spans x {:.0f}..{:.0f}, y {:.0f}..{:.0f}; canvas x {:.0f}..{:.0f}, y {:.0f}..{:.0f}",
                (*it)[2].str(), b.x0, b.x1, b.y0, b.y1, vx, vx + vw, vy, vy + vh));
    }
    return bad;
}

void check_svg_file(const std::string& what, const std::string& path) {
    CAPTURE(what);
    REQUIRE(std::filesystem::exists(path));
    const std::string svg = attn::read_file(path);
    int n = 0;
    const auto bad = texts_outside(svg, &n);
    CHECK(n > 0);
    std::string shown;
    for (const auto& b : bad) shown += "\n  " + b;
    CHECK_MESSAGE(bad.empty(), (std::to_string(bad.size()) + " texts outside the canvas:" + shown));
}

}  // namespace

TEST_CASE("svg: the canvas grows to hold a title wider than the size asked for") {
    attn::SvgDocument d(100, 50, "t");
    d.text(50, 20, "a title much wider than one hundred units", {.font_size = 16, .bold = true, .anchor = "middle"});
    d.text(10, 45, "rotated label", {}, -90);
    const attn::SvgBox c = d.canvas();
    const attn::SvgBox e =
        attn::svg_text_extent(50, 20, "a title much wider than one hundred units", 16, true, "middle");
    CHECK(c.x0 <= e.x0);
    CHECK(c.x1 >= e.x1);
    CHECK(c.x0 < 0);  // it grew to the left, where the centred title spills
    int n = 0;
    CHECK(texts_outside(d.str(), &n).empty());
    CHECK(n == 2);
    // a document whose texts fit keeps its size
    attn::SvgDocument small(200, 100, "t");
    small.text(20, 30, "fits");
    CHECK(small.str().find("viewBox=\"0 0 200 100\"") != std::string::npos);
}

TEST_CASE("CLI: every SVG attn writes holds its title, labels and legend") {
    const std::string dir = "/tmp/attn-test-svgfit-" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    auto run = [&](const std::string& args) {
        const auto p = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' " + args + " > /dev/null 2>&1");
        CHECK_MESSAGE(p.code == 0, args);
    };
    run("variance --svg " + dir + "/variance.svg");
    check_svg_file("attn variance --svg", dir + "/variance.svg");
    for (const auto& l : attn::lessons::all_lessons()) {
        if (!l.heatmaps || l.slug == "real-heads") continue;  // real-heads: the model, below
        const std::string f = dir + "/lesson" + std::to_string(l.number) + ".svg";
        run("lesson " + std::to_string(l.number) + " --svg " + f);
        check_svg_file("attn lesson " + l.slug + " --svg", f);
    }
    // a Chinese title and subtitle are wider per character: lesson 1 in Chinese holds them too
    run("lesson 1 --lang zh --svg " + dir + "/lesson1-zh.svg");
    check_svg_file("attn lesson 1 --lang zh --svg", dir + "/lesson1-zh.svg");
    run("forward --heads 2 --mask pad:6,4 --dump " + dir + "/out.json");
    run("view " + dir + "/out.json --svg " + dir + "/view.svg");
    check_svg_file("attn view --svg", dir + "/view.svg");
    run("train --task copy --steps 20 --svg " + dir + "/train.svg");
    check_svg_file("attn train --svg", dir + "/train.svg");
    run("lessons --svg " + dir + "/pipeline.svg");
    check_svg_file("attn lessons --svg", dir + "/pipeline.svg");
    run("lessons --lang zh --svg " + dir + "/pipeline-zh.svg");
    check_svg_file("attn lessons --lang zh --svg", dir + "/pipeline-zh.svg");
    std::filesystem::remove_all(dir);
}

TEST_CASE("CLI: the real-heads lesson's SVG holds its labels (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string f = "/tmp/attn-test-svgfit-15-" + std::to_string(getpid()) + ".svg";
    const auto p =
        attn::test::run_shell(std::string("'") + ATTN_BINARY + "' lesson real-heads --svg " + f + " > /dev/null 2>&1");
    CHECK(p.code == 0);
    check_svg_file("attn lesson real-heads --svg", f);
    std::filesystem::remove(f);
}

TEST_CASE("CLI: attn lessons and the tour's framing (introduction, summary) fit 80 columns") {
    const auto list = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' lessons");
    CHECK(list.code == 0);
    CHECK(wide_lines(list.out, 80).empty());
    for (const auto& l : attn::lessons::all_lessons()) CHECK(list.out.find(l.slug) != std::string::npos);
    // the last lesson only (the framing is the same whatever runs); real-heads without
    // the model runs its short fallback
    const int last = attn::lessons::all_lessons().back().number;
    const auto tour = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' tour --from " + std::to_string(last));
    CHECK(tour.code == 0);
    const auto bad = wide_lines(tour.out, 80);
    std::string shown;
    for (const auto& b : bad) shown += "\n  " + b;
    CHECK_MESSAGE(bad.empty(), (std::to_string(bad.size()) + " lines wider than 80 columns:" + shown));
    CHECK(tour.out.find("Tour done: 1 lessons;") == std::string::npos);  // counts, not a template
    CHECK(tour.out.find(" measured, ") != std::string::npos);
    CHECK(tour.out.find(" identit") != std::string::npos);
    // the same in Chinese: `attn lessons`, and the tour's framing around lesson 1
    const auto list_zh = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' lessons --lang zh");
    CHECK(list_zh.code == 0);
    CHECK(wide_lines(list_zh.out, 80).empty());
    CHECK(badly_broken(list_zh.out).empty());
    for (const auto& l : attn::lessons::all_lessons()) CHECK(list_zh.out.find(l.slug) != std::string::npos);
    const auto tour_zh =
        attn::test::run_shell(std::string("'") + ATTN_BINARY + "' tour --lang zh --from " + std::to_string(last));
    CHECK(tour_zh.code == 0);
    const auto bad_zh = wide_lines(tour_zh.out, 80);
    shown.clear();
    for (const auto& b : bad_zh) shown += "\n  " + b;
    CHECK_MESSAGE(bad_zh.empty(), (std::to_string(bad_zh.size()) + " lines wider than 80 columns:" + shown));
    CHECK(tour_zh.out.find("Tour done") == std::string::npos);
    CHECK(tour_zh.out.find("how attention works") == std::string::npos);
    CHECK(tour_zh.out.find("导览结束：共 1 课") != std::string::npos);
    // the framing (the opening, the closing line, the scorecard) and the last lesson: no English word
    const auto latin = attn::test::latin_words(tour_zh.out);
    CHECK_MESSAGE(latin.empty(), (std::string("English words in the Chinese tour:") + attn::test::latin_report(latin)));
}

TEST_CASE("the block's picture: every lesson highlights steps of it, and every step has a lesson") {
    const auto& steps = attn::lessons::pipeline_steps();
    std::set<std::string> ids, covered;
    for (const auto& s : steps) CHECK(ids.insert(s.id).second);  // each id once
    for (const auto& l : attn::lessons::all_lessons()) {
        CAPTURE(l.slug);
        const auto mine = attn::lessons::lesson_steps(l.slug);
        CHECK(!mine.empty());
        for (const auto& id : mine) {
            CHECK(ids.count(id) == 1);
            covered.insert(id);
        }
    }
    CHECK(covered == ids);
    CHECK(attn::lessons::lesson_steps("no-such-lesson").empty());
    // the highlighted boxes are the lesson's steps: one filled box per step
    const std::string svg =
        attn::lessons::pipeline_svg(attn::lessons::lesson_steps("softmax"), "t", attn::lessons::Lang::en);
    size_t filled = 0;
    for (size_t at = svg.find("#fde68a"); at != std::string::npos; at = svg.find("#fde68a", at + 1)) ++filled;
    CHECK(filled == 1);
    CHECK(svg.find(">softmax<") != std::string::npos);
    // Chinese labels where a step has words
    CHECK(attn::lessons::pipeline_svg({}, "t", attn::lessons::Lang::zh).find("前馈网络") != std::string::npos);
}

TEST_CASE("reading time: a lesson's words at 150 a minute, rounded, at least one minute") {
    using attn::lessons::reading_minutes;
    std::string words;
    for (int k = 0; k < 150; ++k) words += "word ";
    CHECK(reading_minutes("") == 1);
    CHECK(reading_minutes(words) == 1);
    CHECK(reading_minutes(words + words + words) == 3);
    CHECK(reading_minutes(words + words + words.substr(0, 5 * 74)) == 2);  // 2.49 minutes
    CHECK(reading_minutes(words + words + words.substr(0, 5 * 75)) == 3);  // 2.5
    // a table's rules and a heatmap's shading are not words; a number is
    std::string rules;
    for (int k = 0; k < 1000; ++k) rules += "━━ │ ░▒ ";
    CHECK(reading_minutes(words + rules) == 1);
    std::string numbers;
    for (int k = 0; k < 300; ++k) numbers += "0.953 ";
    CHECK(reading_minutes(numbers) == 2);
}

TEST_CASE("the tour's two parts: every lesson in one, with its minutes, and the core reads in under an hour") {
    int core = 0, advanced = 0, core_minutes = 0;
    for (const auto& l : attn::lessons::all_lessons()) {
        CAPTURE(l.slug);
        CHECK(l.minutes >= 1);
        if (l.part == attn::lessons::Part::core) ++core, core_minutes += l.minutes;
        else ++advanced;
    }
    CHECK(core >= 5);
    CHECK(advanced >= 5);
    CHECK(core_minutes < 60);
    // the ranges the tour's length line and claims_text print
    CHECK(attn::lessons::number_ranges({1, 2, 3, 4, 5, 7, 8, 10, 12}) == "1\u20135, 7, 8, 10, 12");
    CHECK(attn::lessons::number_ranges({5, 6, 7}, "C") == "C5\u2013C7");
    CHECK(attn::lessons::claims_text({"C1", "C2", "C3", "C4"}) == "C1\u2013C4");
    CHECK(attn::lessons::number_ranges({}).empty());
    // the lessons a learner needs first: the pipeline from lookup to multi-head, then positions
    for (const char* slug : {"soft-lookup", "qkv", "softmax", "why-sqrt-dk", "one-head", "masks", "multi-head",
                             "positional"})
        CHECK(attn::lessons::find_lesson(slug)->part == attn::lessons::Part::core);
}

TEST_CASE("each lesson's declared minutes are the reading time of its own English text at seed 0 (within 1)" *
          ATTN_WHOLE_TOUR) {
    for (const auto& lesson : attn::lessons::all_lessons()) {
        if (lesson.slug == "real-heads") continue;  // the model's lesson: its own test below
        CAPTURE(lesson.slug);
        const int measured = attn::lessons::reading_minutes(attn::test::lesson_run(lesson, 0).text);
        CHECK(std::abs(lesson.minutes - measured) <= 1);
    }
}

TEST_CASE("the real-heads lesson's declared minutes are its reading time (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const auto* l = attn::lessons::find_lesson("real-heads");
    REQUIRE(l != nullptr);
    CHECK(std::abs(l->minutes - attn::lessons::reading_minutes(text_of(*l))) <= 1);
}

TEST_CASE("CLI: tour --core / --advanced read their part, say how long it is, and refuse together") {
    const auto lessons = attn::lessons::all_lessons();
    int core_minutes = 0, all_minutes = 0, core_count = 0;
    std::string first_core_title;
    for (const auto& l : lessons) {
        all_minutes += l.minutes;
        if (l.part == attn::lessons::Part::core) core_minutes += l.minutes, ++core_count;
    }
    // the length line of a part, without running it all: --from/--to pick two lessons
    const auto part = attn::test::run_attn("tour --from 2 --to 3");
    CHECK(part.code == 0);
    CHECK(part.out.find(fmt::format("This part of the tour: lessons 2, 3, about {} minutes of reading.",
                                    lessons[1].minutes + lessons[2].minutes)) != std::string::npos);
    CHECK(part.out.find(fmt::format("claims {} \u00b7 ~{} min", attn::lessons::claims_text(lessons[1].claims),
                                    lessons[1].minutes)) != std::string::npos);
    // --core with a range: only its core lessons run (6 is advanced, 7 core)
    REQUIRE(attn::lessons::find_lesson("6")->part == attn::lessons::Part::advanced);
    REQUIRE(attn::lessons::find_lesson("7")->part == attn::lessons::Part::core);
    const auto core = attn::test::run_attn("tour --core --from 6 --to 7");
    CHECK(core.code == 0);
    CHECK(core.out.find("Lesson 6 \u00b7") == std::string::npos);
    CHECK(core.out.find("Lesson 7 \u00b7") != std::string::npos);
    CHECK(core.out.find("Tour done: 1 lesson;") != std::string::npos);
    // `attn lessons` states both parts' lengths, and its --json each lesson's
    const auto list = attn::test::run_attn("lessons");
    CHECK(list.out.find(fmt::format("* the core ({} lessons, ~{} min", core_count, core_minutes)) != std::string::npos);
    const auto json = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' lessons --json");
    REQUIRE(json.code == 0);
    int listed = 0;
    const nlohmann::json doc = nlohmann::json::parse(json.out);
    for (const auto& l : doc["lessons"]) listed += l["minutes"].get<int>();
    CHECK(listed == all_minutes);
    // refusals: one line, exit 2
    const auto both = attn::test::run_attn("tour --core --advanced");
    CHECK(both.code == 2);
    CHECK(both.out == "attn: error: --core: and --advanced: are the two parts of the tour; give one (or neither, for "
                      "the whole tour)\n");
    const auto none = attn::test::run_attn("tour --core --from 13 --to 14");
    CHECK(none.code == 2);
    CHECK(none.out == "attn: error: --from/--to: lessons 13 to 14 hold no lesson that --core takes\n");
}

TEST_CASE("--quote: every claim a lesson cites has its text, printed once beside the first check on it") {
    for (const auto& l : attn::lessons::all_lessons()) {
        CAPTURE(l.slug);
        for (const auto& c : l.claims) CHECK_FALSE(attn::lessons::claim_text(c).empty());
    }
    CHECK(attn::lessons::claim_text("C0").empty());
    CHECK(attn::lessons::claim_text("C999").empty());
    CHECK(attn::lessons::claim_text("X1").empty());
    CHECK(attn::lessons::claim_text("C10").find("64") != std::string_view::npos);
    const auto* l = attn::lessons::find_lesson("why-sqrt-dk");
    REQUIRE(l != nullptr);
    attn::lessons::RunOptions opt;
    opt.quote = true;
    std::ostringstream out;
    const auto r = attn::lessons::run_lesson(*l, opt, out);
    CHECK(r.failed == 0);
    const std::string s = out.str();
    size_t n = 0;
    for (size_t p = s.find("C10 in our words:"); p != std::string::npos; p = s.find("C10 in our words:", p + 1)) ++n;
    CHECK(n == 1);
    CHECK(s.find("C14 in our words:") < s.find("\u2713 C14"));
    CHECK(wide_lines(s, 80).empty());
    // without --quote nothing is quoted
    CHECK(text_of(*l).find(" in our words:") == std::string::npos);
}
