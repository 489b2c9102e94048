// The line chart (see attn/viz/chart.hpp).
//
// Layout, from the outside in: the title on top; the legend below (or right of)
// everything else; under the plot the x tick labels, then the x title; left of
// the plot the y tick labels (right-aligned), then the y title rotated; the y2
// axis mirrors it on the right. Every margin is measured from the texts it holds
// (svg_text_extent), so the plot area is what is left.
#include "attn/viz/chart.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace attn::viz {

namespace {

constexpr double kTickFont = 11, kTitleFont = 12, kChartTitleFont = 13;
constexpr double kLegendRow = 17, kLegendSample = 24, kGap = 6;

double text_width(const std::string& s, double font, bool bold = false) {
    const SvgBox b = svg_text_extent(0, 0, s, font, bold);
    return b.x1 - b.x0;
}

bool usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// One axis resolved: its ends (in data units), where its ticks go and their text.
struct Scale {
    bool log = false;
    double lo = 0, hi = 1;
    std::vector<double> ticks;
    std::vector<std::string> labels;
    double pos(double v) const {  // 0 at lo, 1 at hi
        return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    }
};

std::string bytes_text(double v) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    return fmt::format("{:g} {}", v, units[u]);
}

// Powers of two in [lo, hi], every k-th exponent (k aligned to 0) so that at most 7 remain.
std::vector<double> pow2_ticks(double lo, double hi) {
    const int e0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
    const int e1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
    for (int k : {1, 2, 3, 5, 10, 20}) {
        std::vector<double> t;
        for (int e = e0; e <= e1; ++e)
            if (((e % k) + k) % k == 0) t.push_back(std::ldexp(1.0, e));
        if (t.size() <= 7) return t;
    }
    return {lo, hi};
}

Scale make_scale(const Axis& a, double lo, double hi) {
    Scale s;
    s.log = a.log;
    const bool fixed_lo = std::isfinite(a.min), fixed_hi = std::isfinite(a.max);
    if (!(lo <= hi)) lo = s.log ? 1 : 0, hi = s.log ? 10 : 1;  // no data
    if (!s.log && a.zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
    if (fixed_lo) lo = a.min;
    if (fixed_hi) hi = a.max;
    if (s.log) {
        double l0 = std::log10(lo), l1 = std::log10(hi);
        if (l1 - l0 < 1e-9) l0 -= 0.5, l1 += 0.5;
        const double pad = 0.05 * (l1 - l0);
        s.lo = fixed_lo ? lo : std::pow(10.0, l0 - pad);
        s.hi = fixed_hi ? hi : std::pow(10.0, l1 + pad);
    } else {
        if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
            const double w = std::abs(hi) > 0 ? 0.5 * std::abs(hi) : 1.0;
            lo -= fixed_lo ? 0 : w, hi += fixed_hi ? 0 : w;
        }
        s.lo = lo, s.hi = hi;
        if (a.ticks.empty()) {  // extend free ends to the round ticks around them
            const std::vector<double> t = nice_ticks(lo, hi);
            const double step = t.size() > 1 ? t[1] - t[0] : 1.0;
            if (!fixed_lo) s.lo = std::floor(lo / step + 1e-9) * step;
            if (!fixed_hi) s.hi = std::ceil(hi / step - 1e-9) * step;
            if (s.hi <= s.lo) s.hi = s.lo + step;
        } else if (!fixed_lo || !fixed_hi) {
            const double pad = 0.04 * (hi - lo);
            if (!fixed_lo) s.lo = lo - pad;
            if (!fixed_hi) s.hi = hi + pad;
        }
    }
    std::vector<double> t = !a.ticks.empty() ? a.ticks
                            : s.log          ? (a.bytes ? pow2_ticks(s.lo, s.hi) : log_ticks(s.lo, s.hi))
                                             : nice_ticks(s.lo, s.hi);
    const double eps = 1e-9 * (s.log ? 1.0 : (s.hi - s.lo));
    for (double v : t) {
        if (!usable(v, s.log)) continue;
        const double p = s.pos(v);
        if (p < -eps || p > 1 + eps) continue;
        s.ticks.push_back(v);
    }
    std::sort(s.ticks.begin(), s.ticks.end());
    s.ticks.erase(std::unique(s.ticks.begin(), s.ticks.end()), s.ticks.end());
    double step = 0;  // the smallest gap between ticks sets the decimals of every label
    for (size_t i = 1; i < s.ticks.size(); ++i) {
        const double g = s.ticks[i] - s.ticks[i - 1];
        step = step == 0 ? g : std::min(step, g);
    }
    for (double v : s.ticks)
        s.labels.push_back(a.label ? a.label(v) : a.bytes ? bytes_text(v) : tick_text(v, s.log ? v : step));
    return s;
}

// Keeps every k-th tick (the smallest k) so that no two labels come closer than
// `gap`; `extent(i)` is label i's interval along the axis.
template <class Extent>
void thin(Scale& s, Extent extent, double gap) {
    const size_t n = s.ticks.size();
    for (size_t k = 1; k <= std::max<size_t>(n, 1); ++k) {
        std::vector<size_t> keep;
        for (size_t i = 0; i < n; i += k) keep.push_back(i);
        bool ok = true;
        for (size_t j = 1; j < keep.size() && ok; ++j) {
            const auto [a0, a1] = extent(keep[j - 1]);
            const auto [b0, b1] = extent(keep[j]);
            ok = std::max(a0, b0) - std::min(a1, b1) >= gap;  // the space between the two intervals
        }
        if (!ok) continue;
        Scale t = s;
        t.ticks.clear(), t.labels.clear();
        for (size_t i : keep) t.ticks.push_back(s.ticks[i]), t.labels.push_back(s.labels[i]);
        s = t;
        return;
    }
}

double widest(const std::vector<std::string>& labels, double font) {
    double w = 0;
    for (const auto& l : labels) w = std::max(w, text_width(l, font));
    return w;
}

struct Range {
    double lo = 1e300, hi = -1e300;
    void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
};

bool shows_markers(const Series& s, size_t points) {
    return s.draw == Draw::Markers || s.draw == Draw::LineAndMarkers || (s.draw == Draw::Auto && points <= 30);
}
bool shows_line(const Series& s) { return s.draw != Draw::Markers; }

}  // namespace

const std::vector<std::string>& palette() {
    static const std::vector<std::string> p = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    return p;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
    const double raw = (hi - lo) / std::max(1, target);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * mag;
    for (double m : {1.0, 2.0, 5.0})
        if (m * mag >= raw * 0.99) {
            step = m * mag;
            break;
        }
    std::vector<double> t;
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1)
        t.push_back(std::abs(k) < 0.5 ? 0.0 : k * step);  // k * step, not a running sum: no drift
    return t;
}

std::vector<double> log_ticks(double lo, double hi) {
    std::vector<double> t, decades;
    if (!(lo > 0) || !(hi > lo)) return {};
    const double l0 = std::log10(lo), l1 = std::log10(hi);
    for (int e = static_cast<int>(std::floor(l0)) - 1; e <= static_cast<int>(std::ceil(l1)) + 1; ++e)
        for (double m : {1.0, 2.0, 5.0}) {
            const double v = m * std::pow(10.0, e);
            if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9)) continue;
            t.push_back(v);
            if (m == 1.0) decades.push_back(v);
        }
    if (t.size() > 7 && decades.size() >= 2) t = decades;
    while (t.size() > 7) {  // many decades: every other one
        std::vector<double> u;
        for (size_t i = 0; i < t.size(); i += 2) u.push_back(t[i]);
        t = u;
    }
    if (t.size() < 2) t = nice_ticks(lo, hi, 4);  // less than a decade: round linear values
    return t;
}

std::string tick_text(double v, double step) {
    if (v == 0) return "0";
    const double a = std::abs(v);
    if (a >= 1e6 || a < 1e-4) return fmt::format("{:.2g}", v);
    const double s = std::abs(step) > 0 ? std::abs(step) : a;
    int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(s) + 1e-9)));
    // 1, 2 or 5 x 10^k steps need one more decimal only for 2.5-like values (not produced here)
    decimals = std::min(decimals, 6);
    std::string out = fmt::format("{:.{}f}", v, decimals);
    return out == "-0" ? "0" : out;
}

namespace {

using Points = std::vector<std::vector<std::pair<double, double>>>;  // a series' segments of pixel points

// What line_chart laid out, for the two drawing steps below.
struct ChartLayout {
    SvgBox frame, plot;
    Scale sx, sy, sy2;
    bool any_right = false;
    double tick_h = 0, y_lab_w = 0, y2_lab_w = 0, right_margin = 0, bottom_axis = 0;
    std::vector<std::string> colors, labels;
    std::vector<double> entry_w;
    std::vector<Points> pts;
    double px(double v) const { return plot.x0 + sx.pos(v) * (plot.x1 - plot.x0); }
    double py(const Scale& s, double v) const { return plot.y1 - s.pos(v) * (plot.y1 - plot.y0); }
};

// The ticks thinned until their labels keep apart; the frame, grid, tick labels and axis titles.
void draw_axes(SvgDocument& doc, const LineChart& c, ChartLayout& k) {
    const SvgBox& plot = k.plot;
    thin(k.sx, [&](size_t i) {
        const double w = text_width(k.sx.labels[i], kTickFont), x = k.px(k.sx.ticks[i]);
        return std::pair{x - w / 2, x + w / 2};
    }, 8);
    auto thin_y = [&](Scale& s) {
        thin(s, [&](size_t i) {
            const double y = k.py(s, s.ticks[i]);
            return std::pair{y - k.tick_h / 2, y + k.tick_h / 2};
        }, 4);
    };
    thin_y(k.sy);
    if (k.any_right) thin_y(k.sy2);
    const SvgStyle grid{.stroke = "#e3e3e3"};
    if (!c.title.empty())
        doc.text((plot.x0 + plot.x1) / 2, k.frame.y0 + kChartTitleFont * 0.8 + 4, c.title,
                 {.font_size = kChartTitleFont, .bold = true, .anchor = "middle"});
    for (size_t i = 0; i < k.sx.ticks.size(); ++i) {
        const double x = k.px(k.sx.ticks[i]);
        doc.line(x, plot.y0, x, plot.y1, grid);
        doc.text(x, plot.y1 + 7 + kTickFont * 0.8, k.sx.labels[i], {.font_size = kTickFont, .anchor = "middle"});
    }
    auto y_axis = [&](const Scale& s, const Axis& a, bool right_side, double lab_w) {
        const std::string col = a.color;
        for (size_t i = 0; i < s.ticks.size(); ++i) {
            const double y = k.py(s, s.ticks[i]);
            if (!right_side) doc.line(plot.x0, y, plot.x1, y, grid);
            const double tx = right_side ? plot.x1 + kGap : plot.x0 - kGap;
            // baseline a third of an em below the tick: the label's box is centred on it
            doc.text(tx, y + kTickFont * 0.275, s.labels[i],
                     {.fill = col, .font_size = kTickFont, .anchor = right_side ? "" : "end"});
        }
        if (a.title.empty()) return;
        const double plot_h = plot.y1 - plot.y0;
        const double font = std::min(kTitleFont, kTitleFont * plot_h / std::max(1.0, text_width(a.title, kTitleFont)));
        // rotated -90 about (x, y): the text's box spans x - 0.8 em .. x + 0.25 em
        const double x = right_side ? plot.x1 + kGap + lab_w + kGap + 0.8 * font
                                    : plot.x0 - kGap - lab_w - kGap - 0.25 * font;
        doc.text(x, (plot.y0 + plot.y1) / 2, a.title, {.fill = col, .font_size = font, .anchor = "middle"}, -90);
    };
    y_axis(k.sy, c.y, false, k.y_lab_w);
    if (k.any_right) y_axis(k.sy2, c.y2, true, k.y2_lab_w);
    if (!c.x.title.empty())
        doc.text((plot.x0 + plot.x1) / 2, plot.y1 + 7 + k.tick_h + 4 + kTitleFont * 0.8, c.x.title,
                 {.fill = c.x.color, .font_size = kTitleFont, .anchor = "middle"});
    doc.rect(plot.x0, plot.y0, plot.x1 - plot.x0, plot.y1 - plot.y0, {.fill = "none", .stroke = "#333"});
}

// The series, in legend order (the last drawn is on top), then the legend.
void draw_series(SvgDocument& doc, const LineChart& c, const ChartLayout& k) {
    auto style_of = [&](size_t i) {
        return SvgStyle{.fill = "none", .stroke = k.colors[i], .stroke_width = c.series[i].width,
                        .dash = c.series[i].dash};
    };
    for (size_t i = 0; i < c.series.size(); ++i) {
        size_t n = 0;
        for (const auto& seg : k.pts[i]) n += seg.size();
        const bool markers = shows_markers(c.series[i], n);
        for (const auto& seg : k.pts[i]) {
            if (shows_line(c.series[i]) && seg.size() > 1) doc.polyline(seg, style_of(i));
            if (markers || seg.size() == 1)
                for (const auto& [x, y] : seg) doc.circle(x, y, 3, {.fill = k.colors[i]});
        }
    }
    double lx = c.legend == LegendPlace::Right ? k.plot.x1 + k.right_margin + 10 + 4 : k.frame.x0 + 4;
    double ly = c.legend == LegendPlace::Right ? k.plot.y0 + 8 : k.plot.y1 + k.bottom_axis + 12 + kLegendRow / 2;
    const double x_start = lx;
    for (size_t i = 0; i < c.series.size(); ++i) {
        if (c.legend == LegendPlace::Below && lx > x_start && lx + k.entry_w[i] > k.frame.x1)
            lx = x_start, ly += kLegendRow;
        size_t n = 0;
        for (const auto& seg : k.pts[i]) n += seg.size();
        if (shows_line(c.series[i])) doc.line(lx, ly, lx + kLegendSample, ly, style_of(i));
        if (shows_markers(c.series[i], n) || !shows_line(c.series[i]))
            doc.circle(lx + kLegendSample / 2, ly, 3, {.fill = k.colors[i]});
        doc.text(lx + kLegendSample + kGap, ly + kTitleFont * 0.275, k.labels[i], {.font_size = kTitleFont});
        if (c.legend == LegendPlace::Right)
            ly += kLegendRow;
        else
            lx += k.entry_w[i] + 18;
    }
}

}  // namespace

SvgBox line_chart(SvgDocument& doc, const SvgBox& frame, const LineChart& c) {
    // ---- data ranges
    Range rx, ry, ry2;
    bool any_right = false;
    for (const Series& s : c.series) {
        any_right = any_right || s.right_axis;
        const Axis& ya = s.right_axis ? c.y2 : c.y;
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
            if (!usable(s.x[i], c.x.log) || !usable(s.y[i], ya.log)) continue;
            rx.add(s.x[i]);
            (s.right_axis ? ry2 : ry).add(s.y[i]);
        }
    }
    Scale sx = make_scale(c.x, rx.lo, rx.hi), sy = make_scale(c.y, ry.lo, ry.hi);
    Scale sy2 = any_right ? make_scale(c.y2, ry2.lo, ry2.hi) : Scale{};

    // ---- the legend's entries: sample line, then the label; same-curve notes
    const auto& pal = palette();
    std::vector<std::string> colors, labels;
    for (size_t i = 0; i < c.series.size(); ++i) {
        colors.push_back(c.series[i].color.empty() ? pal[i % pal.size()] : c.series[i].color);
        labels.push_back(c.series[i].label);
    }
    std::vector<double> entry_w;  // measured by legend_size, once the same-curve notes are known

    // ---- margins from the texts they hold
    const double tick_h = kTickFont * 1.05, title_h = kTitleFont * 1.05;
    const double top = frame.y0 + (c.title.empty() ? 8 : kChartTitleFont * 1.05 + 14);
    const double y_lab_w = widest(sy.labels, kTickFont), y2_lab_w = any_right ? widest(sy2.labels, kTickFont) : 0;
    const double left = frame.x0 + y_lab_w + kGap + (c.y.title.empty() ? 0 : title_h + kGap) + 2;
    double right_margin = any_right ? y2_lab_w + kGap + (c.y2.title.empty() ? 0 : title_h + kGap) + 2 : 0;
    right_margin = std::max(right_margin, sx.labels.empty() ? 0.0 : text_width(sx.labels.back(), kTickFont) / 2 + 2);

    // The plot's pixel box depends on the legend's size, which depends on the notes, which
    // depend on pixel positions; the notes compare shapes at a provisional size, which is
    // enough to tell coinciding curves (a 1-pixel rule at any size close to the final one).
    auto legend_size = [&](double avail_w, std::vector<std::string>& texts, int* rows) {
        entry_w.clear();
        for (const auto& t : texts) entry_w.push_back(kLegendSample + kGap + text_width(t, kTitleFont));
        if (c.legend == LegendPlace::Right) {
            *rows = static_cast<int>(texts.size());
            return texts.empty() ? 0.0 : *std::max_element(entry_w.begin(), entry_w.end()) + 14;
        }
        int r = texts.empty() ? 0 : 1;
        double x = 0;
        for (double w : entry_w) {
            if (x > 0 && x + w > avail_w) ++r, x = 0;
            x += w + 18;
        }
        *rows = r;
        return 0.0;
    };
    // x tick labels start 7 below the plot (clear of the lowest y label, which reaches 0.525 em below
    // its tick), the x title 4 below them
    const double bottom_axis = 7 + tick_h + (c.x.title.empty() ? 0 : 4 + title_h) + 2;
    int rows = 0;
    double legend_w = legend_size(frame.x1 - frame.x0 - 4, labels, &rows);
    auto plot_box = [&](double lw, int nrows) {
        SvgBox p;
        p.x0 = left;
        p.y0 = top;
        p.x1 = frame.x1 - right_margin - (c.legend == LegendPlace::Right && lw > 0 ? lw + 10 : 0);
        const double legend_h = c.legend == LegendPlace::Below && nrows > 0 ? 12 + kLegendRow * nrows : 0;
        p.y1 = frame.y1 - bottom_axis - legend_h - 4;
        return p;
    };
    SvgBox plot = plot_box(legend_w, rows);

    // ---- pixel points of every series; series drawn exactly on an earlier one are noted
    auto px = [&](const SvgBox& p, double v) { return p.x0 + sx.pos(v) * (p.x1 - p.x0); };
    auto py = [&](const SvgBox& p, const Scale& s, double v) { return p.y1 - s.pos(v) * (p.y1 - p.y0); };
    auto points_of = [&](const SvgBox& p, const Series& s) {
        std::vector<std::vector<std::pair<double, double>>> segs(1);
        const Scale& ys = s.right_axis ? sy2 : sy;
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
            if (!usable(s.x[i], sx.log) || !usable(s.y[i], ys.log)) {
                if (!segs.back().empty()) segs.emplace_back();
                continue;
            }
            segs.back().emplace_back(px(p, s.x[i]), py(p, ys, s.y[i]));
        }
        if (segs.back().empty()) segs.pop_back();
        return segs;
    };
    std::vector<std::vector<std::vector<std::pair<double, double>>>> pts;
    for (const Series& s : c.series) pts.push_back(points_of(plot, s));
    auto same_curve = [&](size_t i, size_t j) {
        if (pts[i].size() != pts[j].size() || pts[i].empty()) return false;
        for (size_t g = 0; g < pts[i].size(); ++g) {
            if (pts[i][g].size() != pts[j][g].size()) return false;
            for (size_t k = 0; k < pts[i][g].size(); ++k)
                if (std::abs(pts[i][g][k].first - pts[j][g][k].first) > 1 ||
                    std::abs(pts[i][g][k].second - pts[j][g][k].second) > 1)
                    return false;
        }
        return true;
    };
    for (size_t i = 0; i < c.series.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (same_curve(i, j)) {
                labels[i] += " (covers " + c.series[j].label + ")";
                break;
            }
    legend_w = legend_size(frame.x1 - frame.x0 - 4, labels, &rows);
    plot = plot_box(legend_w, rows);
    pts.clear();
    for (const Series& s : c.series) pts.push_back(points_of(plot, s));

    ChartLayout k{frame, plot, sx, sy, sy2, any_right, tick_h, y_lab_w, y2_lab_w, right_margin, bottom_axis,
                  colors, labels, entry_w, pts};
    draw_axes(doc, c, k);
    draw_series(doc, c, k);
    return k.plot;
}

}  // namespace attn::viz
