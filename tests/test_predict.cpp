// The reader's part of the tour: predictions (LessonContext::predict, --no-ask, a pseudo
// terminal), the exercise lines, the map (lesson 1 and every header) and `attn sheet`.
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalogue.hpp"
#include "lesson.hpp"
#include "pipeline.hpp"
#include "sheet.hpp"
#include "test_util.hpp"
#include "whole_tour.hpp"

namespace {

using attn::lessons::Closeness;
using attn::lessons::judge_guess;
using attn::lessons::parse_guess;

// The text with the prediction questions taken out: a line "  ? Predict: ..." and the
// lines of its question that follow it (indented by 4).
std::string without_questions(const std::string& text) {
    // a question after prose starts with a blank line of its own: it goes too when a blank line follows
    std::istringstream in(text);
    std::string line, out;
    bool in_question = false, blank_before = false;
    while (std::getline(in, line)) {
        if (line.rfind("  ? ", 0) == 0) {
            in_question = true;
            blank_before = out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0;
            continue;
        }
        if (in_question && line.rfind("    ", 0) == 0 && line.rfind("     ", 0) != 0) continue;
        if (in_question && blank_before && line.empty()) {
            in_question = false;
            continue;
        }
        in_question = false;
        out += line + "\n";
    }
    return out;
}

// One lesson run in text mode with `opt`; its text.
std::string lesson_text(const char* name, attn::lessons::RunOptions opt,
                        attn::lessons::LessonResult* result = nullptr) {
    const attn::lessons::Lesson* l = attn::lessons::find_lesson(name);
    REQUIRE(l != nullptr);
    std::ostringstream out;
    auto r = attn::lessons::run_lesson(*l, opt, out);
    if (result != nullptr) *result = std::move(r);
    return out.str();
}

}  // namespace

TEST_CASE("predictions: a typed guess is read as a number, or refused") {
    CHECK(parse_guess("16") == 16.0);
    CHECK(parse_guess(" 0.25 ") == 0.25);
    CHECK(parse_guess("1e6") == 1e6);
    CHECK(parse_guess("4k") == 4000.0);
    CHECK(parse_guess("2.5M") == 2.5e6);
    CHECK(parse_guess("1G") == 1e9);
    CHECK(parse_guess("1,048,576") == 1048576.0);
    CHECK(std::fabs(*parse_guess("1/3") - 1.0 / 3) < 1e-15);
    CHECK(parse_guess("-2") == -2.0);
    for (const char* bad : {"", "   ", "abc", "16x", "1/0", "/3", "nan", "inf", "1e999", "k", "1.2.3"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_guess(bad).has_value());
    }
}

TEST_CASE("predictions: a guess is judged close, near or far by its rule") {
    // relative: within 10% close, within a factor of 2 near, else far
    CHECK(judge_guess(16, 16.02, Closeness::relative()).verdict == "close");
    CHECK(judge_guess(12, 16, Closeness::relative()).verdict == "near");
    CHECK(judge_guess(8, 16, Closeness::relative()).verdict == "near");
    CHECK(judge_guess(7.9, 16, Closeness::relative()).verdict == "far");
    CHECK(judge_guess(256, 16, Closeness::relative()).verdict == "far");
    CHECK(judge_guess(-16, 16, Closeness::relative()).verdict == "far");
    const auto j = judge_guess(12, 16, Closeness::relative());
    CHECK(j.rel_error == doctest::Approx(0.25));
    CHECK(j.abs_error == doctest::Approx(4));
    // a live number of 0: only an absolute rule can call a guess close
    CHECK(std::isinf(judge_guess(1, 0, Closeness::relative()).rel_error));
    CHECK(judge_guess(0, 0, Closeness::relative()).verdict == "close");
    // absolute: within tol close, within 4 tol near
    CHECK(judge_guess(0.9, 0.93, Closeness::absolute(0.05)).verdict == "close");
    CHECK(judge_guess(0.8, 0.93, Closeness::absolute(0.05)).verdict == "near");
    CHECK(judge_guess(0.5, 0.93, Closeness::absolute(0.05)).verdict == "far");
}

TEST_CASE("predictions: with an answer source the question waits, judges a number, skips an empty line") {
    std::deque<std::optional<std::string>> typed{std::string("abc"), std::string("0.9")};
    attn::lessons::RunOptions opt;
    int asked = 0;
    opt.ask = [&]() -> std::optional<std::string> {
        ++asked;
        if (typed.empty()) return std::nullopt;
        auto line = typed.front();
        typed.pop_front();
        return line;
    };
    attn::lessons::LessonResult r;
    const std::string text = lesson_text("softmax", opt, &r);
    CHECK(asked == 2);  // "abc" refused, asked again
    CHECK(text.find("? Predict: softmax turns the scores [0, 3]") != std::string::npos);
    CHECK(text.find("your guess (Enter skips):") != std::string::npos);
    CHECK(text.find("(not a number") != std::string::npos);
    const auto& p = r.record["predictions"];
    REQUIRE(p.size() == 1);
    const double live = p[0]["actual"].get<double>();
    CHECK(live == doctest::Approx(1 / (1 + std::exp(-3.0))).epsilon(1e-6));  // the live softmax weight
    CHECK(p[0]["answer"].get<double>() == 0.9);
    CHECK(p[0]["verdict"] == "near");  // 0.9 against 0.953 with a margin of 0.02: 0.053 is within 4 margins
    CHECK(text.find("live: 0.9526 \u00b7 yours: 0.9 \u00b7 off by 0.05257: the right size, not close.") !=
          std::string::npos);
    CHECK(r.predictions == 1);
    CHECK(r.answered == 1);

    // Enter alone skips; the end of input stops every later question from waiting
    typed = {std::string("")};
    asked = 0;
    const std::string skipped = lesson_text("softmax", opt, &r);
    CHECK(asked == 1);
    CHECK(r.answered == 0);
    CHECK(r.record["predictions"][0]["answer"].is_null());
    CHECK(skipped.find("live:") == std::string::npos);
    typed.clear();
    asked = 0;
    lesson_text("masks", opt, &r);
    CHECK(asked == 1);  // end of input: asked once, never again in this lesson
    CHECK(r.answered == 0);
}

TEST_CASE("predictions: without waiting, the lessons print the same text and numbers plus the question lines") {
    // the lessons with a question that train nothing (the rest: the whole-tour case below)
    for (const char* name : {"softmax", "masks", "dropout", "gqa", "kv-cache"}) {
        CAPTURE(name);
        attn::lessons::RunOptions shown, hidden;
        hidden.show_predictions = false;
        attn::lessons::LessonResult a, b;
        const std::string with = lesson_text(name, shown, &a), without = lesson_text(name, hidden, &b);
        CHECK(with.find("  ? Predict: ") != std::string::npos);
        CHECK(without.find("Predict") == std::string::npos);
        CHECK(without_questions(with) == without);
        CHECK(a.record == b.record);  // every figure and table; the questions listed either way
        CHECK(a.record["predictions"].size() >= 1);
    }
}

TEST_CASE("predictions: every lesson's text is the same without its questions, and the tour asks at least 10" *
          ATTN_WHOLE_TOUR) {
    int asked = 0;
    for (const auto& lesson : attn::lessons::all_lessons()) {
        if (lesson.slug == "real-heads" && !attn::test::model_or_skip()) continue;
        CAPTURE(lesson.slug);
        const auto& shown = attn::test::lesson_run(lesson, 0);
        attn::lessons::RunOptions hidden;
        hidden.show_predictions = false;
        std::ostringstream out;
        const auto r = attn::lessons::run_lesson(lesson, hidden, out);
        CHECK(without_questions(shown.text) == out.str());
        // every figure but a timing (a clock reading differs between two runs of anything)
        auto untimed = [](nlohmann::json rec) {
            if (rec.contains("figures")) rec["figures"].erase("checkpoint_time_ratio_one_run");
            return rec;
        };
        CHECK(untimed(r.record) == untimed(shown.result.record));
        asked += static_cast<int>(r.record["predictions"].size());
        for (const auto& p : r.record["predictions"]) CHECK(std::isfinite(p["actual"].get<double>()));
    }
    CHECK(asked >= 10);
}

TEST_CASE("exercises: each lesson that teaches a step ends by naming its exercise" * ATTN_WHOLE_TOUR) {
    const std::map<std::string, std::vector<std::string>> expected{
        {"why-sqrt-dk", {"scores"}},          {"softmax", {"softmax"}},       {"masks", {"causal", "padding"}},
        {"one-head", {"one-head"}},           {"multi-head", {"split-merge", "multi-head"}},
        {"backward", {"softmax-grad"}},       {"kv-cache", {"kv-step"}},      {"rope-alibi", {"rope"}},
        {"gqa", {"gqa"}},                     {"debugging", {"find-the-bug"}}};
    for (const auto& lesson : attn::lessons::all_lessons()) {
        if (lesson.slug == "real-heads" && !attn::test::model_or_skip()) continue;
        CAPTURE(lesson.slug);
        const auto& run = attn::test::lesson_run(lesson, 0);
        const auto it = expected.find(lesson.slug);
        const std::vector<std::string> want = it == expected.end() ? std::vector<std::string>{} : it->second;
        CHECK(run.result.record["exercises"].get<std::vector<std::string>>() == want);
        if (want.empty()) continue;
        // the last thing the lesson says before its closing line
        const size_t at = run.text.rfind("\u270e Your turn: `attn exercise " + want.front() + "`");
        REQUIRE(at != std::string::npos);
        CHECK(run.text.find("Lesson " + std::to_string(lesson.number) + " done", at) != std::string::npos);
        CHECK(run.text.find("\u2713", at) == std::string::npos);
    }
    // lesson 1 opens with the map and names `attn exercise --list` once
    const auto& first = attn::test::lesson_run(attn::lessons::all_lessons().front(), 0);
    const size_t list = first.text.find("`attn exercise --list`");
    REQUIRE(list != std::string::npos);
    CHECK(first.text.find("`attn exercise --list`", list + 1) == std::string::npos);
    const size_t map = first.text.find("The map: one attention layer");
    CHECK(map != std::string::npos);
    CHECK(map < first.text.find("1.1 "));
}

TEST_CASE("exercises: the closing line, in English and Chinese") {
    attn::lessons::RunOptions opt;
    const std::string en = lesson_text("gqa", opt);
    CHECK(en.find("\u270e Your turn: `attn exercise gqa` writes this step's inputs and task; `attn\n    exercise "
                  "gqa --check ANSWER` grades what you compute.") != std::string::npos);
    const std::string two = lesson_text("masks", opt);
    CHECK(two.find("`attn exercise causal` and `attn exercise padding`") != std::string::npos);
    attn::lessons::clear_missing_translations();
    opt.lang = attn::lessons::Lang::zh;
    const std::string zh = lesson_text("masks", opt);
    CHECK(zh.find("\u8f6e\u5230\u4f60\u4e86\uff1a`attn exercise causal`") != std::string::npos);  // 轮到你了：
    CHECK(zh.find("\u5148\u731c\u4e00\u731c") != std::string::npos);                                    // 先猜一猜
    CHECK(zh.find("\u5730\u56fe\uff1a") != std::string::npos);                                          // 地图：
    CHECK(attn::lessons::missing_translations().empty());
}

TEST_CASE("map: every lesson names its steps on the map, in pipeline order") {
    const auto& steps = attn::lessons::pipeline_steps();
    attn::lessons::RunOptions opt;
    const std::string qkv = lesson_text("qkv", opt);
    CHECK(qkv.find("\n  map: Q, K, V\n") != std::string::npos);
    const std::string one = lesson_text("one-head", opt);
    // consecutive steps joined by →, a gap by …
    CHECK(one.find("map: Q, K, V \u2192 Q\u00b7K\u1d40 \u2192 \u00f7 \u221aDk \u2026 softmax \u2026 \u00b7 V") !=
          std::string::npos);
    CHECK(steps.size() > 8);
    for (const auto& l : attn::lessons::all_lessons()) CHECK_FALSE(attn::lessons::lesson_steps(l.slug).empty());
}

TEST_CASE("sheet: the numbers are measured, the text fits one screen, --json and zh") {
    const nlohmann::json r = attn::lessons::sheet_record(0, attn::lessons::Lang::en);
    // shapes of the live layer: [B, T, D], [B, H, T, Dk], [B, H, T, T], ...
    const auto& L = r["layer"];
    const int64_t B = L["B"], T = L["T"], D = L["D"], H = L["H"], Dk = L["Dk"];
    CHECK(H * Dk == D);
    CHECK(r["shapes"][0]["shape"] == std::vector<int64_t>{B, T, D});
    CHECK(r["shapes"][1]["shape"] == std::vector<int64_t>{B, H, T, Dk});
    CHECK(r["shapes"][2]["shape"] == std::vector<int64_t>{B, H, T, T});
    CHECK(r["shapes"][4]["shape"] == std::vector<int64_t>{B, T, H * Dk});
    CHECK(r["shapes"][5]["shape"] == std::vector<int64_t>{B, T, D});
    // the scale: unscaled std near √64 = 8, scaled near 1; unscaled rows far sharper
    CHECK(std::fabs(r["scale"]["std_unscaled"].get<double>() - 8) < 0.5);
    CHECK(std::fabs(r["scale"]["std_scaled"].get<double>() - 1) < 0.07);
    CHECK(r["scale"]["max_weight_unscaled"].get<double>() > 3 * r["scale"]["max_weight_scaled"].get<double>());
    CHECK(r["mask"]["hidden_weight_max"].get<double>() == 0.0);
    CHECK(r["mask"]["row_sum_error_max"].get<double>() < 1e-5);
    // the five bugs by their ids in `attn check`'s catalogue, each with its lesson's number
    std::vector<std::string> ids;
    for (const auto& b : r["bugs"]) {
        ids.push_back(b["id"]);
        CHECK(attn::lessons::find_lesson(std::to_string(b["lesson"].get<int>())) != nullptr);
    }
    CHECK(ids == std::vector<std::string>{"no-scale", "softmax-query-axis", "mask-after-softmax", "split-no-transpose",
                                          "weight-not-transposed"});
    // a different seed measures different numbers
    CHECK(attn::lessons::sheet_record(1, attn::lessons::Lang::en)["scale"] != r["scale"]);
    const std::string text = attn::lessons::sheet_text(r, attn::lessons::Lang::en, 80);
    int lines = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line); ++lines) CHECK(attn::display_width(line) <= 80);
    CHECK(lines <= 40);
    CHECK(text.find("out = softmax(Q\u00b7K\u1d40 / \u221aDk + M) \u00b7 V") != std::string::npos);
    // Chinese: every text through the catalogue
    attn::lessons::clear_missing_translations();
    const std::string zh =
        attn::lessons::sheet_text(attn::lessons::sheet_record(0, attn::lessons::Lang::zh), attn::lessons::Lang::zh, 80);
    CHECK(attn::lessons::missing_translations().empty());
    CHECK(zh.find("\u4e94\u4e2a\u5e38\u89c1\u9519\u8bef") != std::string::npos);  // 五个常见错误
}

TEST_CASE("CLI: attn sheet prints the sheet, --json its record, a piped lesson prints its questions") {
    const auto text = attn::test::run_attn("sheet");
    REQUIRE(text.code == 0);
    CHECK(text.out.find("attn sheet: attention on one screen") != std::string::npos);
    CHECK(text.out.find("no-scale") != std::string::npos);
    const auto json = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' sheet --json --seed 2");
    REQUIRE(json.code == 0);
    const auto doc = nlohmann::json::parse(json.out);
    CHECK(doc["format"] == "attn-sheet");
    CHECK(doc["version"] == 1);
    CHECK(doc["seed"] == 2);
    CHECK(doc["bugs"].size() == 5);
    CHECK(attn::test::run_attn("sheet --lang xx").code == 2);
    // piped: the question is printed, nothing waits (stdin is not even read)
    const auto piped = attn::test::run_attn("lesson softmax < /dev/null");
    CHECK(piped.code == 0);
    CHECK(piped.out.find("  ? Predict: softmax turns the scores [0, 3]") != std::string::npos);
    CHECK(piped.out.find("your guess") == std::string::npos);
    CHECK(attn::test::run_attn("lesson softmax --no-ask < /dev/null").out == piped.out);
    const auto tour = attn::test::run_attn("tour --from 4 --to 4 < /dev/null");
    CHECK(tour.out.find("Predictions: 1 asked, none answered") != std::string::npos);
    const auto rec = attn::test::run_shell(std::string("'") + ATTN_BINARY + "' tour --from 4 --to 4 --json");
    REQUIRE(rec.code == 0);
    CHECK(nlohmann::json::parse(rec.out)["predictions"]["asked"] == 1);
}

namespace {

// attn run on a pseudo terminal: `replies` answer the prompts in order (each sent when
// `prompt` next appears in the output). Returns everything it printed; *waited counts
// the prompts seen. Gives up after `seconds`.
std::string run_on_pty(const std::vector<std::string>& args, const std::string& prompt,
                       const std::vector<std::string>& replies, int* waited, int seconds = 240) {
    int fd = -1;
    winsize ws{};
    ws.ws_col = 100, ws.ws_row = 40;
    const pid_t pid = forkpty(&fd, nullptr, nullptr, &ws);
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<char*> argv;
        std::string bin = ATTN_BINARY;
        argv.push_back(bin.data());
        std::vector<std::string> copy = args;
        for (auto& a : copy) argv.push_back(a.data());
        argv.push_back(nullptr);
        setenv("NO_COLOR", "1", 1);
        execv(bin.c_str(), argv.data());
        _exit(127);
    }
    std::string out;
    size_t seen = 0, sent = 0;
    *waited = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 200) > 0) {
            char buf[4096];
            const ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0) break;  // the child is done (EIO on Linux)
            out.append(buf, static_cast<size_t>(n));
        }
        size_t at = 0;
        while ((at = out.find(prompt, seen)) != std::string::npos) {
            seen = at + prompt.size();
            ++*waited;
            const std::string reply = (sent < replies.size() ? replies[sent] : "") + "\n";
            ++sent;
            REQUIRE(write(fd, reply.data(), reply.size()) == static_cast<ssize_t>(reply.size()));
        }
    }
    close(fd);
    int status = 0;
    kill(pid, SIGKILL);  // a no-op when it is done; a hung run must not outlive the test
    waitpid(pid, &status, 0);
    return out;
}

}  // namespace

TEST_CASE("CLI: on a pseudo terminal the tour waits for a guess, accepts a number and an empty line") {
    int waited = 0;
    // lessons 18 to 21: two questions (18 and 21), nothing trained
    const std::string out =
        run_on_pty({"tour", "--from", "18", "--to", "21"}, "your guess (Enter skips):", {"abc", "0.5", ""}, &waited);
    CAPTURE(out);
    CHECK(waited == 3);  // "abc" refused and asked again, then 0.5; then Enter on the second question
    CHECK(out.find("(not a number") != std::string::npos);
    CHECK(out.find("live: 2 \u00b7 yours: 0.5 \u00b7 off by 75%: far off") != std::string::npos);
    CHECK(out.find("Tour done: 4 lessons") != std::string::npos);
    CHECK(out.find("Predictions: 2 asked, 1 answered: 0 close") != std::string::npos);
    // --no-ask on the same terminal: the questions print, nothing waits
    const std::string plain = run_on_pty({"lesson", "softmax", "--no-ask"}, "your guess", {}, &waited, 60);
    CHECK(waited == 0);
    CHECK(plain.find("? Predict: softmax turns the scores [0, 3]") != std::string::npos);
    CHECK(plain.find("Lesson 4 done") != std::string::npos);
}
