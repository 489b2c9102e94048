// Tests of the tour's languages (lessons/catalogue.hpp, lessons/zh/): every
// lesson that must be complete in Chinese runs without a missing translation,
// every translation keeps the English's arguments and adds no figure, the
// --json record is the same in both languages but for its texts, Chinese
// wraps between ideographs by the punctuation rules, and the CLI chooses the
// language from --lang or the locale.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/utf8.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/heatmap.hpp"
#include "i18n_required.hpp"
#include "latin_words.hpp"
#include "lesson.hpp"
#include "test_util.hpp"
#include "whole_tour.hpp"

namespace {

using attn::lessons::Lang;

using attn::test::kRequiredZh;  // i18n_required.hpp: the list translators extend

// A missing key as a line to paste into a catalogue: {"KEY", ""},
std::string as_entry(const std::string& key) {
    std::string s = "{\"";
    for (char c : key) {
        if (c == '"' || c == '\\') s += '\\';
        if (c == '\n') {
            s += "\\n";
            continue;
        }
        s += c;
    }
    return s + "\", \"\"},";
}

std::string run_text(const attn::lessons::Lesson& l, Lang lang, uint64_t seed = 0, bool quote = false) {
    attn::lessons::RunOptions opt;
    opt.seed = seed;
    opt.lang = lang;
    opt.quote = quote;
    std::ostringstream out;
    const auto r = attn::lessons::run_lesson(l, opt, out);
    CHECK(r.failed == 0);
    return out.str();
}

// The replacement fields of a fmt template: argument index -> format spec.
// Automatic fields ({}) number from 0; "{{" and "}}" are literal braces.
std::multimap<int, std::string> fields(const std::string& t, bool& ok) {
    std::multimap<int, std::string> out;
    ok = true;
    int next = 0;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '{' && i + 1 < t.size() && t[i + 1] == '{') {
            ++i;
            continue;
        }
        if (t[i] == '}' && i + 1 < t.size() && t[i + 1] == '}') {
            ++i;
            continue;
        }
        if (t[i] != '{') continue;
        size_t j = i + 1;
        int depth = 1;
        while (j < t.size() && depth > 0) {
            if (t[j] == '{') ++depth;
            if (t[j] == '}') --depth;
            if (depth > 0) ++j;
        }
        if (j >= t.size()) {
            ok = false;
            return out;
        }
        const std::string f = t.substr(i + 1, j - i - 1);
        const size_t colon = f.find(':');
        const std::string id = f.substr(0, colon), spec = colon == std::string::npos ? "" : f.substr(colon);
        int index = next++;
        if (!id.empty()) index = std::atoi(id.c_str());
        out.emplace(index, spec);
        i = j;
    }
    return out;
}

// The runs of ASCII digits outside replacement fields.
std::multiset<std::string> digit_runs(const std::string& t) {
    std::multiset<std::string> out;
    std::string run;
    int depth = 0;
    for (char c : t) {
        if (c == '{') ++depth;
        if (c == '}' && depth > 0) --depth;
        if (depth == 0 && c >= '0' && c <= '9') {
            run += c;
        } else {
            if (!run.empty()) out.insert(run);
            run.clear();
        }
    }
    if (!run.empty()) out.insert(run);
    return out;
}

// The JSON record with its texts blanked (what may differ between languages):
// every string but the identifiers (claim ids, check kinds, the lesson's name,
// table columns, object keys). Numbers, booleans, nulls and the structure stay.
void blank_texts(nlohmann::json& j, bool keep = false) {
    static const std::set<std::string> ids{"claim", "kind", "lesson", "claims", "columns"};
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) blank_texts(it.value(), keep || ids.count(it.key()) > 0);
    } else if (j.is_array()) {
        for (auto& v : j) blank_texts(v, keep);
    } else if (j.is_string() && !keep) {
        j = "(text)";
    }
}

}  // namespace

TEST_CASE(
    "i18n: the parts that must be complete in Chinese all have a catalogue, and the rest are listed as untranslated") {
    const std::set<int> parts = attn::lessons::catalogue_parts(Lang::zh);
    for (int p : kRequiredZh) {
        CAPTURE(p);
        CHECK(parts.count(p) == 1);
    }
    std::string untranslated;
    for (const auto& l : attn::lessons::all_lessons())
        if (parts.count(l.number) == 0) untranslated += fmt::format(" {}", l.number);
    if (!untranslated.empty()) MESSAGE("lessons without a Chinese catalogue yet:" << untranslated);
    CHECK(attn::lessons::catalogue_conflicts(Lang::zh).empty());
    for (const auto& c : attn::lessons::catalogue_conflicts(Lang::zh)) MESSAGE("conflicting translations: " << c);
}

// Not lesson_run: it watches the missing translations a run records, which a kept run would not.
TEST_CASE(
    "i18n: every lesson with a Chinese catalogue runs in Chinese without a missing translation (seeds 0, 1, --quote)" *
    ATTN_WHOLE_TOUR) {
    const std::set<int> parts = attn::lessons::catalogue_parts(Lang::zh);
    for (const auto& l : attn::lessons::all_lessons()) {
        if (parts.count(l.number) == 0) continue;
        CAPTURE(l.number);
        attn::lessons::clear_missing_translations();
        run_text(l, Lang::zh, 0, true);
        run_text(l, Lang::zh, 1, false);
        const auto miss = attn::lessons::missing_translations();
        std::string shown;
        for (const auto& m : miss) shown += "\n  " + as_entry(m);
        const std::string why =
            fmt::format("lesson {} ({}): {} texts have no Chinese (add them to lessons/zh/{:02}.cpp):{}", l.number,
                        l.slug, miss.size(), l.number, shown);
        CHECK_MESSAGE(miss.empty(), why);
    }
    attn::lessons::clear_missing_translations();
}

TEST_CASE("i18n: a training verdict reads as task, evidence table and plain words, and in Chinese has no English "
          "word but names and terms" * ATTN_WHOLE_TOUR) {
    // the words allowed in a Chinese verdict line: commands, identifiers and the source's terms
    const std::set<std::string> names{"attn", "experiment", "scale", "heads", "distance", "overfit", "length", "seeds",
                                      "d_k", "sqrt", "RNN", "token", "softmax", "one", "hot", "adamw", "full",
                                      "floor",  // dk-floor, an experiment's name
                                      "init", "W_q", "W_k", "W_v", "W_o"};
    const std::regex word("[A-Za-z][A-Za-z_]{2,}");
    int verdicts = 0;
    for (const auto& l : attn::lessons::all_lessons()) {
        const auto& en = attn::test::lesson_run(l, 0, Lang::en, /*json=*/true).result.record;
        const auto& zh = attn::test::lesson_run(l, 0, Lang::zh, /*json=*/true).result.record;
        for (const char* kind : {"checks", "qualified", "not_supported", "inconclusive"}) {
            if (!zh.contains(kind)) continue;
            for (const auto& v : zh[kind]) {
                if (!v.contains("command")) continue;  // not a training verdict
                ++verdicts;
                const std::string claim = v["claim"].get<std::string>(), text = v["text"].get<std::string>();
                CAPTURE(claim);
                CAPTURE(text);
                // seed 0's evidence table, in the English record too
                CHECK(en["tables"].contains("evidence_" + claim));
                CHECK(zh["tables"].contains("evidence_" + claim));
                for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it)
                    CHECK_MESSAGE(names.count(it->str()) == 1, it->str());
            }
        }
    }
    CHECK(verdicts >= 7);  // C1, C18, C20, C32, C33, C37, C44
    // the evidence tables give numbers over the seeds: somewhere a mean with its range "m (lo–hi)"
    int ranged = 0;
    for (const auto& l : attn::lessons::all_lessons())
        for (const auto& [key, t] :
             attn::test::lesson_run(l, 0, Lang::en, /*json=*/true).result.record["tables"].items())
            if (key.rfind("evidence_", 0) == 0)
                for (const auto& row : t["rows"])
                    for (const auto& cell : row)
                        ranged += cell.is_string() && cell.get<std::string>().find("\u2013") != std::string::npos;
    CHECK(ranged > 0);
}

TEST_CASE("i18n: the Chinese tour has no English word outside code, quotations, names and terms (every lesson, "
          "seed 0; the model's lesson when the model is there)" * ATTN_WHOLE_TOUR) {
    std::error_code ec;
    const bool model = std::filesystem::is_regular_file(
        attn::test::source_path("data/models/all-MiniLM-L6-v2/model.safetensors"), ec);
    if (model) setenv("ATTN_MODEL_DIR", attn::test::source_path("data/models/all-MiniLM-L6-v2").c_str(), 0);
    int lessons = 0;
    for (const auto& l : attn::lessons::all_lessons()) {
        if (l.slug == "real-heads" && !model) continue;
        CAPTURE(l.slug);
        const std::string& text = attn::test::lesson_run(l, 0, Lang::zh).text;
        const auto found = attn::test::latin_words(text);
        CHECK_MESSAGE(found.empty(), fmt::format("lesson {}: {} English words:{}", l.number, found.size(),
                                                 attn::test::latin_report(found)));
        ++lessons;
    }
    CHECK(lessons >= static_cast<int>(attn::lessons::all_lessons().size()) - 1);
}

TEST_CASE("i18n: the English-word check finds English and lets code, quotations and names through") {
    using attn::test::latin_words;
    CHECK(latin_words("在 10 倍长度下（2 层，d_model 32）用 `attn experiment length --quick` 训练").empty());
    CHECK(latin_words("原文说：“The animal didn't cross the street”，softmax 与 W_q、[CLS]、data/macbeth.txt").empty());
    CHECK(latin_words("    -> ShapeError: inner dimensions differ (8 vs 4)\n").empty());
    CHECK(latin_words("预测 one-hot 行，PyTorch 的 torch.triu(ones, diagonal=1)").empty());
    const auto found = latin_words("next byte of 《麦克白》; 40 steps, held-out cross-entropy in nats\n");
    for (const char* w : {"next", "byte", "steps", "held-out", "cross-entropy"}) CHECK_MESSAGE(found.count(w) == 1, w);
    CHECK(found.count("nats") == 0);
}

TEST_CASE("i18n: the framing is complete: titles, summaries, claim texts, the context's verdict lines") {
    attn::lessons::clear_missing_translations();
    for (const auto& l : attn::lessons::all_lessons()) {
        CAPTURE(l.slug);
        CHECK(attn::lessons::translate(Lang::zh, l.title) != l.title);
        CHECK(attn::lessons::translate(Lang::zh, l.summary) != l.summary);
    }
    for (int c = 1; c <= 44; ++c) {
        const std::string id = fmt::format("C{}", c);
        CAPTURE(id);
        const std::string_view en = attn::lessons::claim_text(id);
        CHECK(attn::lessons::translate(Lang::zh, en) != en);
    }
    // every verdict line of the context, both plural forms of the lesson's closing line
    attn::lessons::RunOptions opt;
    opt.lang = Lang::zh;
    opt.quote = true;
    std::ostringstream out;
    const attn::lessons::Lesson demo{"demo", attn::lessons::all_lessons().front().title, "", {"C1"}, false,
                                     [](attn::lessons::LessonContext& ctx) {
                                         ctx.check(true, "C1", "");
                                         ctx.identity(true, "C2", "");
                                         ctx.qualified("C10", "");
                                         ctx.qualified("C36", "");
                                         ctx.not_supported("C20", "");
                                         ctx.not_supported("C44", "");
                                         ctx.unmeasured("C41", "");
                                         ctx.source_error("C29", "", "");
                                         ctx.shape("Q", attn::Shape{1, 2}, "");
                                     },
                                     attn::lessons::Part::core, 1, 1};
    attn::lessons::run_lesson(demo, opt, out);
    const attn::lessons::Lesson one{"demo", demo.title, "", {"C1"}, false,
                                    [](attn::lessons::LessonContext& ctx) {
                                        ctx.identity(true, "C2", "");
                                        ctx.qualified("C10", "");
                                        ctx.not_supported("C20", "");
                                    },
                                    attn::lessons::Part::core, 1, 1};
    attn::lessons::run_lesson(one, opt, out);
    const auto miss = attn::lessons::missing_translations();
    std::string shown;
    for (const auto& m : miss) shown += "\n  " + as_entry(m);
    CHECK_MESSAGE(miss.empty(), "the framing misses " << miss.size() << " texts (lessons/zh/framing.cpp):" << shown);
    const std::string s = out.str();
    for (const char* english : {"qualified", "not supported", "not measured", "error in the source", "says", "done",
                                "measured", "identit", "shape"})
        CHECK_MESSAGE(s.find(english) == std::string::npos, english);
    attn::lessons::clear_missing_translations();
}

TEST_CASE("i18n: every translation keeps the English's arguments and specs and adds no figure") {
    const auto entries = attn::lessons::catalogue_entries(Lang::zh);
    CHECK(entries.size() > 100);
    for (const auto& e : entries) {
        CAPTURE(e.part);
        CAPTURE(e.en);
        CAPTURE(e.tr);
        CHECK(!e.tr.empty());
        bool ok_en = true, ok_tr = true;
        const auto fe = fields(e.en, ok_en), ft = fields(e.tr, ok_tr);
        CHECK(ok_tr);
        // each argument of the English appears in the translation with the same spec, and no other
        std::map<int, std::set<std::string>> se, st;
        for (const auto& [k, v] : fe) se[k].insert(v);
        for (const auto& [k, v] : ft) st[k].insert(v);
        CHECK(se == st);
        // a number in the translation is one the English has (figures are arguments, never typed)
        const auto de = digit_runs(e.en);
        for (const auto& d : digit_runs(e.tr)) {
            CAPTURE(d);
            CHECK(de.count(d) > 0);
        }
    }
}

TEST_CASE("i18n: the --json record is the same in both languages except for its text fields") {
    for (const std::string name : {"dot-product", "softmax"}) {
        CAPTURE(name);
        const auto* l = attn::lessons::find_lesson(name);
        REQUIRE(l != nullptr);
        attn::lessons::RunOptions en, zh;
        en.json = zh.json = true;
        zh.lang = Lang::zh;
        std::ostringstream o1, o2;
        auto a = attn::lessons::run_lesson(*l, en, o1).record;
        auto b = attn::lessons::run_lesson(*l, zh, o2).record;
        CHECK(o1.str().empty());
        CHECK(o2.str().empty());
        CHECK(a != b);  // the texts do differ
        CHECK(a["checks"][0]["text"] != b["checks"][0]["text"]);
        blank_texts(a);
        blank_texts(b);
        CHECK(a.dump() == b.dump());
    }
}

TEST_CASE("i18n: Chinese wraps between ideographs, by the punctuation rules, at display width") {
    const std::string text =
        "注意力是一种软检索：查询与每个键比较，匹配得越好，该条目在答案中的份额就越大（权重来自 softmax）。"
        "答案是所有值的加权混合，而不是某一个值。缩放点积注意力把分数除以 √Dk，让方差回到 1 附近。"
        "English words such as attention stay whole, and [0, 3] never splits.";
    const std::u32string no_start = U"。，；：！？）」』、", no_end = U"（「『";
    for (int width : {20, 33, 41, 80}) {
        CAPTURE(width);
        const auto lines = attn::lessons::wrap_text_lines(text, width);
        std::string joined;
        for (const auto& line : lines) {
            CAPTURE(line);
            CHECK(attn::display_width(line) <= width);
            CHECK(!line.empty());
            const std::u32string u = attn::utf8_decode(line);
            CHECK(no_start.find(u.front()) == std::u32string::npos);
            CHECK(no_end.find(u.back()) == std::u32string::npos);
            joined += line;
        }
        // nothing lost, and the breaks between ideographs added no space
        std::string compact;
        for (char c : text)
            if (c != ' ') compact += c;
        std::string compact_joined;
        for (char c : joined)
            if (c != ' ') compact_joined += c;
        CHECK(compact_joined == compact);
        if (width < 80) {
            CHECK(lines.size() > 2);
            // a line is filled: breaking between ideographs leaves at most one wide character's room
            // (plus what a kept-together punctuation pair or an English word needs)
            int full = 0;
            for (size_t i = 0; i + 1 < lines.size(); ++i) full += attn::display_width(lines[i]) >= width - 3 ? 1 : 0;
            CHECK(full * 2 >= static_cast<int>(lines.size()) - 1);
        }
        for (const auto& line : lines)
            CHECK((line.find("[0,") == std::string::npos || line.find("3]") != std::string::npos));
    }
    // English is wrapped as before: at spaces only
    const auto en = attn::lessons::wrap_text_lines("a dictionary you can ask vaguely", 12);
    for (const auto& line : en)
        CHECK((line.find("ictionary") == std::string::npos || line.find("dictionary") != std::string::npos));
}

TEST_CASE("i18n: the language of a locale, and the environment's precedence") {
    using attn::lessons::lang_of_locale;
    CHECK(lang_of_locale("zh_CN.UTF-8") == Lang::zh);
    CHECK(lang_of_locale("zh_TW") == Lang::zh);
    CHECK(lang_of_locale("zh") == Lang::zh);
    CHECK(lang_of_locale("zh.UTF-8") == Lang::zh);
    CHECK(lang_of_locale("en_US.UTF-8") == Lang::en);
    CHECK(lang_of_locale("C") == Lang::en);
    CHECK(lang_of_locale("") == Lang::en);
    CHECK(lang_of_locale("zhx_CN") == Lang::en);
    CHECK(attn::lessons::parse_lang("zh") == Lang::zh);
    CHECK(attn::lessons::parse_lang("en") == Lang::en);
    CHECK_FALSE(attn::lessons::parse_lang("fr").has_value());
    CHECK_FALSE(attn::lessons::parse_lang("zh_CN").has_value());
}

TEST_CASE("CLI: --lang zh|en, the locale's default, and a bad value") {
    const std::string bin = std::string("'") + ATTN_BINARY + "'";
    const auto zh = attn::test::run_shell("env -u LC_ALL -u LC_MESSAGES LANG=C " + bin + " lessons --lang zh");
    CHECK(zh.code == 0);
    CHECK(zh.out.find("软检索") != std::string::npos);
    CHECK(zh.out.find("The lessons of") == std::string::npos);
    const auto from_env = attn::test::run_shell("env -u LC_ALL -u LC_MESSAGES LANG=zh_CN.UTF-8 " + bin + " lessons");
    CHECK(from_env.out == zh.out);
    const auto c_wins = attn::test::run_shell("env LC_ALL=C LANG=zh_CN.UTF-8 " + bin + " lessons");
    CHECK(c_wins.out.find("The lessons of") != std::string::npos);
    const auto en = attn::test::run_shell("env LANG=zh_CN.UTF-8 " + bin + " lessons --lang en");
    CHECK(en.out == c_wins.out);
    // the --json list: the same but for titles and summaries
    auto ja = nlohmann::json::parse(attn::test::run_shell(bin + " lessons --json --lang en").out);
    auto jb = nlohmann::json::parse(attn::test::run_shell(bin + " lessons --json --lang zh").out);
    CHECK(ja != jb);
    for (auto* j : {&ja, &jb})
        for (auto& l : (*j)["lessons"]) l["title"] = l["summary"] = "";
    CHECK(ja == jb);
    for (const char* cmd : {" lessons --lang fr", " tour --lang zh_CN", " lesson 1 --lang ''"}) {
        CAPTURE(cmd);
        const auto r = attn::test::run_shell(bin + cmd + " 2>&1");
        CHECK(r.code == 2);
        CHECK(r.out.find("--lang") != std::string::npos);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    // the commonest errors, in Chinese
    for (const char* cmd : {" lesson nosuch --lang zh", " tour --from 0 --lang zh", " tour --from x --lang zh"}) {
        CAPTURE(cmd);
        const auto r = attn::test::run_shell(bin + cmd + " 2>&1");
        CHECK(r.code == 2);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
        CHECK(r.out.find("must be") == std::string::npos);
        CHECK(r.out.find("no lesson") == std::string::npos);
        CHECK(attn::display_width(r.out) > static_cast<int>(attn::utf8_decode(r.out).size()));  // it has Chinese
    }
}

// One rule for --lang (app/lang_option.cpp), whether its default is the locale's (the lesson commands) or en
// (attn serve's pages, the --html pages): the same line for the same bad value.
TEST_CASE("CLI: every --lang refuses a bad value in the same words (lessons, attn serve, --html)") {
    const std::string bin = std::string("'") + ATTN_BINARY + "'";
    const std::string page = std::filesystem::temp_directory_path().string() + "/attn-lang-rule.html";
    std::vector<std::string> cmds = {" lessons --lang xx", " lesson 1 --lang xx", " forward --html '" + page +
                                     "' --lang xx"};
    if (attn::test::run_shell(bin + " serve --help").code == 0) cmds.push_back(" serve --lang xx --port 0");
    else MESSAGE("attn serve is not built here (no cpp-httplib): its --lang is not checked");
    for (const std::string& cmd : cmds) {
        CAPTURE(cmd);
        const auto r = attn::test::run_shell(bin + cmd + " 2>&1");
        CHECK(r.code == 2);
        CHECK(r.out == "attn: error: --lang: must be en or zh, got 'xx'\n");
    }
    CHECK_FALSE(std::filesystem::exists(page));
}

TEST_CASE(
    "i18n: docs/glossary.md pairs at least 40 terms, the source's own words among them, as the lessons use them") {
    const std::string g = attn::read_file(attn::test::source_path("docs/glossary.md"));
    int rows = 0;
    std::istringstream in(g);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("| ", 0) == 0 && line.find(" | ") != std::string::npos && line.find("---") == std::string::npos)
            ++rows;
    CHECK(rows - 1 >= 40);  // less the header row
    for (const char* term : {"软检索", "缩放点积注意力", "前瞻掩码", "头同质化", "冒烟测试", "多头注意力"}) {
        CAPTURE(std::string(term));
        CHECK(g.find(term) != std::string::npos);
    }
    // the glossary's words are the catalogue's: the terms lessons 1-5 use, as translated there
    for (const char* en : {"score", "key", "value", "weights", "entry", "shape"}) {
        CAPTURE(std::string(en));
        const std::string zh(attn::lessons::translate(Lang::zh, en));
        CHECK(zh != en);
        CHECK(g.find("| " + zh) != std::string::npos);
    }
}
