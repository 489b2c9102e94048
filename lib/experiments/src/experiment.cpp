// The framework of `attn experiment` (attn/experiments/experiment.hpp): names, the
// registry, the JSON of a result and its SVG (one line plot per panel).
#include "attn/experiments/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "attn/viz/chart.hpp"
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

// One line chart per panel (panels in order of first appearance), stacked. The panel's
// name is its title and, up to its first comma, its y axis title ("held-out loss, adam":
// "held-out loss"). A panel whose values are all positive and span more than two decades
// (losses that approach 0) gets a log y axis, so curves that differ near 0 stay apart.
std::string experiment_svg(const ExperimentResult& r) {
    std::vector<std::string> panels;
    std::map<std::string, std::vector<const ExperimentCurve*>> by_panel;
    for (const auto& c : r.curves) {
        if (!by_panel.count(c.panel)) panels.push_back(c.panel);
        by_panel[c.panel].push_back(&c);
    }
    const double W = 900, top = 40, panel_h = 440;
    const double H = top + static_cast<double>(std::max<size_t>(panels.size(), 1)) * panel_h;
    SvgDocument svg(W, H, "attn experiment " + r.name);
    svg.text(W / 2, 24, "attn experiment " + r.name, {.font_size = 16, .bold = true, .anchor = "middle"});
    if (panels.empty()) svg.text(W / 2, top + 20, "(no curves)", {.anchor = "middle"});
    for (size_t pi = 0; pi < panels.size(); ++pi) {
        const auto& curves = by_panel[panels[pi]];
        viz::LineChart chart;
        chart.title = panels[pi];
        chart.x.title = curves.front()->x_label;
        double lo = 1e300, hi = 0;
        bool positive = true;
        for (const auto* c : curves) {
            chart.series.push_back({.label = c->label, .x = c->x, .y = c->y});
            for (size_t i = 0; i < std::min(c->x.size(), c->y.size()); ++i) {
                if (!std::isfinite(c->x[i]) || !std::isfinite(c->y[i])) continue;
                positive = positive && c->y[i] > 0;
                lo = std::min(lo, c->y[i]), hi = std::max(hi, c->y[i]);
            }
        }
        chart.y.log = positive && hi > 100 * lo;
        chart.y.zero = !chart.y.log && lo >= 0 && lo < 0.5 * hi;  // start at 0 when it is near
        chart.y.title = panels[pi].substr(0, panels[pi].find(", ")) + (chart.y.log ? " (log)" : "");
        const double y0 = top + static_cast<double>(pi) * panel_h;
        viz::line_chart(svg, {10, y0 + 10, W - 10, y0 + panel_h - 10}, chart);
    }
    return svg.str();
}

}  // namespace attn
