// Heatmaps of attention matrices: terminal text (plain or coloured) and SVG.
// See attn/viz/heatmap.hpp for what each function promises.
#include "attn/viz/heatmap.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/utf8.hpp"
#include "attn/viz/svg.hpp"

namespace attn {

// ---------------------------------------------------------------- UTF-8 text

namespace {

int cp_width(char32_t cp) {
    if (cp < 0x20) return 0;
    if ((cp >= 0x0300 && cp <= 0x036F) || cp == 0x200B) return 0;  // combining marks, zero-width space
    const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                      (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
                      (cp >= 0x20000 && cp <= 0x3FFFD);
    return wide ? 2 : 1;
}

// Valid UTF-8 with control characters replaced: what a terminal may safely show.
std::string sanitize_terminal(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const char32_t cp = utf8_next(s, i);
        if (cp < 0x20 || cp == 0x7F) out += '?';  // an escape sequence in a label must not reach the terminal
        else utf8_append(out, cp);
    }
    return out;
}

// Cuts a label to at most `width` columns, marking the cut with '~'.
std::string fit_label(std::string_view raw, int width) {
    const std::string s = sanitize_terminal(raw);
    if (display_width(s) <= width) return s;
    std::string out;
    int w = 0;
    for (size_t i = 0; i < s.size();) {
        const char32_t cp = utf8_next(s, i);
        const int cw = cp_width(cp);
        if (w + cw > width - 1) break;
        utf8_append(out, cp);
        w += cw;
    }
    return out + "~";
}

std::string pad_left(const std::string& s, int width) {
    const int w = display_width(s);
    return w >= width ? s : std::string(static_cast<size_t>(width - w), ' ') + s;
}
std::string pad_right(const std::string& s, int width) {
    const int w = display_width(s);
    return w >= width ? s : s + std::string(static_cast<size_t>(width - w), ' ');
}

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, int64_t n) {
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        out.push_back(static_cast<size_t>(i) < labels.size() ? labels[static_cast<size_t>(i)] : std::to_string(i));
    return out;
}

// The value range the colours span: the style's, or the finite values' own.
void value_range(const std::vector<float>& v, double want_lo, double want_hi, double& lo, double& hi) {
    lo = want_lo;
    hi = want_hi;
    if (lo < hi) return;
    lo = INFINITY;
    hi = -INFINITY;
    for (float x : v)
        if (std::isfinite(x)) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
    if (!(lo < hi)) {  // no finite values, or all equal
        if (!std::isfinite(lo)) lo = 0;
        hi = lo + 1;
    }
}

double unit(double v, double lo, double hi) { return std::clamp((v - lo) / (hi - lo), 0.0, 1.0); }

// The value in exactly 4 columns. Exact zero is "0", so a masked weight and
// a tiny one (".00") look different.
std::string cell4(float v) {
    if (std::isnan(v)) return " nan";
    if (std::isinf(v)) return v > 0 ? " inf" : "-inf";
    if (v == 0.0f) return "   0";
    const double a = std::fabs(double(v));
    std::string s;
    if (a < 0.995) {
        s = fmt::format("{:.2f}", a).substr(1);  // ".95"
        s = (v < 0 ? "-" : " ") + s;
    } else if (a < 9.995) {
        s = fmt::format("{:.2f}", double(v));
        if (v < 0) s = fmt::format("{:.1f}", double(v));
    } else if (a < 99.95) {
        s = fmt::format("{:.1f}", double(v));
        if (v < 0) s = fmt::format("{:.0f}", double(v));
    } else if (a < 999.5 || (v > 0 && a < 9999.5)) {
        s = fmt::format("{:.0f}", double(v));
    } else {
        // 3e10, -3e4: mantissa digit and exponent without sign or padding
        const int e = static_cast<int>(std::floor(std::log10(a)));
        int m = static_cast<int>(std::lround(a / std::pow(10.0, e)));
        int ee = e;
        if (m == 10) m = 1, ++ee;
        s = fmt::format("{}{}e{}", v < 0 ? "-" : "", m, ee);
        if (s.size() > 4) s = v < 0 ? "-big" : " big";
    }
    return pad_left(s, 4);
}

std::string ansi_bg(const Rgb& c, bool truecolor) {
    if (truecolor) return fmt::format("\x1b[48;2;{};{};{}m", c.r, c.g, c.b);
    // nearest level of the xterm 6x6x6 cube: 0, 95, 135, 175, 215, 255
    auto level = [](int x) { return x < 48 ? 0 : x < 115 ? 1 : (x - 35) / 40; };
    return fmt::format("\x1b[48;5;{}m", 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b));
}
std::string ansi_fg_for(const Rgb& c) {
    const double lum = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b;
    return lum > 140 ? "\x1b[30m" : "\x1b[97m";
}
const char* kReset = "\x1b[0m";
const Rgb kNonFinite{64, 64, 64};

}  // namespace

int display_width(std::string_view text) {
    int w = 0;
    for (size_t i = 0; i < text.size();) w += cp_width(utf8_next(text, i));  // a bad byte: U+FFFD, one column
    return w;
}

Rgb heat_color(double t) {
    // five anchors of a viridis-like ramp, linearly interpolated
    static const Rgb anchors[5] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (!(t >= 0)) t = 0;  // NaN too
    if (t > 1) t = 1;
    const double x = t * 4;
    const int i = std::min(3, static_cast<int>(x));
    const double f = x - i;
    auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
    return {mix(anchors[i].r, anchors[i + 1].r), mix(anchors[i].g, anchors[i + 1].g),
            mix(anchors[i].b, anchors[i + 1].b)};
}

HeatmapPanel make_panel(std::string title, const float* values, int64_t rows, int64_t cols,
                        std::vector<std::string> row_labels, std::vector<std::string> col_labels) {
    if (rows < 0 || cols < 0) throw InputError(fmt::format("heatmap of negative size {} x {}", rows, cols));
    HeatmapPanel p;
    p.title = std::move(title);
    p.rows = rows;
    p.cols = cols;
    p.values.assign(values, values + rows * cols);
    p.row_labels = std::move(row_labels);
    p.col_labels = std::move(col_labels);
    return p;
}

// ------------------------------------------------------------- terminal text

std::string render_heatmap(const HeatmapPanel& panel, const HeatmapStyle& style) {
    // panel.values [rows, cols]; one text line per row
    if (static_cast<int64_t>(panel.values.size()) != panel.rows * panel.cols)
        throw InputError(fmt::format("heatmap '{}': {} values for {} x {} cells", panel.title,
                                     panel.values.size(), panel.rows, panel.cols));
    double lo = 0, hi = 1;
    value_range(panel.values, style.vmin, style.vmax, lo, hi);
    const auto rlab = labels_or_indices(panel.row_labels, panel.rows);
    const auto clab = labels_or_indices(panel.col_labels, panel.cols);

    int label_w = 1;
    for (const auto& l : rlab)
        label_w = std::max(label_w, std::min(display_width(sanitize_terminal(l)), style.max_label));
    bool compact = style.cells == HeatmapStyle::Cells::Compact;
    if (style.cells == HeatmapStyle::Cells::Auto)
        compact = label_w + 1 + 5 * panel.cols > style.max_width;
    // number cells widen (up to 9 columns) so that short column labels fit whole
    int cell_w = compact ? 2 : 5;
    if (!compact) {
        int widest = 0;
        for (const auto& l : clab) widest = std::max(widest, display_width(sanitize_terminal(l)));
        const int want = std::clamp(widest + 1, 5, 9);
        if (label_w + 1 + want * panel.cols <= style.max_width) cell_w = want;
    }
    const std::string cell_pad(static_cast<size_t>(std::max(0, cell_w - 5)), ' ');

    std::string out;
    if (!panel.title.empty()) out += sanitize_terminal(panel.title) + "\n";

    // pass 1: the header of column labels; if any does not fit its cell, the
    // header shows indices and a key line below maps index -> label
    bool fits = true;
    for (const auto& l : clab)
        if (display_width(sanitize_terminal(l)) > cell_w - 1) fits = false;
    out += std::string(static_cast<size_t>(label_w + 1), ' ');
    if (compact && !fits) {
        // narrow cells: an index every 10 columns, written from its cell rightwards
        std::string line(static_cast<size_t>(panel.cols * cell_w), ' ');
        for (int64_t j = 0; j < panel.cols; j += 10) {
            const std::string n = std::to_string(j);
            const auto at = static_cast<size_t>(j * cell_w);
            line.replace(at, std::min(n.size(), line.size() - at), n);
        }
        out += line;
    } else {
        for (int64_t j = 0; j < panel.cols; ++j) {
            const std::string l = fits ? sanitize_terminal(clab[static_cast<size_t>(j)]) : std::to_string(j);
            out += pad_left(display_width(l) > cell_w ? l.substr(l.size() - static_cast<size_t>(cell_w)) : l, cell_w);
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";

    // pass 2: one line per row
    static const char* shades[5] = {"  ", "\u2591\u2591", "\u2592\u2592", "\u2593\u2593", "\u2588\u2588"};
    for (int64_t i = 0; i < panel.rows; ++i) {
        out += pad_right(fit_label(rlab[static_cast<size_t>(i)], style.max_label), label_w) + " ";
        for (int64_t j = 0; j < panel.cols; ++j) {
            const float v = panel.values[static_cast<size_t>(i * panel.cols + j)];
            const bool finite = std::isfinite(v);
            const double t = finite ? unit(v, lo, hi) : 0.0;
            if (style.color) {
                const Rgb c = finite ? heat_color(t) : kNonFinite;
                out += ansi_bg(c, style.truecolor);
                if (compact) out += "  ";
                else out += ansi_fg_for(c) + cell_pad + " " + cell4(v);
                out += kReset;
            } else if (compact) {
                if (v == 0.0f) out += " \u00b7";        // exactly zero
                else if (!finite) out += std::isnan(v) ? " ?" : " -";
                else out += shades[std::min(4, static_cast<int>(t * 5))];
            } else {
                out += cell_pad;
                out += ' ';
                out += cell4(v);
            }
        }
        out += "\n";
    }

    // pass 3: the legend (and the column key when labels were too wide)
    if (!fits && !panel.col_labels.empty()) {  // indices need no key
        std::string key = "  " + style.legend.columns;
        int w = display_width(key);
        for (int64_t j = 0; j < panel.cols; ++j) {
            const std::string item = fmt::format(" {}={}", j, fit_label(clab[static_cast<size_t>(j)], style.max_label));
            const int iw = display_width(item);
            if (w + iw > style.max_width) {
                out += key + "\n";
                key = std::string(static_cast<size_t>(display_width("  " + style.legend.columns)), ' ');
                w = display_width(key);
            }
            key += item;
            w += iw;
        }
        out += key + "\n";
    }
    if (style.color) {
        out += fmt::format("  {} {:.3g} ", style.legend.scale, lo);
        for (int k = 0; k <= 10; ++k) out += ansi_bg(heat_color(k / 10.0), style.truecolor) + "  " + kReset;
        out += fmt::format(" {:.3g}", hi);
        if (compact) out += "  (" + style.legend.grey + ")";
        out += "\n";
    } else if (compact) {
        const double step = (hi - lo) / 5;
        out += fmt::format("  {} '  ' <{:.2g}  \u2591 <{:.2g}  \u2592 <{:.2g}  \u2593 <{:.2g}  \u2588 {} {:.2g};"
                           "  \u00b7 {},  - -inf\n",
                           style.legend.shade, lo + step, lo + 2 * step, lo + 3 * step, lo + 4 * step,
                           style.legend.up_to, hi, style.legend.exactly_zero);
    }
    return out;
}

// ----------------------------------------------------------------------- SVG

namespace {
std::string hex(const Rgb& c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }
std::string num(double v) { return fmt::format("{:.4g}", v); }
}  // namespace

std::string heatmap_svg(const std::vector<HeatmapPanel>& panels, const SvgOptions& opt) {
    // layout: title, then panels in a grid (each: title, column labels,
    // row labels + cells), then a vertical colour bar on the right
    if (panels.empty()) throw InputError("heatmap SVG: nothing to draw (no panels)");
    std::vector<float> all;
    int64_t max_n = 1, max_rlab = 1, max_clab = 1, max_title = 0;
    bool any_zero = false;
    for (const auto& p : panels) {
        if (static_cast<int64_t>(p.values.size()) != p.rows * p.cols)
            throw InputError(fmt::format("heatmap '{}': {} values for {} x {} cells", p.title, p.values.size(), p.rows,
                                         p.cols));
        all.insert(all.end(), p.values.begin(), p.values.end());
        max_title = std::max<int64_t>(max_title, display_width(p.title));
        for (float v : p.values) any_zero = any_zero || v == 0.0f;
        max_n = std::max({max_n, p.rows, p.cols});
        for (const auto& l : labels_or_indices(p.row_labels, p.rows))
            max_rlab = std::max<int64_t>(max_rlab, display_width(l));
        for (const auto& l : labels_or_indices(p.col_labels, p.cols))
            max_clab = std::max<int64_t>(max_clab, display_width(l));
    }
    max_rlab = std::min<int64_t>(max_rlab, 16);
    max_clab = std::min<int64_t>(max_clab, 16);
    double lo = 0, hi = 1;
    value_range(all, opt.vmin, opt.vmax, lo, hi);

    const double cs = std::clamp(std::floor(420.0 / double(max_n)), 3.0, 32.0);  // cell size
    const double font = std::clamp(cs * 0.55, 9.0, 12.0);
    const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(font * 1.1 / cs)));  // label stride
    const double rlab_w = double(max_rlab) * font * 0.62 + 8;
    const double clab_h = double(max_clab) * font * 0.62 + 8;
    const double ptitle_h = 20;
    // a panel is as wide as its cells and labels, or its title (13 px bold, ~8 px a character)
    const double grid_w = std::max(rlab_w + double(max_n) * cs, double(max_title) * 8.0 + 4),
                 grid_h = ptitle_h + clab_h + double(max_n) * cs;
    const double margin = 20, gap = 24, top = opt.subtitle.empty() ? 44 : 62;
    const int per_row = static_cast<int>(std::clamp<double>(std::floor(1100.0 / (grid_w + gap)), 1.0,
                                                            double(panels.size())));
    const int64_t grid_rows = (static_cast<int64_t>(panels.size()) + per_row - 1) / per_row;
    const double bar_w = 16, bar_h = std::min(240.0, double(max_n) * cs), bar_x_off = 30, bar_label_w = 80;
    const double width = margin * 2 + per_row * (grid_w + gap) + bar_x_off + bar_w + bar_label_w;
    const double height =
        std::max(top + double(grid_rows) * (grid_h + gap) + margin, top + ptitle_h + clab_h + bar_h + 60);

    SvgDocument svg(width, height, opt.title);
    svg.text(margin, 28, opt.title, {.font_size = 16, .bold = true});
    if (!opt.subtitle.empty()) svg.text(margin, 48, opt.subtitle, {.fill = "#444"});

    // pass 1: the panels
    for (size_t pi = 0; pi < panels.size(); ++pi) {
        const auto& p = panels[pi];
        const double ox = margin + double(static_cast<int64_t>(pi) % per_row) * (grid_w + gap);
        const double oy = top + double(static_cast<int64_t>(pi) / per_row) * (grid_h + gap);
        const double cx = ox + rlab_w, cy = oy + ptitle_h + clab_h;  // top-left of the cells
        const auto rlab = labels_or_indices(p.row_labels, p.rows);
        const auto clab = labels_or_indices(p.col_labels, p.cols);
        svg.text(ox, oy + 14, p.title, {.font_size = 13, .bold = true});
        for (int64_t j = 0; j < p.cols; j += every)
            svg.text(cx + (double(j) + 0.5) * cs + font * 0.35, cy - 4, fit_label(clab[static_cast<size_t>(j)], 16),
                     {.font_size = font}, -90);
        for (int64_t i = 0; i < p.rows; i += every)
            svg.text(cx - 4, cy + (double(i) + 0.5) * cs + font * 0.35, fit_label(rlab[static_cast<size_t>(i)], 16),
                     {.font_size = font, .anchor = "end"});
        for (int64_t i = 0; i < p.rows; ++i)
            for (int64_t j = 0; j < p.cols; ++j) {
                const float v = p.values[static_cast<size_t>(i * p.cols + j)];
                const bool finite = std::isfinite(v);
                // exactly 0 (a masked weight) is hatched, so it differs from a tiny weight
                const std::string fill = v == 0.0f ? "url(#zero)"
                                         : finite  ? hex(heat_color(unit(v, lo, hi)))
                                                   : "#bbbbbb";
                const std::string val = finite ? num(v) : (std::isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf"));
                const std::string tip =
                    fmt::format("{} \u2192 {}: {}", rlab[static_cast<size_t>(i)], clab[static_cast<size_t>(j)], val);
                svg.rect(cx + double(j) * cs, cy + double(i) * cs, cs, cs, {.fill = fill}, tip);
            }
        const SvgStyle frame{.fill = "none", .stroke = "#888", .stroke_width = 0.5};
        svg.rect(cx, cy, double(p.cols) * cs, double(p.rows) * cs, frame);
    }

    // pass 2: the colour bar, top = vmax, bottom = vmin
    const double bx = margin + per_row * (grid_w + gap) + bar_x_off - gap, by = top + ptitle_h + clab_h;
    svg.hatch("zero", hex(heat_color(unit(0.0, lo, hi))), "#9a9a9a");
    std::vector<std::string> ramp;
    for (int k = 0; k <= 10; ++k) ramp.push_back(hex(heat_color(k / 10.0)));
    svg.vertical_gradient("heat", ramp);
    const SvgStyle small{.font_size = 10};
    svg.text(bx, by - 8, opt.value_name, {.font_size = 11});
    svg.rect(bx, by, bar_w, bar_h, {.fill = "url(#heat)", .stroke = "#888", .stroke_width = 0.5});
    for (int k = 0; k <= 4; ++k) {
        const double t = k / 4.0, y = by + bar_h * (1 - t);
        svg.line(bx + bar_w, y, bx + bar_w + 4, y, {.stroke = "#444"});
        svg.text(bx + bar_w + 6, y + 3.5, num(lo + (hi - lo) * t), small);
    }
    svg.rect(bx, by + bar_h + 10, bar_w, 10, {.fill = "#bbbbbb"});
    svg.text(bx + bar_w + 6, by + bar_h + 19, "-inf / NaN", small);
    if (any_zero) {
        svg.rect(bx, by + bar_h + 26, bar_w, 10, {.fill = "url(#zero)", .stroke = "#888", .stroke_width = 0.5});
        svg.text(bx + bar_w + 6, by + bar_h + 35, "exactly 0", small);
    }
    return svg.str();
}

}  // namespace attn
