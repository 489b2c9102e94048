// The framework of `attn experiment` (attn/experiments/experiment.hpp): names, the
// registry, the JSON of a result and its SVG (one line plot per panel).
#include "attn/experiments/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
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
        case VerdictKind::Inconclusive: return "inconclusive";
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
        experiment_variance(),
        experiment_variants(),
    };
    return all;
}

std::string verdict_lines(const ExperimentResult& r) {
    std::string out;
    for (const Verdict& v : r.verdicts)
        out += fmt::format("{} {}: {}. {}\n", v.claim, verdict_name(v.kind), v.statement, v.figures);
    return out;
}

const ExperimentInfo* find_experiment(const std::string& name) {
    for (const auto& e : experiments())
        if (e.name == name) return &e;
    return nullptr;
}

namespace {

nlohmann::json table_json(const ExperimentTable& t) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows) rows.push_back(row);
    return {{"title", t.title}, {"columns", t.columns}, {"rows", rows}};
}

// Reading a document back: every field checked, an error names it by its path.
[[noreturn]] void bad_field(const std::string& where, const std::string& rule) {
    throw InputError(where + ": " + rule);
}

const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.is_object()) bad_field(where, "must be an object");
    const auto it = j.find(key);
    if (it == j.end()) bad_field(where + "." + key, "missing");
    return *it;
}

std::string text_of(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json& v = member(j, key, where);
    if (!v.is_string()) bad_field(where + "." + key, "must be a string");
    return v.get<std::string>();
}

std::vector<std::string> texts_of(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json& v = member(j, key, where);
    if (!v.is_array()) bad_field(where + "." + key, "must be an array of strings");
    std::vector<std::string> out;
    for (const auto& x : v) {
        if (!x.is_string()) bad_field(where + "." + key, "must be an array of strings");
        out.push_back(x.get<std::string>());
    }
    return out;
}

ExperimentTable table_from_json(const nlohmann::json& j, const std::string& where) {
    ExperimentTable t;
    t.title = text_of(j, "title", where);
    t.columns = texts_of(j, "columns", where);
    const nlohmann::json& rows = member(j, "rows", where);
    if (!rows.is_array()) bad_field(where + ".rows", "must be an array of rows");
    for (const auto& row : rows) {
        if (!row.is_array() || row.size() != t.columns.size())
            bad_field(where + ".rows", "each row must be an array of one cell per column");
        for (const auto& cell : row)
            if (cell.is_object() || cell.is_array()) bad_field(where + ".rows", "a cell is a number, a string or null");
        t.rows.emplace_back(row.begin(), row.end());
    }
    return t;
}

VerdictKind verdict_kind_of(const std::string& name, const std::string& where) {
    for (VerdictKind k : {VerdictKind::Supported, VerdictKind::Qualified, VerdictKind::NotSupported,
                          VerdictKind::Inconclusive})
        if (name == verdict_name(k)) return k;
    bad_field(where, "must be \"supported\", \"qualified\", \"not supported\" or \"inconclusive\"");
}

ExperimentSize size_of(const std::string& name, const std::string& where) {
    for (ExperimentSize z : {ExperimentSize::Quick, ExperimentSize::Default, ExperimentSize::Full})
        if (name == experiment_size_name(z)) return z;
    bad_field(where, "must be \"quick\", \"default\" or \"full\"");
}

void check_format(const nlohmann::json& j, const char* format, const std::string& where) {
    if (text_of(j, "format", where) != format) bad_field(where + ".format", std::string("must be \"") + format + "\"");
    const nlohmann::json& v = member(j, "version", where);
    if (!v.is_number_integer() || v.get<int64_t>() != 1) bad_field(where + ".version", "must be 1");
}

}  // namespace

ExperimentResult experiment_from_json(const nlohmann::json& j) {
    const std::string where = "attn-experiment";
    check_format(j, "attn-experiment", where);
    ExperimentResult r;
    r.name = text_of(j, "name", where);
    const nlohmann::json& tables = member(j, "tables", where);
    if (!tables.is_array()) bad_field(where + ".tables", "must be an array");
    for (size_t i = 0; i < tables.size(); ++i)
        r.tables.push_back(table_from_json(tables[i], fmt::format("{}.tables[{}]", where, i)));
    const nlohmann::json& verdicts = member(j, "verdicts", where);
    if (!verdicts.is_array()) bad_field(where + ".verdicts", "must be an array");
    for (size_t i = 0; i < verdicts.size(); ++i) {
        const std::string at = fmt::format("{}.verdicts[{}]", where, i);
        const nlohmann::json& jv = verdicts[i];
        Verdict v;
        v.claim = text_of(jv, "claim", at);
        v.statement = text_of(jv, "statement", at);
        v.kind = verdict_kind_of(text_of(jv, "verdict", at), at + ".verdict");
        v.figures = text_of(jv, "figures", at);
        if (jv.contains("task")) {
            v.task = text_of(jv, "task", at);
            v.evidence = table_from_json(member(jv, "evidence", at), at + ".evidence");
            v.plain = text_of(jv, "plain", at);
            v.plain_args = texts_of(jv, "plain_args", at);
            size_t holes = 0;  // the template takes exactly its arguments (fmt would throw later)
            for (size_t p = v.plain.find("{}"); p != std::string::npos; p = v.plain.find("{}", p + 2)) ++holes;
            if (holes != v.plain_args.size()) bad_field(at + ".plain_args", "must give one value for each {} of plain");
        }
        r.verdicts.push_back(std::move(v));
    }
    return r;
}

nlohmann::json evidence_json(const StoredEvidence& e) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t i = 0; i < e.runs.size(); ++i) {
        ExperimentConfig cfg;
        cfg.size = e.size, cfg.seeds = 1, cfg.seed = i < e.seeds.size() ? e.seeds[i] : 0, cfg.threads = 0;
        nlohmann::json r = experiment_json(e.runs[i], cfg);
        r.erase("threads");  // the numbers do not depend on it
        r.erase("seconds");
        r.erase("curves");  // the tables and verdicts are the evidence; `attn experiment NAME --svg` draws curves
        runs.push_back(std::move(r));
    }
    return {{"format", "attn-evidence"},
            {"version", 1},
            {"experiment", e.experiment},
            {"size", experiment_size_name(e.size)},
            {"seeds", e.seeds},
            {"made",
             {{"command", e.made.command},
              {"commit", e.made.commit},
              {"compiler", e.made.compiler},
              {"processor", e.made.processor},
              {"kernels", e.made.kernels},
              {"date", e.made.date}}},
            {"runs", runs}};
}

StoredEvidence evidence_from_json(const nlohmann::json& j) {
    const std::string where = "attn-evidence";
    check_format(j, "attn-evidence", where);
    StoredEvidence e;
    e.experiment = text_of(j, "experiment", where);
    e.size = size_of(text_of(j, "size", where), where + ".size");
    const nlohmann::json& seeds = member(j, "seeds", where);
    if (!seeds.is_array() || seeds.empty()) bad_field(where + ".seeds", "must be a non-empty array of seeds");
    for (const auto& s : seeds) {
        if (!s.is_number_unsigned()) bad_field(where + ".seeds", "each seed is an integer >= 0");
        e.seeds.push_back(s.get<uint64_t>());
    }
    const nlohmann::json& made = member(j, "made", where);
    e.made.command = text_of(made, "command", where + ".made");
    e.made.commit = text_of(made, "commit", where + ".made");
    e.made.compiler = text_of(made, "compiler", where + ".made");
    e.made.processor = text_of(made, "processor", where + ".made");
    e.made.kernels = text_of(made, "kernels", where + ".made");
    e.made.date = text_of(made, "date", where + ".made");
    const nlohmann::json& runs = member(j, "runs", where);
    if (!runs.is_array() || runs.size() != e.seeds.size()) bad_field(where + ".runs", "must hold one run per seed");
    for (size_t i = 0; i < runs.size(); ++i) {
        ExperimentResult r = experiment_from_json(runs[i]);
        if (r.name != e.experiment)
            bad_field(fmt::format("{}.runs[{}].name", where, i), "must be the experiment's name, " + e.experiment);
        const nlohmann::json& seed = member(runs[i], "seed", fmt::format("{}.runs[{}]", where, i));
        if (!seed.is_number_unsigned() || seed.get<uint64_t>() != e.seeds[i])
            bad_field(fmt::format("{}.runs[{}].seed", where, i), "must be seeds[" + std::to_string(i) + "]");
        e.runs.push_back(std::move(r));
    }
    return e;
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
    for (const auto& t : r.tables) tables.push_back(table_json(t));
    j["tables"] = tables;
    nlohmann::json verdicts = nlohmann::json::array();
    for (const auto& v : r.verdicts) {
        nlohmann::json jv{{"claim", v.claim}, {"statement", v.statement}, {"verdict", verdict_name(v.kind)},
                          {"figures", v.figures}};
        if (!v.task.empty()) {
            jv["task"] = v.task;
            jv["evidence"] = table_json(v.evidence);
            jv["plain"] = v.plain;
            jv["plain_args"] = v.plain_args;
        }
        verdicts.push_back(std::move(jv));
    }
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
