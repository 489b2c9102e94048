// The registry of lessons (RegisterLesson, all_lessons, find_lesson), reading time, and run_lesson.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "context_internal.hpp"
#include "lesson.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

namespace {
std::vector<Lesson>& registry_list() {
    static std::vector<Lesson> r;
    return r;
}

// The number a lesson file's name starts with: 4 for ".../lessons/04_softmax.cpp", 0 if none.
int number_of_file(std::string_view path) {
    const std::string_view name = path.substr(path.find_last_of('/') + 1);
    int n = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    return ec == std::errc() && end != name.data() + name.size() && *end == '_' ? n : 0;
}
}  // namespace

RegisterLesson::RegisterLesson(Lesson lesson, const char* file) {
    lesson.number = number_of_file(file);
    registry_list().push_back(std::move(lesson));
}

std::vector<Lesson> all_lessons() {
    std::vector<Lesson> v = registry_list();
    for (const Lesson& l : v)
        if (l.number <= 0)
            throw std::logic_error(fmt::format("lesson '{}': its file name must start with its number (NN_{}.cpp)",
                                               l.slug, l.slug));
    std::sort(v.begin(), v.end(), [](const Lesson& a, const Lesson& b) { return a.number < b.number; });
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i].number == v[i - 1].number)
            throw std::logic_error(fmt::format("lessons '{}' and '{}' share number {}", v[i - 1].slug, v[i].slug,
                                               v[i].number));
    for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = i + 1; j < v.size(); ++j)
            if (v[i].slug == v[j].slug) throw std::logic_error(fmt::format("two lessons named '{}'", v[i].slug));
    return v;
}

const Lesson* find_lesson(std::string_view name) {
    // registration happens before main, so one snapshot serves every call
    static const std::vector<Lesson> lessons = all_lessons();
    if (name.empty()) return nullptr;
    const bool digits = std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && name.size() < 6) {
        const int n = std::atoi(std::string(name).c_str());
        for (const auto& l : lessons)
            if (l.number == n) return &l;
        return nullptr;
    }
    const Lesson* prefix = nullptr;
    int prefix_hits = 0;
    for (const auto& l : lessons) {
        if (l.slug == name) return &l;
        if (l.slug.compare(0, name.size(), name) == 0) prefix = &l, ++prefix_hits;
    }
    return prefix_hits == 1 ? prefix : nullptr;
}

const char* part_name(Part part) { return part == Part::core ? "core" : "advanced"; }

int reading_minutes(std::string_view text) {
    // words: runs of non-space characters that hold a letter or a digit (a table's rules
    // and a heatmap's shading are not read word by word)
    long words = 0;
    bool in_word = false, counted = false;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == ' ' || c == '\n' || c == '\t') {
            in_word = false;
            continue;
        }
        if (!in_word) in_word = true, counted = false;
        if (!counted && std::isalnum(c) != 0) ++words, counted = true;
    }
    const long minutes = (words + kReadingWordsPerMinute / 2) / kReadingWordsPerMinute;
    return static_cast<int>(std::max(1L, minutes));
}

LessonResult run_lesson(const Lesson& lesson, const RunOptions& opt, std::ostream& out) {
    LessonContext ctx(out, opt, lesson.number);
    const std::string title = ctx.tr(lesson.title);
    if (!opt.json) {
        const std::string head = ctx.f("Lesson {} \u00b7 {}", lesson.number, title);
        const std::string tail = ctx.f("claims {} \u00b7 ~{} min", claims_text(lesson.claims), lesson.minutes);
        const auto rule = [](int n) {
            std::string line;
            for (int k = 0; k < std::max(3, n); ++k) line += "\u2501";
            return line;
        };
        const int hw = display_width(head), tw = display_width(tail);
        // one rule with the title and the claims; when they do not fit, the claims go
        // under it, aligned right
        std::string s =
            hw + tw + 11 <= opt.width
                ? fmt::format("\n\u2501\u2501 {} {} {} \u2501\u2501\n", head, rule(opt.width - hw - tw - 8), tail)
                : fmt::format("\n\u2501\u2501 {} {}\n{}{}\n", head, rule(opt.width - hw - 4),
                              std::string(static_cast<size_t>(std::max(0, opt.width - tw)), ' '), tail);
        out << (opt.color ? fmt::format("\x1b[1m{}\x1b[0m", s) : s);
        const std::string where = map_line(lesson, opt.lang);
        if (!where.empty()) {
            const std::string lines = wrap_hanging(where, opt.width, "  ", "       ");
            out << (opt.color ? fmt::format("{}{}\x1b[0m", kDim, lines) : lines);
        }
    }
    lesson.run(ctx);
    if (!opt.json) {
        std::string s = ctx.identities() == 1
                            ? ctx.f("Lesson {} done: {} measured, {} identity shown, {} failed", lesson.number,
                                    ctx.measured(), ctx.identities(), ctx.failed())
                            : ctx.f("Lesson {} done: {} measured, {} identities shown, {} failed", lesson.number,
                                    ctx.measured(), ctx.identities(), ctx.failed());
        if (ctx.qualified_count() > 0)
            s += ctx.qualified_count() == 1 ? ctx.f("; {} claim qualified", ctx.qualified_count())
                                            : ctx.f("; {} claims qualified", ctx.qualified_count());
        if (ctx.unsupported() > 0)
            s += ctx.unsupported() == 1 ? ctx.f("; {} source claim not supported", ctx.unsupported())
                                        : ctx.f("; {} source claims not supported", ctx.unsupported());
        s += ctx.tr(".");
        out << '\n' << wrap(s, opt.width, "  ");
        out.flush();
    }
    LessonResult r;
    r.passed = ctx.passed();
    r.failed = ctx.failed();
    r.not_supported = ctx.unsupported();
    r.measured = ctx.measured();
    r.identities = ctx.identities();
    r.qualified = ctx.qualified_count();
    r.inconclusive = ctx.inconclusive_count();
    r.unmeasured = ctx.unmeasured_count();
    r.source_errors = ctx.source_errors();
    r.predictions = ctx.predictions();
    r.answered = ctx.answered();
    r.close = ctx.close_guesses();
    r.near = ctx.near_guesses();
    r.panels = ctx.panels();
    nlohmann::json rec = {{"lesson", lesson.slug},     {"number", lesson.number}, {"title", title},
                          {"claims", lesson.claims},   {"seed", opt.seed},        {"passed", r.passed},
                          {"failed", r.failed},        {"not_supported_count", r.not_supported},
                          {"measured", r.measured},    {"identities", r.identities},
                          {"qualified_count", r.qualified}, {"unmeasured_count", r.unmeasured},
                          {"inconclusive_count", r.inconclusive},
                          {"source_errors_count", r.source_errors}};
    for (auto& [k, v] : ctx.record().items()) rec[k] = v;
    r.record = std::move(rec);
    return r;
}

}  // namespace attn::lessons
