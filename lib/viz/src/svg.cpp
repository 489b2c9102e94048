// The SVG writer (see attn/viz/svg.hpp).
#include "attn/viz/svg.hpp"


#include <fmt/format.h>

#include "attn/core/utf8.hpp"

namespace attn {

namespace {

std::string style_attributes(const SvgStyle& s) {
    std::string a;
    if (!s.fill.empty()) a += fmt::format(" fill=\"{}\"", xml_escape(s.fill));
    if (!s.stroke.empty()) a += fmt::format(" stroke=\"{}\"", xml_escape(s.stroke));
    if (s.stroke_width > 0) a += fmt::format(" stroke-width=\"{}\"", svg_number(s.stroke_width));
    if (!s.dash.empty()) a += fmt::format(" stroke-dasharray=\"{}\"", xml_escape(s.dash));
    if (s.font_size > 0) a += fmt::format(" font-size=\"{}\"", svg_number(s.font_size));
    if (s.bold) a += " font-weight=\"bold\"";
    if (!s.anchor.empty()) a += fmt::format(" text-anchor=\"{}\"", xml_escape(s.anchor));
    return a;
}

}  // namespace

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const char32_t cp = utf8_next(s, i);  // U+FFFD for a byte that is not UTF-8
        switch (cp) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                // XML 1.0 forbids most C0 controls and U+FFFE/U+FFFF
                if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF) break;
                utf8_append(out, cp);
        }
    }
    return out;
}

std::string svg_number(double v) {
    std::string s = fmt::format("{:.2f}", v);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

SvgDocument::SvgDocument(double width, double height, std::string_view title) {
    const std::string w = svg_number(width), h = svg_number(height);
    body_ = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                        "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
                        "font-size=\"12\">\n"
                        "<title>{2}</title>\n",
                        w, h, xml_escape(title));
    rect(0, 0, width, height, {.fill = "white"});
}

void SvgDocument::rect(double x, double y, double w, double h, const SvgStyle& style, std::string_view tooltip) {
    body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}", svg_number(x), svg_number(y),
                         svg_number(w), svg_number(h), style_attributes(style));
    body_ += tooltip.empty() ? "/>\n" : fmt::format("><title>{}</title></rect>\n", xml_escape(tooltip));
}

void SvgDocument::line(double x1, double y1, double x2, double y2, const SvgStyle& style) {
    body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}/>\n", svg_number(x1), svg_number(y1),
                         svg_number(x2), svg_number(y2), style_attributes(style));
}

void SvgDocument::polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style) {
    std::string pts;
    for (const auto& [x, y] : points)
        pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", svg_number(x), svg_number(y));
    body_ += fmt::format("<polyline points=\"{}\"{}/>\n", pts, style_attributes(style));
}

void SvgDocument::circle(double cx, double cy, double r, const SvgStyle& style) {
    body_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}/>\n", svg_number(cx), svg_number(cy), svg_number(r),
                         style_attributes(style));
}

void SvgDocument::text(double x, double y, std::string_view text, const SvgStyle& style, double rotate) {
    const std::string sx = svg_number(x), sy = svg_number(y);
    const std::string turn =
        rotate == 0 ? "" : fmt::format(" transform=\"rotate({} {} {})\"", svg_number(rotate), sx, sy);
    body_ += fmt::format("<text x=\"{}\" y=\"{}\"{}{}>{}</text>\n", sx, sy, style_attributes(style), turn,
                         xml_escape(text));
}

void SvgDocument::vertical_gradient(std::string_view id, const std::vector<std::string>& colors) {
    body_ += fmt::format("<defs><linearGradient id=\"{}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n", xml_escape(id));
    for (size_t k = 0; k < colors.size(); ++k) {
        const double offset = colors.size() > 1 ? static_cast<double>(k) / static_cast<double>(colors.size() - 1) : 0.0;
        body_ += fmt::format("<stop offset=\"{}\" stop-color=\"{}\"/>\n", svg_number(offset), xml_escape(colors[k]));
    }
    body_ += "</linearGradient></defs>\n";
}

void SvgDocument::hatch(std::string_view id, std::string_view background, std::string_view line_color) {
    body_ += fmt::format("<defs><pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
                         "<rect width=\"6\" height=\"6\" fill=\"{}\"/>"
                         "<path d=\"M0,6 L6,0\" stroke=\"{}\" stroke-width=\"0.8\"/></pattern></defs>\n",
                         xml_escape(id), xml_escape(background), xml_escape(line_color));
}

std::string SvgDocument::str() const { return body_ + "</svg>\n"; }

}  // namespace attn
