// The JSON dump: round trip, non-finite values, strict reader, atomic writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "test_util.hpp"

using namespace attn;

TEST_CASE("dump: round trip keeps every float bit for bit, -inf included") {
    Dump d;
    d.seed = 7;
    d.config = {{"batch", 1}};
    Tensor t = test::randn({2, 3}, 1);
    t.data[1] = -INFINITY;
    t.data[4] = 1e-30f;
    d.tensors["scores"] = t;
    d.order = {"scores"};
    const std::string text = dump_to_string(d);
    CHECK(text.find("-Infinity") != std::string::npos);
    const Dump back = dump_from_string(text);
    CHECK(back.seed == 7);
    CHECK(back.config["batch"] == 1);
    const Tensor& u = back.tensors.at("scores");
    CHECK(u.shape == t.shape);
    for (size_t i = 0; i < t.data.size(); ++i) CHECK(std::memcmp(&u.data[i], &t.data[i], 4) == 0);
}

TEST_CASE("dump: non-finite values as strings or null are strict JSON, and the reader takes them back") {
    Dump d;
    d.tensors["x"] = Tensor({4});
    d.tensors["x"].data = {-INFINITY, INFINITY, NAN, 0.5f};
    const std::string as_string = dump_to_string(d, JsonNonFinite::string);
    CHECK(as_string.find(R"(["-Infinity", "Infinity", "NaN", 0.5])") != std::string::npos);
    const std::string as_null = dump_to_string(d, JsonNonFinite::null);
    CHECK(as_null.find("[null, null, null, 0.5]") != std::string::npos);
    for (const std::string& text : {as_string, as_null}) {
        INFO(text);
        CHECK(nlohmann::json::accept(text));  // strict RFC 8259, as JavaScript's JSON.parse
    }
    const std::vector<float> s = dump_from_string(as_string).tensors.at("x").data;
    CHECK((s[0] == -INFINITY && s[1] == INFINITY && std::isnan(s[2]) && s[3] == 0.5f));
    const std::vector<float> n = dump_from_string(as_null).tensors.at("x").data;
    CHECK((std::isnan(n[0]) && std::isnan(n[1]) && std::isnan(n[2]) && n[3] == 0.5f));  // null is NaN
    CHECK(std::string(json_nonfinite_name(JsonNonFinite::literal)) == "literal");
}

TEST_CASE("dump: the reader refuses malformed files with a message") {
    const char* bad[] = {
        "",
        "[]",
        "{\"format\": \"other\", \"version\": 1, \"tensors\": {}}",
        "{\"format\": \"attn-dump\", \"version\": 2, \"tensors\": {}}",
        "{\"format\": \"attn-dump\", \"version\": 1}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [2], \"data\": [1]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [-1], \"data\": []}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [\"a\"]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [4294967296, 4294967296, "
        "4294967296], \"data\": []}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [Infinit]}}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": 3}}",
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [1], \"data\": [\"inf\"]}}}",
    };
    for (const char* text : bad) {
        INFO(text);
        CHECK_THROWS_AS(dump_from_string(text, "f.json"), InputError);
    }
    // Strings that merely contain the words stay strings.
    const Dump ok = dump_from_string(
        "{\"format\": \"attn-dump\", \"version\": 1, \"config\": {\"note\": \"NaN and -Infinity\"}, "
        "\"tensors\": {\"x\": {\"shape\": [3], \"data\": [NaN, Infinity, -2]}}}");
    CHECK(ok.config["note"] == "NaN and -Infinity");
    CHECK(std::isnan(ok.tensors.at("x").data[0]));
    CHECK(std::isinf(ok.tensors.at("x").data[1]));
}

TEST_CASE("dump: files are written whole or not at all") {
    const std::string dir = test::temp_dir("dump");
    const std::string path = dir + "/a.json";
    write_file_atomic(path, "first");
    CHECK(read_file(path) == "first");
    write_file_atomic(path, "second");
    CHECK(read_file(path) == "second");
    CHECK_THROWS_AS(write_file_atomic(dir + "/missing/b.json", "x"), InputError);
    // Nothing but the one file is left behind (no temp files).
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        (void)e;
        ++n;
    }
    CHECK(n == 1);
    std::filesystem::remove_all(dir);
}

TEST_CASE("dump: a device or FIFO is written in place and a symlink stays a symlink") {
    namespace fs = std::filesystem;
    // /dev/null stays the character device (attn runs as root in some containers).
    CHECK(test::run_attn("forward --dump /dev/null").code == 0);
    CHECK(fs::is_character_file("/dev/null"));

    const std::string dir = test::temp_dir("special");
    const std::string fifo = dir + "/pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto r = test::run_shell("cat '" + fifo + "' > '" + dir + "/got' & '" + std::string(ATTN_BINARY) +
                                   "' forward --dump '" + fifo + "' 2>&1; wait");
    CHECK(r.code == 0);
    CHECK(fs::is_fifo(fifo));
    CHECK(read_dump_file(dir + "/got").tensors.count("weights") == 1);

    const std::string real = dir + "/real.json", link = dir + "/link.json";
    write_file_atomic(real, "old");
    fs::create_symlink(real, link);
    write_file_atomic(link, "new");
    CHECK(fs::is_symlink(link));
    CHECK(read_file(real) == "new");

    CHECK_THROWS_AS(write_file_atomic(dir, "x"), InputError);
    // The FIFO, what came through it, the file and its link: no temp file beside them.
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 4);
    fs::remove_all(dir);
}

TEST_CASE("dump: TERM, INT or HUP during a large attn forward --dump leave no temp file") {
    namespace fs = std::filesystem;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        INFO(sig);
        const std::string dir = test::temp_dir("signal");
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {  // the default actions attn starts with from a shell (ctest may ignore HUP)
            for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);
            const std::string out = dir + "/big.json";
            ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
            ::execl(ATTN_BINARY, ATTN_BINARY, "forward", "--seq", "1024", "--dump", out.c_str(), nullptr);
            ::_exit(127);
        }
        // Signal once the temp file exists, so the signal falls inside the write.
        bool seen = false;
        for (int i = 0; i < 300000 && !seen; ++i) {  // >= 30 s: a sanitizer build on a loaded machine starts slowly
            for (const auto& e : fs::directory_iterator(dir))
                seen |= e.path().filename().string().find(kTempFilePrefix) != std::string::npos;
            if (!seen) ::usleep(100);
        }
        ::kill(child, sig);
        int st = 0;
        ::waitpid(child, &st, 0);
        CHECK(seen);
        CHECK(WIFSIGNALED(st));
        if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == sig);
        for (const auto& e : fs::directory_iterator(dir))
            CHECK(e.path().filename().string().find(kTempFilePrefix) == std::string::npos);
        fs::remove_all(dir);
    }
}

TEST_CASE("dump: a legal 255-byte file name works for every output, and a dangling symlink is written through") {
    namespace fs = std::filesystem;
    const std::string dir = test::temp_dir("names");
    const std::string longest = dir + "/" + std::string(250, 'n') + ".json";  // 255 bytes: NAME_MAX
    write_file_atomic(longest, "x");
    CHECK(read_file(longest) == "x");
    // Every command's output goes through write_file_atomic: forward --dump, view --svg, variance --svg, lesson --svg.
    const std::string svg = dir + "/" + std::string(251, 's') + ".svg";
    for (const std::string& args : {"forward --dump '" + longest + "'", "view '" + longest + "' --svg '" + svg + "'",
                                    "variance --samples 64 --svg '" + svg + "'", "lesson 9 --svg '" + svg + "'"}) {
        INFO(args);
        const auto r = test::run_attn(args);
        INFO(r.out);
        CHECK(r.code == 0);
    }
    CHECK(read_dump_file(longest).tensors.count("weights") == 1);
    CHECK(read_file(svg).rfind("<?xml", 0) == 0);
    // One byte more is the file system's refusal, named, exit 2.
    const auto too_long = test::run_attn("forward --dump '" + dir + "/" + std::string(256, 'n') + "'");
    CHECK(too_long.code == 2);
    CHECK(too_long.out.find("--dump") != std::string::npos);

    // A dangling link: the write creates the file it names (as `cat > link`), the link stays a link.
    fs::create_directory(dir + "/sub");
    fs::create_symlink("sub/new.json", dir + "/dangling.json");  // relative, resolved from the link's folder
    fs::create_symlink(dir + "/dangling.json", dir + "/chain.json");           // a link to the dangling link
    const auto r = test::run_attn("forward --dump '" + dir + "/chain.json'");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(fs::is_symlink(dir + "/chain.json"));
    CHECK(fs::is_symlink(dir + "/dangling.json"));
    CHECK(fs::is_regular_file(fs::symlink_status(dir + "/sub/new.json")));
    CHECK(read_dump_file(dir + "/sub/new.json").tensors.count("out") == 1);
    // A link into a missing folder cannot be written through: refused naming the option, nothing created.
    fs::create_symlink(dir + "/nowhere/x.json", dir + "/broken.json");
    const auto b = test::run_attn("forward --dump '" + dir + "/broken.json'");
    CHECK(b.code == 2);
    CHECK(b.out.find("--dump") != std::string::npos);
    CHECK(fs::is_symlink(dir + "/broken.json"));
    CHECK(!fs::exists(dir + "/nowhere"));
    // A loop of links is refused, not followed forever.
    fs::create_symlink(dir + "/loop2", dir + "/loop1");
    fs::create_symlink(dir + "/loop1", dir + "/loop2");
    CHECK_THROWS_AS(write_file_atomic(dir + "/loop1", "x"), InputError);
    for (const auto& e : fs::directory_iterator(dir))
        CHECK(e.path().filename().string().find(kTempFilePrefix) == std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("dump: a signal at any moment of a write leaves no temp file") {
    // A child writes small files in a loop; each round kills it after a different delay,
    // so over the rounds the signal falls in every phase: before mkstemp, between mkstemp
    // and recording the name, during the write, around the rename.
    namespace fs = std::filesystem;
    const std::string dir = test::temp_dir("signal-race");
    int killed = 0;
    // Held across fork so the child never runs the test runner's own handlers.
    sigset_t three, previous;
    sigemptyset(&three);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&three, s);
    for (int round = 0; round < 60; ++round) {
        ::sigprocmask(SIG_BLOCK, &three, &previous);
        const pid_t child = ::fork();
        if (child == 0) {
            for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);
            ::sigprocmask(SIG_SETMASK, &previous, nullptr);
            const std::string path = dir + "/f.json";
            for (;;) write_file_atomic(path, std::string(4096, 'x'));
        }
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        REQUIRE(child >= 0);
        ::usleep(static_cast<useconds_t>(200 + 37 * round));
        const int sig = round % 3 == 0 ? SIGTERM : round % 3 == 1 ? SIGINT : SIGHUP;
        ::kill(child, sig);
        int st = 0;
        ::waitpid(child, &st, 0);
        killed += WIFSIGNALED(st) && WTERMSIG(st) == sig;
    }
    CHECK(killed == 60);
    int temps = 0;
    for (const auto& e : fs::directory_iterator(dir))
        temps += e.path().filename().string().find(kTempFilePrefix) != std::string::npos;
    CHECK(temps == 0);
    fs::remove_all(dir);
}

TEST_CASE("dump: json_text lays JSON out as nlohmann's dump does and writes non-finite floats as asked") {
    // Finite values: the same text as nlohmann's dump, compact and indented, both JSON kinds.
    const nlohmann::json plain = {{"a", 1}, {"b", {1.5, -2, "x\"y"}}, {"c", nlohmann::json::object()},
                                  {"d", nlohmann::json::array()}, {"e", {{"f", true}, {"g", nullptr}}}};
    for (int indent : {-1, 0, 1, 2}) {
        CHECK(json_text(plain, indent) == plain.dump(indent));
        const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(plain.dump());
        CHECK(json_text(ordered, indent) == ordered.dump(indent));
    }
    // Non-finite: nlohmann would write null for all three.
    const nlohmann::json j = {{"v", {-INFINITY, INFINITY, NAN, 0.5}}};
    CHECK(j.dump() == R"({"v":[null,null,null,0.5]})");
    CHECK(json_text(j) == R"({"v":[-Infinity,Infinity,NaN,0.5]})");
    CHECK(json_text(j, -1, JsonNonFinite::string) == R"({"v":["-Infinity","Infinity","NaN",0.5]})");
    CHECK(json_text(j, -1, JsonNonFinite::null) == R"({"v":[null,null,null,0.5]})");
    // What is written reads back: literal through the relaxed reader, the other two as strict JSON.
    CHECK(parse_json_relaxed(json_text(j), "t")["v"][0] == "-Infinity");
    CHECK(nlohmann::json::accept(json_text(j, 2, JsonNonFinite::string)));
}
