// The lesson framework: text/JSON output of a LessonContext, the registry, run_lesson.
#include "lesson.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"

namespace attn::lessons {

namespace {
const char* kBold = "\x1b[1m";
const char* kGreen = "\x1b[32m";
const char* kRed = "\x1b[31m";
const char* kYellow = "\x1b[33m";
const char* kDim = "\x1b[2m";
const char* kCyan = "\x1b[36m";
const char* kMagenta = "\x1b[35m";

// Greedy word wrap on display columns (the prose has √, ᵀ, ·).
std::string wrap(std::string_view text, int width, std::string_view indent) {
    std::string out, line;
    int line_w = 0;
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '\n') {  // explicit break
            out += std::string(indent) + line + "\n";
            line.clear();
            line_w = 0;
            ++i;
            continue;
        }
        if (text[i] == ' ') {
            ++i;
            continue;
        }
        // a word runs to the next space outside square brackets: "[0, 3]" never
        // splits; nor does a short group in parentheses or backticks, "(2, 0, -1)"
        size_t j = i, hold = 0;
        int depth = 0;
        while (j < text.size() && text[j] != '\n' && (text[j] != ' ' || depth > 0 || j < hold)) {
            if (text[j] == '[') ++depth;
            if (text[j] == ']' && depth > 0) --depth;
            if ((text[j] == '(' || text[j] == '`') && j >= hold) {
                const size_t close = text.find(text[j] == '(' ? ')' : '`', j + 1);
                if (close != std::string_view::npos && close - j <= 24 &&
                    text.substr(j + 1, close - j - 1).find_first_of("\n([") == std::string_view::npos)
                    hold = close;
            }
            ++j;
        }
        // a group too wide for a line of its own splits at its spaces after all
        if (display_width(text.substr(i, j - i)) > width - static_cast<int>(indent.size())) {
            const size_t sp = text.find_first_of(" \n", i);
            j = std::min(j, sp == std::string_view::npos ? text.size() : sp);
        }
        const std::string_view word = text.substr(i, j - i);
        const int w = display_width(word);
        if (line_w > 0 && line_w + 1 + w > width - static_cast<int>(indent.size())) {
            out += std::string(indent) + line + "\n";
            line.clear();
            line_w = 0;
        }
        if (line_w > 0) line += ' ', ++line_w;
        line += word;
        line_w += w;
        i = j;
    }
    if (!line.empty()) out += std::string(indent) + line + "\n";
    return out;
}

// Wraps "text" after a first-line prefix; continuation lines get `rest`.
std::string wrap_hanging(std::string_view text, int width, std::string_view first, std::string_view rest) {
    const std::string body = wrap(text, width - static_cast<int>(rest.size()), "");
    std::string out;
    size_t i = 0;
    bool head = true;
    while (i < body.size()) {
        const size_t j = body.find('\n', i);
        out += std::string(head ? first : rest) + body.substr(i, j - i) + "\n";
        head = false;
        i = j + 1;
    }
    return out;
}

// The lines of `text` greedily wrapped at `width` display columns (a word
// longer than the width stays whole on its own line).
std::vector<std::string> wrap_lines(std::string_view text, int width) {
    std::vector<std::string> out;
    const std::string body = wrap(text, std::max(1, width), "");
    size_t i = 0;
    while (i < body.size()) {
        const size_t j = body.find('\n', i);
        out.push_back(body.substr(i, j - i));
        i = j + 1;
    }
    if (out.empty()) out.emplace_back();
    return out;
}

// One line of code or output cut at `width` columns: broken after the last
// space (or, with none, at the width); continuation lines get `cont` more indent.
std::vector<std::string> break_line(std::string_view line, int width, int cont) {
    std::vector<std::string> out;
    std::string rest(line);
    int avail = width;
    while (display_width(rest) > avail) {
        // the longest prefix that fits, preferring a break at a space
        size_t i = 0, fit = 0, space = std::string::npos;
        int w = 0;
        while (i < rest.size()) {
            size_t k = i;
            utf8_next(rest, k);
            w += display_width(std::string_view(rest).substr(i, k - i));
            if (w > avail) break;
            if (rest[i] == ' ') space = i;
            fit = k;
            i = k;
        }
        const size_t cut = space != std::string::npos && space > 0 ? space : std::max<size_t>(fit, 1);
        out.push_back(rest.substr(0, cut));
        size_t from = cut;
        while (from < rest.size() && rest[from] == ' ') ++from;
        rest = std::string(static_cast<size_t>(cont), ' ') + rest.substr(from);
        avail = width;
        if (static_cast<int>(rest.size()) <= cont) break;
    }
    if (!rest.empty() && static_cast<int>(rest.size()) > (out.empty() ? 0 : cont)) out.push_back(rest);
    if (out.empty()) out.emplace_back();
    return out;
}

std::string cell_text(const nlohmann::json& v, const std::string& spec) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number()) {
        const double x = v.get<double>();
        return fmt::format(fmt::runtime(spec.empty() ? "{:.4g}" : spec), x);
    }
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    if (v.is_null()) return "-";
    return v.dump();
}

std::vector<Lesson>& registry_list() {
    static std::vector<Lesson> r;
    return r;
}

// The number a lesson file's name starts with: 4 for ".../lessons/04_softmax.cpp", 0 if none.
int number_of_file(std::string_view path) {
    const std::string_view name = path.substr(path.find_last_of('/') + 1);
    int n = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    return ec == std::errc() && end != name.data() + name.size() && *end == '_' ? n : 0;
}
}  // namespace

// ------------------------------------------------------------- the context

LessonContext::LessonContext(std::ostream& out, RunOptions opt, int lesson_number)
    : out_(out), opt_(std::move(opt)), number_(lesson_number) {
    record_ = {{"sections", nlohmann::json::array()}, {"shapes", nlohmann::json::array()},
               {"checks", nlohmann::json::array()},   {"not_supported", nlohmann::json::array()},
               {"unmeasured", nlohmann::json::array()}, {"qualified", nlohmann::json::array()},
               {"source_errors", nlohmann::json::array()}, {"figures", nlohmann::json::object()},
               {"tables", nlohmann::json::object()},  {"heatmaps", nlohmann::json::object()}};
}

void LessonContext::print(std::string_view s) {
    if (!opt_.json) out_ << s;
}

void LessonContext::line_item() {
    if (after_block_) print("\n");
    after_block_ = false;
}

std::string LessonContext::paint(std::string_view s, const char* ansi) const {
    if (!opt_.color) return std::string(s);
    return fmt::format("{}{}\x1b[0m", ansi, s);
}

void LessonContext::section(std::string_view title) {
    if (sections_ > 0 && opt_.pause && !opt_.json) {
        out_.flush();
        opt_.pause();
    }
    ++sections_;
    after_block_ = false;
    record_["sections"].push_back(title);
    const std::string head = fmt::format("{}.{} {}", number_, sections_, title);
    const int rule = std::max(3, opt_.width - display_width(head) - 4);
    std::string line;
    for (int k = 0; k < rule; ++k) line += "\u2500";
    print(fmt::format("\n{}\n", paint(fmt::format("\u2500\u2500 {} {}", head, line), kBold)));
}

void LessonContext::para(std::string_view text) {
    after_block_ = true;
    print(fmt::format("\n{}", wrap(text, opt_.width, "")));
}

void LessonContext::code(std::string_view text) {
    after_block_ = true;
    std::string out = "\n";
    size_t i = 0;
    while (i <= text.size()) {
        const size_t j = std::min(text.find('\n', i), text.size());
        for (const std::string& l : break_line(text.substr(i, j - i), opt_.width - 4, 2)) out += "    " + l + "\n";
        i = j + 1;
    }
    print(paint(out, kCyan));
}

void LessonContext::shape(std::string_view name, const Shape& s, std::string_view how) {
    record_["shapes"].push_back({{"name", name}, {"shape", s}, {"how", how}});
    std::string line = fmt::format("  shape  {:<14} {:<16}", name, shape_str(s));
    // a line the lesson has already printed (the same tensor made again) is not repeated
    if (!shown_shapes_.insert(line + "\x1f" + std::string(how)).second) return;
    line_item();
    std::string out;
    if (how.empty()) {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out = line + "\n";
    } else {
        const int lead = display_width(line) + 1;
        if (lead + display_width(how) <= opt_.width) {
            out = line + " " + std::string(how) + "\n";
        } else if (opt_.width - lead >= 20) {
            out = wrap_hanging(how, opt_.width, line + " ", std::string(static_cast<size_t>(lead), ' '));
        } else {
            while (!line.empty() && line.back() == ' ') line.pop_back();
            out = line + "\n" + wrap(how, opt_.width, "         ");
        }
    }
    print(paint(out.substr(0, out.size() - 1), kDim) + "\n");
}

void LessonContext::shape(std::string_view name, const Tensor& t, std::string_view how) { shape(name, t.shape, how); }

void LessonContext::table(std::string_view key, const Table& t) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : t.rows) rows.push_back(r);
    record_["tables"][std::string(key)] = {{"columns", t.columns}, {"rows", rows}};
    if (opt_.json) return;
    after_block_ = true;
    print_table(t, table_width());
}

// A table in `avail` columns: cells as they are; headers wrap onto several
// lines when that makes the table fit; a table still too wide is printed as
// groups of columns, each repeating the first (label) column.
void LessonContext::print_table(const Table& t, int avail) {
    const size_t nc = t.columns.size();
    if (nc == 0) return;
    std::vector<std::vector<std::string>> cells;
    std::vector<int> cw(nc, 0), hw(nc, 0), minw(nc, 0);
    for (const auto& r : t.rows) {
        std::vector<std::string> line;
        for (size_t c = 0; c < nc; ++c) {
            const std::string spec = c < t.formats.size() ? t.formats[c] : "";
            line.push_back(c < r.size() ? cell_text(r[c], spec) : "");
            cw[c] = std::max(cw[c], display_width(line.back()));
        }
        cells.push_back(std::move(line));
    }
    // a header may wrap down to its longest word (never below its cells' width)
    for (size_t c = 0; c < nc; ++c) {
        hw[c] = display_width(t.columns[c]);
        int word = 0;
        for (const std::string& l : wrap_lines(t.columns[c], 1)) word = std::max(word, display_width(l));
        minw[c] = std::max(cw[c], word);
    }
    std::vector<int> w(nc);
    for (size_t c = 0; c < nc; ++c) w[c] = std::max(cw[c], hw[c]);
    auto total = [&](const std::vector<size_t>& cols) {
        int s = 1;
        for (size_t c : cols) s += 2 + w[c];
        return s;
    };
    std::vector<size_t> all(nc);
    for (size_t c = 0; c < nc; ++c) all[c] = c;
    // pass 1: narrow the widest wrappable header column, one step at a time
    while (total(all) > avail) {
        size_t best = nc;
        for (size_t c = 0; c < nc; ++c)
            if (w[c] > minw[c] && (best == nc || w[c] > w[best])) best = c;
        if (best == nc) break;
        // the widest line of the header wrapped one column narrower
        int next = 0;
        for (const std::string& l : wrap_lines(t.columns[best], w[best] - 1)) next = std::max(next, display_width(l));
        w[best] = std::max(minw[best], std::min(next, w[best] - 1));
    }
    // pass 2: column groups that fit, each led by column 0
    std::vector<std::vector<size_t>> groups;
    std::vector<size_t> g{0};
    for (size_t c = 1; c < nc; ++c) {
        std::vector<size_t> trial = g;
        trial.push_back(c);
        if (g.size() > 1 && total(trial) > avail) {
            groups.push_back(g);
            g = {0, c};
        } else {
            g = trial;
        }
    }
    groups.push_back(g);
    auto fmt_row = [&](const std::vector<size_t>& cols, const std::vector<std::string>& line) {
        std::string s = " ";
        for (size_t c : cols) {
            const int pad = std::max(0, w[c] - display_width(line[c]));
            s += "  ";
            if (c == 0) s += line[c] + std::string(static_cast<size_t>(pad), ' ');
            else s += std::string(static_cast<size_t>(pad), ' ') + line[c];
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s + "\n";
    };
    std::string out;
    for (const auto& cols : groups) {
        // the header, wrapped to each column's width, bottom-aligned
        std::vector<std::vector<std::string>> head(nc);
        size_t lines = 1;
        for (size_t c : cols) {
            head[c] = display_width(t.columns[c]) <= w[c] ? std::vector<std::string>{t.columns[c]} : wrap_lines(t.columns[c], w[c]);
            lines = std::max(lines, head[c].size());
        }
        std::string hs;
        for (size_t k = 0; k < lines; ++k) {
            std::vector<std::string> line(nc);
            for (size_t c : cols) {
                const size_t off = lines - head[c].size();
                line[c] = k >= off ? head[c][k - off] : "";
            }
            hs += fmt_row(cols, line);
        }
        hs.pop_back();  // the header's last newline: painted without it
        out += '\n';
        out += paint(hs, kBold);
        out += '\n';
        for (const auto& line : cells) out += fmt_row(cols, line);
    }
    print(out);
}

const char* check_kind_name(CheckKind kind) { return kind == CheckKind::identity ? "identity" : "measured"; }

bool LessonContext::check(bool ok, std::string_view claim, std::string_view text) {
    return check(ok, claim, text, CheckKind::measured);
}

bool LessonContext::identity(bool ok, std::string_view claim, std::string_view text) {
    return check(ok, claim, text, CheckKind::identity);
}

void LessonContext::quote_claims(std::string_view claims) {
    if (!opt_.quote || opt_.json) return;
    size_t i = 0;
    while (i < claims.size()) {
        const size_t j = std::min(claims.find(',', i), claims.size());
        const std::string id(claims.substr(i, j - i));
        i = j + 1;
        const std::string_view text = claim_text(id);
        if (text.empty() || !quoted_.insert(id).second) continue;
        line_item();
        print(paint(wrap_hanging(fmt::format("{} says \u201c{}\u201d", id, text), opt_.width, "  ", "      "), kDim));
    }
}

bool LessonContext::check(bool ok, std::string_view claim, std::string_view text, CheckKind kind) {
    quote_claims(claim);
    (ok ? passed_ : failed_)++;
    if (ok) (kind == CheckKind::identity ? identities_ : measured_)++;
    record_["checks"].push_back({{"claim", claim}, {"ok", ok}, {"kind", check_kind_name(kind)}, {"text", text}});
    line_item();
    // ✓ a measured result, ≡ an identity shown, ✗ either one failing
    const std::string mark = !ok ? paint("\u2717", kRed)
                                 : kind == CheckKind::identity ? paint("\u2261", kCyan) : paint("\u2713", kGreen);
    // wrapped on the plain text; the mark and the claim id are painted after
    std::string body = wrap_hanging(fmt::format("{} {}", claim, text), opt_.width, "", "      ");
    body = body.substr(claim.size());
    print(fmt::format("  {} {}{}", mark, paint(claim, kBold), body));
    return ok;
}

void LessonContext::not_supported(std::string_view claim, std::string_view text) {
    quote_claims(claim);
    ++unsupported_;
    after_block_ = true;
    record_["not_supported"].push_back({{"claim", claim}, {"text", text}});
    print(fmt::format("\n{}", wrap(fmt::format("{} {}", paint(fmt::format("claim {} not supported:", claim), kYellow), text),
                                   opt_.width, "  ")));
}

void LessonContext::qualified(std::string_view claim, std::string_view text) {
    quote_claims(claim);
    ++qualified_;
    after_block_ = true;
    record_["qualified"].push_back({{"claim", claim}, {"text", text}});
    print(fmt::format("\n{}", wrap(fmt::format("{} {}", paint(fmt::format("claim {} qualified:", claim), kYellow), text),
                                   opt_.width, "  ")));
}

bool LessonContext::experiment_verdict(const ExperimentResult& r, std::string_view claim, std::string_view command) {
    bool any = false;
    for (const Verdict& v : r.verdicts) {
        if (v.claim != claim) continue;
        any = true;
        const std::string text = fmt::format("{}: {} ({}, measured live at --quick size; {} for the full run)",
                                             v.statement, v.figures, command, command);
        if (v.kind == VerdictKind::Supported)
            check(true, claim, fmt::format("supported by training: {}", text));
        else if (v.kind == VerdictKind::Qualified)
            qualified(claim, text);
        else
            not_supported(claim, text);
    }
    return any;
}

void LessonContext::experiment_claim(const ExperimentInfo& e, std::string_view claim, std::string_view otherwise) {
    ExperimentConfig qc;
    qc.size = ExperimentSize::Quick, qc.seeds = 1, qc.seed = seed();
    const ExperimentResult r = e.run(qc, {});
    if (!experiment_verdict(r, claim, "attn experiment " + e.name)) unmeasured(claim, otherwise);
}

void LessonContext::unmeasured(std::string_view claim, std::string_view text) {
    quote_claims(claim);
    ++unmeasured_;
    record_["unmeasured"].push_back({{"claim", claim}, {"text", text}});
    line_item();
    print(wrap(fmt::format("{} {}", paint(fmt::format("\u25cb {} not measured here:", claim), kDim), text),
               opt_.width, "  "));
}

void LessonContext::source_error(std::string_view claim, std::string_view quote, std::string_view text) {
    ++source_errors_;
    after_block_ = true;
    record_["source_errors"].push_back({{"claim", claim}, {"quote", quote}, {"text", text}});
    print(fmt::format("\n{}", wrap(fmt::format("{} \u201c{}\u201d {}",
                                                paint(fmt::format("! error in the source ({}):", claim), kMagenta), quote,
                                                text),
                                    opt_.width, "  ")));
}

void LessonContext::figure(std::string_view key, nlohmann::json value) {
    record_["figures"][std::string(key)] = std::move(value);
}

void LessonContext::heatmap(std::string_view key, const HeatmapPanel& panel, double vmin, double vmax, bool in_svg) {
    if (in_svg) panels_.push_back(panel);
    record_["heatmaps"][std::string(key)] = {{"title", panel.title},
                                             {"rows", panel.rows},
                                             {"cols", panel.cols},
                                             {"row_labels", panel.row_labels},
                                             {"col_labels", panel.col_labels},
                                             {"values", panel.values}};
    if (opt_.json) return;
    after_block_ = true;
    HeatmapStyle st;
    st.color = opt_.color;
    st.truecolor = opt_.truecolor;
    st.vmin = vmin;
    st.vmax = vmax;
    st.max_width = table_width() - 2;  // printed indented by 2
    std::string text = render_heatmap(panel, st);
    std::string indented = "\n";
    size_t i = 0;
    while (i < text.size()) {
        const size_t j = std::min(text.find('\n', i), text.size());
        indented += "  " + text.substr(i, j - i) + "\n";
        i = j + 1;
    }
    print(indented);
}

// ------------------------------------------------------------ the registry

RegisterLesson::RegisterLesson(Lesson lesson, const char* file) {
    lesson.number = number_of_file(file);
    registry_list().push_back(std::move(lesson));
}

std::vector<Lesson> all_lessons() {
    std::vector<Lesson> v = registry_list();
    for (const Lesson& l : v)
        if (l.number <= 0)
            throw std::logic_error(fmt::format("lesson '{}': its file name must start with its number (NN_{}.cpp)",
                                               l.slug, l.slug));
    std::sort(v.begin(), v.end(), [](const Lesson& a, const Lesson& b) { return a.number < b.number; });
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i].number == v[i - 1].number)
            throw std::logic_error(fmt::format("lessons '{}' and '{}' share number {}", v[i - 1].slug, v[i].slug,
                                               v[i].number));
    for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = i + 1; j < v.size(); ++j)
            if (v[i].slug == v[j].slug) throw std::logic_error(fmt::format("two lessons named '{}'", v[i].slug));
    return v;
}

const Lesson* find_lesson(std::string_view name) {
    // registration happens before main, so one snapshot serves every call
    static const std::vector<Lesson> lessons = all_lessons();
    if (name.empty()) return nullptr;
    const bool digits = std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && name.size() < 6) {
        const int n = std::atoi(std::string(name).c_str());
        for (const auto& l : lessons)
            if (l.number == n) return &l;
        return nullptr;
    }
    const Lesson* prefix = nullptr;
    int prefix_hits = 0;
    for (const auto& l : lessons) {
        if (l.slug == name) return &l;
        if (l.slug.compare(0, name.size(), name) == 0) prefix = &l, ++prefix_hits;
    }
    return prefix_hits == 1 ? prefix : nullptr;
}

LessonResult run_lesson(const Lesson& lesson, const RunOptions& opt, std::ostream& out) {
    LessonContext ctx(out, opt, lesson.number);
    if (!opt.json) {
        const std::string head = fmt::format("Lesson {} \u00b7 {}", lesson.number, lesson.title);
        const std::string tail = fmt::format("claims {}", claims_text(lesson.claims));
        const int rule = std::max(3, opt.width - display_width(head) - display_width(tail) - 8);
        std::string line;
        for (int k = 0; k < rule; ++k) line += "\u2501";
        std::string s = fmt::format("\n\u2501\u2501 {} {} {} \u2501\u2501\n", head, line, tail);
        out << (opt.color ? fmt::format("\x1b[1m{}\x1b[0m", s) : s);
    }
    lesson.run(ctx);
    if (!opt.json) {
        std::string s = fmt::format("\n  Lesson {} done: {} measured, {} {} shown, {} failed", lesson.number,
                                    ctx.measured(), ctx.identities(), ctx.identities() == 1 ? "identity" : "identities",
                                    ctx.failed());
        if (ctx.qualified_count() > 0) s += fmt::format("; {} claim{} qualified", ctx.qualified_count(), ctx.qualified_count() == 1 ? "" : "s");
        if (ctx.unsupported() > 0)
            s += fmt::format("; {} source claim{} not supported", ctx.unsupported(), ctx.unsupported() == 1 ? "" : "s");
        s += '.';
        out << '\n' << wrap(std::string_view(s).substr(3), opt.width, "  ");
        out.flush();
    }
    LessonResult r;
    r.passed = ctx.passed();
    r.failed = ctx.failed();
    r.not_supported = ctx.unsupported();
    r.measured = ctx.measured();
    r.identities = ctx.identities();
    r.qualified = ctx.qualified_count();
    r.unmeasured = ctx.unmeasured_count();
    r.source_errors = ctx.source_errors();
    r.panels = ctx.panels();
    nlohmann::json rec = {{"lesson", lesson.slug},     {"number", lesson.number}, {"title", lesson.title},
                          {"claims", lesson.claims},   {"seed", opt.seed},        {"passed", r.passed},
                          {"failed", r.failed},        {"not_supported_count", r.not_supported},
                          {"measured", r.measured},    {"identities", r.identities},
                          {"qualified_count", r.qualified}, {"unmeasured_count", r.unmeasured},
                          {"source_errors_count", r.source_errors}};
    for (auto& [k, v] : ctx.record().items()) rec[k] = v;
    r.record = std::move(rec);
    return r;
}

// ----------------------------------------------------------- number text

std::string g3(double x) { return fmt::format("{:.3g}", x); }
std::string g4(double x) { return fmt::format("{:.4g}", x); }
std::string e2(double x) { return fmt::format("{:.1e}", x); }

std::string list(const std::vector<double>& v, int decimals) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt::format("{:.{}f}", v[i], decimals);
    return s + "]";
}
std::string list(const std::vector<float>& v, int decimals) {
    return list(std::vector<double>(v.begin(), v.end()), decimals);
}

std::string claims_text(const std::vector<std::string>& claims) {
    // a run of consecutive ids prints as "C1–C4"
    std::vector<int> ids;
    for (const auto& c : claims) {
        if (c.size() < 2 || c[0] != 'C') return fmt::format("{}", fmt::join(claims, ", "));
        ids.push_back(std::atoi(c.c_str() + 1));
    }
    std::string out;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += j - i >= 2 ? fmt::format("C{}\u2013C{}", ids[i], ids[j])
                          : (j == i ? fmt::format("C{}", ids[i]) : fmt::format("C{}, C{}", ids[i], ids[j]));
        i = j + 1;
    }
    return out;
}

}  // namespace attn::lessons
