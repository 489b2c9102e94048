#include "pipeline.hpp"

#include <algorithm>
#include <map>

#include "attn/viz/svg.hpp"

namespace attn::lessons {

const std::vector<PipelineStep>& pipeline_steps() {
    static const std::vector<PipelineStep> s = {
        {"embed", "embed + pos", "嵌入 + 位置", "[B, T, D]"},
        {"ln1", "LN1", "LN1", "[B, T, D]"},
        {"qkv", "Q, K, V", "Q, K, V", "[B, H, T, Dk]"},
        {"scores", "Q·Kᵀ", "Q·Kᵀ", "[B, H, T, T]"},
        {"scale", "÷ √Dk", "÷ √Dk", "[B, H, T, T]"},
        {"mask", "mask", "掩码", "[B, H, T, T]"},
        {"softmax", "softmax", "softmax", "[B, H, T, T]"},
        {"dropout", "dropout", "dropout", "[B, H, T, T]"},
        {"weighted", "· V", "· V", "[B, H, T, Dv]"},
        {"merge", "merge heads", "合并各头", "[B, T, H·Dv]"},
        {"out_proj", "· W_oᵀ", "· W_oᵀ", "[B, T, D]"},
        {"residual1", "+ x", "+ x", "[B, T, D]"},
        {"ln2", "LN2", "LN2", "[B, T, D]"},
        {"ffn", "feed-forward", "前馈网络", "[B, T, D]"},
        {"residual2", "+ x", "+ x", "[B, T, D]"},
        {"logits", "LN_f · headᵀ", "LN_f · headᵀ", "[B, T, V]"},
    };
    return s;
}

std::vector<std::string> lesson_steps(std::string_view slug) {
    // the steps each lesson zooms into (one place, so the picture and the lessons agree)
    static const std::map<std::string, std::vector<std::string>, std::less<>> m = {
        {"soft-lookup", {"scores", "softmax", "weighted"}},
        {"qkv", {"qkv"}},
        {"dot-product", {"scores"}},
        {"softmax", {"softmax"}},
        {"why-sqrt-dk", {"scale", "softmax"}},
        {"alternatives", {"scale"}},
        {"one-head", {"qkv", "scores", "scale", "softmax", "weighted"}},
        {"masks", {"mask", "softmax"}},
        {"smoke-test", {"mask", "softmax"}},
        {"multi-head", {"qkv", "merge", "out_proj", "residual1", "ln1", "ln2", "ffn", "residual2", "embed", "logits"}},
        {"head-entropy", {"softmax"}},
        {"dropout", {"dropout"}},
        {"debugging", {"qkv", "scores", "scale"}},
        {"memory", {"scores", "softmax", "weighted"}},
        {"real-heads", {"mask", "softmax"}},
        {"backward", {"scores", "softmax", "weighted"}},
        {"positional", {"embed"}},
        {"gqa", {"qkv"}},
        {"rope-alibi", {"qkv", "scores"}},
        {"cross-attention", {"qkv", "mask"}},
        {"kv-cache", {"qkv", "mask"}},
        {"induction-heads", {"scores", "weighted", "out_proj", "logits"}},
    };
    const auto it = m.find(slug);
    return it == m.end() ? std::vector<std::string>{} : it->second;
}

std::string pipeline_svg(const std::vector<std::string>& highlight, std::string_view title, Lang lang,
                         const std::vector<std::string>& notes) {
    const auto& steps = pipeline_steps();
    const size_t per_row = (steps.size() + 1) / 2;
    constexpr double kW = 104, kH = 46, kGap = 22, kX0 = 16, kY0 = 44;
    const double row_h = notes.empty() ? 96 : 124;
    const double width = kX0 * 2 + static_cast<double>(per_row) * kW + static_cast<double>(per_row - 1) * kGap;
    SvgDocument doc(width, kY0 + row_h + kH + (notes.empty() ? 8 : 48), title);  // the second row and its notes
    doc.text(kX0, 22, title, {.font_size = 14, .bold = true});
    const SvgStyle arrow{.fill = "#6b7280", .stroke = "#6b7280", .stroke_width = 1.4};
    auto box_at = [&](size_t i) {
        const size_t row = i / per_row, col = i % per_row;
        return SvgBox{kX0 + static_cast<double>(col) * (kW + kGap), kY0 + static_cast<double>(row) * row_h,
                      kX0 + static_cast<double>(col) * (kW + kGap) + kW, kY0 + static_cast<double>(row) * row_h + kH};
    };
    for (size_t i = 0; i < steps.size(); ++i) {
        const PipelineStep& s = steps[i];
        const bool on = std::find(highlight.begin(), highlight.end(), s.id) != highlight.end();
        const SvgBox b = box_at(i);
        const std::string label = lang == Lang::zh ? s.label_zh : s.label;
        doc.rect(b.x0, b.y0, kW, kH,
                 on ? SvgStyle{.fill = "#fde68a", .stroke = "#b45309", .stroke_width = 2}
                    : SvgStyle{.fill = "#f3f4f6", .stroke = "#9ca3af", .stroke_width = 1},
                 label + "  " + s.shape);
        doc.text((b.x0 + b.x1) / 2, b.y0 + 20, label, {.font_size = 13, .bold = on, .anchor = "middle"});
        doc.text((b.x0 + b.x1) / 2, b.y0 + 37, s.shape, {.fill = "#4b5563", .font_size = 10, .anchor = "middle"});
        if (i < notes.size() && !notes[i].empty()) {
            // wrapped after a comma to the box's width (plus the gap), up to three lines
            std::vector<std::string> lines{""};
            size_t at = 0;
            while (at < notes[i].size()) {
                size_t next = notes[i].find(", ", at);
                const std::string piece =
                    notes[i].substr(at, next == std::string::npos ? std::string::npos : next + 1 - at);
                const std::string joined = lines.back().empty() ? piece : lines.back() + " " + piece;
                const SvgBox e = svg_text_extent(0, 0, joined, 10, false, "middle");
                if (!lines.back().empty() && e.x1 - e.x0 > kW + kGap - 6) lines.push_back(piece);
                else lines.back() = joined;
                at = next == std::string::npos ? notes[i].size() : next + 2;
            }
            for (size_t k = 0; k < lines.size(); ++k)
                doc.text((b.x0 + b.x1) / 2, b.y1 + 15 + 12 * static_cast<double>(k), lines[k],
                         {.fill = "#1f2937", .font_size = 10, .anchor = "middle"});
        }
        if (i + 1 == steps.size()) continue;
        const SvgBox n = box_at(i + 1);
        if (n.y0 == b.y0) {  // the next box on the same row
            doc.line(b.x1, (b.y0 + b.y1) / 2, n.x0 - 4, (n.y0 + n.y1) / 2, arrow);
            doc.polyline(
                {{n.x0 - 9, (n.y0 + n.y1) / 2 - 4}, {n.x0 - 3, (n.y0 + n.y1) / 2}, {n.x0 - 9, (n.y0 + n.y1) / 2 + 4}},
                arrow);
        } else {  // down to the start of the next row
            const double ymid = b.y1 + (n.y0 - b.y1) / 2 + (notes.empty() ? 0 : 16);
            doc.polyline({{(b.x0 + b.x1) / 2, b.y1 + (notes.empty() ? 0 : 46)},
                          {(b.x0 + b.x1) / 2, ymid},
                          {(n.x0 + n.x1) / 2, ymid},
                          {(n.x0 + n.x1) / 2, n.y0 - 3}},
                         {.fill = "none", .stroke = "#6b7280", .stroke_width = 1.4});
            doc.polyline(
                {{(n.x0 + n.x1) / 2 - 4, n.y0 - 9}, {(n.x0 + n.x1) / 2, n.y0 - 3}, {(n.x0 + n.x1) / 2 + 4, n.y0 - 9}},
                arrow);
        }
    }
    return doc.str();
}

}  // namespace attn::lessons
