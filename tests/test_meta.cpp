// Guards on the test suite itself.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>

#include "test_util.hpp"

TEST_CASE("meta: no test name holds a semicolon (ctest would split it and run nothing)") {
    // doctest_discover_tests passes each name through a CMake list, which splits on ';';
    // the pieces then match no test case and "pass" without running anything.
    const std::regex tc(R"re(TEST_CASE\("([^"]*)")re");
    int names = 0;
    for (const auto& e : std::filesystem::directory_iterator(attn::test::source_path("tests"))) {
        if (e.path().extension() != ".cpp") continue;
        const std::string text = attn::read_file(e.path().string());
        for (auto it = std::sregex_iterator(text.begin(), text.end(), tc); it != std::sregex_iterator(); ++it) {
            const std::string name = (*it)[1];
            INFO(e.path().filename().string() << ": " << name);
            CHECK(name.find(';') == std::string::npos);
            ++names;
        }
    }
    CHECK(names > 50);
}
