// LessonContext::table: an aligned table that fits the terminal (headers wrap, wide tables split into groups).
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/utf8.hpp"
#include "context_internal.hpp"
#include "lesson.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

namespace {
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
}  // namespace

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

}  // namespace attn::lessons
