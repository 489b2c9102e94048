// The pipeline map as a terminal picture (LessonContext::pipeline_map) and a lesson header's map line.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "context_internal.hpp"
#include "lesson.hpp"
#include "pipeline.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

// What each stage of the map does, in a few words (the English is the catalogue key).
static const char* map_stage_words(std::string_view id) {
    static const std::map<std::string, const char*, std::less<>> words = {
        {"x", "the input, a vector per token"},
        {"qkv", "x·Wᵀ per projection, H heads"},
        {"scores", "every query against every key"},
        {"scale", "keeps the spread near 1"},
        {"mask", "−∞ where a key is hidden"},
        {"softmax", "each row: weights summing to 1"},
        {"dropout", "training only: drops weights"},
        {"weighted", "a weighted sum of the values"},
        {"merge", "the heads side by side again"},
        {"out_proj", "mixes the heads: x's shape"},
    };
    const auto it = words.find(id);
    return it == words.end() ? "" : it->second;
}

void LessonContext::pipeline_map() {
    const auto& steps = pipeline_steps();
    const std::vector<Lesson> lessons = all_lessons();
    struct Row {
        std::string label, shape, words, where;
    };
    std::vector<Row> rows{{"x", "[B, T, D]", tr(map_stage_words("x")), ""}};
    std::vector<std::string> ids;
    for (const PipelineStep& s : steps) {
        const std::string_view id = s.id;
        if (std::string_view(map_stage_words(id)).empty()) continue;  // the block around attention: lesson 10
        std::vector<int> numbers;  // the core lessons that explain the step (the header of each lesson says the rest)
        for (const Lesson& l : lessons) {
            const auto ls = lesson_steps(l.slug);
            if (l.part == Part::core && std::find(ls.begin(), ls.end(), id) != ls.end()) numbers.push_back(l.number);
        }
        rows.push_back({opt_.lang == Lang::zh ? s.label_zh : s.label, s.shape, tr(map_stage_words(id)),
                        numbers.empty() ? "" : number_ranges(numbers)});
        ids.emplace_back(id);
    }
    record_["map"] = ids;
    if (opt_.json) return;
    const auto pad = [](const std::string& v, int w) {
        return v + std::string(static_cast<size_t>(std::max(0, w - display_width(v))), ' ');
    };
    const std::string title = tr("The map: one attention layer, from x to its output; on the right, the core lessons "
                                 "that explain each step (every lesson's header names its own steps)");
    std::string out = "\n" + paint(wrap(title, opt_.width, ""), kBold) + "\n";
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const std::string line = fmt::format("  {} {}{}{}", i == 0 ? " " : "\u2193", pad(r.label, 12), pad(r.shape, 15),
                                             r.where.empty() ? r.words : pad(r.words, 32) + r.where);
        for (const std::string& l : break_line(line, opt_.width, 33)) out += l + "\n";
    }
    after_block_ = true;
    print(paint(out, kCyan));
}

// The steps a lesson zooms into, as its header's map line: "map: Q·Kᵀ → ÷ √Dk … softmax".
std::string map_line(const Lesson& lesson, Lang lang) {
    const auto& steps = pipeline_steps();
    const std::vector<std::string> mine = lesson_steps(lesson.slug);
    std::string path;
    size_t last = steps.size();
    for (size_t i = 0; i < steps.size(); ++i) {
        if (std::find(mine.begin(), mine.end(), steps[i].id) == mine.end()) continue;
        if (!path.empty()) path += last + 1 == i ? " \u2192 " : " \u2026 ";
        path += lang == Lang::zh ? steps[i].label_zh : steps[i].label;
        last = i;
    }
    return path.empty() ? path : format_in(lang, "map: {}", path);
}

}  // namespace attn::lessons
