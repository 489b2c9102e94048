// `attn tour --html FILE` (tour_html.hpp): each lesson runs once, in text mode
// into a string; its text, heatmaps and record make one section of the page.
// The page has no script: <details> folds the lessons. Its one style sheet is
// admitted by hash (CSP default-src 'none'), every text is HTML-escaped, and
// the record is embedded as JSON with <, >, & written as \u escapes.
#include "tour_html.hpp"
#include "pipeline.hpp"
#include "tour.hpp"

#include "scorecard.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/viz/html.hpp"
#include "catalogue.hpp"
#include "options.hpp"

namespace attn::cli {
namespace {

std::string escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

// JSON text that cannot end the <script> element it sits in: <, >, & only occur
// inside JSON strings, where \u003c, \u003e, \u0026 mean the same characters.
std::string script_safe_json(const std::string& json) {
    std::string out;
    out.reserve(json.size());
    for (size_t i = 0; i < json.size(); ++i) {
        const char c = json[i];
        if (c == '<') out += "\\u003c";
        else if (c == '>') out += "\\u003e";
        else if (c == '&') out += "\\u0026";
        else if (c == '\xe2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
                 (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
            out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
            i += 2;
        } else out += c;
    }
    return out;
}

// The lesson's text, a span per line, classed by its mark (✓ ≡ ✗ ○ !) so the checks stand out.
std::string text_html(const std::string& text) {
    std::string out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const size_t at = line.find_first_not_of(' ');
        const std::string_view head = at == std::string::npos ? std::string_view() : std::string_view(line).substr(at);
        const char* cls = head.starts_with("\u2713")   ? "measured"
                          : head.starts_with("\u2261") ? "identity"
                          : head.starts_with("\u2717") ? "failed"
                          : head.starts_with("\u25cb") ? "unmeasured"
                          : head.starts_with("! ")     ? "source-error"
                          : head.starts_with("claim ") && head.find("not supported") != std::string_view::npos
                              ? "not-supported"
                          : head.starts_with("claim ") && head.find("qualified") != std::string_view::npos ? "qualified"
                                                                                                           : nullptr;
        if (cls != nullptr) out += fmt::format("<span class=\"{}\">{}</span>\n", cls, escape(line));
        else out += escape(line) + "\n";
    }
    return out;
}

const char* const kTourCss = R"CSS(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1180px;padding:16px 20px;color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
"Noto Sans CJK SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",sans-serif}
h1{font-size:24px;margin:0 0 6px}
.muted{color:var(--muted)}
details.lesson{border:1px solid var(--line);border-radius:6px;margin:10px 0;background:#fff}
details.lesson>summary{cursor:pointer;padding:8px 12px;background:var(--panel);border-radius:6px;font-weight:600;
display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
details.lesson[open]>summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}
summary .num{color:var(--muted);min-width:2em}
summary .badges{margin-left:auto;font-weight:400;font-size:13px}
.badge{display:inline-block;padding:0 6px;border-radius:10px;margin-left:4px}
.b-measured{background:#dafbe1;color:#116329}
.b-identity{background:#ddf4ff;color:#0550ae}
.b-failed{background:#ffebe9;color:#a40e26}
.b-not-supported,.b-qualified{background:#fff8c5;color:#7d4e00}
.b-unmeasured{background:#eaeef2;color:#424a53}
.b-source-error{background:#fbefff;color:#8250df}
.body{display:flex;gap:16px;padding:10px 12px;align-items:flex-start;flex-wrap:wrap}
pre.text{flex:1 1 640px;margin:0;font:12.5px/1.45 ui-monospace,"DejaVu Sans Mono","Noto Sans Mono CJK SC",monospace;
white-space:pre-wrap;overflow-x:auto}
pre.text .measured{color:#116329}pre.text .identity{color:#0550ae}pre.text .failed{color:#a40e26;font-weight:700}
pre.text .unmeasured{color:#59636e}
pre.text .source-error{color:#8250df}
pre.text .not-supported,pre.text .qualified{color:#7d4e00}
.figs{flex:1 1 360px;max-width:100%}
.figs.pipeline{flex:1 1 100%}
.figs svg{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
ul.checks{margin:0 12px 12px;padding:0;list-style:none;font-size:13.5px}
ul.checks li{padding:3px 8px;border-left:4px solid var(--line);margin:3px 0;background:var(--panel)}
ul.checks li.measured{border-color:#1a7f37}
ul.checks li.identity{border-color:#0969da}
ul.checks li.failed{border-color:#cf222e}
ul.checks li.not-supported,ul.checks li.qualified{border-color:#bf8700}
ul.checks li.unmeasured{border-color:#8c959f}
ul.checks li.source-error{border-color:#8250df}
table.score{border-collapse:collapse;margin:8px 0}
table.score td{padding:3px 12px;border-bottom:1px solid var(--line)}
table.score td.n{text-align:right;font-variant-numeric:tabular-nums}
.views{display:flex;flex-wrap:wrap;gap:10px;margin:0 12px 12px}
iframe.view{flex:1 1 560px;height:600px;border:1px solid var(--line);border-radius:4px;background:#fff}
)CSS";

struct Words {
    const char *title, *intro, *scorecard, *lessons, *passed, *failed, *measured, *identities, *not_supported,
        *qualified, *unmeasured, *source_errors, *claims, *figures;
};
const Words kEn{
    "attn tour",
    "How attention works, shown with numbers computed when this page was made. Each lesson folds open; "
    "its checks are marked by kind: \u2713 measured, \u2261 identity (true by construction), \u2717 failed, "
    "\u25cb not measured here, ! an error in the source.",
    "Scorecard",
    "lessons",
    "passed",
    "failed",
    "measured",
    "identities",
    "not supported",
    "qualified",
    "not measured",
    "errors of the source",
    "claims",
    "figures"};
const Words kZh{"attn \u5bfc\u89c8",
                "\u6ce8\u610f\u529b\u5982\u4f55\u5de5\u4f5c\uff0c\u6240\u6709\u6570\u5b57\u5747\u5728\u751f\u6210\u672c"
                "\u9875\u65f6\u8ba1\u7b97\u3002"
                "\u70b9\u51fb\u5c55\u5f00\u6bcf\u4e00\u8bfe\uff1b\u68c0\u67e5\u6309\u7c7b\u522b\u6807\u6ce8\uff1a\u2713"
                " \u5b9e\u6d4b\uff0c"
                "\u2261 \u6052\u7b49\u5f0f\uff0c\u2717 \u5931\u8d25\uff0c\u25cb \u6b64\u5904\u672a\u6d4b\uff0c! "
                "\u6765\u6e90\u4e2d\u7684\u9519\u8bef\u3002",
                "\u8bc4\u5206\u8868",
                "\u8bfe",
                "\u901a\u8fc7",
                "\u5931\u8d25",
                "\u5b9e\u6d4b",
                "\u6052\u7b49\u5f0f",
                "\u4e0d\u652f\u6301",
                "\u6709\u4fdd\u7559",
                "\u672a\u6d4b",
                "\u6765\u6e90\u9519\u8bef",
                "\u8bba\u70b9",
                "\u56fe"};

// A heatmap of the record that holds attention weights: every row sums to 1 (or to 0, a row with
// every key masked), within float32 rounding over the row.
bool holds_weights(const nlohmann::json& hm) {
    const auto rows = hm.value("rows", int64_t{0}), cols = hm.value("cols", int64_t{0});
    const auto& v = hm["values"];
    if (rows < 1 || cols < 1 || !v.is_array() || static_cast<int64_t>(v.size()) != rows * cols) return false;
    for (int64_t i = 0; i < rows; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < cols; ++j) {
            const auto& x = v[static_cast<size_t>(i * cols + j)];
            if (!x.is_number() || x.get<double>() < 0) return false;
            sum += x.get<double>();
        }
        if (std::fabs(sum - 1) > 1e-4 * static_cast<double>(cols) && sum != 0) return false;
    }
    return true;
}

// The lesson's weight heatmaps as interactive views (head view, matrix view with hover), each an
// attention page (attn/viz/html.hpp) in an iframe's srcdoc; its strings stay text there too.
std::string views_html(const nlohmann::json& rec, lessons::Lang lang, int lesson, int& views) {
    if (!rec.contains("heatmaps") || !rec["heatmaps"].is_object()) return "";
    std::string out;
    for (const auto& [key, hm] : rec["heatmaps"].items()) {
        if (!holds_weights(hm)) continue;
        AttentionPage p;
        p.title = hm.value("title", key);
        p.source = fmt::format("attn tour, lesson {} ({})", lesson, key);
        p.lang = lang == lessons::Lang::zh ? "zh" : "en";
        p.tq = hm["rows"].get<int64_t>(), p.tk = hm["cols"].get<int64_t>();
        for (const auto& x : hm["values"]) p.weights.push_back(x.get<float>());
        auto labels = [&hm = hm](const char* name, int64_t n) {  // named capture: clang < 16 cannot capture a binding
            std::vector<std::string> l;
            if (hm.contains(name) && hm[name].is_array() && static_cast<int64_t>(hm[name].size()) == n)
                for (const auto& t : hm[name]) l.push_back(t.is_string() ? t.get<std::string>() : t.dump());
            return l;
        };
        p.q_tokens = labels("row_labels", p.tq);
        p.k_tokens = labels("col_labels", p.tk);
        p.shapes = {{"weights", fmt::format("[{}, {}]", p.tq, p.tk)}};
        // data-fit: the view sizes its frame to its content (lib/viz/src/html_page.js)
        out += fmt::format("<iframe class=\"view\" id=\"view-{}-{}\" title=\"{}\" data-fit srcdoc=\"{}\"></iframe>\n",
                           lesson, escape(key), escape(p.title), escape(attention_html(p)));
        ++views;
    }
    return out.empty() ? out : "<div class=\"views\">" + out + "</div>\n";
}

std::string checks_html(const nlohmann::json& rec) {
    std::string out;
    auto item = [&](const char* cls, const std::string& mark, const nlohmann::json& e) {
        const std::string claim = e.contains("claim") && e["claim"].is_string() ? e["claim"].get<std::string>() : "";
        std::string text = e.contains("text") && e["text"].is_string() ? e["text"].get<std::string>() : "";
        if (e.contains("quote") && e["quote"].is_string())
            text = "\u201c" + e["quote"].get<std::string>() + "\u201d " + text;
        out += fmt::format("<li class=\"{}\">{} <b>{}</b> {}</li>\n", cls, mark, escape(claim), escape(text));
    };
    if (rec.contains("checks"))
        for (const auto& c : rec["checks"]) {
            const bool ok = c.value("ok", false), identity = c.value("kind", "") == "identity";
            item(!ok        ? "failed"
                 : identity ? "identity"
                            : "measured",
                 !ok        ? "\u2717"
                 : identity ? "\u2261"
                            : "\u2713",
                 c);
        }
    for (const auto& [key, cls, mark] : {std::tuple{"not_supported", "not-supported", "\u2260"},
                                         std::tuple{"qualified", "qualified", "~"},
                                         std::tuple{"unmeasured", "unmeasured", "\u25cb"},
                                         std::tuple{"source_errors", "source-error", "!"}})
        if (rec.contains(key))
            for (const auto& e : rec[key]) item(cls, mark, e);
    return out.empty() ? out : "<ul class=\"checks\">\n" + out + "</ul>\n";
}

// The whole block, each step with the lessons that explain it (as `attn lessons --svg`).
std::string pipeline_map_html(lessons::Lang lang) {
    const auto& steps = lessons::pipeline_steps();
    std::vector<std::string> notes(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
        std::vector<int> numbers;
        for (const auto& l : lessons::all_lessons()) {
            const auto ls = lessons::lesson_steps(l.slug);
            if (std::find(ls.begin(), ls.end(), steps[i].id) != ls.end()) numbers.push_back(l.number);
        }
        notes[i] = lessons::number_ranges(numbers);
    }
    std::string map = lessons::pipeline_svg(
        {},
        lessons::translate(lang,
                           "The Transformer block, step by step; under each step, the lessons that explain it"),
        lang, notes);
    if (const size_t at = map.find("<svg"); at != std::string::npos) map.erase(0, at);
    return "<div class=\"figs pipeline\" id=\"map\">" + map + "</div>\n";
}

}  // namespace

int run_tour_html(const std::string& file, lessons::RunOptions opt, int from, int to, bool core, bool advanced) {
    if (file == "-") throw InputError("--html: needs a file name (the page is never written to standard output)");
    require_writable("--html", file);
    opt.json = false;
    opt.color = opt.truecolor = false;
    opt.pause = nullptr;
    opt.ask = nullptr;  // a page never waits for a guess: its questions are printed
    const Words& w = opt.lang == lessons::Lang::zh ? kZh : kEn;
    int passed = 0, failed = 0, unsupported = 0, measured = 0, identities = 0, qualified = 0, unmeasured = 0,
        source_errors = 0, inconclusive = 0, ran = 0, figures = 0, views = 0, predictions = 0;
    nlohmann::json records = nlohmann::json::array();
    std::string sections;
    for (const auto& lesson : lessons::tour_lessons(from, to, core, advanced)) {
        std::ostringstream text;
        const auto r = lessons::run_lesson(lesson, opt, text);
        passed += r.passed, failed += r.failed, unsupported += r.not_supported, measured += r.measured;
        identities += r.identities, qualified += r.qualified, unmeasured += r.unmeasured;
        source_errors += r.source_errors;
        inconclusive += r.inconclusive;
        predictions += r.predictions;  // printed, never waited for: a page answers none
        ++ran;
        records.push_back(r.record);
        // where the lesson sits in the block, its steps highlighted
        std::string pipe = lessons::pipeline_svg(
            lessons::lesson_steps(lesson.slug),
            lessons::format_in(opt.lang, "Lesson {}: its steps in the Transformer block", lesson.number), opt.lang);
        if (const size_t at = pipe.find("<svg"); at != std::string::npos) pipe.erase(0, at);
        std::string figs;
        if (!r.panels.empty()) {
            SvgOptions so;
            so.title = fmt::format("{} {}", lesson.number, lessons::translate(opt.lang, lesson.title));
            so.subtitle = "rows are queries, columns are keys";
            std::string svg = heatmap_svg(r.panels, so);
            if (const size_t at = svg.find("<svg"); at != std::string::npos)
                svg.erase(0, at);  // no XML declaration inline
            figs = "<div class=\"figs\">" + svg + "</div>";
            ++figures;
        }
        std::string badges;
        auto badge = [&](int n, const char* cls, const char* mark) {
            if (n > 0) badges += fmt::format("<span class=\"badge b-{}\">{} {}</span>", cls, mark, n);
        };
        badge(r.measured, "measured", "\u2713");
        badge(r.identities, "identity", "\u2261");
        badge(r.failed, "failed", "\u2717");
        badge(r.not_supported, "not-supported", "\u2260");
        badge(r.qualified, "qualified", "~");
        badge(r.unmeasured, "unmeasured", "\u25cb");
        badge(r.source_errors, "source-error", "!");
        sections += fmt::format(
            "<details class=\"lesson\" id=\"lesson-{}\"{}>\n<summary><span class=\"num\">{}</span> {} "
            "<span class=\"muted\">{}</span><span class=\"badges\">{}</span></summary>\n"
            "<div class=\"body\"><div class=\"figs pipeline\">{}</div><pre "
            "class=\"text\">{}</pre>{}</div>\n{}{}</details>\n",
            lesson.number, ran == 1 ? " open" : "", lesson.number, escape(lessons::translate(opt.lang, lesson.title)),
            escape(lessons::claims_text(lesson.claims)), badges, pipe, text_html(text.str()), figs,
            views_html(r.record, opt.lang, lesson.number, views), checks_html(r.record));
    }
    // the map first: the whole block, each step with the lessons that explain it
    sections.insert(0, pipeline_map_html(opt.lang));
    // the record, as `attn tour --json` prints it
    // (the whole tour scores all 44 claims; a part of it, only the claims its lessons test)
    const bool whole = from <= 1 && to >= lessons::all_lessons().back().number && !core && !advanced;
    nlohmann::json card = nlohmann::json::array();
    for (const auto& sc :
         lessons::score_claims(std::vector<nlohmann::json>(records.begin(), records.end()), opt.lang, !whole))
        card.push_back(lessons::claim_score_json(sc, opt.lang));
    const nlohmann::json tour{{"format", "attn-tour"},    {"version", 1},
                              {"seed", opt.seed},         {"lessons", records},
                              {"passed", passed},         {"failed", failed},
                              {"not_supported", unsupported}, {"measured", measured},
                              {"identities", identities}, {"qualified", qualified},
                              {"unmeasured", unmeasured}, {"source_errors", source_errors},
                              {"inconclusive", inconclusive},
                              {"predictions", {{"asked", predictions}, {"answered", 0}, {"close", 0}, {"near", 0}}},
                              {"scorecard", card}};
    std::string score = "<table class=\"score\">\n";
    for (const auto& [label, n] : {std::pair{w.lessons, ran}, {w.measured, measured}, {w.identities, identities},
                                   {w.failed, failed}, {w.not_supported, unsupported}, {w.qualified, qualified},
                                   {w.unmeasured, unmeasured}, {w.source_errors, source_errors}, {w.figures, figures}})
        score += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>\n", label, n);
    score += "</table>\n";
    const std::string css = kTourCss;
    // the embedded attention views (iframe srcdoc) inherit this policy: it admits their script and style by hash
    const std::string csp = "default-src 'none'; style-src 'sha256-" + sha256_base64(css) + "' " +
                            attention_html_style_source() + "; script-src " + attention_html_script_source() +
                            "; img-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'";
    std::string html = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n<meta name=\"referrer\" "
        "content=\"no-referrer\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<title>{}</title>\n<style>{}</style>\n"
        "</head>\n<body>\n<h1>{}</h1>\n<p class=\"muted\">{}</p>\n<p class=\"muted\">seed {}</p>\n{}\n"
        "<section id=\"scorecard\"><h2>{}</h2>\n{}</section>\n"
        "<script type=\"application/json\" id=\"attn-tour\">{}</script>\n</body>\n</html>\n",
        opt.lang == lessons::Lang::zh ? "zh-Hans" : "en", csp, w.title, css, w.title, w.intro, opt.seed, sections,
        w.scorecard, score, script_safe_json(json_text(tour, -1, JsonNonFinite::string)));
    with_option("--html", [&] { write_file_atomic(file, html); });
    std::cout << fmt::format(
        "wrote {} ({:.0f} kB, {} lessons, {} with figures, {} interactive views; {} measured, {} identities, {} "
        "failed)\n",
        file, static_cast<double>(html.size()) / 1000.0, ran, figures, views, measured, identities, failed);
    return failed;
}

}  // namespace attn::cli
