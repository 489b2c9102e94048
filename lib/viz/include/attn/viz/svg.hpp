// attn/viz/svg.hpp: the one SVG writer of the library, for heatmaps and plots.
//
// An SvgDocument is a standalone document: the XML declaration, one <svg> root
// (one font family), a <title> and a white background, then shapes and text in
// the order they are drawn. Every number is written one way (svg_number) and
// every piece of text and every attribute value is XML-escaped, so any label
// yields well-formed XML.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

// Text made safe for XML character data and attribute values: & < > " '
// become entities, control characters other than tab/newline are dropped and
// invalid UTF-8 bytes become U+FFFD, so any token label yields valid XML.
std::string xml_escape(std::string_view text);

// A coordinate or length: at most 2 decimals, no trailing zeros ("12", "12.5", "-0.25").
std::string svg_number(double v);

// Presentation of a shape or a text; empty or zero fields are not written.
// Meant for designated initializers: {.fill = "none", .stroke = "#333"}.
struct SvgStyle {
    std::string fill{};       // "#1f77b4", "none", "url(#id)"; SVG's default is black
    std::string stroke{};
    double stroke_width = 0;
    std::string dash{};       // stroke-dasharray, "6 4"
    double font_size = 0;     // text only; 0: the document's 12
    bool bold = false;
    std::string anchor{};     // text-anchor: "middle", "end"; empty: start
};

class SvgDocument {
public:
    SvgDocument(double width, double height, std::string_view title);

    // tooltip: shown on hover (a <title> child); empty for none.
    void rect(double x, double y, double w, double h, const SvgStyle& style, std::string_view tooltip = "");
    void line(double x1, double y1, double x2, double y2, const SvgStyle& style);
    void polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style);
    void circle(double cx, double cy, double r, const SvgStyle& style);
    // (x, y) is the start of the baseline (or its middle/end, by anchor);
    // rotate: degrees clockwise about (x, y), -90 reads bottom to top.
    void text(double x, double y, std::string_view text, const SvgStyle& style = {}, double rotate = 0);

    // Paint servers, referred to as fill "url(#id)":
    // a gradient from colors[0] at the bottom to colors.back() at the top, evenly spaced;
    void vertical_gradient(std::string_view id, const std::vector<std::string>& colors);
    // a 6 px tile of `background` crossed by a thin diagonal line of `line_color`.
    void hatch(std::string_view id, std::string_view background, std::string_view line_color);

    // The document, closed.
    std::string str() const;

private:
    std::string body_;
};

}  // namespace attn
