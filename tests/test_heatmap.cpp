// Tests of the heatmap renderer (terminal text with and without colour), of the
// SVG writer and of heatmap SVGs, with a small in-process XML well-formedness checker.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/viz/heatmap.hpp"
#include "attn/viz/svg.hpp"

// ------------------------------------------------------------ XML checker
// Enough of XML 1.0 to reject what a browser would: one root element, tags
// that nest and match, attributes quoted and unique per tag, only the five
// predefined entities or numeric references, no '<' or bare '&' in text or
// attribute values, comments/PIs closed, valid UTF-8. Used by test_view too.
bool xml_well_formed(const std::string& s, std::string* why) {
    auto fail = [&](const std::string& m, size_t at) {
        if (why) *why = m + " at byte " + std::to_string(at);
        return false;
    };
    // UTF-8 validity first
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return fail("invalid UTF-8", i);
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return fail("invalid UTF-8", i);
        if (n == 1 && c < 0x20 && c != '\t' && c != '\n' && c != '\r') return fail("control character", i);
        i += n;
    }
    auto is_name = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
    };
    auto check_refs = [&](size_t a, size_t b) -> bool {  // text in [a, b)
        for (size_t i = a; i < b; ++i) {
            if (s[i] == '<') return fail("'<' in text", i);
            if (s[i] == '&') {
                const size_t semi = s.find(';', i);
                if (semi == std::string::npos || semi > b) return fail("unterminated entity", i);
                const std::string ent = s.substr(i + 1, semi - i - 1);
                const bool named = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos";
                bool numeric = ent.size() > 1 && ent[0] == '#';
                for (size_t k = 1; numeric && k < ent.size(); ++k)
                    numeric = std::isxdigit(static_cast<unsigned char>(ent[k])) || (k == 1 && ent[k] == 'x');
                if (!named && !numeric) return fail("unknown entity &" + ent + ";", i);
                i = semi;
            }
        }
        return true;
    };
    std::vector<std::string> stack;
    bool root_seen = false;
    size_t i = 0;
    while (i < s.size()) {
        const size_t lt = s.find('<', i);
        const size_t text_end = lt == std::string::npos ? s.size() : lt;
        if (!check_refs(i, text_end)) return false;
        if (stack.empty()) {  // outside the root only whitespace
            for (size_t k = i; k < text_end; ++k)
                if (!std::isspace(static_cast<unsigned char>(s[k]))) return fail("text outside the root", k);
        }
        if (lt == std::string::npos) break;
        if (s.compare(lt, 4, "<!--") == 0) {
            const size_t e = s.find("-->", lt + 4);
            if (e == std::string::npos) return fail("unclosed comment", lt);
            i = e + 3;
            continue;
        }
        if (s.compare(lt, 2, "<?") == 0) {
            const size_t e = s.find("?>", lt + 2);
            if (e == std::string::npos) return fail("unclosed processing instruction", lt);
            i = e + 2;
            continue;
        }
        if (s.compare(lt, 2, "</") == 0) {
            size_t k = lt + 2;
            while (k < s.size() && is_name(s[k])) ++k;
            const std::string name = s.substr(lt + 2, k - lt - 2);
            while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
            if (k >= s.size() || s[k] != '>') return fail("bad end tag", lt);
            if (stack.empty() || stack.back() != name) return fail("mismatched </" + name + ">", lt);
            stack.pop_back();
            i = k + 1;
            continue;
        }
        // start tag: name, attributes, then > or />
        size_t k = lt + 1;
        while (k < s.size() && is_name(s[k])) ++k;
        const std::string name = s.substr(lt + 1, k - lt - 1);
        if (name.empty()) return fail("empty tag name", lt);
        if (stack.empty() && root_seen) return fail("second root element", lt);
        std::vector<std::string> attrs;
        while (true) {
            const size_t before = k;
            while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
            if (k >= s.size()) return fail("unclosed tag", lt);
            if (s[k] == '>' || s.compare(k, 2, "/>") == 0) break;
            if (k == before) return fail("no space before attribute", k);
            const size_t a = k;
            while (k < s.size() && is_name(s[k])) ++k;
            const std::string an = s.substr(a, k - a);
            if (an.empty() || k >= s.size() || s[k] != '=') return fail("bad attribute", a);
            for (const auto& x : attrs)
                if (x == an) return fail("duplicate attribute " + an, a);
            attrs.push_back(an);
            ++k;
            if (k >= s.size() || (s[k] != '"' && s[k] != '\'')) return fail("unquoted attribute", k);
            const char q = s[k];
            const size_t e = s.find(q, k + 1);
            if (e == std::string::npos) return fail("unterminated attribute", k);
            if (!check_refs(k + 1, e)) return false;
            k = e + 1;
        }
        root_seen = true;
        if (s[k] == '>') {
            stack.push_back(name);
            i = k + 1;
        } else {
            i = k + 2;
        }
    }
    if (!stack.empty()) return fail("unclosed <" + stack.back() + ">", s.size());
    if (!root_seen) return fail("no root element", 0);
    return true;
}

namespace {

attn::HeatmapPanel sample() {
    // 3 x 4: an exact zero, a tiny value, a one, and a -inf
    const std::vector<float> v{0.0f, 0.001f, 0.5f, 0.499f, 1.0f, 0.0f, 0.0f, 0.0f, 0.25f, 0.25f, 0.25f, -INFINITY};
    return attn::make_panel("weights", v.data(), 3, 4, {"the", "cat", "sat"}, {"k0", "k1", "k2", "k3"});
}

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
    return n;
}

}  // namespace

TEST_CASE("heatmap: plain text has labels, values and no escape codes") {
    attn::HeatmapStyle st;  // color off: what NO_COLOR / a pipe / --no-color get
    const std::string out = attn::render_heatmap(sample(), st);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find("weights") != std::string::npos);
    for (const char* l : {"the", "cat", "sat", "k0", "k1", "k2", "k3"}) CHECK(out.find(l) != std::string::npos);
    CHECK(out.find("1.00") != std::string::npos);
    CHECK(out.find(" .50") != std::string::npos);
    CHECK(out.find(" .00") != std::string::npos);  // 0.001: tiny, not zero
    CHECK(out.find("-inf") != std::string::npos);
    // exact zeros print as a bare 0, so "   0" appears (the masked cells)
    CHECK(out.find("   0") != std::string::npos);
    // title + header + 3 rows
    CHECK(count(out, "\n") == 5);
}

TEST_CASE("heatmap: colour output uses background colours and resets every cell") {
    attn::HeatmapStyle st;
    st.color = true;
    const std::string out = attn::render_heatmap(sample(), st);
    CHECK(out.find("\x1b[48;5;") != std::string::npos);
    CHECK(count(out, "\x1b[48;5;") == count(out, "\x1b[0m"));
    st.truecolor = true;
    const std::string tc = attn::render_heatmap(sample(), st);
    CHECK(tc.find("\x1b[48;2;") != std::string::npos);
    CHECK(tc.find("\x1b[48;5;") == std::string::npos);
}

TEST_CASE("heatmap: wide matrices switch to compact cells, plain compact has shades and no escapes") {
    std::vector<float> v(40 * 40);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 41) / 40.0f;
    v[1] = 0.0f;
    const auto p = attn::make_panel("", v.data(), 40, 40);
    attn::HeatmapStyle st;
    const std::string out = attn::render_heatmap(p, st);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find("\u2588") != std::string::npos);  // full block for the top of the range
    CHECK(out.find("\u00b7") != std::string::npos);  // exact zero
    CHECK(out.find("shade:") != std::string::npos);  // the legend
    // every row line fits in max_width columns
    size_t start = 0;
    for (size_t e = out.find('\n'); e != std::string::npos; start = e + 1, e = out.find('\n', start)) {
        const std::string line = out.substr(start, e - start);
        if (line.rfind("  shade:", 0) == 0) continue;
        CHECK(attn::display_width(line) <= st.max_width);
    }
}

TEST_CASE("heatmap: long labels are cut, column labels that do not fit get a key line") {
    const std::vector<float> v{0.5f, 0.5f, 0.5f, 0.5f};
    const auto p = attn::make_panel("", v.data(), 2, 2, {"a-very-long-row-label", "b"}, {"extraordinarily", "y"});
    attn::HeatmapStyle st;
    const std::string out = attn::render_heatmap(p, st);
    CHECK(out.find("a-very-lo~") != std::string::npos);
    CHECK(out.find("a-very-long-row-label") == std::string::npos);
    CHECK(out.find("columns: 0=extraordi~ 1=y") != std::string::npos);
}

TEST_CASE("heatmap: control characters in labels never reach the terminal") {
    const std::vector<float> v{1.0f};
    const auto p = attn::make_panel("t\x1b[2Jx", v.data(), 1, 1, {"\x1b[31mred"}, {"\x07"});
    const std::string out = attn::render_heatmap(p, attn::HeatmapStyle{});
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
}

TEST_CASE("heatmap: values/shape mismatch is an InputError") {
    attn::HeatmapPanel p;
    p.rows = 2;
    p.cols = 2;
    p.values = {1.0f};
    CHECK_THROWS_AS(attn::render_heatmap(p, attn::HeatmapStyle{}), attn::InputError);
    CHECK_THROWS_AS(attn::heatmap_svg({p}, attn::SvgOptions{}), attn::InputError);
    CHECK_THROWS_AS(attn::heatmap_svg({}, attn::SvgOptions{}), attn::InputError);
}

TEST_CASE("display_width counts columns, wide characters as two") {
    CHECK(attn::display_width("abc") == 3);
    CHECK(attn::display_width("\u4e2d\u6587") == 4);  // two CJK characters
    CHECK(attn::display_width("\u221aD") == 2);       // √D
}

TEST_CASE("xml_escape: entities, controls dropped, bad UTF-8 replaced") {
    CHECK(attn::xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
    CHECK(attn::xml_escape(std::string("x\x01y")) == "xy");
    CHECK(attn::xml_escape(std::string("\xff")) == "\xEF\xBF\xBD");
    CHECK(attn::xml_escape("\u4e2d") == "\u4e2d");
}

TEST_CASE("svg: numbers have at most 2 decimals and no trailing zeros") {
    CHECK(attn::svg_number(100) == "100");
    CHECK(attn::svg_number(2.5) == "2.5");
    CHECK(attn::svg_number(3.14159) == "3.14");
    CHECK(attn::svg_number(-7.25) == "-7.25");
    CHECK(attn::svg_number(-0.001) == "0");
}

TEST_CASE("svg: a document of every element is well-formed, and its text and attributes are escaped") {
    attn::SvgDocument d(200, 100.5, "a <title> & more");
    d.rect(1, 2, 3, 4, {.fill = "#123456"}, "tip \"quoted\"");
    d.line(1, 2, 3, 4, {.stroke = "#444", .stroke_width = 2, .dash = "6 4"});
    d.polyline({{0, 0}, {1.5, 2}}, {.fill = "none", .stroke = "red"});
    d.circle(5, 6, 3.5, {.fill = "blue"});
    d.text(30, 40, "x < y", {.font_size = 11, .bold = true, .anchor = "middle"}, -90);
    d.text(40, 60, std::string("bad \xff byte"));
    d.vertical_gradient("heat", {"#000000", "#808080", "#ffffff"});
    d.hatch("zero", "#eeeeee", "#999999");
    const std::string svg = d.str();
    std::string why;
    CHECK_MESSAGE(xml_well_formed(svg, &why), why);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("width=\"200\" height=\"100.5\" viewBox=\"0 0 200 100.5\"") != std::string::npos);
    CHECK(svg.find("<title>a &lt;title&gt; &amp; more</title>") != std::string::npos);
    CHECK(svg.find("<rect x=\"1\" y=\"2\" width=\"3\" height=\"4\" fill=\"#123456\"><title>tip &quot;quoted&quot;"
                   "</title></rect>") != std::string::npos);
    CHECK(svg.find("<line x1=\"1\" y1=\"2\" x2=\"3\" y2=\"4\" stroke=\"#444\" stroke-width=\"2\" "
                   "stroke-dasharray=\"6 4\"/>") != std::string::npos);
    CHECK(svg.find("<polyline points=\"0,0 1.5,2\" fill=\"none\" stroke=\"red\"/>") != std::string::npos);
    CHECK(svg.find("<circle cx=\"5\" cy=\"6\" r=\"3.5\" fill=\"blue\"/>") != std::string::npos);
    CHECK(svg.find("<text x=\"30\" y=\"40\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 30 40)\">x &lt; y</text>") != std::string::npos);
    CHECK(svg.find("bad \xEF\xBF\xBD byte") != std::string::npos);
    CHECK(svg.find("<stop offset=\"0.5\" stop-color=\"#808080\"/>") != std::string::npos);
    CHECK(svg.find("<pattern id=\"zero\"") != std::string::npos);
    CHECK(svg.size() - svg.rfind("</svg>\n") == 7);  // closed, once, at the end
}

TEST_CASE("heatmap SVG: well-formed, titled, one rect per cell, hostile labels escaped") {
    auto p = sample();
    p.row_labels = {"<pad>", "a&b", "\"q\""};
    p.col_labels = {"</svg>", std::string("\xff\xfe"), "x'y", "k3"};
    attn::SvgOptions o;
    o.title = "Weights <b> & co";
    o.subtitle = "seed 0";
    const std::string svg = attn::heatmap_svg({p, sample()}, o);
    std::string why;
    CHECK_MESSAGE(xml_well_formed(svg, &why), why);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("<title>Weights &lt;b&gt; &amp; co</title>") != std::string::npos);
    CHECK(svg.find("&lt;pad&gt;") != std::string::npos);
    CHECK(svg.find("linearGradient") != std::string::npos);  // the colour scale
    // 2 panels of 12 cells, each cell a rect with a tooltip
    CHECK(count(svg, "<rect") >= 24);
    CHECK(count(svg, "</title></rect>") == 24);
}

TEST_CASE("the XML checker rejects what it should") {
    std::string why;
    CHECK(xml_well_formed("<a><b x=\"1\"/></a>", &why));
    CHECK_FALSE(xml_well_formed("<a><b></a></b>", &why));
    CHECK_FALSE(xml_well_formed("<a>x < y</a>", &why));
    CHECK_FALSE(xml_well_formed("<a>&nbsp;</a>", &why));
    CHECK_FALSE(xml_well_formed("<a x=1></a>", &why));
    CHECK_FALSE(xml_well_formed("<a></a><b></b>", &why));
    CHECK_FALSE(xml_well_formed("<a x=\"1\" x=\"2\"></a>", &why));
    CHECK_FALSE(xml_well_formed(std::string("<a>\xff</a>"), &why));
}

TEST_CASE("heat_color spans the ramp and clamps") {
    const auto lo = attn::heat_color(0), hi = attn::heat_color(1), mid = attn::heat_color(0.5);
    CHECK(lo.r + lo.g + lo.b < hi.r + hi.g + hi.b);
    CHECK(attn::heat_color(-3).r == lo.r);
    CHECK(attn::heat_color(7).g == hi.g);
    CHECK(attn::heat_color(std::nan("")).b == lo.b);
    CHECK(mid.g > lo.g);
}
