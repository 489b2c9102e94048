// The framework of `attn experiment` (attn/experiments/experiment.hpp): names, the
// registry, the JSON of a result and its SVG (one line plot per panel).
#include "attn/experiments/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "attn/viz/svg.hpp"

namespace attn {

const char* experiment_size_name(ExperimentSize s) {
    switch (s) {
        case ExperimentSize::Quick: return "quick";
        case ExperimentSize::Default: return "default";
        case ExperimentSize::Full: return "full";
    }
    return "?";
}

const char* verdict_name(VerdictKind v) {
    switch (v) {
        case VerdictKind::Supported: return "supported";
        case VerdictKind::Qualified: return "qualified";
        case VerdictKind::NotSupported: return "not supported";
    }
    return "?";
}

const std::vector<ExperimentInfo>& experiments() {
    static const std::vector<ExperimentInfo> all = {
        experiment_scale(),
        experiment_lock_in(),
        experiment_dk_floor(),
        experiment_init(),
        experiment_overfit(),
        experiment_dropout(),
        experiment_heads(),
        experiment_distance(),
        experiment_stability(),
        experiment_memory(),
        experiment_length(),
    };
    return all;
}

const ExperimentInfo* find_experiment(const std::string& name) {
    for (const auto& e : experiments())
        if (e.name == name) return &e;
    return nullptr;
}

nlohmann::json experiment_json(const ExperimentResult& r, const ExperimentConfig& cfg) {
    nlohmann::json j;
    j["format"] = "attn-experiment";
    j["version"] = 1;
    j["name"] = r.name;
    j["size"] = experiment_size_name(cfg.size);
    j["seeds"] = cfg.seeds;
    j["seed"] = cfg.seed;
    j["threads"] = cfg.threads;
    nlohmann::json tables = nlohmann::json::array();
    for (const auto& t : r.tables) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& row : t.rows) rows.push_back(row);
        tables.push_back({{"title", t.title}, {"columns", t.columns}, {"rows", rows}});
    }
    j["tables"] = tables;
    nlohmann::json verdicts = nlohmann::json::array();
    for (const auto& v : r.verdicts)
        verdicts.push_back({{"claim", v.claim},
                            {"statement", v.statement},
                            {"verdict", verdict_name(v.kind)},
                            {"figures", v.figures}});
    j["verdicts"] = verdicts;
    nlohmann::json curves = nlohmann::json::array();
    for (const auto& c : r.curves)
        curves.push_back({{"panel", c.panel}, {"label", c.label}, {"x_label", c.x_label}, {"x", c.x}, {"y", c.y}});
    j["curves"] = curves;
    j["notes"] = r.notes;
    j["seconds"] = r.seconds;
    return j;
}

namespace {

// Ten distinguishable colours (matplotlib's tab10), reused in order.
const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// 0, 0.25, ... style ticks: about 5 round values covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
    std::vector<double> t;
    if (!(hi > lo)) return {lo};
    const double raw = (hi - lo) / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
}

}  // namespace

std::string experiment_svg(const ExperimentResult& r) {
    // Panels in order of first appearance.
    std::vector<std::string> panels;
    std::map<std::string, std::vector<const ExperimentCurve*>> by_panel;
    for (const auto& c : r.curves) {
        if (!by_panel.count(c.panel)) panels.push_back(c.panel);
        by_panel[c.panel].push_back(&c);
    }
    const double W = 900, plot_w = 560, plot_h = 260, left = 70, top = 50, gap = 90, legend_x = left + plot_w + 20;
    size_t max_legend = 0;
    for (const auto& p : panels) max_legend = std::max(max_legend, by_panel[p].size());
    const double panel_h = std::max(plot_h, 18.0 * static_cast<double>(max_legend));
    const double H = top + static_cast<double>(std::max<size_t>(panels.size(), 1)) * (panel_h + gap);
    SvgDocument svg(W, H, "attn experiment " + r.name);
    svg.text(W / 2, 24, "attn experiment " + r.name, {.font_size = 16, .bold = true, .anchor = "middle"});
    if (panels.empty()) svg.text(W / 2, top + 20, "(no curves)", {.anchor = "middle"});
    for (size_t pi = 0; pi < panels.size(); ++pi) {
        const auto& curves = by_panel[panels[pi]];
        const double y0 = top + static_cast<double>(pi) * (panel_h + gap) + 20;
        double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
        std::string x_label;
        for (const auto* c : curves) {
            if (x_label.empty()) x_label = c->x_label;
            for (size_t i = 0; i < std::min(c->x.size(), c->y.size()); ++i) {
                if (!std::isfinite(c->x[i]) || !std::isfinite(c->y[i])) continue;
                xmin = std::min(xmin, c->x[i]);
                xmax = std::max(xmax, c->x[i]);
                ymin = std::min(ymin, c->y[i]);
                ymax = std::max(ymax, c->y[i]);
            }
        }
        if (xmin > xmax) xmin = 0, xmax = 1;
        if (ymin > ymax) ymin = 0, ymax = 1;
        if (ymin > 0 && ymin < 0.5 * ymax) ymin = 0;  // start at 0 when it is near
        if (xmax == xmin) xmax = xmin + 1;
        if (ymax == ymin) ymax = ymin + 1;
        auto px = [&](double x) { return left + (x - xmin) / (xmax - xmin) * plot_w; };
        auto py = [&](double y) { return y0 + plot_h - (y - ymin) / (ymax - ymin) * plot_h; };
        const SvgStyle grid{.stroke = "#ddd"};
        svg.rect(left, y0, plot_w, plot_h, {.fill = "none", .stroke = "#333"});
        for (double v : nice_ticks(xmin, xmax)) {
            svg.line(px(v), y0, px(v), y0 + plot_h, grid);
            svg.text(px(v), y0 + plot_h + 16, fmt::format("{:g}", v), {.anchor = "middle"});
        }
        for (double v : nice_ticks(ymin, ymax)) {
            svg.line(left, py(v), left + plot_w, py(v), grid);
            svg.text(left - 6, py(v) + 4, fmt::format("{:g}", v), {.anchor = "end"});
        }
        svg.text(left + plot_w / 2, y0 - 8, panels[pi], {.bold = true, .anchor = "middle"});
        svg.text(left + plot_w / 2, y0 + plot_h + 36, x_label, {.anchor = "middle"});
        for (size_t ci = 0; ci < curves.size(); ++ci) {
            const auto* c = curves[ci];
            const std::string color = kColors[ci % 10];
            const std::string dash = ci >= 10 ? "6 4" : "";
            std::vector<std::pair<double, double>> pts;
            for (size_t i = 0; i < std::min(c->x.size(), c->y.size()); ++i)
                if (std::isfinite(c->x[i]) && std::isfinite(c->y[i])) pts.emplace_back(px(c->x[i]), py(c->y[i]));
            if (pts.size() > 1) svg.polyline(pts, {.fill = "none", .stroke = color, .stroke_width = 1.5, .dash = dash});
            else if (pts.size() == 1) svg.circle(pts[0].first, pts[0].second, 3, {.fill = color});
            const double ly = y0 + 6 + 18.0 * static_cast<double>(ci);
            svg.line(legend_x, ly, legend_x + 22, ly, {.stroke = color, .stroke_width = 2, .dash = dash});
            svg.text(legend_x + 28, ly + 4, c->label);
        }
    }
    return svg.str();
}

}  // namespace attn
