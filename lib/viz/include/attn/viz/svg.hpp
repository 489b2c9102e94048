// attn/viz/svg.hpp: the one SVG writer of the library, for heatmaps and plots.
//
// An SvgDocument is a standalone document: the XML declaration, one <svg> root
// (one font family), a <title> and a white background, then shapes and text in
// the order they are drawn. Every number is written one way (svg_number) and
// every piece of text and every attribute value is XML-escaped, so any label
// yields well-formed XML.
//
// Text never falls off the picture: the document estimates each text's extent
// (svg_text_extent, a conservative rule) and str() grows the canvas (width,
// height and viewBox, with the background) to hold every text and the size
// given at construction.
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

// A box in user units: x0 <= x1, y0 <= y1.
struct SvgBox {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The box a text element covers, estimated conservatively for the document's
// sans-serif font: 0.6 em per character (0.66 em bold; East Asian wide
// characters 1 em), 0.8 em above the baseline and 0.25 em below, placed by
// the anchor ("", "start", "middle", "end") and rotated by `rotate` degrees
// clockwise about (x, y). font_size 0 is the document's 12.
SvgBox svg_text_extent(double x, double y, std::string_view text, double font_size = 0, bool bold = false,
                       std::string_view anchor = "", double rotate = 0);

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

    // The document, closed; its canvas is the constructor's size grown to hold every text.
    std::string str() const;
    // The canvas str() writes: (0, 0, width, height) grown to every text's extent plus a 4-unit margin.
    SvgBox canvas() const;

private:
    std::string title_, body_;
    double width_ = 0, height_ = 0;
    SvgBox text_box_{};
    bool has_text_ = false;
};

}  // namespace attn
