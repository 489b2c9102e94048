// attn/viz/chart.hpp: the one line chart of the library, drawn into an SvgDocument.
//
// Training curves, experiment panels and the log-log scaling plots all go through
// line_chart: it lays out one panel inside a frame (title, plot area, tick labels,
// axis titles, legend), chooses round ticks (1, 2, 5 x 10^k; powers of two for
// byte axes on a log scale), drops ticks until their labels keep apart, and draws
// the series in the order of the legend, so the last one listed is on top.
//
// Layout guarantees (checked by tests/test_chart.cpp with the document's text
// extent rule, svg_text_extent): every text of the chart lies inside the frame
// apart from what the frame's owner lets spill, and no two texts overlap.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attn/viz/svg.hpp"

namespace attn::viz {

// How a series is drawn. Auto: a line, with markers when the series has few
// points (at most 30), so a sparse series shows where it was measured.
enum class Draw { Auto, Line, Markers, LineAndMarkers };

struct Series {
    std::string label;             // legend text
    std::vector<double> x{}, y{};  // paired by index; a non-finite point (or <= 0 on a log axis) is skipped
    std::string color{};           // empty: the palette's colour for the series' index
    std::string dash{};            // stroke-dasharray ("6 4"); empty: solid
    double width = 1.8;            // stroke width
    Draw draw = Draw::Auto;
    bool right_axis = false;       // plotted against the chart's y2 axis
};

struct Axis {
    std::string title{};
    bool log = false;              // log10 scale; ticks 1, 2, 5 x 10^k
    bool bytes = false;            // with log: ticks at powers of two, labels in B/KiB/MiB
    bool zero = false;             // linear: the range includes 0
    double min = std::numeric_limits<double>::quiet_NaN();  // fixed ends; NaN: from the data
    double max = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> ticks{};   // candidate ticks (thinned if labels would overlap); empty: chosen
    std::function<std::string(double)> label{};  // tick text; empty: a number with the step's decimals
    std::string color{};           // tick labels and title (a second y axis takes its series' colour)
};

enum class LegendPlace { Below, Right };

struct LineChart {
    std::string title{};           // bold, above the plot
    Axis x{}, y{}, y2{};           // y2: used when a series has right_axis
    std::vector<Series> series{};
    LegendPlace legend = LegendPlace::Below;
};

// Draws `chart` inside `frame` of `doc` (the whole panel: title, axes, legend)
// and returns the plot area it used.
SvgBox line_chart(SvgDocument& doc, const SvgBox& frame, const LineChart& chart);

// Round ticks covering [lo, hi]: steps of 1, 2 or 5 x 10^k, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// Ticks for a log axis over [lo, hi] (positive values): 1, 2, 5 x 10^k, decades
// only when those are too many, round linear ticks when fewer than two fit.
std::vector<double> log_ticks(double lo, double hi);

// A tick value written with as many decimals as `step` needs ("0.2", "1.5", "300").
std::string tick_text(double v, double step);

// The ten colours (matplotlib's tab10) series take by index.
const std::vector<std::string>& palette();

}  // namespace attn::viz
