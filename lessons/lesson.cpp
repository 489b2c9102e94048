// The basics of a LessonContext: translation, printing, sections, prose, code, shapes, figures, heatmaps.
#include "lesson.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/args.h>
#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "context_internal.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

std::string LessonContext::tr(std::string_view english) { return std::string(translate(opt_.lang, english)); }

std::string LessonContext::text(std::string_view s) {
    if (opt_.lang == Lang::en || produced_.count(std::string(s)) > 0) return std::string(s);
    return tr(s);
}

std::string LessonContext::format_translated(std::string_view english_template, fmt::format_args args) {
    if (opt_.lang == Lang::en) return fmt::vformat(english_template, args);
    std::string out = vformat_in(opt_.lang, english_template, args);
    produced_.insert(out);
    return out;
}

std::string LessonContext::fv(std::string_view english_template, const std::vector<std::string>& args) {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (const std::string& a : args) store.push_back(a);
    return format_translated(english_template, store);
}

LessonContext::LessonContext(std::ostream& out, RunOptions opt, int lesson_number)
    : out_(out), opt_(std::move(opt)), number_(lesson_number) {
    record_ = {{"sections", nlohmann::json::array()},     {"shapes", nlohmann::json::array()},
               {"checks", nlohmann::json::array()},       {"not_supported", nlohmann::json::array()},
               {"unmeasured", nlohmann::json::array()},   {"qualified", nlohmann::json::array()},
               {"inconclusive", nlohmann::json::array()}, {"source_errors", nlohmann::json::array()},
               {"predictions", nlohmann::json::array()},  {"exercises", nlohmann::json::array()},
               {"figures", nlohmann::json::object()},     {"tables", nlohmann::json::object()},
               {"heatmaps", nlohmann::json::object()}};
}

void LessonContext::print(std::string_view s) {
    if (!opt_.json) out_ << s;
}

void LessonContext::line_item() {
    if (after_block_) print("\n");
    after_block_ = false;
}

std::string LessonContext::paint(std::string_view s, const char* ansi) const {
    if (!opt_.color) return std::string(s);
    return fmt::format("{}{}\x1b[0m", ansi, s);
}

void LessonContext::section(std::string_view title) {
    if (sections_ > 0 && opt_.pause && !opt_.json) {
        out_.flush();
        opt_.pause();
    }
    ++sections_;
    after_block_ = false;
    const std::string t = text(title);
    record_["sections"].push_back(t);
    const std::string head = fmt::format("{}.{} {}", number_, sections_, t);
    const int rule = std::max(3, opt_.width - display_width(head) - 4);
    std::string line;
    for (int k = 0; k < rule; ++k) line += "\u2500";
    print(fmt::format("\n{}\n", paint(fmt::format("\u2500\u2500 {} {}", head, line), kBold)));
}

void LessonContext::para(std::string_view prose) {
    after_block_ = true;
    print(fmt::format("\n{}", wrap(text(prose), opt_.width, "")));
}

void LessonContext::code(std::string_view lines) {
    after_block_ = true;
    std::string out = "\n";
    size_t i = 0;
    while (i <= lines.size()) {
        const size_t j = std::min(lines.find('\n', i), lines.size());
        for (const std::string& l : break_line(lines.substr(i, j - i), opt_.width - 4, 2)) out += "    " + l + "\n";
        i = j + 1;
    }
    print(paint(out, kCyan));
}

void LessonContext::shape(std::string_view name_en, const Shape& s, std::string_view how_en) {
    const std::string name = text(name_en), how = text(how_en);
    record_["shapes"].push_back({{"name", name}, {"shape", s}, {"how", how}});
    // padded on display columns (a Chinese name is twice as wide as its bytes/3)
    auto pad = [](std::string v, int w) {
        return v + std::string(static_cast<size_t>(std::max(0, w - display_width(v))), ' ');
    };
    std::string line = "  " + tr("shape") + "  " + pad(name, 14) + " " + pad(shape_str(s), 16);
    // a line the lesson has already printed (the same tensor made again) is not repeated
    if (!shown_shapes_.insert(line + "\x1f" + how).second) return;
    line_item();
    std::string out;
    if (how.empty()) {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out = line + "\n";
    } else {
        const int lead = display_width(line) + 1;
        if (lead + display_width(how) <= opt_.width) {
            out = line + " " + how + "\n";
        } else if (opt_.width - lead >= 20) {
            out = wrap_hanging(how, opt_.width, line + " ", std::string(static_cast<size_t>(lead), ' '));
        } else {
            while (!line.empty() && line.back() == ' ') line.pop_back();
            out = line + "\n" + wrap(how, opt_.width, "         ");
        }
    }
    print(paint(out.substr(0, out.size() - 1), kDim) + "\n");
}

void LessonContext::shape(std::string_view name, const Tensor& t, std::string_view how) { shape(name, t.shape, how); }

void LessonContext::figure(std::string_view key, nlohmann::json value) {
    record_["figures"][std::string(key)] = std::move(value);
}

void LessonContext::heatmap(std::string_view key, const HeatmapPanel& panel_en, double vmin, double vmax, bool in_svg) {
    HeatmapPanel panel = panel_en;  // its title in the run's language (labels are data)
    panel.title = text(panel_en.title);
    if (in_svg) panels_.push_back(panel);
    record_["heatmaps"][std::string(key)] = {{"title", panel.title},
                                             {"rows", panel.rows},
                                             {"cols", panel.cols},
                                             {"row_labels", panel.row_labels},
                                             {"col_labels", panel.col_labels},
                                             {"values", panel.values}};
    if (opt_.json) return;
    after_block_ = true;
    HeatmapStyle st;
    st.color = opt_.color;
    st.truecolor = opt_.truecolor;
    st.vmin = vmin;
    st.vmax = vmax;
    st.max_width = table_width() - 2;  // printed indented by 2
    st.legend = {tr("columns:"), tr("shade:"), tr("up to"), tr("exactly 0"), tr("scale:"), tr("grey: -inf/nan")};
    std::string text = render_heatmap(panel, st);
    std::string indented = "\n";
    size_t i = 0;
    while (i < text.size()) {
        const size_t j = std::min(text.find('\n', i), text.size());
        indented += "  " + text.substr(i, j - i) + "\n";
        i = j + 1;
    }
    print(indented);
}

void LessonContext::busy(std::string_view what) {
    if (opt_.progress) opt_.progress(text(what));
}
void LessonContext::idle() {
    if (opt_.progress) opt_.progress("");
}

}  // namespace attn::lessons
