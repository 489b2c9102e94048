// The SVG writer (see attn/viz/svg.hpp).
#include "attn/viz/svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "attn/viz/heatmap.hpp"

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

SvgBox svg_text_extent(double x, double y, std::string_view text, double font_size, bool bold, std::string_view anchor,
                       double rotate) {
    const double em = font_size > 0 ? font_size : 12.0;
    double len = 0;  // in em
    for (size_t i = 0; i < text.size();) {
        const size_t start = i;
        utf8_next(text, i);
        len += display_width(text.substr(start, i - start)) >= 2 ? 1.0 : (bold ? 0.66 : 0.6);
    }
    const double w = len * em;
    const double left = anchor == "middle" ? -w / 2 : anchor == "end" ? -w : 0.0;
    // the unrotated box relative to (x, y), then its four corners rotated
    const double bx[2] = {left, left + w}, by[2] = {-0.8 * em, 0.25 * em};
    const double pi = std::acos(-1.0), c = std::cos(rotate * pi / 180), s = std::sin(rotate * pi / 180);
    SvgBox box{1e300, 1e300, -1e300, -1e300};
    for (double px : bx)
        for (double py : by) {
            const double rx = x + px * c - py * s, ry = y + px * s + py * c;
            box.x0 = std::min(box.x0, rx), box.x1 = std::max(box.x1, rx);
            box.y0 = std::min(box.y0, ry), box.y1 = std::max(box.y1, ry);
        }
    return box;
}

SvgDocument::SvgDocument(double width, double height, std::string_view title)
    : title_(title), width_(width), height_(height) {}

SvgBox SvgDocument::canvas() const {
    SvgBox c{0, 0, width_, height_};
    if (has_text_) {
        const double m = 4;  // margin around text that would otherwise touch the edge
        c.x0 = std::min(c.x0, std::floor(text_box_.x0 - m));
        c.y0 = std::min(c.y0, std::floor(text_box_.y0 - m));
        c.x1 = std::max(c.x1, std::ceil(text_box_.x1 + m));
        c.y1 = std::max(c.y1, std::ceil(text_box_.y1 + m));
    }
    return c;
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
    const SvgBox e = svg_text_extent(x, y, text, style.font_size, style.bold, style.anchor, rotate);
    if (!has_text_) text_box_ = e;
    text_box_ = {std::min(text_box_.x0, e.x0), std::min(text_box_.y0, e.y0), std::max(text_box_.x1, e.x1),
                 std::max(text_box_.y1, e.y1)};
    has_text_ = true;
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

std::string SvgDocument::str() const {
    const SvgBox c = canvas();
    const std::string x = svg_number(c.x0), y = svg_number(c.y0);
    const std::string w = svg_number(c.x1 - c.x0), h = svg_number(c.y1 - c.y0);
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{2}\" height=\"{3}\" "
                       "viewBox=\"{0} {1} {2} {3}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
                       "font-size=\"12\">\n"
                       "<title>{4}</title>\n"
                       "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"white\"/>\n",
                       x, y, w, h, xml_escape(title_)) +
           body_ + "</svg>\n";
}

}  // namespace attn
