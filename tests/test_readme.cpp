// The README speaks to users: at most 350 lines, every count it states equals the
// program's own, no issue numbers, build hashes or load averages, and every file it
// links exists.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.hpp"

namespace {

std::string slurp(const std::string& rel) {
    std::ifstream in(attn::test::source_path(rel));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Every number written before `noun` in the README ("21 lessons").
std::vector<int> counts_before(const std::string& text, const std::string& noun) {
    std::vector<int> out;
    const std::regex re("(\\d+) " + noun);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back(std::stoi((*it)[1].str()));
    return out;
}

}  // namespace

TEST_CASE("readme: every count it states is the program's own") {
    const std::string readme = slurp("README.md");
    REQUIRE(!readme.empty());
    // The program's counts.
    const auto lessons = nlohmann::json::parse(
        attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' lessons --json 2>/dev/null").out)["lessons"].size();
    int experiments = 0;
    {
        std::stringstream list(attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' experiment --list").out);
        for (std::string line; std::getline(list, line);)
            if (!line.empty() && line[0] != ' ') ++experiments;
    }
    std::smatch m;
    const std::string cmake = slurp("lib/CMakeLists.txt");
    REQUIRE(std::regex_search(cmake, m, std::regex("set\\(ATTN_MODULES ([a-z ]+) CACHE")));
    std::stringstream mods(m[1].str());
    int modules = 0;
    for (std::string w; mods >> w;) ++modules;
    int fuzz = 0;
    for (const auto& e : std::filesystem::directory_iterator(attn::test::source_path("tests/fuzz")))
        if (e.path().filename().string().rfind("fuzz_", 0) == 0 && e.path().extension() == ".cpp") ++fuzz;
    CHECK(lessons >= 20);
    CHECK(experiments >= 10);
    CHECK(modules >= 9);
    CHECK(fuzz >= 7);
    const std::pair<const char*, int> expect[] = {{"lessons", static_cast<int>(lessons)},
                                                  {"experiments", experiments},
                                                  {"modules", modules},
                                                  {"fuzz targets", fuzz}};
    for (const auto& [noun, n] : expect) {
        INFO(noun);
        const std::vector<int> stated = counts_before(readme, noun);
        CHECK(!stated.empty());  // the README states each count once at least
        for (int s : stated) CHECK(s == n);
    }
    // the core of the tour (`attn tour --core`)
    const nlohmann::json list = nlohmann::json::parse(
        attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' lessons --json 2>/dev/null").out);
    int core = 0;
    for (const auto& l : list["lessons"]) core += l["part"] == "core" ? 1 : 0;
    const std::vector<int> core_stated = counts_before(readme, "core lessons");
    CHECK(!core_stated.empty());
    for (int s : core_stated) CHECK(s == core);
    // A count spelled as a word cannot be checked: none is allowed.
    CHECK(!std::regex_search(readme, std::regex("\\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                                                "[a-z]+teen|twenty[a-z-]*) (lessons|experiments|modules|fuzz targets)",
                                                std::regex::icase)));
}

TEST_CASE("readme: short, for users, and its links resolve") {
    const std::string readme = slurp("README.md");
    CHECK(std::count(readme.begin(), readme.end(), '\n') <= 350);
    CHECK(!std::regex_search(readme, std::regex("issue \\d", std::regex::icase)));
    CHECK(readme.find("load average") == std::string::npos);
    CHECK(!std::regex_search(readme, std::regex("\\bbuild [0-9a-f]{7}\\b")));
    CHECK(readme.find("CLAIMS.md") == std::string::npos);
    // the two set-up commands the CI and the tour rely on
    CHECK(readme.find("    bash scripts/setup.sh tour\n") != std::string::npos);
    CHECK(readme.find("    bash scripts/setup.sh test\n") != std::string::npos);
    CHECK(readme.find("## Kernel paths and CPUs") != std::string::npos);
    // Every relative link names a file or folder of the repository.
    const std::regex link("\\]\\(([^)#:]+)(#[^)]*)?\\)");
    int links = 0;
    for (auto it = std::sregex_iterator(readme.begin(), readme.end(), link); it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1].str();
        INFO(target);
        ++links;
        CHECK(std::filesystem::exists(attn::test::source_path(target)));
    }
    CHECK(links >= 10);
}
