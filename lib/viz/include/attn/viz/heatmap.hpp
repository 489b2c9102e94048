// attn/viz/heatmap.hpp: pictures of attention matrices, for the terminal and as SVG.
//
// A heatmap is a (rows, cols) matrix of floats, row-major, with a label per
// row (queries) and per column (keys). The terminal renderer draws it as text:
// with colour, each cell is a coloured background carrying its value; without
// colour (the caller turned it off) it is plain text, so a pipe or a
// log file gets the numbers. The caller decides about colour (the library
// never looks at the terminal). heatmap_svg draws one or more panels with
// labels, a colour scale and a title, through the SVG writer (attn/viz/svg.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct HeatmapPanel {
    std::string title;                    // "batch 0, head 3"
    int64_t rows = 0, cols = 0;
    std::vector<float> values;            // [rows, cols], row-major
    std::vector<std::string> row_labels;  // empty: indices 0..rows-1
    std::vector<std::string> col_labels;  // empty: indices 0..cols-1
};

// Builds a panel from a pointer to a [rows, cols] block (copied).
HeatmapPanel make_panel(std::string title, const float* values, int64_t rows, int64_t cols,
                        std::vector<std::string> row_labels = {},
                        std::vector<std::string> col_labels = {});

struct HeatmapStyle {
    bool color = false;      // ANSI background colours (else plain text)
    bool truecolor = false;  // 24-bit colours instead of the 256-colour cube
    // Value range mapped onto the colour ramp. vmin >= vmax: take the range
    // of the finite values (for scores); the default suits weights in [0, 1].
    double vmin = 0.0, vmax = 1.0;
    // Cells: "number" shows each value with 2 decimals (5 columns a cell);
    // "compact" uses 2 columns a cell (shade glyphs without colour). Auto
    // picks compact when the numbers would not fit in max_width.
    enum class Cells { Auto, Number, Compact } cells = Cells::Auto;
    int max_width = 100;     // terminal columns available
    int max_label = 10;      // labels longer than this are cut (with a "~")
    // The legend's words, so a caller can print them in its reader's language.
    struct Legend {
        std::string columns = "columns:";       // the key of column labels too wide to print
        std::string shade = "shade:";           // the glyph legend (compact cells, no colour)
        std::string up_to = "up to";            // "█ up to 1"
        std::string exactly_zero = "exactly 0";  // "· exactly 0"
        std::string scale = "scale:";           // the colour legend
        std::string grey = "grey: -inf/nan";    // colour of non-finite cells
    } legend;
};

// The matrix as terminal text: optional title line, a header of column
// labels, one line per row (row label, then cells), and a legend line.
// Exact zeros print as "0", so a masked weight (exactly 0) and a tiny one
// (".00") are told apart; -inf prints as "-inf".
std::string render_heatmap(const HeatmapPanel& panel, const HeatmapStyle& style);

// The ramp: value t in [0, 1] -> RGB (a viridis-like perceptual scale).
struct Rgb {
    int r = 0, g = 0, b = 0;
};
Rgb heat_color(double t);

struct SvgOptions {
    std::string title;       // what is shown: "Attention weights, batch 0, all heads"
    std::string subtitle;    // e.g. the config; may be empty
    std::string value_name = "weight";  // the colour bar's caption
    double vmin = 0.0, vmax = 1.0;      // vmin >= vmax: range of the finite values
};

// A complete, standalone SVG document (XML declaration, one <svg> root): the
// panels in a grid, each cell a rectangle with a tooltip giving its value,
// row and column labels, a colour bar with ticks, and the title.
std::string heatmap_svg(const std::vector<HeatmapPanel>& panels, const SvgOptions& opt);

// Number of terminal columns a UTF-8 string takes (one per code point; East
// Asian wide characters count two). Used to align labels.
int display_width(std::string_view text);

}  // namespace attn
