// tests/svg_test_util.hpp: reading the SVG documents attn writes, for the tests that check
// where their texts lie (test_tour.cpp, test_chart.cpp).
#pragma once

#include <regex>
#include <string>
#include <utility>

namespace attn::test {

// The text of an XML text node or attribute value with the five entities turned back.
inline std::string xml_unescape(std::string s) {
    const std::pair<const char*, const char*> ents[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"},
                                                        {"&amp;", "&"}};
    for (const auto& [e, c] : ents)
        for (size_t p = s.find(e); p != std::string::npos; p = s.find(e, p + 1)) s.replace(p, std::string(e).size(), c);
    return s;
}

// The numeric attribute `name` of the attributes text `tag` (" x=\"12\" ..."), or `fallback`.
inline double svg_attr(const std::string& tag, const std::string& name, double fallback) {
    std::smatch m;
    return std::regex_search(tag, m, std::regex(" " + name + "=\"([-0-9.eE]+)\"")) ? std::stod(m[1].str()) : fallback;
}

}  // namespace attn::test
