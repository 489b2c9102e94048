// Thin commands: no function (or lambda) in app/ is longer than 120 lines. A command maps its
// options to a library config and prints; what grows beyond that belongs in a helper of its
// own or in the library. The scan is lexical: comments, strings and character literals are
// blanked, then each '{' that follows a parameter list ("...)", "...) const", "...) -> T")
// and is not inside another such block opens a function body, measured to its '}'.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

constexpr int kMaxFunctionLines = 120;

// The source with comments, string literals (raw ones too) and character literals replaced
// by spaces, newlines kept, so braces inside them do not count and line numbers hold.
std::string code_only(const std::string& src) {
    std::string out = src;
    size_t i = 0;
    auto blank = [&](size_t from, size_t to) {
        for (size_t k = from; k < to && k < out.size(); ++k)
            if (out[k] != '\n') out[k] = ' ';
    };
    while (i < src.size()) {
        if (src.compare(i, 2, "//") == 0) {
            const size_t e = src.find('\n', i);
            blank(i, e == std::string::npos ? src.size() : e);
            i = e == std::string::npos ? src.size() : e;
        } else if (src.compare(i, 2, "/*") == 0) {
            const size_t e = src.find("*/", i + 2);
            const size_t end = e == std::string::npos ? src.size() : e + 2;
            blank(i, end);
            i = end;
        } else if (src.compare(i, 3, "R\"(") == 0) {
            const size_t e = src.find(")\"", i + 3);
            const size_t end = e == std::string::npos ? src.size() : e + 2;
            blank(i, end);
            i = end;
        } else if (src[i] == '"' || src[i] == '\'') {
            const char q = src[i];
            size_t k = i + 1;
            while (k < src.size() && src[k] != q && src[k] != '\n') k += src[k] == '\\' ? 2 : 1;
            blank(i, k + 1);
            i = k + 1;
        } else {
            ++i;
        }
    }
    return out;
}

struct Body {
    int first_line, lines;
};

std::vector<Body> function_bodies(const std::string& code) {
    static const std::regex opens_function(
        R"(\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(mutable\s*)?(->\s*[\w:<>,\s&*]+)?\s*$)");
    static const std::regex control(R"(\b(if|for|while|switch|catch)\s*\(.*\)\s*$)");
    std::vector<Body> out;
    std::vector<std::pair<bool, int>> stack;  // (a function body, its first line)
    int line = 1;
    for (size_t i = 0; i < code.size(); ++i) {
        const char c = code[i];
        if (c == '\n') {
            ++line;
        } else if (c == '{') {
            const std::string before = code.substr(i >= 200 ? i - 200 : 0, i >= 200 ? 200 : i);
            const std::string last_line = before.substr(before.rfind('\n') == std::string::npos ? 0 : before.rfind('\n') + 1);
            const bool fn = std::regex_search(before, opens_function) && !std::regex_search(last_line, control);
            stack.emplace_back(fn, line);
        } else if (c == '}' && !stack.empty()) {
            const auto [fn, first] = stack.back();
            stack.pop_back();
            bool inside_function = false;
            for (const auto& s : stack) inside_function = inside_function || s.first;
            if (fn && !inside_function) out.push_back({first, line - first + 1});
        }
    }
    return out;
}

}  // namespace

TEST_CASE("thin commands: the scan finds a function's length, not its strings' braces") {
    const std::string src = "int f(int a) {\n  const char* s = \"{{{\";\n  // }\n  if (a) {\n    return 1;\n  }\n"
                            "  return 0;\n}\nstruct S { int x; };\nauto g = [](int) -> int {\n  return 2;\n};\n";
    const auto bodies = function_bodies(code_only(src));
    REQUIRE(bodies.size() == 2);
    CHECK(bodies[0].first_line == 1);
    CHECK(bodies[0].lines == 8);
    CHECK(bodies[1].first_line == 10);
    CHECK(bodies[1].lines == 3);
}

TEST_CASE("thin commands: no function or lambda in app/ is longer than 120 lines") {
    int files = 0, functions = 0;
    for (const auto& entry : std::filesystem::directory_iterator(attn::test::source_path("app"))) {
        if (entry.path().extension() != ".cpp") continue;
        std::ifstream in(entry.path());
        std::ostringstream text;
        text << in.rdbuf();
        ++files;
        for (const Body& b : function_bodies(code_only(text.str()))) {
            ++functions;
            CHECK_MESSAGE(b.lines <= kMaxFunctionLines, entry.path().filename().string() << ":" << b.first_line << " is "
                                                                                         << b.lines << " lines long");
        }
    }
    CHECK(files >= 15);
    CHECK(functions >= 100);
}
