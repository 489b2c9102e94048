// Guards on the test suite itself.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

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

// The probe the next test case runs in a child process. In the suite's own run (no
// ATTN_TEST_PROBE) it only checks that; as the child it skips ("skip") or asserts
// nothing at all ("empty").
TEST_CASE("meta: listener probe (asserts nothing when ATTN_TEST_PROBE=empty)") {
    const char* mode = std::getenv("ATTN_TEST_PROBE");
    if (mode == nullptr) {
        CHECK(mode == nullptr);
        return;
    }
    if (std::string(mode) == "skip") attn::test::skip("probe");
}

TEST_CASE("meta: a test case that made no assertion and did not skip fails the run") {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string run = "'" + self + "' -tc='meta: listener probe*' 2>&1";
    const auto empty = attn::test::run_shell("ATTN_TEST_PROBE=empty " + run);
    CHECK(empty.code == 1);
    CHECK(empty.out.find("made no assertion and did not skip") != std::string::npos);
    const auto skipped = attn::test::run_shell("ATTN_TEST_PROBE=skip " + run);
    CHECK(skipped.code == ATTN_TEST_SKIP_CODE);
    CHECK(skipped.out.find("SKIPPED: meta: listener probe") != std::string::npos);
    const auto normal = attn::test::run_shell(run);
    CHECK(normal.code == 0);
}
