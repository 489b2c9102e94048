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
        "{\"format\": \"attn-dump\", \"version\": 1, \"tensors\": {\"x\": {\"shape\": [4294967296, 4294967296, 4294967296], \"data\": []}}}",
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
            for (const auto& e : fs::directory_iterator(dir)) seen |= e.path().filename().string().find(".tmp.") != std::string::npos;
            if (!seen) ::usleep(100);
        }
        ::kill(child, sig);
        int st = 0;
        ::waitpid(child, &st, 0);
        CHECK(seen);
        CHECK(WIFSIGNALED(st));
        if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == sig);
        for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
        fs::remove_all(dir);
    }
}
