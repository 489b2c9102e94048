// Short number formats shared by the lessons (g3, e2, list, number_ranges, claims_text).
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lesson.hpp"

namespace attn::lessons {

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
