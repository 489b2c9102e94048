// The lesson framework: text/JSON output of a LessonContext, the registry, run_lesson.
#include "lesson.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <fmt/args.h>
#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "pipeline.hpp"
#include "attn/io/guards.hpp"
#include "scorecard.hpp"

namespace attn::lessons {

namespace {
const char* kBold = "\x1b[1m";
const char* kGreen = "\x1b[32m";
const char* kRed = "\x1b[31m";
const char* kYellow = "\x1b[33m";
const char* kDim = "\x1b[2m";
const char* kCyan = "\x1b[36m";
const char* kMagenta = "\x1b[35m";

// Line breaking for Chinese (and any East Asian wide text): a line may break
// between two characters when either is wide, except before closing
// punctuation and after opening punctuation (the kinsoku rules).
bool no_line_start(char32_t c) {
    static const std::u32string s = U"。，；：！？）」』、》”’．,.;:!?)]}%";
    return s.find(c) != std::u32string::npos;
}
bool no_line_end(char32_t c) {
    static const std::u32string s = U"（「『《“‘([{";
    return s.find(c) != std::u32string::npos;
}
bool wide_cp(char32_t c) {
    if (c < 0x1100) return false;
    std::string s;
    utf8_append(s, c);
    return display_width(s) == 2;
}

// A word (text between spaces) cut where a line may break inside it: only
// where wide characters meet (English words and formulas never split).
std::vector<std::string_view> break_pieces(std::string_view word) {
    std::vector<std::string_view> out;
    size_t start = 0, i = 0;
    char32_t prev = 0;
    bool first = true;
    while (i < word.size()) {
        const size_t at = i;
        const char32_t c = utf8_next(word, i);
        if (!first && (wide_cp(prev) || wide_cp(c)) && !no_line_start(c) && !no_line_end(prev)) {
            out.push_back(word.substr(start, at - start));
            start = at;
        }
        prev = c;
        first = false;
    }
    out.push_back(word.substr(start));
    return out;
}

// Greedy word wrap on display columns (the prose has √, ᵀ, ·, and Chinese:
// a wide character counts 2 columns, and a line breaks between ideographs).
std::string wrap(std::string_view text, int width, std::string_view indent) {
    std::string out, line;
    int line_w = 0;
    size_t i = 0;
    bool spaced = false;  // a space came before the next word
    while (i < text.size()) {
        if (text[i] == '\n') {  // explicit break
            out += std::string(indent) + line + "\n";
            line.clear();
            line_w = 0;
            spaced = false;
            ++i;
            continue;
        }
        if (text[i] == ' ') {
            spaced = true;
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
        bool space_before = spaced;
        for (const std::string_view piece : break_pieces(text.substr(i, j - i))) {
            const int w = display_width(piece);
            const int sep = space_before ? 1 : 0;
            if (line_w > 0 && line_w + sep + w > width - static_cast<int>(indent.size())) {
                out += std::string(indent) + line + "\n";
                line.clear();
                line_w = 0;
            }
            if (line_w > 0 && sep) line += ' ', ++line_w;
            line += piece;
            line_w += w;
            space_before = false;
        }
        spaced = false;
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

// A verdict's label and its text: a space between them, none after a label that
// ends in a full-width colon (Chinese punctuation carries its own space).
std::string labelled(std::string_view label, std::string_view text) {
    std::string_view plain = label;
    while (plain.size() >= 4 && plain.substr(plain.size() - 4) == "\x1b[0m") plain.remove_suffix(4);
    const bool wide_end = plain.size() >= 3 && plain.substr(plain.size() - 3) == "\uff1a";
    return fmt::format("{}{}{}", label, wide_end ? "" : " ", text);
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
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";  // cells are data: never translated
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

std::vector<std::string> wrap_text_lines(std::string_view text, int width) { return wrap_lines(text, width); }

std::string LessonContext::tr(std::string_view english) { return std::string(translate(opt_.lang, english)); }

std::string LessonContext::text(std::string_view s) {
    if (opt_.lang == Lang::en || produced_.count(std::string(s)) > 0) return std::string(s);
    return tr(s);
}

std::string LessonContext::format_translated(std::string_view english_template, fmt::format_args args) {
    if (opt_.lang == Lang::en) return fmt::vformat(english_template, args);
    std::string out = vformat_in(opt_.lang, english_template, args);
    produced_.insert(out);
    return out;
}


std::string LessonContext::fv(std::string_view english_template, const std::vector<std::string>& args) {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (const std::string& a : args) store.push_back(a);
    return format_translated(english_template, store);
}

LessonContext::LessonContext(std::ostream& out, RunOptions opt, int lesson_number)
    : out_(out), opt_(std::move(opt)), number_(lesson_number) {
    record_ = {{"sections", nlohmann::json::array()},     {"shapes", nlohmann::json::array()},
               {"checks", nlohmann::json::array()},       {"not_supported", nlohmann::json::array()},
               {"unmeasured", nlohmann::json::array()},   {"qualified", nlohmann::json::array()},
               {"inconclusive", nlohmann::json::array()}, {"source_errors", nlohmann::json::array()},
               {"predictions", nlohmann::json::array()},  {"exercises", nlohmann::json::array()},
               {"figures", nlohmann::json::object()},     {"tables", nlohmann::json::object()},
               {"heatmaps", nlohmann::json::object()}};
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
    const std::string t = text(title);
    record_["sections"].push_back(t);
    const std::string head = fmt::format("{}.{} {}", number_, sections_, t);
    const int rule = std::max(3, opt_.width - display_width(head) - 4);
    std::string line;
    for (int k = 0; k < rule; ++k) line += "\u2500";
    print(fmt::format("\n{}\n", paint(fmt::format("\u2500\u2500 {} {}", head, line), kBold)));
}

void LessonContext::para(std::string_view prose) {
    after_block_ = true;
    print(fmt::format("\n{}", wrap(text(prose), opt_.width, "")));
}

void LessonContext::code(std::string_view lines) {
    after_block_ = true;
    std::string out = "\n";
    size_t i = 0;
    while (i <= lines.size()) {
        const size_t j = std::min(lines.find('\n', i), lines.size());
        for (const std::string& l : break_line(lines.substr(i, j - i), opt_.width - 4, 2)) out += "    " + l + "\n";
        i = j + 1;
    }
    print(paint(out, kCyan));
}

void LessonContext::shape(std::string_view name_en, const Shape& s, std::string_view how_en) {
    const std::string name = text(name_en), how = text(how_en);
    record_["shapes"].push_back({{"name", name}, {"shape", s}, {"how", how}});
    // padded on display columns (a Chinese name is twice as wide as its bytes/3)
    auto pad = [](std::string v, int w) {
        return v + std::string(static_cast<size_t>(std::max(0, w - display_width(v))), ' ');
    };
    std::string line = "  " + tr("shape") + "  " + pad(name, 14) + " " + pad(shape_str(s), 16);
    // a line the lesson has already printed (the same tensor made again) is not repeated
    if (!shown_shapes_.insert(line + "\x1f" + how).second) return;
    line_item();
    std::string out;
    if (how.empty()) {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out = line + "\n";
    } else {
        const int lead = display_width(line) + 1;
        if (lead + display_width(how) <= opt_.width) {
            out = line + " " + how + "\n";
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
    if (opt_.lang == Lang::en) return print_table(t, table_width());
    Table shown = t;  // headers and string cells in the run's language (the --json record keeps the English)
    for (auto& c : shown.columns) c = text(c);
    for (auto& r : shown.rows)
        for (auto& v : r)
            if (v.is_string()) v = text(v.get<std::string>());
    print_table(shown, table_width());
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
        // a short header stays on one line: Chinese may break between any two characters, and
        // "背下来了？" over three lines reads as three words (an English word never breaks anyway)
        if (hw[c] <= 10) word = hw[c];
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
            head[c] = display_width(t.columns[c]) <= w[c] ? std::vector<std::string>{t.columns[c]}
                                                          : wrap_lines(t.columns[c], w[c]);
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
        const std::string_view said = claim_text(id);
        if (said.empty() || !quoted_.insert(id).second) continue;
        line_item();
        print(paint(wrap_hanging(f("{} in our words: {}", id, tr(said)), opt_.width, "  ", "      "), kDim));
    }
}

bool LessonContext::check(bool ok, std::string_view claim, std::string_view text_en, CheckKind kind) {
    quote_claims(claim);
    (ok ? passed_ : failed_)++;
    if (ok) (kind == CheckKind::identity ? identities_ : measured_)++;
    const std::string said = text(text_en);
    record_["checks"].push_back({{"claim", claim}, {"ok", ok}, {"kind", check_kind_name(kind)}, {"text", said}});
    line_item();
    // ✓ a measured result, ≡ an identity shown, ✗ either one failing
    const std::string mark = !ok ? paint("\u2717", kRed)
                                 : kind == CheckKind::identity ? paint("\u2261", kCyan) : paint("\u2713", kGreen);
    // wrapped on the plain text; the mark and the claim id are painted after
    // a check with no claim id shows something beyond the source's claims (the tour's own extensions)
    if (claim.empty()) {
        print(fmt::format("  {} {}", mark, wrap_hanging(said, opt_.width, "", "    ")));
        return ok;
    }
    std::string body = wrap_hanging(fmt::format("{} {}", claim, said), opt_.width, "", "      ");
    body = body.substr(claim.size());
    print(fmt::format("  {} {}{}", mark, paint(claim, kBold), body));
    return ok;
}

void LessonContext::not_supported(std::string_view claim, std::string_view text_en) {
    quote_claims(claim);
    ++unsupported_;
    after_block_ = true;
    const std::string said = text(text_en);
    record_["not_supported"].push_back({{"claim", claim}, {"text", said}});
    print(fmt::format("\n{}",
                      wrap(labelled(paint(f("claim {} not supported:", claim), kYellow), said), opt_.width, "  ")));
}

void LessonContext::qualified(std::string_view claim, std::string_view text_en) {
    quote_claims(claim);
    ++qualified_;
    after_block_ = true;
    const std::string said = text(text_en);
    record_["qualified"].push_back({{"claim", claim}, {"text", said}});
    print(fmt::format("\n{}", wrap(labelled(paint(f("claim {} qualified:", claim), kYellow), said), opt_.width, "  ")));
}

namespace {
// The record array a verdict of this kind goes to.
const char* record_key(VerdictKind k) {
    switch (k) {
        case VerdictKind::Supported: return "checks";
        case VerdictKind::Qualified: return "qualified";
        case VerdictKind::Inconclusive: return "inconclusive";
        case VerdictKind::NotSupported: break;
    }
    return "not_supported";
}
}  // namespace

void LessonContext::verdict_line(VerdictKind kind, std::string_view claim, const std::string& said,
                                 std::string_view command) {
    if (kind == VerdictKind::Supported)
        check(true, claim, said);
    else if (kind == VerdictKind::Qualified)
        qualified(claim, said);
    else if (kind == VerdictKind::Inconclusive)  // the measurement cannot tell: never evidence against
        inconclusive(claim, said);
    else
        not_supported(claim, said);
    record_[record_key(kind)].back()["command"] = std::string(command);
}

const std::vector<uint64_t>& evidence_seeds() {
    static const std::vector<uint64_t> s{0, 1, 2};
    return s;
}

namespace {
std::atomic<EvidenceSource> g_evidence_source{EvidenceSource::live};

// The stored quick run of `e` on `seed`, when the source is stored and data/evidence has it.
std::optional<ExperimentResult> stored_quick_run(const ExperimentInfo& e, uint64_t seed) {
    if (g_evidence_source.load() != EvidenceSource::stored) return std::nullopt;
    const StoredEvidence* ev = stored_evidence(quick_evidence_file(e.name));
    if (ev == nullptr || ev->experiment != e.name || ev->size != ExperimentSize::Quick) return std::nullopt;
    for (size_t i = 0; i < ev->seeds.size() && i < ev->runs.size(); ++i)
        if (ev->seeds[i] == seed) return ev->runs[i];
    return std::nullopt;
}
}  // namespace

void set_evidence_source(EvidenceSource s) { g_evidence_source.store(s); }
EvidenceSource evidence_source() { return g_evidence_source.load(); }
std::string quick_evidence_file(std::string_view name) { return std::string(name) + "-quick.json"; }

const ExperimentResult& evidence_run(const ExperimentInfo& e, uint64_t seed, const ExperimentProgress& progress) {
    static std::mutex m;
    static std::map<std::pair<std::string, uint64_t>, ExperimentResult> cache;
    const std::lock_guard<std::mutex> lock(m);
    const auto key = std::make_pair(e.name, seed);
    auto it = cache.find(key);
    if (it == cache.end()) {
        if (auto stored = stored_quick_run(e, seed)) {
            it = cache.emplace(key, std::move(*stored)).first;
        } else {
            ExperimentConfig qc;
            qc.size = ExperimentSize::Quick, qc.seeds = 1, qc.seed = seed;
            it = cache.emplace(key, e.run(qc, progress ? progress : ExperimentProgress{})).first;
        }
    }
    return it->second;
}

std::vector<SeedVerdict> seed_verdicts(const ExperimentInfo& e, std::string_view claim) {
    std::vector<SeedVerdict> out;
    for (uint64_t seed : evidence_seeds()) {
        const ExperimentResult& r = evidence_run(e, seed);
        size_t k = 0;
        for (const Verdict& v : r.verdicts)
            if (v.claim == claim) out.push_back({seed, k++, v});
    }
    return out;
}

void LessonContext::experiment_claim(const ExperimentInfo& e, std::string_view claim, std::string_view otherwise) {
    const std::string command = "attn experiment " + e.name;
    const size_t nseeds = evidence_seeds().size();
    for (size_t i = 0; i < nseeds; ++i) {  // the training runs (each once per process), with a progress line
        busy(f("training the evidence for {}: {}, seed {} of {}", claim, command, i + 1, nseeds));
        evidence_run(e, evidence_seeds()[i]);
    }
    idle();
    const std::vector<SeedVerdict> all = seed_verdicts(e, claim);
    if (all.empty()) return unmeasured(claim, otherwise);
    // one verdict of the experiment on this claim at a time (an experiment may judge a claim twice)
    for (size_t k = 0;; ++k) {
        std::vector<const SeedVerdict*> per;
        for (const SeedVerdict& s : all)
            if (s.index == k) per.push_back(&s);
        if (per.empty()) break;
        readable_verdict(claim, command, per, nseeds);
    }
}

const StoredEvidence* stored_evidence(std::string_view file, std::string* why) {
    static std::mutex m;
    static std::map<std::string, std::pair<std::optional<StoredEvidence>, std::string>> cache;
    const std::lock_guard<std::mutex> lock(m);
    const std::string rel = "evidence/" + std::string(file);
    auto it = cache.find(rel);
    if (it == cache.end()) {
        std::optional<StoredEvidence> ev;
        std::string reason;
        if (const auto path = find_data(rel)) {
            try {
                ev = evidence_from_json(parse_json(read_file(*path), "attn-evidence"));
            } catch (const std::exception& e) {
                reason = *path + ": " + e.what();
            }
        } else {
            reason = "data/" + rel + " is not found";
        }
        it = cache.emplace(rel, std::make_pair(std::move(ev), reason)).first;
    }
    if (why != nullptr) *why = it->second.second;
    return it->second.first ? &*it->second.first : nullptr;
}

void LessonContext::stored_claim(const ExperimentInfo& e, std::string_view claim, std::string_view file, size_t which,
                                 std::string_view otherwise) {
    std::string why;
    const StoredEvidence* ev = stored_evidence(file, &why);
    if (ev != nullptr && ev->experiment != e.name) {
        why = "data/evidence/" + std::string(file) + " holds runs of " + ev->experiment + ", not " + e.name;
        ev = nullptr;
    }
    if (ev == nullptr) {
        para(f("(The stored run for {} cannot be used ({}); the live quick runs judge it instead.)", claim, why));
        return experiment_claim(e, claim, otherwise);
    }
    std::vector<SeedVerdict> all;
    for (size_t i = 0; i < ev->runs.size(); ++i) {
        size_t k = 0;
        for (const Verdict& v : ev->runs[i].verdicts)
            if (v.claim == claim && k++ == which) all.push_back({ev->seeds[i], which, v});
    }
    if (all.empty()) return unmeasured(claim, otherwise);
    std::vector<const SeedVerdict*> per;
    for (const SeedVerdict& s : all) per.push_back(&s);
    readable_verdict(claim, fmt::format("attn experiment {} --{}", e.name, experiment_size_name(ev->size)), per,
                     ev->runs.size(), ev, file);
}

// A number of an evidence table: a JSON number, or a percentage the experiment wrote as text
// ("59.4%"); nullopt for a word ("never", "yes").
static std::optional<std::pair<double, bool>> evidence_number(const nlohmann::json& v) {
    if (v.is_number()) return std::make_pair(v.get<double>(), false);
    if (!v.is_string()) return std::nullopt;
    const std::string s = v.get<std::string>();
    if (s.size() < 2 || s.back() != '%') return std::nullopt;
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, x);
    if (ec != std::errc() || end != s.data() + s.size() - 1) return std::nullopt;
    return std::make_pair(x, true);
}

// A training verdict's evidence table over its seeds: a cell that is a number on every seed
// becomes "mean (min–max)" (just the mean when they agree; percentages stay percentages); a
// cell that is a number on some seeds and a word on the others ("never") counts the seeds:
// `some(mean of the numbers, k, n, the word)`; a word on every seed is the first seed's.
using SomeSeeds = std::function<std::string(const std::string&, size_t, size_t, const std::string&)>;
static Table evidence_over_seeds(const std::vector<const SeedVerdict*>& per, const SomeSeeds& some) {
    const ExperimentTable& first = per.front()->verdict.evidence;
    Table t;
    t.columns = first.columns;
    t.formats.assign(t.columns.size(), "{:.3g}");
    for (size_t r = 0; r < first.rows.size(); ++r) {
        std::vector<nlohmann::json> row = first.rows[r];
        for (size_t c = 0; c < row.size(); ++c) {
            std::vector<double> xs;
            bool pct = false, missing = false;
            std::string word;
            for (const SeedVerdict* s : per) {
                const ExperimentTable& ev = s->verdict.evidence;
                if (r >= ev.rows.size() || c >= ev.rows[r].size()) {
                    missing = true;
                    break;
                }
                const auto x = evidence_number(ev.rows[r][c]);
                if (!x) {
                    if (word.empty() && ev.rows[r][c].is_string()) word = ev.rows[r][c].get<std::string>();
                    continue;
                }
                xs.push_back(x->first);
                pct = x->second;
            }
            if (missing || xs.empty() || per.size() < 2) continue;
            double sum = 0;
            for (double x : xs) sum += x;
            const double mean = sum / static_cast<double>(xs.size());
            const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
            const std::string mean_text = pct ? fmt::format("{:.1f}%", mean) : fmt::format("{:.3g}", mean);
            if (xs.size() != per.size()) {  // reached on some seeds only: say on how many
                if (word.empty()) continue;
                row[c] = some(mean_text, xs.size(), per.size(), word);
            } else if (pct) {
                row[c] = *lo == *hi ? mean_text : fmt::format("{:.1f}% ({:.1f}\u2013{:.1f}%)", mean, *lo, *hi);
            } else {
                row[c] = *lo == *hi ? nlohmann::json(mean)
                                    : nlohmann::json(fmt::format("{:.3g} ({:.3g}\u2013{:.3g})", mean, *lo, *hi));
            }
        }
        t.add(row);
    }
    return t;
}

void LessonContext::readable_verdict(std::string_view claim, const std::string& command,
                                     const std::vector<const SeedVerdict*>& per, size_t nseeds,
                                     const StoredEvidence* stored, std::string_view stored_file) {
    // the seeds agree when every one of them reached a verdict on the claim, the same one
    bool agree = per.size() == nseeds;
    for (const SeedVerdict* s : per) agree = agree && s->verdict.kind == per.front()->verdict.kind;
    const Verdict& first = per.front()->verdict;
    if (first.task.empty())  // a programming error: every training verdict the tour prints reads as task, table, words
        throw std::logic_error("lesson: attn experiment's verdict on " + std::string(claim) + " has no task sentence");
    // the plain line: its template and its word arguments ("never") in the run's language
    const auto plain = [this](const Verdict& v) {
        std::vector<std::string> args;
        for (const std::string& a : v.plain_args) args.push_back(tr(a));
        return fv(v.plain, args);
    };
    std::string seeds;
    std::vector<int> seed_ids;
    for (const SeedVerdict* s : per) {
        seeds += (seeds.empty() ? "" : ", ") + std::to_string(s->seed);
        seed_ids.push_back(static_cast<int>(s->seed));
    }
    const std::string seed_ranges = number_ranges(seed_ids);
    // the framing (how such a table reads) once per lesson; the full reasoning is `attn claims ID`'s
    if (stored == nullptr && framed_)
        para(f("The evidence for {}: {}. `{}` at its quick size, seeds {}, read as above.", claim, tr(first.task),
               command, seeds));
    else if (stored == nullptr)
        para(f("The evidence for {}: {}. `{}` trains it live at its quick size on seeds {}; in the table each "
               "number is the mean over those seeds with its range in brackets (the words are seed {}'s run). "
               "The verdict follows the rule of docs/claims.md; `attn claims {}` gives its full reasoning.",
               claim, tr(first.task), command, seeds, per.front()->seed, claim));
    else  // the day, not the time: the run's place in history, not a timestamp to compare
        para(f("The evidence for {}: {}. This verdict rests on a stored run, too long to train while you read: "
               "data/evidence/{}, made by `{}` at its {} size on seeds {} ({}, `{}`, `{}` kernels); in the table each "
               "number is the mean over those seeds with its range in brackets (the words are seed {}'s run), and "
               "a test reruns seed {} and compares.",
               claim, tr(first.task), stored_file, command, tr(experiment_size_name(stored->size)), seed_ranges,
               stored->made.date.substr(0, 10), stored->made.processor, stored->made.kernels, per.front()->seed,
               per.front()->seed));
    framed_ = true;
    table(fmt::format("evidence_{}", claim),
          evidence_over_seeds(per, [this](const std::string& mean, size_t k, size_t n, const std::string& word) {
              return f("{} on {}/{} seeds, {} on the others", mean, k, n, tr(word));
          }));
    const std::string stmt = tr(first.statement);
    if (!agree) {
        // the seeds grouped by verdict (in order of first appearance), each group with its first seed's words
        std::vector<std::pair<VerdictKind, std::vector<const SeedVerdict*>>> groups;
        for (const SeedVerdict* s : per) {
            auto g =
                std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == s->verdict.kind; });
            if (g == groups.end()) groups.push_back({s->verdict.kind, {s}});
            else g->second.push_back(s);
        }
        std::string each;
        for (const auto& [kind, seeds_of] : groups) {
            std::vector<int> ids;
            for (const SeedVerdict* s : seeds_of) ids.push_back(static_cast<int>(s->seed));
            each += (each.empty() ? "" : "; ") +
                    (seeds_of.size() == 1 ? f("{} on seed {} ({})", tr(verdict_name(kind)), ids.front(),
                                              plain(seeds_of.front()->verdict))
                                          : f("{} on seeds {} (seed {}: {})", tr(verdict_name(kind)),
                                              number_ranges(ids), ids.front(), plain(seeds_of.front()->verdict)));
        }
        if (stored == nullptr)
            inconclusive(claim, f("{}: the {} training seeds disagree ({}). `{} --seeds 5` trains more seeds.", stmt,
                                  per.size(), each, command));
        else
            inconclusive(claim, f("{}: the {} stored seeds disagree ({}). `{} --seeds {}` reruns them.", stmt,
                                  per.size(), each, command, per.size()));
        record_["inconclusive"].back()["command"] = command;
        if (stored != nullptr) record_["inconclusive"].back()["stored"] = "data/evidence/" + std::string(stored_file);
        return;
    }
    const VerdictKind kind = first.kind;
    verdict_line(kind, claim,
                 f("{}: {} ({} on all {} training seeds; `{}` reruns it)", stmt, plain(first), tr(verdict_name(kind)),
                   per.size(), command),
                 command);
    if (stored != nullptr) record_[record_key(kind)].back()["stored"] = "data/evidence/" + std::string(stored_file);
}

void LessonContext::inconclusive(std::string_view claim, std::string_view text_en) {
    quote_claims(claim);
    ++inconclusive_;
    after_block_ = true;
    const std::string said = text(text_en);
    record_["inconclusive"].push_back({{"claim", claim}, {"text", said}});
    print(fmt::format("\n{}",
                      wrap(labelled(paint(f("claim {} inconclusive:", claim), kYellow), said), opt_.width, "  ")));
}

void LessonContext::unmeasured(std::string_view claim, std::string_view text_en) {
    quote_claims(claim);
    ++unmeasured_;
    const std::string said = text(text_en);
    record_["unmeasured"].push_back({{"claim", claim}, {"text", said}});
    line_item();
    print(wrap(labelled(paint(f("\u25cb {} not measured here:", claim), kDim), said), opt_.width, "  "));
}

void LessonContext::source_error(std::string_view claim, std::string_view quote_en, std::string_view text_en,
                                 SourceFlag flag) {
    if (flag == SourceFlag::error) ++source_errors_;
    after_block_ = true;
    const std::string quote = text(quote_en), said = text(text_en);
    const char* severity = flag == SourceFlag::error ? "error" : flag == SourceFlag::slip ? "slip" : "imprecise";
    std::string where;
    if (const ClaimInfo* c = find_claim(claim.substr(0, claim.find(',')))) where = claim_where(*c, opt_.lang);
    record_["source_errors"].push_back(
        {{"claim", claim}, {"quote", quote}, {"text", said}, {"severity", severity}, {"where", where}});
    const std::string label = flag == SourceFlag::error ? f("! error in the source ({}, {}):", claim, where)
                              : flag == SourceFlag::slip ? f("! slip in the source ({}, {}):", claim, where)
                                                         : f("! imprecise in the source ({}, {}):", claim, where);
    // the claim in our words, then what is wrong: no quotation marks (it is not the article's sentence)
    print(fmt::format("\n{}", wrap(labelled(paint(label, kMagenta),
                                            f("{} (in our words) {}", quote, said)),
                                    opt_.width, "  ")));
}

void LessonContext::figure(std::string_view key, nlohmann::json value) {
    record_["figures"][std::string(key)] = std::move(value);
}

void LessonContext::heatmap(std::string_view key, const HeatmapPanel& panel_en, double vmin, double vmax, bool in_svg) {
    HeatmapPanel panel = panel_en;  // its title in the run's language (labels are data)
    panel.title = text(panel_en.title);
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
    st.legend = {tr("columns:"), tr("shade:"), tr("up to"), tr("exactly 0"), tr("scale:"), tr("grey: -inf/nan")};
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

// --------------------------------------------------------- predictions

std::optional<double> parse_guess(std::string_view text) {
    std::string s;
    for (char c : text)
        if (c != ' ' && c != '\t' && c != '\r' && c != ',' && c != '_') s += c;
    if (s.empty()) return std::nullopt;
    double scale = 1;
    switch (s.back()) {
        case 'k': case 'K': scale = 1e3; s.pop_back(); break;
        case 'M': scale = 1e6; s.pop_back(); break;
        case 'G': scale = 1e9; s.pop_back(); break;
        default: break;
    }
    const auto number = [](std::string_view t) -> std::optional<double> {
        double x = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
        if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(x)) return std::nullopt;
        return x;
    };
    const size_t slash = s.find('/');
    if (slash != std::string::npos) {  // a fraction: 1/3
        const auto a = number(std::string_view(s).substr(0, slash)), b = number(std::string_view(s).substr(slash + 1));
        if (!a || !b || *b == 0) return std::nullopt;
        return *a / *b * scale;
    }
    const auto x = number(s);
    if (!x) return std::nullopt;
    return *x * scale;
}

GuessJudgement judge_guess(double guess, double actual, Closeness rule) {
    GuessJudgement j;
    j.abs_error = std::fabs(guess - actual);
    j.rel_error = actual != 0 ? j.abs_error / std::fabs(actual)
                              : (guess == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (rule.abs_tol > 0) {
        j.verdict = j.abs_error <= rule.abs_tol ? "close" : j.abs_error <= 4 * rule.abs_tol ? "near" : "far";
        return j;
    }
    // relative: within 10% is close; the same sign and within a factor of 2 is near
    const bool same_sign = (guess > 0 && actual > 0) || (guess < 0 && actual < 0);
    const double ratio = same_sign ? std::max(guess / actual, actual / guess) : 0.0;
    j.verdict = j.rel_error <= 0.1 ? "close" : same_sign && ratio <= 2 ? "near" : "far";
    return j;
}

std::string guess_number(double x) {
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15)
        return fmt::format("{}", static_cast<int64_t>(x));
    return fmt::format("{:.4g}", x);
}

void LessonContext::predict(std::string_view id, std::string_view question_en, double actual, Closeness rule) {
    ++predictions_;
    const std::string question = text(question_en);
    nlohmann::json entry = {{"id", id}, {"question", question}, {"actual", actual}, {"answer", nullptr}};
    const bool asking = opt_.ask && !opt_.json && !input_done_ && opt_.show_predictions;
    if (!opt_.json && opt_.show_predictions) {
        line_item();
        print(paint(wrap_hanging(f("Predict: {}", question), opt_.width, "  ? ", "    "), kYellow));
    }
    std::optional<double> guess;
    while (asking) {
        print(fmt::format("    {} ", tr("your guess (Enter skips):")));
        out_.flush();
        const std::optional<std::string> line = opt_.ask();
        if (!line) {  // the end of input: no later question waits
            input_done_ = true;
            print("\n");
            break;
        }
        if (line->find_first_not_of(" \t\r") == std::string::npos) break;  // Enter alone: skipped
        guess = parse_guess(*line);
        if (guess) break;
        print(fmt::format("    {}\n", tr("(not a number: digits, with k, M or G or a fraction like 1/3)")));
    }
    if (guess) {
        ++answered_;
        const GuessJudgement j = judge_guess(*guess, actual, rule);
        (j.verdict == "close" ? close_ : j.verdict == "near" ? near_ : far_)++;
        entry["answer"] = *guess;
        entry["verdict"] = j.verdict;
        entry["abs_error"] = j.abs_error;
        if (std::isfinite(j.rel_error)) entry["rel_error"] = j.rel_error;
        const std::string off = rule.abs_tol > 0 || !std::isfinite(j.rel_error)
                                    ? f("off by {}", guess_number(j.abs_error))
                                    : f("off by {:.0f}%", 100 * j.rel_error);
        const std::string words = j.verdict == "close" ? tr("close to it")
                                  : j.verdict == "near" ? tr("the right size, not close")
                                                        : tr("far off: worth a second look at why");
        print(paint(wrap_hanging(f("live: {} \u00b7 yours: {} \u00b7 {}: {}.", guess_number(actual),
                                   guess_number(*guess), off, words),
                                 opt_.width, "    \u2192 ", "      "),
                    j.verdict == "close" ? kGreen : kYellow));
    }
    record_["predictions"].push_back(std::move(entry));
}

void LessonContext::exercise(std::string_view name, std::string_view second) {
    after_block_ = true;
    const std::string said =
        second.empty() ? f("Your turn: `attn exercise {}` writes this step's inputs and task; "
                           "`attn exercise {} --check ANSWER` grades what you compute.",
                           name, name)
                       : f("Your turn: `attn exercise {}` and `attn exercise {}` write these steps' inputs and tasks; "
                           "`--check ANSWER` after either grades what you compute.",
                           name, second);
    record_["exercises"].push_back(std::string(name));
    if (!second.empty()) record_["exercises"].push_back(std::string(second));
    print(fmt::format("\n{}", wrap_hanging(said, opt_.width, "  \u270e ", "    ")));
}

// What each stage of the map does, in a few words (the English is the catalogue key).
static const char* map_stage_words(std::string_view id) {
    static const std::map<std::string, const char*, std::less<>> words = {
        {"x", "the input, a vector per token"},
        {"qkv", "x·Wᵀ per projection, H heads"},
        {"scores", "every query against every key"},
        {"scale", "keeps the spread near 1"},
        {"mask", "−∞ where a key is hidden"},
        {"softmax", "each row: weights summing to 1"},
        {"dropout", "training only: drops weights"},
        {"weighted", "a weighted sum of the values"},
        {"merge", "the heads side by side again"},
        {"out_proj", "mixes the heads: x's shape"},
    };
    const auto it = words.find(id);
    return it == words.end() ? "" : it->second;
}

void LessonContext::pipeline_map() {
    const auto& steps = pipeline_steps();
    const std::vector<Lesson> lessons = all_lessons();
    struct Row {
        std::string label, shape, words, where;
    };
    std::vector<Row> rows{{"x", "[B, T, D]", tr(map_stage_words("x")), ""}};
    std::vector<std::string> ids;
    for (const PipelineStep& s : steps) {
        const std::string_view id = s.id;
        if (std::string_view(map_stage_words(id)).empty()) continue;  // the block around attention: lesson 10
        std::vector<int> numbers;  // the core lessons that explain the step (the header of each lesson says the rest)
        for (const Lesson& l : lessons) {
            const auto ls = lesson_steps(l.slug);
            if (l.part == Part::core && std::find(ls.begin(), ls.end(), id) != ls.end()) numbers.push_back(l.number);
        }
        rows.push_back({opt_.lang == Lang::zh ? s.label_zh : s.label, s.shape, tr(map_stage_words(id)),
                        numbers.empty() ? "" : number_ranges(numbers)});
        ids.emplace_back(id);
    }
    record_["map"] = ids;
    if (opt_.json) return;
    const auto pad = [](const std::string& v, int w) {
        return v + std::string(static_cast<size_t>(std::max(0, w - display_width(v))), ' ');
    };
    const std::string title = tr("The map: one attention layer, from x to its output; on the right, the core lessons "
                                 "that explain each step (every lesson's header names its own steps)");
    std::string out = "\n" + paint(wrap(title, opt_.width, ""), kBold) + "\n";
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const std::string line = fmt::format("  {} {}{}{}", i == 0 ? " " : "\u2193", pad(r.label, 12), pad(r.shape, 15),
                                             r.where.empty() ? r.words : pad(r.words, 32) + r.where);
        for (const std::string& l : break_line(line, opt_.width, 33)) out += l + "\n";
    }
    after_block_ = true;
    print(paint(out, kCyan));
}

// The steps a lesson zooms into, as its header's map line: "map: Q·Kᵀ → ÷ √Dk … softmax".
static std::string map_line(const Lesson& lesson, Lang lang) {
    const auto& steps = pipeline_steps();
    const std::vector<std::string> mine = lesson_steps(lesson.slug);
    std::string path;
    size_t last = steps.size();
    for (size_t i = 0; i < steps.size(); ++i) {
        if (std::find(mine.begin(), mine.end(), steps[i].id) == mine.end()) continue;
        if (!path.empty()) path += last + 1 == i ? " \u2192 " : " \u2026 ";
        path += lang == Lang::zh ? steps[i].label_zh : steps[i].label;
        last = i;
    }
    return path.empty() ? path : format_in(lang, "map: {}", path);
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

const char* part_name(Part part) { return part == Part::core ? "core" : "advanced"; }

int reading_minutes(std::string_view text) {
    // words: runs of non-space characters that hold a letter or a digit (a table's rules
    // and a heatmap's shading are not read word by word)
    long words = 0;
    bool in_word = false, counted = false;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == ' ' || c == '\n' || c == '\t') {
            in_word = false;
            continue;
        }
        if (!in_word) in_word = true, counted = false;
        if (!counted && std::isalnum(c) != 0) ++words, counted = true;
    }
    const long minutes = (words + kReadingWordsPerMinute / 2) / kReadingWordsPerMinute;
    return static_cast<int>(std::max(1L, minutes));
}

void LessonContext::busy(std::string_view what) {
    if (opt_.progress) opt_.progress(text(what));
}
void LessonContext::idle() {
    if (opt_.progress) opt_.progress("");
}

LessonResult run_lesson(const Lesson& lesson, const RunOptions& opt, std::ostream& out) {
    LessonContext ctx(out, opt, lesson.number);
    const std::string title = ctx.tr(lesson.title);
    if (!opt.json) {
        const std::string head = ctx.f("Lesson {} \u00b7 {}", lesson.number, title);
        const std::string tail = ctx.f("claims {} \u00b7 ~{} min", claims_text(lesson.claims), lesson.minutes);
        const auto rule = [](int n) {
            std::string line;
            for (int k = 0; k < std::max(3, n); ++k) line += "\u2501";
            return line;
        };
        const int hw = display_width(head), tw = display_width(tail);
        // one rule with the title and the claims; when they do not fit, the claims go
        // under it, aligned right
        std::string s =
            hw + tw + 11 <= opt.width
                ? fmt::format("\n\u2501\u2501 {} {} {} \u2501\u2501\n", head, rule(opt.width - hw - tw - 8), tail)
                : fmt::format("\n\u2501\u2501 {} {}\n{}{}\n", head, rule(opt.width - hw - 4),
                              std::string(static_cast<size_t>(std::max(0, opt.width - tw)), ' '), tail);
        out << (opt.color ? fmt::format("\x1b[1m{}\x1b[0m", s) : s);
        const std::string where = map_line(lesson, opt.lang);
        if (!where.empty()) {
            const std::string lines = wrap_hanging(where, opt.width, "  ", "       ");
            out << (opt.color ? fmt::format("{}{}\x1b[0m", kDim, lines) : lines);
        }
    }
    lesson.run(ctx);
    if (!opt.json) {
        std::string s = ctx.identities() == 1
                            ? ctx.f("Lesson {} done: {} measured, {} identity shown, {} failed", lesson.number,
                                    ctx.measured(), ctx.identities(), ctx.failed())
                            : ctx.f("Lesson {} done: {} measured, {} identities shown, {} failed", lesson.number,
                                    ctx.measured(), ctx.identities(), ctx.failed());
        if (ctx.qualified_count() > 0)
            s += ctx.qualified_count() == 1 ? ctx.f("; {} claim qualified", ctx.qualified_count())
                                            : ctx.f("; {} claims qualified", ctx.qualified_count());
        if (ctx.unsupported() > 0)
            s += ctx.unsupported() == 1 ? ctx.f("; {} source claim not supported", ctx.unsupported())
                                        : ctx.f("; {} source claims not supported", ctx.unsupported());
        s += ctx.tr(".");
        out << '\n' << wrap(s, opt.width, "  ");
        out.flush();
    }
    LessonResult r;
    r.passed = ctx.passed();
    r.failed = ctx.failed();
    r.not_supported = ctx.unsupported();
    r.measured = ctx.measured();
    r.identities = ctx.identities();
    r.qualified = ctx.qualified_count();
    r.inconclusive = ctx.inconclusive_count();
    r.unmeasured = ctx.unmeasured_count();
    r.source_errors = ctx.source_errors();
    r.predictions = ctx.predictions();
    r.answered = ctx.answered();
    r.close = ctx.close_guesses();
    r.near = ctx.near_guesses();
    r.panels = ctx.panels();
    nlohmann::json rec = {{"lesson", lesson.slug},     {"number", lesson.number}, {"title", title},
                          {"claims", lesson.claims},   {"seed", opt.seed},        {"passed", r.passed},
                          {"failed", r.failed},        {"not_supported_count", r.not_supported},
                          {"measured", r.measured},    {"identities", r.identities},
                          {"qualified_count", r.qualified}, {"unmeasured_count", r.unmeasured},
                          {"inconclusive_count", r.inconclusive},
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

std::string number_ranges(const std::vector<int>& n, std::string_view prefix) {
    std::string out;
    for (size_t i = 0; i < n.size();) {
        size_t j = i;
        while (j + 1 < n.size() && n[j + 1] == n[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += j - i >= 2
                   ? fmt::format("{0}{1}\u2013{0}{2}", prefix, n[i], n[j])
                   : (j == i ? fmt::format("{}{}", prefix, n[i]) : fmt::format("{0}{1}, {0}{2}", prefix, n[i], n[j]));
        i = j + 1;
    }
    return out;
}

std::string claims_text(const std::vector<std::string>& claims) {
    std::vector<int> ids;
    for (const auto& c : claims) {
        if (c.size() < 2 || c[0] != 'C') return fmt::format("{}", fmt::join(claims, ", "));
        ids.push_back(std::atoi(c.c_str() + 1));
    }
    return number_ranges(ids, "C");
}

}  // namespace attn::lessons
